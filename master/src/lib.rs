//! The master of the testbed. `state` owns the cluster: workers, the block
//! catalog, jobs and tasks, and drives a `sched::Scheduler`; `http` is a thin
//! axum layer over it; `client` is the typed API client used by the CLI,
//! the loader and the tests; `loader` generates or splits files into
//! replicated blocks; `local` starts a cluster of local processes; `netns`
//! does the same in Linux network namespaces with shaped links.

pub mod catalog;
pub mod client;
pub mod experiment;
pub mod http;
pub mod lab;
pub mod loader;
pub mod local;
pub mod netns;
pub mod report;
pub mod sched;
pub mod sim;
pub mod state;
