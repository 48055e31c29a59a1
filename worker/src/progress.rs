//! How a running attempt shows it is alive, shared by the map executor
//! (`exec`), the reduce and its shuffle (`shuffle`) and block copies
//! (`replicate`).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// A running attempt's progress: a count that grows with every piece read,
/// processed or written and every second of emulated compute or pacing. It
/// stops growing only when the attempt is stuck (a hung disk read, a
/// deadlocked map function), which is what the master's
/// `cluster.task_timeout_ms` looks for, as Hadoop's `mapreduce.task.timeout`
/// looks for a task that neither reads, writes nor reports status.
///
/// Beside the count, an attempt that can judge how much of its work is
/// done says so ([`Progress::set_done`]): a reduce does, for speculative
/// execution to compare it with its siblings.
#[derive(Clone, Debug)]
pub struct Progress(Arc<(AtomicU64, AtomicU32)>);

/// [`Progress::done`]'s "not said" (its millionths are at most 10^6).
const UNSAID: u32 = u32::MAX;

impl Progress {
    pub fn new() -> Self {
        Progress(Arc::new((AtomicU64::new(0), AtomicU32::new(UNSAID))))
    }

    pub fn add(&self, units: u64) {
        self.0 .0.fetch_add(units.max(1), Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0 .0.load(Ordering::Relaxed)
    }

    /// The share of the attempt's work done, in [0, 1].
    pub fn set_done(&self, fraction: f64) {
        let ppm = (fraction.clamp(0.0, 1.0) * 1e6).round() as u32;
        self.0 .1.store(ppm, Ordering::Relaxed);
    }

    /// What [`Progress::set_done`] last said, in millionths.
    pub fn done_ppm(&self) -> Option<u32> {
        let v = self.0 .1.load(Ordering::Relaxed);
        (v != UNSAID).then_some(v)
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}
