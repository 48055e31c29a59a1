//! sort: TeraSort-style sort of 100-byte records with 10-byte keys (the
//! loader's `records` generator). Output, read in partition order, equals
//! `LC_ALL=C sort` of the input byte for byte: records are compared as whole
//! lines, byte by byte.
//!
//! Map: checks that its block is whole records, sorts them, and samples
//! whole records at evenly spaced ranks of its sorted run. The master merges
//! every map's sample and picks R - 1 split records at the quantiles (a
//! range partitioner from sampled records); reducer r takes the records with
//! split[r-1] <= record < split[r], which each mapper serves from its sorted
//! run by binary search ([`range_by_record`]). The splits are whole records,
//! not keys, because the order is the whole line's: a key shared by more
//! records than a reduce's share is divided between adjacent reduces by the
//! rest of the line, and the partitions stay balanced however few distinct
//! keys there are (the output, read in partition order, is still sorted).
//! Reduce: merges the sorted ranges it fetched (one per mapper) into its
//! output partition, holding at most its memory budget of them and merging
//! the rest to spill files first ([`SortReduce`]).

pub use crate::run::{range_by_record, range_in_run, RunFormat, SortedRun, KEY, RECORD};
use crate::run::{recycle, Run};
use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask, WholeInput};

/// Records sampled per map task.
pub const SAMPLES_PER_MAP: usize = 128;

#[derive(Default)]
pub struct SortMap {
    data: WholeInput,
}

impl MapTask for SortMap {
    fn expect_input(&mut self, bytes: u64) {
        self.data.expect(bytes);
    }

    fn keeps_input(&self) -> bool {
        true
    }

    fn consume(&mut self, piece: &[u8]) {
        self.data.push(piece);
    }

    fn consume_owned(&mut self, piece: Vec<u8>) {
        self.data.push_owned(piece);
    }

    fn finish(self: Box<Self>) -> (MapSummary, MapOutput) {
        let data = self.data.into_vec();
        if !data.len().is_multiple_of(RECORD) {
            let len = data.len();
            crate::pool::give(data);
            return (
                MapSummary {
                    input_bytes: len as u64,
                    ..Default::default()
                },
                MapOutput::Invalid(format!(
                    "sort input must be whole {RECORD}-byte records; this block has {len} bytes ({} left over)",
                    len % RECORD
                )),
            );
        }
        let run = sorted_run(data);
        let n = run.records();
        let k = SAMPLES_PER_MAP.min(n);
        let sample: Vec<Vec<u8>> = (0..k)
            .map(|i| run.record((i * n) / k.max(1)).to_vec())
            .collect();
        (
            MapSummary {
                input_bytes: run.len() as u64,
                records: n as u64,
                output_bytes: run.len() as u64,
                sample: sample.clone(),
            },
            MapOutput::SortedRun { run, sample },
        )
    }
}

/// Sorts `data`'s whole records into a pooled buffer, giving `data`'s
/// buffer back to the pool. The records are copied in their keys' order
/// ([`key_order`]), so from anywhere in the block: each is asked of the
/// cache [`crate::run::AHEAD`] records before it is copied (both of its
/// cache lines), or the copy waits on memory at every record. Records of
/// equal keys come in block order, which is often already the order of
/// their whole lines (records written in sequence): each is checked
/// against the one copied before it, both in the cache, and only a run of
/// equal keys found out of order is sorted by whole records
/// ([`sort_records`]).
fn sorted_run(data: Vec<u8>) -> SortedRun {
    let keys = key_order(&data);
    let mut laid = crate::pool::take(data.len());
    // Runs of equal keys out of order, as record ranges in `laid`.
    let mut unsorted = Vec::new();
    let (mut group, mut in_order) = (0, true);
    for (k, &key) in keys.iter().enumerate() {
        if let Some(&ahead) = keys.get(k + crate::run::AHEAD) {
            let at = ahead as u32 as usize * RECORD;
            crate::run::prefetch(&data, at);
            crate::run::prefetch(&data, at + RECORD - 1);
        }
        let at = key as u32 as usize * RECORD;
        laid.extend_from_slice(&data[at..at + RECORD]);
        if k > 0 && keys[k - 1] >> 32 == key >> 32 {
            let (before, this) = laid[(k - 1) * RECORD..].split_at(RECORD);
            let d = first_difference(before, this, KEY);
            in_order &= d == RECORD || before[d] < this[d];
        } else {
            if !in_order {
                unsorted.push((group, k));
            }
            (group, in_order) = (k, true);
        }
    }
    if !in_order {
        unsorted.push((group, keys.len()));
    }
    crate::pool::give(data);
    for (s, e) in unsorted {
        sort_records(&mut laid[s * RECORD..e * RECORD]);
    }
    SortedRun::new(laid, RunFormat::Records)
}

/// Sorts `recs`, whole records, by their bytes: an order of indices sorted
/// by comparing the records, then the records copied once in it.
fn sort_records(recs: &mut [u8]) {
    let rec = |i: u32| &recs[i as usize * RECORD..(i as usize + 1) * RECORD];
    let mut order: Vec<u32> = (0..(recs.len() / RECORD) as u32).collect();
    order.sort_unstable_by(|&a, &b| rec(a).cmp(rec(b)));
    let mut sorted = Vec::with_capacity(recs.len());
    for &i in &order {
        sorted.extend_from_slice(rec(i));
    }
    recs.copy_from_slice(&sorted);
}

/// A record's 10-byte key read as a big-endian integer above its index
/// in the block: these integers order as the keys' bytes do, and records
/// with equal keys by where they lie in the block (a stable sort's order,
/// from an unstable sort of integers).
#[inline]
fn keyed(rec: &[u8], i: u32) -> u128 {
    let (hi, lo) = prefix(rec);
    ((hi as u128) << 48) | ((lo as u128) << 32) | i as u128
}

/// Distinct values of a two-byte digit.
const BUCKETS: usize = 1 << 16;

/// A bucket of more records than this is split again, by the key bytes
/// after those all its keys share ([`split`]), instead of sorted whole.
const LARGE: usize = 1024;

/// `data`'s records in their keys' order, each as its [`keyed`] integer
/// (its index in the low 32 bits): by the key read as big-endian integers
/// (the same order as its bytes), equal keys in block order (whole records
/// are compared after, by [`sorted_run`]). A most-significant-digit radix sort: one
/// counting pass distributes the records by their first two key bytes
/// (65,536 buckets, in order); a bucket of at most [`LARGE`] records, a
/// few dozen on keys spread over the printable bytes, is sorted by its
/// integer keys ([`keyed`]), and a larger one (keys that share a prefix:
/// names, ids, dates in one form) is distributed again by the bytes after
/// the ones all its keys share, until its pieces are that small.
fn key_order(data: &[u8]) -> Vec<u128> {
    assert!(
        data.len() / RECORD <= u32::MAX as usize,
        "a sort map's block holds at most 2^32 records"
    );
    let bucket = |r: &[u8]| u16::from_be_bytes([r[0], r[1]]) as usize;
    let mut start = vec![0u32; BUCKETS + 1];
    for r in data.chunks_exact(RECORD) {
        start[bucket(r) + 1] += 1;
    }
    for b in 0..BUCKETS {
        start[b + 1] += start[b];
    }
    let mut at = start.clone();
    let mut keys = vec![0u128; start[BUCKETS] as usize];
    for (i, r) in data.chunks_exact(RECORD).enumerate() {
        let b = bucket(r);
        keys[at[b] as usize] = keyed(r, i as u32);
        at[b] += 1;
    }
    let mut large = sort_small_pieces(&mut keys, &start);
    let mut scratch = Vec::new();
    while let Some((s, e)) = large.pop() {
        let pieces = split(&mut keys[s..e], &mut at, &mut scratch);
        large.extend(pieces.into_iter().map(|(a, b)| (s + a, s + b)));
    }
    keys
}

/// Distributes a large bucket's keys by the digit after the bytes all of
/// them share (two bytes while the bucket holds 65,536 records or more,
/// else one: fewer counters to clear and walk), sorts the pieces of at
/// most [`LARGE`] records, and gives back the larger ones' bounds.
/// Every key of a piece shares at least one byte more than the bucket's,
/// so a bucket is split at most ten times deep; keys all equal are left
/// in record order, as they came.
fn split(keys: &mut [u128], count: &mut Vec<u32>, scratch: &mut Vec<u128>) -> Vec<(usize, usize)> {
    let (mut lo, mut hi) = (u128::MAX, 0u128);
    for &k in keys.iter() {
        lo = lo.min(k >> 32);
        hi = hi.max(k >> 32);
    }
    if lo == hi {
        return Vec::new();
    }
    // The keys are the low 80 bits of `lo` and `hi`.
    let shared = ((lo ^ hi).leading_zeros() as usize - 48) / 8;
    let bytes = if keys.len() >= BUCKETS && shared < KEY - 1 {
        2
    } else {
        1
    };
    let shift = 32 + 8 * (KEY - bytes - shared);
    let digits = 1usize << (8 * bytes);
    let digit = |k: u128| ((k >> shift) as usize) & (digits - 1);
    count.clear();
    count.resize(2 * digits + 1, 0);
    let (ends, at) = count.split_at_mut(digits + 1);
    for &k in keys.iter() {
        ends[digit(k) + 1] += 1;
    }
    for d in 0..digits {
        ends[d + 1] += ends[d];
    }
    at.copy_from_slice(&ends[..digits]);
    scratch.clear();
    scratch.resize(keys.len(), 0);
    for &k in keys.iter() {
        let d = digit(k);
        scratch[at[d] as usize] = k;
        at[d] += 1;
    }
    keys.copy_from_slice(scratch);
    sort_small_pieces(keys, ends)
}

/// Sorts each piece of `keys` between successive `ends` that holds at
/// most [`LARGE`] records and gives back the others.
fn sort_small_pieces(keys: &mut [u128], ends: &[u32]) -> Vec<(usize, usize)> {
    let mut larger = Vec::new();
    for w in ends.windows(2) {
        let (s, e) = (w[0] as usize, w[1] as usize);
        if e - s > LARGE {
            larger.push((s, e));
        } else {
            keys[s..e].sort_unstable();
        }
    }
    larger
}

/// R - 1 split records at the quantiles of the merged samples.
pub fn splits(mut sample: Vec<Vec<u8>>, reduces: u32) -> Vec<Vec<u8>> {
    sample.sort_unstable();
    let r = reduces.max(1) as usize;
    if sample.is_empty() {
        return Vec::new();
    }
    (1..r)
        .map(|i| sample[(i * sample.len()) / r].clone())
        .collect()
}

/// A sort reduce: the sorted runs it is given (one per map), merged into
/// its partition. Fetched runs are held in memory up to its [`crate::Spill`]
/// budget; past it, those held are merged into a sorted file on disk and
/// their memory goes back to the pool, as Hadoop's reduce merges its
/// shuffle to disk. The output is one merge of the runs still held, the
/// kept ones (map outputs this worker holds, read where they lie and
/// counted against the map side's budget, not this one) and the files,
/// each file read through a window of [`WINDOW`] bytes. Files beyond
/// [`SPILL_FACTOR`] are first merged into one (Hadoop's
/// `mapreduce.task.io.sort.factor`), so the final merge reads at most that
/// many. Without a budget every run is held.
pub struct SortReduce {
    runs: Vec<Run>,
    /// Bytes of fetched runs held now.
    held: u64,
    /// Input bytes taken, held or spilled.
    taken: u64,
    spill: Option<crate::Spill>,
    /// The sorted files made so far, each with its length.
    files: Vec<(std::fs::File, u64)>,
    /// Bytes written to them, merges of files included.
    spilled: u64,
}

impl SortReduce {
    /// A reduce holding at most `spill`'s budget of fetched runs (with
    /// `None`, all of them).
    pub fn new(spill: Option<crate::Spill>) -> SortReduce {
        SortReduce {
            runs: Vec::new(),
            held: 0,
            taken: 0,
            spill,
            files: Vec::new(),
            spilled: 0,
        }
    }

    /// Sorted files written so far (a test's and a bench's view).
    pub fn spilled_files(&self) -> usize {
        self.files.len()
    }

    /// Merges the fetched runs held into a new sorted file, giving their
    /// buffers back; then, with [`SPILL_FACTOR`] files, merges those into one.
    fn spill_held(&mut self) -> Result<(), String> {
        let Some(spill) = self.spill.clone() else {
            return Ok(());
        };
        let (fetched, kept): (Vec<Run>, Vec<Run>) = std::mem::take(&mut self.runs)
            .into_iter()
            .partition(|r| matches!(r, Run::Fetched(_)));
        self.runs = kept;
        let cursors = fetched.iter().map(|r| Cursor::memory(r.bytes())).collect();
        let written = write_merged(&spill, cursors);
        recycle(fetched);
        let written = written?;
        self.spilled += written.1;
        self.files.push(written);
        self.held = 0;
        if self.files.len() >= SPILL_FACTOR {
            let files = std::mem::take(&mut self.files);
            let cursors = files
                .iter()
                .map(|(f, len)| Cursor::file(f, *len, &*spill.charge))
                .collect();
            let merged = write_merged(&spill, cursors)?;
            self.spilled += merged.1;
            self.files.push(merged);
        }
        Ok(())
    }
}

/// Files a reduce merges at once (see [`SortReduce`]).
pub const SPILL_FACTOR: usize = 32;

/// Bytes of a spill file a merge reads at a time: whole records, about 1 MiB.
pub const WINDOW: usize = (1 << 20) / RECORD * RECORD;

/// Merges `cursors` into a new anonymous file in `spill.dir`; returns it
/// and its length.
fn write_merged(
    spill: &crate::Spill,
    cursors: Vec<Cursor<'_>>,
) -> Result<(std::fs::File, u64), String> {
    use std::io::Write;
    let dir = spill.dir.display();
    let mut file = tempfile::tempfile_in(&spill.dir)
        .map_err(|e| format!("making a spill file in {dir}: {e}"))?;
    let mut len = 0u64;
    let mut failed = None;
    merge(cursors, &mut |piece| {
        (spill.charge)(piece.len() as u64);
        let res = file.write_all(&piece);
        len += piece.len() as u64;
        crate::pool::give(piece);
        match res {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(format!("writing a spill file in {dir}: {e}"));
    }
    Ok((file, len))
}

/// Where a merge stands in one sorted run: its head record is at `at` in
/// the window, a run held in memory (all of it) or a file's bytes read so
/// far.
struct Cursor<'a> {
    src: Source<'a>,
    at: usize,
}

enum Source<'a> {
    Memory(&'a [u8]),
    File {
        file: &'a std::fs::File,
        len: u64,
        /// Where the next window starts in the file.
        next: u64,
        window: Vec<u8>,
        /// Bytes of `window` read.
        filled: usize,
        charge: &'a (dyn Fn(u64) + Send + Sync),
    },
}

impl<'a> Cursor<'a> {
    fn memory(data: &'a [u8]) -> Cursor<'a> {
        Cursor {
            src: Source::Memory(data),
            at: 0,
        }
    }

    /// A cursor at the start of a sorted file of `len` bytes (its first
    /// window is read at the merge's first look).
    fn file(
        file: &'a std::fs::File,
        len: u64,
        charge: &'a (dyn Fn(u64) + Send + Sync),
    ) -> Cursor<'a> {
        Cursor {
            src: Source::File {
                file,
                len,
                next: 0,
                window: Vec::new(),
                filled: 0,
                charge,
            },
            at: 0,
        }
    }

    fn window(&self) -> &[u8] {
        match &self.src {
            Source::Memory(d) => d,
            Source::File { window, filled, .. } => &window[..*filled],
        }
    }

    /// No record left (after [`Cursor::advance`] or [`Cursor::fill`]).
    #[inline]
    fn done(&self) -> bool {
        self.at >= self.window().len()
    }

    /// The head record (not [`Cursor::done`]).
    #[inline]
    fn head(&self) -> &[u8] {
        &self.window()[self.at..self.at + RECORD]
    }

    /// Past the head; reads the file's next window once this one is used.
    #[inline]
    fn advance(&mut self) -> Result<(), String> {
        self.at += RECORD;
        if self.at >= self.window().len() {
            self.fill()?;
        }
        Ok(())
    }

    /// Reads a file's next window if its current one is used up.
    fn fill(&mut self) -> Result<(), String> {
        use std::os::unix::fs::FileExt;
        let Source::File {
            file,
            len,
            next,
            window,
            filled,
            charge,
        } = &mut self.src
        else {
            return Ok(());
        };
        if self.at < *filled || *next >= *len {
            return Ok(());
        }
        let n = (*len - *next).min(WINDOW as u64) as usize;
        if !n.is_multiple_of(RECORD) {
            return Err(format!(
                "a spill file of {len} bytes is not whole {RECORD}-byte records"
            ));
        }
        window.resize(WINDOW, 0);
        charge(n as u64);
        file.read_exact_at(&mut window[..n], *next)
            .map_err(|e| format!("reading back a spill file at byte {next}: {e}"))?;
        *next += n as u64;
        *filled = n;
        self.at = 0;
        Ok(())
    }
}

impl ReduceTask for SortReduce {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String> {
        if !input.len().is_multiple_of(RECORD) {
            return Err(format!(
                "sort reduce input of {} bytes is not whole {RECORD}-byte records",
                input.len()
            ));
        }
        let n = input.len() as u64;
        self.taken += n;
        self.held += n;
        self.runs.push(Run::Fetched(input));
        match &self.spill {
            Some(s) if self.held > s.memory_budget => self.spill_held(),
            _ => Ok(()),
        }
    }

    fn consume_kept(&mut self, input: crate::KeptInput) -> Result<(), String> {
        let MapOutput::SortedRun { run, .. } = &*input.output else {
            return Err("a sort reduce reads sorted runs, not this map output".into());
        };
        if run.format() != RunFormat::Records {
            return Err("a sort reduce reads runs of 100-byte records, not of lines".into());
        }
        if !input.start.is_multiple_of(RECORD)
            || !input.end.is_multiple_of(RECORD)
            || input.start > input.end
            || input.end > run.len()
        {
            return Err(format!(
                "bytes {}..{} of a {}-byte sorted run are not whole {RECORD}-byte records of it",
                input.start,
                input.end,
                run.len()
            ));
        }
        self.taken += input.len() as u64;
        self.runs.push(Run::Kept(input));
        Ok(())
    }

    fn output_len(&self) -> Option<u64> {
        // Every record it took, in order.
        Some(self.taken)
    }

    fn finish_into(
        self: Box<Self>,
        emit: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<ReduceSummary, String> {
        let none: &(dyn Fn(u64) + Send + Sync) = &|_| {};
        let charge = self.spill.as_ref().map_or(none, |s| &*s.charge);
        let cursors = self
            .runs
            .iter()
            .map(|r| Cursor::memory(r.bytes()))
            .chain(
                self.files
                    .iter()
                    .map(|(f, len)| Cursor::file(f, *len, charge)),
            )
            .collect();
        let merged = merge(cursors, emit);
        recycle(self.runs);
        merged?;
        Ok(ReduceSummary {
            input_bytes: self.taken,
            records: self.taken / RECORD as u64,
            output_bytes: self.taken,
            spilled_bytes: self.spilled,
        })
    }
}

/// Records per output piece: whole records, about [`crate::OUTPUT_PIECE`].
const PIECE_RECORDS: usize = crate::OUTPUT_PIECE / RECORD;

/// K-way merge of sorted runs, handed to `emit` in pieces of whole records
/// as they fill; stops when `emit` returns false. A tree of losers with
/// offset-value codes: each stored loser carries where it first differs
/// from the record that beat it and its byte there, so a match is decided
/// by comparing two integers; only records equal up to and including that
/// byte are compared further, from there on. A run's next record is coded
/// against the record it follows (the one just written, still in the
/// cache), so runs of equal keys (few distinct keys, skewed keys) cost no
/// comparison from the start of the line, and uniform keys cost a byte.
/// An error reading a file's run ends the merge with it.
fn merge(mut runs: Vec<Cursor<'_>>, emit: &mut dyn FnMut(Vec<u8>) -> bool) -> Result<(), String> {
    let k = runs.len();
    if k == 0 {
        return Ok(());
    }
    for r in runs.iter_mut() {
        r.fill()?;
    }
    let n = k.next_power_of_two();
    let mut heads = Heads { runs };
    // Every head's code against a record below all: its first byte.
    let codes: Vec<u32> = (0..n)
        .map(|i| {
            if heads.done(i) {
                DONE
            } else {
                code(0, heads.runs[i].head()[0])
            }
        })
        .collect();
    // tree[node] for node in 1..n: the loser of the match played there
    // and its code against the winner.
    let mut tree = vec![(usize::MAX, DONE); n];
    fn play(
        node: usize,
        n: usize,
        heads: &Heads<'_>,
        codes: &[u32],
        tree: &mut [(usize, u32)],
    ) -> (usize, u32) {
        if node >= n {
            return (node - n, codes[node - n]);
        }
        let a = play(2 * node, n, heads, codes, tree);
        let b = play(2 * node + 1, n, heads, codes, tree);
        let (winner, loser) = heads.decide(a, b);
        tree[node] = loser;
        winner
    }
    let (mut winner, _) = play(1, n, &heads, &codes, &mut tree);
    let piece_bytes = PIECE_RECORDS * RECORD;
    let mut out = crate::pool::take(piece_bytes);
    while !heads.done(winner) {
        let run = &mut heads.runs[winner];
        out.extend_from_slice(run.head());
        run.advance()?;
        // The run's next record against the one just written.
        let written = &out[out.len() - RECORD..];
        let mut c = if run.done() {
            DONE
        } else {
            let next = run.head();
            let at = first_difference(written, next, 0);
            if at == RECORD {
                0
            } else {
                code(at, next[at])
            }
        };
        if out.len() == piece_bytes {
            let next = crate::pool::take(piece_bytes);
            if !emit(std::mem::replace(&mut out, next)) {
                return Ok(());
            }
        }
        // Replay the winner's path: each loser there is coded against the
        // record just written, as the new candidate is.
        let mut node = (winner + n) / 2;
        while node >= 1 {
            let (w, l) = heads.decide(tree[node], (winner, c));
            tree[node] = l;
            (winner, c) = w;
            node /= 2;
        }
    }
    if !out.is_empty() {
        emit(out);
    }
    Ok(())
}

/// The code of an exhausted run (and of padding leaves): above every record's.
const DONE: u32 = u32::MAX;

/// The offset-value code of a record that first differs from the record it
/// is coded against at byte `at`, where it has `byte` (greater than the
/// other's there): the later it differs, the smaller the code, then the
/// smaller its byte. An equal record's code is 0.
#[inline]
fn code(at: usize, byte: u8) -> u32 {
    (((RECORD - at) as u32) << 8) | byte as u32
}

/// The first byte at or after `from` where `a` and `b` differ (RECORD if none).
#[inline]
fn first_difference(a: &[u8], b: &[u8], from: usize) -> usize {
    let (a, b) = (&a[..RECORD], &b[..RECORD]);
    let mut at = from;
    while at + 8 <= RECORD {
        let x = u64::from_be_bytes(a[at..at + 8].try_into().expect("8 bytes"));
        let y = u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        if x != y {
            return at + (x ^ y).leading_zeros() as usize / 8;
        }
        at += 8;
    }
    while at < RECORD && a[at] == b[at] {
        at += 1;
    }
    at
}

/// The merge's runs, each at its head.
struct Heads<'a> {
    runs: Vec<Cursor<'a>>,
}

impl Heads<'_> {
    /// Run `i` has no record left (`i` may be a padding leaf, always done).
    #[inline]
    fn done(&self, i: usize) -> bool {
        i >= self.runs.len() || self.runs[i].done()
    }

    /// The match of two heads coded against the same record: (winner,
    /// loser), the loser coded against the winner. Equal codes compare the
    /// records past the byte the codes share; equal records go by run.
    #[inline]
    fn decide(&self, a: (usize, u32), b: (usize, u32)) -> ((usize, u32), (usize, u32)) {
        if a.1 != b.1 {
            return if a.1 < b.1 { (a, b) } else { (b, a) };
        }
        if a.1 == DONE {
            return (a, b);
        }
        let from = if a.1 == 0 {
            RECORD
        } else {
            RECORD - (a.1 >> 8) as usize + 1
        };
        let (ra, rb) = (self.runs[a.0].head(), self.runs[b.0].head());
        let at = first_difference(ra, rb, from);
        if at == RECORD {
            let (w, l) = if a.0 < b.0 { (a, b) } else { (b, a) };
            return (w, (l.0, 0));
        }
        if ra[at] < rb[at] {
            (a, (b.0, code(at, rb[at])))
        } else {
            (b, (a.0, code(at, ra[at])))
        }
    }
}

/// A record's 10-byte key as big-endian integers: comparing these orders
/// records exactly as comparing the key bytes does, without a memcmp call.
#[inline]
fn prefix(rec: &[u8]) -> (u64, u16) {
    (
        u64::from_be_bytes(rec[..8].try_into().expect("8 bytes")),
        u16::from_be_bytes(rec[8..KEY].try_into().expect("2 bytes")),
    )
}

#[cfg(test)]
mod tests;
