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
//! `wait_from = "last-launch"` measures the wait from the job's last launch
//! of any task (or its submission) instead: a job that has not launched for
//! the threshold takes the next free slot wherever its data is, and every
//! launch restarts the clock (a reading of delay scheduling under which a
//! job's wait grows while other jobs hold the slots, tested by dyndl-real).
//!
//! `wait_from = "skipped-heartbeats"` keeps Hadoop 1.x fair scheduler's
//! account: at each heartbeat (from any worker, free slot or not), a job
//! that was offered a slot and skipped at the previous heartbeat adds the
//! time between the two to its wait, and any launch resets it; time in which
//! the job is not offered a slot does not count.
//!
//! `order = "fifo"` visits jobs in submission order instead: an ablation
//! (labelled `delayN(fifo)`) that tells the locality wait from fair sharing.
//!
//! `fair` is the same with groups and weights ([`super::fair`]); the
//! skip state is [`crate::pick::LocalityWait`].

use crate::order::job_order;
use crate::pick::{first_choice, LocalityWait};
use crate::view::{Millis, SchedContext, Scheduler};
use common::policy::{JobOrder, RemotePick, WaitFrom};
use common::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub struct Delay {
    wait: LocalityWait,
    order: JobOrder,
    rng: ChaCha8Rng,
}

impl Delay {
    pub fn new(
        threshold: Millis,
        pick: RemotePick,
        order: JobOrder,
        wait_from: WaitFrom,
        seed: u64,
    ) -> Self {
        Delay {
            wait: LocalityWait::new(threshold, pick).measured_from(wait_from),
            order,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Delay {
    fn plan(&mut self, now: Millis, _ctx: &mut crate::view::PlanContext<'_>) {
        self.wait.heartbeat(now);
    }

    fn name(&self) -> String {
        common::policy::SchedulerConfig::Delay {
            threshold_s: self.wait.threshold() as f64 / 1000.0,
            pick: self.wait.pick(),
            order: self.order,
            wait_from: self.wait.wait_from(),
        }
        .label()
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (wait, rng, order) = (&mut self.wait, &mut self.rng, self.order);
        ctx.fill(worker, |view| {
            // One group: the order is by running tasks, then submission
            // (or, as an ablation, submission only).
            let order = job_order(view, order);
            first_choice(wait, rng, now, worker, view, &order)
        });
        self.wait.offer_done();
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}
