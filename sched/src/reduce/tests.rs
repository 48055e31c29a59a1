use super::*;
use crate::view::SchedError;

fn w(i: u32) -> WorkerId {
    WorkerId(i)
}

fn t(job: u32, index: u32) -> TaskRef {
    TaskRef {
        job: JobId(job),
        index,
    }
}

/// `n` workers with `slots` slots each, all free.
fn cluster(n: u32, slots: u32) -> ClusterView {
    let mut v = ClusterView::new();
    for i in 0..n {
        v.upsert_worker(w(i), slots);
    }
    v
}

/// Job `job`'s reduces (task indices `maps..maps + reduces`) wait, each
/// expected to read `load` bytes, its map output on `output`.
fn reduces(v: &mut ClusterView, job: u32, maps: u32, n: u32, load: u64, output: &[(u32, u64)]) {
    v.add_reduces(
        JobId(job),
        maps..maps + n,
        load,
        output.iter().map(|&(i, b)| (w(i), b)).collect(),
    );
}

fn placer(p: ReducePlacement) -> ReducePlacer {
    ReducePlacer::new(p, &SchedulerConfig::hadoop())
}

#[test]
fn policy_means_algorithm_3_for_eas_and_spread_for_the_rest() {
    let eas = ReducePlacer::new(
        ReducePlacement::Policy,
        &SchedulerConfig::Eas(Default::default()),
    );
    assert_eq!(eas.placement(), ReducePlacement::LeastLoaded);
    assert_eq!(
        placer(ReducePlacement::Policy).placement(),
        ReducePlacement::Spread
    );
    let forced = ReducePlacer::new(
        ReducePlacement::FirstFree,
        &SchedulerConfig::Eas(Default::default()),
    );
    assert_eq!(forced.placement(), ReducePlacement::FirstFree);
}

#[test]
fn first_free_fills_the_asking_worker_oldest_job_first() {
    let mut v = cluster(2, 3);
    reduces(&mut v, 2, 4, 2, 10, &[]);
    reduces(&mut v, 1, 1, 2, 10, &[]);
    let mut p = placer(ReducePlacement::FirstFree);
    let got = offer_reduces(&mut p, 0, w(0), &mut v);
    assert_eq!(got, vec![t(1, 1), t(1, 2), t(2, 4)]);
    assert_eq!(v.free_reduce_slots(w(0)), 0);
    assert_eq!(offer_reduces(&mut p, 0, w(1), &mut v), vec![t(2, 5)]);
}

#[test]
fn spread_starts_at_most_one_reduce_per_offer() {
    let mut v = cluster(4, 4);
    reduces(&mut v, 1, 8, 4, 10, &[]);
    let mut p = placer(ReducePlacement::Spread);
    let mut placed = Vec::new();
    for i in 0..4 {
        let got = offer_reduces(&mut p, 0, w(i), &mut v);
        assert_eq!(got.len(), 1, "worker {i}");
        placed.push((got[0], i));
    }
    assert_eq!(
        placed,
        vec![(t(1, 8), 0), (t(1, 9), 1), (t(1, 10), 2), (t(1, 11), 3)]
    );
    assert!(offer_reduces(&mut p, 0, w(0), &mut v).is_empty());
}

#[test]
fn spread_keeps_a_busy_reducer_from_taking_them_all_for_a_while() {
    let mut v = cluster(3, 4);
    reduces(&mut v, 1, 4, 3, 10, &[]);
    let mut p = placer(ReducePlacement::Spread);
    assert_eq!(offer_reduces(&mut p, 0, w(0), &mut v), vec![t(1, 4)]);
    // Worker 0 asks again (an out-of-band heartbeat): the others run none.
    assert!(offer_reduces(&mut p, 10, w(0), &mut v).is_empty());
    assert_eq!(offer_reduces(&mut p, 20, w(1), &mut v), vec![t(1, 5)]);
    // After the wait, worker 0 may take the last one.
    assert!(offer_reduces(&mut p, SPREAD_WAIT_MS - 1, w(0), &mut v).is_empty());
    assert_eq!(
        offer_reduces(&mut p, SPREAD_WAIT_MS, w(0), &mut v),
        vec![t(1, 6)]
    );
}

#[test]
fn no_reduce_starts_on_a_map_only_worker_or_while_held() {
    let mut v = cluster(2, 2);
    v.set_runs_reduces(w(0), false);
    reduces(&mut v, 1, 2, 2, 10, &[]);
    let mut p = placer(ReducePlacement::FirstFree);
    assert!(offer_reduces(&mut p, 0, w(0), &mut v).is_empty());
    v.hold_reduces(JobId(1));
    assert!(offer_reduces(&mut p, 0, w(1), &mut v).is_empty());
    // Released with the rebuilt outputs: they start.
    reduces(&mut v, 1, 2, 0, 10, &[]);
    assert_eq!(offer_reduces(&mut p, 0, w(1), &mut v).len(), 2);
    // The context refuses what the placers never ask for.
    let mut v = cluster(2, 1);
    v.set_runs_reduces(w(0), false);
    reduces(&mut v, 1, 2, 1, 10, &[]);
    let mut ctx = SchedContext::new(&mut v);
    assert_eq!(
        ctx.launch_reduce(t(1, 2), w(0)),
        Err(SchedError::NoReduces(w(0)))
    );
    assert_eq!(
        ctx.launch_reduce(t(1, 9), w(1)),
        Err(SchedError::NotWaitingReduce(t(1, 9)))
    );
    assert_eq!(ctx.launch_reduce(t(1, 2), w(1)), Ok(()));
    assert_eq!(
        ctx.launch_reduce(t(1, 2), w(1)),
        Err(SchedError::NoFreeSlot(w(1)))
    );
}

#[test]
fn least_loaded_pushes_each_reduce_to_the_lightest_machine() {
    // Machine 0 already runs a heavy reduce.
    let mut v = cluster(3, 2);
    reduces(&mut v, 1, 1, 1, 100, &[]);
    let mut p = placer(ReducePlacement::LeastLoaded);
    assert_eq!(offer_reduces(&mut p, 0, w(0), &mut v), vec![t(1, 1)]);
    assert_eq!(v.worker(w(0)).unwrap().reduce_load, 100);
    // Job 2's three reduces of 40: to 1, 2, then 1 again (80 < 100).
    reduces(&mut v, 2, 5, 3, 40, &[]);
    // Machine 0 has a free slot but nothing pushed to it: it stays idle.
    assert!(offer_reduces(&mut p, 1, w(0), &mut v).is_empty());
    assert_eq!(
        offer_reduces(&mut p, 1, w(1), &mut v),
        vec![t(2, 5), t(2, 7)]
    );
    assert_eq!(offer_reduces(&mut p, 1, w(2), &mut v), vec![t(2, 6)]);
    // When job 1's reduce ends, machine 0 is the lightest again.
    v.reduce_ended(t(1, 1), w(0));
    assert_eq!(v.worker(w(0)).unwrap().reduce_load, 0);
    reduces(&mut v, 3, 1, 1, 10, &[]);
    assert!(offer_reduces(&mut p, 2, w(1), &mut v).is_empty());
    assert_eq!(offer_reduces(&mut p, 2, w(0), &mut v), vec![t(3, 1)]);
}

#[test]
fn least_loaded_pushes_again_what_sat_on_a_dead_machine() {
    let mut v = cluster(2, 1);
    // Both machines busy: each queue holds one reduce.
    reduces(&mut v, 1, 2, 2, 10, &[]);
    v.set_free(w(0), 0);
    v.set_free(w(1), 0);
    let mut p = placer(ReducePlacement::LeastLoaded);
    assert!(offer_reduces(&mut p, 0, w(0), &mut v).is_empty());
    v.lose_worker(w(0));
    v.set_free(w(1), 1);
    // Machine 1 runs its own, then the one pushed again from machine 0.
    assert_eq!(offer_reduces(&mut p, 1, w(1), &mut v), vec![t(1, 3)]);
    v.reduce_ended(t(1, 3), w(1));
    assert_eq!(offer_reduces(&mut p, 2, w(1), &mut v), vec![t(1, 2)]);
}

#[test]
fn least_loaded_forgets_reduces_of_ended_jobs_and_requeues_retries() {
    let mut v = cluster(1, 1);
    reduces(&mut v, 1, 1, 2, 10, &[]);
    let mut p = placer(ReducePlacement::LeastLoaded);
    assert_eq!(offer_reduces(&mut p, 0, w(0), &mut v), vec![t(1, 1)]);
    // The attempt fails: the reduce waits again and is pushed again.
    v.reduce_ended(t(1, 1), w(0));
    v.requeue_reduce(t(1, 1));
    assert_eq!(offer_reduces(&mut p, 1, w(0), &mut v), vec![t(1, 2)]);
    v.reduce_ended(t(1, 2), w(0));
    v.remove_job(JobId(1));
    assert!(offer_reduces(&mut p, 2, w(0), &mut v).is_empty());
    assert!(p.queued.is_empty() && p.queues.values().all(VecDeque::is_empty));
}

#[test]
fn most_output_prefers_the_workers_holding_the_output_then_gives_up() {
    let mut v = cluster(3, 2);
    // Worker 2 holds 70% of the output, worker 1 25%, worker 0 5%.
    reduces(&mut v, 1, 3, 3, 10, &[(0, 5), (1, 25), (2, 70)]);
    let mut p = placer(ReducePlacement::MostOutput);
    assert!(offer_reduces(&mut p, 0, w(0), &mut v).is_empty());
    assert_eq!(offer_reduces(&mut p, 0, w(2), &mut v), vec![t(1, 3)]);
    assert_eq!(offer_reduces(&mut p, 0, w(1), &mut v), vec![t(1, 4)]);
    // After the locality wait, worker 0 may take the last one.
    assert!(offer_reduces(&mut p, MOST_OUTPUT_WAIT_MS - 1, w(0), &mut v).is_empty());
    assert_eq!(
        offer_reduces(&mut p, MOST_OUTPUT_WAIT_MS, w(0), &mut v),
        vec![t(1, 5)]
    );
    // Output spread thin (no worker with a fifth): anyone, at once.
    let mut v = cluster(6, 1);
    let thin: Vec<(u32, u64)> = (0..6).map(|i| (i, 10)).collect();
    reduces(&mut v, 1, 6, 1, 10, &thin);
    let mut p = placer(ReducePlacement::MostOutput);
    assert_eq!(offer_reduces(&mut p, 0, w(5), &mut v), vec![t(1, 6)]);
}

#[test]
fn reduce_placements_read_back_by_name() {
    for p in ReducePlacement::ALL {
        assert_eq!(p.name().parse(), Ok(p));
        let toml = format!("p = {:?}", p.name());
        #[derive(serde::Deserialize)]
        struct W {
            p: ReducePlacement,
        }
        assert_eq!(toml::from_str::<W>(&toml).unwrap().p, p);
    }
    let e = "closest".parse::<ReducePlacement>().unwrap_err();
    assert!(
        e.contains("\"closest\"") && e.contains("least-loaded"),
        "{e}"
    );
}

#[test]
fn the_view_keeps_the_fewest_reduces_a_live_reduce_worker_runs() {
    let scan = |v: &ClusterView| v.reduce_workers().map(|w| w.reduces_running).min();
    let mut v = cluster(4, 3);
    assert_eq!(v.fewest_reduces_running(), Some(0));
    reduces(&mut v, 1, 0, 6, 10, &[]);
    let mut p = placer(ReducePlacement::FirstFree);
    // w0 takes 3, w1 takes 2: w2 and w3 run none.
    offer_reduces(&mut p, 0, w(0), &mut v);
    v.set_free(w(1), 2);
    offer_reduces(&mut p, 0, w(1), &mut v);
    assert_eq!((v.fewest_reduces_running(), scan(&v)), (Some(0), Some(0)));
    // w2 and w3 stop running reduces, one dies: the fewest is w1's 2.
    v.set_runs_reduces(w(2), false);
    v.lose_worker(w(3));
    assert_eq!((v.fewest_reduces_running(), scan(&v)), (Some(2), Some(2)));
    // Reduces end; a worker comes back.
    v.reduce_ended(t(1, 3), w(1));
    assert_eq!((v.fewest_reduces_running(), scan(&v)), (Some(1), Some(1)));
    v.upsert_worker(w(3), 3);
    assert_eq!((v.fewest_reduces_running(), scan(&v)), (Some(0), Some(0)));
    v.lose_worker(w(0));
    v.lose_worker(w(1));
    v.lose_worker(w(3));
    assert_eq!((v.fewest_reduces_running(), scan(&v)), (None, None));
}
