//! The master daemon: [`state`] owns the cluster (workers, jobs, tasks)
//! and drives a `sched::Scheduler`; [`catalog`] is the block catalog rebuilt
//! from block reports; [`http`] is a thin axum layer over the state;
//! [`dashboard`] the page it serves; [`metrics`] its Prometheus metrics;
//! [`provision`] starts and stops public instances as processes.
//!
//! This crate is the daemon and its binary, `masterd` ([`daemon`]); the
//! command line (`master`, whose `serve` runs the same daemon) and
//! everything that drives a cluster from outside are the `ctl` crate.

pub mod access;
pub mod catalog;
pub mod daemon;
pub mod dashboard;
pub mod http;
pub mod metrics;
pub mod provision;
pub mod state;
