//! A worker of the testbed: stores replicated blocks (`store`), serves and
//! fetches them over HTTP through an emulated NIC (`http`, `fetch`, `nic`),
//! runs map tasks in a fixed number of slots (`exec`) and talks to the master
//! (`node`). `start` runs all of it in the current tokio runtime.

pub mod background;
pub mod commit;
pub mod exec;
pub mod fetch;
pub mod http;
pub mod metrics;
pub mod nic;
pub mod node;
pub mod progress;
pub mod reduce;
pub mod replicas;
pub mod replicate;
pub mod scrub;
pub mod shuffle;
pub mod slots;
pub mod store;
pub mod timeline;
pub mod upload;

use common::config::ClusterConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Notify;

/// How long a worker waits to connect to a peer or the master.
pub const PEER_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a worker waits for the next bytes of an answer.
pub const PEER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Everything a worker needs to start, usually taken from cluster.toml.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    pub name: String,
    pub listen: SocketAddr,
    /// Base URL others use to reach this worker; default `http://<bound address>`.
    pub advertise: Option<String>,
    pub slots: u32,
    /// NIC rate per direction in bytes/s; `None` = unlimited (also: netns mode).
    pub nic_bytes_per_sec: Option<f64>,
    pub data_dir: PathBuf,
    pub master_url: String,
    pub token: String,
    pub heartbeat_ms: u64,
    /// Heartbeat at once when a task ends (else only every `heartbeat_ms`).
    pub out_of_band_heartbeat: bool,
    /// Compute pacing per slot, bytes/s; `None` = off.
    pub slot_rate_bytes: Option<f64>,
    /// Emulated disk, bytes/s; `None` = off.
    pub disk_bytes_per_sec: Option<f64>,
    /// Background load and its seed; `None` = none.
    pub background: Option<(common::config::BackgroundConfig, u64)>,
    /// Block scanner rate, bytes/s; `None` = off.
    pub scrub_bytes_per_sec: Option<f64>,
    /// When the HTTP server gives up on a silent client.
    pub http_timeouts: common::http::ServerTimeouts,
    /// With less than this free on the data directory's disk, the worker
    /// asks for no new task (Hadoop's `mapred.local.dir.minspacestart`).
    pub min_free_bytes: u64,
    /// Map output kept in memory (`workers.shuffle_memory_mb`).
    pub shuffle_memory_bytes: u64,
    /// Fetched map output a sort reduce holds in memory before merging it
    /// to disk (`workers.reduce_memory_mb`).
    pub reduce_memory_bytes: u64,
    /// Task buffers faulted in at start and kept (`workers.pretouch_mb`).
    pub pretouch_bytes: u64,
    /// Blocks kept mapped and locked (`workers.block_cache_mb`).
    pub block_cache_bytes: u64,
    /// Job output synced before its task ends (`workers.sync_output`).
    pub sync_output: bool,
    /// The secrets per role (`[credentials]`) besides `token`: the
    /// worker sends the worker role's and accepts each for its routes.
    pub credentials: common::credentials::CredentialsSection,
    /// The cluster.toml to re-read `[credentials]` from when it changes;
    /// `None`: never.
    pub config_path: Option<PathBuf>,
    /// Its certificate and the cluster's authority (`[tls]`): it serves
    /// HTTPS and trusts only the authority as a client; `None`: plain HTTP.
    pub tls: Option<common::tls::load::NodeTls>,
}

impl WorkerOptions {
    pub fn from_config(cfg: &ClusterConfig, name: &str) -> anyhow::Result<Self> {
        let w = cfg.worker_by_name(name).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no [[worker]] named {name:?} (known: {})",
                cfg.path.display(),
                cfg.worker
                    .iter()
                    .map(|w| w.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        Ok(WorkerOptions {
            background: cfg
                .background
                .clone()
                .map(|b| (b, background::worker_seed(cfg.cluster.seed, &w.name))),
            scrub_bytes_per_sec: cfg.workers.scrub_mbps.map(|r| r * 1e6),
            tls: cfg.node_tls(&w.name)?,
            ..Self::from_settings(cfg, &w, cfg.worker_data_dir(&w.name))
        })
    }

    /// A worker of `w`'s settings storing its blocks in `data_dir`, with
    /// the cluster's token, master and heartbeats; no background load and
    /// no block scanner.
    fn from_settings(
        cfg: &ClusterConfig,
        w: &common::config::WorkerSettings,
        data_dir: std::path::PathBuf,
    ) -> Self {
        WorkerOptions {
            name: w.name.clone(),
            listen: w.listen,
            advertise: None,
            slots: w.slots,
            nic_bytes_per_sec: w.nic_bytes_per_sec,
            data_dir,
            master_url: cfg.master_url(),
            token: cfg.cluster.token.clone(),
            heartbeat_ms: cfg.cluster.heartbeat_ms,
            out_of_band_heartbeat: cfg.cluster.out_of_band_heartbeat,
            slot_rate_bytes: w.slot_rate_bytes,
            disk_bytes_per_sec: w.disk_bytes_per_sec,
            background: None,
            scrub_bytes_per_sec: None,
            http_timeouts: Default::default(),
            min_free_bytes: cfg.workers.min_free_mb * 1_000_000,
            shuffle_memory_bytes: cfg.workers.shuffle_memory_mb.saturating_mul(1_000_000),
            reduce_memory_bytes: cfg.workers.reduce_memory_mb.saturating_mul(1_000_000),
            pretouch_bytes: cfg.pretouch_bytes(&w.name, common::config::available_memory()),
            block_cache_bytes: cfg.block_cache_bytes(&w.name, common::config::available_memory()),
            sync_output: cfg.workers.sync_output,
            credentials: cfg.credentials.clone(),
            config_path: (!cfg.path.as_os_str().is_empty()).then(|| cfg.path.clone()),
            tls: None,
        }
    }
}

impl WorkerOptions {
    /// A public instance of type `instance_type` the master started: the
    /// type's slots, link and speed (`ClusterConfig::instance_settings`),
    /// a fresh data directory (an instance holds no replica), no background
    /// load and no block scanner.
    pub fn for_instance(
        cfg: &ClusterConfig,
        name: &str,
        instance_type: &str,
        port_offset: u32,
    ) -> anyhow::Result<Self> {
        let ty = cfg.public_type(instance_type).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no [[public_type]] named {instance_type:?} (known: {})",
                cfg.path.display(),
                cfg.public_type
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        if port_offset >= cfg.public_section().max_instances {
            anyhow::bail!(
                "--port-offset {port_offset} must be below public.max_instances ({})",
                cfg.public_section().max_instances
            );
        }
        let w = cfg.instance_settings(0, name, port_offset, ty);
        Ok(WorkerOptions {
            tls: cfg.node_tls(common::tls::INSTANCES)?,
            ..Self::from_settings(cfg, &w, cfg.resolve(&cfg.cluster.data_dir).join(name))
        })
    }
}

/// A running worker.
pub struct WorkerHandle {
    pub addr: SocketAddr,
    pub name: String,
    /// Base URL others use to reach it.
    pub advertise: String,
    pub store: Arc<store::BlockStore>,
    pub nic: Arc<nic::Nic>,
    /// Runs its tasks: its slots, map outputs, disk and peers.
    pub exec: Arc<exec::Executor>,
    server: tokio::task::JoinHandle<()>,
    node: tokio::task::JoinHandle<()>,
    background: Option<tokio::task::JoinHandle<()>>,
    scrubber: Option<tokio::task::JoinHandle<()>>,
    sampler: tokio::task::JoinHandle<()>,
    /// Re-reads `[credentials]` when cluster.toml changes.
    watcher: Option<tokio::task::JoinHandle<()>>,
    /// Bytes of the process's buffer pool this worker reserved
    /// (`workers.pretouch_mb`), given back when it is dropped.
    pretouched: usize,
}

impl WorkerHandle {
    pub fn url(&self) -> String {
        self.advertise.clone()
    }

    /// Stops accepting connections and heartbeating.
    pub fn abort(&self) {
        self.server.abort();
        self.node.abort();
        self.sampler.abort();
        for t in [&self.background, &self.scrubber, &self.watcher]
            .into_iter()
            .flatten()
        {
            t.abort();
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.abort();
        workloads::pool::unreserve(self.pretouched);
    }
}

/// Faults `bytes` of task buffers into the pool before the worker takes
/// any task (`workers.pretouch_mb`); refuses more than the machine has
/// available, which would only end in the OOM killer.
async fn pretouch(name: &str, bytes: u64) -> anyhow::Result<usize> {
    if let Some(avail) = common::config::available_memory() {
        anyhow::ensure!(
            bytes < avail,
            "worker {name}: workers.pretouch_mb = {} is more than the {} MB of memory available on this machine",
            bytes / 1_000_000,
            avail / 1_000_000
        );
    }
    let t = std::time::Instant::now();
    let want = usize::try_from(bytes).unwrap_or(usize::MAX);
    let made = tokio::task::spawn_blocking(move || workloads::pool::pretouch(want))
        .await
        .map_err(|e| anyhow::anyhow!("worker {name}: faulting task buffers in failed: {e}"))?;
    tracing::info!(
        worker = %name,
        mb = made as f64 / 1e6,
        secs = t.elapsed().as_secs_f64(),
        "task buffers faulted in and kept (workers.pretouch_mb)"
    );
    Ok(made)
}

/// Sets how the store writes job output (`workers.sync_output`) and starts
/// the block cache (`workers.block_cache_mb`); refuses a cache of more than
/// the machine has available, which locking would take from everything else.
fn start_block_cache(opts: &WorkerOptions, store: &Arc<store::BlockStore>) -> anyhow::Result<()> {
    store.set_sync_output(opts.sync_output);
    if let Some(avail) = common::config::available_memory() {
        anyhow::ensure!(
            opts.block_cache_bytes < avail,
            "worker {}: workers.block_cache_mb = {} is more than the {} MB of memory available on this machine",
            opts.name,
            opts.block_cache_bytes / 1_000_000,
            avail / 1_000_000
        );
    }
    store.start_cache(opts.block_cache_bytes);
    Ok(())
}

/// The map output and spill directories, emptied: map output of an
/// earlier life is useless (the master forgot those attempts), and spill
/// files are anonymous.
fn fresh_task_dirs(
    opts: &WorkerOptions,
) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let shuffle_root = shuffle::root(&opts.data_dir);
    let spill_dir = opts.data_dir.join("spill");
    for dir in [&shuffle_root, &spill_dir] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| {
                anyhow::anyhow!("worker {}: cannot clear {}: {e}", opts.name, dir.display())
            })?;
        }
    }
    std::fs::create_dir_all(&spill_dir).map_err(|e| {
        anyhow::anyhow!(
            "worker {}: cannot make {}: {e}",
            opts.name,
            spill_dir.display()
        )
    })?;
    Ok((shuffle_root, spill_dir))
}

/// Opens the block store, binds the HTTP server and starts heartbeating.
pub async fn start(opts: WorkerOptions) -> anyhow::Result<WorkerHandle> {
    let store = Arc::new(store::BlockStore::open(&opts.data_dir).map_err(|e| {
        anyhow::anyhow!(
            "worker {}: cannot open block store {}: {e}",
            opts.name,
            opts.data_dir.display()
        )
    })?);
    let (shuffle_root, spill_dir) = fresh_task_dirs(&opts)?;
    start_block_cache(&opts, &store)?;
    let pretouched = if opts.pretouch_bytes > 0 {
        pretouch(&opts.name, opts.pretouch_bytes).await?
    } else {
        0
    };
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "worker {}: cannot listen on {}: {e}",
                opts.name,
                opts.listen
            )
        })?;
    let addr = listener.local_addr()?;
    let heartbeat_now = Arc::new(Notify::new());
    let replicas = Arc::new(replicas::Replicas::new(
        store.clone(),
        heartbeat_now.clone(),
    ));
    let slots = Arc::new(slots::Slots::new(
        opts.slots,
        heartbeat_now,
        opts.out_of_band_heartbeat,
    ));
    let nic = Arc::new(nic::Nic::new(opts.nic_bytes_per_sec));
    let disk = Arc::new(nic::Link::new(opts.disk_bytes_per_sec));
    let shuffle = Arc::new(shuffle::MapOutputs::new(
        shuffle_root,
        opts.shuffle_memory_bytes,
    ));
    let timeline: Arc<timeline::Timeline> = Default::default();
    let scheme = common::tls::scheme(opts.tls.is_some());
    let advertise = opts
        .advertise
        .unwrap_or_else(|| format!("{scheme}://{addr}"));
    common::http::say_transport(&format!("worker {}", opts.name), addr, opts.tls.is_some());
    let (credentials, sending) = credentials_of(&opts.token, &opts.credentials);
    let peers = Arc::new(fetch::Peers {
        // Every worker-to-worker and worker-to-master call: a dead peer costs
        // at most the connect timeout, a stopped one at most the idle read
        // timeout (pacing pauses between reads do not count).
        http: common::http_client::builder(opts.tls.as_ref().map(|t| &t.client))
            .tcp_nodelay(true)
            .connect_timeout(PEER_CONNECT_TIMEOUT)
            .read_timeout(PEER_READ_TIMEOUT)
            .pool_idle_timeout(common::http::CLIENT_POOL_IDLE)
            .build()
            .expect("HTTP client builds"),
        bulk: common::bulk_client::BulkClient::new(
            opts.tls.as_ref().map(|t| &t.client),
            PEER_CONNECT_TIMEOUT,
            PEER_READ_TIMEOUT,
        ),
        upload: common::http_client::builder(opts.tls.as_ref().map(|t| &t.client))
            .tcp_nodelay(true)
            .connect_timeout(PEER_CONNECT_TIMEOUT)
            .pool_idle_timeout(common::http::CLIENT_POOL_IDLE)
            .build()
            .expect("HTTP client builds"),
        idle: PEER_READ_TIMEOUT,
        token: sending.clone(),
        nic: nic.clone(),
    });
    let exec = Arc::new(exec::Executor {
        advertise: advertise.clone(),
        slots: slots.clone(),
        store: store.clone(),
        replicas: replicas.clone(),
        shuffle: shuffle.clone(),
        disk: disk.clone(),
        peers,
        slot_rate_bytes: opts.slot_rate_bytes,
        reduce_memory_bytes: opts.reduce_memory_bytes,
        spill_dir,
        master: Arc::new(commit::MasterSession::new(
            opts.master_url.clone(),
            std::time::Duration::from_millis(opts.heartbeat_ms.max(1)),
        )),
    });
    let served = Arc::new(http::Served {
        name: opts.name.clone(),
        store: store.clone(),
        replicas: replicas.clone(),
        nic: nic.clone(),
        disk: disk.clone(),
        slots: slots.clone(),
        shuffle,
        timeline: timeline.clone(),
    });
    let app = http::router(served, credentials.clone());
    let watcher = watch_credentials(
        opts.config_path.clone(),
        opts.token.clone(),
        credentials,
        sending,
    );
    let http_timeouts = opts.http_timeouts;
    let server_tls = opts.tls.as_ref().map(|t| t.server.clone());
    let server = tokio::spawn(async move {
        if let Err(e) = common::http::serve(listener, app, http_timeouts, server_tls).await {
            tracing::error!(error = %e, "worker HTTP server stopped");
        }
    });
    let background = opts.background.map(|(cfg, seed)| {
        let load = background::Load {
            slots,
            timeline: timeline.clone(),
        };
        tokio::spawn(background::run(load, opts.name.clone(), cfg, seed))
    });
    let scrubber = opts
        .scrub_bytes_per_sec
        .map(|rate| tokio::spawn(scrub::run(replicas, rate)));
    let sampler = tokio::spawn(timeline::run(timeline, nic.clone(), disk));
    let node = tokio::spawn(node::run(node::Node {
        name: opts.name.clone(),
        master_url: opts.master_url,
        heartbeat_ms: opts.heartbeat_ms,
        min_free_bytes: opts.min_free_bytes,
        data_dir: opts.data_dir,
        exec: exec.clone(),
    }));
    tracing::info!(worker = %opts.name, %addr, slots = opts.slots, nic = ?opts.nic_bytes_per_sec, "worker started");
    Ok(WorkerHandle {
        addr,
        name: opts.name,
        advertise,
        store,
        nic,
        exec,
        server,
        node,
        background,
        scrubber,
        sampler,
        watcher,
        pretouched,
    })
}

/// What the worker accepts (`token`, the administrator's, and
/// `[credentials]`) and what it sends (the worker role's secret, else
/// `token`).
fn credentials_of(
    token: &str,
    section: &common::credentials::CredentialsSection,
) -> (
    common::credentials::Credentials,
    common::credentials::Secret,
) {
    use common::credentials::{Credentials, Role, Secret};
    let sending = section.sending(Role::Worker).unwrap_or(token);
    (Credentials::new(token, section), Secret::new(sending))
}

/// Re-reads `[credentials]` from the worker's cluster.toml once a second,
/// if it has one.
fn watch_credentials(
    path: Option<PathBuf>,
    admin: String,
    credentials: common::credentials::Credentials,
    sending: common::credentials::Secret,
) -> Option<tokio::task::JoinHandle<()>> {
    Some(common::auth::watch_credentials(
        path?,
        admin,
        credentials,
        Some(sending),
        std::time::Duration::from_secs(1),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use common::config::{memory, ClusterConfig};

    /// `"auto"` is sized from the pool's figures, which `common` cannot
    /// name: its cap is the free bytes a warm pool keeps, in its buffers.
    #[test]
    fn auto_pretouch_is_the_pools_free_limit_in_its_buffers() {
        assert_eq!(
            memory::AUTO_CAP_BYTES,
            workloads::pool::DEFAULT_LIMIT as u64
        );
        assert_eq!(
            memory::AUTO_PIECE_BYTES,
            workloads::pool::PRETOUCH_PIECE as u64
        );
    }

    /// A worker's options take `"auto"` (the default) for its share of
    /// the workers on its machine, and a number as it is.
    #[test]
    fn a_workers_pretouch_is_its_share_of_its_machine() {
        let dir = tempfile::tempdir().unwrap();
        let text = |extra: &str| {
            format!(
                "[cluster]\ntoken = \"t\"\n[master]\nlisten = \"127.0.0.1:1\"\n[workers]\n{extra}\n\
                 [[worker]]\nname = \"a\"\nlisten = \"127.0.0.1:2\"\n\
                 [[worker]]\nname = \"b\"\nlisten = \"127.0.0.1:3\"\n\
                 [[worker]]\nname = \"c\"\nlisten = \"127.0.0.1:4\"\nhost = \"far\"\n"
            )
        };
        let path = dir.path().join("cluster.toml");
        let cfg = ClusterConfig::parse(&text(""), &path).unwrap();
        assert_eq!(cfg.workers_sharing_machine("a"), 2);
        assert_eq!(cfg.workers_sharing_machine("c"), 1);
        // 1 GiB free: a quarter, split over a's machine's two workers.
        let gib = 1u64 << 30;
        assert_eq!(cfg.pretouch_bytes("a", Some(gib)), 128 << 20);
        assert_eq!(cfg.pretouch_bytes("c", Some(gib)), 256 << 20);
        let cfg = ClusterConfig::parse(&text("pretouch_mb = 150"), &path).unwrap();
        assert_eq!(cfg.pretouch_bytes("a", Some(gib)), 150_000_000);
    }
}
