//! Reduces: when they may start and where they go.

use super::*;

#[test]
fn reduces_wait_for_the_maps_and_go_where_the_placer_says() {
    // Two map machines, two reduce machines (1 slot each); a job of two
    // maps (1 s) and two reduces (2 s).
    let mut j = job(1, 0, &[(0, 1_000), (1, 1_000)]);
    j.reduces = reduce_tasks(2..4, 2_000);
    j.reduce_load = 100;
    let mut c = cluster(&[1, 1, 1, 1], 100, false);
    c.runs_maps = vec![true, true, false, false];
    c.runs_reduces = vec![false, false, true, true];
    let config: sched::policy::SchedulerConfig = "eas".parse().unwrap();
    let mut s = build(&config, 1);
    // EAS's own placement (Algorithm 3): one reduce to each machine.
    let mut p = ReducePlacer::new(Default::default(), &config);
    let remote = RemoteModel::Static(RemoteCost::default());
    let o = replay(s.as_mut(), &mut p, &c, &[j], &[], remote, 60_000).unwrap();
    let reduces: Vec<&TaskRun> = o.runs.iter().filter(|r| r.reduce).collect();
    assert_eq!(reduces.len(), 2);
    // Not before the last map's end (1 s), on the two reduce machines.
    assert!(reduces.iter().all(|r| r.start_ms >= 1_000), "{reduces:?}");
    let mut on: Vec<u32> = reduces.iter().map(|r| r.worker.0).collect();
    on.sort();
    assert_eq!(on, [2, 3]);
    assert!(o.runs.iter().filter(|r| !r.reduce).all(|r| r.worker.0 < 2));
    assert_eq!(o.jobs[0].2, reduces.iter().map(|r| r.end_ms).max().unwrap());
}

#[test]
fn a_jobs_last_map_wakes_the_other_idle_workers_for_its_reduces_if_out_of_band() {
    // Heartbeats every 10 s; maps of 1 s on w0 and 1.5 s on w1, then two
    // reduces of 2 s, placed one per heartbeat.
    let mut j = job(1, 0, &[(0, 1_000), (1, 1_500)]);
    j.reduces = reduce_tasks(2..4, 2_000);
    j.reduce_load = 100;
    let reduce_starts = |oob: bool| -> Vec<(u32, u64)> {
        let o = run(
            &cluster(&[1, 1], 10_000, oob),
            std::slice::from_ref(&j),
            &[],
            RemoteCost::default(),
        );
        let mut v: Vec<(u32, u64)> = o
            .runs
            .iter()
            .filter(|r| r.reduce)
            .map(|r| (r.worker.0, r.start_ms))
            .collect();
        v.sort_unstable();
        v
    };
    // w1's heartbeat at its map's end takes one; the master wakes w0, idle
    // since 1 s, for the other at once rather than at its next interval.
    assert_eq!(reduce_starts(true), [(0, 1_500), (1, 1_500)]);
    // Without out-of-band heartbeats the maps' ends are reported at 10 s,
    // w1's releasing the reduces; w0 takes the other at its next interval.
    assert_eq!(reduce_starts(false), [(0, 20_000), (1, 10_000)]);
}

#[test]
fn a_released_reduce_its_own_worker_takes_wakes_nobody() {
    // Job 1: maps of 1 s on w0 and 1.5 s on w1, then one reduce of 2 s.
    // Job 2 arrives at 1.2 s with one map whose block is on w1 only: w0,
    // woken by the arrival, declines it (delay scheduling, 0.2 s).
    let mut j1 = job(1, 0, &[(0, 1_000), (1, 1_500)]);
    j1.reduces = reduce_tasks(2..3, 2_000);
    j1.reduce_load = 100;
    let j2 = job(2, 1_200, &[(1, 500)]);
    let config: sched::policy::SchedulerConfig =
        "policy = 'delay', threshold_s = 0.2".parse().unwrap();
    let mut s = build(&config, 1);
    let mut p = ReducePlacer::new(Default::default(), &config);
    let remote = RemoteModel::Static(RemoteCost::default());
    let c = cluster(&[1, 1], 10_000, true);
    let o = replay(s.as_mut(), &mut p, &c, &[j1, j2], &[], remote, 60_000).unwrap();
    let at = |job: u32, reduce: bool| {
        let r = o
            .runs
            .iter()
            .find(|r| r.task.job == JobId(job) && r.reduce == reduce)
            .unwrap();
        (r.worker.0, r.start_ms)
    };
    // w1's heartbeat at its map's end takes the reduce, leaving no more
    // waiting than before: w0 is not woken (woken at 1.5 s it would have
    // run job 2's map remotely), and the map runs on w1 after the reduce.
    assert_eq!(at(1, true), (1, 1_500));
    assert_eq!(at(2, false), (1, 3_500));
}
