//! Sweeps: the papers' simulations as specs (`experiments/sim-*.toml`). A
//! spec names the generator's base parameters, the points that override
//! some of them, how many seeded instances per point, and the algorithms
//! (offline planners and online policies). Every algorithm runs on the same
//! instances; results are runs.csv (one row per instance and algorithm),
//! summary.md (means per point), plots (SVG and PNG) and meta.json (spec,
//! seeds, git commit, machine). Parsed strictly: unknown keys are errors
//! naming the file and the key.

use super::{timed_run, Algo, Cost, GenParams, Measure};
use crate::results::plot::{charts, Chart};
use crate::results::{Provenance, ResultsDir};
use common::tomlfile::{self, FileError, KeyError, TomlFile};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Instance i of every point uses seed + i.
    #[serde(default)]
    pub seed: u64,
    /// Seeded instances per point.
    pub instances: u32,
    /// Online policies are re-offered cores every `tick` time units.
    #[serde(default = "default_tick")]
    pub tick: f64,
    /// `makespan` (default): run every algorithm to completion. `round`:
    /// Guo's one-round locality; `waves`: Guo's rounds until every task is
    /// placed (online policies only; see [`Algo::run_round`],
    /// [`Algo::run_waves`]).
    #[serde(default)]
    pub mode: Mode,
    /// The algorithm the summary's ratio column divides by (a label).
    #[serde(default)]
    pub ratio_to: Option<String>,
    pub algorithms: Vec<AlgoEntry>,
    pub base: GenParams,
    #[serde(default)]
    pub points: Vec<PointOverride>,
    /// Free text for summary.md: the paper's numbers, how to compare.
    #[serde(default)]
    pub notes: String,
}

fn default_tick() -> f64 {
    0.1
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    #[default]
    Makespan,
    Round,
    Waves,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AlgoEntry {
    Plain(String),
    Labelled { label: String, algo: String },
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointOverride {
    pub label: String,
    pub servers: Option<u32>,
    pub cores: Option<u32>,
    pub tasks: Option<u32>,
    pub replication: Option<u32>,
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    /// DynDL's θ (cost model dyndl only).
    pub theta: Option<f64>,
    /// BAR's q and C_loc (cost model bar only).
    pub q: Option<f64>,
    pub c_loc: Option<f64>,
    pub idle: Option<f64>,
}

/// One row of runs.csv.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRow {
    pub point: String,
    pub algorithm: String,
    pub seed: u64,
    pub servers: u32,
    pub cores: u32,
    pub tasks: u32,
    /// Under the instance's cost model (the papers' objective).
    pub makespan: f64,
    /// Online policies: the makespan of the discrete-event run; else empty.
    pub sim_makespan: f64,
    pub remote: usize,
    pub locality_pct: f64,
    pub time_ms: f64,
}

impl SweepSpec {
    /// Reads, parses and validates a sweep spec; returns it and its text.
    pub fn load(path: &Path) -> Result<(SweepSpec, String), FileError> {
        tomlfile::load(path)
    }

    fn check(&self) -> Result<(), KeyError> {
        let bad = |k: &str, e: String| KeyError::new(k, e);
        if self.instances == 0 {
            return Err(bad("instances", "must be at least 1".into()));
        }
        if !(self.tick.is_finite() && self.tick > 0.0) {
            return Err(bad("tick", format!("must be > 0 (got {})", self.tick)));
        }
        let algos = self.algorithms()?;
        if algos.is_empty() {
            return Err(bad("algorithms", "name at least one".into()));
        }
        if self.mode != Mode::Makespan {
            if let Some((l, _)) = algos.iter().find(|(_, a)| matches!(a, Algo::Offline(_))) {
                return Err(bad(
                    "algorithms",
                    format!("{l}: mode = \"round\" or \"waves\" takes online policies only"),
                ));
            }
        }
        if let Some(r) = &self.ratio_to {
            if !algos.iter().any(|(l, _)| l == r) {
                return Err(bad(
                    "ratio_to",
                    format!("{r:?} is not an algorithm's label"),
                ));
            }
        }
        let gen_err = |e: sched::model::GenError| KeyError::new(e.key(), e.to_string());
        self.base.validate().map_err(|e| gen_err(e).under("base"))?;
        for (i, p) in self.points.iter().enumerate() {
            if self.points[..i].iter().any(|o| o.label == p.label) {
                return Err(bad(
                    &format!("points[{i}].label"),
                    format!("{:?} is used twice", p.label),
                ));
            }
            self.resolve(p)
                .and_then(|g| g.validate().map_err(gen_err))
                .map_err(|e| e.under(&format!("points[{i}]")))?;
        }
        Ok(())
    }

    /// The algorithms with their labels; an error names the entry
    /// (`algorithms[2]`).
    pub fn algorithms(&self) -> Result<Vec<(String, Algo)>, KeyError> {
        let mut out: Vec<(String, Algo)> = Vec::new();
        for (i, e) in self.algorithms.iter().enumerate() {
            let key = || format!("algorithms[{i}]");
            let (label, text) = match e {
                AlgoEntry::Plain(s) => (None, s),
                AlgoEntry::Labelled { label, algo } => (Some(label.clone()), algo),
            };
            let a: Algo = text
                .parse()
                .map_err(|e: sched::algo::LabError| KeyError::new(key(), e.to_string()))?;
            let label = label.unwrap_or_else(|| a.label());
            if out.iter().any(|(l, _)| *l == label) {
                return Err(KeyError::new(
                    key(),
                    format!("two algorithms are labelled {label:?}"),
                ));
            }
            out.push((label, a));
        }
        Ok(out)
    }

    fn resolve(&self, p: &PointOverride) -> Result<GenParams, KeyError> {
        let b = &self.base;
        let cost = match (b.cost, p.theta, p.q, p.c_loc) {
            (Cost::Dyndl { theta }, t, None, None) => Cost::Dyndl {
                theta: t.unwrap_or(theta),
            },
            (Cost::Bar { c_loc, q }, None, q2, c2) => Cost::Bar {
                c_loc: c2.unwrap_or(c_loc),
                q: q2.unwrap_or(q),
            },
            _ => {
                return Err(KeyError::new(
                    "",
                    "theta goes with the dyndl cost model, q and c_loc with bar",
                ))
            }
        };
        Ok(GenParams {
            servers: p.servers.unwrap_or(b.servers),
            cores: p.cores.unwrap_or(b.cores),
            tasks: p.tasks.unwrap_or(b.tasks),
            replication: p.replication.unwrap_or(b.replication),
            alpha: p.alpha.unwrap_or(b.alpha),
            beta: p.beta.unwrap_or(b.beta),
            cost,
            idle: p.idle.or(b.idle),
        })
    }

    /// (label, parameters) of every point; no points = one, "base".
    pub fn points(&self) -> Vec<(String, GenParams)> {
        if self.points.is_empty() {
            return vec![("base".into(), self.base.clone())];
        }
        self.points
            .iter()
            .map(|p| (p.label.clone(), self.resolve(p).expect("validated")))
            .collect()
    }
}

/// meta.json of a sweep.
#[derive(Serialize)]
struct SweepMeta<'a> {
    experiment: &'a str,
    spec_file: String,
    spec_text: &'a str,
    spec: &'a SweepSpec,
    seeds: Vec<u64>,
    #[serde(flatten)]
    provenance: Provenance,
    runs: usize,
}

/// Runs a sweep; returns the results directory.
pub fn run(spec_path: &Path, results: &Path) -> anyhow::Result<PathBuf> {
    let (spec, text) = SweepSpec::load(spec_path)?;
    let started = common::unix_ms();
    let dir = ResultsDir::create(results, &spec.name, started)?;
    let algos = spec.algorithms().map_err(|e| e.in_file(spec_path))?;
    let points = spec.points();
    let measure = match spec.mode {
        Mode::Makespan => Measure::Makespan { tick: spec.tick },
        Mode::Round => Measure::Round,
        Mode::Waves => Measure::Waves,
    };
    let mut meta = SweepMeta {
        experiment: &spec.name,
        spec_file: spec_path.display().to_string(),
        spec_text: &text,
        spec: &spec,
        seeds: (0..spec.instances).map(|i| spec.seed + i as u64).collect(),
        provenance: Provenance::capture(started),
        runs: 0,
    };
    dir.write_meta(&meta)?;
    let mut rows: Vec<SweepRow> = Vec::new();
    for (label, params) in &points {
        for i in 0..spec.instances {
            let seed = spec.seed + i as u64;
            let inst = params.generate(seed);
            for (alabel, algo) in &algos {
                let (e, dt) = timed_run(algo, &inst, seed, measure)
                    .map_err(|e| anyhow::anyhow!("{label}, seed {seed}, {alabel}: {e}"))?;
                rows.push(SweepRow {
                    point: label.clone(),
                    algorithm: alabel.clone(),
                    seed,
                    servers: params.servers,
                    cores: params.cores,
                    tasks: params.tasks,
                    makespan: e.makespan,
                    sim_makespan: e.sim_makespan,
                    remote: e.remote,
                    locality_pct: e.locality() * 100.0,
                    time_ms: dt.as_secs_f64() * 1e3,
                });
            }
        }
        dir.write_runs(&rows)?;
        eprintln!("[{}] {label}: {} instances done", spec.name, spec.instances);
    }
    let labels: Vec<String> = algos.iter().map(|(l, _)| l.clone()).collect();
    let point_labels: Vec<String> = points.iter().map(|(l, _)| l.clone()).collect();
    let means = means(&rows);
    dir.write_summary(&summary(&spec, &point_labels, &labels, &means))?;
    write_plots(dir.path(), &point_labels, &labels, &means)?;
    meta.provenance.finish();
    meta.runs = rows.len();
    dir.write_meta(&meta)?;
    Ok(dir.path().to_path_buf())
}

/// Mean makespan, remote tasks, locality and time per (point, algorithm).
#[derive(Clone, Copy, Debug, Default)]
pub struct Mean {
    pub n: usize,
    pub makespan: f64,
    pub sim_makespan: f64,
    pub remote: f64,
    pub locality_pct: f64,
    pub time_ms: f64,
}

pub fn means(rows: &[SweepRow]) -> BTreeMap<(String, String), Mean> {
    let mut m: BTreeMap<(String, String), Mean> = BTreeMap::new();
    for r in rows {
        let e = m.entry((r.point.clone(), r.algorithm.clone())).or_default();
        e.n += 1;
        e.makespan += r.makespan;
        e.sim_makespan += r.sim_makespan;
        e.remote += r.remote as f64;
        e.locality_pct += r.locality_pct;
        e.time_ms += r.time_ms;
    }
    for e in m.values_mut() {
        let n = e.n.max(1) as f64;
        e.makespan /= n;
        e.sim_makespan /= n;
        e.remote /= n;
        e.locality_pct /= n;
        e.time_ms /= n;
    }
    m
}

/// The text of summary.md: means per point.
fn summary(
    spec: &SweepSpec,
    points: &[String],
    algos: &[String],
    means: &BTreeMap<(String, String), Mean>,
) -> String {
    let mut s = format!("# {}\n\n{}\n\n", spec.name, spec.description.trim());
    s += &format!(
        "Base: {} servers x {} cores, {} tasks, replication {}, α {}, β {}, cost {:?}; {} seeded instances per point (seeds {}..{}).\n\n",
        spec.base.servers,
        spec.base.cores,
        spec.base.tasks,
        spec.base.replication,
        spec.base.alpha,
        spec.base.beta,
        spec.base.cost,
        spec.instances,
        spec.seed,
        spec.seed + spec.instances as u64 - 1
    );
    if !spec.notes.trim().is_empty() {
        s += &format!("{}\n\n", spec.notes.trim());
    }
    for p in points {
        s += &format!("## {p}\n\n");
        let ratio_col = spec.ratio_to.as_deref();
        s += "| algorithm | mean makespan | simulated makespan | data-remote tasks | locality % | time (ms) |";
        if let Some(r) = ratio_col {
            s += &format!(" makespan / {r} |");
        }
        s += "\n|---|---|---|---|---|---|";
        if ratio_col.is_some() {
            s += "---|";
        }
        s += "\n";
        let base = ratio_col
            .and_then(|r| means.get(&(p.clone(), r.to_owned())))
            .map(|m| m.makespan);
        for a in algos {
            let Some(m) = means.get(&(p.clone(), a.clone())) else {
                continue;
            };
            s += &format!(
                "| {a} | {} | {} | {:.1} | {:.1} | {:.3} |",
                num(m.makespan),
                num(m.sim_makespan),
                m.remote,
                m.locality_pct,
                m.time_ms
            );
            if let Some(b) = base {
                s += &format!(" {} |", num2(m.makespan / b));
            }
            s += "\n";
        }
        s += "\n";
    }
    s
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "-".into()
    }
}

fn num2(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "-".into()
    }
}

fn write_plots(
    out: &Path,
    points: &[String],
    algos: &[String],
    means: &BTreeMap<(String, String), Mean>,
) -> anyhow::Result<()> {
    type Get = fn(&Mean) -> f64;
    let metrics: [(Chart, Get); 4] = [
        (
            Chart {
                file: "makespan",
                title: "Mean makespan",
                y: "makespan (time units)",
            },
            |m| m.makespan,
        ),
        (
            Chart {
                file: "remote_tasks",
                title: "Data-remote tasks",
                y: "data-remote tasks",
            },
            |m| m.remote,
        ),
        (
            Chart {
                file: "locality",
                title: "Data locality",
                y: "data-local tasks (%)",
            },
            |m| m.locality_pct,
        ),
        (
            Chart {
                file: "time_ms",
                title: "Running time",
                y: "ms",
            },
            |m| m.time_ms,
        ),
    ];
    let list: Vec<Chart> = metrics.iter().map(|m| m.0).collect();
    charts(out, points, algos, &list, |c, p, a| {
        let m = means.get(&(points[p].clone(), algos[a].clone()))?;
        Some((metrics[c].1)(m).into())
    })
}

impl TomlFile for SweepSpec {
    fn validate(&self) -> Result<(), KeyError> {
        self.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::Offline;
    use common::tomlfile;

    const SPEC: &str = r#"
name = "t"
instances = 2
ratio_to = "DynDLOff"
algorithms = ["hadoop", { label = "DynDLOff", algo = "dyndl-off" }, "bar"]
[base]
servers = 6
cores = 2
tasks = 20
replication = 2
beta = 5
cost = { model = "dyndl", theta = 1 }
[[points]]
label = "b5"
[[points]]
label = "b50"
beta = 50
"#;

    fn parse(t: &str) -> Result<SweepSpec, String> {
        tomlfile::parse(t, Path::new("t.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_sweep_runs_and_writes_results() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("t.toml");
        std::fs::write(&spec, SPEC).unwrap();
        let out = run(&spec, &dir.path().join("results")).unwrap();
        let mut r = csv::Reader::from_path(out.join("runs.csv")).unwrap();
        let rows: Vec<SweepRow> = r.deserialize().map(Result::unwrap).collect();
        // 2 points x 2 instances x 3 algorithms.
        assert_eq!(rows.len(), 12);
        assert!(rows.iter().all(|r| r.makespan > 0.0 && r.tasks == 20));
        // Every algorithm saw the same instance: its generated makespan
        // under DynDLOff matches a direct run.
        let inst = GenParams {
            beta: 50.0,
            ..toml::from_str::<SweepSpec>(SPEC).unwrap().base
        }
        .generate(1);
        let direct = inst.evaluate(&Offline::DyndlOff.run(&inst)).makespan;
        let row = rows
            .iter()
            .find(|r| r.point == "b50" && r.seed == 1 && r.algorithm == "DynDLOff")
            .unwrap();
        assert!(
            (row.makespan - direct).abs() < 1e-9,
            "{} vs {direct}",
            row.makespan
        );
        let s = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(
            s.contains("## b50") && s.contains("makespan / DynDLOff"),
            "{s}"
        );
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
        assert_eq!(meta["seeds"], serde_json::json!([0, 1]));
        assert_eq!(meta["runs"], 12);
    }

    #[test]
    fn bad_specs_name_the_key() {
        for (from, to, key) in [
            ("instances = 2", "instances = 0", "instances"),
            ("ratio_to = \"DynDLOff\"", "ratio_to = \"X\"", "ratio_to"),
            ("beta = 50", "q = 2", "points[1]"),
            ("replication = 2", "replication = 7", "base.replication"),
            ("\"bar\"]", "\"nope\"]", "algorithms[2]"),
            ("label = \"b50\"", "label = \"b5\"", "points[1].label"),
            ("beta = 5\n", "beta = 5\ngamma = 1\n", "gamma"),
            ("beta = 50", "beta = -1", "points[1].beta"),
            ("tasks = 20", "tasks = \"many\"", "base.tasks"),
        ] {
            let t = SPEC.replacen(from, to, 1);
            assert_ne!(t, SPEC, "{from}");
            let e = parse(&t).unwrap_err();
            assert!(e.contains(key), "{key}: {e}");
        }
    }

    #[test]
    fn every_shipped_spec_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".toml") {
                continue;
            }
            // sim-* specs are the lab's sweeps.
            if name.starts_with("sim-") {
                SweepSpec::load(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
                continue;
            }
            let (s, _) = crate::experiment::spec::Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!s.points().unwrap().is_empty());
            n += 1;
        }
        assert!(n >= 14, "{n} specs in {}", dir.display());
    }
}
