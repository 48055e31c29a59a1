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

use super::calibrate::{self, Fit, Options, PredictedJob, Prediction};
use super::output::SATURATED_CPU_PCT;
use crate::results::plot::{charts, Bar, Chart};
use crate::results::{read_csv, Provenance, ResultsDir};
use anyhow::Context;
use lab::calibration::MODELS;
use lab::scale::{self, family, ErrorRow, Size, SizeRun};
use std::path::{Path, PathBuf};

/// One folder of the family: its results, workers and calibrations.
struct Folder {
    dir: PathBuf,
    workers: u32,
    size: Size,
}

impl Folder {
    fn open(dir: &Path) -> anyhow::Result<Folder> {
        let (results, _, spec, _, _) = super::run::open_results(dir)?;
        let runs = results
            .read_runs()?
            .into_iter()
            .map(|r: super::output::RunRecord| SizeRun {
                ok: r.status == "ok",
                point: r.point,
                scheduler: r.scheduler,
                rep: r.rep,
                host_cpu_pct: r.host_cpu_pct,
            })
            .collect();
        Ok(Folder {
            dir: dir.to_owned(),
            workers: spec.cluster.workers,
            size: Size {
                dir: dir.display().to_string(),
                name: spec.name.clone(),
                workers: spec.cluster.workers,
                runs,
            },
        })
    }
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
            host_term,
            ..Options::new(fit)
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
    let sizes_of: Vec<Size> = folders.iter().map(|f| f.size.clone()).collect();
    let out = ResultsDir::create(
        results,
        &format!("{}-error", family(&sizes_of)),
        prov.started_unix_ms,
    )?;
    out.write_csv("error.csv", &rows)?;
    let sizes: Vec<u32> = folders.iter().map(|f| f.workers).collect();
    let text = scale::summary(
        &sizes_of,
        &base.display().to_string(),
        &rows,
        &from_label,
        SATURATED_CPU_PCT,
    );
    out.write_summary(&text)?;
    plot(out.path(), &sizes, &rows, &from_label)?;
    prov.finish();
    out.write_meta(&serde_json::json!({
        "family": family(&sizes_of),
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
    Ok(scale::errors(
        &f.size,
        fit,
        &preds,
        &jobs,
        SATURATED_CPU_PCT,
    ))
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
        let (value, lo, hi) = scale::bar(rows, sizes[g], fit, MODELS[s], c == 1)?;
        Some(Bar {
            value: 100.0 * value,
            spread: Some((lo * 100.0, hi * 100.0)),
        })
    })
}
