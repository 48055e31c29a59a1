//! sort: TeraSort-style sort of 100-byte records with 10-byte keys (the
//! loader's `records` generator). Output, read in partition order, equals
//! `LC_ALL=C sort` of the input byte for byte: records are compared as whole
//! lines, byte by byte.
//!
//! Map: checks that its block is whole records, sorts them, and samples keys
//! at evenly spaced ranks of its sorted run. The master merges every map's
//! sample and picks R - 1 split keys at the quantiles (a range partitioner
//! from sampled keys); reducer r takes the records with
//! split[r-1] <= key < split[r], which each mapper serves from its sorted run
//! by binary search ([`range_by_key`]).
//! Reduce: merges the sorted ranges it fetched (one per mapper) into its
//! output partition.

use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask};

pub const RECORD: usize = 100;
pub const KEY: usize = 10;
/// Keys sampled per map task.
pub const SAMPLES_PER_MAP: usize = 64;

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
        let order = sorted_order(&data);
        let run = SortedRun { data, order };
        let n = run.order.len();
        let k = SAMPLES_PER_MAP.min(n);
        let sample: Vec<Vec<u8>> = (0..k)
            .map(|i| run.record((i * n) / k.max(1))[..KEY].to_vec())
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

/// A map's records in sorted order, not yet laid out: the input block as
/// read and the order of its records. Written once, straight from the
/// block, in the form the reduces fetch ([`SortedRun::write_to`]): no
/// sorted copy of the block is built in memory.
pub struct SortedRun {
    data: Vec<u8>,
    order: Vec<u32>,
}

impl SortedRun {
    /// The run's size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The `i`-th record in sorted order.
    pub fn record(&self, i: usize) -> &[u8] {
        let at = self.order[i] as usize * RECORD;
        &self.data[at..at + RECORD]
    }

    /// Writes the records in sorted order, gathered through a buffer that
    /// stays in the cache.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        const BUF: usize = 2621 * RECORD; // 256 KiB
        let mut buf = Vec::with_capacity(BUF);
        for &i in &self.order {
            let at = i as usize * RECORD;
            buf.extend_from_slice(&self.data[at..at + RECORD]);
            if buf.len() == BUF {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
        w.write_all(&buf)
    }

    /// Fills `buf` with the laid-out run's bytes from byte `at` on (any
    /// offset; `at + buf.len()` at most [`SortedRun::len`]).
    pub fn read_at(&self, at: usize, buf: &mut [u8]) {
        assert!(at + buf.len() <= self.len(), "read past the run's end");
        let (mut i, mut off, mut w) = (at / RECORD, at % RECORD, 0);
        while w < buf.len() {
            let r = self.record(i);
            let n = (RECORD - off).min(buf.len() - w);
            buf[w..w + n].copy_from_slice(&r[off..off + n]);
            (w, off, i) = (w + n, 0, i + 1);
        }
    }

    /// The byte range of the records `lo <= key < hi` (see [`range_by_key`]).
    pub fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
        let key = |i: u64| -> Result<[u8; KEY], std::convert::Infallible> {
            Ok(self.record(i as usize)[..KEY]
                .try_into()
                .expect("KEY bytes"))
        };
        let Ok((s, e)) = range_by_key(self.order.len() as u64, key, lo, hi);
        (s as usize, e as usize)
    }

    /// The run laid out in memory.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        self.write_to(&mut v).expect("writing to memory");
        v
    }

    /// The input block's buffer, to reuse (see [`crate::pool`]).
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
        if e - s > 1 {
            keyed[s..e]
                .sort_unstable_by(|(ka, a), (kb, b)| ka.cmp(kb).then_with(|| rec(*a).cmp(rec(*b))));
        }
    }
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// R - 1 split keys at the quantiles of the merged samples.
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
/// `lo <= key < hi` (`None` = unbounded). `run` is whole sorted records.
pub fn range_in_run(run: &[u8], lo: Option<&[u8]>, hi: Option<&[u8]>) -> (usize, usize) {
    let n = (run.len() / RECORD) as u64;
    let key = |i: u64| -> Result<[u8; KEY], std::convert::Infallible> {
        let at = i as usize * RECORD;
        Ok(run[at..at + KEY].try_into().expect("KEY bytes"))
    };
    let Ok((s, e)) = range_by_key(n, key, lo, hi);
    (s as usize, e as usize)
}

/// The byte range of records `lo <= key < hi` among `n` sorted records,
/// record i's key read by `key(i)` (from memory, or from a stored run by
/// whoever stores it: only the keys the binary search visits are read).
pub fn range_by_key<E>(
    n: u64,
    mut key: impl FnMut(u64) -> Result<[u8; KEY], E>,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<(u64, u64), E> {
    let mut first_at_least = |k: &[u8]| -> Result<u64, E> {
        let (mut a, mut b) = (0u64, n);
        while a < b {
            let m = (a + b) / 2;
            if key(m)?.as_slice() < k {
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
    runs: Vec<Vec<u8>>,
}

impl ReduceTask for SortReduce {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String> {
        if !input.len().is_multiple_of(RECORD) {
            return Err(format!(
                "sort reduce input of {} bytes is not whole {RECORD}-byte records",
                input.len()
            ));
        }
        self.runs.push(input);
        Ok(())
    }

    fn finish(self: Box<Self>) -> (ReduceSummary, Vec<u8>) {
        let input: usize = self.runs.iter().map(Vec::len).sum();
        let runs: Vec<&[u8]> = self.runs.iter().map(Vec::as_slice).collect();
        let mut out = crate::pool::take(input);
        out.resize(input, 0);
        // Two threads: cut every run at the same record (the longest run's
        // median; equal records go to the upper half) and merge the halves.
        let pivot: Option<&[u8]> = runs
            .iter()
            .max_by_key(|r| r.len())
            .filter(|r| r.len() >= 2 * RECORD)
            .map(|r| &r[(r.len() / RECORD / 2) * RECORD..][..RECORD]);
        match pivot {
            Some(p) => {
                let cut = |r: &[u8]| -> usize {
                    let (mut a, mut b) = (0, r.len() / RECORD);
                    while a < b {
                        let m = (a + b) / 2;
                        if &r[m * RECORD..(m + 1) * RECORD] < p {
                            a = m + 1;
                        } else {
                            b = m;
                        }
                    }
                    a * RECORD
                };
                let cuts: Vec<usize> = runs.iter().map(|r| cut(r)).collect();
                let lo: Vec<&[u8]> = runs.iter().zip(&cuts).map(|(r, &c)| &r[..c]).collect();
                let hi: Vec<&[u8]> = runs.iter().zip(&cuts).map(|(r, &c)| &r[c..]).collect();
                let (a, b) = out.split_at_mut(cuts.iter().sum());
                std::thread::scope(|s| {
                    s.spawn(|| merge(&lo, a));
                    merge(&hi, b);
                });
            }
            None => merge(&runs, &mut out),
        }
        for r in self.runs {
            crate::pool::give(r);
        }
        (
            ReduceSummary {
                input_bytes: input as u64,
                records: (out.len() / RECORD) as u64,
                output_bytes: out.len() as u64,
            },
            out,
        )
    }
}

/// K-way merge of sorted runs of whole records into `out` (exactly their
/// size), with a tree of losers: each record costs log2(k) comparisons of
/// cached integer keys on the path from its run's leaf to the root, and
/// none of the heap's sifting down and up.
fn merge(runs: &[&[u8]], out: &mut [u8]) {
    let k = runs.len();
    if k == 0 {
        return;
    }
    let n = k.next_power_of_two();
    let mut heads = Heads {
        runs,
        pos: vec![0; k],
        keys: runs
            .iter()
            .map(|r| if r.is_empty() { (0, 0) } else { prefix(r) })
            .collect(),
    };
    // tree[node] for node in 1..n: the loser of the match played there.
    let mut tree = vec![usize::MAX; n];
    fn play(node: usize, n: usize, heads: &Heads<'_>, tree: &mut [usize]) -> usize {
        if node >= n {
            return node - n;
        }
        let a = play(2 * node, n, heads, tree);
        let b = play(2 * node + 1, n, heads, tree);
        if heads.less(b, a) {
            tree[node] = a;
            b
        } else {
            tree[node] = b;
            a
        }
    }
    let mut winner = play(1, n, &heads, &mut tree);
    let mut at = 0;
    while !heads.done(winner) {
        let p = heads.pos[winner];
        let run = heads.runs[winner];
        out[at..at + RECORD].copy_from_slice(&run[p..p + RECORD]);
        at += RECORD;
        heads.pos[winner] = p + RECORD;
        if p + RECORD < run.len() {
            heads.keys[winner] = prefix(&run[p + RECORD..]);
        }
        // Replay the winner's path: it meets the losers stored there.
        let mut node = (winner + n) / 2;
        while node >= 1 {
            if heads.less(tree[node], winner) {
                std::mem::swap(&mut tree[node], &mut winner);
            }
            node /= 2;
        }
    }
    debug_assert_eq!(at, out.len());
}

/// The merge's runs, where each stands, and the key of its next record.
struct Heads<'a> {
    runs: &'a [&'a [u8]],
    pos: Vec<usize>,
    keys: Vec<(u64, u16)>,
}

impl Heads<'_> {
    /// Run `i` has no record left (`i` may be a padding leaf, always done).
    #[inline]
    fn done(&self, i: usize) -> bool {
        i >= self.runs.len() || self.pos[i] >= self.runs[i].len()
    }

    /// Run `a`'s next record sorts before run `b`'s (a done run never
    /// does): the cached key first, the whole record on equal keys.
    #[inline]
    fn less(&self, a: usize, b: usize) -> bool {
        match (self.done(a), self.done(b)) {
            (true, _) => false,
            (false, true) => true,
            (false, false) => {
                let (ka, kb) = (self.keys[a], self.keys[b]);
                if ka != kb {
                    return ka < kb;
                }
                let ra = &self.runs[a][self.pos[a]..self.pos[a] + RECORD];
                let rb = &self.runs[b][self.pos[b]..self.pos[b] + RECORD];
                (ra, a) < (rb, b)
            }
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
    fn two_thread_merge_equals_a_full_sort() {
        // Many runs with duplicate keys, some empty: the split at a pivot
        // must neither lose nor reorder records.
        let mut next = lcg(7);
        for trial in 0..29 {
            let mut r = Workload::Sort.reduce_task().unwrap();
            let mut all: Vec<Vec<u8>> = Vec::new();
            // 0-6 runs, then 9-17 (trees of losers over 16 and 32 leaves).
            let runs = if trial < 20 { trial % 7 } else { trial - 11 };
            for _ in 0..runs {
                let mut run: Vec<Vec<u8>> = (0..(next() % 50))
                    .map(|_| rec(&format!("k{:02}", next() % 20), next()))
                    .collect();
                run.sort();
                all.extend(run.iter().cloned());
                r.consume(run.concat()).unwrap();
            }
            all.sort();
            let (s, out) = r.finish();
            assert_eq!(s.records as usize, all.len());
            assert_eq!(out, all.concat(), "trial {trial}");
        }
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
        let order = sorted_order(&data);
        let run = SortedRun {
            data: data.clone(),
            order,
        };
        let got: Vec<&[u8]> = (0..run.order.len()).map(|i| run.record(i)).collect();
        assert_eq!(got, want);
        // Written out: the same records, laid end to end, across buffers.
        let laid = want.concat();
        assert_eq!(run.to_vec(), laid);
        // Read at any offset, across records.
        for (at, n) in [(0, 1), (99, 2), (150, 1000), (laid.len() - 7, 7), (5, 0)] {
            let mut buf = vec![0; n];
            run.read_at(at, &mut buf);
            assert_eq!(buf, laid[at..at + n], "{at}+{n}");
        }
        let (lo, hi): (&[u8], &[u8]) = (b"1", b"ab00000025");
        assert_eq!(
            run.range(Some(lo), Some(hi)),
            range_in_run(&laid, Some(lo), Some(hi))
        );
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
    fn splits_at_quantiles() {
        let s: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i]).collect();
        assert_eq!(splits(s, 4), vec![vec![25], vec![50], vec![75]]);
        assert!(splits(vec![vec![1]], 1).is_empty());
    }
}
