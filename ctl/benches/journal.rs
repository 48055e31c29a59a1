//! `make bench`, the master's job journal: what its checksums and fsyncs
//! cost, side by side in one run on this disk. Appends N task entries one
//! per call (as requests produce them: written, not fsynced) and job
//! entries one per call (each fsynced: a job is answered only once it is on
//! disk), in the journal's format (JSON, a tab, the line's CRC32C) and, as
//! the reference, the same JSON lines written alone with the same calls.
//! Prints microseconds per append and the ratios.

use common::wire::JobSubmit;
use common::{AttemptId, JobId, TaskRef};
use master::state::journal::{self, JournalEntry};
use std::io::Write;
use std::time::Instant;

fn launched(i: u32) -> JournalEntry {
    JournalEntry::Launched {
        attempt: AttemptId {
            task: TaskRef {
                job: JobId(1 + i / 1000),
                index: i % 1000,
            },
            attempt: 0,
        },
        worker: format!("w{}", i % 64),
        source: format!("w{}", (i * 7) % 64),
    }
}

fn submitted(i: u32) -> JournalEntry {
    JournalEntry::Submitted {
        job: JobId(i),
        name: format!("job-{i}"),
        scheduler: "delay".into(),
        submit_unix_ms: 1_800_000_000_000,
        spec: JobSubmit::new(workloads::Workload::Wordcount, "input"),
        blocks: (0..64)
            .map(|b| (common::BlockId::for_file("input", b).unwrap(), 64 << 20))
            .collect(),
    }
}

/// The reference: the same JSON lines, appended with the same open and
/// write per call, fsynced where `sync`.
fn plain_append(path: &std::path::Path, e: &JournalEntry, sync: bool) {
    let mut buf = serde_json::to_vec(e).unwrap();
    buf.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(&buf).unwrap();
    if sync {
        f.sync_data().unwrap();
    }
}

fn per_append_us(n: u32, mut f: impl FnMut(u32)) -> f64 {
    let t = Instant::now();
    for i in 0..n {
        f(i);
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

fn main() {
    let dir =
        tempfile::tempdir_in(std::env::var("JOURNAL_BENCH_DIR").unwrap_or_else(|_| ".".into()))
            .unwrap();
    let tasks = 20_000;
    let jobs = 300;
    let ours = dir.path().join("journal.jsonl");
    let plain = dir.path().join("plain.jsonl");
    journal::rewrite(&ours, &journal::cluster_fingerprint("bench"), None, &[]).unwrap();
    let task_ours = per_append_us(tasks, |i| {
        journal::append(&ours, &[launched(i)]).unwrap();
    });
    let task_plain = per_append_us(tasks, |i| plain_append(&plain, &launched(i), false));
    let job_ours = per_append_us(jobs, |i| {
        journal::append(&ours, &[submitted(i)]).unwrap();
    });
    let job_plain = per_append_us(jobs, |i| plain_append(&plain, &submitted(i), true));
    let job_unsynced = per_append_us(jobs, |i| plain_append(&plain, &submitted(i), false));
    let t = Instant::now();
    let back = journal::read(&ours).unwrap();
    let read_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(back.len(), (tasks + jobs) as usize);
    println!("journal bench ({} on this disk):", dir.path().display());
    println!(
        "  task entry, written:        {task_ours:8.1} us per append; plain JSON line {task_plain:8.1} us ({:.2}x)",
        task_ours / task_plain
    );
    println!(
        "  job entry, fsynced:         {job_ours:8.1} us per append; plain JSON line fsynced {job_plain:8.1} us ({:.2}x)",
        job_ours / job_plain
    );
    println!(
        "  the fsync's cost:           a fsynced job entry is {:.1}x one not fsynced ({job_unsynced:.1} us)",
        job_plain / job_unsynced
    );
    println!(
        "  replay with checksums:      {} entries in {read_ms:.1} ms",
        back.len()
    );
    let rec = common::bench::record;
    rec(
        "journal.task_us",
        "journal: a task entry appended with its CRC32C line checksum, us",
        task_ours,
        "us",
        "",
    );
    rec(
        "journal.checksum_ratio",
        "journal: task entry with checksum / the plain JSON line",
        task_ours / task_plain,
        "x",
        "",
    );
    rec(
        "journal.fsync_us",
        "journal: a fsynced job entry, us",
        job_plain,
        "us",
        "",
    );
    rec(
        "journal.fsync_ratio",
        "journal: a fsynced job entry / one not fsynced",
        job_plain / job_unsynced,
        "x",
        "",
    );
    rec(
        "journal.replay_ms",
        &format!(
            "journal: replay of {} entries with checksums, ms",
            back.len()
        ),
        read_ms,
        "ms",
        "",
    );
}
