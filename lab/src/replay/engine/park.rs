//! Idle workers' heartbeats left out: while no task waits, a worker
//! whose heartbeat would find nothing is parked (its regular heartbeats
//! not taken) until a task waits, a job arrives or a task of its ends,
//! for a policy whose idle offers change nothing
//! ([`sched::view::Scheduler::idle_offers_matter`]). When a task waits
//! again every parked worker heartbeats again, and the view hears of each
//! worker's state as its last heartbeat left out would have told it (a
//! policy may read another worker's free slots: the reduce placement
//! does).
//!
//! Where every worker heartbeats at the same whole period, a wake does not
//! put every parked worker's heartbeat back: the parked workers are kept in
//! the order their heartbeats come round ([`Sleepers`]), and only the
//! earliest is put back, when it would be the next heartbeat taken, for as
//! long as a task waits. The heartbeats after the waiting tasks are placed
//! are then never simulated (they would only park again). A parked worker's
//! state cannot change without a heartbeat of its own (a task of its ends,
//! which puts it back), except by its background processes: only the
//! workers that have some are brought up to date at a wake.
//!
//! While maps wait and no reduce is ready, a policy may say that until some
//! moment it declines, changing nothing, every offer from a worker that
//! holds none of the pending maps' blocks (delay scheduling while every
//! waiting job is within its wait: [`Scheduler::declines_until`]). Such a
//! worker parks too, and the parked ones heartbeat again from that moment
//! on, from the next arrival on (the heartbeat that takes it changes the
//! view), or as soon as the policy no longer says so (a launch resets a
//! job's wait); a job's arrival puts back its blocks' holders at once.
//! Where the wait is each worker's own, see [`super::own`].

use super::*;
use std::collections::BTreeSet;

/// A moment and the last heartbeat taken by then: (time, (time, rank)).
type Asked = (u64, (u64, u64));

/// The earlier of two heartbeats (time, worker), either or both absent.
pub(super) fn earlier(a: Option<(u64, u32)>, b: Option<(u64, u32)>) -> Option<(u64, u32)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The parked workers by when their regular heartbeats come round, where
/// every worker's come every `period` ms from its phase: by (phase mod
/// period, worker), which is the order of their next heartbeats after any
/// moment, rotated.
pub(super) struct Sleepers {
    period: u64,
    phase: Vec<u64>,
    set: BTreeSet<(u64, u32)>,
    /// The last [`Sleepers::first`] asked (`at`, `last`) and found, while
    /// the set is unchanged: it stays the first for every later moment up
    /// to its own.
    found: Option<(Asked, Option<(u64, u32)>)>,
}

impl Sleepers {
    /// None unless every worker's period is the same whole number of ms.
    pub(super) fn of(cluster: &ReplayCluster) -> Option<Sleepers> {
        let n = cluster.slots.len();
        let p = cluster.period(0);
        let same = (0..n).all(|w| cluster.period(w) == p);
        (n > 0 && same && p.fract() == 0.0).then(|| {
            let period = p as u64;
            let phase = (0..n).map(|w| cluster.phase(w) as u64 % period);
            Sleepers::new(period, phase.collect())
        })
    }

    /// None parked yet; `phase`: each worker's, mod `period`.
    pub(super) fn new(period: u64, phase: Vec<u64>) -> Sleepers {
        Sleepers {
            period,
            phase,
            set: BTreeSet::new(),
            found: None,
        }
    }

    fn key(&self, w: u32) -> (u64, u32) {
        (self.phase[w as usize], w)
    }

    pub(super) fn insert(&mut self, w: u32) {
        self.found = None;
        self.set.insert(self.key(w));
    }

    pub(super) fn remove(&mut self, w: u32) {
        self.found = None;
        self.set.remove(&self.key(w));
    }

    /// The parked worker whose regular heartbeat comes first at `at` or
    /// later and after `last` (time, rank), and that heartbeat's time.
    pub(super) fn first(&mut self, at: u64, last: (u64, u64)) -> Option<(u64, u32)> {
        if let Some(((a, l), found)) = self.found {
            let still = |(t, w): (u64, u32)| t >= at && (t, u64::from(w)) > last;
            if at >= a && last >= l && found.is_none_or(still) {
                return found;
            }
        }
        let found = self.search(at, last);
        self.found = Some(((at, last), found));
        found
    }

    fn search(&self, at: u64, last: (u64, u64)) -> Option<(u64, u32)> {
        let (p, t0) = (self.period, at.max(last.0));
        let o0 = t0 % p;
        let start = match (t0 == last.0, u32::try_from(last.1)) {
            (false, _) => (o0, 0),
            (true, Ok(r)) if r < u32::MAX => (o0, r + 1),
            (true, _) => (o0 + 1, 0),
        };
        let (o, w) = *self
            .set
            .range(start..)
            .next()
            .or_else(|| self.set.iter().next())?;
        let wrapped = (o, w) < start;
        let t = t0 + (o + p - o0) % p + if wrapped && o == o0 { p } else { 0 };
        Some((t, w))
    }
}

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
        if !self.park || arriving || !self.unreported[w as usize].is_empty() {
            return false;
        }
        let idle = self.nothing_waits();
        if !idle && (self.quiet_until(t).is_none() || self.holds_pending(w)) {
            return false;
        }
        if !idle && self.own.is_some() {
            // Within the worker's own wait, if it lasts.
            return regular.is_some_and(|k| self.parks_waiting(t, w, k));
        }
        // The offer left out would have found a free slot or not.
        let busy = self.running[w as usize].len() + self.background_running(t, w).len();
        let free = self.cluster.slots[w as usize] as usize > busy;
        if idle && free {
            self.sched.idle_offer(t, WorkerId(w));
        }
        if let Some(k) = regular {
            self.parked_idle(w, k, free);
            self.parked[w as usize] = Some(k);
            self.n_parked += 1;
            if let Some(s) = &mut self.sleepers {
                s.insert(w);
            }
        }
        if self.tracks_state(w) && self.stale[w as usize].replace(t).is_none() {
            self.stale_list.push(w);
        }
        true
    }

    /// With [`Sleepers`], while no reduce is ready: until when the policy
    /// declines, changing nothing, every offer from a worker that holds no
    /// pending map's block ([`Scheduler::declines_until`]). Such a worker
    /// parks though maps wait, and a parked one heartbeats again at that
    /// moment, when a job's arrival gives it a block to run, or when the
    /// view changes so that the policy no longer says so.
    fn quiet_until(&self, t: u64) -> Option<u64> {
        self.sleepers.as_ref()?;
        if self.view.reduce_jobs().any(|r| r.ready()) {
            return None;
        }
        if let Some(b) = self.own_bound() {
            // Waits of the workers' own: none parked without one ends
            // before this (those within one: `parks_waiting`).
            return Some(b);
        }
        self.sched.declines_until(t as Millis, &self.view)
    }

    /// Whether some job has a pending map with a replica on `w`.
    fn holds_pending(&self, w: u32) -> bool {
        let wid = WorkerId(w);
        self.view
            .jobs()
            .any(|j| j.has_pending() && j.local_task(wid).is_some())
    }

    /// The parked worker whose heartbeat comes first from `at` on, after
    /// the last taken, and its time.
    fn first_parked(&mut self, at: u64) -> Option<(u64, u32)> {
        let last = self.last_beat;
        self.sleepers.as_mut()?.first(at, last)
    }

    /// Whether a heartbeat due comes before worker `w`'s at `t`.
    fn taken_before(&self, t: u64, w: u32) -> bool {
        self.beats
            .peek()
            .is_some_and(|Reverse(b)| (b.0, b.1) < (t, u64::from(w)))
    }

    /// Whether a wake must tell the view of `w`'s state: every parked
    /// worker's without [`Sleepers`], else only one with background
    /// processes (nothing else changes a parked worker's state).
    fn tracks_state(&self, w: u32) -> bool {
        self.sleepers.is_none() || !self.background_of[w as usize].is_empty()
    }

    /// With [`Sleepers`], while a task waits: the parked worker whose
    /// heartbeat comes first from `at` on (while the policy declines the
    /// parked workers' offers, from the moment it stops or the next
    /// arrival) heartbeats again if that heartbeat would be the next one
    /// taken. Whether one did.
    pub(super) fn pull(&mut self, at: u64) -> bool {
        self.waits_passed(at);
        // Declined offers are left out only until the next arrival, which
        // changes the view when the heartbeat at or after it takes it.
        let quiet = self.quiet_until(at);
        let next = self.order.get(self.next_job);
        let arrival = next.map_or(u64::MAX, |&j| self.jobs[j].arrival_ms);
        let from = quiet.map_or(at, |d| at.max(d.min(arrival)));
        let first = self.first_parked(from);
        let waiting = self.first_waiting(at, if quiet.is_none() { at } else { arrival });
        let Some((t, w)) = earlier(first, waiting) else {
            return false;
        };
        if self.taken_before(t, w) {
            return false;
        }
        self.unpark(w, t);
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
        if !self.forget_wait(w) {
            if let Some(s) = &mut self.sleepers {
                s.remove(w);
            }
        }
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
        if self.tracks_state(w) {
            let last = beat(next - 1);
            self.stale[wu] = Some(self.stale[wu].map_or(last, |s| s.max(last)));
        }
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

#[cfg(test)]
mod tests {
    use super::Sleepers;

    #[test]
    fn the_next_parked_heartbeat_comes_round_in_time_then_worker_order() {
        let mut s = Sleepers::new(100, vec![30, 10, 30, 90, 10]);
        assert_eq!(s.first(0, (0, 0)), None);
        for w in 0..5 {
            s.insert(w);
        }
        // At 30, after worker 0's heartbeat: worker 2's at 30 comes next.
        assert_eq!(s.first(30, (30, 0)), Some((30, 2)));
        // After worker 4 at 30 (no one at 30 is left): worker 3 at 90.
        assert_eq!(s.first(30, (30, 4)), Some((90, 3)));
        // After every heartbeat at 130 (a read's end ranks last).
        assert_eq!(s.first(130, (130, u64::MAX)), Some((190, 3)));
        // Past the last phase the order comes round: worker 1 at 110.
        assert_eq!(s.first(95, (0, 0)), Some((110, 1)));
        // A later `at` than the last heartbeat: from `at` on, any worker.
        assert_eq!(s.first(210, (130, 4)), Some((210, 1)));
        // One parked worker whose heartbeat at this moment was taken comes
        // a period later.
        for w in 1..5 {
            s.remove(w);
        }
        assert_eq!(s.first(130, (130, 0)), Some((230, 0)));
        assert_eq!(s.first(130, (129, 7)), Some((130, 0)));
    }
}
