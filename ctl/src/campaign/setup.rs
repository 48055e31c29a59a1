//! The campaign's cluster: its config, its workers' own disks (a tmpfs
//! each, as root), its start in namespaces or as processes, its input
//! files and their references; the resource sampler; and the checks made
//! once everything is healed (stored files, catalog against disks,
//! resources flat, processes alive).

use super::check::{Replica, Verdict};
use super::inject::Target;
use super::jobs::{Driven, References};
use super::CampaignOptions;
use crate::ops::client::MasterClient;
use crate::ops::deploy::{Deployment, Keep, Netns, Processes};
use crate::ops::{files, local, netns, verify};
use crate::soak::Sample;
use anyhow::Context;
use common::config::ClusterConfig;
use common::wire::BlockInfo;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const WORKERS: usize = 5;
const TOKEN: &str = "campaign";
/// Each worker's own disk (a tmpfs, as root).
const DISK_SIZE: &str = "256m";
/// The emulated disk's and NIC's rates (a slow one runs at a share).
pub const DISK_MBS: f64 = 200.0;
pub const NIC_MBPS: f64 = 200.0;
/// How long the cluster may take to heal once the faults end.
const SETTLE: Duration = Duration::from_secs(120);
/// How long the cluster rests (no job) before its resources are read at
/// rest: idle pooled connections (10 s) gone (a worker's idle blocking
/// threads stay an hour and are told apart by its metrics).
const REST: Duration = Duration::from_secs(30);
/// Readings at rest, 2 s apart; each figure the least of them.
const REST_READS: usize = 5;
/// Growth at rest that fails: more than 10%, and for descriptors and
/// threads more than 2 as well, for memory more than `REST_SLACK_KB` (a
/// worker's heap at rest is about a megabyte: a leak of 1.5 kB a job
/// shows over a campaign's 700 jobs).
const REST_LIMIT: f64 = 0.10;
const REST_SLACK_KB: u64 = 1024;

/// Where the campaign's cluster runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Deploy {
    /// Namespaces when root can make them, else processes.
    Auto,
    Processes,
    /// Namespaces `<prefix>*` on 10.77.`third`.0/24 (root).
    Netns {
        prefix: String,
        third: u8,
    },
}

/// The cluster under test; stopped, its namespaces and disks removed,
/// when dropped.
pub struct Cluster {
    pub cfg: ClusterConfig,
    pub derived: ClusterConfig,
    pub run_dir: PathBuf,
    pub client: MasterClient,
    pub names: Vec<String>,
    pub refs: References,
    pub deployment: String,
    bin: PathBuf,
    layout: Option<netns::Layout>,
    /// (name, bytes) of the input files as loaded.
    inputs: Vec<(String, Vec<u8>)>,
    _down: Down,
}

/// Stops the cluster and unmounts its disks, however the campaign ends.
struct Down {
    run: PathBuf,
    deployment: Box<dyn Deployment + Send + Sync>,
    mounts: Vec<PathBuf>,
}

impl Drop for Down {
    fn drop(&mut self) {
        let _ = self.deployment.down(&self.run, true);
        for m in &self.mounts {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
    }
}

/// Unmounts whatever a crashed campaign left mounted under `work`.
fn unmount_under(work: &Path) {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return;
    };
    let work = std::path::absolute(work).unwrap_or(work.to_owned());
    for line in mounts.lines() {
        if let Some(at) = line.split_whitespace().nth(1) {
            if Path::new(at).starts_with(&work) {
                let _ = Command::new("umount").arg("-l").arg(at).status();
            }
        }
    }
}

/// The campaign's cluster.toml. Its workers fault no buffers in
/// (`pretouch_mb = 0`): they restart dozens of times a campaign, and its
/// small jobs would not use the 1 GiB each that "auto" gives.
fn config_text(work: &Path, ports: &[u16], tls: bool) -> String {
    let mut t = format!(
        "[cluster]\ntoken = \"{TOKEN}\"\nreplication = 3\nheartbeat_ms = {}\n\
         worker_timeout_ms = {}\nmax_task_attempts = 6\nseed = 1\ndata_dir = \"{}\"\n\n\
         [master]\nlisten = \"127.0.0.1:{}\"\nretained_jobs = {}\n\n\
         [workers]\nslots = 2\ndisk_mbs = {DISK_MBS}\nnic_mbps = {NIC_MBPS}\npretouch_mb = 0\n",
        (super::TIMING.heartbeat_s * 1000.0) as u64,
        (super::TIMING.worker_timeout_s * 1000.0) as u64,
        work.join("data").display(),
        ports[0],
        super::jobs::RETAINED_JOBS
    );
    for (i, p) in ports[1..].iter().enumerate() {
        let name = format!("w{}", i + 1);
        t += &format!(
            "\n[[worker]]\nname = \"{name}\"\nlisten = \"127.0.0.1:{p}\"\ndata_dir = \"{}\"\n",
            work.join("disks").join(&name).display()
        );
    }
    if tls {
        t += "\n[tls]\nenabled = true\n";
    }
    t
}

fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(held
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()?)
}

impl Cluster {
    /// Writes the config in `opts.work` (emptied first), gives each worker
    /// its own tmpfs disk as root, starts the cluster, loads the text and
    /// the records and computes their references.
    pub async fn start(opts: &CampaignOptions) -> anyhow::Result<Cluster> {
        // What an interrupted campaign left: its processes and namespaces
        // (recorded in its run directory), then its disks.
        let _ = local::down(&opts.work.join("run"));
        unmount_under(&opts.work);
        if opts.work.exists() {
            std::fs::remove_dir_all(&opts.work)
                .with_context(|| format!("cleaning {}", opts.work.display()))?;
        }
        std::fs::create_dir_all(&opts.work)?;
        let work = std::path::absolute(&opts.work)?;
        let root = netns::require_root().is_ok();
        let (deployment, layout): (Box<dyn Deployment + Send + Sync>, _) = match &opts.deploy {
            Deploy::Processes => (Box::new(Processes), None),
            Deploy::Auto if !root => (Box::new(Processes), None),
            d => {
                // A seed's own namespaces and subnet (or the next subnet
                // free in this namespace): two campaigns of different
                // seeds can run at once.
                let (prefix, third) = match d {
                    Deploy::Netns { prefix, third } => (prefix.clone(), *third),
                    _ => (
                        format!("mrc{}-", opts.seed % 1000),
                        netns::free_third(100 + (opts.seed % 100) as u8)?,
                    ),
                };
                let n = Netns {
                    prefix: prefix.clone(),
                    third,
                    host_link: true,
                };
                (Box::new(n), Some((prefix, third)))
            }
        };
        let path = work.join("cluster.toml");
        std::fs::write(
            &path,
            config_text(&work, &free_ports(WORKERS + 1)?, opts.tls),
        )?;
        let cfg = ClusterConfig::load(&path)?;
        let mut down = Down {
            run: local::run_dir(&cfg),
            deployment,
            mounts: Vec::new(),
        };
        if root {
            for w in &cfg.worker {
                let at = cfg.worker_data_dir(&w.name);
                std::fs::create_dir_all(&at)?;
                let ok = Command::new("mount")
                    .args(["-t", "tmpfs", "-o", &format!("size={DISK_SIZE}"), "tmpfs"])
                    .arg(&at)
                    .status()?
                    .success();
                anyhow::ensure!(ok, "mounting a tmpfs at {}", at.display());
                down.mounts.push(at);
            }
        }
        down.deployment
            .start(&cfg, Keep::Everything, &opts.bin)
            .await?;
        let derived = down.deployment.config(&cfg)?;
        let layout = match layout {
            Some((prefix, third)) => {
                Some(netns::Layout::plan_in(&prefix, &cfg, third)?.with_host_link())
            }
            None => None,
        };
        let client =
            MasterClient::new(derived.master_url(), TOKEN).with_tls(derived.client_tls()?.as_ref());
        let [text, recs] =
            crate::chaos::load_inputs(&client, opts.seed, opts.input_blocks, opts.block_bytes)
                .await?;
        let inputs = vec![("text".to_owned(), text), ("recs".to_owned(), recs)];
        let refs = References {
            counts: Arc::new(verify::wordcount_reference(&inputs[0].1)?),
            sorted: Arc::new(verify::sort_reference(&inputs[1].1)?),
        };
        Ok(Cluster {
            names: cfg.worker.iter().map(|w| w.name.clone()).collect(),
            run_dir: local::run_dir(&cfg),
            deployment: down.deployment.name().to_owned(),
            bin: opts.bin.clone(),
            derived,
            cfg,
            client,
            refs,
            layout,
            inputs,
            _down: down,
        })
    }

    /// What the injector acts on.
    pub fn target(&self) -> anyhow::Result<Target> {
        Ok(Target {
            cfg: self.cfg.clone(),
            derived: self.derived.clone(),
            bin: self.bin.clone(),
            layout: self.layout.clone(),
            own_disks: !self._down.mounts.is_empty(),
            http: self.client.http().clone(),
            token: TOKEN.into(),
            disk_mbs: DISK_MBS,
            nic_mbps: NIC_MBPS,
        })
    }

    fn addr(&self, worker: &str) -> String {
        self.derived
            .worker
            .iter()
            .find(|w| w.name == worker)
            .map(|w| format!("{}://{}", self.derived.scheme(), w.listen))
            .unwrap_or_default()
    }

    /// What the sampler reads: the processes of the run and each node's
    /// metrics (its heap in use).
    pub fn probes(&self) -> Probes {
        let master = format!("{}/metrics", self.derived.master_url());
        Probes {
            run_dir: self.run_dir.clone(),
            http: self.client.http().clone(),
            metrics: std::iter::once(("master".to_owned(), master))
                .chain(
                    self.names
                        .iter()
                        .map(|w| (w.clone(), format!("{}/metrics", self.addr(w)))),
                )
                .collect(),
        }
    }

    /// Every replica the catalog names, and every one the workers list.
    async fn replicas(&self) -> anyhow::Result<(Vec<Replica>, Vec<Replica>)> {
        let mut cat = Vec::new();
        for f in self.client.files().await? {
            let info = self.client.file(&f.name).await?;
            for (i, holders) in info.replicas.iter().enumerate() {
                for w in holders {
                    cat.push((f.name.clone(), i as u32, w.clone()));
                }
            }
        }
        let mut disks = Vec::new();
        for w in &self.names {
            let url = format!("{}/blocks", self.addr(w));
            let r = self
                .client
                .http()
                .get(&url)
                .bearer_auth(TOKEN)
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .with_context(|| format!("GET {url}"))?;
            let list: Vec<BlockInfo> = crate::ops::client::check(r, &url).await?.json().await?;
            disks.extend(list.into_iter().map(|b| (b.file, b.index, w.clone())));
        }
        Ok((cat, disks))
    }
}

/// Samples every process of the cluster and this one every `sample_s`
/// until `stop` (descriptors and threads read each second, each sample
/// keeping the fewest: what the process held all along). A process is
/// named with its pid, so a restarted one is a series of its own.
pub fn sample(
    probes: Probes,
    t0: Instant,
    sample_s: f64,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Vec<Sample>> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        let mut least: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
        let mut next = 0.0;
        while !stop.load(Ordering::Relaxed) {
            let t = t0.elapsed().as_secs_f64();
            let mut procs: Vec<(String, u32)> = local::processes(&probes.run_dir)
                .unwrap_or_default()
                .into_iter()
                .map(|p| (format!("{}#{}", p.name, p.pid), p.pid))
                .collect();
            procs.push((format!("client#{}", std::process::id()), std::process::id()));
            for (name, pid) in procs {
                let Ok((rss, fds, threads)) = crate::soak::proc_figures(pid) else {
                    continue;
                };
                let e = least.entry(name.clone()).or_insert((u64::MAX, u64::MAX, 0));
                *e = (e.0.min(fds), e.1.min(threads), e.2.max(fds));
                if t >= next {
                    let (fds, threads, peak) = least.remove(&name).unwrap_or((fds, threads, fds));
                    let (heap_kb, _) = probes.figures(&name).await;
                    out.push(Sample {
                        t_s: t,
                        process: name,
                        rss_kb: rss,
                        fds,
                        threads,
                        fds_peak: peak,
                        disk_kb: 0,
                        heap_kb,
                        pooled_kb: None,
                    });
                }
            }
            if t >= next {
                next += sample_s;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        out
    })
}

/// What the sampler reads besides /proc.
pub struct Probes {
    run_dir: PathBuf,
    http: reqwest::Client,
    /// (node, its metrics URL).
    metrics: Vec<(String, String)>,
}

impl Probes {
    /// The heap in use (kB) and the threads idle in the blocking pool a
    /// node's metrics report, for a process named `<node>#<pid>`; none when
    /// the node does not answer within a few seconds (cut off, stopped) or
    /// does not report the figure.
    async fn figures(&self, process: &str) -> (Option<u64>, Option<u64>) {
        let Some(text) = self.metrics_text(process).await else {
            return (None, None);
        };
        let gauge = if process.starts_with("master#") {
            "mrtb_heap_in_use_bytes"
        } else {
            "mrtb_worker_heap_in_use_bytes"
        };
        (crate::soak::metric_kb(&text, gauge), idle_threads(&text))
    }

    async fn metrics_text(&self, process: &str) -> Option<String> {
        let node = process.split('#').next()?;
        let (_, url) = self.metrics.iter().find(|(w, _)| w == node)?;
        self.http
            .get(url)
            .bearer_auth(TOKEN)
            .timeout(Duration::from_secs(3))
            .send()
            .await
            .ok()?
            .error_for_status()
            .ok()?
            .text()
            .await
            .ok()
    }
}

/// The threads a worker's metrics report idle in its blocking pool
/// (`mrtb_worker_blocking_threads{state="idle"}`).
fn idle_threads(metrics: &str) -> Option<u64> {
    metrics
        .lines()
        .find(|l| l.starts_with("mrtb_worker_blocking_threads{") && l.contains("state=\"idle\""))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
}

/// One process's resources at rest: the least of `REST_READS` readings.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Rest {
    /// `before` (after the warm-up, before any fault) or `after` (once
    /// every job has ended).
    pub when: &'static str,
    /// The node (`master`, `w1`, ...), and the process (`<node>#<pid>`).
    pub node: String,
    pub process: String,
    pub rss_kb: u64,
    /// The node's heap in use (its metrics); none when it did not answer.
    pub heap_kb: Option<u64>,
    pub fds: u64,
    pub threads: u64,
    /// Of `threads`, those idle in the runtime's blocking pool (a worker's
    /// metrics); none where not reported.
    pub idle_threads: Option<u64>,
}

/// Lets the cluster rest `REST` (no job runs), then reads every cluster
/// process `REST_READS` times.
pub async fn at_rest(probes: &Probes, when: &'static str) -> Vec<Rest> {
    tokio::time::sleep(REST).await;
    let mut least: std::collections::BTreeMap<String, Rest> = Default::default();
    for k in 0..REST_READS {
        if k > 0 {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        for p in local::processes(&probes.run_dir).unwrap_or_default() {
            let Ok((rss, fds, threads)) = crate::soak::proc_figures(p.pid) else {
                continue;
            };
            let process = format!("{}#{}", p.name, p.pid);
            let (heap, idle) = probes.figures(&process).await;
            let e = least.entry(process.clone()).or_insert(Rest {
                when,
                node: p.name.clone(),
                process,
                rss_kb: rss,
                heap_kb: heap,
                fds,
                threads,
                idle_threads: idle,
            });
            e.rss_kb = e.rss_kb.min(rss);
            e.heap_kb = match (e.heap_kb, heap) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            e.fds = e.fds.min(fds);
            // The reading with the fewest threads other than idle ones.
            if working(threads, idle) < working(e.threads, e.idle_threads) {
                (e.threads, e.idle_threads) = (threads, idle);
            }
        }
    }
    least.into_values().collect()
}

/// Threads other than those idle in the blocking pool, where that is known.
fn working(threads: u64, idle: Option<u64>) -> u64 {
    threads.saturating_sub(idle.unwrap_or(0))
}

/// Memory, descriptors and threads at rest once every job has ended,
/// against the same node at rest after the warm-up, before any fault (a
/// node restarted during the campaign is a new process that has run the
/// quiet minutes' jobs: as warm). A node's memory is its heap in use
/// (what a leak grows; its resident size, reported beside it, also keeps
/// what the allocator holds free: a restarted master's replay of its
/// journal, a burst of jobs), or its resident size where the heap was not
/// read. A node's threads are those not idle in its runtime's blocking
/// pool where both readings report it: a worker keeps idle blocking threads
/// for an hour (`worker::node::BLOCKING_KEEP_ALIVE`), so a burst beyond its
/// core pool (a slow disk) leaves a higher count that is not a leak, while
/// a blocking task stuck for good is not idle and counts.
pub fn rested(before: &[Rest], after: &[Rest]) -> Verdict {
    let mut p = Vec::new();
    let mut compared = Vec::new();
    for a in after {
        let Some(b) = before.iter().find(|b| b.node == a.node) else {
            p.push(format!("{}: not read at rest before the faults", a.process));
            continue;
        };
        let grew = |x: u64, y: u64| {
            if x == 0 {
                0.0
            } else {
                y as f64 / x as f64 - 1.0
            }
        };
        let (what, m0, m1) = match (b.heap_kb, a.heap_kb) {
            (Some(x), Some(y)) => ("heap in use (kB)", x, y),
            _ => ("resident memory (kB)", b.rss_kb, a.rss_kb),
        };
        let mut found = Vec::new();
        if grew(m0, m1) > REST_LIMIT && m1 > m0 + REST_SLACK_KB {
            found.push(format!("{what} {m0} -> {m1}"));
        }
        let threads = match (b.idle_threads, a.idle_threads) {
            (Some(i), Some(j)) => (
                "threads not idle in the blocking pool",
                working(b.threads, Some(i)),
                working(a.threads, Some(j)),
            ),
            _ => ("threads", b.threads, a.threads),
        };
        for (what, x, y) in [("open descriptors", b.fds, a.fds), threads] {
            if grew(x, y) > REST_LIMIT && y > x + 2 {
                found.push(format!("{what} {x} -> {y}"));
            }
        }
        if found.is_empty() {
            compared.push(a.node.clone());
        } else {
            p.push(format!(
                "{} (against {}): {}",
                a.process,
                b.process,
                found.join(", ")
            ));
        }
    }
    if after.is_empty() {
        p.push("no process read at rest after the jobs".into());
    }
    Verdict::of(
        "memory, descriptors and threads at rest flat",
        p,
        format!(
            "within 10% at rest after the jobs of their figures at rest before the faults: {}",
            compared.join(", ")
        ),
    )
}

/// The checks once the quiet minutes' jobs have ended: every file whole
/// and at its factor, the input files and
/// kept outputs read back unchanged, the catalog agrees with the disks
/// (polled until it does, at most a minute), and no process exited
/// unasked.
pub async fn end_checks(c: &Cluster, driven: &Driven) -> EndChecks {
    // Every job has ended: nothing is being written, and whatever the
    // quiet minutes' jobs stored is at its factor too.
    let until = Instant::now() + Duration::from_secs(60);
    let mut whole = settled(c, true).await;
    while !whole.is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(1)).await;
        whole = settled(c, true).await;
    }
    let mut verdicts = vec![Verdict::of(
        "every file whole and at its factor once the jobs ended",
        whole,
        "no file left incomplete or under-replicated".into(),
    )];
    let mut lost = Vec::new();
    for (name, want) in &c.inputs {
        match files::read_file(&c.client, name).await {
            Ok(got) if &got == want => {}
            Ok(_) => lost.push(format!("{name} changed")),
            Err(e) => lost.push(format!("{name} cannot be read: {e:#}")),
        }
    }
    for (name, w) in &driven.kept {
        match files::read_file(&c.client, name).await {
            Ok(got) if c.refs.equal(*w, &got) => {}
            Ok(_) => lost.push(format!("{name} changed")),
            Err(e) => lost.push(format!("{name} cannot be read: {e:#}")),
        }
    }
    verdicts.push(deleted_stay_deleted(c, driven).await);
    verdicts.push(Verdict::of(
        "no stored file lost or changed",
        lost,
        format!(
            "{} inputs and {} kept outputs read back equal",
            c.inputs.len(),
            driven.kept.len()
        ),
    ));
    let until = Instant::now() + Duration::from_secs(60);
    let mut cat = Verdict::of(
        "the catalog agrees with the workers' disks",
        vec!["not read".into()],
        String::new(),
    );
    while Instant::now() < until {
        if let Ok((a, b)) = c.replicas().await {
            cat = super::check::catalog(&a, &b);
            if cat.passed {
                break;
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    verdicts.push(cat);
    verdicts.push(leftovers(c).await);
    let mut exits = Vec::new();
    for p in local::processes(&c.run_dir).unwrap_or_default() {
        if !local::is_running(p.pid) {
            exits.push(format!("{} exited", p.name));
        }
    }
    verdicts.push(Verdict::of(
        "no process exited unasked",
        exits,
        "master and every worker running".into(),
    ));
    EndChecks { verdicts }
}

/// Every output whose delete the master acknowledged is absent from its
/// catalog at the end (a delete lost across a master restart would bring
/// it back), and every output the campaign meant to delete was deleted
/// within a minute of trying through the faults.
async fn deleted_stay_deleted(c: &Cluster, driven: &Driven) -> Verdict {
    let mut p = Vec::new();
    match c.client.files().await {
        Ok(fs) => {
            let back: Vec<&str> = fs
                .iter()
                .map(|f| f.name.as_str())
                .filter(|n| driven.deleted.iter().any(|d| d == n))
                .collect();
            if !back.is_empty() {
                p.push(format!(
                    "deleted (acknowledged) and back in the catalog: {}",
                    back.join(", ")
                ));
            }
        }
        Err(e) => p.push(format!("files: {e:#}")),
    }
    if !driven.undeleted.is_empty() {
        p.push(format!(
            "not deleted within a minute of trying: {}",
            driven.undeleted.join(", ")
        ));
    }
    Verdict::of(
        "deleted files stay deleted",
        p,
        format!(
            "{} deletes acknowledged, none back in the catalog",
            driven.deleted.len()
        ),
    )
}

/// Map output left on the workers' disks once every job has ended (each
/// worker's `shuffle/<job>/`), polled for a minute while the orders to
/// delete it reach the workers: what is still there then was never
/// deleted, and fills the disk job after job.
async fn leftovers(c: &Cluster) -> Verdict {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let mut p = Vec::new();
        for w in &c.names {
            let root = c.cfg.worker_data_dir(w).join("shuffle");
            let jobs: Vec<String> = std::fs::read_dir(&root)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !jobs.is_empty() {
                let kb = crate::soak::disk_kb(&root);
                p.push(format!(
                    "{w} keeps the map output of {} ended jobs ({kb} kB)",
                    jobs.len()
                ));
            }
        }
        if p.is_empty() || Instant::now() > until {
            return Verdict::of(
                "no map output of ended jobs left on the workers' disks",
                p,
                "every worker's shuffle directory empty".into(),
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

pub struct EndChecks {
    pub verdicts: Vec<Verdict>,
}

/// The cluster settles once the last fault is healed: every worker alive
/// and every declared file at its factor within two minutes (polled).
pub async fn healed(c: &Cluster) -> Verdict {
    let started = Instant::now();
    let deadline = started + SETTLE;
    let mut settle = vec!["the cluster never answered".to_owned()];
    while Instant::now() < deadline {
        settle = settled(c, false).await;
        if settle.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Verdict::of(
        "healed: every worker alive, every file at its factor",
        settle,
        format!(
            "{:.0} s after the last heal (at most two minutes)",
            started.elapsed().as_secs_f64()
        ),
    )
}

/// What keeps the cluster from being healed now (empty: healed): a worker
/// not alive, a stored file under its factor, and with `whole` (no job
/// running) a file still being written.
async fn settled(c: &Cluster, whole: bool) -> Vec<String> {
    let mut p = Vec::new();
    match c.client.workers().await {
        Ok(ws) => {
            for w in ws.iter().filter(|w| !w.alive) {
                p.push(format!("{} not alive", w.name));
            }
        }
        Err(e) => return vec![format!("the master does not answer: {e:#}")],
    }
    match c.client.files().await {
        Ok(fs) => {
            for f in fs.iter().filter(|f| f.replication.is_some()) {
                if !f.complete && whole {
                    p.push(format!("{} left incomplete", f.name));
                } else if f.complete && !f.under_replicated().is_empty() {
                    p.push(format!("{} under-replicated", f.name));
                }
            }
        }
        Err(e) => p.push(format!("files: {e:#}")),
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(
        when: &'static str,
        process: &str,
        rss: u64,
        heap: Option<u64>,
        fds: u64,
        thr: u64,
    ) -> Rest {
        Rest {
            when,
            node: process.split('#').next().unwrap().to_owned(),
            process: process.to_owned(),
            rss_kb: rss,
            heap_kb: heap,
            fds,
            threads: thr,
            idle_threads: None,
        }
    }

    fn idle(rest: Rest, idle: u64) -> Rest {
        Rest {
            idle_threads: Some(idle),
            ..rest
        }
    }

    #[test]
    fn threads_idle_in_a_workers_blocking_pool_are_not_growth_and_stuck_ones_are() {
        // The ninth campaign's first run: w3 went 11 -> 14 threads, the
        // three new ones idle blocking threads kept after a burst.
        let before = [idle(r("before", "w3#5", 60_000, Some(3_000), 14, 11), 8)];
        let kept = [idle(r("after", "w3#5", 60_000, Some(3_000), 14, 14), 11)];
        let v = rested(&before, &kept);
        assert!(v.passed, "{}", v.detail);
        // The same count with the new threads busy (blocking work stuck at
        // rest) fails, naming what it compared.
        let stuck = [idle(r("after", "w3#5", 60_000, Some(3_000), 14, 14), 8)];
        let v = rested(&before, &stuck);
        assert!(
            !v.passed
                && v.detail
                    .contains("threads not idle in the blocking pool 3 -> 6"),
            "{}",
            v.detail
        );
        // A node whose pool is not reported is judged on all its threads.
        let v = rested(&before, &[r("after", "w3#5", 60_000, Some(3_000), 14, 14)]);
        assert!(
            !v.passed && v.detail.contains("threads 11 -> 14"),
            "{}",
            v.detail
        );
    }

    #[test]
    fn the_idle_pool_threads_are_read_from_a_workers_metrics() {
        let text = "# TYPE mrtb_worker_blocking_threads gauge\n\
            mrtb_worker_blocking_threads{worker=\"w1\",state=\"busy\"} 3\n\
            mrtb_worker_blocking_threads{worker=\"w1\",state=\"idle\"} 9\n";
        assert_eq!(idle_threads(text), Some(9));
        assert_eq!(idle_threads("mrtb_worker_heap_in_use_bytes 5\n"), None);
    }

    #[test]
    fn at_rest_a_node_is_judged_by_its_heap_and_a_restarted_one_against_its_first_life() {
        let before = [
            r("before", "master#1", 20_000, None, 12, 6),
            r("before", "w1#2", 60_000, Some(3_000), 14, 11),
            r("before", "w2#3", 60_000, Some(3_000), 14, 11),
        ];
        // w1's resident size grew (the allocator keeps pages) and its heap
        // by 900 kB, under the slack; w2 restarted (another pid) with two
        // more threads: within.
        let after = [
            r("after", "master#1", 21_000, None, 13, 6),
            r("after", "w1#2", 90_000, Some(3_900), 15, 12),
            r("after", "w2#9", 50_000, Some(2_900), 14, 13),
        ];
        let v = rested(&before, &after);
        assert!(v.passed, "{}", v.detail);
        assert!(v.detail.contains("master, w1, w2"), "{}", v.detail);
        // A heap that grew, descriptors that grew by more than 2 and 10%.
        let leaky = [
            r("after", "master#1", 20_000, None, 12, 6),
            r("after", "w1#2", 60_000, Some(4_100), 14, 11),
            r("after", "w2#9", 60_000, Some(3_000), 18, 11),
        ];
        let v = rested(&before, &leaky);
        assert!(!v.passed);
        assert!(
            v.detail
                .contains("w1#2 (against w1#2): heap in use (kB) 3000 -> 4100"),
            "{}",
            v.detail
        );
        assert!(
            v.detail
                .contains("w2#9 (against w2#3): open descriptors 14 -> 18"),
            "{}",
            v.detail
        );
        assert!(!v.detail.contains("master"), "{}", v.detail);
        // The master is judged by its resident size.
        let v = rested(&before, &[r("after", "master#1", 23_000, None, 12, 6)]);
        assert!(
            !v.passed && v.detail.contains("resident memory (kB) 20000 -> 23000"),
            "{}",
            v.detail
        );
    }
}
