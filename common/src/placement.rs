//! Where a file's block replicas go: the placement rules the data loader
//! applies on a real cluster and the simulators apply on a virtual one, so
//! both draw the same holders from the same seed.

use crate::WorkerId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How the loader spreads a file's replicas over the workers that hold data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Each block's replicas on distinct workers drawn uniformly (seeded),
    /// as HDFS's default policy does within one rack.
    #[default]
    Random,
    /// Every worker holds the same share of the file's replicas (give or
    /// take one), on distinct workers per block: EAS's assumption (iii) and
    /// DynDL's evenly split test files. Seeded worker order.
    Even,
}

impl Placement {
    /// Its name in specs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Random => "random",
            Placement::Even => "even",
        }
    }
}

impl std::str::FromStr for Placement {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "random" => Ok(Placement::Random),
            "even" => Ok(Placement::Even),
            _ => Err(format!(
                "unknown placement {s:?}: expected \"random\" or \"even\""
            )),
        }
    }
}

/// The seeded stream a placement draws from (the loader's block streams
/// 1 and 2 are its generators').
fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r.set_word_pos(0);
    r
}

/// Replica holders per block: `replication` distinct workers drawn uniformly
/// (seeded), from `workers` in the given order.
pub fn place_replicas(
    seed: u64,
    blocks: u32,
    workers: &[WorkerId],
    replication: u32,
) -> Vec<Vec<WorkerId>> {
    let mut rng = rng(seed, 3);
    (0..blocks)
        .map(|_| {
            let mut pool = workers.to_vec();
            for k in 0..replication as usize {
                let j = rng.gen_range(k..pool.len());
                pool.swap(k, j);
            }
            pool.truncate(replication as usize);
            pool
        })
        .collect()
}

/// Replica holders per block under `placement`.
pub fn place(
    placement: Placement,
    seed: u64,
    blocks: u32,
    workers: &[WorkerId],
    replication: u32,
) -> Vec<Vec<WorkerId>> {
    match placement {
        Placement::Random => place_replicas(seed, blocks, workers, replication),
        Placement::Even => place_even(seed, blocks, workers, replication),
    }
}

/// Replicas dealt round-robin over a seeded order of the workers: replica
/// k of block i goes to the (i * replication + k)-th worker of that order,
/// modulo their number, so a block's replicas are distinct (replication <=
/// workers) and each worker holds floor or ceil of blocks * replication /
/// workers of them.
pub fn place_even(
    seed: u64,
    blocks: u32,
    workers: &[WorkerId],
    replication: u32,
) -> Vec<Vec<WorkerId>> {
    let mut rng = rng(seed, 4);
    let mut order = workers.to_vec();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let n = order.len() as u64;
    (0..blocks as u64)
        .map(|i| {
            (0..replication as u64)
                .map(|k| order[((i * replication as u64 + k) % n) as usize])
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_placement_gives_every_worker_its_share() {
        let ws: Vec<WorkerId> = (0..8).map(WorkerId).collect();
        for (blocks, rep) in [(10, 2), (7, 3), (16, 1), (3, 8)] {
            let p = place_even(4, blocks, &ws, rep);
            assert_eq!(p, place_even(4, blocks, &ws, rep));
            let mut count = [0u32; 8];
            for reps in &p {
                let mut s = reps.clone();
                s.sort();
                s.dedup();
                assert_eq!(s.len(), rep as usize, "{reps:?}");
                for w in reps {
                    count[w.0 as usize] += 1;
                }
            }
            let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
            assert!(hi - lo <= 1, "{blocks}x{rep}: {count:?}");
        }
        assert_ne!(place_even(4, 10, &ws, 2), place_even(5, 10, &ws, 2));
    }

    #[test]
    fn placement_is_seeded_and_distinct() {
        let ws: Vec<WorkerId> = (0..5).map(WorkerId).collect();
        let p = place_replicas(9, 50, &ws, 3);
        assert_eq!(p, place_replicas(9, 50, &ws, 3));
        assert_ne!(p, place_replicas(10, 50, &ws, 3));
        for reps in &p {
            let mut s = reps.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), 3, "never two replicas on one worker: {reps:?}");
        }
        // Every worker gets some replicas.
        for w in &ws {
            assert!(p.iter().any(|r| r.contains(w)));
        }
    }

    #[test]
    fn names_parse_back_and_others_are_named_in_the_error() {
        for p in [Placement::Random, Placement::Even] {
            assert_eq!(p.name().parse::<Placement>(), Ok(p));
        }
        let e = "spread".parse::<Placement>().unwrap_err();
        assert!(e.contains("\"spread\""), "{e}");
    }
}
