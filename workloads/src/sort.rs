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
        let mut recs: Vec<&[u8]> = data.chunks_exact(RECORD).collect();
        recs.sort_unstable();
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
    fn consume(&mut self, input: &[u8]) -> Result<(), String> {
        if !input.len().is_multiple_of(RECORD) {
            return Err(format!(
                "sort reduce input of {} bytes is not whole {RECORD}-byte records",
                input.len()
            ));
        }
        self.runs.push(input.to_vec());
        Ok(())
    }

    fn finish(self: Box<Self>) -> (ReduceSummary, Vec<u8>) {
        let input: usize = self.runs.iter().map(Vec::len).sum();
        // K-way merge of sorted runs.
        let mut heads: std::collections::BinaryHeap<std::cmp::Reverse<(&[u8], usize, usize)>> =
            self.runs
                .iter()
                .enumerate()
                .filter(|(_, r)| !r.is_empty())
                .map(|(i, r)| std::cmp::Reverse((&r[..RECORD], i, 0)))
                .collect();
        let mut out = Vec::with_capacity(input);
        while let Some(std::cmp::Reverse((rec, i, off))) = heads.pop() {
            out.extend_from_slice(rec);
            let next = off + RECORD;
            if next < self.runs[i].len() {
                heads.push(std::cmp::Reverse((
                    &self.runs[i][next..next + RECORD],
                    i,
                    next,
                )));
            }
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
        r.consume(&a).unwrap();
        r.consume(&b).unwrap();
        let (s, out) = r.finish();
        assert_eq!(s.records, 5);
        let keys: Vec<u8> = out.chunks(RECORD).map(|c| c[0]).collect();
        assert_eq!(keys, b"abbde");
        // Equal keys: the whole line decides (record 0 before record 1).
        assert!(out[RECORD..2 * RECORD] < out[2 * RECORD..3 * RECORD]);
    }

    #[test]
    fn partial_records_are_errors() {
        let mut m = Workload::Sort.map_task(1);
        m.consume(&[b'a'; 150]);
        let (_, out) = m.finish();
        assert!(matches!(out, MapOutput::Invalid(e) if e.contains("50 left over")));
        let mut r = Workload::Sort.reduce_task().unwrap();
        assert!(r.consume(&[b'a'; 99]).is_err());
    }

    #[test]
    fn splits_at_quantiles() {
        let s: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i]).collect();
        assert_eq!(splits(s, 4), vec![vec![25], vec![50], vec![75]]);
        assert!(splits(vec![vec![1]], 1).is_empty());
    }
}
