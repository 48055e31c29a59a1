//! The simulators: the `sched` crate's policies and planners driven on
//! virtual time. The real master runs the same policy code live; this
//! crate is used by `ctl` (the `master sim`, `master lab` and calibration
//! commands) and the Python package, never by the daemons, so neither
//! `master` nor `worker` compiles it.
//!
//! Modules, lowest first (each uses only those above it in this list):
//! - [`swim`]: SWIM's trace format, and one hour of a trace as a run's
//!   files and jobs (the experiment runner's too);
//! - [`agreement`]: a simulated run's launches against the real run's,
//!   map by map, and where and why they first went apart;
//! - [`sim`]: the discrete-event simulator of one instance;
//! - [`compile_time`]: BAR's compile-time scheme, online policies driven
//!   from a min-heap of cores under the instance's static cost model;
//! - [`hybrid_sim`]: a hybrid cloud (private workers, public instances
//!   started on demand, jobs with deadlines) on virtual time;
//! - [`replay`]: a whole real run (jobs, heartbeats, background, fitted
//!   remote-read cost) simulated, for `master sim calibrate`;
//! - [`recheck`]: a decision record's inputs run through its policy again,
//!   row for row;
//! - [`algo`]: any algorithm (offline or online) run on an instance;
//! - [`timing`]: the planners' timing harness (phases, time limits);
//! - [`trace`]: the trace simulator, a trace hour or a spec's jobs at any
//!   scale with a calibrated model;
//! - [`scale`]: the calibrated simulator's error against the cluster's
//!   size.

pub mod agreement;
pub mod algo;
pub mod calibration;
pub mod compile_time;
pub mod hybrid_sim;
pub mod recheck;
pub mod replay;
pub mod scale;
pub mod sim;
pub mod swim;
pub mod timing;
pub mod trace;
