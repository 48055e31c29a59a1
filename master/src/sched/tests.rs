//! Scheduler tests: hand-made views for each policy, and one suite that every
//! policy must pass (no task lost or launched twice, never more tasks than
//! slots, every task eventually runs, same seed => same decisions).

use super::*;
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

/// Every policy `build` knows, with a fixed seed.
pub(crate) fn all_policies(seed: u64) -> Vec<Box<dyn Scheduler>> {
    vec![build(&SchedulerConfig::Hadoop {}, seed)]
}

#[test]
fn hadoop_prefers_local_task_of_head_job() {
    let mut v = view(3, 1);
    v.add_job(JobId(1), 0, vec![task(1, 0, &[1]), task(1, 1, &[0, 2])]);
    v.add_job(JobId(2), 0, vec![task(2, 0, &[0])]);
    let mut s = hadoop::Hadoop::new(7);
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
    v.add_job(JobId(1), 0, vec![task(1, 0, &[1]), task(1, 1, &[1])]);
    v.add_job(JobId(2), 0, vec![task(2, 0, &[2])]);
    let mut s = hadoop::Hadoop::new(7);
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
fn context_rejects_invalid_launches() {
    let mut v = view(2, 1);
    v.add_job(JobId(1), 0, vec![task(1, 0, &[1]), task(1, 1, &[1])]);
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
    v.add_job(JobId(1), 0, vec![task(1, 0, &[0, 1]), task(1, 1, &[1])]);
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
        v.add_job(JobId(j), 0, tasks);
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
