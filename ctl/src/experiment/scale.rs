//! `master sim scale-error DIR...`: the calibrated simulator's error
//! against the cluster's size.
//!
//! The DIRs are results folders of one workload family run at growing
//! worker counts (experiments/scale-dyndl-8/16/32.toml): the same load per
//! worker, the same points, the same schedulers. The first DIR (the fewest
//! workers) is calibrated on its own runs; every DIR is then predicted
//! twice, by its own calibration (in sample) and by the first's models
//! (held out by scale: `calibration-from-<first>`), and the per-job JCT
//! errors are set against the worker count; all of it once more with the
//! host term (`+host`: a map's overhead grows with the maps launched on the
//! shared host just before it, `calibrate::Options::host_term`). Runs whose host was saturated
//! (`host_cpu_pct` >= [`SATURATED_CPU_PCT`]) measured the host, not the
//! cluster: they are listed and left out of the figures.
//!
//! Writes `<results>/<family>-error/<stamp>/`: `error.csv` (per run, fit and
//! model), `summary.md`, `plots/` (per-job median and 90th percentile
//! against workers) and `meta.json`.

use super::calibrate::{self, error_spread, ErrorSpread, Fit, Options, PredictedJob, Prediction};
use super::output::{RunRecord, SATURATED_CPU_PCT};
use crate::results::plot::{charts, Bar, Chart};
use crate::results::{read_csv, Provenance, ResultsDir};
use anyhow::Context;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The remote-read models, as calibrate names them.
const MODELS: [&str; 3] = calibrate::MODELS;

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

/// One folder of the family: its results, workers and calibrations.
struct Folder {
    dir: PathBuf,
    name: String,
    workers: u32,
    runs: Vec<RunRecord>,
}

impl Folder {
    fn open(dir: &Path) -> anyhow::Result<Folder> {
        let (results, _, spec, _, _) = super::run::open_results(dir)?;
        Ok(Folder {
            dir: dir.to_owned(),
            name: spec.name.clone(),
            workers: spec.cluster.workers,
            runs: results.read_runs()?,
        })
    }
}

/// The family's name: the largest (last) folder's experiment without its
/// trailing `-<workers>` (scale-dyndl-32 -> scale-dyndl). The last, not the
/// first: two families may share their calibrated base (scale-dyndl-8 under
/// scale-dyndl-16/32 and under scale-dyndl-onefile-16/32).
fn family(folders: &[Folder]) -> String {
    let last = &folders[folders.len() - 1];
    last.name
        .strip_suffix(&format!("-{}", last.workers))
        .unwrap_or(&last.name)
        .to_owned()
}

/// Calibrates every folder (the first in sample, the others in sample and
/// from the first's models), writes the error folder under `results` and
/// returns it.
pub fn scale_error(dirs: &[PathBuf], results: &Path) -> anyhow::Result<PathBuf> {
    let mut prov = Provenance::capture(common::unix_ms());
    if dirs.len() < 2 {
        anyhow::bail!(
            "scale-error needs the folders of at least two cluster sizes (got {})",
            dirs.len()
        );
    }
    let folders: Vec<Folder> = dirs
        .iter()
        .map(|d| Folder::open(d))
        .collect::<anyhow::Result<_>>()?;
    let first = &folders[0];
    if let Some(f) = folders[1..].iter().find(|f| f.workers <= first.workers) {
        anyhow::bail!(
            "{}: {} workers, not more than the first folder's {} ({}): give the calibrated (smallest) cluster first",
            f.dir.display(),
            f.workers,
            first.workers,
            first.dir.display()
        );
    }
    let from_label = format!("from-{}", first.workers);
    let mut rows: Vec<ErrorRow> = Vec::new();
    // Without and with the host term (a map's overhead growing with the
    // maps launched on the shared host just before it).
    let mut bases = Vec::new();
    for host_term in [false, true] {
        let opts = |fit: Fit| Options {
            fit,
            jitter_ms: 0,
            host_term,
        };
        let suffix = if host_term { "+host" } else { "" };
        let base = calibrate::calibrate(&first.dir, &opts(Fit::InSample))?;
        for (i, f) in folders.iter().enumerate() {
            let own = if i == 0 {
                base.clone()
            } else {
                calibrate::calibrate(&f.dir, &opts(Fit::InSample))?
            };
            let from = if i == 0 {
                base.clone()
            } else {
                calibrate::calibrate(&f.dir, &opts(Fit::From(base.clone(), None)))?
            };
            for (fit, cal) in [("in-sample", &own), (from_label.as_str(), &from)] {
                rows.extend(errors(f, &format!("{fit}{suffix}"), cal)?);
            }
        }
        bases.push(base);
    }
    let base = bases[0].clone();
    let out = ResultsDir::create(
        results,
        &format!("{}-error", family(&folders)),
        prov.started_unix_ms,
    )?;
    out.write_csv("error.csv", &rows)?;
    let sizes: Vec<u32> = folders.iter().map(|f| f.workers).collect();
    let text = summary(&folders, &base, &rows, &from_label);
    out.write_summary(&text)?;
    plot(out.path(), &sizes, &rows, &from_label)?;
    prov.finish();
    out.write_meta(&serde_json::json!({
        "family": family(&folders),
        "folders": folders.iter().map(|f| f.dir.display().to_string()).collect::<Vec<_>>(),
        "workers": sizes,
        "calibrated_on": bases.iter().map(|b| b.display().to_string()).collect::<Vec<_>>(),
        "saturated_cpu_pct": SATURATED_CPU_PCT,
        "provenance": prov,
    }))?;
    Ok(out.path().to_owned())
}

/// Each successful run's errors under each model of one calibration.
fn errors(f: &Folder, fit: &str, cal: &Path) -> anyhow::Result<Vec<ErrorRow>> {
    let preds: Vec<Prediction> = read_csv(&cal.join("predictions.csv"))?;
    let jobs: Vec<PredictedJob> = read_csv(&cal.join("predicted-jobs.csv")).with_context(|| {
        format!(
            "{}: per-job errors need the folder's jobs.csv",
            f.dir.display()
        )
    })?;
    // (point, scheduler, rep, model) -> the run's jobs' (measured, predicted).
    type Run<'a> = (&'a str, &'a str, u32, &'a str);
    let mut by_run: BTreeMap<Run, Vec<(f64, f64)>> = BTreeMap::new();
    for j in &jobs {
        by_run
            .entry((&j.point, &j.scheduler, j.rep, &j.model))
            .or_default()
            .push((j.measured_jct_s, j.predicted_jct_s));
    }
    let mut rows = Vec::new();
    for p in &preds {
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
        let cpu = f
            .runs
            .iter()
            .find(|r| (&r.point, &r.scheduler, r.rep) == (&p.point, &p.scheduler, p.rep))
            .map_or(f64::NAN, |r| r.host_cpu_pct);
        rows.push(ErrorRow {
            workers: f.workers,
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
            saturated: cpu >= SATURATED_CPU_PCT,
            pairs: pairs.clone(),
        });
    }
    Ok(rows)
}

/// The counted runs of one worker count, fit and model.
fn cell<'a>(rows: &'a [ErrorRow], workers: u32, fit: &str, model: &str) -> Vec<&'a ErrorRow> {
    rows.iter()
        .filter(|r| r.workers == workers && r.fit == fit && r.model == model && !r.saturated)
        .collect()
}

/// (median, min, max) of `v` (NaN without any).
fn median_range(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (med, v[0], v[n - 1])
}

/// The per-job error pooled over a cell's runs: every job of every run.
fn pooled(runs: &[&ErrorRow]) -> Option<ErrorSpread> {
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

fn summary(folders: &[Folder], base: &Path, rows: &[ErrorRow], from: &str) -> String {
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
         at {SATURATED_CPU_PCT:.0}% or more are left out.\n\n",
        family(folders),
        folders
            .iter()
            .map(|f| format!("`{}` ({} workers)", f.dir.display(), f.workers))
            .collect::<Vec<_>>()
            .join(", "),
        first.workers,
        base.display(),
        first.workers,
    );
    s += "## Host CPU\n\n| workers | runs | host CPU % (median, max) | left out (saturated) |\n|---|---|---|---|\n";
    for f in folders {
        let cpu: Vec<f64> = f
            .runs
            .iter()
            .filter(|r| r.status == "ok")
            .map(|r| r.host_cpu_pct)
            .collect();
        let (med, _, max) = median_range(cpu.clone());
        let left = cpu.iter().filter(|c| **c >= SATURATED_CPU_PCT).count();
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

/// `plots/per_job_median.png` and `per_job_p90.png` (held out by scale),
/// `per_job_median_host.png` (the same with the host term) and
/// `per_job_median_in_sample.png`: one group per worker count, one bar
/// per model, its height the error pooled over every job of the counted
/// runs; the whisker spans the per-run values over seeds and schedulers.
fn plot(out: &Path, sizes: &[u32], rows: &[ErrorRow], from: &str) -> anyhow::Result<()> {
    const LIST: [Chart; 4] = [
        Chart {
            file: "per_job_median",
            title: "Per-job JCT error against workers, calibrated on the smallest cluster (median)",
            y: "per-job |predicted / measured - 1| (%), median",
        },
        Chart {
            file: "per_job_p90",
            title: "Per-job JCT error against workers, calibrated on the smallest cluster (90th percentile)",
            y: "per-job |predicted / measured - 1| (%), p90",
        },
        Chart {
            file: "per_job_median_host",
            title: "Per-job JCT error against workers, calibrated on the smallest cluster with the host term (median)",
            y: "per-job |predicted / measured - 1| (%), median",
        },
        Chart {
            file: "per_job_median_in_sample",
            title: "Per-job JCT error against workers, each size calibrated on itself (median)",
            y: "per-job |predicted / measured - 1| (%), median",
        },
    ];
    let groups: Vec<String> = sizes.iter().map(|w| format!("{w} workers")).collect();
    let series: Vec<String> = MODELS.iter().map(|m| (*m).to_owned()).collect();
    charts(out, &groups, &series, &LIST, |c, g, s| {
        let host = format!("{from}+host");
        let fit = match c {
            2 => host.as_str(),
            3 => "in-sample",
            _ => from,
        };
        let runs = cell(rows, sizes[g], fit, MODELS[s]);
        let p90 = c == 1;
        let e = pooled(&runs)?;
        let v: Vec<f64> = runs
            .iter()
            .map(|r| if p90 { r.per_job_p90 } else { r.per_job_median })
            .collect();
        let (_, lo, hi) = median_range(v);
        Some(Bar {
            value: 100.0 * if p90 { e.p90 } else { e.median },
            spread: Some((lo * 100.0, hi * 100.0)),
        })
    })
}
