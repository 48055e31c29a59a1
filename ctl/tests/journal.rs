//! The master's job journal under faults, on a real local cluster (the
//! master and its workers are processes started as `master up` starts
//! them): a journal another cluster wrote, a changed byte in it, and a full
//! disk under it. What each gives is stated in
//! `master/src/state/journal/file.rs`.

mod skip;
mod tmpfs;

use common::config::ClusterConfig;
use common::wire::{JobState, JobSubmit};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::local;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use workloads::Workload;

const TOKEN: &str = "journal-token";

/// A cluster of real processes in a temporary directory; stopped when the
/// test ends, passed or not.
struct Cluster {
    cfg: ClusterConfig,
    client: MasterClient,
    bin: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = local::down(&local::run_dir(&self.cfg));
    }
}

fn bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    bin.to_owned()
}

fn config(dir: &Path) -> ClusterConfig {
    local::write_loopback_config(
        dir,
        TOKEN,
        2,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 2000\nseed = 7",
        "slots = 2",
    )
    .unwrap()
}

/// Starts the cluster of `cfg` and loads a 4-block text file, `demo`.
async fn start(cfg: ClusterConfig) -> Cluster {
    let bin = bin();
    local::start_with(&cfg, &bin).await.unwrap();
    let client = MasterClient::new(cfg.master_url(), TOKEN).retrying(Duration::from_secs(30));
    let spec = LoadSpec {
        name: "demo".into(),
        source: Source::Generate {
            kind: Generator::Text,
            blocks: 4,
        },
        block_size: 200_000,
        replication: 2,
        seed: 3,
        placement: Default::default(),
    };
    loader::load(&client, &spec).await.unwrap();
    Cluster { cfg, client, bin }
}

async fn sink_ok(client: &MasterClient) -> common::JobId {
    let id = client
        .submit(&JobSubmit::new(Workload::InputSink, "demo"))
        .await
        .unwrap();
    assert_eq!(
        client.wait_job(id).await.unwrap().state,
        JobState::Succeeded
    );
    id
}

fn kill_master(cfg: &ClusterConfig) {
    let procs = local::processes(&local::run_dir(cfg)).unwrap();
    let pid = procs.iter().find(|p| p.name == "master").unwrap().pid;
    let ok = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -9 {pid}");
    std::thread::sleep(Duration::from_millis(200));
}

/// `master serve --config <config>`, which must refuse to start: its
/// stderr. Killed and failed if it is still serving after 30 s.
fn serve_refuses(bin: &Path, config: &Path) -> String {
    let mut child = Command::new(bin.join("master"))
        .args(["serve", "--config"])
        .arg(config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the master started on a journal it should refuse");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits until both workers have registered again with a restarted master.
async fn back(client: &MasterClient) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !client.cluster().await.is_ok_and(|c| c.workers_alive == 2) {
        assert!(Instant::now() < deadline, "the cluster did not come back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kill -9 of the master, then: under another cluster's token it refuses
/// the journal, naming both fingerprints; with one byte of a job's entry
/// changed it refuses to start, naming the line; `--journal-recover`
/// starts it with the entries before the damage (the first job listed,
/// the second dropped), keeps the damaged file aside, and gives the next
/// job an id past every id the dropped part named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_or_damaged_journal_stops_the_master_until_told_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    let c = start(config(dir.path())).await;
    let (cfg, client) = (&c.cfg, &c.client);
    let first = sink_ok(client).await;
    let second = sink_ok(client).await;
    kill_master(cfg);
    let journal = cfg.resolve(&cfg.master.journal);

    // Another cluster: the same files, another token.
    let other = dir.path().join("other.toml");
    let text = std::fs::read_to_string(&cfg.path).unwrap();
    std::fs::write(&other, text.replace(TOKEN, "another-token")).unwrap();
    let err = serve_refuses(&c.bin, &other);
    assert!(err.contains("written by another cluster"), "{err}");

    // One byte of the second job's submission changed.
    let mut bytes = std::fs::read(&journal).unwrap();
    let needle = format!("\"event\":\"submitted\",\"job\":{}", second.0);
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .expect("the second job's submission is journaled");
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    bytes[at + 3] ^= 0x20; // "event" -> "eVent"
    std::fs::write(&journal, &bytes).unwrap();
    let err = serve_refuses(&c.bin, &cfg.path);
    assert!(
        err.contains(&format!("line {line}: checksum mismatch"))
            && err.contains("--journal-recover"),
        "{err}"
    );

    local::restart_master_with(cfg, &c.bin, &["--journal-recover"]).unwrap();
    back(client).await;
    let jobs: Vec<_> = client.jobs().await.unwrap().iter().map(|r| r.job).collect();
    assert_eq!(
        jobs,
        [first],
        "the job before the damage, not the one in it"
    );
    let aside = std::fs::read_dir(journal.parent().unwrap())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().contains(".damaged-")
        })
        .count();
    assert_eq!(aside, 1, "the damaged journal is kept aside");
    let next = sink_ok(client).await;
    assert!(next.0 > second.0, "{next} reuses an id of the dropped part");
}

/// `cluster.token` changed in cluster.toml while the cluster runs: the
/// master and the workers take the new token within a second, the old one
/// is accepted for `token_grace_s` and refused after it, the workers stay
/// (they send the new one) and run jobs, and the master, killed and
/// started under the new token, takes its journal back (it was stamped
/// with the new token when the change was read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_token_is_taken_live_with_a_grace_and_the_journal_follows() {
    const ROTATED: &str = "rotated-token";
    let dir = tempfile::tempdir().unwrap();
    let cfg = local::write_loopback_config(
        dir.path(),
        TOKEN,
        2,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 2000\nseed = 7\ntoken_grace_s = 3",
        "slots = 2",
    )
    .unwrap();
    let c = start(cfg).await;
    let (cfg, old) = (&c.cfg, &c.client);
    let first = sink_ok(old).await;
    // Written whole and renamed, as an editor would.
    let text = std::fs::read_to_string(&cfg.path).unwrap();
    let tmp = cfg.path.with_extension("tmp");
    std::fs::write(&tmp, text.replace(TOKEN, ROTATED)).unwrap();
    std::fs::rename(&tmp, &cfg.path).unwrap();
    let new = MasterClient::new(cfg.master_url(), ROTATED);
    let deadline = Instant::now() + Duration::from_secs(10);
    while new.jobs().await.is_err() {
        assert!(Instant::now() < deadline, "the new token is never taken");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let plain_old = MasterClient::new(cfg.master_url(), TOKEN);
    assert!(
        plain_old.jobs().await.is_ok(),
        "the old token in its grace period"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match plain_old.jobs().await {
            Err(e) if format!("{e:#}").contains("401") => break,
            _ => assert!(
                Instant::now() < deadline,
                "the old token is still taken after its grace"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Past a worker timeout: the workers heartbeat with the new token.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(new.cluster().await.unwrap().workers_alive, 2);
    let second = sink_ok(&new).await;
    kill_master(cfg);
    local::restart_master_with(cfg, &c.bin, &[]).unwrap();
    let new = new.retrying(Duration::from_secs(30));
    back(&new).await;
    let jobs: Vec<_> = new.jobs().await.unwrap().iter().map(|r| r.job).collect();
    assert_eq!(
        jobs,
        [first, second],
        "the journal taken back under the new token"
    );
}

/// A full disk under the journal (root: a 512 KiB tmpfs at the journal's
/// directory, filled): jobs whose entries fit its last page are taken, the
/// one whose entry met the full disk too (its entries held in memory),
/// the next is refused with 507 naming the journal, the master goes on;
/// with room again jobs are taken, the held entries are
/// written, and a master killed and started again replays every job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_under_the_journal_holds_new_jobs_until_it_has_room() {
    if !nix::unistd::Uid::effective().is_root() {
        skip::skipped("mounting a tmpfs under the journal needs root (CI runs as root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let journal = cfg.resolve(&cfg.master.journal);
    // Declared before the cluster: unmounted after it is stopped.
    let _disk = tmpfs::Tmpfs::mount(journal.parent().unwrap(), "512k");
    let c = start(cfg).await;
    let (cfg, client) = (&c.cfg, &c.client);
    let first = sink_ok(client).await;

    let filler = journal.with_file_name("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        while f.write_all(&[b'x'; 4096]).is_ok() {}
    }
    // A job whose entries still fit the journal's last page is taken; the
    // request that meets the full disk is taken too and its entries held
    // (it was applied before the write failed); from the next one on, jobs
    // are refused until the journal has room.
    let sink = JobSubmit::new(Workload::InputSink, "demo");
    let submit = || client.submit(&sink);
    let mut taken = vec![first];
    let mut refused = None;
    for _ in 0..200 {
        match submit().await {
            Ok(id) => taken.push(id),
            Err(e) => {
                refused = Some(format!("{e:#}"));
                break;
            }
        }
    }
    let err = refused.expect("a job is refused while the journal's disk is full");
    assert!(
        err.contains("507") && err.contains("the job journal cannot be written"),
        "{err}"
    );
    let again = format!("{:#}", submit().await.unwrap_err());
    assert!(again.contains("507"), "still refused: {again}");
    assert!(client.cluster().await.is_ok(), "the master goes on");

    std::fs::remove_file(&filler).unwrap();
    taken.push(sink_ok(client).await);
    for &id in &taken {
        assert_eq!(
            client.wait_job(id).await.unwrap().state,
            JobState::Succeeded
        );
    }
    kill_master(cfg);
    local::restart_master(cfg, &c.bin).unwrap();
    back(client).await;
    let jobs: Vec<_> = client.jobs().await.unwrap().iter().map(|r| r.job).collect();
    assert_eq!(
        jobs, taken,
        "the journal replays whole, the held entries in it"
    );
    let reports = client.jobs().await.unwrap();
    assert!(
        reports.iter().all(|r| r.state == JobState::Succeeded),
        "{reports:?}"
    );
}
