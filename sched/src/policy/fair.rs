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

use crate::order::{fair_order, JobOrder};
use crate::pick::{first_choice, LocalityWait};
use crate::policy::{check_weights, fmt_num, nonneg, secs_to_ms, Policy, RemotePick, Weights};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `policy = "fair"`: Hadoop Fair Scheduler style, max-min fair shares
/// across groups (by weight), then across the group's jobs; optional delay
/// scheduling. Preset `hfs-be` (EAS's HFS best-effort baseline).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FairParams {
    /// Delay threshold in seconds; 0 launches remote tasks at once.
    #[serde(default)]
    pub delay_s: f64,
    /// Group weights (group name -> weight).
    #[serde(default)]
    pub weights: Weights,
}

impl Policy for FairParams {
    const EXAMPLES: &'static [&'static str] = &[
        "fair",
        "policy = \"fair\", delay_s = 1, weights = { default = 2 }",
    ];

    fn name(&self) -> &'static str {
        "fair"
    }

    fn label(&self, _: bool) -> String {
        format!("fair(delay={}s)", fmt_num(self.delay_s))
    }

    fn validate(&self) -> Result<(), String> {
        nonneg("fair", "delay_s", self.delay_s)?;
        check_weights("fair", &self.weights)
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![("hfs-be", FairParams::default())]
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Fair::new(
            secs_to_ms(self.delay_s),
            self.weights.clone(),
            seed,
        ))
    }
}

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
    /// With nothing waiting an offer finds no job: nothing changes.
    fn idle_offers_matter(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        FairParams {
            delay_s: self.delay as f64 / 1000.0,
            weights: self.weights.clone(),
        }
        .label(false)
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (wait, rng, weights) = (&mut self.wait, &mut self.rng, &self.weights);
        ctx.fill_why(worker, |view| {
            let order = fair_order(view, weights, true);
            first_choice(wait, rng, now, worker, view, &order, JobOrder::Fair)
        });
        let view = ctx.view();
        self.wait.retain(|j| view.job(j).is_some());
    }
}
