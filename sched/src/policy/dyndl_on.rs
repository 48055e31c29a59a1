//! `dyndl-on`: DynDL's online algorithm (DynDLOn, Algorithm 1 of "Dynamic
//! Data Locality", Applied Sciences 2018), extended to many jobs as the
//! paper's real execution does.
//!
//! For each free slot of the offered worker s:
//! 1. a data-local task for s, from the oldest job that has one, launches at
//!    once and restarts s's wait (Algorithm 1, lines 1-4);
//! 2. otherwise the slot waits. Its delay is W when s runs no data-remote
//!    task, else max(g(r_s), W), where r_s is the number of data-remote tasks
//!    running on s and g(n) = remote * (1 + θ * min(n, slots)) is the
//!    expected running time of a data-remote task there (lines 5-8). Once s
//!    has waited that long since its last launch, the head job's random task
//!    launches remotely and the wait restarts (lines 9-12).
//!
//! `one_remote` is the variant the paper ran for real (Section 6.2): never
//! start a second data-remote task on a worker already running one.
//!
//! The paper keeps a wait per core; here it is per worker (the time since
//! the worker last launched anything while it had a free slot), since slots
//! of one worker are interchangeable. Parameters: `w_s` (W, seconds),
//! `remote_s` (seconds a data-remote task takes alone), `theta` (θ).

use crate::pick::random_task;
use crate::view::{Millis, SchedContext, Scheduler};
use common::policy::{RemotePick, SchedulerConfig};
use common::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

pub struct DyndlOn {
    delays: Delays,
    one_remote: bool,
    pick: RemotePick,
    rng: ChaCha8Rng,
    /// Worker -> when its current wait for a data-local task began.
    waiting_since: HashMap<WorkerId, Millis>,
}

impl DyndlOn {
    pub fn new(
        w: Millis,
        remote: Millis,
        theta: f64,
        one_remote: bool,
        pick: RemotePick,
        seed: u64,
    ) -> Self {
        DyndlOn {
            delays: Delays { w, remote, theta },
            one_remote,
            pick,
            rng: ChaCha8Rng::seed_from_u64(seed),
            waiting_since: HashMap::new(),
        }
    }

    /// g(n) in milliseconds.
    pub fn remote_cost(&self, n: u32, slots: u32) -> Millis {
        self.delays.remote_cost(n, slots)
    }

    /// The delay a free slot of a worker running `r` remote tasks waits.
    pub fn delay(&self, r: u32, slots: u32) -> Millis {
        self.delays.delay(r, slots)
    }
}

/// W, the time a data-remote task takes alone, and θ.
#[derive(Clone, Copy, Debug)]
struct Delays {
    w: Millis,
    remote: Millis,
    theta: f64,
}

impl Delays {
    fn remote_cost(&self, n: u32, slots: u32) -> Millis {
        (self.remote as f64 * (1.0 + self.theta * n.min(slots) as f64)).round() as Millis
    }

    fn delay(&self, r: u32, slots: u32) -> Millis {
        if r == 0 {
            self.w
        } else {
            self.remote_cost(r, slots).max(self.w)
        }
    }
}

impl Scheduler for DyndlOn {
    fn name(&self) -> String {
        SchedulerConfig::DyndlOn {
            w_s: self.delays.w as f64 / 1000.0,
            remote_s: self.delays.remote as f64 / 1000.0,
            theta: self.delays.theta,
            one_remote: self.one_remote,
            pick: self.pick,
        }
        .label()
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (delays, one_remote, pick) = (self.delays, self.one_remote, self.pick);
        let (rng, waiting_since) = (&mut self.rng, &mut self.waiting_since);
        ctx.fill(worker, |view| {
            if let Some(t) = view.jobs().find_map(|j| j.local_task(worker)) {
                waiting_since.remove(&worker);
                return Some((t.task, worker));
            }
            // Nothing pending: not waiting for anything.
            let (Some(wv), Some(job)) = (view.worker(worker), view.head_job()) else {
                waiting_since.remove(&worker);
                return None;
            };
            let (r, slots) = (wv.remote_running, wv.slots);
            let since = *waiting_since.entry(worker).or_insert(now);
            if one_remote && r >= 1 || now.saturating_sub(since) < delays.delay(r, slots) {
                return None;
            }
            let choice = random_task(rng, job, worker, pick)?;
            waiting_since.remove(&worker);
            Some(choice)
        });
    }
}
