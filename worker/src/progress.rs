//! How a running attempt shows it is alive, shared by the map executor
//! (`exec`), the reduce and its shuffle (`shuffle`) and block copies
//! (`replicate`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A running attempt's progress: a count that grows with every piece read,
/// processed or written and every second of emulated compute or pacing. It
/// stops growing only when the attempt is stuck (a hung disk read, a
/// deadlocked map function), which is what the master's
/// `cluster.task_timeout_ms` looks for, as Hadoop's `mapreduce.task.timeout`
/// looks for a task that neither reads, writes nor reports status.
#[derive(Clone, Debug, Default)]
pub struct Progress(Arc<AtomicU64>);

impl Progress {
    pub fn add(&self, units: u64) {
        self.0.fetch_add(units.max(1), Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
