//! The JSON bodies exchanged over HTTP: worker <-> master (registration,
//! heartbeats, launches, task results) and client <-> master (jobs, files).

use crate::ids::{AttemptId, BlockId, JobId, WorkerId};
use serde::{Deserialize, Serialize};
use workloads::{MapSummary, Ratios, ReduceSummary, Workload};

mod blocks;
mod commit;
mod compute;
pub use blocks::*;
pub use commit::CommitRequest;
pub use compute::TaskCompute;

/// The master-worker protocol this build speaks, exchanged at registration.
/// 1: a reduce's output replicas carry their attempt's generation stamp
/// ([`output_generation`], `x-block-generation`), which closes the fencing
/// window between a commit grant and the replicas' commit. A node of an
/// earlier build sends none (read as 0): its replicas carry no stamp, and
/// the master would take a stale attempt's for the settled one, so a
/// master refuses such a worker and a worker such a master (HDFS's
/// namenode likewise refuses a datanode of an unsupported version).
pub const PROTOCOL: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RegisterRequest {
    /// The worker's name in cluster.toml.
    pub name: String,
    /// Base URL other nodes reach this worker's HTTP server at.
    pub addr: String,
    pub slots: u32,
    pub blocks: Vec<BlockInfo>,
    /// The protocol the worker speaks ([`PROTOCOL`]; absent: 0, a worker
    /// from before generation stamps, which the master refuses).
    #[serde(default)]
    pub protocol: u32,
    /// The worker heartbeats at once when a task ends and when the master
    /// asks it to (`POST /v1/heartbeat-now`, sent when a job arrives), not
    /// only every `heartbeat_ms`.
    #[serde(default)]
    pub out_of_band_heartbeat: bool,
    /// Attempts running here, or finished and not yet reported: a
    /// restarted master adopts those its journal sent here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<AttemptId>,
    /// The map outputs this worker keeps (job, map, attempt): a restarted
    /// master runs again the maps whose output it no longer has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub map_outputs: Vec<AttemptId>,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RegisterReply {
    pub worker: WorkerId,
    pub heartbeat_ms: u64,
    /// Which start of the master this is: every heartbeat carries it, and
    /// one stamped with an earlier incarnation is refused.
    #[serde(default)]
    pub incarnation: u64,
    /// The protocol the master speaks ([`PROTOCOL`]; absent: 0, a master
    /// from before generation stamps, which the worker refuses).
    #[serde(default)]
    pub protocol: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Heartbeat {
    pub worker: WorkerId,
    pub free_slots: u32,
    /// Attempts running now (a lost launch or a stale attempt shows here).
    pub running: Vec<AttemptId>,
    /// Full block report, sent at registration and whenever the store changed.
    pub blocks: Option<Vec<BlockInfo>>,
    /// Attempts finished since the last acknowledged heartbeat.
    pub results: Vec<TaskResult>,
    /// Every busy slot: how long it has been busy and, for background
    /// processes, how long it stays busy (the offline planners' free-time
    /// estimates).
    #[serde(default)]
    pub busy: Vec<SlotBusy>,
    /// Bytes free for this worker's data on its disk (statvfs), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_free_bytes: Option<u64>,
    /// Per running attempt, a count that grows while it makes progress
    /// (bytes read, processed and written, and ticks of emulated compute):
    /// the master times out attempts whose count stops growing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<AttemptProgress>,
    /// Bytes the worker's NIC received and sent since it started (the
    /// master derives current rates from consecutive heartbeats).
    #[serde(default)]
    pub nic_rx_bytes: u64,
    #[serde(default)]
    pub nic_tx_bytes: u64,
    /// The master incarnation this worker registered with (0: not said):
    /// its results, map outputs and block report are for that master only.
    #[serde(default)]
    pub incarnation: u64,
    /// Copies this worker was ordered to make and could not (the target
    /// refused or could not be reached, the replica was damaged), each with
    /// its target: the master orders them again at once instead of after
    /// the copy timeout, and only that target's copy of a deleted block is
    /// given up (another target's may still land).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies_failed: Vec<CopyOrder>,
}

/// How far one running attempt has come (see `Heartbeat::progress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AttemptProgress {
    pub attempt: AttemptId,
    pub units: u64,
    /// The slot it runs in.
    #[serde(default)]
    pub slot: u32,
    /// The share of its work done, in millionths, where the worker can
    /// judge it (a reduce: half for fetching every map's part, counted by
    /// parts, and half for its output, counted by bytes; as Hadoop's
    /// reduce progress counts its copy, sort and reduce phases). None: the
    /// master judges by `units` (a map: its input's share read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_ppm: Option<u32>,
}

/// One busy slot in a heartbeat (the scheduler's view reads it as is).
pub use sched::view::SlotBusy;

#[derive(Clone, Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HeartbeatReply {
    pub launches: Vec<Launch>,
    /// Jobs that ended: delete their map output (shuffle data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forget_jobs: Vec<JobId>,
    /// The master does not know this worker (it restarted, or declared the
    /// worker lost): register again.
    pub reregister: bool,
    /// Re-replication: copy these stored blocks to other workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copy_blocks: Vec<CopyOrder>,
    /// Replicas above the replication factor: delete them here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_blocks: Vec<BlockId>,
    /// Replicas at a generation the master does not take (written by an
    /// attempt whose result it did not accept): delete each here if it is
    /// still at that generation (a newer one that replaced it stays).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_stale: Vec<StaleReplica>,
    /// Attempts running here that the master no longer waits for (timed
    /// out, their job ended, or launched by an earlier master): stop them
    /// and free their slots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kill: Vec<AttemptId>,
    /// With `reregister`: the master had declared this worker lost and gave
    /// its attempts to others. The worker kills what it runs before it
    /// registers again (results it still holds are refused, and counted,
    /// when it sends them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost: bool,
    /// Results of this heartbeat the master refused, and why (the worker
    /// logs them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refused>,
}

/// A result the master did not take, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Refused {
    pub attempt: AttemptId,
    pub reason: String,
}

/// `PUT /v1/files/{name}/replication`: the replication factor the master
/// keeps a file at (re-replication after losses, trimming above it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FileReplication {
    pub replication: u32,
}

/// "Send your replica of `block` to the worker at `to`."
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CopyOrder {
    pub block: BlockId,
    pub to: String,
}

/// "Run this attempt in one of your free slots."
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Launch {
    pub attempt: AttemptId,
    pub workload: Workload,
    pub task: LaunchTask,
    /// A `synthetic` job's byte ratios (absent: the workload has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratios: Option<Ratios>,
}

/// What the attempt does: a map over one input block, or a reduce over one
/// partition of every map's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum LaunchTask {
    Map {
        block: BlockId,
        len: u64,
        source: ReplicaSource,
        /// The job's reduce count: partitions to produce (0 = map-only).
        reduces: u32,
        /// Other live replica holders, in the order to try them when the
        /// source fails (a checksum error, a dead peer): the attempt reads
        /// the rest of the block from the next one, as HDFS's client does.
        #[serde(default)]
        alternates: Vec<ReplicaAddr>,
        /// Emulated compute after the input is read (and paced), in
        /// milliseconds: the job's `compute` drawn for this task.
        #[serde(default, skip_serializing_if = "is_zero")]
        compute_ms: u64,
    },
    Reduce(ReduceLaunch),
}

/// A worker holding a replica, and where to reach it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReplicaAddr {
    pub worker: WorkerId,
    pub addr: String,
}

impl LaunchTask {
    /// The block a map reads, or the output block a reduce writes.
    pub fn block(&self) -> &BlockId {
        match self {
            LaunchTask::Map { block, .. } => block,
            LaunchTask::Reduce(r) => &r.output.block,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReduceLaunch {
    /// This reduce's partition, 0..reduces.
    pub partition: u32,
    /// Every map's output, fetched over HTTP (also from this worker itself).
    pub inputs: Vec<ShuffleInput>,
    /// sort: the range [lo, hi) of this partition: whole split records (or key prefixes) (None = unbounded).
    #[serde(default)]
    pub range: Option<KeyRange>,
    pub output: OutputTarget,
}

/// Where one map's output is: `GET <addr>/shuffle/<job>/<map>/<attempt>/...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ShuffleInput {
    pub map: u32,
    pub attempt: u32,
    pub worker: WorkerId,
    pub addr: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KeyRange {
    pub lo: Option<Vec<u8>>,
    pub hi: Option<Vec<u8>>,
}

/// The reduce's output block: stored locally, then copied to `replicas`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OutputTarget {
    pub block: BlockId,
    pub file: String,
    pub index: u32,
    pub file_blocks: u32,
    /// Base URLs of the other workers that get a replica.
    pub replicas: Vec<String>,
    /// The generation stamp the replicas are stored with
    /// ([`output_generation`] of the reduce's attempt; a copy keeps its
    /// source's).
    #[serde(default)]
    pub generation: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum ReplicaSource {
    /// Read from this worker's own block store.
    Local,
    /// Fetch over HTTP from the worker at `addr`.
    Remote { worker: WorkerId, addr: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum TaskOutcome {
    Succeeded {
        summary: MapSummary,
    },
    /// A reduce attempt finished and its output block is stored.
    Reduced {
        summary: ReduceSummary,
    },
    /// The attempt ran and failed; it counts against the task's attempts.
    Failed {
        error: String,
    },
    /// The worker had no free slot for it; rescheduled without penalty.
    Rejected {
        reason: String,
    },
    /// A reduce could not fetch these map outputs (their worker died or
    /// does not answer). The master runs those maps again and retries the
    /// reduce without counting this attempt against it.
    FetchFailed {
        lost: Vec<LostOutput>,
        error: String,
    },
    /// The worker's disk filled up (ENOSPC) while the attempt wrote its
    /// output: it runs again elsewhere without counting, and the worker gets
    /// no new task until it reports more free space than it had then.
    NoSpace {
        error: String,
    },
}

/// A map output a reduce could not fetch: map `map`'s attempt `attempt`,
/// kept by `worker`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LostOutput {
    pub map: u32,
    pub attempt: u32,
    pub worker: WorkerId,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskResult {
    pub attempt: AttemptId,
    pub slot: u32,
    pub outcome: TaskOutcome,
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    /// Input bytes read from this worker's disk and over the network.
    pub local_bytes: u64,
    pub remote_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSubmit {
    pub workload: Workload,
    /// Input file name in the master's catalog.
    pub input: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Fair-share group (pool) for the `fair` and `lsap-fair` policies;
    /// absent = `default`.
    #[serde(default)]
    pub group: Option<String>,
    /// Reduce tasks (wordcount and sort; default 1; input-sink has none).
    #[serde(default)]
    pub reduces: Option<u32>,
    /// Name of the output file (default `<job name>.out`); must not exist.
    #[serde(default)]
    pub output: Option<String>,
    /// Emulated compute per map task, on top of reading and pacing (the
    /// "task runners" of DynDL's testbed, whose tasks run U[2, 12] s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<TaskCompute>,
    /// Seconds after submission by which the job should be done (MROSA's
    /// D_i): `mrosa` and `coshic` rent public instances to meet it and
    /// refuse a job no instance type can finish in time; every report says
    /// whether it was met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_s: Option<f64>,
    /// Most the job may spend on public instances (MROSA's C_i, in the
    /// prices' currency units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// `synthetic` only: map output bytes per input byte and reduce output
    /// bytes per shuffle byte (default 1 and 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratios: Option<Ratios>,
    /// Replicas of the job's output (HDFS's `dfs.replication` set per job;
    /// TeraSort writes its output at 1): at most the workers that hold
    /// data; absent = the cluster's `output_replication`, else its
    /// `replication`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_replication: Option<u32>,
}

impl JobSubmit {
    /// Checks the ratios: only a `synthetic` job reads them.
    pub fn check_ratios(&self) -> Result<(), String> {
        match (&self.ratios, self.workload) {
            (Some(r), Workload::Synthetic) => r.validate(),
            (Some(_), w) => Err(format!(
                "ratios are read by the synthetic workload only, not by {w}"
            )),
            (None, _) => Ok(()),
        }
    }

    /// The ratios a launch of this job carries: a synthetic job's (given or
    /// the default), None for every other workload.
    pub fn launch_ratios(&self) -> Option<Ratios> {
        (self.workload == Workload::Synthetic).then(|| self.ratios.unwrap_or_default())
    }

    /// Checks the deadline and the budget; the error names the field.
    pub fn check_qos(&self) -> Result<(), String> {
        if let Some(d) = self.deadline_s {
            if !(d.is_finite() && d > 0.0 && d <= 86_400.0 * 365.0) {
                return Err(format!(
                    "deadline_s must be > 0 seconds and at most a year (got {d})"
                ));
            }
        }
        if let Some(b) = self.budget {
            if !(b.is_finite() && b >= 0.0) {
                return Err(format!("budget must be a number >= 0 (got {b})"));
            }
        }
        Ok(())
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl JobSubmit {
    pub fn new(workload: Workload, input: impl Into<String>) -> Self {
        JobSubmit {
            workload,
            input: input.into(),
            name: None,
            group: None,
            reduces: None,
            output: None,
            compute: None,
            deadline_s: None,
            budget: None,
            ratios: None,
            output_replication: None,
        }
    }

    /// The job's fair-share group.
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or("default")
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobSubmitted {
    pub job: JobId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobState {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl JobState {
    pub fn is_done(self) -> bool {
        matches!(self, JobState::Succeeded | JobState::Failed)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    DataLocal,
    DataRemote,
}

/// One finished (or failed) attempt, as the job report lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskRecord {
    /// Task index: maps are 0..maps, reduces maps..maps + reduces.
    pub task: u32,
    #[serde(default)]
    pub kind: TaskKind,
    pub attempt: u32,
    pub worker: String,
    pub slot: u32,
    pub locality: Locality,
    /// Worker the input was read from.
    pub source: String,
    pub block: BlockId,
    /// Milliseconds after the job's submission.
    pub start_ms: u64,
    pub end_ms: u64,
    pub input_bytes: u64,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobReport {
    pub job: JobId,
    pub name: String,
    pub workload: Workload,
    pub input: String,
    #[serde(default = "default_group")]
    pub group: String,
    pub scheduler: String,
    pub state: JobState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub submit_unix_ms: u64,
    /// Milliseconds after submission: first launch and last task's end.
    pub start_ms: Option<u64>,
    pub finish_ms: Option<u64>,
    /// Job completion time: finish - submit, in milliseconds.
    pub jct_ms: Option<u64>,
    pub tasks: u32,
    pub tasks_done: u32,
    pub data_local: u32,
    pub data_remote: u32,
    pub bytes_local: u64,
    pub bytes_remote: u64,
    /// Reduce tasks (0 for map-only jobs) and how many finished.
    #[serde(default)]
    pub reduces: u32,
    #[serde(default)]
    pub reduces_done: u32,
    /// Map output bytes the reduces fetched (from other workers and their own).
    #[serde(default)]
    pub shuffle_bytes: u64,
    /// The output file (jobs with reduces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The replicas the output file is written and kept at (jobs with
    /// output): the job's own `output_replication`, else the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_replication: Option<u32>,
    /// Every attempt that ended, successful or not, in end order.
    pub attempts: Vec<TaskRecord>,
    /// Attempts running now (with `attempts`: the live timeline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<RunningRecord>,
    /// The job's deadline, ms after submission, and whether it was met
    /// (once the job ended; a failed or refused job missed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_met: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// What it spent on public instances (absent: it used none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_cost: Option<crate::public::PublicCost>,
    /// Restarts of the master the job lived through, and the attempts in
    /// flight at one of them that ran again because no worker still ran
    /// them (finished maps and reduces never run again for a restart).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub master_restarts: u32,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub restart_reruns: u32,
    /// Backup attempts of slow maps launched (speculative execution), and
    /// how many of them finished before the attempt they backed up.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub backups: u32,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub backups_won: u32,
    /// Under an external policy: how many of the job's maps it launched
    /// and how many its fallback did (offers it could not decide), since
    /// the master started; absent under a built-in policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
}

/// Who launched a job's maps under an external policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DecidedBy {
    /// Maps the external policy launched.
    pub policy: u32,
    /// Maps its fallback launched, and the fallback's name.
    pub fallback: u32,
    pub fallback_name: String,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// An attempt still running, as a job report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunningRecord {
    pub task: u32,
    pub kind: TaskKind,
    pub attempt: u32,
    pub worker: String,
    /// Its slot, once the worker's heartbeat said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    pub locality: Locality,
    /// The worker it reads its input from (a map).
    pub source: String,
    /// Its launch, ms after the job's submission (the master's clock).
    pub start_ms: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    #[default]
    Map,
    Reduce,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileInfo {
    pub name: String,
    pub blocks: u32,
    pub bytes: u64,
    /// Every block has at least one live replica.
    pub complete: bool,
    /// Per block: the names of the live workers holding a replica.
    pub replicas: Vec<Vec<String>>,
    /// The factor the master keeps the file at, once declared (the loader
    /// declares it; a job's output once written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<u32>,
}

/// `DELETE /v1/files/{name}`: what its holders were told to delete.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileDeleted {
    pub name: String,
    pub blocks: u32,
    /// Replicas on live workers, deleted at their next heartbeat.
    pub replicas: u32,
}

impl FileInfo {
    /// Blocks with fewer live replicas than the file's factor.
    pub fn under_replicated(&self) -> Vec<u32> {
        let Some(f) = self.replication else {
            return Vec::new();
        };
        (0..self.replicas.len() as u32)
            .filter(|&i| self.replicas[i as usize].len() < f as usize)
            .collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkerInfo {
    pub id: WorkerId,
    #[serde(default)]
    pub role: crate::config::Role,
    pub name: String,
    pub addr: String,
    pub slots: u32,
    pub free_slots: u32,
    pub alive: bool,
    pub blocks: usize,
    pub running: usize,
    /// Slots held by background processes.
    #[serde(default)]
    pub background: u32,
    /// NIC bytes received and sent since the worker started, and the
    /// current rates (bytes/s over the last second or so).
    #[serde(default)]
    pub nic_rx_bytes: u64,
    #[serde(default)]
    pub nic_tx_bytes: u64,
    #[serde(default)]
    pub nic_rx_rate: f64,
    #[serde(default)]
    pub nic_tx_rate: f64,
    /// The configured NIC rate per direction, bytes/s (None: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_cap: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_free_bytes: Option<u64>,
    /// A public instance: its type (absent for a private worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: String,
}

impl ErrorBody {
    /// The message of an error answer's body: the `error` field of a JSON
    /// [`ErrorBody`], else the body itself (trimmed, at most 500 bytes).
    pub fn message_of(body: &str) -> String {
        if let Ok(b) = serde_json::from_str::<ErrorBody>(body) {
            return b.error;
        }
        let t = body.trim();
        let mut end = t.len().min(500);
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        t[..end].to_owned()
    }
}

fn default_group() -> String {
    "default".into()
}

/// `GET /v1/decisions`: the master's decision record (see
/// `sched::decision`), all of it or one job's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DecisionLog {
    /// Whether the master keeps the record (`master.decisions` in
    /// cluster.toml); false: `decisions` is empty.
    pub recording: bool,
    /// The master's clock (the rows' `time_ms`) and the Unix time in ms,
    /// read together, to place the rows in wall-clock time.
    pub now_ms: u64,
    pub now_unix_ms: u64,
    /// Worker names by id: the rows' worker ids index this list.
    pub workers: Vec<String>,
    pub decisions: Vec<sched::decision::Decision>,
    /// Rows dropped, oldest first, since the record held
    /// `master.decisions_max` rows.
    #[serde(default)]
    pub dropped: u64,
    /// How the policy was built: its configuration, seed and reduce
    /// placement (`lab::recheck` builds it again from these).
    #[serde(default)]
    pub scheduler: Option<sched::policy::SchedulerConfig>,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub reduce_placement: Option<sched::reduce::ReducePlacement>,
    /// With `?inputs=true`: the record's inputs, every change to the
    /// scheduler's view and every offer, oldest first (`sched::input`),
    /// and how many were dropped from their front.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub inputs: Vec<sched::input::Input>,
    #[serde(default)]
    pub inputs_dropped: u64,
}

impl DecisionLog {
    /// A worker id's name.
    pub fn name(&self, w: crate::WorkerId) -> String {
        self.workers
            .get(w.0 as usize)
            .cloned()
            .unwrap_or_else(|| w.to_string())
    }

    /// A row's time in Unix ms.
    pub fn unix_ms(&self, d: &sched::decision::Decision) -> u64 {
        (self.now_unix_ms + d.time_ms).saturating_sub(self.now_ms)
    }
}

/// `GET /v1/cluster`: the master's one-line view of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClusterSummary {
    pub scheduler: String,
    /// Where reduces run (`cluster.reduce_placement`, `policy` resolved).
    #[serde(default)]
    pub reduce_placement: String,
    pub workers_configured: usize,
    pub workers_alive: usize,
    pub slots_alive: u32,
    pub pending_tasks: usize,
    /// Maps run again because their output was lost.
    #[serde(default)]
    pub maps_rerun: u64,
    /// Re-replication copies ordered.
    #[serde(default)]
    pub blocks_copied: u64,
    /// Attempt results refused since the master started: stale attempts,
    /// and results a worker sent after the master had declared it lost.
    #[serde(default)]
    pub results_refused: u64,
    /// Which start of the master this is (1, then one more at each restart
    /// with the same journal).
    #[serde(default)]
    pub incarnation: u64,
    /// What the scheduler's report says besides its launches: an external
    /// policy's calls, refused launches and fallbacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduler_notes: Vec<String>,
}

/// `GET /v1/events`: what the dashboard shows, sent as a server-sent event
/// every half second.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DashboardState {
    pub unix_ms: u64,
    pub cluster: ClusterSummary,
    /// The scheduler in use with its parameters.
    pub scheduler: sched::policy::SchedulerConfig,
    pub workers: Vec<WorkerInfo>,
    /// Every job, newest first, without attempts.
    pub jobs: Vec<JobReport>,
}

#[cfg(test)]
mod tests;

/// `GET /timeline?since_ms=T` on a worker: its NIC byte counters sampled
/// every [`TIMELINE_SAMPLE_MS`] and the background processes it ran, from
/// unix time T on (for per-run timelines).
#[derive(Clone, Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkerTimeline {
    pub worker: String,
    pub slots: u32,
    /// NIC rate per direction, bytes/s (None = unlimited).
    pub nic_bytes_per_sec: Option<f64>,
    /// Emulated disk rate, bytes/s (None = off).
    #[serde(default)]
    pub disk_bytes_per_sec: Option<f64>,
    pub samples: Vec<NicSample>,
    pub background: Vec<BackgroundRun>,
}

/// How often a worker samples its NIC counters for the timeline.
pub const TIMELINE_SAMPLE_MS: u64 = 250;

/// Cumulative bytes through the NIC at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NicSample {
    pub unix_ms: u64,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    /// Bytes through the emulated disk (0 when it is off).
    #[serde(default)]
    pub disk_bytes: u64,
}

/// A background process that held `slot` from start to end (None: still running).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BackgroundRun {
    pub slot: u32,
    pub start_unix_ms: u64,
    pub end_unix_ms: Option<u64>,
}

#[cfg(test)]
mod compute_tests {
    use super::TaskCompute;

    #[test]
    fn task_compute_is_seeded_per_task_and_inside_the_range() {
        let c = TaskCompute {
            min_ms: 2_000,
            max_ms: 12_000,
            seed: 7,
        };
        let v: Vec<u64> = (0..2_000).map(|i| c.for_task(i)).collect();
        assert!(v.iter().all(|&x| (2_000..=12_000).contains(&x)));
        assert_eq!(v, (0..2_000).map(|i| c.for_task(i)).collect::<Vec<_>>());
        let other = TaskCompute { seed: 8, ..c };
        assert_ne!(
            v[..10],
            (0..10).map(|i| other.for_task(i)).collect::<Vec<_>>()
        );
        // Uniform: the mean is near the middle and both ends are reached.
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        assert!((mean - 7_000.0).abs() < 250.0, "{mean}");
        assert!(v.iter().any(|&x| x < 2_100) && v.iter().any(|&x| x > 11_900));
        let fixed = TaskCompute {
            min_ms: 5,
            max_ms: 5,
            seed: 1,
        };
        assert_eq!(fixed.for_task(3), 5);
        assert!(TaskCompute {
            min_ms: 6,
            max_ms: 5,
            seed: 0
        }
        .validate()
        .is_err());
        assert!(TaskCompute {
            min_ms: 0,
            max_ms: TaskCompute::MAX_MS + 1,
            seed: 0
        }
        .validate()
        .is_err());
    }
}
