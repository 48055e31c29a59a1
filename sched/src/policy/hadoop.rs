//! `hadoop`: Hadoop's default FIFO scheduler with best-effort locality
//! (Guo et al.'s dl-sched).
//!
//! Jobs run in submission order. For each free slot of the offered worker,
//! the head job (oldest with a pending task) launches a data-local task if it
//! has one for this worker; otherwise, when the workers span several racks,
//! its first pending task with a replica in this worker's rack, read from
//! that rack; otherwise a uniformly random pending task of the head job,
//! read from a uniformly random replica (`pick = "oldest"`: the oldest
//! pending task, from its first replica). On one rack (no rack set) the
//! rack level never applies.

use crate::pick::random_task;
use crate::view::{Millis, SchedContext, Scheduler};
use common::policy::{RemotePick, SchedulerConfig};
use common::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub struct Hadoop {
    pick: RemotePick,
    rng: ChaCha8Rng,
}

impl Hadoop {
    pub fn new(pick: RemotePick, seed: u64) -> Self {
        Hadoop {
            pick,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Hadoop {
    fn name(&self) -> String {
        SchedulerConfig::Hadoop { pick: self.pick }.label()
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (rng, pick) = (&mut self.rng, self.pick);
        ctx.fill(worker, |view| {
            let job = view.head_job()?;
            match job.local_task(worker) {
                Some(t) => Some((t.task, worker)),
                None => view
                    .rack_local_task(job, worker)
                    .or_else(|| random_task(rng, job, worker, pick)),
            }
        });
    }
}
