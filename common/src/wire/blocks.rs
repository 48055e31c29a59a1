//! Blocks on the wire: the upload and download headers, a block as a
//! worker reports it (with its replica's generation stamp), and the stale
//! replicas the master tells a worker to delete.

use crate::ids::{BlockId, JobId};
use serde::{Deserialize, Serialize};

/// Header carrying a block's digest (hex SHA-256 of its length and chunk CRC32Cs) on
/// upload and download.
pub const BLOCK_DIGEST_HEADER: &str = "x-block-digest";
/// Headers naming the file a block belongs to, on upload.
pub const BLOCK_FILE_HEADER: &str = "x-block-file";
pub const BLOCK_INDEX_HEADER: &str = "x-block-index";
pub const BLOCK_FILE_BLOCKS_HEADER: &str = "x-block-file-blocks";
/// Optional header on upload: `keep` (the default) leaves the block in the
/// receiver's page cache, `drop-behind` writes it around it (job output).
pub const BLOCK_CACHE_HEADER: &str = "x-block-cache";
/// A replica's generation stamp (decimal; absent means 0, loaded data).
pub const BLOCK_GENERATION_HEADER: &str = "x-block-generation";

/// Most blocks one file may have (bounds every count taken from a block
/// report or an upload header).
pub const MAX_FILE_BLOCKS: u32 = 1_000_000;
/// Largest block a worker accepts (an upload's body is cut off past it).
pub const MAX_BLOCK_BYTES: u64 = 4 << 30;

/// One block a worker stores, as reported to the master.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BlockInfo {
    pub id: BlockId,
    /// The file this block belongs to, its position in it and the file's block count.
    pub file: String,
    pub index: u32,
    pub file_blocks: u32,
    pub len: u64,
    /// The replica's generation stamp, as HDFS's genstamp: 0 for loaded
    /// data, the writing attempt's [`output_generation`] for a job's
    /// output. The master takes only the replicas of the attempt whose
    /// result it accepted, so a stale attempt's output that landed after
    /// its commit was granted is never served, and is deleted.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub generation: u64,
}

/// The generation stamp of the output block written by attempt `attempt`
/// of a reduce of job `job`: unique across the cluster's jobs (job ids go
/// on across master restarts), and larger for a later attempt of the same
/// task, so a replica written later by a newer attempt replaces an older
/// one where both land. Never 0 (loaded data).
pub fn output_generation(job: JobId, attempt: u32) -> u64 {
    (u64::from(job.0) << 32) | (u64::from(attempt) + 1)
}

/// A replica of `block` at generation `generation`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StaleReplica {
    pub block: BlockId,
    pub generation: u64,
}
