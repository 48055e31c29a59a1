use super::*;
use common::wire::Locality;
use workloads::Workload;

fn w(i: u32) -> WorkerId {
    WorkerId(i)
}

fn job(jobs: &mut Jobs, workload: Workload, maps: u32, reduces: u32) -> JobId {
    jobs.add(NewJob {
        name: "j".into(),
        spec: JobSubmit::new(workload, "f"),
        scheduler: "hadoop".into(),
        submitted: 100,
        submit_unix_ms: 1_000_000,
        blocks: (0..maps)
            .map(|i| (BlockId::for_file("f", i).unwrap(), 10))
            .collect(),
        reduces,
        output: (reduces > 0).then(|| "f.out".to_owned()),
    })
}

fn t(job: JobId, index: u32) -> TaskRef {
    TaskRef { job, index }
}

fn rec(a: AttemptId, local: u64, remote: u64, end_ms: u64) -> TaskRecord {
    TaskRecord {
        task: a.task.index,
        kind: common::wire::TaskKind::Map,
        attempt: a.attempt,
        worker: "w".into(),
        slot: 0,
        locality: Locality::DataLocal,
        source: "w".into(),
        block: BlockId::for_file("f", 0).unwrap(),
        start_ms: 0,
        end_ms,
        input_bytes: local + remote,
        local_bytes: local,
        remote_bytes: remote,
        ok: true,
        error: None,
    }
}

fn summary(out: u64) -> MapSummary {
    MapSummary {
        input_bytes: 10,
        records: 1,
        output_bytes: out,
        sample: Vec::new(),
    }
}

/// Starts map `i` of `id` on `worker` reading from `source` and lets it
/// succeed there.
fn run_map(jobs: &mut Jobs, id: JobId, i: u32, worker: u32, source: u32) -> AfterMap {
    let attempt = jobs.start_map(t(id, i), w(worker), w(source), 5);
    let a = AttemptId {
        task: t(id, i),
        attempt,
    };
    let ra = jobs.current(a, w(worker)).expect("just started");
    let (local, remote) = if worker == source { (10, 0) } else { (0, 10) };
    jobs.map_succeeded(
        a,
        w(worker),
        ra,
        rec(a, local, remote, 50 + u64::from(i)),
        &summary(7),
    )
}

#[test]
fn ids_go_on_after_the_journal_and_every_job_is_listed_in_order() {
    let mut jobs = Jobs::default();
    assert_eq!(jobs.next_id(), JobId(1));
    let spec = JobSubmit::new(Workload::InputSink, "f");
    let mut old = unstarted_report(
        JobId(7),
        "old".into(),
        "hadoop".into(),
        0,
        &spec,
        "x".into(),
    );
    old.state = JobState::Succeeded;
    jobs.archive(old);
    jobs.seen(JobId(3));
    assert_eq!(jobs.next_id(), JobId(8));
    let id = job(&mut jobs, Workload::InputSink, 2, 0);
    assert_eq!(id, JobId(8));
    assert_eq!(jobs.ids(), vec![JobId(7), JobId(8)]);
    assert_eq!(jobs.state(JobId(7)), Some(JobState::Succeeded));
    assert_eq!(jobs.state(id), Some(JobState::Pending));
    assert_eq!(jobs.state(JobId(2)), None);
    assert_eq!(jobs.archived_count(), 1);
}

#[test]
fn only_the_current_attempt_on_its_worker_counts() {
    let mut jobs = Jobs::default();
    let id = job(&mut jobs, Workload::InputSink, 1, 0);
    let first = jobs.start_map(t(id, 0), w(1), w(1), 10);
    assert_eq!(jobs.job(id).state, JobState::Running);
    assert_eq!(jobs.job(id).first_launch, Some(10));
    let a0 = AttemptId {
        task: t(id, 0),
        attempt: first,
    };
    assert!(jobs.current(a0, w(1)).is_some());
    assert!(jobs.current(a0, w(2)).is_none(), "another worker");
    assert!(jobs.pending_again(t(id, 0)));
    assert!(jobs.running(a0).is_none(), "pending: no attempt runs");
    let second = jobs.start_map(t(id, 0), w(2), w(1), 20);
    assert_eq!(second, first + 1);
    assert!(jobs.current(a0, w(1)).is_none(), "an earlier attempt");
    let a1 = AttemptId {
        task: t(id, 0),
        attempt: second,
    };
    assert_eq!(
        jobs.current(a1, w(2)).unwrap().locality(),
        Locality::DataRemote
    );
    assert_eq!(
        jobs.job(id).first_launch,
        Some(10),
        "the first launch stays"
    );
}

#[test]
fn the_last_map_says_what_comes_next_and_counters_add_up() {
    let mut jobs = Jobs::default();
    let sink = job(&mut jobs, Workload::InputSink, 2, 0);
    assert_eq!(run_map(&mut jobs, sink, 0, 0, 0), AfterMap::Wait);
    assert_eq!(run_map(&mut jobs, sink, 1, 1, 0), AfterMap::JobDone);
    let c = jobs.job(sink).counts;
    assert_eq!((c.maps_done, c.data_local, c.data_remote), (2, 1, 1));
    assert_eq!((c.bytes_local, c.bytes_remote), (10, 10));
    assert_eq!(jobs.succeed(sink), (51, None));
    assert_eq!(jobs.job(sink).finished, Some(151));
    assert_eq!(jobs.finished(), 1);

    let wc = job(&mut jobs, Workload::Wordcount, 2, 3);
    run_map(&mut jobs, wc, 0, 0, 0);
    assert_eq!(run_map(&mut jobs, wc, 1, 1, 1), AfterMap::CreateReduces);
    let (indices, out) = jobs.create_reduces(wc);
    assert_eq!((indices, out.as_str()), (vec![2, 3, 4], "f.out"));
    assert_eq!(jobs.job(wc).reduce_tasks().len(), 3);
    assert_eq!(
        jobs.job(wc).output_on(),
        BTreeMap::from([(w(0), 7), (w(1), 7)])
    );
    // A map's output lost: it runs again, counted again once, and the
    // reduces (which exist) are released when it is back.
    assert_eq!(jobs.lose_outputs(wc, [(1, w(1), 0)]), vec![1]);
    assert_eq!(
        jobs.lose_outputs(wc, [(1, w(1), 0)]),
        Vec::<u32>::new(),
        "already gone"
    );
    assert_eq!(jobs.maps_rerun(), 1);
    assert_eq!(jobs.job(wc).counts.maps_done, 1);
    assert_eq!(jobs.outputs_needed_on(w(0)), vec![(wc, vec![(0, w(0), 0)])]);
    assert_eq!(run_map(&mut jobs, wc, 1, 0, 1), AfterMap::ReleaseReduces);
    let c = jobs.job(wc).counts;
    assert_eq!((c.maps_done, c.data_local, c.data_remote), (2, 1, 1));
    assert!(jobs.outputs_needed_on(w(1)).is_empty(), "moved to w0");
    // The reduces end the job.
    for (k, r) in [2u32, 3, 4].into_iter().enumerate() {
        let attempt = jobs.start_reduce(t(wc, r), w(k as u32), 30, vec![w(9)], false);
        assert_eq!(jobs.task(t(wc, r)).out_targets, vec![w(9)]);
        let a = AttemptId {
            task: t(wc, r),
            attempt,
        };
        assert_eq!(jobs.reduce_succeeded(a, rec(a, 5, 2, 90), 7), r == 4);
    }
    assert_eq!(jobs.job(wc).counts.shuffle_bytes, 21);
    assert!(jobs.needs_outputs(wc));
    jobs.succeed(wc);
    assert!(!jobs.needs_outputs(wc));
    assert_eq!(
        jobs.lose_outputs(wc, [(0, w(0), 0)]),
        Vec::<u32>::new(),
        "ended"
    );
}

#[test]
fn failures_retry_until_the_limit_then_fail_the_job_once() {
    let mut jobs = Jobs::default();
    let id = job(&mut jobs, Workload::InputSink, 2, 0);
    let start = |jobs: &mut Jobs, i: u32| AttemptId {
        task: t(id, i),
        attempt: jobs.start_map(t(id, i), w(0), w(0), 5),
    };
    let fail = |jobs: &mut Jobs, a: AttemptId| jobs.attempt_failed(a, rec(a, 0, 0, 9), "boom", 2);
    let a = start(&mut jobs, 0);
    assert_eq!(fail(&mut jobs, a), AfterFailure::Retry);
    let other = start(&mut jobs, 1);
    let a = start(&mut jobs, 0);
    let AfterFailure::FailJob(e) = fail(&mut jobs, a) else {
        panic!("the second failure fails the job")
    };
    assert!(e.contains("failed 2 times") && e.contains("boom"), "{e}");
    assert!(jobs.fail(id, e));
    assert!(!jobs.fail(id, "again".into()), "only once");
    assert_eq!(jobs.finished(), 1);
    assert_eq!(jobs.job(id).state, JobState::Failed);
    assert_eq!(jobs.job(id).records.len(), 2);
    assert_eq!(
        fail(&mut jobs, other),
        AfterFailure::Nothing,
        "the job has ended"
    );
    assert!(!jobs.pending_again(t(id, 1)));
    assert!(!jobs.fail(JobId(99), "unknown".into()));
}

#[test]
fn stalled_attempts_are_found_once_and_their_worker_remembered() {
    let mut jobs = Jobs::default();
    let id = job(&mut jobs, Workload::InputSink, 2, 0);
    let a: Vec<AttemptId> = (0..2)
        .map(|i| AttemptId {
            task: t(id, i),
            attempt: jobs.start_map(t(id, i), w(i), w(i), 0),
        })
        .collect();
    // Map 1 reports progress at 400; map 0 never does.
    jobs.progress(
        w(1),
        &AttemptProgress {
            attempt: a[1],
            slot: 3,
            units: 5,
            done_ppm: None,
        },
        400,
    );
    assert_eq!(jobs.current(a[1], w(1)).unwrap().slot, Some(3));
    let out = [a[0], a[1], a[0]].into_iter();
    let late = jobs.stalled(out, 800, 500);
    assert_eq!(late.len(), 1, "listed twice, found once");
    assert_eq!((late[0].0, late[0].1), (w(0), a[0]));
    jobs.stalled_on(t(id, 0), w(0));
    jobs.stalled_on(t(id, 0), w(0));
    assert_eq!(jobs.task(t(id, 0)).stalled_on, vec![w(0)]);
    // A report from another worker for the same attempt changes nothing.
    jobs.progress(
        w(5),
        &AttemptProgress {
            attempt: a[0],
            slot: 1,
            units: 9,
            done_ppm: None,
        },
        900,
    );
    assert_eq!(jobs.stalled([a[0]].into_iter(), 800, 500).len(), 1);
}

#[test]
fn a_file_in_use_is_named_with_its_job() {
    let mut jobs = Jobs::default();
    let id = job(&mut jobs, Workload::Wordcount, 1, 1);
    assert_eq!(jobs.using("f"), Some((id, "its input")));
    assert_eq!(jobs.using("f.out"), Some((id, "its output")));
    assert!(jobs.writing("f.out") && !jobs.writing("f"));
    jobs.fail(id, "x".into());
    assert_eq!(jobs.using("f"), None, "an ended job uses nothing");
}
