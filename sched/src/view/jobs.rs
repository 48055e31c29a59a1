//! The view's jobs: their pending maps arriving, launched, put back and
//! gone, and FIFO's head of queue found without a scan of every job.

use super::*;

impl ClusterView {
    /// The oldest job with a pending task (FIFO's head of queue). Starts
    /// at the first job that may have one: the jobs before it have
    /// launched all their maps.
    pub fn head_job(&self) -> Option<&JobView> {
        self.jobs
            .values()
            .skip(self.pending_from)
            .find(|j| j.has_pending())
    }

    pub fn add_job(
        &mut self,
        id: JobId,
        submitted_at: Millis,
        group: &str,
        tasks: Vec<PendingTask>,
    ) {
        self.note(|| Input::Job {
            job: id,
            now: submitted_at,
            group: group.to_owned(),
            tasks: tasks.clone(),
        });
        let mut job = JobView {
            id,
            submitted_at,
            group: group.to_owned(),
            pending: PendingQueue::default(),
            local: FxHashMap::default(),
            running: 0,
            qos: JobQos::default(),
            last_launch_at: None,
        };
        job.qos.input_bytes = tasks.iter().map(|t| t.len).sum();
        for t in tasks {
            job.insert(t);
        }
        let (i, _) = self.jobs_mut().insert_full(id, job);
        self.pending_came(i);
    }

    /// Drops a finished or failed job (its running tasks are the owner's
    /// business; a running reduce's load stays until `reduce_ended`).
    pub fn remove_job(&mut self, id: JobId) {
        self.note(|| Input::JobGone { job: id });
        if let Some((i, _, _)) = self.jobs_mut().shift_remove_full(&id) {
            if i < self.pending_from {
                self.pending_from -= 1;
            }
            self.pending_maybe_gone();
        }
        self.running_tasks.job_gone(id);
        if self.reduces.remove(&id).is_some() {
            self.reduce_changes += 1;
        }
    }

    /// Puts a task back in its job's queue (retry, lost launch).
    pub fn requeue(&mut self, t: PendingTask) {
        self.note(|| Input::Requeue { task: t.clone() });
        if let Some((i, _, job)) = self.jobs_mut().get_full_mut(&t.task.job) {
            job.insert(t);
            self.pending_came(i);
        }
    }

    /// Replaces a pending task's replica list (block reports changed).
    pub fn set_replicas(&mut self, task: TaskRef, replicas: Vec<WorkerId>) {
        self.note(|| Input::Replicas {
            task,
            replicas: replicas.clone(),
        });
        if let Some(job) = self.jobs_mut().get_mut(&task.job) {
            if let Some(mut t) = job.remove(task.index) {
                t.replicas = replicas;
                job.insert(t);
            }
        }
    }

    /// The job at index `i` of `jobs` has a pending task now.
    fn pending_came(&mut self, i: usize) {
        if self.jobs[i].has_pending() {
            self.pending_from = self.pending_from.min(i);
        }
    }

    /// A job may have lost its last pending task, or left: moves
    /// `pending_from` past the jobs at its front with none.
    pub(super) fn pending_maybe_gone(&mut self) {
        while self
            .jobs
            .get_index(self.pending_from)
            .is_some_and(|(_, j)| !j.has_pending())
        {
            self.pending_from += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::hadoop::{Hadoop, HadoopParams};
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
        let mut hadoop = Hadoop::new(HadoopParams::default(), 3);
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
                        crate::offer(&mut hadoop, step, w, &mut v)
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
}
