//! The decision record: why each task went where it did.
//!
//! When its owner turns recording on ([`crate::ClusterView::record_decisions`]),
//! the view keeps one [`Decision`] per map launch, per reduce launch and per
//! offer of a free slot that launched nothing. The owner (the master, the
//! simulators) drains them with [`crate::ClusterView::take_decisions`]. The
//! same shared code records for the real master and the simulator, so a
//! simulated run's record reads like a real one's.
//!
//! What a row holds that the view knows by itself: the time, the offered
//! worker and its free slots, the job and task, where the task runs and
//! reads from, the locality level and the workers holding the input. What
//! only the policy knows it says in a [`Why`]: the job order and the job's
//! place and key in it, the job's locality wait and its threshold, and the
//! [`Rule`] that allowed the launch (or declined the offer). A policy that
//! gives no `Why` is recorded with [`Rule::Unexplained`].
//!
//! Off (the default), recording costs one branch per launch: a `Why` is a
//! few plain numbers the policies fill in either way.

use base::{JobId, TaskRef, WorkerId};
use serde::{Deserialize, Serialize};

/// Scheduler time in milliseconds (as [`crate::Millis`]).
type Millis = u64;

/// The rule that allowed a launch, or declined an offer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The policy did not say.
    #[default]
    Unexplained,
    /// The task's input has a replica on the worker it runs on.
    DataLocal,
    /// The input is on another worker of the same rack (racks set).
    RackLocal,
    /// The job waited for a local slot for its threshold; it may read
    /// remotely (delay scheduling's wait, DynDLOn's worker or core wait).
    WaitOver,
    /// The job's previous launch was already remote, so it may read
    /// remotely at once (Hadoop's and Spark's locality level, delay
    /// scheduling's `j.skipped` flag).
    RemoteLevel,
    /// The policy does not wait for locality: the first job in its order
    /// takes the slot wherever its data is (Hadoop's FIFO, rand-sched).
    NoWait,
    /// The task was placed by the policy's plan (BAR, DynDLOff, lsap,
    /// MROSA, COSHIC, EAS's assignment).
    Plan,
    /// A reduce, placed by the reduce placement.
    ReducePlacement,
    /// Declined: the job waits for a local slot and its wait is not over.
    Waiting,
    /// Declined: the worker already reads remotely as much as the policy
    /// allows (DynDLOn's one remote task per worker).
    RemoteLimit,
    /// Declined: no job has a pending task this worker can take.
    NothingToRun,
    /// Declined: the policy runs only data-local tasks and no job it looked
    /// at has one on this worker (strict locality).
    NoLocalTask,
    /// Declined: the policy queues each map on one machine of its choice
    /// (EAS's Algorithm 2: the least-loaded holder of its input), none is
    /// queued on this worker, and no waiting job can be placed (every
    /// pending map is queued on another machine).
    QueuedElsewhere,
    /// Declined: the policy's plan has no task for this worker now (BAR,
    /// DynDLOff, lsap, MROSA, COSHIC).
    NotPlanned,
    /// A task drawn at random (rand-sched's coin).
    Random,
    /// A backup attempt of a slow map (speculative execution, after the
    /// policy left the slot free); the row's key is the slow attempt's
    /// estimated time left, ms (none when it has made no progress yet).
    Backup,
}

impl Rule {
    /// The kebab-case name, as the CSV and reports spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::Unexplained => "unexplained",
            Rule::DataLocal => "data-local",
            Rule::RackLocal => "rack-local",
            Rule::WaitOver => "wait-over",
            Rule::RemoteLevel => "remote-level",
            Rule::NoWait => "no-wait",
            Rule::Plan => "plan",
            Rule::ReducePlacement => "reduce-placement",
            Rule::Waiting => "waiting",
            Rule::RemoteLimit => "remote-limit",
            Rule::NothingToRun => "nothing-to-run",
            Rule::NoLocalTask => "no-local-task",
            Rule::QueuedElsewhere => "queued-elsewhere",
            Rule::NotPlanned => "not-planned",
            Rule::Random => "random",
            Rule::Backup => "backup",
        }
    }
}

/// What the policy knows of a choice: the rule, and the job's order and
/// wait. Plain numbers, so a policy fills one in whether or not anyone
/// records.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Why {
    pub rule: Rule,
    /// A declined offer: the job that declined it (the first one in the
    /// order); a launch's job is the task's.
    pub job: Option<JobId>,
    /// The job order the policy visited jobs in (`fifo`, `fair`, ...).
    pub order: Option<&'static str>,
    /// The job's place in that order (0: first); the jobs ahead of it
    /// declined the slot.
    pub rank: u32,
    /// The job's key in the order (submission time in ms, running tasks,
    /// tasks left, deadline in ms).
    pub key: Option<f64>,
    /// How long the job (or, for DynDLOn, the worker or core) had waited
    /// for a local slot, and the wait it needed.
    pub waited_ms: Option<Millis>,
    pub threshold_ms: Option<Millis>,
}

impl Why {
    pub fn rule(rule: Rule) -> Self {
        Why {
            rule,
            ..Why::default()
        }
    }

    /// The same, with the job's wait and threshold.
    pub fn waited(self, waited_ms: Millis, threshold_ms: Millis) -> Self {
        Why {
            waited_ms: Some(waited_ms),
            threshold_ms: Some(threshold_ms),
            ..self
        }
    }

    /// The same, declining the offer on behalf of `job`.
    pub fn for_job(self, job: JobId) -> Self {
        Why {
            job: Some(job),
            ..self
        }
    }
}

/// A launch the policy chose, with its reason.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pick {
    pub task: TaskRef,
    /// The worker to read the input from (== the offered one: data-local).
    pub source: WorkerId,
    pub why: Why,
}

/// What a row records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A map task launched.
    Map,
    /// A reduce task launched.
    Reduce,
    /// An offer of free slots that launched no map.
    Idle,
}

/// Where a map reads its input from, seen from where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    NodeLocal,
    RackLocal,
    /// Another rack, or another worker where racks are not set.
    Remote,
}

impl Locality {
    pub fn name(&self) -> &'static str {
        match self {
            Locality::NodeLocal => "node-local",
            Locality::RackLocal => "rack-local",
            Locality::Remote => "remote",
        }
    }
}

/// One row of the decision record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Decision {
    pub time_ms: Millis,
    pub kind: Kind,
    /// The worker whose free slots were offered, and how many were free
    /// when the offer began.
    pub offered: WorkerId,
    pub free_slots: u32,
    pub job: Option<JobId>,
    pub task: Option<u32>,
    /// Where the task runs (a planning policy may launch on a worker other
    /// than the offered one) and reads its input from.
    pub worker: Option<WorkerId>,
    pub source: Option<WorkerId>,
    pub locality: Option<Locality>,
    /// The live workers holding the task's input when it was chosen.
    pub replicas: Vec<WorkerId>,
    pub rule: Rule,
    pub order: Option<String>,
    pub rank: Option<u32>,
    pub key: Option<f64>,
    pub waited_ms: Option<Millis>,
    pub threshold_ms: Option<Millis>,
}

impl Decision {
    /// The CSV header matching [`Decision::csv_row`].
    pub const CSV_HEADER: &'static str = "time_ms,kind,offered,free_slots,job,task,worker,source,locality,replicas,rule,order,rank,key,waited_ms,threshold_ms";

    /// One CSV line (no newline); worker ids as numbers, replicas joined
    /// by `;`. `name` turns a worker id into its name.
    pub fn csv_row(&self, name: impl Fn(WorkerId) -> String) -> String {
        fn opt<T: ToString>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        let replicas: Vec<String> = self.replicas.iter().map(|&w| name(w)).collect();
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.time_ms,
            match self.kind {
                Kind::Map => "map",
                Kind::Reduce => "reduce",
                Kind::Idle => "idle",
            },
            name(self.offered),
            self.free_slots,
            opt(self.job.map(|j| j.0)),
            opt(self.task),
            opt(self.worker.map(&name)),
            opt(self.source.map(&name)),
            self.locality.map(|l| l.name()).unwrap_or_default(),
            replicas.join(";"),
            self.rule.name(),
            self.order.as_deref().unwrap_or_default(),
            opt(self.rank),
            opt(self.key),
            opt(self.waited_ms),
            opt(self.threshold_ms),
        )
    }

    /// One sentence a person reads: "t=12.300 s w3 (2 free): job 4 task 17
    /// on w3 reading w1 [remote; replicas w1,w5]: wait-over (waited 3.100 s
    /// of 3.000 s), 2nd in fair order (key 1)".
    pub fn explain(&self, name: impl Fn(WorkerId) -> String) -> String {
        let mut s = format!(
            "t={:.3} s {} ({} free): ",
            self.time_ms as f64 / 1000.0,
            name(self.offered),
            self.free_slots
        );
        match self.kind {
            Kind::Idle => {
                s.push_str("nothing launched");
                if let Some(j) = self.job {
                    s.push_str(&format!(", job {} declined", j.0));
                }
            }
            Kind::Map | Kind::Reduce => {
                s.push_str(&format!(
                    "{} job {} task {}",
                    if self.kind == Kind::Map {
                        "map"
                    } else {
                        "reduce"
                    },
                    self.job.map_or(0, |j| j.0),
                    self.task.unwrap_or(0)
                ));
                if let Some(w) = self.worker {
                    s.push_str(&format!(" on {}", name(w)));
                }
                if let (Some(src), Some(l)) = (self.source, self.locality) {
                    let reps: Vec<String> = self.replicas.iter().map(|&w| name(w)).collect();
                    s.push_str(&format!(
                        " reading {} [{}; replicas {}]",
                        name(src),
                        l.name(),
                        reps.join(",")
                    ));
                }
            }
        }
        s.push_str(&format!(": {}", self.rule.name()));
        if let (Some(w), Some(t)) = (self.waited_ms, self.threshold_ms) {
            s.push_str(&format!(
                " (waited {:.3} s of {:.3} s)",
                w as f64 / 1000.0,
                t as f64 / 1000.0
            ));
        }
        if let (Some(o), Some(r)) = (&self.order, self.rank) {
            s.push_str(&format!(", place {} in {o} order", r + 1));
            if let Some(k) = self.key {
                s.push_str(&format!(" (key {k})"));
            }
        }
        s
    }
}

/// The record being kept, and the offer under way.
#[derive(Clone, Debug)]
pub(crate) struct Recorder {
    pub rows: Vec<Decision>,
    /// The current offer: when, which worker, its free slots then.
    pub offer: (Millis, WorkerId, u32),
    /// Why the last choice of the current offer declined, if it did.
    pub declined: Option<Why>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            rows: Vec::new(),
            offer: (0, WorkerId(0), 0),
            declined: None,
        }
    }
}

impl Recorder {
    pub fn begin(&mut self, now: Millis, worker: WorkerId, free: u32) {
        self.offer = (now, worker, free);
        self.declined = None;
    }

    /// A row with the offer's fields and nothing else.
    pub fn row(&self, kind: Kind, rule: Rule) -> Decision {
        let (time_ms, offered, free_slots) = self.offer;
        Decision {
            time_ms,
            kind,
            offered,
            free_slots,
            job: None,
            task: None,
            worker: None,
            source: None,
            locality: None,
            replicas: Vec::new(),
            rule,
            order: None,
            rank: None,
            key: None,
            waited_ms: None,
            threshold_ms: None,
        }
    }

    /// The row's policy fields from `why`.
    pub fn with_why(mut d: Decision, why: &Why) -> Decision {
        d.rule = why.rule;
        d.order = why.order.map(str::to_owned);
        d.rank = why.order.map(|_| why.rank);
        d.key = why.key;
        d.waited_ms = why.waited_ms;
        d.threshold_ms = why.threshold_ms;
        d
    }
}
