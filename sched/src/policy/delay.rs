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
//! launch restarts the clock (Spark's rule before 3.1, and a reading of
//! delay scheduling under which a job's wait grows while other jobs hold
//! the slots, tested by dyndl-real).
//!
//! `wait_from = "skipped-heartbeats"` keeps Hadoop 1.x fair scheduler's
//! account: at each heartbeat (from any worker, free slot or not), a job
//! that was offered a slot and skipped at the previous heartbeat adds the
//! time between the two to its wait, and any launch resets it; time in which
//! the job is not offered a slot does not count.
//!
//! `wait_from = "spark"` is Spark's rule since 3.1 (SPARK-18886): a launch
//! resets the wait only if the job declined no offer for locality since the
//! last reset, so a job whose data sits on one busy worker goes remote once
//! the threshold has passed even though that worker keeps launching its
//! data-local tasks (under `last-launch` it never would; the scenario of
//! SPARK-18886 is a test in `sim.rs`).
//!
//! `order = "fifo"` visits jobs in submission order instead: an ablation
//! (labelled `delayN(fifo)`) that tells the locality wait from fair sharing.
//!
//! `fair` is the same with groups and weights ([`super::fair`]); the
//! skip state is [`crate::pick::LocalityWait`].

use crate::order::OrderCache;
use crate::pick::{first_choice, LocalityWait};
use crate::policy::{fmt_num, nonneg, secs_to_ms, JobOrder, Policy, RemotePick, WaitFrom};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `policy = "delay"`: jobs in fair-sharing order (fewest running tasks
/// first); a job without a data-local task for the free slot is skipped
/// until it has waited `threshold_s` seconds. Presets: `delay3`, `delay6`,
/// `delay10`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DelayParams {
    /// Seconds a job may be skipped before it launches remote tasks.
    pub threshold_s: f64,
    /// Which pending task a data-remote launch takes.
    #[serde(default, skip_serializing_if = "RemotePick::is_random")]
    pub pick: RemotePick,
    /// Job order; `fifo` is an ablation (locality waits without fair
    /// sharing), labelled `delayN(fifo)`.
    #[serde(default = "fair_order", skip_serializing_if = "JobOrder::is_fair")]
    pub order: JobOrder,
    /// Where the wait is measured from: `first-skip` (default, Zaharia et
    /// al.), `last-launch` (Spark before 3.1), `skipped-heartbeats` (Hadoop
    /// 1.x's fair scheduler) or `spark` (Spark 3.1 and later), labelled
    /// `delayN(last-launch)` and so on.
    #[serde(default, skip_serializing_if = "WaitFrom::is_first_skip")]
    pub wait_from: WaitFrom,
}

fn fair_order() -> JobOrder {
    JobOrder::Fair
}

impl DelayParams {
    /// `threshold_s`, random remote picks, fair order, first-skip waits.
    pub fn new(threshold_s: f64) -> Self {
        DelayParams {
            threshold_s,
            pick: RemotePick::Random,
            order: JobOrder::Fair,
            wait_from: WaitFrom::FirstSkip,
        }
    }
}

impl Policy for DelayParams {
    const EXAMPLES: &'static [&'static str] = &[
        "delay3",
        "policy = \"delay\", threshold_s = 0.25",
        "policy = \"delay\", threshold_s = 1, order = \"fifo\"",
        "policy = \"delay\", threshold_s = 1, wait_from = \"last-launch\"",
        "policy = \"delay\", threshold_s = 1, wait_from = \"skipped-heartbeats\"",
        "policy = \"delay\", threshold_s = 1, wait_from = \"spark\"",
    ];

    fn name(&self) -> &'static str {
        "delay"
    }

    fn label(&self, _: bool) -> String {
        let mut extra: Vec<&str> = Vec::new();
        match self.wait_from {
            WaitFrom::FirstSkip => {}
            WaitFrom::LastLaunch => extra.push("last-launch"),
            WaitFrom::SkippedHeartbeats => extra.push("skipped-heartbeats"),
            WaitFrom::Spark => extra.push("spark"),
        }
        if self.pick == RemotePick::Oldest {
            extra.push("oldest");
        }
        if self.order != JobOrder::Fair {
            extra.push(self.order.name());
        }
        if extra.is_empty() {
            format!("delay{}", fmt_num(self.threshold_s))
        } else {
            format!("delay{}({})", fmt_num(self.threshold_s), extra.join(","))
        }
    }

    fn validate(&self) -> Result<(), String> {
        nonneg("delay", "threshold_s", self.threshold_s)
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("delay3", DelayParams::new(3.0)),
            ("delay6", DelayParams::new(6.0)),
            ("delay10", DelayParams::new(10.0)),
        ]
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Delay::new(self.clone(), seed))
    }
}

pub struct Delay {
    params: DelayParams,
    wait: LocalityWait,
    order: JobOrder,
    rng: ChaCha8Rng,
    /// The jobs in `order`, kept while they do not change.
    jobs: OrderCache,
}

impl Delay {
    pub fn new(params: DelayParams, seed: u64) -> Self {
        Delay {
            wait: LocalityWait::new(secs_to_ms(params.threshold_s), params.pick)
                .measured_from(params.wait_from),
            order: params.order,
            params,
            rng: ChaCha8Rng::seed_from_u64(seed),
            jobs: OrderCache::default(),
        }
    }
}

impl Scheduler for Delay {
    /// With nothing waiting an offer finds no job: nothing changes.
    fn idle_offers_matter(&self) -> bool {
        false
    }

    fn plan(&mut self, now: Millis, _ctx: &mut crate::view::PlanContext<'_>) {
        self.wait.heartbeat(now);
    }

    /// Every job with a pending map is waiting: a worker with none of
    /// their blocks is declined until the first wait ends.
    fn declines_until(&self, now: Millis, view: &crate::view::ClusterView) -> Option<Millis> {
        let pending = view.jobs().filter(|j| j.has_pending());
        self.wait.declines_until(pending).filter(|&d| d > now)
    }

    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (wait, rng, order, cache) = (&mut self.wait, &mut self.rng, self.order, &mut self.jobs);
        ctx.fill_why(worker, |view| {
            // One group: the order is by running tasks, then submission
            // (or, as an ablation, submission only).
            let jobs = cache.get(view, order);
            first_choice(wait, rng, now, worker, view, jobs, order)
        });
        self.wait.offer_done();
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}
