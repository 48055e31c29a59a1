//! Everything master and workers must agree on: identifiers, the cluster
//! configuration file, block checksums, the JSON wire protocol, and the HTTP
//! conventions (cluster token, JSON errors).
//!
//! Nothing here does I/O beyond reading `cluster.toml`, but for the HTTP
//! pieces (behind features) and `policy_socket`, the transport of external
//! policies.

#[cfg(feature = "http")]
pub mod auth;
#[cfg(all(feature = "http", feature = "client"))]
pub mod bulk_client;
pub mod config;
pub mod credentials;
pub mod heap;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "client")]
pub mod http_client;
pub mod placement;
pub mod policy_socket;
#[cfg(any(test, feature = "strategies"))]
pub mod strategies;
pub mod tls;
pub mod wire;

/// The lowest shared pieces live in the `base` crate, below `sched`;
/// they are re-exported here so that every crate above names them
/// `common::ids`, `common::checksum` and so on.
pub use base::{bench, checksum, hash, ids, public, tomlfile, units};
pub use ids::{AttemptId, BlockId, IdError, JobId, TaskRef, WorkerId};

/// Milliseconds since the Unix epoch, from the system clock.
///
/// Used for timestamps that cross process boundaries (task start/end in
/// reports). Scheduling decisions never read it: schedulers are given time.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether log lines on stderr get terminal colours: only on a terminal, and
/// never when `NO_COLOR` is set to anything (<https://no-color.org>).
pub fn stderr_wants_colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
