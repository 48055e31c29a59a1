//! The decision record's inputs: every change the owner (the master, a
//! simulator) made to the [`crate::ClusterView`], and every offer, in the
//! order it made them.
//!
//! When the record is on ([`crate::ClusterView::record_decisions`]), each
//! of the view's update methods keeps one [`Input`] before it acts, and
//! [`crate::offer`] and [`crate::offer_reduces`] keep the offer itself.
//! Fed in the same order to a fresh view ([`crate::ClusterView::feed`]) and
//! a policy built from the same configuration and seed, they make the same
//! decisions again, row for row: `crate::recheck` does exactly that to
//! check that what the master decided is what the shared scheduler code
//! decides, and a test in `make test` runs it on real runs of every policy.
//!
//! The policies' own launches are not inputs: the view applies them while
//! the policy decides, so they follow from the offer.

use crate::hybrid::{InstanceId, WorkerProfile};
use crate::pending::PendingTask;
use base::public::PublicType;
use base::{JobId, TaskRef, WorkerId};
use serde::{Deserialize, Serialize};

/// Scheduler time in milliseconds (as [`crate::Millis`]).
type Millis = u64;

/// One busy slot, as a worker's heartbeat reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SlotBusy {
    pub elapsed_ms: u64,
    /// Known remaining time (background processes); None for tasks.
    pub remaining_ms: Option<u64>,
}

/// A job's quality-of-service terms and sizes, for the hybrid-cloud
/// policies (MROSA's D_i, C_i, mD and rD).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobQos {
    /// Absolute deadline (scheduler time); None = none.
    pub deadline: Option<Millis>,
    /// Most it may spend on public instances; None = no limit.
    pub budget: Option<f64>,
    /// Its map input, bytes, and its reduce count.
    pub input_bytes: u64,
    pub reduces: u32,
}

/// One change to the view, or one offer, as its owner made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Input {
    /// [`crate::ClusterView::upsert_worker`]
    Worker { worker: WorkerId, slots: u32 },
    /// [`crate::ClusterView::set_rack`]
    Rack { worker: WorkerId, rack: u32 },
    /// [`crate::ClusterView::set_runs_maps`]
    RunsMaps { worker: WorkerId, on: bool },
    /// [`crate::ClusterView::set_runs_reduces`]
    RunsReduces { worker: WorkerId, on: bool },
    /// [`crate::ClusterView::set_free`]
    Free { worker: WorkerId, free: u32 },
    /// [`crate::ClusterView::set_busy`]
    Busy {
        worker: WorkerId,
        now: Millis,
        busy: Vec<SlotBusy>,
    },
    /// [`crate::ClusterView::lose_worker`]
    Lost { worker: WorkerId },
    /// [`crate::ClusterView::add_job`]
    Job {
        job: JobId,
        now: Millis,
        group: String,
        tasks: Vec<PendingTask>,
    },
    /// [`crate::ClusterView::set_job_qos`]
    Qos { job: JobId, qos: JobQos },
    /// [`crate::ClusterView::remove_job`]
    JobGone { job: JobId },
    /// [`crate::ClusterView::requeue`]
    Requeue { task: PendingTask },
    /// [`crate::ClusterView::set_replicas`]
    Replicas {
        task: TaskRef,
        replicas: Vec<WorkerId>,
    },
    /// [`crate::ClusterView::task_ended`]
    MapEnded {
        job: JobId,
        worker: WorkerId,
        remote: bool,
    },
    /// [`crate::ClusterView::note_task_ms`]
    MapMs { ms: u64 },
    /// [`crate::ClusterView::add_reduces`]
    Reduces {
        job: JobId,
        indices: Vec<u32>,
        load_each: u64,
        /// As (worker, bytes) pairs: JSON keys are strings.
        output_on: Vec<(WorkerId, u64)>,
    },
    /// [`crate::ClusterView::requeue_reduce`]
    RequeueReduce { task: TaskRef },
    /// [`crate::ClusterView::hold_reduces`]
    HoldReduces { job: JobId },
    /// [`crate::ClusterView::reduce_ended`]
    ReduceEnded { task: TaskRef, worker: WorkerId },
    /// [`crate::ClusterView::adopt`]
    Adopted {
        task: TaskRef,
        worker: WorkerId,
        source: WorkerId,
    },
    /// [`crate::ClusterView::adopt_reduce`]
    AdoptedReduce { task: TaskRef, worker: WorkerId },
    /// [`crate::ClusterView::set_speculation`]
    Speculation {
        config: crate::speculation::Speculation,
    },
    /// [`crate::ClusterView::task_progress`]
    Progress {
        task: TaskRef,
        worker: WorkerId,
        done: f64,
        now: Millis,
    },
    /// [`crate::ClusterView::map_ended`]
    AttemptEnded {
        task: TaskRef,
        worker: WorkerId,
        remote: bool,
        now: Millis,
        ok: bool,
    },
    /// [`crate::ClusterView::reduce_attempt_ended`]
    ReduceAttemptEnded {
        task: TaskRef,
        worker: WorkerId,
        now: Millis,
        ok: bool,
    },
    /// [`crate::ClusterView::set_public_types`]
    PublicTypes {
        types: Vec<PublicType>,
        max_instances: u32,
    },
    /// [`crate::ClusterView::set_profile`]
    Profile {
        worker: WorkerId,
        profile: WorkerProfile,
    },
    /// [`crate::ClusterView::instance_up`]
    InstanceUp {
        instance: InstanceId,
        worker: WorkerId,
    },
    /// [`crate::ClusterView::instance_gone`]
    InstanceGone { instance: InstanceId },
    /// [`crate::ClusterView::note_map`]
    MapMeasured {
        worker: WorkerId,
        len: u64,
        ms: u64,
        local: bool,
        output: u64,
    },
    /// [`crate::ClusterView::note_reduce`]
    ReduceMeasured { input: u64, ms: u64 },
    /// [`crate::ClusterView::take_requests`]: the owner took the policy's
    /// instance requests.
    TookRequests,
    /// [`crate::ClusterView::take_refusals`]: the owner took the policy's
    /// refusals.
    TookRefusals,
    /// [`crate::offer_reduces`]: `worker` offered to the reduce placement.
    ReduceOffer { now: Millis, worker: WorkerId },
    /// [`crate::offer`]: the policy's planning step at `now`, then, if
    /// `worker` has a free map slot, an offer of it, and (speculation on)
    /// its free slots to the backup rule.
    Offer { now: Millis, worker: WorkerId },
}

impl Input {
    /// An offer to the policy or to the reduce placement (not a change the
    /// view applies by itself).
    pub fn is_offer(&self) -> bool {
        matches!(self, Input::Offer { .. } | Input::ReduceOffer { .. })
    }
}
