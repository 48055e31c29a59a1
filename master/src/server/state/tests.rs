//! The master's rules, driven by fake workers (no HTTP, no clock).

use super::*;
use common::wire::{
    BlockInfo, Heartbeat, LaunchTask, Locality, RegisterRequest, ReplicaSource, TaskOutcome,
    TaskResult,
};
use workloads::{MapSummary, Workload};

fn settings(workers: u32, slots: u32) -> MasterSettings {
    MasterSettings {
        heartbeat_ms: 100,
        worker_timeout_ms: 1000,
        max_task_attempts: 2,
        scheduler: SchedulerConfig::hadoop(),
        seed: 5,
        replication: 2,
        workers: (0..workers)
            .map(|i| WorkerSettings {
                index: i,
                name: format!("w{i}"),
                listen: "127.0.0.1:0".parse().unwrap(),
                slots,
                nic_bytes_per_sec: None,
                slot_rate_bytes: None,
                role: common::config::Role::Both,
            })
            .collect(),
    }
}

fn block(file: &str, index: u32, n: u32) -> BlockInfo {
    BlockInfo {
        id: BlockId::for_file(file, index).unwrap(),
        file: file.into(),
        index,
        file_blocks: n,
        len: 1000,
    }
}

/// Registers `w0..wn`; block i of file "f" (n blocks) lives on worker i % workers.
fn cluster(workers: u32, slots: u32, blocks: u32) -> Master {
    let mut m = Master::new(settings(workers, slots));
    for w in 0..workers {
        let mine = (0..blocks)
            .filter(|b| b % workers == w)
            .map(|b| block("f", b, blocks))
            .collect();
        m.register(
            0,
            RegisterRequest {
                name: format!("w{w}"),
                addr: format!("http://w{w}"),
                slots,
                blocks: mine,
            },
        )
        .unwrap();
    }
    m
}

fn hb(w: u32, free: u32, running: Vec<AttemptId>, results: Vec<TaskResult>) -> Heartbeat {
    Heartbeat {
        busy: Vec::new(),
        worker: WorkerId(w),
        free_slots: free,
        running,
        blocks: None,
        results,
    }
}

/// A map launch's source and input length.
fn map_of(l: &Launch) -> (&ReplicaSource, u64) {
    match &l.task {
        LaunchTask::Map { source, len, .. } => (source, *len),
        LaunchTask::Reduce(_) => panic!("expected a map launch: {l:?}"),
    }
}

fn ok(l: &Launch, slot: u32) -> TaskResult {
    let (source, len) = map_of(l);
    let remote = !matches!(source, ReplicaSource::Local);
    TaskResult {
        attempt: l.attempt,
        slot,
        outcome: TaskOutcome::Succeeded {
            summary: MapSummary {
                input_bytes: len,
                records: 1,
                output_bytes: 0,
                sample: Vec::new(),
            },
        },
        started_unix_ms: 1_000_010,
        finished_unix_ms: 1_000_050,
        local_bytes: if remote { 0 } else { len },
        remote_bytes: if remote { len } else { 0 },
    }
}

fn failed(l: &Launch) -> TaskResult {
    TaskResult {
        outcome: TaskOutcome::Failed {
            error: "disk on fire".into(),
        },
        ..ok(l, 0)
    }
}

fn submit(m: &mut Master) -> JobId {
    m.submit(
        0,
        1_000_000,
        JobSubmit {
            workload: Workload::InputSink,
            input: "f".into(),
            name: None,
            group: None,
            reduces: None,
            output: None,
        },
    )
    .unwrap()
}

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
    assert_eq!(m.finished_jobs, 1);
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
            blocks: vec![block("f", 0, 1)],
        },
    )
    .unwrap();
    m.register(
        0,
        RegisterRequest {
            name: "w1".into(),
            addr: "http://b".into(),
            slots: 1,
            blocks: vec![],
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
            blocks: both,
        },
    )
    .unwrap();
    m.register(
        0,
        RegisterRequest {
            name: "w1".into(),
            addr: "b".into(),
            slots: 4,
            blocks: w1,
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
            blocks: b.clone(),
        },
    )
    .unwrap();
    m.register(
        0,
        RegisterRequest {
            name: "w1".into(),
            addr: "b".into(),
            slots: 1,
            blocks: b,
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
        .submit(
            0,
            0,
            JobSubmit {
                workload: Workload::InputSink,
                input: "nope".into(),
                name: None,
                group: None,
                reduces: None,
                output: None,
            },
        )
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
                blocks: vec![],
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
            blocks: vec![block("g", 1, 2)],
        },
    )
    .unwrap();
    let e = m
        .submit(
            0,
            0,
            JobSubmit {
                workload: Workload::InputSink,
                input: "g".into(),
                name: None,
                group: None,
                reduces: None,
                output: None,
            },
        )
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
    for w in 0..3u32 {
        // The reduce machine holds no data (the loader never places any there).
        let mine = (0..4)
            .filter(|b| w < 2 && b % 2 == w)
            .map(|b| block("f", b, 4))
            .collect();
        m.register(
            0,
            RegisterRequest {
                name: format!("w{w}"),
                addr: format!("http://w{w}"),
                slots: 2,
                blocks: mine,
            },
        )
        .unwrap();
    }
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
    let r = m.heartbeat(30, hb(2, 2, vec![], vec![]));
    assert_eq!(r.launches.len(), 2, "{:?}", m.view().worker(WorkerId(2)));
    for (i, l) in r.launches.iter().enumerate() {
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
