//! Speculative execution on a real local cluster: 4 workers of 2 slots,
//! replication 2, a 32-map wordcount, and one worker whose disk and NIC run
//! at a tenth of the others'. The same data and job run three times on the
//! same block placement (the cluster restarted between runs with another
//! cluster.toml): no slow worker, the slow worker without speculation, and
//! with it. Speculation brings the job back near the first run's JCT, the
//! losing attempts are killed (their worker's slots free at once), and the
//! output equals coreutils' each time.

use common::config::ClusterConfig;
use common::wire::{JobReport, JobState, JobSubmit};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::{files, local, verify};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workloads::Workload;

const TOKEN: &str = "spec-token";
/// Every worker's emulated disk, MB/s, and NIC, Mbit/s; the slow one's are
/// a tenth of these.
const DISK_MBS: f64 = 4.0;
const NIC_MBPS: f64 = 32.0;
const BLOCKS: u32 = 32;
const BLOCK_BYTES: u64 = 1_000_000;

/// The cluster.toml of one run: the base file with the slow worker's and
/// speculation's keys added.
fn variant(dir: &Path, base: &str, slow: bool, speculate: bool) -> ClusterConfig {
    let mut t = base.to_owned();
    if slow {
        // The last [[worker]] table is w4's.
        t += &format!(
            "disk_mbs = {}\nnic_mbps = {}\n",
            DISK_MBS / 10.0,
            NIC_MBPS / 10.0
        );
    }
    if speculate {
        t += "\n[speculation]\nenabled = true\n";
        // The decision record, to run it through `sched` again.
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

async fn wordcount(client: &MasterClient, output: &str) -> JobReport {
    let mut job = JobSubmit::new(Workload::Wordcount, "text");
    job.reduces = Some(2);
    job.output = Some(output.into());
    let id = client.submit(&job).await.unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!(r.tasks_done, BLOCKS, "each map counted once: {r:?}");
    r
}

fn jct_s(r: &JobReport) -> f64 {
    r.jct_ms.expect("a finished job") as f64 / 1000.0
}

/// The slow worker's running attempts and free slots, as the master sees
/// them.
async fn slow_worker(client: &MasterClient) -> (usize, u32) {
    let w = client.workers().await.unwrap();
    let w4 = w.iter().find(|w| w.name == "w4").expect("w4");
    (w4.running, w4.free_slots)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speculation_rescues_a_job_from_a_slow_worker() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = local::write_loopback_config(
        dir.path(),
        TOKEN,
        4,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 3000\nseed = 7",
        &format!("slots = 2\ndisk_mbs = {DISK_MBS}\nnic_mbps = {NIC_MBPS}"),
    )
    .unwrap();
    let base = std::fs::read_to_string(&cfg.path).unwrap();
    let run = local::run_dir(&cfg);
    let _stop = Stop(run.clone());
    let client = MasterClient::new(cfg.master_url(), TOKEN);

    // 1. No slow worker: load the data, run the job.
    let cfg = variant(dir.path(), &base, false, false);
    local::start_with(&cfg, bin).await.unwrap();
    loader::load(
        &client,
        &LoadSpec {
            name: "text".into(),
            source: Source::Generate {
                kind: Generator::Text,
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
    let input = files::read_file(&client, "text").await.unwrap();
    let want = verify::wordcount_reference(&input).unwrap();
    let fast = wordcount(&client, "counts-fast").await;
    assert_eq!(fast.backups, 0, "speculation is off");

    // 2. w4 at a tenth, no speculation; 3. the same with speculation.
    let mut runs = Vec::new();
    for (speculate, output) in [(false, "counts-slow"), (true, "counts-spec")] {
        local::down(&run).unwrap();
        let cfg = variant(dir.path(), &base, true, speculate);
        local::start_with(&cfg, bin).await.unwrap();
        let r = wordcount(&client, output).await;
        if speculate {
            // The master's decisions, backups included, are what `sched`
            // decides again from the same inputs.
            let rec = client.decision_record().await.unwrap();
            let backups = rec
                .decisions
                .iter()
                .filter(|d| d.rule == sched::decision::Rule::Backup)
                .count();
            assert_eq!(backups as u32, r.backups, "a record row per backup");
            let again = ctl::ops::report::recheck(&rec).unwrap_or_else(|e| panic!("{e:#}"));
            assert_eq!(again.decisions, rec.decisions.len());
            // The losers were killed at once: w4 runs nothing of the
            // finished job and has its slots back.
            let t0 = Instant::now();
            while slow_worker(&client).await != (0, 2) {
                assert!(
                    t0.elapsed() < Duration::from_secs(3),
                    "w4 still runs the job's attempts: {:?}",
                    slow_worker(&client).await
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let out = files::read_file(&client, output).await.unwrap();
        assert_eq!(
            verify::wordcount_pairs(&out).unwrap(),
            want,
            "{output} differs from coreutils' counts"
        );
        runs.push(r);
    }
    let (slow, spec) = (&runs[0], &runs[1]);
    if std::env::var_os("SPEC_DEBUG").is_some() {
        for r in [&fast, slow, spec] {
            eprintln!("{}", ctl::ops::report::job_report(r));
        }
    }
    eprintln!(
        "JCT: no slow worker {:.2} s; w4 at a tenth: {:.2} s without speculation ({:.2}x), {:.2} s with it ({:.2}x; {} backups, {} won)",
        jct_s(&fast),
        jct_s(slow),
        jct_s(slow) / jct_s(&fast),
        jct_s(spec),
        jct_s(spec) / jct_s(&fast),
        spec.backups,
        spec.backups_won
    );
    assert_eq!(slow.backups, 0);
    assert!(spec.backups >= 1 && spec.backups_won >= 1, "{spec:?}");
    // Every backup (of a map, or of a reduce) left a killed attempt in the
    // report: the one that lost.
    let killed = spec
        .attempts
        .iter()
        .filter(|a| !a.ok)
        .filter(|a| {
            a.error
                .as_deref()
                .is_some_and(|e| e.contains("finished first"))
        })
        .count();
    assert_eq!(killed as u32, spec.backups, "{:?}", spec.attempts);
    assert!(
        jct_s(slow) > 2.0 * jct_s(&fast),
        "the slow worker holds the job's tail without speculation"
    );
    assert!(
        jct_s(spec) <= 1.5 * jct_s(&fast),
        "with speculation the job finishes near its time without the slow worker"
    );
}
