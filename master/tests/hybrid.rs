//! The hybrid cloud on a real local cluster: `mrosa` asks for a public
//! instance when a job's deadline needs one, the master starts it as a
//! process, it boots, registers, runs the late maps over its own link, and
//! is stopped once idle; the job meets its deadline and reports its cost. A
//! job with a loose deadline stays private and costs nothing.

use common::config::ClusterConfig;
use common::wire::{JobState, JobSubmit};
use master::ops::client::MasterClient;
use master::ops::loader::{self, Generator, LoadSpec, Source};
use master::ops::local;
use std::path::Path;
use std::time::{Duration, Instant};
use workloads::Workload;

const TOKEN: &str = "hybrid-token";

struct Cluster {
    cfg: ClusterConfig,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = local::down(&local::run_dir(&self.cfg));
    }
}

/// Two private workers of one slot paced at 0.5 MB/s (a 1 MB map: 2 s)
/// and one instance type, `burst`: 4 slots at twice the speed, a 10 MB/s
/// link, 1 s to boot.
async fn start() -> (Cluster, MasterClient) {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = local::write_loopback_config(
        dir.path(),
        TOKEN,
        2,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 3000\nseed = 3\n\n[scheduler]\npolicy = \"mrosa\"",
        "slots = 1\nslot_rate_mbs = 0.5",
    )
    .unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut text = std::fs::read_to_string(&cfg.path).unwrap();
    text += &format!(
        "\n[public]\nidle_stop_s = 1\nmax_instances = 1\nlisten = \"127.0.0.1:{port}\"\n\n\
         [[public_type]]\nname = \"burst\"\nprovider = \"test\"\nslots = 4\nspeed = 2\n\
         nic_mbps = 80\nstart_s = 1\nprice_per_s = 0.01\ntransfer_in_per_gb = 1\n"
    );
    std::fs::write(&cfg.path, text).unwrap();
    let cfg = ClusterConfig::load(&cfg.path).unwrap();
    local::start_with(&cfg, bin).await.unwrap();
    let client = MasterClient::new(cfg.master_url(), TOKEN);
    loader::load(
        &client,
        &LoadSpec {
            name: "in".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 8,
            },
            block_size: 1_000_000,
            replication: 2,
            seed: 1,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    (Cluster { cfg, _dir: dir }, client)
}

async fn run(client: &MasterClient, deadline_s: f64) -> common::wire::JobReport {
    let mut job = JobSubmit::new(Workload::InputSink, "in");
    job.deadline_s = Some(deadline_s);
    let id = client.submit(&job).await.unwrap();
    client.wait_job(id).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tight_deadline_rents_an_instance_that_stops_when_idle_a_loose_one_costs_nothing() {
    let (_c, client) = start().await;

    // Privately the 8 maps take 4 waves of 2 s. With 5.5 s, Algorithm I
    // keeps 4 (done at 2 and 4 s) and the other 4 go to one `burst`
    // (1 s boot + 1 s compute + 0.1 s transfer each, in parallel).
    let r = run(&client, 5.5).await;
    assert_eq!(r.state, JobState::Succeeded, "{:?}", r.error);
    assert_eq!(r.deadline_met, Some(true), "JCT {:?} ms", r.jct_ms);
    let cost = r.public_cost.clone().expect("the job used an instance");
    assert_eq!(cost.instances, ["burst-1"]);
    assert!(cost.compute > 0.0, "{cost:?}");
    // 1 MB per map received at 1 per GB.
    let on_instance: Vec<_> = r
        .attempts
        .iter()
        .filter(|a| a.worker == "burst-1")
        .collect();
    assert!(!on_instance.is_empty(), "{:?}", r.attempts);
    assert!(on_instance
        .iter()
        .all(|a| a.locality == common::wire::Locality::DataRemote));
    assert!(
        (cost.transfer - on_instance.len() as f64 * 1e6 / 1e9).abs() < 1e-9,
        "{cost:?}"
    );

    // Idle for 1 s, it is stopped: gone from the live workers, its port closed.
    let t0 = Instant::now();
    loop {
        let ws = client.workers().await.unwrap();
        let inst = ws.iter().find(|w| w.name == "burst-1").expect("listed");
        assert_eq!(inst.instance_type.as_deref(), Some("burst"));
        if !inst.alive {
            let addr = inst.addr.trim_start_matches("http://").to_owned();
            let closed = tokio::time::timeout(Duration::from_secs(3), async {
                while tokio::net::TcpStream::connect(&addr).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
            .await;
            assert!(closed.is_ok(), "instance process still answers on {addr}");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "instance never stopped"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Its bill is final: its whole life, request to stop, at 0.01/s.
    let after = client.job(r.job, None).await.unwrap().public_cost.unwrap();
    assert!(after.compute >= cost.compute, "{after:?} {cost:?}");

    // Plenty of time: everything private, nothing rented.
    let r2 = run(&client, 60.0).await;
    assert_eq!(r2.state, JobState::Succeeded);
    assert_eq!(r2.deadline_met, Some(true));
    assert_eq!(r2.public_cost, None);
    assert!(r2.attempts.iter().all(|a| a.worker != "burst-1"));
    let ws = client.workers().await.unwrap();
    assert_eq!(ws.len(), 3, "no new instance: {ws:?}");

    // A deadline no instance can meet: refused, nothing rented.
    let r3 = run(&client, 0.5).await;
    assert_eq!(r3.state, JobState::Failed);
    assert!(
        r3.error
            .as_deref()
            .unwrap_or("")
            .starts_with("refused: mrosa"),
        "{:?}",
        r3.error
    );
    assert_eq!(r3.deadline_met, Some(false));
    assert_eq!(client.workers().await.unwrap().len(), 3);
}
