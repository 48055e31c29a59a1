//! Where a reduce's output replicas go: the master picks them when the
//! reduce starts ([`output_targets`]), and the simulator moves the copies
//! over the links of the workers it picks the same way.

use base::WorkerId;

/// A reduce's output replica targets besides its own worker (`count` of
/// them, from `alive`): the workers receiving the fewest output replicas
/// (`incoming`), then those not running a reduce themselves (`reducing`),
/// ties in a rotation that starts `shift` places after the reducer.
///
/// The second rule keeps the receive links of workers that will run the
/// next reduces busy first: a reducer can never take its own replica, so
/// when reduces start one after another on every worker, the last one
/// still finds a worker receiving nothing (with only the first rule, 4
/// reduces on 4 workers could leave the last one's only idle receiver
/// itself, and send two replicas through one link).
pub fn output_targets(
    alive: &[WorkerId],
    worker: WorkerId,
    count: usize,
    load: &Load<'_>,
    shift: usize,
) -> Vec<WorkerId> {
    // `alive` is in id order wherever this testbed builds it: a binary
    // search finds the reducer, and a scan where it does not.
    let start = match alive.binary_search(&worker) {
        Ok(i) => i,
        Err(_) => alive.iter().position(|w| *w == worker).unwrap_or(0),
    };
    let keys = (0..alive.len())
        .map(|k| alive[(start + shift + k) % alive.len()])
        .enumerate()
        .filter(|(_, w)| *w != worker)
        .map(|(k, w)| {
            let i = w.0 as usize;
            (
                load.slow.get(i).copied().unwrap_or(false),
                load.incoming[i],
                load.reducing[i],
                k,
                w,
            )
        });
    // The `count` smallest keys (each unique: `k` is), kept in order as
    // they stream by: a reduce's start costs one pass over the workers,
    // not a sort of them (10,000 workers in the simulator).
    let mut best: Vec<(bool, u32, bool, usize, WorkerId)> = Vec::with_capacity(count + 1);
    for key in keys {
        // Keys come in `k` order: once `count` of them carry the least
        // load there is (not slow, nothing incoming, no reduce), no later
        // one can come before them (on 10,000 workers mostly idle, the
        // pass ends after a few).
        if best.len() == count
            && best
                .last()
                .is_some_and(|b| (b.0, b.1, b.2) == (false, 0, false))
        {
            break;
        }
        if best.len() == count && best.last().is_none_or(|b| key >= *b) {
            continue;
        }
        let at = best.partition_point(|b| *b < key);
        best.insert(at, key);
        best.truncate(count);
    }
    best.into_iter().map(|(.., w)| w).collect()
}

/// What output placement weighs per worker (by worker id): a slow node
/// of the job, output replicas it is receiving, whether it runs a reduce.
pub struct Load<'a> {
    pub slow: &'a [bool],
    pub incoming: &'a [u32],
    pub reducing: &'a [bool],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every order of `n` workers.
    fn orders(n: u32) -> Vec<Vec<u32>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for o in orders(n - 1) {
            for at in 0..=o.len() {
                let mut v = o.clone();
                v.insert(at, n - 1);
                out.push(v);
            }
        }
        out
    }

    /// Reduces starting one after another on every worker, in `order`, each
    /// with one replica: how many replicas each worker receives.
    fn received(order: &[u32], knows_reducers: bool) -> Vec<u32> {
        let n = order.len();
        let alive: Vec<WorkerId> = (0..n as u32).map(WorkerId).collect();
        let (mut incoming, mut reducing) = (vec![0u32; n], vec![false; n]);
        for (r, &w) in order.iter().enumerate() {
            let seen = if knows_reducers {
                reducing.clone()
            } else {
                vec![false; n]
            };
            let load = Load {
                slow: &[],
                incoming: &incoming,
                reducing: &seen,
            };
            let t = output_targets(&alive, WorkerId(w), 1, &load, r % n);
            assert_eq!(t.len(), 1);
            assert_ne!(t[0], WorkerId(w), "never the reducer itself");
            incoming[t[0].0 as usize] += 1;
            reducing[w as usize] = true;
        }
        incoming
    }

    #[test]
    fn reduces_on_every_worker_send_each_worker_one_replica_in_any_order() {
        for n in [2, 3, 4, 6] {
            for order in orders(n) {
                let got = received(&order, true);
                assert!(got.iter().all(|&k| k == 1), "order {order:?}: {got:?}");
            }
        }
        // The fewest-incoming rule alone fails some orders (in the 1 GiB
        // sort bench, two replicas went through one worker's link).
        let bad = orders(4)
            .into_iter()
            .filter(|o| received(o, false).iter().any(|&k| k != 1))
            .count();
        assert!(bad > 0);
    }

    #[test]
    fn a_slow_node_gets_a_replica_only_when_no_other_worker_can() {
        let alive: Vec<WorkerId> = (0..3).map(WorkerId).collect();
        let load = Load {
            slow: &[false, true, false],
            incoming: &[0, 0, 5],
            reducing: &[false; 3],
        };
        // w2 receives five replicas already, w1 none, but w1 is slow.
        assert_eq!(
            output_targets(&alive, WorkerId(0), 1, &load, 0),
            [WorkerId(2)]
        );
        assert_eq!(
            output_targets(&alive, WorkerId(0), 2, &load, 0),
            [WorkerId(2), WorkerId(1)]
        );
    }

    #[test]
    fn the_streamed_choice_is_the_first_count_of_the_whole_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..500 {
            let n = rng.gen_range(1..40u32);
            let alive: Vec<WorkerId> = (0..n).map(WorkerId).collect();
            let slow: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.1)).collect();
            let incoming: Vec<u32> = (0..n).map(|_| rng.gen_range(0..3)).collect();
            let reducing: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
            let load = Load {
                slow: &slow,
                incoming: &incoming,
                reducing: &reducing,
            };
            let worker = WorkerId(rng.gen_range(0..n));
            let shift = rng.gen_range(0..50usize);
            let count = rng.gen_range(0..(n as usize + 2));
            // The whole order, sorted: what the choice must begin with.
            let start = worker.0 as usize;
            let mut all: Vec<_> = (0..n as usize)
                .map(|k| alive[(start + shift + k) % n as usize])
                .enumerate()
                .filter(|(_, w)| *w != worker)
                .map(|(k, w)| {
                    let i = w.0 as usize;
                    (slow[i], incoming[i], reducing[i], k, w)
                })
                .collect();
            all.sort_unstable();
            let want: Vec<WorkerId> = all.into_iter().map(|(.., w)| w).take(count).collect();
            assert_eq!(output_targets(&alive, worker, count, &load, shift), want);
        }
    }
}
