//! Deleted blocks' files, unlinked in the background, as HDFS's DataNode
//! deletes block files on its volumes' own threads
//! (`FsDatasetAsyncDiskService`) instead of in the heartbeat that ordered it.
//!
//! Unlinking a 64 MiB file is not free: the file system frees its extents,
//! and where it is mounted with `discard` (as this testbed's VMs' root is)
//! it tells the device to trim each one before the unlink returns, on a
//! journal-less ext4 tens of milliseconds a block. A worker told to drop a
//! deleted file's replicas did that on its heartbeat loop, so the next job's
//! first heartbeats (its launches, its maps' results) waited behind the
//! last job's output being trimmed. Now [`Trash::discard`] renames the file
//! into the store's `trash/` (a rename frees nothing) and one thread unlinks
//! what lands there; a store that opens empties what an earlier process left
//! in it, on that thread too.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

pub(super) struct Trash {
    dir: PathBuf,
    seq: AtomicU64,
    tx: Sender<PathBuf>,
    /// Held by the unlinking thread around each unlink (tests hold it to
    /// see the renamed files before they go).
    #[cfg_attr(not(test), allow(dead_code))]
    gate: Arc<Mutex<()>>,
}

impl Trash {
    /// The trash under `dir`, created if needed; files already in it are
    /// unlinked in the background.
    pub(super) fn open(dir: PathBuf) -> std::io::Result<Trash> {
        std::fs::create_dir_all(&dir)?;
        let (tx, rx) = channel::<PathBuf>();
        for e in std::fs::read_dir(&dir)? {
            let _ = tx.send(e?.path());
        }
        let gate = Arc::new(Mutex::new(()));
        let held = gate.clone();
        std::thread::Builder::new()
            .name("block-deleter".into())
            .spawn(move || {
                // Ends when the store (the last sender) is dropped and the
                // queue is empty.
                for path in rx {
                    let _g = held.lock().unwrap_or_else(|e| e.into_inner());
                    if let Err(e) = std::fs::remove_file(&path) {
                        if e.kind() != std::io::ErrorKind::NotFound {
                            tracing::warn!(path = %path.display(), error = %e, "could not unlink a deleted block's file");
                        }
                    }
                }
            })?;
        Ok(Trash {
            dir,
            seq: AtomicU64::new(0),
            tx,
            gate,
        })
    }

    /// Moves `path` into the trash (at once; its name is free for a new
    /// file as soon as this returns) and queues its unlink.
    pub(super) fn discard(&self, path: &Path) -> std::io::Result<()> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let to = self
            .dir
            .join(format!("{seq}.{}.{name}", std::process::id()));
        std::fs::rename(path, &to)?;
        if let Err(e) = self.tx.send(to) {
            // The thread is gone (it cannot panic, but be sure): unlink here.
            let _ = std::fs::remove_file(e.0);
        }
        Ok(())
    }

    /// Holds the unlinking thread before its next unlink while the guard lives.
    #[cfg(test)]
    pub(super) fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.gate.lock().unwrap()
    }

    /// The files in the trash now.
    #[cfg(test)]
    pub(super) fn files(&self) -> usize {
        std::fs::read_dir(&self.dir).map_or(0, |d| d.count())
    }
}
