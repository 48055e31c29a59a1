//! The markdown table `master sim trace` prints: what was simulated (the
//! trace's hour or the spec's jobs, the cluster, the calibrated terms) and
//! one row per point and scheduler, mean (min-max) over the seeds.

use super::{Runs, Setting, Shape, TraceRun};
use crate::experiment::qos::spread;
use crate::experiment::spec::{NamedScheduler, Point};
use common::placement::Placement;
use lab::replay::RemoteModel;

/// The table of a call's runs.
pub(super) fn write(
    set: &Setting,
    first: &Point,
    shape: &Shape,
    schedulers: &[NamedScheduler],
    out: &Runs,
) -> anyhow::Result<String> {
    let (spec, model, calibration, remote) = (set.spec, set.model, set.calibration, set.remote);
    let source = source(set, first)?;
    let mut table = format!(
        "# {} in the simulator\n\n{source}; {} workers{} x {} slots, replication {}, heartbeat {} ms{}; \
         blocks placed {} per seed{}. Calibrated on `{}` (point {}{}): a map = {} + {} ms; a remote read adds {}; \
         a reduce {}. Mean (min-max) over {} seeds.\n\n\
         | point | jobs | maps | scheduler | mean JCT (s) | makespan (s) | remote maps | backups (won) | simulation (s) |\n|---|---|---|---|---|---|---|---|---|\n",
        spec.name,
        shape.workers,
        if shape.reduce_workers > 0 {
            format!(
                " ({} map + {} reduce)",
                shape.workers - shape.reduce_workers,
                shape.reduce_workers
            )
        } else {
            String::new()
        },
        shape.slots,
        shape.replication,
        shape.heartbeat_ms,
        if shape.out_of_band {
            ", out of band"
        } else {
            ""
        },
        match shape.placement {
            Placement::Random => "at random",
            Placement::Even => "evenly over the map workers",
        },
        {
            let mut s = String::new();
            if let Some(slow) = shape.slow {
                s += &format!(
                    "; {:.0} workers ({}%), drawn per seed, run every task {}x longer",
                    (slow.fraction * f64::from(shape.workers)).round(),
                    slow.fraction * 100.0,
                    slow.factor
                );
            }
            if shape.speculation.enabled {
                s += "; speculative execution on (the spec's `[cluster.speculation]`)";
            }
            s
        },
        calibration.display(),
        model.point,
        made_at(calibration),
        match (shape.slot_rate_mbs, shape.task_time_s) {
            (Some(r), _) => format!("its block at {r} MB/s"),
            (None, Some(_)) => "its drawn compute".to_owned(),
            (None, None) => "no pacing".to_owned(),
        },
        model.overhead_ms,
        match remote {
            RemoteModel::FairShare { transfer_ms, .. } => format!(
                "a transfer of {transfer_ms:.0} ms alone{}, sharing its source's and its reader's links fairly with the other transfers (fair-share), then its compute",
                if model.ref_bytes > 0 {
                    format!(" per {} bytes", model.ref_bytes)
                } else {
                    String::new()
                }
            ),
            RemoteModel::Static(c) => format!("{} ms", c.formula()),
        },
        reduce_text(shape, model),
        spec.repetitions,
    );
    for (label, jobs, maps) in &out.maps_of {
        for s in schedulers {
            table += &row(label, *jobs, *maps, &s.label, &out.runs);
        }
    }
    if !out.notes.is_empty() {
        table += "\n";
        for n in &out.notes {
            table += &format!("- {n}\n");
        }
    }
    Ok(table)
}

/// ", made at <commit>" from the calibration folder's meta.json
/// (`provenance.git_commit`, the first 8 digits; "with uncommitted
/// changes" where `git_dirty`), or nothing where it does not say.
fn made_at(calibration: &std::path::Path) -> String {
    let meta = std::fs::read_to_string(calibration.join("meta.json")).ok();
    let meta: Option<serde_json::Value> = meta.and_then(|t| serde_json::from_str(&t).ok());
    let Some(p) = meta.as_ref().and_then(|m| m.get("provenance")) else {
        return String::new();
    };
    let Some(commit) = p.get("git_commit").and_then(|c| c.as_str()) else {
        return String::new();
    };
    let dirty = p.get("git_dirty").and_then(|d| d.as_bool()) == Some(true);
    format!(
        ", made at {}{}",
        commit.get(..8).unwrap_or(commit),
        if dirty {
            " with uncommitted changes"
        } else {
            ""
        }
    )
}

#[cfg(test)]
#[test]
fn a_calibrations_commit_is_read_from_its_meta() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(made_at(dir.path()), "", "no meta.json: nothing said");
    let meta = |v: &str| std::fs::write(dir.path().join("meta.json"), v).unwrap();
    meta(r#"{"provenance": {"git_commit": "a03b08493063c6e3", "git_dirty": false}}"#);
    assert_eq!(made_at(dir.path()), ", made at a03b0849");
    meta(r#"{"provenance": {"git_commit": "a03b08493063c6e3", "git_dirty": true}}"#);
    assert_eq!(
        made_at(dir.path()),
        ", made at a03b0849 with uncommitted changes"
    );
    meta(r#"{"models": []}"#);
    assert_eq!(made_at(dir.path()), "");
}

/// One point and scheduler's row: mean (min-max) over its seeds.
fn row(label: &str, jobs: u32, maps: u64, scheduler: &str, runs: &[TraceRun]) -> String {
    let mine: Vec<&TraceRun> = runs
        .iter()
        .filter(|r| r.scheduler == scheduler && r.point == label)
        .collect();
    let col = |f: fn(&TraceRun) -> f64| mine.iter().map(|r| f(r)).collect::<Vec<f64>>();
    format!(
        "| {label} | {jobs} | {maps} | {scheduler} | {} | {} | {} | {} ({}) | {} |\n",
        spread(&col(|r| r.mean_jct_s), 2),
        spread(&col(|r| r.makespan_s), 1),
        spread(&col(|r| r.remote as f64), 0),
        spread(&col(|r| f64::from(r.backups)), 0),
        spread(&col(|r| f64::from(r.backups_won)), 0),
        spread(&col(|r| r.wall_s), 2),
    )
}

/// What was simulated: the trace's hour, or the spec's jobs, mix and
/// background.
fn source(set: &Setting, first: &Point) -> anyhow::Result<String> {
    let (spec, model, path) = (set.spec, set.model, set.path);
    Ok(match &spec.trace {
        Some(t) => {
            let plan = spec
                .trace_plan(first.block_bytes)
                .map_err(|e| e.in_file(path))?
                .expect("a [trace] spec has a plan");
            format!(
                "SWIM {} of `{}` (bytes x {}, time / {}): {} jobs, {} maps, {} files",
                t.hours_label(),
                t.file.display(),
                t.bytes_scale,
                t.time_scale,
                plan.jobs.len(),
                plan.maps(),
                plan.files.len()
            )
        }
        None => {
            let mut s = if spec.jobs.mix.is_empty() {
                format!(
                    "the spec's {} jobs: per point `files` files of `blocks` blocks, job i reading file i mod `files`, arrivals drawn in [{}, {}] s",
                    spec.jobs.workload().name(),
                    spec.jobs.arrival_s[0],
                    spec.jobs.arrival_s[1]
                )
            } else {
                format!(
                    "the spec's job mix ({}), each job its own file, in the runner's seeded order, arrivals drawn in [{}, {}] s; a job's reduces share its input x the calibration's shuffle ratio ({})",
                    spec.jobs
                        .mix
                        .iter()
                        .map(|c| format!(
                            "{} x {} {}/{}",
                            c.count,
                            c.workload.name(),
                            c.maps,
                            c.reduces.unwrap_or(0)
                        ))
                        .collect::<Vec<_>>()
                        .join(", "),
                    spec.jobs.arrival_s[0],
                    spec.jobs.arrival_s[1],
                    model
                        .shuffle_ratio
                        .iter()
                        .map(|(w, r)| format!("{w} {r:.3}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            if let Some([a, b]) = spec.jobs.task_time_s {
                s += &format!(", each map computing U[{a}, {b}] s");
            }
            if let Some(bg) = &first.background {
                s += &format!(
                    "; background: {:.0}% of each worker's slots at start, {} more a minute, each U[{}, {}] s",
                    bg.initial * 100.0,
                    bg.per_minute,
                    bg.duration_s[0],
                    bg.duration_s[1]
                );
            }
            s
        }
    })
}

/// How the table's runs time a reduce.
fn reduce_text(shape: &Shape, model: &lab::trace::Model) -> String {
    match (shape.shuffle_net, model.reduce_typical_ms_per_mb) {
        (Some(n), Some(typical)) => format!(
            "lasts at least {:.0} + {typical:.0} ms per MB of its shuffle share (the typical reduce's), \
             or, where longer, its fetch from the workers that ran its job's maps and then its \
             output sent to {} more replica{} (on workers picked by the master's rule), over {:.0} \
             Mbit/s links shared with every transfer on them, data-remote maps' blocks included, \
             such a map ending no sooner than its block has crossed (the shuffle over the links)",
            model.reduce_base_ms,
            n.extra_copies,
            if n.extra_copies == 1 { "" } else { "s" },
            n.link_bpms * 8.0 / 1e3
        ),
        _ => format!(
            "{:.0} + {:.0} ms per MB of its shuffle share (the fitted term)",
            model.reduce_base_ms, model.reduce_ms_per_mb
        ),
    }
}
