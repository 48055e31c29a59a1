//! A whole cluster in this process, on loopback with port 0: one master and
//! `nic.len()` workers, shared by the end-to-end tests and `make bench`.

#[allow(dead_code)] // the bench and some tests use it
pub mod lines;

use common::config::WorkerSettings;
use ctl::ops::client::MasterClient;
use master::state::MasterSettings;
use sched::policy::SchedulerConfig;
use std::path::Path;
use std::time::Duration;

pub struct LocalCluster {
    /// Held so the master runs as long as the cluster value lives.
    pub _master: master::http::MasterHandle,
    #[allow(dead_code)] // not every including crate reads it
    pub workers: Vec<worker::WorkerHandle>,
    pub client: MasterClient,
}

/// Starts a master and one worker per entry of `nic` (its NIC rate in
/// bytes/s, `None` = unlimited), block stores under `dir`, and waits until
/// every worker has registered.
#[allow(dead_code)] // not every including crate uses it
pub async fn start_cluster(
    dir: &Path,
    token: &str,
    slots: u32,
    nic: &[Option<f64>],
    heartbeat_ms: u64,
) -> LocalCluster {
    start_cluster_with(dir, token, slots, nic, heartbeat_ms, |_| {}).await
}

/// [`start_cluster`], with `tune` adjusting each worker's options first.
#[allow(dead_code)] // not every including crate uses it
pub async fn start_cluster_with(
    dir: &Path,
    token: &str,
    slots: u32,
    nic: &[Option<f64>],
    heartbeat_ms: u64,
    tune: impl Fn(&mut worker::WorkerOptions),
) -> LocalCluster {
    let roles = vec![common::config::Role::Both; nic.len()];
    start_cluster_roles(dir, token, slots, nic, &roles, heartbeat_ms, tune).await
}

/// [`start_cluster_with`], worker i having role `roles[i]`.
pub async fn start_cluster_roles(
    dir: &Path,
    token: &str,
    slots: u32,
    nic: &[Option<f64>],
    roles: &[common::config::Role],
    heartbeat_ms: u64,
    tune: impl Fn(&mut worker::WorkerOptions),
) -> LocalCluster {
    start_cluster_tuned(dir, token, slots, nic, roles, heartbeat_ms, |_| {}, tune).await
}

/// [`start_cluster_roles`], with `tune_master` adjusting the master's
/// settings (its scheduler, the decision record) first.
#[allow(dead_code, clippy::too_many_arguments)] // not every including crate uses it
pub async fn start_cluster_tuned(
    dir: &Path,
    token: &str,
    slots: u32,
    nic: &[Option<f64>],
    roles: &[common::config::Role],
    heartbeat_ms: u64,
    tune_master: impl FnOnce(&mut MasterSettings),
    tune: impl Fn(&mut worker::WorkerOptions),
) -> LocalCluster {
    let n = nic.len() as u32;
    let mut settings = MasterSettings {
        credentials: Default::default(),
        config_path: None,
        journal: None,
        journal_recover: false,
        public_types: Vec::new(),
        public: Default::default(),
        slot_rate_mbs: None,
        provision: None,
        heartbeat_ms,
        worker_timeout_ms: 100 * heartbeat_ms,
        max_task_attempts: 2,
        task_timeout_ms: 0,
        scheduler: SchedulerConfig::hadoop(),
        reduce_placement: Default::default(),
        seed: 3,
        replication: 2,
        workers: (0..n)
            .map(|i| WorkerSettings {
                index: i,
                name: format!("w{i}"),
                listen: "127.0.0.1:0".parse().unwrap(),
                slots,
                nic_bytes_per_sec: nic[i as usize],
                slot_rate_bytes: None,
                disk_bytes_per_sec: None,
                role: roles[i as usize],
                rack: common::config::DEFAULT_RACK.into(),
            })
            .collect(),
        record_decisions: false,
        decisions_max: 1_000_000,
        retained_jobs: 10_000,
        speculation: Default::default(),
        tls: None,
    };
    tune_master(&mut settings);
    let client_tls = settings.tls.as_ref().map(|t| t.client.clone());
    let m = master::http::start("127.0.0.1:0".parse().unwrap(), token, settings)
        .await
        .unwrap();
    let mut workers = Vec::new();
    for i in 0..n {
        let mut opts = worker_options(&format!("w{i}"), dir, &m.url(), token, slots, heartbeat_ms);
        opts.nic_bytes_per_sec = nic[i as usize];
        tune(&mut opts);
        workers.push(worker::start(opts).await.unwrap());
    }
    let client = MasterClient::new(m.url(), token).with_tls(client_tls.as_ref());
    for _ in 0..250 {
        if client.cluster().await.unwrap().workers_alive == n as usize {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(client.cluster().await.unwrap().workers_alive, n as usize);
    LocalCluster {
        _master: m,
        workers,
        client,
    }
}

/// A loopback worker's options: named `name`, its store under `dir`,
/// heartbeating out of band to the master at `master_url`.
pub fn worker_options(
    name: &str,
    dir: &Path,
    master_url: &str,
    token: &str,
    slots: u32,
    heartbeat_ms: u64,
) -> worker::WorkerOptions {
    worker::WorkerOptions {
        name: name.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        advertise: None,
        slots,
        nic_bytes_per_sec: None,
        data_dir: dir.join(name),
        master_url: master_url.into(),
        token: token.into(),
        heartbeat_ms,
        out_of_band_heartbeat: true,
        slot_rate_bytes: None,
        disk_bytes_per_sec: None,
        background: None,
        scrub_bytes_per_sec: None,
        http_timeouts: Default::default(),
        min_free_bytes: 0,
        shuffle_memory_bytes: 1 << 30,
        reduce_memory_bytes: 1 << 30,
        pretouch_bytes: 0,
        block_cache_bytes: 0,
        sync_output: false,
        credentials: Default::default(),
        config_path: None,
        tls: None,
    }
}

/// Runs the `master` binary at `bin` against cluster `c`, its token from
/// a cluster.toml written into `dir`.
#[allow(dead_code)] // not every including crate uses it
pub fn run_cli(
    bin: &str,
    c: &LocalCluster,
    dir: &Path,
    token: &str,
    args: &[&str],
) -> std::process::Output {
    let cfg = ctl::ops::local::write_loopback_config(dir, token, 1, "replication = 1", "").unwrap();
    std::process::Command::new(bin)
        .arg("--config")
        .arg(&cfg.path)
        .args(["--master", c.client.base()])
        .args(args)
        .output()
        .unwrap()
}

/// A certificate for loopback (`localhost`, 127.0.0.1) under a fresh
/// authority in `dir`: one identity every node of an in-process cluster
/// can serve with, as `[tls]` would give each.
#[allow(dead_code)] // not every including crate uses it
pub fn loopback_tls(dir: &Path) -> common::tls::load::NodeTls {
    let names = common::tls::names_for(std::net::Ipv4Addr::LOCALHOST.into(), None);
    common::tls::make::ensure(dir, &[("node".to_owned(), names.clone())]).unwrap();
    common::tls::load::NodeTls::load(&common::tls::Files::of(dir, "node"), &names).unwrap()
}

/// [`start_cluster`] with every node serving HTTPS under
/// [`loopback_tls`]'s authority (made in `dir/tls`), the client trusting it.
#[allow(dead_code)] // not every including crate uses it
pub async fn start_tls_cluster(
    dir: &Path,
    token: &str,
    slots: u32,
    nic: &[Option<f64>],
    heartbeat_ms: u64,
) -> LocalCluster {
    let tls = loopback_tls(&dir.join("tls"));
    let roles = vec![common::config::Role::Both; nic.len()];
    let t = tls.clone();
    start_cluster_tuned(
        dir,
        token,
        slots,
        nic,
        &roles,
        heartbeat_ms,
        move |m| m.tls = Some(t),
        move |w| w.tls = Some(tls.clone()),
    )
    .await
}
