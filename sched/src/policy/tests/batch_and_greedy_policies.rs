use super::*;

#[test]
fn lsap_fills_idle_slots_with_remote_tasks_in_fifo_order() {
    let mut v = view(2, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1])],
    );
    v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[1])]);
    let a = offer(build_str("lsap").as_mut(), 0, w(0), &mut v);
    // w1 runs job 1's first task locally; w0 the next oldest, remotely.
    assert_eq!(a.len(), 2);
    assert!(a.contains(&Assignment {
        task: tref(1, 0),
        worker: w(1),
        source: w(1),
        len: 100,
        backup: false,
    }));
    assert!(a.contains(&Assignment {
        task: tref(1, 1),
        worker: w(0),
        source: w(1),
        len: 100,
        backup: false,
    }));
}

/// Locality-optimal on random instances: lsap's data-local count equals the
/// maximum found by brute force over every assignment of tasks to slots.
#[test]
fn lsap_locality_is_optimal_against_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..200 {
        let workers = rng.gen_range(1..4u32);
        let mut v = ClusterView::new();
        let mut cap = Vec::new();
        for i in 0..workers {
            let slots = rng.gen_range(1..3);
            v.upsert_worker(w(i), slots);
            cap.push(slots);
        }
        let n = rng.gen_range(1..6u32);
        let tasks: Vec<PendingTask> = (0..n)
            .map(|i| {
                let reps: Vec<u32> = (0..workers).filter(|_| rng.gen_bool(0.4)).collect();
                let reps = if reps.is_empty() { vec![0] } else { reps };
                task(1, i, &reps)
            })
            .collect();
        // Brute force: best number of local tasks over all slot choices.
        fn best(i: usize, tasks: &[PendingTask], cap: &mut Vec<u32>) -> usize {
            if i == tasks.len() {
                return 0;
            }
            let mut b = best(i + 1, tasks, cap);
            for wk in 0..cap.len() {
                if cap[wk] > 0 {
                    cap[wk] -= 1;
                    let local = tasks[i].replicas.contains(&WorkerId(wk as u32)) as usize;
                    b = b.max(local + best(i + 1, tasks, cap));
                    cap[wk] += 1;
                }
            }
            b
        }
        let want = best(0, &tasks, &mut cap.clone());
        v.add_job(JobId(1), 0, "default", tasks);
        let a = offer(build_str("lsap").as_mut(), 0, w(0), &mut v);
        let slots: u32 = cap.iter().sum();
        assert_eq!(a.len(), (n as usize).min(slots as usize));
        assert_eq!(a.iter().filter(|x| x.is_local()).count(), want);
    }
}

#[test]
fn lsap_fair_trades_fairness_against_locality_with_alpha() {
    // w0: 1 slot, w1: 3 slots. Group a already runs 3 tasks on w1; its next
    // task is local on w0. Group b (no running task) has a task whose input
    // is only on w1. Equal weights: a is over its ration (FC = beta * 0.5 =
    // 100), b under it (FC = GFC_b = 0). The slot on w0 costs 100 + 0 for a's
    // task and 0 + alpha for b's.
    let setup = || {
        let mut v = ClusterView::new();
        v.upsert_worker(w(0), 1);
        v.upsert_worker(w(1), 3);
        v.add_job(JobId(1), 0, "a", (0..4).map(|i| task(1, i, &[1])).collect());
        v.add_job(JobId(2), 0, "b", vec![task(2, 0, &[1])]);
        {
            let mut ctx = SchedContext::new(&mut v);
            for i in 0..3 {
                ctx.launch(tref(1, i), w(1), w(1)).unwrap();
            }
        }
        // a's last task gains a replica on w0.
        v.set_replicas(tref(1, 3), vec![w(0), w(1)]);
        v
    };
    let run = |alpha: u32| {
        let mut v = setup();
        let cfg = format!("policy = \"lsap-fair\", alpha = {alpha}, beta = 200");
        let a = offer(build_str(&cfg).as_mut(), 0, w(0), &mut v);
        assert_eq!(a.len(), 1);
        a[0].clone()
    };
    let fair = run(20);
    assert_eq!((fair.task, fair.is_local()), (tref(2, 0), false));
    let local = run(150);
    assert_eq!((local.task, local.is_local()), (tref(1, 3), true));
}

#[test]
fn hadoop_prefers_local_task_of_head_job() {
    let mut v = view(3, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[0, 2])],
    );
    v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[0])]);
    let mut s = hadoop::Hadoop::new(hadoop::HadoopParams::default(), 7);
    let a = offer(&mut s, 0, w(0), &mut v);
    // Head job 1 has task 1 local on w0 (job 2's local task must wait).
    assert_eq!(a.len(), 1);
    assert_eq!(
        a[0].task,
        TaskRef {
            job: JobId(1),
            index: 1
        }
    );
    assert!(a[0].is_local());
    assert_eq!(v.free_slots(w(0)), 0);
    assert_eq!(offer(&mut s, 0, w(0), &mut v), vec![]);
}

#[test]
fn hadoop_goes_remote_when_head_job_has_nothing_local() {
    let mut v = view(3, 2);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1])],
    );
    v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[2])]);
    let mut s = hadoop::Hadoop::new(hadoop::HadoopParams::default(), 7);
    let a = offer(&mut s, 0, w(2), &mut v);
    // Both slots go to job 1, remotely from w1, although job 2 is local on w2.
    assert_eq!(a.len(), 2);
    for x in &a {
        assert_eq!(x.task.job, JobId(1));
        assert_eq!(x.source, w(1));
        assert!(!x.is_local());
    }
    assert_eq!(v.worker(w(2)).unwrap().remote_running, 2);
    assert_eq!(v.job(JobId(1)).unwrap().running, 2);
    v.task_ended(JobId(1), w(2), true);
    assert_eq!(v.worker(w(2)).unwrap().remote_running, 1);
    assert_eq!(v.free_slots(w(2)), 1);
}

#[test]
fn hadoop_prefers_a_rack_local_task_read_from_its_rack_then_goes_anywhere() {
    // Racks {w0, w1} and {w2, w3}. Job 1: t0 on w3 only, t1 on w1 and w3,
    // t2 on w3 only. w0 has nothing node-local: t1 is rack-local (from w1),
    // although t0 comes first; then nothing is left in the rack and t0 goes
    // remote (from w3).
    let mut v = view(4, 2);
    for (i, r) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
        v.set_rack(w(i), r);
    }
    assert!(v.has_racks());
    let tasks = vec![task(1, 0, &[3]), task(1, 1, &[1, 3]), task(1, 2, &[3])];
    v.add_job(JobId(1), 0, "default", tasks.clone());
    let mut s = hadoop::Hadoop::new(
        hadoop::HadoopParams {
            pick: RemotePick::Oldest,
            ..Default::default()
        },
        7,
    );
    let a = offer(&mut s, 0, w(0), &mut v);
    assert_eq!(a.len(), 2);
    assert_eq!((a[0].task, a[0].source), (tref(1, 1), w(1)));
    assert_eq!((a[1].task, a[1].source), (tref(1, 0), w(3)));
    // The same cluster on one rack: the rack level never applies, so the
    // oldest task goes first.
    let mut one = view(4, 2);
    for i in 0..4 {
        one.set_rack(w(i), 5);
    }
    assert!(!one.has_racks());
    one.add_job(JobId(1), 0, "default", tasks);
    let a = offer(&mut s, 0, w(0), &mut one);
    assert_eq!(a[0].task, tref(1, 0));
    // Moving a worker between racks updates both: w0 is alone in rack 0.
    v.set_rack(w(1), 1);
    assert_eq!(v.rack_of(w(1)), Some(1));
    let job = v.job(JobId(1)).unwrap();
    assert_eq!(v.rack_local_task(job, w(0)), None);
    assert_eq!(v.rack_local_task(job, w(1)), Some((tref(1, 2), w(3))));
    assert_eq!(
        v.rack_local_task(job, w(3)),
        None,
        "node-local is not rack-local"
    );
}

#[test]
fn fill_launches_until_the_worker_is_full_or_the_choice_runs_out() {
    let mut v = view(2, 3);
    v.add_job(
        JobId(1),
        0,
        "default",
        (0..5).map(|i| task(1, i, &[0])).collect(),
    );
    // Full: three slots, five local tasks; `choose` sees each launch.
    let mut ctx = SchedContext::new(&mut v);
    let mut seen = Vec::new();
    let n = ctx.fill(w(0), |view| {
        seen.push(view.free_slots(w(0)));
        view.job(JobId(1))?.local_task(w(0)).map(|t| (t.task, w(0)))
    });
    assert_eq!((n, seen), (3, vec![3, 2, 1]));
    assert_eq!(ctx.into_launched().len(), 3);
    assert_eq!(v.free_slots(w(0)), 0);
    // The choice runs out: one task for w1, then nothing.
    let mut ctx = SchedContext::new(&mut v);
    let mut left = 1;
    let n = ctx.fill(w(1), |view| {
        if left == 0 {
            return None;
        }
        left -= 1;
        view.job(JobId(1))?.local_task(w(0)).map(|t| (t.task, w(0)))
    });
    assert_eq!(n, 1);
    assert_eq!(v.free_slots(w(1)), 2);
    // A refused launch ends the round instead of spinning: w1 holds no
    // replica, so reading "from w1" is refused every time.
    let mut ctx = SchedContext::new(&mut v);
    let mut calls = 0;
    let n = ctx.fill(w(1), |view| {
        calls += 1;
        view.job(JobId(1))?.local_task(w(0)).map(|t| (t.task, w(1)))
    });
    assert_eq!((n, calls), (0, 1));
}

#[test]
fn context_rejects_invalid_launches() {
    let mut v = view(2, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1])],
    );
    let mut ctx = SchedContext::new(&mut v);
    let t0 = TaskRef {
        job: JobId(1),
        index: 0,
    };
    let t1 = TaskRef {
        job: JobId(1),
        index: 1,
    };
    assert_eq!(
        ctx.launch(t0, w(0), w(0)),
        Err(SchedError::NoReplica {
            task: t0,
            source_worker: w(0)
        })
    );
    assert_eq!(
        ctx.launch(t0, w(5), w(1)),
        Err(SchedError::DeadWorker(w(5)))
    );
    ctx.launch(t0, w(0), w(1)).unwrap();
    assert_eq!(ctx.launch(t0, w(1), w(1)), Err(SchedError::NotPending(t0)));
    assert_eq!(
        ctx.launch(t1, w(0), w(1)),
        Err(SchedError::NoFreeSlot(w(0)))
    );
    assert_eq!(ctx.into_launched().len(), 1);
}

#[test]
fn losing_a_worker_drops_its_replicas() {
    let mut v = view(3, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[0, 1]), task(1, 1, &[1])],
    );
    let orphans = v.lose_worker(w(1));
    assert_eq!(
        orphans,
        vec![TaskRef {
            job: JobId(1),
            index: 1
        }]
    );
    let j = v.job(JobId(1)).unwrap();
    assert_eq!(j.pending_task(0).unwrap().replicas, vec![w(0)]);
    assert_eq!(j.local_count(w(1)), 0);
    assert_eq!(v.free_slots(w(1)), 0);
}

#[test]
fn every_policy_passes_the_shared_suite() {
    for instance in 0..40u64 {
        let runs: Vec<Vec<Assignment>> = all_policies(99)
            .into_iter()
            .map(|mut s| drive(s.as_mut(), instance))
            .collect();
        let again: Vec<Vec<Assignment>> = all_policies(99)
            .into_iter()
            .map(|mut s| drive(s.as_mut(), instance))
            .collect();
        assert_eq!(
            runs, again,
            "instance {instance}: same seed, different decisions"
        );
    }
}

/// EAS selects the job whose strictly local placement balances the map
/// machines best, not the oldest, and places all its maps at once.
#[test]
fn eas_selects_the_most_balancing_job_and_stays_local() {
    let mut v = view(2, 1);
    v.record_decisions(true);
    // Job 1: both maps only on w0 (loads 200/0). Job 2: one map per worker (100/100).
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[0]), task(1, 1, &[0])],
    );
    v.add_job(
        JobId(2),
        0,
        "default",
        vec![task(2, 0, &[0]), task(2, 1, &[1])],
    );
    let mut s = build_str("eas");
    let a = offer(s.as_mut(), 0, w(0), &mut v);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].task, tref(2, 0));
    assert!(a[0].is_local());
    // w1 runs job 2's other map, already queued there.
    let b = offer(s.as_mut(), 0, w(1), &mut v);
    assert_eq!((b[0].task, b[0].is_local()), (tref(2, 1), true));
    // Job 1 can only run on w0: w1 stays idle (strict locality), and the
    // record says why: job 1's maps are queued on w0.
    v.task_ended(JobId(2), w(1), false);
    assert_eq!(offer(s.as_mut(), 1, w(1), &mut v), vec![]);
    let rows = v.take_decisions();
    use crate::decision::{Kind, Rule};
    let rules: Vec<(Kind, WorkerId, Rule)> =
        rows.iter().map(|d| (d.kind, d.offered, d.rule)).collect();
    assert_eq!(
        rules,
        [
            (Kind::Map, w(0), Rule::DataLocal),
            (Kind::Map, w(1), Rule::DataLocal),
            (Kind::Idle, w(1), Rule::QueuedElsewhere),
        ]
    );
    v.task_ended(JobId(2), w(0), false);
    let c = offer(s.as_mut(), 2, w(0), &mut v);
    assert_eq!((c[0].task.job, c[0].is_local()), (JobId(1), true));
}

#[test]
fn strict_locality_never_reads_remotely() {
    for p in ["fifo-s", "hfs-s"] {
        let mut v = view(2, 2);
        v.add_job(
            JobId(1),
            0,
            "default",
            vec![task(1, 0, &[1]), task(1, 1, &[1])],
        );
        v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[0])]);
        let mut s = build_str(p);
        // w0 holds only job 2's input: it runs that, then idles.
        let a = offer(s.as_mut(), 0, w(0), &mut v);
        assert_eq!(a.len(), 1, "{p}");
        assert_eq!((a[0].task, a[0].is_local()), (tref(2, 0), true), "{p}");
        assert_eq!(offer(s.as_mut(), 99_000, w(0), &mut v), vec![], "{p}");
        let b = offer(s.as_mut(), 0, w(1), &mut v);
        assert!(b.len() == 2 && b.iter().all(Assignment::is_local), "{p}");
    }
}

#[test]
fn the_job_order_is_a_setting_of_its_own() {
    let mut ordered = Vec::new();
    for (_, text) in SchedulerConfig::examples() {
        let cfg: SchedulerConfig = text.parse().unwrap();
        let Ok(fifo) = first_served(&cfg, JobOrder::Fifo) else {
            // Takes no order: says so, naming the policy and the order.
            let e = cfg.with_order(JobOrder::Deadline).unwrap_err();
            assert!(e.contains(cfg.name()) && e.contains("deadline"), "{e}");
            continue;
        };
        ordered.push(cfg.policy());
        assert_eq!(fifo, JobId(1), "{text} in FIFO order");
        for order in [JobOrder::ShortestRemaining, JobOrder::Deadline] {
            let first = first_served(&cfg, order).unwrap();
            assert_eq!(first, JobId(2), "{text} in {order:?}");
        }
        // The label names a non-default order, and it reads back.
        let c = cfg.with_order(JobOrder::ShortestRemaining).unwrap();
        assert!(c.label().contains("shortest-remaining"), "{}", c.label());
        let back: SchedulerConfig =
            serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }
    ordered.dedup();
    assert_eq!(
        ordered,
        ["hadoop", "delay", "dyndl-on", "rand", "strict", "eas", "ds", "gcc"]
    );
}
