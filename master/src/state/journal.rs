//! The master's job journal: what it must not forget across a restart.
//! Every job submitted and every job's final report are appended (JSON
//! lines, fsynced) by the HTTP layer as `Master` produces them; a restarted
//! master replays the file (`restore`): finished jobs and their reports are listed
//! again, job ids go on from the highest seen (so a stale result of an old
//! job can never be taken for a new one's), and jobs that were running are
//! failed with a reason that says the master restarted. The catalog needs
//! no journal: it comes back from the workers' block reports.

use super::Master;
use common::wire::{JobReport, JobSubmit};
use common::JobId;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

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
    },
}

/// Reads a journal. A last line cut short (a crash while appending) is
/// skipped with a warning; any other bad line is an error naming it.
pub fn read(path: &Path) -> anyhow::Result<Vec<JournalEntry>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => anyhow::bail!("reading the job journal {}: {e}", path.display()),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(e) => out.push(e),
            Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                tracing::warn!(path = %path.display(), line = i + 1, error = %e, "skipping a journal line cut short");
            }
            Err(e) => anyhow::bail!(
                "{}: line {}: not a journal entry: {e}",
                path.display(),
                i + 1
            ),
        }
    }
    Ok(out)
}

/// Appends `entries` and fsyncs.
pub fn append(path: &Path, entries: &[JournalEntry]) -> anyhow::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut buf = Vec::new();
    for e in entries {
        serde_json::to_writer(&mut buf, e)?;
        buf.push(b'\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(&buf)?;
    f.sync_data()?;
    Ok(())
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
}

impl Master {
    /// Journal entries produced since the last call, to append.
    pub fn take_journal(&mut self) -> Vec<JournalEntry> {
        self.journal.take()
    }

    pub(super) fn journal_ended(&mut self, id: JobId) {
        if let Ok(report) = self.report(id) {
            self.journal.push(JournalEntry::Ended { report });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::Workload;

    fn submitted(job: u32) -> JournalEntry {
        JournalEntry::Submitted {
            job: JobId(job),
            name: format!("j{job}"),
            scheduler: "hadoop".into(),
            submit_unix_ms: 1_000_000,
            spec: JobSubmit::new(Workload::InputSink, "f"),
        }
    }

    #[test]
    fn the_journal_reads_back_and_survives_a_cut_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m/journal.jsonl");
        assert!(read(&path).unwrap().is_empty(), "no journal yet");
        append(&path, &[submitted(1), submitted(2)]).unwrap();
        assert_eq!(read(&path).unwrap().len(), 2);
        // A crash mid-append leaves half a line: skipped.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"event\":\"submitted\",\"job\":").unwrap();
        assert_eq!(read(&path).unwrap().len(), 2);
        // Damage before the end is an error naming the line.
        std::fs::write(&path, "not json\n{}\n").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
