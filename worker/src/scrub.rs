//! The block scanner, as HDFS's DataNode runs one: in the background, every
//! stored block is read and checked against its checksums at a bounded rate
//! (`workers.scrub_mbps`), round after round; a replica that fails is
//! deleted (`Replicas::drop_if_damaged`), so the next block report drops it
//! and the master copies a good one back. Damage is found before a task
//! meets it.

use crate::replicas::Replicas;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Pause between rounds (and while the store is empty).
const ROUND_PAUSE: Duration = Duration::from_secs(1);

/// Runs for ever: verifies every block, chunk by chunk, at most
/// `bytes_per_sec` (the scan's own pace, not the NIC).
pub async fn run(replicas: Arc<Replicas>, bytes_per_sec: f64) {
    loop {
        for info in replicas.store.list() {
            let c = replicas.clone();
            let id = info.id.clone();
            let started = tokio::time::Instant::now();
            let checked = tokio::task::spawn_blocking(move || -> u64 {
                let Ok(mut reader) = c.store.scan_reader(&id) else {
                    return 0; // deleted meanwhile
                };
                let mut n = 0;
                for i in 0..reader.chunk_count() {
                    match reader.read_chunk(i) {
                        Ok(chunk) => n += chunk.len() as u64,
                        Err(e) => {
                            if c.drop_if_damaged(&e) {
                                c.scrub_found.fetch_add(1, Ordering::Relaxed);
                            }
                            break;
                        }
                    }
                }
                n
            })
            .await
            .unwrap_or(0);
            replicas
                .scrubbed_bytes
                .fetch_add(checked, Ordering::Relaxed);
            // Keep to the rate: this block's bytes take bytes / rate.
            let due = Duration::from_secs_f64(checked as f64 / bytes_per_sec);
            tokio::time::sleep_until(started + due).await;
        }
        tokio::time::sleep(ROUND_PAUSE).await;
    }
}
