//! The disk term's estimate of a real run's block reads: how long each map
//! spent reading its block when every read from a worker shared its
//! emulated disk fairly ([`crate::replay::DiskShare`], the same rule the
//! replay runs). A read goes as fast as its share allows: the worker's
//! compute pacing is a floor on the task's length, not a cap on its read.

/// One read from a worker's disk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskRead {
    pub start_ms: u64,
    pub source: u32,
    pub bytes: u64,
}

/// Each read's time in ms, in `reads`' order: reads share their source's
/// disk of `mbs` MB/s fairly while they last. A read of 0 bytes takes 0.
pub fn shared_reads(reads: &[DiskRead], mbs: f64) -> Vec<f64> {
    let mut out = vec![0.0; reads.len()];
    if mbs.is_nan() || mbs <= 0.0 {
        return out;
    }
    let disk = mbs * 1000.0;
    let mut sources: Vec<u32> = reads.iter().map(|r| r.source).collect();
    sources.sort_unstable();
    sources.dedup();
    for s in sources {
        let mut order: Vec<usize> = (0..reads.len())
            .filter(|&i| reads[i].source == s && reads[i].bytes > 0)
            .collect();
        order.sort_by_key(|&i| (reads[i].start_ms, i));
        // Reads in flight: (index, bytes left).
        let mut live: Vec<(usize, f64)> = Vec::new();
        let mut clock = 0.0f64;
        let mut next = 0;
        while next < order.len() || !live.is_empty() {
            let rate = disk / live.len().max(1) as f64;
            let first_end = live
                .iter()
                .map(|&(_, left)| clock + left / rate)
                .fold(f64::INFINITY, f64::min);
            let arrival = order
                .get(next)
                .map_or(f64::INFINITY, |&i| reads[i].start_ms as f64);
            let to = first_end.min(arrival);
            for x in &mut live {
                x.1 -= (to - clock) * rate;
            }
            clock = clock.max(to);
            if arrival <= first_end {
                let i = order[next];
                live.push((i, reads[i].bytes as f64));
                next += 1;
            }
            live.retain(|&(i, left)| {
                let done = left <= 1e-6;
                if done {
                    out[i] = clock - reads[i].start_ms as f64;
                }
                !done
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{shared_reads, DiskRead};

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
            1.0,
        );
        assert_eq!(r, vec![2000.0, 2000.0, 1000.0]);
    }

    #[test]
    fn three_reads_together_take_a_third_of_the_disk_each() {
        let three = shared_reads(&maps(&[(0, 0, 1_000_000); 3]), 1.0);
        for t in three {
            assert!((t - 3000.0).abs() < 1e-6, "{t}");
        }
    }

    #[test]
    fn a_later_read_slows_the_one_in_flight() {
        // 1 MB at 1 MB/s from 0; another from 500 ms: the first has 0.5 MB
        // left at half speed (1 s more), the second then has 0.5 MB alone.
        let r = shared_reads(&maps(&[(0, 0, 1_000_000), (500, 0, 1_000_000)]), 1.0);
        assert!((r[0] - 1500.0).abs() < 1e-6, "{r:?}");
        assert!((r[1] - 1500.0).abs() < 1e-6, "{r:?}");
        assert_eq!(shared_reads(&maps(&[(0, 0, 0)]), 1.0), vec![0.0]);
        assert_eq!(shared_reads(&maps(&[(0, 0, 5)]), 0.0), vec![0.0]);
    }
}
