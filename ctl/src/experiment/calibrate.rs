//! `master sim calibrate DIR`: the discrete-event simulator calibrated on a
//! real run of the experiment runner, and its predictions set against what
//! was measured.
//!
//! From DIR's `tasks.csv`, `background.csv` and `runs.csv`, per point:
//! - a data-local map lasts its compute time (drawn from the run's seed
//!   exactly as the runner drew it) plus an overhead (reading, checking,
//!   pacing) drawn from the measured local overheads of that point;
//! - a data-remote map adds `base + per_source * n_src + per_reader * n_dst`
//!   (n_src, n_dst: the other remote reads running from the same source, on
//!   the same reader, when it starts), fitted by least squares over the
//!   point's remote attempts; and, as the papers model it, the same with
//!   the cost charged at the reader only (`per_source = 0`);
//! - a reduce lasts `base + per_mb * its input MB`, least squares over the
//!   point's reduces; it is placed by the run's reduce placement;
//! - each run's heartbeat phases (the circular mean of its workers'
//!   launches modulo the interval), its background processes (as measured)
//!   and its jobs' arrivals; block replicas are the workers that served or
//!   ran each block in the runs of the same seed (every scheduler of a
//!   repetition reads the same data).
//!
//! Every run is then simulated with `lab::replay` under its own scheduler
//! and seed; DIR/calibration/ gets `predictions.csv` (per run),
//! `predicted-jobs.csv` (per job, against DIR's `jobs.csv`),
//! `predicted-tasks.csv`, `summary.md` (means, and the per-job error's
//! mean, median and 90th percentile) and `meta.json`.

use super::output::{RunRecord, TaskRow};
use super::spec::Spec;
use super::timeline::BackgroundRow;
use crate::results::{read_csv, Provenance, ResultsDir};
use anyhow::Context;
use common::hash::splitmix64;
use common::wire::TaskCompute;
use common::{JobId, WorkerId};
use lab::replay::{
    self, BackgroundRun, RemoteCost, RemoteModel, ReplayCluster, ReplayJob, ReplayOutcome,
    ReplayTask,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A simulation that makes no progress for this long has failed.
const GIVE_UP_MS: u64 = 600_000;

/// The fitted model of one point.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PointModel {
    pub point: String,
    /// Local overheads (ms), sorted: the empirical distribution (kept in
    /// `models.json.gz`, not in meta.json).
    /// With the host term, what is left of each after it (may be < 0).
    #[serde(skip)]
    pub overheads: Vec<i64>,
    pub local_attempts: usize,
    pub overhead_mean_ms: f64,
    pub overhead_p10_ms: i64,
    pub overhead_p90_ms: i64,
    /// Host contention: ms per other map launched on the host in the
    /// [`replay::HOST_WINDOW_MS`] before a map (least squares over the
    /// local maps; 0 unless fitted with `host_term`).
    #[serde(default)]
    pub host_ms_per_start: f64,
    pub remote_attempts: usize,
    /// Mean measured extra of a remote map over its local time (ms).
    pub remote_extra_mean_ms: f64,
    /// Source and reader terms.
    pub cost: Cost,
    /// The papers' model: the reader's term only.
    pub cost_reader_only: Cost,
    /// Fair-share transfers: a block read alone takes this long (ms), a
    /// block of `ref_bytes` where the point's remote reads differ in size
    /// (others in proportion; 0: every block alike).
    pub transfer_ms: f64,
    pub ref_bytes: u64,
    /// Reduces: base + per MB of input (ms), fitted on this many.
    pub reduce_attempts: usize,
    pub reduce_base_ms: f64,
    pub reduce_ms_per_mb: f64,
    /// Per workload (`sort`, `wordcount`): the bytes its reduces fetched
    /// over the bytes its maps read, over the point's jobs with reduces
    /// (what a simulated job of a spec's mix shuffles; none for a trace,
    /// whose jobs give their own).
    #[serde(default)]
    pub shuffle_ratio: BTreeMap<String, f64>,
}

/// One run's successful map and reduce attempts, and its seed.
type RunRows<'a> = (&'a [&'a TaskRow], &'a [&'a TaskRow], u64);

/// The remote-read models' names, in the order of [`PointModel::models`]
/// and of the summary's tables.
pub const MODELS: [&str; 3] = ["source+reader", "reader-only", "fair-share"];

impl PointModel {
    /// The remote-read models every run is simulated under, by name.
    pub fn models(&self) -> [(&'static str, RemoteModel); 3] {
        [
            (MODELS[0], RemoteModel::Static(self.cost.remote())),
            (
                MODELS[1],
                RemoteModel::Static(self.cost_reader_only.remote()),
            ),
            (
                MODELS[2],
                RemoteModel::FairShare {
                    transfer_ms: self.transfer_ms,
                    ref_bytes: self.ref_bytes,
                },
            ),
        ]
    }
}

#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize)]
pub struct Cost {
    pub base_ms: f64,
    pub per_source_ms: f64,
    pub per_reader_ms: f64,
    /// Per 10^6 bytes of the block read: fitted only where a point's remote
    /// reads differ in size (a trace's maps), else 0.
    pub per_mb_ms: f64,
    /// Root mean square error of the fit over the remote attempts (ms).
    pub rmse_ms: f64,
}

impl Cost {
    fn remote(&self) -> RemoteCost {
        RemoteCost {
            base_ms: self.base_ms,
            per_source_ms: self.per_source_ms,
            per_reader_ms: self.per_reader_ms,
            per_mb_ms: self.per_mb_ms,
        }
    }
}

/// How `calibrate` fits and simulates.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub fit: Fit,
    /// Delay each simulated heartbeat by up to this many ms (0: none).
    pub jitter_ms: u64,
    /// Fit the host term (`PointModel::host_ms_per_start`): a map's
    /// overhead grows with the maps launched on the shared host just
    /// before it (writes `...-host/`).
    pub host_term: bool,
}

impl Options {
    pub fn new(fit: Fit) -> Options {
        Options {
            fit,
            jitter_ms: 0,
            host_term: false,
        }
    }
}

/// The runs each prediction's model is fitted on.
#[derive(Clone, Debug, PartialEq)]
pub enum Fit {
    /// Every run of the folder: in sample (writes `calibration/`).
    InSample,
    /// Each scheduler's runs by the model of the other schedulers' runs
    /// (writes `calibration-hold-out/`).
    HoldOut,
    /// Another folder's calibration (its `models.json.gz`), e.g. the
    /// 8-worker runs' predicting a 32-worker folder of the same workload
    /// family: each point by the model of the point of the same label
    /// (writes `calibration-from-<that experiment>/`).
    From(PathBuf),
}

impl Fit {
    /// The output folder's name (before any `-jitter<ms>`).
    fn folder(&self) -> String {
        match self {
            Fit::InSample => "calibration".into(),
            Fit::HoldOut => "calibration-hold-out".into(),
            Fit::From(cal) => format!("calibration-from-{}", experiment_of(cal)),
        }
    }

    /// How the summary says it, as a phrase after "per job ...".
    fn phrase(&self) -> String {
        match self {
            Fit::InSample => "in sample (the model fitted on every run it predicts)".into(),
            Fit::HoldOut => "held out (each scheduler's runs predicted by the model fitted on the other schedulers' runs)".into(),
            Fit::From(cal) => format!(
                "held out by folder (every run predicted by the model fitted on `{}`, none of these runs)",
                cal.display()
            ),
        }
    }
}

/// The experiment a calibration folder belongs to:
/// `<results>/<experiment>/<stamp>/calibration` gives `<experiment>`.
fn experiment_of(cal: &Path) -> String {
    cal.parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map_or_else(|| "other".into(), |n| n.to_string_lossy().into_owned())
}

/// A point's model as `models.json.gz` keeps it: with its overheads.
#[derive(Serialize, serde::Deserialize)]
struct StoredModel {
    #[serde(flatten)]
    model: PointModel,
    overheads: Vec<i64>,
}

/// The models a calibration folder fitted, by point label, from its
/// `models.json.gz`.
pub fn read_models(cal: &Path) -> anyhow::Result<BTreeMap<String, PointModel>> {
    let file = cal.join("models.json.gz");
    if !file.exists() {
        anyhow::bail!(
            "{}: no models.json.gz (not a calibration folder, or one from before it was kept: run `master sim calibrate` on its results again)",
            cal.display()
        );
    }
    let stored: Vec<StoredModel> = crate::ops::gz::read_json(&file, "a calibration's models")?;
    Ok(stored
        .into_iter()
        .map(|s| {
            let mut m = s.model;
            m.overheads = s.overheads;
            (m.point.clone(), m)
        })
        .collect())
}

/// One run, measured and predicted under one model.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Prediction {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    /// `source+reader` or `reader-only`.
    pub model: String,
    pub measured_mean_jct_s: f64,
    pub predicted_mean_jct_s: f64,
    pub measured_makespan_s: f64,
    pub predicted_makespan_s: f64,
    pub measured_remote: u32,
    pub predicted_remote: u32,
}

/// One job of one run, measured (`jobs.csv`) and predicted under one model.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PredictedJob {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub model: String,
    pub job: String,
    pub measured_jct_s: f64,
    pub predicted_jct_s: f64,
}

/// The spread of per-job errors: relative, |predicted / measured - 1|, or
/// in seconds, |predicted - measured|.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorSpread {
    pub jobs: usize,
    pub mean: f64,
    pub median: f64,
    /// Nearest-rank 90th percentile.
    pub p90: f64,
}

/// The spread of |predicted / measured - 1| over `(measured, predicted)`
/// pairs with a positive measured value; None without any.
pub fn error_spread(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<ErrorSpread> {
    spread_of(
        pairs
            .into_iter()
            .filter(|(m, p)| *m > 0.0 && m.is_finite() && p.is_finite())
            .map(|(m, p)| (p / m - 1.0).abs())
            .collect(),
    )
}

/// The spread of |predicted - measured| (seconds) over the same pairs as
/// [`error_spread`].
pub fn seconds_spread(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<ErrorSpread> {
    spread_of(
        pairs
            .into_iter()
            .filter(|(m, p)| *m > 0.0 && m.is_finite() && p.is_finite())
            .map(|(m, p)| (p - m).abs())
            .collect(),
    )
}

/// `jobs` paired rank by rank within each run: the k-th shortest measured
/// JCT with the k-th shortest predicted one. Its error is the simulator's
/// error on the distribution of JCTs, leaving out which job got which.
pub fn rank_pairs<'a>(jobs: impl IntoIterator<Item = &'a PredictedJob>) -> Vec<(f64, f64)> {
    // (point, scheduler, rep, model) -> measured and predicted JCTs.
    type Run<'a> = (&'a str, &'a str, u32, &'a str);
    let mut runs: BTreeMap<Run, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for j in jobs {
        let r = runs
            .entry((&j.point, &j.scheduler, j.rep, &j.model))
            .or_default();
        r.0.push(j.measured_jct_s);
        r.1.push(j.predicted_jct_s);
    }
    runs.into_values()
        .flat_map(|(mut m, mut p)| {
            m.sort_by(f64::total_cmp);
            p.sort_by(f64::total_cmp);
            m.into_iter().zip(p)
        })
        .collect()
}

fn spread_of(mut e: Vec<f64>) -> Option<ErrorSpread> {
    if e.is_empty() {
        return None;
    }
    e.sort_by(f64::total_cmp);
    let n = e.len();
    let rank = |q: f64| e[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    Some(ErrorSpread {
        jobs: n,
        mean: e.iter().sum::<f64>() / n as f64,
        median: if n % 2 == 1 {
            e[n / 2]
        } else {
            (e[n / 2 - 1] + e[n / 2]) / 2.0
        },
        p90: rank(0.9),
    })
}

/// One simulated task, for comparison with the measured `tasks.csv`.
#[derive(Clone, Debug, Serialize)]
pub struct PredictedTask {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub model: String,
    pub job: String,
    pub task: u32,
    /// `map` or `reduce`.
    pub kind: String,
    pub worker: String,
    pub source: String,
    pub start_s: f64,
    pub end_s: f64,
}

/// One run of the results folder, ready to simulate.
struct Setup<'a> {
    key: &'a (String, String, u32),
    run: &'a RunRecord,
    config: &'a sched::policy::SchedulerConfig,
    reduces: sched::reduce::ReducePlacement,
    cluster: ReplayCluster,
    bg: Vec<BackgroundRun>,
}

/// The fair-share transfer time (ms alone) at which the simulated runs'
/// remote maps take, on average, as much longer than their local time as
/// the measured ones did: bisection (the simulated extra grows with it).
/// 0 when no measured map read remotely.
fn fit_transfer(
    setups: &[&Setup],
    m: &PointModel,
    simulate: &impl Fn(
        &Setup,
        &PointModel,
        RemoteModel,
    ) -> anyhow::Result<(ReplayOutcome, Vec<ReplayJob>)>,
) -> anyhow::Result<f64> {
    let target = m.remote_extra_mean_ms;
    if m.remote_attempts == 0 || target.is_nan() || target <= 0.0 {
        return Ok(0.0);
    }
    // Mean simulated extra of the remote maps at transfer time `t`.
    let extra = |t: f64| -> anyhow::Result<Option<f64>> {
        let (mut sum, mut n) = (0.0, 0usize);
        for s in setups {
            let remote = RemoteModel::FairShare {
                transfer_ms: t,
                ref_bytes: m.ref_bytes,
            };
            let (out, jobs) = simulate(s, m, remote)?;
            let local: BTreeMap<(JobId, u32), u64> = jobs
                .iter()
                .flat_map(|j| j.tasks.iter().map(move |x| ((j.id, x.index), x.local_ms)))
                .collect();
            for r in out.runs.iter().filter(|r| r.is_remote()) {
                let l = local.get(&(r.task.job, r.task.index)).copied().unwrap_or(0);
                sum += (r.end_ms - r.start_ms) as f64 - l as f64;
                n += 1;
            }
        }
        Ok((n > 0).then(|| sum / n as f64))
    };
    let (mut lo, mut hi) = (0.0f64, target.max(1.0));
    // Widen until the simulated extra reaches the measured one.
    for _ in 0..8 {
        match extra(hi)? {
            Some(e) if e >= target => break,
            _ => {
                lo = hi;
                hi *= 2.0;
            }
        }
    }
    for _ in 0..14 {
        let mid = (lo + hi) / 2.0;
        match extra(mid)? {
            Some(e) if e >= target => hi = mid,
            _ => lo = mid,
        }
    }
    Ok((lo + hi) / 2.0)
}

/// One remote attempt for the fit: extra ms over its local time, n_src, n_dst.
type Sample = (f64, f64, f64);

/// A run of a results folder: (point, scheduler, repetition).
type RunKey = (String, String, u32);

/// A results folder's measured runs, indexed for the calibration: each
/// run's successful maps and reduces, background processes and seed; the
/// spec's worker roles, pacing and files; each succeeded job's JCT.
struct Measured<'a> {
    spec: &'a Spec,
    points: &'a [super::spec::Point],
    runs: &'a [RunRecord],
    /// Each succeeded job's measured JCT, by (point, scheduler, rep, job)
    /// (folders from before jobs.csv have none: the per-job tables are
    /// left out).
    jobs: BTreeMap<(String, String, u32, String), f64>,
    seed_of: BTreeMap<RunKey, u64>,
    maps: BTreeMap<RunKey, Vec<&'a TaskRow>>,
    reduces: BTreeMap<RunKey, Vec<&'a TaskRow>>,
    background: BTreeMap<RunKey, Vec<&'a BackgroundRow>>,
    /// Worker roles: the last `reduce_workers` run reduces only.
    runs_maps: Vec<bool>,
    runs_reduces: Vec<bool>,
    /// Each point's compute pacing (MB/s per slot), if any.
    pacing: BTreeMap<&'a str, f64>,
    /// With a trace, each point's job -> file (its sample's input path).
    trace_files: BTreeMap<String, Vec<u64>>,
}

impl<'a> Measured<'a> {
    fn new(
        dir: &Path,
        spec: &'a Spec,
        points: &'a [super::spec::Point],
        runs: &'a [RunRecord],
        tasks: &'a [TaskRow],
        background: &'a [BackgroundRow],
    ) -> anyhow::Result<Self> {
        let jobs_csv = dir.join("jobs.csv");
        let jobs = if jobs_csv.exists() {
            read_csv::<super::qos::JobRow>(&jobs_csv)?
                .into_iter()
                .filter(|j| j.state == "succeeded" && j.jct_s.is_finite())
                .map(|j| ((j.point, j.scheduler, j.rep, j.job), j.jct_s))
                .collect()
        } else {
            BTreeMap::new()
        };
        let seed_of = runs
            .iter()
            .map(|r| ((r.point.clone(), r.scheduler.clone(), r.rep), r.seed))
            .collect();
        let (mut maps, mut reduces) = (BTreeMap::new(), BTreeMap::new());
        for t in tasks.iter().filter(|t| t.ok) {
            let key = (t.point.clone(), t.scheduler.clone(), t.rep);
            match t.kind.as_str() {
                "map" => maps.entry(key).or_insert_with(Vec::new).push(t),
                _ => reduces.entry(key).or_insert_with(Vec::new).push(t),
            }
        }
        let mut bg: BTreeMap<RunKey, Vec<&BackgroundRow>> = BTreeMap::new();
        for b in background {
            bg.entry((b.point.clone(), b.scheduler.clone(), b.rep))
                .or_default()
                .push(b);
        }
        let workers = spec.cluster.workers as usize;
        let dedicated = spec.cluster.reduce_workers as usize;
        let trace_files = points
            .iter()
            .map(|p| {
                let plan = spec.trace_plan(p.block_bytes)?;
                let files = plan.map_or_else(Vec::new, |plan| {
                    plan.jobs.iter().map(|j| j.file as u64).collect()
                });
                Ok((p.label.clone(), files))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Measured {
            spec,
            points,
            runs,
            jobs,
            seed_of,
            maps,
            reduces,
            background: bg,
            runs_maps: (0..workers)
                .map(|i| dedicated == 0 || i < workers - dedicated)
                .collect(),
            runs_reduces: (0..workers)
                .map(|i| dedicated == 0 || i >= workers - dedicated)
                .collect(),
            pacing: points
                .iter()
                .filter_map(|p| Some((p.label.as_str(), p.slot_rate_mbs?)))
                .collect(),
            trace_files,
        })
    }

    fn reduces_of(&self, k: &RunKey) -> &[&'a TaskRow] {
        self.reduces.get(k).map_or(&[], |v| v.as_slice())
    }

    fn seed(&self, k: &RunKey) -> u64 {
        self.seed_of.get(k).copied().unwrap_or(self.spec.seed)
    }

    /// A map's known time: its drawn compute, plus, under compute pacing,
    /// its input at the slot's rate (a task lasts at least that: maps of
    /// different sizes, as a trace's, differ by it).
    fn compute(&self, seed: u64, t: &TaskRow) -> anyhow::Result<u64> {
        let paced = self
            .pacing
            .get(t.point.as_str())
            .map_or(0, |&rate| pacing_ms(t.input_bytes, rate));
        let Some([a, b]) = self.spec.jobs.task_time_s else {
            return Ok(paced);
        };
        let i = job_number(&t.job_name)?;
        Ok(paced
            + TaskCompute {
                min_ms: (a * 1000.0).round() as u64,
                max_ms: (b * 1000.0).round() as u64,
                seed: splitmix64(seed ^ splitmix64(0xc0de ^ i)),
            }
            .for_task(t.task))
    }

    /// The file a task's job read.
    fn file_of(&self, t: &TaskRow) -> anyhow::Result<u64> {
        let i = job_number(&t.job_name)?;
        if self.spec.trace.is_some() {
            return self
                .trace_files
                .get(&t.point)
                .and_then(|f| f.get(i as usize))
                .copied()
                .with_context(|| format!("job {} is not in the trace sample", t.job_name));
        }
        Ok(if self.spec.jobs.mix.is_empty() {
            i % u64::from(points_files(self.points, &t.point))
        } else {
            i
        })
    }

    /// A job's workload, for the shuffle ratios: a mix's seeded order, else
    /// the spec's one workload; a trace's jobs give their own shuffle.
    fn workload_of(&self, seed: u64, job: &str) -> Option<String> {
        let spec = self.spec;
        if spec.trace.is_some() {
            return None;
        }
        if spec.jobs.mix.is_empty() {
            return Some(spec.jobs.workload().name().to_owned());
        }
        let i = job_number(job).ok()?;
        let order = super::run::mix_order(&spec.jobs.mix, seed);
        order.get(i as usize).map(|c| c.workload.name().to_owned())
    }

    /// Replicas of point `keys`' blocks: every worker that ran a block
    /// locally or served it, in any run with the same seed (each
    /// repetition loads its own data).
    fn replicas(&self, keys: &[&RunKey]) -> anyhow::Result<Replicas> {
        let mut replicas: Replicas = BTreeMap::new();
        for k in keys {
            let seed = self.seed(k);
            for t in &self.maps[*k] {
                replicas
                    .entry((seed, self.file_of(t)?, t.task))
                    .or_default()
                    .insert(worker_id(&t.source)?);
            }
        }
        Ok(replicas)
    }

    /// Each successful run of point `p` (`keys`), ready to simulate.
    fn setups<'s>(
        &'s self,
        p: &super::spec::Point,
        keys: &[&'s RunKey],
        schedulers: &'s [super::spec::NamedScheduler],
        jitter_ms: u64,
    ) -> anyhow::Result<Vec<Setup<'s>>> {
        let spec = self.spec;
        let mut setups: Vec<Setup> = Vec::new();
        for &k in keys {
            let Some(run) = self
                .runs
                .iter()
                .find(|r| (&r.point, &r.scheduler, r.rep) == (&k.0, &k.1, k.2) && r.status == "ok")
            else {
                continue;
            };
            let Some(named) = schedulers.iter().find(|s| s.label == k.1) else {
                continue;
            };
            let bg = self
                .background
                .get(k)
                .map(|v| v.as_slice())
                .unwrap_or(&[])
                .iter()
                .map(|b| {
                    Ok(BackgroundRun {
                        worker: worker_id(&b.worker)?,
                        start_ms: ms(b.start_s.max(0.0)),
                        end_ms: b.end_s.map_or(u64::MAX, ms),
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let launched: Vec<&TaskRow> = self.maps[k]
                .iter()
                .chain(self.reduces_of(k))
                .copied()
                .collect();
            let beats = heartbeats(&launched, spec.cluster.workers, p.heartbeat_ms)?;
            setups.push(Setup {
                key: k,
                run,
                config: &named.config,
                reduces: named.reduces,
                cluster: ReplayCluster {
                    slots: vec![spec.cluster.slots; spec.cluster.workers as usize],
                    heartbeat_ms: p.heartbeat_ms,
                    phase_ms: beats.0,
                    period_ms: beats.1,
                    out_of_band: p.out_of_band_heartbeat,
                    runs_maps: self.runs_maps.clone(),
                    runs_reduces: self.runs_reduces.clone(),
                    jitter_ms,
                    jitter_seed: run.seed,
                    // The measured runs kept a decision record: so do
                    // the simulated ones (it changes no decision).
                    record_decisions: spec.cluster.decisions,
                    // The model's, set per simulation.
                    host_ms_per_start: 0.0,
                    // A spec's workers are alike.
                    slowdown: Vec::new(),
                    // The runs' speculation, by the same rule.
                    speculation: spec.cluster.speculation.clone(),
                },
                bg,
            });
        }
        Ok(setups)
    }

    /// Run `s` simulated under model `m` and remote model `remote`.
    fn simulate(
        &self,
        s: &Setup,
        m: &PointModel,
        remote: RemoteModel,
        replicas: &Replicas,
    ) -> anyhow::Result<(ReplayOutcome, Vec<ReplayJob>)> {
        let jobs = replay_jobs(
            &self.maps[s.key],
            self.reduces_of(s.key),
            s.run.seed,
            m,
            replicas,
            &|seed, t| self.compute(seed, t),
            &|t| self.file_of(t),
        )?;
        let mut sched = sched::build(s.config, s.run.seed);
        let mut placer = sched::ReducePlacer::new(s.reduces, s.config);
        let cluster = ReplayCluster {
            host_ms_per_start: m.host_ms_per_start,
            ..s.cluster.clone()
        };
        let out = replay::replay(
            sched.as_mut(),
            &mut placer,
            &cluster,
            &jobs,
            &s.bg,
            remote,
            GIVE_UP_MS,
        )
        .with_context(|| format!("simulating {} {} rep {}", s.key.0, s.key.1, s.key.2))?;
        Ok((out, jobs))
    }

    /// Point `label`'s model from the runs (`keys`, `setups`) of the
    /// schedulers `keep` accepts.
    fn fit_on(
        &self,
        label: &str,
        keys: &[&RunKey],
        setups: &[Setup],
        replicas: &Replicas,
        host_term: bool,
        keep: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<PointModel> {
        let runs_used: Vec<RunRows> = keys
            .iter()
            .filter(|k| keep(&k.1))
            .map(|k| (self.maps[*k].as_slice(), self.reduces_of(k), self.seed(k)))
            .collect();
        let mut m = fit_point(
            label,
            &runs_used,
            &|seed, t| self.compute(seed, t),
            host_term,
        )?;
        m.shuffle_ratio = shuffle_ratios(&runs_used, &|seed, job| self.workload_of(seed, job));
        let used: Vec<&Setup> = setups.iter().filter(|s| keep(&s.key.1)).collect();
        m.transfer_ms = fit_transfer(&used, &m, &|s, m, remote| {
            self.simulate(s, m, remote, replicas)
        })?;
        Ok(m)
    }

    /// Point `p`'s model (fitted, or `given`), and every run of it
    /// predicted by it (or by the model fitted without its scheduler)
    /// under each remote model, into `out`. `None` when the point has no
    /// run with map attempts.
    fn calibrate_point(
        &self,
        p: &super::spec::Point,
        schedulers: &'a [super::spec::NamedScheduler],
        opts: &Options,
        given: Option<&BTreeMap<String, PointModel>>,
        out: &mut Predicted,
    ) -> anyhow::Result<Option<PointModel>> {
        let keys: Vec<&RunKey> = self.maps.keys().filter(|k| k.0 == p.label).collect();
        if keys.is_empty() {
            return Ok(None);
        }
        let replicas = self.replicas(&keys)?;
        let setups = self.setups(p, &keys, schedulers, opts.jitter_ms)?;
        let fit_on = |keep: &dyn Fn(&str) -> bool| {
            self.fit_on(&p.label, &keys, &setups, &replicas, opts.host_term, keep)
        };
        let model = match (given, &opts.fit) {
            (Some(given), Fit::From(cal)) => given.get(&p.label).cloned().with_context(|| {
                format!(
                    "{}: no model of point {} (it has {})",
                    cal.display(),
                    p.label,
                    given.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?,
            _ => fit_on(&|_| true)?,
        };
        let mut held_out: BTreeMap<String, PointModel> = BTreeMap::new();
        if opts.fit == Fit::HoldOut {
            for sc in schedulers {
                held_out.insert(sc.label.clone(), fit_on(&|s| s != sc.label)?);
            }
        }
        for s in &setups {
            let m = held_out.get(&s.key.1).unwrap_or(&model);
            let real = super::agreement::real_launches(
                self.maps[s.key]
                    .iter()
                    .chain(self.reduces_of(s.key))
                    .copied(),
            )?;
            for (label, remote) in m.models() {
                let (sim, _) = self.simulate(s, m, remote, &replicas)?;
                out.add(s, label, sim, &self.jobs, &real);
            }
        }
        Ok(Some(model))
    }
}

/// Where each block of a seed's data was: (seed, file, block) -> workers.
type Replicas = BTreeMap<(u64, u64, u32), BTreeSet<WorkerId>>;

/// What the calibration predicts: the models, then per simulated run its
/// prediction, its tasks, its jobs beside their measured JCT, and its
/// decision record (by file name).
#[derive(Default)]
struct Predicted {
    models: Vec<PointModel>,
    predictions: Vec<Prediction>,
    tasks: Vec<PredictedTask>,
    jobs: Vec<PredictedJob>,
    decisions: Vec<(String, Vec<sched::decision::Decision>)>,
    agreements: Vec<super::agreement::AgreementRow>,
}

impl Predicted {
    /// Run `s` simulated under model `label` (`sim`), beside what was
    /// measured (`measured`: each succeeded job's JCT).
    fn add(
        &mut self,
        s: &Setup,
        label: &str,
        mut sim: ReplayOutcome,
        measured: &BTreeMap<(String, String, u32, String), f64>,
        real: &[lab::agreement::Launch],
    ) {
        let agreement = lab::agreement::compare(
            real,
            &super::agreement::sim_launches(&sim.runs),
            s.cluster.heartbeat_ms,
        );
        self.agreements.push(super::agreement::AgreementRow::new(
            s.key,
            label,
            s.cluster.heartbeat_ms,
            &agreement,
        ));
        if !sim.decisions.is_empty() {
            self.decisions.push((
                format!(
                    "{}-{}-r{}-{label}.csv.gz",
                    super::timeline::slug(&s.key.0),
                    super::timeline::slug(&s.key.1),
                    s.key.2
                ),
                std::mem::take(&mut sim.decisions),
            ));
        }
        self.tasks.extend(sim.runs.iter().map(|r| PredictedTask {
            point: s.key.0.clone(),
            scheduler: s.key.1.clone(),
            rep: s.key.2,
            model: label.into(),
            job: r.task.job.to_string(),
            task: r.task.index,
            kind: if r.reduce { "reduce" } else { "map" }.into(),
            worker: format!("w{}", r.worker.0 + 1),
            source: format!("w{}", r.source.0 + 1),
            start_s: r.start_ms as f64 / 1000.0,
            end_s: r.end_ms as f64 / 1000.0,
        }));
        for &(job, arrival, end) in &sim.jobs {
            let name = format!("job-{}", job.0);
            let key = (s.key.0.clone(), s.key.1.clone(), s.key.2, name);
            if let Some(&measured) = measured.get(&key) {
                self.jobs.push(PredictedJob {
                    point: key.0,
                    scheduler: key.1,
                    rep: key.2,
                    model: label.into(),
                    job: key.3,
                    measured_jct_s: measured,
                    predicted_jct_s: end.saturating_sub(arrival) as f64 / 1000.0,
                });
            }
        }
        self.predictions.push(Prediction {
            point: s.key.0.clone(),
            scheduler: s.key.1.clone(),
            rep: s.key.2,
            model: label.into(),
            measured_mean_jct_s: s.run.mean_jct_s,
            predicted_mean_jct_s: sim.mean_jct_s(),
            measured_makespan_s: s.run.makespan_s,
            predicted_makespan_s: sim.makespan_s(),
            measured_remote: s.run.data_remote,
            predicted_remote: sim.remote_tasks() as u32,
        });
    }
}

/// Calibrates on `dir` and writes `dir/calibration/` (or the folder `fit`
/// names); returns that folder. `fit` says which runs each prediction's
/// model is fitted on: all of `dir`'s, the other schedulers', or another
/// folder's calibration.
///
/// `jitter_ms` > 0 delays each simulated heartbeat by up to that much (drawn
/// per run, worker and heartbeat), so the order in which the workers'
/// near-simultaneous heartbeats reach the scheduler varies as on the real
/// cluster; the results go to `calibration[-hold-out]-jitter<ms>/`.
pub fn calibrate(dir: &Path, opts: &Options) -> anyhow::Result<PathBuf> {
    // The commit and tree state of the code that runs, taken now.
    let prov = Provenance::capture(common::unix_ms());
    let given = match &opts.fit {
        Fit::From(cal) => Some(read_models(cal)?),
        _ => None,
    };
    let (results, meta, spec, schedulers, points) = super::run::open_results(dir)?;
    let runs: Vec<RunRecord> = results.read_runs()?;
    let tasks: Vec<TaskRow> = read_csv(&dir.join("tasks.csv"))?;
    let background: Vec<BackgroundRow> = read_csv(&dir.join("background.csv"))?;
    let measured = Measured::new(dir, &spec, &points, &runs, &tasks, &background)?;
    let mut out = Predicted::default();
    for p in &points {
        if let Some(model) =
            measured.calibrate_point(p, &schedulers, opts, given.as_ref(), &mut out)?
        {
            out.models.push(model);
        }
    }
    if out.predictions.is_empty() {
        anyhow::bail!(
            "{}: no successful run with map attempts in tasks.csv",
            dir.display()
        );
    }
    write_calibration(dir, opts, &spec, &schedulers, meta, out, prov)
}

/// Writes a calibration's folder: the models (whole, for `Fit::From`),
/// the predictions, the predicted tasks and jobs, the simulated decision
/// records, the summary and meta.json. Returns the folder.
fn write_calibration(
    dir: &Path,
    opts: &Options,
    spec: &Spec,
    schedulers: &[super::spec::NamedScheduler],
    meta: serde_json::Value,
    out: Predicted,
    mut prov: Provenance,
) -> anyhow::Result<PathBuf> {
    let (fit, jitter_ms) = (&opts.fit, opts.jitter_ms);
    let mut name = fit.folder();
    if opts.host_term {
        name.push_str("-host");
    }
    if jitter_ms > 0 {
        name.push_str(&format!("-jitter{jitter_ms}"));
    }
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let cal = ResultsDir::open(&folder);
    // The models with their overheads, for `Fit::From` (another folder
    // predicted by these).
    let stored: Vec<StoredModel> = out
        .models
        .iter()
        .map(|m| StoredModel {
            model: m.clone(),
            overheads: m.overheads.clone(),
        })
        .collect();
    crate::ops::gz::write_json(&folder.join("models.json.gz"), &stored)?;
    cal.write_csv("predictions.csv", &out.predictions)?;
    cal.write_csv("predicted-tasks.csv", &out.tasks)?;
    if !out.jobs.is_empty() {
        cal.write_csv("predicted-jobs.csv", &out.jobs)?;
    }
    cal.write_csv("agreement.csv", &out.agreements)?;
    // Simulated decision records, in the measured runs' format (worker i
    // is w<i+1>, times from the run's start).
    for (file, rows) in out.decisions {
        let log = common::wire::DecisionLog {
            recording: true,
            now_ms: 0,
            now_unix_ms: 0,
            workers: (0..spec.cluster.workers as usize)
                .map(|i| format!("w{}", i + 1))
                .collect(),
            decisions: rows,
            ..Default::default()
        };
        super::run::write_decisions(&folder.join("decisions").join(file), &log, 0)?;
    }
    let order: Vec<String> = schedulers.iter().map(|s| s.label.clone()).collect();
    let agreement = super::agreement::section(&out.agreements, &MODELS, &order);
    cal.write_summary(
        &(summary(
            spec,
            dir,
            fit,
            &out.models,
            &out.predictions,
            &out.jobs,
            &order,
        ) + &agreement),
    )?;
    prov.finish();
    cal.write_meta(&serde_json::json!({
        "calibrated_on": dir.display().to_string(),
        "hold_out": *fit == Fit::HoldOut,
        "model_from": match fit {
            Fit::From(cal) => Some(cal.display().to_string()),
            _ => None,
        },
        "heartbeat_jitter_ms": jitter_ms,
        "host_term": opts.host_term,
        "source_meta": meta,
        "models": out.models,
        "provenance": prov,
    }))?;
    Ok(folder)
}

/// Fits one point's model on `runs` (each run's map attempts and seed):
/// the local overheads, then the remote extra by least squares.
fn fit_point(
    point: &str,
    runs: &[RunRows],
    compute: &impl Fn(u64, &TaskRow) -> anyhow::Result<u64>,
    host_term: bool,
) -> anyhow::Result<PointModel> {
    // Each run's launch times, sorted, and the maps launched on the host
    // in the window before `at` in run `run` (the host term's regressor).
    let launches: Vec<Vec<u64>> = runs
        .iter()
        .map(|(rows, _, _)| {
            let mut v: Vec<u64> = rows.iter().map(|t| ms(t.start_s)).collect();
            v.sort_unstable();
            v
        })
        .collect();
    let before = |run: usize, at: u64| -> f64 {
        let v = &launches[run];
        (v.partition_point(|&s| s < at) - v.partition_point(|&s| s + replay::HOST_WINDOW_MS <= at))
            as f64
    };
    // Each local map's overhead and the launches before it.
    let mut local: Vec<(f64, f64)> = Vec::new();
    for (run, (rows, _, seed)) in runs.iter().enumerate() {
        for t in rows.iter().filter(|t| t.locality == "local") {
            let dur = ms(t.end_s - t.start_s);
            local.push((
                dur.saturating_sub(compute(*seed, t)?) as f64,
                before(run, ms(t.start_s)),
            ));
        }
    }
    if local.is_empty() {
        anyhow::bail!("point {point}: no data-local map to fit the task time on");
    }
    // overhead = a + host x launches before, least squares (a slope below
    // 0 is no contention: 0).
    let host = if host_term {
        let samples: Vec<Sample> = local.iter().map(|&(o, n)| (o, 0.0, n)).collect();
        fit(&samples, false).per_reader_ms.max(0.0)
    } else {
        0.0
    };
    let mut overheads: Vec<i64> = local
        .iter()
        .map(|&(o, n)| (o - host * n).round() as i64)
        .collect();
    overheads.sort_unstable();
    let mean_overhead = overheads.iter().sum::<i64>() as f64 / overheads.len() as f64;
    // Remote attempts: the extra over a local run, and the remote reads
    // running from the same source and on the same reader when it starts.
    let mut samples: Vec<Sample> = Vec::new();
    // Each remote read's block size, in 10^6 bytes (samples' order).
    let mut mbs: Vec<f64> = Vec::new();
    for (run, (rows, _, seed)) in runs.iter().enumerate() {
        let remote: Vec<&TaskRow> = rows
            .iter()
            .copied()
            .filter(|t| t.locality != "local")
            .collect();
        for t in &remote {
            let at = t.start_s;
            let live = |o: &&TaskRow| !std::ptr::eq(*o, *t) && o.start_s <= at && at < o.end_s;
            let n_src = remote
                .iter()
                .filter(|o| live(o) && o.source == t.source)
                .count();
            let n_dst = remote
                .iter()
                .filter(|o| live(o) && o.worker == t.worker)
                .count();
            let extra = ms(t.end_s - t.start_s) as f64
                - compute(*seed, t)? as f64
                - mean_overhead
                - host * before(run, ms(t.start_s));
            samples.push((extra, n_src as f64, n_dst as f64));
            mbs.push(t.input_bytes as f64 / 1e6);
        }
    }
    // Reduces: time ~ base + per MB of input, least squares.
    let reduce_samples: Vec<Sample> = runs
        .iter()
        .flat_map(|(_, reduces, _)| reduces.iter())
        .map(|t| {
            (
                ms(t.end_s - t.start_s) as f64,
                0.0,
                t.input_bytes as f64 / 1e6,
            )
        })
        .collect();
    let reduce = fit(&reduce_samples, false);
    Ok(PointModel {
        point: point.into(),
        reduce_attempts: reduce_samples.len(),
        reduce_base_ms: reduce.base_ms,
        reduce_ms_per_mb: reduce.per_reader_ms,
        local_attempts: overheads.len(),
        overhead_mean_ms: mean_overhead,
        overhead_p10_ms: overheads[overheads.len() / 10],
        overhead_p90_ms: overheads[overheads.len() * 9 / 10],
        overheads,
        host_ms_per_start: host,
        remote_attempts: samples.len(),
        remote_extra_mean_ms: samples.iter().map(|s| s.0).sum::<f64>()
            / samples.len().max(1) as f64,
        cost: fit_sized(&samples, &mbs),
        cost_reader_only: fit(&samples, false),
        transfer_ms: 0.0,
        ref_bytes: if sizes_differ(&mbs) {
            (mbs.iter().sum::<f64>() / mbs.len() as f64 * 1e6).round() as u64
        } else {
            0
        },
        shuffle_ratio: BTreeMap::new(),
    })
}

/// Per workload, the bytes the reduces of `runs`' jobs fetched over the
/// bytes their maps read (jobs with reduces only); `workload` names a
/// run's job (seed, job name), None where it cannot (a trace's).
fn shuffle_ratios(
    runs: &[RunRows],
    workload: &impl Fn(u64, &str) -> Option<String>,
) -> BTreeMap<String, f64> {
    // workload -> (map bytes, reduce bytes) of the jobs with reduces.
    let mut sums: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (maps, reduces, seed) in runs {
        let mut by_job: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for t in reduces.iter() {
            by_job.entry(&t.job_name).or_default().1 += t.input_bytes;
        }
        for t in maps.iter() {
            if let Some(j) = by_job.get_mut(t.job_name.as_str()) {
                j.0 += t.input_bytes;
            }
        }
        for (job, (m, r)) in by_job {
            if let Some(w) = workload(*seed, job) {
                let e = sums.entry(w).or_default();
                e.0 += m;
                e.1 += r;
            }
        }
    }
    sums.into_iter()
        .filter(|(_, (m, _))| *m > 0)
        .map(|(w, (m, r))| (w, r as f64 / m as f64))
        .collect()
}

/// `j17` -> 17 (the runner's job names).
fn job_number(name: &str) -> anyhow::Result<u64> {
    name.strip_prefix('j')
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("job name {name:?} is not the runner's j<N>"))
}

/// `w3` -> WorkerId(2) (the runner's worker names, in cluster.toml order).
fn worker_id(name: &str) -> anyhow::Result<WorkerId> {
    name.strip_prefix('w')
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| *n >= 1)
        .map(|n| WorkerId(n - 1))
        .with_context(|| format!("worker name {name:?} is not the runner's w<N>"))
}

fn points_files(points: &[super::spec::Point], label: &str) -> u32 {
    points
        .iter()
        .find(|p| p.label == label)
        .map_or(1, |p| p.files.max(1))
}

/// The least time compute pacing at `rate_mbs` MB/s gives `bytes`, ms.
pub(crate) fn pacing_ms(bytes: u64, rate_mbs: f64) -> u64 {
    if !(rate_mbs.is_finite() && rate_mbs > 0.0) {
        return 0;
    }
    (bytes as f64 / (rate_mbs * 1e6) * 1000.0).round() as u64
}

fn ms(s: f64) -> u64 {
    (s * 1000.0).round().max(0.0) as u64
}

/// The run's jobs: arrivals as measured, each map's local time its compute
/// plus an overhead drawn (by seed, job and task: the same for every
/// scheduler of a repetition) from the point's distribution.
#[allow(clippy::too_many_arguments)]
fn replay_jobs(
    rows: &[&TaskRow],
    reduces: &[&TaskRow],
    seed: u64,
    model: &PointModel,
    replicas: &BTreeMap<(u64, u64, u32), BTreeSet<WorkerId>>,
    compute: &impl Fn(u64, &TaskRow) -> anyhow::Result<u64>,
    file_of: &impl Fn(&TaskRow) -> anyhow::Result<u64>,
) -> anyhow::Result<Vec<ReplayJob>> {
    let mut jobs: BTreeMap<u32, ReplayJob> = BTreeMap::new();
    for t in rows {
        let id: u32 = t
            .job
            .strip_prefix("job-")
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("job id {:?} is not job-<N>", t.job))?;
        let job = jobs.entry(id).or_insert_with(|| ReplayJob {
            id: JobId(id),
            arrival_ms: ms(t.arrival_s),
            tasks: Vec::new(),
            reduces: Vec::new(),
            reduce_load: 0,
        });
        if job.tasks.iter().any(|x| x.index == t.task) {
            continue; // another attempt of the same map
        }
        let n = job_number(&t.job_name)?;
        let h = splitmix64(seed ^ splitmix64((n << 32) | u64::from(t.task)) ^ 0x5eed);
        let overhead = model.overheads[(h % model.overheads.len() as u64) as usize];
        job.tasks.push(ReplayTask {
            index: t.task,
            replicas: replicas[&(seed, file_of(t)?, t.task)]
                .iter()
                .copied()
                .collect(),
            local_ms: (compute(seed, t)? as i64 + overhead).max(0) as u64,
            bytes: t.input_bytes,
        });
    }
    // Each reduce lasts the fitted time for its measured input.
    for t in reduces {
        let Some(job) = t
            .job
            .strip_prefix("job-")
            .and_then(|n| n.parse::<u32>().ok())
            .and_then(|id| jobs.get_mut(&id))
        else {
            continue;
        };
        if job.reduces.iter().any(|x| x.index == t.task) {
            continue;
        }
        let mb = t.input_bytes as f64 / 1e6;
        let len = (model.reduce_base_ms + model.reduce_ms_per_mb * mb).max(0.0);
        job.reduces.push(ReplayTask {
            index: t.task,
            replicas: Vec::new(),
            local_ms: len.round() as u64,
            bytes: 0,
        });
        job.reduce_load += t.input_bytes;
    }
    let mut out: Vec<ReplayJob> = jobs.into_values().collect();
    for j in &mut out {
        j.tasks.sort_by_key(|t| t.index);
        j.reduces.sort_by_key(|t| t.index);
        j.reduce_load /= j.reduces.len().max(1) as u64;
    }
    Ok(out)
}

/// Each worker's heartbeat phase and period, from its launches: launches
/// within a fifth of an interval of each other came from one heartbeat;
/// the first of each is numbered by the intervals since the previous one,
/// and a line fitted through (number, time) gives the period (a real
/// worker's drifts a little above the nominal) and the phase. A worker
/// with fewer than two heartbeats that launched keeps the nominal period
/// and the phase of its launch (0 if none).
fn heartbeats(rows: &[&TaskRow], workers: u32, hb: u64) -> anyhow::Result<(Vec<u64>, Vec<f64>)> {
    let mut starts: Vec<Vec<u64>> = vec![Vec::new(); workers as usize];
    for t in rows {
        let w = worker_id(&t.worker)?.0 as usize;
        if let Some(v) = starts.get_mut(w) {
            v.push(ms(t.start_s));
        }
    }
    let mut phases = Vec::new();
    let mut periods = Vec::new();
    for mut v in starts {
        v.sort_unstable();
        let mut beats: Vec<u64> = Vec::new();
        for x in v {
            if beats.last().is_none_or(|b| x > b + hb / 5) {
                beats.push(x);
            }
        }
        if beats.len() < 2 {
            phases.push(beats.first().map_or(0, |b| b % hb));
            periods.push(hb as f64);
            continue;
        }
        let mut k = 0u64;
        let pts: Vec<(f64, f64)> = beats
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if i > 0 {
                    k += ((b - beats[i - 1]) as f64 / hb as f64).round().max(1.0) as u64;
                }
                (k as f64, b as f64)
            })
            .collect();
        let n = pts.len() as f64;
        let (mk, mt) = (
            pts.iter().map(|p| p.0).sum::<f64>() / n,
            pts.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let sxx: f64 = pts.iter().map(|p| (p.0 - mk).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mk) * (p.1 - mt)).sum();
        let period = if sxx > 0.0 { sxy / sxx } else { hb as f64 };
        let first = mt - period * mk;
        phases.push(first.rem_euclid(period).round() as u64);
        periods.push(period);
    }
    Ok((phases, periods))
}

/// Least squares of extra ~ base + a n_src + b n_dst (`source`), or
/// extra ~ base + b n_dst. With too few distinct samples, the mean.
fn fit(samples: &[Sample], source: bool) -> Cost {
    let k = if source { 3 } else { 2 };
    let row = |s: &Sample| -> Vec<f64> {
        if source {
            vec![1.0, s.1, s.2]
        } else {
            vec![1.0, s.2]
        }
    };
    let mut a = vec![vec![0.0; k + 1]; k];
    for s in samples {
        let x = row(s);
        for i in 0..k {
            for j in 0..k {
                a[i][j] += x[i] * x[j];
            }
            a[i][k] += x[i] * s.0;
        }
    }
    let beta = solve(a).unwrap_or_else(|| {
        let mean = samples.iter().map(|s| s.0).sum::<f64>() / samples.len().max(1) as f64;
        let mut b = vec![0.0; k];
        b[0] = if mean.is_finite() { mean } else { 0.0 };
        b
    });
    let (base, ps, pr) = if source {
        (beta[0], beta[1], beta[2])
    } else {
        (beta[0], 0.0, beta[1])
    };
    let sse: f64 = samples
        .iter()
        .map(|s| (s.0 - (base + ps * s.1 + pr * s.2)).powi(2))
        .sum();
    Cost {
        base_ms: base,
        per_source_ms: ps,
        per_reader_ms: pr,
        per_mb_ms: 0.0,
        rmse_ms: (sse / samples.len().max(1) as f64).sqrt(),
    }
}

/// Whether blocks of these sizes differ by more than 1% of their mean.
fn sizes_differ(mbs: &[f64]) -> bool {
    let mean = mbs.iter().sum::<f64>() / mbs.len().max(1) as f64;
    let (lo, hi) = mbs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    mbs.len() > 1 && mean > 0.0 && (hi - lo) > 0.01 * mean
}

/// The source+reader fit with a term per MB of the block read when the
/// reads differ in size (`mbs`, in `samples`' order): least squares of
/// extra ~ base + a n_src + b n_dst + c MB. Blocks all of one size: the
/// MB term is the base's twin, so [`fit`] as it is.
fn fit_sized(samples: &[Sample], mbs: &[f64]) -> Cost {
    if !sizes_differ(mbs) {
        return fit(samples, true);
    }
    let mut a = vec![vec![0.0; 5]; 4];
    for (s, &mb) in samples.iter().zip(mbs) {
        let x = [1.0, s.1, s.2, mb];
        for i in 0..4 {
            for j in 0..4 {
                a[i][j] += x[i] * x[j];
            }
            a[i][4] += x[i] * s.0;
        }
    }
    let Some(b) = solve(a) else {
        return fit(samples, true);
    };
    let sse: f64 = samples
        .iter()
        .zip(mbs)
        .map(|(s, &mb)| (s.0 - (b[0] + b[1] * s.1 + b[2] * s.2 + b[3] * mb)).powi(2))
        .sum();
    Cost {
        base_ms: b[0],
        per_source_ms: b[1],
        per_reader_ms: b[2],
        per_mb_ms: b[3],
        rmse_ms: (sse / samples.len().max(1) as f64).sqrt(),
    }
}

/// Gaussian elimination with partial pivoting on an augmented k x (k+1)
/// matrix; `None` if singular.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    for c in 0..k {
        let p = (c..k).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))?;
        if a[p][c].abs() < 1e-9 {
            return None;
        }
        a.swap(c, p);
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i]).collect())
}

/// (mean, min, max) of `v`.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

fn summary(
    spec: &Spec,
    dir: &Path,
    fit: &Fit,
    models: &[PointModel],
    preds: &[Prediction],
    jobs: &[PredictedJob],
    order: &[String],
) -> String {
    let mut s = format!(
        "# Calibrated simulation of {}\n\n{} (`master sim calibrate`). Every run \
         simulated with `lab::replay`: its own scheduler and seed, arrivals, background and \
         heartbeat phases; local task time = the drawn compute + an overhead drawn from the \
         point's measured local overheads; a remote map reads its block under one of three \
         models: `source+reader` (a fixed extra at its start: base + per-source + per-reader \
         terms, and a per-MB term where a point's remote reads differ in size, least squares), \
         `reader-only` (the papers' model, the cost charged at the reading server only) and \
         `fair-share` (a transfer that shares the source's and the reader's links fairly while \
         it lasts, its time alone, in proportion to the block's size where sizes differ, fitted \
         so the mean remote extra matches). Means over repetitions with (min-max); err = predicted / measured - 1 of \
         the means.{}\n\n",
        spec.name,
        match fit {
            Fit::From(cal) => format!(
                "The runs of `{}` predicted by the models fitted on `{}`",
                dir.display(),
                cal.display()
            ),
            _ => format!("Calibrated on `{}`", dir.display()),
        },
        match fit {
            Fit::InSample => "",
            Fit::HoldOut =>
                " Held out: each scheduler's runs are predicted by a model fitted on the other \
                 schedulers' runs only (the table of fitted models shows the fit on all runs).",
            Fit::From(_) =>
                " Held out by folder: none of these runs was fitted on; the table of models \
                 shows the other folder's fit.",
        }
    );
    s += "## Fitted models\n\n| point | local attempts | overhead mean (p10-p90) ms | remote attempts | remote extra mean ms | source+reader: base + src*n + dst*n ms (rmse) | reader-only: base + dst*n ms (rmse) | fair-share: transfer alone ms | reduces: base + per MB ms (attempts) |\n|---|---|---|---|---|---|---|---|---|\n";
    for m in models {
        s += &format!(
            "| {} | {} | {:.0} ({}-{}) | {} | {:.0} | {} ({:.0}) | {:.0} + {:.0} n_dst ({:.0}) | {:.0}{} | {:.0} + {:.0}/MB ({}) |\n",
            m.point,
            m.local_attempts,
            m.overhead_mean_ms,
            m.overhead_p10_ms,
            m.overhead_p90_ms,
            m.remote_attempts,
            m.remote_extra_mean_ms,
            m.cost.remote().formula(),
            m.cost.rmse_ms,
            m.cost_reader_only.base_ms,
            m.cost_reader_only.per_reader_ms,
            m.cost_reader_only.rmse_ms,
            m.transfer_ms,
            if m.ref_bytes > 0 {
                format!(" per {:.3} MB", m.ref_bytes as f64 / 1e6)
            } else {
                String::new()
            },
            m.reduce_base_ms,
            m.reduce_ms_per_mb,
            m.reduce_attempts,
        );
    }
    for m in models.iter().filter(|m| m.host_ms_per_start > 0.0) {
        s += &format!(
            "\nHost term of {}: a map lasts {:.2} ms longer per map launched on the host in the {} ms before it (least squares over the local maps; the overhead column is what is left after it).\n",
            m.point,
            m.host_ms_per_start,
            replay::HOST_WINDOW_MS
        );
    }
    for m in models.iter().filter(|m| !m.shuffle_ratio.is_empty()) {
        s += &format!(
            "\nShuffle of {} (bytes the reduces fetched / bytes the maps read, jobs with reduces): {}\n",
            m.point,
            m.shuffle_ratio
                .iter()
                .map(|(w, r)| format!("{w} {r:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut within = BTreeMap::<&str, (usize, usize)>::new();
    for m in models {
        s += &format!(
            "\n## {}\n\n| scheduler | mean JCT measured (s) | source+reader | reader-only | fair-share | makespan (s): measured / s+r / r / fs | remote maps: measured / s+r / r / fs |\n|---|---|---|---|---|---|---|\n",
            m.point
        );
        for sc in order {
            let cell = |model: &str| -> Vec<&Prediction> {
                preds
                    .iter()
                    .filter(|p| p.point == m.point && &p.scheduler == sc && p.model == model)
                    .collect()
            };
            let first = cell(MODELS[0]);
            if first.is_empty() {
                continue;
            }
            let f = |v: &[&Prediction], g: fn(&Prediction) -> f64| {
                spread(&v.iter().map(|p| g(p)).collect::<Vec<_>>())
            };
            let meas = f(&first, |p| p.measured_mean_jct_s);
            let mut row = format!("| {sc} | {:.1} ({:.1}-{:.1}) |", meas.0, meas.1, meas.2);
            let (mut mk, mut rm) = (
                format!("{:.1}", f(&first, |p| p.measured_makespan_s).0),
                format!("{:.0}", f(&first, |p| f64::from(p.measured_remote)).0),
            );
            for model in MODELS {
                let c = cell(model);
                let pred = f(&c, |p| p.predicted_mean_jct_s);
                let err = pred.0 / meas.0 - 1.0;
                let e = within.entry(model).or_default();
                e.1 += 1;
                if err.abs() <= 0.10 {
                    e.0 += 1;
                }
                row += &format!(
                    " {:.1} ({:.1}-{:.1}) {:+.0}% |",
                    pred.0,
                    pred.1,
                    pred.2,
                    err * 100.0
                );
                mk += &format!(" / {:.1}", f(&c, |p| p.predicted_makespan_s).0);
                rm += &format!(" / {:.0}", f(&c, |p| f64::from(p.predicted_remote)).0);
            }
            s += &format!("{row} {mk} | {rm} |\n");
        }
    }
    s += "\n## Within 10% of the measured mean JCT\n\n";
    for model in MODELS {
        let (ok, n) = within.get(model).copied().unwrap_or((0, 0));
        s += &format!("- {model}: {ok} of {n} (point, scheduler) cells\n");
    }
    s += &per_job_section(models, preds, jobs, order, fit);
    s
}

/// The per-job error tables: per point and scheduler, the spread of
/// |predicted / measured - 1| over every job of every repetition, the
/// makespan's mean |error| and the remote maps' mean |difference| per run;
/// then the per-job spread over every cell, per model.
fn per_job_section(
    models: &[PointModel],
    preds: &[Prediction],
    jobs: &[PredictedJob],
    order: &[String],
    fit: &Fit,
) -> String {
    if jobs.is_empty() {
        return "\n## Per-job error\n\nNo `jobs.csv` in the results folder: per-job errors cannot be computed.\n".into();
    }
    let pct = |e: Option<ErrorSpread>, f: fn(&ErrorSpread) -> f64| {
        e.map_or("-".to_owned(), |e| format!("{:.0}%", f(&e) * 100.0))
    };
    let mut s = format!(
        "\n## Per-job error\n\nPer job of every repetition: |predicted / measured JCT - 1|, its mean, median and \
         90th percentile (nearest rank) over the cell's jobs, {}; and |predicted - measured| in seconds \
         (a sub-second job's large relative error is a small absolute one). Makespan: mean over repetitions of \
         |predicted / measured - 1|. Remote maps: mean over repetitions of |predicted - measured|. \
         Each column gives source+reader / reader-only / fair-share.\n",
        fit.phrase()
    );
    for m in models {
        s += &format!(
            "\n### {}\n\n| scheduler | jobs | per-job mean | per-job median | per-job p90 | per-job mean / median s | makespan | remote maps (measured per run) |\n|---|---|---|---|---|---|---|---|\n",
            m.point
        );
        for sc in order {
            let pairs = |model: &str| {
                jobs.iter()
                    .filter(|j| j.point == m.point && &j.scheduler == sc && j.model == model)
                    .map(|j| (j.measured_jct_s, j.predicted_jct_s))
                    .collect::<Vec<_>>()
            };
            let spreads: Vec<Option<ErrorSpread>> =
                MODELS.iter().map(|m| error_spread(pairs(m))).collect();
            let seconds = MODELS
                .iter()
                .map(|m| {
                    seconds_spread(pairs(m))
                        .map_or("-".into(), |e| format!("{:.2} / {:.2}", e.mean, e.median))
                })
                .collect::<Vec<_>>()
                .join(", ");
            let Some(n) = spreads[0].map(|e| e.jobs) else {
                continue;
            };
            let runs = |model: &str| -> Vec<&Prediction> {
                preds
                    .iter()
                    .filter(|p| p.point == m.point && &p.scheduler == sc && p.model == model)
                    .collect()
            };
            let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
            let col = |f: fn(&ErrorSpread) -> f64| {
                spreads
                    .iter()
                    .map(|e| pct(*e, f))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            let makespan = MODELS
                .iter()
                .map(|model| {
                    let v = runs(model)
                        .iter()
                        .map(|p| (p.predicted_makespan_s / p.measured_makespan_s - 1.0).abs())
                        .collect();
                    format!("{:.0}%", mean(v) * 100.0)
                })
                .collect::<Vec<_>>()
                .join(" / ");
            let remote = MODELS
                .iter()
                .map(|model| {
                    let v = runs(model)
                        .iter()
                        .map(|p| {
                            (f64::from(p.predicted_remote) - f64::from(p.measured_remote)).abs()
                        })
                        .collect();
                    format!("{:.1}", mean(v))
                })
                .collect::<Vec<_>>()
                .join(" / ");
            let measured_remote = mean(
                runs(MODELS[0])
                    .iter()
                    .map(|p| f64::from(p.measured_remote))
                    .collect(),
            );
            s += &format!(
                "| {sc} | {n} | {} | {} | {} | {seconds} | {makespan} | {remote} ({measured_remote:.1}) |\n",
                col(|e| e.mean),
                col(|e| e.median),
                col(|e| e.p90),
            );
        }
    }
    s += "\n### Every cell\n\nRank by rank: within each run the k-th shortest measured JCT against the k-th shortest \
          predicted one (the error on the distribution of JCTs, leaving out which job got which).\n\n\
          | model | jobs | per-job mean | per-job median | per-job p90 | per-job mean / median / p90 s | rank by rank: mean / median / p90 |\n|---|---|---|---|---|---|---|\n";
    for model in MODELS {
        let pairs: Vec<(f64, f64)> = jobs
            .iter()
            .filter(|j| j.model == model)
            .map(|j| (j.measured_jct_s, j.predicted_jct_s))
            .collect();
        let e = error_spread(pairs.iter().copied());
        let secs = seconds_spread(pairs).map_or("-".into(), |e| {
            format!("{:.2} / {:.2} / {:.2}", e.mean, e.median, e.p90)
        });
        let ranked = error_spread(rank_pairs(jobs.iter().filter(|j| j.model == model)));
        let ranked = format!(
            "{} / {} / {}",
            pct(ranked, |e| e.mean),
            pct(ranked, |e| e.median),
            pct(ranked, |e| e.p90)
        );
        s += &format!(
            "| {model} | {} | {} | {} | {} | {secs} | {ranked} |\n",
            e.map_or(0, |e| e.jobs),
            pct(e, |e| e.mean),
            pct(e, |e| e.median),
            pct(e, |e| e.p90),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_models_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_models(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no models.json.gz"), "{e}");
        assert_eq!(
            Fit::From(PathBuf::from(
                "results/scale-dyndl-8/20261126-000000/calibration"
            ))
            .folder(),
            "calibration-from-scale-dyndl-8"
        );
    }

    #[test]
    fn the_per_job_error_spread_is_relative_and_nearest_rank() {
        // Errors 0, 0.1, ..., 0.9: one job per 10% step.
        let pairs: Vec<(f64, f64)> = (0..10).map(|i| (10.0, 10.0 + i as f64)).collect();
        let e = error_spread(pairs).unwrap();
        assert_eq!(e.jobs, 10);
        assert!((e.mean - 0.45).abs() < 1e-12, "{e:?}");
        assert!((e.median - 0.45).abs() < 1e-12, "{e:?}");
        assert!((e.p90 - 0.8).abs() < 1e-12, "{e:?}");
        // Under- and over-predictions count alike; unmeasured jobs not at all.
        let e = error_spread([(4.0, 2.0), (4.0, 6.0), (0.0, 1.0), (f64::NAN, 1.0)]).unwrap();
        assert_eq!((e.jobs, e.mean, e.median, e.p90), (2, 0.5, 0.5, 0.5));
        assert_eq!(error_spread([(0.0, 1.0)]), None);
        let odd = error_spread([(1.0, 1.0), (1.0, 3.0), (1.0, 1.5)]).unwrap();
        assert_eq!((odd.median, odd.p90), (0.5, 2.0));
        // In seconds: a tiny job's large relative error is a small one.
        let s = seconds_spread([(0.1, 0.3), (10.0, 9.0), (0.0, 1.0)]).unwrap();
        assert_eq!((s.jobs, s.median, s.p90), (2, 0.6, 1.0));
        assert!((s.mean - 0.6).abs() < 1e-12);
        // Two jobs that swap places: 100% and 50% off job by job, exact
        // rank by rank.
        let job = |rep: u32, name: &str, m: f64, p: f64| PredictedJob {
            point: "p".into(),
            scheduler: "s".into(),
            rep,
            model: "source+reader".into(),
            job: name.into(),
            measured_jct_s: m,
            predicted_jct_s: p,
        };
        let jobs = [
            job(0, "job-1", 1.0, 2.0),
            job(0, "job-2", 2.0, 1.0),
            job(1, "job-1", 4.0, 5.0),
        ];
        let by_job = error_spread(jobs.iter().map(|j| (j.measured_jct_s, j.predicted_jct_s)));
        assert_eq!(by_job.unwrap().median, 0.5);
        let ranked = rank_pairs(&jobs);
        assert_eq!(
            ranked,
            [(1.0, 1.0), (2.0, 2.0), (4.0, 5.0)],
            "pairs within a run only"
        );
    }

    #[test]
    fn pacing_gives_a_map_its_inputs_time() {
        // 1 MiB at 0.5 MB/s: 2.1 s; a 4 KiB block: 8 ms; no pacing: none.
        assert_eq!(pacing_ms(1 << 20, 0.5), 2097);
        assert_eq!(pacing_ms(4096, 0.5), 8);
        assert_eq!(pacing_ms(1 << 20, 0.0), 0);
        assert_eq!(pacing_ms(1 << 20, f64::NAN), 0);
    }

    #[test]
    fn the_fit_recovers_a_linear_cost() {
        let samples: Vec<Sample> = (0..4)
            .flat_map(|a| (0..4).map(move |b| (a as f64, b as f64)))
            .map(|(a, b)| (500.0 + 300.0 * a + 100.0 * b, a, b))
            .collect();
        let c = fit(&samples, true);
        assert!((c.base_ms - 500.0).abs() < 1e-6, "{c:?}");
        assert!((c.per_source_ms - 300.0).abs() < 1e-6, "{c:?}");
        assert!((c.per_reader_ms - 100.0).abs() < 1e-6, "{c:?}");
        assert!(c.rmse_ms < 1e-6);
        // Without its source term, the fit is worse.
        let r = fit(&samples, false);
        assert_eq!(r.per_source_ms, 0.0);
        assert!(r.rmse_ms > 100.0, "{r:?}");
        // One distinct point: the mean.
        let one = fit(&[(700.0, 1.0, 1.0), (900.0, 1.0, 1.0)], true);
        assert!((one.base_ms - 800.0).abs() < 1e-6 && one.per_source_ms == 0.0);
        // Blocks of different sizes: the per-MB term too.
        let mbs: Vec<f64> = (0..samples.len()).map(|i| (i % 3) as f64 * 0.5).collect();
        let sized: Vec<Sample> = samples
            .iter()
            .zip(&mbs)
            .map(|(s, mb)| (s.0 + 2_000.0 * mb, s.1, s.2))
            .collect();
        let c = fit_sized(&sized, &mbs);
        assert!((c.per_mb_ms - 2_000.0).abs() < 1e-6, "{c:?}");
        assert!(
            (c.base_ms - 500.0).abs() < 1e-6 && c.rmse_ms < 1e-6,
            "{c:?}"
        );
        // All of one size: exactly the fit without it.
        let same = fit_sized(&samples, &vec![8.0; samples.len()]);
        assert_eq!(
            (same.base_ms, same.per_mb_ms),
            (fit(&samples, true).base_ms, 0.0)
        );
    }

    #[test]
    fn heartbeat_phase_and_period_are_fitted_from_launches() {
        let row = |w: &str, start_s: f64| TaskRow {
            point: "p".into(),
            scheduler: "s".into(),
            rep: 0,
            job: "job-1".into(),
            job_name: "j0".into(),
            arrival_s: 0.0,
            task: 0,
            kind: "map".into(),
            attempt: 0,
            worker: w.into(),
            slot: 0,
            locality: "local".into(),
            source: w.into(),
            start_s,
            end_s: start_s + 1.0,
            input_bytes: 0,
            remote_bytes: 0,
            ok: true,
            error: String::new(),
        };
        // w1 launches at heartbeats 0, 1, 3 and 4 of a 1.51 s period from
        // 1.4 s (two launches at the first); w2 once at 0.7 s.
        let rows = [
            row("w1", 1.400),
            row("w1", 1.402),
            row("w1", 2.910),
            row("w1", 5.930),
            row("w1", 7.440),
            row("w2", 0.7),
        ];
        let refs: Vec<&TaskRow> = rows.iter().collect();
        let (phase, period) = heartbeats(&refs, 3, 1_500).unwrap();
        assert!((period[0] - 1_510.0).abs() < 0.5, "{period:?}");
        assert!((phase[0] as i64 - 1_400).abs() <= 1, "{phase:?}");
        assert_eq!((phase[1], period[1]), (700, 1_500.0));
        assert_eq!((phase[2], period[2]), (0, 1_500.0));
    }

    #[test]
    fn names_must_be_the_runners() {
        assert_eq!(worker_id("w3").unwrap(), WorkerId(2));
        assert!(worker_id("w0").is_err());
        assert!(worker_id("node3").is_err());
        assert_eq!(job_number("j17").unwrap(), 17);
        assert!(job_number("wc").unwrap_err().to_string().contains("\"wc\""));
    }
}
