//! The master's rules, driven by fake workers (no HTTP, no clock).

use super::*;
use common::wire::{
    AttemptProgress, BlockInfo, Heartbeat, Launch, LaunchTask, Locality, LostOutput,
    RegisterRequest, ReplicaSource, TaskOutcome, TaskResult,
};
use common::wire::{JobState, JobSubmit};
use common::AttemptId;
use sched::Millis;
use workloads::{MapSummary, Workload};

pub(crate) fn settings(workers: u32, slots: u32) -> MasterSettings {
    MasterSettings {
        journal: None,
        public_types: Vec::new(),
        public: Default::default(),
        slot_rate_mbs: None,
        provision: None,
        record_decisions: false,
        decisions_max: 1_000_000,
        retained_jobs: 10_000,
        speculation: Default::default(),
        heartbeat_ms: 100,
        worker_timeout_ms: 1000,
        max_task_attempts: 2,
        task_timeout_ms: 0,
        scheduler: SchedulerConfig::hadoop(),
        reduce_placement: ReducePlacement::Policy,
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
                disk_bytes_per_sec: None,
                role: common::config::Role::Both,
                rack: common::config::DEFAULT_RACK.into(),
            })
            .collect(),
    }
}

fn block(file: &str, index: u32, n: u32) -> BlockInfo {
    crate::catalog::reported_block(file, index, n, 1000)
}

/// Registers `w0..w(workers-1)` of `m` at time 0, `slots` each; worker w
/// holds `held(w)`.
fn register_all(m: &mut Master, workers: u32, slots: u32, held: impl Fn(u32) -> Vec<BlockInfo>) {
    for w in 0..workers {
        m.register(
            0,
            RegisterRequest {
                name: format!("w{w}"),
                addr: format!("http://w{w}"),
                slots,
                blocks: held(w),
                out_of_band_heartbeat: false,
                running: Vec::new(),
                map_outputs: Vec::new(),
            },
        )
        .unwrap();
    }
}

/// Registers `w0..wn`; block i of file "f" (n blocks) lives on worker i % workers.
fn cluster(workers: u32, slots: u32, blocks: u32) -> Master {
    cluster_with(settings(workers, slots), workers, slots, blocks)
}

/// [`cluster`] with these settings.
fn cluster_with(s: MasterSettings, workers: u32, slots: u32, blocks: u32) -> Master {
    let mut m = Master::new(s);
    register_all(&mut m, workers, slots, |w| {
        (0..blocks)
            .filter(|b| b % workers == w)
            .map(|b| block("f", b, blocks))
            .collect()
    });
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
        disk_free_bytes: None,
        progress: Vec::new(),
        nic_rx_bytes: 0,
        nic_tx_bytes: 0,
        incarnation: 0,
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
                output_bytes: len,
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
    submit_at(m, 0)
}

/// An input-sink job over file "f", submitted at `now`.
fn submit_at(m: &mut Master, now: Millis) -> JobId {
    m.submit(
        now,
        1_000_000,
        JobSubmit {
            workload: Workload::InputSink,
            input: "f".into(),
            name: None,
            group: None,
            reduces: None,
            output: None,
            compute: None,
            deadline_s: None,
            budget: None,
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
                compute: None,
                deadline_s: None,
                budget: None,
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
            blocks: vec![block("g", 1, 2)],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
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
                compute: None,
                deadline_s: None,
                budget: None,
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

/// A reduce launch's inputs as (map, worker, attempt).
fn reduce_inputs(l: &Launch) -> Vec<(u32, WorkerId, u32)> {
    let LaunchTask::Reduce(r) = &l.task else {
        panic!("expected a reduce launch: {l:?}")
    };
    r.inputs
        .iter()
        .map(|i| (i.map, i.worker, i.attempt))
        .collect()
}

fn reduced(l: &Launch) -> TaskResult {
    TaskResult {
        outcome: TaskOutcome::Reduced {
            summary: workloads::ReduceSummary::default(),
        },
        ..ok_any(l)
    }
}

/// A result with no outcome of interest yet (the caller sets it).
fn ok_any(l: &Launch) -> TaskResult {
    TaskResult {
        attempt: l.attempt,
        slot: 0,
        outcome: TaskOutcome::Rejected {
            reason: String::new(),
        },
        started_unix_ms: 1_000_010,
        finished_unix_ms: 1_000_050,
        local_bytes: 0,
        remote_bytes: 0,
    }
}

fn wordcount(m: &mut Master, reduces: u32) -> JobId {
    let mut job = JobSubmit::new(Workload::Wordcount, "f");
    job.reduces = Some(reduces);
    m.submit(0, 1_000_000, job).unwrap()
}

/// Heartbeats every worker in turn, reporting each map launch as done at
/// the worker's next heartbeat (starting with `owed`), until a round
/// launches nothing and nothing is owed; returns the reduce launches seen,
/// with the worker each went to.
fn drive_maps(
    m: &mut Master,
    workers: u32,
    now: u64,
    owed: Vec<(u32, Launch)>,
) -> Vec<(u32, Launch)> {
    let mut owed = owed;
    let mut reduces = Vec::new();
    for _ in 0..20 {
        let mut launched = false;
        for w in 0..workers {
            let results: Vec<TaskResult> = owed
                .iter()
                .filter(|(ow, _)| *ow == w)
                .map(|(_, l)| ok(l, 0))
                .collect();
            owed.retain(|(ow, _)| *ow != w);
            // Reduces keep running (the caller ends them).
            let running: Vec<AttemptId> = reduces
                .iter()
                .filter(|(rw, _)| *rw == w)
                .map(|(_, l): &(u32, Launch)| l.attempt)
                .collect();
            for l in m.heartbeat(now, hb(w, 2, running, results)).launches {
                launched = true;
                match l.task {
                    LaunchTask::Map { .. } => owed.push((w, l)),
                    LaunchTask::Reduce(_) => reduces.push((w, l)),
                }
            }
        }
        if !launched && owed.is_empty() {
            return reduces;
        }
    }
    panic!("maps never settled: {owed:?}");
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
            blocks: vec![],
            out_of_band_heartbeat: false,
            running: Vec::new(),
            map_outputs: Vec::new(),
        },
    )
    .unwrap();
    assert_eq!(m.maps_rerun(), before);
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
    // The reducer stored the output; its replica upload failed (skipped).
    let out = block("wordcount-1.out", 0, 1);
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

/// Registers worker `w` of `m` (2 slots, blocks of "f" as `cluster` puts
/// them) saying it runs `running` and keeps `outputs`.
fn reregister(
    m: &mut Master,
    w: u32,
    blocks: u32,
    running: Vec<AttemptId>,
    outputs: Vec<AttemptId>,
) {
    m.register(
        0,
        RegisterRequest {
            name: format!("w{w}"),
            addr: format!("http://w{w}"),
            slots: 2,
            blocks: (0..blocks)
                .filter(|b| b % 2 == w)
                .map(|b| block("f", b, blocks))
                .collect(),
            out_of_band_heartbeat: false,
            running,
            map_outputs: outputs,
        },
    )
    .unwrap();
}

/// Launches every map of the jobs of `m` (2 workers x 2 slots): per worker,
/// its launches.
fn launch_all(m: &mut Master, now: Millis) -> Vec<(u32, Launch)> {
    let mut launches = Vec::new();
    for w in 0..2 {
        for l in m.heartbeat(now, hb(w, 2, vec![], vec![])).launches {
            launches.push((w, l));
        }
    }
    launches
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

#[test]
fn an_attempt_that_stops_progressing_is_killed_and_reads_another_replica() {
    let mut s = settings(2, 1);
    s.task_timeout_ms = 1000;
    s.worker_timeout_ms = 100_000;
    let mut m = Master::new(s);
    // The block is on both workers.
    register_all(&mut m, 2, 1, |_| vec![block("f", 0, 1)]);
    let id = submit(&mut m);
    let first = m.heartbeat(10, hb(0, 1, vec![], vec![])).launches;
    assert_eq!(first.len(), 1);
    assert_eq!(map_of(&first[0]).0, &ReplicaSource::Local);
    let a = first[0].attempt;
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
    for w in 0..3u32 {
        m.register(
            0,
            RegisterRequest {
                name: format!("w{w}"),
                addr: format!("http://w{w}"),
                slots: 2,
                blocks: (0..4)
                    .filter(|b| b % 3 == w)
                    .map(|b| block("f", b, 4))
                    .collect(),
                out_of_band_heartbeat: w < 2,
                running: Vec::new(),
                map_outputs: Vec::new(),
            },
        )
        .unwrap();
    }
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

/// A heartbeat of worker `w` that reports `a` running with `units` of
/// progress (a map of 1000 bytes is done at 2000 units).
fn hb_progress(w: u32, free: u32, a: AttemptId, units: u64, results: Vec<TaskResult>) -> Heartbeat {
    let mut h = hb(w, free, vec![a], results);
    h.progress = vec![AttemptProgress {
        attempt: a,
        units,
        slot: 0,
        done_ppm: None,
    }];
    h
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

/// A heartbeat of worker `w` that reports `a` running with `ppm`
/// millionths of its work done, as a worker's reduce says.
fn hb_done(w: u32, free: u32, a: AttemptId, ppm: u32, results: Vec<TaskResult>) -> Heartbeat {
    let mut h = hb(w, free, vec![a], results);
    h.progress = vec![AttemptProgress {
        attempt: a,
        units: u64::from(ppm) + 1,
        slot: 0,
        done_ppm: Some(ppm),
    }];
    h
}

/// Speculation of a reduce on three workers of two slots: three reduces,
/// one a worker; w2's says it has done a twentieth when the others are
/// half done, so w0's free slot gets a backup of it, whose output
/// replicas avoid w2; the backup wins, w2's attempt is killed and its late
/// result refused, and the job counts each reduce once. Off, no backup.
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
        let r = m.heartbeat(1200, hb_done(0, 1, fast0.attempt, 600_000, vec![]));
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
        // The reduces end: w0's own, w1's, then the backup.
        m.heartbeat(2000, hb(0, 1, vec![backup.attempt], vec![reduced(&fast0)]));
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
