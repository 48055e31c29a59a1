use super::*;
use std::io::Write;
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

/// A journal with a header and 4 entries (lines 2-5), as a master
/// writes it at its start and then appends.
fn journal_of_four(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("journal.jsonl");
    rewrite(
        &path,
        &cluster_fingerprint("token-a"),
        None,
        &[submitted(1), submitted(2)],
    )
    .unwrap();
    append(&path, &[submitted(3), submitted(4)]).unwrap();
    path
}

#[test]
fn a_changed_byte_before_the_last_line_is_refused_naming_the_line_or_cut_off_when_recovering() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_of_four(dir.path());
    assert_eq!(read(&path).unwrap().len(), 4);
    let good = std::fs::read(&path).unwrap();
    // Line 3 (submitted(2)): its job number 2 becomes 7, still valid JSON.
    let start = good
        .split(|&b| b == b'\n')
        .take(2)
        .map(|l| l.len() + 1)
        .sum::<usize>();
    let mut bad = good.clone();
    let at = start + bad[start..].iter().position(|&b| b == b'2').unwrap();
    bad[at] = b'7';
    std::fs::write(&path, &bad).unwrap();
    let e = read(&path).unwrap_err().to_string();
    assert!(e.contains("line 3: checksum mismatch"), "{e}");
    assert!(
        e.contains("the 1 entries before it are intact") && e.contains("--journal-recover"),
        "{e}"
    );
    // Recovering keeps entry 1, drops lines 3-5 and keeps the file aside.
    let r = read_with(&path, Damage::KeepIntact).unwrap();
    assert_eq!(r.entries.len(), 1);
    assert!(matches!(&r.entries[0], JournalEntry::Submitted { job, .. } if *job == JobId(1)));
    assert!(r.dropped[0].contains("dropped 3 lines"), "{:?}", r.dropped);
    assert_eq!(
        r.dropped_job_max,
        Some(7),
        "ids go on past the jobs the dropped lines name"
    );
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("journal.jsonl.damaged-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(dir.path().join(&aside[0])).unwrap(), bad);
    // A line lost (two lines run together) is found as well.
    let mut joined = good.clone();
    joined[start - 1] = b' ';
    std::fs::write(&path, &joined).unwrap();
    assert!(read(&path).unwrap_err().to_string().contains("line 2:"));
    // A changed header is damage too, not another cluster.
    let mut header = good.clone();
    header[5] ^= 0x01;
    std::fs::write(&path, &header).unwrap();
    assert!(read(&path).unwrap_err().to_string().contains("line 1:"));
}

#[test]
fn a_last_line_cut_short_is_skipped_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_of_four(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 7); // the checksum and newline of entry 4
    std::fs::write(&path, &bytes).unwrap();
    let r = read_with(&path, Damage::Refuse).unwrap();
    assert_eq!(r.entries.len(), 3);
    assert!(
        r.dropped[0].starts_with("line 5: cut short"),
        "{:?}",
        r.dropped
    );
}

#[test]
fn a_journal_of_another_cluster_is_refused_and_one_of_an_earlier_version_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_of_four(dir.path());
    let r = read_with(&path, Damage::Refuse).unwrap();
    check_cluster(&path, &r, "token-a", None).unwrap();
    let e = check_cluster(&path, &r, "token-b", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("another cluster"), "{e}");
    assert!(
        e.contains(&cluster_fingerprint("token-a")) && e.contains(&cluster_fingerprint("token-b")),
        "{e}"
    );
    assert!(
        !e.contains("token-a"),
        "the journal and its errors do not hold the token: {e}"
    );
    // Written before headers and checksums: JSON lines alone.
    let old: String = [submitted(1), submitted(2)]
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(&path, old).unwrap();
    let r = read_with(&path, Damage::Refuse).unwrap();
    assert_eq!((r.entries.len(), r.cluster.as_deref()), (2, None));
    check_cluster(&path, &r, "token-b", None).unwrap();
}

#[test]
fn a_journal_written_under_another_tls_authority_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let fp = cluster_fingerprint("token-a");
    // Written with TLS off: a master with TLS on takes it.
    rewrite(&path, &fp, None, &[submitted(1)]).unwrap();
    let r = read_with(&path, Damage::Refuse).unwrap();
    check_cluster(&path, &r, "token-a", Some("aaaa")).unwrap();
    // Written under authority aaaa: the same token under bbbb is refused,
    // naming both; under aaaa, or with TLS off, it replays.
    rewrite(&path, &fp, Some("aaaa"), &r.entries).unwrap();
    let r = read_with(&path, Damage::Refuse).unwrap();
    assert_eq!((r.entries.len(), r.authority.as_deref()), (1, Some("aaaa")));
    check_cluster(&path, &r, "token-a", Some("aaaa")).unwrap();
    check_cluster(&path, &r, "token-a", None).unwrap();
    let e = check_cluster(&path, &r, "token-a", Some("bbbb"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("another TLS authority") && e.contains("aaaa") && e.contains("bbbb"),
        "{e}"
    );
}

#[test]
fn a_disk_that_fills_while_appending_leaves_the_journal_whole_and_the_entries_go_out_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_of_four(dir.path());
    let len = std::fs::metadata(&path).unwrap().len();
    let e = file::append_within(&path, &[submitted(5), submitted(6)], Some(40)).unwrap_err();
    assert!(
        format!("{e:#}").contains("no space left on device"),
        "{e:#}"
    );
    assert!(format!("{e:#}").contains("cut back"), "{e:#}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        len,
        "no half line is left"
    );
    assert_eq!(read(&path).unwrap().len(), 4);
    // Space again: the held entries are written, and later appends follow whole lines.
    append(&path, &[submitted(5), submitted(6)]).unwrap();
    append(&path, &[submitted(7)]).unwrap();
    assert_eq!(read(&path).unwrap().len(), 7);
    // The journal's queue puts held entries back before newer ones.
    let mut q = Journal::default();
    q.push(submitted(9));
    q.requeue(vec![submitted(7), submitted(8)]);
    let jobs: Vec<_> = q
        .take()
        .iter()
        .map(|e| match e {
            JournalEntry::Submitted { job, .. } => job.0,
            _ => 0,
        })
        .collect();
    assert_eq!(jobs, [7, 8, 9]);
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
    let (kept, retired) = compacted(&entries, 10);
    assert!(retired.is_empty());
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
    rewrite(&path, "c", None, &kept).unwrap();
    assert_eq!(read(&path).unwrap().len(), 4);
    assert!(!dir.path().join("journal.jsonl.new").exists());
}

/// A settled generation outlives its job's entries while its file lives,
/// and goes with a deletion of the file (not with one before it).
#[test]
fn compaction_keeps_a_settled_generation_until_its_file_is_deleted() {
    let settled = |file: &str, generation: u64| JournalEntry::Settled {
        file: file.into(),
        index: 0,
        generation,
    };
    let deleted = |file: &str| JournalEntry::Deleted {
        file: file.into(),
        blocks: 1,
        unix_ms: 0,
    };
    let entries = vec![
        settled("a", 1),
        settled("b", 2),
        deleted("a"),
        deleted("b"),
        settled("b", 3),
        settled("c", 4),
    ];
    let (kept, _) = compacted(&entries, 10);
    let settled_kept: Vec<u64> = kept
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Settled { generation, .. } => Some(*generation),
            _ => None,
        })
        .collect();
    assert_eq!(settled_kept, [3, 4]);
    assert_eq!(kept.len(), 4, "both deletions stay");
}

/// The journal keeps the ends of the `retained` newest ended jobs; the
/// older reports go to its history, so what a restart replays stays
/// bounded (a master restarted a dozen times over a thousand jobs grew its
/// memory at rest by 20 MB replaying every report).
#[test]
fn compaction_moves_the_reports_of_retired_jobs_to_the_history() {
    let ended = |job: u32| JournalEntry::Ended {
        report: crate::state::jobs::unstarted_report(
            JobId(job),
            format!("j{job}"),
            "hadoop".into(),
            0,
            &JobSubmit::new(Workload::InputSink, "f"),
            "x".into(),
        ),
    };
    // Job 3 ends before job 2; job 4 still runs.
    let entries = vec![
        submitted(1),
        ended(1),
        submitted(2),
        submitted(3),
        ended(3),
        submitted(4),
        ended(2),
    ];
    let (kept, retired) = compacted(&entries, 2);
    let ends: Vec<u32> = kept
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Ended { report } => Some(report.job.0),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [3, 2], "the two highest ids, in their order");
    let submitted: Vec<JobId> = kept
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Submitted { job, .. } => Some(*job),
            _ => None,
        })
        .collect();
    assert_eq!(submitted, [JobId(4)], "the job still running");
    assert_eq!(retired.len(), 1);
    assert_eq!(retired[0].job, JobId(1));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    append_history(&path, &retired).unwrap();
    append_history(&path, &[]).unwrap();
    let text = std::fs::read_to_string(history_path(&path)).unwrap();
    let back: Vec<JobReport> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].name, "j1");
    // Compacting the compacted journal retires nothing more.
    let (again, none) = compacted(&kept, 2);
    assert_eq!(again.len(), kept.len());
    assert!(none.is_empty());
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
        (st::attempt_id(), st::text(), st::task_record()).prop_map(|(attempt, error, record)| {
            JournalEntry::Failed {
                attempt,
                error,
                record,
            }
        }),
        (st::attempt_id(), proptest::option::of(st::task_record()))
            .prop_map(|(attempt, record)| JournalEntry::Uncounted { attempt, record }),
        (st::job_id(), lost).prop_map(|(job, lost)| JournalEntry::OutputsLost { job, lost }),
        st::job_report().prop_map(|report| JournalEntry::Ended { report }),
        (st::name(), any::<u32>())
            .prop_map(|(file, replication)| JournalEntry::Replication { file, replication }),
        // A deleted file's blocks are each a pending deletion per worker:
        // kept to what a test can hold (up to 1,000,000 are legal).
        (st::name(), 0u32..64).prop_map(|(file, blocks)| JournalEntry::Deleted {
            file,
            blocks,
            unix_ms: 0,
        }),
        any::<u64>().prop_map(|number| JournalEntry::Incarnation { number }),
        (st::name(), any::<u32>(), any::<u64>()).prop_map(|(file, index, generation)| {
            JournalEntry::Settled {
                file,
                index,
                generation,
            }
        }),
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
        // Checksums: what reads back is a prefix of what was written,
        // and anything left out is said; else the read names the line.
        match read_with(&path, Damage::Refuse) {
            Ok(r) => {
                let back = serde_json::to_value(&r.entries).unwrap();
                let all = serde_json::to_value(&entries).unwrap();
                let n = r.entries.len();
                proptest::prop_assert_eq!(&back.as_array().unwrap()[..], &all.as_array().unwrap()[..n]);
                // A cut just after a line's newline leaves a shorter
                // journal of whole lines, which is nothing to say.
                let whole_lines = bytes.last() == Some(&b'\n')
                    && n == bytes.iter().filter(|&&b| b == b'\n').count();
                proptest::prop_assert!(
                    n == entries.len() || !r.dropped.is_empty() || whole_lines,
                    "entries lost unsaid"
                );
            }
            Err(e) => proptest::prop_assert!(e.to_string().contains(": line "), "{}", e),
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
        let mut m = crate::state::Master::new(crate::state::tests::settings(2, 2));
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
                protocol: common::wire::PROTOCOL,
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
