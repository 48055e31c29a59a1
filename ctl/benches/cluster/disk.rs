//! What a disk did while a job ran, from the kernel's own counters
//! (`/sys/dev/block/MAJ:MIN/stat`, Documentation/block/stat.rst), and how
//! fast it takes large writes: around the page cache (O_DIRECT), and
//! through the worker's store as it writes job output (streamed and dropped
//! behind, `worker::store::Caching::DropBehind`).

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The stat file of the block device holding `dir`, if the kernel has one
/// for it (not on tmpfs or overlay).
pub fn device(dir: &Path) -> Option<PathBuf> {
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let stat = PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
    stat.exists().then_some(stat)
}

/// A device's counters at one moment, or their growth over a span.
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    /// Bytes read (512-byte sectors, whatever the device's own size).
    pub read: u64,
    /// Bytes written (512-byte sectors, whatever the device's own size).
    pub written: u64,
    /// Milliseconds the device had a request in flight.
    pub busy_ms: u64,
}

impl Counters {
    /// What grew from `earlier` to these.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            read: self.read.saturating_sub(earlier.read),
            written: self.written.saturating_sub(earlier.written),
            busy_ms: self.busy_ms.saturating_sub(earlier.busy_ms),
        }
    }
}

/// The counters of the device whose stat file is `stat`.
pub fn counters(stat: &Path) -> Option<Counters> {
    let text = std::fs::read_to_string(stat).ok()?;
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some(Counters {
        read: *f.get(2)? * 512,
        written: *f.get(6)? * 512,
        busy_ms: *f.get(9)?,
    })
}

/// Bytes of the file at `path` in the page cache now (`mincore(2)` over a
/// read-only mapping of it, as `fincore(1)` counts); 0 for an empty or
/// unreadable file.
pub fn cached_bytes(path: &Path) -> u64 {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(path) else {
        return 0;
    };
    let len = file.metadata().map_or(0, |m| m.len()) as usize;
    if len == 0 {
        return 0;
    }
    // SAFETY: the mapping is read-only, of a file open for the call, and
    // unmapped before returning; mincore writes one byte per page of it
    // into a vector of that many bytes.
    unsafe {
        let at = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if at == libc::MAP_FAILED {
            return 0;
        }
        let page = libc::sysconf(libc::_SC_PAGESIZE).max(1) as usize;
        let mut resident = vec![0u8; len.div_ceil(page)];
        let ok = libc::mincore(at, len, resident.as_mut_ptr()) == 0;
        libc::munmap(at, len);
        if !ok {
            return 0;
        }
        let pages = resident.iter().filter(|&&b| b & 1 == 1).count();
        ((pages * page) as u64).min(len as u64)
    }
}

/// Bytes per second of `bytes` written into a new file in `dir` with
/// O_DIRECT in 4 MiB writes and synced, the file deleted after; None where
/// the file system refuses O_DIRECT.
pub fn direct_write_rate(dir: &Path, bytes: usize) -> Option<f64> {
    const PIECE: usize = 4 << 20;
    const ALIGN: usize = 4096;
    let path = dir.join("direct-write-rate.tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .ok()?;
    let raw = vec![7u8; PIECE + ALIGN];
    let off = raw.as_ptr().align_offset(ALIGN);
    let piece = &raw[off..off + PIECE];
    let t = Instant::now();
    let mut res = Ok(());
    for _ in 0..bytes.div_ceil(PIECE) {
        res = res.and_then(|()| file.write_all(piece));
    }
    let res = res.and_then(|()| file.sync_all());
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    res.ok()?;
    Some((bytes.div_ceil(PIECE) * PIECE) as f64 / secs)
}

/// Bytes per second of `bytes` written as one block through the worker's
/// own store as a reduce writes its output (`Caching::DropBehind`: streamed
/// to the disk, dropped from the page cache behind, synced and made
/// visible at commit; its checksums computed on the way), in 4 MiB writes,
/// into a store opened in a new directory under `dir` and removed after.
/// None where the store cannot be opened or the write fails.
pub fn store_write_rate(dir: &Path, bytes: usize) -> Option<f64> {
    use worker::store::{BlockStore, BlockTarget, Caching};
    const PIECE: usize = 4 << 20;
    let root = tempfile::tempdir_in(dir).ok()?;
    let store = std::sync::Arc::new(BlockStore::open(root.path()).ok()?);
    let target = BlockTarget {
        id: common::BlockId::for_file("write-rate", 0).ok()?,
        file: "write-rate".into(),
        index: 0,
        file_blocks: 1,
        generation: 0,
    };
    let piece = vec![7u8; PIECE];
    let t = Instant::now();
    let mut w = store
        .writer_caching(target, Default::default(), Caching::DropBehind)
        .ok()?;
    for _ in 0..bytes.div_ceil(PIECE) {
        w.write(&piece).ok()?;
    }
    let digest = w.checksums().block_digest();
    w.expect_digest(digest);
    w.commit().ok()?;
    let secs = t.elapsed().as_secs_f64();
    drop(store);
    drop(root);
    Some((bytes.div_ceil(PIECE) * PIECE) as f64 / secs)
}
