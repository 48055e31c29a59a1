//! The calibration's decision agreement: each simulated run's launches
//! against the real run's (`lab::agreement`), as `agreement.csv` rows (one
//! per run and model) and a section of the calibration's summary.

use super::output::TaskRow;
use anyhow::Context;
use lab::agreement::{Agreement, Launch};
use lab::replay::TaskRun;
use serde::Serialize;
use std::collections::BTreeMap;

/// One simulated run's agreement with its real run.
#[derive(Clone, Debug, Serialize)]
pub struct AgreementRow {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub model: String,
    pub heartbeat_ms: u64,
    pub maps: usize,
    pub same_level: usize,
    pub same_worker: usize,
    pub same_time: usize,
    pub same_worker_and_time: usize,
    pub unmatched: usize,
    /// The four counts above as a % of `maps` (NaN with none).
    pub same_level_pct: f64,
    pub same_worker_pct: f64,
    pub same_time_pct: f64,
    pub same_worker_and_time_pct: f64,
    /// The first divergence (empty when none): the map, where and when it
    /// ran for real and simulated, and the cause with its detail.
    pub first_job: String,
    pub first_task: String,
    pub real_worker: String,
    pub real_start_s: String,
    pub sim_worker: String,
    pub sim_start_s: String,
    pub cause: String,
    pub cause_detail: String,
}

impl AgreementRow {
    pub fn new(key: &(String, String, u32), model: &str, hb: u64, a: &Agreement) -> Self {
        let w = |w: u32| format!("w{}", w + 1);
        let s = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
        let d = a.first.as_ref();
        AgreementRow {
            point: key.0.clone(),
            scheduler: key.1.clone(),
            rep: key.2,
            model: model.into(),
            heartbeat_ms: hb,
            maps: a.maps,
            same_level: a.same_level,
            same_worker: a.same_worker,
            same_time: a.same_time,
            same_worker_and_time: a.same_worker_and_time,
            unmatched: a.unmatched,
            same_level_pct: 100.0 * a.share(a.same_level),
            same_worker_pct: 100.0 * a.share(a.same_worker),
            same_time_pct: 100.0 * a.share(a.same_time),
            same_worker_and_time_pct: 100.0 * a.share(a.same_worker_and_time),
            first_job: d.map_or(String::new(), |d| format!("job-{}", d.real.job)),
            first_task: d.map_or(String::new(), |d| d.real.index.to_string()),
            real_worker: d.map_or(String::new(), |d| w(d.real.worker)),
            real_start_s: d.map_or(String::new(), |d| s(d.real.start_ms)),
            sim_worker: d.map_or(String::new(), |d| w(d.sim.worker)),
            sim_start_s: d.map_or(String::new(), |d| s(d.sim.start_ms)),
            cause: d.map_or(String::new(), |d| d.cause.name().into()),
            cause_detail: d.map_or(String::new(), |d| d.cause.describe()),
        }
    }
}

/// A real run's task attempts (`tasks.csv`, succeeded) as launches.
pub fn real_launches<'a>(
    rows: impl IntoIterator<Item = &'a TaskRow>,
) -> anyhow::Result<Vec<Launch>> {
    let worker = |name: &str| {
        name.strip_prefix('w')
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n >= 1)
            .map(|n| n - 1)
            .with_context(|| format!("worker name {name:?} is not the runner's w<N>"))
    };
    let ms = |s: f64| (s * 1000.0).round().max(0.0) as u64;
    rows.into_iter()
        .map(|t| {
            let job = t
                .job
                .strip_prefix("job-")
                .and_then(|n| n.parse().ok())
                .with_context(|| format!("job id {:?} is not job-<N>", t.job))?;
            let reduce = t.kind != "map";
            let w = worker(&t.worker)?;
            Ok(Launch {
                job,
                index: t.task,
                reduce,
                worker: w,
                source: if reduce || t.source.is_empty() {
                    w
                } else {
                    worker(&t.source)?
                },
                start_ms: ms(t.start_s),
                end_ms: ms(t.end_s),
            })
        })
        .collect()
}

/// A simulated run's tasks as launches.
pub fn sim_launches(runs: &[TaskRun]) -> Vec<Launch> {
    runs.iter()
        .map(|r| Launch {
            job: u64::from(r.task.job.0),
            index: r.task.index,
            reduce: r.reduce,
            worker: r.worker.0,
            source: r.source.0,
            start_ms: r.start_ms,
            end_ms: r.end_ms,
        })
        .collect()
}

/// The summary's section: per point and scheduler, the shares over every
/// map of its repetitions under each model, and the first divergences of
/// the source+reader model with their causes.
pub fn section(rows: &[AgreementRow], models: &[&str], order: &[String]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let hb = rows[0].heartbeat_ms;
    let mut s = format!(
        "\n## Decision agreement\n\nEach map launched in both runs, the simulated launch against the real one \
         (`lab::agreement`): at the same locality level (local or remote), on the same worker, within one \
         heartbeat ({hb} ms) of the real start, and both the same worker and within a heartbeat. Shares over \
         every map of the cell's repetitions; each column gives {}. The first divergence is the earliest map \
         that went to another worker or started more than a heartbeat apart (every launch before it agreed); \
         its cause: `finish` (at the sooner of the two launches, a task on either worker had ended in one run \
         and not in the other, its two ends more than a heartbeat apart: a finish time the model got wrong), `tie` (the same level within a heartbeat, another worker: equal offers taken in \
         another order), `pick` (the sooner launch's offer, its worker within a fifth of a heartbeat, went to another \
         map in the other run: the policy picked otherwise on the same offer), `order` (a pick whose other \
         map's job the sooner run served in the same round on another worker: the round's heartbeats reached the \
         policy in another order), `heartbeat` (the other run \
         launched nothing on that worker then: the offer was not made there). Shown for {} in rep 0, with the causes over every repetition; \
         every run in `agreement.csv`.\n",
        models.join(" / "),
        models[0]
    );
    let mut cells: BTreeMap<(&str, usize), Vec<&AgreementRow>> = BTreeMap::new();
    for r in rows {
        let rank = order
            .iter()
            .position(|o| *o == r.scheduler)
            .unwrap_or(order.len());
        cells.entry((r.point.as_str(), rank)).or_default().push(r);
    }
    let mut point = "";
    for ((p, _), cell) in &cells {
        if *p != point {
            point = p;
            s += &format!(
                "\n### {p}\n\n| scheduler | maps per run | same level | same worker | within a heartbeat | same worker and time | first divergence ({}, rep 0) | causes over reps |\n|---|---|---|---|---|---|---|---|\n",
                models[0]
            );
        }
        s += &cell_row(cell, models);
    }
    s
}

/// One scheduler's row of the section.
fn cell_row(cell: &[&AgreementRow], models: &[&str]) -> String {
    let of =
        |m: &str| -> Vec<&AgreementRow> { cell.iter().copied().filter(|r| r.model == m).collect() };
    let share = |f: fn(&AgreementRow) -> usize| {
        models
            .iter()
            .map(|m| {
                let rs = of(m);
                let maps: usize = rs.iter().map(|r| r.maps).sum();
                if maps == 0 {
                    "-".to_owned()
                } else {
                    format!(
                        "{:.0}%",
                        100.0 * rs.iter().map(|r| f(r)).sum::<usize>() as f64 / maps as f64
                    )
                }
            })
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let first = of(models[0]);
    let maps = first.iter().map(|r| r.maps).sum::<usize>() / first.len().max(1);
    let rep0 = first.iter().min_by_key(|r| r.rep);
    let divergence = rep0.map_or("-".to_owned(), |r| {
        if r.cause.is_empty() {
            "none".to_owned()
        } else {
            format!(
                "{} map {} at {} s on {}, simulated {} s on {}: {}",
                r.first_job,
                r.first_task,
                r.real_start_s,
                r.real_worker,
                r.sim_start_s,
                r.sim_worker,
                r.cause_detail
            )
        }
    });
    let mut causes: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &first {
        *causes
            .entry(if r.cause.is_empty() { "none" } else { &r.cause })
            .or_default() += 1;
    }
    let causes: Vec<String> = causes.iter().map(|(c, n)| format!("{c} {n}")).collect();
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        cell[0].scheduler,
        maps,
        share(|r| r.same_level),
        share(|r| r.same_worker),
        share(|r| r.same_time),
        share(|r| r.same_worker_and_time),
        divergence,
        causes.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::agreement::compare;

    fn row(rep: u32, model: &str, real: &[Launch], sim: &[Launch]) -> AgreementRow {
        let key = ("p".to_owned(), "DELAY3".to_owned(), rep);
        AgreementRow::new(&key, model, 1500, &compare(real, sim, 1500))
    }

    #[test]
    fn the_section_pools_the_reps_per_model_and_names_rep_0s_divergence() {
        let l = |index, worker, start_ms| Launch {
            job: 1,
            index,
            reduce: false,
            worker,
            source: worker,
            start_ms,
            end_ms: start_ms + 1000,
        };
        let real = [l(0, 0, 0), l(1, 1, 0)];
        let moved = [l(0, 0, 0), l(1, 2, 100)];
        let rows = vec![
            row(0, "source+reader", &real, &moved),
            row(1, "source+reader", &real, &real),
            row(0, "fair-share", &real, &real),
            row(1, "fair-share", &real, &real),
        ];
        assert_eq!(rows[0].same_worker_pct, 50.0);
        assert_eq!(
            (rows[0].cause.as_str(), rows[1].cause.as_str()),
            ("tie", "")
        );
        let s = section(
            &rows,
            &["source+reader", "fair-share"],
            &["DELAY3".to_owned()],
        );
        assert!(s.contains("| scheduler | maps per run |"), "{s}");
        assert!(
            s.contains(
                "| DELAY3 | 2 | 100% / 100% | 75% / 100% | 100% / 100% | 75% / 100% | \
                 job-1 map 1 at 0.000 s on w2, simulated 0.100 s on w3: tie | none 1, tie 1 |"
            ),
            "{s}"
        );
        assert_eq!(section(&[], &["source+reader"], &[]), "");
    }

    #[test]
    fn tasks_csv_rows_become_launches_and_bad_names_are_named() {
        let t = TaskRow {
            point: "p".into(),
            scheduler: "s".into(),
            rep: 0,
            job: "job-3".into(),
            job_name: "j2".into(),
            arrival_s: 0.0,
            task: 4,
            kind: "map".into(),
            attempt: 0,
            worker: "w2".into(),
            slot: 0,
            locality: "remote".into(),
            source: "w5".into(),
            start_s: 1.5,
            end_s: 2.25,
            input_bytes: 0,
            remote_bytes: 0,
            ok: true,
            error: String::new(),
        };
        let l = real_launches([&t]).unwrap();
        assert_eq!(
            l,
            vec![Launch {
                job: 3,
                index: 4,
                reduce: false,
                worker: 1,
                source: 4,
                start_ms: 1500,
                end_ms: 2250
            }]
        );
        assert!(!l[0].is_local());
        let bad = TaskRow {
            worker: "node2".into(),
            ..t
        };
        let e = real_launches([&bad]).unwrap_err();
        assert!(format!("{e:#}").contains("\"node2\""), "{e:#}");
    }
}
