//! Job output committed with its writes in flight (`workers.sync_output =
//! false`, the default): the task that wrote a block ends once its last
//! byte is handed to the block's O_DIRECT writer, and one thread of the
//! store's own then waits for those writes and syncs the block, its meta
//! and the directory, as it would have before the commit. HDFS's DataNode
//! does not wait for the disk at a block's close either
//! (`dfs.datanode.synconclose = false`, its default).
//!
//! What it trades: on a disk slower than the task, its output waits in up
//! to [`super::sink::DirectSink::DEFERRED`] buffers of the worker's pool
//! instead of the task for the disk. A reader of the block meanwhile waits
//! for it ([`super::BlockStore::scan_reader`]). The worker killed (or the
//! machine lost) in that second or so loses the block, and nothing passes
//! it on as whole: a store that opens drops a block whose data file is
//! short of its meta, or any meta it cannot read, and the master copies it
//! back from another replica where there is one. Where the writes fail,
//! the block is dropped at once.

use super::sink::DirectSink;
use super::{io_err, StoreError};
use common::BlockId;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};

/// A committed block whose writes are in flight.
pub(super) struct Job {
    pub(super) sink: DirectSink,
    pub(super) store: Weak<super::BlockStore>,
    pub(super) id: BlockId,
    /// Its commit's token in the store's `in_flight`.
    pub(super) token: Arc<()>,
    pub(super) generation: u64,
    /// Its meta file and their directory, synced after the data.
    pub(super) meta: PathBuf,
    pub(super) dir: PathBuf,
}

/// What the writeback thread has not yet finished, and what failed.
#[derive(Default)]
struct Counts {
    pending_bytes: AtomicU64,
    pending_blocks: AtomicU64,
    written_blocks: AtomicU64,
    errors: AtomicU64,
}

/// The store's writeback thread and its queue.
pub(super) struct Writeback {
    tx: Sender<Job>,
    counts: Arc<Counts>,
    /// Held by the thread around each block (tests hold it to see a block
    /// committed before its writes are done).
    #[cfg_attr(not(test), allow(dead_code))]
    gate: Arc<Mutex<()>>,
}

/// A snapshot of [`Writeback`]'s counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WritebackStats {
    /// Bytes of committed output whose writes are not yet done and synced.
    pub pending_bytes: u64,
    pub pending_blocks: u64,
    /// Blocks finished so since the store opened.
    pub written_blocks: u64,
    /// Blocks whose writes or sync failed (each dropped).
    pub errors: u64,
}

impl Writeback {
    pub(super) fn start() -> std::io::Result<Writeback> {
        let (tx, rx) = channel::<Job>();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let gate = Arc::new(Mutex::new(()));
        let held = gate.clone();
        std::thread::Builder::new()
            .name("block-writeback".into())
            .spawn(move || {
                // Ends when the store (the last sender) is dropped and the
                // queue is empty.
                for job in rx {
                    let _g = held.lock().unwrap_or_else(|e| e.into_inner());
                    finish(job, &c);
                }
            })?;
        Ok(Writeback { tx, counts, gate })
    }

    /// Queues `job`'s writeback.
    pub(super) fn queue(&self, job: Job) {
        let len = job.sink.len();
        self.counts.pending_bytes.fetch_add(len, Ordering::Relaxed);
        self.counts.pending_blocks.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.tx.send(job) {
            // The thread is gone (it cannot panic, but be sure): here, then.
            finish(e.0, &self.counts);
        }
    }

    /// Holds the thread before its next block while the guard lives.
    #[cfg(test)]
    pub(super) fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.gate.lock().unwrap()
    }

    pub(super) fn stats(&self) -> WritebackStats {
        let c = &self.counts;
        WritebackStats {
            pending_bytes: c.pending_bytes.load(Ordering::Relaxed),
            pending_blocks: c.pending_blocks.load(Ordering::Relaxed),
            written_blocks: c.written_blocks.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
        }
    }
}

impl super::BlockStore {
    /// Whether block `id` was committed with writes still in flight.
    pub fn in_flight(&self, id: &BlockId) -> bool {
        self.in_flight.lock().unwrap().contains_key(id)
    }

    /// Waits until block `id` has no writes in flight.
    pub(super) fn wait_written(&self, id: &BlockId) -> Result<(), StoreError> {
        let limit = std::time::Duration::from_secs(300);
        let t0 = std::time::Instant::now();
        let mut pending = self.in_flight.lock().unwrap();
        while pending.contains_key(id) {
            let left = limit.saturating_sub(t0.elapsed());
            if left.is_zero() {
                let e = io::Error::other("its writes have been in flight for 300 s");
                return Err(io_err("reading", &self.data_path(id))(e));
            }
            pending = self.written.wait_timeout(pending, left).unwrap().0;
        }
        Ok(())
    }

    /// The writeback of block `id` (its commit's `token`) ended: readers go
    /// on. Where its writes failed (`ok` false) the block is dropped,
    /// unless a newer replica replaced it meanwhile.
    pub(super) fn written_back(&self, id: &BlockId, token: &Arc<()>, generation: u64, ok: bool) {
        if !ok && self.get(id).is_ok_and(|b| b.info.generation == generation) {
            let _ = self.delete(id);
        }
        let mut pending = self.in_flight.lock().unwrap();
        if pending.get(id).is_some_and(|t| Arc::ptr_eq(t, token)) {
            pending.remove(id);
        }
        drop(pending);
        self.written.notify_all();
    }
}

/// Waits for `job`'s writes and syncs its block, then lets its readers on.
fn finish(job: Job, c: &Counts) {
    let len = job.sink.len();
    let done = job.sink.complete().and_then(|f| f.sync_all());
    match &done {
        Ok(()) => {
            // A block deleted meanwhile has moved: nothing to sync then.
            for path in [&job.meta, &job.dir] {
                if let Ok(f) = File::open(path) {
                    let _ = f.sync_all();
                }
            }
            c.written_blocks.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            c.errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(block = %job.id, error = %e, "a committed output block's writes failed; the block is dropped");
        }
    }
    c.pending_bytes.fetch_sub(len, Ordering::Relaxed);
    c.pending_blocks.fetch_sub(1, Ordering::Relaxed);
    if let Some(store) = job.store.upgrade() {
        store.written_back(&job.id, &job.token, job.generation, done.is_ok());
    }
}
