//! The running master: [`state`] owns the cluster (workers, jobs, tasks)
//! and drives a `sched::Scheduler`; [`catalog`] is the block catalog rebuilt
//! from block reports; [`http`] is a thin axum layer over the state;
//! [`metrics`] its Prometheus metrics; [`provision`] starts and stops
//! public instances as processes.

pub mod catalog;
pub mod dashboard;
pub mod http;
pub mod metrics;
pub mod provision;
pub mod state;
