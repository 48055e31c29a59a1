//! The worker's Prometheus metrics (`GET /metrics`, OpenMetrics text, the
//! cluster token): its NIC and disk byte counters and rates, slots, stored
//! blocks, the block scanner's work, damaged replicas dropped, and its task
//! attempts by outcome. Every value is one the worker keeps anyway (atomic
//! counters, the task book); a scrape reads them into a fresh registry.

use crate::nic::Nic;
use crate::replicas::Replicas;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::{AtomicU64, Ordering};

/// The content type of an OpenMetrics text answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How a task attempt ended on this worker (see [`Outcomes`]).
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    Succeeded,
    Failed,
    FetchFailed,
    NoSpace,
    Rejected,
    Killed,
}

impl Outcome {
    const ALL: [Outcome; 6] = [
        Outcome::Succeeded,
        Outcome::Failed,
        Outcome::FetchFailed,
        Outcome::NoSpace,
        Outcome::Rejected,
        Outcome::Killed,
    ];

    fn name(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::FetchFailed => "fetch_failed",
            Outcome::NoSpace => "no_space",
            Outcome::Rejected => "rejected",
            Outcome::Killed => "killed",
        }
    }
}

/// Task attempts ended here, by outcome.
#[derive(Debug, Default)]
pub struct Outcomes([AtomicU64; 6]);

impl Outcomes {
    pub fn count(&self, o: Outcome) {
        self.0[o as usize].fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FoundLabels {
    found_by: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

/// The allocator's own figures: bytes in use, bytes free in its arenas
/// (`common::heap`).
pub use common::heap::figures as heap_figures;

/// What a scrape reads, taken from the worker's parts by its HTTP server.
pub struct Snapshot<'a> {
    pub name: &'a str,
    pub nic: &'a Nic,
    /// The NIC's (receive, transmit) rate over the last sample interval.
    pub nic_rates: (f64, f64),
    /// Bytes through the emulated disk.
    pub disk_bytes: u64,
    pub slots: u32,
    pub free_slots: u32,
    /// Slots held by background processes.
    pub background_slots: u32,
    pub blocks: usize,
    /// Map output kept in memory.
    pub shuffle_kept: u64,
    /// Bytes reduces wrote to spill files.
    pub reduce_spilled: u64,
    pub replicas: &'a Replicas,
    pub outcomes: &'a Outcomes,
    /// What the block cache holds (`workers.block_cache_mb`).
    pub cache: crate::store::CacheStats,
    /// Job output committed and not yet written back (`workers.sync_output`).
    pub writeback: crate::store::WritebackStats,
}

/// The OpenMetrics text of this worker's metrics now.
pub fn encode(s: &Snapshot<'_>) -> String {
    let mut r = Registry::with_prefix_and_labels(
        "mrtb_worker",
        [(
            std::borrow::Cow::Borrowed("worker"),
            std::borrow::Cow::Owned(s.name.to_owned()),
        )]
        .into_iter(),
    );
    let nic = Family::<DirectionLabels, Counter>::default();
    for (direction, link) in [("rx", &s.nic.rx), ("tx", &s.nic.tx)] {
        nic.get_or_create(&DirectionLabels { direction })
            .inc_by(link.bytes());
    }
    r.register_with_unit(
        "nic",
        "Bytes through this worker's NIC by direction",
        Unit::Bytes,
        nic,
    );
    let rate = Family::<DirectionLabels, Gauge<f64, AtomicU64>>::default();
    let (rx_rate, tx_rate) = s.nic_rates;
    for (direction, v) in [("rx", rx_rate), ("tx", tx_rate)] {
        rate.get_or_create(&DirectionLabels { direction }).set(v);
    }
    r.register(
        "nic_rate_bytes_per_second",
        "This worker's NIC rate by direction over the last sample interval",
        rate,
    );
    if let Some(cap) = s.nic.rx.rate() {
        let g = Gauge::<f64, AtomicU64>::default();
        g.set(cap);
        r.register(
            "nic_cap_bytes_per_second",
            "The emulated NIC's rate per direction",
            g,
        );
    }
    let disk = Counter::<u64>::default();
    disk.inc_by(s.disk_bytes);
    r.register_with_unit(
        "disk",
        "Bytes through the emulated disk (local reads, blocks served and written)",
        Unit::Bytes,
        disk,
    );
    let slots = Family::<StateLabels, Gauge>::default();
    let (free, background) = (s.free_slots, s.background_slots);
    for (state, n) in [
        ("busy", s.slots.saturating_sub(free + background)),
        ("background", background),
        ("free", free),
    ] {
        slots.get_or_create(&StateLabels { state }).set(n as i64);
    }
    r.register("slots", "This worker's slots by state", slots);
    let blocks = Gauge::<i64>::default();
    blocks.set(s.blocks as i64);
    r.register("blocks_stored", "Block replicas stored here", blocks);
    let kept = Gauge::<i64>::default();
    kept.set(s.shuffle_kept as i64);
    r.register_with_unit(
        "shuffle_kept",
        "Map output kept in memory for running jobs (workers.shuffle_memory_mb)",
        Unit::Bytes,
        kept,
    );
    let spilled = Counter::<u64>::default();
    spilled.inc_by(s.reduce_spilled);
    r.register_with_unit(
        "reduce_spilled",
        "Bytes sort reduces here merged to spill files past workers.reduce_memory_mb",
        Unit::Bytes,
        spilled,
    );
    let pooled = Gauge::<i64>::default();
    pooled.set(workloads::pool::held() as i64);
    r.register_with_unit(
        "buffer_pool_free",
        "Free task buffers this worker's process keeps for reuse",
        Unit::Bytes,
        pooled,
    );
    if let Some((in_use, free)) = heap_figures() {
        let g = Gauge::<i64>::default();
        g.set(in_use as i64);
        r.register_with_unit(
            "heap_in_use",
            "Heap bytes this worker's process has allocated and not freed (glibc mallinfo2)",
            Unit::Bytes,
            g,
        );
        let g = Gauge::<i64>::default();
        g.set(free as i64);
        r.register_with_unit(
            "heap_free",
            "Heap bytes free in the allocator's arenas, not given back to the system",
            Unit::Bytes,
            g,
        );
    }
    register_blocking_pool(&mut r);
    register_block_cache(&mut r, &s.cache);
    register_writeback(&mut r, &s.writeback);
    let scrubbed = Counter::<u64>::default();
    scrubbed.inc_by(s.replicas.scrubbed_bytes.load(Ordering::Relaxed));
    r.register_with_unit(
        "scrubbed",
        "Bytes the block scanner verified",
        Unit::Bytes,
        scrubbed,
    );
    let dropped = Family::<FoundLabels, Counter>::default();
    let scrub_found = s.replicas.scrub_found.load(Ordering::Relaxed);
    let all = s.replicas.corrupt_dropped.load(Ordering::Relaxed);
    dropped
        .get_or_create(&FoundLabels {
            found_by: "scanner",
        })
        .inc_by(scrub_found);
    dropped
        .get_or_create(&FoundLabels { found_by: "read" })
        .inc_by(all.saturating_sub(scrub_found));
    r.register(
        "damaged_replicas_dropped",
        "Stored replicas that failed their checksums and were deleted",
        dropped,
    );
    let outcomes = Family::<OutcomeLabels, Counter>::default();
    for o in Outcome::ALL {
        outcomes
            .get_or_create(&OutcomeLabels { outcome: o.name() })
            .inc_by(s.outcomes.0[o as usize].load(Ordering::Relaxed));
    }
    r.register(
        "task_attempts",
        "Task attempts that ended on this worker, by outcome",
        outcomes,
    );
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &r)
        .expect("writing to a String does not fail");
    out
}

/// This process's blocking pool by state: threads idle in it (kept for
/// [`crate::node::BLOCKING_KEEP_ALIVE`] after a burst) and threads running
/// blocking work (the runtime's own worker threads are in neither). None outside
/// a runtime, or in a build without `--cfg tokio_unstable` (tokio's pool
/// figures are unstable; `.cargo/config.toml` sets it).
pub fn blocking_pool() -> Option<BlockingPool> {
    #[cfg(tokio_unstable)]
    {
        let m = tokio::runtime::Handle::try_current().ok()?.metrics();
        let (all, idle) = (m.num_blocking_threads(), m.num_idle_blocking_threads());
        Some(BlockingPool {
            idle,
            busy: all.saturating_sub(idle),
        })
    }
    #[cfg(not(tokio_unstable))]
    None
}

/// The runtime's blocking-pool threads (see [`blocking_pool`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockingPool {
    pub idle: usize,
    pub busy: usize,
}

fn register_blocking_pool(r: &mut Registry) {
    let Some(pool) = blocking_pool() else {
        return;
    };
    let threads = Family::<StateLabels, Gauge>::default();
    for (state, n) in [("idle", pool.idle), ("busy", pool.busy)] {
        threads.get_or_create(&StateLabels { state }).set(n as i64);
    }
    r.register(
        "blocking_threads",
        "This process's blocking-pool threads: idle (kept for reuse) or busy",
        threads,
    );
}

/// Job output left to the writeback thread (`workers.sync_output = false`).
fn register_writeback(r: &mut Registry, w: &crate::store::WritebackStats) {
    let g = Gauge::<i64>::default();
    g.set(w.pending_bytes as i64);
    r.register_with_unit(
        "output_writeback_pending",
        "Bytes of committed job output not yet written back to the disk",
        Unit::Bytes,
        g,
    );
    for (name, help, v) in [
        (
            "output_written_back_blocks",
            "Committed output blocks written back to the disk after their task ended",
            w.written_blocks,
        ),
        (
            "output_writeback_errors",
            "Output blocks whose writeback the disk refused",
            w.errors,
        ),
    ] {
        let c = Counter::<u64>::default();
        c.inc_by(v);
        r.register(name, help, c);
    }
}

/// The block cache's budget, what it holds, what of that is locked, and
/// the blocks it let go to make room.
fn register_block_cache(r: &mut Registry, c: &crate::store::CacheStats) {
    for (name, help, v) in [
        (
            "block_cache_budget",
            "Bytes of blocks this worker may keep mapped and locked (workers.block_cache_mb)",
            c.budget,
        ),
        (
            "block_cache_held",
            "Bytes of blocks this worker keeps mapped, their pages faulted in",
            c.bytes,
        ),
        (
            "block_cache_locked",
            "Bytes of the blocks held that are locked in memory (mlock)",
            c.locked_bytes,
        ),
    ] {
        let g = Gauge::<i64>::default();
        g.set(v as i64);
        r.register_with_unit(name, help, Unit::Bytes, g);
    }
    let g = Gauge::<i64>::default();
    g.set(c.blocks as i64);
    r.register("block_cache_blocks", "Blocks this worker keeps mapped", g);
    let evicted = Counter::<u64>::default();
    evicted.inc_by(c.evictions);
    r.register(
        "block_cache_evictions",
        "Blocks the block cache let go, least recently used first, to make room",
        evicted,
    );
}
