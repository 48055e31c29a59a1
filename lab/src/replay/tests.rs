use super::*;
use sched::decision::{Kind, Rule};
use sched::policy::build;

mod park;

mod reduces;

fn w(i: u32) -> WorkerId {
    WorkerId(i)
}

pub(super) fn job(id: u32, arrival_ms: u64, tasks: &[(u32, u64)]) -> ReplayJob {
    ReplayJob {
        id: JobId(id),
        arrival_ms,
        tasks: tasks
            .iter()
            .enumerate()
            .map(|(i, &(holder, ms))| ReplayTask {
                index: i as u32,
                replicas: vec![w(holder)],
                local_ms: ms,
                bytes: 0,
            })
            .collect(),
        reduces: Vec::new(),
        reduce_load: 0,
    }
}

/// Reduce tasks numbered `indices`, each lasting `ms`.
pub(super) fn reduce_tasks(indices: std::ops::Range<u32>, ms: u64) -> Vec<ReplayTask> {
    indices
        .map(|index| ReplayTask {
            index,
            replicas: Vec::new(),
            local_ms: ms,
            bytes: 0,
        })
        .collect()
}

pub(super) fn cluster(slots: &[u32], heartbeat_ms: u64, out_of_band: bool) -> ReplayCluster {
    ReplayCluster {
        slots: slots.to_vec(),
        heartbeat_ms,
        phase_ms: vec![0; slots.len()],
        period_ms: Vec::new(),
        out_of_band,
        runs_maps: Vec::new(),
        runs_reduces: Vec::new(),
        jitter_ms: 0,
        jitter_seed: 0,
        record_decisions: false,
        host_ms_per_start: 0.0,
        slowdown: Vec::new(),
        speculation: Default::default(),
        recorded_beats: Vec::new(),
        measured_ms: Default::default(),
        disk: None,
        shuffle_net: None,
    }
}

#[test]
fn the_host_term_lengthens_a_map_by_the_launches_just_before_it() {
    // Three local maps of 1 s on three one-slot workers, all launched at
    // t = 0, then a fourth on worker 0 when its first ends.
    let jobs = [job(1, 0, &[(0, 1_000), (1, 1_000), (2, 1_000), (0, 1_000)])];
    let mut c = cluster(&[1, 1, 1], 100, true);
    let plain = run(&c, &jobs, &[], RemoteCost::default());
    let len = |o: &ReplayOutcome| -> Vec<u64> {
        let mut v: Vec<u64> = o.runs.iter().map(|r| r.end_ms - r.start_ms).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(len(&plain), [1_000; 4]);
    c.host_ms_per_start = 50.0;
    let o = run(&c, &jobs, &[], RemoteCost::default());
    // The three at t = 0 saw 0, 1 and 2 launches before them; the fourth,
    // 1 s or more later, none within the window.
    assert_eq!(len(&o), [1_000, 1_000, 1_050, 1_100]);
}

pub(super) fn run(
    c: &ReplayCluster,
    jobs: &[ReplayJob],
    bg: &[BackgroundRun],
    cost: RemoteCost,
) -> ReplayOutcome {
    run_with(c, jobs, bg, RemoteModel::Static(cost))
}

pub(super) fn run_with(
    c: &ReplayCluster,
    jobs: &[ReplayJob],
    bg: &[BackgroundRun],
    remote: RemoteModel,
) -> ReplayOutcome {
    let config: sched::policy::SchedulerConfig = "hadoop".parse().unwrap();
    let mut s = build(&config, 1);
    let mut p = ReducePlacer::new(Default::default(), &config);
    replay(s.as_mut(), &mut p, c, jobs, bg, remote, 60_000).unwrap()
}

#[test]
fn slots_free_up_at_heartbeats_unless_out_of_band() {
    let jobs = [job(1, 0, &[(0, 1_000), (0, 1_000)])];
    // One slot, heartbeats every 1.5 s: the second task waits for 1.5 s.
    let o = run(
        &cluster(&[1], 1_500, false),
        &jobs,
        &[],
        RemoteCost::default(),
    );
    let starts: Vec<u64> = o.runs.iter().map(|r| r.start_ms).collect();
    assert_eq!(starts, [0, 1_500]);
    // The master learns of the last map's end (2.5 s) at the worker's next
    // heartbeat (3 s): the job ends then, as its report says on the real
    // master.
    assert_eq!(o.jobs, [(JobId(1), 0, 3_000)]);
    // Out-of-band: it starts when the first ends.
    let o = run(
        &cluster(&[1], 1_500, true),
        &jobs,
        &[],
        RemoteCost::default(),
    );
    assert_eq!(o.jobs, [(JobId(1), 0, 2_000)]);
    assert!((o.mean_jct_s() - 2.0).abs() < 1e-9);
    // A measured period of 1.6 s: the second starts at 1.6 s.
    let mut c = cluster(&[1], 1_500, false);
    c.period_ms = vec![1_600.0];
    let o = run(&c, &jobs, &[], RemoteCost::default());
    assert_eq!(o.runs[1].start_ms, 1_600);
}

#[test]
fn jobs_wait_for_their_arrival_and_background_holds_slots() {
    // The slot is held by a background process until 3.05 s; the job
    // arrives at 0.2 s: its task starts at the first heartbeat after both.
    let bg = [BackgroundRun {
        worker: w(0),
        start_ms: 0,
        end_ms: 3_050,
    }];
    let jobs = [job(1, 200, &[(0, 1_000)])];
    let o = run(
        &cluster(&[1], 100, false),
        &jobs,
        &bg,
        RemoteCost::default(),
    );
    assert_eq!(o.runs[0].start_ms, 3_100);
    assert!((o.makespan_s() - 4.1).abs() < 1e-9, "{o:?}");
}

#[test]
fn remote_reads_cost_more_with_others_on_the_source_and_reader() {
    // Worker 1 holds every block but is busy; worker 0 (2 slots) reads both.
    let bg = [BackgroundRun {
        worker: w(1),
        start_ms: 0,
        end_ms: 100_000,
    }];
    let jobs = [job(1, 0, &[(1, 1_000), (1, 1_000)])];
    let cost = RemoteCost {
        base_ms: 500.0,
        per_source_ms: 300.0,
        per_reader_ms: 100.0,
        per_mb_ms: 0.0,
        ref_bytes: 0,
    };
    let o = run(&cluster(&[2, 1], 100, false), &jobs, &bg, cost);
    assert!(o.runs.iter().all(|r| r.is_remote() && r.worker == w(0)));
    let lens: Vec<u64> = o.runs.iter().map(|r| r.end_ms - r.start_ms).collect();
    // The first alone; the second with one read on its source and reader.
    assert_eq!(lens, [1_500, 1_900]);
    assert_eq!(o.remote_tasks(), 2);
    assert_eq!(cost.extra_ms(0, 0, 8_000_000), 500, "no per-byte term");
    let cheap = RemoteCost {
        base_ms: -900.0,
        ..cost
    };
    assert_eq!(cheap.extra_ms(1, 0, 0), 0, "never negative");
}

#[test]
fn a_remote_read_costs_by_the_byte_under_either_model() {
    // Worker 1 holds both blocks and is busy: a 0.5 MB block and a 2 MB
    // one, read by worker 0 one after the other (1 slot).
    let bg = [BackgroundRun {
        worker: w(1),
        start_ms: 0,
        end_ms: 100_000,
    }];
    let mut jobs = [job(1, 0, &[(1, 100), (1, 100)])];
    jobs[0].tasks[0].bytes = 500_000;
    jobs[0].tasks[1].bytes = 2_000_000;
    let c = cluster(&[1, 1], 100, true);
    let lens = |remote| {
        let o = run_with(&c, &jobs, &bg, remote);
        o.runs
            .iter()
            .map(|r| r.end_ms - r.start_ms)
            .collect::<Vec<_>>()
    };
    let per_mb = RemoteModel::Static(RemoteCost {
        base_ms: 50.0,
        per_mb_ms: 1_000.0,
        ..Default::default()
    });
    assert_eq!(lens(per_mb), [650, 2_150]);
    // Fair share: 1 s alone for a 1 MB reference block.
    let fair = RemoteModel::FairShare {
        transfer_ms: 1_000.0,
        ref_bytes: 1_000_000,
    };
    assert_eq!(lens(fair), [600, 2_100]);
    // Without a reference every block takes the same time alone.
    let flat = RemoteModel::FairShare {
        transfer_ms: 1_000.0,
        ref_bytes: 0,
    };
    assert_eq!(lens(flat), [1_100, 1_100]);
}

#[test]
fn a_policy_that_never_launches_is_reported() {
    // Strict locality with the only holder fully busy for ever.
    let bg = [BackgroundRun {
        worker: w(1),
        start_ms: 0,
        end_ms: u64::MAX,
    }];
    let jobs = [job(1, 0, &[(1, 1_000)])];
    let config: sched::policy::SchedulerConfig = "fifo-s".parse().unwrap();
    let mut s = build(&config, 1);
    let mut p = ReducePlacer::new(Default::default(), &config);
    let remote = RemoteModel::Static(RemoteCost::default());
    let c = cluster(&[1, 1], 100, false);
    let e = replay(s.as_mut(), &mut p, &c, &jobs, &bg, remote, 5_000).unwrap_err();
    assert_eq!((e.unassigned, e.tasks), (1, 1));
}

#[test]
fn fair_share_transfers_slow_each_other_while_they_overlap() {
    // Worker 2 holds every block and is busy; workers 0 and 1 (2 slots
    // each) read from it. A transfer takes 1 s alone.
    let bg = [BackgroundRun {
        worker: w(2),
        start_ms: 0,
        end_ms: 100_000,
    }];
    let remote = RemoteModel::FairShare {
        transfer_ms: 1_000.0,
        ref_bytes: 0,
    };
    // One task: 1 s of transfer, then 0.5 s of its own.
    let one = [job(1, 0, &[(2, 500)])];
    let o = run_with(&cluster(&[2, 2, 1], 100, false), &one, &bg, remote);
    assert_eq!((o.runs[0].start_ms, o.runs[0].end_ms), (0, 1_500));
    // Two at once on worker 0: they share the source's uplink (2 s each).
    let two = [job(1, 0, &[(2, 500), (2, 500)])];
    let o = run_with(&cluster(&[2, 2, 1], 100, false), &two, &bg, remote);
    let ends: Vec<u64> = o.runs.iter().map(|r| r.end_ms).collect();
    assert_eq!(ends, [2_500, 2_500]);
    // One starts at 0, the other at 0.5 s (worker 1's first heartbeat):
    // the first runs alone 0.5 s, both share for 1 s, then the second ends
    // its last 0.5 s alone.
    let mut c = cluster(&[1, 1, 1], 100, false);
    c.phase_ms = vec![0, 500, 0];
    c.heartbeat_ms = 5_000;
    let o = run_with(&c, &two, &bg, remote);
    let spans: Vec<(u64, u64)> = o.runs.iter().map(|r| (r.start_ms, r.end_ms)).collect();
    assert_eq!(spans, [(0, 2_000), (500, 2_500)]);
}

#[test]
fn an_arriving_job_wakes_idle_workers_if_out_of_band() {
    // Heartbeats every 10 s from 0; the job arrives at 1.2 s.
    let jobs = [job(1, 1_200, &[(0, 500), (1, 500)])];
    let starts = |oob: bool| -> Vec<u64> {
        let o = run(
            &cluster(&[1, 1], 10_000, oob),
            &jobs,
            &[],
            RemoteCost::default(),
        );
        o.runs.iter().map(|r| r.start_ms).collect()
    };
    // Without out-of-band heartbeats the tasks wait for the next interval.
    assert_eq!(starts(false), [10_000, 10_000]);
    // With them, the master wakes both idle workers when the job arrives.
    assert_eq!(starts(true), [1_200, 1_200]);
}

#[test]
fn the_workers_an_arrival_wakes_answer_in_a_drawn_order_not_by_number() {
    // Four idle one-slot workers, heartbeats 10 s apart; 200 one-map jobs
    // arriving 1 s apart between them, each map's block on worker i % 4.
    // Hadoop launches a job's map on the first worker offered it, so the
    // map's worker is whichever woken heartbeat reached the master first.
    let jobs: Vec<ReplayJob> = (0..200u32)
        .map(|i| job(i + 1, 500 + 1_000 * u64::from(i), &[(i % 4, 100)]))
        .collect();
    let firsts = |seed: u64| -> Vec<u32> {
        let mut c = cluster(&[1, 1, 1, 1], 10_000, true);
        c.jitter_seed = seed;
        let o = run(&c, &jobs, &[], RemoteCost::default());
        let mut runs: Vec<(u64, u32)> = o.runs.iter().map(|r| (r.start_ms, r.worker.0)).collect();
        runs.sort_unstable();
        assert_eq!(runs.len(), 200);
        // Each launched at its arrival, as the wake asked.
        assert!(runs.iter().all(|&(t, _)| t % 1_000 == 500), "{runs:?}");
        runs.into_iter().map(|(_, w)| w).collect()
    };
    let a = firsts(3);
    // Every worker answers first about as often (a quarter of 200 = 50
    // each; by number, worker 0 would take all 200).
    for w in 0..4 {
        let n = a.iter().filter(|&&x| x == w).count();
        assert!((25..=75).contains(&n), "worker {w} first {n} times: {a:?}");
    }
    // The order is the run's: the same seed draws it again, another not.
    assert_eq!(firsts(3), a);
    assert_ne!(firsts(4), a);
}

#[test]
fn heartbeat_jitter_delays_each_beat_within_its_bound_and_reorders_workers() {
    // Two workers with one slot, both heartbeating at the same phase; a long
    // stream of 1 ms tasks that either may run, so each heartbeat launches
    // one: the launch times are the heartbeat times.
    let tasks: Vec<(u32, u64)> = (0..400).map(|i| (i % 2, 1)).collect();
    let mut j = job(1, 0, &tasks);
    for t in &mut j.tasks {
        t.replicas = vec![w(0), w(1)];
    }
    let starts = |jitter_ms: u64| {
        let mut c = cluster(&[1, 1], 1_000, false);
        c.jitter_ms = jitter_ms;
        c.jitter_seed = 7;
        let o = run(&c, std::slice::from_ref(&j), &[], RemoteCost::default());
        o.runs
            .iter()
            .map(|r| (r.start_ms, r.worker.0))
            .collect::<Vec<_>>()
    };
    let on_time = starts(0);
    assert!(on_time.iter().all(|&(t, _)| t % 1_000 == 0), "{on_time:?}");
    let late = starts(50);
    assert_eq!(late.len(), on_time.len());
    assert!(late.iter().all(|&(t, _)| t % 1_000 <= 50), "{late:?}");
    // Which worker's heartbeat comes first in a round varies.
    let first: std::collections::BTreeSet<u32> = late
        .chunks(2)
        .filter(|c| c.len() == 2 && c[0].0 != c[1].0)
        .map(|c| c[0].1)
        .collect();
    assert_eq!(first.len(), 2, "{late:?}");
}

#[test]
fn without_out_of_band_heartbeats_a_map_counts_running_until_its_worker_reports() {
    // Job 1's map on w0 ends at 0.1 s. When w1 heartbeats at 0.5 s, fair
    // order sees job 1 still running it unless w0 has reported since: then
    // job 2 (none running) goes first; once w0 has reported (w0 heartbeating
    // every 0.4 s), job 1 (older, equal share) does.
    let jobs = [job(1, 0, &[(0, 100), (1, 100)]), job(2, 0, &[(1, 100)])];
    let config: sched::policy::SchedulerConfig =
        "policy = 'delay', threshold_s = 100".parse().unwrap();
    let on_w1_at_500 = |w0_period_ms: f64| {
        let mut c = cluster(&[1, 1], 1_500, false);
        c.phase_ms = vec![0, 500];
        c.period_ms = vec![w0_period_ms, 1_500.0];
        let mut s = build(&config, 1);
        let mut p = ReducePlacer::new(Default::default(), &config);
        let remote = RemoteModel::Static(RemoteCost::default());
        let o = replay(s.as_mut(), &mut p, &c, &jobs, &[], remote, 60_000).unwrap();
        o.runs
            .iter()
            .find(|r| r.worker == w(1) && r.start_ms == 500)
            .map(|r| r.task.job)
    };
    assert_eq!(on_w1_at_500(1_500.0), Some(JobId(2)));
    assert_eq!(on_w1_at_500(400.0), Some(JobId(1)));
}

/// The decision record changes nothing a run does, and has one row per
/// launch, for every policy of the suite: the same launches at the same
/// times with the record on and off; every map row matches a task run
/// (worker, source, start); remote rows of the delay family say their wait
/// was over, and DELAY's declined offers say the wait was not.
#[test]
fn the_decision_record_changes_nothing_and_has_a_row_per_launch() {
    use sched::decision::{Kind, Rule};
    // Three workers, most data on w0: jobs must wait, then go remote.
    let mut jobs: Vec<ReplayJob> = (0..4)
        .map(|j| {
            let tasks: Vec<(u32, u64)> = (0..8)
                .map(|i| (if i % 4 == 3 { 1 } else { 0 }, 2_000 + 100 * i as u64))
                .collect();
            job(j + 1, 300 * j as u64, &tasks)
        })
        .collect();
    jobs[3].reduces = reduce_tasks(0..1, 200);
    for (policy, example) in sched::policy::SchedulerConfig::examples() {
        let config: sched::policy::SchedulerConfig = example.parse().unwrap();
        let go = |record: bool| {
            let mut c = cluster(&[2, 2, 2], 100, true);
            c.record_decisions = record;
            let mut s = build(&config, 7);
            let mut p = ReducePlacer::new(Default::default(), &config);
            let remote = RemoteModel::Static(RemoteCost {
                base_ms: 300.0,
                ..Default::default()
            });
            replay(s.as_mut(), &mut p, &c, &jobs, &[], remote, 60_000)
        };
        let (Ok(off), Ok(on)) = (go(false), go(true)) else {
            // A policy that cannot run this workload (e.g. one needing a
            // public cloud) fails alike either way.
            assert_eq!(go(false).is_ok(), go(true).is_ok(), "{example}");
            continue;
        };
        assert!(off.decisions.is_empty());
        assert_eq!(off.runs, on.runs, "{example}");
        assert_eq!(off.jobs, on.jobs, "{example}");
        let maps: Vec<_> = on
            .decisions
            .iter()
            .filter(|d| d.kind == Kind::Map)
            .collect();
        let reduces = on
            .decisions
            .iter()
            .filter(|d| d.kind == Kind::Reduce)
            .count();
        assert_eq!(
            maps.len(),
            on.runs.iter().filter(|r| !r.reduce).count(),
            "{example}"
        );
        assert_eq!(
            reduces,
            on.runs.iter().filter(|r| r.reduce).count(),
            "{example}"
        );
        for d in &maps {
            let r = on
                .runs
                .iter()
                .find(|r| Some(r.task.job) == d.job && Some(r.task.index) == d.task)
                .unwrap_or_else(|| panic!("{example}: no run for {d:?}"));
            assert_eq!(
                (Some(r.worker), Some(r.source)),
                (d.worker, d.source),
                "{example}"
            );
            assert_eq!(r.start_ms, d.time_ms, "{example}: {d:?}");
            assert!(d.replicas.contains(&r.source), "{example}: {d:?}");
            if d.rule == Rule::WaitOver {
                assert!(d.waited_ms >= d.threshold_ms, "{example}: {d:?}");
            }
            if d.rule == Rule::DataLocal {
                assert_eq!(d.worker, d.source, "{example}: {d:?}");
            }
        }
        for d in on.decisions.iter().filter(|d| d.rule == Rule::Waiting) {
            assert_eq!(d.kind, Kind::Idle);
            if let (Some(w), Some(t)) = (d.waited_ms, d.threshold_ms) {
                assert!(w < t, "{example}: {d:?}");
            }
        }
        if policy == "delay" {
            let remote = maps.iter().filter(|d| d.worker != d.source).count();
            assert!(remote > 0, "{example}: no remote launch");
            assert!(
                maps.iter()
                    .filter(|d| d.worker != d.source)
                    .all(|d| matches!(d.rule, Rule::WaitOver | Rule::RemoteLevel)),
                "{example}"
            );
            assert!(
                on.decisions.iter().any(|d| d.rule == Rule::Waiting),
                "{example}: no declined offer"
            );
        }
    }
}

/// The real cluster's speculation test, simulated: 4 workers of 2 slots,
/// 32 one-second maps with two replicas each, one worker ten times slower.
/// Without speculation its two first maps hold the job for 10 s; with it,
/// backups on the fast workers finish them, and the job ends close to
/// its time without the slow worker.
#[test]
fn speculation_rescues_the_job_from_a_slow_worker_in_the_replay() {
    let tasks: Vec<ReplayTask> = (0..32u32)
        .map(|i| ReplayTask {
            index: i,
            replicas: vec![w(i % 4), w((i + 1) % 4)],
            local_ms: 1_000,
            bytes: 0,
        })
        .collect();
    let jobs = [ReplayJob {
        id: JobId(1),
        arrival_ms: 0,
        tasks,
        reduces: Vec::new(),
        reduce_load: 0,
    }];
    let jct = |slow: bool, speculate: bool| {
        let mut c = cluster(&[2, 2, 2, 2], 100, true);
        if slow {
            c.slowdown = vec![1.0, 1.0, 1.0, 10.0];
        }
        if speculate {
            c.speculation = sched::speculation::Speculation::on();
        }
        let o = run(&c, &jobs, &[], RemoteCost::default());
        assert_eq!(o.runs.len(), 32, "one successful run per map");
        (o.jobs[0].2, o.runs)
    };
    let (base, _) = jct(false, false);
    let (off, _) = jct(true, false);
    let (on, runs) = jct(true, true);
    let counted = {
        let mut c = cluster(&[2, 2, 2, 2], 100, true);
        c.slowdown = vec![1.0, 1.0, 1.0, 10.0];
        c.speculation = sched::speculation::Speculation::on();
        let o = run(&c, &jobs, &[], RemoteCost::default());
        (o.backups, o.backups_won)
    };
    assert_eq!(counted, (2, 2), "w3's two first maps backed up, both won");
    eprintln!("JCT: {base} ms without the slow worker; with it {off} ms, {on} ms with speculation");
    assert_eq!(base, 4_000, "four rounds of eight maps");
    assert!(off >= 10_000, "w3's first two maps take 10 s: {off}");
    assert!(on * 2 <= base * 3, "within 1.5x: {on} ms against {base} ms");
    // The slow worker's two first maps were overtaken: each finished on a
    // fast worker.
    let slow_first: Vec<&TaskRun> = runs
        .iter()
        .filter(|r| r.start_ms == 0 && r.worker == w(3))
        .collect();
    assert!(slow_first.is_empty(), "{slow_first:?}");
    // Off, the same rule changes nothing.
    let (again, _) = jct(true, false);
    assert_eq!(again, off);
}

/// A slow reduce, simulated: five one-slot workers, the fifth runs only
/// reduces and ten times slower; eight 1 s maps on the others, then five
/// 2 s reduces, one on each worker. Without speculation the slow worker's
/// reduce holds the job for 20 s; with it, a fast worker that finished its
/// own reduce runs a backup of it, which wins.
#[test]
fn speculation_backs_up_a_slow_reduce_in_the_replay() {
    let tasks: Vec<ReplayTask> = (0..8u32)
        .map(|i| ReplayTask {
            index: i,
            replicas: vec![w(i % 4), w((i + 1) % 4)],
            local_ms: 1_000,
            bytes: 0,
        })
        .collect();
    let reduces = reduce_tasks(8..13, 2_000);
    let jobs = [ReplayJob {
        id: JobId(1),
        arrival_ms: 0,
        tasks,
        reduces,
        reduce_load: 0,
    }];
    let jct = |speculate: bool| {
        let mut c = cluster(&[1; 5], 100, true);
        c.runs_maps = vec![true, true, true, true, false];
        c.slowdown = vec![1.0, 1.0, 1.0, 1.0, 10.0];
        c.record_decisions = true;
        if speculate {
            c.speculation = sched::speculation::Speculation::on();
        }
        let o = run(&c, &jobs, &[], RemoteCost::default());
        assert_eq!(o.runs.len(), 13, "one successful run per task");
        o
    };
    let off = jct(false);
    let on = jct(true);
    let (off_ms, on_ms) = (off.jobs[0].2, on.jobs[0].2);
    eprintln!("JCT with a slow reduce: {off_ms} ms, {on_ms} ms with speculation");
    assert!(
        off_ms >= 22_000,
        "maps 2 s, then the slow reduce 20 s: {off_ms}"
    );
    // The reduces start at 2 s and the fast ones end at 4 s; a backup then
    // takes 2 s.
    assert!(on_ms <= 6_500, "{on_ms}");
    let slow = on.runs.iter().find(|r| r.worker == w(4));
    assert!(slow.is_none(), "the slow worker's reduce lost: {slow:?}");
    let backups: Vec<_> = on
        .decisions
        .iter()
        .filter(|d| d.rule == Rule::Backup)
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(backups[0].kind, Kind::Reduce);
    assert_eq!((on.backups, on.backups_won), (1, 1));
    assert_eq!((off.backups, off.backups_won), (0, 0));
    assert!(off.decisions.iter().all(|d| d.rule != Rule::Backup));
}

#[test]
fn recorded_heartbeats_come_at_their_times_and_ties_in_the_records_order() {
    // Three one-slot workers; a job whose two maps are held by w0 and w1.
    let jobs = [job(1, 0, &[(0, 500), (1, 500)]), job(2, 5_000, &[(0, 100)])];
    let mut c = cluster(&[1, 1, 1], 1_000, false);
    c.record_decisions = true;
    // Fitted phases alike: the three tie at 0 and go by number, so each
    // map runs where its block is.
    let o = run(&c, &jobs, &[], RemoteCost::default());
    let on = |o: &ReplayOutcome, i: u32| o.runs.iter().find(|r| r.task.index == i).unwrap().worker;
    assert_eq!((on(&o, 0), on(&o, 1)), (w(0), w(1)));
    // The record's order at 50 ms: w2 first takes map 0 remotely (Hadoop's
    // default does not wait), w1 its own map, and w0 finds nothing left.
    c.recorded_beats = vec![
        (50, 2),
        (50, 1),
        (50, 0),
        (1_200, 1),
        (1_200, 0),
        (1_200, 2),
    ];
    let o = run(&c, &jobs, &[], RemoteCost::default());
    assert_eq!((on(&o, 0), on(&o, 1)), (w(2), w(1)));
    assert!(o
        .runs
        .iter()
        .filter(|r| r.task.job == JobId(1))
        .all(|r| r.start_ms == 50));
    let offers: Vec<(u64, u32)> = o
        .inputs
        .iter()
        .filter_map(|i| match i {
            sched::input::Input::Offer { now, worker } => Some((*now, worker.0)),
            _ => None,
        })
        .collect();
    assert_eq!(offers[..6], c.recorded_beats[..]);
    // After its last recorded heartbeat each worker goes on every period
    // (phase 0): the job arriving at 5 s starts at its first heartbeat.
    assert!(offers[6..]
        .iter()
        .all(|&(t, _)| t % 1_000 == 0 && t >= 2_000));
    let late = o.runs.iter().find(|r| r.task.job == JobId(2)).unwrap();
    assert_eq!(late.start_ms, 5_000);
}

#[test]
fn with_a_record_an_arrival_wakes_nobody_but_a_simulated_end_does() {
    // One one-slot worker heartbeating out of band; two local maps of
    // 200 ms arriving at 100 ms.
    let jobs = [job(1, 100, &[(0, 200), (0, 200)])];
    let mut c = cluster(&[1], 1_000, true);
    let starts = |o: &ReplayOutcome| -> Vec<u64> { o.runs.iter().map(|r| r.start_ms).collect() };
    // Fitted: the arrival wakes the worker at once.
    assert_eq!(
        starts(&run(&c, &jobs, &[], RemoteCost::default())),
        [100, 300]
    );
    // Recorded: the first heartbeat after the arrival is the record's
    // (300 ms); the first map's simulated end (500 ms) still heartbeats,
    // not waiting for the recorded one at 1.3 s.
    c.recorded_beats = vec![(300, 0), (1_300, 0)];
    assert_eq!(
        starts(&run(&c, &jobs, &[], RemoteCost::default())),
        [300, 500]
    );
}

#[test]
fn a_task_run_where_it_ran_for_real_lasts_its_measured_length() {
    // Two maps of 1 s held by w0, two one-slot workers: map 0 runs locally
    // on w0, map 1 remotely on w1 (Hadoop's default does not wait), the
    // remote read costing 500 ms.
    let jobs = [job(1, 0, &[(0, 1_000), (0, 1_000)])];
    let mut c = cluster(&[1, 1], 100, true);
    let cost = RemoteCost {
        base_ms: 500.0,
        ..Default::default()
    };
    let len = |o: &ReplayOutcome, i: u32| {
        let r = o.runs.iter().find(|r| r.task.index == i).unwrap();
        (r.worker, r.end_ms - r.start_ms)
    };
    let o = run(&c, &jobs, &[], cost);
    assert_eq!((len(&o, 0), len(&o, 1)), ((w(0), 1_000), (w(1), 1_500)));
    // Measured: map 0 on w0 lasted 700 ms, map 1 on w1 from w0 2 s; map
    // 1's length on w0 does not apply where it runs on w1.
    c.measured_ms
        .insert((JobId(1), 0, false), vec![(0, 0, 700)]);
    c.measured_ms
        .insert((JobId(1), 1, false), vec![(0, 0, 50), (1, 0, 2_000)]);
    let o = run(&c, &jobs, &[], cost);
    assert_eq!((len(&o, 0), len(&o, 1)), ((w(0), 700), (w(1), 2_000)));
    c.measured_ms.insert((JobId(1), 1, false), vec![(0, 0, 50)]);
    let o = run(&c, &jobs, &[], cost);
    assert_eq!(len(&o, 1), (w(1), 1_500));
}

/// `job` with every map reading `bytes`.
fn sized(mut j: ReplayJob, bytes: u64) -> ReplayJob {
    for t in &mut j.tasks {
        t.bytes = bytes;
    }
    j
}

#[test]
fn a_shared_disk_slows_the_reads_on_it_local_and_served_alike() {
    let disk = |slot_mbs| {
        Some(DiskShare {
            mbs: vec![1.0, 1.0],
            slot_mbs,
        })
    };
    let spans = |o: &ReplayOutcome| -> Vec<(u64, u64, u32)> {
        o.runs
            .iter()
            .map(|r| (r.start_ms, r.end_ms, r.worker.0))
            .collect()
    };
    // Two maps of 1 MB on worker 0 (2 slots), 0.5 s each besides the
    // read, on a 1 MB/s disk: they share it for 2 s.
    let two = [sized(job(1, 0, &[(0, 500), (0, 500)]), 1_000_000)];
    let mut c = cluster(&[2, 1], 100, false);
    let plain = run(&c, &two, &[], RemoteCost::default());
    assert_eq!(spans(&plain), [(0, 500, 0), (0, 500, 0)]);
    c.disk = disk(0.0);
    let o = run(&c, &two, &[], RemoteCost::default());
    assert_eq!(spans(&o), [(0, 2_500, 0), (0, 2_500, 0)]);
    // Paced at 0.8 MB/s: alone the read takes 1 s but the map lasts at
    // least 1.25 s before its own 0.5 s; two reads together take 2 s.
    c.disk = disk(0.8);
    let one = [sized(job(1, 0, &[(0, 500)]), 1_000_000)];
    assert_eq!(
        spans(&run(&c, &one, &[], RemoteCost::default())),
        [(0, 1_750, 0)]
    );
    assert_eq!(
        spans(&run(&c, &two, &[], RemoteCost::default())),
        [(0, 2_500, 0), (0, 2_500, 0)]
    );
    // One slot each: worker 1 reads the second block from worker 0's disk
    // (no extra of its own), sharing it with worker 0's local read.
    let mut c = cluster(&[1, 1], 100, false);
    c.disk = disk(0.0);
    let o = run(&c, &two, &[], RemoteCost::default());
    assert_eq!(spans(&o), [(0, 2_500, 0), (0, 2_500, 1)]);
    assert_eq!(o.remote_tasks(), 1);
}

#[test]
fn a_reduce_fetching_map_output_loads_the_disks_its_maps_ran_on() {
    // Job 1: one map of 1 MB on worker 0, then a reduce of 1 MB of input
    // on worker 1 (reduces only there). Job 2 arrives at 1.5 s: a map of
    // 1 MB on worker 0, whose read shares the disk with the fetch.
    let mut j1 = sized(job(1, 0, &[(0, 0)]), 1_000_000);
    j1.reduces = reduce_tasks(1..2, 100);
    let j2 = sized(job(2, 1_500, &[(0, 0)]), 1_000_000);
    let mut c = cluster(&[2, 1], 100, true);
    c.runs_maps = vec![true, false];
    c.runs_reduces = vec![false, true];
    c.disk = Some(DiskShare {
        mbs: vec![1.0, 1.0],
        slot_mbs: 0.0,
    });
    let second_map = |load: u64| {
        let mut j1 = j1.clone();
        j1.reduce_load = load;
        let o = run(&c, &[j1, j2.clone()], &[], RemoteCost::default());
        let r = o.runs.iter().find(|r| r.task.job == JobId(2)).unwrap();
        (r.start_ms, r.end_ms)
    };
    // Without map output to fetch: 1 s alone from 1.5 s.
    assert_eq!(second_map(0), (1_500, 2_500));
    // The reduce starts when the map ends (1 s: the master wakes worker 1,
    // idle and out of band) and fetches 1 MB: 0.5 MB alone until 1.5 s,
    // then both at half the disk; the fetch ends at 2.5 s, the map has
    // read 0.5 MB and reads the rest alone by 3 s.
    assert_eq!(second_map(1_000_000), (1_500, 3_000));
}
