//! `delay`: delay scheduling (Zaharia et al., "Delay Scheduling", EuroSys
//! 2010, Algorithm 2 with wait times); DynDL's DELAY3, DELAY6 and DELAY10
//! are the presets `delay3`, `delay6`, `delay10`.
//!
//! For each free slot of the offered worker, jobs are visited in Zaharia's
//! order: increasing number of running tasks (fair sharing), ties by
//! submission. A job
//! with a data-local task for this worker launches it, and its wait is reset.
//! A job without one is skipped; the first skip starts its wait. Once it has
//! waited `threshold` (milliseconds here; `threshold_s` seconds in the config)
//! it may launch a random task read remotely, and it keeps that permission
//! until it next launches a data-local task (the paper's `j.skipped` flag).
//! If every job is skipped, the slot stays idle until the next offer.
//!
//! `fair` is the same with groups and weights ([`super::fair`]).

use super::{random_task, JobView, Millis, SchedContext, Scheduler};
use common::policy::RemotePick;
use common::{JobId, TaskRef, WorkerId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

/// Per-job skip state of delay scheduling.
pub(crate) struct LocalityWait {
    threshold: Millis,
    pick: RemotePick,
    /// Jobs being skipped, and since when.
    skipped_since: FxHashMap<JobId, Millis>,
}

impl LocalityWait {
    pub(crate) fn new(threshold: Millis, pick: RemotePick) -> Self {
        LocalityWait {
            threshold,
            pick,
            skipped_since: FxHashMap::default(),
        }
    }

    /// What `job` launches on `worker` now, if anything.
    pub(crate) fn choose(
        &mut self,
        rng: &mut ChaCha8Rng,
        now: Millis,
        worker: WorkerId,
        job: &JobView,
    ) -> Option<(TaskRef, WorkerId)> {
        if let Some(t) = job.local_task(worker) {
            self.skipped_since.remove(&job.id);
            return Some((t.task, worker));
        }
        let since = *self.skipped_since.entry(job.id).or_insert(now);
        if now.saturating_sub(since) >= self.threshold {
            random_task(rng, job, worker, self.pick)
        } else {
            None
        }
    }

    /// Forgets jobs that left the view.
    pub(crate) fn retain(&mut self, alive: impl Fn(JobId) -> bool) {
        self.skipped_since.retain(|j, _| alive(*j));
    }
}

pub struct Delay {
    wait: LocalityWait,
    rng: ChaCha8Rng,
}

impl Delay {
    pub fn new(threshold: Millis, pick: RemotePick, seed: u64) -> Self {
        Delay {
            wait: LocalityWait::new(threshold, pick),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Delay {
    fn name(&self) -> String {
        common::policy::SchedulerConfig::Delay {
            threshold_s: self.wait.threshold as f64 / 1000.0,
            pick: self.wait.pick,
        }
        .label()
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let no_groups = common::policy::Weights::new();
        while ctx.view().free_slots(worker) > 0 {
            // One group: the order is by running tasks, then submission.
            let order = super::fair::fair_order(ctx.view(), &no_groups, false);
            if !launch_one(&mut self.wait, &mut self.rng, now, worker, ctx, &order) {
                break;
            }
        }
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}

/// Gives one free slot of `worker` to the first job in `order` that
/// launches something; false if none did (or the launch failed).
pub(crate) fn launch_one(
    wait: &mut LocalityWait,
    rng: &mut ChaCha8Rng,
    now: Millis,
    worker: WorkerId,
    ctx: &mut SchedContext<'_>,
    order: &[JobId],
) -> bool {
    for &id in order {
        let Some(job) = ctx.view().job(id).filter(|j| j.has_pending()) else {
            continue;
        };
        if let Some((task, source)) = wait.choose(rng, now, worker, job) {
            return ctx.launch(task, worker, source).is_ok();
        }
    }
    false
}
