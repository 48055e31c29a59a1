//! The summary's paired comparisons: every scheduler of a point saw the
//! same files, placement, arrivals and background per seed, so two
//! schedulers are compared on their per-seed differences, with a Student-t
//! 95% interval, and "no difference shown" where it holds zero.

use super::output::RunRecord;
use crate::claims::stats::{decimals_for, Estimate};
use std::collections::BTreeMap;

/// A compared metric: its heading and how a run gives it.
type Metric = (&'static str, fn(&RunRecord) -> f64);

/// The metrics compared.
const METRICS: [Metric; 2] = [
    ("mean JCT (s)", |r| r.mean_jct_s),
    ("makespan (s)", |r| r.makespan_s),
];

/// The "Paired differences" section (empty with fewer than two seeds or
/// schedulers a point).
pub fn section(points: &[String], schedulers: &[String], runs: &[RunRecord]) -> String {
    let mut by: BTreeMap<(&str, &str), BTreeMap<u64, &RunRecord>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.status == "ok") {
        by.entry((r.point.as_str(), r.scheduler.as_str()))
            .or_default()
            .insert(r.seed, r);
    }
    let mut rows = Vec::new();
    for p in points {
        for (i, a) in schedulers.iter().enumerate() {
            for b in &schedulers[i + 1..] {
                let (Some(ra), Some(rb)) = (
                    by.get(&(p.as_str(), a.as_str())),
                    by.get(&(p.as_str(), b.as_str())),
                ) else {
                    continue;
                };
                let pairs: Vec<(&RunRecord, &RunRecord)> = ra
                    .iter()
                    .filter_map(|(seed, x)| rb.get(seed).map(|y| (*x, *y)))
                    .collect();
                if pairs.len() < 2 {
                    continue;
                }
                let cells: Vec<String> = METRICS.iter().map(|(_, m)| cell(&pairs, *m)).collect();
                rows.push(format!(
                    "| {p} | {a} − {b} | {} | {} |",
                    pairs.len(),
                    cells.join(" | ")
                ));
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let heads: Vec<&str> = METRICS.iter().map(|(h, _)| *h).collect();
    format!(
        "## Paired differences\n\n\
         Each scheduler of a point ran on the same files, placement, arrivals and background per \
         seed, so two schedulers are compared on their per-seed differences (first minus second) \
         over the seeds both ran: the mean difference with Student's t 95% interval. \"no \
         difference shown\" marks an interval that holds 0.\n\n\
         | point | pair | seeds | {} |\n|---|---|---|{}\n{}\n\n",
        heads.join(" | "),
        "---|".repeat(heads.len()),
        rows.join("\n")
    )
}

fn cell(pairs: &[(&RunRecord, &RunRecord)], metric: fn(&RunRecord) -> f64) -> String {
    let d: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| metric(a) - metric(b))
        .filter(|v| v.is_finite())
        .collect();
    if d.len() < 2 {
        return "-".into();
    }
    let e = Estimate::of(&d);
    let scale = pairs
        .iter()
        .map(|(a, _)| metric(a).abs())
        .fold(0.0, f64::max);
    let shown = e.show(decimals_for(scale));
    if e.sign() == 0 {
        format!("{shown}, no difference shown")
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(point: &str, sched: &str, seed: u64, jct: f64) -> RunRecord {
        let s = crate::experiment::spec::NamedScheduler {
            label: sched.into(),
            config: sched::policy::SchedulerConfig::hadoop(),
            reduces: Default::default(),
            grid: None,
        };
        let mut r = RunRecord::failed(point, &s, 0, seed, 1, String::new(), 0.0);
        r.status = "ok".into();
        r.mean_jct_s = jct;
        r.makespan_s = jct * 2.0;
        r
    }

    #[test]
    fn paired_differences_separate_what_ranges_overlap() {
        // A's and B's ranges overlap, but A is 1 s faster on every seed.
        let runs = vec![
            run("p", "A", 1, 10.0),
            run("p", "B", 1, 11.0),
            run("p", "A", 2, 12.0),
            run("p", "B", 2, 13.1),
            run("p", "A", 3, 14.0),
            run("p", "B", 3, 14.9),
            run("p", "C", 1, 11.0),
            run("p", "C", 2, 11.0),
            run("p", "C", 3, 14.0),
        ];
        let s = section(&["p".into()], &["A".into(), "B".into(), "C".into()], &runs);
        let line = |pair: &str| s.lines().find(|l| l.contains(pair)).unwrap().to_string();
        assert!(
            line("A − B").contains("-1.0 [") && !line("A − B").contains("no difference"),
            "{s}"
        );
        assert!(line("A − C").contains("no difference shown"), "{s}");
        assert!(section(&["p".into()], &["A".into()], &runs).is_empty());
    }
}
