//! What a disk did while a job ran, from the kernel's own counters
//! (`/sys/dev/block/MAJ:MIN/stat`, Documentation/block/stat.rst), and how
//! fast it takes writes that go around the page cache, as the store writes
//! job output (`worker::store`, O_DIRECT).

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
    /// Bytes written (512-byte sectors, whatever the device's own size).
    pub written: u64,
    /// Milliseconds the device had a request in flight.
    pub busy_ms: u64,
}

impl Counters {
    /// What grew from `earlier` to these.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
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
        written: *f.get(6)? * 512,
        busy_ms: *f.get(9)?,
    })
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
