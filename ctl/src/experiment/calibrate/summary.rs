//! The calibration's `summary.md`: the models, the predictions against
//! the measured means, and the per-job error.

use super::*;
use lab::calibration::spread;

pub(super) fn summary(
    spec: &Spec,
    dir: &Path,
    fit: &Fit,
    out: &Predicted,
    order: &[String],
) -> String {
    let (models, preds, jobs, notes) = (&out.models, &out.predictions, &out.jobs, &out.notes);
    let mut s = format!(
        "# Calibrated simulation of {}\n\n{} (`master sim calibrate`). Every run \
         simulated with `lab::replay`: its own scheduler and seed, arrivals, background and \
         heartbeat phases; local task time = the drawn compute + an overhead drawn from the \
         point's measured local overheads; a remote map reads its block under one of three \
         models: `source+reader` (a fixed extra at its start: base + per-source + per-reader \
         terms, and a per-MB term where a point's remote reads differ in size, least squares), \
         `reader-only` (the papers' model, the cost charged at the reading server only) and \
         `fair-share` (a transfer that shares the source's and the reader's links fairly while \
         it lasts, its time alone, in proportion to the block's size where sizes differ, fitted \
         so the mean remote extra matches). Means over repetitions with (min-max); err = predicted / measured - 1 of \
         the means.{}\n\n",
        spec.name,
        match fit {
            Fit::From(cal, None) => format!(
                "The runs of `{}` predicted by the models fitted on `{}`",
                dir.display(),
                cal.display()
            ),
            Fit::From(cal, Some(point)) => format!(
                "The runs of `{}`, every point, predicted by the model of point {point} fitted on `{}` (another workload)",
                dir.display(),
                cal.display()
            ),
            _ => format!("Calibrated on `{}`", dir.display()),
        },
        match fit {
            Fit::InSample => "",
            Fit::HoldOut =>
                " Held out: each scheduler's runs are predicted by a model fitted on the other \
                 schedulers' runs only (the table of fitted models shows the fit on all runs).",
            Fit::From(..) =>
                " Held out by folder: none of these runs was fitted on; the table of models \
                 shows the other folder's fit.",
        }
    );
    s += "## Fitted models\n\n| point | local attempts | overhead mean (p10-p90) ms | remote attempts | remote extra mean ms | source+reader: base + src*n + dst*n ms (rmse) | reader-only: base + dst*n ms (rmse) | fair-share: transfer alone ms | reduces: base + per MB ms (attempts) |\n|---|---|---|---|---|---|---|---|---|\n";
    for m in models {
        s += &format!(
            "| {} | {} | {:.0} ({}-{}) | {} | {:.0} | {} ({:.0}) | {:.0} + {:.0} n_dst ({:.0}) | {:.0}{} | {:.0} + {:.0}/MB ({}) |\n",
            m.point,
            m.local_attempts,
            m.overhead_mean_ms,
            m.overhead_p10_ms,
            m.overhead_p90_ms,
            m.remote_attempts,
            m.remote_extra_mean_ms,
            m.cost.remote().formula(),
            m.cost.rmse_ms,
            m.cost_reader_only.base_ms,
            m.cost_reader_only.per_reader_ms,
            m.cost_reader_only.rmse_ms,
            m.transfer_ms,
            if m.ref_bytes > 0 {
                format!(" per {:.3} MB", m.ref_bytes as f64 / 1e6)
            } else {
                String::new()
            },
            m.reduce_base_ms,
            m.reduce_ms_per_mb,
            m.reduce_attempts,
        );
    }
    for n in notes {
        s += &format!("\n{n}\n");
    }
    s += &model_terms(models);
    let mut within = BTreeMap::<&str, (usize, usize)>::new();
    for m in models {
        s += &format!(
            "\n## {}\n\n| scheduler | mean JCT measured (s) | source+reader | reader-only | fair-share | makespan (s): measured / s+r / r / fs | remote maps: measured / s+r / r / fs |\n|---|---|---|---|---|---|---|\n",
            m.point
        );
        for sc in order {
            let cell = |model: &str| -> Vec<&Prediction> {
                preds
                    .iter()
                    .filter(|p| p.point == m.point && &p.scheduler == sc && p.model == model)
                    .collect()
            };
            let first = cell(MODELS[0]);
            if first.is_empty() {
                continue;
            }
            let f = |v: &[&Prediction], g: fn(&Prediction) -> f64| {
                spread(&v.iter().map(|p| g(p)).collect::<Vec<_>>())
            };
            let meas = f(&first, |p| p.measured_mean_jct_s);
            let mut row = format!("| {sc} | {:.1} ({:.1}-{:.1}) |", meas.0, meas.1, meas.2);
            let (mut mk, mut rm) = (
                format!("{:.1}", f(&first, |p| p.measured_makespan_s).0),
                format!("{:.0}", f(&first, |p| f64::from(p.measured_remote)).0),
            );
            for model in MODELS {
                let c = cell(model);
                let pred = f(&c, |p| p.predicted_mean_jct_s);
                let err = pred.0 / meas.0 - 1.0;
                let e = within.entry(model).or_default();
                e.1 += 1;
                if err.abs() <= 0.10 {
                    e.0 += 1;
                }
                row += &format!(
                    " {:.1} ({:.1}-{:.1}) {:+.0}% |",
                    pred.0,
                    pred.1,
                    pred.2,
                    err * 100.0
                );
                mk += &format!(" / {:.1}", f(&c, |p| p.predicted_makespan_s).0);
                rm += &format!(" / {:.0}", f(&c, |p| f64::from(p.predicted_remote)).0);
            }
            s += &format!("{row} {mk} | {rm} |\n");
        }
    }
    s += "\n## Within 10% of the measured mean JCT\n\n";
    for model in MODELS {
        let (ok, n) = within.get(model).copied().unwrap_or((0, 0));
        s += &format!("- {model}: {ok} of {n} (point, scheduler) cells\n");
    }
    s += &per_job_section(models, preds, jobs, order, fit);
    s
}

/// The per-job error tables: per point and scheduler, the spread of
/// |predicted / measured - 1| over every job of every repetition, the
/// makespan's mean |error| and the remote maps' mean |difference| per run;
/// then the per-job spread over every cell, per model.
pub(super) fn per_job_section(
    models: &[PointModel],
    preds: &[Prediction],
    jobs: &[PredictedJob],
    order: &[String],
    fit: &Fit,
) -> String {
    if jobs.is_empty() {
        return "\n## Per-job error\n\nNo `jobs.csv` in the results folder: per-job errors cannot be computed.\n".into();
    }
    let pct = |e: Option<ErrorSpread>, f: fn(&ErrorSpread) -> f64| {
        e.map_or("-".to_owned(), |e| format!("{:.0}%", f(&e) * 100.0))
    };
    let mut s = format!(
        "\n## Per-job error\n\nPer job of every repetition: |predicted / measured JCT - 1|, its mean, median and \
         90th percentile (nearest rank) over the cell's jobs, {}; and |predicted - measured| in seconds \
         (a sub-second job's large relative error is a small absolute one). Makespan: mean over repetitions of \
         |predicted / measured - 1|. Remote maps: mean over repetitions of |predicted - measured|. \
         Each column gives source+reader / reader-only / fair-share.\n",
        fit.phrase()
    );
    for m in models {
        s += &format!(
            "\n### {}\n\n| scheduler | jobs | per-job mean | per-job median | per-job p90 | per-job mean / median s | makespan | remote maps (measured per run) |\n|---|---|---|---|---|---|---|---|\n",
            m.point
        );
        for sc in order {
            let pairs = |model: &str| {
                jobs.iter()
                    .filter(|j| j.point == m.point && &j.scheduler == sc && j.model == model)
                    .map(|j| (j.measured_jct_s, j.predicted_jct_s))
                    .collect::<Vec<_>>()
            };
            let spreads: Vec<Option<ErrorSpread>> =
                MODELS.iter().map(|m| error_spread(pairs(m))).collect();
            let seconds = MODELS
                .iter()
                .map(|m| {
                    seconds_spread(pairs(m))
                        .map_or("-".into(), |e| format!("{:.2} / {:.2}", e.mean, e.median))
                })
                .collect::<Vec<_>>()
                .join(", ");
            let Some(n) = spreads[0].map(|e| e.jobs) else {
                continue;
            };
            let runs = |model: &str| -> Vec<&Prediction> {
                preds
                    .iter()
                    .filter(|p| p.point == m.point && &p.scheduler == sc && p.model == model)
                    .collect()
            };
            let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
            let col = |f: fn(&ErrorSpread) -> f64| {
                spreads
                    .iter()
                    .map(|e| pct(*e, f))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            let makespan = MODELS
                .iter()
                .map(|model| {
                    let v = runs(model)
                        .iter()
                        .map(|p| (p.predicted_makespan_s / p.measured_makespan_s - 1.0).abs())
                        .collect();
                    format!("{:.0}%", mean(v) * 100.0)
                })
                .collect::<Vec<_>>()
                .join(" / ");
            let remote = MODELS
                .iter()
                .map(|model| {
                    let v = runs(model)
                        .iter()
                        .map(|p| {
                            (f64::from(p.predicted_remote) - f64::from(p.measured_remote)).abs()
                        })
                        .collect();
                    format!("{:.1}", mean(v))
                })
                .collect::<Vec<_>>()
                .join(" / ");
            let measured_remote = mean(
                runs(MODELS[0])
                    .iter()
                    .map(|p| f64::from(p.measured_remote))
                    .collect(),
            );
            s += &format!(
                "| {sc} | {n} | {} | {} | {} | {seconds} | {makespan} | {remote} ({measured_remote:.1}) |\n",
                col(|e| e.mean),
                col(|e| e.median),
                col(|e| e.p90),
            );
        }
    }
    s += "\n### Every cell\n\nRank by rank: within each run the k-th shortest measured JCT against the k-th shortest \
          predicted one (the error on the distribution of JCTs, leaving out which job got which).\n\n\
          | model | jobs | per-job mean | per-job median | per-job p90 | per-job mean / median / p90 s | rank by rank: mean / median / p90 |\n|---|---|---|---|---|---|---|\n";
    for model in MODELS {
        let pairs: Vec<(f64, f64)> = jobs
            .iter()
            .filter(|j| j.model == model)
            .map(|j| (j.measured_jct_s, j.predicted_jct_s))
            .collect();
        let e = error_spread(pairs.iter().copied());
        let secs = seconds_spread(pairs).map_or("-".into(), |e| {
            format!("{:.2} / {:.2} / {:.2}", e.mean, e.median, e.p90)
        });
        let ranked = error_spread(rank_pairs(jobs.iter().filter(|j| j.model == model)));
        let ranked = format!(
            "{} / {} / {}",
            pct(ranked, |e| e.mean),
            pct(ranked, |e| e.median),
            pct(ranked, |e| e.p90)
        );
        s += &format!(
            "| {model} | {} | {} | {} | {} | {secs} | {ranked} |\n",
            e.map_or(0, |e| e.jobs),
            pct(e, |e| e.mean),
            pct(e, |e| e.median),
            pct(e, |e| e.p90),
        );
    }
    s
}

/// What the summary says of the models' extra terms: the host term, the
/// disk term and the shuffle ratios.
fn model_terms(models: &[PointModel]) -> String {
    let mut s = String::new();
    for m in models.iter().filter(|m| m.host_ms_per_start > 0.0) {
        s += &format!(
            "\nHost term of {}: a map lasts {:.2} ms longer per map launched on the host in the {} ms before it (least squares over the local maps; the overhead column is what is left after it).\n",
            m.point,
            m.host_ms_per_start,
            replay::HOST_WINDOW_MS
        );
    }
    for m in models.iter().filter(|m| m.disk_mbs > 0.0) {
        s += &format!(
            "\nDisk term of {}: every map reads its block through its source's emulated disk ({} MB/s), shared fairly with the other reads from it while it lasts (each reduce's fetch of map output too, from the disks its job's maps ran on), and lasts at least {}; the overhead column is what is left of a local map after its read as that disk would have made it in the measured run, or after the floor where that is longer (it may be < 0), the remote extra mean keeps the read in (the fair-share transfer is fitted to it) and the fixed models' terms are what is left after it.\n",
            m.point,
            m.disk_mbs,
            if m.disk_slot_mbs > 0.0 {
                format!("its input at the slot's pacing ({} MB/s)", m.disk_slot_mbs)
            } else {
                "its read (no pacing)".to_owned()
            }
        );
    }
    for m in models.iter().filter(|m| !m.shuffle_ratio.is_empty()) {
        s += &format!(
            "\nShuffle of {} (bytes the reduces fetched / bytes the maps read, jobs with reduces): {}\n",
            m.point,
            m.shuffle_ratio
                .iter()
                .map(|(w, r)| format!("{w} {r:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s
}
