//! The disk term's estimate of a real run's block reads: how long each map
//! spent reading its block when every read from a worker shared its
//! emulated disk fairly ([`crate::replay::DiskShare`], the same rule the
//! replay runs). A read goes as fast as its share allows: the worker's
//! compute pacing is a floor on the task's length, not a cap on its read.

use crate::replay::FETCH_PARALLEL;

/// One read from a worker's disk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskRead {
    pub start_ms: u64,
    pub source: u32,
    pub bytes: u64,
}

/// A reduce's fetch of map output: its parts, each (worker, bytes) from
/// that worker's disk, in the order it takes them,
/// [`crate::replay::FETCH_PARALLEL`] at once from its start (the worker's
/// `shuffle_in`).
#[derive(Clone, Debug, PartialEq)]
pub struct FetchChain {
    pub start_ms: u64,
    pub parts: Vec<(u32, u64)>,
}

/// What a read in flight belongs to.
#[derive(Clone, Copy)]
enum Owner {
    Read(usize),
    Chain(usize),
}

/// Each read's time in ms, in `reads`' order: reads share their source's
/// disk of `mbs` MB/s fairly while they last, with the `fetches`' parts
/// in flight. A read of 0 bytes takes 0.
pub fn shared_reads(reads: &[DiskRead], fetches: &[FetchChain], mbs: f64) -> Vec<f64> {
    let mut out = vec![0.0; reads.len()];
    if mbs.is_nan() || mbs <= 0.0 {
        return out;
    }
    let disk = mbs * 1000.0;
    // Starts in time order: (time, reads first, index).
    let mut starts: Vec<(u64, bool, usize)> = reads
        .iter()
        .enumerate()
        .filter(|(_, r)| r.bytes > 0)
        .map(|(i, r)| (r.start_ms, false, i))
        .chain(
            fetches
                .iter()
                .enumerate()
                .map(|(c, f)| (f.start_ms, true, c)),
        )
        .collect();
    starts.sort_unstable();
    let top = reads
        .iter()
        .map(|r| r.source)
        .chain(fetches.iter().flat_map(|f| f.parts.iter().map(|p| p.0)))
        .max()
        .map_or(0, |m| m as usize + 1);
    let mut on = vec![0u32; top];
    // In flight: (source, bytes left, owner); each chain's next part.
    let mut live: Vec<(u32, f64, Owner)> = Vec::new();
    let mut next_part = vec![0usize; fetches.len()];
    let (mut clock, mut next) = (0.0f64, 0);
    let take = |c: usize, next_part: &mut Vec<usize>, live: &mut Vec<_>, on: &mut Vec<u32>| {
        while let Some(&(w, b)) = fetches[c].parts.get(next_part[c]) {
            next_part[c] += 1;
            if b > 0 {
                live.push((w, b as f64, Owner::Chain(c)));
                on[w as usize] += 1;
                return;
            }
        }
    };
    while next < starts.len() || !live.is_empty() {
        let rate = |w: u32| disk / f64::from(on[w as usize].max(1));
        let first_end = live
            .iter()
            .map(|x| clock + x.1 / rate(x.0))
            .fold(f64::INFINITY, f64::min);
        let arrival = starts.get(next).map_or(f64::INFINITY, |s| s.0 as f64);
        let to = first_end.min(arrival);
        let steps: Vec<f64> = live.iter().map(|x| (to - clock) * rate(x.0)).collect();
        for (x, step) in live.iter_mut().zip(steps) {
            x.1 -= step;
        }
        clock = clock.max(to);
        if arrival <= first_end {
            let (_, chain, i) = starts[next];
            next += 1;
            if chain {
                for _ in 0..FETCH_PARALLEL {
                    take(i, &mut next_part, &mut live, &mut on);
                }
            } else {
                live.push((reads[i].source, reads[i].bytes as f64, Owner::Read(i)));
                on[reads[i].source as usize] += 1;
            }
        }
        let mut ended = Vec::new();
        live.retain(|&(w, left, owner)| {
            let done = left <= 1e-6;
            if done {
                on[w as usize] -= 1;
                match owner {
                    Owner::Read(i) => out[i] = clock - reads[i].start_ms as f64,
                    Owner::Chain(c) => ended.push(c),
                }
            }
            !done
        });
        for c in ended {
            take(c, &mut next_part, &mut live, &mut on);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{shared_reads, DiskRead, FetchChain};

    /// Reads of (start, source, bytes).
    fn maps(r: &[(u64, u32, u64)]) -> Vec<DiskRead> {
        r.iter()
            .map(|&(start_ms, source, bytes)| DiskRead {
                start_ms,
                source,
                bytes,
            })
            .collect()
    }

    #[test]
    fn reads_share_their_source_disk_and_not_another() {
        // 1 MB/s: two 1 MB reads from one source started together take
        // 2 s each; one from another source takes 1 s.
        let r = shared_reads(
            &maps(&[(0, 0, 1_000_000), (0, 0, 1_000_000), (0, 1, 1_000_000)]),
            &[],
            1.0,
        );
        assert_eq!(r, vec![2000.0, 2000.0, 1000.0]);
    }

    #[test]
    fn three_reads_together_take_a_third_of_the_disk_each() {
        let three = shared_reads(&maps(&[(0, 0, 1_000_000); 3]), &[], 1.0);
        for t in three {
            assert!((t - 3000.0).abs() < 1e-6, "{t}");
        }
    }

    #[test]
    fn a_later_read_slows_the_one_in_flight() {
        // 1 MB at 1 MB/s from 0; another from 500 ms: the first has 0.5 MB
        // left at half speed (1 s more), the second then has 0.5 MB alone.
        let r = shared_reads(&maps(&[(0, 0, 1_000_000), (500, 0, 1_000_000)]), &[], 1.0);
        assert!((r[0] - 1500.0).abs() < 1e-6, "{r:?}");
        assert!((r[1] - 1500.0).abs() < 1e-6, "{r:?}");
        assert_eq!(shared_reads(&maps(&[(0, 0, 0)]), &[], 1.0), vec![0.0]);
        assert_eq!(shared_reads(&maps(&[(0, 0, 5)]), &[], 0.0), vec![0.0]);
    }

    #[test]
    fn a_reduce_fetches_a_few_parts_at_once_in_its_order() {
        // A map reading 1 MB from worker 0 at 0; a reduce from 0 fetching
        // five parts of 0.5 MB from worker 1 and one from worker 0, four at
        // once: worker 0's part goes with the first four (it is fourth),
        // sharing worker 0's disk with the map for as long as it lasts.
        let fetch = FetchChain {
            start_ms: 0,
            parts: vec![
                (1, 500_000),
                (1, 500_000),
                (1, 500_000),
                (0, 500_000),
                (1, 500_000),
                (1, 500_000),
            ],
        };
        let r = shared_reads(
            &maps(&[(0, 0, 1_000_000)]),
            std::slice::from_ref(&fetch),
            1.0,
        );
        // Both at 0.5 MB/s on worker 0 until the part ends at 1 s; the
        // map's last 0.5 MB then alone: 1.5 s.
        assert!((r[0] - 1500.0).abs() < 1e-6, "{r:?}");
        // Its part sixth: worker 1's five parts first, the map alone.
        let mut late = fetch;
        late.parts.swap(3, 5);
        let r = shared_reads(&maps(&[(0, 0, 1_000_000)]), &[late], 1.0);
        assert!(r[0] < 1500.0 - 1e-6, "{r:?}");
    }
}
