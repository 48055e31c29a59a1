//! `lsap`: Guo, Fox and Zhou's lsap-sched ("Investigation of Data Locality in
//! MapReduce", CCGrid 2012). Instead of filling one slot at a time, every
//! offer assigns all idle slots of the cluster at once so that as few tasks
//! as possible read remotely.
//!
//! With the paper's 0/1 costs (0 data-local, 1 remote) the linear sum
//! assignment is a maximum bipartite matching between pending tasks and
//! idle slots (a task may use a slot of a worker holding its input), which
//! [`crate::assign::max_matching`] solves exactly. Pending tasks are taken
//! in FIFO order (jobs by submission, tasks by index), and the matching
//! never drops an earlier task for a later one, so among the assignments
//! with the most data-local tasks it is the one closest to FIFO. Slots the
//! matching leaves idle then get the oldest unmatched tasks, read from a
//! random replica (the paper assigns every idle slot when there is work).
//!
//! A batch policy: it launches on every worker with a free slot, not only
//! the offered one.

use crate::assign::max_matching;
use crate::decision::{Rule, Why};
use crate::view::{ClusterView, Millis, SchedContext, Scheduler};
use base::{TaskRef, WorkerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// `policy = "lsap"`: every idle slot and pending task at once, an
/// assignment with the fewest data-remote tasks (maximum matching). No
/// parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LsapParams {}

impl crate::policy::Policy for LsapParams {
    const EXAMPLES: &'static [&'static str] = &["lsap"];

    fn name(&self) -> &'static str {
        "lsap"
    }

    fn label(&self, _: bool) -> String {
        "lsap".into()
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Lsap::new(seed))
    }
}

pub struct Lsap {
    rng: ChaCha8Rng,
}

impl Lsap {
    pub fn new(seed: u64) -> Self {
        Lsap {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Lsap {
    fn name(&self) -> String {
        "lsap".into()
    }

    fn offer(&mut self, _now: Millis, _worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let plan = plan(ctx.view(), &mut self.rng);
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

/// The launches (task, worker, source) lsap-sched makes on `view`.
pub fn plan(view: &ClusterView, rng: &mut impl Rng) -> Vec<(TaskRef, WorkerId, WorkerId)> {
    let idle: Vec<(WorkerId, u32)> = view.idle_workers().map(|w| (w.id, w.free)).collect();
    if idle.is_empty() {
        return Vec::new();
    }
    let node: HashMap<WorkerId, usize> = idle.iter().enumerate().map(|(i, w)| (w.0, i)).collect();
    let cap: Vec<u32> = idle.iter().map(|w| w.1).collect();
    let mut tasks = Vec::new();
    let mut cands = Vec::new();
    for job in view.jobs() {
        for t in job.pending() {
            cands.push(
                t.replicas
                    .iter()
                    .filter_map(|r| node.get(r).copied())
                    .collect::<Vec<_>>(),
            );
            tasks.push(t);
        }
    }
    let matched = max_matching(&cands, &cap);
    let mut left = cap.clone();
    let mut out = Vec::new();
    for (t, n) in matched.iter().enumerate() {
        if let Some(n) = *n {
            left[n] -= 1;
            out.push((tasks[t].task, idle[n].0, idle[n].0));
        }
    }
    // Fill the slots the matching left idle with the oldest unmatched tasks.
    let mut free_nodes = (0..idle.len()).flat_map(|n| std::iter::repeat_n(n, left[n] as usize));
    for (t, n) in matched.iter().enumerate() {
        if n.is_some() || tasks[t].replicas.is_empty() {
            continue;
        }
        let Some(n) = free_nodes.next() else {
            break;
        };
        let reps = &tasks[t].replicas;
        let src = reps[rng.gen_range(0..reps.len())];
        out.push((tasks[t].task, idle[n].0, src));
    }
    out
}
