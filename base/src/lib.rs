//! The lowest shared pieces, below the scheduler (`sched`) and the cluster
//! configuration and wire protocol (`common`): identifiers, block
//! checksums, reading TOML files with errors that name the key, units and
//! limits, the public instance types a hybrid cluster may rent, and a hash
//! for seeded draws. `common` re-exports each module, so the daemons and
//! tools write `common::ids`, `common::checksum` and so on.
//!
//! Nothing here does I/O beyond reading a TOML file and appending a
//! benchmark's figures to its results folder (`bench`).

pub mod bench;
pub mod checksum;
pub mod hash;
pub mod ids;
pub mod public;
pub mod tomlfile;
pub mod units;

pub use ids::{AttemptId, BlockId, IdError, JobId, TaskRef, WorkerId};
