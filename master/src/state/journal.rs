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
//! as YARN-556's ResourceManager). The catalog needs no journal: it comes
//! back from the workers' block reports.

use super::Master;
use common::wire::{JobReport, JobSubmit, TaskRecord};
use common::{AttemptId, BlockId, JobId, WorkerId};
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
    },
    /// The master started for the `number`th time with this journal.
    Incarnation {
        number: u64,
    },
}

/// Reads a journal. A last line cut short (a crash while appending) is
/// skipped with a warning; any other bad line is an error naming it.
pub fn read(path: &Path) -> anyhow::Result<Vec<JournalEntry>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => anyhow::bail!("reading the job journal {}: {e}", path.display()),
    };
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // The piece after the last newline: empty, or a line cut short.
    let last = lines.len() - 1;
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|l| serde_json::from_str(l).map_err(|e| e.to_string()));
        match entry {
            Ok(e) => out.push(e),
            Err(e) if i == last => {
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

/// Appends `entries`; fsyncs if one of them is `durable`, and returns
/// whether some were written but not fsynced (for `sync`).
pub fn append(path: &Path, entries: &[JournalEntry]) -> anyhow::Result<bool> {
    if entries.is_empty() {
        return Ok(false);
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
    if entries.iter().any(JournalEntry::durable) {
        f.sync_data()?;
        return Ok(false);
    }
    Ok(true)
}

/// What a restarted master keeps of a journal it replayed: the entries of
/// jobs that have not ended, every job's end (its report), and the files'
/// factors and deletions, in their order. A finished job's submission and
/// task entries are dropped (its report says all), so the journal grows
/// with the jobs, not with their attempts.
pub fn compacted(entries: &[JournalEntry]) -> Vec<JournalEntry> {
    let ended: std::collections::HashSet<JobId> = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Ended { report } => Some(report.job),
            _ => None,
        })
        .collect();
    entries
        .iter()
        .filter(|e| {
            let job = match e {
                JournalEntry::Submitted { job, .. } | JournalEntry::OutputsLost { job, .. } => *job,
                JournalEntry::Launched { attempt, .. }
                | JournalEntry::MapDone { attempt, .. }
                | JournalEntry::ReduceDone { attempt, .. }
                | JournalEntry::Failed { attempt, .. }
                | JournalEntry::Uncounted { attempt, .. } => attempt.task.job,
                JournalEntry::Ended { .. }
                | JournalEntry::Replication { .. }
                | JournalEntry::Deleted { .. }
                | JournalEntry::Incarnation { .. } => return true,
            };
            !ended.contains(&job)
        })
        .cloned()
        .collect()
}

/// Replaces the journal with `entries`: written to `<path>.new`, fsynced,
/// and renamed over it (a crash leaves the old one whole).
pub fn rewrite(path: &Path, entries: &[JournalEntry]) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    for e in entries {
        serde_json::to_writer(&mut buf, e)?;
        buf.push(b'\n');
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = std::path::PathBuf::from(tmp);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&buf)?;
    f.sync_data()?;
    std::fs::rename(&tmp, path)
        .map_err(|e| anyhow::anyhow!("replacing {}: {e}", path.display()))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Fsyncs the journal (task entries appended since the last fsync).
pub fn sync(path: &Path) -> anyhow::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .sync_data()?;
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

    pub(super) fn journal_launch(
        &mut self,
        attempt: AttemptId,
        worker: WorkerId,
        source: WorkerId,
    ) {
        self.journal.push(JournalEntry::Launched {
            attempt,
            worker: self.worker_name(worker),
            source: self.worker_name(source),
        });
    }

    pub(super) fn journal_outputs_lost(&mut self, job: JobId, lost: &[(u32, WorkerId, u32)]) {
        if lost.is_empty() {
            return;
        }
        let lost = lost
            .iter()
            .map(|&(m, w, a)| (m, self.worker_name(w), a))
            .collect();
        self.journal.push(JournalEntry::OutputsLost { job, lost });
    }

    pub(super) fn journal_task(&mut self, entry: JournalEntry) {
        self.journal.push(entry);
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
            blocks: Vec::new(),
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

    #[test]
    fn compaction_keeps_what_a_restart_needs_and_rewrite_replaces_the_file() {
        let launched = |job: u32| JournalEntry::Launched {
            attempt: AttemptId {
                task: common::TaskRef {
                    job: JobId(job),
                    index: 0,
                },
                attempt: 0,
            },
            worker: "w0".into(),
            source: "w0".into(),
        };
        let report = crate::state::jobs::unstarted_report(
            JobId(1),
            "j1".into(),
            "hadoop".into(),
            0,
            &JobSubmit::new(Workload::InputSink, "f"),
            "x".into(),
        );
        let entries = vec![
            submitted(1),
            launched(1),
            submitted(2),
            JournalEntry::Replication {
                file: "f".into(),
                replication: 2,
            },
            launched(2),
            JournalEntry::Ended { report },
        ];
        let kept = compacted(&entries);
        let kinds: Vec<String> = kept
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(kinds, ["submitted", "replication", "launched", "ended"]);
        assert!(matches!(&kept[0], JournalEntry::Submitted { job, .. } if *job == JobId(2)));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        append(&path, &entries).unwrap();
        rewrite(&path, &kept).unwrap();
        assert_eq!(read(&path).unwrap().len(), 4);
        assert!(!dir.path().join("journal.jsonl.new").exists());
    }

    fn entry() -> impl proptest::strategy::Strategy<Value = JournalEntry> {
        use common::strategies as st;
        use proptest::prelude::*;
        let lost = proptest::collection::vec((any::<u32>(), st::name(), any::<u32>()), 0..3);
        prop_oneof![
            (
                st::job_id(),
                st::name(),
                st::name(),
                any::<u64>(),
                st::job_submit(),
                proptest::collection::vec((st::block_id(), any::<u64>()), 0..4)
            )
                .prop_map(|(job, name, scheduler, submit_unix_ms, spec, blocks)| {
                    JournalEntry::Submitted {
                        job,
                        name,
                        scheduler,
                        submit_unix_ms,
                        spec,
                        blocks,
                    }
                }),
            (st::attempt_id(), st::name(), st::name()).prop_map(|(attempt, worker, source)| {
                JournalEntry::Launched {
                    attempt,
                    worker,
                    source,
                }
            }),
            (st::attempt_id(), st::map_summary(), st::task_record()).prop_map(
                |(attempt, summary, record)| JournalEntry::MapDone {
                    attempt,
                    summary,
                    record,
                }
            ),
            (st::attempt_id(), any::<u64>(), st::task_record()).prop_map(
                |(attempt, fetched, record)| JournalEntry::ReduceDone {
                    attempt,
                    fetched,
                    record,
                }
            ),
            (st::attempt_id(), st::text(), st::task_record()).prop_map(
                |(attempt, error, record)| JournalEntry::Failed {
                    attempt,
                    error,
                    record,
                }
            ),
            (st::attempt_id(), proptest::option::of(st::task_record()))
                .prop_map(|(attempt, record)| JournalEntry::Uncounted { attempt, record }),
            (st::job_id(), lost).prop_map(|(job, lost)| JournalEntry::OutputsLost { job, lost }),
            st::job_report().prop_map(|report| JournalEntry::Ended { report }),
            (st::name(), any::<u32>())
                .prop_map(|(file, replication)| JournalEntry::Replication { file, replication }),
            // A deleted file's blocks are each a pending deletion per worker:
            // kept to what a test can hold (up to 1,000,000 are legal).
            (st::name(), 0u32..64)
                .prop_map(|(file, blocks)| JournalEntry::Deleted { file, blocks }),
            any::<u64>().prop_map(|number| JournalEntry::Incarnation { number }),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(100))]

        /// Every journal entry reads back as written; a journal damaged
        /// anywhere (a byte changed, the file cut) reads back or is refused
        /// naming the line, never a panic, and a cut last line is skipped.
        #[test]
        fn journal_entries_round_trip_and_damage_is_named(
            entries in proptest::collection::vec(entry(), 1..6),
            flip in proptest::prelude::any::<(proptest::sample::Index, u8)>(),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("journal.jsonl");
            append(&path, &entries).unwrap();
            let back = read(&path).unwrap();
            proptest::prop_assert_eq!(
                serde_json::to_string(&back).unwrap(),
                serde_json::to_string(&entries).unwrap()
            );
            let mut bytes = std::fs::read(&path).unwrap();
            let i = flip.0.index(bytes.len());
            bytes[i] = flip.1;
            bytes.truncate(cut.index(bytes.len()) + 1);
            std::fs::write(&path, &bytes).unwrap();
            if let Err(e) = read(&path) {
                proptest::prop_assert!(e.to_string().contains(": line "), "{}", e);
            }
        }
    }

    /// Folds a generated entry's ids onto a small cluster (jobs 1-3, tasks
    /// 0-3, attempts 0-2, workers w0 and w1), so that random journals name
    /// the same jobs, tasks and workers again and again.
    fn folded(e: &JournalEntry) -> JournalEntry {
        fn walk(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, x) in m.iter_mut() {
                        match (k.as_str(), x.as_u64(), x.as_str()) {
                            ("job", Some(n), _) => *x = (n % 3 + 1).into(),
                            ("index" | "task", Some(n), _) => *x = (n % 4).into(),
                            ("attempt", Some(n), _) => *x = (n % 3).into(),
                            ("worker" | "source", _, Some(s)) => {
                                *x = format!("w{}", s.len() % 2).into()
                            }
                            _ => walk(x),
                        }
                    }
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
                _ => {}
            }
        }
        let mut v = serde_json::to_value(e).unwrap();
        walk(&mut v);
        serde_json::from_value(v).unwrap_or_else(|_| e.clone())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// A restarted master replays any journal, then takes registrations,
        /// heartbeats and liveness checks, without a panic.
        #[test]
        fn any_journal_replays_without_a_panic(
            entries in proptest::collection::vec(entry(), 0..16),
            running in proptest::collection::vec(common::strategies::attempt_id(), 0..4),
        ) {
            let entries: Vec<JournalEntry> = entries.iter().map(folded).collect();
            let mut m = Master::new(crate::state::tests::settings(2, 2));
            let clock = m.restore(entries, 2_000_000);
            for w in 0..2u32 {
                let running = running.iter().map(|a| {
                    let mut a = *a;
                    a.task.job = JobId(a.task.job.0 % 3 + 1);
                    a.task.index %= 4;
                    a.attempt %= 3;
                    a
                }).collect();
                let _ = m.register(clock, common::wire::RegisterRequest {
                    name: format!("w{w}"),
                    addr: format!("http://w{w}"),
                    slots: 2,
                    blocks: Vec::new(),
                    out_of_band_heartbeat: false,
                    running,
                    map_outputs: Vec::new(),
                });
            }
            m.check_workers(clock + 5_000);
            let _ = m.reports();
        }
    }
}
