//! The master of the testbed, and everything around it that is not pure
//! scheduling (that is the `sched` crate). Modules, lowest first; each uses
//! only those above it in this list:
//! - [`server`]: the running master: cluster state (`server::state`), the
//!   block catalog, the HTTP API;
//! - [`ops`]: operating a cluster from outside: the typed API client, the
//!   loader, local processes, network namespaces, report formatting;
//! - [`results`]: the results directory writer shared by experiments and sweeps;
//! - [`experiment`]: real-cluster experiment specs and their runner;
//! - [`lab`]: instance files, timed runs and sweeps of the `sched` crate's
//!   algorithms;
//! - [`chaos`]: the chaos run, a cluster under injected faults;
//! - [`cli`]: the `master` command line, one function per subcommand.

pub mod chaos;
pub mod cli;
pub mod experiment;
pub mod lab;
pub mod ops;
pub mod results;
pub mod server;
