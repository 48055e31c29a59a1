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
//! by binary search ([`range_in_run`]).
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
    fn consume(&mut self, piece: &[u8]) {
        self.data.extend_from_slice(piece);
    }

    fn finish(self: Box<Self>) -> (MapSummary, MapOutput) {
        let data = self.data;
        if !data.len().is_multiple_of(RECORD) {
            return (
                MapSummary {
                    input_bytes: data.len() as u64,
                    ..Default::default()
                },
                MapOutput::Invalid(format!(
                    "sort input must be whole {RECORD}-byte records; this block has {} bytes ({} left over)",
                    data.len(),
                    data.len() % RECORD
                )),
            );
        }
        // Sort by the key read as big-endian integers (the same order as its
        // bytes), whole records only on equal keys: LC_ALL=C sort's order.
        let mut recs: Vec<((u64, u16), &[u8])> =
            data.chunks_exact(RECORD).map(|r| (prefix(r), r)).collect();
        recs.sort_unstable();
        let recs: Vec<&[u8]> = recs.into_iter().map(|(_, r)| r).collect();
        let n = recs.len();
        let k = SAMPLES_PER_MAP.min(n);
        let sample: Vec<Vec<u8>> = (0..k)
            .map(|i| recs[(i * n) / k.max(1)][..KEY].to_vec())
            .collect();
        let mut run = Vec::with_capacity(data.len());
        for r in &recs {
            run.extend_from_slice(r);
        }
        (
            MapSummary {
                input_bytes: data.len() as u64,
                records: n as u64,
                output_bytes: run.len() as u64,
                sample: sample.clone(),
            },
            MapOutput::SortedRun { run, sample },
        )
    }
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
    let n = run.len() / RECORD;
    let key = |i: usize| &run[i * RECORD..i * RECORD + KEY];
    let first_at_least = |k: &[u8]| {
        let (mut a, mut b) = (0, n);
        while a < b {
            let m = (a + b) / 2;
            if key(m) < k {
                a = m + 1;
            } else {
                b = m;
            }
        }
        a
    };
    let s = lo.map_or(0, first_at_least);
    let e = hi.map_or(n, first_at_least).max(s);
    (s * RECORD, e * RECORD)
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
        let mut out = vec![0u8; input];
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

/// K-way merge of sorted runs of whole records into `out` (exactly their size).
fn merge(runs: &[&[u8]], out: &mut [u8]) {
    use std::cmp::Reverse;
    type Head<'a> = Reverse<((u64, u16), &'a [u8], usize, usize)>;
    let mut heads: std::collections::BinaryHeap<Head<'_>> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.is_empty())
        .map(|(i, r)| Reverse((prefix(r), &r[..RECORD], i, 0)))
        .collect();
    let mut at = 0;
    while let Some(Reverse((_, rec, i, off))) = heads.pop() {
        out[at..at + RECORD].copy_from_slice(rec);
        at += RECORD;
        let next = off + RECORD;
        if next < runs[i].len() {
            let r = &runs[i][next..next + RECORD];
            heads.push(Reverse((prefix(r), r, i, next)));
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
        let mut x: u64 = 7;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u32
        };
        for trial in 0..20 {
            let mut r = Workload::Sort.reduce_task().unwrap();
            let mut all: Vec<Vec<u8>> = Vec::new();
            for _ in 0..(trial % 7) {
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
