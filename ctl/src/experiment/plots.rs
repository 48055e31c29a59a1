//! The experiment runner's charts: per parameter point and scheduler, mean
//! JCT, slowdown against the first scheduler, data-remote tasks, makespan,
//! flowtime, locality, throughput and load balance.

use super::output::{cells, Cell, RunRecord};
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
        let spread = match METRICS[c].0.file {
            "mean_jct" => Some(cell.spread.mean_jct_s),
            "makespan" => Some(cell.spread.makespan_s),
            "remote_tasks" => Some(cell.spread.data_remote),
            "flowtime" => Some(cell.spread.total_jct_s),
            _ => None,
        }
        .filter(|_| cell.runs > 1);
        Some(Bar {
            value: (METRICS[c].1)(cell, base),
            spread,
        })
    })
}
