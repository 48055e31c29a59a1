//! Speculative execution of a reduce on a real local cluster: 4 workers of
//! 2 slots that hold the data and run maps and reduces, and a fifth that
//! runs only reduces with its disk and NIC at a tenth of the others'. A
//! 16-map sort with 5 reduces puts one reduce on each worker (Hadoop's
//! spread), so the fifth's reduce fetches, writes and sends its 3.2 MB ten
//! times slower than its siblings. The same job runs twice on the same
//! data, without speculation and with it: with it, a fast worker's free
//! slot runs a backup of the slow reduce, which wins; the slow attempt is
//! killed, and the output equals coreutils' sort both times.

use common::config::ClusterConfig;
use common::wire::{JobReport, JobState, JobSubmit, TaskKind};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::{files, local, verify};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workloads::Workload;

const TOKEN: &str = "spec-reduce-token";
/// Every worker's emulated disk, MB/s, and NIC, Mbit/s; the slow one's are
/// a tenth of these.
const DISK_MBS: f64 = 4.0;
const NIC_MBPS: f64 = 32.0;
const BLOCKS: u32 = 16;
const BLOCK_BYTES: u64 = 1_000_000;
const REDUCES: u32 = 5;

/// The cluster.toml of one run: the base file with the slow reduce-only
/// worker's keys (the last [[worker]] table, w5's) and speculation's.
fn variant(dir: &Path, base: &str, speculate: bool) -> ClusterConfig {
    let mut t = base.to_owned();
    t += &format!(
        "role = \"reduce\"\ndisk_mbs = {}\nnic_mbps = {}\n",
        DISK_MBS / 10.0,
        NIC_MBPS / 10.0
    );
    if speculate {
        t += "\n[speculation]\nenabled = true\n";
        t = t.replacen("[master]\n", "[master]\ndecisions = true\n", 1);
    }
    let path = dir.join("cluster.toml");
    std::fs::write(&path, t).unwrap();
    ClusterConfig::load(&path).unwrap()
}

struct Stop(PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = local::down(&self.0);
    }
}

async fn sort(client: &MasterClient, output: &str) -> JobReport {
    let mut job = JobSubmit::new(Workload::Sort, "records");
    job.reduces = Some(REDUCES);
    job.output = Some(output.into());
    let id = client.submit(&job).await.unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!(r.reduces_done, REDUCES, "each reduce counted once: {r:?}");
    r
}

fn jct_s(r: &JobReport) -> f64 {
    r.jct_ms.expect("a finished job") as f64 / 1000.0
}

/// The workers that ran a successful reduce attempt.
fn reduce_workers(r: &JobReport) -> Vec<String> {
    let mut w: Vec<String> = r
        .attempts
        .iter()
        .filter(|a| a.kind == TaskKind::Reduce && a.ok)
        .map(|a| a.worker.clone())
        .collect();
    w.sort();
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speculation_backs_up_a_slow_reduce() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = local::write_loopback_config(
        dir.path(),
        TOKEN,
        5,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 3000\nseed = 7",
        &format!("slots = 2\ndisk_mbs = {DISK_MBS}\nnic_mbps = {NIC_MBPS}"),
    )
    .unwrap();
    let base = std::fs::read_to_string(&cfg.path).unwrap();
    let run = local::run_dir(&cfg);
    let _stop = Stop(run.clone());
    let client = MasterClient::new(cfg.master_url(), TOKEN);

    let mut runs = Vec::new();
    let mut want = Vec::new();
    for (speculate, output) in [(false, "sorted-slow"), (true, "sorted-spec")] {
        let cfg = variant(dir.path(), &base, speculate);
        local::start_with(&cfg, bin).await.unwrap();
        if !speculate {
            // w5 holds no data: every block is on w1..w4.
            loader::load(
                &client,
                &LoadSpec {
                    name: "records".into(),
                    source: Source::Generate {
                        kind: Generator::Records,
                        blocks: BLOCKS,
                    },
                    block_size: BLOCK_BYTES,
                    replication: 2,
                    seed: 3,
                    placement: Default::default(),
                },
            )
            .await
            .unwrap();
            let input = files::read_file(&client, "records").await.unwrap();
            want = verify::sort_reference(&input).unwrap();
        }
        let r = sort(&client, output).await;
        if speculate {
            let rec = client.decision_record().await.unwrap();
            let backups: Vec<_> = rec
                .decisions
                .iter()
                .filter(|d| d.rule == sched::decision::Rule::Backup)
                .collect();
            assert_eq!(backups.len() as u32, r.backups, "a record row per backup");
            assert!(
                backups
                    .iter()
                    .any(|d| d.kind == sched::decision::Kind::Reduce),
                "a reduce backup: {backups:?}"
            );
            let again = ctl::ops::report::recheck(&rec).unwrap_or_else(|e| panic!("{e:#}"));
            assert_eq!(again.decisions, rec.decisions.len());
            // The loser was killed: w5 runs nothing of the finished job.
            let t0 = Instant::now();
            loop {
                let w = client.workers().await.unwrap();
                let w5 = w.iter().find(|w| w.name == "w5").expect("w5");
                if (w5.running, w5.free_slots) == (0, 2) {
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(3),
                    "w5 still runs the job's attempts: {} running, {} free",
                    w5.running,
                    w5.free_slots
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let out = files::read_file(&client, output).await.unwrap();
        assert!(out == want, "{output} differs from coreutils' sort");
        runs.push(r);
        local::down(&run).unwrap();
    }
    let (slow, spec) = (&runs[0], &runs[1]);
    if std::env::var_os("SPEC_DEBUG").is_some() {
        for r in [slow, spec] {
            eprintln!("{}", ctl::ops::report::job_report(r));
        }
    }
    eprintln!(
        "JCT with w5's reduce at a tenth: {:.2} s without speculation, {:.2} s with it ({:.2}x; {} backups, {} won)",
        jct_s(slow),
        jct_s(spec),
        jct_s(spec) / jct_s(slow),
        spec.backups,
        spec.backups_won
    );
    // Without speculation w5 ran one reduce to the end; with it, w5's
    // reduce lost to a backup and was killed.
    assert_eq!(slow.backups, 0);
    assert!(reduce_workers(slow).contains(&"w5".to_owned()), "{slow:?}");
    assert!(!reduce_workers(spec).contains(&"w5".to_owned()), "{spec:?}");
    let killed: Vec<_> = spec
        .attempts
        .iter()
        .filter(|a| a.kind == TaskKind::Reduce && a.worker == "w5" && !a.ok)
        .collect();
    assert!(
        killed.iter().any(|a| a
            .error
            .as_deref()
            .is_some_and(|e| e.contains("finished first"))),
        "{killed:?}"
    );
    assert!(spec.backups_won >= 1, "{spec:?}");
    assert!(
        jct_s(spec) * 2.0 <= jct_s(slow),
        "with speculation the slow reduce no longer holds the job"
    );
}
