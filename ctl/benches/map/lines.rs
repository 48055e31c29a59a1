//! The sort-lines map and reduce alone, one thread each, against the
//! simplest fast code doing the same written here: `sort_unstable` of the
//! block's lines as slices, and a binary heap of (line, run) merging the
//! same runs.

use super::*;

/// `size` bytes of text lines of any length: sentences of 1 to 25 words of
/// `vocab`, 4% empty, one in a thousand a paragraph of 200 to 2,000 words.
fn prose(vocab: &[Vec<u8>], size: usize, seed: u64) -> Vec<u8> {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(size + (64 << 10));
    while out.len() < size {
        let words = match r.gen_range(0..1000) {
            0..=39 => 0,
            40 => r.gen_range(200..=2000),
            _ => r.gen_range(1..=25),
        };
        for i in 0..words {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(&vocab[r.gen_range(0..vocab.len())]);
        }
        out.push(b'\n');
    }
    out
}

/// The map's sorted run of `block`, in a buffer of the task pool (give it
/// back, as the worker does once the run is served): `block` handed over
/// in 1 MiB pieces the map copies, or in one pooled buffer it keeps (the
/// worker's local read of a block for a map that keeps its input).
fn lines_run(block: Piece) -> Vec<u8> {
    let mut m = workloads::Workload::SortLines.map_task(1);
    match block {
        Piece::Borrowed(block) => {
            m.expect_input(block.len() as u64);
            for piece in block.chunks(1 << 20) {
                m.consume(piece);
            }
        }
        Piece::Owned(buf) => {
            m.expect_input(buf.len() as u64);
            m.consume_owned(buf);
        }
    }
    match m.finish().1 {
        MapOutput::SortedRun { run, .. } => run.into_buffer(),
        _ => panic!("a sort-lines map leaves a sorted run"),
    }
}

/// A block as the worker hands it to a map.
enum Piece<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

/// The merge baseline: a binary heap of (line, run, offset).
fn heap_merge_lines(runs: &[Vec<u8>]) -> Vec<u8> {
    use std::cmp::Reverse;
    let line_at =
        |r: &[u8], at: usize| -> usize { at + r[at..].iter().position(|&b| b == b'\n').unwrap() };
    let mut out = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    let mut heap: std::collections::BinaryHeap<Reverse<(&[u8], usize, usize)>> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.is_empty())
        .map(|(i, r)| Reverse((&r[..line_at(r, 0)], i, 0)))
        .collect();
    while let Some(Reverse((line, i, at))) = heap.pop() {
        out.extend_from_slice(line);
        out.push(b'\n');
        let next = at + line.len() + 1;
        if next < runs[i].len() {
            let r = &runs[i];
            heap.push(Reverse((&r[next..line_at(r, next)], i, next)));
        }
    }
    out
}

/// Section: sort-lines' merge of 16 runs and its map of a 64 MiB block,
/// each against its baseline.
pub(super) fn lines_section() {
    let vocab = dictionary();
    let runs: Vec<Vec<u8>> = (0..16)
        .map(|i| lines_run(Piece::Borrowed(&prose(&vocab, 8 << 20, i))))
        .collect();
    let mb = runs.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
    let reduce = || {
        let mut r = workloads::Workload::SortLines.reduce_task().unwrap();
        for run in &runs {
            r.consume(run.clone()).unwrap();
        }
        r
    };
    let (_, gathered) = reduce().finish().unwrap();
    assert!(
        gathered == heap_merge_lines(&runs),
        "both merges give the same bytes"
    );
    drop(gathered);
    let (mut tree, mut heap) = (Vec::new(), Vec::new());
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
        std::hint::black_box(heap_merge_lines(&runs));
        heap.push(t.elapsed().as_secs_f64());
    }
    let (t, h) = (mb / best(&tree), mb / best(&heap));
    println!(
        "sort-lines reduce. merge of 16 sorted runs of text lines, {mb:.0} MB: tree of losers {t:.0} MB/s, binary heap of lines {h:.0} MB/s (1 thread each); ratio {:.2}",
        t / h
    );
    let what = format!("sort-lines reduce's merge of 16 sorted runs, {mb:.0} MB, one thread");
    record(
        "map.lines_merge.mbps",
        &format!("{what}: tree of losers, MB/s"),
        t,
        "MB/s",
        "",
    );
    record(
        "map.lines_merge.heap_mbps",
        &format!("{what}: binary heap, MB/s"),
        h,
        "MB/s",
        "",
    );
    record(
        "map.lines_merge.ratio",
        &format!("{what}: tree / heap"),
        t / h,
        "x",
        ">= 1",
    );
    map_versus_sort_unstable("", "text lines", &prose(&vocab, 64 << 20, 99));
    map_versus_sort_unstable(
        "_docs",
        "this repository's documents",
        &docs_block(64 << 20),
    );
}

/// This repository's documents repeated to whole lines of at most `size`
/// bytes (as the cluster bench's repo-docs file: tables, code, prose,
/// every line many times over).
fn docs_block(size: usize) -> Vec<u8> {
    let docs = crate::repo_docs::repo_docs();
    let mut out = Vec::with_capacity(size);
    while out.len() + docs.len() <= size {
        out.extend_from_slice(&docs);
    }
    let room = size - out.len();
    let cut = docs[..room]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    out.extend_from_slice(&docs[..cut]);
    out
}

/// The sort-lines map of `block` against `sort_unstable` of its lines as
/// slices (laid out in order), best of 3 each, recorded as
/// `map.lines_sort{id}.*`; both give the same bytes.
fn map_versus_sort_unstable(id: &str, what: &str, block: &[u8]) {
    let mb = block.len() as f64 / 1e6;
    let (mut ours, mut copied, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    // The first round faults the pool's buffers in; a worker's are warm
    // from its first job on.
    workloads::pool::give(lines_run(Piece::Borrowed(block)));
    for _ in 0..3 {
        let t = Instant::now();
        workloads::pool::give(lines_run(Piece::Borrowed(block)));
        copied.push(t.elapsed().as_secs_f64());
        let mut buf = workloads::pool::take(block.len() + 1);
        buf.extend_from_slice(block);
        let t = Instant::now();
        let run = lines_run(Piece::Owned(buf));
        ours.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut lines: Vec<&[u8]> = block[..block.len() - 1].split(|&b| b == b'\n').collect();
        lines.sort_unstable();
        let mut whole = Vec::with_capacity(block.len());
        for l in &lines {
            whole.extend_from_slice(l);
            whole.push(b'\n');
        }
        plain.push(t.elapsed().as_secs_f64());
        assert!(run == whole, "both sorts give the same bytes");
        workloads::pool::give(run);
    }
    let (o, c, p) = (mb / best(&ours), mb / best(&copied), mb / best(&plain));
    println!(
        "sort-lines map. {mb:.0} MB block of {what}: the map {o:.0} MB/s with its block handed over ({c:.0} MB/s copying it from 1 MiB pieces), sort_unstable of the lines as slices {p:.0} MB/s; ratio {:.2}",
        o / p
    );
    let what = format!("sort-lines map of one {mb:.0} MB block of {what}");
    record(
        &format!("map.lines_sort{id}.mbps"),
        &format!("{what}: the map, its block handed over, MB/s"),
        o,
        "MB/s",
        "",
    );
    record(
        &format!("map.lines_sort{id}.copied_mbps"),
        &format!("{what}: the map copying its block from 1 MiB pieces, MB/s"),
        c,
        "MB/s",
        "",
    );
    record(
        &format!("map.lines_sort{id}.plain_mbps"),
        &format!("{what}: sort_unstable of slices, MB/s"),
        p,
        "MB/s",
        "",
    );
    record(
        &format!("map.lines_sort{id}.ratio"),
        &format!("{what}: the map / sort_unstable"),
        o / p,
        "x",
        ">= 1",
    );
}
