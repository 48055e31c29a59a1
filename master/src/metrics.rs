//! The master's Prometheus metrics (`GET /metrics`, OpenMetrics text, same
//! token as the API), named as Prometheus' conventions say: a `mrtb_`
//! prefix (mini-MapReduce testbed), base units (seconds, bytes), `_total`
//! on counters.
//!
//! Counters of task outcomes are counted where the master applies a result
//! (so `mrtb_maps_total{locality="data_local"}` moves with the same event
//! as a job report's `data_local`); the cluster's state (jobs by state,
//! slots, NIC rates) is read from the master when a scrape comes.

use common::wire::{JobState, Locality, TaskKind, WorkerInfo};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// The content type of an OpenMetrics text answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum LocalityValue {
    data_local,
    data_remote,
}

impl From<Locality> for LocalityValue {
    fn from(l: Locality) -> Self {
        match l {
            Locality::DataLocal => LocalityValue::data_local,
            Locality::DataRemote => LocalityValue::data_remote,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LocalityLabels {
    pub locality: LocalityValue,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum KindValue {
    map,
    reduce,
}

impl From<TaskKind> for KindValue {
    fn from(k: TaskKind) -> Self {
        match k {
            TaskKind::Map => KindValue::map,
            TaskKind::Reduce => KindValue::reduce,
        }
    }
}

/// Why an attempt ended without success.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ReasonValue {
    /// Counted against its task (an error, or no progress for the timeout).
    failed,
    /// A reduce that could not fetch map output (not counted).
    fetch_failed,
    /// ENOSPC on its worker (not counted).
    no_space,
    /// Speculation: the task's other attempt finished first (not counted).
    killed,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AttemptLabels {
    pub kind: KindValue,
    pub reason: ReasonValue,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TaskLabels {
    pub kind: KindValue,
    /// `data_local` / `data_remote` for maps, `none` for reduces.
    pub locality: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum SourceValue {
    local,
    remote,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub source: SourceValue,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkerLabels {
    pub worker: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkerStateLabels {
    pub worker: String,
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkerDirectionLabels {
    pub worker: String,
    pub direction: String,
}

type F64Gauge = Gauge<f64, AtomicU64>;

/// The master's metrics and their registry.
pub struct Metrics {
    registry: Registry,
    maps: Family<LocalityLabels, Counter>,
    reduces: Counter,
    attempts_unsuccessful: Family<AttemptLabels, Counter>,
    read_bytes: Family<SourceLabels, Counter>,
    shuffle_bytes: Counter,
    task_seconds: Family<TaskLabels, Histogram>,
    heartbeat_seconds: Histogram,
    decision_seconds: Histogram,
    // Read from the master at a scrape.
    jobs: Family<StateLabels, Gauge>,
    workers: Family<StateLabels, Gauge>,
    pending_tasks: Gauge,
    maps_rerun: Counter,
    results_refused: Counter,
    blocks_copied: Counter,
    slots: Family<WorkerStateLabels, Gauge>,
    blocks_stored: Family<WorkerLabels, Gauge>,
    nic_bytes: Family<WorkerDirectionLabels, Counter>,
    nic_rate: Family<WorkerDirectionLabels, F64Gauge>,
    nic_cap: Family<WorkerLabels, F64Gauge>,
    /// The master's heap in use and free in its allocator's arenas.
    heap: (Gauge, Gauge),
    /// Last NIC counters seen per (worker, direction), for the counters'
    /// increments (a restarted worker's counters start again at 0).
    nic_seen: Mutex<std::collections::HashMap<(String, &'static str), u64>>,
}

/// The heap gauges (in use, free), as the workers have them: what a leak
/// grows, where the resident size also keeps what the allocator holds.
fn heap_gauges(r: &mut Registry) -> (Gauge, Gauge) {
    let in_use = Gauge::default();
    r.register_with_unit(
        "heap_in_use",
        "Heap bytes the master's process has allocated and not freed (glibc mallinfo2)",
        Unit::Bytes,
        in_use.clone(),
    );
    let free = Gauge::default();
    r.register_with_unit(
        "heap_free",
        "Heap bytes free in the allocator's arenas, not given back to the system",
        Unit::Bytes,
        free.clone(),
    );
    (in_use, free)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut r = Registry::with_prefix("mrtb");
        let maps = Family::<LocalityLabels, Counter>::default();
        r.register(
            "maps",
            "Map tasks that succeeded, by data locality (Hadoop's DATA_LOCAL_MAPS and OTHER_LOCAL_MAPS)",
            maps.clone(),
        );
        let reduces = Counter::default();
        r.register("reduces", "Reduce tasks that succeeded", reduces.clone());
        let attempts_unsuccessful = Family::<AttemptLabels, Counter>::default();
        r.register(
            "attempts_unsuccessful",
            "Task attempts that ended without success, by kind and reason",
            attempts_unsuccessful.clone(),
        );
        let read_bytes = Family::<SourceLabels, Counter>::default();
        r.register_with_unit(
            "map_input",
            "Map input read from the map's own worker (local) or another's (remote)",
            Unit::Bytes,
            read_bytes.clone(),
        );
        let shuffle_bytes = Counter::default();
        r.register_with_unit(
            "shuffle",
            "Map output fetched by succeeded reduces",
            Unit::Bytes,
            shuffle_bytes.clone(),
        );
        let task_seconds = Family::<TaskLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(0.05, 2.0, 14))) as fn() -> Histogram,
        );
        r.register_with_unit(
            "task_duration",
            "Durations of succeeded task attempts, by kind and locality",
            Unit::Seconds,
            task_seconds.clone(),
        );
        let heartbeat_seconds = Histogram::new(exponential_buckets(1e-5, 2.0, 18));
        r.register_with_unit(
            "heartbeat_handling",
            "Time the master spent on one heartbeat (results, scheduling, reply)",
            Unit::Seconds,
            heartbeat_seconds.clone(),
        );
        let decision_seconds = Histogram::new(exponential_buckets(1e-6, 2.0, 20));
        r.register_with_unit(
            "scheduling_decision",
            "Time the scheduler and the reduce placer took to answer one heartbeat's offer",
            Unit::Seconds,
            decision_seconds.clone(),
        );
        let jobs = Family::<StateLabels, Gauge>::default();
        r.register("jobs", "Jobs by state", jobs.clone());
        let workers = Family::<StateLabels, Gauge>::default();
        r.register("workers", "Workers by state (alive, lost)", workers.clone());
        let pending_tasks = Gauge::default();
        r.register(
            "pending_tasks",
            "Map tasks waiting for a slot",
            pending_tasks.clone(),
        );
        let maps_rerun = Counter::default();
        r.register(
            "maps_rerun",
            "Maps run again because their output was lost (a lost worker, a failed fetch)",
            maps_rerun.clone(),
        );
        let results_refused = Counter::default();
        r.register(
            "results_refused",
            "Attempt results the master refused: stale attempts, and results of a worker it had declared lost",
            results_refused.clone(),
        );
        let blocks_copied = Counter::default();
        r.register(
            "blocks_copied",
            "Block copies ordered by re-replication",
            blocks_copied.clone(),
        );
        let slots = Family::<WorkerStateLabels, Gauge>::default();
        r.register(
            "slots",
            "Slots per worker by state (busy with tasks, background, free)",
            slots.clone(),
        );
        let blocks_stored = Family::<WorkerLabels, Gauge>::default();
        r.register(
            "blocks_stored",
            "Block replicas each worker reported",
            blocks_stored.clone(),
        );
        let nic_bytes = Family::<WorkerDirectionLabels, Counter>::default();
        r.register_with_unit(
            "nic",
            "Bytes through each worker's NIC, by direction (rx, tx), as its heartbeats report",
            Unit::Bytes,
            nic_bytes.clone(),
        );
        let nic_rate = Family::<WorkerDirectionLabels, F64Gauge>::default();
        r.register(
            "nic_rate_bytes_per_second",
            "Each worker's current NIC rate by direction (over the last second or so)",
            nic_rate.clone(),
        );
        let nic_cap = Family::<WorkerLabels, F64Gauge>::default();
        r.register(
            "nic_cap_bytes_per_second",
            "Each worker's configured NIC rate per direction (absent: unlimited)",
            nic_cap.clone(),
        );
        let heap = heap_gauges(&mut r);
        Metrics {
            registry: r,
            maps,
            reduces,
            attempts_unsuccessful,
            read_bytes,
            shuffle_bytes,
            task_seconds,
            heartbeat_seconds,
            decision_seconds,
            jobs,
            workers,
            pending_tasks,
            maps_rerun,
            results_refused,
            blocks_copied,
            slots,
            blocks_stored,
            nic_bytes,
            nic_rate,
            nic_cap,
            heap,
            nic_seen: Default::default(),
        }
    }

    /// A map succeeded.
    pub fn map_done(&self, locality: Locality, local: u64, remote: u64, seconds: f64) {
        self.maps
            .get_or_create(&LocalityLabels {
                locality: locality.into(),
            })
            .inc();
        for (source, n) in [(SourceValue::local, local), (SourceValue::remote, remote)] {
            self.read_bytes
                .get_or_create(&SourceLabels { source })
                .inc_by(n);
        }
        self.task_seconds
            .get_or_create(&TaskLabels {
                kind: KindValue::map,
                locality: LocalityValue::from(locality).as_str().into(),
            })
            .observe(seconds);
    }

    /// A reduce succeeded after fetching `shuffled` bytes.
    pub fn reduce_done(&self, shuffled: u64, seconds: f64) {
        self.reduces.inc();
        self.shuffle_bytes.inc_by(shuffled);
        self.task_seconds
            .get_or_create(&TaskLabels {
                kind: KindValue::reduce,
                locality: "none".into(),
            })
            .observe(seconds);
    }

    pub fn attempt_unsuccessful(&self, kind: TaskKind, reason: ReasonValue) {
        self.attempts_unsuccessful
            .get_or_create(&AttemptLabels {
                kind: kind.into(),
                reason,
            })
            .inc();
    }

    pub fn heartbeat_handled(&self, seconds: f64) {
        self.heartbeat_seconds.observe(seconds);
    }

    pub fn decision_made(&self, seconds: f64) {
        self.decision_seconds.observe(seconds);
    }

    /// The OpenMetrics text of every metric, the state-derived ones set
    /// from `snap` first.
    pub fn encode(&self, snap: &Snapshot) -> String {
        self.jobs.clear();
        for (state, n) in &snap.jobs {
            self.jobs
                .get_or_create(&StateLabels {
                    state: state.to_string(),
                })
                .set(*n as i64);
        }
        let alive = snap.workers.iter().filter(|w| w.alive).count() as i64;
        for (state, n) in [
            ("alive", alive),
            ("lost", snap.workers.len() as i64 - alive),
        ] {
            self.workers
                .get_or_create(&StateLabels {
                    state: state.into(),
                })
                .set(n);
        }
        self.pending_tasks.set(snap.pending_tasks as i64);
        if let Some((in_use, free)) = common::heap::figures() {
            self.heap.0.set(in_use as i64);
            self.heap.1.set(free as i64);
        }
        catch_up(&self.maps_rerun, snap.maps_rerun);
        catch_up(&self.results_refused, snap.results_refused);
        catch_up(&self.blocks_copied, snap.blocks_copied);
        let mut seen = self.nic_seen.lock().unwrap_or_else(|p| p.into_inner());
        for w in &snap.workers {
            // Busy: the attempts the master has running there.
            let busy = w.running as u32;
            for (state, n) in [
                ("busy", busy),
                ("background", w.background),
                ("free", w.slots.saturating_sub(busy + w.background)),
            ] {
                self.slots
                    .get_or_create(&WorkerStateLabels {
                        worker: w.name.clone(),
                        state: state.into(),
                    })
                    .set(if w.alive { n as i64 } else { 0 });
            }
            self.blocks_stored
                .get_or_create(&WorkerLabels {
                    worker: w.name.clone(),
                })
                .set(w.blocks as i64);
            for (dir, total, rate) in [
                ("rx", w.nic_rx_bytes, w.nic_rx_rate),
                ("tx", w.nic_tx_bytes, w.nic_tx_rate),
            ] {
                let labels = WorkerDirectionLabels {
                    worker: w.name.clone(),
                    direction: dir.into(),
                };
                let last = seen.entry((w.name.clone(), dir)).or_insert(0);
                // Counters start again when the worker restarts.
                let delta = if total >= *last { total - *last } else { total };
                *last = total;
                self.nic_bytes.get_or_create(&labels).inc_by(delta);
                self.nic_rate.get_or_create(&labels).set(rate);
            }
            if let Some(cap) = w.nic_cap {
                self.nic_cap
                    .get_or_create(&WorkerLabels {
                        worker: w.name.clone(),
                    })
                    .set(cap);
            }
        }
        drop(seen);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// Raises `c` to `total` (a count the master keeps itself).
fn catch_up(c: &Counter, total: u64) {
    let now = c.get();
    if total > now {
        c.inc_by(total - now);
    }
}

impl LocalityValue {
    fn as_str(&self) -> &'static str {
        match self {
            LocalityValue::data_local => "data_local",
            LocalityValue::data_remote => "data_remote",
        }
    }
}

/// What a scrape reads from the master.
pub struct Snapshot {
    pub jobs: Vec<(JobStateName, usize)>,
    pub workers: Vec<WorkerInfo>,
    pub pending_tasks: usize,
    pub maps_rerun: u64,
    pub results_refused: u64,
    pub blocks_copied: u64,
}

/// A job state's label value.
#[derive(Clone, Copy, Debug)]
pub struct JobStateName(pub JobState);

impl std::fmt::Display for JobStateName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
        })
    }
}
