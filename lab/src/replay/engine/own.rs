//! Offers declined within a worker's own wait left out, for a policy whose
//! wait for a data-local task is each worker's own (DynDLOn's per-worker
//! clock: [`Scheduler::own_wait_floor`]).
//!
//! Such a wait starts at the worker's first offer that finds maps pending
//! but none with a block on it, and an offer that finds no map pending ends
//! it: both change the policy's state, and a busy run has maps pending
//! about half the time, so every idle worker's heartbeats would have to be
//! taken. Instead, a worker parks within its wait (until the heartbeat at
//! which it ends, [`Scheduler::own_wait_ends`]) and while no map waits, and
//! the replay keeps when maps were pending, as each heartbeat saw it: before
//! a parked worker's heartbeat is taken again, the policy hears what its
//! heartbeats left out did ([`Scheduler::idle_offer`] at the last that
//! found no map pending, [`Scheduler::declined_offer`] at the first after
//! it that found some).
//!
//! A worker parked while no map waited (or whose wait's end passed then)
//! had its wait ended at its last heartbeat that found no map pending, so
//! its next wait cannot end before that heartbeat plus the policy's least
//! wait. Per phase of the heartbeats, the replay keeps the last whole
//! millisecond in which no map was pending (every worker of that phase had
//! a heartbeat then): the earliest of them plus the least wait is when any
//! such worker's wait may first end, and its heartbeats are taken again
//! only from then on (or where a reduce is ready, or a job arrives).

use super::park::{earlier, Sleepers};
use super::*;
use std::collections::BTreeSet;

/// What the replay keeps for the policy's own waits.
pub(super) struct OwnWaits {
    /// The least a wait lasts (ms), and the heartbeats' period.
    floor: u64,
    period: u64,
    /// From each key (time, rank) on, whether a map was pending as a
    /// heartbeat then saw it (none before the first).
    log: Vec<((u64, u64), bool)>,
    /// Per phase (mod period): the last whole millisecond with that phase
    /// in which no map was pending; and the earliest of them.
    idle_seen: Vec<u64>,
    idle_min: u64,
    /// Workers parked within their wait, by the time of the heartbeat at
    /// which it ends (none while a remote task blocks it), and by phase.
    due: BTreeSet<(u64, u32)>,
    due_at: Vec<Option<u64>>,
    waiting: Sleepers,
    in_wait: Vec<bool>,
    /// Per worker, its first regular heartbeat whose offer the policy has
    /// not heard of, and whether it had a free slot when it parked (it
    /// keeps it: only a task of its ending changes that, which puts it
    /// back).
    next_k: Vec<u64>,
    free: Vec<bool>,
}

/// The first of a worker's regular heartbeats (`w`'s, at `phase` + k
/// `period`) whose key (time, rank) is at or after `s`: its k.
fn first_beat(phase: u64, period: u64, w: u32, s: (u64, u64)) -> u64 {
    let k = if s.0 > phase {
        (s.0 - phase).div_ceil(period)
    } else {
        0
    };
    k + u64::from((phase + k * period, u64::from(w)) < s)
}

impl OwnWaits {
    /// With [`Sleepers`] and a policy that has waits of a worker's own.
    pub(super) fn of(cluster: &ReplayCluster, floor: Option<Millis>) -> Option<OwnWaits> {
        let (floor, waiting) = (floor?, Sleepers::of(cluster)?);
        let period = cluster.period(0) as u64;
        let n = cluster.slots.len();
        Some(OwnWaits {
            floor,
            period,
            log: Vec::new(),
            idle_seen: vec![0; period as usize],
            idle_min: 0,
            due: BTreeSet::new(),
            due_at: vec![None; n],
            waiting,
            in_wait: vec![false; n],
            next_k: vec![0; n],
            free: vec![false; n],
        })
    }

    fn pending(&self) -> bool {
        self.log.last().is_some_and(|e| e.1)
    }

    /// From `from` on, maps are pending (`p`) or not. When they become
    /// pending, every whole millisecond of the interval that ends was
    /// without (the last period of it is enough).
    fn flip(&mut self, from: (u64, u64), p: bool) {
        let s0 = self.log.last().map_or((0, 0), |e| e.0);
        let from = from.max(s0);
        if p {
            let lo = s0.0 + u64::from(s0.1 > 0);
            if from.0 > lo {
                let hi = from.0 - 1;
                for t in lo.max(hi.saturating_sub(self.period - 1))..=hi {
                    self.idle_seen[(t % self.period) as usize] = t;
                }
                self.idle_min = self.idle_seen.iter().copied().min().unwrap_or(0);
            }
        }
        self.log.push((from, p));
    }

    /// Of worker `w`'s regular heartbeats `lo..=hi` (at `phase` + k
    /// period), left out: the time of the last that found no map pending,
    /// and of the first after it (or the first, if none did) that found
    /// some.
    fn missed(&self, phase: u64, w: u32, lo: u64, hi: u64) -> (Option<u64>, Option<u64>) {
        let p = self.period;
        let beat = |k: u64| phase + k * p;
        let key = |k: u64| (beat(k), u64::from(w));
        let at = |key: (u64, u64)| {
            let i = self.log.partition_point(|e| e.0 <= key);
            (i, i > 0 && self.log[i - 1].1)
        };
        let first_from = |s: (u64, u64)| first_beat(phase, p, w, s);
        let (mut idle, mut k) = (None, hi);
        loop {
            let (i, pending) = at(key(k));
            if !pending {
                idle = Some(k);
                break;
            }
            let before = first_from(self.log[i - 1].0);
            if before == 0 || before - 1 < lo {
                break;
            }
            k = before - 1;
        }
        let (mut declined, mut k) = (None, idle.map_or(lo, |x| x + 1));
        while k <= hi {
            let (i, pending) = at(key(k));
            if pending {
                declined = Some(k);
                break;
            }
            let Some(next) = self.log.get(i) else { break };
            k = first_from(next.0);
        }
        (idle.map(beat), declined.map(beat))
    }

    /// Takes worker `w` out of the waits' sets.
    fn forget(&mut self, w: u32) {
        if std::mem::take(&mut self.in_wait[w as usize]) {
            self.waiting.remove(w);
            if let Some(t) = self.due_at[w as usize].take() {
                self.due.remove(&(t, w));
            }
        }
    }
}

impl Replay<'_> {
    /// After an event that ran up to `from`: notes whether maps are now
    /// pending, for the heartbeats from then on.
    pub(super) fn note_pending(&mut self, from: (u64, u64)) {
        let Some(o) = &mut self.own else { return };
        let p = self.view.head_job().is_some();
        if p != o.pending() {
            o.flip(from, p);
        }
    }

    /// Before worker `w`'s heartbeat at `(t, rank)` (its regular `k`-th,
    /// or out of band) is taken: the policy hears what its regular
    /// heartbeats left out since it last heard of one did.
    pub(super) fn catch_up(&mut self, w: u32, (t, rank): (u64, u64), regular: Option<u64>) {
        let Some(o) = &self.own else { return };
        let wu = w as usize;
        let phase = self.cluster.phase(wu) as u64;
        let upto = regular.unwrap_or_else(|| first_beat(phase, o.period, w, (t, rank)));
        let lo = o.next_k[wu];
        if upto > lo && o.free[wu] && self.background_of[wu].is_empty() {
            let (idle, declined) = o.missed(phase, w, lo, upto - 1);
            if let Some(at) = idle {
                self.sched.idle_offer(at as Millis, WorkerId(w));
            }
            if let Some(at) = declined {
                self.sched.declined_offer(at as Millis, WorkerId(w));
            }
        }
        let o = self.own.as_mut().expect("own waits");
        o.next_k[wu] = o.next_k[wu].max(regular.map_or(upto, |k| k + 1));
    }

    /// Worker `w`'s regular heartbeat `k` at `t`, while maps wait and none
    /// has a block on it and no reduce is ready: parks it within its own
    /// wait, if the policy says it lasts beyond `t` (the offer left out
    /// starts it). Whether it parked.
    pub(super) fn parks_waiting(&mut self, t: u64, w: u32, k: u64) -> bool {
        let (wu, wid) = (w as usize, WorkerId(w));
        let free = (self.running[wu].len() as u32) < self.cluster.slots[wu];
        if !free || !self.background_of[wu].is_empty() || self.view.head_job().is_none() {
            return false;
        }
        let ends = self.sched.own_wait_ends(t as Millis, &self.view, wid);
        let Some(d) = ends.filter(|&d| d > t as Millis) else {
            return false;
        };
        self.sched.declined_offer(t as Millis, wid);
        let phase = self.cluster.phase(wu) as u64;
        let o = self.own.as_mut().expect("own waits");
        (o.next_k[wu], o.free[wu], o.in_wait[wu]) = (k + 1, true, true);
        if d != Millis::MAX {
            let kd = first_beat(phase, o.period, w, (d, 0)).max(k + 1);
            let due = phase + kd * o.period;
            o.due.insert((due, w));
            o.due_at[wu] = Some(due);
        }
        o.waiting.insert(w);
        self.parked[wu] = Some(k);
        self.n_parked += 1;
        true
    }

    /// A worker parked while no map waits: whether it had a free slot.
    pub(super) fn parked_idle(&mut self, w: u32, k: u64, free: bool) {
        if let Some(o) = &mut self.own {
            (o.next_k[w as usize], o.free[w as usize]) = (k + 1, free);
        }
    }

    /// Takes worker `w` out of the waits' sets; whether it was in them.
    pub(super) fn forget_wait(&mut self, w: u32) -> bool {
        let Some(o) = &mut self.own else { return false };
        let was = o.in_wait[w as usize];
        o.forget(w);
        was
    }

    /// The workers whose wait's end came while no map waited (their
    /// heartbeat then ended it) join those parked without a wait.
    pub(super) fn waits_passed(&mut self, at: u64) {
        let last = self.last_beat;
        let Some(o) = &mut self.own else { return };
        let mut passed = Vec::new();
        while let Some(&(t, w)) = o.due.first() {
            if t >= at && (t, u64::from(w)) > last {
                break;
            }
            o.forget(w);
            passed.push(w);
        }
        if let Some(s) = &mut self.sleepers {
            for w in passed {
                s.insert(w);
            }
        }
    }

    /// The least time at which the wait of a worker parked without one
    /// may end.
    pub(super) fn own_bound(&self) -> Option<u64> {
        let o = self.own.as_ref()?;
        Some(o.idle_min.saturating_add(o.floor))
    }

    /// The parked worker within its wait whose heartbeat comes first: at
    /// its wait's end, or its next from `from` on (a job's arrival, which
    /// the heartbeat at or after it takes into the view; or now, where a
    /// reduce is ready).
    pub(super) fn first_waiting(&mut self, at: u64, from: u64) -> Option<(u64, u32)> {
        let last = self.last_beat;
        let o = self.own.as_mut()?;
        let next = (from < u64::MAX)
            .then(|| o.waiting.first(at.max(from), last))
            .flatten();
        earlier(o.due.first().copied(), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(log: &[((u64, u64), bool)]) -> OwnWaits {
        let mut o = OwnWaits {
            floor: 1_000,
            period: 100,
            log: Vec::new(),
            idle_seen: vec![0; 100],
            idle_min: 0,
            due: BTreeSet::new(),
            due_at: Vec::new(),
            waiting: Sleepers::new(100, Vec::new()),
            in_wait: Vec::new(),
            next_k: Vec::new(),
            free: Vec::new(),
        };
        for &(from, p) in log {
            o.flip(from, p);
        }
        o
    }

    #[test]
    fn heartbeats_left_out_are_told_as_the_last_idle_one_and_the_first_pending_after() {
        // Maps pending from 150 to 420 (a heartbeat at (420, 3) and later
        // sees none), and from (610, 5) on.
        let o = waits(&[((150, 0), true), ((420, 3), false), ((610, 5), true)]);
        // Worker 4 at phase 10: heartbeats 10, 110, ..., 710.
        // All of 1..=7 (110..=710): last idle 510, first pending after 610
        // is at 610? (610, 4) < (610, 5): idle. So 710.
        assert_eq!(o.missed(10, 4, 1, 7), (Some(610), Some(710)));
        // Worker 6 at phase 10: (610, 6) sees maps pending.
        assert_eq!(o.missed(10, 6, 1, 7), (Some(510), Some(610)));
        // Only 2..=4 (210..=410): all pending, no idle one.
        assert_eq!(o.missed(10, 4, 2, 4), (None, Some(210)));
        // Worker 2 at phase 20, 4..=4 (420): (420, 2) < (420, 3) pending.
        assert_eq!(o.missed(20, 2, 4, 4), (None, Some(420)));
        assert_eq!(o.missed(20, 3, 4, 4), (Some(420), None));
        // Before any job: idle.
        assert_eq!(o.missed(20, 3, 0, 1), (Some(120), None));
    }

    #[test]
    fn the_idle_milliseconds_are_kept_per_phase() {
        let o = waits(&[((150, 0), true), ((420, 3), false), ((610, 5), true)]);
        // 0..=149 idle, then 421..=609: the last period of it, 510..=609.
        assert_eq!(o.idle_seen[10], 510);
        assert_eq!(o.idle_seen[9], 609);
        assert_eq!(o.idle_min, 510);
        // A short idle stretch covers only its own phases.
        let o = waits(&[((150, 0), true), ((420, 0), false), ((450, 0), true)]);
        assert_eq!(
            (o.idle_seen[20], o.idle_seen[49], o.idle_seen[50]),
            (420, 449, 50)
        );
        assert_eq!(o.idle_min, 50);
    }
}
