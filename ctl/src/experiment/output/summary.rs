//! A runner folder's `summary.md`: the cluster and spec, a table per
//! point, the runs' notes, the paired differences.

use super::*;

/// `v / max`, EAS's normalisation to [0, 1]; NaN without a positive max.
pub(super) fn normalised(v: f64, max: f64) -> f64 {
    if max > 0.0 {
        v / max
    } else {
        f64::NAN
    }
}

/// `mean (min-max)` when several runs made the mean, else the mean.
pub(super) fn fs(v: f64, spread: (f64, f64), runs: u32, digits: usize) -> String {
    if runs > 1 && spread.0.is_finite() {
        format!(
            "{} ({}-{})",
            f(v, digits),
            f(spread.0, digits),
            f(spread.1, digits)
        )
    } else {
        f(v, digits)
    }
}

pub(super) fn f(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// The text of `summary.md`; `failed_logs`: the folder keeps failed runs'
/// node logs in `failed-runs/`.
pub fn summary(
    spec: &Spec,
    schedulers: &[NamedScheduler],
    points: &[Point],
    runs: &[RunRecord],
    failed_logs: bool,
) -> String {
    let cells = cells(runs);
    let mut s = format!("# {}\n\n{}\n\n", spec.name, spec.description.trim());
    s += &format!(
        "Cluster: {} workers x {} slots, replication {}, NIC {}, compute pacing {}, disk {}, \
         background {}, heartbeat {} ms{}, task compute {}, placement {}, reduces {}. \
         Repetitions: {}, seed {} (+ repetition). Means over the successful repetitions, \
         with (min-max) over them where there are several; flowtime is the sum of the jobs' \
         JCTs and makespan the time until every job completed (DynDL's \"total job completion \
         time\" is read as the mean JCT; see EXPERIMENTS.md); slowdown = mean JCT / {}'s at the \
         same point.\n\n",
        spec.cluster.workers,
        spec.cluster.slots,
        spec.cluster.replication,
        spec.cluster
            .nic_mbps
            .map_or("unlimited".into(), |m| format!("{m} Mbit/s")),
        spec.cluster
            .slot_rate_mbs
            .map_or("off".into(), |m| format!("{m} MB/s per slot")),
        spec.cluster
            .disk_mbs
            .map_or("none".into(), |m| format!("{m} MB/s per worker")),
        spec.background.as_ref().map_or("none".into(), |b| format!(
            "U[{}, {}] s, {:.0}% of slots at start, {}/min after",
            b.duration_s[0],
            b.duration_s[1],
            b.initial * 100.0,
            b.per_minute
        )),
        spec.cluster.heartbeat_ms,
        if spec.cluster.out_of_band_heartbeat {
            " + out-of-band"
        } else {
            " (no out-of-band)"
        },
        spec.jobs
            .task_time_s
            .map_or("none".into(), |[a, b]| format!("U[{a}, {b}] s per map")),
        spec.data.placement.name(),
        spec.cluster.reduce_placement.name(),
        spec.repetitions,
        spec.seed,
        schedulers[0].label,
    );
    if !spec.notes.trim().is_empty() {
        s += &format!("{}\n\n", spec.notes.trim());
    }
    for p in points {
        s += &point_heading(spec, p);
        s += &point_table(p, schedulers, &cells);
    }
    s += &run_notes(runs, failed_logs);
    let samples: Vec<crate::experiment::paired::Sample> = runs
        .iter()
        .filter(|r| r.status == "ok")
        .map(|r| crate::experiment::paired::Sample {
            point: &r.point,
            scheduler: &r.scheduler,
            seed: r.seed,
            values: [r.mean_jct_s, r.makespan_s],
        })
        .collect();
    s += &crate::experiment::paired::section(
        &points.iter().map(|p| p.label.clone()).collect::<Vec<_>>(),
        &schedulers
            .iter()
            .map(|x| x.label.clone())
            .collect::<Vec<_>>(),
        &samples,
    );
    let whiskers = if cells.values().any(|c| c.runs as usize >= INTERVAL_FROM) {
        "whiskers: min-max over repetitions, or the mean's Student-t 95% interval where a bar rests on 5 or more"
    } else {
        "whiskers: min-max over repetitions"
    };
    s += &format!(
        "Files: `runs.csv` (one row a run), `tasks.csv` (every task attempt), `plots/` ({whiskers}), \
         `timelines/` (per run: a Gantt chart of every slot above each worker's NIC rates), `nic.csv` and `background.csv` \
         (the timelines' data), `meta.json` (spec, seeds, commit, machine).\n"
    );
    s
}

/// A point's heading in `summary.md`: its jobs, data, block size,
/// replication and what it changes of the cluster's settings.
pub(super) fn point_heading(spec: &Spec, p: &Point) -> String {
    let mut s = String::new();
    let trace = spec.trace_plan(p.block_bytes).ok().flatten();
    let data = if let (Some(plan), Some(t)) = (trace, &spec.trace) {
        format!(
            "SWIM {} of {}: {} jobs ({} map-only, {} left out without input), {} maps over {} files, {:.1} MB stored, bytes x {}, time / {}; {}",
            t.hours_label(),
            t.file.display(),
            plan.jobs.len(),
            plan.jobs
                .iter()
                .filter(|j| j.workload == workloads::Workload::InputSink)
                .count(),
            plan.no_input,
            plan.maps(),
            plan.files.len(),
            plan.stored_bytes() as f64 / 1e6,
            t.bytes_scale,
            t.time_scale,
            match t.shuffle {
                lab::swim::TraceShuffle::Trace => format!(
                    "jobs with shuffle are synthetic jobs moving the trace's {:.1} MB of shuffle and writing its {:.1} MB of output",
                    plan.jobs.iter().map(|j| j.shuffle_bytes).sum::<u64>() as f64 / 1e6,
                    plan.jobs
                        .iter()
                        .filter(|j| j.ratios.is_some())
                        .map(|j| j.output_bytes)
                        .sum::<u64>() as f64
                        / 1e6
                ),
                lab::swim::TraceShuffle::Wordcount => {
                    "jobs with shuffle run wordcount (their shuffle follows their input, not the trace)".to_owned()
                }
            }
        )
    } else if spec.jobs.mix.is_empty() {
        format!("{} files x {} blocks", p.files, p.blocks)
    } else {
        let mix: Vec<String> = spec
            .jobs
            .mix
            .iter()
            .map(|c| {
                let r = c.reduces.map_or("default".into(), |r| r.to_string());
                format!("{} x {} {}/{r}", c.count, c.workload, c.maps)
            })
            .collect();
        format!("one file per job ({}, maps/reduces)", mix.join(", "))
    };
    let background = match (&p.background, &spec.background) {
        (Some(b), Some(base)) if b.duration_s != base.duration_s => {
            format!(", background U[{}, {}] s", b.duration_s[0], b.duration_s[1])
        }
        _ => String::new(),
    };
    let disk = if p.disk_mbs != spec.cluster.disk_mbs {
        p.disk_mbs
            .map_or(", no disk".into(), |d| format!(", disk {d} MB/s"))
    } else {
        String::new()
    };
    let heartbeat = if p.heartbeat_ms != spec.cluster.heartbeat_ms
        || p.out_of_band_heartbeat != spec.cluster.out_of_band_heartbeat
    {
        format!(
            ", heartbeat {} ms{}",
            p.heartbeat_ms,
            if p.out_of_band_heartbeat {
                " + out-of-band"
            } else {
                ", no out-of-band"
            }
        )
    } else {
        String::new()
    };
    s += &format!(
        "## {}: {} jobs, {data}, blocks of {:.2} MB, replication {}{background}{heartbeat}{disk}\n\n",
        p.label,
        p.jobs,
        p.block_bytes as f64 / 1e6,
        p.replication
    );
    s
}

/// A point's table in `summary.md`: a row per scheduler, the slowdown
/// against the first, EAS's load balance normalised by the point's maximum.
pub(super) fn point_table(
    p: &Point,
    schedulers: &[NamedScheduler],
    cells: &BTreeMap<(String, String), Cell>,
) -> String {
    let mut s = String::new();
    s += "| scheduler | runs | mean JCT (s) | p95 JCT (s) | makespan (s) | data-local | data-remote | locality % | remote MB | slowdown | flowtime (s) | map MB/s | reduce MB/s | load balance | map MB/s (EAS eq. 3) | reduce MB/s (EAS eq. 4) | load balance (EAS 5.4) | load balance (5.4, reader) |\n";
    s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    let base = cells
        .get(&(p.label.clone(), schedulers[0].label.clone()))
        .map(|c| c.mean_jct_s)
        .unwrap_or(f64::NAN);
    // EAS normalises the load-balance value to [0, 1]: by the point's maximum.
    let lb_max = schedulers
        .iter()
        .filter_map(|sc| cells.get(&(p.label.clone(), sc.label.clone())))
        .map(|c| c.load_balance)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let lbs_max = schedulers
        .iter()
        .filter_map(|sc| cells.get(&(p.label.clone(), sc.label.clone())))
        .map(|c| c.load_balance_sampled)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let lbr_max = schedulers
        .iter()
        .filter_map(|sc| cells.get(&(p.label.clone(), sc.label.clone())))
        .map(|c| c.load_balance_sampled_reader)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    for sc in schedulers {
        let Some(c) = cells.get(&(p.label.clone(), sc.label.clone())) else {
            continue;
        };
        let runs = if c.failed > 0 {
            format!("{} ({} failed)", c.runs, c.failed)
        } else {
            c.runs.to_string()
        };
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            sc.label,
            runs,
            fs(c.mean_jct_s, c.spread.mean_jct_s, c.runs, 2),
            f(c.p95_jct_s, 2),
            fs(c.makespan_s, c.spread.makespan_s, c.runs, 2),
            f(c.data_local, 1),
            fs(c.data_remote, c.spread.data_remote, c.runs, 1),
            f(c.locality_pct, 1),
            f(c.remote_mb, 1),
            f(c.mean_jct_s / base, 2),
            fs(c.total_jct_s, c.spread.total_jct_s, c.runs, 1),
            f(c.map_tp, 1),
            f(c.reduce_tp, 1),
            f(normalised(c.load_balance, lb_max), 2),
            f(c.map_tp_machines, 1),
            f(c.reduce_tp_machines, 1),
            f(normalised(c.load_balance_sampled, lbs_max), 2),
            f(normalised(c.load_balance_sampled_reader, lbr_max), 2),
        );
    }
    s += "\n";
    s
}

/// The failed runs, the host's CPU and the rechecked decision records, as
/// `summary.md` ends.
pub(super) fn run_notes(runs: &[RunRecord], failed_logs: bool) -> String {
    let mut s = String::new();
    let failures: Vec<&RunRecord> = runs.iter().filter(|r| r.status != "ok").collect();
    if !failures.is_empty() {
        s += "## Failed runs\n\n";
        for r in failures {
            s += &format!("- {} rep {} {}: {}\n", r.point, r.rep, r.scheduler, r.error);
        }
        s += if failed_logs {
            "\nThe nodes' logs of a failed run that started a cluster are in `failed-runs/<point>-<scheduler>-r<rep>/`.\n\n"
        } else {
            "\n"
        };
    }
    let cpu: Vec<f64> = runs
        .iter()
        .map(|r| r.host_cpu_pct)
        .filter(|c| c.is_finite())
        .collect();
    if !cpu.is_empty() {
        let saturated: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.host_cpu_pct >= SATURATED_CPU_PCT)
            .collect();
        s += &format!(
            "Host CPU use per run (`host_cpu_pct` in runs.csv, % of all cores): {:.0}-{:.0}%; {} of {} runs at or above {SATURATED_CPU_PCT:.0}% (saturated: the host, not the scheduler, may have set their times){}\n\n",
            cpu.iter().copied().fold(f64::INFINITY, f64::min),
            cpu.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            saturated.len(),
            cpu.len(),
            if saturated.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    saturated
                        .iter()
                        .map(|r| format!("{} rep {} {}", r.point, r.rep, r.scheduler))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
    }
    let rechecked: Vec<&RunRecord> = runs.iter().filter(|r| !r.rechecked.is_empty()).collect();
    if !rechecked.is_empty() {
        let differ: Vec<String> = rechecked
            .iter()
            .filter(|r| r.rechecked != "same")
            .map(|r| format!("{} rep {} {}: {}", r.point, r.rep, r.scheduler, r.rechecked))
            .collect();
        s += &format!(
            "Decision records run again through each run's policy from their inputs (`rechecked` in runs.csv; `decisions/*.record.json.gz`, `master sim recheck FILE`): {} of {} runs decided the same, row for row{}\n\n",
            rechecked.len() - differ.len(),
            rechecked.len(),
            if differ.is_empty() {
                ".".to_owned()
            } else {
                format!(". Differing:\n\n- {}", differ.join("\n- "))
            }
        );
    }
    s
}
