//! The block cache (`workers.block_cache_mb`): blocks a worker keeps mapped
//! into its memory and locked there, as HDFS's centralized cache
//! (`FsDatasetCache`: mmap + mlock within `dfs.datanode.max.locked.memory`).
//!
//! The page cache alone does not keep a worker's blocks: a machine that
//! gives idle memory back (a VM whose kernel pages out cold file pages, as
//! a DAMON `pageout` scheme does) drops a block no job read for a minute,
//! and the next job reads it from the disk. A page mapped into a process
//! and locked is neither paged out nor evicted, and reads of the block's
//! file find it, so a job after a pause runs on memory as warm as the jobs
//! before it. Where the process may not lock that much (no
//! `CAP_IPC_LOCK`, a `RLIMIT_MEMLOCK` below the budget, as in a default
//! container), blocks stay mapped with their pages faulted in, which such a
//! reclaimer also passes over, but memory pressure may still take them.
//!
//! Which blocks: the least recently used go first. A block enters when it
//! is written to be kept (a load, a replica copied here; not a job's output
//! written around the page cache) or read by a task or a remote reader; the
//! scrubber's and the re-replicator's reads do not count as uses. A block
//! leaves when it is deleted or replaced. Mapping and locking run on one
//! background thread: a commit or a read never waits for them.

use super::BlockStore;
use common::BlockId;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, Weak};

/// A block's data file mapped read-only, its pages faulted in and, where
/// allowed, locked; unmapped when dropped.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
    locked: bool,
    /// The file's (device, inode): a block replaced or deleted since it was
    /// opened is another file, and its mapping is not kept.
    file: (u64, u64),
}

// The mapping is only unmapped (in `drop`), never read through the pointer.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(file: &File, len: u64) -> std::io::Result<Mapping> {
        let meta = file.metadata()?;
        let len = usize::try_from(len).map_err(std::io::Error::other)?;
        // SAFETY: a fresh read-only shared mapping of `len` bytes of an
        // open file; nothing reads through it, and `drop` unmaps it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the range just mapped.
        let locked = unsafe { libc::mlock(ptr, len) } == 0;
        Ok(Mapping {
            ptr,
            len,
            locked,
            file: (meta.dev(), meta.ino()),
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps (and so unlocks) the range `new` mapped, once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

struct Entry {
    map: Mapping,
    last_use: u64,
}

#[derive(Default)]
struct State {
    entries: HashMap<BlockId, Entry>,
    /// Blocks asked for and not yet mapped (or given up).
    queued: HashSet<BlockId>,
    /// Bytes of the entries and of the one being mapped.
    bytes: u64,
    clock: u64,
}

/// What the cache holds now, for the worker's metrics and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub budget: u64,
    pub blocks: u64,
    pub bytes: u64,
    pub locked_bytes: u64,
    pub evictions: u64,
}

pub(super) struct BlockCache {
    budget: u64,
    state: Mutex<State>,
    requests: Mutex<Sender<BlockId>>,
    evictions: AtomicU64,
    warned: AtomicBool,
}

impl BlockCache {
    /// A cache of `budget` bytes for `store`, with its thread, which ends
    /// when the store is dropped.
    pub(super) fn start(store: Weak<BlockStore>, budget: u64) -> BlockCache {
        raise_lock_limit();
        let (tx, rx) = channel();
        std::thread::Builder::new()
            .name("block-cache".into())
            .spawn(move || run(store, rx))
            .expect("spawning the block cache's thread");
        BlockCache {
            budget,
            state: Mutex::default(),
            requests: Mutex::new(tx),
            evictions: AtomicU64::new(0),
            warned: AtomicBool::new(false),
        }
    }

    /// A use of block `id`: it becomes the most recent, or is queued to be
    /// mapped if it is not held.
    pub(super) fn touch(&self, id: &BlockId) {
        let mut s = self.state.lock().unwrap();
        s.clock += 1;
        let now = s.clock;
        if let Some(e) = s.entries.get_mut(id) {
            e.last_use = now;
        } else if s.queued.insert(id.clone()) {
            drop(s);
            let _ = self.requests.lock().unwrap().send(id.clone());
        }
    }

    /// Lets go of block `id` (deleted or replaced). The caller holds the
    /// store's index lock, so the thread cannot put back the file it had.
    pub(super) fn forget(&self, id: &BlockId) {
        let gone = {
            let mut s = self.state.lock().unwrap();
            let gone = s.entries.remove(id);
            if let Some(e) = &gone {
                s.bytes -= e.map.len as u64;
            }
            gone
        };
        drop(gone);
    }

    pub(super) fn stats(&self) -> CacheStats {
        let s = self.state.lock().unwrap();
        let held = s.entries.values();
        CacheStats {
            budget: self.budget,
            blocks: s.entries.len() as u64,
            bytes: held.clone().map(|e| e.map.len as u64).sum(),
            locked_bytes: held
                .filter(|e| e.map.locked)
                .map(|e| e.map.len as u64)
                .sum(),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// Makes room for `len` bytes by dropping the least recently used
    /// blocks, and counts them as taken; false (nothing dropped) if `len`
    /// is more than the whole budget.
    fn reserve(&self, len: u64) -> bool {
        if len == 0 || len > self.budget {
            return false;
        }
        let mut evicted = Vec::new();
        let mut s = self.state.lock().unwrap();
        while s.bytes + len > self.budget {
            let Some(oldest) = s
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_use)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            let e = s.entries.remove(&oldest).expect("just found");
            s.bytes -= e.map.len as u64;
            evicted.push(e);
        }
        self.evictions
            .fetch_add(evicted.len() as u64, Ordering::Relaxed);
        if s.bytes + len > self.budget {
            // Only blocks being mapped hold the rest (there is one thread).
            return false;
        }
        s.bytes += len;
        true
    }

    fn unreserve(&self, len: u64) {
        self.state.lock().unwrap().bytes -= len;
    }
}

/// Raises this process's soft `RLIMIT_MEMLOCK` to its hard limit, so an
/// unprivileged worker locks as much as it is allowed to.
fn raise_lock_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls with a valid out-pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim);
        }
    }
}

fn run(store: Weak<BlockStore>, rx: Receiver<BlockId>) {
    while let Ok(id) = rx.recv() {
        let Some(store) = store.upgrade() else { return };
        store.cache_one(&id);
        if let Some(cache) = store.cache.get() {
            cache.state.lock().unwrap().queued.remove(&id);
        }
    }
}

impl BlockStore {
    /// Starts this store's block cache of `budget` bytes (0 = none) and
    /// queues the blocks it holds, most recently written first.
    pub fn start_cache(self: &Arc<Self>, budget: u64) {
        if budget == 0 {
            return;
        }
        let cache = BlockCache::start(Arc::downgrade(self), budget);
        if self.cache.set(cache).is_err() {
            return;
        }
        let mut held: Vec<_> = self
            .list()
            .into_iter()
            .map(|b| {
                let age = std::fs::metadata(self.data_path(&b.id))
                    .and_then(|m| m.modified())
                    .ok();
                (std::cmp::Reverse(age), b.id)
            })
            .collect();
        held.sort();
        let mut room = budget;
        for (_, id) in held {
            let len = self.get(&id).map(|b| b.info.len).unwrap_or(0);
            if len <= room {
                room -= len;
                self.cache_use(&id);
            }
        }
    }

    /// What the block cache holds; all zero without one.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.get().map(BlockCache::stats).unwrap_or_default()
    }

    /// A use of block `id`, for the cache if there is one.
    pub(super) fn cache_use(&self, id: &BlockId) {
        if let Some(c) = self.cache.get() {
            c.touch(id);
        }
    }

    pub(super) fn cache_forget(&self, id: &BlockId) {
        if let Some(c) = self.cache.get() {
            c.forget(id);
        }
    }

    /// Maps block `id` into the cache (on the cache's thread).
    fn cache_one(&self, id: &BlockId) {
        let Some(cache) = self.cache.get() else {
            return;
        };
        if cache.state.lock().unwrap().entries.contains_key(id) {
            return;
        }
        let Ok(block) = self.get(id) else { return };
        let len = block.info.len;
        if !cache.reserve(len) {
            return;
        }
        let path = self.data_path(id);
        let map = File::open(&path).and_then(|f| Mapping::new(&f, len));
        let map = match map {
            Ok(m) => m,
            Err(e) => {
                cache.unreserve(len);
                tracing::warn!(block = %id, error = %e, "block cache: cannot map the block's file");
                return;
            }
        };
        if !map.locked && !cache.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                memlock_limit = lock_limit(),
                "block cache (workers.block_cache_mb): mlock refused (no CAP_IPC_LOCK and RLIMIT_MEMLOCK too low); blocks stay mapped, not locked"
            );
        }
        // Under the index's lock, as delete and replace hold it: the block
        // is still the one mapped, or the mapping goes.
        let index = self.index.read().unwrap();
        let current = std::fs::metadata(&path).map(|m| (m.dev(), m.ino())).ok();
        let same = index
            .get(id)
            .is_some_and(|b| b.info.generation == block.info.generation);
        let mut s = cache.state.lock().unwrap();
        if same && current == Some(map.file) {
            s.clock += 1;
            let last_use = s.clock;
            s.entries.insert(id.clone(), Entry { map, last_use });
        } else {
            s.bytes -= len;
        }
    }
}

/// This process's `RLIMIT_MEMLOCK` in bytes (soft), for the warning.
fn lock_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
    lim.rlim_cur
}

#[cfg(test)]
pub(super) mod tests;
