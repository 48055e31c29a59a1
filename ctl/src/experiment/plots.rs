//! The experiment runner's charts: per parameter point and scheduler, mean
//! JCT, slowdown against the first scheduler, data-remote tasks, makespan,
//! flowtime, locality, throughput and load balance.

use super::output::{cells, Cell, RunRecord, INTERVAL_FROM};
use super::spec::{NamedScheduler, Point};
use crate::results::plot::{charts, Bar, Chart};
use std::path::Path;

/// A chart's value from a cell and the first scheduler's mean JCT there.
type Value = fn(&Cell, f64) -> f64;

const METRICS: &[(Chart, Value)] = &[
    (
        Chart {
            file: "mean_jct",
            title: "Mean job completion time",
            y: "mean JCT (s)",
        },
        |c, _| c.mean_jct_s,
    ),
    (
        Chart {
            file: "slowdown",
            title: "Slowdown against the first scheduler",
            y: "mean JCT / baseline",
        },
        |c, base| c.mean_jct_s / base,
    ),
    (
        Chart {
            file: "remote_tasks",
            title: "Data-remote tasks",
            y: "data-remote tasks",
        },
        |c, _| c.data_remote,
    ),
    (
        Chart {
            file: "makespan",
            title: "Makespan",
            y: "makespan (s)",
        },
        |c, _| c.makespan_s,
    ),
    (
        Chart {
            file: "flowtime",
            title: "Total flowtime (sum of job completion times)",
            y: "flowtime (s)",
        },
        |c, _| c.total_jct_s,
    ),
    (
        Chart {
            file: "locality",
            title: "Map locality",
            y: "data-local maps (%)",
        },
        |c, _| c.locality_pct,
    ),
    (
        Chart {
            file: "map_throughput",
            title: "Map machines' throughput",
            y: "MB/s",
        },
        |c, _| c.map_tp,
    ),
    (
        Chart {
            file: "reduce_throughput",
            title: "Reduce machines' throughput",
            y: "MB/s",
        },
        |c, _| c.reduce_tp,
    ),
    (
        Chart {
            file: "load_balance",
            title: "Load balance of the map machines (time sum of std dev, lower is better)",
            y: "MB x s",
        },
        |c, _| c.load_balance,
    ),
];

/// A bar's whisker over its repetitions' values: none for one value, the
/// min-max under [`INTERVAL_FROM`] values, else Student's t 95% interval of
/// the mean (`claims::stats::Estimate`).
pub fn whisker(xs: &[f64]) -> Option<(f64, f64)> {
    match xs.len() {
        0 | 1 => None,
        n if n < INTERVAL_FROM => Some((
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )),
        _ => {
            let e = crate::claims::stats::Estimate::of(xs);
            Some((e.lo, e.hi))
        }
    }
}

/// The per-run value a chart's whisker is drawn from, for the charts that
/// have one.
fn per_run(file: &str) -> Option<fn(&RunRecord) -> f64> {
    match file {
        "mean_jct" => Some(|r| r.mean_jct_s),
        "makespan" => Some(|r| r.makespan_s),
        "remote_tasks" => Some(|r| f64::from(r.data_remote)),
        "flowtime" => Some(|r| r.total_jct_s),
        _ => None,
    }
}

/// Writes `plots/<metric>.svg` and `.png`; a missing font only prints a note.
pub fn plot_all(
    out: &Path,
    schedulers: &[NamedScheduler],
    points: &[Point],
    runs: &[RunRecord],
) -> anyhow::Result<()> {
    let cells = cells(runs);
    let groups: Vec<String> = points.iter().map(|p| p.label.clone()).collect();
    let series: Vec<String> = schedulers.iter().map(|s| s.label.clone()).collect();
    let list: Vec<Chart> = METRICS.iter().map(|m| m.0).collect();
    charts(out, &groups, &series, &list, |c, g, s| {
        let base = cells
            .get(&(groups[g].clone(), series[0].clone()))
            .map_or(f64::NAN, |c| c.mean_jct_s);
        let cell = cells.get(&(groups[g].clone(), series[s].clone()))?;
        let spread = per_run(METRICS[c].0.file).and_then(|value| {
            let xs: Vec<f64> = runs
                .iter()
                .filter(|r| r.status == "ok" && r.point == groups[g] && r.scheduler == series[s])
                .map(value)
                .filter(|x| x.is_finite())
                .collect();
            whisker(&xs)
        });
        Some(Bar {
            value: (METRICS[c].1)(cell, base),
            spread,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whiskers_are_min_max_under_five_runs_and_t_intervals_from_five() {
        assert_eq!(whisker(&[3.0]), None);
        assert_eq!(whisker(&[1.0, 3.0, 2.0]), Some((1.0, 3.0)));
        // Five values 1..5: mean 3, s^2 = 2.5, t(4) = 2.776: 3 -+ 1.963,
        // not the min-max 1..5.
        let (lo, hi) = whisker(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let half = 2.776 * (2.5f64 / 5.0).sqrt();
        assert!(
            (lo - (3.0 - half)).abs() < 1e-9 && (hi - (3.0 + half)).abs() < 1e-9,
            "{lo} {hi}"
        );
    }
}
