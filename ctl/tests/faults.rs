//! Faults injected into a real local cluster: the master and the workers are
//! processes started as `master up` starts them, with their block stores on
//! disk and their traffic over HTTP on loopback.

use common::config::ClusterConfig;
use common::wire::{JobState, JobSubmit, TaskKind};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::{files, local, verify};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use workloads::Workload;

mod tmpfs;
mod worker_memory;
use tmpfs::Tmpfs;

const TOKEN: &str = "fault-token";

/// A cluster of real processes in a temporary directory; stopped when the
/// test ends, passed or not.
struct Cluster {
    cfg: ClusterConfig,
    client: MasterClient,
    /// Where the `master` and `worker` binaries are.
    bin: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = local::down(&local::run_dir(&self.cfg));
    }
}

/// Starts `workers` workers and a master (see [`config`]).
async fn start(workers: usize, extra_worker_keys: &str) -> Cluster {
    start_keys(workers, "", extra_worker_keys).await
}

/// [`start`], with more `[cluster]` keys.
async fn start_keys(workers: usize, extra_cluster_keys: &str, extra_worker_keys: &str) -> Cluster {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), workers, extra_cluster_keys, extra_worker_keys);
    local::start_with(&cfg, bin).await.unwrap();
    let client = MasterClient::new(cfg.master_url(), TOKEN);
    Cluster {
        cfg,
        client,
        bin: bin.to_owned(),
        _dir: dir,
    }
}

/// Runs an input-sink job over `file`; it must succeed without a failed attempt.
async fn sink_ok(client: &MasterClient, file: &str) -> common::wire::JobReport {
    let id = client
        .submit(&JobSubmit::new(Workload::InputSink, file))
        .await
        .unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert!(r.attempts.iter().all(|a| a.ok), "{:?}", r.attempts);
    r
}

/// Writes a cluster.toml of `workers` workers into `dir` and loads it.
fn config(
    dir: &Path,
    workers: usize,
    extra_cluster_keys: &str,
    extra_worker_keys: &str,
) -> ClusterConfig {
    local::write_loopback_config(
        dir,
        TOKEN,
        workers,
        &format!("replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 2000\nmax_task_attempts = 4\nseed = 7\n{extra_cluster_keys}"),
        &format!("slots = 2\n{extra_worker_keys}"),
    )
    .unwrap()
}

/// Loads a generated file with replication 2.
async fn load(
    client: &MasterClient,
    name: &str,
    kind: Generator,
    blocks: u32,
    size: u64,
    seed: u64,
) {
    loader::load(
        client,
        &LoadSpec {
            name: name.into(),
            source: Source::Generate { kind, blocks },
            block_size: size,
            replication: 2,
            seed,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
}

fn kill9(pid: u32) {
    let ok = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -9 {pid}");
}

/// The worker processes' pids by name, from the launcher's record.
fn pids(cfg: &ClusterConfig) -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(local::run_dir(cfg).join("cluster.json")).unwrap();
    let procs: Vec<local::Proc> = serde_json::from_str(&text).unwrap();
    procs.into_iter().map(|p| (p.name, p.pid)).collect()
}

/// Whether process `pid` is a zombie child of this process (exited, not
/// waited for).
fn zombie_child(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S ppid ...": the fields after the last ')'.
    let rest: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    rest.first() == Some(&"Z") && rest.get(1) == Some(&std::process::id().to_string().as_str())
}

/// A process the launcher started that dies (killed here, or stopped by
/// `down`) is waited for: a long-lived runner, such as the experiment
/// runner with its cluster per run, collects no zombies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_that_end_leave_no_zombie() {
    let c = start(2, "").await;
    let procs = pids(&c.cfg);
    let (_, w1) = procs.iter().find(|(n, _)| n == "w1").cloned().unwrap();
    kill9(w1);
    let gone =
        |pid: u32| !zombie_child(pid) && !std::path::Path::new(&format!("/proc/{pid}")).exists();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(w1) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(w1), "killed worker {w1} is left as a zombie");
    local::down(&local::run_dir(&c.cfg)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while procs.iter().any(|(_, p)| !gone(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left: Vec<_> = procs.iter().filter(|(_, p)| !gone(*p)).collect();
    assert!(left.is_empty(), "left after down: {left:?}");
}

/// Kill -9 of a worker that keeps map outputs, while the sort's reduces
/// fetch them: the reduces report the outputs they cannot fetch, the master
/// runs those maps again from the surviving input replicas, the reduces
/// retry without a failure counted for the lost source, and the job's output
/// equals `LC_ALL=C sort` of its input. (Before, the reduces failed
/// `max_task_attempts` times against the dead worker and the job failed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_during_the_shuffle_costs_its_map_outputs_not_the_job() {
    // 16 Mbit/s NICs: each reduce takes seconds to fetch its 8 MB, so the
    // kill lands in the shuffle.
    let c = start(4, "nic_mbps = 16").await;
    let (cfg, client) = (&c.cfg, &c.client);
    load(client, "recs", Generator::Records, 16, 1_000_000, 5).await;
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(2);
    job.output = Some("sorted".into());
    let id = client.submit(&job).await.unwrap();

    // Wait for the shuffle: every map done, the reduces running.
    let deadline = Instant::now() + Duration::from_secs(60);
    let victim = loop {
        assert!(Instant::now() < deadline, "the reduces never started");
        let r = client.job(id, None).await.unwrap();
        assert_ne!(r.state, JobState::Failed, "{r:?}");
        if r.tasks_done == r.tasks {
            let workers = client.workers().await.unwrap();
            let reducing: usize = workers.iter().map(|w| w.running).sum();
            if reducing == 2 {
                // A worker with map output and no reduce.
                let r = client.job(id, None).await.unwrap();
                let v = workers
                    .iter()
                    .filter(|w| w.running == 0)
                    .find(|w| {
                        r.attempts
                            .iter()
                            .any(|a| a.ok && a.kind == TaskKind::Map && a.worker == w.name)
                    })
                    .expect("a mapper that runs no reduce")
                    .name
                    .clone();
                break v;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let pid = pids(cfg).into_iter().find(|(n, _)| *n == victim).unwrap().1;
    kill9(pid);

    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    let fetch_failures = r
        .attempts
        .iter()
        .filter(|a| {
            a.kind == TaskKind::Reduce
                && a.error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("fetch failed"))
        })
        .count();
    let maps_again = r
        .attempts
        .iter()
        .filter(|a| a.ok && a.kind == TaskKind::Map)
        .count()
        - r.tasks as usize;
    assert!(
        fetch_failures > 0 || maps_again > 0,
        "the kill hit the shuffle: {r:?}"
    );
    assert!(maps_again > 0, "the victim's outputs ran again: {r:?}");
    let input = files::read_file(client, "recs").await.unwrap();
    let output = files::read_file(client, "sorted").await.unwrap();
    assert_eq!(output.len(), input.len());
    assert!(
        output == verify::sort_reference(&input).unwrap(),
        "output differs from LC_ALL=C sort"
    );
}

/// One byte flipped in every replica a worker holds: the maps that read
/// them (locally, as the scheduler prefers) meet the checksum error, read
/// the block from the other replica within the same attempt and succeed;
/// the worker deletes each damaged replica it met, its next block report
/// drops it from the catalog, and re-replication copies the good one back.
/// (Before, the task failed against the same bad local copy until the job
/// failed, and the bad replica stayed listed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_replica_is_read_around_dropped_and_the_job_succeeds() {
    read_around_corrupt_replicas(Workload::InputSink).await;
}

/// The same with a sort, whose maps read a local block into one buffer
/// they keep: the good chunks before the flipped one are kept, the rest
/// comes from the other replica, and the output equals `LC_ALL=C sort`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sort_reads_around_a_corrupt_replica_into_the_buffer_it_keeps() {
    read_around_corrupt_replicas(Workload::SortLines).await;
}

async fn read_around_corrupt_replicas(workload: Workload) {
    // Two workers, every block on both; tasks last >= 0.5 s, so both
    // workers run maps of the job. Blocks of three 1 MiB checksum chunks,
    // the last one damaged: a map reads two good chunks before it.
    let c = start(2, "slot_rate_mbs = 6").await;
    let (cfg, client) = (&c.cfg, &c.client);
    load(client, "demo", Generator::Text, 8, 3_000_000, 9).await;
    let input = files::read_file(client, "demo").await.unwrap();
    let blocks_dir = cfg.worker_data_dir("w1").join("blocks");
    let mut flipped = 0;
    for e in std::fs::read_dir(&blocks_dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "blk") {
            let mut data = std::fs::read(&p).unwrap();
            let at = data.len() - 100;
            data[at] ^= 0x20;
            std::fs::write(&p, &data).unwrap();
            flipped += 1;
        }
    }
    assert_eq!(flipped, 8, "w1 holds a replica of every block");

    let mut job = JobSubmit::new(workload, "demo");
    if workload == Workload::SortLines {
        job.output = Some("sorted".into());
    }
    let id = client.submit(&job).await.unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert!(
        r.attempts.iter().all(|a| a.ok),
        "no attempt failed: {:?}",
        r.attempts
    );
    if workload == Workload::SortLines {
        let output = files::read_file(client, "sorted").await.unwrap();
        assert!(
            output == verify::sort_reference(&input).unwrap(),
            "output differs from LC_ALL=C sort"
        );
    }
    let read_on_w1 = r
        .attempts
        .iter()
        .filter(|a| a.worker == "w1" && a.kind == TaskKind::Map)
        .count();
    assert!(read_on_w1 > 0, "w1 ran maps: {r:?}");
    // Each replica w1 found damaged was deleted, reported, and copied
    // again from w2's good one: w1's file now equals w2's.
    let ids: Vec<String> = r
        .attempts
        .iter()
        .filter(|a| a.worker == "w1" && a.kind == TaskKind::Map)
        .map(|a| a.block.to_string())
        .collect();
    let w2_dir = cfg.worker_data_dir("w2").join("blocks");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let f = client.file("demo").await.unwrap();
        let repaired = ids.iter().all(|id| {
            let a = std::fs::read(blocks_dir.join(format!("{id}.blk")));
            let b = std::fs::read(w2_dir.join(format!("{id}.blk")));
            matches!((a, b), (Ok(a), Ok(b)) if a == b)
        });
        if repaired && f.under_replicated().is_empty() && f.replication == Some(2) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "w1's damaged replicas were not replaced: {f:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The file still reads in full, from good replicas only.
    sink_ok(client, "demo").await;
}

/// A map stuck in a read that never returns (w1's block files replaced by
/// FIFOs: `open` blocks as on a hung disk) while w1 keeps heartbeating: its
/// progress count stops, so after `task_timeout_ms` the master fails the
/// attempt, tells w1 to kill it (its slots come back), and runs the map
/// again from w2's replica; the job succeeds. (Before, the timeout counted
/// from the launch only, so a stuck task held its slot for the default 10
/// minutes; and a long task making progress would have been cut off at the
/// same mark.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_stuck_on_a_hung_disk_is_killed_and_reads_another_replica() {
    // Maps last >= 2 s (slot_rate_mbs = 0.5 over 1 MB), longer than the
    // 1.5 s timeout: only progress keeps them alive.
    let c = start_keys(2, "task_timeout_ms = 1500", "slot_rate_mbs = 0.5").await;
    let (cfg, client) = (&c.cfg, &c.client);
    load(client, "demo", Generator::Text, 6, 1_000_000, 5).await;
    let blocks_dir = cfg.worker_data_dir("w1").join("blocks");
    let mut fifos = Vec::new();
    for e in std::fs::read_dir(&blocks_dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "blk") {
            std::fs::remove_file(&p).unwrap();
            let ok = Command::new("mkfifo").arg(&p).status().unwrap().success();
            assert!(ok, "mkfifo {}", p.display());
            fifos.push(p);
        }
    }
    assert_eq!(fifos.len(), 6, "w1 holds a replica of every block");

    let id = client
        .submit(&JobSubmit::new(Workload::InputSink, "demo"))
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(60), client.wait_job(id))
        .await
        .expect("the job ends")
        .unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    let failed: Vec<_> = r.attempts.iter().filter(|a| !a.ok).collect();
    assert!(!failed.is_empty(), "w1 ran local maps that stalled: {r:?}");
    for a in &failed {
        assert_eq!(a.worker, "w1", "{a:?}");
        let e = a.error.as_deref().unwrap_or("");
        assert!(
            e.contains("no progress") && e.contains("task_timeout_ms"),
            "{a:?}"
        );
        // The map ran again, and not from w1's hung copy.
        let again = r
            .attempts
            .iter()
            .find(|b| b.ok && b.task == a.task)
            .expect("every task succeeded");
        assert_eq!(again.source, "w2", "{again:?}");
    }
    // Tasks that made progress outlived the timeout counted from launch.
    assert!(
        r.attempts
            .iter()
            .any(|a| a.ok && a.end_ms - a.start_ms > 1_600),
        "{r:?}"
    );
    // w1 stayed alive and killed its stuck attempts: both slots are free.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let workers = client.workers().await.unwrap();
        let w1 = workers.iter().find(|w| w.name == "w1").unwrap();
        assert!(w1.alive);
        if w1.free_slots == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "w1's slots stay held: {w1:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The hung reads return (a writer opens and closes each FIFO) and
    // their late results change nothing.
    for p in &fifos {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking: a FIFO nobody reads refuses at once (ENXIO).
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(p);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let again = client.job(id, None).await.unwrap();
    assert_eq!(again.state, JobState::Succeeded);
    assert_eq!(again.attempts.len(), r.attempts.len());
}

/// Kill -9 of a worker holding replicas: once it is declared lost, every
/// block it held is copied from its surviving replica to another worker
/// until the file is back at its factor, and the data still reads whole.
/// (Before, those blocks stayed at one replica for ever.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_workers_blocks_are_copied_back_to_the_replication_factor() {
    let c = start(4, "").await;
    let (cfg, client) = (&c.cfg, &c.client);
    load(client, "demo", Generator::Text, 12, 500_000, 4).await;
    let before = client.file("demo").await.unwrap();
    assert_eq!(before.replication, Some(2));
    let held: Vec<usize> = (0..12)
        .filter(|&i| before.replicas[i].iter().any(|w| w == "w3"))
        .collect();
    assert!(!held.is_empty(), "w3 holds replicas: {before:?}");
    let pid = pids(cfg).into_iter().find(|(n, _)| n == "w3").unwrap().1;
    kill9(pid);
    // Declared lost after 2 s; then copies at 2 per worker at a time.
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        let f = client.file("demo").await.unwrap();
        let back = f.under_replicated().is_empty()
            && f.replicas.iter().all(|r| !r.iter().any(|w| w == "w3"));
        if back {
            break f;
        }
        assert!(Instant::now() < deadline, "still under-replicated: {f:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for i in held {
        assert_eq!(after.replicas[i].len(), 2, "block {i}: {after:?}");
    }
    sink_ok(client, "demo").await;
}

/// The block scanner finds a flipped byte no task has read: the worker
/// deletes the replica, and re-replication copies a good one back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_block_scanner_finds_damage_before_any_task() {
    let c = start(2, "scrub_mbps = 50").await;
    let (cfg, client) = (&c.cfg, &c.client);
    load(client, "cold", Generator::Text, 4, 500_000, 3).await;
    let id = common::BlockId::for_file("cold", 2).unwrap();
    let bad = cfg
        .worker_data_dir("w1")
        .join("blocks")
        .join(format!("{id}.blk"));
    let good = cfg
        .worker_data_dir("w2")
        .join("blocks")
        .join(format!("{id}.blk"));
    let mut data = std::fs::read(&bad).unwrap();
    data[1234] ^= 0x01;
    std::fs::write(&bad, &data).unwrap();
    let w1 = client
        .workers()
        .await
        .unwrap()
        .into_iter()
        .find(|w| w.name == "w1")
        .unwrap();
    let http = common::http_client::plain();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status: serde_json::Value = http
            .get(format!("{}/status", w1.addr))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let f = client.file("cold").await.unwrap();
        let same = matches!(
            (std::fs::read(&bad), std::fs::read(&good)),
            (Ok(a), Ok(b)) if a == b
        );
        if status["scrub_found"] == 1 && same && f.under_replicated().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not found and repaired: {status} {f:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kill -9 of the master between jobs and while one runs: started again,
/// it lists every finished job with its report, never reuses an id, the
/// catalog comes back from the workers' block reports, and the running job
/// goes on (see the three `a_master_restart_during_*` tests). The CLI asked
/// for a report while the master is down retries until it is back, saying
/// so on stderr. (Before, a restarted master forgot every job and started
/// its ids again at 1; later it failed the running job.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_master_keeps_its_jobs_and_never_reuses_an_id() {
    // Tasks last >= 0.5 s, so the master dies with a job running.
    let c = start(2, "slot_rate_mbs = 1").await;
    let (cfg, client, bin) = (&c.cfg, &c.client, c.bin.as_path());
    load(client, "demo", Generator::Text, 4, 500_000, 2).await;
    let sink = || JobSubmit::new(Workload::InputSink, "demo");
    let a = client.submit(&sink()).await.unwrap();
    let ra = client.wait_job(a).await.unwrap();
    assert_eq!(ra.state, JobState::Succeeded);
    let b = client.submit(&sink()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(client.job(b, None).await.unwrap().state, JobState::Running);
    kill_master(cfg);
    // The CLI, asked while the master is down, waits for it.
    let cli = Command::new(bin.join("master"))
        .args(["--config"])
        .arg(&cfg.path)
        .args(["--retry-s", "60", "report", &b.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    local::restart_master(cfg, bin).unwrap();
    let out = tokio::task::spawn_blocking(move || cli.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the CLI gave up: {stderr}");
    assert!(
        stderr.contains("master unreachable") && stderr.contains("retrying"),
        "{stderr}"
    );
    // The workers find a master that does not know them and register again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(c) = client.cluster().await {
            if c.workers_alive == 2 && client.file("demo").await.is_ok_and(|f| f.complete) {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the cluster did not come back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = client.job(a, None).await.unwrap();
    assert_eq!(again.state, JobState::Succeeded);
    assert_eq!(again.attempts, ra.attempts, "the report is the one it was");
    let rb = client.wait_job(b).await.unwrap();
    assert_eq!(rb.state, JobState::Succeeded, "{rb:?}");
    assert_eq!(rb.master_restarts, 1);
    let maps_ok = rb.attempts.iter().filter(|x| x.ok).count();
    assert_eq!(
        maps_ok, rb.tasks as usize,
        "no finished map ran again: {rb:?}"
    );
    assert_eq!(client.jobs().await.unwrap().len(), 2);
    let c = client.submit(&sink()).await.unwrap();
    assert_eq!(c.to_string(), "job-3", "ids go on after a restart");
    assert_eq!(client.wait_job(c).await.unwrap().state, JobState::Succeeded);
}

fn kill_master(cfg: &ClusterConfig) {
    let pid = pids(cfg)
        .into_iter()
        .find(|(n, _)| n == "master")
        .unwrap()
        .1;
    kill9(pid);
}

/// Where in a sort job the master is killed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Some maps done, others running.
    Map,
    /// Every map done, the reduces fetching their input.
    Shuffle,
    /// A reduce has stored its output block and still sends its other
    /// replica: the job's output is being written.
    Commit,
}

/// kill -9 of the master during `phase` of a 16-map, 2-reduce sort on 4
/// workers with 16 Mbit/s NICs (a reduce fetches its 8 MB and sends its
/// output's second replica for seconds each), then a restart: the job
/// succeeds, its output equals `LC_ALL=C sort` of its input, no map or
/// reduce that finished before the kill runs again, and the report says
/// the job lived through one restart and how many attempts in flight ran
/// again. The client waiting for the job retries while the master is away.
async fn restart_during(phase: Phase) {
    let c = start(4, "nic_mbps = 16").await;
    let (cfg, bin) = (&c.cfg, c.bin.as_path());
    let client = c.client.clone().retrying(Duration::from_secs(60));
    load(&client, "recs", Generator::Records, 16, 1_000_000, 5).await;
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(2);
    job.output = Some("sorted".into());
    let id = client.submit(&job).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let before = loop {
        assert!(Instant::now() < deadline, "{phase:?} never came");
        let r = client.job(id, None).await.unwrap();
        assert!(
            !r.state.is_done(),
            "{phase:?} never came: the job ended: {r:?}"
        );
        let maps_done = r.tasks_done;
        let reducing = r.running.iter().any(|x| x.kind == TaskKind::Reduce);
        let here = match phase {
            Phase::Map => maps_done >= 2 && maps_done + 2 <= r.tasks,
            Phase::Shuffle => maps_done == r.tasks && reducing && r.reduces_done == 0,
            Phase::Commit => {
                reducing
                    && r.reduces_done < r.reduces
                    && client
                        .file("sorted")
                        .await
                        .is_ok_and(|f| f.replicas.iter().any(|b| !b.is_empty()))
            }
        };
        if here {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    kill_master(cfg);
    tokio::time::sleep(Duration::from_millis(500)).await;
    local::restart_master(cfg, bin).unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{phase:?}: {r:?}");
    assert_eq!(r.master_restarts, 1, "{phase:?}");
    let ok = |kind: TaskKind| r.attempts.iter().filter(|a| a.ok && a.kind == kind).count() as u32;
    assert_eq!(
        ok(TaskKind::Map),
        r.tasks,
        "{phase:?}: a finished map ran again: {r:?}"
    );
    assert_eq!(ok(TaskKind::Reduce), r.reduces, "{phase:?}: {r:?}");
    // Every attempt that succeeded before the kill is in the report as it was.
    for a in before.attempts.iter().filter(|a| a.ok) {
        assert!(r.attempts.contains(a), "{phase:?}: {a:?} lost");
    }
    let input = files::read_file(&client, "recs").await.unwrap();
    let output = files::read_file(&client, "sorted").await.unwrap();
    assert!(
        output == verify::sort_reference(&input).unwrap(),
        "{phase:?}: output differs from LC_ALL=C sort"
    );
    eprintln!(
        "restart during {phase:?}: maps done before {}/{}, reduces done before {}; attempts rerun after the restart: {}; JCT {} ms",
        before.tasks_done,
        before.tasks,
        before.reduces_done,
        r.restart_reruns,
        r.jct_ms.unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_restart_during_the_map_phase_keeps_the_finished_maps() {
    restart_during(Phase::Map).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_restart_during_the_shuffle_keeps_the_job() {
    restart_during(Phase::Shuffle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_restart_during_output_commit_keeps_the_job() {
    restart_during(Phase::Commit).await;
}

/// A worker whose disk fills up: the map (or reduce) that met ENOSPC is
/// reported as "no space", runs again on another worker without counting
/// against its task, the job succeeds with the coreutils output, the full
/// worker gets no task and no replica until its disk has room again, and
/// then it works again. Root (CI): w2's data directory is a real 6 MiB tmpfs,
/// filled to 200 KiB, and map output is written to disk. Elsewhere: w2 asks for no task at all because its
/// `min_free_mb` is above any disk (Hadoop's minspacestart), and the jobs
/// run on w1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_costs_the_attempt_not_the_job() {
    let root = nix::unistd::Uid::effective().is_root();
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = local::write_loopback_config(
        dir.path(),
        TOKEN,
        2,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 2000\nmax_task_attempts = 2\nseed = 7",
        // Map output goes to disk (none is kept in memory), so a map on w2
        // meets the full disk too, not only a reduce's output.
        "slots = 2\nmin_free_mb = 0\nshuffle_memory_mb = 0",
    )
    .unwrap();
    let w2_dir = cfg.worker_data_dir("w2");
    // Declared before the cluster: unmounted after it is stopped.
    let _tmpfs = root.then(|| Tmpfs::mount(&w2_dir, "6m"));
    let cfg = if root {
        cfg
    } else {
        eprintln!("not root: no tmpfs; checking min_free_mb instead");
        let text = std::fs::read_to_string(&cfg.path)
            .unwrap()
            .replace("min_free_mb = 0", "min_free_mb = 1000000000000");
        std::fs::write(&cfg.path, text).unwrap();
        ClusterConfig::load(&cfg.path).unwrap()
    };
    local::start_with(&cfg, bin).await.unwrap();
    let c = Cluster {
        client: MasterClient::new(cfg.master_url(), TOKEN),
        cfg: cfg.clone(),
        bin: bin.to_owned(),
        _dir: dir,
    };
    let client = &c.client;
    load(client, "recs", Generator::Records, 4, 512 << 10, 3).await;
    let filler = w2_dir.join("filler");
    if root {
        // Leave 200 KiB: less than one map's output (512 KiB).
        let free = {
            let s = nix::sys::statvfs::statvfs(&w2_dir).unwrap();
            s.blocks_available() as u64 * s.fragment_size() as u64
        };
        std::fs::write(&filler, vec![0u8; (free - (200 << 10)) as usize]).unwrap();
    }
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(1);
    job.output = Some("sorted".into());
    let id = client.submit(&job).await.unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    let failed: Vec<_> = r.attempts.iter().filter(|a| !a.ok).collect();
    if root {
        assert!(
            !failed.is_empty() && failed.iter().all(|a| a.worker == "w2"),
            "w2's attempts met the full disk: {:?}",
            r.attempts
        );
        for a in &failed {
            let e = a.error.as_deref().unwrap_or("");
            assert!(e.contains("no space"), "{e}");
        }
    } else {
        assert!(
            r.attempts.iter().all(|a| a.worker == "w1"),
            "{:?}",
            r.attempts
        );
    }
    let input = files::read_file(client, "recs").await.unwrap();
    let output = files::read_file(client, "sorted").await.unwrap();
    assert_eq!(output, verify::sort_reference(&input).unwrap());
    // While full, w2 gets nothing, not even a map that writes nothing.
    for _ in 0..3 {
        let r = sink_ok(client, "recs").await;
        assert!(
            r.attempts.iter().all(|a| a.worker == "w1"),
            "{:?}",
            r.attempts
        );
    }
    if !root {
        return;
    }
    // Room again: w2 works again.
    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = sink_ok(client, "recs").await;
        if r.attempts.iter().any(|a| a.worker == "w2") {
            break;
        }
        assert!(Instant::now() < deadline, "w2 never got a task back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
