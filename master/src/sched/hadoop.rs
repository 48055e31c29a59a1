//! `hadoop`: Hadoop's default FIFO scheduler with best-effort locality
//! (Guo et al.'s dl-sched on a single rack).
//!
//! Jobs run in submission order. For each free slot of the offered worker,
//! the head job (oldest with a pending task) launches a data-local task if it
//! has one for this worker; otherwise a uniformly random pending task of the
//! head job, read from a uniformly random replica. Parameter: only the seed.

use super::{Millis, SchedContext, Scheduler};
use common::WorkerId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct Hadoop {
    rng: ChaCha8Rng,
}

impl Hadoop {
    pub fn new(seed: u64) -> Self {
        Hadoop {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Hadoop {
    fn name(&self) -> String {
        "hadoop".into()
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        while ctx.view().free_slots(worker) > 0 {
            let Some(job) = ctx.view().head_job() else {
                return;
            };
            let (task, source) = match job.local_task(worker) {
                Some(t) => (t.task, worker),
                None => {
                    let t = job
                        .pending_at(self.rng.gen_range(0..job.pending_len()))
                        .expect("index below len");
                    if t.replicas.is_empty() {
                        // The owner fails such tasks' jobs; never pick one.
                        return;
                    }
                    let src = t.replicas[self.rng.gen_range(0..t.replicas.len())];
                    (t.task, src)
                }
            };
            if ctx.launch(task, worker, source).is_err() {
                // Only a view inconsistency gets here; never spin on it.
                return;
            }
        }
    }
}
