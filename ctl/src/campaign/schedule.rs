//! The campaign's fault schedule, drawn from its seed before anything
//! runs: the same seed, workers and kinds give the same faults at the same
//! times whatever the cluster does. Faults arrive as a Poisson process
//! (exponential gaps of `mean_gap_s`), each of a kind drawn among those the
//! deployment can inject, on workers drawn among those free then; each
//! lasts a drawn time and is then healed. Two rules keep the campaign
//! about the system's handling of faults and not about lost data: a worker
//! is in at most one fault at a time, and at most `max_out` workers are
//! cut off from the master (killed, stopped or partitioned from it) at
//! once, fewer than the replication factor, so every block keeps a
//! reachable replica; and the master restarts once at a time.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A worker and the master cannot reach each other (both ways).
    PartitionMaster,
    /// Two workers cannot reach each other (both ways); both still reach
    /// the master.
    PartitionWorkers,
    /// A worker's packets to the master are dropped; the master's reach it.
    OneWayToMaster,
    /// The master's packets to a worker are dropped; the worker's reach it.
    OneWayFromMaster,
    /// The master is killed (SIGKILL) and started again.
    MasterRestart,
    /// A worker is killed (SIGKILL) and started again.
    KillWorker,
    /// A worker is stopped (SIGSTOP) and resumed.
    StopWorker,
    /// A worker's disk (a tmpfs of its own) is filled to the last byte.
    DiskFull,
    /// A worker's emulated disk is slowed.
    SlowDisk,
    /// A worker's NIC is slowed (tc in namespaces, the emulated NIC
    /// otherwise).
    SlowNic,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::PartitionMaster,
        Kind::PartitionWorkers,
        Kind::OneWayToMaster,
        Kind::OneWayFromMaster,
        Kind::MasterRestart,
        Kind::KillWorker,
        Kind::StopWorker,
        Kind::DiskFull,
        Kind::SlowDisk,
        Kind::SlowNic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::PartitionMaster => "partition-master",
            Kind::PartitionWorkers => "partition-workers",
            Kind::OneWayToMaster => "one-way-to-master",
            Kind::OneWayFromMaster => "one-way-from-master",
            Kind::MasterRestart => "master-restart",
            Kind::KillWorker => "kill-worker",
            Kind::StopWorker => "stop-worker",
            Kind::DiskFull => "disk-full",
            Kind::SlowDisk => "slow-disk",
            Kind::SlowNic => "slow-nic",
        }
    }

    /// Whether it cuts its worker off from the master while it lasts.
    pub fn cuts_off(self) -> bool {
        matches!(
            self,
            Kind::PartitionMaster
                | Kind::OneWayToMaster
                | Kind::OneWayFromMaster
                | Kind::KillWorker
                | Kind::StopWorker
        )
    }

    /// How many workers it takes.
    fn workers(self) -> usize {
        match self {
            Kind::MasterRestart => 0,
            Kind::PartitionWorkers => 2,
            _ => 1,
        }
    }

    /// The range its length is drawn from, seconds.
    fn length_s(self) -> (f64, f64) {
        match self {
            Kind::MasterRestart => (1.0, 5.0),
            Kind::KillWorker | Kind::StopWorker => (5.0, 20.0),
            Kind::PartitionMaster
            | Kind::PartitionWorkers
            | Kind::OneWayToMaster
            | Kind::OneWayFromMaster => (5.0, 30.0),
            Kind::DiskFull => (10.0, 30.0),
            Kind::SlowDisk | Kind::SlowNic => (10.0, 40.0),
        }
    }
}

/// One fault: injected at `at_s`, healed at `heal_s` (seconds from the
/// campaign's start), on `workers` (none for a master restart).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fault {
    pub id: u32,
    pub kind: Kind,
    pub at_s: f64,
    pub heal_s: f64,
    pub workers: Vec<String>,
}

/// What the schedule is drawn from.
pub struct Plan<'a> {
    pub seed: u64,
    /// Faults start before this (seconds); every one is healed by then too.
    pub window_s: f64,
    pub mean_gap_s: f64,
    pub workers: &'a [String],
    /// The kinds the deployment can inject.
    pub kinds: &'a [Kind],
    /// Most workers cut off from the master at once.
    pub max_out: usize,
}

/// The schedule, in injection order. A drawn fault that breaks a rule at
/// its time (its workers busy, too many cut off, a master restart under
/// way) is drawn again with another kind and workers, up to a few times,
/// and otherwise left out.
pub fn draw(plan: &Plan) -> Vec<Fault> {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let mut faults: Vec<Fault> = Vec::new();
    if plan.kinds.is_empty() || plan.workers.is_empty() {
        return faults;
    }
    let mut t = 0.0f64;
    loop {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        t += -plan.mean_gap_s * u.ln();
        if t >= plan.window_s {
            return faults;
        }
        for _ in 0..8 {
            let kind = plan.kinds[rng.gen_range(0..plan.kinds.len())];
            let (lo, hi) = kind.length_s();
            let heal = (t + rng.gen_range(lo..=hi)).min(plan.window_s);
            let active: Vec<&Fault> = faults
                .iter()
                .filter(|f| f.at_s <= t && f.heal_s > t)
                .collect();
            let busy: Vec<&String> = active.iter().flat_map(|f| &f.workers).collect();
            let free: Vec<&String> = plan.workers.iter().filter(|w| !busy.contains(w)).collect();
            let out = active.iter().filter(|f| f.kind.cuts_off()).count();
            let restarting = active.iter().any(|f| f.kind == Kind::MasterRestart);
            let fits = match kind {
                Kind::MasterRestart => !restarting,
                k if k.cuts_off() => out < plan.max_out && !free.is_empty(),
                k => free.len() >= k.workers(),
            };
            if !fits {
                continue;
            }
            let mut workers = Vec::new();
            let mut pool = free.clone();
            for _ in 0..kind.workers() {
                let i = rng.gen_range(0..pool.len());
                workers.push(pool.remove(i).clone());
            }
            faults.push(Fault {
                id: faults.len() as u32,
                kind,
                at_s: t,
                heal_s: heal,
                workers,
            });
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("w{i}")).collect()
    }

    fn plan<'a>(seed: u64, workers: &'a [String], kinds: &'a [Kind]) -> Plan<'a> {
        Plan {
            seed,
            window_s: 1800.0,
            mean_gap_s: 10.0,
            workers,
            kinds,
            max_out: 2,
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_schedule_and_another_seed_another() {
        let w = names(5);
        let a = draw(&plan(1, &w, &Kind::ALL));
        assert_eq!(a, draw(&plan(1, &w, &Kind::ALL)));
        assert_ne!(a, draw(&plan(2, &w, &Kind::ALL)));
        // About window / gap faults, every kind among them.
        assert!((120..=200).contains(&a.len()), "{}", a.len());
        for k in Kind::ALL {
            assert!(a.iter().any(|f| f.kind == k), "{k:?} never drawn");
        }
    }

    #[test]
    fn no_worker_is_in_two_faults_and_too_few_are_cut_off_to_lose_a_block() {
        let w = names(5);
        for seed in 0..20 {
            let s = draw(&plan(seed, &w, &Kind::ALL));
            for f in &s {
                assert!(f.heal_s > f.at_s && f.heal_s <= 1800.0, "{f:?}");
                assert_eq!(f.workers.len(), f.kind.workers(), "{f:?}");
                let at = f.at_s;
                let live: Vec<&Fault> =
                    s.iter().filter(|g| g.at_s <= at && g.heal_s > at).collect();
                let mut busy: Vec<&String> = live.iter().flat_map(|g| &g.workers).collect();
                let n = busy.len();
                busy.sort();
                busy.dedup();
                assert_eq!(busy.len(), n, "seed {seed}: a worker in two faults at {at}");
                let out = live.iter().filter(|g| g.kind.cuts_off()).count();
                assert!(out <= 2, "seed {seed}: {out} cut off at {at}");
                let restarts = live
                    .iter()
                    .filter(|g| g.kind == Kind::MasterRestart)
                    .count();
                assert!(restarts <= 1, "seed {seed}: two master restarts at {at}");
            }
        }
    }

    #[test]
    fn only_the_kinds_given_are_drawn() {
        let w = names(5);
        let kinds = [Kind::KillWorker, Kind::SlowDisk];
        let s = draw(&plan(3, &w, &kinds));
        assert!(!s.is_empty());
        assert!(s.iter().all(|f| kinds.contains(&f.kind)));
        assert!(draw(&plan(3, &w, &[])).is_empty());
    }
}
