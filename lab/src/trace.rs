//! The trace simulator (`master sim trace`, `sim scale`, the Python
//! package's `simulate_trace`): a trace's hour, or a spec's own jobs, run in
//! [`crate::replay`] at any number of workers with the task times and the
//! cost of a remote read from a calibration of real runs.
//!
//! What the simulated cluster is made of, from the calibration's point
//! ([`Model`]): a map's local time is its block at the slot's compute
//! pacing plus the point's mean measured overhead (plus its emulated
//! compute draw, the workers' own, by seed, job and task); a remote read
//! adds the `source+reader` cost (with its per-MB term where the
//! calibration fitted one) or, under fair share, a transfer scaled by the
//! block's bytes; a reduce lasts the fitted `base + per MB` of its share of
//! the job's shuffle bytes. Every block of a file gets `replication`
//! replicas on distinct workers drawn per seed ([`common::placement`]),
//! every worker heartbeats at a phase drawn per seed, and background
//! processes start as the spec's `[background]` says ([`background`]).
//!
//! The caller (`ctl`'s `sim trace`) reads the spec and the calibration's
//! folder and turns them into a [`TracePlan`], a [`Shape`] and a [`Model`];
//! [`simulate`] runs one scheduler at one seed.

use crate::replay::{
    self, BackgroundRun, RemoteCost, RemoteModel, ReplayCluster, ReplayJob, ReplayTask, ShuffleNet,
};
use crate::swim::{TracePlan, TraceShuffle};
use common::config::BackgroundConfig;
use common::placement::{place_even, Placement};
use common::{JobId, WorkerId};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched::policy::SchedulerConfig;
use sched::reduce::ReducePlacement;
use std::collections::BTreeMap;
use std::time::Instant;
use workloads::Workload;

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
    /// The typical reduce's ms per MB over `reduce_base_ms` (the median
    /// of the calibration's reduces): its own time, which the network
    /// bounds the slower ones beyond ([`Shape::shuffle_net`]). None: an
    /// older calibration.
    pub reduce_typical_ms_per_mb: Option<f64>,
    /// Per workload, the bytes its reduces fetch over the bytes its maps
    /// read, as measured (what a spec's sort or wordcount job shuffles).
    pub shuffle_ratio: BTreeMap<String, f64>,
}

impl Model {
    /// Point `point` (else the first) of a calibration's `meta.json`
    /// (`master sim calibrate`'s), already parsed; the error says what is
    /// missing.
    pub fn from_meta(meta: &serde_json::Value, point: Option<&str>) -> Result<Model, String> {
        let models = meta["models"]
            .as_array()
            .ok_or("no `models` (not a calibration)")?;
        let m = match point {
            None => models.first(),
            Some(p) => models.iter().find(|m| m["point"] == p),
        }
        .ok_or_else(|| {
            let known: Vec<&str> = models.iter().filter_map(|m| m["point"].as_str()).collect();
            format!(
                "no point {} (points: {})",
                point.unwrap_or("at all"),
                known.join(", ")
            )
        })?;
        let num = |v: &serde_json::Value, key: &str| -> Result<f64, String> {
            v[key]
                .as_f64()
                .ok_or_else(|| format!("model field `{key}` missing"))
        };
        let cost = &m["cost"];
        let per_mb_ms = cost["per_mb_ms"].as_f64().unwrap_or(0.0);
        // Reads of one size fitted (no per-MB term, no `ref_bytes`): the
        // fixed terms scale with a read's bytes from the calibration's
        // block size, as `master sim calibrate --model-from` scales them.
        let one_size = m["ref_bytes"].as_u64().unwrap_or(0) == 0 && per_mb_ms == 0.0;
        let fixed_ref = if one_size {
            m["block_bytes"].as_u64().unwrap_or(0)
        } else {
            0
        };
        Ok(Model {
            point: m["point"].as_str().unwrap_or_default().to_owned(),
            overhead_ms: num(m, "overhead_mean_ms")?.max(0.0).round() as u64,
            remote: RemoteCost {
                base_ms: num(cost, "base_ms")?,
                per_source_ms: num(cost, "per_source_ms")?,
                per_reader_ms: num(cost, "per_reader_ms")?,
                // Calibrations from before the per-size term have none.
                per_mb_ms,
                ref_bytes: fixed_ref,
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
            // Models from before it was kept have none (or 0).
            reduce_typical_ms_per_mb: m["reduce_typical_ms_per_mb"].as_f64().filter(|v| *v > 0.0),
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
    /// The shuffle over the links (`--network-shuffle`): a reduce's own
    /// time is the model's typical one, and its fetch and its output's
    /// copies cross the links; none: a reduce lasts the model's fit.
    pub shuffle_net: Option<ShuffleNet>,
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
                .map_or(0, |r| crate::calibration::pacing_ms(f.block_bytes, r))
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
            let per_mb = match (shape.shuffle_net, model.reduce_typical_ms_per_mb) {
                (Some(_), Some(typical)) => typical,
                _ => model.reduce_ms_per_mb,
            };
            let reduce_ms = (model.reduce_base_ms + per_mb * share as f64 / 1e6)
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
                        bytes: j.output_bytes / u64::from(r),
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
        recorded_beats: Vec::new(),
        measured_ms: Default::default(),
        disk: None,
        shuffle_net: shape.shuffle_net,
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

/// A trace plan as the real replay runs it: with `shuffle = "trace"` each
/// job shuffles the trace's scaled bytes, as its synthetic job does; with
/// `shuffle = "wordcount"` each job with reduces shuffles what wordcount
/// makes of its file, at the ratio the calibrated runs measured. A
/// calibration from before that ratio was kept has none: the trace's bytes
/// are charged then, and a note says so.
pub fn charged(
    mode: TraceShuffle,
    plan: &TracePlan,
    shuffle_ratio: &BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) -> TracePlan {
    let mut plan = plan.clone();
    if mode != TraceShuffle::Wordcount {
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
    /// Events the simulation took (heartbeats, task ends, reads ending).
    pub events: u64,
    /// The whole run, when [`TraceOptions::keep_outcomes`].
    pub outcome: Option<std::sync::Arc<replay::ReplayOutcome>>,
    /// The policy's named counts (an external policy's calls, refusals
    /// and fallbacks; none for the built-ins).
    pub counters: Vec<(&'static str, u64)>,
    /// Why the run stopped before its end (a strict external policy
    /// failed); its figures are then NaN, and the other runs go on.
    pub error: Option<String>,
}

/// One scheduler at one seed: what [`simulate`] runs.
#[derive(Clone, Debug)]
pub struct Scheduled<'a> {
    pub point: &'a str,
    pub label: &'a str,
    pub config: &'a SchedulerConfig,
    pub reduces: ReducePlacement,
    pub seed: u64,
}

/// Runs `s` on `shape` with `jobs` and `bg` until every job is done (or
/// `limit_ms` of simulated time): the run, and the policy's notes. A policy
/// that stopped itself (a strict external policy failing) gives a run with
/// its reason in `error` and NaN figures, so the caller's other runs go on;
/// any other replay error is returned.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    s: &Scheduled,
    shape: &Shape,
    jobs: &[ReplayJob],
    bg: &[BackgroundRun],
    remote: RemoteModel,
    limit_ms: u64,
    keep_outcome: bool,
) -> Result<(TraceRun, Vec<String>), crate::sim::SimError> {
    let mut policy = sched::build(s.config, s.seed);
    let mut placer = sched::ReducePlacer::new(s.reduces, s.config);
    let t0 = Instant::now();
    let row = |wall: f64| TraceRun {
        point: s.point.to_owned(),
        scheduler: s.label.to_owned(),
        seed: s.seed,
        mean_jct_s: f64::NAN,
        makespan_s: f64::NAN,
        remote: 0,
        maps: 0,
        backups: 0,
        backups_won: 0,
        wall_s: wall,
        events: 0,
        outcome: None,
        counters: Vec::new(),
        error: None,
    };
    let run = match replay::replay(
        policy.as_mut(),
        &mut placer,
        &cluster(shape, s.seed),
        jobs,
        bg,
        remote,
        limit_ms,
    ) {
        Ok(run) => run,
        Err(e) if e.reason.is_some() => {
            let note = format!("{} seed {}: stopped: {e}", s.label, s.seed);
            let failed = TraceRun {
                counters: policy.counters(),
                error: Some(e.to_string()),
                ..row(t0.elapsed().as_secs_f64())
            };
            return Ok((failed, vec![note]));
        }
        Err(e) => return Err(e),
    };
    let done = TraceRun {
        mean_jct_s: run.mean_jct_s(),
        makespan_s: run.makespan_s(),
        remote: run.remote_tasks(),
        maps: run.runs.iter().filter(|r| !r.reduce).count(),
        backups: run.backups,
        backups_won: run.backups_won,
        events: run.events,
        counters: policy.counters(),
        ..row(t0.elapsed().as_secs_f64())
    };
    let done = TraceRun {
        outcome: keep_outcome.then(|| std::sync::Arc::new(run)),
        ..done
    };
    let notes = policy
        .notes()
        .into_iter()
        .map(|n| format!("{} seed {}: {n}", s.label, s.seed))
        .collect();
    Ok((done, notes))
}

#[cfg(test)]
mod tests;
