//! Sorted runs, the map output of `sort` and `sort-lines`: a map's records
//! (100 bytes each) or lines (of any length, each ending in a newline)
//! laid out in order, the part a reduce fetches, and the binary searches
//! that find a reduce's range `lo <= x < hi` in one, in memory or on disk,
//! reading only what they visit.

use crate::MapOutput;

/// Bytes of one `sort` record (TeraSort's: a 10-byte key, then the rest
/// of the line, a newline last).
pub const RECORD: usize = 100;
/// Bytes of a record's key.
pub const KEY: usize = 10;

/// A map's records in sorted order, laid out end to end: the form the
/// reduces fetch and the one a reduce on this worker merges where it lies.
/// The map gathers them from its input block in the sorted order once
/// (the block's buffer goes back to the pool), so every later reader,
/// the run file's write, a range served from memory, a local merge, reads
/// sequentially. A merge reading the block through the order instead pays
/// a cache and TLB miss per record: a reduce's merge was 3-5x slower. The
/// gather holds the block and the run at once: 2 blocks a map slot at peak.
pub struct SortedRun {
    data: Vec<u8>,
    format: RunFormat,
}

/// What a sorted run holds: `sort`'s 100-byte records or `sort-lines`'
/// newline-terminated lines of any length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFormat {
    Records,
    Lines,
}

impl RunFormat {
    /// The name its map output is served and stored under.
    pub fn part(self) -> &'static str {
        match self {
            RunFormat::Records => "run",
            RunFormat::Lines => "lines",
        }
    }

    /// The format served under part name `part`, if a sorted run's.
    pub fn of_part(part: &str) -> Option<RunFormat> {
        match part {
            "run" => Some(RunFormat::Records),
            "lines" => Some(RunFormat::Lines),
            _ => None,
        }
    }

    /// The byte range of a sorted run in this format holding what lies in
    /// `lo <= x < hi`.
    pub fn range(self, run: &[u8], lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
        match self {
            RunFormat::Records => range_in_run(run, lo, hi),
            RunFormat::Lines => range_in_lines(run, lo, hi),
        }
    }
}

impl SortedRun {
    /// A run of `data`, already laid out in sorted order.
    pub fn new(data: Vec<u8>, format: RunFormat) -> SortedRun {
        SortedRun { data, format }
    }

    /// Records or lines.
    pub fn format(&self) -> RunFormat {
        self.format
    }

    /// The run's size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Its number of records.
    pub fn records(&self) -> usize {
        self.data.len() / RECORD
    }

    /// The `i`-th record in sorted order.
    pub fn record(&self, i: usize) -> &[u8] {
        &self.data[i * RECORD..(i + 1) * RECORD]
    }

    /// The records in sorted order, end to end.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Writes the records in sorted order.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(&self.data)
    }

    /// Fills `buf` with the run's bytes from byte `at` on (any offset;
    /// `at + buf.len()` at most [`SortedRun::len`]).
    pub fn read_at(&self, at: usize, buf: &mut [u8]) {
        assert!(at + buf.len() <= self.len(), "read past the run's end");
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
    }

    /// The byte range of the records (or lines) `lo <= x < hi` (see
    /// [`range_by_record`], [`range_by_line`]).
    pub fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
        self.format.range(&self.data, lo, hi)
    }

    /// A copy of the run.
    pub fn to_vec(&self) -> Vec<u8> {
        self.data.clone()
    }

    /// The run's buffer, to reuse (see [`crate::pool`]).
    pub fn into_buffer(self) -> Vec<u8> {
        self.data
    }
}

/// Byte range `[start, end)` of the sorted `run` holding the records with
/// `lo <= record < hi` (`None` = unbounded). `run` is whole sorted records.
pub fn range_in_run(run: &[u8], lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
    let n = (run.len() / RECORD) as u64;
    let record = |i: u64| -> Result<&[u8], std::convert::Infallible> {
        let at = i as usize * RECORD;
        Ok(&run[at..at + RECORD])
    };
    let Ok((s, e)) = range_by_record(n, record, lo, hi);
    (s as usize, e as usize)
}

/// The byte range of records `lo <= record < hi` among `n` sorted records,
/// record i read by `record(i)` (from memory, or from a stored run by
/// whoever stores it: only the records the binary search visits are read).
/// Bounds compare as byte strings: a whole record (a split the master
/// picked) divides even equal keys by the rest of the line; a shorter bound
/// compares with the records' prefixes (`lo = key` takes every record whose
/// first bytes are at least `key`).
pub fn range_by_record<E, R: AsRef<[u8]>>(
    n: u64,
    mut record: impl FnMut(u64) -> Result<R, E>,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<(u64, u64), E> {
    let first_at_least = |k: &[u8]| -> Result<u64, E> {
        let (mut a, mut b) = (0u64, n);
        while a < b {
            let m = (a + b) / 2;
            if record(m)?.as_ref() < k {
                a = m + 1;
            } else {
                b = m;
            }
        }
        Ok(a)
    };
    let (s, e) = bounds(lo, hi, n, first_at_least)?;
    Ok((s * RECORD as u64, e * RECORD as u64))
}

/// `[start, end)` of what lies in `lo <= x < hi` among sorted items
/// `0..n`, `first_at_least(k)` giving the first item at or above `k`
/// (`None` = unbounded; an empty range where `hi` is below `lo`).
fn bounds<E>(
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    n: u64,
    mut first_at_least: impl FnMut(&[u8]) -> Result<u64, E>,
) -> Result<(u64, u64), E> {
    let s = match lo {
        Some(k) => first_at_least(k)?,
        None => 0,
    };
    let e = match hi {
        Some(k) => first_at_least(k)?,
        None => n,
    };
    Ok((s, e.max(s)))
}

/// The byte range `[start, end)` of the lines `lo <= line < hi` (`None` =
/// unbounded) of a sorted run of `len` bytes of newline-terminated lines.
/// `read(at, buf)` puts into `buf` the run's bytes from `at` up to and
/// including the next newline. The search halves byte ranges and reads the
/// line that starts first in the upper half, so it reads O(log len) lines.
pub fn range_by_line<E>(
    len: u64,
    mut read: impl FnMut(u64, &mut Vec<u8>) -> Result<(), E>,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<(u64, u64), E> {
    let mut buf = Vec::new();
    let first_at_least = |k: &[u8]| -> Result<u64, E> {
        // Every line starting before `a` is below k; `a` starts a line (or
        // is `len`); no line starting at or after `b` needs a look.
        let (mut a, mut b) = (0u64, len);
        while a < b {
            let m = a + (b - a) / 2;
            let s = if m == a {
                a
            } else {
                read(m - 1, &mut buf)?;
                m - 1 + buf.len() as u64
            };
            if s >= b {
                b = m;
                continue;
            }
            read(s, &mut buf)?;
            let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
            if line < k {
                a = s + buf.len() as u64;
            } else {
                b = s;
            }
        }
        Ok(a)
    };
    bounds(lo, hi, len, first_at_least)
}

/// [`range_by_line`] over a run in memory.
pub fn range_in_lines(run: &[u8], lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
    let read = |at: u64, buf: &mut Vec<u8>| -> Result<(), std::convert::Infallible> {
        let rest = &run[at as usize..];
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |p| p + 1);
        buf.clear();
        buf.extend_from_slice(&rest[..end]);
        Ok(())
    };
    let Ok((s, e)) = range_by_line(run.len() as u64, read, lo, hi);
    (s as usize, e as usize)
}

/// A sorted run a reduce merges: fetched into a buffer, or a map output
/// kept in this process, read where it lies.
pub(crate) enum Run {
    Fetched(Vec<u8>),
    Kept(crate::KeptInput),
}

impl Run {
    /// Its records in sorted order, end to end.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Run::Fetched(v) => v,
            Run::Kept(k) => {
                let MapOutput::SortedRun { run, .. } = &*k.output else {
                    unreachable!("checked by consume_kept")
                };
                &run.bytes()[k.start..k.end]
            }
        }
    }
}

/// Gives the fetched runs' buffers back to the pool (kept ones belong to
/// their map output).
pub(crate) fn recycle(runs: Vec<Run>) {
    for r in runs {
        if let Run::Fetched(v) = r {
            crate::pool::give(v);
        }
    }
}

/// How many lines or records ahead a pass over them in sorted order asks
/// for the one it will read (they lie anywhere in their block: without the
/// hint, each costs the pass a wait on memory).
pub(crate) const AHEAD: usize = 16;

/// Asks the CPU to bring `data[at]` into the cache (a hint only).
#[inline(always)]
pub(crate) fn prefetch(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and cannot fault
    // (the address is in `data` or one past it, never dereferenced).
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            data.as_ptr().wrapping_add(at.min(data.len())).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}
