//! A simulator of a whole real run: many jobs arriving over time, workers
//! that heartbeat at their own phase, background processes holding slots,
//! tasks of given lengths, and data-remote reads that cost more the more
//! remote reads share their source and their reader. It drives the same
//! [`Scheduler`] through the same [`ClusterView`](sched::view::ClusterView) and [`offer`](sched::view::offer) calls as
//! the master, so a policy runs here exactly as on the real cluster, on
//! virtual time in milliseconds.
//!
//! The model (every part measured on real runs by `master sim calibrate`):
//! - a worker is offered its free slots only at its heartbeats (every
//!   `heartbeat_ms`, from its `phase_ms`), and also at once when one of its
//!   tasks ends, when a job arrives, and after the heartbeat that reports
//!   a job's last map if that leaves more tasks waiting (the master wakes
//!   the idle workers) if `out_of_band`; launches start at the heartbeat.
//!   Without `out_of_band`
//!   the master learns of a map's end at its worker's next heartbeat, as
//!   the real one does: until then the job counts it running (the fair
//!   order sees it), and a job whose last map it was ends at that report;
//! - free slots = slots - running tasks - background processes running;
//! - a data-local task lasts its `local_ms` (with [`ReplayCluster::disk`],
//!   after reading its block through its worker's shared disk); a
//!   data-remote one first reads
//!   its block, by one of two [`RemoteModel`]s: a fixed extra when it starts
//!   ([`RemoteCost::extra_ms`] of the remote reads running from the same
//!   source and on the same reader, and of the block's size), or a transfer
//!   that shares the source's uplink and the reader's downlink fairly with
//!   the other transfers for as long as it lasts (its time alone in
//!   proportion to the block's size when the maps' inputs differ);
//! - when a job's last map ends its reduces wait, and each heartbeat offers
//!   the worker to the [`ReducePlacer`] before any map (as the master
//!   does); a reduce lasts its given time; a job ends when its last task
//!   (map, or reduce if it has any) ends.
//!
//! Launches a batch policy makes for another worker start at once (the
//! master would hold them until that worker's next heartbeat).

use crate::sim::SimError;
use base::{JobId, TaskRef, WorkerId};
use sched::reduce::ReducePlacer;
use sched::view::Scheduler;
use std::collections::VecDeque;

mod beats;
mod engine;
mod flows;
pub use engine::Replay;

/// The workers: slots, heartbeat cadence and phase.
#[derive(Clone, Debug)]
pub struct ReplayCluster {
    /// Slots per worker; worker `i` is `WorkerId(i)`.
    pub slots: Vec<u32>,
    pub heartbeat_ms: u64,
    /// Each worker's first heartbeat (then one every period).
    pub phase_ms: Vec<u64>,
    /// Each worker's heartbeat period as measured (ms; a real worker's
    /// drifts a little above `heartbeat_ms`); empty: `heartbeat_ms`.
    pub period_ms: Vec<f64>,
    /// A worker also heartbeats when one of its tasks ends, and when a job
    /// arrives (the master asks idle workers to).
    pub out_of_band: bool,
    /// Worker roles (EAS's dedicated machines); empty: every worker runs
    /// both.
    pub runs_maps: Vec<bool>,
    pub runs_reduces: Vec<bool>,
    /// Each regular heartbeat comes up to this many ms late, drawn per
    /// worker and heartbeat from `jitter_seed` (0: on time). Real workers'
    /// heartbeats reach the master in an order that varies from round to
    /// round; this lets the replay vary it too. The seed also draws the
    /// order in which heartbeats the master asks for together reach it (an
    /// arrival's out-of-band wake), jitter or not.
    pub jitter_ms: u64,
    pub jitter_seed: u64,
    /// Keep the decision record ([`sched::decision`]), as the master does
    /// with `master.decisions`: [`ReplayOutcome::decisions`].
    pub record_decisions: bool,
    /// Host contention: each map lasts this many ms longer per other map
    /// launched anywhere in the cluster in the [`HOST_WINDOW_MS`] before
    /// it. The testbed's workers share one host's cores, so a burst of
    /// block reads and checks slows every task starting in it, and the
    /// bursts grow with the number of workers (0: none, as on a cluster of
    /// separate machines).
    pub host_ms_per_start: f64,
    /// Each worker's tasks last this many times their given length (a
    /// slow machine: 10 = a tenth of the speed); empty or missing: 1.
    pub slowdown: Vec<f64>,
    /// Speculative execution, as the master's `[speculation]`: the view
    /// runs the same rule, a backup runs like any map or reduce, the first
    /// attempt the master learns of wins and the other is killed then.
    pub speculation: sched::speculation::Speculation,
    /// The real run's heartbeats as its master took them, in that order:
    /// (time in ms, worker), from its decision record's offers (regular
    /// ones, those an arrival woke, those after a task ended). Given, each
    /// worker heartbeats exactly then until its last recorded one, and from
    /// then on every period as without a record; no arrival wakes a worker
    /// (the record holds those heartbeats), but with `out_of_band` a
    /// worker still heartbeats when a simulated task of its ends (the
    /// model's end is not the real one's). Ties in time go in the record's
    /// order. Empty: every worker from its phase.
    pub recorded_beats: Vec<(u64, u32)>,
    /// The real run's task lengths, by (job, task, reduce?): each real
    /// attempt's (worker, source, ms). A launch on the same worker from
    /// the same source lasts exactly that (no model, no host term, no
    /// transfer shared); any other launch is modelled. Empty: none.
    pub measured_ms: MeasuredMs,
    /// The workers' emulated disks (`workers.disk_mbs`): every map's block
    /// read (data-local, or served to a remote reader) goes through its
    /// source's disk, shared fairly with the other reads from it while it
    /// lasts, and the map's `local_ms` runs after it and after the slot's
    /// pacing floor (the rest of its time: with this, `local_ms` leaves the
    /// read and the pacing out). None: no disk term.
    pub disk: Option<DiskShare>,
    /// The shuffle over the network: a reduce fetches its job's map
    /// output from the workers that ran the maps through their links,
    /// shared fairly with every other transfer on them, and then sends its
    /// output's copies to the workers the master's rule picks at its start
    /// (`sched::reduce::targets`), each a transfer on its own transmit link
    /// and the target's receive link; it ends at the later of its own time
    /// (`local_ms` from its start: the slot's pacing floor) and its fetch
    /// plus its copies. A data-remote map's block crosses the same links at
    /// their rate from the map's start (its source's transmit link, its
    /// reader's receive link), as the real workers' NICs carry it beside
    /// the shuffle; the map's length stays its [`RemoteModel`]'s, but
    /// under the fixed model, read from another worker's memory (no
    /// disk), it ends no sooner than its block has crossed (the
    /// fair-share model's own transfer progresses at those links' share
    /// without being counted on them twice). None: a reduce lasts
    /// its `local_ms`, and the links carry only the fair-share model's
    /// reads.
    pub shuffle_net: Option<ShuffleNet>,
}

/// [`ReplayCluster::shuffle_net`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShuffleNet {
    /// Every worker's link, each way, bytes per ms.
    pub link_bpms: f64,
    /// Copies of a reduce's output beyond the one it stores, each sent
    /// through its transmit link after its fetch (its `bytes`), to a
    /// worker that holds data (none where no other worker does).
    pub extra_copies: u32,
}

/// [`ReplayCluster::disk`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskShare {
    /// Each worker's disk, MB/s (0 or missing: none on it).
    pub mbs: Vec<f64>,
    /// A map lasts at least its bytes at this rate from its start, before
    /// its `local_ms` (the worker's compute pacing, MB/s; 0: none).
    pub slot_mbs: f64,
}

/// [`ReplayCluster::measured_ms`]: by (job, task, reduce?), each real
/// attempt's (worker, source, ms).
pub type MeasuredMs = std::collections::BTreeMap<(JobId, u32, bool), Vec<(u32, u32, u64)>>;

/// The least time compute pacing at `rate_mbs` MB/s gives `bytes`, ms.
pub fn pacing_ms(bytes: u64, rate_mbs: f64) -> u64 {
    if !(rate_mbs.is_finite() && rate_mbs > 0.0) {
        return 0;
    }
    (bytes as f64 / (rate_mbs * 1e6) * 1000.0).round() as u64
}

/// The order a reduce takes its parts in (the worker's `fetch_order`): one
/// from each worker's queue in turn, starting at the worker its number
/// `index` picks.
pub fn fetch_order<T>(mut queues: Vec<(u32, VecDeque<T>)>, index: u32) -> Vec<(u32, T)> {
    let mut parts = Vec::new();
    if queues.is_empty() {
        return parts;
    }
    let k = index as usize % queues.len();
    queues.rotate_left(k);
    while queues.iter().any(|q| !q.1.is_empty()) {
        for (w, q) in queues.iter_mut() {
            if let Some(x) = q.pop_front() {
                parts.push((*w, x));
            }
        }
    }
    parts
}

/// How many parts of its input a reduce fetches at once (the worker's
/// `shuffle_in`), under [`ReplayCluster::disk`].
pub const FETCH_PARALLEL: usize = 4;

/// The window of [`ReplayCluster::host_ms_per_start`]: launches this recent
/// count.
pub const HOST_WINDOW_MS: u64 = 1_000;

#[derive(Clone, Debug)]
pub struct ReplayTask {
    pub index: u32,
    pub replicas: Vec<WorkerId>,
    /// How long it runs data-local.
    pub local_ms: u64,
    /// A map's input bytes (0: not known), which the per-byte terms of a
    /// remote read scale with; a reduce's output bytes (what it sends as
    /// copies under [`ReplayCluster::shuffle_net`]).
    pub bytes: u64,
}

#[derive(Clone, Debug)]
pub struct ReplayJob {
    pub id: JobId,
    pub arrival_ms: u64,
    /// The maps.
    pub tasks: Vec<ReplayTask>,
    /// The reduces (their `replicas` are unused; `local_ms` is how long
    /// each runs), waiting once every map has ended.
    pub reduces: Vec<ReplayTask>,
    /// Estimated input bytes of each reduce (the least-loaded placement's
    /// load).
    pub reduce_load: u64,
}

/// A background process holding one slot of `worker` over [start, end).
#[derive(Clone, Copy, Debug)]
pub struct BackgroundRun {
    pub worker: WorkerId,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// What a data-remote read adds to a task: `base_ms + per_source_ms *
/// n_src + per_reader_ms * n_dst + per_mb_ms * MB`, with n_src (n_dst) the
/// other remote reads running from the same source (on the same reader)
/// when it starts and MB its block's size in 10^6 bytes. Never negative.
/// Terms fitted on reads of one size (`per_mb_ms` 0) and given that size
/// as `ref_bytes` charge a read of another size in proportion to its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RemoteCost {
    pub base_ms: f64,
    pub per_source_ms: f64,
    pub per_reader_ms: f64,
    pub per_mb_ms: f64,
    /// The one block size the terms were fitted on, where they scale with
    /// a read's bytes (0: a fixed extra whatever the size).
    pub ref_bytes: u64,
}

impl RemoteCost {
    /// The cost as a formula in ms: `base + a n_src + b n_dst`, and
    /// `+ c/MB` when it has a per-MB term.
    pub fn formula(&self) -> String {
        let mut f = format!(
            "{:.0} + {:.0} n_src + {:.0} n_dst",
            self.base_ms, self.per_source_ms, self.per_reader_ms
        );
        if self.per_mb_ms != 0.0 {
            f += &format!(" + {:.0}/MB", self.per_mb_ms);
        } else if self.ref_bytes > 0 {
            f = format!("({f}) x bytes / {:.3} MB", self.ref_bytes as f64 / 1e6);
        }
        f
    }

    pub fn extra_ms(&self, n_src: u32, n_dst: u32, bytes: u64) -> u64 {
        let mut x = self.base_ms
            + self.per_source_ms * f64::from(n_src)
            + self.per_reader_ms * f64::from(n_dst);
        if self.per_mb_ms != 0.0 {
            x += self.per_mb_ms * bytes as f64 / 1e6;
        } else if self.ref_bytes > 0 && bytes > 0 {
            x *= bytes as f64 / self.ref_bytes as f64;
        }
        x.max(0.0).round() as u64
    }
}

/// How a data-remote read is charged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RemoteModel {
    /// A fixed extra decided when the task starts.
    Static(RemoteCost),
    /// A transfer of `transfer_ms` when alone (for a block of `ref_bytes`;
    /// a block of `bytes` takes `transfer_ms * bytes / ref_bytes`, unless
    /// either is 0), progressing at 1 / n, n the larger of the transfers
    /// from its source and to its reader now (max of the two links' fair
    /// shares); then the task runs its `local_ms`.
    FairShare { transfer_ms: f64, ref_bytes: u64 },
}

/// One task as it ran in the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRun {
    pub task: TaskRef,
    pub worker: WorkerId,
    /// Where a map read its block (the worker itself for a reduce).
    pub source: WorkerId,
    pub start_ms: u64,
    pub end_ms: u64,
    pub reduce: bool,
}

impl TaskRun {
    pub fn is_remote(&self) -> bool {
        self.worker != self.source
    }
}

#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    /// (job, arrival, end) per job, in `jobs` order.
    pub jobs: Vec<(JobId, u64, u64)>,
    pub runs: Vec<TaskRun>,
    /// The decision record (empty unless `record_decisions`), oldest first,
    /// and its inputs ([`sched::input`]).
    pub decisions: Vec<sched::decision::Decision>,
    pub inputs: Vec<sched::input::Input>,
    /// Backup attempts launched (speculation), and how many finished
    /// before the attempt they backed up.
    pub backups: u32,
    pub backups_won: u32,
    /// Events the run took, in time order: heartbeats (each an offer),
    /// task ends and fair-share reads ending.
    pub events: u64,
}

impl ReplayOutcome {
    pub fn mean_jct_s(&self) -> f64 {
        let n = self.jobs.len().max(1) as f64;
        self.jobs
            .iter()
            .map(|(_, a, e)| e.saturating_sub(*a) as f64 / 1000.0)
            .sum::<f64>()
            / n
    }

    /// The last job's end, seconds from time 0 (the run's start).
    pub fn makespan_s(&self) -> f64 {
        self.jobs.iter().map(|j| j.2).max().unwrap_or(0) as f64 / 1000.0
    }

    pub fn remote_tasks(&self) -> usize {
        self.runs.iter().filter(|r| r.is_remote()).count()
    }
}

/// Runs `sched` over `jobs` on `cluster` with `background` and `remote`
/// ([`Replay`]). Fails if `give_up_ms` pass with tasks waiting and nothing
/// launched.
#[allow(clippy::too_many_arguments)]
pub fn replay(
    sched: &mut dyn Scheduler,
    placer: &mut ReducePlacer,
    cluster: &ReplayCluster,
    jobs: &[ReplayJob],
    background: &[BackgroundRun],
    remote: RemoteModel,
    give_up_ms: u64,
) -> Result<ReplayOutcome, SimError> {
    Replay::new(sched, placer, cluster, jobs, background, remote, give_up_ms).run()
}

#[cfg(test)]
mod shuffle_tests;
#[cfg(test)]
mod tests;
