//! A restarted master takes back what an earlier incarnation journaled
//! (`journal`): finished jobs and their reports are listed again, job ids
//! go on from the highest seen, files keep their replication factors and
//! pending deletions, and jobs that were running fail with a reason that
//! says the master restarted. It replays into several parts (jobs,
//! storage), so it sits above them all.

use super::journal::JournalEntry;
use super::Master;
use common::wire::{JobReport, JobState};

impl Master {
    /// Takes back what an earlier incarnation journaled. Jobs it was
    /// running fail, saying so (and that is journaled too).
    pub fn restore(&mut self, entries: Vec<JournalEntry>, now_unix_ms: u64) {
        let mut submitted = std::collections::BTreeMap::new();
        for e in entries {
            match e {
                JournalEntry::Submitted {
                    job,
                    name,
                    scheduler,
                    submit_unix_ms,
                    spec,
                } => {
                    self.next_job = self.next_job.max(job.0 + 1);
                    submitted.insert(job, (name, scheduler, submit_unix_ms, spec));
                }
                JournalEntry::Ended { report } => {
                    self.next_job = self.next_job.max(report.job.0 + 1);
                    submitted.remove(&report.job);
                    self.archived.insert(report.job, report);
                }
                JournalEntry::Replication { file, replication } => {
                    self.storage.restore_replication(file, replication);
                }
                JournalEntry::Deleted { file, blocks } => {
                    self.storage
                        .restore_deleted(file, blocks, self.workers.len());
                }
            }
        }
        for (job, (name, scheduler, submit_unix_ms, spec)) in submitted {
            let report = JobReport {
                job,
                name,
                workload: spec.workload,
                input: spec.input.clone(),
                group: spec.group().to_owned(),
                scheduler,
                state: JobState::Failed,
                error: Some(format!(
                    "the master restarted while the job ran (it restarted {} s after the job was submitted)",
                    now_unix_ms.saturating_sub(submit_unix_ms) / 1000
                )),
                submit_unix_ms,
                start_ms: None,
                finish_ms: None,
                jct_ms: None,
                tasks: 0,
                tasks_done: 0,
                reduces: 0,
                reduces_done: 0,
                shuffle_bytes: 0,
                output: None,
                data_local: 0,
                data_remote: 0,
                bytes_local: 0,
                bytes_remote: 0,
                attempts: Vec::new(),
                running: Vec::new(),
                deadline_ms: spec.deadline_s.map(|d| (d * 1000.0) as u64),
                deadline_met: spec.deadline_s.map(|_| false),
                budget: spec.budget,
                public_cost: None,
            };
            self.journal.push(JournalEntry::Ended {
                report: report.clone(),
            });
            self.archived.insert(job, report);
        }
        if !self.archived.is_empty() {
            tracing::info!(
                jobs = self.archived.len(),
                next = self.next_job,
                "job journal replayed"
            );
        }
    }
}
