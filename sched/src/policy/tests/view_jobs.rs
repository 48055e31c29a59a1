//! The view's head job and pending count (`ClusterView::head_job`,
//! `pending_total`, kept from `pending_from` by `view/jobs.rs`) against a
//! scan, through launches by a policy, requeues, removals and adoptions.

use crate::policy::build;
use crate::view::*;
use base::{JobId, TaskRef, WorkerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn task(job: u32, index: u32, worker: u32) -> PendingTask {
    PendingTask {
        task: TaskRef {
            job: JobId(job),
            index,
        },
        len: 100,
        replicas: vec![WorkerId(worker)],
    }
}

/// The head and the pending count as a scan of every job finds them.
fn scanned(v: &ClusterView) -> (Option<JobId>, usize) {
    let head = v.jobs().find(|j| j.has_pending()).map(|j| j.id);
    (head, v.jobs().map(JobView::pending_len).sum())
}

#[test]
fn the_head_job_is_the_oldest_with_a_pending_task_through_every_change() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut v = ClusterView::new();
    for i in 0..4 {
        v.upsert_worker(WorkerId(i), 2);
    }
    let mut hadoop = build(&"hadoop".parse().unwrap(), 3);
    let (mut next_job, mut launched, mut moves) = (0u32, Vec::new(), [0usize; 5]);
    for step in 0..4000u64 {
        let live: Vec<JobId> = v.jobs().map(|j| j.id).collect();
        let op = rng.gen_range(0..5);
        moves[op] += 1;
        match op {
            0 => {
                let n = rng.gen_range(0..4);
                let tasks = (0..n).map(|i| task(next_job, i, rng.gen_range(0..4)));
                v.add_job(JobId(next_job), step, "default", tasks.collect());
                next_job += 1;
            }
            1 => {
                let w = WorkerId(rng.gen_range(0..4));
                v.set_free(w, 2);
                launched.extend(
                    crate::offer(hadoop.as_mut(), step, w, &mut v)
                        .into_iter()
                        .map(|a| (a.task, a.source)),
                );
            }
            2 if !launched.is_empty() => {
                let (t, source) = launched.swap_remove(rng.gen_range(0..launched.len()));
                v.requeue(task(t.job.0, t.index, source.0));
            }
            3 if !live.is_empty() => {
                let gone = live[rng.gen_range(0..live.len())];
                launched.retain(|(t, _)| t.job != gone);
                v.remove_job(gone);
            }
            4 if !live.is_empty() => {
                let j = v.job(live[rng.gen_range(0..live.len())]).unwrap();
                let first = j.pending().next().cloned();
                if let Some(t) = first {
                    v.adopt(t.task, t.replicas[0], t.replicas[0]);
                    launched.push((t.task, t.replicas[0]));
                }
            }
            _ => {}
        }
        let found = (v.head_job().map(|j| j.id), v.pending_total());
        assert_eq!(found, scanned(&v), "step {step}, op {op}");
    }
    assert!(moves.iter().all(|&m| m > 500), "{moves:?}");
}
