//! The hybrid cloud on a real local cluster, in each deployment: `mrosa`
//! asks for a public instance when a job's deadline needs one, the master
//! starts it (a local process; a network-namespace host on the cluster's
//! bridge, its link shaped by tc at the type's rate; or a container on the
//! cluster's network, through the engine's socket), it boots, registers,
//! runs the late maps over its own link, and is stopped once idle, its
//! process, namespace or container gone; the job meets its deadline and
//! reports its cost. A job with a loose deadline stays private and costs
//! nothing. The netns case needs root, the container case a Docker engine
//! and the static binaries (CI has all three); elsewhere they say so and
//! return.

mod skip;
use common::config::ClusterConfig;
use common::wire::{JobState, JobSubmit};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::{docker, local, netns};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workloads::Workload;

const TOKEN: &str = "hybrid-token";

#[derive(Clone)]
enum Deploy {
    Processes,
    /// Namespace prefix.
    Netns(String),
    /// Compose project.
    Docker(String),
}

struct Cluster {
    cfg: ClusterConfig,
    deploy: Deploy,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let run = local::run_dir(&self.cfg);
        match &self.deploy {
            Deploy::Processes => {
                let _ = local::down(&run);
            }
            Deploy::Netns(prefix) => {
                let _ = local::down(&run);
                let _ = netns::teardown(prefix);
            }
            Deploy::Docker(project) => {
                let _ = docker::down_with(&run, true);
                let _ = docker::remove_images(project);
            }
        }
    }
}

fn bin_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    bin.to_owned()
}

/// Two private workers of one slot paced at 0.5 MB/s (a 1 MB map: 2 s)
/// and one instance type, `burst`: 4 slots at twice the speed, a 10 MB/s
/// link, 1 s to boot. None, after saying why, where the deployment cannot
/// run here.
async fn start(deploy: Deploy, idle_stop_s: f64) -> Option<(Cluster, MasterClient)> {
    let bin = bin_dir();
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
    // The decision record, with its inputs, to run it again at the end.
    let mut text = std::fs::read_to_string(&cfg.path).unwrap().replacen(
        "[master]\n",
        "[master]\ndecisions = true\n",
        1,
    );
    text += &format!(
        "\n[public]\nidle_stop_s = {idle_stop_s}\nmax_instances = 1\nlisten = \"127.0.0.1:{port}\"\n\n\
         [[public_type]]\nname = \"burst\"\nprovider = \"test\"\nslots = 4\nspeed = 2\n\
         nic_mbps = 80\nstart_s = 1\nprice_per_s = 0.01\ntransfer_in_per_gb = 1\n"
    );
    std::fs::write(&cfg.path, text).unwrap();
    let cfg = ClusterConfig::load(&cfg.path).unwrap();
    let pid = std::process::id();
    let client_cfg = match &deploy {
        Deploy::Processes => {
            local::start_with(&cfg, &bin).await.unwrap();
            cfg.clone()
        }
        Deploy::Netns(prefix) => {
            if !nix::unistd::Uid::effective().is_root() {
                skip::skipped("the netns deployment needs root");
                return None;
            }
            // Reached from here through a host link, on a subnet of its own.
            let third = netns::free_third(100 + (pid % 100) as u8).unwrap();
            let layout = netns::Layout::plan_in(prefix, &cfg, third)
                .unwrap()
                .with_host_link();
            assert_eq!(layout.instances, 1);
            local::up_netns_layout(&cfg, true, &layout, &bin)
                .await
                .unwrap();
            ClusterConfig::load(local::netns_config_path(&cfg)).unwrap()
        }
        Deploy::Docker(project) => {
            if !docker::engine_answers() {
                skip::skipped(
                    "no Docker engine answers here (package docker.io or Docker Engine, started)",
                );
                return None;
            }
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
            let sbin = root.join(docker::DEFAULT_BIN);
            let ok = ["master", "worker"]
                .iter()
                .all(|b| docker::is_static_elf(&sbin.join(b)).unwrap_or(false));
            if !ok {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI builds the static binaries first (make docker-bins)"
                );
                skip::skipped("no static binaries; run make docker-bins");
                return None;
            }
            let third = 100 + ((pid + 40) % 150) as u8;
            docker::up(&cfg, true, project, third, &sbin).await.unwrap();
            ClusterConfig::load(docker::config_path(&cfg)).unwrap()
        }
    };
    let client = MasterClient::new(client_cfg.master_url(), TOKEN);
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
    Some((
        Cluster {
            cfg,
            deploy,
            _dir: dir,
        },
        client,
    ))
}

async fn submit(client: &MasterClient, deadline_s: f64) -> common::JobId {
    let mut job = JobSubmit::new(Workload::InputSink, "in");
    job.deadline_s = Some(deadline_s);
    client.submit(&job).await.unwrap()
}

async fn run(client: &MasterClient, deadline_s: f64) -> common::wire::JobReport {
    let id = submit(client, deadline_s).await;
    client.wait_job(id).await.unwrap()
}

/// The deployment's trace of instance `burst-1` (first offset): whether
/// it exists now, and what it is.
fn instance_exists(deploy: &Deploy) -> bool {
    match deploy {
        Deploy::Processes => true,
        Deploy::Netns(prefix) => netns::list(prefix)
            .unwrap()
            .contains(&format!("{prefix}pi0")),
        Deploy::Docker(project) => {
            let name = docker::container(project, "burst-1");
            docker::docker(&[
                "ps",
                "-a",
                "--filter",
                &format!("name=^{name}$"),
                "--format",
                "{{.Names}}",
            ])
            .unwrap()
            .lines()
            .any(|l| l == name)
        }
    }
}

/// The instance at `addr` has the address after the two workers' on the
/// subnet of the derived config at `derived`.
fn after_the_workers(derived: &Path, addr: &str) {
    let d = ClusterConfig::load(derived).unwrap();
    let ip = d.master.listen.ip().to_string();
    let subnet = ip.rsplit_once('.').unwrap().0;
    assert!(addr.starts_with(&format!("http://{subnet}.12:")), "{addr}");
}

/// In namespaces, the instance at `addr` has its own address after the
/// workers', its link shaped at the type's 80 Mbit/s in both directions,
/// and permanent neighbour entries for the master and the workers.
fn netns_instance_is_a_host(prefix: &str, cfg: &ClusterConfig, addr: &str) {
    after_the_workers(&local::netns_config_path(cfg), addr);
    let qdiscs = [("pi0", "eth0"), ("bridge", "vp0")].map(|(ns, dev)| {
        let out = std::process::Command::new("tc")
            .args(["-n", &format!("{prefix}{ns}"), "qdisc", "show", "dev", dev])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    for q in qdiscs {
        assert!(q.contains("tbf") && q.contains("rate 80Mbit"), "{q}");
    }
    // It resolves the master and the workers by permanent entries,
    // as they resolve it (see netns's module doc): no ARP.
    let master_ip = ClusterConfig::load(local::netns_config_path(cfg))
        .unwrap()
        .master
        .listen
        .ip();
    let std::net::IpAddr::V4(master_ip) = master_ip else {
        panic!("{master_ip}")
    };
    let subnet = netns::subnet_addresses(master_ip, 3);
    for (ns, peer) in [
        ("pi0", subnet[0]),
        ("pi0", subnet[1]),
        ("master", subnet[3]),
    ] {
        let out = std::process::Command::new("ip")
            .args([
                "-4",
                "-n",
                &format!("{prefix}{ns}"),
                "neigh",
                "show",
                &peer.to_string(),
            ])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        let want = format!("lladdr {} PERMANENT", netns::mac_of(peer));
        assert!(table.contains(&want), "{ns} -> {peer}: {table}");
    }
}

/// Waits until the instance `burst-1` is stopped: gone from the live
/// workers, and its process (port closed), namespace or container gone.
async fn wait_instance_gone(client: &MasterClient, deploy: &Deploy) {
    let t0 = Instant::now();
    loop {
        let ws = client.workers().await.unwrap();
        let inst = ws.iter().find(|w| w.name == "burst-1").expect("listed");
        assert_eq!(inst.instance_type.as_deref(), Some("burst"));
        if !inst.alive {
            let addr = inst.addr.trim_start_matches("http://").to_owned();
            let gone = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    let closed = match deploy {
                        Deploy::Processes => tokio::net::TcpStream::connect(&addr).await.is_err(),
                        _ => !instance_exists(deploy),
                    };
                    if closed {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
            .await;
            assert!(gone.is_ok(), "the stopped instance is still there ({addr})");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "instance never stopped"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn scenario(deploy: Deploy) {
    let Some((c, client)) = start(deploy.clone(), 1.0).await else {
        return;
    };

    // Privately the 8 maps take 4 waves of 2 s. With 5.5 s, Algorithm I
    // keeps 4 (done at 2 and 4 s) and the other 4 go to one `burst`
    // (1 s boot + 1 s compute + 0.1 s transfer each, in parallel).
    let id = submit(&client, 5.5).await;
    // While it runs, the instance is a host of the deployment.
    let t0 = Instant::now();
    let seen = loop {
        let ws = client.workers().await.unwrap();
        if let Some(w) = ws.iter().find(|w| w.name == "burst-1" && w.alive) {
            break w.clone();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no instance registered: {ws:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(instance_exists(&deploy));
    match &deploy {
        Deploy::Processes => assert!(seen.addr.starts_with("http://127.0.0.1:"), "{seen:?}"),
        Deploy::Netns(prefix) => netns_instance_is_a_host(prefix, &c.cfg, &seen.addr),
        Deploy::Docker(_) => after_the_workers(&docker::config_path(&c.cfg), &seen.addr),
    }
    let r = client.wait_job(id).await.unwrap();
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

    // Idle for 1 s, it is stopped.
    wait_instance_gone(&client, &deploy).await;
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

    // MROSA's decisions, the instance it rented and the job it refused
    // included, are what the shared code decides again from the record.
    let log = client.decision_record().await.unwrap();
    let took = |f: fn(&sched::input::Input) -> bool| log.inputs.iter().filter(|i| f(i)).count();
    assert!(took(|i| matches!(i, sched::input::Input::InstanceUp { .. })) >= 1);
    assert!(took(|i| matches!(i, sched::input::Input::InstanceGone { .. })) >= 1);
    let again = ctl::ops::report::recheck(&log).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(again.decisions, log.decisions.len());
    assert!(log.decisions.len() >= 8, "{:?}", log.decisions);

    // Taking the cluster down leaves nothing of it.
    let run_dir = local::run_dir(&c.cfg);
    match &deploy {
        Deploy::Processes => {}
        Deploy::Netns(prefix) => {
            local::down(&run_dir).unwrap();
            assert_eq!(netns::list(prefix).unwrap(), Vec::<String>::new());
        }
        Deploy::Docker(project) => {
            assert!(docker::down_with(&run_dir, true).unwrap());
            assert_eq!(docker::leftovers(project).unwrap(), Vec::<String>::new());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tight_deadline_rents_an_instance_that_stops_when_idle_a_loose_one_costs_nothing() {
    scenario(Deploy::Processes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_network_namespaces_the_instance_is_a_shaped_namespace_host() {
    scenario(Deploy::Netns(format!(
        "hy{}-",
        std::process::id() % 100_000
    )))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_containers_the_instance_is_a_container_the_master_starts() {
    scenario(Deploy::Docker(format!("mrtbhy{}", std::process::id()))).await;
}

/// An instance lives as long as it is needed, not as long as whatever
/// started it: its parent-death signal is tied to the thread that forked
/// it, and a thread of tokio's blocking pool ends after 10 s idle (which
/// once killed every instance 10 s after its start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_outlives_the_thread_that_started_it() {
    let (_c, client) = start(Deploy::Processes, 60.0).await.unwrap();
    let r = run(&client, 5.5).await;
    assert_eq!(r.state, JobState::Succeeded, "{:?}", r.error);
    assert!(r.public_cost.is_some(), "the job rented an instance");
    tokio::time::sleep(Duration::from_secs(14)).await;
    let ws = client.workers().await.unwrap();
    let inst = ws.iter().find(|w| w.name == "burst-1").expect("listed");
    assert!(
        inst.alive,
        "the instance died while idle below idle_stop_s: {inst:?}"
    );
}
