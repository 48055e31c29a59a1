//! `fair`: Hadoop Fair Scheduler style max-min fairness (Zaharia et al.'s
//! fair sharing, which delay scheduling was built into), with optional delay.
//!
//! Jobs belong to groups (pools; `group` at submission, default `default`)
//! with weights (`weights`, default 1 each, normalised over the groups that
//! have jobs). For each free slot, jobs are ordered by their group's running
//! tasks divided by its weight (the most underserved group first), then by
//! the job's own running tasks (max-min across the group's jobs), then by
//! submission. The slot goes to the first job in that order that launches,
//! under the delay rule of [`super::delay`] with threshold `delay_s`
//! (0 = launch remotely at once, i.e. fair sharing without delay).

use super::delay::{launch_one, LocalityWait};
use super::{group_weights, Millis, SchedContext, Scheduler};
use common::policy::{RemotePick, SchedulerConfig, Weights};
use common::{JobId, WorkerId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

pub struct Fair {
    wait: LocalityWait,
    delay: Millis,
    weights: Weights,
    rng: ChaCha8Rng,
}

impl Fair {
    pub fn new(delay: Millis, weights: Weights, seed: u64) -> Self {
        Fair {
            wait: LocalityWait::new(delay, RemotePick::Random),
            delay,
            weights,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

/// Jobs with pending tasks in fair-share order.
pub(crate) fn fair_order(view: &super::ClusterView, weights: &Weights) -> Vec<JobId> {
    let w = group_weights(weights, view.jobs());
    let mut running: BTreeMap<&str, u32> = BTreeMap::new();
    for j in view.jobs() {
        *running.entry(j.group.as_str()).or_default() += j.running;
    }
    let mut jobs: Vec<(f64, u32, usize, JobId)> = view
        .jobs()
        .enumerate()
        .filter(|(_, j)| j.has_pending())
        .map(|(pos, j)| {
            let share = running[j.group.as_str()] as f64 / w[&j.group].max(1e-12);
            (share, j.running, pos, j.id)
        })
        .collect();
    jobs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    jobs.into_iter().map(|j| j.3).collect()
}

impl Scheduler for Fair {
    fn name(&self) -> String {
        SchedulerConfig::Fair {
            delay_s: self.delay as f64 / 1000.0,
            weights: self.weights.clone(),
        }
        .label()
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        while ctx.view().free_slots(worker) > 0 {
            let order = fair_order(ctx.view(), &self.weights);
            if !launch_one(&mut self.wait, &mut self.rng, now, worker, ctx, &order) {
                break;
            }
        }
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}
