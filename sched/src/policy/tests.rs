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

/// The `impl Policy for X` of every file under `dir`, with the file.
fn policy_impls(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            continue; // tests/: no policy there
        }
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

mod batch_and_greedy_policies;
mod view_jobs;
mod waiting_policies;
