//! The summary's paired comparisons: every scheduler of a point saw the
//! same files, placement, arrivals and background per seed, so two
//! schedulers are compared on their per-seed differences, with a Student-t
//! 95% interval, and "no difference shown" where it holds zero.

use crate::claims::stats::{decimals_for, Estimate};
use std::collections::BTreeMap;

/// The headings of the compared metrics, in [`Sample::values`]' order.
pub const METRICS: [&str; 2] = ["mean JCT (s)", "makespan (s)"];

/// One successful run: its point, scheduler, seed and metrics.
pub struct Sample<'a> {
    pub point: &'a str,
    pub scheduler: &'a str,
    pub seed: u64,
    pub values: [f64; 2],
}

/// The "Paired differences" section (empty with fewer than two seeds or
/// schedulers a point).
pub fn section(points: &[String], schedulers: &[String], runs: &[Sample]) -> String {
    let mut by: BTreeMap<(&str, &str), BTreeMap<u64, &Sample>> = BTreeMap::new();
    for r in runs {
        by.entry((r.point, r.scheduler))
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
                let pairs: Vec<(&Sample, &Sample)> = ra
                    .iter()
                    .filter_map(|(seed, x)| rb.get(seed).map(|y| (*x, *y)))
                    .collect();
                if pairs.len() < 2 {
                    continue;
                }
                let cells: Vec<String> = (0..METRICS.len()).map(|m| cell(&pairs, m)).collect();
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
    format!(
        "## Paired differences\n\n\
         Each scheduler of a point ran on the same files, placement, arrivals and background per \
         seed, so two schedulers are compared on their per-seed differences (first minus second) \
         over the seeds both ran: the mean difference with Student's t 95% interval. \"no \
         difference shown\" marks an interval that holds 0.\n\n\
         | point | pair | seeds | {} |\n|---|---|---|{}\n{}\n\n",
        METRICS.join(" | "),
        "---|".repeat(METRICS.len()),
        rows.join("\n")
    )
}

fn cell(pairs: &[(&Sample, &Sample)], m: usize) -> String {
    let d: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| a.values[m] - b.values[m])
        .filter(|v| v.is_finite())
        .collect();
    if d.len() < 2 {
        return "-".into();
    }
    let e = Estimate::of(&d);
    let scale = pairs
        .iter()
        .map(|(a, _)| a.values[m].abs())
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

    fn run<'a>(point: &'a str, scheduler: &'a str, seed: u64, jct: f64) -> Sample<'a> {
        Sample {
            point,
            scheduler,
            seed,
            values: [jct, jct * 2.0],
        }
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
