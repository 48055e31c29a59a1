//! Per-job results for the QoS experiments (MROSA's Figs 3-6): `jobs.csv`
//! (each job's JCT, deadline, whether it was met, its public-cloud bill),
//! and the summary's QoS section: per point and scheduler, the share of
//! jobs that met their deadline, the public cost and the instances, and the
//! satisfaction at every deadline of `jobs.qos_deadlines_s` (each job's
//! JCT against it).

use super::spec::{NamedScheduler, Point, Spec};
use common::wire::{JobReport, JobState};
use serde::{Deserialize, Serialize};

/// One job of one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobRow {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub job: String,
    pub job_name: String,
    pub maps: u32,
    pub reduces: u32,
    pub state: String,
    /// NaN when it did not succeed.
    pub jct_s: f64,
    /// NaN when it had none.
    pub deadline_s: f64,
    /// Empty when it had no deadline.
    pub deadline_met: String,
    pub instances: u32,
    pub cost_compute: f64,
    pub cost_storage: f64,
    pub cost_transfer: f64,
    pub cost_total: f64,
    pub error: String,
    /// Map output bytes its reduces fetched (folders from before it was
    /// kept have none: 0).
    #[serde(default)]
    pub shuffle_bytes: u64,
}

impl JobRow {
    pub fn from_reports(
        point: &str,
        scheduler: &str,
        rep: u32,
        reports: &[JobReport],
    ) -> Vec<Self> {
        reports
            .iter()
            .map(|r| {
                let cost = r.public_cost.clone().unwrap_or_default();
                JobRow {
                    point: point.into(),
                    scheduler: scheduler.into(),
                    rep,
                    job: r.job.to_string(),
                    job_name: r.name.clone(),
                    maps: r.tasks,
                    reduces: r.reduces,
                    state: format!("{:?}", r.state).to_lowercase(),
                    jct_s: match r.state {
                        JobState::Succeeded => r.jct_ms.map_or(f64::NAN, |j| j as f64 / 1000.0),
                        _ => f64::NAN,
                    },
                    deadline_s: r.deadline_ms.map_or(f64::NAN, |d| d as f64 / 1000.0),
                    deadline_met: r.deadline_met.map_or(String::new(), |m| m.to_string()),
                    instances: cost.instances.len() as u32,
                    cost_compute: cost.compute,
                    cost_storage: cost.storage,
                    cost_transfer: cost.transfer,
                    cost_total: cost.total(),
                    error: r.error.clone().unwrap_or_default(),
                    shuffle_bytes: r.shuffle_bytes,
                }
            })
            .collect()
    }
}

/// mean (min-max) over the values (just the mean for one), or "-".
pub(crate) fn spread(v: &[f64], digits: usize) -> String {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return "-".into();
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.len() > 1 {
        format!("{mean:.digits$} ({lo:.digits$}-{hi:.digits$})")
    } else {
        format!("{mean:.digits$}")
    }
}

/// The summary's QoS section; empty when no job had a deadline or a
/// budget and there is no public cloud.
pub fn summary(
    spec: &Spec,
    schedulers: &[NamedScheduler],
    points: &[Point],
    rows: &[JobRow],
) -> String {
    let qos = spec.jobs.deadline_s.is_some()
        || !spec.jobs.deadlines_s.is_empty()
        || spec.jobs.budget.is_some()
        || !spec.public_type.is_empty()
        || !spec.jobs.qos_deadlines_s.is_empty();
    if !qos {
        return String::new();
    }
    let mut s = String::from(
        "## QoS and public cloud\n\nPer run: the mean JCT of its succeeded jobs, the share of its jobs \
         that met their deadline (a refused or failed job missed it), its public-cloud cost (the sum of \
         its jobs' bills: instance time, storage, transfer) and the instances it started; then the mean \
         (min-max) over the repetitions.\n\n\
         | point | scheduler | runs | mean JCT (s) | deadline met % | refused | public cost | instances |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let reps = |p: &str, sc: &str| -> Vec<Vec<&JobRow>> {
        let mut by: std::collections::BTreeMap<u32, Vec<&JobRow>> = Default::default();
        for r in rows.iter().filter(|r| r.point == p && r.scheduler == sc) {
            by.entry(r.rep).or_default().push(r);
        }
        by.into_values().collect()
    };
    for p in points {
        for sc in schedulers {
            let runs = reps(&p.label, &sc.label);
            if runs.is_empty() {
                continue;
            }
            let per =
                |f: &dyn Fn(&[&JobRow]) -> f64| -> Vec<f64> { runs.iter().map(|r| f(r)).collect() };
            let jct = per(&|r| {
                let ok: Vec<f64> = r
                    .iter()
                    .map(|j| j.jct_s)
                    .filter(|x| x.is_finite())
                    .collect();
                if ok.is_empty() {
                    f64::NAN // none succeeded: "-"
                } else {
                    ok.iter().sum::<f64>() / ok.len() as f64
                }
            });
            let met = per(&|r| {
                let with: Vec<_> = r.iter().filter(|j| !j.deadline_met.is_empty()).collect();
                if with.is_empty() {
                    f64::NAN
                } else {
                    100.0 * with.iter().filter(|j| j.deadline_met == "true").count() as f64
                        / with.len() as f64
                }
            });
            let refused =
                per(&|r| r.iter().filter(|j| j.error.starts_with("refused")).count() as f64);
            let cost = per(&|r| r.iter().map(|j| j.cost_total).sum());
            let inst = per(&|r| r.iter().map(|j| j.instances as f64).sum());
            s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                p.label,
                sc.label,
                runs.len(),
                spread(&jct, 2),
                spread(&met, 0),
                spread(&refused, 1),
                spread(&cost, 6),
                spread(&inst, 1),
            );
        }
    }
    if !spec.jobs.qos_deadlines_s.is_empty() {
        s += "\n### QoS satisfaction by deadline\n\nThe share of the run's jobs whose JCT is at most the \
              deadline, mean (min-max) over the repetitions.\n\n| point | scheduler |";
        for d in &spec.jobs.qos_deadlines_s {
            s += &format!(" {d} s |");
        }
        s += "\n|---|---|";
        s += &"---|".repeat(spec.jobs.qos_deadlines_s.len());
        s += "\n";
        for p in points {
            for sc in schedulers {
                let runs = reps(&p.label, &sc.label);
                if runs.is_empty() {
                    continue;
                }
                s += &format!("| {} | {} |", p.label, sc.label);
                for d in &spec.jobs.qos_deadlines_s {
                    let v: Vec<f64> = runs
                        .iter()
                        .map(|r| {
                            100.0 * r.iter().filter(|j| j.jct_s <= *d).count() as f64
                                / r.len().max(1) as f64
                        })
                        .collect();
                    s += &format!(" {} |", spread(&v, 0));
                }
                s += "\n";
            }
        }
    }
    s + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn row(scheduler: &str, rep: u32, jct_s: f64, met: &str, cost: f64, error: &str) -> JobRow {
        JobRow {
            point: "p".into(),
            scheduler: scheduler.into(),
            rep,
            job: "job-1".into(),
            job_name: "j0".into(),
            maps: 4,
            reduces: 1,
            state: if jct_s.is_finite() {
                "succeeded"
            } else {
                "failed"
            }
            .into(),
            jct_s,
            deadline_s: 10.0,
            deadline_met: met.into(),
            instances: u32::from(cost > 0.0),
            cost_compute: cost,
            cost_storage: 0.0,
            cost_transfer: 0.0,
            cost_total: cost,
            error: error.into(),
            shuffle_bytes: 0,
        }
    }

    #[test]
    fn the_qos_section_counts_deadlines_costs_and_refusals() {
        let spec = Spec::parse(
            r#"
name = "q"
schedulers = [{ label = "mrosa", scheduler = "mrosa" }, "coshic"]
[cluster]
workers = 2
slots = 1
replication = 1
[data]
block_size = "1MiB"
files = 1
blocks = 4
[jobs]
count = 2
deadline_s = 10
qos_deadlines_s = [5, 10]
[[points]]
label = "p"
"#,
            Path::new("experiments/q.toml"),
        )
        .unwrap();
        let (schedulers, points) = (spec.schedulers().unwrap(), spec.points().unwrap());
        let rows = vec![
            // mrosa, rep 0: 4 s and 8 s, both met, 1.5 spent; rep 1: 6 s met, 12 s not.
            row("mrosa", 0, 4.0, "true", 1.5, ""),
            row("mrosa", 0, 8.0, "true", 0.0, ""),
            row("mrosa", 1, 6.0, "true", 0.0, ""),
            row("mrosa", 1, 12.0, "false", 0.5, ""),
            // coshic refuses one job in each run.
            row("coshic", 0, 9.0, "true", 3.0, ""),
            row("coshic", 0, f64::NAN, "false", 0.0, "refused: coshic: no"),
            row("coshic", 1, f64::NAN, "false", 0.0, "refused: coshic: no"),
            row("coshic", 1, f64::NAN, "false", 0.0, "refused: coshic: no"),
        ];
        let s = summary(&spec, &schedulers, &points, &rows);
        // mean JCT 6 and 9 -> 7.50 (6.00-9.00); met 100% and 50%; cost 1.5 and 0.5.
        assert!(
            s.contains("| p | mrosa | 2 | 7.50 (6.00-9.00) | 75 (50-100) | 0.0 (0.0-0.0) | 1.000000 (0.500000-1.500000) | 1.0 (1.0-1.0) |"),
            "{s}"
        );
        // A run with no succeeded job has no mean JCT.
        assert!(
            s.contains("| p | coshic | 2 | 9.00 | 25 (0-50) | 1.5 (1.0-2.0) | 1.500000 (0.000000-3.000000) | 0.5 (0.0-1.0) |"),
            "{s}"
        );
        // By deadline: mrosa's runs have 1 of 2 and 0 of 2 jobs within 5 s, 2 and 1 within 10.
        assert!(s.contains("| p | mrosa | 25 (0-50) | 75 (50-100) |"), "{s}");
        assert!(s.contains("| p | coshic | 0 (0-0) | 25 (0-50) |"), "{s}");
    }
}
