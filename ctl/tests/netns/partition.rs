//! The partition test's helpers: its inputs at their factor, its outputs
//! against coreutils', the stale reduce's wait, and the master's log on a
//! failure.

use std::path::{Path, PathBuf};

/// On a failure, prints what the master logged of workers, replicas and
/// jobs (the cluster's folder goes with the test): enough to tell a lost
/// replica's story from CI's output alone.
pub(super) struct LogsOnPanic(pub(super) PathBuf);
impl Drop for LogsOnPanic {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let Some(text) = find_log(&self.0, "master").and_then(|l| std::fs::read_to_string(l).ok())
        else {
            return;
        };
        let keys = [
            "lost",
            "registered",
            "trimming",
            "re-replicat",
            "replica",
            "failed",
            "submitted",
            "succeeded",
            "refused",
        ];
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| keys.iter().any(|k| l.contains(k)))
            .collect();
        eprintln!("--- the master's log, workers, replicas and jobs (last 300 such lines):");
        for l in &lines[lines.len().saturating_sub(300)..] {
            eprintln!("{l}");
        }
    }
}

/// `<name>.log` somewhere under `dir`.
pub(super) fn find_log(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(found) = find_log(&p, name) {
                return Some(found);
            }
        } else if p.file_name().and_then(|n| n.to_str()) == Some(&format!("{name}.log")) {
            return Some(p);
        }
    }
    None
}

/// Waits (up to 60 s) until every block of both inputs has exactly its
/// two live replicas: none missing, and none above the factor (a worker
/// back from the last round brings excess replicas the master then trims;
/// a round started then runs among copies and trims still in flight).
pub(super) async fn inputs_fully_replicated(
    client: &ctl::ops::client::MasterClient,
    round: common::wire::TaskKind,
) {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(60);
    for name in ["words", "recs"] {
        loop {
            let info = client.file(name).await.unwrap();
            let off: Vec<usize> = (0..info.replicas.len())
                .filter(|&i| info.replicas[i].len() != 2)
                .collect();
            if off.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{round:?}: {name}'s blocks {off:?} still off their two replicas after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The output of this round's job equals coreutils'.
pub(super) async fn output_is_coreutils(
    client: &ctl::ops::client::MasterClient,
    round: common::wire::TaskKind,
    output: &str,
) {
    use ctl::ops::{files, verify};
    let got = files::read_file(client, output).await.unwrap();
    match round {
        common::wire::TaskKind::Map => {
            let input = files::read_file(client, "words").await.unwrap();
            assert_eq!(
                verify::wordcount_pairs(&got).unwrap(),
                verify::wordcount_reference(&input).unwrap(),
                "wordcount output differs from coreutils'"
            );
        }
        common::wire::TaskKind::Reduce => {
            let input = files::read_file(client, "recs").await.unwrap();
            assert!(
                got == verify::sort_reference(&input).unwrap(),
                "sort output differs from LC_ALL=C sort"
            );
        }
    }
}

/// The job succeeded without the cut `victim`: its output is deleted at
/// once, then the victim's stale reduce either reaches its commit and
/// waits there (its log says so; the usual case) or, slower than the job,
/// finds the map outputs it still needed gone with the job (its fetch
/// fails). Meanwhile, and for as long again as its replica's upload could
/// have lasted, the deleted file stays deleted. Only what the victim
/// logged from `log_from` (bytes, taken before the cut) counts.
pub(super) async fn stale_reduce_waits_to_commit(
    client: &ctl::ops::client::MasterClient,
    output: &str,
    logs: &Path,
    (victim, log_from): (&str, usize),
) {
    use std::time::{Duration, Instant};
    client.delete_file(output).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.file_gone(output).await.unwrap() {
        assert!(Instant::now() < deadline, "{output} never went");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ends = [
        "output commit not granted yet",
        "reduce could not fetch map output",
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    let seen = loop {
        assert!(
            !listed(client, output).await,
            "the deleted {output} came back while {victim} was cut off"
        );
        let log = find_log(logs, victim).unwrap_or_else(|| panic!("no log of {victim}"));
        let text = std::fs::read(&log).unwrap();
        let text = String::from_utf8_lossy(text.get(log_from..).unwrap_or_default());
        if let Some(end) = ends.iter().find(|e| text.contains(*e)) {
            break end;
        }
        assert!(
            Instant::now() < deadline,
            "{victim}'s stale reduce neither asked to commit nor failed ({})",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!("{victim}'s stale reduce: {seen}");
    // Past the longest its output upload can wait without moving
    // (PEER_READ_TIMEOUT, 10 s).
    let until = Instant::now() + Duration::from_secs(11);
    while Instant::now() < until {
        assert!(
            !listed(client, output).await,
            "the deleted {output} came back while {victim} was cut off"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the master lists file `name` (a deleted file that came back).
pub(super) async fn listed(client: &ctl::ops::client::MasterClient, name: &str) -> bool {
    client.files().await.unwrap().iter().any(|f| f.name == name)
}
