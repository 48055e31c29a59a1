//! Attempt results: fencing (only the current attempt on the worker it was
//! sent to counts), the task's record, retries, and the end of a job.

use super::jobs::{AfterFailure, AfterMap, RunningAttempt};
use super::journal::JournalEntry;
use super::Master;
use crate::metrics::ReasonValue;
use common::wire::{TaskKind, TaskOutcome, TaskRecord, TaskResult};
use common::{AttemptId, JobId, TaskRef, WorkerId};
use sched::{Millis, PendingTask};

impl Master {
    /// Takes the result of an attempt from `worker`; why not, if it is
    /// refused (fencing: only the current attempt of a task, on the worker
    /// it was sent to, counts).
    pub(super) fn on_result(&mut self, worker: WorkerId, r: TaskResult) -> Option<String> {
        let Some(ra) = self.jobs.current(r.attempt, worker) else {
            return Some(self.why_stale(r.attempt, worker));
        };
        if self.held.holds(r.attempt.task.job) {
            // An adopted attempt's result before its job went on: applied
            // then (`resume`); the worker no longer runs it.
            self.workers.ended(worker, &r.attempt);
            self.held.stash(worker, r);
            return None;
        }
        self.end_attempt(worker, r.attempt, Some((ra, r)));
        None
    }

    /// Why a result of attempt `a` from `worker` is not taken.
    pub(super) fn why_stale(&self, a: AttemptId, worker: WorkerId) -> String {
        let Some(job) = self.jobs.get(a.task.job) else {
            return format!("attempt {a}: no such job here");
        };
        if job.state.is_done() {
            return format!("attempt {a}: job {} has ended", job.id);
        }
        match self.jobs.running(a) {
            Some(ra) if ra.worker != worker => format!(
                "attempt {a}: it runs on {}, not on {}",
                self.worker_name(ra.worker),
                self.worker_name(worker)
            ),
            _ => format!(
                "attempt {a} is no longer its task's current attempt (it timed out, its worker was lost, or another attempt replaced it)"
            ),
        }
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
        let Some(ra) = self.jobs.running(a) else {
            return;
        };
        // A success of the task's kind (a result of the other kind is a
        // worker's bug: apply_result runs the task again).
        let is_reduce = self.jobs.task(a.task).reduce.is_some();
        let ok = matches!(
            (&result, is_reduce),
            (
                Some((
                    _,
                    TaskResult {
                        outcome: TaskOutcome::Succeeded { .. },
                        ..
                    }
                )),
                false
            ) | (
                Some((
                    _,
                    TaskResult {
                        outcome: TaskOutcome::Reduced { .. },
                        ..
                    }
                )),
                true
            )
        );
        // A held job is not in the view yet (it enters with what runs).
        if self.held.holds(a.task.job) {
        } else if is_reduce {
            self.placement
                .attempt_ended(a.task, worker, None, self.now, ok);
        } else {
            self.placement
                .attempt_ended(a.task, worker, Some(ra.remote()), self.now, ok);
        }
        if ok {
            // Its backup, or the attempt it backs up, lost the race.
            if let Some(other) = self.jobs.other(a) {
                self.kill_loser(a, other);
            }
        } else if self.jobs.other(a).is_some() {
            // The task's other attempt goes on: no retry.
            self.end_beside_other(worker, a, ra, result.map(|(_, r)| r));
            return;
        }
        match result {
            None => {
                self.journal_task(JournalEntry::Uncounted {
                    attempt: a,
                    record: None,
                });
                self.retry_unpenalised(a.task)
            }
            Some((_, r)) => self.apply_result(worker, a, ra, r),
        }
    }

    /// Attempt `loser` of `a`'s task lost the race to `a` (speculation):
    /// its worker is told to kill it at its next heartbeat, its slot is
    /// free in the view, and the report keeps it as killed.
    fn kill_loser(&mut self, a: AttemptId, loser: RunningAttempt) {
        let l = AttemptId {
            task: a.task,
            attempt: loser.attempt,
        };
        self.workers.ended(loser.worker, &l);
        self.jobs.first_of_two(a);
        self.jobs.drop_attempt(l);
        if self.held.holds(a.task.job) {
        } else if self.jobs.task(a.task).reduce.is_some() {
            self.placement
                .attempt_ended(a.task, loser.worker, None, self.now, false);
        } else {
            self.placement.attempt_ended(
                a.task,
                loser.worker,
                Some(loser.remote()),
                self.now,
                false,
            );
        }
        let unix = common::unix_ms();
        let r = TaskResult {
            attempt: l,
            slot: loser.slot.unwrap_or(0),
            outcome: TaskOutcome::Failed {
                error: String::new(),
            },
            started_unix_ms: unix.saturating_sub(self.now.saturating_sub(loser.started)),
            finished_unix_ms: unix,
            local_bytes: 0,
            remote_bytes: 0,
        };
        let error = format!("killed: attempt {} finished first (speculation)", a.attempt);
        tracing::info!(attempt = %l, winner = %a, worker = %self.worker_name(loser.worker), "speculation: the other attempt finished first; killing this one");
        let rec = self.record(l, loser, &r, Some(error));
        self.metrics
            .attempt_unsuccessful(rec.kind, ReasonValue::killed);
        self.record_uncounted(l, rec);
    }

    /// Attempt `a` ended without success while its task's other attempt
    /// runs on: recorded (a failure is not counted: the task has not
    /// failed while an attempt of it runs), and the other attempt is its
    /// task's only one.
    fn end_beside_other(
        &mut self,
        worker: WorkerId,
        a: AttemptId,
        ra: RunningAttempt,
        result: Option<TaskResult>,
    ) {
        self.jobs.drop_attempt(a);
        let rec = result.map(|r| {
            let error = match &r.outcome {
                TaskOutcome::Failed { error } | TaskOutcome::NoSpace { error } => error.clone(),
                TaskOutcome::FetchFailed { error, .. } => format!("fetch failed: {error}"),
                TaskOutcome::Rejected { reason } => format!("rejected: {reason}"),
                _ => "result of the wrong kind".to_owned(),
            };
            self.record(a, ra, &r, Some(error))
        });
        tracing::info!(attempt = %a, worker = %self.worker_name(worker), "attempt ended; its task's other attempt goes on");
        match rec {
            Some(rec) => self.record_uncounted(a, rec),
            None => self.journal_task(JournalEntry::Uncounted {
                attempt: a,
                record: None,
            }),
        }
    }

    /// Puts a task back in its queue without counting a failure.
    fn retry_unpenalised(&mut self, t: TaskRef) {
        if self.jobs.pending_again(t) {
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
        let job = self.jobs.job(a.task.job);
        let task = self.jobs.task(a.task);
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
        let is_reduce = self.jobs.task(a.task).reduce.is_some();
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
                let len = self.jobs.task(a.task).len;
                self.placement
                    .map_measured(worker, len, ms, ra.worker == ra.source, output);
            }
            TaskOutcome::Reduced { .. } if is_reduce => {
                self.placement
                    .reduce_measured(r.local_bytes + r.remote_bytes, ms);
            }
            _ => {}
        }
        match &r.outcome {
            TaskOutcome::Succeeded { summary } if !is_reduce => {
                // The planners' expected task length.
                self.placement
                    .task_ms(r.finished_unix_ms.saturating_sub(r.started_unix_ms));
                let rec = self.record(a, ra, &r, None);
                self.journal_task(JournalEntry::MapDone {
                    attempt: a,
                    summary: summary.clone(),
                    record: rec.clone(),
                });
                self.metrics.map_done(
                    rec.locality,
                    r.local_bytes,
                    r.remote_bytes,
                    (rec.end_ms.saturating_sub(rec.start_ms)) as f64 / 1000.0,
                );
                match self.jobs.map_succeeded(a, worker, ra, rec, summary) {
                    AfterMap::Wait => {}
                    AfterMap::JobDone => self.job_succeeded(a.task.job),
                    AfterMap::CreateReduces => self.create_reduces(a.task.job),
                    // The reduces exist: lost map outputs were rebuilt, and
                    // waiting reduces may start again.
                    AfterMap::ReleaseReduces => self.release_reduces(a.task.job, Vec::new()),
                }
            }
            TaskOutcome::Reduced { .. } if is_reduce => {
                let rec = self.record(a, ra, &r, None);
                self.journal_task(JournalEntry::ReduceDone {
                    attempt: a,
                    fetched: r.local_bytes + r.remote_bytes,
                    record: rec.clone(),
                });
                self.settle_output(a);
                self.metrics.reduce_done(
                    r.local_bytes + r.remote_bytes,
                    (rec.end_ms.saturating_sub(rec.start_ms)) as f64 / 1000.0,
                );
                if self
                    .jobs
                    .reduce_succeeded(a, rec, r.local_bytes + r.remote_bytes)
                {
                    self.job_succeeded(a.task.job);
                }
            }
            TaskOutcome::Succeeded { .. } | TaskOutcome::Reduced { .. } => {
                // A map that answered like a reduce or the reverse: a worker
                // bug; the task runs again.
                tracing::error!(attempt = %a, "result kind does not match the task");
                self.journal_task(JournalEntry::Uncounted {
                    attempt: a,
                    record: None,
                });
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
                self.record_uncounted(a, rec);
                let again = self.rerun_maps(
                    a.task.job,
                    lost.iter().map(|l| (l.map, l.worker, l.attempt)),
                );
                tracing::warn!(attempt = %a, maps_again = again, %error, "reduce could not fetch map output");
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::FetchFailed { .. } => {
                tracing::error!(attempt = %a, "a map reported a shuffle fetch failure");
                self.journal_task(JournalEntry::Uncounted {
                    attempt: a,
                    record: None,
                });
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::Rejected { reason } => {
                tracing::debug!(attempt = %a, %reason, "attempt rejected by worker");
                self.journal_task(JournalEntry::Uncounted {
                    attempt: a,
                    record: None,
                });
                self.retry_unpenalised(a.task);
            }
            TaskOutcome::NoSpace { error } => {
                // The worker's disk, not the task: it runs again elsewhere,
                // and the worker gets nothing new until it has more room.
                let rec = self.record(a, ra, &r, Some(format!("no space: {error}")));
                self.metrics
                    .attempt_unsuccessful(rec.kind, ReasonValue::no_space);
                self.record_uncounted(a, rec);
                self.workers.disk_full(worker, self.now, error);
                self.retry_unpenalised(a.task);
            }
        }
    }

    /// The output block of reduce attempt `a`, whose result was taken, is
    /// at `a`'s generation: replicas another attempt of its reduce landed
    /// (one cut off after its commit was granted, or a backup that lost
    /// the race) are left out and deleted.
    fn settle_output(&mut self, a: AttemptId) {
        let job = self.jobs.job(a.task.job);
        let (Some(file), Some(index)) = (job.output.clone(), self.jobs.task(a.task).reduce) else {
            return;
        };
        let generation = common::wire::output_generation(a.task.job, a.attempt);
        let orders = self
            .storage
            .settle(&file, index, generation, &mut self.journal);
        for (w, s) in &orders.stale {
            tracing::warn!(block = %s.block, generation = s.generation, worker = %self.worker_name(*w),
                "a replica of another attempt of this reduce landed: deleted");
        }
        self.send_storage_orders(orders);
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
        let late = self.jobs.stalled(self.workers.attempts_out(), now, limit);
        for (worker, a, ra) in late {
            let error = format!(
                "no progress for {:.1} s on {} (cluster.task_timeout_ms); progress count {} at {:.1} s after launch",
                limit as f64 / 1000.0,
                self.worker_name(worker),
                ra.progress,
                ra.progressed.saturating_sub(ra.started) as f64 / 1000.0,
            );
            tracing::warn!(attempt = %a, worker = %self.worker_name(worker), %error, "task timed out");
            self.jobs.stalled_on(a.task, worker);
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

    /// The record of attempt `a`, which ended without a failure counted
    /// (its task is retried), kept and journaled.
    fn record_uncounted(&mut self, a: AttemptId, rec: TaskRecord) {
        self.journal_task(JournalEntry::Uncounted {
            attempt: a,
            record: Some(rec.clone()),
        });
        self.jobs.record(a.task.job, rec);
    }

    /// A failed attempt: counted; the task is retried until it has failed
    /// `max_task_attempts` times, then its job fails.
    fn attempt_failed(&mut self, a: AttemptId, rec: TaskRecord, error: &str) {
        self.journal_task(JournalEntry::Failed {
            attempt: a,
            error: error.to_owned(),
            record: rec.clone(),
        });
        self.metrics
            .attempt_unsuccessful(rec.kind, ReasonValue::failed);
        let max = self.settings.max_task_attempts;
        match self.jobs.attempt_failed(a, rec, error, max) {
            AfterFailure::Nothing => {}
            AfterFailure::Retry => self.requeue(a.task),
            AfterFailure::FailJob(msg) => self.fail_job(a.task.job, msg),
        }
    }

    pub(super) fn job_succeeded(&mut self, id: JobId) {
        let (end, output) = self.jobs.succeed(id);
        if let Some(out) = &output {
            self.storage.output_written(out);
        }
        self.placement.job_gone(id);
        self.forget_everywhere(id);
        self.journal_ended(id);
        tracing::info!(job = %id, jct_ms = end, "job succeeded");
        self.jobs.retire();
    }

    /// Tells every worker (at its next heartbeat) to drop the job's map output.
    fn forget_everywhere(&mut self, id: JobId) {
        if self.jobs.get(id).is_some_and(|j| j.reduces > 0) {
            self.workers.forget_everywhere(id);
        }
    }

    pub(super) fn requeue(&mut self, t: TaskRef) {
        if self.held.holds(t.job) {
            // It enters the view, pending, when its job goes on.
            return;
        }
        let task = self.jobs.task(t);
        if task.reduce.is_some() {
            self.placement.reduce_requeued(t);
            return;
        }
        let replicas = self.task_replicas(t);
        if replicas.is_empty() {
            let block = task.block.clone();
            self.fail_job(t.job, format!("block {block} has no live replica"));
            return;
        }
        let len = task.len;
        self.placement.map_requeued(PendingTask {
            task: t,
            len,
            replicas,
        });
    }

    pub(super) fn fail_job(&mut self, id: JobId, error: String) {
        if !self.jobs.fail(id, error) {
            return;
        }
        let error = self.jobs.job(id).error.as_deref().unwrap_or_default();
        tracing::warn!(job = %id, %error, "job failed");
        self.placement.job_gone(id);
        self.forget_everywhere(id);
        self.journal_ended(id);
        self.jobs.retire();
    }
}
