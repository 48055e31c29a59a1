//! `master sim trace <spec> --calibration <dir>` (also `sim scale`): a
//! trace spec's hour (`[trace]`), or a spec's own input-sink jobs (`[data]`,
//! `[jobs]`, `[background]`, every point), run in `lab::replay` instead
//! of on a real cluster, at any number of workers: the same policies, jobs,
//! files and arrivals as the experiment runner makes of the spec, with task
//! times and the cost of a remote read from a calibration of real runs
//! (`master sim calibrate`).
//!
//! A spec without `[trace]`: point p's `files` files of `blocks` blocks,
//! job i reading file i mod `files` (as the runner's); arrivals drawn in
//! `jobs.arrival_s` per seed as the runner draws them; each map computes
//! its `jobs.task_time_s` draw (the workers' own draw, by seed, job and
//! task); every worker starts `round(initial x slots)` background
//! processes of `background.duration_s` and then `per_minute` more, Poisson
//! (a process that finds its slot taken holds it anyway: the replay counts
//! free slots as slots - tasks - processes). Only input-sink jobs: a job
//! with reduces needs shuffle sizes the spec does not give.
//!
//! What the simulated cluster is made of, from the calibration's first
//! point (or `--point`): a map's local time is its block at the slot's
//! compute pacing (the spec's `slot_rate_mbs`) plus the point's mean
//! measured overhead; a remote read adds the `source+reader` cost (with its
//! per-MB term where the calibration fitted one); a reduce lasts the fitted
//! `base + per MB` of its share of the job's scaled shuffle bytes. Every
//! block of a file gets `replication` replicas on distinct workers drawn per
//! seed, and every worker heartbeats at a phase drawn per seed. The table
//! says all this beside the figures.

use crate::experiment::calibrate::pacing_ms;
use crate::experiment::spec::{NamedScheduler, Point, Spec};
use crate::experiment::trace::{TraceFile, TraceJob, TracePlan};
use crate::ops::loader::{place_even, Placement};
use anyhow::Context;
use common::config::BackgroundConfig;
use common::{JobId, WorkerId};
use lab::replay::{
    self, BackgroundRun, RemoteCost, RemoteModel, ReplayCluster, ReplayJob, ReplayTask,
};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use workloads::Workload;

mod table;

/// The calibrated terms a trace run needs (one point of a calibration).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub point: String,
    pub overhead_ms: u64,
    pub remote: RemoteCost,
    /// The fair-share model's transfer alone (ms, for a block of
    /// `ref_bytes`: the fitted reads' mean size where they differed, else
    /// the calibration's block size; 0: every block alike, an older
    /// calibration), where the calibration fitted one.
    pub transfer_ms: Option<f64>,
    pub ref_bytes: u64,
    pub reduce_base_ms: f64,
    pub reduce_ms_per_mb: f64,
    /// Per workload, the bytes its reduces fetch over the bytes its maps
    /// read, as measured (what a spec's sort or wordcount job shuffles).
    pub shuffle_ratio: BTreeMap<String, f64>,
}

impl Model {
    /// Point `point` (else the first) of a calibration folder's meta.json.
    pub fn read(dir: &Path, point: Option<&str>) -> anyhow::Result<Model> {
        let file = dir.join("meta.json");
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "reading {} (a `master sim calibrate` folder)",
                file.display()
            )
        })?;
        let meta: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{}", file.display()))?;
        let models = meta["models"]
            .as_array()
            .with_context(|| format!("{}: no `models` (not a calibration)", file.display()))?;
        let m = match point {
            None => models.first(),
            Some(p) => models.iter().find(|m| m["point"] == p),
        }
        .with_context(|| {
            let known: Vec<&str> = models.iter().filter_map(|m| m["point"].as_str()).collect();
            format!(
                "{}: no point {} (points: {})",
                file.display(),
                point.unwrap_or("at all"),
                known.join(", ")
            )
        })?;
        let num = |v: &serde_json::Value, key: &str| -> anyhow::Result<f64> {
            v[key]
                .as_f64()
                .with_context(|| format!("{}: model field `{key}` missing", file.display()))
        };
        let cost = &m["cost"];
        Ok(Model {
            point: m["point"].as_str().unwrap_or_default().to_owned(),
            overhead_ms: num(m, "overhead_mean_ms")?.max(0.0).round() as u64,
            remote: RemoteCost {
                base_ms: num(cost, "base_ms")?,
                per_source_ms: num(cost, "per_source_ms")?,
                per_reader_ms: num(cost, "per_reader_ms")?,
                // Calibrations from before the per-size term have none.
                per_mb_ms: cost["per_mb_ms"].as_f64().unwrap_or(0.0),
            },
            transfer_ms: m["transfer_ms"].as_f64(),
            // One block size fitted: a transfer scales from the block
            // size the calibration kept, so blocks of another size are
            // charged in proportion (older calibrations kept none).
            ref_bytes: m["ref_bytes"]
                .as_u64()
                .filter(|&b| b > 0)
                .or_else(|| m["block_bytes"].as_u64())
                .unwrap_or(0),
            reduce_base_ms: num(m, "reduce_base_ms")?,
            reduce_ms_per_mb: num(m, "reduce_ms_per_mb")?,
            // Calibrations from before it was kept have none.
            shuffle_ratio: m["shuffle_ratio"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter_map(|(w, r)| Some((w.clone(), r.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// The simulated cluster.
#[derive(Clone, Debug)]
pub struct Shape {
    pub workers: u32,
    /// The last this many workers run only reduces and hold no data (the
    /// spec's `cluster.reduce_workers`); 0: every worker runs both.
    pub reduce_workers: u32,
    pub slots: u32,
    pub replication: u32,
    /// How blocks are placed (the spec's `data.placement`): at random, or
    /// dealt evenly over the map workers in a seeded order, per file.
    pub placement: Placement,
    pub heartbeat_ms: u64,
    pub out_of_band: bool,
    /// Compute pacing per slot, MB/s (none: maps take their overhead only).
    pub slot_rate_mbs: Option<f64>,
    /// Each map's emulated compute, drawn per task in [min, max] seconds
    /// (`jobs.task_time_s`); none: none.
    pub task_time_s: Option<[f64; 2]>,
    /// Speculative execution (the spec's `[cluster.speculation]`).
    pub speculation: sched::speculation::Speculation,
    /// Slow workers (`--slow`): none by default.
    pub slow: Option<Slow>,
}

/// Slow machines (`sim trace --slow FRACTION:FACTOR`): `fraction` of the
/// workers, drawn per seed, run every task `factor` times longer (a
/// degraded disk, a noisy neighbour: what speculation is for).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slow {
    pub fraction: f64,
    pub factor: f64,
}

impl std::str::FromStr for Slow {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (f, x) = s.split_once(':').ok_or_else(|| {
            format!("--slow {s:?}: expected FRACTION:FACTOR, e.g. 0.05:10 (5% of the workers ten times slower)")
        })?;
        let fraction: f64 = f
            .trim()
            .parse()
            .map_err(|_| format!("--slow {s:?}: the fraction {f:?} is not a number"))?;
        let factor: f64 = x
            .trim()
            .parse()
            .map_err(|_| format!("--slow {s:?}: the factor {x:?} is not a number"))?;
        if !(0.0..=1.0).contains(&fraction) {
            return Err(format!(
                "--slow {s:?}: the fraction must be in [0, 1] (got {fraction})"
            ));
        }
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(format!(
                "--slow {s:?}: the factor must be a number >= 1 (got {factor})"
            ));
        }
        Ok(Slow { fraction, factor })
    }
}

/// What `sim trace` takes beside the spec and the calibration.
#[derive(Clone, Debug, Default)]
pub struct TraceOptions {
    /// The calibration's point to take the model from (default: its first).
    pub point: Option<String>,
    /// Workers and slots per worker instead of the spec's.
    pub workers: Option<u32>,
    pub slots: Option<u32>,
    /// Remote reads as fair-share transfers.
    pub fair_share: bool,
    pub slow: Option<Slow>,
    /// Speculative execution on (`--speculation`), with the spec's
    /// `[cluster.speculation]` settings, or Hadoop's defaults.
    pub speculate: bool,
    /// These schedulers instead of the spec's (`--scheduler`, repeated),
    /// each labelled by its policy label.
    pub schedulers: Vec<sched::policy::SchedulerConfig>,
    /// Keep each run's whole outcome (every task's placement and times)
    /// in [`TraceRun::outcome`].
    pub keep_outcomes: bool,
    /// One run per scheduler with this seed instead of the spec's
    /// repetitions.
    pub seed: Option<u64>,
}

impl TraceOptions {
    /// The options of a run at `workers` x `slots` (the rest default).
    pub fn at(workers: Option<u32>, slots: Option<u32>) -> Self {
        TraceOptions {
            workers,
            slots,
            ..TraceOptions::default()
        }
    }
}

/// The trace's jobs as the replay takes them, for one seed: each file's
/// blocks on `replication` distinct workers, maps timed by pacing and the
/// model's overhead, reduces by the model's reduce fit.
pub fn replay_jobs(plan: &TracePlan, shape: &Shape, model: &Model, seed: u64) -> Vec<ReplayJob> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7ace);
    // Blocks live on the workers that run maps (the first ones).
    let holders = shape.workers.saturating_sub(shape.reduce_workers).max(1);
    let copies = shape.replication.clamp(1, holders) as usize;
    let map_workers: Vec<WorkerId> = (0..holders).map(WorkerId).collect();
    let replicas: Vec<Vec<Vec<WorkerId>>> = plan
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| match shape.placement {
            Placement::Even => place_even(
                common::hash::splitmix64(seed ^ (i as u64) << 32),
                f.blocks,
                &map_workers,
                copies as u32,
            ),
            Placement::Random => (0..f.blocks)
                .map(|_| {
                    sample(&mut rng, holders as usize, copies)
                        .into_iter()
                        .map(|w| WorkerId(w as u32))
                        .collect()
                })
                .collect(),
        })
        .collect();
    plan.jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let f = &plan.files[j.file];
            let local_ms = shape
                .slot_rate_mbs
                .map_or(0, |r| pacing_ms(f.block_bytes, r))
                + model.overhead_ms;
            // The runner's draw for job i (`run::run_one`).
            let compute = shape.task_time_s.map(|[a, b]| common::wire::TaskCompute {
                min_ms: (a * 1000.0).round() as u64,
                max_ms: (b * 1000.0).round() as u64,
                seed: common::hash::splitmix64(seed ^ common::hash::splitmix64(0xc0de ^ i as u64)),
            });
            let tasks = (0..f.blocks)
                .map(|b| ReplayTask {
                    index: b,
                    replicas: replicas[j.file][b as usize].clone(),
                    local_ms: local_ms + compute.as_ref().map_or(0, |c| c.for_task(b)),
                    bytes: f.block_bytes,
                })
                .collect();
            let r = j.reduces.unwrap_or(0);
            let share = j.shuffle_bytes / u64::from(r.max(1));
            let reduce_ms = (model.reduce_base_ms + model.reduce_ms_per_mb * share as f64 / 1e6)
                .max(0.0)
                .round() as u64;
            ReplayJob {
                id: JobId(i as u32 + 1),
                arrival_ms: j.arrival_ms,
                tasks,
                reduces: (0..r)
                    .map(|k| ReplayTask {
                        index: f.blocks + k,
                        replicas: Vec::new(),
                        local_ms: reduce_ms,
                        bytes: 0,
                    })
                    .collect(),
                reduce_load: share,
            }
        })
        .collect()
}

/// The replay's cluster for `shape`, heartbeat phases drawn per seed.
pub fn cluster(shape: &Shape, seed: u64) -> ReplayCluster {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xbea7);
    ReplayCluster {
        slots: vec![shape.slots; shape.workers as usize],
        heartbeat_ms: shape.heartbeat_ms,
        phase_ms: (0..shape.workers)
            .map(|_| rng.gen_range(0..shape.heartbeat_ms.max(1)))
            .collect(),
        period_ms: Vec::new(),
        out_of_band: shape.out_of_band,
        runs_maps: roles(shape, false),
        runs_reduces: roles(shape, true),
        jitter_ms: 0,
        jitter_seed: seed,
        record_decisions: false,
        // One process per server: no shared host to contend for.
        host_ms_per_start: 0.0,
        slowdown: slowdown(shape, seed),
        speculation: shape.speculation.clone(),
    }
}

/// Each worker's slowdown: `shape.slow`'s share of the workers, drawn per
/// seed, at its factor (empty: none slow).
fn slowdown(shape: &Shape, seed: u64) -> Vec<f64> {
    let Some(slow) = shape.slow else {
        return Vec::new();
    };
    let n = shape.workers as usize;
    let k = ((slow.fraction * n as f64).round() as usize).min(n);
    let mut f = vec![1.0; n];
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x510e);
    for w in sample(&mut rng, n, k) {
        f[w] = slow.factor;
    }
    f
}

/// Which workers run maps (`reduce` false) or reduces: every one, unless
/// the last `reduce_workers` run only reduces (empty: all do both).
fn roles(shape: &Shape, reduce: bool) -> Vec<bool> {
    if shape.reduce_workers == 0 {
        return Vec::new();
    }
    let split = shape.workers.saturating_sub(shape.reduce_workers);
    (0..shape.workers).map(|w| (w >= split) == reduce).collect()
}

/// A spec without `[trace]`: point `p`'s files and jobs, as the runner
/// makes them, arrivals drawn for `seed`. Input-sink jobs read file i mod
/// `files`; a `jobs.mix` gives each job its own file of its class's maps,
/// in the runner's seeded order. A job with reduces shuffles its input
/// times `shuffle_ratio[workload]`, the ratio the calibrated runs measured
/// (an error names the workload if they had none).
pub fn synthetic_plan(
    spec: &Spec,
    p: &Point,
    seed: u64,
    shuffle_ratio: &BTreeMap<String, f64>,
) -> anyhow::Result<TracePlan> {
    let j = &spec.jobs;
    let shuffle = |w: Workload, maps: u32, reduces: Option<u32>| -> anyhow::Result<u64> {
        if reduces.unwrap_or(0) == 0 {
            return Ok(0);
        }
        let r = shuffle_ratio.get(w.name()).with_context(|| {
            format!(
                "{} jobs with reduces: the calibration measured no shuffle for {} (it has {}): calibrate on runs of that workload",
                w.name(),
                w.name(),
                if shuffle_ratio.is_empty() {
                    "none".to_owned()
                } else {
                    shuffle_ratio.keys().cloned().collect::<Vec<_>>().join(", ")
                }
            )
        })?;
        Ok((r * f64::from(maps) * p.block_bytes as f64).round() as u64)
    };
    if !j.mix.is_empty() {
        let order = crate::experiment::run::mix_order(&j.mix, seed);
        let arrivals = crate::experiment::run::arrivals(seed, order.len() as u32, j.arrival_s);
        let files = order
            .iter()
            .enumerate()
            .map(|(i, c)| TraceFile {
                path: format!("j{i}"),
                blocks: c.maps,
                block_bytes: p.block_bytes,
            })
            .collect();
        let jobs = order
            .iter()
            .zip(arrivals)
            .enumerate()
            .map(|(i, (c, at))| {
                Ok(TraceJob {
                    id: format!("j{i}"),
                    arrival_ms: at,
                    workload: c.workload,
                    file: i,
                    reduces: c.reduces,
                    shuffle_bytes: shuffle(c.workload, c.maps, c.reduces)?,
                    output_bytes: 0,
                    ratios: None,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        return Ok(TracePlan {
            files,
            jobs,
            no_input: 0,
        });
    }
    let reduces = j.reduces.or(j
        .reduce_fraction
        .map(|f| ((p.blocks as f64 * f).round() as u32).max(1)));
    let per_job_shuffle = shuffle(j.workload(), p.blocks, reduces)?;
    let files = (0..p.files.max(1))
        .map(|f| TraceFile {
            path: format!("file{f}"),
            blocks: p.blocks,
            block_bytes: p.block_bytes,
        })
        .collect();
    let jobs = crate::experiment::run::arrivals(seed, p.jobs, j.arrival_s)
        .into_iter()
        .enumerate()
        .map(|(i, at)| TraceJob {
            id: format!("j{i}"),
            arrival_ms: at,
            workload: j.workload(),
            file: i % p.files.max(1) as usize,
            reduces,
            shuffle_bytes: per_job_shuffle,
            output_bytes: 0,
            ratios: None,
        })
        .collect();
    Ok(TracePlan {
        files,
        jobs,
        no_input: 0,
    })
}

/// A trace plan as the real replay runs it: with `shuffle = "trace"` each
/// job shuffles the trace's scaled bytes, as its synthetic job does; with
/// `shuffle = "wordcount"` each job with reduces shuffles what wordcount
/// makes of its file, at the ratio the calibrated runs measured. A
/// calibration from before that ratio was kept has none: the trace's bytes
/// are charged then, and a note says so.
fn charged(
    spec: &Spec,
    plan: &TracePlan,
    shuffle_ratio: &BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) -> TracePlan {
    let mut plan = plan.clone();
    let mode = spec.trace.as_ref().map(|t| t.shuffle).unwrap_or_default();
    if mode != crate::experiment::trace::TraceShuffle::Wordcount {
        return plan;
    }
    let Some(r) = shuffle_ratio.get(Workload::Wordcount.name()) else {
        let note = "[trace] shuffle = \"wordcount\", but the calibration measured no wordcount shuffle ratio (it predates it): each job's reduces are charged the trace's scaled shuffle bytes, not what the real replay's wordcount moves".to_owned();
        if !notes.contains(&note) {
            notes.push(note);
        }
        return plan;
    };
    for j in plan.jobs.iter_mut().filter(|j| j.reduces.unwrap_or(0) > 0) {
        let f = &plan.files[j.file];
        j.shuffle_bytes = (r * (f.block_bytes * u64::from(f.blocks)) as f64).round() as u64;
    }
    plan
}

/// Background processes on `shape`'s workers for `seed`: each worker's
/// `round(initial x slots)` at time 0, then `per_minute` more (Poisson)
/// until `until_ms`, each lasting a draw in `duration_s`.
pub fn background(
    cfg: Option<&BackgroundConfig>,
    shape: &Shape,
    seed: u64,
    until_ms: u64,
) -> Vec<BackgroundRun> {
    let Some(cfg) = cfg else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for w in 0..shape.workers {
        let mut rng =
            ChaCha8Rng::seed_from_u64(common::hash::splitmix64(seed ^ 0xb6 ^ u64::from(w) << 20));
        let draw = |rng: &mut ChaCha8Rng| {
            let [lo, hi] = cfg.duration_s;
            let s = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
            (s * 1000.0).round() as u64
        };
        let initial = (cfg.initial * f64::from(shape.slots)).round() as u32;
        for _ in 0..initial {
            let d = draw(&mut rng);
            out.push(BackgroundRun {
                worker: WorkerId(w),
                start_ms: 0,
                end_ms: d,
            });
        }
        if cfg.per_minute > 0.0 {
            let mean_gap_ms = 60_000.0 / cfg.per_minute;
            let mut t = 0.0;
            loop {
                let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                t += -mean_gap_ms * u.ln();
                if t >= until_ms as f64 {
                    break;
                }
                let d = draw(&mut rng);
                out.push(BackgroundRun {
                    worker: WorkerId(w),
                    start_ms: t as u64,
                    end_ms: t as u64 + d,
                });
            }
        }
    }
    out
}

/// One simulated run.
#[derive(Clone, Debug)]
pub struct TraceRun {
    pub point: String,
    pub scheduler: String,
    pub seed: u64,
    pub mean_jct_s: f64,
    pub makespan_s: f64,
    pub remote: usize,
    pub maps: usize,
    /// Backup attempts (speculation), and those that finished first.
    pub backups: u32,
    pub backups_won: u32,
    /// Wall time of the simulation (s).
    pub wall_s: f64,
    /// The whole run, when [`TraceOptions::keep_outcomes`].
    pub outcome: Option<std::sync::Arc<replay::ReplayOutcome>>,
    /// The policy's named counts (an external policy's calls, refusals
    /// and fallbacks; none for the built-ins).
    pub counters: Vec<(&'static str, u64)>,
    /// Why the run stopped before its end (a strict external policy
    /// failed); its figures are then NaN, and the other runs go on.
    pub error: Option<String>,
}

/// What every run of one `sim trace` call shares.
pub(crate) struct Setting<'a> {
    pub spec: &'a Spec,
    pub path: &'a Path,
    pub calibration: &'a Path,
    pub model: &'a Model,
    pub remote: RemoteModel,
    pub opts: &'a TraceOptions,
}

/// The runs of a call so far, with the policies' notes and each point's
/// jobs and maps (for the table).
#[derive(Default)]
pub(crate) struct Runs {
    pub runs: Vec<TraceRun>,
    pub notes: Vec<String>,
    pub maps_of: Vec<(String, u32, u64)>,
}

/// Every scheduler of the spec at `path`, at every point, each
/// repetition's seed, on `workers` x `slots` (default: the spec's), a
/// remote read charged by the calibration's `source+reader` cost or, with
/// `fair_share`, as a transfer sharing its source's and reader's links;
/// the table (markdown) and the runs.
pub fn run(
    path: &Path,
    calibration: &Path,
    opts: &TraceOptions,
) -> anyhow::Result<(String, Vec<TraceRun>)> {
    let (spec, _) = Spec::load(path)?;
    let schedulers = schedulers_of(&spec, opts, path)?;
    let points = spec.points().map_err(|e| e.in_file(path))?;
    let first = points.first().context("the spec has no point")?;
    let model = Model::read(calibration, opts.point.as_deref())?;
    let set = Setting {
        spec: &spec,
        path,
        calibration,
        model: &model,
        remote: remote_model(&model, opts.fair_share, calibration)?,
        opts,
    };
    let shape = shape_of(&spec, first, opts);
    if shape.workers == 0 || shape.slots == 0 {
        anyhow::bail!("--workers and --slots must be at least 1");
    }
    let mut out = Runs::default();
    for p in &points {
        simulate_point(&set, p, &schedulers, &mut out)?;
    }
    let table = table::write(&set, first, &shape, &schedulers, &out)?;
    Ok((table, out.runs))
}

/// The spec's schedulers, or `--scheduler`'s instead.
fn schedulers_of(
    spec: &Spec,
    opts: &TraceOptions,
    path: &Path,
) -> anyhow::Result<Vec<NamedScheduler>> {
    if opts.schedulers.is_empty() {
        return Ok(spec.schedulers().map_err(|e| e.in_file(path))?);
    }
    opts.schedulers
        .iter()
        .map(|c| {
            c.validate()
                .map_err(|e| anyhow::anyhow!("--scheduler {}: {e}", c.label()))?;
            Ok(NamedScheduler {
                label: c.label(),
                config: c.clone(),
                reduces: spec.cluster.reduce_placement,
                grid: None,
            })
        })
        .collect()
}

/// A remote read's cost: the calibration's `source+reader` terms, or its
/// fair-share transfer (`--fair-share`).
fn remote_model(
    model: &Model,
    fair_share: bool,
    calibration: &Path,
) -> anyhow::Result<RemoteModel> {
    match (fair_share, model.transfer_ms) {
        (false, _) => Ok(RemoteModel::Static(model.remote)),
        (true, Some(transfer_ms)) => Ok(RemoteModel::FairShare {
            transfer_ms,
            ref_bytes: model.ref_bytes,
        }),
        (true, None) => anyhow::bail!(
            "{}: the calibration has no fair-share transfer time (`transfer_ms`): calibrate again",
            calibration.display()
        ),
    }
}

/// The simulated cluster at point `p`: the spec's, with `--workers` and
/// `--slots`, dedicated reduce workers keeping their share at any size.
fn shape_of(spec: &Spec, p: &Point, opts: &TraceOptions) -> Shape {
    let reduce_workers = match opts.workers {
        Some(w) if spec.cluster.reduce_workers > 0 => {
            ((u64::from(spec.cluster.reduce_workers) * u64::from(w)
                + u64::from(spec.cluster.workers) / 2)
                / u64::from(spec.cluster.workers))
            .clamp(1, u64::from(w.saturating_sub(1)).max(1)) as u32
        }
        _ => spec.cluster.reduce_workers,
    };
    Shape {
        workers: opts.workers.unwrap_or(spec.cluster.workers),
        reduce_workers,
        placement: spec.data.placement,
        slots: opts.slots.unwrap_or(spec.cluster.slots),
        replication: p.replication,
        heartbeat_ms: p.heartbeat_ms,
        out_of_band: p.out_of_band_heartbeat,
        slot_rate_mbs: p.slot_rate_mbs,
        task_time_s: spec.jobs.task_time_s,
        speculation: sched::speculation::Speculation {
            enabled: spec.cluster.speculation.enabled || opts.speculate,
            ..spec.cluster.speculation.clone()
        },
        slow: opts.slow,
    }
}

/// One point's runs: every scheduler at every seed (`--seed`, or the
/// spec's repetitions).
fn simulate_point(
    set: &Setting,
    p: &Point,
    schedulers: &[NamedScheduler],
    out: &mut Runs,
) -> anyhow::Result<()> {
    let (spec, path, model) = (set.spec, set.path, set.model);
    let shape = shape_of(spec, p, set.opts);
    let limit_ms = (spec.timeout_s * 1000.0) as u64;
    let traced = spec
        .trace_plan(p.block_bytes)
        .map_err(|e| e.in_file(path))?;
    let seeds: Vec<u64> = match set.opts.seed {
        Some(s) => vec![s],
        None => (0..spec.repetitions)
            .map(|rep| spec.seed + u64::from(rep))
            .collect(),
    };
    for s in schedulers {
        for &seed in &seeds {
            let plan = match &traced {
                Some(plan) => charged(spec, plan, &model.shuffle_ratio, &mut out.notes),
                None => synthetic_plan(spec, p, seed, &model.shuffle_ratio)
                    .with_context(|| format!("{}", path.display()))?,
            };
            if !out.maps_of.iter().any(|m| m.0 == p.label) {
                out.maps_of
                    .push((p.label.clone(), plan.jobs.len() as u32, plan.maps()));
            }
            let jobs = replay_jobs(&plan, &shape, model, seed);
            let bg = background(p.background.as_ref(), &shape, seed, limit_ms);
            let mut policy = sched::build(&s.config, seed);
            let mut placer = sched::ReducePlacer::new(s.reduces, &s.config);
            let t0 = Instant::now();
            let what = || format!("simulating {} at {} seed {seed}", s.label, p.label);
            let run = match replay::replay(
                policy.as_mut(),
                &mut placer,
                &cluster(&shape, seed),
                &jobs,
                &bg,
                set.remote,
                limit_ms,
            ) {
                Ok(run) => run,
                // A policy that stopped itself: its row says why, the
                // other runs go on.
                Err(e) if e.reason.is_some() => {
                    out.notes
                        .push(format!("{} seed {seed}: stopped: {e}", s.label));
                    out.runs.push(TraceRun {
                        point: p.label.clone(),
                        scheduler: s.label.clone(),
                        seed,
                        mean_jct_s: f64::NAN,
                        makespan_s: f64::NAN,
                        remote: 0,
                        maps: 0,
                        backups: 0,
                        backups_won: 0,
                        wall_s: t0.elapsed().as_secs_f64(),
                        outcome: None,
                        counters: policy.counters(),
                        error: Some(e.to_string()),
                    });
                    continue;
                }
                Err(e) => return Err(anyhow::Error::new(e).context(what())),
            };
            out.runs.push(TraceRun {
                point: p.label.clone(),
                scheduler: s.label.clone(),
                seed,
                mean_jct_s: run.mean_jct_s(),
                makespan_s: run.makespan_s(),
                remote: run.remote_tasks(),
                maps: run.runs.iter().filter(|r| !r.reduce).count(),
                backups: run.backups,
                backups_won: run.backups_won,
                wall_s: t0.elapsed().as_secs_f64(),
                outcome: set.opts.keep_outcomes.then(|| std::sync::Arc::new(run)),
                counters: policy.counters(),
                error: None,
            });
            for n in policy.notes() {
                out.notes.push(format!("{} seed {seed}: {n}", s.label));
            }
        }
    }
    Ok(())
}

/// `run`, with the spec's path in the error.
/// The calibration folder shipped with the SWIM hour's results under
/// `root` (the repository): `results/swim-hour/<stamp>/calibration`, the
/// first stamp that has one.
pub fn shipped_swim_calibration(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = root.join("results/swim-hour");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path().join("calibration")))
        .filter(|p| p.join("meta.json").exists())
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .with_context(|| format!("no calibrated folder in {}", dir.display()))
}

pub fn run_file(path: &Path, calibration: &Path, opts: &TraceOptions) -> anyhow::Result<String> {
    run(path, calibration, opts)
        .map(|(t, _)| t)
        .with_context(|| format!("sim trace {}", path.display()))
}

#[cfg(test)]
mod tests;
