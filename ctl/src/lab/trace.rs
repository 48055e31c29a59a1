//! `master sim trace <spec> --calibration <dir>`: a trace spec's hour
//! (`[trace]`) run in `sched::replay` instead of on a real cluster, at any
//! number of workers: the same policies, jobs, files and arrivals as the
//! experiment runner makes of the trace, with task times and the cost of a
//! remote read from a calibration of real runs (`master sim calibrate`).
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
use crate::experiment::qos::spread;
use crate::experiment::spec::Spec;
use crate::experiment::trace::TracePlan;
use anyhow::Context;
use common::{JobId, WorkerId};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched::replay::{self, RemoteCost, RemoteModel, ReplayCluster, ReplayJob, ReplayTask};
use std::path::Path;
use std::time::Instant;

/// The calibrated terms a trace run needs (one point of a calibration).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub point: String,
    pub overhead_ms: u64,
    pub remote: RemoteCost,
    pub reduce_base_ms: f64,
    pub reduce_ms_per_mb: f64,
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
            reduce_base_ms: num(m, "reduce_base_ms")?,
            reduce_ms_per_mb: num(m, "reduce_ms_per_mb")?,
        })
    }
}

/// The simulated cluster.
#[derive(Clone, Debug)]
pub struct Shape {
    pub workers: u32,
    pub slots: u32,
    pub replication: u32,
    pub heartbeat_ms: u64,
    pub out_of_band: bool,
    /// Compute pacing per slot, MB/s (none: maps take their overhead only).
    pub slot_rate_mbs: Option<f64>,
}

/// The trace's jobs as the replay takes them, for one seed: each file's
/// blocks on `replication` distinct workers, maps timed by pacing and the
/// model's overhead, reduces by the model's reduce fit.
pub fn replay_jobs(plan: &TracePlan, shape: &Shape, model: &Model, seed: u64) -> Vec<ReplayJob> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7ace);
    let copies = shape.replication.clamp(1, shape.workers.max(1)) as usize;
    let replicas: Vec<Vec<Vec<WorkerId>>> = plan
        .files
        .iter()
        .map(|f| {
            (0..f.blocks)
                .map(|_| {
                    sample(&mut rng, shape.workers as usize, copies)
                        .into_iter()
                        .map(|w| WorkerId(w as u32))
                        .collect()
                })
                .collect()
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
            let tasks = (0..f.blocks)
                .map(|b| ReplayTask {
                    index: b,
                    replicas: replicas[j.file][b as usize].clone(),
                    local_ms,
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
        runs_maps: Vec::new(),
        runs_reduces: Vec::new(),
        jitter_ms: 0,
        jitter_seed: seed,
        record_decisions: false,
    }
}

/// One simulated run.
#[derive(Clone, Debug)]
pub struct TraceRun {
    pub scheduler: String,
    pub seed: u64,
    pub mean_jct_s: f64,
    pub makespan_s: f64,
    pub remote: usize,
    pub maps: usize,
    /// Wall time of the simulation (s).
    pub wall_s: f64,
}

/// Every scheduler of the spec at `path`, each repetition's seed, on
/// `workers` x `slots` (default: the spec's); the table (markdown) and the
/// runs.
pub fn run(
    path: &Path,
    calibration: &Path,
    point: Option<&str>,
    workers: Option<u32>,
    slots: Option<u32>,
) -> anyhow::Result<(String, Vec<TraceRun>)> {
    let (spec, _) = Spec::load(path)?;
    let schedulers = spec.schedulers().map_err(|e| e.in_file(path))?;
    let points = spec.points().map_err(|e| e.in_file(path))?;
    let p = points.first().context("the spec has no point")?;
    let plan = spec
        .trace_plan(p.block_bytes)
        .map_err(|e| e.in_file(path))?
        .with_context(|| format!("{}: `sim trace` needs a `[trace]` section", path.display()))?;
    let model = Model::read(calibration, point)?;
    let shape = Shape {
        workers: workers.unwrap_or(spec.cluster.workers),
        slots: slots.unwrap_or(spec.cluster.slots),
        replication: p.replication,
        heartbeat_ms: p.heartbeat_ms,
        out_of_band: p.out_of_band_heartbeat,
        slot_rate_mbs: p.slot_rate_mbs,
    };
    if shape.workers == 0 || shape.slots == 0 {
        anyhow::bail!("--workers and --slots must be at least 1");
    }
    let limit_ms = (spec.timeout_s * 1000.0) as u64;
    let mut runs = Vec::new();
    for s in &schedulers {
        for rep in 0..spec.repetitions {
            let seed = spec.seed + u64::from(rep);
            let jobs = replay_jobs(&plan, &shape, &model, seed);
            let mut policy = sched::build(&s.config, seed);
            let mut placer = sched::ReducePlacer::new(s.reduces, &s.config);
            let t0 = Instant::now();
            let out = replay::replay(
                policy.as_mut(),
                &mut placer,
                &cluster(&shape, seed),
                &jobs,
                &[],
                RemoteModel::Static(model.remote),
                limit_ms,
            )
            .with_context(|| format!("simulating {} seed {seed}", s.label))?;
            runs.push(TraceRun {
                scheduler: s.label.clone(),
                seed,
                mean_jct_s: out.mean_jct_s(),
                makespan_s: out.makespan_s(),
                remote: out.remote_tasks(),
                maps: out.runs.iter().filter(|r| !r.reduce).count(),
                wall_s: t0.elapsed().as_secs_f64(),
            });
        }
    }
    let t = spec.trace.as_ref().expect("checked by trace_plan");
    let mut table = format!(
        "# {} in the simulator\n\nSWIM hour {} of `{}` (bytes x {}, time / {}): {} jobs, {} maps, \
         {} files; {} workers x {} slots, replication {}, heartbeat {} ms{}. Calibrated on `{}` \
         (point {}): a map = its block at {} + {} ms; a remote read adds {} ms; a reduce {:.0} + {:.0} ms per MB of its shuffle share. Mean \
         (min-max) over {} seeds.\n\n\
         | scheduler | mean JCT (s) | makespan (s) | remote maps | simulation (s) |\n|---|---|---|---|---|\n",
        spec.name,
        t.hour,
        t.file.display(),
        t.bytes_scale,
        t.time_scale,
        plan.jobs.len(),
        plan.maps(),
        plan.files.len(),
        shape.workers,
        shape.slots,
        shape.replication,
        shape.heartbeat_ms,
        if shape.out_of_band {
            ", out of band"
        } else {
            ""
        },
        calibration.display(),
        model.point,
        shape
            .slot_rate_mbs
            .map_or("no pacing".to_owned(), |r| format!("{r} MB/s")),
        model.overhead_ms,
        model.remote.formula(),
        model.reduce_base_ms,
        model.reduce_ms_per_mb,
        spec.repetitions,
    );
    for s in &schedulers {
        let mine: Vec<&TraceRun> = runs.iter().filter(|r| r.scheduler == s.label).collect();
        let col = |f: fn(&TraceRun) -> f64| mine.iter().map(|r| f(r)).collect::<Vec<f64>>();
        table += &format!(
            "| {} | {} | {} | {} | {} |\n",
            s.label,
            spread(&col(|r| r.mean_jct_s), 2),
            spread(&col(|r| r.makespan_s), 1),
            spread(&col(|r| r.remote as f64), 0),
            spread(&col(|r| r.wall_s), 2),
        );
    }
    Ok((table, runs))
}

/// `run`, with the spec's path in the error.
pub fn run_file(
    path: &Path,
    calibration: &Path,
    point: Option<&str>,
    workers: Option<u32>,
    slots: Option<u32>,
) -> anyhow::Result<String> {
    run(path, calibration, point, workers, slots)
        .map(|(t, _)| t)
        .with_context(|| format!("sim trace {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::trace::{TraceFile, TraceJob};
    use workloads::Workload;

    fn model() -> Model {
        Model {
            point: "default".into(),
            overhead_ms: 100,
            remote: RemoteCost {
                base_ms: 50.0,
                per_mb_ms: 1000.0,
                ..Default::default()
            },
            reduce_base_ms: 10.0,
            reduce_ms_per_mb: 2000.0,
        }
    }

    fn plan() -> TracePlan {
        let job = |file: usize, at: u64, reduces: Option<u32>, shuffle: u64| TraceJob {
            id: format!("job{at}"),
            arrival_ms: at,
            workload: Workload::InputSink,
            file,
            reduces,
            shuffle_bytes: shuffle,
        };
        TracePlan {
            files: vec![
                TraceFile {
                    path: "a".into(),
                    blocks: 3,
                    block_bytes: 1_000_000,
                },
                TraceFile {
                    path: "b".into(),
                    blocks: 1,
                    block_bytes: 4096,
                },
            ],
            jobs: vec![
                job(0, 0, None, 0),
                job(1, 500, Some(2), 3_000_000),
                job(0, 900, None, 0),
            ],
            no_input: 0,
        }
    }

    fn shape(workers: u32) -> Shape {
        Shape {
            workers,
            slots: 2,
            replication: 2,
            heartbeat_ms: 100,
            out_of_band: false,
            slot_rate_mbs: Some(0.5),
        }
    }

    #[test]
    fn jobs_that_share_a_file_share_its_replicas_and_tasks_are_timed_by_the_model() {
        let jobs = replay_jobs(&plan(), &shape(10), &model(), 1);
        assert_eq!(jobs.len(), 3);
        // A 1 MB block at 0.5 MB/s: 2 s, plus the 100 ms overhead.
        assert!(jobs[0]
            .tasks
            .iter()
            .all(|t| t.local_ms == 2_100 && t.bytes == 1_000_000));
        for (a, b) in jobs[0].tasks.iter().zip(&jobs[2].tasks) {
            assert_eq!(a.replicas, b.replicas, "the same file, the same blocks");
            assert_eq!(a.replicas.len(), 2);
            assert_ne!(a.replicas[0], a.replicas[1], "replicas on distinct workers");
        }
        // Two reduces of 1.5 MB each: 10 + 2000 x 1.5 ms.
        let r = &jobs[1].reduces;
        assert_eq!(
            (r.len(), r[0].local_ms, jobs[1].reduce_load),
            (2, 3_010, 1_500_000)
        );
        assert_eq!(r[0].index, 1, "reduces are numbered after the maps");
        assert_eq!(jobs[1].arrival_ms, 500);
        // Another seed, other replicas; more replicas than workers: all.
        assert_ne!(
            replay_jobs(&plan(), &shape(10), &model(), 2)[0].tasks[0].replicas,
            jobs[0].tasks[0].replicas
        );
        assert_eq!(
            replay_jobs(&plan(), &shape(1), &model(), 1)[0].tasks[0].replicas,
            [WorkerId(0)]
        );
    }

    #[test]
    fn a_calibration_folder_gives_its_points_model() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("meta.json"),
            r#"{"models": [{"point": "p1", "overhead_mean_ms": 99.6, "reduce_base_ms": 1.0,
                "reduce_ms_per_mb": 2.0, "cost": {"base_ms": 3.0, "per_source_ms": 4.0,
                "per_reader_ms": 5.0, "per_mb_ms": 6.0, "rmse_ms": 0.0}},
               {"point": "p2", "overhead_mean_ms": 1.0, "reduce_base_ms": 1.0,
                "reduce_ms_per_mb": 2.0, "cost": {"base_ms": 3.0, "per_source_ms": 4.0,
                "per_reader_ms": 5.0, "rmse_ms": 0.0}}]}"#,
        )
        .unwrap();
        let m = Model::read(dir.path(), None).unwrap();
        assert_eq!(
            (m.point.as_str(), m.overhead_ms, m.remote.per_mb_ms),
            ("p1", 100, 6.0)
        );
        let m = Model::read(dir.path(), Some("p2")).unwrap();
        assert_eq!(
            m.remote.per_mb_ms, 0.0,
            "an older calibration: no per-MB term"
        );
        let e = Model::read(dir.path(), Some("p3")).unwrap_err().to_string();
        assert!(e.contains("no point p3 (points: p1, p2)"), "{e}");
        let e = Model::read(&dir.path().join("nope"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a `master sim calibrate` folder"), "{e}");
    }

    #[test]
    fn the_shipped_trace_spec_runs_at_a_larger_scale_with_its_calibration() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let cal = std::fs::read_dir(root.join("results/swim-hour"))
            .unwrap()
            .map(|e| e.unwrap().path().join("calibration"))
            .find(|p| p.join("meta.json").exists())
            .expect("a calibrated swim-hour folder is shipped");
        let (table, runs) = run(
            &root.join("experiments/swim-hour.toml"),
            &cal,
            None,
            Some(30),
            None,
        )
        .unwrap();
        // 5 schedulers x 3 seeds, every job of the hour run.
        assert_eq!(runs.len(), 15, "{table}");
        assert!(table.contains("30 workers x 2 slots"), "{table}");
        let maps = runs[0].maps;
        assert!(maps > 500 && runs.iter().all(|r| r.maps == maps), "{table}");
        assert!(runs
            .iter()
            .all(|r| r.mean_jct_s > 0.0 && r.makespan_s >= r.mean_jct_s));
        // Locality tells the policies apart: hadoop reads remote, delay
        // scheduling waits.
        let remote = |s: &str| {
            runs.iter()
                .filter(|r| r.scheduler == s)
                .map(|r| r.remote)
                .sum::<usize>()
        };
        assert!(remote("hadoop") > 3 * remote("delay1.5"), "{table}");
    }
}
