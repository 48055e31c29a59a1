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

use crate::order::fair_order;
use crate::pick::{first_choice, LocalityWait};
use crate::view::{Millis, SchedContext, Scheduler};
use common::policy::{RemotePick, SchedulerConfig, Weights};
use common::WorkerId;
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

impl Scheduler for Fair {
    fn name(&self) -> String {
        SchedulerConfig::Fair {
            delay_s: self.delay as f64 / 1000.0,
            weights: self.weights.clone(),
        }
        .label()
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (wait, rng, weights) = (&mut self.wait, &mut self.rng, &self.weights);
        ctx.fill(worker, |view| {
            let order = fair_order(view, weights, true);
            first_choice(wait, rng, now, worker, view, &order)
        });
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}
