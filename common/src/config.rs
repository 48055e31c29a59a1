//! `cluster.toml`: one file describes the whole cluster, read by the master,
//! every worker and the CLI. Parsed strictly (unknown keys are errors) and
//! validated once by [`ClusterConfig::load`]; every error names the file and
//! the key.

use crate::tomlfile::{KeyError, TomlFile};
pub use crate::units::{mbps_to_bytes, MAX_RATE, MAX_SLOTS, MIN_RATE};
use sched::policy::SchedulerConfig;
use sched::reduce::ReducePlacement;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Why `cluster.toml` could not be taken: the file, the key and the problem.
pub type ConfigError = crate::tomlfile::FileError;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    pub cluster: ClusterSection,
    pub master: MasterSection,
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// Speculative execution (backup attempts of slow maps); absent = off.
    #[serde(default)]
    pub speculation: sched::speculation::Speculation,
    #[serde(default)]
    pub workers: WorkerDefaults,
    #[serde(rename = "worker", default)]
    pub worker: Vec<WorkerEntry>,
    /// Background load on every worker; absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundConfig>,
    /// The public cloud's instances (MROSA); absent = private cluster only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<crate::public::PublicSection>,
    /// Secrets per role (`worker`, `client`, `read`), each refused outside
    /// its role; absent = `cluster.token` alone, for everything
    /// (see `common::credentials`).
    #[serde(
        default,
        skip_serializing_if = "crate::credentials::CredentialsSection::is_empty"
    )]
    pub credentials: crate::credentials::CredentialsSection,
    /// HTTPS between every node (`common::tls`); absent = plain HTTP.
    #[serde(default, skip_serializing_if = "crate::tls::TlsSection::is_default")]
    pub tls: crate::tls::TlsSection,
    /// Instance types the scheduler may rent.
    #[serde(rename = "public_type", default, skip_serializing_if = "Vec::is_empty")]
    pub public_type: Vec<crate::public::PublicType>,
    /// Directory of the file this was read from; relative paths resolve here.
    #[serde(skip)]
    pub base_dir: PathBuf,
    #[serde(skip)]
    pub path: PathBuf,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// Shared secret; every HTTP request carries `Authorization: Bearer <token>`.
    pub token: String,
    /// After `token` changes in this file (a rotation, re-read by every
    /// running node within a second), the old token stays accepted for
    /// this many seconds, so a node that still sends it is not refused.
    #[serde(default = "defaults::token_grace_s")]
    pub token_grace_s: u64,
    /// Replicas per block, on distinct workers.
    #[serde(default = "defaults::replication")]
    pub replication: u32,
    /// Replicas of every job output block (the reducer's copy first);
    /// absent = `replication`. HDFS sets it per file; here per cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_replication: Option<u32>,
    /// Interval between worker heartbeats, in milliseconds.
    #[serde(default = "defaults::heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// A worker also heartbeats at once when a task ends (Hadoop's
    /// out-of-band heartbeat, `mapreduce.tasktracker.outofband.heartbeat`)
    /// and when the master asks it to because a job arrived; false: only
    /// every `heartbeat_ms`, as Hadoop 1.x does by default.
    #[serde(default = "defaults::yes")]
    pub out_of_band_heartbeat: bool,
    /// A worker silent for this long (ms) is declared lost; its tasks rerun elsewhere.
    #[serde(default = "defaults::worker_timeout_ms")]
    pub worker_timeout_ms: u64,
    /// A task failing this many times fails its job.
    #[serde(default = "defaults::max_task_attempts")]
    pub max_task_attempts: u32,
    /// An attempt that makes no progress for this long (ms) while its worker
    /// still heartbeats (no byte read, processed or written, no second of
    /// emulated compute: a hung disk, a deadlocked task) is killed, fails
    /// (counted) and runs again, a map from another replica if there is
    /// one; like Hadoop's `mapreduce.task.timeout`. 0 = never.
    #[serde(default = "defaults::task_timeout_ms")]
    pub task_timeout_ms: u64,
    /// Where reduces run: `policy` (default: EAS's Algorithm 3 for `eas`,
    /// `spread` for the others), `first-free`, `spread`, `least-loaded` or
    /// `most-output` (see `sched::reduce::ReducePlacement`).
    #[serde(default, skip_serializing_if = "ReducePlacement::is_policy")]
    pub reduce_placement: ReducePlacement,
    /// Root of the workers' block stores; worker `w` uses `<data_dir>/<w>`.
    #[serde(default = "defaults::data_dir")]
    pub data_dir: PathBuf,
    /// Seeds replica placement and the schedulers' random choices.
    #[serde(default = "defaults::seed")]
    pub seed: u64,
    /// Each rack's link to the core switch (the master's), Mbit/s per
    /// direction, shared by all traffic of the rack's workers with other
    /// racks and the master; absent = unlimited. Needs the netns mode
    /// (`master up --netns`), which builds one bridge per rack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_link_mbps: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MasterSection {
    /// Address the master's HTTP API listens on.
    pub listen: SocketAddr,
    /// The master's job journal (relative to cluster.toml): every job
    /// submitted and every job's final report, so a restarted master still
    /// lists them and never reuses an id.
    #[serde(default = "defaults::journal")]
    pub journal: PathBuf,
    /// Keep the decision record: every task launch and every declined
    /// offer with the rule that allowed or declined it, the job's place in
    /// the order and its locality wait (`GET /v1/decisions`, `master report
    /// JOB --decisions`, `decisions.csv.gz` in experiment results).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decisions: bool,
    /// The record keeps at most this many rows: beyond it the oldest go
    /// (counted as `dropped` in `GET /v1/decisions`), so a long-running
    /// master's memory stays bounded.
    #[serde(default = "defaults::decisions_max")]
    pub decisions_max: u64,
    /// Ended jobs whose reports the master keeps in memory (`GET
    /// /v1/jobs`); beyond it the oldest are retired (their reports stay in
    /// the journal), so a long-running master's memory stays bounded, as
    /// YARN's `yarn.resourcemanager.max-completed-applications`.
    #[serde(default = "defaults::retained_jobs")]
    pub retained_jobs: u64,
}

/// Values every `[[worker]]` inherits unless it sets its own.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerDefaults {
    #[serde(default = "defaults::slots")]
    pub slots: u32,
    /// NIC rate in Mbit/s, for transmit and receive each; absent = unlimited.
    #[serde(default)]
    pub nic_mbps: Option<f64>,
    /// Compute pacing (emulation): each slot processes at most this many MB/s
    /// (10^6 bytes), so a task takes at least input / rate; absent = off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_rate_mbs: Option<f64>,
    /// Disk emulation: one disk per worker of this many MB/s, shared fairly
    /// by local map reads, blocks served to other workers, map output served
    /// to reduces and blocks written (uploads, job output); absent = off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mbs: Option<f64>,
    /// `both` (default), `map` or `reduce`.
    #[serde(default)]
    pub role: Role,
    /// Block scanner: every stored block re-verified at this many MB/s,
    /// round after round; absent = off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrub_mbps: Option<f64>,
    /// A worker with less than this many MB (10^6 bytes) free on its data
    /// directory's disk asks for no new task (Hadoop's
    /// `mapred.local.dir.minspacestart`); 0 = until writes fail.
    #[serde(default = "defaults::min_free_mb")]
    pub min_free_mb: u64,
    /// Map output a worker keeps in memory, in MB (10^6 bytes), served from
    /// there to the reduces; what does not fit is written to its disk, as
    /// all of it is with 0. Either way it lives until its job ends.
    #[serde(default = "defaults::shuffle_memory_mb")]
    pub shuffle_memory_mb: u64,
    /// Fetched map output a running sort reduce holds in memory, in MB
    /// (10^6 bytes); past it the reduce merges what it holds into a sorted
    /// file on its worker's disk, and merges those files with the rest at
    /// the end (Hadoop's shuffle merge to disk). 0 = every fetched part
    /// goes to a file.
    #[serde(default = "defaults::reduce_memory_mb")]
    pub reduce_memory_mb: u64,
    /// Task buffers, in MB (10^6 bytes), a worker faults in at start
    /// (writing every page) and keeps for reuse however long they sit idle,
    /// as the JVM's `-XX:+AlwaysPreTouch` with `-Xms`: the first job on a
    /// fresh worker, and a job after a pause, then run on memory as warm as
    /// the jobs between them. 0 = none (buffers come and go with the load);
    /// `"auto"` (default): 1 GiB within a quarter of the memory available
    /// to the workers of the machine ([`MbOrAuto::pretouch_bytes`]).
    #[serde(default)]
    pub pretouch_mb: MbOrAuto,
    /// Blocks, in MB, a worker keeps mapped into its memory and locked
    /// there, the least recently used leaving first, as HDFS's centralized
    /// cache (`dfs.datanode.max.locked.memory`): a job after a pause finds
    /// its input in memory on a machine that pages idle file pages out.
    /// 0 = none; `"auto"` (default): a quarter of the memory available to
    /// the workers of the machine ([`MbOrAuto::block_cache_bytes`]).
    #[serde(default)]
    pub block_cache_mb: MbOrAuto,
    /// Whether a task waits for its job output to reach the disk: `true`
    /// syncs each output block (a reduce's and the replicas it receives)
    /// before the task ends; `false` (default) ends the task once its last
    /// byte is handed to the block's writer and syncs the block after, as
    /// HDFS's DataNode with `dfs.datanode.synconclose = false` (its
    /// default). Input blocks (loads, copies) are always synced.
    #[serde(default)]
    pub sync_output: bool,
    /// ssh/scp options for every worker with a `host`, e.g.
    /// `["-i", "/home/me/.ssh/testbed"]` (BatchMode is always on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ssh_options: Vec<String>,
}

impl Default for WorkerDefaults {
    fn default() -> Self {
        WorkerDefaults {
            slots: defaults::slots(),
            nic_mbps: None,
            slot_rate_mbs: None,
            disk_mbs: None,
            role: Role::Both,
            scrub_mbps: None,
            min_free_mb: defaults::min_free_mb(),
            shuffle_memory_mb: defaults::shuffle_memory_mb(),
            reduce_memory_mb: defaults::reduce_memory_mb(),
            pretouch_mb: MbOrAuto::Auto,
            block_cache_mb: MbOrAuto::Auto,
            sync_output: false,
            ssh_options: Vec::new(),
        }
    }
}

/// What a worker runs (EAS's dedicated machines). Input data lives on the
/// workers that run maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    #[default]
    Both,
    Map,
    Reduce,
    /// Runs maps and holds no data: every block it reads crosses its link
    /// (public instances; compute nodes apart from storage).
    Compute,
    /// Runs maps and reduces and holds no data: a TaskTracker without a
    /// DataNode (Guo et al.'s HPC-style compute nodes).
    ComputeAll,
    /// Holds data and runs no task: a DataNode only (HPC-style storage).
    Storage,
    /// Runs nothing and holds nothing: a node a layout leaves out.
    Spare,
}

impl Role {
    pub fn runs_maps(self) -> bool {
        matches!(
            self,
            Role::Both | Role::Map | Role::Compute | Role::ComputeAll
        )
    }
    pub fn runs_reduces(self) -> bool {
        matches!(self, Role::Both | Role::Reduce | Role::ComputeAll)
    }
    /// Whether input blocks are placed (and re-replicated) here.
    pub fn holds_data(self) -> bool {
        matches!(self, Role::Both | Role::Map | Role::Storage)
    }
}

/// Background processes that occupy worker slots (the seeds' "initial load"),
/// seeded from `cluster.seed` and the worker's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundConfig {
    /// Each process runs for a duration uniform in [min, max] seconds.
    pub duration_s: [f64; 2],
    /// Fraction of each worker's slots occupied when the worker starts (0..=1).
    #[serde(default = "defaults::one")]
    pub initial: f64,
    /// Further processes per worker per minute, Poisson arrivals; 0 = none.
    /// One that finds no free slot waits for one.
    #[serde(default)]
    pub per_minute: f64,
}

impl BackgroundConfig {
    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let [lo, hi] = self.duration_s;
        if !(lo.is_finite() && hi.is_finite() && lo >= 0.0 && lo <= hi) {
            return Err((
                "background.duration_s".into(),
                format!("must be [min, max] seconds with 0 <= min <= max (got [{lo}, {hi}])"),
            ));
        }
        if !(0.0..=1.0).contains(&self.initial) {
            return Err((
                "background.initial".into(),
                format!("must be a fraction in [0, 1] (got {})", self.initial),
            ));
        }
        if !(self.per_minute.is_finite() && self.per_minute >= 0.0) {
            return Err((
                "background.per_minute".into(),
                format!("must be >= 0 (got {})", self.per_minute),
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerEntry {
    pub name: String,
    /// Address the worker's HTTP server listens on.
    pub listen: SocketAddr,
    #[serde(default)]
    pub slots: Option<u32>,
    #[serde(default)]
    pub nic_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_rate_mbs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mbs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The worker's rack, as HDFS's topology names it (`/dc1/rack2`);
    /// absent = `/default-rack`. The `hadoop` policy prefers a task with a
    /// replica in the worker's rack, read from there, to a remote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// This worker's block store (default `<cluster.data_dir>/<name>`);
    /// relative to cluster.toml's directory on the worker's machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// The worker runs on another machine: `master up` starts it there
    /// over ssh (and `master down` stops it), copying the worker binary and
    /// cluster.toml when missing or stale. A host name or address for ssh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ssh login on `host` (default: ssh's own, i.e. the local user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_user: Option<String>,
    /// ssh port on `host` (default 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_port: Option<u16>,
    /// Directory on `host` holding the copied cluster.toml, the binary and
    /// the log (default `mrtb`, in the ssh user's home).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_dir: Option<PathBuf>,
    /// Path of the worker binary on `host` (default `<remote_dir>/worker`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_bin: Option<PathBuf>,
    /// More ssh/scp options for this worker (after `[workers] ssh_options`),
    /// e.g. `["-i", "/path/to/key"]`; BatchMode is always on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_options: Option<Vec<String>>,
}

impl WorkerEntry {
    /// Where `master up` reaches this worker's machine (None: this one).
    pub fn remote(&self) -> Option<&str> {
        self.host.as_deref()
    }
}

mod defaults {
    use std::path::PathBuf;
    pub fn min_free_mb() -> u64 {
        64
    }
    pub fn shuffle_memory_mb() -> u64 {
        1024
    }
    pub fn reduce_memory_mb() -> u64 {
        1024
    }

    pub fn replication() -> u32 {
        3
    }
    pub fn yes() -> bool {
        true
    }
    pub fn heartbeat_ms() -> u64 {
        100
    }
    pub fn token_grace_s() -> u64 {
        600
    }
    pub fn worker_timeout_ms() -> u64 {
        5000
    }
    pub fn max_task_attempts() -> u32 {
        4
    }
    pub fn task_timeout_ms() -> u64 {
        600_000
    }
    pub fn data_dir() -> PathBuf {
        PathBuf::from("run/data")
    }
    pub fn journal() -> PathBuf {
        PathBuf::from("run/master/journal.jsonl")
    }
    pub fn decisions_max() -> u64 {
        1_000_000
    }
    pub fn retained_jobs() -> u64 {
        10_000
    }
    pub fn seed() -> u64 {
        1
    }
    pub fn slots() -> u32 {
        2
    }
    pub fn one() -> f64 {
        1.0
    }
}

/// A worker's settings with the defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerSettings {
    pub index: u32,
    pub name: String,
    pub listen: SocketAddr,
    pub slots: u32,
    /// NIC rate in bytes per second, per direction; `None` = unlimited.
    pub nic_bytes_per_sec: Option<f64>,
    /// Compute pacing per slot in bytes per second; `None` = off.
    pub slot_rate_bytes: Option<f64>,
    /// Emulated disk in bytes per second; `None` = off.
    pub disk_bytes_per_sec: Option<f64>,
    pub role: Role,
    /// Its rack (`/default-rack` when the config names none).
    pub rack: String,
}

/// The rack of a worker whose config names none (HDFS's).
pub const DEFAULT_RACK: &str = "/default-rack";

impl ClusterConfig {
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        Ok(crate::tomlfile::load(path.as_ref())?.0)
    }

    /// Parses and validates `text` as if read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        crate::tomlfile::parse(text, path)
    }

    fn invalid(&self, key: impl Into<String>, problem: impl Into<String>) -> KeyError {
        KeyError::new(key, problem)
    }

    /// The secret a node of `role` sends: the role's first plaintext
    /// `[credentials]` entry, else `cluster.token`.
    pub fn secret(&self, role: crate::credentials::Role) -> &str {
        self.credentials
            .sending(role)
            .unwrap_or(&self.cluster.token)
    }

    /// Validates a config built in code (a loaded one already was).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check().map_err(|e| e.in_file(&self.path))
    }

    fn check(&self) -> Result<(), KeyError> {
        let c = &self.cluster;
        if c.token.trim().is_empty() {
            return Err(self.invalid("cluster.token", "must not be empty"));
        }
        if let Some((key, problem)) = self.credentials.problem(&c.token) {
            return Err(self.invalid(key, problem));
        }
        if self.tls.enabled {
            if self.tls.dir.as_os_str().is_empty() {
                return Err(self.invalid("tls.dir", "must name a folder"));
            }
            let taken = [crate::tls::MASTER, crate::tls::INSTANCES, "ca"];
            if let Some((i, w)) = self
                .worker
                .iter()
                .enumerate()
                .find(|(_, w)| taken.contains(&w.name.as_str()))
            {
                return Err(self.invalid(
                    format!("worker[{i}].name"),
                    format!(
                        "{:?} names the TLS files of another node ({}.pem); with [tls] on, \
                         call the worker something else",
                        w.name, w.name
                    ),
                ));
            }
        }
        if c.heartbeat_ms < 10 || c.heartbeat_ms > 60_000 {
            return Err(self.invalid(
                "cluster.heartbeat_ms",
                format!("must be 10..=60000 ms (got {})", c.heartbeat_ms),
            ));
        }
        if c.worker_timeout_ms < 3 * c.heartbeat_ms {
            return Err(self.invalid(
                "cluster.worker_timeout_ms",
                format!(
                    "must be at least 3 heartbeats ({} ms) (got {})",
                    3 * c.heartbeat_ms,
                    c.worker_timeout_ms
                ),
            ));
        }
        if c.max_task_attempts == 0 {
            return Err(self.invalid("cluster.max_task_attempts", "must be at least 1 (got 0)"));
        }
        if let Err((key, problem)) = self.speculation.check() {
            return Err(self.invalid(key, problem));
        }
        if self.master.decisions_max == 0 {
            return Err(self.invalid("master.decisions_max", "must be at least 1 (got 0)"));
        }
        if self.master.retained_jobs == 0 {
            return Err(self.invalid("master.retained_jobs", "must be at least 1 (got 0)"));
        }
        if self.worker.is_empty() {
            return Err(self.invalid("worker", "at least one [[worker]] is required"));
        }
        let map_workers = self
            .worker
            .iter()
            .filter(|w| w.role.unwrap_or(self.workers.role).holds_data())
            .count();
        if map_workers == 0 {
            return Err(self.invalid(
                "worker.role",
                "at least one worker must hold data (role \"map\" or \"both\")",
            ));
        }
        if !self
            .worker
            .iter()
            .any(|w| w.role.unwrap_or(self.workers.role).runs_reduces())
        {
            return Err(self.invalid(
                "worker.role",
                "at least one worker must run reduces (role \"reduce\" or \"both\")",
            ));
        }
        if c.replication == 0 || c.replication as usize > map_workers {
            return Err(self.invalid(
                "cluster.replication",
                format!(
                    "must be 1..={map_workers} (the workers that run maps and hold data) (got {})",
                    c.replication
                ),
            ));
        }
        if let Some(r) = c.output_replication {
            if r == 0 || r as usize > map_workers + 1 {
                return Err(self.invalid(
                    "cluster.output_replication",
                    format!(
                        "must be 1..={} (the reducer and the workers that hold data) (got {r})",
                        map_workers + 1
                    ),
                ));
            }
        }
        check_slots(self, "workers.slots", self.workers.slots)?;
        check_rate(self, "workers.nic_mbps", self.workers.nic_mbps)?;
        check_rate(self, "workers.slot_rate_mbs", self.workers.slot_rate_mbs)?;
        check_rate(self, "workers.scrub_mbps", self.workers.scrub_mbps)?;
        check_rate(self, "workers.disk_mbs", self.workers.disk_mbs)?;
        check_rate(self, "cluster.rack_link_mbps", self.cluster.rack_link_mbps)?;
        if let Some(b) = &self.background {
            b.validate().map_err(|(k, p)| self.invalid(k, p))?;
        }
        self.scheduler
            .validate()
            .map_err(|e| self.invalid("scheduler", e))?;
        crate::public::check(
            self.public.as_ref(),
            &self.public_type,
            self.workers.slot_rate_mbs.is_some(),
        )?;
        let mut names = HashSet::new();
        let mut addrs = HashSet::new();
        addrs.insert(self.master.listen);
        for (i, w) in self.worker.iter().enumerate() {
            self.check_worker(i, w, &mut names, &mut addrs)?;
        }
        Ok(())
    }

    /// Worker `i`'s entry: a unique name and address (`names`, `addrs`
    /// hold the ones seen so far), its slots and rates, rack, host and ssh
    /// settings.
    fn check_worker<'a>(
        &self,
        i: usize,
        w: &'a WorkerEntry,
        names: &mut HashSet<&'a str>,
        addrs: &mut HashSet<SocketAddr>,
    ) -> Result<(), KeyError> {
        if crate::ids::validate_file_name(&w.name).is_err() {
            return Err(self.invalid(
                format!("worker[{i}].name"),
                format!(
                    "{:?} must be 1-100 ASCII letters, digits, '-', '_' or '.' (not leading)",
                    w.name
                ),
            ));
        }
        if !names.insert(w.name.as_str()) {
            return Err(self.invalid(
                format!("worker[{i}].name"),
                format!("{:?} is used by two workers", w.name),
            ));
        }
        if w.listen.port() != 0 && !addrs.insert(w.listen) {
            return Err(self.invalid(
                format!("worker[{i}].listen"),
                format!(
                    "{} is already used by the master or another worker",
                    w.listen
                ),
            ));
        }
        if let Some(s) = w.slots {
            check_slots(self, &format!("worker[{i}].slots"), s)?;
        }
        check_rate(self, &format!("worker[{i}].nic_mbps"), w.nic_mbps)?;
        check_rate(self, &format!("worker[{i}].slot_rate_mbs"), w.slot_rate_mbs)?;
        check_rate(self, &format!("worker[{i}].disk_mbs"), w.disk_mbs)?;
        if let Some(r) = &w.rack {
            let ok = r.starts_with('/')
                && r.len() > 1
                && r.len() <= 100
                && r.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
            if !ok {
                return Err(self.invalid(
                    format!("worker[{i}].rack"),
                    format!("{r:?} must be a path like \"/dc1/rack2\" (a leading '/', then ASCII letters, digits, '/', '.', '_' or '-')"),
                ));
            }
        }
        if let Some(h) = &w.host {
            let ok = !h.is_empty()
                && h.len() <= 253
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-_:[]".contains(c))
                && !h.starts_with('-');
            if !ok {
                return Err(self.invalid(
                    format!("worker[{i}].host"),
                    format!("{h:?} is not a host name or address"),
                ));
            }
        }
        if let Some(u) = &w.ssh_user {
            let ok = !u.is_empty()
                && u.len() <= 64
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                && !u.starts_with('-');
            if !ok {
                return Err(self.invalid(
                    format!("worker[{i}].ssh_user"),
                    format!("{u:?} is not a user name"),
                ));
            }
        }
        if w.host.is_none() {
            for (k, set) in [
                ("ssh_user", w.ssh_user.is_some()),
                ("ssh_port", w.ssh_port.is_some()),
                ("remote_dir", w.remote_dir.is_some()),
                ("remote_bin", w.remote_bin.is_some()),
                ("ssh_options", w.ssh_options.is_some()),
            ] {
                if set {
                    return Err(self.invalid(
                        format!("worker[{i}].{k}"),
                        "only for a worker on another machine: set `host` too",
                    ));
                }
            }
        }
        if w.ssh_port == Some(0) {
            return Err(self.invalid(format!("worker[{i}].ssh_port"), "must be 1..=65535"));
        }
        Ok(())
    }

    pub fn worker_settings(&self) -> Vec<WorkerSettings> {
        self.worker
            .iter()
            .enumerate()
            .map(|(i, w)| WorkerSettings {
                index: i as u32,
                name: w.name.clone(),
                listen: w.listen,
                slots: w.slots.unwrap_or(self.workers.slots),
                nic_bytes_per_sec: w.nic_mbps.or(self.workers.nic_mbps).map(mbps_to_bytes),
                slot_rate_bytes: w
                    .slot_rate_mbs
                    .or(self.workers.slot_rate_mbs)
                    .map(|r| r * 1e6),
                disk_bytes_per_sec: w.disk_mbs.or(self.workers.disk_mbs).map(|r| r * 1e6),
                role: w.role.unwrap_or(self.workers.role),
                rack: w.rack.clone().unwrap_or_else(|| DEFAULT_RACK.into()),
            })
            .collect()
    }

    /// The racks of the workers, in order of first appearance.
    pub fn racks(&self) -> Vec<String> {
        let mut racks: Vec<String> = Vec::new();
        for w in self.worker_settings() {
            if !racks.contains(&w.rack) {
                racks.push(w.rack);
            }
        }
        racks
    }

    pub fn worker_by_name(&self, name: &str) -> Option<WorkerSettings> {
        self.worker_settings().into_iter().find(|w| w.name == name)
    }

    /// The public instance type named `name`.
    pub fn public_type(&self, name: &str) -> Option<&crate::public::PublicType> {
        self.public_type.iter().find(|t| t.name == name)
    }

    /// `[public]` with its defaults (also when only types are given).
    pub fn public_section(&self) -> crate::public::PublicSection {
        self.public.clone().unwrap_or_default()
    }

    /// The settings of a public instance of type `ty`, named `name`, on
    /// port `[public] listen` + `port_offset` (below `max_instances`): the
    /// type's slots and link, slots paced at the private rate times the
    /// type's speed, no emulated disk, maps only (it holds no data, and a
    /// job's output stays in the private cluster).
    pub fn instance_settings(
        &self,
        index: u32,
        name: &str,
        port_offset: u32,
        ty: &crate::public::PublicType,
    ) -> WorkerSettings {
        instance_worker_settings(
            ty,
            &self.public_section(),
            self.workers.slot_rate_mbs,
            index,
            name,
            port_offset,
        )
    }

    /// Block store directory of worker `name` (on the machine it runs on).
    pub fn worker_data_dir(&self, name: &str) -> PathBuf {
        match self
            .worker
            .iter()
            .find(|w| w.name == name)
            .and_then(|w| w.data_dir.as_ref())
        {
            Some(d) => self.resolve(d),
            None => self.resolve(&self.cluster.data_dir).join(name),
        }
    }

    /// `p` if absolute, else relative to the directory of cluster.toml.
    pub fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.base_dir.join(p)
        }
    }

    /// Where a local cluster's run state lives (pids, logs):
    /// `<dir of cluster.toml>/run`.
    pub fn run_dir(&self) -> PathBuf {
        self.base_dir.join("run")
    }

    /// The master's base URL: `https://` with `[tls]` on, else `http://`.
    pub fn master_url(&self) -> String {
        format!("{}://{}", self.scheme(), self.master.listen)
    }

    /// `https` with `[tls]` on, else `http`: the scheme of every node's URL.
    pub fn scheme(&self) -> &'static str {
        crate::tls::scheme(self.tls.enabled)
    }
}

/// The settings of a public instance of type `ty`: see
/// [`ClusterConfig::instance_settings`]; `slot_rate_mbs` is the private
/// workers' pacing.
pub fn instance_worker_settings(
    ty: &crate::public::PublicType,
    public: &crate::public::PublicSection,
    slot_rate_mbs: Option<f64>,
    index: u32,
    name: &str,
    port_offset: u32,
) -> WorkerSettings {
    let base = public.listen;
    let port = base.port().saturating_add(port_offset as u16);
    WorkerSettings {
        index,
        name: name.to_owned(),
        listen: SocketAddr::new(base.ip(), port),
        slots: ty.slots,
        nic_bytes_per_sec: Some(ty.nic_bytes_per_sec()),
        slot_rate_bytes: slot_rate_mbs.map(|r| r * 1e6 * ty.speed),
        disk_bytes_per_sec: None,
        role: Role::Compute,
        rack: DEFAULT_RACK.into(),
    }
}

fn check_rate(cfg: &ClusterConfig, key: &str, v: Option<f64>) -> Result<(), KeyError> {
    match v {
        Some(r) if !(r.is_finite() && (MIN_RATE..=MAX_RATE).contains(&r)) => Err(cfg.invalid(
            key,
            format!(
                "must be a number in [{MIN_RATE}, {MAX_RATE}], or absent for unlimited (got {r})"
            ),
        )),
        _ => Ok(()),
    }
}

fn check_slots(cfg: &ClusterConfig, key: &str, slots: u32) -> Result<(), KeyError> {
    if (1..=MAX_SLOTS).contains(&slots) {
        Ok(())
    } else {
        Err(cfg.invalid(key, format!("must be 1..={MAX_SLOTS} (got {slots})")))
    }
}

impl TomlFile for ClusterConfig {
    fn validate(&self) -> Result<(), KeyError> {
        self.check()
    }

    fn located(&mut self, path: &Path) {
        self.path = path.to_owned();
        self.base_dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_owned)
            .unwrap_or_else(|| PathBuf::from("."));
    }
}

pub mod memory;
mod tls;

pub use memory::{available_memory, MbOrAuto};

#[cfg(test)]
mod tests;
