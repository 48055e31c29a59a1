//! Scheduler tests: hand-made views for each policy, and one suite that every
//! policy must pass (no task lost or launched twice, never more tasks than
//! slots, every task eventually runs, same seed => same decisions).

use crate::policy::*;
use crate::view::*;
use base::{JobId, TaskRef, WorkerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn w(i: u32) -> WorkerId {
    WorkerId(i)
}

fn task(job: u32, index: u32, replicas: &[u32]) -> PendingTask {
    PendingTask {
        task: TaskRef {
            job: JobId(job),
            index,
        },
        len: 100,
        replicas: replicas.iter().map(|&r| w(r)).collect(),
    }
}

fn view(workers: u32, slots: u32) -> ClusterView {
    let mut v = ClusterView::new();
    for i in 0..workers {
        v.upsert_worker(w(i), slots);
    }
    v
}

/// Configurations of every listed policy: each one's
/// [`Policy::EXAMPLES`], its defaults and, where it has parameters that
/// change its decisions, another setting.
pub(crate) fn suite_configs() -> Vec<SchedulerConfig> {
    SchedulerConfig::examples()
        .into_iter()
        .map(|(_, s)| s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
        .collect()
}

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

/// The `impl Policy for X` of every file under `dir`, with the file.
fn policy_impls(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let impls = text
            .lines()
            .filter(|l| l.trim_start().starts_with("impl"))
            .filter_map(|l| l.split_once("Policy for ").map(|(_, rest)| rest));
        for rest in impls {
            let ty: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            found.push((file, ty));
        }
    }
    found
}

/// Types implementing [`Policy`] that [`SchedulerConfig::LISTED`] misses.
fn unlisted(impls: &[(String, String)]) -> Vec<String> {
    impls
        .iter()
        .filter(|(_, ty)| {
            !SchedulerConfig::LISTED
                .iter()
                .any(|l| l.rsplit("::").next().map(str::trim) == Some(ty.as_str()))
        })
        .map(|(f, ty)| format!("{f}: {ty}"))
        .collect()
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

/// Every policy of the suite, with a fixed seed.
pub(crate) fn all_policies(seed: u64) -> Vec<Box<dyn Scheduler>> {
    suite_configs().iter().map(|c| build(c, seed)).collect()
}

fn tref(job: u32, index: u32) -> TaskRef {
    TaskRef {
        job: JobId(job),
        index,
    }
}

fn build_str(s: &str) -> Box<dyn Scheduler> {
    build(&s.parse().unwrap(), 1)
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

/// Drives a policy over a random instance: rounds of offers to every worker
/// in turn; each running task ends after a random number of rounds.
/// Returns the launch log.
fn drive(sched: &mut dyn Scheduler, instance_seed: u64) -> Vec<Assignment> {
    let mut rng = ChaCha8Rng::seed_from_u64(instance_seed);
    let workers = rng.gen_range(2..8u32);
    let slots = rng.gen_range(1..4u32);
    let mut v = view(workers, slots);
    let jobs = rng.gen_range(1..5u32);
    let mut total = 0;
    for j in 1..=jobs {
        let n = rng.gen_range(1..30u32);
        total += n;
        let tasks = (0..n)
            .map(|i| {
                let r = rng.gen_range(1..=workers.min(3));
                let mut reps: Vec<u32> = (0..workers).collect();
                for k in 0..r as usize {
                    let s = rng.gen_range(k..reps.len());
                    reps.swap(k, s);
                }
                task(j, i, &reps[..r as usize])
            })
            .collect();
        v.add_job(JobId(j), 0, "default", tasks);
    }
    let mut log: Vec<Assignment> = Vec::new();
    let mut running: Vec<(Assignment, u32)> = Vec::new();
    let mut now = 0;
    for round in 0..10_000u32 {
        now += 100;
        // End tasks whose time has come.
        running.retain(|(a, end)| {
            if *end <= round {
                v.task_ended(a.task.job, a.worker, !a.is_local());
                false
            } else {
                true
            }
        });
        for i in 0..workers {
            for a in offer(sched, now, w(i), &mut v) {
                let busy = running.iter().filter(|(r, _)| r.worker == a.worker).count() as u32;
                assert!(
                    busy < slots,
                    "{}: more tasks than slots on {}",
                    sched.name(),
                    a.worker
                );
                assert!(
                    !log.iter().any(|l| l.task == a.task),
                    "{}: {} launched twice",
                    sched.name(),
                    a.task
                );
                let d = rng.gen_range(1..5);
                running.push((a.clone(), round + d));
                log.push(a);
            }
        }
        if log.len() == total as usize && running.is_empty() {
            break;
        }
    }
    assert_eq!(
        log.len(),
        total as usize,
        "{}: only {} of {total} tasks ever ran",
        sched.name(),
        log.len()
    );
    assert_eq!(v.pending_total(), 0);
    log
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

/// Which job the first launch on a one-slot worker serves, for `cfg` in
/// `order`: job 1 (oldest, three tasks, no deadline) or job 2 (one task,
/// a deadline), both with every task local.
fn first_served(cfg: &SchedulerConfig, order: JobOrder) -> Result<JobId, String> {
    let cfg = cfg.with_order(order)?;
    let mut v = view(1, 1);
    v.add_job(
        JobId(1),
        0,
        "default",
        vec![task(1, 0, &[0]), task(1, 1, &[0]), task(1, 2, &[0])],
    );
    v.add_job(JobId(2), 5, "default", vec![task(2, 0, &[0])]);
    v.set_job_qos(
        JobId(2),
        JobQos {
            deadline: Some(60_000),
            ..Default::default()
        },
    );
    let mut s = build(&cfg, 1);
    let launched = offer(s.as_mut(), 10, w(0), &mut v);
    launched
        .first()
        .map(|a| a.task.job)
        .ok_or_else(|| format!("{}: launched nothing", cfg.label()))
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
