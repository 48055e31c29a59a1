//! The calibrated simulator's error against the cluster's size (`master
//! sim scale-error`): the runs of one workload family at growing worker
//! counts, each predicted by its own calibration (in sample) and by the
//! smallest size's (held out by scale), per-job errors pooled per size, fit
//! and remote-read model. `ctl` opens the folders, calibrates them and
//! writes the study; the errors, the cells and the summary's tables are
//! computed here.

use crate::calibration::{
    error_spread, median_range, ErrorSpread, PredictedJob, Prediction, MODELS,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// One size of the family: a results folder's experiment, its workers and
/// its runs.
#[derive(Clone, Debug)]
pub struct Size {
    /// The folder, as the summary names it.
    pub dir: String,
    /// Its experiment's name (`scale-dyndl-32`).
    pub name: String,
    pub workers: u32,
    pub runs: Vec<SizeRun>,
}

/// What the study reads of one run of a size.
#[derive(Clone, Debug)]
pub struct SizeRun {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    /// The run finished (`status` ok).
    pub ok: bool,
    pub host_cpu_pct: f64,
}

/// The family's name: the largest (last) size's experiment without its
/// trailing `-<workers>` (scale-dyndl-32 -> scale-dyndl). The last, not the
/// first: two families may share their calibrated base (scale-dyndl-8 under
/// scale-dyndl-16/32 and under scale-dyndl-onefile-16/32).
pub fn family(sizes: &[Size]) -> String {
    let Some(last) = sizes.last() else {
        return String::new();
    };
    last.name
        .strip_suffix(&format!("-{}", last.workers))
        .unwrap_or(&last.name)
        .to_owned()
}

/// One run's errors under one fit and one model.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorRow {
    pub workers: u32,
    /// `in-sample` or `from-<workers>` (the first folder's models).
    pub fit: String,
    pub model: String,
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub jobs: usize,
    /// |predicted / measured JCT - 1| over the run's jobs.
    pub per_job_mean: f64,
    pub per_job_median: f64,
    pub per_job_p90: f64,
    /// predicted / measured - 1 of the run's mean JCT and makespan.
    pub mean_jct_err: f64,
    pub makespan_err: f64,
    pub remote_measured: u32,
    pub remote_predicted: u32,
    pub host_cpu_pct: f64,
    /// Left out of the figures: the host was saturated.
    pub saturated: bool,
    /// The run's jobs' (measured, predicted) JCTs, for the pooled figures.
    #[serde(skip)]
    pub pairs: Vec<(f64, f64)>,
}

/// Each successful run's errors under each model of one calibration
/// (its `predictions.csv` and `predicted-jobs.csv` rows), labelled `fit`;
/// a run whose host CPU reached `saturated_pct` is marked saturated.
pub fn errors(
    size: &Size,
    fit: &str,
    preds: &[Prediction],
    jobs: &[PredictedJob],
    saturated_pct: f64,
) -> Vec<ErrorRow> {
    // (point, scheduler, rep, model) -> the run's jobs' (measured, predicted).
    type Run<'a> = (&'a str, &'a str, u32, &'a str);
    let mut by_run: BTreeMap<Run, Vec<(f64, f64)>> = BTreeMap::new();
    for j in jobs {
        by_run
            .entry((&j.point, &j.scheduler, j.rep, &j.model))
            .or_default()
            .push((j.measured_jct_s, j.predicted_jct_s));
    }
    let mut rows = Vec::new();
    for p in preds {
        let Some(pairs) = by_run.get(&(
            p.point.as_str(),
            p.scheduler.as_str(),
            p.rep,
            p.model.as_str(),
        )) else {
            continue;
        };
        let Some(e) = error_spread(pairs.iter().copied()) else {
            continue;
        };
        let cpu = size
            .runs
            .iter()
            .find(|r| (&r.point, &r.scheduler, r.rep) == (&p.point, &p.scheduler, p.rep))
            .map_or(f64::NAN, |r| r.host_cpu_pct);
        rows.push(ErrorRow {
            workers: size.workers,
            fit: fit.to_owned(),
            model: p.model.clone(),
            point: p.point.clone(),
            scheduler: p.scheduler.clone(),
            rep: p.rep,
            jobs: e.jobs,
            per_job_mean: e.mean,
            per_job_median: e.median,
            per_job_p90: e.p90,
            mean_jct_err: p.predicted_mean_jct_s / p.measured_mean_jct_s - 1.0,
            makespan_err: p.predicted_makespan_s / p.measured_makespan_s - 1.0,
            remote_measured: p.measured_remote,
            remote_predicted: p.predicted_remote,
            host_cpu_pct: cpu,
            saturated: cpu >= saturated_pct,
            pairs: pairs.clone(),
        });
    }
    rows
}

/// The counted runs of one worker count, fit and model.
pub fn cell<'a>(rows: &'a [ErrorRow], workers: u32, fit: &str, model: &str) -> Vec<&'a ErrorRow> {
    rows.iter()
        .filter(|r| r.workers == workers && r.fit == fit && r.model == model && !r.saturated)
        .collect()
}

/// The per-job error pooled over a cell's runs: every job of every run.
pub fn pooled(runs: &[&ErrorRow]) -> Option<ErrorSpread> {
    error_spread(runs.iter().flat_map(|r| r.pairs.iter().copied()))
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.0}%", x * 100.0)
    } else {
        "-".into()
    }
}

fn signed(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.0}%", x * 100.0)
    } else {
        "-".into()
    }
}

/// The study's `summary.md`: the host's CPU per size, then every fit's
/// table, then the held-out fits per scheduler; `base` is the calibrated
/// folder, `from` the held-out fit's label.
pub fn summary(
    folders: &[Size],
    base: &str,
    rows: &[ErrorRow],
    from: &str,
    saturated_pct: f64,
) -> String {
    let first = &folders[0];
    let mut schedulers: Vec<&str> = Vec::new();
    for r in rows {
        if !schedulers.contains(&r.scheduler.as_str()) {
            schedulers.push(&r.scheduler);
        }
    }
    let mut s = format!(
        "# The simulator's error against scale: {}\n\n`master sim scale-error` on {}. The simulator is calibrated on the \
         {}-worker runs (`{}`) and predicts every folder twice: `{from}` (the {}-worker models, none of the larger \
         folders' runs fitted on: held out by scale) and `in-sample` (each folder's own fit, which separates a \
         term the simulator misses from a parameter that changes with scale), each also with the host term \
         (`+host`: a map's overhead grows with the maps launched on the testbed's shared host in the second \
         before it, `master sim calibrate --host-term`). Per run: the per-job error \
         |predicted / measured JCT - 1| over its jobs (median, 90th percentile), the error of its mean JCT and \
         makespan (predicted / measured - 1) and its remote maps. Each cell pools every job of every counted run \
         (jobs), with the per-run medians' range over seeds and schedulers in brackets. Runs with the host's CPU \
         at {saturated_pct:.0}% or more are left out.\n\n",
        family(folders),
        folders
            .iter()
            .map(|f| format!("`{}` ({} workers)", f.dir, f.workers))
            .collect::<Vec<_>>()
            .join(", "),
        first.workers,
        base,
        first.workers,
    );
    s += "## Host CPU\n\n| workers | runs | host CPU % (median, max) | left out (saturated) |\n|---|---|---|---|\n";
    for f in folders {
        let cpu: Vec<f64> = f
            .runs
            .iter()
            .filter(|r| r.ok)
            .map(|r| r.host_cpu_pct)
            .collect();
        let (med, _, max) = median_range(cpu.clone());
        let left = cpu.iter().filter(|c| **c >= saturated_pct).count();
        s += &format!(
            "| {} | {} | {med:.0}, {max:.0} | {left} |\n",
            f.workers,
            cpu.len()
        );
    }
    let from_host = format!("{from}+host");
    for fit in [from, "in-sample", from_host.as_str(), "in-sample+host"] {
        s += &format!(
            "\n## {fit}\n\n| workers | model | runs | jobs | per-job median (per-run range) | per-job p90 | per-job mean | mean JCT err (range) | makespan err (range) | remote maps: measured / predicted (mean per run) |\n|---|---|---|---|---|---|---|---|---|---|\n"
        );
        for f in folders {
            for model in MODELS {
                let c = cell(rows, f.workers, fit, model);
                if c.is_empty() {
                    continue;
                }
                let e = pooled(&c);
                let med = median_range(c.iter().map(|r| r.per_job_median).collect());
                let jct = median_range(c.iter().map(|r| r.mean_jct_err).collect());
                let mk = median_range(c.iter().map(|r| r.makespan_err).collect());
                let n = c.len() as f64;
                let rm = c.iter().map(|r| f64::from(r.remote_measured)).sum::<f64>() / n;
                let rp = c.iter().map(|r| f64::from(r.remote_predicted)).sum::<f64>() / n;
                s += &format!(
                    "| {} | {model} | {} | {} | {} ({}-{}) | {} | {} | {} ({} to {}) | {} ({} to {}) | {rm:.1} / {rp:.1} |\n",
                    f.workers,
                    c.len(),
                    e.map_or(0, |e| e.jobs),
                    pct(e.map_or(f64::NAN, |e| e.median)),
                    pct(med.1),
                    pct(med.2),
                    pct(e.map_or(f64::NAN, |e| e.p90)),
                    pct(e.map_or(f64::NAN, |e| e.mean)),
                    signed(jct.0),
                    signed(jct.1),
                    signed(jct.2),
                    signed(mk.0),
                    signed(mk.1),
                    signed(mk.2),
                );
            }
        }
    }
    // Per scheduler, held out by scale: does one policy's error grow?
    for fit in [from, from_host.as_str()] {
        s += &format!(
        "\n## {fit}, per scheduler\n\nPer-job median / p90 pooled over the scheduler's counted runs, per model (source+reader / reader-only / fair-share).\n\n| scheduler | {} |\n|---|{}\n",
        folders
            .iter()
            .map(|f| format!("{} workers", f.workers))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(folders.len())
    );
        for sc in &schedulers {
            s += &format!("| {sc} |");
            for f in folders {
                let cells: Vec<String> = MODELS
                    .iter()
                    .map(|model| {
                        let c: Vec<&ErrorRow> = cell(rows, f.workers, fit, model)
                            .into_iter()
                            .filter(|r| r.scheduler == *sc)
                            .collect();
                        pooled(&c).map_or("-".into(), |e| {
                            format!("{} / {}", pct(e.median), pct(e.p90))
                        })
                    })
                    .collect();
                s += &format!(" {} |", cells.join(", "));
            }
            s += "\n";
        }
    }
    s
}

/// One bar of the study's plots: the error pooled over every job of the
/// counted runs of a size, fit and model (the 90th percentile with `p90`,
/// else the median), and the per-run values' range over seeds and
/// schedulers; none without a counted run.
pub fn bar(
    rows: &[ErrorRow],
    workers: u32,
    fit: &str,
    model: &str,
    p90: bool,
) -> Option<(f64, f64, f64)> {
    let runs = cell(rows, workers, fit, model);
    let e = pooled(&runs)?;
    let v: Vec<f64> = runs
        .iter()
        .map(|r| if p90 { r.per_job_p90 } else { r.per_job_median })
        .collect();
    let (_, lo, hi) = median_range(v);
    Some((if p90 { e.p90 } else { e.median }, lo, hi))
}
