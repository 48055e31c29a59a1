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
