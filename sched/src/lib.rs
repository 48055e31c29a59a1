//! Scheduling, pure: the planning model, the offline planners, the online
//! policies, reduce placement, speculation and the decision record. The
//! simulators that drive these on virtual time are in the `lab` crate, so
//! the daemons (`master`, `worker`) do not compile them.
//!
//! A [`Scheduler`] is a deterministic state machine: it is given the time
//! and a [`ClusterView`] and answers through a [`SchedContext`]. No I/O, no
//! clock, no async, no filesystem: this crate depends on `base` (ids,
//! public instance types) and small pure crates only, so the real master, the
//! simulator and the tests run the same code, and a run repeats from its
//! seed.
//!
//! Modules, lowest first (each uses only those above it in this list):
//! - [`model`]: instances, cost models, assignments, evaluation, generator;
//! - [`offline`]: BAR, DynDLOff, LIST, LTFPA, MaxCover-BalAssign;
//! - [`hybrid`]: public instance types, instances, task-time estimates;
//! - [`decision`]: the decision record's rows and reasons;
//! - [`speculation`]: speculative execution's settings, the running maps
//!   and the rule that picks a backup attempt;
//! - [`input`]: the record's inputs (what the owner told the view, and
//!   every offer), and the facts a heartbeat or a job brings (`SlotBusy`,
//!   `JobQos`);
//! - [`view`]: `ClusterView`, `SchedContext`, the `Scheduler` trait
//!   (with the pending-task queue, `pending`);
//! - [`order`], [`pick`], [`assign`]: job ordering, task picking, matching
//!   and the Hungarian algorithm, shared by the policies;
//! - [`hybrid_plan`]: MROSA's estimates, slot book and plans, shared by
//!   `mrosa` and `coshic`;
//! - [`policy`]: one file per online policy with its parameters, and
//!   [`SchedulerConfig`](policy::SchedulerConfig), the list of them;
//! - [`reduce`]: reduce placement (`ReducePlacer`, `offer_reduces`).

pub mod assign;
pub mod decision;
pub mod hybrid;
pub mod hybrid_plan;
pub mod input;
pub mod model;
pub mod offline;
pub mod order;
mod pending;
pub mod pick;
pub mod policy;
pub mod reduce;
pub mod speculation;
pub mod view;

pub use policy::build;
pub use reduce::{offer_reduces, ReducePlacer};
pub use view::{
    offer, plan, Assignment, ClusterView, JobQos, JobView, LaunchedBy, Millis, PendingTask,
    PlanContext, ReduceJobView, SchedContext, SchedError, Scheduler, WorkerView,
};
