use super::*;

#[test]
fn local_tasks_run_and_report_adds_up() {
    let mut m = cluster(3, 2, 6);
    let job = submit(&mut m);
    let mut all = Vec::new();
    for w in 0..3 {
        let r = m.heartbeat(10, hb(w, 2, vec![], vec![]));
        assert_eq!(r.launches.len(), 2, "w{w} gets its two local blocks");
        assert!(r
            .launches
            .iter()
            .all(|l| *map_of(l).0 == ReplicaSource::Local));
        all.push((w, r.launches));
    }
    assert_eq!(m.report(job).unwrap().state, JobState::Running);
    for (w, ls) in &all {
        let results = ls.iter().map(|l| ok(l, 0)).collect();
        m.heartbeat(20, hb(*w, 2, vec![], results));
    }
    let r = m.report(job).unwrap();
    assert_eq!(r.state, JobState::Succeeded);
    assert_eq!(
        (r.tasks, r.tasks_done, r.data_local, r.data_remote),
        (6, 6, 6, 0)
    );
    assert_eq!((r.bytes_local, r.bytes_remote), (6000, 0));
    assert_eq!(r.jct_ms, Some(50));
    assert_eq!(r.attempts.len(), 6);
    assert_eq!(r.attempts[0].start_ms, 10);
    assert_eq!(m.finished_jobs(), 1);
}

#[test]
fn the_decision_record_keeps_its_newest_rows_within_its_bound() {
    let mut s = settings(3, 2);
    s.record_decisions = true;
    s.decisions_max = 4;
    let mut m = cluster_with(s, 3, 2, 6);
    let job = submit(&mut m);
    for w in 0..3 {
        m.heartbeat(10 + u64::from(w), hb(w, 2, vec![], vec![]));
    }
    // Six launches, one row each: the first two dropped.
    let rows = m.decisions(None);
    assert_eq!(m.decisions_dropped(), 2);
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|d| d.job == Some(job)));
    assert_eq!(
        rows.iter().map(|d| d.offered).collect::<Vec<_>>(),
        [WorkerId(1), WorkerId(1), WorkerId(2), WorkerId(2)],
        "the newest kept, oldest first"
    );
}

#[test]
fn remote_launch_names_the_replica_holder() {
    // Two workers, all blocks on w0 (block i on i % 1 == 0... use 1-worker placement).
    let mut m = Master::new(settings(2, 1));
    m.register(
        0,
        RegisterRequest {
            name: "w0".into(),
            addr: "http://a".into(),
            slots: 1,
            protocol: common::wire::PROTOCOL,
            blocks: vec![block("f", 0, 1)],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    m.register(
        0,
        RegisterRequest {
            name: "w1".into(),
            addr: "http://b".into(),
            slots: 1,
            protocol: common::wire::PROTOCOL,
            blocks: vec![],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    let job = submit(&mut m);
    let r = m.heartbeat(5, hb(1, 1, vec![], vec![]));
    assert_eq!(r.launches.len(), 1);
    assert_eq!(
        *map_of(&r.launches[0]).0,
        ReplicaSource::Remote {
            worker: WorkerId(0),
            addr: "http://a".into()
        }
    );
    m.heartbeat(6, hb(1, 1, vec![], vec![ok(&r.launches[0], 0)]));
    let rep = m.report(job).unwrap();
    assert_eq!(
        (rep.data_local, rep.data_remote, rep.bytes_remote),
        (0, 1, 1000)
    );
    assert_eq!(rep.attempts[0].worker, "w1");
    assert_eq!(rep.attempts[0].source, "w0");
    assert_eq!(rep.attempts[0].locality, Locality::DataRemote);
}

#[test]
fn a_rack_local_map_reads_the_replica_in_its_rack() {
    // w0, w1 on /a; w2, w3 on /b. Six blocks, each on w1 and w3; w0 asks
    // first and reads every one from w1, its rack, never from w3 (a random
    // replica would be w1 six times with probability 1/64).
    let mut s = settings(4, 6);
    for (w, r) in s.workers.iter_mut().zip(["/a", "/a", "/b", "/b"]) {
        w.rack = r.into();
    }
    let mut m = Master::new(s);
    register_all(&mut m, 4, 6, |w| {
        if w % 2 == 1 {
            (0..6).map(|b| block("f", b, 6)).collect()
        } else {
            vec![]
        }
    });
    assert_eq!(m.view().rack_of(WorkerId(0)), m.view().rack_of(WorkerId(1)));
    assert_ne!(m.view().rack_of(WorkerId(0)), m.view().rack_of(WorkerId(3)));
    submit(&mut m);
    let r = m.heartbeat(5, hb(0, 6, vec![], vec![]));
    assert_eq!(r.launches.len(), 6);
    for l in &r.launches {
        assert_eq!(
            *map_of(l).0,
            ReplicaSource::Remote {
                worker: WorkerId(1),
                addr: "http://w1".into()
            }
        );
    }
}

#[test]
fn failed_attempts_retry_then_fail_the_job() {
    let mut m = cluster(1, 1, 1);
    let job = submit(&mut m);
    let l1 = m.heartbeat(1, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(l1[0].attempt.attempt, 0);
    let l2 = m
        .heartbeat(2, hb(0, 1, vec![], vec![failed(&l1[0])]))
        .launches;
    assert_eq!(l2[0].attempt.attempt, 1, "retried as a new attempt");
    // A late duplicate of attempt 0's result is fenced off.
    m.heartbeat(3, hb(0, 0, vec![l2[0].attempt], vec![ok(&l1[0], 0)]));
    assert_eq!(m.report(job).unwrap().state, JobState::Running);
    let l3 = m
        .heartbeat(4, hb(0, 1, vec![], vec![failed(&l2[0])]))
        .launches;
    assert!(l3.is_empty());
    let r = m.report(job).unwrap();
    assert_eq!(r.state, JobState::Failed);
    assert!(r.error.unwrap().contains("disk on fire"));
    assert_eq!(r.attempts.len(), 2);
    assert!(r.attempts.iter().all(|a| !a.ok));
}

#[test]
fn lost_launch_is_rescheduled_without_penalty() {
    let mut m = cluster(1, 1, 1);
    let job = submit(&mut m);
    let l1 = m.heartbeat(1, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(l1.len(), 1);
    // The reply never arrived: the worker reports nothing running, a free slot.
    let l2 = m.heartbeat(2, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(l2.len(), 1);
    assert_eq!(l2[0].attempt.attempt, 1);
    m.heartbeat(3, hb(0, 1, vec![], vec![ok(&l2[0], 0)]));
    assert_eq!(m.report(job).unwrap().state, JobState::Succeeded);
}

#[test]
fn rejected_launch_is_retried() {
    let mut m = cluster(1, 1, 1);
    let job = submit(&mut m);
    let l1 = m.heartbeat(1, hb(0, 1, vec![], vec![])).launches;
    let rej = TaskResult {
        outcome: TaskOutcome::Rejected {
            reason: "busy".into(),
        },
        ..ok(&l1[0], 0)
    };
    let l2 = m.heartbeat(2, hb(0, 1, vec![], vec![rej])).launches;
    assert_eq!(l2.len(), 1);
    m.heartbeat(3, hb(0, 1, vec![], vec![ok(&l2[0], 0)]));
    let r = m.report(job).unwrap();
    assert_eq!(r.state, JobState::Succeeded);
    assert_eq!(r.attempts.len(), 1);
}

#[test]
fn lost_worker_tasks_move_to_replicas_or_fail_the_job() {
    // Blocks 0 and 1 on both workers; block 2 only on w1.
    let mut m = Master::new(settings(2, 4));
    let both = vec![block("f", 0, 3), block("f", 1, 3)];
    let mut w1 = both.clone();
    w1.push(block("f", 2, 3));
    m.register(
        0,
        RegisterRequest {
            name: "w0".into(),
            addr: "a".into(),
            slots: 4,
            protocol: common::wire::PROTOCOL,
            blocks: both,
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    m.register(
        0,
        RegisterRequest {
            name: "w1".into(),
            addr: "b".into(),
            slots: 4,
            protocol: common::wire::PROTOCOL,
            blocks: w1,
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    let job = submit(&mut m);
    let l = m.heartbeat(10, hb(1, 4, vec![], vec![])).launches;
    assert_eq!(l.len(), 3);
    // w0 keeps heartbeating, w1 goes silent.
    m.heartbeat(600, hb(0, 4, vec![], vec![]));
    m.check_workers(1200);
    assert!(!m.workers()[1].alive);
    let r = m.report(job).unwrap();
    assert_eq!(r.state, JobState::Failed);
    assert!(
        r.error.unwrap().contains("f.b00002"),
        "names the block without replicas"
    );
    // w1's late heartbeat is told to register again.
    assert!(m.heartbeat(1300, hb(1, 4, vec![], vec![])).reregister);
}

/// `master.retained_jobs`: beyond it the oldest ended jobs leave the
/// master's memory (a long run's memory stays bounded); asking for one
/// says it was retired, and running jobs are never retired.
#[test]
fn ended_jobs_beyond_the_retention_are_retired() {
    let mut s = settings(2, 2);
    s.retained_jobs = 2;
    let mut m = cluster_with(s, 2, 2, 2);
    let mut ids = Vec::new();
    for _ in 0..4 {
        let id = submit(&mut m);
        let launches = launch_all(&mut m, 10);
        for w in 0..2 {
            let results = launches
                .iter()
                .filter(|(lw, _)| *lw == w)
                .map(|(_, l)| ok(l, 0))
                .collect();
            m.heartbeat(20, hb(w, 2, vec![], results));
        }
        assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
        ids.push(id);
    }
    let running = submit(&mut m);
    assert_eq!(m.reports().len(), 3, "two ended jobs and the running one");
    let e = m.report(ids[0]).unwrap_err().to_string();
    assert!(
        e.contains("retired") && e.contains("master.retained_jobs"),
        "{e}"
    );
    assert!(m.report(ids[3]).is_ok());
    assert!(m.report(running).is_ok());
    assert!(matches!(
        m.report(JobId(99)),
        Err(MasterError::UnknownJob(_))
    ));
}

/// Fencing. A worker the master declared lost comes back with results of
/// attempts that were given to others: the heartbeat is refused, the
/// worker is told it was declared lost (it kills what it runs), each result
/// is refused with the reason and counted, and the job's result is the
/// other worker's alone. A known worker's result of an attempt that is no
/// longer current is refused and counted too, and a heartbeat stamped with
/// another incarnation of the master makes the worker register again
/// without being called lost. A restarted master is the next incarnation.
#[test]
fn late_results_of_a_lost_worker_and_stale_attempts_are_refused_and_counted() {
    let mut m = cluster(2, 1, 2);
    // Both blocks on both workers, before the job.
    for w in 0..2 {
        let mut beat = hb(w, 1, vec![], vec![]);
        beat.blocks = Some(vec![block("f", 0, 2), block("f", 1, 2)]);
        m.heartbeat(5, beat);
    }
    let job = submit(&mut m);
    let l0 = m.heartbeat(10, hb(0, 1, vec![], vec![])).launches.remove(0);
    let l1 = m.heartbeat(10, hb(1, 1, vec![], vec![])).launches.remove(0);
    // w0 goes silent; w1 finishes its map; w0 is declared lost and its
    // map runs on w1.
    m.heartbeat(900, hb(1, 1, vec![], vec![ok(&l1, 0)]));
    m.check_workers(1200);
    let again = m
        .heartbeat(1201, hb(1, 1, vec![], vec![]))
        .launches
        .remove(0);
    assert_eq!(again.attempt.task, l0.attempt.task);
    m.heartbeat(1250, hb(1, 1, vec![], vec![ok(&again, 0)]));
    assert_eq!(m.report(job).unwrap().state, JobState::Succeeded);
    // w0 comes back with its result: refused, counted, told it was lost.
    let reply = m.heartbeat(1300, hb(0, 1, vec![], vec![ok(&l0, 0)]));
    assert!(reply.reregister && reply.lost, "{reply:?}");
    assert_eq!(reply.refused.len(), 1);
    assert_eq!(reply.refused[0].attempt, l0.attempt);
    assert!(
        reply.refused[0].reason.contains("declared worker w0 lost"),
        "{:?}",
        reply.refused
    );
    assert_eq!(m.results_refused(), 1);
    // The job's records are w1's alone.
    let r = m.report(job).unwrap();
    assert_eq!(r.attempts.len(), 2);
    assert!(r.attempts.iter().all(|a| a.worker == "w1" && a.ok), "{r:?}");
    // A known worker's result of an attempt that is not current: refused.
    let reply = m.heartbeat(1301, hb(1, 1, vec![], vec![ok(&l0, 0)]));
    assert!(!reply.reregister);
    assert_eq!(reply.refused.len(), 1, "{reply:?}");
    assert!(
        reply.refused[0].reason.contains(&l0.attempt.to_string()),
        "{:?}",
        reply.refused
    );
    assert_eq!(m.results_refused(), 2);
    // Another incarnation's heartbeat: register again, not lost.
    let mut stale = hb(1, 1, vec![], vec![]);
    stale.incarnation = m.incarnation() + 1;
    let reply = m.heartbeat(1302, stale);
    assert!(reply.reregister && !reply.lost && reply.refused.is_empty());
    // A restart is the next incarnation.
    let mut next = cluster(2, 1, 2);
    next.restore(vec![journal::JournalEntry::Incarnation { number: 4 }], 0);
    assert_eq!(next.incarnation(), 5);
}

#[test]
fn lost_worker_tasks_rerun_elsewhere() {
    let mut m = Master::new(settings(2, 1));
    let b = vec![block("f", 0, 1)];
    m.register(
        0,
        RegisterRequest {
            name: "w0".into(),
            addr: "a".into(),
            slots: 1,
            protocol: common::wire::PROTOCOL,
            blocks: b.clone(),
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    m.register(
        0,
        RegisterRequest {
            name: "w1".into(),
            addr: "b".into(),
            slots: 1,
            protocol: common::wire::PROTOCOL,
            blocks: b,
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    let job = submit(&mut m);
    assert_eq!(m.heartbeat(10, hb(1, 1, vec![], vec![])).launches.len(), 1);
    m.heartbeat(900, hb(0, 1, vec![], vec![]));
    m.check_workers(1200);
    let l = m.heartbeat(1201, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(l.len(), 1);
    assert_eq!(*map_of(&l[0]).0, ReplicaSource::Local);
    m.heartbeat(1202, hb(0, 1, vec![], vec![ok(&l[0], 0)]));
    assert_eq!(m.report(job).unwrap().state, JobState::Succeeded);
}

#[test]
fn bad_submissions_and_registrations_are_refused() {
    let mut m = cluster(2, 1, 2);
    let e = m
        .submit(0, 0, JobSubmit::new(Workload::InputSink, "nope"))
        .unwrap_err();
    assert!(matches!(e, MasterError::UnknownFile { .. }), "{e}");
    assert!(e.to_string().contains("nope") && e.to_string().contains("f"));
    let e = m
        .register(
            0,
            RegisterRequest {
                name: "stranger".into(),
                addr: "x".into(),
                slots: 1,
                protocol: common::wire::PROTOCOL,
                blocks: vec![],
                out_of_band_heartbeat: false,
                running: Vec::new(),
                map_outputs: Vec::new(),
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("stranger") && e.to_string().contains("w0, w1"));
    // A file with a block nobody holds.
    m.register(
        0,
        RegisterRequest {
            name: "w0".into(),
            addr: "a".into(),
            slots: 1,
            protocol: common::wire::PROTOCOL,
            blocks: vec![block("g", 1, 2)],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    let e = m
        .submit(0, 0, JobSubmit::new(Workload::InputSink, "g"))
        .unwrap_err();
    assert_eq!(
        e,
        MasterError::IncompleteFile {
            name: "g".into(),
            missing: vec![0]
        }
    );
}

/// Worker roles: maps only on map machines, reduces only on reduce machines,
/// and a reduce launch names every map's output and its key range.
#[test]
fn roles_keep_maps_and_reduces_apart() {
    use common::config::Role;
    let mut s = settings(3, 2);
    s.workers[0].role = Role::Map;
    s.workers[1].role = Role::Map;
    s.workers[2].role = Role::Reduce;
    let mut m = Master::new(s);
    // The reduce machine holds no data (the loader never places any there).
    register_all(&mut m, 3, 2, |w| {
        (0..4)
            .filter(|b| w < 2 && b % 2 == w)
            .map(|b| block("f", b, 4))
            .collect()
    });
    let mut job = JobSubmit::new(Workload::Wordcount, "f");
    job.reduces = Some(2);
    let id = m.submit(0, 1_000_000, job).unwrap();
    // The reduce machine gets no map, even with free slots and no local data.
    assert!(m
        .heartbeat(10, hb(2, 2, vec![], vec![]))
        .launches
        .is_empty());
    let mut maps = Vec::new();
    for w in 0..2 {
        maps.push((w, m.heartbeat(10, hb(w, 2, vec![], vec![])).launches));
    }
    assert_eq!(maps.iter().map(|(_, l)| l.len()).sum::<usize>(), 4);
    for (w, ls) in &maps {
        let results = ls.iter().map(|l| ok(l, 0)).collect();
        let r = m.heartbeat(20, hb(*w, 2, vec![], results));
        // Map machines never get the reduces.
        assert!(r.launches.is_empty(), "{:?}", r.launches);
    }
    let rep = m.report(id).unwrap();
    assert_eq!(rep.tasks_done, 4, "{rep:?}");
    // One new reduce per heartbeat (`spread`, the default for hadoop).
    let mut launches = Vec::new();
    for t in [30, 40] {
        let r = m.heartbeat(t, hb(2, 2, vec![], vec![]));
        assert_eq!(r.launches.len(), 1, "{:?}", m.view().worker(WorkerId(2)));
        launches.extend(r.launches);
    }
    for (i, l) in launches.iter().enumerate() {
        let LaunchTask::Reduce(red) = &l.task else {
            panic!("expected reduces: {l:?}")
        };
        assert_eq!(red.partition, i as u32);
        assert_eq!(red.inputs.len(), 4);
        assert!(red.range.is_none(), "wordcount partitions by hash");
        assert_eq!(red.output.file, "wordcount-1.out");
        // Output replicas: the reducer plus one data-holding worker.
        assert_eq!(red.output.replicas.len(), 1);
        assert_ne!(red.output.replicas[0], "http://w2");
    }
    let report = m.report(id).unwrap();
    assert_eq!((report.reduces, report.reduces_done), (2, 0));
    assert_eq!(report.state, JobState::Running);
}

/// Reduce placement follows `cluster.reduce_placement`: `spread` (hadoop's
/// own) and EAS's Algorithm 3 put a job's 4 reduces on 4 workers;
/// `first-free` fills the first two workers that ask.
#[test]
fn reduce_placement_follows_the_setting() {
    let workers_used = |placement: ReducePlacement, scheduler: SchedulerConfig| {
        let mut s = settings(4, 2);
        s.reduce_placement = placement;
        s.scheduler = scheduler;
        let mut m = cluster_with(s, 4, 2, 8);
        assert_eq!(
            m.reduce_placement(),
            placement.resolve(&m.settings.scheduler)
        );
        wordcount(&mut m, 4);
        let red = drive_maps(&mut m, 4, 10, vec![]);
        assert_eq!(red.len(), 4);
        let mut per_worker = [0; 4];
        for (w, _) in &red {
            per_worker[*w as usize] += 1;
        }
        per_worker
    };
    assert_eq!(
        workers_used(ReducePlacement::Policy, SchedulerConfig::hadoop()),
        [1, 1, 1, 1]
    );
    assert_eq!(
        workers_used(
            ReducePlacement::Policy,
            SchedulerConfig::Eas(Default::default())
        ),
        [1, 1, 1, 1]
    );
    let first_free = workers_used(ReducePlacement::FirstFree, SchedulerConfig::hadoop());
    assert_eq!(
        first_free.iter().filter(|n| **n == 2).count(),
        2,
        "{first_free:?}"
    );
}

#[test]
fn a_report_says_which_maps_an_external_policys_fallback_launched() {
    // A policy nobody serves: every offer goes to the fallback, and the
    // job's report counts its maps as the fallback's.
    let mut s = settings(3, 2);
    s.scheduler =
        "policy = 'external', address = 'unix:/nonexistent/policy.sock', fallback = 'hadoop'"
            .parse()
            .unwrap();
    let mut m = cluster_with(s, 3, 2, 6);
    let job = submit(&mut m);
    drive_maps(&mut m, 3, 10, Vec::new());
    let r = m.report(job).unwrap();
    assert_eq!(r.state, JobState::Succeeded);
    let d = r
        .decided_by
        .expect("an external policy's job says who decided");
    assert_eq!((d.policy, d.fallback), (0, 6), "{d:?}");
    assert!(d.fallback_name.starts_with("hadoop"), "{d:?}");
    // A built-in policy's report says nothing of it.
    let mut m = cluster(3, 2, 6);
    let job = submit(&mut m);
    drive_maps(&mut m, 3, 10, Vec::new());
    assert_eq!(m.report(job).unwrap().decided_by, None);
}
