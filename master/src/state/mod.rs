//! `Master`: the cluster's state and the rules that change it. Synchronous
//! and clock-free (every call is given the time), so tests drive it with
//! fake workers exactly as the HTTP layer drives it with real ones.
//!
//! Task life: Pending -> Running(attempt n on worker w, reading from s) ->
//! Done, or back to Pending as attempt n+1 when the attempt failed (counted),
//! was rejected, lost in transit or its worker was lost (not counted).
//! Results are accepted only from the current attempt (or a map's backup,
//! under speculation) on the worker it was sent to (fencing).
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
//! `placement::Placement` (the scheduler's view, the map scheduler, the
//! reduce placer and the decision record: the only writer of the view),
//! `jobs::Jobs` (the jobs and their tasks: attempts, map outputs,
//! counters, records; earlier incarnations' reports), `journal::Journal`
//! (entries not yet appended), `public::Instances` (rented instances:
//! ports, usage, bills, start/stop orders) and `held::Held` (jobs a
//! restarted master took back, until the workers registered again).
//! `Master` owns none of their
//! fields: it runs a registration, a heartbeat or a submission through
//! them, and `impl Master` lives only here and in one file per concern:
//! `workers.rs` (registration, heartbeats, loss, routing storage's
//! orders), `submit.rs` (jobs in, map launches), `attempts.rs` (results,
//! retries, job end), `reduce.rs` (the reduce phase), `rent.rs` (rented
//! instances started, up and stopped), `report.rs`, `restore.rs` (the
//! journal replayed, the held jobs' attempts adopted, the jobs going on).

use common::config::{ClusterConfig, WorkerSettings};
use common::{AttemptId, JobId, WorkerId};
use sched::policy::SchedulerConfig;
use sched::reduce::ReducePlacement;
use sched::{self, ClusterView, Scheduler};

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
    #[error("{0} ended and was retired from the master's memory (master.retained_jobs); its report is in the job journal, or in its history (`<journal>.history.jsonl`) once the master restarted")]
    RetiredJob(JobId),
    #[error("file {name:?} is in use by {job} ({how}); try again once it ended")]
    FileInUse {
        name: String,
        job: JobId,
        how: &'static str,
    },
    #[error("file {name:?} is being deleted: {pending} replicas on live workers still to go (or copies of them still landing)")]
    FileBeingDeleted { name: String, pending: usize },
    #[error("{0}")]
    BadRequest(String),
    #[error("worker {name:?} speaks protocol {speaks}, this master needs {needs} (generation stamps on output replicas; 0 = a worker built before them): upgrade the worker", needs = common::wire::PROTOCOL)]
    OldWorker { name: String, speaks: u32 },
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
    /// Replicas of a reduce output block unless its job sets its own
    /// (`cluster.output_replication`, else `cluster.replication`; capped
    /// by live workers).
    pub replication: u32,
    /// The configured workers (rented instances join the roster later).
    pub workers: Vec<WorkerSettings>,
    /// The job journal's file; `None` = no journal (tests).
    pub journal: Option<std::path::PathBuf>,
    /// A journal damaged before its last line: keep the entries before
    /// the damage (the file kept aside) instead of refusing to start
    /// (`master serve --journal-recover`).
    pub journal_recover: bool,
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
    /// Ended jobs kept in memory (`master.retained_jobs`), the oldest
    /// retired first.
    pub retained_jobs: usize,
    /// Speculative execution (`[speculation]`).
    pub speculation: sched::speculation::Speculation,
    /// The secrets per role (`[credentials]`) besides `cluster.token`.
    pub credentials: common::credentials::CredentialsSection,
    /// The cluster.toml to re-read `[credentials]` from when it changes
    /// (a rotation without a restart); `None`: never.
    pub config_path: Option<std::path::PathBuf>,
    /// Its certificate and the cluster's authority (`[tls]`): the API
    /// serves HTTPS and the master trusts only the authority when it calls
    /// workers; `None`: plain HTTP. Read by the daemon's start-up
    /// (`ClusterConfig::node_tls`), not here.
    pub tls: Option<common::tls::load::NodeTls>,
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
            journal_recover: false,
            public_types: cfg.public_type.clone(),
            public: cfg.public_section(),
            slot_rate_mbs: cfg.workers.slot_rate_mbs,
            provision: crate::provision::ProvisionSettings::from_config(cfg)
                .map(crate::provision::Provisioning::processes),
            record_decisions: cfg.master.decisions,
            decisions_max: usize::try_from(cfg.master.decisions_max).unwrap_or(usize::MAX),
            retained_jobs: usize::try_from(cfg.master.retained_jobs).unwrap_or(usize::MAX),
            speculation: cfg.speculation.clone(),
            credentials: cfg.credentials.clone(),
            config_path: (!cfg.path.as_os_str().is_empty()).then(|| cfg.path.clone()),
            tls: None,
        }
    }
}

pub struct Master {
    settings: MasterSettings,
    /// The workers: liveness, what their heartbeats said, the attempts
    /// sent to them and the orders waiting for their next reply.
    workers: roster::Roster,
    /// The catalog, files' factors, deletions, copies and trims.
    storage: storage::Storage,
    /// The jobs and their tasks, and earlier incarnations' reports.
    jobs: jobs::Jobs,
    /// The scheduler's view, the map scheduler, the reduce placer and the
    /// decision record: where tasks go.
    placement: placement::Placement,
    /// Journal entries not yet written (the HTTP layer appends them).
    journal: journal::Journal,
    /// Counted as results are applied (`GET /metrics`).
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Public instances asked for since the master started, their usage
    /// and the start/stop orders for the HTTP layer.
    instances: public::Instances,
    /// Jobs taken back from the journal, until the workers registered.
    held: held::Held,
    /// Which start of the master this is (1 without a journal; one more
    /// than the journal's last at a restart): heartbeats stamped with
    /// another are refused.
    incarnation: u64,
    /// The time of the step under way (a heartbeat's, a tick's).
    now: sched::Millis,
}

impl Master {
    pub fn new(settings: MasterSettings) -> Self {
        let scheduler = sched::build(&settings.scheduler, settings.seed);
        Self::with_scheduler(settings, scheduler)
    }

    pub fn with_scheduler(settings: MasterSettings, scheduler: Box<dyn Scheduler>) -> Self {
        let placement = placement::Placement::new(&settings, scheduler);
        let workers = roster::Roster::new(settings.workers.clone());
        let retained_jobs = settings.retained_jobs;
        let instances = public::Instances::new(
            settings.public_types.clone(),
            settings.public.clone(),
            settings.slot_rate_mbs,
        );
        let mut m = Master {
            settings,
            workers,
            storage: Default::default(),
            jobs: jobs::Jobs::new(retained_jobs),
            placement,
            metrics: Default::default(),
            journal: Default::default(),
            instances,
            held: Default::default(),
            incarnation: 1,
            now: 0,
        };
        m.init_public();
        m
    }

    /// Re-replication copies ordered since the master started.
    pub fn blocks_copied(&self) -> u64 {
        self.storage.blocks_copied()
    }

    pub fn scheduler_name(&self) -> String {
        self.placement.scheduler_name()
    }

    /// What the scheduler's report says besides its launches.
    pub fn scheduler_notes(&self) -> Vec<String> {
        self.placement.scheduler_notes()
    }

    /// The scheduler's configuration (policy and parameters).
    pub fn scheduler_config(&self) -> &SchedulerConfig {
        &self.settings.scheduler
    }

    /// The reduce placement in use (`policy` resolved).
    pub fn reduce_placement(&self) -> ReducePlacement {
        self.placement.reduce_placement()
    }

    pub fn view(&self) -> &ClusterView {
        self.placement.view()
    }

    /// Whether the master keeps the decision record.
    pub fn recording_decisions(&self) -> bool {
        self.placement.recording()
    }

    /// The decision record (all of it, or one job's rows), oldest first.
    pub fn decisions(&self, job: Option<JobId>) -> Vec<sched::decision::Decision> {
        self.placement.decisions(job)
    }

    /// Rows the decision record dropped to stay within `decisions_max`.
    pub fn decisions_dropped(&self) -> u64 {
        self.placement.decisions_dropped()
    }

    /// The record's inputs, oldest first, and how many were dropped from
    /// their front (a record that dropped some cannot be run again).
    pub fn inputs(&mut self) -> (Vec<sched::input::Input>, u64) {
        self.placement.inputs()
    }

    /// The seed the policy was built with.
    pub fn seed(&self) -> u64 {
        self.settings.seed
    }

    /// Jobs that reached a final state since the master started (wakes
    /// long-polls).
    pub fn finished_jobs(&self) -> u64 {
        self.jobs.finished()
    }

    /// Which start of the master this is.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Attempt results refused since the master started.
    pub fn results_refused(&self) -> u64 {
        self.workers.refused()
    }

    /// Maps run again because their output was lost (a dead worker, a
    /// failed shuffle fetch).
    pub fn maps_rerun(&self) -> u64 {
        self.jobs.maps_rerun()
    }

    /// The workers' names by id (the decision record's worker ids).
    pub fn worker_names(&self) -> Vec<String> {
        self.workers.names()
    }

    fn worker_name(&self, w: WorkerId) -> String {
        self.workers.name(w)
    }
}

/// The journal's entries, made from the master's state.
impl Master {
    /// Journal entries produced since the last call, to append.
    pub fn take_journal(&mut self) -> Vec<journal::JournalEntry> {
        self.journal.take()
    }

    /// Entries `take_journal` gave that could not be written: they go out
    /// first with the next ones.
    pub fn requeue_journal(&mut self, entries: Vec<journal::JournalEntry>) {
        self.journal.requeue(entries);
    }

    fn journal_launch(&mut self, attempt: AttemptId, worker: WorkerId, source: WorkerId) {
        self.journal.push(journal::JournalEntry::Launched {
            attempt,
            worker: self.worker_name(worker),
            source: self.worker_name(source),
        });
    }

    fn journal_outputs_lost(&mut self, job: JobId, lost: &[(u32, WorkerId, u32)]) {
        if lost.is_empty() {
            return;
        }
        let lost = lost
            .iter()
            .map(|&(m, w, a)| (m, self.worker_name(w), a))
            .collect();
        self.journal
            .push(journal::JournalEntry::OutputsLost { job, lost });
    }

    fn journal_task(&mut self, entry: journal::JournalEntry) {
        self.journal.push(entry);
    }

    fn journal_ended(&mut self, id: JobId) {
        if let Ok(report) = self.report(id) {
            self.journal.push(journal::JournalEntry::Ended { report });
        }
    }
}

mod attempts;
pub mod commit;
mod held;
mod jobs;
pub mod journal;
mod placement;
pub mod public;
mod record;
mod reduce;
mod rent;
mod replication;
mod report;
mod restore;
mod roster;
mod storage;
mod submit;
mod workers;

#[cfg(test)]
pub(crate) mod tests;
