//! `make bench`, the map and reduce functions alone, one process:
//! - the wordcount map function over the demo's generated text, with its
//!   combiner hashing by FxHash (what the workers run) and by the standard
//!   library's SipHash, side by side;
//! - the sort reduce's merge of 16 sorted runs (a tree of losers, what the
//!   workers run) against a binary heap merging the same runs, and the sort
//!   map against a comparison sort of whole records.
//!
//! Prints MB/s of each and their ratios; the other sections of `make bench`
//! measure whole jobs.

use std::time::Instant;
use workloads::wordcount::WordcountMap;
use workloads::{MapOutput, MapTask};

/// Feeds `data` to `task` in 1 MiB pieces (what the block store hands a
/// map) and finishes it; seconds taken and the words counted.
fn run(mut task: Box<dyn MapTask>, data: &[u8]) -> (f64, u64) {
    let t0 = Instant::now();
    for piece in data.chunks(1 << 20) {
        task.consume(piece);
    }
    let (summary, out) = task.finish();
    let secs = t0.elapsed().as_secs_f64();
    assert!(matches!(out, MapOutput::Partitions(_)));
    (secs, summary.records)
}

/// The merge the reduce ran before the tree of losers: a binary heap of
/// (key, record, run, offset), kept here as the measured baseline.
fn heap_merge(runs: &[Vec<u8>]) -> Vec<u8> {
    use std::cmp::Reverse;
    use workloads::sort::{KEY, RECORD};
    let key = |r: &[u8]| -> [u8; KEY] { r[..KEY].try_into().unwrap() };
    let mut out = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    /// The next record of run i at offset off, by its key.
    type Head<'a> = Reverse<([u8; KEY], &'a [u8], usize, usize)>;
    let mut heap: std::collections::BinaryHeap<Head<'_>> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.is_empty())
        .map(|(i, r)| Reverse((key(r), &r[..RECORD], i, 0)))
        .collect();
    while let Some(Reverse((_, rec, i, off))) = heap.pop() {
        out.extend_from_slice(rec);
        let next = off + RECORD;
        if next < runs[i].len() {
            let r = &runs[i][next..next + RECORD];
            heap.push(Reverse((key(r), r, i, next)));
        }
    }
    out
}

/// Sort map and reduce against their baselines (single-threaded each side).
fn sort_section() {
    use workloads::sort::RECORD;
    use workloads::Workload;
    let best = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    // 16 runs of 8 MiB, sorted by the sort map itself (16 maps' ranges).
    let runs: Vec<Vec<u8>> = (0..16)
        .map(|i| {
            let mut m = Workload::Sort.map_task(1);
            m.consume(&ctl::ops::loader::generate_records(2, i, 8 << 20));
            match m.finish().1 {
                workloads::MapOutput::SortedRun { run, .. } => run.to_vec(),
                _ => panic!("a sort map leaves a sorted run"),
            }
        })
        .collect();
    let bytes: usize = runs.iter().map(Vec::len).sum();
    let mb = bytes as f64 / 1e6;
    let (mut tree, mut heap) = (Vec::new(), Vec::new());
    let reduce = || {
        let mut r = Workload::Sort.reduce_task().unwrap();
        for run in &runs {
            r.consume(run.clone()).unwrap();
        }
        r
    };
    // Once gathered, to check the bytes; then timed as a job runs it: the
    // pieces handed on as they fill, and back to the pool once used.
    let (_, gathered) = reduce().finish().unwrap();
    assert!(
        gathered == heap_merge(&runs),
        "both merges give the same bytes"
    );
    drop(gathered);
    for _ in 0..5 {
        let r = reduce();
        let t = Instant::now();
        r.finish_into(&mut |piece| {
            workloads::pool::give(std::hint::black_box(piece));
            true
        })
        .unwrap();
        tree.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::hint::black_box(heap_merge(&runs));
        heap.push(t.elapsed().as_secs_f64());
    }
    let (t, h) = (mb / best(&tree), mb / best(&heap));
    println!(
        "sort reduce. merge of 16 sorted runs, {mb:.0} MB: tree of losers, output in 4 MiB pieces {t:.0} MB/s, binary heap into one buffer {h:.0} MB/s (1 thread each); ratio {:.2}",
        t / h
    );
    let block = ctl::ops::loader::generate_records(3, 0, 64 << 20);
    let mb = block.len() as f64 / 1e6;
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let mut m = Workload::Sort.map_task(4);
        let t = Instant::now();
        for piece in block.chunks(1 << 20) {
            m.consume(piece);
        }
        let (_, out) = m.finish();
        let workloads::MapOutput::SortedRun { run, .. } = out else {
            panic!("a sort map leaves a sorted run")
        };
        // Laid out in memory, as the comparison sort's records are.
        let run = run.to_vec();
        ours.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut recs: Vec<&[u8]> = block.chunks(RECORD).collect();
        recs.sort_unstable();
        let whole = recs.concat();
        plain.push(t.elapsed().as_secs_f64());
        assert!(run == whole, "both sorts give the same bytes");
    }
    let (o, p) = (mb / best(&ours), mb / best(&plain));
    println!(
        "sort map. {mb:.0} MB block: the map (sorted run and samples) {o:.0} MB/s, a comparison sort of whole records {p:.0} MB/s; ratio {:.2}",
        o / p
    );
}

fn main() {
    sort_section();
    // 8 blocks of 8 MiB of the demo's text (74,585-word vocabulary, Zipf).
    let data: Vec<u8> = (0..8)
        .flat_map(|i| ctl::ops::loader::generate_text(1, i, 8 << 20))
        .collect();
    let mb = data.len() as f64 / 1e6;
    let mut fx = Vec::new();
    let mut sip = Vec::new();
    // Interleaved, best of 5 each: the machine is shared and noisy.
    for _ in 0..5 {
        let (s, w1) = run(Box::new(WordcountMap::new(4)), &data);
        fx.push(s);
        let (s, w2) = run(
            Box::new(WordcountMap::with_hasher(
                4,
                std::collections::hash_map::RandomState::new(),
            )),
            &data,
        );
        sip.push(s);
        assert_eq!(w1, w2, "both count the same words");
    }
    let best = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    let (f, s) = (mb / best(&fx), mb / best(&sip));
    println!(
        "map. wordcount map over {mb:.0} MB of demo text, one core: FxHash {f:.0} MB/s, SipHash {s:.0} MB/s; ratio {:.2} (FxHash / SipHash)",
        f / s
    );
}
