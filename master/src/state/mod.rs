//! `Master`: the cluster's state and the rules that change it. Synchronous
//! and clock-free (every call is given the time), so tests drive it with
//! fake workers exactly as the HTTP layer drives it with real ones.
//!
//! Task life: Pending -> Running(attempt n on worker w, reading from s) ->
//! Done, or back to Pending as attempt n+1 when the attempt failed (counted),
//! was rejected, lost in transit or its worker was lost (not counted).
//! Results are accepted only from the current attempt on the worker it was
//! sent to (fencing).
//!
//! Jobs with reduces (wordcount, sort): when the last map succeeds, the
//! reduce tasks are created (sort: with split keys from the maps' samples)
//! and take free slots before any map, on whichever worker heartbeats next
//! (like Hadoop's reduce slots, they have no input locality). Each fetches
//! its partition from every map's worker. A map output that cannot be
//! fetched (the reduce says which, `FetchFailed`), or that sat on a worker
//! that was lost or restarted while the job's reduces still need it, is
//! rebuilt: the map runs again (its counters taken back), and the reduces
//! wait until every map is done again, retrying without a failure counted.
//!
//! Composed parts that own their fields, each unit-tested alone:
//! `roster::Roster` (the workers: liveness, what their heartbeats said, the
//! attempts sent to each and the orders waiting for its next reply),
//! `storage::Storage` (the catalog, files' factors, deletions, copies and
//! trims; re-replication's planning in `replication.rs`),
//! `journal::Journal` (entries not yet appended) and `public::Instances`
//! (rented instances: ports, usage, bills, start/stop orders). `Master`
//! runs a registration, a heartbeat or a submission through them, one file
//! per concern: `workers.rs` (registration, heartbeats, loss, routing
//! storage's orders), `submit.rs` (jobs in, map launches), `attempts.rs`
//! (results, retries, job end), `reduce.rs` (the reduce phase),
//! `report.rs`. The jobs and their tasks (`jobs`) are still `Master`'s own
//! fields, written by those concern files (issue 35, item 2).

use common::config::{ClusterConfig, WorkerSettings};
use common::wire::{JobReport, JobState, JobSubmit, TaskRecord};
use common::{BlockId, JobId, WorkerId};
use sched::policy::SchedulerConfig;
use sched::reduce::ReducePlacement;
use sched::{self, ClusterView, Millis, ReducePlacer, Scheduler};
use std::collections::HashMap;

/// Upper bound on a job's reduce tasks.
pub const MAX_REDUCES: u32 = 10_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MasterError {
    #[error("no [[worker]] named {name:?} in cluster.toml (known: {known})")]
    UnknownWorker { name: String, known: String },
    #[error("no file named {name:?}; load it first (files: {known})")]
    UnknownFile { name: String, known: String },
    #[error("file {name:?} is incomplete: blocks {missing:?} have no live replica")]
    IncompleteFile { name: String, missing: Vec<u32> },
    #[error("no job {0}")]
    UnknownJob(JobId),
    #[error("file {name:?} is in use by {job} ({how}); try again once it ended")]
    FileInUse {
        name: String,
        job: JobId,
        how: &'static str,
    },
    #[error("file {name:?} is being deleted: {pending} replicas on live workers still to go")]
    FileBeingDeleted { name: String, pending: usize },
    #[error("{0}")]
    BadRequest(String),
}

/// What the master takes from cluster.toml.
#[derive(Clone, Debug)]
pub struct MasterSettings {
    pub heartbeat_ms: u64,
    pub worker_timeout_ms: u64,
    /// See `cluster.task_timeout_ms`; 0 = never.
    pub task_timeout_ms: u64,
    pub max_task_attempts: u32,
    pub scheduler: SchedulerConfig,
    /// Where reduces run (`policy` resolves for the scheduler).
    pub reduce_placement: ReducePlacement,
    pub seed: u64,
    /// Replicas of every reduce output block (`cluster.output_replication`,
    /// else `cluster.replication`; capped by live workers).
    pub replication: u32,
    /// The configured workers (rented instances join the roster later).
    pub workers: Vec<WorkerSettings>,
    /// The job journal's file; `None` = no journal (tests).
    pub journal: Option<std::path::PathBuf>,
    /// Public instance types the scheduler may rent, and `[public]`.
    pub public_types: Vec<common::public::PublicType>,
    pub public: common::public::PublicSection,
    /// The private workers' compute pacing (`workers.slot_rate_mbs`),
    /// which an instance's speed scales.
    pub slot_rate_mbs: Option<f64>,
    /// How instances are started; `None`: nobody starts them (tests of
    /// the state alone).
    pub provision: Option<crate::provision::Provisioning>,
    /// Keep the decision record (`master.decisions`): every launch and
    /// declined offer with its reason.
    pub record_decisions: bool,
    /// At most this many rows of it (`master.decisions_max`), the oldest
    /// dropped first.
    pub decisions_max: usize,
}

impl MasterSettings {
    pub fn from_config(cfg: &ClusterConfig) -> Self {
        MasterSettings {
            heartbeat_ms: cfg.cluster.heartbeat_ms,
            worker_timeout_ms: cfg.cluster.worker_timeout_ms,
            task_timeout_ms: cfg.cluster.task_timeout_ms,
            max_task_attempts: cfg.cluster.max_task_attempts,
            scheduler: cfg.scheduler.clone(),
            reduce_placement: cfg.cluster.reduce_placement,
            seed: cfg.cluster.seed,
            replication: cfg
                .cluster
                .output_replication
                .unwrap_or(cfg.cluster.replication),
            workers: cfg.worker_settings(),
            journal: Some(cfg.resolve(&cfg.master.journal)),
            public_types: cfg.public_type.clone(),
            public: cfg.public_section(),
            slot_rate_mbs: cfg.workers.slot_rate_mbs,
            provision: crate::provision::ProvisionSettings::from_config(cfg)
                .map(crate::provision::Provisioning::processes),
            record_decisions: cfg.master.decisions,
            decisions_max: usize::try_from(cfg.master.decisions_max).unwrap_or(usize::MAX),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct RunningAttempt {
    attempt: u32,
    worker: WorkerId,
    source: WorkerId,
    /// When it was launched.
    started: Millis,
    /// The highest progress count its worker reported, and when it last
    /// grew (the launch until the first report): for the task timeout.
    progress: u64,
    progressed: Millis,
    /// The slot its worker runs it in, once a heartbeat said.
    slot: Option<u32>,
}

impl RunningAttempt {
    /// Data-remote when it reads from another worker than its own.
    fn locality(&self) -> common::wire::Locality {
        if self.worker != self.source {
            common::wire::Locality::DataRemote
        } else {
            common::wire::Locality::DataLocal
        }
    }

    fn new(attempt: u32, worker: WorkerId, source: WorkerId, now: Millis) -> Self {
        RunningAttempt {
            attempt,
            worker,
            source,
            started: now,
            progress: 0,
            progressed: now,
            slot: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum TaskStatus {
    Pending,
    Running(RunningAttempt),
    Done,
}

#[derive(Debug)]
struct Task {
    /// The input block of a map; the output block of a reduce.
    block: BlockId,
    /// `Some(r)` for the reduce of partition r.
    reduce: Option<u32>,
    len: u64,
    /// Number the next attempt gets.
    next_attempt: u32,
    /// Failed attempts (rejections and losses do not count).
    failures: u32,
    status: TaskStatus,
    /// Workers where an attempt of this map stalled (no progress for
    /// `task_timeout_ms`): their replicas of its block are not used for it
    /// again while another is live, as Hadoop keeps a task off the trackers
    /// it failed on.
    stalled_on: Vec<WorkerId>,
    /// A reduce: the workers its running attempt sends output replicas to.
    out_targets: Vec<WorkerId>,
}

impl Task {
    fn kind(&self) -> common::wire::TaskKind {
        if self.reduce.is_some() {
            common::wire::TaskKind::Reduce
        } else {
            common::wire::TaskKind::Map
        }
    }
}

#[derive(Debug)]
struct Job {
    id: JobId,
    name: String,
    spec: JobSubmit,
    scheduler: String,
    submitted: Millis,
    submit_unix_ms: u64,
    first_launch: Option<Millis>,
    finished: Option<Millis>,
    state: JobState,
    error: Option<String>,
    /// Maps first (index = block index), then the reduces once created.
    tasks: Vec<Task>,
    maps: u32,
    reduces: u32,
    /// Output file of a job with reduces.
    output: Option<String>,
    /// Where each map's successful attempt left its output.
    map_out: Vec<Option<MapOut>>,
    /// sort: keys sampled by the maps, then the reduces' split keys.
    samples: Vec<Vec<u8>>,
    splits: Vec<Vec<u8>>,
    /// Every finished attempt, for the report.
    records: Vec<TaskRecord>,
    counts: JobCounters,
}

/// Where a map's successful attempt left its output, and what it counted
/// (taken back if the output is lost and the map runs again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MapOut {
    worker: WorkerId,
    attempt: u32,
    remote: bool,
    local_bytes: u64,
    remote_bytes: u64,
    /// Map output bytes it left for the reduces.
    output_bytes: u64,
}

/// What a job's successful attempts add up to (the report's counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct JobCounters {
    maps_done: u32,
    reduces_done: u32,
    /// Map output bytes the reduces fetched.
    shuffle_bytes: u64,
    data_local: u32,
    data_remote: u32,
    bytes_local: u64,
    bytes_remote: u64,
}

impl JobCounters {
    fn map_done(&mut self, remote: bool, local_bytes: u64, remote_bytes: u64) {
        self.maps_done += 1;
        if remote {
            self.data_remote += 1;
        } else {
            self.data_local += 1;
        }
        self.bytes_local += local_bytes;
        self.bytes_remote += remote_bytes;
    }

    /// A map's output was lost: it will run again and count again.
    fn map_lost(&mut self, out: &MapOut) {
        self.maps_done -= 1;
        if out.remote {
            self.data_remote -= 1;
        } else {
            self.data_local -= 1;
        }
        self.bytes_local -= out.local_bytes;
        self.bytes_remote -= out.remote_bytes;
    }

    fn reduce_done(&mut self, fetched_bytes: u64) {
        self.reduces_done += 1;
        self.shuffle_bytes += fetched_bytes;
    }
}

pub struct Master {
    settings: MasterSettings,
    /// The workers: liveness, what their heartbeats said, the attempts
    /// sent to them and the orders waiting for their next reply.
    workers: roster::Roster,
    /// The catalog, files' factors, deletions, copies and trims.
    storage: storage::Storage,
    jobs: HashMap<JobId, Job>,
    next_job: u32,
    view: ClusterView,
    /// Places the reduces (a pure state machine, like `scheduler`).
    reducer: ReducePlacer,
    scheduler: Box<dyn Scheduler>,
    /// Bumped whenever a job reaches a final state (wakes long-polls).
    pub finished_jobs: u64,
    /// Maps run again because their output was lost (a dead worker, a
    /// failed shuffle fetch).
    pub maps_rerun: u64,
    /// Journal entries not yet written (the HTTP layer appends them).
    journal: journal::Journal,
    /// Jobs of earlier incarnations of the master, from the journal.
    archived: std::collections::BTreeMap<JobId, JobReport>,
    /// Counted as results are applied (`GET /metrics`).
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Public instances asked for since the master started, their usage
    /// and the start/stop orders for the HTTP layer.
    instances: public::Instances,
    /// The decision record since the master started (empty unless
    /// `record_decisions`), and its inputs (every change to the view and
    /// every offer, for `sched::recheck`).
    decisions: std::collections::VecDeque<sched::decision::Decision>,
    inputs: std::collections::VecDeque<sched::input::Input>,
    /// Rows and inputs dropped from their fronts to keep each within
    /// `decisions_max`.
    decisions_dropped: u64,
    inputs_dropped: u64,
}

impl Master {
    pub fn new(settings: MasterSettings) -> Self {
        let scheduler = sched::build(&settings.scheduler, settings.seed);
        Self::with_scheduler(settings, scheduler)
    }

    pub fn with_scheduler(settings: MasterSettings, scheduler: Box<dyn Scheduler>) -> Self {
        let reducer = ReducePlacer::new(settings.reduce_placement, &settings.scheduler);
        let workers = roster::Roster::new(settings.workers.clone());
        let record_decisions = settings.record_decisions;
        let instances = public::Instances::new(
            settings.public_types.clone(),
            settings.public.clone(),
            settings.slot_rate_mbs,
        );
        let mut m = Master {
            settings,
            workers,
            storage: Default::default(),
            jobs: HashMap::new(),
            next_job: 1,
            view: {
                let mut v = ClusterView::new();
                v.record_decisions(record_decisions);
                v
            },
            reducer,
            scheduler,
            finished_jobs: 0,
            maps_rerun: 0,
            metrics: Default::default(),
            journal: Default::default(),
            archived: Default::default(),
            instances,
            decisions: Default::default(),
            inputs: Default::default(),
            decisions_dropped: 0,
            inputs_dropped: 0,
        };
        m.init_public();
        m
    }

    /// Re-replication copies ordered since the master started.
    pub fn blocks_copied(&self) -> u64 {
        self.storage.blocks_copied()
    }

    pub fn scheduler_name(&self) -> String {
        self.scheduler.name()
    }

    /// The scheduler's configuration (policy and parameters).
    pub fn scheduler_config(&self) -> &SchedulerConfig {
        &self.settings.scheduler
    }

    /// The reduce placement in use (`policy` resolved).
    pub fn reduce_placement(&self) -> ReducePlacement {
        self.reducer.placement()
    }

    pub fn view(&self) -> &ClusterView {
        &self.view
    }

    /// Whether the master keeps the decision record.
    pub fn recording_decisions(&self) -> bool {
        self.view.recording()
    }

    /// The decision record (all of it, or one job's rows), oldest first.
    pub fn decisions(&self, job: Option<JobId>) -> Vec<sched::decision::Decision> {
        self.decisions
            .iter()
            .filter(|d| job.is_none() || d.job == job)
            .cloned()
            .collect()
    }

    /// Rows the decision record dropped to stay within `decisions_max`.
    pub fn decisions_dropped(&self) -> u64 {
        self.decisions_dropped
    }

    /// The record's inputs, oldest first, and how many were dropped from
    /// their front (a record that dropped some cannot be run again).
    pub fn inputs(&mut self) -> (Vec<sched::input::Input>, u64) {
        self.keep_record();
        (self.inputs.iter().cloned().collect(), self.inputs_dropped)
    }

    /// The seed the policy was built with.
    pub fn seed(&self) -> u64 {
        self.settings.seed
    }

    /// Moves the view's new decision rows and inputs into the record,
    /// dropping the oldest of each beyond `decisions_max`.
    fn keep_record(&mut self) {
        if !self.view.recording() {
            return;
        }
        let max = self.settings.decisions_max.max(1);
        self.decisions.extend(self.view.take_decisions());
        self.inputs.extend(self.view.take_inputs());
        while self.decisions.len() > max {
            self.decisions.pop_front();
            self.decisions_dropped += 1;
        }
        while self.inputs.len() > max {
            self.inputs.pop_front();
            self.inputs_dropped += 1;
        }
    }

    /// The workers' names by id (the decision record's worker ids).
    pub fn worker_names(&self) -> Vec<String> {
        self.workers.names()
    }

    fn worker_name(&self, w: WorkerId) -> String {
        self.workers.name(w)
    }
}

mod attempts;
pub mod journal;
pub mod public;
mod reduce;
mod replication;
mod report;
mod restore;
mod roster;
mod storage;
mod submit;
mod workers;

#[cfg(test)]
pub(crate) mod tests;
