//! A restarted master takes back what an earlier incarnation journaled
//! (`journal`): finished jobs and their reports are listed again, job ids
//! go on from the highest seen, files keep their replication factors and
//! pending deletions, and jobs that were running are rebuilt with the maps
//! and reduces that finished, and held (`held`) until the workers have
//! registered again: each says which attempts it still runs and which map
//! outputs it keeps, the attempts are adopted, and outputs that are gone
//! send their maps to run again (`resume`). A job journaled by an earlier
//! version (without its input blocks) fails, saying the master restarted.
//! It replays into several parts (jobs, storage), so it sits above them all.

use super::jobs::{unstarted_report, AfterMap, NewJob, RunningAttempt, TaskStatus};
use super::journal::JournalEntry;
use super::storage::DELETE_GUARD_MS;
use super::Master;
use common::wire::TaskRecord;
use common::{AttemptId, JobId, TaskRef, WorkerId};
use sched::{Millis, PendingTask};
use std::collections::{BTreeMap, HashSet};

/// The incarnation after the highest the journal names.
fn next_incarnation(entries: &[JournalEntry]) -> u64 {
    entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Incarnation { number } => Some(*number),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        .saturating_add(1)
}

/// Until when (on the new clock, `now`) a deletion journaled at `unix_ms`
/// keeps its blocks out on every worker: what is left of
/// [`DELETE_GUARD_MS`] (a copy the last incarnation ordered may still
/// land); None for an older one, or one journaled without its time.
fn guard_until(unix_ms: u64, now: Millis, now_unix_ms: u64) -> Option<Millis> {
    let left = (unix_ms + DELETE_GUARD_MS).saturating_sub(now_unix_ms);
    (unix_ms > 0 && left > 0).then_some(now + left)
}

impl Master {
    /// Job ids go on past `job` (the highest a dropped part of a damaged
    /// journal names).
    pub fn reserve_ids_through(&mut self, job: JobId) {
        self.jobs.seen(job);
    }

    /// Takes back what an earlier incarnation journaled. Returns the time
    /// the master's clock starts at: the age of the oldest job it rebuilt
    /// (ms), so every rebuilt job was submitted at 0 or later.
    pub fn restore(&mut self, entries: Vec<JournalEntry>, now_unix_ms: u64) -> Millis {
        let (ended, now) = replay_clock(&entries, now_unix_ms);
        self.incarnation = next_incarnation(&entries);
        self.journal.push(JournalEntry::Incarnation {
            number: self.incarnation,
        });
        let mut unrebuilt = BTreeMap::new();
        let mut rebuilt = Vec::new();
        for e in entries {
            match e {
                JournalEntry::Submitted {
                    job,
                    name,
                    scheduler,
                    submit_unix_ms,
                    spec,
                    blocks,
                } => {
                    self.jobs.seen(job);
                    if ended.contains(&job) {
                        continue;
                    }
                    let reduces = super::submit::check_spec(&spec).ok();
                    // Blocks as the catalog could have had them (a damaged
                    // journal may say anything).
                    let sane = blocks.len() <= common::wire::MAX_FILE_BLOCKS as usize
                        && blocks
                            .iter()
                            .all(|(_, len)| *len <= common::wire::MAX_BLOCK_BYTES);
                    match reduces {
                        Some(reduces) if !blocks.is_empty() && sane => {
                            let output = spec.workload.has_reduce().then(|| {
                                spec.output.clone().unwrap_or_else(|| format!("{name}.out"))
                            });
                            let age = now_unix_ms.saturating_sub(submit_unix_ms);
                            self.jobs.add_again(
                                job,
                                NewJob {
                                    name,
                                    spec,
                                    scheduler,
                                    submitted: now.saturating_sub(age),
                                    submit_unix_ms,
                                    blocks,
                                    reduces,
                                    output,
                                },
                            );
                            rebuilt.push(job);
                        }
                        _ => {
                            unrebuilt.insert(job, (name, scheduler, submit_unix_ms, spec));
                        }
                    }
                }
                JournalEntry::Ended { report } => {
                    self.jobs.archive(report);
                }
                JournalEntry::Replication { file, replication } => {
                    self.storage.restore_replication(file, replication);
                }
                JournalEntry::Deleted {
                    file,
                    blocks,
                    unix_ms,
                } => {
                    let guard = guard_until(unix_ms, now, now_unix_ms);
                    let workers = self.workers.len();
                    self.storage.restore_deleted(file, blocks, workers, guard);
                }
                JournalEntry::Launched {
                    attempt,
                    worker,
                    source,
                } => {
                    if let (Some(w), Some(s)) = (self.worker_id(&worker), self.worker_id(&source)) {
                        self.jobs.launched_before(attempt, w, s, now);
                    }
                }
                JournalEntry::MapDone {
                    attempt,
                    summary,
                    record,
                } => self.map_done_before(attempt, &summary, record, now),
                JournalEntry::ReduceDone {
                    attempt,
                    fetched,
                    record,
                } => {
                    if self.has_task(attempt) {
                        self.jobs.reduce_succeeded(attempt, record, fetched);
                    }
                }
                JournalEntry::Failed {
                    attempt,
                    error,
                    record,
                } => {
                    if self.has_task(attempt) {
                        let max = self.settings.max_task_attempts;
                        // A failure that failed the job is followed by its end.
                        let _ = self.jobs.attempt_failed(attempt, record, &error, max);
                    }
                }
                JournalEntry::Uncounted { attempt, record } => {
                    self.jobs.ended_before(attempt, record);
                }
                JournalEntry::Incarnation { .. } => {}
                JournalEntry::Settled {
                    file,
                    index,
                    generation,
                } => self.storage.restore_settled(&file, index, generation),
                JournalEntry::OutputsLost { job, lost } => {
                    let lost: Vec<_> = lost
                        .into_iter()
                        .filter_map(|(m, w, a)| Some((m, self.worker_id(&w)?, a)))
                        .collect();
                    self.jobs.lose_outputs(job, lost);
                }
            }
        }
        for (job, (name, scheduler, submit_unix_ms, spec)) in unrebuilt {
            let error = format!(
                "the master restarted while the job ran (it restarted {} s after the job was submitted)",
                now_unix_ms.saturating_sub(submit_unix_ms) / 1000
            );
            let report = unstarted_report(job, name, scheduler, submit_unix_ms, &spec, error);
            self.journal.push(JournalEntry::Ended {
                report: report.clone(),
            });
            self.jobs.archive(report);
        }
        self.jobs.retire();
        if !rebuilt.is_empty() {
            tracing::info!(jobs = ?rebuilt, "jobs taken back from the journal; they go on once the workers have registered again");
            self.held
                .hold(rebuilt, now + self.settings.worker_timeout_ms);
        }
        if self.jobs.archived_count() > 0 {
            tracing::info!(
                jobs = self.jobs.archived_count(),
                next = self.jobs.next_id().0,
                "job journal replayed"
            );
        }
        now
    }

    /// The journal names a task this replay has rebuilt (a damaged journal
    /// may name others: they are passed over).
    fn has_task(&self, a: AttemptId) -> bool {
        self.jobs
            .get(a.task.job)
            .is_some_and(|j| (a.task.index as usize) < j.tasks.len())
    }

    fn worker_id(&self, name: &str) -> Option<WorkerId> {
        self.workers.find(name).ok().map(|(id, _)| id)
    }

    /// Replay of a map that succeeded: its output is where its record says.
    fn map_done_before(
        &mut self,
        a: AttemptId,
        summary: &workloads::MapSummary,
        rec: TaskRecord,
        now: Millis,
    ) {
        let Some(job) = self.jobs.get(a.task.job) else {
            return;
        };
        if a.task.index >= job.maps {
            return;
        }
        let (Some(worker), Some(source)) =
            (self.worker_id(&rec.worker), self.worker_id(&rec.source))
        else {
            // A worker this incarnation does not know (a rented instance):
            // its output is gone; the map runs again.
            self.jobs.ended_before(a, Some(rec));
            return;
        };
        self.jobs.launched_before(a, worker, source, now);
        let ra = self.jobs.running(a).expect("just launched");
        if self.jobs.map_succeeded(a, worker, ra, rec, summary) == AfterMap::CreateReduces {
            let factor = self.output_factor(&self.jobs.job(a.task.job).spec);
            let (_, output) = self.jobs.create_reduces(a.task.job);
            self.storage.output_writing(output, factor);
        }
    }

    /// A worker registered while jobs are held: the attempts of theirs it
    /// runs (or finished) that the journal sent there are adopted; the
    /// held jobs' map outputs the journal placed there that it no longer
    /// keeps are lost (their maps run again). Once every configured worker
    /// registered, the jobs go on.
    pub(super) fn adopt(&mut self, worker: WorkerId, running: &[AttemptId], outputs: &[AttemptId]) {
        if !self.held.active() {
            return;
        }
        let mut adopted = 0;
        for &a in running {
            if self.held.holds(a.task.job) && self.jobs.current(a, worker).is_some() {
                self.held.adopt(a);
                self.workers.adopt(worker, a);
                adopted += 1;
            }
        }
        let kept: HashSet<(JobId, u32, u32)> = outputs
            .iter()
            .map(|a| (a.task.job, a.task.index, a.attempt))
            .collect();
        let mut lost = 0;
        for (job, refs) in self.jobs.outputs_needed_on(worker) {
            if !self.held.holds(job) {
                continue;
            }
            let gone: Vec<_> = refs
                .into_iter()
                .filter(|&(m, _, a)| !kept.contains(&(job, m, a)))
                .collect();
            lost += self.rerun_maps(job, gone);
        }
        tracing::info!(worker = %self.worker_name(worker), adopted, outputs_lost = lost, "attempts of jobs taken back adopted");
        if self.workers.all_registered() {
            self.resume();
        }
    }

    /// The held jobs go on: what the workers did not adopt runs again, the
    /// jobs enter the scheduler's view with their pending tasks, the
    /// adopted attempts count as running, and results that came meanwhile
    /// are applied.
    pub(super) fn resume(&mut self) {
        let (jobs, adopted, stash) = self.held.release();
        // Workers that did not come back keep no output.
        for w in self.workers.ids().collect::<Vec<_>>() {
            if self.workers.alive(w) {
                continue;
            }
            for (job, refs) in self.jobs.outputs_needed_on(w) {
                if jobs.contains(&job) {
                    self.rerun_maps(job, refs);
                }
            }
        }
        for id in jobs {
            if self.jobs.get(id).is_none_or(|j| j.state.is_done()) {
                continue;
            }
            self.resume_job(id, &adopted);
        }
        for (worker, r) in stash {
            if let Some(reason) = self.on_result(worker, r) {
                tracing::warn!(%reason, "a result that came while the jobs were held is refused");
                self.workers.refuse(1);
            }
        }
    }

    fn resume_job(&mut self, id: JobId, adopted: &HashSet<AttemptId>) {
        // Attempts the journal left running that no worker adopted: one
        // beside another (speculation) just ends; the only one leaves its
        // task to run again.
        let gone: Vec<AttemptId> = self
            .jobs
            .job(id)
            .tasks
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                t.attempts().map(move |ra| AttemptId {
                    task: TaskRef {
                        job: id,
                        index: i as u32,
                    },
                    attempt: ra.attempt,
                })
            })
            .filter(|a| !adopted.contains(a))
            .collect();
        let mut lost = Vec::new();
        for a in gone {
            if !self.jobs.drop_attempt(a) {
                self.jobs.lost_in_restart(a.task);
                lost.push(a.task);
            }
        }
        let job = self.jobs.job(id);
        let (maps, reduces_exist) = (job.maps, job.tasks.len() as u32 > job.maps);
        let all_maps = job.counts.maps_done == maps;
        if all_maps
            && (job.reduces == 0 || job.counts.reduces_done == job.reduces)
            && (reduces_exist || job.reduces == 0)
        {
            self.job_succeeded(id);
            return;
        }
        let mut pending = Vec::new();
        let mut orphan = None;
        let mut running: Vec<(TaskRef, RunningAttempt)> = Vec::new();
        for (i, t) in job.tasks.iter().enumerate().take(maps as usize) {
            let tr = TaskRef {
                job: id,
                index: i as u32,
            };
            match t.status {
                TaskStatus::Pending => {
                    let replicas = self.task_replicas(tr);
                    if replicas.is_empty() {
                        orphan.get_or_insert(t.block.clone());
                    }
                    pending.push(PendingTask {
                        task: tr,
                        len: t.len,
                        replicas,
                    });
                }
                TaskStatus::Running(_) => running.extend(t.attempts().map(|ra| (tr, ra))),
                TaskStatus::Done => {}
            }
        }
        let spec = job.spec.clone();
        let submitted = job.submitted;
        tracing::info!(job = %id, pending = pending.len(), running = running.len(), rerun = lost.len(),
            "job taken back goes on");
        self.placement
            .job_added(id, submitted, spec.group(), pending);
        self.set_qos(id, &spec, submitted);
        if let Some(block) = orphan {
            self.fail_job(
                id,
                format!("block {block} has no live replica (after the master restarted)"),
            );
            return;
        }
        for (t, ra) in running {
            self.placement.adopted_map(t, ra.worker, ra.source);
        }
        if reduces_exist {
            let job = self.jobs.job(id);
            let waiting: Vec<u32> = job
                .reduce_tasks()
                .iter()
                .enumerate()
                .filter(|(_, t)| matches!(t.status, TaskStatus::Pending))
                .map(|(r, _)| maps + r as u32)
                .collect();
            // Each running attempt (a reduce and its backup are two).
            let reducing: Vec<(TaskRef, WorkerId)> = job
                .reduce_tasks()
                .iter()
                .enumerate()
                .flat_map(|(r, t)| {
                    let task = TaskRef {
                        job: id,
                        index: maps + r as u32,
                    };
                    t.attempts().map(move |ra| (task, ra.worker))
                })
                .collect();
            self.release_reduces(id, waiting);
            for (t, w) in reducing {
                self.placement.adopted_reduce(t, w);
            }
            if !all_maps {
                self.placement.reduces_held(id);
            }
        }
    }
}

/// The jobs the journal ended, and the time the restarted master's clock
/// starts at: the age of the oldest job it will rebuild (ms), so every
/// rebuilt job was submitted at 0 or later.
fn replay_clock(entries: &[JournalEntry], now_unix_ms: u64) -> (HashSet<JobId>, Millis) {
    let ended: HashSet<JobId> = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Ended { report } => Some(report.job),
            _ => None,
        })
        .collect();
    let now = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Submitted {
                job,
                submit_unix_ms,
                blocks,
                ..
            } if !ended.contains(job) && !blocks.is_empty() => {
                Some(now_unix_ms.saturating_sub(*submit_unix_ms))
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    (ended, now)
}
