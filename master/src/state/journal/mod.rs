//! The master's job journal: what it must not forget across a restart.
//! Every job submitted (with its input blocks), every attempt launched,
//! every map and reduce that succeeded (where its output is, what it
//! counted), every counted failure, every map output given up, and every
//! job's final report are appended (JSON lines) by the HTTP layer as
//! `Master` produces them, under the state lock, so in the order they
//! happened. Job entries (submitted, ended, replication, deletion) are
//! fsynced at once; task entries are written at once (a killed master
//! loses none) and fsynced by the next sync (`sync`, every heartbeat
//! interval), so a machine crash loses at most that interval's task
//! progress, which runs again.
//!
//! A restarted master replays the file (`restore`): finished jobs and their
//! reports are listed again, job ids go on from the highest seen (so a
//! stale result of an old job can never be taken for a new one's), and jobs
//! that were running are rebuilt, their finished maps and reduces kept, and
//! go on once the workers have registered again (work-preserving restart,
//! as YARN-556's ResourceManager). The catalog comes back from the workers'
//! block reports; only the generation each job output block was settled at
//! is the master's own record (`Settled`, as HDFS's namenode keeps
//! genstamps), kept while its file lives.
//!
//! The file itself (`file.rs`): a header naming the cluster, a checksum per
//! line, and what a torn, damaged, foreign or unwritable journal gives.

use common::wire::{JobReport, JobSubmit, TaskRecord};
use common::{AttemptId, BlockId, JobId};
use serde::{Deserialize, Serialize};

mod file;
pub use file::{
    append, append_history, check_cluster, cluster_fingerprint, history_path, read, read_with,
    rewrite, sync, Damage, Replayed,
};

/// One line of the journal.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case", deny_unknown_fields)]
pub enum JournalEntry {
    Submitted {
        job: JobId,
        name: String,
        scheduler: String,
        submit_unix_ms: u64,
        spec: JobSubmit,
        /// Its input blocks, one map each: a restarted master rebuilds the
        /// job from them before the catalog is back. (Absent in journals
        /// of earlier versions: such a job fails at a restart, as before.)
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        blocks: Vec<(BlockId, u64)>,
    },
    /// An attempt went out to `worker`, reading its input from `source`
    /// (a map; a reduce reads from every map's worker: `source` = `worker`).
    Launched {
        attempt: AttemptId,
        worker: String,
        source: String,
    },
    /// A map succeeded: its output stays on the worker that ran it.
    MapDone {
        attempt: AttemptId,
        summary: workloads::MapSummary,
        record: TaskRecord,
    },
    /// A reduce succeeded, having fetched `fetched` bytes; its output block
    /// is stored (the block reports bring it back).
    ReduceDone {
        attempt: AttemptId,
        fetched: u64,
        record: TaskRecord,
    },
    /// An attempt failed, counted against its task.
    Failed {
        attempt: AttemptId,
        error: String,
        record: TaskRecord,
    },
    /// An attempt ended without a failure counted (rejected, lost, its
    /// input's fetch failed, no space): its record, if it has one.
    Uncounted {
        attempt: AttemptId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<TaskRecord>,
    },
    /// These maps' outputs were given up (lost with their worker, or
    /// unfetchable): the maps run again.
    OutputsLost {
        job: JobId,
        /// (map, the worker that kept it, its attempt).
        lost: Vec<(u32, String, u32)>,
    },
    Ended {
        report: JobReport,
    },
    /// A file's replication factor was declared (by the loader, or for a
    /// job's output once written).
    Replication {
        file: String,
        replication: u32,
    },
    /// A file of `blocks` blocks was deleted: a replication declared before
    /// no longer holds, and its replicas are kept out of the catalog until
    /// their holders drop them (or a later entry declares a new file of
    /// that name).
    Deleted {
        file: String,
        blocks: u32,
        /// When (Unix ms; 0 in journals written before it was kept): a
        /// restarted master guards a deletion that recent.
        #[serde(default)]
        unix_ms: u64,
    },
    /// The master started for the `number`th time with this journal.
    Incarnation {
        number: u64,
    },
    /// Block `index` of job output `file` is at `generation`: the master
    /// took the result of the reduce attempt that wrote it, and replicas
    /// of any other generation are stale (`common::wire::output_generation`).
    Settled {
        file: String,
        index: u32,
        generation: u64,
    },
}

impl JournalEntry {
    /// A job-level entry, fsynced at once (task entries wait for `sync`).
    pub fn durable(&self) -> bool {
        matches!(
            self,
            JournalEntry::Submitted { .. }
                | JournalEntry::Ended { .. }
                | JournalEntry::Replication { .. }
                | JournalEntry::Deleted { .. }
                | JournalEntry::Incarnation { .. }
        )
    }
}

/// What a restarted master keeps of a journal it replayed: the entries of
/// jobs that have not ended, the ends (reports) of the `retained` ended
/// jobs of highest ids (those the master keeps in memory,
/// `master.retained_jobs`), the files' factors and deletions, and the
/// settled generations of files not deleted since, in their order; and the reports of the other ended jobs, which leave the journal
/// for its history file ([`append_history`]). A finished job's submission
/// and task entries are dropped (its report says all), so the journal, and
/// what each restart replays, stays bounded however many jobs ran.
pub fn compacted(entries: &[JournalEntry], retained: usize) -> (Vec<JournalEntry>, Vec<JobReport>) {
    let mut ended: Vec<JobId> = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Ended { report } => Some(report.job),
            _ => None,
        })
        .collect();
    ended.sort_unstable();
    ended.dedup();
    let kept_ends: std::collections::HashSet<JobId> =
        ended.iter().rev().take(retained.max(1)).copied().collect();
    let ended: std::collections::HashSet<JobId> = ended.into_iter().collect();
    // Where each file was last deleted: a generation settled before it
    // went with the file.
    let last_deleted: std::collections::HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            JournalEntry::Deleted { file, .. } => Some((file.as_str(), i)),
            _ => None,
        })
        .collect();
    let mut retired = Vec::new();
    let kept = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            let job = match e {
                JournalEntry::Submitted { job, .. } | JournalEntry::OutputsLost { job, .. } => *job,
                JournalEntry::Launched { attempt, .. }
                | JournalEntry::MapDone { attempt, .. }
                | JournalEntry::ReduceDone { attempt, .. }
                | JournalEntry::Failed { attempt, .. }
                | JournalEntry::Uncounted { attempt, .. } => attempt.task.job,
                JournalEntry::Ended { report } => {
                    if kept_ends.contains(&report.job) {
                        return true;
                    }
                    retired.push(report.clone());
                    return false;
                }
                JournalEntry::Replication { .. }
                | JournalEntry::Deleted { .. }
                | JournalEntry::Incarnation { .. } => return true,
                JournalEntry::Settled { file, .. } => {
                    return last_deleted.get(file.as_str()).is_none_or(|d| d < i)
                }
            };
            !ended.contains(&job)
        })
        .map(|(_, e)| e.clone())
        .collect();
    (kept, retired)
}

/// The entries the master's parts produced and the HTTP layer has not
/// appended yet.
#[derive(Debug, Default)]
pub(super) struct Journal {
    out: Vec<JournalEntry>,
}

impl Journal {
    pub fn push(&mut self, entry: JournalEntry) {
        self.out.push(entry);
    }

    pub fn take(&mut self) -> Vec<JournalEntry> {
        std::mem::take(&mut self.out)
    }

    /// Puts back entries that could not be written, before those produced
    /// since (their order kept), to go out with the next append.
    pub fn requeue(&mut self, mut entries: Vec<JournalEntry>) {
        entries.append(&mut self.out);
        self.out = entries;
    }
}

#[cfg(test)]
mod tests;
