use super::*;

#[test]
fn a_fetch_failure_reruns_the_lost_maps_and_retries_the_reduce_without_penalty() {
    let mut m = cluster(2, 2, 4);
    let id = wordcount(&mut m, 1);
    let red = drive_maps(&mut m, 2, 10, vec![]);
    assert_eq!(m.report(id).unwrap().tasks_done, 4);
    assert_eq!(red.len(), 1);
    let (rw, red) = red.into_iter().next().unwrap();
    let on_w1: Vec<LostOutput> = reduce_inputs(&red)
        .iter()
        .filter(|i| i.1 == WorkerId(1))
        .map(|&(map, worker, attempt)| LostOutput {
            map,
            attempt,
            worker,
        })
        .collect();
    assert_eq!(on_w1.len(), 2);
    let fetch_failed = TaskResult {
        outcome: TaskOutcome::FetchFailed {
            lost: on_w1.clone(),
            error: "connection refused".into(),
        },
        ..ok_any(&red)
    };
    let reply = m
        .heartbeat(30, hb(rw, 2, vec![], vec![fetch_failed]))
        .launches;
    assert_eq!(m.maps_rerun(), 2);
    let rep = m.report(id).unwrap();
    assert_eq!(rep.tasks_done, 2, "{rep:?}");
    assert_eq!(rep.data_local + rep.data_remote, 2, "counters taken back");
    assert_eq!(rep.state, JobState::Running);
    // No reduce until its inputs are back; the lost maps may start at once.
    assert!(
        reply
            .iter()
            .all(|l| matches!(l.task, LaunchTask::Map { .. })),
        "{reply:?}"
    );
    let owed = reply.into_iter().map(|l| (rw, l)).collect();
    let red2 = drive_maps(&mut m, 2, 40, owed);
    assert_eq!(red2.len(), 1, "the reduce runs again once");
    let (rw2, red2) = red2.into_iter().next().unwrap();
    assert_eq!(red2.attempt.attempt, red.attempt.attempt + 1);
    let inputs2 = reduce_inputs(&red2);
    for l in &on_w1 {
        let now = inputs2.iter().find(|i| i.0 == l.map).unwrap();
        assert_eq!(now.2, l.attempt + 1, "the new output of map {}", l.map);
    }
    // A late report about the replaced outputs reruns nothing.
    let stale = TaskResult {
        outcome: TaskOutcome::FetchFailed {
            lost: on_w1,
            error: "late".into(),
        },
        ..ok_any(&red)
    };
    let still = if rw == rw2 {
        vec![red2.attempt]
    } else {
        vec![]
    };
    m.heartbeat(50, hb(rw, 2, still, vec![stale]));
    assert_eq!(m.maps_rerun(), 2, "a stale report reruns nothing");
    m.heartbeat(70, hb(rw2, 2, vec![], vec![reduced(&red2)]));
    let rep = m.report(id).unwrap();
    assert_eq!(rep.state, JobState::Succeeded, "{rep:?}");
    assert_eq!((rep.tasks_done, rep.data_local + rep.data_remote), (4, 4));
    // The fetch failure is on record, but not as a failure counted toward
    // max_task_attempts (2 here: counted, it and one more would fail the job).
    assert!(rep.attempts.iter().any(|a| a
        .error
        .as_deref()
        .is_some_and(|e| e.contains("fetch failed"))));
}

#[test]
fn a_lost_workers_map_outputs_run_again_while_reduces_need_them() {
    // Three workers, 1 slot each; block b on workers b % 3 and (b + 1) % 3.
    let mut m = Master::new(settings(3, 2));
    register_all(&mut m, 3, 2, |w| {
        (0..6)
            .filter(|b| b % 3 == w || (b + 1) % 3 == w)
            .map(|b| block("f", b, 6))
            .collect()
    });
    // Two reduces: the first heartbeat after the maps takes both, so the
    // job still needs every output when w2 goes.
    let id = wordcount(&mut m, 2);
    let red = drive_maps(&mut m, 3, 10, vec![]);
    assert_eq!(m.report(id).unwrap().tasks_done, 6);
    assert!(!red.is_empty());
    let on_w2 = m
        .jobs
        .job(id)
        .map_out
        .iter()
        .filter(|o| o.is_some_and(|o| o.worker == WorkerId(2)))
        .count();
    assert!(on_w2 > 0, "w2 ran some maps");
    // w2 falls silent; the others keep heartbeating (their reduces run).
    let running: Vec<AttemptId> = red.iter().map(|(_, l)| l.attempt).collect();
    for t in [500, 1000, 1500] {
        for w in 0..2 {
            m.heartbeat(t, hb(w, 0, running.clone(), vec![]));
        }
        m.check_workers(t);
    }
    assert!(!m.workers()[2].alive);
    assert_eq!(m.maps_rerun() as usize, on_w2);
    assert_eq!(m.report(id).unwrap().tasks_done as usize, 6 - on_w2);
    // They run again on w0/w1 (which hold replicas).
    let more = drive_maps(&mut m, 2, 1600, vec![]);
    assert_eq!(m.report(id).unwrap().tasks_done, 6);
    // A reduce that was on w2 runs again, from outputs that avoid w2.
    for (_, l) in &more {
        assert!(reduce_inputs(l).iter().all(|i| i.1 != WorkerId(2)));
    }
    // w2 comes back: its old outputs stay forgotten, nothing reruns.
    let before = m.maps_rerun();
    m.register(
        1900,
        RegisterRequest {
            name: "w2".into(),
            addr: "http://w2".into(),
            slots: 2,
            protocol: common::wire::PROTOCOL,
            blocks: vec![],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    assert_eq!(m.maps_rerun(), before);
    // Map output it still keeps of a job this master does not run (one
    // that ended while it was out, or long ago) is deleted at its next
    // heartbeat; a running job's stays.
    let kept = |job| AttemptId {
        task: common::TaskRef { job, index: 0 },
        attempt: 0,
    };
    m.register(
        2000,
        RegisterRequest {
            name: "w2".into(),
            addr: "http://w2".into(),
            slots: 2,
            protocol: common::wire::PROTOCOL,
            blocks: vec![],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: vec![kept(JobId(99)), kept(id), kept(JobId(99))],
        },
    )
    .unwrap();
    let reply = m.heartbeat(2100, hb(2, 2, vec![], vec![]));
    assert_eq!(reply.forget_jobs, vec![JobId(99)]);
}

#[test]
fn lost_replicas_are_copied_back_and_excess_ones_trimmed() {
    // Block b of "f" on workers b % 3 and (b + 1) % 3; factor 2.
    let held = |w: u32| -> Vec<BlockInfo> {
        (0..6)
            .filter(|b| b % 3 == w || (b + 1) % 3 == w)
            .map(|b| block("f", b, 6))
            .collect()
    };
    let mut m = Master::new(settings(3, 2));
    register_all(&mut m, 3, 2, held);
    // Nothing happens before the factor is declared, nor at the factor.
    m.check_workers(10);
    m.set_file_replication("f", 2).unwrap();
    m.check_workers(20);
    let quiet = m.heartbeat(30, hb(0, 2, vec![], vec![]));
    assert!(quiet.copy_blocks.is_empty() && quiet.drop_blocks.is_empty());
    assert!(
        m.set_file_replication("f", 4).is_err(),
        "more than the workers"
    );
    assert!(m.set_file_replication("nope", 2).is_err());
    // w2 is lost: its four blocks have one replica left.
    for t in [500, 1000, 1500] {
        m.heartbeat(t, hb(0, 2, vec![], vec![]));
        m.heartbeat(t, hb(1, 2, vec![], vec![]));
        m.check_workers(t);
    }
    assert_eq!(m.file("f").unwrap().under_replicated().len(), 4);
    let mut orders = Vec::new();
    for w in 0..2 {
        for o in m.heartbeat(1600, hb(w, 2, vec![], vec![])).copy_blocks {
            orders.push((w, o));
        }
    }
    assert_eq!(orders.len(), 4, "{orders:?}");
    assert_eq!(m.blocks_copied(), 4);
    // Each copy goes to the other live worker, at most 2 per target.
    for (from, o) in &orders {
        let to = if *from == 0 { "http://w1" } else { "http://w0" };
        assert_eq!(o.to, to);
    }
    // No second order while the copies are in flight.
    m.check_workers(1700);
    for w in 0..2 {
        assert!(m
            .heartbeat(1700, hb(w, 2, vec![], vec![]))
            .copy_blocks
            .is_empty());
    }
    // The targets report the copies: back at the factor, nothing more.
    for w in 0..2u32 {
        let mut blocks = held(w);
        for (from, o) in &orders {
            if *from != w {
                let i: u32 = o
                    .block
                    .to_string()
                    .rsplit('b')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                blocks.push(block("f", i, 6));
            }
        }
        let mut beat = hb(w, 2, vec![], vec![]);
        beat.blocks = Some(blocks);
        m.heartbeat(1800, beat);
    }
    m.check_workers(1900);
    assert!(m.file("f").unwrap().under_replicated().is_empty());
    for w in 0..2 {
        assert!(m
            .heartbeat(1950, hb(w, 2, vec![], vec![]))
            .copy_blocks
            .is_empty());
    }
    // w2 comes back with its old replicas: four blocks at 3; one holder of
    // each gives its replica up.
    m.register(
        2000,
        RegisterRequest {
            name: "w2".into(),
            addr: "http://w2".into(),
            slots: 2,
            protocol: common::wire::PROTOCOL,
            blocks: held(2),
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    m.check_workers(2100);
    let drops: usize = (0..3)
        .map(|w| {
            m.heartbeat(2200, hb(w, 2, vec![], vec![]))
                .drop_blocks
                .len()
        })
        .sum();
    assert_eq!(drops, 4);
    m.check_workers(2300);
    let again: usize = (0..3)
        .map(|w| {
            m.heartbeat(2400, hb(w, 2, vec![], vec![]))
                .drop_blocks
                .len()
        })
        .sum();
    assert_eq!(again, 0, "no second trim while the first is pending");
}

#[test]
fn a_job_output_is_kept_at_the_factor_once_written_and_after_a_grace() {
    let mut m = cluster(2, 2, 2);
    let id = wordcount(&mut m, 1);
    let red = drive_maps(&mut m, 2, 10, vec![]);
    let (rw, red) = red.into_iter().next().unwrap();
    // The reducer stored the output (at its attempt's generation); its
    // replica upload failed (skipped).
    let LaunchTask::Reduce(r) = &red.task else {
        panic!("a reduce: {red:?}")
    };
    let out = BlockInfo {
        generation: r.output.generation,
        ..block("wordcount-1.out", 0, 1)
    };
    let mut held: Vec<BlockInfo> = (0..2)
        .filter(|b| b % 2 == rw)
        .map(|b| block("f", b, 2))
        .collect();
    held.push(out);
    let mut beat = hb(rw, 2, vec![], vec![reduced(&red)]);
    beat.blocks = Some(held);
    m.heartbeat(100, beat);
    assert_eq!(m.report(id).unwrap().state, JobState::Succeeded);
    let f = m.file("wordcount-1.out").unwrap();
    assert_eq!((f.replication, f.under_replicated()), (Some(2), vec![0]));
    // Within the grace no copy is ordered (a report may be in flight)...
    let other = 1 - rw;
    m.check_workers(200);
    m.heartbeat(1000, hb(other, 2, vec![], vec![]));
    m.check_workers(1100);
    assert!(m
        .heartbeat(1150, hb(rw, 2, vec![], vec![]))
        .copy_blocks
        .is_empty());
    // ...after it, the missing replica is made.
    m.heartbeat(1250, hb(other, 2, vec![], vec![]));
    m.check_workers(1300);
    let copies = m.heartbeat(1350, hb(rw, 2, vec![], vec![])).copy_blocks;
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(copies[0].to, format!("http://w{other}"));
}

/// A job's own `output_replication` (1, on a cluster at 2): its reduce
/// names no replica target, the output is kept at 1 past the grace (no
/// copy ordered), and a restarted master, replaying the journal, keeps it
/// at 1. A factor above the workers that hold data is refused.
#[test]
fn a_jobs_output_replication_is_kept_and_survives_a_restart() {
    let mut m = cluster(2, 2, 2);
    let mut job = JobSubmit::new(Workload::Wordcount, "f");
    job.output_replication = Some(1);
    let id = m.submit(0, 1_000_000, job).unwrap();
    let reds = drive_maps(&mut m, 2, 10, vec![]);
    let (rw, red) = reds.into_iter().next().expect("the reduce starts");
    let LaunchTask::Reduce(r) = &red.task else {
        panic!("a reduce: {red:?}")
    };
    assert!(r.output.replicas.is_empty(), "{r:?}");
    let out = BlockInfo {
        generation: r.output.generation,
        ..block("wordcount-1.out", 0, 1)
    };
    let held = move |w: u32| {
        let mut b: Vec<BlockInfo> = (0..2)
            .filter(|b| b % 2 == w)
            .map(|b| block("f", b, 2))
            .collect();
        if w == rw {
            b.push(out.clone());
        }
        b
    };
    let mut beat = hb(rw, 2, vec![], vec![reduced(&red)]);
    beat.blocks = Some(held(rw));
    m.heartbeat(100, beat);
    let rep = m.report(id).unwrap();
    assert_eq!(
        (rep.state, rep.output_replication),
        (JobState::Succeeded, Some(1))
    );
    let other = 1 - rw;
    for t in [1000, 1250, 1500] {
        m.heartbeat(t, hb(other, 2, vec![], vec![]));
        m.check_workers(t + 50);
        let copies = m.heartbeat(t + 100, hb(rw, 2, vec![], vec![])).copy_blocks;
        assert!(copies.is_empty(), "{copies:?}");
    }
    let f = m.file("wordcount-1.out").unwrap();
    assert_eq!((f.replication, f.under_replicated()), (Some(1), vec![]));
    let mut again = Master::new(settings(2, 2));
    again.restore(m.take_journal(), 1_002_000);
    register_all(&mut again, 2, 2, held);
    let f = again.file("wordcount-1.out").unwrap();
    assert_eq!((f.replication, f.under_replicated()), (Some(1), vec![]));
    let mut refused = JobSubmit::new(Workload::Wordcount, "f");
    refused.output_replication = Some(3);
    let e = m.submit(2000, 1_002_000, refused).unwrap_err().to_string();
    assert!(e.contains("`output_replication` must be 1..=2"), "{e}");
    // Without its own, a job's output is written at the cluster's factor
    // (2 here), and its report says so.
    let plain = m.submit(2000, 1_002_000, JobSubmit::new(Workload::Wordcount, "f"));
    let rep = m.report(plain.unwrap()).unwrap();
    assert_eq!(rep.output_replication, Some(2), "{rep:?}");
}

#[test]
fn a_restarted_master_lists_old_jobs_and_never_reuses_ids() {
    let mut m = cluster(2, 2, 2);
    let done = submit(&mut m);
    let running = submit(&mut m);
    let launches = launch_all(&mut m, 10);
    // Finish the first job's maps; the second job's stay running.
    for w in 0..2 {
        let results = launches
            .iter()
            .filter(|(lw, l)| *lw == w && l.attempt.task.job == done)
            .map(|(_, l)| ok(l, 0))
            .collect();
        let running_here = launches
            .iter()
            .filter(|(lw, l)| *lw == w && l.attempt.task.job == running)
            .map(|(_, l)| l.attempt)
            .collect();
        m.heartbeat(20, hb(w, 2, running_here, results));
    }
    assert_eq!(m.report(done).unwrap().state, JobState::Succeeded);
    let journal = m.take_journal();
    let kinds: Vec<&str> = journal
        .iter()
        .map(|e| match e {
            journal::JournalEntry::Submitted { .. } => "submitted",
            journal::JournalEntry::Launched { .. } => "launched",
            journal::JournalEntry::MapDone { .. } => "map-done",
            journal::JournalEntry::Ended { .. } => "ended",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "submitted",
            "submitted",
            "launched",
            "launched",
            "launched",
            "launched",
            "map-done",
            "map-done",
            "ended"
        ],
        "{journal:?}"
    );

    // A journal of an earlier version names no input blocks: its running
    // job cannot be rebuilt and fails, saying why.
    let old_format: Vec<_> = journal
        .iter()
        .cloned()
        .map(|mut e| {
            if let journal::JournalEntry::Submitted { blocks, .. } = &mut e {
                blocks.clear();
            }
            e
        })
        .collect();
    let mut again = cluster(2, 2, 2);
    again.restore(old_format, 1_005_000);
    let old = again.report(done).unwrap();
    assert_eq!(old.state, JobState::Succeeded);
    assert_eq!(old.attempts.len(), 2, "the report keeps its attempts");
    let cut = again.report(running).unwrap();
    assert_eq!(cut.state, JobState::Failed);
    assert!(cut.error.unwrap().contains("master restarted"));
    assert_eq!(again.reports().len(), 2);
    // The interrupted job's end is journaled, so a second restart agrees.
    let more = again.take_journal();
    assert!(
        matches!(&more[..], [
            journal::JournalEntry::Incarnation { number: 1 },
            journal::JournalEntry::Ended { report }
        ] if report.job == running),
        "{more:?}"
    );
    let next = submit(&mut again);
    assert_eq!(next, JobId(3), "ids go on");
    // Declared factors come back too.
    m.set_file_replication("f", 2).unwrap();
    let mut third = cluster(2, 2, 2);
    third.restore(m.take_journal(), 1_006_000);
    assert_eq!(third.file("f").unwrap().replication, Some(2));
}

/// Work-preserving restart: a wordcount with 4 maps, two done and two
/// running when the master stops. The new master rebuilds the job from
/// the journal and holds it until both workers registered; a worker that
/// still runs its map has it adopted (its result counts), one whose map
/// is gone gets it run again (counted as a restart rerun, with a higher
/// attempt number), and a worker that lost its map outputs gets those
/// maps run again. The job then finishes with every map counted once.
#[test]
fn a_restarted_master_takes_back_running_jobs_and_adopts_their_attempts() {
    let mut m = cluster(2, 2, 4);
    let id = wordcount(&mut m, 1);
    let launches = launch_all(&mut m, 10);
    assert_eq!(launches.len(), 4);
    let on = |w: u32| -> Vec<&Launch> {
        launches
            .iter()
            .filter(|(lw, _)| *lw == w)
            .map(|(_, l)| l)
            .collect()
    };
    // w0 finishes both its maps; w1's two keep running.
    let results = on(0).iter().map(|l| ok(l, 0)).collect();
    let w1_attempts: Vec<AttemptId> = on(1).iter().map(|l| l.attempt).collect();
    m.heartbeat(20, hb(0, 2, vec![], results));
    m.heartbeat(20, hb(1, 0, w1_attempts.clone(), vec![]));
    let journal = m.take_journal();
    let submit_unix = m.report(id).unwrap().submit_unix_ms;

    let fresh = |journal: Vec<journal::JournalEntry>| {
        let mut m = Master::new(settings(2, 2));
        let clock = m.restore(journal, submit_unix + 5_000);
        assert_eq!(clock, 5_000, "the clock starts at the job's age");
        m
    };
    // Case 1: w0 kept its outputs, w1 still runs one map and lost the other.
    let mut again = fresh(journal.clone());
    let r = again.report(id).unwrap();
    assert_eq!((r.state, r.master_restarts), (JobState::Running, 1));
    assert_eq!(r.attempts.len(), 2, "the finished maps are back");
    let w0_outputs: Vec<AttemptId> = on(0).iter().map(|l| l.attempt).collect();
    reregister(&mut again, 0, 4, vec![], w0_outputs);
    // Held: w1 has not registered, so nothing of the job is launched.
    assert!(again
        .heartbeat(5_010, hb(0, 2, vec![], vec![]))
        .launches
        .is_empty());
    reregister(&mut again, 1, 4, vec![w1_attempts[0]], vec![]);
    // The lost attempt runs again; the adopted one is not killed.
    let mut rerun = Vec::new();
    let reply = again.heartbeat(5_020, hb(1, 1, vec![w1_attempts[0]], vec![]));
    assert!(reply.kill.is_empty(), "the adopted attempt is not killed");
    rerun.extend(reply.launches.into_iter().map(|l| (1, l)));
    let reply = again.heartbeat(5_021, hb(0, 2, vec![], vec![]));
    rerun.extend(reply.launches.into_iter().map(|l| (0, l)));
    assert_eq!(rerun.len(), 1, "{rerun:?}");
    assert_eq!(rerun[0].1.attempt.task, w1_attempts[1].task);
    assert_eq!(rerun[0].1.attempt.attempt, 1, "a new attempt number");
    // The adopted attempt's result counts.
    let mut owed = rerun;
    owed.push((1, on(1)[0].clone()));
    let reduces = drive_maps(&mut again, 2, 5_030, owed);
    let (rw, reduce_l) = reduces.into_iter().next().expect("the reduce starts");
    // Every map's output is where the journal or the new attempts left it.
    let inputs = reduce_inputs(&reduce_l);
    assert_eq!(inputs.len(), 4);
    assert!(inputs.contains(&(
        w1_attempts[0].task.index,
        WorkerId(1),
        w1_attempts[0].attempt
    )));
    again.heartbeat(5_060, hb(rw, 2, vec![], vec![reduced(&reduce_l)]));
    let r = again.report(id).unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!((r.master_restarts, r.restart_reruns), (1, 1));
    let maps_ok = r
        .attempts
        .iter()
        .filter(|a| a.ok && a.kind == common::wire::TaskKind::Map)
        .count();
    assert_eq!(maps_ok, 4, "every map counted once");

    // Case 2: w0 restarted too (its outputs are gone): its maps run again.
    let mut again = fresh(journal.clone());
    reregister(&mut again, 0, 4, vec![], vec![]);
    reregister(&mut again, 1, 4, w1_attempts.clone(), vec![]);
    let r = again.report(id).unwrap();
    assert_eq!(r.restart_reruns, 0, "w1 still runs both");
    assert_eq!(again.maps_rerun(), 2, "w0's outputs are lost");
    let mut relaunched = again.heartbeat(5_010, hb(0, 2, vec![], vec![])).launches;
    let reply = again.heartbeat(5_010, hb(1, 0, w1_attempts.clone(), vec![]));
    assert!(reply.kill.is_empty());
    relaunched.extend(reply.launches);
    let mut tasks: Vec<u32> = relaunched.iter().map(|l| l.attempt.task.index).collect();
    tasks.sort();
    let mut w0_tasks: Vec<u32> = on(0).iter().map(|l| l.attempt.task.index).collect();
    w0_tasks.sort();
    assert_eq!(tasks, w0_tasks);

    // Case 3: w1 never registers: after worker_timeout_ms the job goes on
    // without it; its two maps would run again, but their blocks' only
    // replicas were on w1, so the job fails naming one.
    let mut again = fresh(journal);
    let w0_outputs: Vec<AttemptId> = on(0).iter().map(|l| l.attempt).collect();
    reregister(&mut again, 0, 4, vec![], w0_outputs);
    again.check_workers(5_500);
    assert!(
        again
            .heartbeat(5_600, hb(0, 2, vec![], vec![]))
            .launches
            .is_empty(),
        "held"
    );
    again.check_workers(6_000);
    let r = again.report(id).unwrap();
    assert_eq!(r.restart_reruns, 2);
    assert_eq!(r.state, JobState::Failed);
    let error = r.error.unwrap_or_default();
    assert!(
        error.contains("has no live replica (after the master restarted)"),
        "{error}"
    );
}

/// A property test of the master's request handling: seeded random
/// registrations, heartbeats (results of attempts that exist or not, every
/// outcome, block reports with any counts), submissions, liveness checks
/// and replication declarations, in any order. Nothing may panic, and
/// the reports stay consistent.
#[test]
fn random_requests_never_panic_the_master() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let names = ["w0", "w1", "w2", "w9", ""];
    let files = ["f", "nope", "", "wordcount-1.out"];
    for _ in 0..600 {
        let mut m = cluster(3, 2, 4);
        let mut now = 10;
        let mut launched: Vec<Launch> = Vec::new();
        for _ in 0..60 {
            now += rng.gen_range(0..400);
            match rng.gen_range(0..6) {
                0 => {
                    let workload = [Workload::InputSink, Workload::Wordcount, Workload::Sort]
                        [rng.gen_range(0..3)];
                    let mut job = JobSubmit::new(workload, files[rng.gen_range(0..files.len())]);
                    job.reduces =
                        [None, Some(0), Some(1), Some(3), Some(u32::MAX)][rng.gen_range(0..5)];
                    job.output = [None, Some("o".to_string()), Some("../x".to_string())]
                        [rng.gen_range(0..3)]
                    .clone();
                    let _ = m.submit(now, 1_000_000, job);
                }
                1 | 2 => {
                    let w = rng.gen_range(0..5u32);
                    let mut results = Vec::new();
                    for _ in 0..rng.gen_range(0..4) {
                        let attempt = if !launched.is_empty() && rng.gen_bool(0.7) {
                            launched[rng.gen_range(0..launched.len())].attempt
                        } else {
                            AttemptId {
                                task: common::TaskRef {
                                    job: JobId(rng.gen_range(0..5)),
                                    index: rng.gen_range(0..12),
                                },
                                attempt: rng.gen_range(0..4),
                            }
                        };
                        let outcome = match rng.gen_range(0..5) {
                            0 => TaskOutcome::Succeeded {
                                summary: MapSummary::default(),
                            },
                            1 => TaskOutcome::Reduced {
                                summary: workloads::ReduceSummary::default(),
                            },
                            2 => TaskOutcome::Failed { error: "x".into() },
                            3 => TaskOutcome::Rejected { reason: "y".into() },
                            _ => TaskOutcome::FetchFailed {
                                lost: (0..rng.gen_range(0..3))
                                    .map(|_| LostOutput {
                                        map: rng.gen_range(0..10),
                                        attempt: rng.gen_range(0..3),
                                        worker: WorkerId(rng.gen_range(0..5)),
                                    })
                                    .collect(),
                                error: "z".into(),
                            },
                        };
                        results.push(TaskResult {
                            attempt,
                            slot: rng.gen_range(0..3),
                            outcome,
                            started_unix_ms: rng.gen_range(0..2_000_000),
                            finished_unix_ms: rng.gen_range(0..2_000_000),
                            local_bytes: rng.gen_range(0..2000),
                            remote_bytes: rng.gen_range(0..2000),
                        });
                    }
                    let mut beat = hb(w, rng.gen_range(0..4), vec![], results);
                    if rng.gen_bool(0.2) {
                        let n = [1, 2, 4, 0, u32::MAX][rng.gen_range(0..5)];
                        beat.blocks = Some(
                            (0..rng.gen_range(0..5u32))
                                .filter_map(|i| {
                                    let f = ["f", "g", "wordcount-1.out"][rng.gen_range(0..3)];
                                    let mut b = block(f, i, n.max(1));
                                    b.file_blocks = n;
                                    b.index = rng.gen_range(0..6);
                                    (b.index < 100).then_some(b)
                                })
                                .collect(),
                        );
                    }
                    launched.extend(m.heartbeat(now, beat).launches);
                }
                3 => {
                    let _ = m.register(
                        now,
                        RegisterRequest {
                            name: names[rng.gen_range(0..names.len())].into(),
                            addr: "http://x".into(),
                            slots: rng.gen_range(0..4),
                            protocol: common::wire::PROTOCOL,
                            blocks: vec![block("f", rng.gen_range(0..4), 4)],
                            out_of_band_heartbeat: false,
                            running: Vec::new(),
                            map_outputs: Vec::new(),
                        },
                    );
                }
                4 => m.check_workers(now),
                _ => {
                    let _ = m.set_file_replication(
                        files[rng.gen_range(0..files.len())],
                        rng.gen_range(0..5),
                    );
                }
            }
            for r in m.reports() {
                assert!(r.tasks_done <= r.tasks, "{r:?}");
                assert!(r.reduces_done <= r.reduces, "{r:?}");
                assert!(r.data_local + r.data_remote <= r.tasks, "{r:?}");
            }
            let _ = m.files();
        }
    }
}

/// A block report brings up to date the pending maps of the blocks the
/// worker held or holds, and only those: they go to the pending queue's
/// end in the order they stood, as a pass over every pending map made them.
#[test]
fn a_block_report_updates_the_pending_maps_of_its_blocks_in_their_order() {
    let mut m = Master::new(settings(2, 1));
    register_all(&mut m, 2, 1, |w| {
        let mut held: Vec<BlockInfo> = Vec::new();
        if w == 0 {
            held.extend((0..4).map(|b| block("f", b, 4)));
            held.extend((0..2).map(|b| block("g", b, 2)));
        }
        held
    });
    let f = m
        .submit(0, 1_000_000, JobSubmit::new(Workload::InputSink, "f"))
        .unwrap();
    let g = m
        .submit(0, 1_000_000, JobSubmit::new(Workload::InputSink, "g"))
        .unwrap();
    let pending = |m: &Master, job| -> Vec<(u32, Vec<u32>)> {
        let jv = m.view().job(job).unwrap();
        jv.pending()
            .map(|t| (t.task.index, t.replicas.iter().map(|w| w.0).collect()))
            .collect()
    };
    let g_before = pending(&m, g);
    // w1 (no free slot: nothing launches) now holds f's blocks 3 and 1.
    let mut beat = hb(1, 0, vec![], vec![]);
    beat.blocks = Some(vec![block("f", 3, 4), block("f", 1, 4)]);
    m.heartbeat(10, beat);
    let after = pending(&m, f);
    assert_eq!(
        after,
        [(0, vec![0]), (2, vec![0]), (1, vec![0, 1]), (3, vec![0, 1])]
    );
    assert_eq!(pending(&m, g), g_before);
    // It drops block 1: that map alone changes again.
    let mut beat = hb(1, 0, vec![], vec![]);
    beat.blocks = Some(vec![block("f", 3, 4)]);
    m.heartbeat(20, beat);
    assert_eq!(
        pending(&m, f),
        [(0, vec![0]), (2, vec![0]), (3, vec![0, 1]), (1, vec![0])]
    );
}
