//! `external`: a policy served outside this codebase, in any language.
//!
//! On each offer of a free map slot while some job has a pending map (with
//! none, nothing can launch and the policy is not asked), [`External`]
//! sends the policy one
//! [`OfferMessage`] (the offered worker, every worker, every active job with
//! its pending tasks, their replica locations and sizes, and the time) and
//! reads one [`Reply`] (the launches, and why it declined what it left
//! free). The protocol is JSON, one message per line, request then reply,
//! versioned by [`PROTOCOL_VERSION`]; its schemas are in the master's
//! OpenAPI description (`components.schemas.OfferMessage` and `Reply`) and
//! `docs/schedulers.md` describes it with an example.
//!
//! Every launch is checked like a built-in policy's ([`SchedContext`]'s
//! checks: the task is pending, the slot free, the source holds a replica)
//! and a launch on another worker than the offered one is refused too; a
//! refused launch is skipped, counted and its reason kept
//! ([`ExternalStats`]). A reply that cannot be read, a timeout or a policy
//! that cannot be reached gives this offer to the `fallback` built-in
//! policy, counted; after [`FAILURES_BEFORE_PAUSE`] failures in a row the
//! policy is not called for `retry_s` seconds (the fallback decides), so a
//! hung policy costs at most `timeout_ms` per offer and then nothing.
//!
//! This crate does no I/O: the transport is a [`PolicyCall`] injected from
//! above. The binaries install a [`Connect`] ([`install_connector`]) that
//! opens the address (`common::policy_socket` for Unix and TCP sockets);
//! the Python package's native module installs one that also reaches the
//! Python policies it registers in process (`inproc:<name>`). The
//! real master, the simulators and the replay call the same [`External`],
//! so an external policy decides the same way in each, given the same
//! replies.

use crate::decision::{Rule, Why};
use crate::policy::{Policy, SchedulerConfig};
use crate::view::{ClusterView, Millis, PlanContext, SchedContext, Scheduler};
use base::{JobId, TaskRef, WorkerId};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The protocol's version: a message says which it speaks, and a reply of
/// another version is refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// Failures in a row (no reply, a timeout, an unreadable reply) after which
/// the policy is left alone for `retry_s`.
pub const FAILURES_BEFORE_PAUSE: u32 = 3;

/// Reasons kept in [`ExternalStats::refusals`]; later ones are counted only.
const KEPT_REASONS: usize = 20;

/// `policy = "external"`: a policy served at `address` (see the module
/// documentation), with `fallback` deciding when it cannot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalParams {
    /// Where the policy listens: `unix:<path>` (a Unix socket) or
    /// `tcp:<host>:<port>`; `inproc:<name>` is a policy registered inside
    /// the process (the Python package's simulator).
    pub address: String,
    /// The longest wait for one reply, milliseconds (the master holds its
    /// state while it waits: this bounds what other heartbeats wait).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// The built-in policy deciding the offers the external one cannot, as
    /// `--scheduler` takes it (`hadoop`, `delay3`, `policy = "delay", ...`).
    #[serde(default = "default_fallback")]
    pub fallback: String,
    /// Seconds the policy is left alone after `FAILURES_BEFORE_PAUSE`
    /// failures in a row.
    #[serde(default = "default_retry_s")]
    pub retry_s: f64,
    /// Most pending tasks of one job sent in full (the oldest ones); every
    /// job's tasks with a replica on the offered worker are listed by index
    /// whatever this says.
    #[serde(default = "default_max_tasks")]
    pub max_tasks_per_job: u32,
    /// Stop at the policy's first failure instead of letting the fallback
    /// decide: a failed call, a refused launch, or `STRICT_IDLE_REPLIES`
    /// replies with work pending and no launch yet. The simulators stop
    /// the run with the reason (the Python package's default); the real
    /// master ignores it and falls back as always.
    #[serde(default)]
    pub strict: bool,
}

/// Replies without a single launch, with work pending at each, after which
/// a `strict` policy is taken for one that will never launch.
pub const STRICT_IDLE_REPLIES: u64 = 500;

fn default_timeout_ms() -> u64 {
    100
}
fn default_fallback() -> String {
    "hadoop".into()
}
fn default_retry_s() -> f64 {
    10.0
}
fn default_max_tasks() -> u32 {
    256
}

impl ExternalParams {
    pub fn new(address: impl Into<String>) -> Self {
        ExternalParams {
            address: address.into(),
            timeout_ms: default_timeout_ms(),
            fallback: default_fallback(),
            retry_s: default_retry_s(),
            max_tasks_per_job: default_max_tasks(),
            strict: false,
        }
    }

    /// The fallback policy, read.
    pub fn fallback_config(&self) -> Result<SchedulerConfig, String> {
        let c: SchedulerConfig = self
            .fallback
            .parse()
            .map_err(|e| format!("external: fallback {:?}: {e}", self.fallback))?;
        if matches!(c, SchedulerConfig::External(_)) {
            return Err("external: fallback must be a built-in policy, not `external`".into());
        }
        Ok(c)
    }
}

impl Policy for ExternalParams {
    const EXAMPLES: &'static [&'static str] = &[
        "policy = \"external\", address = \"unix:/nonexistent/policy.sock\"",
        "policy = \"external\", address = \"tcp:127.0.0.1:1\", fallback = \"delay3\", timeout_ms = 5",
    ];

    fn name(&self) -> &'static str {
        "external"
    }

    fn label(&self, _: bool) -> String {
        format!("external({})", self.address)
    }

    fn validate(&self) -> Result<(), String> {
        parse_address(&self.address).map_err(|e| format!("external: address: {e}"))?;
        if self.timeout_ms == 0 {
            return Err("external: timeout_ms must be at least 1".into());
        }
        if !(self.retry_s.is_finite() && self.retry_s >= 0.0) {
            return Err(format!(
                "external: retry_s must be a number of seconds >= 0, not {}",
                self.retry_s
            ));
        }
        if self.max_tasks_per_job == 0 {
            return Err("external: max_tasks_per_job must be at least 1".into());
        }
        self.fallback_config()?.validate()
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        let fallback = self
            .fallback_config()
            .unwrap_or_else(|_| SchedulerConfig::Hadoop(Default::default()))
            .build(seed);
        let call = match CONNECTOR.get() {
            Some(c) => c.connect(&self.address, self.timeout_ms),
            None => Box::new(NoConnector) as Box<dyn PolicyCall>,
        };
        Box::new(External::new(self.clone(), call, fallback))
    }
}

/// Where an address points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    Unix(String),
    Tcp(String),
    /// `tls:<host>:<port>`: TCP with TLS, the policy's certificate checked
    /// against the cluster's authority for `host`.
    Tls(String),
    /// A policy registered by name inside this process (the Python
    /// package's simulator runs Python policies so).
    InProcess(String),
}

/// Reads `unix:<path>`, `tcp:<host>:<port>`, `tls:<host>:<port>` or
/// `inproc:<name>`.
pub fn parse_address(a: &str) -> Result<Address, String> {
    if let Some(n) = a.strip_prefix("inproc:") {
        if n.is_empty() {
            return Err(format!("{a:?} names no policy"));
        }
        Ok(Address::InProcess(n.to_owned()))
    } else if let Some(p) = a.strip_prefix("unix:") {
        if p.is_empty() {
            return Err(format!("{a:?} names no socket path"));
        }
        Ok(Address::Unix(p.to_owned()))
    } else if let Some((scheme, hp)) = a
        .split_once(':')
        .filter(|(s, _)| *s == "tcp" || *s == "tls")
    {
        match hp.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => Ok(if scheme == "tls" {
                Address::Tls(hp.into())
            } else {
                Address::Tcp(hp.into())
            }),
            _ => Err(format!("{a:?} is not {scheme}:<host>:<port>")),
        }
    } else {
        Err(format!(
            "{a:?} is neither unix:<path> nor tcp:<host>:<port> nor tls:<host>:<port>"
        ))
    }
}

/// Why one call gave no reply.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The policy could not be reached (nothing listens, the connection
    /// broke).
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// No reply within the timeout.
    #[error("no reply within {0} ms")]
    Timeout(u64),
}

/// One request and its reply, as lines of JSON (without the newline): the
/// transport, injected from above this crate.
pub trait PolicyCall: Send {
    fn call(&mut self, request: &str) -> Result<String, CallError>;
}

/// Opens an address (`timeout_ms`: the longest wait for one reply).
pub trait Connect: Send + Sync {
    fn connect(&self, address: &str, timeout_ms: u64) -> Box<dyn PolicyCall>;
}

static CONNECTOR: OnceLock<Box<dyn Connect>> = OnceLock::new();

/// Sets how this process reaches external policies; the first call wins
/// (false after it). Without one, an external policy's every offer goes
/// to its fallback, which its report says.
pub fn install_connector(c: Box<dyn Connect>) -> bool {
    CONNECTOR.set(c).is_ok()
}

struct NoConnector;

impl PolicyCall for NoConnector {
    fn call(&mut self, _: &str) -> Result<String, CallError> {
        Err(CallError::Unreachable(
            "this program cannot open policy addresses (no connector installed)".into(),
        ))
    }
}

/// What the policy is told at an offer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OfferMessage {
    /// The protocol's version ([`PROTOCOL_VERSION`]); a policy refuses
    /// another.
    pub version: u32,
    /// This run of the policy: the same for every offer of one run (one
    /// master's life, one simulation), another for the next, so that a
    /// server keeps each run's state apart and starts afresh.
    pub session: String,
    /// Scheduler time, ms (the master's clock since it started; the
    /// simulator's virtual time).
    pub now_ms: Millis,
    /// The worker offered, and its free map slots: the reply's launches run
    /// there, at most this many.
    #[schema(value_type = u32)]
    pub worker: WorkerId,
    /// The offered worker's free map slots (a count).
    pub free_slots: u32,
    /// Every worker the view knows, in id order.
    pub workers: Vec<WorkerMessage>,
    /// Every active job in submission order (those without pending maps
    /// too: their running tasks count for fair shares).
    pub jobs: Vec<JobMessage>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkerMessage {
    /// The worker's id (the number the offer's `worker` and a launch's
    /// `source` use).
    #[schema(value_type = u32)]
    pub id: WorkerId,
    /// Whether the master hears its heartbeats.
    pub alive: bool,
    /// Map slots (a count).
    pub slots: u32,
    /// Map slots free now (a count).
    pub free: u32,
    /// Maps running here that read their input from another worker (the
    /// load on the NIC the testbed's remote reads share).
    pub remote_running: u32,
    /// Whether maps may run here (a storage-only worker runs none).
    pub runs_maps: bool,
    /// Whether reduces may run here (EAS's map machines run none).
    pub runs_reduces: bool,
    /// Its rack, when the cluster sets racks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobMessage {
    /// The job's id (the number a launch's `job` uses).
    #[schema(value_type = u32)]
    pub id: JobId,
    /// When the job was submitted, ms of scheduler time (as `now_ms`).
    pub submitted_ms: Millis,
    /// Its fair-share group (pool), a name; `default` when none was set.
    pub group: String,
    /// Its maps running now (a count).
    pub running: u32,
    /// Its maps not yet launched (a count).
    pub pending: u32,
    /// Its deadline, ms of scheduler time; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<Millis>,
    /// When the job last launched a map, ms of scheduler time; absent
    /// until its first launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_launch_ms: Option<Millis>,
    /// The oldest pending maps (at most `max_tasks_per_job`), oldest first:
    /// the order delay scheduling's "oldest" pick and Hadoop's FIFO use.
    pub tasks: Vec<TaskMessage>,
    /// Every pending map with a replica on the offered worker, by index,
    /// oldest first.
    pub local: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskMessage {
    /// The map's index in its job (0-based; a launch's `task`).
    pub index: u32,
    /// Input bytes.
    pub bytes: u64,
    /// Live workers holding a replica of the input.
    #[schema(value_type = Vec<u32>)]
    pub replicas: Vec<WorkerId>,
}

/// The policy's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// The protocol's version, as the offer's.
    pub version: u32,
    /// In order; each takes one of the offered worker's free slots.
    #[serde(default)]
    pub launches: Vec<LaunchMessage>,
    /// Why the slots left free stay free (the decision record's row for
    /// this offer), if the policy says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declined: Option<Explain>,
    /// The policy could not decide (it could not read the offer, say): the
    /// offer goes to the fallback and the report shows this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Reply {
    /// A reply saying the policy could not decide.
    pub fn error(text: impl Into<String>) -> Self {
        Reply {
            version: PROTOCOL_VERSION,
            launches: Vec::new(),
            declined: None,
            error: Some(text.into()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchMessage {
    /// The job's id (as the offer's `jobs[].id`).
    #[schema(value_type = u32)]
    pub job: JobId,
    /// The map's index in its job (as `tasks[].index` or a `local` entry).
    pub task: u32,
    /// The worker to read the input from (a holder of a replica); the
    /// offered worker for a data-local launch.
    #[schema(value_type = u32)]
    pub source: WorkerId,
    /// Must be the offered worker if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u32>)]
    pub worker: Option<WorkerId>,
    /// Why, for the decision record: the rule that allowed it, when the
    /// policy says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
    /// How long the job had waited for a data-local slot, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<Millis>,
    /// The wait the policy allows before a remote launch, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ms: Option<Millis>,
}

impl LaunchMessage {
    fn why(&self) -> Why {
        Explain {
            rule: self.rule,
            job: None,
            waited_ms: self.waited_ms,
            threshold_ms: self.threshold_ms,
        }
        .why()
    }
}

/// A decline's reason, in the decision record's terms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Explain {
    /// The rule that declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
    /// The job that declined (for a decline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u32>)]
    pub job: Option<JobId>,
    /// How long that job had waited, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<Millis>,
    /// The wait the policy allows it, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ms: Option<Millis>,
}

impl Explain {
    fn why(&self) -> Why {
        let mut w = Why::rule(self.rule.unwrap_or_default());
        w.job = self.job;
        w.waited_ms = self.waited_ms;
        w.threshold_ms = self.threshold_ms;
        w
    }
}

impl OfferMessage {
    /// The message for an offer of `worker` at `now`.
    pub fn from_view(
        view: &ClusterView,
        session: &str,
        now: Millis,
        worker: WorkerId,
        max_tasks: u32,
    ) -> Self {
        let workers = view
            .workers()
            .map(|w| WorkerMessage {
                id: w.id,
                alive: w.alive,
                slots: w.slots,
                free: w.free,
                remote_running: w.remote_running,
                runs_maps: w.runs_maps,
                runs_reduces: w.runs_reduces,
                rack: view.rack_of(w.id),
            })
            .collect();
        let jobs = view
            .jobs()
            .map(|j| JobMessage {
                id: j.id,
                submitted_ms: j.submitted_at,
                group: j.group.clone(),
                running: j.running,
                pending: j.pending_len() as u32,
                deadline_ms: j.qos.deadline,
                last_launch_ms: j.last_launch_at,
                tasks: j
                    .pending()
                    .take(max_tasks as usize)
                    .map(|t| TaskMessage {
                        index: t.task.index,
                        bytes: t.len,
                        replicas: t.replicas.clone(),
                    })
                    .collect(),
                local: j.local_indices(worker).collect(),
            })
            .collect();
        OfferMessage {
            version: PROTOCOL_VERSION,
            session: session.to_owned(),
            now_ms: now,
            worker,
            free_slots: view.free_slots(worker),
            workers,
            jobs,
        }
    }
}

/// What an external policy did, for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ExternalStats {
    /// Offers sent, and replies read and applied.
    pub calls: u64,
    pub replies: u64,
    /// Launches made, and launches refused (with the first reasons).
    pub launches: u64,
    pub refused: u64,
    pub refusals: Vec<String>,
    /// Calls that failed: unreachable, timed out, unreadable reply.
    pub unreachable: u64,
    pub timeouts: u64,
    pub bad_replies: u64,
    /// The latest failure, as said.
    pub last_failure: Option<String>,
    /// Offers the fallback decided (a failed call's, or while paused).
    pub fallback_offers: u64,
}

impl ExternalStats {
    fn refuse(&mut self, reason: String) {
        self.refused += 1;
        if self.refusals.len() < KEPT_REASONS {
            self.refusals.push(reason);
        }
    }

    fn failed(&self) -> u64 {
        self.unreachable + self.timeouts + self.bad_replies
    }
}

/// The running external policy.
pub struct External {
    params: ExternalParams,
    session: String,
    call: Box<dyn PolicyCall>,
    fallback: Box<dyn Scheduler>,
    stats: ExternalStats,
    /// Failures since the last reply.
    failures_in_row: u32,
    /// While paused, the time of the next try.
    paused_until: Option<Millis>,
    /// Why a `strict` policy cannot go on (its first failure).
    failure: Option<String>,
    /// Per job, maps the policy launched and maps its fallback launched
    /// (the oldest jobs forgotten past `JOBS_KEPT`).
    by_job: std::collections::BTreeMap<JobId, (u32, u32)>,
}

/// Jobs whose launches [`External`] keeps apart by who decided them.
const JOBS_KEPT: usize = 100_000;

impl External {
    pub fn new(
        params: ExternalParams,
        call: Box<dyn PolicyCall>,
        fallback: Box<dyn Scheduler>,
    ) -> Self {
        // Unique in this process, and the process's id tells a restarted
        // master's runs from the last one's.
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        External {
            session: format!("{}-{n}", std::process::id()),
            params,
            call,
            fallback,
            stats: ExternalStats::default(),
            failures_in_row: 0,
            paused_until: None,
            failure: None,
            by_job: Default::default(),
        }
    }

    /// Counts a launch of `job`'s, by the policy or by its fallback.
    fn count(&mut self, job: JobId, by_fallback: bool) {
        let e = self.by_job.entry(job).or_default();
        if by_fallback {
            e.1 += 1;
        } else {
            e.0 += 1;
        }
        if self.by_job.len() > JOBS_KEPT {
            self.by_job.pop_first();
        }
    }

    /// The fallback decides the offer; its launches are counted as its.
    fn fall_back(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        self.stats.fallback_offers += 1;
        let before = ctx.launched().len();
        self.fallback.offer(now, worker, ctx);
        let jobs: Vec<JobId> = ctx.launched()[before..]
            .iter()
            .map(|a| a.task.job)
            .collect();
        for job in jobs {
            self.count(job, true);
        }
    }

    pub fn stats(&self) -> &ExternalStats {
        &self.stats
    }

    /// The session its messages carry.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Sends the offer and reads the reply (or says why not).
    fn ask(&mut self, msg: &OfferMessage) -> Result<Reply, String> {
        self.stats.calls += 1;
        let request = serde_json::to_string(msg).expect("an offer message serialises");
        let line = match self.call.call(&request) {
            Ok(l) => l,
            Err(e) => {
                match e {
                    CallError::Unreachable(_) => self.stats.unreachable += 1,
                    CallError::Timeout(_) => self.stats.timeouts += 1,
                }
                return Err(e.to_string());
            }
        };
        let reply = serde_json::from_str::<Reply>(&line)
            .map_err(|e| format!("reply is not a Reply message: {e}"))
            .and_then(|r| {
                if let Some(e) = &r.error {
                    Err(format!("the policy said: {e}"))
                } else if r.version == PROTOCOL_VERSION {
                    Ok(r)
                } else {
                    Err(format!(
                        "reply speaks protocol version {}, this master {PROTOCOL_VERSION}",
                        r.version
                    ))
                }
            });
        if reply.is_err() {
            self.stats.bad_replies += 1;
        }
        reply
    }

    /// Applies the reply's launches, checking each.
    fn apply(&mut self, reply: Reply, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        for l in reply.launches {
            let task = TaskRef {
                job: l.job,
                index: l.task,
            };
            if l.worker.is_some_and(|w| w != worker) {
                self.stats.refuse(format!(
                    "launch of {task} on worker {}: the offer was worker {worker}'s",
                    l.worker.map_or(0, |w| w.0)
                ));
                continue;
            }
            match ctx.launch_why(task, worker, l.source, l.why()) {
                Ok(()) => {
                    self.stats.launches += 1;
                    self.count(task.job, false);
                }
                Err(e) => self.stats.refuse(format!("launch of {task}: {e}")),
            }
        }
        if ctx.view().free_slots(worker) > 0 {
            if let Some(d) = reply.declined {
                ctx.decline(d.why());
            }
        }
    }
}

impl Scheduler for External {
    fn name(&self) -> String {
        self.params.label(false)
    }

    fn failure(&self) -> Option<String> {
        self.failure.as_ref().map(|why| {
            format!(
                "the external policy at {} (strict): {why}",
                self.params.address
            )
        })
    }

    fn plan(&mut self, now: Millis, ctx: &mut PlanContext<'_>) {
        // The fallback keeps its own clocks (delay's heartbeat account).
        self.fallback.plan(now, ctx);
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        if !ctx.view().jobs().any(|j| j.has_pending()) {
            ctx.decline(Why::rule(Rule::NothingToRun));
            return;
        }
        if let Some(until) = self.paused_until {
            if now < until {
                return self.fall_back(now, worker, ctx);
            }
            self.paused_until = None;
        }
        let msg = OfferMessage::from_view(
            ctx.view(),
            &self.session,
            now,
            worker,
            self.params.max_tasks_per_job,
        );
        match self.ask(&msg) {
            Ok(reply) => {
                self.stats.replies += 1;
                self.failures_in_row = 0;
                self.apply(reply, worker, ctx);
                if self.params.strict && self.failure.is_none() {
                    let s = &self.stats;
                    if let Some(first) = s.refusals.first() {
                        self.failure =
                            Some(format!("a launch it made was refused at {now} ms: {first}"));
                    } else if s.launches == 0 && s.replies >= STRICT_IDLE_REPLIES {
                        self.failure = Some(format!(
                            "{} replies with work pending and not one launch (by {now} ms)",
                            s.replies
                        ));
                    }
                }
            }
            Err(e) => {
                if self.params.strict && self.failure.is_none() {
                    self.failure = Some(format!("its call failed at {now} ms: {e}"));
                }
                self.stats.last_failure = Some(format!("at {now} ms: {e}"));
                self.failures_in_row += 1;
                if self.failures_in_row >= FAILURES_BEFORE_PAUSE {
                    self.failures_in_row = 0;
                    self.paused_until = Some(now + crate::policy::secs_to_ms(self.params.retry_s));
                }
                self.fall_back(now, worker, ctx);
            }
        }
    }

    fn launched_by(&self, job: JobId) -> Option<crate::view::LaunchedBy> {
        let (policy, fallback) = self.by_job.get(&job).copied().unwrap_or_default();
        Some(crate::view::LaunchedBy {
            policy,
            fallback,
            fallback_name: self.fallback.name(),
        })
    }

    fn notes(&self) -> Vec<String> {
        let s = &self.stats;
        let mut n = vec![format!(
            "external policy at {}: {} offers sent, {} replies, {} launches, {} launches refused",
            self.params.address, s.calls, s.replies, s.launches, s.refused
        )];
        if s.refused > 0 {
            n.push(format!(
                "refused launches, first: {}",
                s.refusals.join("; ")
            ));
        }
        if s.fallback_offers > 0 || s.failed() > 0 {
            n.push(format!(
                "fallback {} decided {} offers: {} calls unreachable, {} timed out ({} ms), {} replies unreadable; last: {}",
                self.fallback.name(),
                s.fallback_offers,
                s.unreachable,
                s.timeouts,
                self.params.timeout_ms,
                s.bad_replies,
                s.last_failure.as_deref().unwrap_or("-")
            ));
        }
        n
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("calls", s.calls),
            ("replies", s.replies),
            ("launches", s.launches),
            ("refused", s.refused),
            ("unreachable", s.unreachable),
            ("timeouts", s.timeouts),
            ("bad_replies", s.bad_replies),
            ("fallback_offers", s.fallback_offers),
        ]
    }
}

#[cfg(test)]
#[path = "external_tests.rs"]
mod tests;

/// The protocol's messages as a JSON Schema (draft 2020-12) document:
/// `$defs` holds `OfferMessage` (what the policy is told) and `Reply` (its
/// answer) with every type they use, each field with the documentation
/// above; objects take no field the schema does not name. Published as
/// `docs/policy-protocol-v1.schema.json` (`master policy-schema`), versioned
/// with [`PROTOCOL_VERSION`].
pub fn protocol_schema() -> serde_json::Value {
    #[derive(utoipa::OpenApi)]
    #[openapi(components(schemas(
        OfferMessage,
        WorkerMessage,
        JobMessage,
        TaskMessage,
        Reply,
        LaunchMessage,
        Explain,
        Rule
    )))]
    struct Messages;
    let doc = <Messages as utoipa::OpenApi>::openapi();
    let mut defs = serde_json::to_value(doc.components.map(|c| c.schemas).unwrap_or_default())
        .expect("a schema serializes");
    closed(&mut defs);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("urn:mrtb:policy-protocol:v{PROTOCOL_VERSION}"),
        "title": format!("The external policy protocol, version {PROTOCOL_VERSION}"),
        "description": "One JSON object a line each way: the master or the simulator sends an OfferMessage, the policy answers with a Reply. Validate a message against {\"$ref\": \"#/$defs/OfferMessage\"} or {\"$ref\": \"#/$defs/Reply\"} of this document.",
        "$defs": defs,
    })
}

/// Points every `$ref` at `$defs` and closes every object to fields the
/// schema does not name.
fn closed(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::String(r)) = m.get_mut("$ref") {
                *r = r.replace("#/components/schemas/", "#/$defs/");
            }
            if m.get("type").and_then(|t| t.as_str()) == Some("object")
                && m.contains_key("properties")
            {
                m.entry("additionalProperties")
                    .or_insert(serde_json::Value::Bool(false));
            }
            m.values_mut().for_each(closed);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(closed),
        _ => {}
    }
}
