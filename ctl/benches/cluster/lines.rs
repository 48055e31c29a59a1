//! The benches of sorts of files made outside the testbed against GNU
//! sort on the same file: 100-byte records (`sort`) and text lines of any
//! length (`sort-lines`).

use super::*;
use scale::{files_equal, gnu_sort, sync_disks, ROUNDS};

/// What one job and GNU sort did on the same loaded file.
struct Versus {
    /// The job's time, best of [`ROUNDS`].
    ours: f64,
    /// `LC_ALL=C sort -o`'s time, best of [`ROUNDS`].
    theirs: f64,
    /// The best round's reduces' input bytes.
    shares: Vec<u64>,
    /// When the best round's last map ended, s from its submission.
    maps_done: f64,
    /// The output equals GNU sort's, byte for byte.
    same: bool,
}

/// Runs `workload` on the file loaded as `name` (made from `input`), and
/// `LC_ALL=C sort -o` on `input`, [`ROUNDS`] times each; the output is
/// compared with GNU sort's. Deletes the loaded file, its output and the
/// local files after.
async fn versus_gnu_sort(
    cl: &support::LocalCluster,
    name: &str,
    input: &std::path::Path,
    workload: Workload,
    reduces: u32,
) -> Versus {
    // Best of `ROUNDS` on each side (the first job of the cluster also
    // pays for its buffers' first touch: see workloads::pool).
    let (mut ours, mut theirs) = (f64::MAX, f64::MAX);
    let (mut shares, mut maps_done) = (Vec::new(), 0.0);
    let reference = input.with_extension("gnu");
    // Each round writes its own output (a name still being deleted is
    // refused until its replicas are gone); the last one is checked.
    let out_of = |round: usize| format!("{name}-sorted-{round}");
    let mut out = out_of(0);
    for round in 0..ROUNDS {
        if round > 0 {
            cl.client.delete_file(&out).await.unwrap();
            out = out_of(round);
        }
        let mut job = JobSubmit::new(workload, name);
        job.reduces = Some(reduces);
        job.output = Some(out.clone());
        // Neither side pays for the bench's own writes (the generated
        // file, the other side's output): both start with nothing dirty.
        sync_disks();
        let t = Instant::now();
        let id = cl.client.submit(&job).await.unwrap();
        let r = cl.client.wait_job(id).await.unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
        if secs < ours {
            ours = secs;
            shares = reduce_inputs(&r);
            maps_done = r
                .attempts
                .iter()
                .filter(|a| a.kind == common::wire::TaskKind::Map)
                .map(|a| a.end_ms)
                .max()
                .unwrap_or(0) as f64
                / 1e3;
        }
        theirs = theirs.min(gnu_sort(input, &reference));
    }
    let got = input.with_extension("ours");
    dump_file(cl, &out, &got).await;
    let same = files_equal(&got, &reference);
    for p in [input, &reference, &got] {
        let _ = std::fs::remove_file(p);
    }
    cl.client.delete_file(name).await.unwrap();
    cl.client.delete_file(&out).await.unwrap();
    Versus {
        ours,
        theirs,
        shares,
        maps_done,
        same,
    }
}

/// Prints and records one [`Versus`] as `id`.* ("what: ..."), the ratio
/// against `target`.
fn report(id: &str, what: &str, label: &str, v: &Versus, target: f64, reduces: u32) {
    let largest = largest_share(&v.shares);
    println!(
        "   {:<13} job {:.2} s (maps done at {:.2} s), `LC_ALL=C sort -o` {:.2} s, best of {ROUNDS} each: ratio {:.2}; largest reduce's share {:.3} ({}); output {}",
        label,
        v.ours,
        v.maps_done,
        v.theirs,
        v.theirs / v.ours,
        largest,
        v.shares
            .iter()
            .map(|b| format!("{:.0} MB", *b as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(" / "),
        if v.same { "equal to GNU sort's" } else { "DIFFERS from GNU sort's" }
    );
    let rows: [(&str, String, f64, &str, String); 5] = [
        (
            "job_s",
            format!("job, best of {ROUNDS}"),
            v.ours,
            "s",
            String::new(),
        ),
        (
            "gnu_s",
            format!("`LC_ALL=C sort -o`, best of {ROUNDS}"),
            v.theirs,
            "s",
            String::new(),
        ),
        (
            "ratio",
            "GNU sort's time / the job's".into(),
            v.theirs / v.ours,
            "x",
            format!(">= {target}"),
        ),
        (
            "largest_reduce",
            "largest reduce's share".into(),
            largest,
            "share",
            format!("<= {:.3}", 1.1 / reduces as f64),
        ),
        (
            "equal",
            "output equal to GNU sort's (1 yes)".into(),
            f64::from(u8::from(v.same)),
            "",
            ">= 1".into(),
        ),
    ];
    for (field, said, value, unit, want) in rows {
        record(
            &format!("{id}.{field}"),
            &format!("{what}: {said}"),
            value,
            unit,
            &want,
        );
    }
    assert!(v.same, "the {what} differs from GNU sort's");
}

/// The bytes a bench sorts: `BENCH_LINES_MIB` MiB (1 GiB unless said).
fn bench_bytes() -> u64 {
    std::env::var("BENCH_LINES_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1024)
        << 20
}

/// Section 8: sort on 1 GiB of lines made outside the testbed (gensort's
/// ASCII shape, four key distributions) on 2 workers x 1 slot, 64 MiB
/// blocks, 2 reduces, against `LC_ALL=C sort -o` on the same file; the
/// output checked equal to GNU sort's, and the largest reduce's share of
/// the shuffled bytes (balanced: 0.50).
pub(super) async fn anyones_records_bench() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 100).await;
    let bytes = bench_bytes();
    let reduces = 2u32;
    println!(
        "8. sort of {} MiB of gensort-shaped lines made outside the testbed, 2 workers x 1 slot, 64 MiB blocks, replication 2, {reduces} reduces, vs `LC_ALL=C sort -o` (target ratio >= 2.5; largest reduce's share target <= {:.2})",
        bytes >> 20,
        1.1 / reduces as f64
    );
    // `BENCH_LINES_KEYS=uniform|few-distinct|shared-prefix|zipf` runs one.
    let only = std::env::var("BENCH_LINES_KEYS").ok();
    for keys in Keys::ALL {
        if only.as_deref().is_some_and(|o| o != keys.name()) {
            continue;
        }
        let input = dir.path().join(format!("{}.lines", keys.name()));
        lines::write_file(&input, keys, bytes, 17).unwrap();
        let name = format!("lines-{}", keys.name());
        load(&cl, &name, Source::File(input.clone()), 64 << 20, 2).await;
        let v = versus_gnu_sort(&cl, &name, &input, Workload::Sort, reduces).await;
        let what = format!(
            "sort of {} MiB of gensort-shaped lines, {} keys",
            bytes >> 20,
            keys.name()
        );
        report(
            &format!("lines.{}", keys.name()),
            &what,
            keys.name(),
            &v,
            2.5,
            reduces,
        );
    }
}

/// This repository's documents, repeated to about `bytes` (every line
/// many times).
fn write_docs_file(path: &std::path::Path, bytes: u64) {
    let docs = crate::repo_docs::repo_docs();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = 0u64;
    while written < bytes {
        std::io::Write::write_all(&mut out, &docs).unwrap();
        written += docs.len() as u64;
    }
    std::io::Write::flush(&mut out).unwrap();
}

/// Section 10: `sort-lines` of 1 GiB of text lines of any length, 2
/// workers x 1 slot, 64 MiB blocks, 2 reduces, against `LC_ALL=C sort -o`
/// on the same file, output checked equal: prose-shaped lines of
/// dictionary words (sentences, 4% empty lines, paragraphs of kilobytes,
/// no final newline) and this repository's documents repeated.
pub(super) async fn text_lines_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 100).await;
    let bytes = bench_bytes();
    let reduces = 2u32;
    println!(
        "10. sort-lines of {} MiB of text lines of any length, 2 workers x 1 slot, 64 MiB blocks, replication 2, {reduces} reduces, vs `LC_ALL=C sort -o` (target ratio >= 3)",
        bytes >> 20,
    );
    // `BENCH_TEXT=prose-shaped|repo-docs` runs one.
    let only = std::env::var("BENCH_TEXT").ok();
    for text in ["prose-shaped", "repo-docs"] {
        if only.as_deref().is_some_and(|o| o != text) {
            continue;
        }
        let input = dir.path().join(format!("{text}.txt"));
        if text == "repo-docs" {
            write_docs_file(&input, bytes);
        } else {
            support::lines::write_prose_file(&input, bytes, 23).unwrap();
        }
        let name = format!("text-{text}");
        load(&cl, &name, Source::File(input.clone()), 64 << 20, 2).await;
        let v = versus_gnu_sort(&cl, &name, &input, Workload::SortLines, reduces).await;
        let what = format!("sort-lines of {} MiB of {text} text", bytes >> 20);
        report(&format!("text.{text}"), &what, text, &v, 3.0, reduces);
    }
}
