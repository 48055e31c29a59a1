//! `hadoop`: Hadoop's default FIFO scheduler with best-effort locality
//! (Guo et al.'s dl-sched on a single rack).
//!
//! Jobs run in submission order. For each free slot of the offered worker,
//! the head job (oldest with a pending task) launches a data-local task if it
//! has one for this worker; otherwise a uniformly random pending task of the
//! head job, read from a uniformly random replica (`pick = "oldest"`: the
//! oldest pending task, from its first replica).

use super::{random_task, JobView, Millis, SchedContext, Scheduler};
use common::policy::{RemotePick, SchedulerConfig};
use common::{TaskRef, WorkerId};
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
        while ctx.view().free_slots(worker) > 0 {
            let Some(job) = ctx.view().head_job() else {
                return;
            };
            let Some((task, source)) = dl_choice(&mut self.rng, job, worker, self.pick) else {
                return;
            };
            if ctx.launch(task, worker, source).is_err() {
                // Only a view inconsistency gets here; never spin on it.
                return;
            }
        }
    }
}

/// dl-sched's choice within one job: a data-local task for `worker` if the
/// job has one, else a random task read from a random replica.
pub(crate) fn dl_choice(
    rng: &mut impl rand::Rng,
    job: &JobView,
    worker: WorkerId,
    pick: RemotePick,
) -> Option<(TaskRef, WorkerId)> {
    match job.local_task(worker) {
        Some(t) => Some((t.task, worker)),
        None => random_task(rng, job, worker, pick),
    }
}
