//! Re-replication orders from the master: send a stored replica to another
//! worker (its chunks verified on the way out, so a damaged replica is
//! dropped instead of spread), or delete a replica above the factor.

use crate::fetch::PeerLink;
use crate::nic::Link;
use crate::replicas::Replicas;
use bytes::Bytes;
use common::wire::OutputTarget;
use common::BlockId;
use std::sync::Arc;

/// Sends this worker's replica of `block` to the worker at `to`: read
/// through `disk`, sent through `uplink`.
pub async fn copy_block(
    replicas: &Arc<Replicas>,
    disk: &Link,
    uplink: PeerLink<'_>,
    block: &BlockId,
    to: &str,
) -> Result<(), String> {
    let stored = replicas.store.get(block).map_err(|e| e.to_string())?;
    let c = replicas.clone();
    let b = block.clone();
    let data = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        let damaged = |e: crate::store::StoreError| {
            c.drop_if_damaged(&e);
            e.to_string()
        };
        let mut reader = c.store.scan_reader(&b).map_err(damaged)?;
        let mut out = Vec::with_capacity(reader.len() as usize);
        for i in 0..reader.chunk_count() {
            out.extend_from_slice(&reader.read_chunk(i).map_err(damaged)?);
        }
        Ok(out)
    })
    .await
    .map_err(|e| format!("reading block {block} panicked: {e}"))??;
    // Read through the (emulated) disk, then sent.
    disk.acquire_all(data.len() as u64).await;
    let target = OutputTarget {
        block: block.clone(),
        file: stored.info.file.clone(),
        index: stored.info.index,
        file_blocks: stored.info.file_blocks,
        replicas: Vec::new(),
        // The copy is of the same replica: its generation goes with it.
        generation: stored.info.generation,
    };
    let (pieces, rx) = tokio::sync::mpsc::channel(1);
    let (digest, digest_rx) = tokio::sync::oneshot::channel();
    pieces
        .send(Bytes::from(data))
        .await
        .expect("the receiver is held below");
    drop(pieces);
    let _ = digest.send(stored.sums.block_digest_hex());
    crate::upload::upload_streamed(
        uplink,
        to,
        &target,
        rx,
        digest_rx,
        &crate::progress::Progress::default(),
    )
    .await
}

/// Deletes this worker's replica `stale` if it is still at the stale
/// generation the master named (a replica a later attempt wrote over it
/// since stays).
pub fn drop_stale(replicas: &Replicas, stale: &common::wire::StaleReplica) {
    let block = &stale.block;
    match replicas.store.delete_generation(block, stale.generation) {
        Ok(true) => {
            tracing::info!(%block, generation = stale.generation, "stale replica deleted (its attempt's result was not taken)")
        }
        Ok(false) => {}
        Err(e) => tracing::warn!(%block, error = %e, "could not delete a stale replica"),
    }
    replicas.wake_heartbeat();
}

/// Deletes this worker's replica of `block` (the master trims it).
pub fn drop_block(replicas: &Replicas, block: &BlockId) {
    match replicas.store.delete(block) {
        Ok(()) => tracing::info!(%block, "replica trimmed"),
        Err(crate::store::StoreError::NotFound { .. }) => {}
        Err(e) => tracing::warn!(%block, error = %e, "could not trim a replica"),
    }
    replicas.wake_heartbeat();
}
