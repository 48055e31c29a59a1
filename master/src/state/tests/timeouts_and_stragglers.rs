use super::*;

#[test]
fn an_attempt_without_a_result_times_out_and_runs_elsewhere() {
    let mut s = settings(2, 1);
    s.task_timeout_ms = 1000;
    s.worker_timeout_ms = 100_000;
    let mut m = Master::new(s);
    register_all(&mut m, 2, 1, |_| vec![block("f", 0, 1)]);
    let id = submit(&mut m);
    let first = m.heartbeat(10, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(first.len(), 1);
    // w0 keeps heartbeating, reporting the attempt as running, with no result.
    m.heartbeat(500, hb(0, 0, vec![first[0].attempt], vec![]));
    m.check_workers(900);
    assert_eq!(m.report(id).unwrap().state, JobState::Running);
    m.heartbeat(1100, hb(0, 0, vec![first[0].attempt], vec![]));
    m.check_workers(1100);
    let rep = m.report(id).unwrap();
    let failed = &rep.attempts[0];
    assert!(
        !failed.ok && failed.error.as_deref().unwrap().contains("task_timeout_ms"),
        "{rep:?}"
    );
    // The task runs again on w1; w0's late result is ignored.
    let again = m.heartbeat(1200, hb(1, 1, vec![], vec![])).launches;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt.attempt, first[0].attempt.attempt + 1);
    m.heartbeat(1300, hb(0, 1, vec![], vec![ok(&first[0], 0)]));
    assert_eq!(
        m.report(id).unwrap().tasks_done,
        0,
        "the late result is fenced off"
    );
    m.heartbeat(1400, hb(1, 1, vec![], vec![ok(&again[0], 0)]));
    assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
}

/// Two workers of one slot holding block f/0, task_timeout_ms 1000: the
/// job over f submitted and its map launched on w0, local.
fn a_map_on_w0(worker_timeout_ms: u64) -> (Master, JobId, AttemptId) {
    let mut s = settings(2, 1);
    s.task_timeout_ms = 1000;
    s.worker_timeout_ms = worker_timeout_ms;
    let mut m = Master::new(s);
    register_all(&mut m, 2, 1, |_| vec![block("f", 0, 1)]);
    let id = submit(&mut m);
    let first = m.heartbeat(10, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(first.len(), 1);
    assert_eq!(map_of(&first[0]).0, &ReplicaSource::Local);
    (m, id, first[0].attempt)
}

#[test]
fn an_attempt_that_stops_progressing_is_killed_and_reads_another_replica() {
    // The block is on both workers.
    let (mut m, id, a) = a_map_on_w0(100_000);
    let beat = |m: &mut Master, now: Millis, units: u64| {
        let mut h = hb(0, 0, vec![a], vec![]);
        h.progress = vec![AttemptProgress {
            attempt: a,
            units,
            slot: 0,
            done_ppm: None,
        }];
        m.heartbeat(now, h)
    };
    // Progress keeps it alive well past the timeout counted from launch...
    for (now, units) in [(500, 10), (1200, 20), (1900, 30), (2600, 40)] {
        let reply = beat(&mut m, now, units);
        assert!(reply.kill.is_empty());
        m.check_workers(now + 50);
        assert_eq!(m.report(id).unwrap().state, JobState::Running);
    }
    // ...until the count stops growing for longer than task_timeout_ms.
    beat(&mut m, 3300, 40);
    m.check_workers(3300);
    assert_eq!(m.report(id).unwrap().attempts.len(), 0, "not yet");
    beat(&mut m, 3700, 40);
    m.check_workers(3700);
    let rep = m.report(id).unwrap();
    let failed = &rep.attempts[0];
    let error = failed.error.as_deref().unwrap();
    assert!(
        !failed.ok && error.contains("no progress") && error.contains("task_timeout_ms"),
        "{rep:?}"
    );
    // w0 is told to kill the stalled attempt and free its slot.
    let reply = m.heartbeat(3800, hb(0, 0, vec![a], vec![]));
    assert_eq!(reply.kill, vec![a]);
    // Its slot free again, w0 may run the task only by reading w1's copy.
    let on_w0 = m.heartbeat(3900, hb(0, 1, vec![], vec![])).launches;
    let again = if on_w0.is_empty() {
        m.heartbeat(4000, hb(1, 1, vec![], vec![])).launches
    } else {
        on_w0.clone()
    };
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt.attempt, a.attempt + 1);
    match map_of(&again[0]).0 {
        ReplicaSource::Local => assert!(on_w0.is_empty(), "w0's copy stalled: {again:?}"),
        ReplicaSource::Remote { worker, .. } => assert_eq!(*worker, WorkerId(1)),
    }
    let LaunchTask::Map { alternates, .. } = &again[0].task else {
        panic!("a map")
    };
    assert!(alternates.iter().all(|r| r.worker != WorkerId(0)));
}

#[test]
fn a_map_whose_other_replicas_are_lost_reads_the_one_it_stalled_on() {
    // The block is on both workers; the map stalls on w0's.
    let (mut m, id, a) = a_map_on_w0(3000);
    m.heartbeat(1100, hb(0, 0, vec![a], vec![]));
    m.check_workers(1100);
    let rep = m.report(id).unwrap();
    assert!(
        rep.attempts.len() == 1 && !rep.attempts[0].ok,
        "timed out: {rep:?}"
    );
    assert_eq!(m.heartbeat(1200, hb(0, 0, vec![a], vec![])).kill, vec![a]);
    // w1, the replica it would read next, goes silent and is lost: w0's
    // replica, stalled on once, is the one left, and the job goes on.
    m.heartbeat(3500, hb(0, 0, vec![], vec![]));
    m.check_workers(3500);
    assert!(m.workers().iter().filter(|w| w.alive).count() == 1);
    let rep = m.report(id).unwrap();
    assert_eq!(rep.state, JobState::Running, "{rep:?}");
    let again = m.heartbeat(3600, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(again.len(), 1, "the map runs again on w0");
    assert_eq!(map_of(&again[0]).0, &ReplicaSource::Local);
    m.heartbeat(3700, hb(0, 1, vec![], vec![ok(&again[0], 0)]));
    assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
}

#[test]
fn a_deleted_file_never_comes_back_from_a_late_block_report() {
    let mut m = Master::new(settings(2, 1));
    register_all(&mut m, 2, 1, |_| vec![block("f", 0, 1)]);
    let d = m.delete_file("f").unwrap();
    assert_eq!((d.blocks, d.replicas), (1, 2));
    assert!(matches!(
        m.file("f"),
        Err(MasterError::FileBeingDeleted { pending: 2, .. })
    ));
    // w0 still lists the block (its report crossed the order): kept out of
    // the catalog, and the order goes out again.
    let mut h = hb(0, 1, vec![], vec![]);
    h.blocks = Some(vec![block("f", 0, 1)]);
    let reply = m.heartbeat(10, h);
    assert_eq!(reply.drop_blocks.len(), 1);
    assert!(m.files().iter().all(|f| f.name != "f"));
    let mut h = hb(0, 1, vec![], vec![]);
    h.blocks = Some(vec![]);
    m.heartbeat(20, h);
    assert!(matches!(
        m.file("f"),
        Err(MasterError::FileBeingDeleted { pending: 1, .. })
    ));
    let mut h = hb(1, 1, vec![], vec![]);
    h.blocks = Some(vec![]);
    m.heartbeat(30, h);
    // w1's first heartbeat since the delete may have been sent before it:
    // its second (no report: its store unchanged) says it has none.
    assert!(matches!(
        m.file("f"),
        Err(MasterError::FileBeingDeleted { .. })
    ));
    m.heartbeat(35, hb(1, 1, vec![], vec![]));
    assert!(matches!(m.file("f"), Err(MasterError::UnknownFile { .. })));
    // A new file of the name is taken in whole.
    let mut h = hb(1, 1, vec![], vec![]);
    h.blocks = Some(vec![block("f", 0, 1)]);
    m.heartbeat(40, h);
    assert_eq!(m.file("f").unwrap().replicas, vec![vec!["w1".to_owned()]]);
    // A file a running job reads is not deleted.
    let id = submit(&mut m);
    assert!(matches!(
        m.delete_file("f"),
        Err(MasterError::FileInUse { job, .. }) if job == id
    ));
}

#[test]
fn a_job_wakes_idle_out_of_band_workers_once_until_they_heartbeat() {
    let mut m = Master::new(settings(3, 2));
    // w0 and w1 heartbeat out of band, w2 only on its interval.
    register_all_with(
        &mut m,
        3,
        2,
        |w| {
            (0..4)
                .filter(|b| b % 3 == w)
                .map(|b| block("f", b, 4))
                .collect()
        },
        |w| w < 2,
    );
    // Nothing waits: nobody is woken.
    assert!(m.to_wake().is_empty());
    // w1 has no free slot at its last heartbeat.
    m.heartbeat(5, hb(1, 0, vec![], vec![]));
    submit(&mut m);
    assert_eq!(m.to_wake(), vec!["http://w0".to_owned()]);
    // Asked once: not again before it heartbeats, even for another job.
    submit(&mut m);
    assert!(m.to_wake().is_empty());
    let reply = m.heartbeat(10, hb(0, 2, vec![], vec![]));
    assert_eq!(reply.launches.len(), 2, "the woken heartbeat takes tasks");
    // Its slots are taken now (it said 2 free and got 2): no wake either.
    m.heartbeat(11, hb(0, 0, vec![], vec![]));
    assert!(m.to_wake().is_empty());
    // w1 frees a slot: its own heartbeat says so, and it is woken next time.
    m.heartbeat(12, hb(1, 1, vec![], vec![]));
    assert_eq!(m.to_wake(), vec!["http://w1".to_owned()]);
}

/// A running reduce's output replica target receives its whole block: the
/// next reduce sends its replica to a worker receiving none, so 4 reduces
/// on 4 workers at replication 2 give each worker one replica to receive
/// (a rotation alone sent two to the same worker).
#[test]
fn output_replicas_go_to_the_workers_receiving_fewest() {
    let mut m = Master::new(settings(4, 2));
    register_all(&mut m, 4, 2, |w| {
        (0..8)
            .filter(|b| b % 4 == w)
            .map(|b| block("f", b, 8))
            .collect()
    });
    wordcount(&mut m, 4);
    let red = drive_maps(&mut m, 4, 10, vec![]);
    assert_eq!(red.len(), 4);
    let mut receiving = std::collections::BTreeMap::new();
    for (w, l) in &red {
        let LaunchTask::Reduce(r) = &l.task else {
            panic!("expected a reduce: {l:?}")
        };
        assert_eq!(r.output.replicas.len(), 1);
        assert_ne!(
            r.output.replicas[0],
            format!("http://w{w}"),
            "not the reducer"
        );
        *receiving.entry(r.output.replicas[0].clone()).or_insert(0) += 1;
    }
    assert_eq!(receiving.len(), 4, "{receiving:?}");
    assert!(receiving.values().all(|n| *n == 1), "{receiving:?}");
}

/// A report never panics or wraps on a launch stamped before its job's
/// submission (the master's HTTP layer orders steps by time, this is the
/// state's own guard): the job's start is then 0.
#[test]
fn a_launch_stamped_before_the_submission_reports_start_zero() {
    let mut m = cluster(1, 1, 1);
    let job = submit_at(&mut m, 10);
    let r = m.heartbeat(5, hb(0, 1, vec![], vec![]));
    assert_eq!(r.launches.len(), 1);
    let rep = m.report(job).unwrap();
    assert_eq!(rep.start_ms, Some(0));
}

/// Speculation on three workers of one slot: w2's map crawls while the
/// others finish theirs in a second; a free slot gets a backup of it, the
/// first attempt to succeed wins, the other is killed, its result refused
/// and nothing is counted twice. Off, the same run launches no backup.
#[test]
fn a_straggling_map_gets_a_backup_and_the_first_to_finish_wins() {
    let run = |speculate: bool, backup_wins: bool| {
        let mut s = settings(3, 1);
        s.worker_timeout_ms = 100_000;
        s.speculation = sched::speculation::Speculation {
            min_runtime_ms: 500,
            ..sched::speculation::Speculation::on()
        };
        s.speculation.enabled = speculate;
        // Every block on every worker: whoever runs a map reads it locally.
        let mut m = Master::new(s);
        register_all(&mut m, 3, 1, |_| (0..5).map(|b| block("f", b, 5)).collect());
        let id = submit(&mut m);
        let first: Vec<Launch> = (0..3)
            .map(|w| m.heartbeat(10, hb(w, 1, vec![], vec![])).launches.remove(0))
            .collect();
        let slow = first[2].clone();
        // w0 and w1 finish in a second and take maps 3 and 4; w2 reports a
        // tenth done.
        let mut second = Vec::new();
        for w in 0..2 {
            let r = m.heartbeat(1010, hb(w, 1, vec![], vec![ok(&first[w as usize], 0)]));
            second.push(r.launches[0].clone());
        }
        m.heartbeat(1020, hb_progress(2, 0, slow.attempt, 200, vec![]));
        // w0 finishes map 3 at 2010 and has a free slot and no map to take.
        let r = m.heartbeat(2010, hb(0, 1, vec![], vec![ok(&second[0], 0)]));
        let report = m.report(id).unwrap();
        if !speculate {
            assert!(r.launches.is_empty() && report.backups == 0, "{r:?}");
            return None;
        }
        assert_eq!(r.launches.len(), 1, "a backup on w0: {r:?}");
        let backup = r.launches[0].clone();
        assert_eq!(backup.attempt.task, slow.attempt.task);
        assert_eq!(backup.attempt.attempt, slow.attempt.attempt + 1);
        assert_eq!(*map_of(&backup).0, ReplicaSource::Local);
        assert_eq!((report.backups, report.running.len()), (1, 3));
        // One backup per map: w1's free slot gets nothing more.
        let r = m.heartbeat(2020, hb(1, 1, vec![], vec![ok(&second[1], 0)]));
        assert!(r.launches.is_empty(), "{r:?}");
        let (winner, winner_w, loser, loser_w) = if backup_wins {
            (&backup, 0, &slow, 2)
        } else {
            (&slow, 2, &backup, 0)
        };
        m.heartbeat(2500, hb(winner_w, 1, vec![], vec![ok(winner, 0)]));
        let report = m.report(id).unwrap();
        assert_eq!(report.state, JobState::Succeeded, "{report:?}");
        assert_eq!((report.tasks_done, report.data_local), (5, 5));
        assert_eq!(report.backups_won, u32::from(backup_wins));
        let killed = report
            .attempts
            .iter()
            .find(|a| a.attempt == loser.attempt.attempt && a.task == loser.attempt.task.index)
            .expect("the loser's record");
        assert!(
            !killed.ok && killed.error.as_deref().unwrap().contains("finished first"),
            "{killed:?}"
        );
        // Its worker is told to kill it; a late result of it is refused.
        let r = m.heartbeat(2600, hb(loser_w, 0, vec![loser.attempt], vec![]));
        assert_eq!(r.kill, vec![loser.attempt]);
        let r = m.heartbeat(2700, hb(loser_w, 1, vec![], vec![ok(loser, 0)]));
        assert_eq!(r.refused.len(), 1, "{r:?}");
        assert_eq!(m.report(id).unwrap().tasks_done, 5, "counted once");
        Some(report)
    };
    assert!(run(false, true).is_none());
    run(true, true).unwrap();
    run(true, false).unwrap();
}

/// A backup that fails leaves the attempt it backs up running: no retry,
/// no failure counted against the task.
#[test]
fn a_failed_backup_leaves_the_first_attempt_running() {
    let mut s = settings(2, 1);
    s.worker_timeout_ms = 100_000;
    s.max_task_attempts = 1;
    s.speculation = sched::speculation::Speculation {
        min_runtime_ms: 500,
        ..sched::speculation::Speculation::on()
    };
    let mut m = Master::new(s);
    register_all(&mut m, 2, 1, |_| (0..3).map(|b| block("f", b, 3)).collect());
    let id = submit(&mut m);
    let a = m.heartbeat(10, hb(0, 1, vec![], vec![])).launches.remove(0);
    let slow = m.heartbeat(10, hb(1, 1, vec![], vec![])).launches.remove(0);
    let b = m
        .heartbeat(1010, hb(0, 1, vec![], vec![ok(&a, 0)]))
        .launches
        .remove(0);
    m.heartbeat(1020, hb_progress(1, 0, slow.attempt, 100, vec![]));
    let backup = m
        .heartbeat(2010, hb(0, 1, vec![], vec![ok(&b, 0)]))
        .launches;
    assert_eq!(backup.len(), 1, "a backup of the slow map");
    assert_eq!(backup[0].attempt.task, slow.attempt.task);
    let r = m.heartbeat(2100, hb(0, 1, vec![], vec![failed(&backup[0])]));
    assert!(
        r.launches.is_empty(),
        "no second backup where one failed: {r:?}"
    );
    let r = m.report(id).unwrap();
    assert_eq!(
        r.state,
        JobState::Running,
        "one failure allowed, but the task has not failed: {r:?}"
    );
    assert_eq!(r.running.len(), 1);
    m.heartbeat(3000, hb(1, 1, vec![], vec![ok(&slow, 0)]));
    assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
}

/// Speculation of a reduce on three workers of two slots: three reduces,
/// one a worker; w2's says it has done a twentieth when the others are
/// half done, which backs up nothing while no reduce has finished; once
/// w0's has, w0's free slot gets a backup of w2's, whose output replicas
/// avoid w2; the backup wins, w2's attempt is killed and its late result
/// refused, and the job counts each reduce once. Off, no backup.
#[test]
fn a_straggling_reduce_gets_a_backup_and_the_first_to_finish_wins() {
    let run = |speculate: bool| {
        let mut s = settings(3, 2);
        s.worker_timeout_ms = 100_000;
        s.speculation = sched::speculation::Speculation {
            min_runtime_ms: 500,
            ..sched::speculation::Speculation::on()
        };
        s.speculation.enabled = speculate;
        let mut m = cluster_with(s, 3, 2, 3);
        let id = wordcount(&mut m, 3);
        let red = drive_maps(&mut m, 3, 10, vec![]);
        let mut on: Vec<(u32, Launch)> = red;
        on.sort_by_key(|(w, _)| *w);
        assert_eq!(
            on.iter().map(|(w, _)| *w).collect::<Vec<_>>(),
            [0, 1, 2],
            "one reduce a worker"
        );
        let (fast0, fast1, slow) = (on[0].1.clone(), on[1].1.clone(), on[2].1.clone());
        m.heartbeat(1100, hb_done(0, 1, fast0.attempt, 500_000, vec![]));
        m.heartbeat(1100, hb_done(1, 1, fast1.attempt, 500_000, vec![]));
        m.heartbeat(1100, hb_done(2, 1, slow.attempt, 50_000, vec![]));
        // No reduce has finished: no backup yet.
        let r = m.heartbeat(1150, hb_done(0, 1, fast0.attempt, 600_000, vec![]));
        assert!(r.launches.is_empty(), "{r:?}");
        let r = m.heartbeat(1200, hb(0, 2, vec![], vec![reduced(&fast0)]));
        if !speculate {
            assert!(r.launches.is_empty(), "{r:?}");
            assert_eq!(m.report(id).unwrap().backups, 0);
            return;
        }
        assert_eq!(r.launches.len(), 1, "a backup of w2's reduce on w0: {r:?}");
        let backup = r.launches[0].clone();
        assert_eq!(backup.attempt.task, slow.attempt.task);
        assert_eq!(backup.attempt.attempt, slow.attempt.attempt + 1);
        let LaunchTask::Reduce(b) = &backup.task else {
            panic!("a reduce backup: {backup:?}")
        };
        assert_eq!(
            reduce_inputs(&backup),
            reduce_inputs(&slow),
            "the same inputs"
        );
        assert_eq!(b.output.replicas, vec!["http://w1".to_owned()], "not w2");
        // One backup a task: w1's free slot gets nothing.
        let r = m.heartbeat(1300, hb_done(1, 1, fast1.attempt, 700_000, vec![]));
        assert!(r.launches.is_empty(), "{r:?}");
        // The other reduces end: w1's, then the backup.
        m.heartbeat(2000, hb(0, 1, vec![backup.attempt], vec![]));
        m.heartbeat(2000, hb(1, 2, vec![], vec![reduced(&fast1)]));
        m.heartbeat(3000, hb(0, 2, vec![], vec![reduced(&backup)]));
        let report = m.report(id).unwrap();
        assert_eq!(report.state, JobState::Succeeded, "{report:?}");
        assert_eq!((report.backups, report.backups_won), (1, 1));
        let killed = report
            .attempts
            .iter()
            .find(|a| a.attempt == slow.attempt.attempt && a.task == slow.attempt.task.index)
            .expect("the loser's record");
        assert!(
            !killed.ok && killed.error.as_deref().unwrap().contains("finished first"),
            "{killed:?}"
        );
        let reduces_ok = report
            .attempts
            .iter()
            .filter(|a| a.ok && a.kind == common::wire::TaskKind::Reduce)
            .count();
        assert_eq!(reduces_ok, 3, "each reduce counted once");
        // w2 is told to kill its attempt; a late result of it is refused.
        let r = m.heartbeat(3100, hb(2, 1, vec![slow.attempt], vec![]));
        assert_eq!(r.kill, vec![slow.attempt]);
        let r = m.heartbeat(3200, hb(2, 2, vec![], vec![reduced(&slow)]));
        assert_eq!(r.refused.len(), 1, "{r:?}");
    };
    run(false);
    run(true);
}

/// The campaign of 2026-11-29: a file deleted and a job writing a new
/// output of the same name at once lost the new output's blocks (their
/// ids are the old ones', and the orders to drop those dropped them). The
/// job is refused while live workers still hold the old replicas.
#[test]
fn a_job_cannot_write_an_output_of_a_name_still_being_deleted() {
    let mut m = Master::new(settings(2, 1));
    register_all(&mut m, 2, 1, |_| vec![block("f", 0, 1), block("o", 0, 1)]);
    m.delete_file("o").unwrap();
    let mut job = JobSubmit::new(Workload::Wordcount, "f");
    job.output = Some("o".into());
    let e = m.submit(0, 1_000_000, job.clone()).unwrap_err();
    assert!(
        matches!(&e, MasterError::FileBeingDeleted { name, pending: 2, .. } if name == "o"),
        "{e:?}"
    );
    for w in 0..2 {
        let mut h = hb(w, 1, vec![], vec![]);
        h.blocks = Some(vec![block("f", 0, 1)]);
        m.heartbeat(10 + w as u64, h);
        m.heartbeat(15 + w as u64, hb(w, 1, vec![], vec![]));
    }
    m.submit(20, 1_000_000, job)
        .expect("the old replicas gone: taken");
}

/// A copy of a block of a file ordered before the file's delete (its
/// holder was lost, the block under-replicated) lands on a worker that
/// held none, after that worker's next report: it must not bring the file
/// back (the fault campaigns of 2026-11-29 saw outputs come back so).
#[test]
fn a_copy_landing_after_the_delete_does_not_bring_the_file_back() {
    let mut m = Master::new(settings(3, 1));
    register_all(&mut m, 3, 1, |w| {
        if w < 2 {
            vec![block("f", 0, 1)]
        } else {
            vec![]
        }
    });
    m.set_file_replication("f", 2).unwrap();
    // w1 falls silent and is lost: its replica is copied from w0 to w2.
    for w in [0, 2] {
        m.heartbeat(900 + w as u64, hb(w, 1, vec![], vec![]));
    }
    m.check_workers(1_100);
    let reply = m.heartbeat(1_110, hb(0, 1, vec![], vec![]));
    assert_eq!(reply.copy_blocks.len(), 1, "{reply:?}");
    m.delete_file("f").unwrap();
    // w2 reports before the copy lands, then with it.
    let mut h = hb(2, 1, vec![], vec![]);
    h.blocks = Some(vec![]);
    m.heartbeat(1_120, h);
    assert!(matches!(
        m.file("f"),
        Err(MasterError::FileBeingDeleted { .. })
    ));
    let mut h = hb(2, 1, vec![], vec![]);
    h.blocks = Some(vec![block("f", 0, 1)]);
    let reply = m.heartbeat(1_130, h);
    assert!(
        m.files().iter().all(|f| f.name != "f"),
        "the deleted file came back"
    );
    assert_eq!(reply.drop_blocks.len(), 1, "w2 is told to drop the copy");
    // Dropped by both: the name is free.
    for w in [0, 2] {
        let mut h = hb(w, 1, vec![], vec![]);
        h.blocks = Some(vec![]);
        m.heartbeat(1_140 + w as u64, h);
        m.heartbeat(1_150 + w as u64, hb(w, 1, vec![], vec![]));
    }
    assert!(matches!(m.file("f"), Err(MasterError::UnknownFile { .. })));
}

/// A master restarted right after a delete does not know the copies its
/// last incarnation ordered: the deletion is guarded for what is left of
/// its guard, from the journal's time of it.
#[test]
fn a_copy_landing_after_a_restart_does_not_bring_a_file_deleted_just_before_back() {
    let mut m = Master::new(settings(3, 1));
    register_all(&mut m, 3, 1, |w| {
        if w < 2 {
            vec![block("f", 0, 1), block("g", 0, 1)]
        } else {
            vec![]
        }
    });
    m.delete_file("f").unwrap();
    m.delete_file("g").unwrap();
    let mut entries = m.take_journal();
    // g's delete is journaled as three minutes old: past its guard.
    for e in &mut entries {
        if let journal::JournalEntry::Deleted { file, unix_ms, .. } = e {
            if file == "g" {
                *unix_ms -= 180_000;
            }
        }
    }
    let mut again = Master::new(settings(3, 1));
    again.restore(entries, common::unix_ms());
    // Every worker registers again without the blocks, then w2 reports
    // copies of both that just landed.
    register_all(&mut again, 3, 1, |_| vec![]);
    again.heartbeat(4_000, hb(2, 1, vec![], vec![]));
    let mut h = hb(2, 1, vec![], vec![]);
    h.blocks = Some(vec![block("f", 0, 1), block("g", 0, 1)]);
    again.heartbeat(5_000, h);
    let names: Vec<String> = again.files().into_iter().map(|f| f.name).collect();
    assert!(!names.contains(&"f".to_owned()), "f came back: {names:?}");
    assert!(
        names.contains(&"g".to_owned()),
        "g, deleted long before, is a new file of that name: {names:?}"
    );
}

/// The heartbeat that reports a job's last map releases its reduces: the
/// other idle out-of-band workers are asked to heartbeat now, not at their
/// next interval; the worker answered is not (its reply takes a reduce),
/// nor is a worker on its interval, and a heartbeat that leaves no more
/// tasks waiting than before wakes nobody.
#[test]
fn a_heartbeat_that_releases_reduces_wakes_the_idle_workers_but_its_own() {
    let mut m = Master::new(settings(3, 1));
    register_all_with(
        &mut m,
        3,
        1,
        |w| {
            if w == 0 {
                vec![block("f", 0, 1)]
            } else {
                vec![]
            }
        },
        |w| w < 2,
    );
    wordcount(&mut m, 2);
    let (reply, wake) = m.heartbeat_waking(10, hb(0, 1, vec![], vec![]));
    assert_eq!(reply.launches.len(), 1);
    assert!(wake.is_empty(), "fewer tasks wait after it: {wake:?}");
    for w in 1..3 {
        let (reply, wake) = m.heartbeat_waking(11, hb(w, 1, vec![], vec![]));
        assert!(reply.launches.is_empty() && wake.is_empty());
    }
    let map = &reply.launches[0];
    let (reply, wake) = m.heartbeat_waking(20, hb(0, 1, vec![], vec![ok(map, 0)]));
    assert!(
        matches!(
            reply.launches[..],
            [Launch {
                task: LaunchTask::Reduce(_),
                ..
            }]
        ),
        "{reply:?}"
    );
    assert_eq!(wake, ["http://w1"]);
    // The woken worker takes the other reduce; nothing more waits.
    let (reply, wake) = m.heartbeat_waking(21, hb(1, 1, vec![], vec![]));
    assert_eq!(reply.launches.len(), 1);
    assert!(wake.is_empty(), "{wake:?}");
}
