//! The disk term's estimate of a real run's block reads: how long each map
//! spent reading its block when every read from a worker shared its
//! emulated disk fairly ([`crate::replay::DiskShare`], the same rule the
//! replay runs).

/// One read from a worker's disk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskRead {
    pub start_ms: u64,
    pub source: u32,
    pub bytes: u64,
    /// A map's read, at most at the slot's rate (a shuffle's fetch is not).
    pub capped: bool,
}

/// Each read's time in ms, in `reads`' order: reads share their source's
/// disk of `mbs` MB/s fairly while they last, a capped one at most
/// `slot_mbs` MB/s (0: no cap). A read of 0 bytes takes 0.
pub fn shared_reads(reads: &[DiskRead], mbs: f64, slot_mbs: f64) -> Vec<f64> {
    let mut out = vec![0.0; reads.len()];
    if mbs.is_nan() || mbs <= 0.0 {
        return out;
    }
    let cap = if slot_mbs > 0.0 {
        slot_mbs * 1000.0
    } else {
        f64::INFINITY
    };
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
            let share = disk / live.len().max(1) as f64;
            let rate = |i: usize| {
                if reads[i].capped {
                    cap.min(share)
                } else {
                    share
                }
            };
            let first_end = live
                .iter()
                .map(|&(i, left)| clock + left / rate(i))
                .fold(f64::INFINITY, f64::min);
            let arrival = order
                .get(next)
                .map_or(f64::INFINITY, |&i| reads[i].start_ms as f64);
            let to = first_end.min(arrival);
            for x in &mut live {
                x.1 -= (to - clock) * rate(x.0);
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

    /// Map reads (capped) of (start, source, bytes).
    fn maps(r: &[(u64, u32, u64)]) -> Vec<DiskRead> {
        r.iter()
            .map(|&(start_ms, source, bytes)| DiskRead {
                start_ms,
                source,
                bytes,
                capped: true,
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
            0.0,
        );
        assert_eq!(r, vec![2000.0, 2000.0, 1000.0]);
    }

    #[test]
    fn a_read_alone_goes_at_its_cap_and_shares_past_it() {
        // Cap 0.5 MB/s on a 1 MB/s disk: alone 2 s; two together still
        // 0.5 each (2 s); three: 1/3 MB/s each (3 s).
        let alone = shared_reads(&maps(&[(0, 0, 1_000_000)]), 1.0, 0.5);
        assert_eq!(alone, vec![2000.0]);
        let two = shared_reads(&maps(&[(0, 0, 1_000_000), (0, 0, 1_000_000)]), 1.0, 0.5);
        assert_eq!(two, vec![2000.0, 2000.0]);
        let three = shared_reads(&maps(&[(0, 0, 1_000_000); 3]), 1.0, 0.5);
        for t in three {
            assert!((t - 3000.0).abs() < 1e-6, "{t}");
        }
        // A shuffle's fetch is not capped: alone it takes the whole disk.
        let mut fetch = maps(&[(0, 0, 1_000_000)]);
        fetch[0].capped = false;
        assert_eq!(shared_reads(&fetch, 1.0, 0.5), vec![1000.0]);
    }

    #[test]
    fn a_later_read_slows_the_one_in_flight() {
        // 1 MB at 1 MB/s from 0; another from 500 ms: the first has 0.5 MB
        // left at half speed (1 s more), the second then has 0.5 MB alone.
        let r = shared_reads(&maps(&[(0, 0, 1_000_000), (500, 0, 1_000_000)]), 1.0, 0.0);
        assert!((r[0] - 1500.0).abs() < 1e-6, "{r:?}");
        assert!((r[1] - 1500.0).abs() < 1e-6, "{r:?}");
        assert_eq!(shared_reads(&maps(&[(0, 0, 0)]), 1.0, 0.0), vec![0.0]);
        assert_eq!(shared_reads(&maps(&[(0, 0, 5)]), 0.0, 0.0), vec![0.0]);
    }
}
