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
//! What the simulated cluster is made of, and the run itself, are
//! `lab::trace`'s ([`lab::trace::simulate`]); this module reads the spec
//! and the calibration folder into its inputs and writes the table, which
//! says all of it beside the figures.

use crate::experiment::spec::{NamedScheduler, Point, Spec};
use anyhow::Context;
use lab::replay::RemoteModel;
use lab::swim::{TraceFile, TraceJob, TracePlan};
use lab::trace::{background, charged, replay_jobs, simulate, Scheduled};
pub use lab::trace::{Model, Shape, Slow, TraceRun};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use workloads::Workload;

mod table;

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
    /// How a reduce is timed: over the links where it can be (the
    /// default), or as `--network-shuffle` / `--fitted-reduce` say.
    pub shuffle: ShuffleModel,
}

/// How `sim trace` times a job's reduces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShuffleModel {
    /// Over the links where every point has a NIC rate and the
    /// calibration keeps the typical reduce's term; else the fitted term,
    /// the table's notes saying why. The default: it is the model that
    /// put the spec-only answers on SWIM hours no calibration had seen
    /// within 10% (docs/experiments/simulator.md).
    #[default]
    Auto,
    /// The calibration's fitted per-MB term (`--fitted-reduce`): a
    /// reduce's time from its bytes alone, loading no link.
    Fitted,
    /// The shuffle over the links (`--network-shuffle`): a reduce's own
    /// time is the calibration's typical one, and its fetch from the
    /// workers that ran its job's maps and its output's copies cross the
    /// spec's NICs, shared with every other transfer on them; refused
    /// where the spec or the calibration cannot give it.
    Network,
}

impl std::str::FromStr for ShuffleModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ShuffleModel::Auto),
            "fitted" => Ok(ShuffleModel::Fitted),
            "network" => Ok(ShuffleModel::Network),
            _ => Err(format!(
                "shuffle model {s:?}: expected \"auto\", \"fitted\" or \"network\""
            )),
        }
    }
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

/// Point `point` (else the first) of the calibration folder `dir`.
pub fn read_model(dir: &Path, point: Option<&str>) -> anyhow::Result<Model> {
    let file = dir.join("meta.json");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "reading {} (a `master sim calibrate` folder)",
            file.display()
        )
    })?;
    let meta: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}", file.display()))?;
    Model::from_meta(&meta, point).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))
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

/// What every run of one `sim trace` call shares.
pub(crate) struct Setting<'a> {
    pub spec: &'a Spec,
    pub path: &'a Path,
    pub calibration: &'a Path,
    pub model: &'a Model,
    pub remote: RemoteModel,
    pub opts: &'a TraceOptions,
    /// The shuffle over the links (the resolved [`ShuffleModel`]).
    pub network: bool,
}

/// The runs of a call so far, with the policies' notes and each point's
/// jobs and maps (for the table).
#[derive(Default)]
pub(crate) struct Runs {
    pub runs: Vec<TraceRun>,
    pub notes: Vec<String>,
    pub maps_of: Vec<(String, u32, u64)>,
    /// Whether any simulated job ran reduces.
    pub reduces: bool,
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
    let model = read_model(calibration, opts.point.as_deref())?;
    let why_not = why_not_network(&model, &points, calibration, path);
    let network = match (opts.shuffle, &why_not) {
        (ShuffleModel::Fitted, _) => false,
        (ShuffleModel::Network, Some(why)) => anyhow::bail!("--network-shuffle: {why}"),
        (ShuffleModel::Network | ShuffleModel::Auto, None) => true,
        (ShuffleModel::Auto, Some(_)) => false,
    };
    let set = Setting {
        spec: &spec,
        path,
        calibration,
        model: &model,
        remote: remote_model(&model, opts.fair_share, calibration)?,
        opts,
        network,
    };
    let shape = shape_of(&spec, first, opts, network);
    if shape.workers == 0 || shape.slots == 0 {
        anyhow::bail!("--workers and --slots must be at least 1");
    }
    let mut out = Runs::default();
    for p in &points {
        simulate_point(&set, p, &schedulers, &mut out)?;
    }
    if let (ShuffleModel::Auto, Some(why), true) = (opts.shuffle, why_not, out.reduces) {
        out.notes.insert(
            0,
            format!("The reduces took the calibration's fitted term, not the shuffle over the links (the default where it can be): {why}."),
        );
    }
    let table = table::write(&set, first, &shape, &schedulers, &out)?;
    Ok((table, out.runs))
}

/// Why the shuffle cannot go over the links, if it cannot: it needs a NIC
/// rate at every point and a calibration that kept the typical reduce's
/// term (the fitted per-MB term holds the network's share already).
fn why_not_network(
    model: &Model,
    points: &[Point],
    calibration: &Path,
    path: &Path,
) -> Option<String> {
    if let Some(p) = points.iter().find(|p| p.nic_mbps.is_none()) {
        return Some(format!(
            "point {} of {} has no NIC rate (cluster.nic_mbps): the shuffle has no link to cross",
            p.label,
            path.display()
        ));
    }
    if model.reduce_typical_ms_per_mb.is_none() {
        return Some(format!(
            "the calibration {} has no typical reduce term (reduce_typical_ms_per_mb; it was made before it was kept): run `master sim calibrate` on its results again",
            calibration.display()
        ));
    }
    None
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
fn shape_of(spec: &Spec, p: &Point, opts: &TraceOptions, network: bool) -> Shape {
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
        shuffle_net: p.shuffle_net(spec).filter(|_| network),
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
    let shape = shape_of(spec, p, set.opts, set.network);
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
                Some(plan) => charged(
                    spec.trace.as_ref().map(|t| t.shuffle).unwrap_or_default(),
                    plan,
                    &model.shuffle_ratio,
                    &mut out.notes,
                ),
                None => synthetic_plan(spec, p, seed, &model.shuffle_ratio)
                    .with_context(|| format!("{}", path.display()))?,
            };
            out.reduces |= plan.jobs.iter().any(|j| j.reduces.unwrap_or(0) > 0);
            if !out.maps_of.iter().any(|m| m.0 == p.label) {
                out.maps_of
                    .push((p.label.clone(), plan.jobs.len() as u32, plan.maps()));
            }
            let jobs = replay_jobs(&plan, &shape, model, seed);
            let bg = background(p.background.as_ref(), &shape, seed, limit_ms);
            let one = Scheduled {
                point: &p.label,
                label: &s.label,
                config: &s.config,
                reduces: s.reduces,
                seed,
            };
            let (run, notes) = simulate(
                &one,
                &shape,
                &jobs,
                &bg,
                set.remote,
                limit_ms,
                set.opts.keep_outcomes,
            )
            .map_err(|e| {
                anyhow::Error::new(e)
                    .context(format!("simulating {} at {} seed {seed}", s.label, p.label))
            })?;
            out.runs.push(run);
            out.notes.extend(notes);
        }
    }
    Ok(())
}

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

/// `run`'s table, with the spec's path in the error.
pub fn run_file(path: &Path, calibration: &Path, opts: &TraceOptions) -> anyhow::Result<String> {
    run(path, calibration, opts)
        .map(|(t, _)| t)
        .with_context(|| format!("sim trace {}", path.display()))
}

#[cfg(test)]
mod tests;
