//! Attempt results: fencing (only the current attempt on the worker it was
//! sent to counts), the task's record, retries, and the end of a job.

use super::{MapOut, Master, RunningAttempt, TaskStatus};
use crate::metrics::ReasonValue;
use common::wire::{JobState, TaskKind, TaskOutcome, TaskRecord, TaskResult};
use common::{AttemptId, JobId, TaskRef, WorkerId};
use sched::{Millis, PendingTask};

impl Master {
    pub(super) fn on_result(&mut self, worker: WorkerId, r: TaskResult) {
        let current = self
            .jobs
            .get(&r.attempt.task.job)
            .and_then(|j| j.tasks.get(r.attempt.task.index as usize))
            .and_then(|t| match t.status {
                TaskStatus::Running(ra)
                    if ra.attempt == r.attempt.attempt && ra.worker == worker =>
                {
                    Some(ra)
                }
                _ => None,
            });
        let Some(ra) = current else {
            tracing::debug!(attempt = %r.attempt, "ignoring result of a stale attempt");
            return;
        };
        self.end_attempt(worker, r.attempt, Some((ra, r)));
    }

    /// Ends attempt `a` on `worker`: with its result, or lost (`None`,
    /// also for a rejection: back in the queue, nothing counted).
    pub(super) fn end_attempt(
        &mut self,
        worker: WorkerId,
        a: AttemptId,
        result: Option<(RunningAttempt, TaskResult)>,
    ) {
        self.workers.ended(worker, &a);
        let Some(job) = self.jobs.get_mut(&a.task.job) else {
            return;
        };
        let ra = match job.tasks[a.task.index as usize].status {
            TaskStatus::Running(ra) if ra.attempt == a.attempt => ra,
            _ => return,
        };
        if job.tasks[a.task.index as usize].reduce.is_some() {
            self.view.reduce_ended(a.task, worker);
        } else {
            self.view
                .task_ended(a.task.job, worker, ra.worker != ra.source);
        }
        match result {
            None => self.retry_unpenalised(a.task),
            Some((_, r)) => self.apply_result(worker, a, ra, r),
        }
    }

    /// Puts a task back in its queue without counting a failure.
    fn retry_unpenalised(&mut self, t: TaskRef) {
        let job = self.jobs.get_mut(&t.job).expect("checked by the caller");
        job.tasks[t.index as usize].status = TaskStatus::Pending;
        if !job.state.is_done() {
            self.requeue(t);
        }
    }

    /// The record of attempt `a` with result `r`, for the job's report.
    fn record(
        &self,
        a: AttemptId,
        ra: RunningAttempt,
        r: &TaskResult,
        error: Option<String>,
    ) -> TaskRecord {
        let job = &self.jobs[&a.task.job];
        let task = &job.tasks[a.task.index as usize];
        TaskRecord {
            task: a.task.index,
            kind: task.kind(),
            attempt: a.attempt,
            worker: self.worker_name(ra.worker),
            slot: r.slot,
            locality: ra.locality(),
            source: self.worker_name(ra.source),
            block: task.block.clone(),
            start_ms: r.started_unix_ms.saturating_sub(job.submit_unix_ms),
            end_ms: r.finished_unix_ms.saturating_sub(job.submit_unix_ms),
            input_bytes: r.local_bytes + r.remote_bytes,
            local_bytes: r.local_bytes,
            remote_bytes: r.remote_bytes,
            ok: error.is_none(),
            error,
        }
    }

    /// Applies the result of the current attempt `a` of its task.
    fn apply_result(&mut self, worker: WorkerId, a: AttemptId, ra: RunningAttempt, r: TaskResult) {
        let is_reduce = self.jobs[&a.task.job].tasks[a.task.index as usize]
            .reduce
            .is_some();
        let ms = r.finished_unix_ms.saturating_sub(r.started_unix_ms);
        let output = match &r.outcome {
            TaskOutcome::Succeeded { summary } if !is_reduce => summary.output_bytes,
            _ => 0,
        };
        self.instances.meter(
            worker,
            a.task.job,
            ms,
            r.local_bytes + r.remote_bytes,
            output,
        );
        match &r.outcome {
            TaskOutcome::Succeeded { .. } if !is_reduce => {
                let len = self.jobs[&a.task.job].tasks[a.task.index as usize].len;
                self.view
                    .note_map(worker, len, ms, ra.worker == ra.source, output);
            }
            TaskOutcome::Reduced { .. } if is_reduce => {
                self.view.note_reduce(r.local_bytes + r.remote_bytes, ms);
            }
            _ => {}
        }
        match &r.outcome {
            TaskOutcome::Succeeded { summary } if !is_reduce => {
                // The planners' expected task length.
                self.view
                    .note_task_ms(r.finished_unix_ms.saturating_sub(r.started_unix_ms));
                let rec = self.record(a, ra, &r, None);
                self.metrics.map_done(
                    rec.locality,
                    r.local_bytes,
                    r.remote_bytes,
                    (rec.end_ms.saturating_sub(rec.start_ms)) as f64 / 1000.0,
                );
                let job = self.jobs.get_mut(&a.task.job).expect("checked");
                job.tasks[a.task.index as usize].status = TaskStatus::Done;
                job.records.push(rec);
                job.counts
                    .map_done(ra.worker != ra.source, r.local_bytes, r.remote_bytes);
                job.map_out[a.task.index as usize] = Some(MapOut {
                    worker,
                    attempt: a.attempt,
                    remote: ra.worker != ra.source,
                    local_bytes: r.local_bytes,
                    remote_bytes: r.remote_bytes,
                    output_bytes: summary.output_bytes,
                });
                job.samples.extend(summary.sample.iter().cloned());
                if !job.state.is_done() && job.counts.maps_done == job.maps {
                    if job.reduces == 0 {
                        self.job_succeeded(a.task.job);
                    } else if job.tasks.len() as u32 == job.maps {
                        self.create_reduces(a.task.job);
                    } else {
                        // The reduces exist: lost map outputs were rebuilt,
                        // and waiting reduces may start again.
                        self.release_reduces(a.task.job, Vec::new());
                    }
                }
            }
            TaskOutcome::Reduced { .. } if is_reduce => {
                let rec = self.record(a, ra, &r, None);
                self.metrics.reduce_done(
                    r.local_bytes + r.remote_bytes,
                    (rec.end_ms.saturating_sub(rec.start_ms)) as f64 / 1000.0,
                );
                let job = self.jobs.get_mut(&a.task.job).expect("checked");
                job.tasks[a.task.index as usize].status = TaskStatus::Done;
                job.records.push(rec);
                job.counts.reduce_done(r.local_bytes + r.remote_bytes);
                if !job.state.is_done() && job.counts.reduces_done == job.reduces {
                    self.job_succeeded(a.task.job);
                }
            }
            TaskOutcome::Succeeded { .. } | TaskOutcome::Reduced { .. } => {
                // A map that answered like a reduce or the reverse: a worker
                // bug; the task runs again.
                tracing::error!(attempt = %a, "result kind does not match the task");
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::Failed { error } => {
                let rec = self.record(a, ra, &r, Some(error.clone()));
                self.attempt_failed(a, rec, error);
            }
            TaskOutcome::FetchFailed { lost, error } if is_reduce => {
                // Not the reduce's fault: its lost inputs run again, and it
                // retries once they are back, without a failure counted.
                let rec = self.record(a, ra, &r, Some(format!("fetch failed: {error}")));
                self.metrics
                    .attempt_unsuccessful(TaskKind::Reduce, ReasonValue::fetch_failed);
                self.jobs
                    .get_mut(&a.task.job)
                    .expect("checked")
                    .records
                    .push(rec);
                let again = self.rerun_maps(
                    a.task.job,
                    lost.iter().map(|l| (l.map, l.worker, l.attempt)),
                );
                tracing::warn!(attempt = %a, maps_again = again, %error, "reduce could not fetch map output");
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::FetchFailed { .. } => {
                tracing::error!(attempt = %a, "a map reported a shuffle fetch failure");
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::Rejected { reason } => {
                tracing::debug!(attempt = %a, %reason, "attempt rejected by worker");
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::NoSpace { error } => {
                // The worker's disk, not the task: it runs again elsewhere,
                // and the worker gets nothing new until it has more room.
                let rec = self.record(a, ra, &r, Some(format!("no space: {error}")));
                self.metrics
                    .attempt_unsuccessful(rec.kind, ReasonValue::no_space);
                self.jobs
                    .get_mut(&a.task.job)
                    .expect("checked")
                    .records
                    .push(rec);
                self.workers.disk_full(worker, error);
                self.retry_unpenalised(a.task);
            }
        }
    }

    /// Attempts whose progress count has not grown for `task_timeout_ms`
    /// fail (counted) and run again, a map preferably from another replica;
    /// their worker is told to kill them, and a late result is ignored
    /// (fenced).
    pub(super) fn time_out_attempts(&mut self, now: Millis) {
        let limit = self.settings.task_timeout_ms;
        if limit == 0 {
            return;
        }
        // Only the attempts out on workers (sent, or waiting in an outbox),
        // not every task: this runs every heartbeat interval, and pending
        // tasks can be 100,000s.
        let mut late: Vec<(WorkerId, AttemptId, RunningAttempt)> = Vec::new();
        for a in self.workers.attempts_out() {
            let status = self
                .jobs
                .get(&a.task.job)
                .filter(|j| !j.state.is_done())
                .and_then(|j| j.tasks.get(a.task.index as usize))
                .map(|t| t.status);
            if let Some(TaskStatus::Running(ra)) = status {
                if ra.attempt == a.attempt && now.saturating_sub(ra.progressed) > limit {
                    late.push((ra.worker, a, ra));
                }
            }
        }
        late.sort_by_key(|(_, a, _)| *a);
        late.dedup_by_key(|(_, a, _)| *a);
        for (worker, a, ra) in late {
            let error = format!(
                "no progress for {:.1} s on {} (cluster.task_timeout_ms); progress count {} at {:.1} s after launch",
                limit as f64 / 1000.0,
                self.worker_name(worker),
                ra.progress,
                ra.progressed.saturating_sub(ra.started) as f64 / 1000.0,
            );
            tracing::warn!(attempt = %a, worker = %self.worker_name(worker), %error, "task timed out");
            let task = &mut self.jobs.get_mut(&a.task.job).expect("listed above").tasks
                [a.task.index as usize];
            if task.reduce.is_none() && !task.stalled_on.contains(&worker) {
                task.stalled_on.push(worker);
            }
            let unix = common::unix_ms();
            let r = TaskResult {
                attempt: a,
                slot: 0,
                outcome: TaskOutcome::Failed {
                    error: error.clone(),
                },
                started_unix_ms: unix,
                finished_unix_ms: unix,
                local_bytes: 0,
                remote_bytes: 0,
            };
            self.end_attempt(worker, a, Some((ra, r)));
        }
    }

    /// A failed attempt: counted; the task is retried until it has failed
    /// `max_task_attempts` times, then its job fails.
    fn attempt_failed(&mut self, a: AttemptId, rec: TaskRecord, error: &str) {
        self.metrics
            .attempt_unsuccessful(rec.kind, ReasonValue::failed);
        let max = self.settings.max_task_attempts;
        let job = self.jobs.get_mut(&a.task.job).expect("checked");
        job.records.push(rec);
        let task = &mut job.tasks[a.task.index as usize];
        task.failures += 1;
        task.status = TaskStatus::Pending;
        if job.state.is_done() {
            return;
        }
        if task.failures >= max {
            let msg = format!(
                "task {} failed {} times; last error: {error}",
                a.task, task.failures
            );
            self.fail_job(a.task.job, msg);
        } else {
            self.requeue(a.task);
        }
    }

    fn job_succeeded(&mut self, id: JobId) {
        let job = self.jobs.get_mut(&id).expect("job exists");
        let end = job.records.iter().map(|r| r.end_ms).max().unwrap_or(0);
        job.finished = Some(job.submitted + end);
        job.state = JobState::Succeeded;
        if let Some(out) = &job.output {
            self.storage.output_written(out);
        }
        self.finished_jobs += 1;
        self.view.remove_job(id);
        self.forget_everywhere(id);
        self.journal_ended(id);
        tracing::info!(job = %id, jct_ms = end, "job succeeded");
    }

    /// Tells every worker (at its next heartbeat) to drop the job's map output.
    fn forget_everywhere(&mut self, id: JobId) {
        let reduces = self.jobs.get(&id).is_some_and(|j| j.reduces > 0);
        if reduces {
            self.workers.forget_everywhere(id);
        }
    }

    pub(super) fn requeue(&mut self, t: TaskRef) {
        let job = &self.jobs[&t.job];
        if job.tasks[t.index as usize].reduce.is_some() {
            self.view.requeue_reduce(t);
            return;
        }
        let replicas = self.task_replicas(t);
        if replicas.is_empty() {
            let block = job.tasks[t.index as usize].block.clone();
            self.fail_job(t.job, format!("block {block} has no live replica"));
            return;
        }
        let len = job.tasks[t.index as usize].len;
        self.view.requeue(PendingTask {
            task: t,
            len,
            replicas,
        });
    }

    pub(super) fn fail_job(&mut self, id: JobId, error: String) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.state.is_done() {
            return;
        }
        tracing::warn!(job = %id, %error, "job failed");
        job.state = JobState::Failed;
        job.error = Some(error);
        job.finished = Some(job.submitted);
        self.finished_jobs += 1;
        self.view.remove_job(id);
        self.forget_everywhere(id);
        self.journal_ended(id);
    }
}
