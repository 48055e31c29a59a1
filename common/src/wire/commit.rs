//! `POST /v1/workers/commit`: a reduce attempt asks the master, once its
//! output is made and before it becomes visible (its replica targets get
//! the block's digest, which commits it there, and its own store commits
//! it), whether it is still its task's current attempt, as Hadoop's task
//! asks its application master `canCommit` before its output committer
//! runs. A stale attempt (its worker declared lost, replaced, its job
//! ended) is refused, so its output never lands on a worker and cannot
//! bring back a file deleted since.

use crate::ids::{AttemptId, WorkerId};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    /// The asking worker's id and the master incarnation it registered
    /// with, as in its heartbeats.
    pub worker: WorkerId,
    pub incarnation: u64,
    pub attempt: AttemptId,
}
