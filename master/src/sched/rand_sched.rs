//! `rand`: Guo et al.'s rand-sched, which degrades data locality on purpose
//! to measure what locality is worth (their Fig 8, input-sink slowdown).
//!
//! FIFO jobs. For each free slot of the offered worker, with probability
//! `randomness` (r in [0, 1]) the head job launches a uniformly random
//! pending task (local only if it happens to have a replica here, else read
//! from a random replica); otherwise dl-sched's choice (a data-local task of
//! the head job if any, else a random one). r = 0 is exactly `hadoop`.

use super::hadoop::dl_choice;
use super::{random_task, Millis, SchedContext, Scheduler};
use common::policy::RemotePick;
use common::WorkerId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct RandSched {
    randomness: f64,
    rng: ChaCha8Rng,
    /// A separate stream for the coin, so that with r = 0 the task choices
    /// draw exactly what `hadoop`'s do.
    coin: ChaCha8Rng,
}

impl RandSched {
    pub fn new(randomness: f64, seed: u64) -> Self {
        RandSched {
            randomness,
            rng: ChaCha8Rng::seed_from_u64(seed),
            coin: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c011),
        }
    }
}

impl Scheduler for RandSched {
    fn name(&self) -> String {
        common::policy::SchedulerConfig::Rand {
            randomness: self.randomness,
        }
        .label()
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        while ctx.view().free_slots(worker) > 0 {
            let Some(job) = ctx.view().head_job() else {
                return;
            };
            let random = self.randomness > 0.0 && self.coin.gen::<f64>() < self.randomness;
            let pick = if random {
                random_task(&mut self.rng, job, worker, RemotePick::Random)
            } else {
                dl_choice(&mut self.rng, job, worker, RemotePick::Random)
            };
            let Some((task, source)) = pick else {
                return;
            };
            if ctx.launch(task, worker, source).is_err() {
                return;
            }
        }
    }
}
