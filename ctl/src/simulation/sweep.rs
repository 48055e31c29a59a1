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
    /// placed; `fair-round`: one round with `groups` (Guo's Fig 5), its
    /// locality and unfairness (online policies only; see
    /// [`Algo::run_round`], [`Algo::run_waves`], [`Algo::run_fair_round`]).
    #[serde(default)]
    pub mode: Mode,
    /// The algorithm the summary's ratio column divides by (a label).
    #[serde(default)]
    pub ratio_to: Option<String>,
    /// Groups and their weights for `mode = "fair-round"` (Guo's Fig 5:
    /// `{ g1 = 1, g2 = 2, ... }`); the `fair` and `lsap-fair` policies get
    /// them as their weights.
    #[serde(default)]
    pub groups: Option<sched::policy::Weights>,
    /// Wall-clock limit of one run in seconds (DynDL's 30-minute cut-off of
    /// HTA): MaxCover-BalAssign is stopped at it, and any run that takes
    /// longer is reported as over the limit instead of its figures.
    #[serde(default)]
    pub time_limit_s: Option<f64>,
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
    FairRound,
}

/// One of a sweep's algorithms: its name (`"bar"`), or a table with a
/// label. Read by hand rather than as an untagged enum, so that a table
/// with an unknown key is refused naming that key.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum AlgoEntry {
    Plain(String),
    Labelled {
        label: String,
        algo: String,
        /// How an online policy is run (`events`, the default, or BAR's
        /// `compile-time:set-aside`, `compile-time:wake`,
        /// `compile-time:after=H`; see [`lab::algo::Driver`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        driver: Option<String>,
    },
}

/// The table form of [`AlgoEntry`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelledEntry {
    label: String,
    algo: String,
    #[serde(default)]
    driver: Option<String>,
}

impl<'de> Deserialize<'de> for AlgoEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = AlgoEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an algorithm's name, or a table { label, algo, driver }")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<AlgoEntry, E> {
                Ok(AlgoEntry::Plain(s.into()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<AlgoEntry, A::Error> {
                let e =
                    LabelledEntry::deserialize(serde::de::value::MapAccessDeserializer::new(m))?;
                Ok(AlgoEntry::Labelled {
                    label: e.label,
                    algo: e.algo,
                    driver: e.driver,
                })
            }
        }
        d.deserialize_any(Entry)
    }
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
    pub racks: Option<u32>,
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
    pub remote: f64,
    pub locality_pct: f64,
    /// Node-local or rack-local tasks, % (= locality_pct on one rack).
    pub rack_locality_pct: f64,
    pub time_ms: f64,
    /// `fair-round`: sum over groups of |share - weight| after the round.
    pub unfairness: f64,
    /// An offline planner's phases, `name=ms` separated by `;`.
    pub phases: String,
    /// The run passed `time_limit_s`: its figures are NaN.
    pub over_limit: bool,
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
                    format!("{l}: mode = \"round\", \"waves\" or \"fair-round\" takes online policies only"),
                ));
            }
            if let Some((l, _)) = algos.iter().find(|(_, a)| {
                matches!(a, Algo::Online { driver, .. } if *driver != lab::algo::Driver::Events)
            }) {
                return Err(bad(
                    "algorithms",
                    format!("{l}: a driver is for mode = \"makespan\" only (a round offers each idle core once)"),
                ));
            }
        }
        match (&self.groups, self.mode) {
            (None, Mode::FairRound) => {
                return Err(bad(
                    "groups",
                    "mode = \"fair-round\" needs groups = { name = weight, ... }".into(),
                ))
            }
            (Some(_), m) if m != Mode::FairRound => {
                return Err(bad(
                    "groups",
                    "groups are for mode = \"fair-round\" only".into(),
                ))
            }
            (Some(g), _) => {
                if g.is_empty() {
                    return Err(bad("groups", "name at least one group".into()));
                }
                if let Some((n, w)) = g.iter().find(|(_, w)| !(w.is_finite() && **w > 0.0)) {
                    return Err(bad(
                        &format!("groups.{n}"),
                        format!("a weight must be > 0 (got {w})"),
                    ));
                }
            }
            (None, _) => {}
        }
        if let Some(l) = self.time_limit_s {
            if !(l.is_finite() && l > 0.0) {
                return Err(bad("time_limit_s", format!("must be > 0 (got {l})")));
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
            let (label, text, driver) = match e {
                AlgoEntry::Plain(s) => (None, s, None),
                AlgoEntry::Labelled {
                    label,
                    algo,
                    driver,
                } => (Some(label.clone()), algo, driver.as_ref()),
            };
            let mut a: Algo = text
                .parse()
                .map_err(|e: lab::algo::LabError| KeyError::new(key(), e.to_string()))?;
            if let Some(d) = driver {
                let d: lab::algo::Driver = d
                    .parse()
                    .map_err(|e: String| KeyError::new(format!("{}.driver", key()), e))?;
                a = a
                    .with_driver(d)
                    .map_err(|e| KeyError::new(format!("{}.driver", key()), e.to_string()))?;
            }
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
            racks: p.racks.or(b.racks),
            placement: b.placement,
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
        Mode::FairRound => Measure::FairRound(spec.groups.as_ref().expect("validated")),
    };
    let limit = spec.time_limit_s.map(std::time::Duration::from_secs_f64);
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
                let run = timed_run(algo, &inst, seed, measure, limit)
                    .map_err(|e| anyhow::anyhow!("{label}, seed {seed}, {alabel}: {e}"))?;
                let e = run.eval.as_ref();
                let or_nan = |f: &dyn Fn(&sched::model::Eval) -> f64| e.map_or(f64::NAN, f);
                rows.push(SweepRow {
                    point: label.clone(),
                    algorithm: alabel.clone(),
                    seed,
                    servers: params.servers,
                    cores: params.cores,
                    tasks: params.tasks,
                    makespan: or_nan(&|e| e.makespan),
                    sim_makespan: or_nan(&|e| e.sim_makespan),
                    remote: or_nan(&|e| e.remote as f64),
                    locality_pct: or_nan(&|e| e.locality() * 100.0),
                    rack_locality_pct: or_nan(&|e| e.rack_locality() * 100.0),
                    time_ms: run.time.as_secs_f64() * 1e3,
                    unfairness: run.unfairness.unwrap_or(f64::NAN),
                    phases: run
                        .phases
                        .iter()
                        .map(|(n, d)| format!("{n}={:.3}", d.as_secs_f64() * 1e3))
                        .collect::<Vec<_>>()
                        .join(";"),
                    over_limit: e.is_none(),
                });
                if e.is_none() {
                    eprintln!(
                        "[{}] {label}, seed {seed}, {alabel}: over the {} s limit ({:.1} s)",
                        spec.name,
                        spec.time_limit_s.unwrap_or_default(),
                        run.time.as_secs_f64()
                    );
                }
            }
        }
        dir.write_runs(&rows)?;
        eprintln!("[{}] {label}: {} instances done", spec.name, spec.instances);
    }
    let labels: Vec<String> = algos.iter().map(|(l, _)| l.clone()).collect();
    let point_labels: Vec<String> = points.iter().map(|(l, _)| l.clone()).collect();
    let means = means(&rows);
    dir.write_summary(&summary(&spec, &points, &labels, &means))?;
    let racked = points.iter().any(|(_, p)| p.racks.unwrap_or(1) > 1);
    write_plots(dir.path(), &point_labels, &labels, &means, racked)?;
    meta.provenance.finish();
    meta.runs = rows.len();
    dir.write_meta(&meta)?;
    Ok(dir.path().to_path_buf())
}

/// Mean, min and max of one figure over a point's instances.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    /// Over the finite values; None if there is none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Stat> {
        let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        Some(Stat {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// `mean (min-max)`, or the mean alone when min = max.
    fn show(&self, digits: usize) -> String {
        let f = |v: f64| format!("{v:.digits$}");
        if f(self.min) == f(self.max) {
            f(self.mean)
        } else {
            format!("{} ({}-{})", f(self.mean), f(self.min), f(self.max))
        }
    }

    fn bar(&self) -> crate::results::plot::Bar {
        crate::results::plot::Bar {
            value: self.mean,
            spread: Some((self.min, self.max)),
        }
    }
}

/// The figures of one (point, algorithm) over its instances: runs over
/// the time limit count in `over` and in none of the figures.
#[derive(Clone, Debug, Default)]
pub struct Mean {
    pub n: usize,
    pub over: usize,
    pub makespan: Option<Stat>,
    pub sim_makespan: Option<Stat>,
    pub remote: Option<Stat>,
    pub locality_pct: Option<Stat>,
    pub rack_locality_pct: Option<Stat>,
    /// Over every run, the stopped ones included.
    pub time_ms: Option<Stat>,
    pub unfairness: Option<Stat>,
    /// Each phase's time, in the planner's order.
    pub phases: Vec<(String, Stat)>,
}

pub fn means(rows: &[SweepRow]) -> BTreeMap<(String, String), Mean> {
    let mut groups: BTreeMap<(String, String), Vec<&SweepRow>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((r.point.clone(), r.algorithm.clone()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|(k, rs)| {
            let done: Vec<&&SweepRow> = rs.iter().filter(|r| !r.over_limit).collect();
            let st = |f: fn(&SweepRow) -> f64| Stat::of(done.iter().map(|r| f(r)));
            let mut phase_names: Vec<String> = Vec::new();
            let mut phase_ms: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in &done {
                for part in r.phases.split(';').filter(|p| !p.is_empty()) {
                    if let Some((n, v)) = part.split_once('=') {
                        if !phase_names.iter().any(|x| x == n) {
                            phase_names.push(n.to_owned());
                        }
                        phase_ms
                            .entry(n.to_owned())
                            .or_default()
                            .push(v.parse().unwrap_or(f64::NAN));
                    }
                }
            }
            let m = Mean {
                n: rs.len(),
                over: rs.len() - done.len(),
                makespan: st(|r| r.makespan),
                sim_makespan: st(|r| r.sim_makespan),
                remote: st(|r| r.remote),
                locality_pct: st(|r| r.locality_pct),
                rack_locality_pct: st(|r| r.rack_locality_pct),
                time_ms: Stat::of(rs.iter().map(|r| r.time_ms)),
                unfairness: st(|r| r.unfairness),
                phases: phase_names
                    .into_iter()
                    .filter_map(|n| {
                        let s = Stat::of(phase_ms[&n].iter().copied())?;
                        Some((n, s))
                    })
                    .collect(),
            };
            (k, m)
        })
        .collect()
}

/// Idle slots (cores of initial load 0) per task at a point of a
/// `round`, `waves` or `fair-round` sweep: Guo's x-axis in Fig 6 (g, h).
fn idle_per_task(p: &GenParams) -> Option<f64> {
    let idle = p.idle?;
    let slots = (idle * (p.servers * p.cores) as f64).round();
    (p.tasks > 0).then(|| slots / p.tasks as f64)
}

/// The text of summary.md: per point, each algorithm's mean (min-max)
/// over the instances.
fn summary(
    spec: &SweepSpec,
    points: &[(String, GenParams)],
    algos: &[String],
    means: &BTreeMap<(String, String), Mean>,
) -> String {
    let mut s = format!("# {}\n\n{}\n\n", spec.name, spec.description.trim());
    let racks = match spec.base.racks {
        Some(n) if n > 1 => format!(", {n} racks ({} placement)", spec.base.placement.name()),
        _ => String::new(),
    };
    s += &format!(
        "Base: {} servers x {} cores, {} tasks, replication {}, α {}, β {}, cost {:?}{racks}; {} seeded instances per point (seeds {}..{}). Cells: mean (min-max) over the instances.\n\n",
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
    if let Some(g) = &spec.groups {
        let total: f64 = g.values().sum();
        let list: Vec<String> = g
            .iter()
            .map(|(n, w)| format!("{n} {:.3}", w / total))
            .collect();
        s += &format!("Groups (normalised weights): {}.\n\n", list.join(", "));
    }
    if let Some(l) = spec.time_limit_s {
        s += &format!("Time limit per run: {l} s.\n\n");
    }
    if !spec.notes.trim().is_empty() {
        s += &format!("{}\n\n", spec.notes.trim());
    }
    let fair = spec.mode == Mode::FairRound;
    for (p, params) in points {
        s += &format!("## {p}\n\n");
        if let Some(r) = idle_per_task(params) {
            s += &format!(
                "{} servers x {} slots, {} tasks; idle slots / tasks = {r:.3}\n\n",
                params.servers, params.cores, params.tasks
            );
        }
        let ratio_col = spec.ratio_to.as_deref();
        let any_phases = algos.iter().any(|a| {
            means
                .get(&(p.clone(), a.clone()))
                .is_some_and(|m| !m.phases.is_empty())
        });
        let racked = params.racks.unwrap_or(1) > 1;
        s += "| algorithm | makespan | simulated makespan | data-remote tasks | locality % | time (ms) |";
        let mut cols = 6;
        if racked {
            s += " node- or rack-local % |";
            cols += 1;
        }
        if fair {
            s += " unfairness |";
            cols += 1;
        }
        if any_phases {
            s += " phases (ms) |";
            cols += 1;
        }
        if let Some(r) = ratio_col {
            s += &format!(" makespan / {r} |");
            cols += 1;
        }
        s += &format!("\n|{}\n", "---|".repeat(cols));
        let base = ratio_col
            .and_then(|r| means.get(&(p.clone(), r.to_owned())))
            .and_then(|m| m.makespan)
            .map(|m| m.mean);
        let cell = |x: &Option<Stat>, d: usize| x.map_or("-".to_owned(), |x| x.show(d));
        for a in algos {
            let Some(m) = means.get(&(p.clone(), a.clone())) else {
                continue;
            };
            let makespan = if m.over == m.n {
                format!("over the limit ({} of {})", m.over, m.n)
            } else if m.over > 0 {
                format!(
                    "{} ({} of {} over the limit)",
                    cell(&m.makespan, 3),
                    m.over,
                    m.n
                )
            } else {
                cell(&m.makespan, 3)
            };
            s += &format!(
                "| {a} | {makespan} | {} | {} | {} | {} |",
                cell(&m.sim_makespan, 3),
                cell(&m.remote, 1),
                cell(&m.locality_pct, 1),
                cell(&m.time_ms, 3),
            );
            if racked {
                s += &format!(" {} |", cell(&m.rack_locality_pct, 1));
            }
            if fair {
                s += &format!(" {} |", cell(&m.unfairness, 3));
            }
            if any_phases {
                let ph: Vec<String> = m
                    .phases
                    .iter()
                    .map(|(n, st)| format!("{n} {}", st.show(3)))
                    .collect();
                s += &format!(
                    " {} |",
                    if ph.is_empty() {
                        "-".into()
                    } else {
                        ph.join("; ")
                    }
                );
            }
            if let Some(b) = base {
                let r = m.makespan.map_or(f64::NAN, |m| m.mean / b);
                s += &format!(" {} |", num2(r));
            }
            s += "\n";
        }
        s += "\n";
    }
    s
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
    racked: bool,
) -> anyhow::Result<()> {
    type Get = fn(&Mean) -> Option<Stat>;
    let metrics: [(Chart, Get); 6] = [
        (
            Chart {
                file: "makespan",
                title: "Mean makespan (min-max)",
                y: "makespan (time units)",
            },
            |m| m.makespan,
        ),
        (
            Chart {
                file: "remote_tasks",
                title: "Data-remote tasks (min-max)",
                y: "data-remote tasks",
            },
            |m| m.remote,
        ),
        (
            Chart {
                file: "locality",
                title: "Data locality (min-max)",
                y: "data-local tasks (%)",
            },
            |m| m.locality_pct,
        ),
        (
            Chart {
                file: "rack_locality",
                title: "Node- or rack-local tasks (min-max)",
                y: "node- or rack-local tasks (%)",
            },
            |m| m.rack_locality_pct,
        ),
        (
            Chart {
                file: "time_ms",
                title: "Running time (min-max)",
                y: "ms",
            },
            |m| m.time_ms,
        ),
        (
            Chart {
                file: "unfairness",
                title: "Unfairness after the round (min-max)",
                y: "sum over groups of |share - weight|",
            },
            |m| m.unfairness,
        ),
    ];
    // The rack chart only when some point has racks (else it repeats
    // the locality chart).
    let metrics: Vec<&(Chart, Get)> = metrics
        .iter()
        .filter(|(c, _)| racked || c.file != "rack_locality")
        .collect();
    let list: Vec<Chart> = metrics.iter().map(|m| m.0).collect();
    charts(out, points, algos, &list, |c, p, a| {
        let m = means.get(&(points[p].clone(), algos[a].clone()))?;
        Some((metrics[c].1)(m)?.bar())
    })
}

impl TomlFile for SweepSpec {
    fn validate(&self) -> Result<(), KeyError> {
        self.check()
    }
}

#[cfg(test)]
mod tests;
