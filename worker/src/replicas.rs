//! `Replicas`: the stored replicas as the rest of the worker guards them.
//! The block store, the damaged replicas found and deleted (by any reader;
//! of those, by the block scanner, with the bytes it verified), and the
//! heartbeat to wake when one is deleted, so the next block report drops
//! it. The block scanner, re-replication, the map reader and the HTTP
//! server share this handle instead of the whole worker context.

use crate::store::{BlockStore, StoreError};
use common::wire::CopyOrder;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

pub struct Replicas {
    pub store: Arc<BlockStore>,
    /// Stored replicas found damaged on a read and deleted.
    pub corrupt_dropped: AtomicU64,
    /// Of those, found by the block scanner; and the bytes it verified.
    pub scrub_found: AtomicU64,
    pub scrubbed_bytes: AtomicU64,
    /// Wakes the heartbeat loop.
    beat: Arc<Notify>,
    /// Copies ordered by the master that failed, not yet reported.
    copies_failed: std::sync::Mutex<Vec<CopyOrder>>,
}

impl Replicas {
    pub fn new(store: Arc<BlockStore>, beat: Arc<Notify>) -> Self {
        Replicas {
            store,
            corrupt_dropped: AtomicU64::new(0),
            scrub_found: AtomicU64::new(0),
            scrubbed_bytes: AtomicU64::new(0),
            beat,
            copies_failed: Default::default(),
        }
    }

    /// A copy the master ordered failed: said at the next heartbeat (at
    /// once), so the master orders it again.
    pub fn copy_failed(&self, order: CopyOrder) {
        self.copies_failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(order);
        self.wake_heartbeat();
    }

    /// The failed copies not yet reported (taken; given back with
    /// [`Replicas::copies_not_reported`] when the heartbeat fails).
    pub fn take_copies_failed(&self) -> Vec<CopyOrder> {
        std::mem::take(
            &mut *self
                .copies_failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Failed copies a heartbeat that did not reach the master carried.
    pub fn copies_not_reported(&self, orders: Vec<CopyOrder>) {
        self.copies_failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(orders);
    }

    /// The store changed: the next heartbeat (at once) reports it.
    pub fn wake_heartbeat(&self) {
        self.beat.notify_one();
    }

    /// A stored block failed its checksums (or its length) on a read: it is
    /// deleted, so the next heartbeat's block report drops this replica
    /// and readers use a good one, as HDFS drops a replica its checksums
    /// condemn. True if `err` was such damage and the replica is gone.
    pub fn drop_if_damaged(&self, err: &StoreError) -> bool {
        let block = match err {
            StoreError::Corrupt { block, .. } | StoreError::Truncated { block, .. } => block,
            _ => return false,
        };
        tracing::error!(%block, error = %err, "damaged replica; deleting it");
        match self.store.delete(block) {
            Ok(()) => {
                self.corrupt_dropped.fetch_add(1, Ordering::Relaxed);
                self.wake_heartbeat();
                true
            }
            // Another reader dropped it first.
            Err(StoreError::NotFound { .. }) => true,
            Err(e) => {
                tracing::error!(%block, error = %e, "could not delete a damaged replica");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::BlockId;

    #[test]
    fn a_damaged_replica_is_deleted_counted_and_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(BlockStore::open(dir.path()).unwrap());
        let beat = Arc::new(Notify::new());
        let r = Replicas::new(store.clone(), beat.clone());
        let block = BlockId::new("f.b00000").unwrap();
        let target = crate::store::BlockTarget {
            id: block.clone(),
            file: "f".into(),
            index: 0,
            file_blocks: 1,
            generation: 0,
        };
        store.put(target, b"hello").unwrap();
        let damage = StoreError::Corrupt {
            block: block.clone(),
            offset: 0,
            len: 5,
        };
        assert!(r.drop_if_damaged(&damage));
        assert!(store.get(&block).is_err(), "deleted");
        assert_eq!(r.corrupt_dropped.load(Ordering::Relaxed), 1);
        // The heartbeat was woken: a permit is waiting.
        let woken = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async {
                tokio::time::timeout(std::time::Duration::from_millis(50), beat.notified())
                    .await
                    .is_ok()
            });
        assert!(woken);
        // Dropped already by another reader: gone, not counted again.
        assert!(r.drop_if_damaged(&damage));
        assert_eq!(r.corrupt_dropped.load(Ordering::Relaxed), 1);
        // Not damage: nothing happens.
        assert!(!r.drop_if_damaged(&StoreError::NotFound { block }));
    }

    #[test]
    fn a_failed_copy_is_reported_once_and_again_if_its_heartbeat_failed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(BlockStore::open(dir.path()).unwrap());
        let r = Replicas::new(store, Arc::new(Notify::new()));
        let order = CopyOrder {
            block: BlockId::new("f.b00000").unwrap(),
            to: "http://w2".into(),
        };
        r.copy_failed(order.clone());
        let sent = r.take_copies_failed();
        assert_eq!(sent, std::slice::from_ref(&order));
        assert!(r.take_copies_failed().is_empty(), "reported once");
        // The heartbeat carrying it did not reach the master.
        r.copies_not_reported(sent);
        assert_eq!(r.take_copies_failed(), [order]);
    }
}
