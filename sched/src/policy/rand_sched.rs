//! `rand`: Guo et al.'s rand-sched, which degrades data locality on purpose
//! to measure what locality is worth (their Fig 8, input-sink slowdown).
//!
//! FIFO jobs. For each free slot of the offered worker, with probability
//! `randomness` (r in [0, 1]) the head job launches a uniformly random
//! pending task (local only if it happens to have a replica here, else read
//! from a random replica); otherwise dl-sched's choice (a data-local task of
//! the head job if any, else a random one). r = 0 is exactly `hadoop`.

use crate::decision::{Pick, Rule, Why};
use crate::order::first_job;
use crate::pick::{dl_choice, random_task};
use crate::policy::{fmt_num, unit_interval, JobOrder, Policy, RemotePick};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `policy = "rand"`: Guo et al.'s rand-sched, with probability
/// `randomness` a free slot gets a random pending task of the head job,
/// otherwise dl-sched's choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RandParams {
    /// r in [0, 1]; 0 is `hadoop`.
    pub randomness: f64,
    /// Job order: `fifo` (default, Guo's) or another, as an ablation.
    #[serde(default = "fifo", skip_serializing_if = "JobOrder::is_fifo")]
    pub order: JobOrder,
}

fn fifo() -> JobOrder {
    JobOrder::Fifo
}

impl Policy for RandParams {
    const EXAMPLES: &'static [&'static str] = &[
        "policy = \"rand\", randomness = 0.5",
        "policy = \"rand\", randomness = 1",
        "policy = \"rand\", randomness = 0.5, order = \"fair\"",
    ];

    fn name(&self) -> &'static str {
        "rand"
    }

    fn label(&self, _: bool) -> String {
        match self.order {
            JobOrder::Fifo => format!("rand(r={})", fmt_num(self.randomness)),
            o => format!("rand(r={},{})", fmt_num(self.randomness), o.name()),
        }
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        unit_interval("rand", "randomness", self.randomness)
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(RandSched::new(self.clone(), seed))
    }
}

pub struct RandSched {
    params: RandParams,
    rng: ChaCha8Rng,
    /// A separate stream for the coin, so that with r = 0 the task choices
    /// draw exactly what `hadoop`'s do.
    coin: ChaCha8Rng,
}

impl RandSched {
    pub fn new(params: RandParams, seed: u64) -> Self {
        RandSched {
            params,
            rng: ChaCha8Rng::seed_from_u64(seed),
            coin: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c011),
        }
    }
}

impl Scheduler for RandSched {
    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (rng, coin) = (&mut self.rng, &mut self.coin);
        let (randomness, order) = (self.params.randomness, self.params.order);
        ctx.fill_why(worker, |view| {
            let job = first_job(view, order).ok_or(Why::rule(Rule::NothingToRun))?;
            let random = randomness > 0.0 && coin.gen::<f64>() < randomness;
            let (task, source) = if random {
                random_task(rng, job, worker, RemotePick::Random)
            } else {
                dl_choice(rng, job, worker, RemotePick::Random)
            }
            .ok_or(Why::rule(Rule::NothingToRun).for_job(job.id))?;
            let rule = match (source == worker, random) {
                (true, _) => Rule::DataLocal,
                (false, true) => Rule::Random,
                (false, false) => Rule::NoWait,
            };
            Ok(Pick {
                task,
                source,
                why: order.ranked(view, Why::rule(rule), job, 0),
            })
        });
    }
}
