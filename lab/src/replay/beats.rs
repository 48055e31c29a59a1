//! The replay's heartbeats: each worker's first ones (from its phase, or
//! the real run's record), the arrivals that wake workers, and the
//! cluster's per-worker cadence, jitter, measured lengths, slowdown and
//! disk.

use super::{BackgroundRun, ReplayCluster, ReplayJob};
use base::TaskRef;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A heartbeat: (time, rank, worker, Some(k) for the k-th regular one); a
/// regular one schedules the next, an out-of-band one does not. Ties in
/// time go by rank: the worker's number, a drawn order among heartbeats
/// the master asked for together ([`ReplayCluster::woken_order`]), or a
/// recorded heartbeat's place in the real run's order
/// ([`ReplayCluster::recorded_beats`]).
pub(super) type Beat = Reverse<(u64, u64, u32, Option<u64>)>;

/// The arrival times whose out-of-band heartbeats wake every worker (one
/// with no free slot takes nothing, as one the master does not wake):
/// none without out-of-band heartbeats; and each worker's background
/// processes (indices into `background`, in its order).
pub(super) fn wakes_and_background(
    cluster: &ReplayCluster,
    jobs: &[ReplayJob],
    background: &[BackgroundRun],
) -> (Vec<u64>, Vec<Vec<usize>>) {
    let mut wakes: Vec<u64> = if cluster.out_of_band {
        jobs.iter().map(|j| j.arrival_ms).collect()
    } else {
        Vec::new()
    };
    wakes.sort_unstable();
    wakes.dedup();
    let mut background_of = vec![Vec::new(); cluster.slots.len()];
    for (i, b) in background.iter().enumerate() {
        if let Some(v) = background_of.get_mut(b.worker.0 as usize) {
            v.push(i);
        }
    }
    (wakes, background_of)
}

/// Recorded heartbeats rank from here on (a worker's number ranks below).
pub(super) const RECORDED_RANK: u64 = 1 << 32;

/// Heartbeats the master asks for when a heartbeat releases tasks rank
/// from here on: after every worker's own heartbeat at the same time (the
/// one that released them answered first), before recorded ones.
pub(super) const WOKEN_RANK: u64 = 1 << 31;

/// Mixed into the draw of the woken heartbeats' order, so that it is not
/// the draw of a heartbeat's jitter.
const WOKEN_SALT: u64 = 0x776f_6b65_6e00_0000;

/// The heartbeats due at time 0, and each worker's recorded heartbeats.
/// Without a record, each worker's first regular one at its phase; with
/// one, every recorded heartbeat at its time in the record's order, the
/// worker's last one going on as its regular heartbeats (the `k` of the
/// period after it).
pub(super) fn first_beats(cluster: &ReplayCluster) -> (BinaryHeap<Beat>, Vec<usize>) {
    let n = cluster.slots.len();
    let mut left = vec![0usize; n];
    if cluster.recorded_beats.is_empty() {
        let beats = (0..n)
            .map(|w| {
                let t = cluster.phase(w).round() as u64 + cluster.jitter(w, 0);
                Reverse((t, w as u64, w as u32, Some(0)))
            })
            .collect();
        return (beats, left);
    }
    let mut last = vec![None; n];
    for (i, &(_, w)) in cluster.recorded_beats.iter().enumerate() {
        if let Some(l) = left.get_mut(w as usize) {
            *l += 1;
            last[w as usize] = Some(i);
        }
    }
    let mut beats: BinaryHeap<Beat> = BinaryHeap::new();
    for (i, &(t, w)) in cluster.recorded_beats.iter().enumerate() {
        let wu = w as usize;
        if wu >= n {
            continue;
        }
        let regular = (last[wu] == Some(i)).then(|| {
            // The regular heartbeat at or before t: the next follows it.
            ((t as f64 - cluster.phase(wu)) / cluster.period(wu))
                .floor()
                .max(0.0) as u64
        });
        beats.push(Reverse((t, RECORDED_RANK + i as u64, w, regular)));
    }
    // A worker the record never saw heartbeats as without one.
    for (w, l) in left.iter().enumerate() {
        if *l == 0 {
            let t = cluster.phase(w).round() as u64;
            beats.push(Reverse((t, w as u64, w as u32, Some(0))));
        }
    }
    (beats, left)
}

impl ReplayCluster {
    /// Worker `w`'s first heartbeat.
    pub(super) fn phase(&self, w: usize) -> f64 {
        self.phase_ms.get(w).copied().unwrap_or(0) as f64
    }

    /// Worker `w`'s heartbeat period.
    pub(super) fn period(&self, w: usize) -> f64 {
        self.period_ms
            .get(w)
            .copied()
            .filter(|p| p.is_finite() && *p >= 1.0)
            .unwrap_or(self.heartbeat_ms.max(1) as f64)
    }

    /// How late worker `w`'s `k`-th regular heartbeat comes.
    pub(super) fn jitter(&self, w: usize, k: u64) -> u64 {
        if self.jitter_ms == 0 {
            return 0;
        }
        let h = base::hash::splitmix64(
            self.jitter_seed ^ base::hash::splitmix64(((w as u64) << 40) ^ k),
        );
        h % (self.jitter_ms + 1)
    }

    /// Where worker `w`'s heartbeat ranks among those the master asked for
    /// at `at` together (below 2^30, so under [`WOKEN_RANK`]). The real
    /// master asks every idle worker at once and their heartbeats reach it
    /// in no fixed order, so the order is drawn per run (`jitter_seed`),
    /// time and worker; by the workers' numbers, worker 0 would be offered
    /// every arriving job first.
    pub(super) fn woken_order(&self, at: u64, w: u32) -> u64 {
        let key = at ^ (u64::from(w) << 44) ^ WOKEN_SALT;
        base::hash::splitmix64(self.jitter_seed ^ base::hash::splitmix64(key)) >> 34
    }

    /// The real length of `task` (a reduce if `reduce`) run on `w` reading
    /// from `src`, if [`ReplayCluster::measured_ms`] has it.
    pub(super) fn measured(&self, task: TaskRef, reduce: bool, w: u32, src: u32) -> Option<u64> {
        self.measured_ms
            .get(&(task.job, task.index, reduce))?
            .iter()
            .find(|m| (m.0, m.1) == (w, src))
            .map(|m| m.2)
    }

    /// Worker `w`'s disk in bytes per ms under [`ReplayCluster::disk`] (0:
    /// no disk term).
    pub(super) fn disk_bpms(&self, w: usize) -> f64 {
        self.disk.as_ref().map_or(0.0, |d| {
            d.mbs
                .get(w)
                .copied()
                .filter(|r| r.is_finite() && *r > 0.0)
                .map_or(0.0, |r| r * 1000.0)
        })
    }

    /// The least a map reading `bytes` lasts under
    /// [`ReplayCluster::disk`]'s pacing (ms from its start; 0 without).
    pub(super) fn paced_ms(&self, bytes: u64) -> u64 {
        self.disk
            .as_ref()
            .map_or(0, |d| super::pacing_ms(bytes, d.slot_mbs))
    }

    /// How many times its given length worker `w`'s tasks last.
    pub(super) fn slowdown(&self, w: usize) -> f64 {
        self.slowdown
            .get(w)
            .copied()
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0)
    }
}
