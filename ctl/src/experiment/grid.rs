//! The order x placement grid of a spec with `[grid]`: each scheduler
//! entry is a placement, run under every listed job order. The summary's
//! grid section puts the cells in a table per point and metric and
//! separates the two main effects: an order's marginal mean is its mean
//! over the placements, a placement's its mean over the orders, and each
//! factor's effect is the range of its marginal means (the largest minus
//! the smallest). Both are computed per repetition (every repetition runs
//! every cell with the same seed, data and arrivals) and shown as the mean
//! with the min-max over repetitions.

use super::output::RunRecord;
use super::spec::NamedScheduler;
use sched::policy::JobOrder;
use std::collections::BTreeMap;

/// One metric of a run.
struct Metric {
    name: &'static str,
    unit: &'static str,
    get: fn(&RunRecord) -> f64,
}

const METRICS: [Metric; 3] = [
    Metric {
        name: "mean JCT",
        unit: "s",
        get: |r| r.mean_jct_s,
    },
    Metric {
        name: "makespan",
        unit: "s",
        get: |r| r.makespan_s,
    },
    Metric {
        name: "locality",
        unit: "%",
        get: |r| r.locality_pct,
    },
];

/// Marginal means and the range of each factor, per repetition.
#[derive(Debug, PartialEq)]
pub struct Effects {
    /// Order -> its mean over placements, per repetition.
    pub orders: Vec<(JobOrder, Vec<f64>)>,
    /// Placement -> its mean over orders, per repetition.
    pub placements: Vec<(String, Vec<f64>)>,
    /// Per repetition: largest minus smallest order marginal.
    pub order_effect: Vec<f64>,
    /// Per repetition: largest minus smallest placement marginal.
    pub placement_effect: Vec<f64>,
}

/// (placement, order) -> the metric per repetition.
type Cells = BTreeMap<(String, JobOrder), BTreeMap<u32, f64>>;

/// The grid's cells at `point`, and the repetitions every cell finished.
fn cells(
    schedulers: &[NamedScheduler],
    runs: &[RunRecord],
    point: &str,
    get: fn(&RunRecord) -> f64,
) -> (Cells, Vec<u32>) {
    let mut out = Cells::new();
    for sc in schedulers {
        let Some(g) = &sc.grid else { continue };
        let by_rep = out.entry((g.placement.clone(), g.order)).or_default();
        for r in runs
            .iter()
            .filter(|r| r.point == point && r.scheduler == sc.label && r.status == "ok")
        {
            by_rep.insert(r.rep, get(r));
        }
    }
    let mut reps: Vec<u32> = out
        .values()
        .flat_map(|m| m.keys().copied())
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect();
    reps.retain(|rep| out.values().all(|m| m.contains_key(rep)));
    (out, reps)
}

/// The main effects of one metric at one point; None when the grid has no
/// repetition that every cell finished.
pub fn effects(
    schedulers: &[NamedScheduler],
    runs: &[RunRecord],
    point: &str,
    get: fn(&RunRecord) -> f64,
) -> Option<Effects> {
    let (cells, reps) = cells(schedulers, runs, point, get);
    if reps.is_empty() {
        return None;
    }
    let mut orders: Vec<JobOrder> = Vec::new();
    let mut placements: Vec<String> = Vec::new();
    for sc in schedulers {
        if let Some(g) = &sc.grid {
            if !orders.contains(&g.order) {
                orders.push(g.order);
            }
            if !placements.contains(&g.placement) {
                placements.push(g.placement.clone());
            }
        }
    }
    let cell = |p: &str, o: JobOrder, rep: u32| cells[&(p.to_owned(), o)][&rep];
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let order_means: Vec<(JobOrder, Vec<f64>)> = orders
        .iter()
        .map(|&o| {
            let per_rep = reps
                .iter()
                .map(|&rep| {
                    let v: Vec<f64> = placements.iter().map(|p| cell(p, o, rep)).collect();
                    mean(&v)
                })
                .collect();
            (o, per_rep)
        })
        .collect();
    let placement_means: Vec<(String, Vec<f64>)> = placements
        .iter()
        .map(|p| {
            let per_rep = reps
                .iter()
                .map(|&rep| {
                    let v: Vec<f64> = orders.iter().map(|&o| cell(p, o, rep)).collect();
                    mean(&v)
                })
                .collect();
            (p.clone(), per_rep)
        })
        .collect();
    let range = |levels: Vec<&Vec<f64>>, i: usize| {
        let v: Vec<f64> = levels.iter().map(|l| l[i]).collect();
        v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
            - v.iter().cloned().fold(f64::INFINITY, f64::min)
    };
    let order_effect = (0..reps.len())
        .map(|i| range(order_means.iter().map(|(_, v)| v).collect(), i))
        .collect();
    let placement_effect = (0..reps.len())
        .map(|i| range(placement_means.iter().map(|(_, v)| v).collect(), i))
        .collect();
    Some(Effects {
        orders: order_means,
        placements: placement_means,
        order_effect,
        placement_effect,
    })
}

/// `mean (min-max)` over repetitions.
fn spread(v: &[f64], digits: usize) -> String {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    if v.len() > 1 {
        let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        format!("{mean:.digits$} ({lo:.digits$}-{hi:.digits$})")
    } else {
        format!("{mean:.digits$}")
    }
}

/// The summary's grid section; empty without `[grid]`.
pub fn section(schedulers: &[NamedScheduler], points: &[String], runs: &[RunRecord]) -> String {
    if !schedulers.iter().any(|s| s.grid.is_some()) {
        return String::new();
    }
    let mut s = String::from(
        "## Order x placement\n\n\
         Each placement (a row) ran under each job order (a column). A marginal is a level's mean over \
         the other factor; a factor's effect is the range of its marginals (largest minus smallest). \
         Both are computed per repetition (same seed, data and arrivals in every cell) and shown as the \
         mean (min-max) over the repetitions that every cell finished.\n\n",
    );
    for point in points {
        for m in &METRICS {
            let Some(e) = effects(schedulers, runs, point, m.get) else {
                s += &format!(
                    "{point}, {}: no repetition finished in every cell.\n\n",
                    m.name
                );
                continue;
            };
            let (cells, reps) = cells(schedulers, runs, point, m.get);
            s += &format!(
                "### {point}: {} ({}), {} repetitions\n\n| placement |",
                m.name,
                m.unit,
                reps.len()
            );
            for (o, _) in &e.orders {
                s += &format!(" {} |", o.name());
            }
            s += " marginal |\n|---|";
            s += &"---|".repeat(e.orders.len() + 1);
            s += "\n";
            for (p, marginal) in &e.placements {
                s += &format!("| {p} |");
                for (o, _) in &e.orders {
                    let v: Vec<f64> = reps.iter().map(|r| cells[&(p.clone(), *o)][r]).collect();
                    s += &format!(" {} |", spread(&v, 1));
                }
                s += &format!(" {} |\n", spread(marginal, 1));
            }
            s += "| marginal |";
            for (_, marginal) in &e.orders {
                s += &format!(" {} |", spread(marginal, 1));
            }
            s += " |\n\n";
            s += &format!(
                "Order effect {} {}; placement effect {} {}.\n\n",
                spread(&e.order_effect, 1),
                m.unit,
                spread(&e.placement_effect, 1),
                m.unit
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::spec::GridCell;
    use sched::policy::SchedulerConfig;

    fn sched(placement: &str, order: JobOrder) -> NamedScheduler {
        NamedScheduler {
            label: format!("{placement}/{}", order.name()),
            config: SchedulerConfig::hadoop(),
            reduces: Default::default(),
            grid: Some(GridCell {
                placement: placement.into(),
                order,
            }),
        }
    }

    fn run(s: &NamedScheduler, rep: u32, jct: f64) -> RunRecord {
        RunRecord {
            point: "p".into(),
            scheduler: s.label.clone(),
            rep,
            status: "ok".into(),
            mean_jct_s: jct,
            ..RunRecord::default()
        }
    }

    #[test]
    fn main_effects_separate_order_from_placement() {
        use JobOrder::{Fair, Fifo};
        let g = [
            sched("A", Fifo),
            sched("A", Fair),
            sched("B", Fifo),
            sched("B", Fair),
        ];
        // JCT = 10 (A) or 20 (B), + 4 under fair; rep 1 adds 2 to B/fair
        // (an interaction).
        let mut runs = Vec::new();
        for rep in 0..2 {
            runs.push(run(&g[0], rep, 10.0));
            runs.push(run(&g[1], rep, 14.0));
            runs.push(run(&g[2], rep, 20.0));
            runs.push(run(&g[3], rep, 24.0 + 2.0 * rep as f64));
        }
        // A failed run drops its repetition from every cell.
        let mut failed = run(&g[0], 2, 0.0);
        failed.status = "failed".into();
        runs.push(failed);
        runs.push(run(&g[1], 2, 100.0));
        let e = effects(&g, &runs, "p", |r| r.mean_jct_s).unwrap();
        assert_eq!(
            e.orders,
            vec![(Fifo, vec![15.0, 15.0]), (Fair, vec![19.0, 20.0])]
        );
        assert_eq!(e.order_effect, vec![4.0, 5.0]);
        assert_eq!(e.placement_effect, vec![10.0, 11.0]);
        let text = section(&g, &["p".into()], &runs);
        assert!(
            text.contains("Order effect 4.5 (4.0-5.0) s; placement effect 10.5 (10.0-11.0) s."),
            "{text}"
        );
        assert!(
            text.contains("| B | 20.0 (20.0-20.0) | 25.0 (24.0-26.0) | 22.5 (22.0-23.0) |"),
            "{text}"
        );
        // No grid, no section.
        let plain = NamedScheduler {
            grid: None,
            ..sched("A", Fifo)
        };
        assert_eq!(section(&[plain], &["p".into()], &runs), "");
    }
}
