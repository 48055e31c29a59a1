use super::super::{BlockTarget, Caching};
use super::*;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

fn target(id: &str, generation: u64) -> BlockTarget {
    BlockTarget {
        id: BlockId::new(id).unwrap(),
        file: "f".into(),
        index: 0,
        file_blocks: 1,
        generation,
    }
}

fn id(name: &str) -> BlockId {
    BlockId::new(name).unwrap()
}

fn put(s: &Arc<BlockStore>, name: &str, generation: u64, byte: u8) {
    s.put(target(name, generation), &vec![byte; MIB]).unwrap();
}

fn holds(s: &BlockStore, name: &str) -> bool {
    let cache = s.cache.get().unwrap();
    let st = cache.state.lock().unwrap();
    st.entries.contains_key(&id(name))
}

/// Waits (10 s at most) until `cond` holds of the store's cache.
fn until(s: &BlockStore, what: &str, cond: impl Fn(&BlockStore) -> bool) {
    let t = Instant::now();
    while !cond(s) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{what}: {:?}",
            s.cache_stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The share of `path`'s pages in the page cache (mincore through a
/// mapping that faults nothing in).
pub(in crate::store) fn resident(path: &std::path::Path) -> f64 {
    let f = File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: a read-only mapping of the open file, unmapped below; mincore
    // writes one byte per page into `vec`.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
        libc::munmap(p, len);
    }
    vec.iter().filter(|b| *b & 1 == 1).count() as f64 / pages as f64
}

/// Asks the kernel to drop `path`'s pages from the page cache, as a
/// reclaimer of idle file pages does: it takes pages no process maps.
fn drop_cached(path: &std::path::Path) {
    let f = File::open(path).unwrap();
    // SAFETY: a plain advice call on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}

#[test]
fn a_cached_block_stays_in_memory_when_the_kernel_drops_idle_file_pages() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    // Without a cache: dropped.
    put(&s, "plain", 0, 1);
    let plain = s.data_path(&id("plain"));
    drop_cached(&plain);
    assert!(resident(&plain) < 0.5, "{}", resident(&plain));

    s.start_cache(8 * MIB as u64);
    // The store's own blocks are taken at start, new ones at commit.
    until(&s, "the block there at start", |s| holds(s, "plain"));
    put(&s, "kept", 0, 2);
    until(&s, "the block written", |s| holds(s, "kept"));
    for name in ["plain", "kept"] {
        let path = s.data_path(&id(name));
        drop_cached(&path);
        assert_eq!(resident(&path), 1.0, "{name}");
    }
    let st = s.cache_stats();
    assert_eq!((st.blocks, st.bytes), (2, 2 * MIB as u64), "{st:?}");
    // This test runs as root, as the workers here do: the blocks are locked.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(st.locked_bytes, st.bytes, "{st:?}");
    }
}

#[test]
fn the_least_recently_used_block_leaves_first_and_scans_are_not_uses() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    s.start_cache(2 * MIB as u64);
    put(&s, "a", 0, 1);
    until(&s, "a", |s| holds(s, "a"));
    put(&s, "b", 0, 2);
    until(&s, "b", |s| holds(s, "b"));
    // A task reads a, the scrubber reads b: b is the least recently used.
    s.reader(&id("a")).unwrap();
    s.scan_reader(&id("b")).unwrap();
    put(&s, "c", 0, 3);
    until(&s, "c", |s| holds(s, "c"));
    assert!(holds(&s, "a") && !holds(&s, "b"));
    assert_eq!(s.cache_stats().evictions, 1);
    // A task's read brings b back, and a goes (c is newer).
    s.reader(&id("b")).unwrap();
    until(&s, "b again", |s| holds(s, "b"));
    assert!(!holds(&s, "a") && holds(&s, "c"));
    assert_eq!(s.cache_stats().bytes, 2 * MIB as u64);
    // Output written around the page cache is not taken.
    let mut w = s
        .output_writer(target("out", 0), Caching::DropBehind)
        .unwrap();
    w.write(&vec![4; MIB]).unwrap();
    w.commit().unwrap();
    // A block larger than the whole budget is not taken either.
    s.put(target("big", 0), &vec![5; 3 * MIB]).unwrap();
    s.reader(&id("big")).unwrap();
    // The thread takes requests in order: once d is held, those are done.
    put(&s, "d", 0, 6);
    until(&s, "d", |s| holds(s, "d"));
    assert!(!holds(&s, "out") && !holds(&s, "big"));
}

#[test]
fn a_deleted_or_replaced_block_is_let_go_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    s.start_cache(4 * MIB as u64);
    put(&s, "gone", 0, 1);
    put(&s, "renewed", 0, 2);
    until(&s, "both", |s| holds(s, "gone") && holds(s, "renewed"));
    s.delete(&id("gone")).unwrap();
    assert!(!holds(&s, "gone"));
    assert_eq!(s.cache_stats().bytes, MIB as u64);
    // A newer generation's replica replaces the file: the old mapping goes
    // with the commit, and the new file is mapped after it.
    let old = std::fs::metadata(s.data_path(&id("renewed")))
        .unwrap()
        .ino();
    put(&s, "renewed", 5, 3);
    let new = std::fs::metadata(s.data_path(&id("renewed")))
        .unwrap()
        .ino();
    assert_ne!(old, new);
    until(&s, "the new replica", |s| {
        let cache = s.cache.get().unwrap();
        let st = cache.state.lock().unwrap();
        st.entries
            .get(&id("renewed"))
            .is_some_and(|e| e.map.file.1 == new)
    });
    assert_eq!(s.cache_stats().bytes, MIB as u64);
    // Dropping the store ends the thread and unmaps everything.
    let weak = Arc::downgrade(&s);
    drop(s);
    assert!(weak.upgrade().is_none());
}
