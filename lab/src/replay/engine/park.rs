//! Idle workers' heartbeats left out: while no task waits, a worker
//! whose heartbeat would find nothing is parked (its regular heartbeats
//! not taken) until a task waits, a job arrives or a task of its ends,
//! for a policy whose idle offers change nothing
//! ([`sched::view::Scheduler::idle_offers_matter`]). When a task waits
//! again every parked worker heartbeats again, and the view hears of each
//! worker's state as its last heartbeat left out would have told it (a
//! policy may read another worker's free slots: the reduce placement
//! does).

use super::*;

impl Replay<'_> {
    /// No map pending and no reduce waiting, in the view.
    pub(super) fn nothing_waits(&self) -> bool {
        self.view.head_job().is_none()
            && self
                .view
                .reduce_jobs()
                .all(|r| r.pending().next().is_none())
    }

    /// Whether worker `w`'s heartbeat at `t` can be left out: with
    /// parking on, nothing waits, no job arrives by `t` and `w` has no
    /// map end to report (an offer then finds nothing, and the policy
    /// says that changes nothing). A regular heartbeat parks the worker
    /// (its next ones are not taken) until a task waits, a job arrives
    /// or a task of its ends.
    pub(super) fn parks(&mut self, t: u64, w: u32, regular: Option<u64>) -> bool {
        let arriving = self
            .order
            .get(self.next_job)
            .is_some_and(|&j| self.jobs[j].arrival_ms <= t);
        if !self.park
            || arriving
            || !self.unreported[w as usize].is_empty()
            || !self.nothing_waits()
        {
            return false;
        }
        // The offer left out would have found a free slot or not.
        let busy = self.running[w as usize].len() + self.background_running(t, w).len();
        if self.cluster.slots[w as usize] as usize > busy {
            self.sched.idle_offer(t, WorkerId(w));
        }
        if let Some(k) = regular {
            self.parked[w as usize] = Some(k);
            self.n_parked += 1;
        }
        if self.stale[w as usize].replace(t).is_none() {
            self.stale_list.push(w);
        }
        true
    }

    /// Worker `w`'s regular heartbeats go on from its first after the one
    /// it parked at that is still to come: at `at` or later, and after the
    /// last heartbeat taken (in the heartbeats' order: time, then rank).
    /// The heartbeat before that one is the last it would have had.
    pub(super) fn unpark(&mut self, w: u32, at: u64) {
        let Some(k) = self.parked[w as usize].take() else {
            return;
        };
        self.n_parked -= 1;
        let c = self.cluster;
        let wu = w as usize;
        let beat = |k: u64| (c.phase(wu) + k as f64 * c.period(wu)).round() as u64;
        let mut next = ((at as f64 - c.phase(wu)) / c.period(wu)).ceil().max(0.0) as u64;
        while next > 0 && beat(next - 1) >= at {
            next -= 1;
        }
        let mut next = next.max(k + 1);
        while beat(next) < at || (beat(next), u64::from(w)) <= self.last_beat {
            next += 1;
        }
        self.beats
            .push(Reverse((beat(next), u64::from(w), w, Some(next))));
        let last = beat(next - 1);
        self.stale[wu] = Some(self.stale[wu].map_or(last, |s| s.max(last)));
    }

    /// A task waits again (or a job arrives at `at`): the parked workers
    /// heartbeat again, and the view learns each stale worker's state as
    /// its last heartbeat left out would have told it.
    pub(super) fn wake(&mut self, at: u64) {
        for w in std::mem::take(&mut self.stale_list) {
            self.unpark(w, at);
            if let Some(t) = self.stale[w as usize].take() {
                if t > self.state_at[w as usize] {
                    self.worker_state(t, w);
                }
            }
        }
    }
}
