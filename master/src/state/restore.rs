//! A restarted master takes back what an earlier incarnation journaled
//! (`journal`): finished jobs and their reports are listed again, job ids
//! go on from the highest seen, files keep their replication factors and
//! pending deletions, and jobs that were running fail with a reason that
//! says the master restarted. It replays into several parts (jobs,
//! storage), so it sits above them all.

use super::jobs::unstarted_report;
use super::journal::JournalEntry;
use super::Master;

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
                    self.jobs.seen(job);
                    submitted.insert(job, (name, scheduler, submit_unix_ms, spec));
                }
                JournalEntry::Ended { report } => {
                    submitted.remove(&report.job);
                    self.jobs.archive(report);
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
        if self.jobs.archived_count() > 0 {
            tracing::info!(
                jobs = self.jobs.archived_count(),
                next = self.jobs.next_id().0,
                "job journal replayed"
            );
        }
    }
}
