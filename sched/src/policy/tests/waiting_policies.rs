use super::*;

#[test]
fn every_listed_policy_has_examples_of_its_own() {
    let examples = SchedulerConfig::examples();
    for policy in SchedulerConfig::POLICIES {
        assert!(
            examples.iter().any(|(p, _)| p == policy),
            "{policy} has no EXAMPLES"
        );
    }
    for (policy, text) in examples {
        let c: SchedulerConfig = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(c.policy(), policy, "{text} is an example of {policy}");
        // The listed name is the one serde writes and reads.
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["policy"], policy, "{json}");
        let back: SchedulerConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
    }
}

#[test]
fn every_policy_file_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/policy");
    let impls = policy_impls(&dir);
    assert!(impls.len() >= SchedulerConfig::POLICIES.len(), "{impls:?}");
    let missing = unlisted(&impls);
    assert!(missing.is_empty(), "not in policies!'s list: {missing:?}");
    // The check finds a policy file that is not listed.
    let tmp = std::env::temp_dir().join(format!("unlisted-policy-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        tmp.join("mine.rs"),
        "impl Policy for MineParams {}\nimpl crate::policy::Policy for HadoopParams {}\n",
    )
    .unwrap();
    let found = unlisted(&policy_impls(&tmp));
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(found, vec!["mine.rs: MineParams".to_string()]);
}

#[test]
fn delay_skips_a_job_until_its_threshold_then_goes_remote() {
    let mut v = view(2, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1])],
    );
    let mut s = build_str("delay3");
    // Job 1 has nothing local on w0: skipped from t = 1 s ...
    assert_eq!(offer(s.as_mut(), 1_000, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 3_999, w(0), &mut v), vec![]);
    // ... and after 3 s it may launch remotely.
    let a = offer(s.as_mut(), 4_000, w(0), &mut v);
    assert_eq!(a.len(), 1);
    assert!(!a[0].is_local());
    assert_eq!(a[0].source, w(1));
    // It keeps that permission until a local launch resets it.
    v.task_ended(JobId(1), w(0), true);
    assert_eq!(offer(s.as_mut(), 4_100, w(0), &mut v).len(), 1);
}

#[test]
fn delay_gives_the_slot_to_a_later_job_with_local_data() {
    let mut v = view(2, 1);
    v.add_job(JobId(1), 0, "default", vec![task(1, 0, &[1])]);
    v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[0])]);
    let mut s = build_str("delay10");
    let a = offer(s.as_mut(), 0, w(0), &mut v);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].task, tref(2, 0));
    assert!(a[0].is_local());
    // A local launch resets the wait: job 1 launches locally on w1 at once.
    let a = offer(s.as_mut(), 100, w(1), &mut v);
    assert_eq!((a[0].task, a[0].is_local()), (tref(1, 0), true));
}

#[test]
fn dyndl_on_waits_w_and_never_runs_two_remote_tasks_on_one_worker() {
    let mut v = view(2, 2);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1]), task(1, 2, &[1])],
    );
    let mut s = build_str("dyndl-on"); // W = 3 s, one_remote
    assert_eq!(offer(s.as_mut(), 0, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 2_999, w(0), &mut v), vec![]);
    let a = offer(s.as_mut(), 3_000, w(0), &mut v);
    // One remote task, and the second free slot stays idle.
    assert_eq!(a.len(), 1);
    assert!(!a[0].is_local());
    assert_eq!(v.free_slots(w(0)), 1);
    assert_eq!(offer(s.as_mut(), 60_000, w(0), &mut v), vec![]);
    // Once it ends, the slot that has waited since t = 3 s starts the next
    // remote task at once ("after a running data-remote task completes").
    v.task_ended(JobId(1), w(0), true);
    assert_eq!(offer(s.as_mut(), 60_100, w(0), &mut v).len(), 1);
    // The launch restarted the wait: after that one ends, W again.
    v.task_ended(JobId(1), w(0), true);
    v.requeue(task(1, 9, &[1]));
    assert_eq!(offer(s.as_mut(), 60_200, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 63_200, w(0), &mut v).len(), 1);
}

#[test]
fn dyndl_on_per_core_waits_from_the_cores_last_assignment() {
    let job = || {
        vec![
            task(1, 0, &[0]),
            task(1, 1, &[1]),
            task(1, 2, &[1]),
            task(1, 3, &[1]),
        ]
    };
    let run = |cfg: &str| {
        let mut v = view(2, 1);
        v.add_job(JobId(1), 0, "default", job());
        let mut s = build_str(cfg);
        // t = 0: the core takes the local task; t = 5 s: it ends.
        let a = offer(s.as_mut(), 0, w(0), &mut v);
        assert!(a.len() == 1 && a[0].is_local());
        v.task_ended(JobId(1), w(0), false);
        (v, s)
    };
    // Algorithm 1: the core last assigned at 0 has waited 5 s >= W: remote at once.
    let (mut v, mut s) = run("policy = 'dyndl-on', wait = 'core'");
    let a = offer(s.as_mut(), 5_000, w(0), &mut v);
    assert!(a.len() == 1 && !a[0].is_local(), "{a:?}");
    // That launch restarted the core's wait: W from 5 s, not from its end.
    v.task_ended(JobId(1), w(0), true);
    assert_eq!(offer(s.as_mut(), 6_000, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 7_999, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 8_000, w(0), &mut v).len(), 1);
    // The per-worker clock starts waiting at the first failed lookup (5 s).
    let (mut v, mut s) = run("dyndl-on");
    assert_eq!(offer(s.as_mut(), 5_000, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 7_999, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 8_000, w(0), &mut v).len(), 1);
}

#[test]
fn dyndl_on_tells_free_cores_from_busy_ones_by_the_heartbeats_ages() {
    use crate::view::SlotBusy;
    let clocks = [0, 1_000, 2_000, 5_000];
    let busy = |starts: &[u64]| {
        starts
            .iter()
            .map(|&s| SlotBusy {
                elapsed_ms: 6_000 - s,
                remaining_ms: None,
            })
            .collect::<Vec<_>>()
    };
    let wv = |free: u32, busy: Vec<SlotBusy>| crate::view::WorkerView {
        id: w(0),
        alive: true,
        slots: 4,
        free,
        remote_running: 0,
        runs_maps: true,
        runs_reduces: true,
        reduce_load: 0,
        reduces_running: 0,
        busy,
        busy_at: 6_000,
    };
    // The cores started at 2 s and 5 s are busy: 0 and 1 s are free.
    assert_eq!(
        dyndl_on::free_cores(&clocks, &wv(2, busy(&[2_000, 5_000]))),
        [0, 1]
    );
    // Those started at 0 and 5 s (give or take delivery) are busy.
    assert_eq!(
        dyndl_on::free_cores(&clocks, &wv(2, busy(&[40, 4_990]))),
        [1, 2]
    );
    // No report that covers the busy cores: the oldest are taken as free.
    assert_eq!(dyndl_on::free_cores(&clocks, &wv(2, vec![])), [0, 1]);
    assert_eq!(dyndl_on::free_cores(&clocks, &wv(4, vec![])), [0, 1, 2, 3]);
}

#[test]
fn strict_head_only_leaves_the_slot_idle_when_the_head_has_nothing_here() {
    let setup = || {
        let mut v = view(2, 1);
        v.add_job(JobId(1), 0, "default", vec![task(1, 0, &[1])]);
        v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[0])]);
        v
    };
    let mut v = setup();
    let a = offer(build_str("fifo-s").as_mut(), 0, w(0), &mut v);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].task, tref(2, 0));
    let mut v = setup();
    let mut s = build_str("policy = 'strict', head_only = true");
    assert_eq!(offer(s.as_mut(), 0, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 0, w(1), &mut v).len(), 1);
}

#[test]
fn delay_from_last_launch_counts_the_time_the_job_did_not_run() {
    let mut v = view(2, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1]), task(1, 2, &[1])],
    );
    let mut s = build_str("policy = 'delay', threshold_s = 3, wait_from = 'last-launch'");
    // Never launched: the wait runs from submission (t = 0), not the first skip.
    assert_eq!(offer(s.as_mut(), 2_999, w(0), &mut v), vec![]);
    let a = offer(s.as_mut(), 3_000, w(0), &mut v);
    assert!(a.len() == 1 && !a[0].is_local());
    // The remote launch restarted the clock: the next remote one waits 3 s more.
    v.task_ended(JobId(1), w(0), true);
    assert_eq!(offer(s.as_mut(), 5_999, w(0), &mut v), vec![]);
    // A local launch elsewhere also restarts it.
    assert_eq!(offer(s.as_mut(), 5_000, w(1), &mut v).len(), 1);
    assert_eq!(offer(s.as_mut(), 7_999, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 8_000, w(0), &mut v).len(), 1);
    // First-skip (the default) would have started waiting at 2.999 s.
    let mut v = view(2, 1);
    v.add_job(JobId(1), 0, "default", vec![task(1, 0, &[1])]);
    let mut s = build_str("delay3");
    assert_eq!(offer(s.as_mut(), 2_999, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 3_000, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 5_999, w(0), &mut v).len(), 1);
}

#[test]
fn delay_from_skipped_heartbeats_counts_only_the_heartbeats_after_a_skip() {
    // One job whose data is on w1 only; w0 asks, w1 is busy.
    let mut v = view(2, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        (0..4).map(|i| task(1, i, &[1])).collect(),
    );
    v.set_free(w(1), 0);
    let mut s = build_str("policy = 'delay', threshold_s = 1.5, wait_from = 'skipped-heartbeats'");
    // Skipped at w0's heartbeat (t = 0); w1's heartbeat 1 s later adds 1 s.
    assert_eq!(offer(s.as_mut(), 0, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 1_000, w(1), &mut v), vec![]);
    // w1 had no free slot, so the job was not skipped there: the 4 s until
    // w0's next heartbeat do not count (first-skip would launch now).
    assert_eq!(offer(s.as_mut(), 5_000, w(0), &mut v), vec![]);
    // Skipped again at 5 s: w1's heartbeat at 5.5 s brings the wait to 1.5 s.
    assert_eq!(offer(s.as_mut(), 5_500, w(1), &mut v), vec![]);
    let a = offer(s.as_mut(), 5_600, w(0), &mut v);
    assert!(a.len() == 1 && !a[0].is_local(), "{a:?}");
    // After a remote launch it may go remote again at once.
    v.task_ended(JobId(1), w(0), true);
    let a = offer(s.as_mut(), 5_700, w(0), &mut v);
    assert!(a.len() == 1 && !a[0].is_local(), "{a:?}");
    // A local launch brings it back to waiting.
    v.task_ended(JobId(1), w(0), true);
    v.set_free(w(1), 1);
    let a = offer(s.as_mut(), 5_800, w(1), &mut v);
    assert!(a.len() == 1 && a[0].is_local(), "{a:?}");
    assert_eq!(offer(s.as_mut(), 5_900, w(0), &mut v), vec![]);
    // The first-skip rule on the same sequence launches at 5 s.
    let mut v = view(2, 1);
    v.add_job(JobId(1), 0, "default", vec![task(1, 0, &[1])]);
    v.set_free(w(1), 0);
    let mut s = build_str("policy = 'delay', threshold_s = 1.5");
    assert_eq!(offer(s.as_mut(), 0, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 1_000, w(1), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 5_000, w(0), &mut v).len(), 1);
}

#[test]
fn delay_with_fifo_order_serves_the_oldest_job_first() {
    let pick = |cfg: &str| {
        let mut v = view(1, 3);
        v.add_job(
            JobId(1),
            0,
            "default",
            vec![task(1, 0, &[0]), task(1, 1, &[0])],
        );
        v.add_job(JobId(2), 0, "default", vec![task(2, 0, &[0])]);
        let mut s = build_str(cfg);
        v.set_free(w(0), 1);
        let first = offer(s.as_mut(), 0, w(0), &mut v);
        v.set_free(w(0), 1);
        let second = offer(s.as_mut(), 10, w(0), &mut v);
        (first[0].task, second[0].task)
    };
    // Fair sharing: job 1 runs a task, so job 2 goes next.
    assert_eq!(pick("delay3"), (tref(1, 0), tref(2, 0)));
    assert_eq!(
        pick("policy = 'delay', threshold_s = 3, order = 'fifo'"),
        (tref(1, 0), tref(1, 1))
    );
}

#[test]
fn dyndl_on_delay_is_max_of_g_and_w() {
    let p = |w: u64, remote: u64, theta| dyndl_on::DyndlOnParams {
        w_s: w as f64 / 1000.0,
        remote_s: remote as f64 / 1000.0,
        theta,
        one_remote: false,
        pick: RemotePick::Random,
        wait: crate::policy::WaitClock::Worker,
        order: crate::policy::JobOrder::Fifo,
    };
    let d = dyndl_on::DyndlOn::new(p(3_000, 4_000, 0.5), 1);
    assert_eq!(d.delay(0, 4), 3_000); // no remote task: W
    assert_eq!(d.delay(1, 4), 6_000); // g(1) = 4 * 1.5
    assert_eq!(d.delay(9, 4), 12_000); // g saturates at min(n, slots)
    let small = dyndl_on::DyndlOn::new(p(3_000, 1_000, 1.0), 1);
    assert_eq!(small.delay(1, 4), 3_000); // g(1) = 2 s < W
                                          // Without one_remote, a second remote task waits max(g(1), W) = 6 s.
    let mut v = view(2, 2);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[1]), task(1, 1, &[1])],
    );
    let mut s: Box<dyn Scheduler> = Box::new(d);
    assert_eq!(offer(s.as_mut(), 3_000, w(0), &mut v), vec![]); // wait starts
    assert_eq!(offer(s.as_mut(), 6_000, w(0), &mut v).len(), 1);
    assert_eq!(offer(s.as_mut(), 11_999, w(0), &mut v), vec![]);
    assert_eq!(offer(s.as_mut(), 12_000, w(0), &mut v).len(), 1);
}

#[test]
fn rand_with_zero_randomness_is_hadoop() {
    for instance in 0..10 {
        let a = drive(build_str("hadoop").as_mut(), instance);
        let b = drive(
            build_str("policy = \"rand\", randomness = 0").as_mut(),
            instance,
        );
        assert_eq!(a, b, "instance {instance}");
    }
}

#[test]
fn rand_with_full_randomness_loses_locality() {
    // 8 workers, 1 task local to each: hadoop runs all 8 locally; r = 1 picks
    // blindly and, with this seed, runs some remotely.
    let setup = || {
        let mut v = view(8, 1);
        v.add_job(
            JobId(1),
            0,
            "default",
            (0..8).map(|i| task(1, i, &[i])).collect(),
        );
        v
    };
    let local = |s: &mut dyn Scheduler| {
        let mut v = setup();
        (0..8)
            .flat_map(|i| offer(s, 0, w(i), &mut v))
            .filter(Assignment::is_local)
            .count()
    };
    assert_eq!(local(build_str("hadoop").as_mut()), 8);
    assert!(local(build_str("policy = \"rand\", randomness = 1").as_mut()) < 8);
}

#[test]
fn fair_serves_the_group_furthest_below_its_share() {
    let mut v = view(3, 2);
    v.add_job(
        JobId(1),
        0,
        "a",
        (0..4).map(|i| task(1, i, &[0, 1, 2])).collect(),
    );
    v.add_job(
        JobId(2),
        0,
        "b",
        (0..4).map(|i| task(2, i, &[0, 1, 2])).collect(),
    );
    let mut s = build_str("policy = \"fair\", weights = { a = 1, b = 1 }");
    // Six slots over two equal groups: three each, alternating.
    let mut per_job = [0, 0];
    for i in 0..3 {
        for a in offer(s.as_mut(), 0, w(i), &mut v) {
            per_job[a.task.job.0 as usize - 1] += 1;
        }
    }
    assert_eq!(per_job, [3, 3]);
    // Weights 3:1 give group a three slots of four.
    let mut v = view(2, 2);
    v.add_job(
        JobId(1),
        0,
        "a",
        (0..4).map(|i| task(1, i, &[0, 1])).collect(),
    );
    v.add_job(
        JobId(2),
        0,
        "b",
        (0..4).map(|i| task(2, i, &[0, 1])).collect(),
    );
    let mut s = build_str("policy = \"fair\", weights = { a = 3, b = 1 }");
    let mut per_job = [0, 0];
    for i in 0..2 {
        for a in offer(s.as_mut(), 0, w(i), &mut v) {
            per_job[a.task.job.0 as usize - 1] += 1;
        }
    }
    assert_eq!(per_job, [3, 1]);
}

/// Guo et al. Fig 2: idle slots on A, B, C (one each); T1's input on A, B, C,
/// T2's on A, B, T3's on A. dl-sched leaves T3 remote; lsap runs all locally.
#[test]
fn guo_fig2_lsap_beats_dl_sched() {
    let setup = || {
        let mut v = view(3, 1);
        v.add_job(
            JobId(1),
            0,
            "default",
            vec![
                task(1, 0, &[0, 1, 2]),
                task(1, 1, &[0, 1]),
                task(1, 2, &[0]),
            ],
        );
        v
    };
    let mut v = setup();
    let mut h = build_str("hadoop");
    let remote: usize = (0..3)
        .flat_map(|i| offer(h.as_mut(), 0, w(i), &mut v))
        .filter(|a| !a.is_local())
        .count();
    assert_eq!(remote, 1);
    let mut v = setup();
    let a = offer(build_str("lsap").as_mut(), 0, w(0), &mut v);
    assert_eq!(a.len(), 3);
    assert!(a.iter().all(Assignment::is_local), "{a:?}");
    assert_eq!(v.pending_total(), 0);
}
