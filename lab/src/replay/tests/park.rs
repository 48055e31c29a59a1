//! Heartbeats left out: idle ones, and those a waiting job declines.

use super::*;

/// Jobs of a few maps (some with reduces) arriving over `span_ms` on
/// `workers` workers, drawn from `seed`.
fn drawn_jobs(seed: u64, n: u32, workers: u32, span_ms: u64) -> Vec<ReplayJob> {
    let mut x = seed;
    let mut next = move |m: u64| {
        x = base::hash::splitmix64(x);
        x % m
    };
    (0..n)
        .map(|id| {
            let maps = 1 + next(6) as u32;
            let mut j = job(
                id,
                next(span_ms),
                &(0..maps)
                    .map(|_| (next(u64::from(workers)) as u32, 200 + next(3_000)))
                    .collect::<Vec<_>>(),
            );
            if next(3) == 0 {
                j.reduces = (maps..maps + 1 + next(2) as u32)
                    .map(|index| ReplayTask {
                        index,
                        replicas: Vec::new(),
                        local_ms: 300 + next(1_000),
                        bytes: 0,
                    })
                    .collect();
                j.reduce_load = 1_000;
            }
            j
        })
        .collect()
}

/// 30 workers x 2 slots heartbeating every 100 ms at phases spread over it.
fn phased(out_of_band: bool) -> ReplayCluster {
    let mut c = cluster(&[2; 30], 100, out_of_band);
    c.phase_ms = (0..30).map(|i| i * 37 % 100).collect();
    c
}

/// `jobs` replayed on `c` under `policy` (seed 3).
fn run(
    policy: &str,
    c: &ReplayCluster,
    jobs: &[ReplayJob],
    bg: &[BackgroundRun],
    remote: RemoteModel,
) -> ReplayOutcome {
    let config: sched::policy::SchedulerConfig = policy.parse().unwrap();
    let mut s = build(&config, 3);
    let mut p = ReducePlacer::new(Default::default(), &config);
    replay(s.as_mut(), &mut p, c, jobs, bg, remote, 60_000).unwrap()
}

/// Two replays launched the same tasks at the same times and ended the same
/// jobs.
fn same(a: &ReplayOutcome, b: &ReplayOutcome, what: &str) {
    let first = a.runs.iter().zip(&b.runs).position(|(x, y)| x != y);
    if let Some(i) = first.or((a.runs.len() != b.runs.len()).then_some(0)) {
        panic!(
            "{what}: run {i} differs: {:?} against {:?}",
            a.runs.get(i),
            b.runs.get(i)
        );
    }
    assert_eq!(a.jobs, b.jobs, "{what}");
}

/// A remote read's fixed cost, with terms per source and per reader.
fn static_remote() -> RemoteModel {
    RemoteModel::Static(RemoteCost {
        base_ms: 400.0,
        per_source_ms: 100.0,
        per_reader_ms: 50.0,
        per_mb_ms: 0.0,
        ref_bytes: 0,
    })
}

#[test]
fn idle_heartbeats_are_left_out_and_nothing_else_changes() {
    // Long idle gaps between jobs on 30 workers heartbeating every 100 ms,
    // three of them with a background process for a while: a policy whose
    // idle offers change nothing runs exactly the same with idle workers
    // parked (the decision record turns parking off), in far fewer events;
    // and a wake that puts back only the heartbeats a waiting task sees
    // (every period a whole ms) runs the same as one that puts back every
    // parked worker's (a period a hair over 100 ms: the same heartbeats),
    // in fewer events still.
    let jobs = drawn_jobs(7, 60, 30, 600_000);
    let bg: Vec<BackgroundRun> = (0..3u64)
        .map(|i| BackgroundRun {
            worker: WorkerId(7 * i as u32 + 1),
            start_ms: 90_000 * (i + 1) + 7,
            end_ms: 90_000 * (i + 1) + 150_013,
        })
        .collect();
    let remotes = [
        static_remote(),
        RemoteModel::FairShare {
            transfer_ms: 700.0,
            ref_bytes: 0,
        },
    ];
    for policy in ["hadoop", "delay3", "dyndl-on", "fair"] {
        for out_of_band in [false, true] {
            for remote in remotes {
                let mut c = phased(out_of_band);
                let go = |c: &ReplayCluster| run(policy, c, &jobs, &bg, remote);
                let parked = go(&c);
                let mut hair = c.clone();
                hair.period_ms = vec![100.000_000_1; 30];
                let woken = go(&hair);
                c.record_decisions = true;
                let every = go(&c);
                let what = format!("{policy}, out of band {out_of_band}, {remote:?}");
                same(&parked, &every, &what);
                same(&woken, &every, &what);
                assert!(
                    parked.events * 5 < every.events && parked.events < woken.events,
                    "{what}: {} events parked, {} with every parked worker woken, {} not",
                    parked.events,
                    woken.events,
                    every.events
                );
            }
        }
    }
    // A policy whose idle offers may matter (rand draws at every offer)
    // keeps every heartbeat.
    let config: sched::policy::SchedulerConfig =
        "policy = 'rand', randomness = 0.5".parse().unwrap();
    let c = cluster(&[2; 30], 100, false);
    let mut s = build(&config, 3);
    let mut p = ReducePlacer::new(Default::default(), &config);
    let remote = RemoteModel::Static(RemoteCost::default());
    let o = replay(s.as_mut(), &mut p, &c, &jobs, &[], remote, 60_000).unwrap();
    assert!(o.events > 30 * 6_000, "{}", o.events);
}

#[test]
fn declined_offers_are_left_out_and_nothing_else_changes() {
    // Jobs arriving close together on 30 workers heartbeating every 100 ms,
    // so that maps nearly always wait: delay scheduling, whose waiting jobs
    // decline every worker that holds none of their blocks until a wait
    // ends, and DynDLOn, whose workers each wait on their own clock (one
    // that its heartbeats finding maps pending or not start and end), run
    // exactly the same with those offers left out (the decision record
    // takes every heartbeat), in fewer events. DynDLOn's per-core clock
    // keeps every such offer.
    let remote = static_remote();
    for (seed, span) in [(11, 30_000), (12, 60_000)] {
        let jobs = drawn_jobs(seed, 120, 30, span);
        for policy in [
            "delay3",
            "policy = 'delay', threshold_s = 0.5",
            "policy = 'delay', threshold_s = 0.5, wait_from = 'last-launch'",
            "dyndl-on",
            "policy = 'dyndl-on', w_s = 0.5, remote_s = 0.4",
            "policy = 'dyndl-on', w_s = 0.3, one_remote = false, order = 'fair'",
            "policy = 'dyndl-on', wait = 'core'",
        ] {
            let mut c = phased(false);
            let go = |c: &ReplayCluster| run(policy, c, &jobs, &[], remote);
            let parked = go(&c);
            c.record_decisions = true;
            let every = go(&c);
            let what = format!("{policy}, seed {seed}");
            same(&parked, &every, &what);
            assert!(
                parked.events * 2 < every.events,
                "{what}: {} events parked, {} not",
                parked.events,
                every.events
            );
        }
    }
}
