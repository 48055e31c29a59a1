//! Paper claims as code: `experiments/claims/<paper>.toml` holds, per
//! paper, the figures the verdict table lists and one entry per finding a
//! verdict rests on: the paper's sentence (checked to be in the paper's
//! text), the results folder it is judged on, the metric and a predicate.
//! [`check`] evaluates every claim against the newest folder of its spec
//! (or a pinned one, with the reason), with 95% intervals over seeds
//! (paired where two schedulers are compared), and [`report`] writes the
//! verdict table and the per-claim page from the outcomes.

pub mod data;
pub mod eval;
pub mod report;
pub mod stats;

use anyhow::{bail, Context};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One paper's claims file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// The paper's short name, as the verdict table prints it ("DynDL").
    pub paper: String,
    /// Its text's file name in the papers folder (`../shared/papers/`).
    pub text: String,
    #[serde(default, rename = "figure")]
    pub figures: Vec<Figure>,
    #[serde(default, rename = "claim")]
    pub claims: Vec<Claim>,
    /// The paper's other figures a page quotes beside its own (a value the
    /// page compares with that no claim judges): each sentence is checked
    /// to be in the paper's text, as a claim's is, and `scripts/check-prose`
    /// takes a prose figure equal to one of its numbers as the paper's.
    #[serde(default)]
    pub quoted: Vec<Quoted>,
}

/// A sentence of the paper with figures a page quotes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quoted {
    /// Verbatim, as a claim's quote (at most 300 characters).
    pub quote: String,
    /// Where in the paper ("Section 6.2, Fig 10").
    pub at: String,
}

/// A figure or table of the paper that reports a measurement.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// As the verdict table names it ("Fig 10 (50 jobs, 64-512 MB)").
    pub name: String,
    /// The EXPERIMENTS.md section (or sections) with its numbers.
    #[serde(default)]
    pub section: String,
    /// What the claims alone do not say (a setting that decides the
    /// result, a factor such as job order), at most 250 characters.
    #[serde(default)]
    pub note: String,
}

/// One finding of the paper and how it is judged here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Unique within the paper.
    pub id: String,
    /// The [`Figure::name`] it belongs to.
    pub figure: String,
    /// The finding in a few words (the verdict table names a divergence so).
    pub short: String,
    /// The paper's sentence, verbatim (whitespace, hyphenation and quote
    /// marks aside); at most 300 characters.
    pub quote: String,
    /// Where in the paper ("Section 6.2, Fig 10").
    pub at: String,
    /// What the paper reports for it (a number or a reading of its figure).
    pub paper_value: String,
    /// `results/<spec>/`: judged on its newest complete folder ...
    pub spec: String,
    /// ... or on this one (a stamp), with `pin_why` when a newer exists.
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub pin_why: Option<String>,
    /// `runs` (runs.csv, one value a run) or `jobs` (jobs.csv, aggregated
    /// over each run's jobs by `aggregate`).
    #[serde(default = "default_table")]
    pub table: String,
    /// With `table = "jobs"`: `mean` of the column, or `share`: the
    /// percentage of the run's jobs whose column is `true`.
    #[serde(default)]
    pub aggregate: Option<String>,
    /// With `aggregate = "share"`: the share of jobs whose (numeric)
    /// column is at most this, instead of `true` (a QoS curve's point).
    #[serde(default)]
    pub le: Option<f64>,
    /// The column.
    pub metric: String,
    /// The points it is judged at (every point of the folder when empty);
    /// for `rises` and `falls`, the axis in order.
    #[serde(default)]
    pub points: Vec<String>,
    pub kind: Kind,
    /// The scheduler (or algorithm) the claim is about (`name@point`:
    /// at that point, whatever point is judged) ...
    #[serde(default)]
    pub a: String,
    /// ... and the one it is compared with.
    #[serde(default)]
    pub b: Option<String>,
    /// For `rises` and `falls` across schedulers: the schedulers in
    /// order (judged at each of `points`, or every point), instead of `a`.
    #[serde(default)]
    pub series: Vec<String>,
    #[serde(default)]
    pub value: Option<f64>,
    /// Relative tolerance (0.1 = 10%) for `ratio` and `same`.
    #[serde(default)]
    pub tol: Option<f64>,
    /// Set when the claim cannot be judged here at all: why.
    #[serde(default)]
    pub unjudged: Option<String>,
}

fn default_table() -> String {
    "runs".into()
}

/// The predicate.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// a's metric below b's: the paired difference's 95% interval below 0.
    Less,
    /// a's metric above b's: the interval above 0.
    Greater,
    /// a / b (or a's mean without b) within `value` x (1 +- `tol`).
    Ratio,
    /// a / b (or a's mean) at most `value`.
    AtMost,
    /// a / b (or a's mean) at least `value`.
    AtLeast,
    /// No difference that matters: the paired difference's whole interval
    /// within +-`tol` x b's mean (an equivalence test).
    Same,
    /// a's mean grows at each step of `points`, and last minus first is
    /// above 0 (Welch's interval).
    Rises,
    /// The same, falling.
    Falls,
}

impl Claim {
    /// The predicate as a reader reads it ("DynDLOn > DELAY6 in mean_jct_s").
    pub fn predicate(&self) -> String {
        let b = self.b.as_deref().unwrap_or("");
        let lhs = if b.is_empty() {
            self.a.clone()
        } else {
            format!("{} / {b}", self.a)
        };
        let v = self.value.unwrap_or(f64::NAN);
        let tol = self.tol.unwrap_or(0.0) * 100.0;
        let p = match self.kind {
            Kind::Less => format!("{} < {b}", self.a),
            Kind::Greater => format!("{} > {b}", self.a),
            Kind::Same => format!("{} = {b} (within {tol:.0}%)", self.a),
            Kind::Ratio => format!("{lhs} = {v} ± {tol:.0}%"),
            Kind::AtMost => format!("{lhs} ≤ {v}"),
            Kind::AtLeast => format!("{lhs} ≥ {v}"),
            Kind::Rises | Kind::Falls => {
                let dir = if self.kind == Kind::Rises {
                    "rises"
                } else {
                    "falls"
                };
                if self.series.is_empty() {
                    format!("{} {dir} over {}", self.a, self.points.join(", "))
                } else {
                    format!("{dir} over {}", self.series.join(", "))
                }
            }
        };
        let metric = match (self.aggregate.as_deref(), self.le) {
            (Some("share"), Some(le)) => format!("% of jobs with {} <= {le}", self.metric),
            (Some("share"), None) => format!("% of jobs with {}", self.metric),
            (Some(agg), _) => format!("{agg} {} of jobs", self.metric),
            (None, _) => self.metric.clone(),
        };
        format!("{p} in {metric}")
    }

    fn validate(&self, figures: &BTreeSet<&str>) -> anyhow::Result<()> {
        let id = &self.id;
        if !figures.contains(self.figure.as_str()) {
            bail!(
                "claim {id}: figure {:?} is not one of the file's [[figure]] names",
                self.figure
            );
        }
        let q = self.quote.chars().count();
        if q == 0 || q > 300 {
            bail!("claim {id}: quote must be 1-300 characters, not {q}");
        }
        if self.short.chars().count() > 120 {
            bail!("claim {id}: short must be at most 120 characters");
        }
        let needs_b = matches!(self.kind, Kind::Less | Kind::Greater | Kind::Same);
        if needs_b && self.b.is_none() {
            bail!(
                "claim {id}: kind {:?} compares two schedulers: give `b`",
                self.kind
            );
        }
        let needs_value = matches!(self.kind, Kind::Ratio | Kind::AtMost | Kind::AtLeast);
        match (needs_value, self.value) {
            (true, None) => bail!("claim {id}: kind {:?} needs `value`", self.kind),
            (false, Some(_)) => bail!("claim {id}: kind {:?} takes no `value`", self.kind),
            (true, Some(v)) if !v.is_finite() => bail!("claim {id}: `value` must be a number"),
            _ => {}
        }
        let needs_tol = matches!(self.kind, Kind::Ratio | Kind::Same);
        match (needs_tol, self.tol) {
            (true, None) => bail!("claim {id}: kind {:?} needs `tol` (0.1 = 10%)", self.kind),
            (false, Some(_)) => bail!("claim {id}: kind {:?} takes no `tol`", self.kind),
            (true, Some(t)) if !(t.is_finite() && t >= 0.0) => {
                bail!("claim {id}: `tol` must be a number >= 0")
            }
            _ => {}
        }
        if matches!(self.kind, Kind::Rises | Kind::Falls) {
            let by_series = !self.series.is_empty();
            if by_series && (self.series.len() < 2 || !self.a.is_empty()) {
                bail!(
                    "claim {id}: a trend across schedulers gives `series` (two or more) and no `a`"
                );
            }
            if !by_series && (self.points.len() < 2 || self.a.is_empty()) {
                bail!("claim {id}: rises and falls need `a` and `points` (two or more, in order), or `series`");
            }
            if self.b.is_some() {
                bail!("claim {id}: rises and falls take no `b`");
            }
        } else if !self.series.is_empty() {
            bail!("claim {id}: `series` is for rises and falls");
        } else if self.a.is_empty() {
            bail!("claim {id}: give `a`, the scheduler the claim is about");
        }
        let qualified = self.a.contains('@') || self.b.as_deref().is_some_and(|b| b.contains('@'));
        if qualified && self.points.len() != 1 {
            bail!("claim {id}: with `name@point` give exactly one point in `points`");
        }
        match (self.table.as_str(), self.aggregate.as_deref()) {
            ("runs", None) | ("jobs", Some("mean" | "share")) => {}
            ("runs", Some(_)) => bail!("claim {id}: `aggregate` is for table = \"jobs\""),
            ("jobs", _) => {
                bail!("claim {id}: table = \"jobs\" needs aggregate = \"mean\" or \"share\"")
            }
            (t, _) => bail!("claim {id}: table must be \"runs\" or \"jobs\", not {t:?}"),
        }
        if self.le.is_some() && self.aggregate.as_deref() != Some("share") {
            bail!("claim {id}: `le` is for aggregate = \"share\"");
        }
        if self.folder.is_none() && self.pin_why.is_some() {
            bail!("claim {id}: pin_why without a pinned `folder`");
        }
        Ok(())
    }
}

impl ClaimsFile {
    /// Reads and checks one claims file (unknown keys are errors).
    pub fn load(path: &Path) -> anyhow::Result<ClaimsFile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let de = toml::Deserializer::new(&text);
        let file: ClaimsFile = serde_path_to_error::deserialize(de)
            .with_context(|| format!("{}: not a claims file", path.display()))?;
        file.validate()
            .with_context(|| format!("{}", path.display()))?;
        Ok(file)
    }

    fn validate(&self) -> anyhow::Result<()> {
        let mut names = BTreeSet::new();
        for f in &self.figures {
            if !names.insert(f.name.as_str()) {
                bail!("figure {:?} is listed twice", f.name);
            }
            if f.note.chars().count() > 250 {
                bail!("figure {:?}: note must be at most 250 characters", f.name);
            }
        }
        let mut ids = BTreeSet::new();
        for c in &self.claims {
            if !ids.insert(c.id.as_str()) {
                bail!("claim id {:?} is used twice", c.id);
            }
            c.validate(&names)?;
        }
        for q in &self.quoted {
            let n = q.quote.chars().count();
            if n == 0 || n > 300 {
                bail!(
                    "quoted sentence at {:?}: quote must be 1-300 characters, not {n}",
                    q.at
                );
            }
            if q.at.trim().is_empty() {
                bail!(
                    "quoted sentence {:?}: give `at`, where in the paper",
                    q.quote
                );
            }
        }
        Ok(())
    }

    /// Checks that every quote (the claims' and the quoted sentences') is
    /// in the paper's text; returns, per claim, the line of the text where
    /// its quote starts.
    pub fn check_quotes(&self, papers: &Path) -> anyhow::Result<Vec<usize>> {
        let path = papers.join(&self.text);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("{}: the text of {}", path.display(), self.paper))?;
        let (norm, lines) = normalize_with_lines(&text);
        for q in &self.quoted {
            if !norm.contains(&normalize_with_lines(&q.quote).0) {
                bail!(
                    "the quoted sentence at {:?} is not in {} (checked with whitespace, hyphenation and quote marks normalized): {:?}",
                    q.at,
                    path.display(),
                    q.quote
                );
            }
        }
        self.claims
            .iter()
            .map(|c| {
                let (q, _) = normalize_with_lines(&c.quote);
                match norm.find(&q) {
                    Some(at) => Ok(lines[at]),
                    None => bail!(
                        "claim {}: its quote is not in {} (checked with whitespace, hyphenation and quote marks normalized): {:?}",
                        c.id,
                        path.display(),
                        c.quote
                    ),
                }
            })
            .collect()
    }
}

/// Lower case, one space for any run of white space, hyphenation at line
/// ends joined, typographic quotes and dashes made plain; with the source
/// line (1-based) of every output byte.
fn normalize_with_lines(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut lines = Vec::with_capacity(text.len());
    let mut line = 1;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut space = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
        }
        // "loca-\ntion" -> "location"
        if c == '-' && chars.get(i + 1) == Some(&'\n') {
            i += 2;
            line += 1;
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            i += 1;
            continue;
        }
        if space {
            out.push(' ');
            lines.push(line);
            space = false;
        }
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{2032}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            c => c,
        };
        for l in c.to_lowercase() {
            let mut buf = [0u8; 4];
            for _ in 0..l.encode_utf8(&mut buf).len() {
                lines.push(line);
            }
            out.push(l);
        }
        i += 1;
    }
    (out, lines)
}

/// Every claims file in `dir` (`*.toml`), sorted by name.
pub fn load_all(dir: &Path) -> anyhow::Result<Vec<ClaimsFile>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        bail!("{}: no claims files (*.toml)", dir.display());
    }
    paths.iter().map(|p| ClaimsFile::load(p)).collect()
}

/// The results folder a claim is judged on: its pin, or the newest
/// complete folder of its spec (runs.csv present, not interrupted).
pub fn resolve_folder(results: &Path, claim: &Claim) -> anyhow::Result<Option<PathBuf>> {
    let dir = results.join(&claim.spec);
    let newest = newest_folder(&dir)?;
    match (&claim.folder, newest) {
        (None, newest) => Ok(newest),
        (Some(pin), newest) => {
            let p = dir.join(pin);
            if !p.join("runs.csv").is_file() {
                bail!(
                    "claim {}: pinned folder {} has no runs.csv",
                    claim.id,
                    p.display()
                );
            }
            let newer = newest.filter(|n| n.file_name() != p.file_name());
            if let (Some(n), None) = (&newer, &claim.pin_why) {
                bail!(
                    "claim {}: pins {} but {} is newer: judge it on the newest folder or say why not (pin_why)",
                    claim.id,
                    p.display(),
                    n.display()
                );
            }
            Ok(Some(p))
        }
    }
}

/// The newest (by stamp) folder of `dir` with a runs.csv whose meta.json
/// does not mark it interrupted.
pub fn newest_folder(dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("runs.csv").is_file())
        .collect();
    dirs.sort();
    for d in dirs.into_iter().rev() {
        if !interrupted(&d)? {
            return Ok(Some(d));
        }
    }
    Ok(None)
}

fn interrupted(dir: &Path) -> anyhow::Result<bool> {
    let meta = dir.join("meta.json");
    let Ok(text) = std::fs::read_to_string(&meta) else {
        return Ok(false);
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", meta.display()))?;
    Ok(!v.get("interrupted").is_none_or(|i| i.is_null()))
}

#[cfg(test)]
mod tests;

/// `master claims ...`.
#[derive(clap::Subcommand)]
pub enum ClaimsCmd {
    /// Judge every claim on its folder and print, per claim, the paper's
    /// value, the measured one with its 95% interval and the outcome;
    /// `--write` regenerates the verdict table and docs/claims.md,
    /// `--verify` fails if either differs from what would be generated.
    #[command(
        after_help = "Examples:\n  master claims check\n  master claims check --write\n  master claims check --verify --quiet\n  master claims check --results /tmp/results --papers ../shared/papers"
    )]
    Check {
        #[arg(long, default_value = "experiments/claims")]
        claims: PathBuf,
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// The papers' texts the quotes are checked against (skipped,
        /// saying so, when the folder is absent).
        #[arg(long, default_value = "../shared/papers")]
        papers: PathBuf,
        /// The file whose verdict table (between its markers) is generated.
        #[arg(long, default_value = "EXPERIMENTS.md")]
        experiments: PathBuf,
        /// The per-claim page, generated whole.
        #[arg(long, default_value = "docs/claims.md")]
        page: PathBuf,
        #[arg(long, conflicts_with = "verify")]
        write: bool,
        #[arg(long)]
        verify: bool,
        /// Print nothing but the summary line and any difference.
        #[arg(long)]
        quiet: bool,
    },
}

/// Runs `master claims ...`.
pub fn run(cmd: &ClaimsCmd) -> anyhow::Result<()> {
    let ClaimsCmd::Check {
        claims,
        results,
        papers,
        experiments,
        page,
        write,
        verify,
        quiet,
    } = cmd;
    let paths = report::Paths {
        claims: claims.clone(),
        results: results.clone(),
        papers: papers.clone(),
        experiments: experiments.clone(),
        page: page.clone(),
    };
    let checked = report::check(&paths)?;
    let text = report::print(&checked);
    if *quiet {
        print!(
            "{}",
            text.lines()
                .last()
                .map(|l| format!("{l}\n"))
                .unwrap_or_default()
        );
    } else {
        print!("{text}");
    }
    if *write || *verify {
        let differ = report::write(&paths, &checked, *verify)?;
        for d in &differ {
            println!("{}: {d}", if *verify { "differs" } else { "written" });
        }
        if *verify && !differ.is_empty() {
            bail!(
                "the verdict table or docs/claims.md is not what the claims and results give: review the change, then `master claims check --write`"
            );
        }
    }
    Ok(())
}
