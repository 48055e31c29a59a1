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
use super::{Millis, SchedContext, Scheduler};
use common::policy::{RemotePick, SchedulerConfig, Weights};
use common::{JobId, WorkerId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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

/// Jobs with pending tasks in fair-share order (`by_group`: weighted group
/// shares first; without, every job is in one group).
pub(crate) fn fair_order(
    view: &super::ClusterView,
    weights: &Weights,
    by_group: bool,
) -> Vec<JobId> {
    // Groups are few: a flat list beats maps here (this runs per free slot).
    let mut groups: Vec<(&str, f64, u32)> = Vec::new();
    let mut group_of: Vec<usize> = Vec::with_capacity(64);
    for j in view.jobs() {
        let name = if by_group { j.group.as_str() } else { "" };
        // One group without `by_group`: no string comparisons (they were
        // most of delay's decision cost).
        let found = if by_group {
            groups.iter().position(|g| g.0 == name)
        } else {
            (!groups.is_empty()).then_some(0)
        };
        let g = match found {
            Some(g) => g,
            None => {
                let w = weights.get(name).copied().unwrap_or(1.0);
                groups.push((name, w, 0));
                groups.len() - 1
            }
        };
        groups[g].2 += j.running;
        group_of.push(g);
    }
    let total: f64 = groups.iter().map(|g| g.1).sum::<f64>().max(1e-12);
    let mut jobs: Vec<(f64, u32, usize, JobId)> = view
        .jobs()
        .enumerate()
        .filter(|(_, j)| j.has_pending())
        .map(|(pos, j)| {
            let (_, w, running) = groups[group_of[pos]];
            (
                running as f64 / (w / total).max(1e-12),
                j.running,
                pos,
                j.id,
            )
        })
        .collect();
    jobs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
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
            let order = fair_order(ctx.view(), &self.weights, true);
            if !launch_one(&mut self.wait, &mut self.rng, now, worker, ctx, &order) {
                break;
            }
        }
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}
