//! `ctl`: everything that drives a testbed cluster from outside the daemon,
//! and the `master` command line (its `serve` subcommand runs the daemon of
//! the `master` crate). Modules, lowest first; each uses only those above
//! it in this list:
//! - [`ops`]: operating a cluster: the typed API client, the loader, local
//!   processes, network namespaces, containers, ssh hosts, public instances
//!   as hosts, report formatting;
//! - [`results`]: the results directory writer shared by experiments and sweeps;
//! - [`claims`]: the papers' claims judged on results folders, and the
//!   verdict table generated from them;
//! - [`experiment`]: real-cluster experiment specs and their runner;
//! - [`simulation`]: the simulators' command-line side (the simulators
//!   are the `lab` crate): instance files, sweeps of the papers'
//!   simulations, hybrid-cloud specs, and `sim trace`, which reads a spec
//!   and a calibration folder into `lab::trace`'s inputs;
//! - [`chaos`]: the chaos run, a cluster under injected faults;
//! - [`policy_server`]: the reference external policy and its socket
//!   server;
//! - [`soak`]: the soak run, a cluster under steady load for a long time,
//!   its memory, descriptors and latency watched;
//! - [`cli`]: the `master` command line, one function per subcommand.

pub mod campaign;
pub mod chaos;
pub mod claims;
pub mod cli;
pub mod experiment;
pub mod ops;
pub mod policy_server;
pub mod results;
pub mod simulation;
pub mod soak;
