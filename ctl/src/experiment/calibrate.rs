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
    self, BackgroundRun, RemoteModel, ReplayCluster, ReplayJob, ReplayOutcome, ReplayTask,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod measured;
mod recorded;
mod summary;
#[cfg(test)]
mod tests;

pub use lab::calibration::{
    error_spread, rank_pairs, seconds_spread, Cost, ErrorSpread, PointModel, PredictedJob,
    Prediction, MODELS,
};
use lab::calibration::{fit, fit_sized, pacing_ms, sizes_differ, Sample};
use measured::{Measured, Predicted};
use summary::summary;

/// A simulation that makes no progress for this long has failed.
const GIVE_UP_MS: u64 = 600_000;

/// One run's successful map and reduce attempts, and its seed.
type RunRows<'a> = (&'a [&'a TaskRow], &'a [&'a TaskRow], u64);

/// How `calibrate` fits and simulates.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub fit: Fit,
    /// Delay each simulated heartbeat by up to this many ms (0: none).
    pub jitter_ms: u64,
    /// Draw the order of the heartbeats the master asks for together (an
    /// arrival's out-of-band wake) and the jitter with the `order_draw`-th
    /// seed of each run instead of the run's own (0): the same runs under
    /// another order, to see how much a prediction moves with it (writes
    /// `...-order<k>/`).
    pub order_draw: u64,
    /// Fit the host term (`PointModel::host_ms_per_start`): a map's
    /// overhead grows with the maps launched on the shared host just
    /// before it (writes `...-host/`).
    pub host_term: bool,
    /// Replay each run's heartbeats as its decision record has them (the
    /// real order and times, out-of-band ones included) instead of from
    /// fitted phases (writes `...-recorded/`).
    pub recorded_beats: bool,
    /// Give each task launched where it ran for real (the same worker and
    /// source) its measured length instead of the model's (writes
    /// `...-measured/`): what is left of the error is the decisions'.
    pub measured_times: bool,
    /// Model the emulated disk where a point has one
    /// ([`lab::replay::DiskShare`]; writes `...-disk/`).
    pub disk_share: bool,
    /// Move the shuffle over the spec's NICs
    /// ([`lab::replay::ShuffleNet`]; writes `...-netshuffle/`): a reduce
    /// lasts the typical reduce's time for its input, or its fetch and its
    /// output's copies where longer.
    pub network_shuffle: bool,
}

impl Options {
    pub fn new(fit: Fit) -> Options {
        Options {
            fit,
            jitter_ms: 0,
            order_draw: 0,
            host_term: false,
            recorded_beats: false,
            measured_times: false,
            disk_share: false,
            network_shuffle: false,
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
    /// family: each point by the model of the point of the same label, or
    /// every point by the model of the one point named (another workload:
    /// dyndl-real's points by the scale family's one), writing
    /// `calibration-from-<that experiment>[-<point>]/`.
    From(PathBuf, Option<String>),
}

impl Fit {
    /// The output folder's name (before any `-jitter<ms>`).
    fn folder(&self) -> String {
        match self {
            Fit::InSample => "calibration".into(),
            Fit::HoldOut => "calibration-hold-out".into(),
            Fit::From(cal, None) => format!("calibration-from-{}", experiment_of(cal)),
            Fit::From(cal, Some(point)) => format!(
                "calibration-from-{}-{}",
                experiment_of(cal),
                super::timeline::slug(point)
            ),
        }
    }

    /// How the summary says it, as a phrase after "per job ...".
    fn phrase(&self) -> String {
        match self {
            Fit::InSample => "in sample (the model fitted on every run it predicts)".into(),
            Fit::HoldOut => "held out (each scheduler's runs predicted by the model fitted on the other schedulers' runs)".into(),
            Fit::From(cal, point) => format!(
                "held out by folder (every run predicted by the model fitted on `{}`{}, none of these runs)",
                cal.display(),
                point.as_ref().map_or(String::new(), |p| format!(" at its point {p}"))
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
    /// The run's decision record's inputs (empty unless
    /// `--recorded-heartbeats`): its jobs' arrivals and replicas.
    record: recorded::Record,
}

/// A run of a results folder: (point, scheduler, repetition).
type RunKey = (String, String, u32);

/// The bytes a reduce writes ([`Measured::reduce_output`]).
type ReduceOutput<'a> = dyn Fn(&TaskRow) -> anyhow::Result<u64> + 'a;

/// Where each block of a seed's data was: (seed, file, block) -> workers.
type Replicas = BTreeMap<(u64, u64, u32), BTreeSet<WorkerId>>;

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
        Fit::From(cal, _) => Some(read_models(cal)?),
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
    mut out: Predicted,
    mut prov: Provenance,
) -> anyhow::Result<PathBuf> {
    let (fit, jitter_ms) = (&opts.fit, opts.jitter_ms);
    let mut name = fit.folder();
    if opts.host_term {
        name.push_str("-host");
    }
    if opts.disk_share {
        name.push_str("-disk");
    }
    if opts.network_shuffle {
        name.push_str("-netshuffle");
    }
    if opts.recorded_beats {
        name.push_str("-recorded");
    }
    if opts.measured_times {
        name.push_str("-measured");
    }
    if jitter_ms > 0 {
        name.push_str(&format!("-jitter{jitter_ms}"));
    }
    if opts.order_draw > 0 {
        name.push_str(&format!("-order{}", opts.order_draw));
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
    for (file, rows) in std::mem::take(&mut out.decisions) {
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
    cal.write_summary(&(summary(spec, dir, fit, &out, &order) + &agreement))?;
    prov.finish();
    cal.write_meta(&serde_json::json!({
        "calibrated_on": dir.display().to_string(),
        "hold_out": *fit == Fit::HoldOut,
        "model_from": match fit {
            Fit::From(cal, _) => Some(cal.display().to_string()),
            _ => None,
        },
        "model_point": match fit {
            Fit::From(_, point) => point.clone(),
            _ => None,
        },
        "heartbeat_jitter_ms": jitter_ms,
        "order_draw": opts.order_draw,
        "host_term": opts.host_term,
        "recorded_heartbeats": opts.recorded_beats,
        "measured_task_times": opts.measured_times,
        "disk_share": opts.disk_share,
        "network_shuffle": opts.network_shuffle,
        "source_meta": meta,
        "models": out.models,
        "provenance": prov,
    }))?;
    Ok(folder)
}

/// Fits one point's model on `runs` (each run's map attempts and seed):
/// the local overheads, then the remote extra by least squares. With
/// `disk` (the emulated disk's MB/s and the slot's pacing), each map's
/// block read as the shared disk made it, or its pacing floor where that
/// is longer, is left out of both, and `compute` must leave the pacing out.
fn fit_point(
    point: &str,
    runs: &[RunRows],
    compute: &impl Fn(u64, &TaskRow) -> anyhow::Result<u64>,
    host_term: bool,
    disk: Option<(f64, f64)>,
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
    // Each map's block read under the disk term (ms; 0 without).
    let reads: Vec<Vec<f64>> = runs
        .iter()
        .map(|(rows, reduces, _)| disk_reads(rows, reduces, disk))
        .collect::<anyhow::Result<_>>()?;
    // Each local map's overhead and the launches before it.
    let mut local: Vec<(f64, f64)> = Vec::new();
    for (run, (rows, _, seed)) in runs.iter().enumerate() {
        for (i, t) in rows
            .iter()
            .enumerate()
            .filter(|(_, t)| t.locality == "local")
        {
            let dur = ms(t.end_s - t.start_s);
            local.push((
                dur.saturating_sub(compute(*seed, t)?) as f64 - reads[run][i],
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
    // With the disk term, each remote map's extra with its read kept in
    // (what the fair-share transfer is fitted to).
    let mut with_read: Vec<f64> = Vec::new();
    for (run, (rows, _, seed)) in runs.iter().enumerate() {
        let remote: Vec<&TaskRow> = rows
            .iter()
            .copied()
            .filter(|t| t.locality != "local")
            .collect();
        let read_of: Vec<f64> = rows
            .iter()
            .zip(&reads[run])
            .filter(|(t, _)| t.locality != "local")
            .map(|(_, r)| *r)
            .collect();
        for (t, read) in remote.iter().zip(read_of) {
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
            with_read.push(extra);
            samples.push((extra - read, n_src as f64, n_dst as f64));
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
        reduce_typical_ms_per_mb: lab::calibration::typical_per_mb(&reduce_samples, reduce.base_ms),
        local_attempts: overheads.len(),
        overhead_mean_ms: mean_overhead,
        overhead_p10_ms: overheads[overheads.len() / 10],
        overhead_p90_ms: overheads[overheads.len() * 9 / 10],
        overheads,
        host_ms_per_start: host,
        remote_attempts: samples.len(),
        remote_extra_mean_ms: with_read.iter().sum::<f64>() / with_read.len().max(1) as f64,
        cost: fit_sized(&samples, &mbs),
        cost_reader_only: fit(&samples, false),
        transfer_ms: 0.0,
        ref_bytes: if sizes_differ(&mbs) {
            (mbs.iter().sum::<f64>() / mbs.len() as f64 * 1e6).round() as u64
        } else {
            0
        },
        block_bytes: mean_bytes(runs.iter().flat_map(|(maps, _, _)| maps.iter().copied())),
        shuffle_ratio: BTreeMap::new(),
        disk_mbs: disk.map_or(0.0, |d| d.0),
        disk_slot_mbs: disk.map_or(0.0, |d| d.1),
    })
}

/// Each of `rows`' maps' input phase (ms, in their order): its read as
/// the emulated disk shared by the reads from each source would have made
/// it ([`lab::calibration::shared_reads`], the `reduces`' fetches of map
/// output sharing it too: from its start, each reduce takes a part per map
/// of its job, in proportion to the bytes the map read, a few at once),
/// or its pacing floor where that is longer (the worker paces a task's
/// length, not its read); zeros without `disk`.
fn disk_reads(
    rows: &[&TaskRow],
    reduces: &[&TaskRow],
    disk: Option<(f64, f64)>,
) -> anyhow::Result<Vec<f64>> {
    use lab::calibration::{DiskRead, FetchChain};
    let Some((mbs, slot_mbs)) = disk else {
        return Ok(vec![0.0; rows.len()]);
    };
    let mut reads = Vec::new();
    // Per job, each map's bytes by the worker it ran on, and in all.
    let mut spread: BTreeMap<&str, (BTreeMap<u32, Vec<u64>>, u64)> = BTreeMap::new();
    for t in rows {
        reads.push(DiskRead {
            start_ms: ms(t.start_s),
            source: worker_id(&t.source)?.0,
            bytes: t.input_bytes,
        });
        let e = spread.entry(t.job.as_str()).or_default();
        e.0.entry(worker_id(&t.worker)?.0)
            .or_default()
            .push(t.input_bytes);
        e.1 += t.input_bytes;
    }
    // Each reduce takes a part per map, one worker after another from the
    // one its number picks, a few at once.
    let mut fetches = Vec::new();
    for r in reduces {
        let Some((on, total)) = spread.get(r.job.as_str()).filter(|s| s.1 > 0) else {
            continue;
        };
        let queues = on
            .iter()
            .map(|(&w, b)| (w, b.iter().copied().collect()))
            .collect();
        let parts = lab::replay::fetch_order(queues, r.task)
            .into_iter()
            .map(|(w, b)| {
                let share = r.input_bytes as f64 * b as f64 / *total as f64;
                (w, share.round() as u64)
            })
            .collect();
        fetches.push(FetchChain {
            start_ms: ms(r.start_s),
            parts,
        });
    }
    let mut out = lab::calibration::shared_reads(&reads, &fetches, mbs);
    for (r, t) in out.iter_mut().zip(rows) {
        *r = r.max(pacing_ms(t.input_bytes, slot_mbs) as f64);
    }
    Ok(out)
}

/// The mean input bytes of `maps` (0 for none).
pub(super) fn mean_bytes<'a>(maps: impl Iterator<Item = &'a TaskRow>) -> u64 {
    let (sum, n) = maps.fold((0u128, 0u128), |(s, n), t| {
        (s + u128::from(t.input_bytes), n + 1)
    });
    (sum + n / 2).checked_div(n).map_or(0, |b| b as u64)
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
    network: Option<&ReduceOutput>,
) -> anyhow::Result<Vec<ReplayJob>> {
    // Over the network a reduce's own time is the typical reduce's (the
    // fitted term holds the network's share already), and it sends its
    // output's copies (`network` gives its bytes).
    let per_mb = match network {
        None => model.reduce_ms_per_mb,
        Some(_) if model.reduce_typical_ms_per_mb > 0.0 => model.reduce_typical_ms_per_mb,
        Some(_) => anyhow::bail!(
            "--network-shuffle: the model of point {} has no typical reduce term (reduce_typical_ms_per_mb; it was stored before it was kept): calibrate its folder again",
            model.point
        ),
    };
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
    // Each reduce lasts the fitted time for its measured input (over the
    // network: at least).
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
        let len = (model.reduce_base_ms + per_mb * mb).max(0.0);
        job.reduces.push(ReplayTask {
            index: t.task,
            replicas: Vec::new(),
            local_ms: len.round() as u64,
            bytes: network.map_or(Ok(0), |output| output(t))?,
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
