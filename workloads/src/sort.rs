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
//! output partition.

use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask};

pub const RECORD: usize = 100;
pub const KEY: usize = 10;
/// Records sampled per map task.
pub const SAMPLES_PER_MAP: usize = 128;

#[derive(Default)]
pub struct SortMap {
    data: Vec<u8>,
}

impl MapTask for SortMap {
    fn expect_input(&mut self, bytes: u64) {
        // A hint: a length beyond any block is not reserved.
        if bytes <= 1 << 32 && self.data.capacity() == 0 {
            self.data = crate::pool::take(bytes as usize);
        }
    }

    fn consume(&mut self, piece: &[u8]) {
        self.data.extend_from_slice(piece);
    }

    fn finish(self: Box<Self>) -> (MapSummary, MapOutput) {
        let data = self.data;
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
        let run = SortedRun::of(data);
        let n = run.records();
        let k = SAMPLES_PER_MAP.min(n);
        let sample: Vec<Vec<u8>> = (0..k)
            .map(|i| run.record((i * n) / k.max(1)).to_vec())
            .collect();
        (
            MapSummary {
                input_bytes: run.data.len() as u64,
                records: n as u64,
                output_bytes: run.data.len() as u64,
                sample: sample.clone(),
            },
            MapOutput::SortedRun { run, sample },
        )
    }
}

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
}

impl SortedRun {
    /// Sorts `data`'s whole records into a pooled buffer, giving `data`'s
    /// buffer back to the pool.
    fn of(data: Vec<u8>) -> SortedRun {
        let order = sorted_order(&data);
        let mut laid = crate::pool::take(data.len());
        for &i in &order {
            let at = i as usize * RECORD;
            laid.extend_from_slice(&data[at..at + RECORD]);
        }
        crate::pool::give(data);
        SortedRun { data: laid }
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

    /// The byte range of the records `lo <= record < hi` (see [`range_by_record`]).
    pub fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
        range_in_run(&self.data, lo, hi)
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

/// The order of `data`'s whole records in LC_ALL=C sort's order: by the
/// key read as big-endian integers (the same order as its bytes), whole
/// records only on equal keys. A key-prefix sort: one counting pass
/// distributes the records by their first two key bytes (65,536 buckets,
/// in order), then each bucket, a few dozen records, is sorted by cached
/// integer keys.
fn sorted_order(data: &[u8]) -> Vec<u32> {
    const BUCKETS: usize = 1 << 16;
    assert!(
        data.len() / RECORD <= u32::MAX as usize,
        "a sort map's block holds at most 2^32 records"
    );
    let bucket = |r: &[u8]| u16::from_be_bytes([r[0], r[1]]) as usize;
    let mut start = vec![0usize; BUCKETS + 1];
    for r in data.chunks_exact(RECORD) {
        start[bucket(r) + 1] += 1;
    }
    for b in 0..BUCKETS {
        start[b + 1] += start[b];
    }
    let n = start[BUCKETS];
    let mut at = start.clone();
    let mut keyed: Vec<((u64, u16), u32)> = vec![((0, 0), 0); n];
    for (i, r) in data.chunks_exact(RECORD).enumerate() {
        let b = bucket(r);
        keyed[at[b]] = (prefix(r), i as u32);
        at[b] += 1;
    }
    let rec = |i: u32| &data[i as usize * RECORD..(i as usize + 1) * RECORD];
    for b in 0..BUCKETS {
        let (s, e) = (start[b], start[b + 1]);
        if e - s < 2 {
            continue;
        }
        // By key, stably: records with equal keys stay in input order,
        // which is often already the order of the rest of their lines
        // (records written in sequence). Each run of equal keys is then
        // checked in one pass over records at increasing offsets, and
        // sorted by the whole line only if it is out of order.
        keyed[s..e].sort_by_key(|(k, _)| *k);
        let mut g = s;
        while g < e {
            let mut h = g + 1;
            while h < e && keyed[h].0 == keyed[g].0 {
                h += 1;
            }
            if h - g > 1 && !keyed[g..h].is_sorted_by(|(_, a), (_, b)| rec(*a) <= rec(*b)) {
                keyed[g..h].sort_unstable_by(|(_, a), (_, b)| rec(*a).cmp(rec(*b)));
            }
            g = h;
        }
    }
    keyed.into_iter().map(|(_, i)| i).collect()
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
    let mut first_at_least = |k: &[u8]| -> Result<u64, E> {
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
    let s = match lo {
        Some(k) => first_at_least(k)?,
        None => 0,
    };
    let e = match hi {
        Some(k) => first_at_least(k)?,
        None => n,
    }
    .max(s);
    Ok((s * RECORD as u64, e * RECORD as u64))
}

#[derive(Default)]
pub struct SortReduce {
    runs: Vec<Run>,
}

/// A sorted run a reduce merges: fetched into a buffer, or a map output
/// kept in this process, read where it lies.
enum Run {
    Fetched(Vec<u8>),
    Kept(crate::KeptInput),
}

/// Records `0..n` of a run in sorted order, end to end: a fetched run, or
/// the range of a kept map output a reduce here takes, read where it lies.
struct View<'a> {
    data: &'a [u8],
    n: usize,
}

impl<'a> View<'a> {
    fn of(run: &'a Run) -> View<'a> {
        let data: &'a [u8] = match run {
            Run::Fetched(v) => v,
            Run::Kept(k) => {
                let MapOutput::SortedRun { run, .. } = &*k.output else {
                    unreachable!("checked by consume_kept")
                };
                &run.bytes()[k.start..k.end]
            }
        };
        View {
            data,
            n: data.len() / RECORD,
        }
    }

    #[inline]
    fn record(&self, i: usize) -> &'a [u8] {
        &self.data[i * RECORD..(i + 1) * RECORD]
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
        self.runs.push(Run::Fetched(input));
        Ok(())
    }

    fn consume_kept(&mut self, input: crate::KeptInput) -> Result<(), String> {
        let MapOutput::SortedRun { run, .. } = &*input.output else {
            return Err("a sort reduce reads sorted runs, not this map output".into());
        };
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
        self.runs.push(Run::Kept(input));
        Ok(())
    }

    fn output_len(&self) -> Option<u64> {
        // Every record it took, in order.
        let len = |r: &Run| match r {
            Run::Fetched(v) => v.len(),
            Run::Kept(k) => k.len(),
        };
        Some(self.runs.iter().map(len).sum::<usize>() as u64)
    }

    fn finish_into(self: Box<Self>, emit: &mut dyn FnMut(Vec<u8>) -> bool) -> ReduceSummary {
        let views: Vec<View<'_>> = self.runs.iter().map(View::of).collect();
        let records: usize = views.iter().map(|v| v.n).sum();
        merge(&views, emit);
        drop(views);
        for r in self.runs {
            if let Run::Fetched(v) = r {
                crate::pool::give(v);
            }
        }
        let bytes = (records * RECORD) as u64;
        ReduceSummary {
            input_bytes: bytes,
            records: records as u64,
            output_bytes: bytes,
        }
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
fn merge(runs: &[View<'_>], emit: &mut dyn FnMut(Vec<u8>) -> bool) {
    let k = runs.len();
    if k == 0 {
        return;
    }
    let n = k.next_power_of_two();
    let mut heads = Heads {
        runs,
        pos: vec![0; k],
    };
    // Every head's code against a record below all: its first byte.
    let codes: Vec<u32> = (0..n)
        .map(|i| {
            if heads.done(i) {
                DONE
            } else {
                code(0, runs[i].record(0)[0])
            }
        })
        .collect();
    // tree[node] for node in 1..n: the loser of the match played there
    // and its code against the winner.
    let mut tree = vec![(usize::MAX, DONE); n];
    fn play(
        node: usize,
        n: usize,
        heads: &Heads<'_, '_>,
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
        let p = heads.pos[winner];
        let run = &heads.runs[winner];
        let written = run.record(p);
        out.extend_from_slice(written);
        if out.len() == piece_bytes {
            let next = crate::pool::take(piece_bytes);
            if !emit(std::mem::replace(&mut out, next)) {
                return;
            }
        }
        heads.pos[winner] = p + 1;
        // The run's next record against the one just written.
        let mut c = if p + 1 < run.n {
            let next = run.record(p + 1);
            let at = first_difference(written, next, 0);
            if at == RECORD {
                0
            } else {
                code(at, next[at])
            }
        } else {
            DONE
        };
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

/// The merge's runs and where each stands (in records).
struct Heads<'r, 'a> {
    runs: &'r [View<'a>],
    pos: Vec<usize>,
}

impl Heads<'_, '_> {
    /// Run `i` has no record left (`i` may be a padding leaf, always done).
    #[inline]
    fn done(&self, i: usize) -> bool {
        i >= self.runs.len() || self.pos[i] >= self.runs[i].n
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
        let (ra, rb) = (
            self.runs[a.0].record(self.pos[a.0]),
            self.runs[b.0].record(self.pos[b.0]),
        );
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
mod tests {
    use super::*;
    use crate::Workload;

    /// A seeded stream of pseudo-random u32s (a 64-bit LCG's high bits).
    fn lcg(seed: u64) -> impl FnMut() -> u32 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u32
        }
    }

    fn rec(key: &str, n: u32) -> Vec<u8> {
        let mut r = format!("{key:<10} {n:016x} ").into_bytes();
        r.resize(RECORD - 1, b'x');
        r.push(b'\n');
        r
    }

    #[test]
    fn map_sorts_samples_and_serves_ranges() {
        let keys = [
            "mmmmmmmmmm",
            "aaaaaaaaaa",
            "zzzzzzzzzz",
            "cccccccccc",
            "mmmmmmmmmm",
        ];
        let data: Vec<u8> = keys
            .iter()
            .enumerate()
            .flat_map(|(i, k)| rec(k, i as u32))
            .collect();
        let mut m = Workload::Sort.map_task(2);
        m.consume(&data[..150]);
        m.consume(&data[150..]);
        let (s, out) = m.finish();
        assert_eq!(s.records, 5);
        let MapOutput::SortedRun { run, sample } = out else {
            panic!("sort maps produce a sorted run")
        };
        let run = run.to_vec();
        assert_eq!(&run[..KEY], b"aaaaaaaaaa");
        assert_eq!(sample.len(), 5);
        let (a, b) = range_in_run(&run, Some(b"cccccccccc"), Some(b"mmmmmmmmmm"));
        assert_eq!((a, b), (RECORD, 2 * RECORD));
        let (a, b) = range_in_run(&run, Some(b"mmmmmmmmmm"), None);
        assert_eq!((a, b), (2 * RECORD, 5 * RECORD));
        assert_eq!(range_in_run(&run, None, Some(b"a")), (0, 0));
    }

    #[test]
    fn reduce_merges_runs_in_line_order() {
        let mut r = Workload::Sort.reduce_task().unwrap();
        let a: Vec<u8> = [rec("b", 1), rec("d", 2)].concat();
        let b: Vec<u8> = [rec("a", 3), rec("b", 0), rec("e", 4)].concat();
        r.consume(a).unwrap();
        r.consume(b).unwrap();
        let (s, out) = r.finish();
        assert_eq!(s.records, 5);
        let keys: Vec<u8> = out.chunks(RECORD).map(|c| c[0]).collect();
        assert_eq!(keys, b"abbde");
        // Equal keys: the whole line decides (record 0 before record 1).
        assert!(out[RECORD..2 * RECORD] < out[2 * RECORD..3 * RECORD]);
    }

    #[test]
    fn merging_fetched_and_kept_runs_equals_a_full_sort() {
        // Many runs with duplicate keys, some empty, every other one kept
        // in memory (a map's sorted run, cut to a range of keys):
        // the merge must neither lose nor reorder records.
        let mut next = lcg(7);
        for trial in 0..30 {
            let mut r = Workload::Sort.reduce_task().unwrap();
            let mut all: Vec<Vec<u8>> = Vec::new();
            // 0-6 runs, then 9-17 (trees of losers over 16 and 32 leaves);
            // the last trial's runs fill several output pieces.
            let runs = if trial < 20 { trial % 7 } else { trial - 11 };
            let per = if trial == 29 { 30_000 } else { 50 };
            for i in 0..runs {
                let run: Vec<Vec<u8>> = (0..(next() % per))
                    .map(|_| rec(&format!("k{:02}", next() % 20), next()))
                    .collect();
                if i % 2 == 0 {
                    let mut sorted = run.clone();
                    sorted.sort();
                    all.extend(sorted.iter().cloned());
                    r.consume(sorted.concat()).unwrap();
                } else {
                    let mut m = Workload::Sort.map_task(1);
                    m.consume(&run.concat());
                    let (_, out) = m.finish();
                    let MapOutput::SortedRun { run: sorted, .. } = &out else {
                        panic!("sort maps make runs")
                    };
                    // Keys k05 <= key < k15 of it.
                    let (lo, hi) = (rec("k05", 0), rec("k15", 0));
                    let (start, end) = sorted.range(Some(&lo[..KEY]), Some(&hi[..KEY]));
                    all.extend(
                        run.iter()
                            .filter(|x| x[..KEY] >= lo[..KEY] && x[..KEY] < hi[..KEY])
                            .cloned(),
                    );
                    let kept = crate::KeptInput {
                        output: std::sync::Arc::new(out),
                        part: 0,
                        start,
                        end,
                    };
                    r.consume_kept(kept).unwrap();
                }
            }
            all.sort();
            assert_eq!(r.output_len(), Some((all.len() * RECORD) as u64));
            let mut pieces = 0;
            let mut out = Vec::new();
            let s = r.finish_into(&mut |p| {
                assert!(p.len().is_multiple_of(RECORD) && !p.is_empty());
                pieces += 1;
                out.extend_from_slice(&p);
                true
            });
            assert_eq!(s.records as usize, all.len());
            assert_eq!(out, all.concat(), "trial {trial}");
            assert_eq!(
                pieces,
                (out.len()).div_ceil(PIECE_RECORDS * RECORD),
                "trial {trial}"
            );
            if trial == 29 {
                assert!(pieces >= 3, "{pieces} pieces");
            }
        }
    }

    #[test]
    fn the_coded_merge_orders_records_differing_anywhere_and_duplicates() {
        // Records of two byte values differing at a random few of their
        // 100 bytes (first difference anywhere, often late), with exact
        // duplicates within and across runs: every tie the codes leave
        // is compared further, from the byte the codes share.
        let mut next = lcg(19);
        for trial in 0..200 {
            let runs = 1 + (next() % 12) as usize;
            let mut all = Vec::new();
            let mut r = Workload::Sort.reduce_task().unwrap();
            for _ in 0..runs {
                let mut run: Vec<Vec<u8>> = (0..next() % 40)
                    .map(|_| {
                        let mut x = vec![b'a'; RECORD];
                        for _ in 0..next() % 3 {
                            x[(next() as usize) % RECORD] = b'b';
                        }
                        x
                    })
                    .collect();
                run.sort();
                all.extend(run.iter().cloned());
                r.consume(run.concat()).unwrap();
            }
            all.sort();
            let (_, out) = r.finish();
            assert_eq!(out, all.concat(), "trial {trial}");
        }
        assert_eq!(first_difference(&[7; RECORD], &[7; RECORD], 0), RECORD);
        let mut late = [7; RECORD];
        late[RECORD - 1] = 8;
        assert_eq!(first_difference(&[7; RECORD], &late, 3), RECORD - 1);
    }

    #[test]
    fn a_merge_stops_when_its_output_is_refused_and_kept_input_is_checked() {
        let mut r = Workload::Sort.reduce_task().unwrap();
        let run: Vec<u8> = (0..3 * PIECE_RECORDS as u32)
            .flat_map(|i| rec(&format!("{i:09}"), i))
            .collect();
        r.consume(run).unwrap();
        let mut calls = 0;
        r.finish_into(&mut |_| {
            calls += 1;
            false
        });
        assert_eq!(calls, 1);
        // A kept range that cuts a record, and a partition, are refused.
        let mut m = Workload::Sort.map_task(1);
        m.consume(&[rec("a", 0), rec("b", 1)].concat());
        let out = std::sync::Arc::new(m.finish().1);
        let mut r = Workload::Sort.reduce_task().unwrap();
        let cut = crate::KeptInput {
            output: out.clone(),
            part: 0,
            start: 0,
            end: 150,
        };
        assert!(r.consume_kept(cut).unwrap_err().contains("0..150"));
        let parts = crate::KeptInput {
            output: std::sync::Arc::new(MapOutput::Partitions(vec![vec![0; 100]])),
            part: 0,
            start: 0,
            end: 100,
        };
        assert!(r.consume_kept(parts).unwrap_err().contains("sorted runs"));
    }

    #[test]
    fn the_key_prefix_sort_equals_a_comparison_sort() {
        // Keys sharing their first two bytes (one bucket), equal keys with
        // different records, and keys that differ only past byte 8.
        let mut next = lcg(11);
        let mut data = Vec::new();
        for i in 0..3000u32 {
            let key = match i % 3 {
                0 => format!("ab{:08}", next() % 50),
                1 => format!("{:010}", next() % 1000),
                _ => format!("zzzzzzzzz{}", next() % 3),
            };
            data.extend(rec(&key, next() % 7));
        }
        let mut want: Vec<&[u8]> = data.chunks_exact(RECORD).collect();
        want.sort_unstable();
        let run = SortedRun::of(data.clone());
        let got: Vec<&[u8]> = (0..run.records()).map(|i| run.record(i)).collect();
        assert_eq!(got, want);
        // Written out: the same records, laid end to end.
        let laid = want.concat();
        assert_eq!(run.to_vec(), laid);
        let mut written = Vec::new();
        run.write_to(&mut written).unwrap();
        assert_eq!(written, laid);
        // Read at any offset, across records.
        for (at, n) in [(0, 1), (99, 2), (150, 1000), (laid.len() - 7, 7), (5, 0)] {
            let mut buf = vec![0; n];
            run.read_at(at, &mut buf);
            assert_eq!(buf, laid[at..at + n], "{at}+{n}");
        }
        // A range by key prefixes: exactly the records within the bounds.
        let (lo, hi): (&[u8], &[u8]) = (b"1", b"ab00000025");
        let (s, e) = run.range(Some(lo), Some(hi));
        let inside: Vec<&[u8]> = want
            .iter()
            .copied()
            .filter(|r| *r >= lo && *r < hi)
            .collect();
        assert_eq!(laid[s..e], inside.concat()[..]);
        assert_eq!(run.range(None, None), (0, laid.len()));
        assert!(sorted_order(&[]).is_empty());
    }

    #[test]
    fn partial_records_are_errors() {
        let mut m = Workload::Sort.map_task(1);
        m.consume(&[b'a'; 150]);
        let (_, out) = m.finish();
        assert!(matches!(out, MapOutput::Invalid(e) if e.contains("50 left over")));
        let mut r = Workload::Sort.reduce_task().unwrap();
        assert!(r.consume(vec![b'a'; 99]).is_err());
    }

    #[test]
    fn equal_keys_are_divided_evenly_and_the_partitions_stay_sorted() {
        // Eight maps over 2 distinct keys, one of them 90% of the records:
        // split on keys, one reduce would take at least 90%. Split on the
        // sampled whole records, each of 4 reduces takes a quarter, within
        // 10%, and the partitions laid end to end are the whole sort.
        let mut next = lcg(3);
        let mut runs = Vec::new();
        let mut samples = Vec::new();
        let mut all = Vec::new();
        for _ in 0..8 {
            let recs: Vec<Vec<u8>> = (0..5000)
                .map(|_| {
                    let key = if next().is_multiple_of(10) {
                        "rare"
                    } else {
                        "heavy"
                    };
                    rec(key, next())
                })
                .collect();
            all.extend(recs.iter().cloned());
            let mut m = Workload::Sort.map_task(4);
            m.consume(&recs.concat());
            let (_, out) = m.finish();
            let MapOutput::SortedRun { run, sample } = out else {
                panic!("sort maps make runs")
            };
            assert!(
                sample.iter().all(|s| s.len() == RECORD),
                "whole records sampled"
            );
            samples.extend(sample);
            runs.push(run.to_vec());
        }
        let cut = splits(samples, 4);
        assert_eq!(cut.len(), 3);
        let bound = |r: usize| -> (Option<&[u8]>, Option<&[u8]>) {
            (
                (r > 0).then(|| cut[r - 1].as_slice()),
                cut.get(r).map(|c| c.as_slice()),
            )
        };
        let mut laid = Vec::new();
        let mut sizes = Vec::new();
        for r in 0..4 {
            let (lo, hi) = bound(r);
            let mut part: Vec<&[u8]> = Vec::new();
            for run in &runs {
                let (s, e) = range_in_run(run, lo, hi);
                part.extend(run[s..e].chunks_exact(RECORD));
            }
            part.sort_unstable();
            sizes.push(part.len());
            laid.extend(part.concat());
        }
        all.sort();
        assert_eq!(laid, all.concat(), "partition order is the sort's order");
        let share = all.len() as f64 / 4.0;
        for s in &sizes {
            assert!((*s as f64 - share).abs() <= 0.1 * share, "{sizes:?}");
        }
    }

    #[test]
    fn splits_at_quantiles() {
        let s: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i]).collect();
        assert_eq!(splits(s, 4), vec![vec![25], vec![50], vec![75]]);
        assert!(splits(vec![vec![1]], 1).is_empty());
    }
}
