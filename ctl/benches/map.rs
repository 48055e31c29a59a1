//! `make bench`, the map and reduce functions alone, one process:
//! - the wordcount map (what the workers run: an arena word counter) on
//!   three texts, beside the map before it (a `HashMap<Vec<u8>, u64>`
//!   combiner) and a reference written here (the simplest fast count:
//!   `HashMap<&[u8], u64>` borrowing the words, FxHash);
//! - the sort reduce's merge of 16 sorted runs (a tree of losers, what the
//!   workers run) against a binary heap merging the same runs, and the sort
//!   map against a comparison sort of whole records;
//! - sort-lines' merge and map the same way, on text lines of any length.
//!
//! Prints MB/s of each and their ratios; the other sections of `make bench`
//! measure whole jobs.

use common::bench::record;
use std::time::Instant;

#[allow(dead_code)]
#[path = "../tests/support/lines.rs"]
mod gensort;
#[path = "map/lines.rs"]
mod lines;
#[path = "shared/repo_docs.rs"]
mod repo_docs;
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

/// The fastest of several timings, in seconds.
fn best(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::INFINITY, f64::min)
}

/// Sort map and reduce against their baselines (single-threaded each side).
fn sort_section() {
    use workloads::Workload;
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
    let what = format!("sort reduce's merge of 16 sorted runs, {mb:.0} MB, one thread");
    record(
        "map.merge.mbps",
        &format!("{what}: tree of losers in 4 MiB pieces, MB/s"),
        t,
        "MB/s",
        "",
    );
    record(
        "map.merge.heap_mbps",
        &format!("{what}: binary heap into one buffer, MB/s"),
        h,
        "MB/s",
        "",
    );
    record(
        "map.merge.ratio",
        &format!("{what}: tree of losers / binary heap"),
        t / h,
        "x",
        "",
    );
    let block = ctl::ops::loader::generate_records(3, 0, 64 << 20);
    sort_map_section("map.sort", "", &block);
    // gensort's ASCII lines (made outside the testbed) in the four key
    // distributions of the cluster bench's sort against GNU sort.
    for keys in gensort::Keys::ALL {
        let mut block = Vec::with_capacity(64 << 20);
        gensort::write(&mut block, keys, (64 << 20) / gensort::LINE as u64, 17).unwrap();
        let id = format!("map.sort_lines.{}", keys.name());
        let what = format!(", gensort-shaped lines with {} keys", keys.name());
        sort_map_section(&id, &what, &block);
    }
}

/// The sort map on `block` (whole 100-byte records), its block handed
/// over and copied from 1 MiB pieces, against a comparison sort of whole
/// records; recorded as `id`.*.
fn sort_map_section(id: &str, of: &str, block: &[u8]) {
    use workloads::sort::RECORD;
    use workloads::Workload;
    let mb = block.len() as f64 / 1e6;
    let (mut ours, mut copied, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    // The map's sorted run laid out in memory (as the comparison sort's
    // records are), its block handed over in one pooled buffer (as the
    // worker's local read does) or copied from 1 MiB pieces.
    let sort_map = |owned: bool| {
        let mut m = Workload::Sort.map_task(4);
        m.expect_input(block.len() as u64);
        let buf = owned.then(|| {
            let mut buf = workloads::pool::take(block.len() + 1);
            buf.extend_from_slice(block);
            buf
        });
        let t = Instant::now();
        match buf {
            Some(buf) => m.consume_owned(buf),
            None => block.chunks(1 << 20).for_each(|piece| m.consume(piece)),
        }
        let (_, out) = m.finish();
        let workloads::MapOutput::SortedRun { run, .. } = out else {
            panic!("a sort map leaves a sorted run")
        };
        let run = run.to_vec();
        (t.elapsed().as_secs_f64(), run)
    };
    for _ in 0..3 {
        copied.push(sort_map(false).0);
        let (secs, run) = sort_map(true);
        ours.push(secs);
        let t = Instant::now();
        let mut recs: Vec<&[u8]> = block.chunks(RECORD).collect();
        recs.sort_unstable();
        let whole = recs.concat();
        plain.push(t.elapsed().as_secs_f64());
        assert!(run == whole, "both sorts give the same bytes");
    }
    let (o, c, p) = (mb / best(&ours), mb / best(&copied), mb / best(&plain));
    println!(
        "sort map. {mb:.0} MB block{of}: the map (sorted run and samples) {o:.0} MB/s with its block handed over ({c:.0} MB/s copying it from 1 MiB pieces), a comparison sort of whole records {p:.0} MB/s; ratio {:.2}",
        o / p
    );
    let what = format!("sort map of one {mb:.0} MB block{of}");
    let rows = [
        (
            "mbps",
            "the map (sorted run and samples), its block handed over, MB/s",
            o,
            "MB/s",
        ),
        (
            "copied_mbps",
            "the map copying its block from 1 MiB pieces, MB/s",
            c,
            "MB/s",
        ),
        (
            "plain_mbps",
            "a comparison sort of whole records, MB/s",
            p,
            "MB/s",
        ),
        ("ratio", "the map / the comparison sort", o / p, "x"),
    ];
    for (key, label, value, unit) in rows {
        record(
            &format!("{id}.{key}"),
            &format!("{what}: {label}"),
            value,
            unit,
            "",
        );
    }
}

/// The map before the arena counter, kept as the measured baseline: the
/// same tokenizer, and a `HashMap<Vec<u8>, u64>` with FxHash as combiner
/// (a word copied once, when first seen). Distinct words and words.
fn hashmap_count(data: &[u8]) -> (usize, u64) {
    let mut counts: std::collections::HashMap<Vec<u8>, u64, rustc_hash::FxBuildHasher> =
        Default::default();
    let mut words = 0u64;
    for w in data
        .split(|&b| workloads::wordcount::is_space(b))
        .filter(|w| !w.is_empty())
    {
        words += 1;
        if let Some(c) = counts.get_mut(w) {
            *c += 1;
        } else {
            counts.insert(w.to_vec(), 1);
        }
    }
    (counts.len(), words)
}

/// The reference: the simplest fast single-threaded count, written here,
/// words borrowed from the input (no copy), FxHash. Distinct words and words.
fn reference_count(data: &[u8]) -> (usize, u64) {
    let mut counts: std::collections::HashMap<&[u8], u64, rustc_hash::FxBuildHasher> =
        Default::default();
    let mut words = 0u64;
    for w in data
        .split(|b| b.is_ascii_whitespace() || *b == 0x0b)
        .filter(|w| !w.is_empty())
    {
        words += 1;
        *counts.entry(w).or_default() += 1;
    }
    (counts.len(), words)
}

/// 74,585 distinct lower-case words of 2-14 letters (the size of the
/// dictionary a user counted), seeded.
fn dictionary() -> Vec<Vec<u8>> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(74_585);
    let mut seen = std::collections::HashSet::new();
    while seen.len() < 74_585 {
        let n = rng.gen_range(2..=14);
        seen.insert(
            (0..n)
                .map(|_| b'a' + rng.gen_range(0..26u8))
                .collect::<Vec<u8>>(),
        );
    }
    let mut words: Vec<Vec<u8>> = seen.into_iter().collect();
    words.sort();
    words
}

/// `size` bytes of lines of ten words drawn from `vocab`, by `pick`.
fn text(vocab: &[Vec<u8>], size: usize, mut pick: impl FnMut() -> usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 256);
    while out.len() < size {
        for k in 0..10 {
            if k > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(&vocab[pick()]);
        }
        out.push(b'\n');
    }
    out
}

/// The three texts of the wordcount bench, 64 MiB each: dictionary words
/// drawn uniformly (the cache's worst case), the same words drawn by Zipf,
/// and real English prose (the licence texts every Debian system has,
/// repeated), or a reason it is missing.
fn texts() -> Vec<(&'static str, Result<Vec<u8>, String>)> {
    use rand::{Rng, SeedableRng};
    const SIZE: usize = 64 << 20;
    let vocab = dictionary();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let uniform = text(&vocab, SIZE, || rng.gen_range(0..vocab.len()));
    let cdf: Vec<f64> = (1..=vocab.len())
        .scan(0.0, |acc, r| {
            *acc += 1.0 / r as f64;
            Some(*acc)
        })
        .collect();
    let total = cdf[cdf.len() - 1];
    let zipf = text(&vocab, SIZE, || {
        let u = rng.gen::<f64>() * total;
        cdf.partition_point(|c| *c < u).min(vocab.len() - 1)
    });
    let dir = std::path::Path::new("/usr/share/common-licenses");
    let prose = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
        .map(|entries| {
            let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            names.sort();
            let one: Vec<u8> = names
                .iter()
                .filter_map(|p| std::fs::read(p).ok())
                .flatten()
                .collect();
            one.iter()
                .copied()
                .cycle()
                .take(if one.is_empty() { 0 } else { SIZE })
                .collect()
        });
    vec![
        ("dictionary words, uniform", Ok(uniform)),
        ("dictionary words, Zipf", Ok(zipf)),
        ("English prose (licence texts)", prose),
    ]
}

/// The wordcount map (1 MiB pieces, partitions for 4 reduces, as a worker
/// runs it), the map before it and the reference, interleaved, best of 3.
fn wordcount_section() {
    for ((name, data), id) in texts().into_iter().zip(["uniform", "zipf", "prose"]) {
        let data = match data {
            Ok(d) if !d.is_empty() => d,
            Ok(_) => {
                println!("wordcount map. {name}: no text found: skipped");
                continue;
            }
            Err(e) => {
                println!("wordcount map. {name}: skipped ({e})");
                continue;
            }
        };
        let mb = data.len() as f64 / 1e6;
        let (mut map, mut old, mut reference) = (Vec::new(), Vec::new(), Vec::new());
        let mut distinct = 0;
        for _ in 0..3 {
            let (s, w1) = run(Box::new(WordcountMap::new(4)), &data);
            map.push(s);
            let t = Instant::now();
            let (d2, w2) = hashmap_count(&data);
            old.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let (d3, w3) = reference_count(&data);
            reference.push(t.elapsed().as_secs_f64());
            assert_eq!((w1, w1, d2), (w2, w3, d3), "all three count the same words");
            distinct = d3;
        }
        let (m, o, r) = (mb / best(&map), mb / best(&old), mb / best(&reference));
        println!(
            "wordcount map. {name}, {mb:.0} MB, {distinct} distinct words, one core: the map {m:.0} MB/s, \
             the map before (HashMap<Vec<u8>, u64>) {o:.0} MB/s, reference (HashMap<&[u8], u64>, FxHash) {r:.0} MB/s; \
             ratio map / reference {:.2}, map / before {:.2}",
            m / r,
            m / o
        );
        let what = format!("wordcount map, one core, {mb:.0} MB of {name} ({distinct} distinct)");
        record(
            &format!("map.wordcount.{id}.mbps"),
            &format!("{what}: the map, MB/s"),
            m,
            "MB/s",
            "",
        );
        record(
            &format!("map.wordcount.{id}.before_mbps"),
            &format!("{what}: the map before (HashMap<Vec<u8>, u64>), MB/s"),
            o,
            "MB/s",
            "",
        );
        record(
            &format!("map.wordcount.{id}.reference_mbps"),
            &format!("{what}: reference (HashMap<&[u8], u64>, FxHash), MB/s"),
            r,
            "MB/s",
            "",
        );
        record(
            &format!("map.wordcount.{id}.ratio"),
            &format!("{what}: the map / the reference"),
            m / r,
            "x",
            "",
        );
    }
}

fn main() {
    // `BENCH_ONLY=sort|lines|wordcount` runs one section.
    let only = std::env::var("BENCH_ONLY").ok();
    let run = |part: &str| only.as_deref().is_none_or(|o| o == part);
    if run("sort") {
        sort_section();
    }
    if run("lines") {
        lines::lines_section();
    }
    if run("wordcount") {
        wordcount_section();
    }
}
