//! `make bench`, the map side: the wordcount map function over the demo's
//! generated text, with its combiner hashing by FxHash (what the workers run)
//! and by the standard library's SipHash, side by side in this run. Prints
//! MB/s of each and their ratio; the other sections of `make bench` measure
//! whole jobs.

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

fn main() {
    // 8 blocks of 8 MiB of the demo's text (74,585-word vocabulary, Zipf).
    let data: Vec<u8> = (0..8)
        .flat_map(|i| master::ops::loader::generate_text(1, i, 8 << 20))
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
