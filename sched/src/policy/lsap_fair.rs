//! `lsap-fair`: Guo, Fox and Zhou's lsap-fair-sched: lsap-sched whose
//! assignment cost adds a fairness cost (FC) to the data-locality cost (DLC),
//! following the paper's algorithm skeleton (Section III.D):
//!
//! - groups (pools) have weights w_i (normalised over the groups with jobs);
//!   rt_i is group i's running tasks, AS all slots of live workers;
//! - s_i = rt_i / sum(rt) is its share of the occupied slots, and its group
//!   fairness cost GFC_i = 100 * min(1, s_i / w_i): 0 for an idle group, 100
//!   at or above its ration. (The paper's formula (10) is an image missing
//!   from our copy; this is the reading that matches its text: low for
//!   groups under their ration, FC in [0, 100] as in Table II.)
//! - sto_i = max(0, floor(w_i * AS - rt_i)), capped by its pending tasks, are
//!   the slots it may still occupy. Up to sto_i of its tasks get FC = GFC_i,
//!   preferring tasks with input on a node with an idle slot (the skeleton's
//!   DLT), then the oldest others; the rest get FC = β * w_i;
//! - DLC is 0 for a slot on a node holding the task's input, else α;
//! - the assignment minimising the sum of FC + DLC over idle slots is solved
//!   exactly with the Hungarian algorithm ([`crate::assign::min_cost_assignment`]).
//!
//! Tasks with identical cost rows (same group, same FC, same set of idle
//! nodes holding their input) are interchangeable, so at most one per idle
//! slot of each such class enters the solver: exact, and small.
//!
//! A batch policy: it launches on every worker with a free slot.

use crate::assign::min_cost_assignment;
use crate::decision::{Rule, Why};
use crate::order::group_weights;
use crate::policy::{check_weights, fmt_num, nonneg, Policy, Weights};
use crate::view::{ClusterView, Millis, PendingTask, SchedContext, Scheduler};
use base::{TaskRef, WorkerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// `policy = "lsap-fair"`: Guo's lsap-fair-sched, assignment cost =
/// fairness cost + data-locality cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LsapFairParams {
    /// α: the data-locality cost of a data-remote assignment.
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// β: a task beyond its group's slots-to-occupy costs β * w(group).
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// Group weights (group name -> weight).
    #[serde(default)]
    pub weights: Weights,
}

fn default_alpha() -> f64 {
    50.0
}

fn default_beta() -> f64 {
    200.0
}

impl Policy for LsapFairParams {
    const EXAMPLES: &'static [&'static str] = &[
        "lsap-fair",
        "policy = \"lsap-fair\", alpha = 20, beta = 500",
    ];

    fn name(&self) -> &'static str {
        "lsap-fair"
    }

    fn label(&self, _: bool) -> String {
        format!(
            "lsap-fair(a={},b={})",
            fmt_num(self.alpha),
            fmt_num(self.beta)
        )
    }

    fn validate(&self) -> Result<(), String> {
        nonneg("lsap-fair", "alpha", self.alpha)?;
        nonneg("lsap-fair", "beta", self.beta)?;
        check_weights("lsap-fair", &self.weights)
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(LsapFair::new(
            self.alpha,
            self.beta,
            self.weights.clone(),
            seed,
        ))
    }
}

/// Upper end of the fairness cost range (Guo's Table II uses [0, 100]).
pub const FC_MAX: f64 = 100.0;

pub struct LsapFair {
    alpha: f64,
    beta: f64,
    weights: Weights,
    rng: ChaCha8Rng,
}

impl LsapFair {
    pub fn new(alpha: f64, beta: f64, weights: Weights, seed: u64) -> Self {
        LsapFair {
            alpha,
            beta,
            weights,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for LsapFair {
    fn name(&self) -> String {
        LsapFairParams {
            alpha: self.alpha,
            beta: self.beta,
            weights: self.weights.clone(),
        }
        .label(false)
    }

    fn offer(&mut self, _now: Millis, _worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let plan = plan(
            ctx.view(),
            self.alpha,
            self.beta,
            &self.weights,
            &mut self.rng,
        );
        for (task, worker, source) in plan {
            if ctx
                .launch_why(task, worker, source, Why::rule(Rule::Plan))
                .is_err()
            {
                return;
            }
        }
        // Read only if the offer launched nothing.
        ctx.decline(Why::rule(Rule::NotPlanned));
    }
}

/// The launches (task, worker, source) lsap-fair-sched makes on `view`.
pub fn plan(
    view: &ClusterView,
    alpha: f64,
    beta: f64,
    weights: &Weights,
    rng: &mut impl Rng,
) -> Vec<(TaskRef, WorkerId, WorkerId)> {
    // Idle slots, one entry per free slot, and the nodes they are on.
    let slots: Vec<WorkerId> = view
        .idle_workers()
        .flat_map(|w| std::iter::repeat_n(w.id, w.free as usize))
        .collect();
    if slots.is_empty() || view.pending_total() == 0 {
        return Vec::new();
    }
    let idle_nodes: BTreeMap<WorkerId, usize> = view
        .idle_workers()
        .enumerate()
        .map(|(i, w)| (w.id, i))
        .collect();
    let w = group_weights(weights, view.jobs());
    let all_slots = view.total_map_slots() as f64;
    let mut rt: BTreeMap<&str, u32> = BTreeMap::new();
    let mut by_group: BTreeMap<&str, Vec<&PendingTask>> = BTreeMap::new();
    for j in view.jobs() {
        *rt.entry(j.group.as_str()).or_default() += j.running;
        by_group
            .entry(j.group.as_str())
            .or_default()
            .extend(j.pending());
    }
    let rt_total: u32 = rt.values().sum();

    // Candidates: (task, fc, idle nodes holding its input), at most one per
    // slot for each class of identical cost rows.
    let mut cands: Vec<(&PendingTask, f64, Vec<usize>)> = Vec::new();
    let mut per_class: HashMap<(&str, bool, Vec<usize>), usize> = HashMap::new();
    for (g, tasks) in &by_group {
        let wi = w[*g];
        let rti = rt[g];
        let si = if rt_total == 0 {
            0.0
        } else {
            rti as f64 / rt_total as f64
        };
        let gfc = FC_MAX * (si / wi.max(1e-12)).min(1.0);
        let sto = ((wi * all_slots - rti as f64).floor().max(0.0) as usize).min(tasks.len());
        let local_nodes = |t: &PendingTask| -> Vec<usize> {
            let mut v: Vec<usize> = t
                .replicas
                .iter()
                .filter_map(|r| idle_nodes.get(r).copied())
                .collect();
            v.sort_unstable();
            v
        };
        let nodes: Vec<Vec<usize>> = tasks.iter().map(|t| local_nodes(t)).collect();
        // Choose the sto tasks that get GFC: data-local candidates first.
        let mut chosen = vec![false; tasks.len()];
        let mut left = sto;
        for pass_local in [true, false] {
            for (i, n) in nodes.iter().enumerate() {
                if left == 0 {
                    break;
                }
                if !chosen[i] && n.is_empty() != pass_local {
                    chosen[i] = true;
                    left -= 1;
                }
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            if t.replicas.is_empty() {
                continue;
            }
            let key = (*g, chosen[i], nodes[i].clone());
            let seen = per_class.entry(key).or_default();
            if *seen >= slots.len() {
                continue;
            }
            *seen += 1;
            let fc = if chosen[i] { gfc } else { beta * wi };
            cands.push((t, fc, nodes[i].clone()));
        }
    }
    if cands.is_empty() {
        return Vec::new();
    }
    // Rows: idle slots; columns: candidates. Costs in thousandths.
    let (rows, cols) = (slots.len(), cands.len());
    let mut cost = Vec::with_capacity(rows * cols);
    for s in &slots {
        let n = idle_nodes[s];
        for (_, fc, nodes) in &cands {
            let dlc = if nodes.binary_search(&n).is_ok() {
                0.0
            } else {
                alpha
            };
            cost.push(((fc + dlc) * 1000.0).round() as i64);
        }
    }
    let assignment = min_cost_assignment(&cost, rows, cols);
    let mut out = Vec::new();
    for (r, c) in assignment.iter().enumerate() {
        let Some(c) = *c else { continue };
        let (t, _, nodes) = &cands[c];
        let worker = slots[r];
        let source = if nodes.binary_search(&idle_nodes[&worker]).is_ok() {
            worker
        } else {
            t.replicas[rng.gen_range(0..t.replicas.len())]
        };
        out.push((t.task, worker, source));
    }
    out
}
