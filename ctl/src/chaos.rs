//! The chaos run (`master chaos`, `make chaos`): a cluster of real
//! processes (5 workers, replication 3, the block scanner on) runs a seeded
//! mix of wordcount, sort and input-sink jobs while, on a seeded schedule, a
//! worker is killed with SIGKILL every 20 s and started again 10 s later,
//! one worker is stopped with SIGSTOP for 30 s, and one byte of a random
//! stored replica is flipped every 10 s. Then it waits for every block to be
//! back at its factor and every flipped replica to be deleted or replaced,
//! checks every output against coreutils, and writes what it saw to
//! `results/chaos/<stamp>/` (summary.md, runs.csv one row a job, events.csv
//! one row a fault, meta.json).

use crate::ops::client::MasterClient;
use crate::ops::loader::{self, Generator, LoadSpec, Source};
use crate::ops::{files, local, verify};
use crate::results::{Provenance, VerdictRun};
use anyhow::{bail, Context};
use common::config::ClusterConfig;
use common::wire::{JobState, JobSubmit};
use common::JobId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use workloads::Workload;

const TOKEN: &str = "chaos";
const WORKERS: usize = 5;
/// Faults go on at least this long, and until every job has ended.
const MIN_FAULT_WINDOW_S: f64 = 60.0;
/// No new fault after this, whatever the jobs do.
const MAX_FAULT_WINDOW_S: f64 = 300.0;
/// How long the cluster may take to heal after the last fault.
const REPAIR_LIMIT: Duration = Duration::from_secs(120);

pub struct ChaosOptions {
    pub results: PathBuf,
    /// Scratch space: the cluster's config, block stores and logs.
    pub work: PathBuf,
    pub bin: PathBuf,
    pub seed: u64,
    pub jobs: u32,
}

/// What the run counted; summary.md and meta.json carry it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChaosFigures {
    pub jobs_submitted: u32,
    pub jobs_succeeded: u32,
    pub outputs_checked: u32,
    pub outputs_equal: u32,
    pub kills: u32,
    pub restarts: u32,
    pub stops: u32,
    pub corruptions_injected: u32,
    /// Damaged replicas the workers deleted (on reads, serving, scanning).
    pub corruptions_detected: u64,
    /// Flipped replicas gone or identical to a good one at the end.
    pub corruptions_repaired: u32,
    pub maps_rerun: u64,
    pub blocks_copied: u64,
    pub fault_window_s: f64,
    /// From the last fault (a restart or a resume included) until every
    /// block was at its factor and every flipped replica repaired.
    pub healed_after_last_fault_s: Option<f64>,
    /// The same, from the last damaging fault (a kill, a stop or a flip).
    pub healed_after_last_damage_s: Option<f64>,
    /// Processes that exited without being killed by the run.
    pub unexpected_exits: Vec<String>,
}

/// The verdict's first lines, shared with the soak run: every job
/// succeeded, every checked output equal.
pub(crate) fn job_problems(
    succeeded: u32,
    submitted: u32,
    equal: u32,
    checked: u32,
) -> Vec<String> {
    let mut p = Vec::new();
    if succeeded != submitted {
        p.push(format!("{succeeded} of {submitted} jobs succeeded"));
    }
    if equal != checked {
        p.push(format!("{equal} of {checked} outputs equal the reference"));
    }
    p
}

impl ChaosFigures {
    /// The run's verdict: what the reliability issue asks of it.
    pub fn problems(&self) -> Vec<String> {
        let mut p = job_problems(
            self.jobs_succeeded,
            self.jobs_submitted,
            self.outputs_equal,
            self.outputs_checked,
        );
        if self.corruptions_repaired != self.corruptions_injected {
            p.push(format!(
                "{} of {} corruptions repaired",
                self.corruptions_repaired, self.corruptions_injected
            ));
        }
        match self.healed_after_last_fault_s {
            Some(s) if s <= 60.0 => {}
            Some(s) => p.push(format!("healed {s:.1} s after the last fault (limit 60 s)")),
            None => p.push("the cluster did not heal".into()),
        }
        if !self.unexpected_exits.is_empty() {
            p.push(format!("processes exited: {:?}", self.unexpected_exits));
        }
        p
    }
}

/// One fault, as events.csv lists it.
#[derive(Clone, Debug, Serialize)]
struct Event {
    t_s: f64,
    event: &'static str,
    worker: String,
    detail: String,
}

/// One job, as runs.csv lists it.
#[derive(Clone, Debug, Serialize)]
struct JobRow {
    job: String,
    workload: String,
    state: String,
    jct_s: f64,
    output_checked: bool,
    output_equal: bool,
    error: String,
}

/// Stops the cluster when the run ends, however it ends.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = local::down(&self.0);
    }
}

/// Sends `sig` (`-KILL`, `-STOP`, `-CONT`) to process `pid`.
pub(crate) fn signal(pid: u32, sig: &str) -> anyhow::Result<()> {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()?
        .success();
    if !ok {
        bail!("kill {sig} {pid} failed");
    }
    Ok(())
}

fn pid_of(run: &Path, name: &str) -> anyhow::Result<u32> {
    local::processes(run)?
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.pid)
        .with_context(|| format!("no process {name}"))
}

/// A worker's count of damaged replicas it deleted.
async fn dropped_by(client: &MasterClient, addr: &str) -> u64 {
    let resp = client
        .http()
        .get(format!("{addr}/status"))
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    match resp {
        Ok(r) => r
            .json::<serde_json::Value>()
            .await
            .ok()
            .and_then(|v| v["corrupt_dropped"].as_u64())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

/// The file and index a block id names (`<file>.b<index>`).
fn split_block(id: &common::BlockId) -> (String, usize) {
    let s = id.as_str();
    match s.rsplit_once(".b") {
        Some((file, i)) => (file.to_owned(), i.parse().unwrap_or(usize::MAX)),
        None => (s.to_owned(), usize::MAX),
    }
}

/// A flipped byte: which replica, and where.
struct Flip {
    worker: String,
    path: PathBuf,
    block: common::BlockId,
}

/// Flips one byte of a random stored replica of `worker`; None if it holds none.
fn flip_one(
    rng: &mut ChaCha8Rng,
    cfg: &ClusterConfig,
    worker: &str,
) -> anyhow::Result<Option<Flip>> {
    let dir = cfg.worker_data_dir(worker).join("blocks");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "blk"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Ok(None);
    }
    let path = files[rng.gen_range(0..files.len())].clone();
    let len = std::fs::metadata(&path)?.len();
    if len == 0 {
        return Ok(None);
    }
    let at = rng.gen_range(0..len);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)?;
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(&mut b)?;
    b[0] ^= 1 << rng.gen_range(0..8);
    f.seek(SeekFrom::Start(at))?;
    f.write_all(&b)?;
    f.sync_all()?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    Ok(Some(Flip {
        worker: worker.to_owned(),
        block: common::BlockId::new(stem)?,
        path,
    }))
}

/// Runs the chaos run; returns its results directory and figures.
pub async fn run(opts: &ChaosOptions) -> anyhow::Result<(PathBuf, ChaosFigures)> {
    // Taken before anything runs: the commit and tree the run was made at.
    let provenance = Provenance::capture(common::unix_ms());
    let c = Cluster::start(opts).await?;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let t0 = Instant::now();
    let submitter = submit_jobs(&c.client, &mut rng, opts.jobs, t0);
    let mut figures = ChaosFigures {
        jobs_submitted: opts.jobs,
        ..Default::default()
    };
    let faults = Faults::inject(&c, opts, rng, t0, &submitter, &mut figures).await?;
    let ids = submitter.await?;
    heal(&c, &faults, t0, &mut figures).await;
    count_cluster(&c, &mut figures).await?;
    let rows = check_jobs(&c, &ids, &mut figures).await?;
    figures.jobs_submitted = ids.len() as u32 + (opts.jobs - ids.len() as u32);
    write_results(opts, provenance, &rows, &faults.events, &figures)
}

/// The cluster under test: its configuration and processes (stopped when
/// this is dropped), a client, and the reference outputs of its two files.
pub(crate) struct Cluster {
    pub(crate) cfg: ClusterConfig,
    pub(crate) run_dir: PathBuf,
    pub(crate) client: MasterClient,
    /// Every worker's name.
    names: Vec<String>,
    pub(crate) want_counts: Vec<(Vec<u8>, u64)>,
    pub(crate) want_sorted: Vec<u8>,
    _down: Down,
}

impl Cluster {
    /// Starts `WORKERS` workers and a master in `opts.work` (emptied
    /// first), loads the text and the records, and computes their
    /// references with coreutils.
    pub(crate) async fn start(opts: &ChaosOptions) -> anyhow::Result<Self> {
        Self::start_with(opts, "").await
    }

    /// [`Cluster::start`] with more `[master]` keys.
    pub(crate) async fn start_with(opts: &ChaosOptions, master_keys: &str) -> anyhow::Result<Self> {
        if opts.work.exists() {
            std::fs::remove_dir_all(&opts.work)
                .with_context(|| format!("cleaning {}", opts.work.display()))?;
        }
        std::fs::create_dir_all(&opts.work)?;
        let work = std::path::absolute(&opts.work)?;
        let cfg = local::write_loopback_config(
            &work,
            TOKEN,
            WORKERS,
            "replication = 3\nheartbeat_ms = 100\nworker_timeout_ms = 2000\nmax_task_attempts = 4\nseed = 1",
            "slots = 2\nscrub_mbps = 50",
        )?;
        let cfg = if master_keys.is_empty() {
            cfg
        } else {
            let text = std::fs::read_to_string(&cfg.path)?.replacen(
                "[master]\n",
                &format!("[master]\n{master_keys}\n"),
                1,
            );
            std::fs::write(&cfg.path, text)?;
            ClusterConfig::load(&cfg.path)?
        };
        local::start_with(&cfg, &opts.bin).await?;
        let run_dir = local::run_dir(&cfg);
        let down = Down(run_dir.clone());
        let client = MasterClient::new(cfg.master_url(), TOKEN);
        let [text, recs] = load_inputs(&client, opts.seed, 8, 1_000_000).await?;
        Ok(Cluster {
            want_counts: verify::wordcount_reference(&text)?,
            want_sorted: verify::sort_reference(&recs)?,
            names: cfg.worker.iter().map(|w| w.name.clone()).collect(),
            cfg,
            run_dir,
            client,
            _down: down,
        })
    }

    /// A worker's address.
    fn addr_of(&self, name: &str) -> String {
        self.cfg
            .worker
            .iter()
            .find(|w| w.name == name)
            .map(|w| format!("http://{}", w.listen))
            .unwrap_or_default()
    }
}

/// Loads `text` (`blocks` blocks of words) and `recs` (of 100-byte
/// records), blocks of `block_size` bytes at replication 3, generated from
/// `seed`; returns them as stored.
pub(crate) async fn load_inputs(
    client: &MasterClient,
    seed: u64,
    blocks: u32,
    block_size: u64,
) -> anyhow::Result<[Vec<u8>; 2]> {
    for (name, kind) in [("text", Generator::Text), ("recs", Generator::Records)] {
        loader::load(
            client,
            &LoadSpec {
                name: name.into(),
                source: Source::Generate { kind, blocks },
                block_size,
                replication: 3,
                seed,
                placement: Default::default(),
            },
        )
        .await?;
    }
    Ok([
        files::read_file(client, "text").await?,
        files::read_file(client, "recs").await?,
    ])
}

/// The jobs, a third each of wordcount, sort and input-sink, arriving at
/// seeded times over 40 s from `t0`, submitted by a task that returns
/// their ids.
fn submit_jobs(
    client: &MasterClient,
    rng: &mut ChaCha8Rng,
    jobs: u32,
    t0: Instant,
) -> tokio::task::JoinHandle<Vec<(JobId, Workload)>> {
    let mut arrivals: Vec<(f64, Workload)> = (0..jobs)
        .map(|i| {
            let w = [Workload::Wordcount, Workload::Sort, Workload::InputSink][i as usize % 3];
            (rng.gen_range(0.0..40.0), w)
        })
        .collect();
    arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let client = client.clone();
    tokio::spawn(async move {
        let mut ids: Vec<(JobId, Workload)> = Vec::new();
        for (i, (at, w)) in arrivals.into_iter().enumerate() {
            tokio::time::sleep_until((t0 + Duration::from_secs_f64(at)).into()).await;
            let mut job = JobSubmit::new(w, if w == Workload::Sort { "recs" } else { "text" });
            job.name = Some(format!("chaos-{i}"));
            if w.has_reduce() {
                job.reduces = Some(2);
                job.output = Some(format!("chaos-{i}.out"));
            }
            match client.submit(&job).await {
                Ok(id) => ids.push((id, w)),
                Err(e) => tracing::error!(error = %e, "submitting a chaos job failed"),
            }
        }
        ids
    })
}

/// The fault schedule and what it did: a flipped byte every 10 s from
/// 5 s, a SIGKILL every 20 s from 10 s (restarted 10 s later), one SIGSTOP
/// at 20 s for 30 s, each on a worker drawn among those not killed or
/// stopped now.
struct Faults {
    rng: ChaCha8Rng,
    events: Vec<Event>,
    flips: Vec<Flip>,
    next_flip: f64,
    next_kill: f64,
    stop_at: f64,
    /// The worker killed now, and when.
    killed: Option<(String, f64)>,
    /// The worker stopped now, its pid, and when.
    stopped: Option<(String, u32, f64)>,
    stop_done: bool,
    /// When the last fault (a restart or a resume included) and the last
    /// damaging one (a kill, a stop or a flip) happened.
    last_fault: f64,
    last_damage: f64,
}

impl Faults {
    /// Injects faults from `t0` for at least `MIN_FAULT_WINDOW_S` and until
    /// every job has ended (at most `MAX_FAULT_WINDOW_S`), then restarts or
    /// resumes what is still down.
    async fn inject(
        c: &Cluster,
        opts: &ChaosOptions,
        rng: ChaCha8Rng,
        t0: Instant,
        submitter: &tokio::task::JoinHandle<Vec<(JobId, Workload)>>,
        figures: &mut ChaosFigures,
    ) -> anyhow::Result<Faults> {
        let mut f = Faults {
            rng,
            events: Vec::new(),
            flips: Vec::new(),
            next_flip: 5.0,
            next_kill: 10.0,
            stop_at: 20.0,
            killed: None,
            stopped: None,
            stop_done: false,
            last_fault: 0.0,
            last_damage: 0.0,
        };
        let mut jobs_done_at: Option<f64> = None;
        let mut last_poll = -1.0f64;
        loop {
            let t = t0.elapsed().as_secs_f64();
            if t - last_poll >= 1.0 {
                last_poll = t;
                if jobs_done_at.is_none() && submitter.is_finished() {
                    let reports = c.client.jobs().await.unwrap_or_default();
                    let ended = reports.iter().filter(|r| r.state.is_done()).count();
                    if ended as u32 >= opts.jobs {
                        jobs_done_at = Some(t);
                    }
                }
            }
            let faulting =
                t < MAX_FAULT_WINDOW_S && (t < MIN_FAULT_WINDOW_S || jobs_done_at.is_none());
            // Restart / resume what is due, faulting or not.
            f.bring_back(c, opts, t, figures)?;
            if !faulting && f.killed.is_none() && f.stopped.is_none() {
                figures.fault_window_s = t;
                return Ok(f);
            }
            if faulting {
                f.next_faults(c, t, figures).await?;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn event(&mut self, t_s: f64, event: &'static str, worker: String, detail: String) {
        self.events.push(Event {
            t_s,
            event,
            worker,
            detail,
        });
    }

    /// Restarts the killed worker 10 s after its kill and resumes the
    /// stopped one 30 s after its stop.
    fn bring_back(
        &mut self,
        c: &Cluster,
        opts: &ChaosOptions,
        t: f64,
        figures: &mut ChaosFigures,
    ) -> anyhow::Result<()> {
        if let Some((w, at)) = self.killed.clone() {
            if t >= at + 10.0 {
                local::restart_worker(&c.cfg, &opts.bin, &w)?;
                figures.restarts += 1;
                self.event(t, "restart", w, String::new());
                self.last_fault = t;
                self.killed = None;
            }
        }
        if let Some((w, pid, at)) = self.stopped.clone() {
            if t >= at + 30.0 {
                signal(pid, "-CONT")?;
                self.event(t, "resume", w, String::new());
                self.last_fault = t;
                self.stopped = None;
            }
        }
        Ok(())
    }

    /// A worker drawn among those neither killed nor stopped now.
    fn draw_worker(&mut self, c: &Cluster) -> String {
        let out: Vec<&String> = self
            .killed
            .iter()
            .map(|k| &k.0)
            .chain(self.stopped.iter().map(|s| &s.0))
            .collect();
        let pool: Vec<&String> = c.names.iter().filter(|w| !out.contains(w)).collect();
        pool[self.rng.gen_range(0..pool.len())].clone()
    }

    /// The flip, kill and stop that are due at `t`, in that order.
    async fn next_faults(
        &mut self,
        c: &Cluster,
        t: f64,
        figures: &mut ChaosFigures,
    ) -> anyhow::Result<()> {
        if t >= self.next_flip {
            self.next_flip += 10.0;
            let w = self.draw_worker(c);
            if let Some(f) = flip_one(&mut self.rng, &c.cfg, &w)? {
                figures.corruptions_injected += 1;
                self.event(t, "flip", w, f.block.to_string());
                self.flips.push(f);
                self.last_fault = t;
                self.last_damage = t;
            }
        }
        if t >= self.next_kill && self.killed.is_none() {
            self.next_kill += 20.0;
            let w = self.draw_worker(c);
            // Its count of dropped replicas dies with it: take it first.
            figures.corruptions_detected += dropped_by(&c.client, &c.addr_of(&w)).await;
            signal(pid_of(&c.run_dir, &w)?, "-KILL")?;
            figures.kills += 1;
            self.event(t, "kill", w.clone(), String::new());
            self.killed = Some((w, t));
            self.last_fault = t;
            self.last_damage = t;
        }
        if !self.stop_done && t >= self.stop_at {
            self.stop_done = true;
            let w = self.draw_worker(c);
            let pid = pid_of(&c.run_dir, &w)?;
            signal(pid, "-STOP")?;
            figures.stops += 1;
            self.event(t, "stop", w.clone(), String::new());
            self.stopped = Some((w, pid, t));
            self.last_fault = t;
            self.last_damage = t;
        }
        Ok(())
    }
}

/// Waits (at most `REPAIR_LIMIT`) until every declared file is complete
/// at its factor and every flipped replica repaired; says when in
/// `figures`.
async fn heal(c: &Cluster, faults: &Faults, t0: Instant, figures: &mut ChaosFigures) {
    let heal_deadline = Instant::now() + REPAIR_LIMIT;
    loop {
        let t = t0.elapsed().as_secs_f64();
        let files = c.client.files().await.unwrap_or_default();
        // Declared files only: a failed job's partial output is left as is.
        let replicated = !files.is_empty()
            && files
                .iter()
                .filter(|f| f.replication.is_some())
                .all(|f| f.complete && f.under_replicated().is_empty());
        let mut repaired = 0;
        for f in &faults.flips {
            repaired += u32::from(repaired_flip(c, f).await);
        }
        figures.corruptions_repaired = repaired;
        if replicated && repaired as usize == faults.flips.len() {
            figures.healed_after_last_fault_s = Some(t - faults.last_fault);
            figures.healed_after_last_damage_s = Some(t - faults.last_damage);
            return;
        }
        if Instant::now() > heal_deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A flipped replica is repaired when it is gone (dropped or trimmed) or
/// equal to a good replica on another live worker.
async fn repaired_flip(c: &Cluster, f: &Flip) -> bool {
    let Ok(bytes) = std::fs::read(&f.path) else {
        return true;
    };
    let (file, index) = split_block(&f.block);
    let info = c.client.file(&file).await.ok();
    let workers = c.client.workers().await.unwrap_or_default();
    let Some(reps) = info.as_ref().and_then(|i| i.replicas.get(index)) else {
        return false;
    };
    for w in workers
        .iter()
        .filter(|w| w.alive && w.name != f.worker && reps.contains(&w.name))
    {
        if let Ok(good) = files::get_block(&c.client, &w.addr, &f.block).await {
            return good == bytes;
        }
    }
    false
}

/// The cluster's own counts at the end: damaged replicas dropped (beside
/// those counted before each kill), maps run again, blocks copied, and
/// processes that exited unasked.
async fn count_cluster(c: &Cluster, figures: &mut ChaosFigures) -> anyhow::Result<()> {
    for w in &c.names {
        figures.corruptions_detected += dropped_by(&c.client, &c.addr_of(w)).await;
    }
    let summary = c.client.cluster().await?;
    figures.maps_rerun = summary.maps_rerun;
    figures.blocks_copied = summary.blocks_copied;
    for p in local::processes(&c.run_dir)? {
        if !local::is_running(p.pid) {
            figures.unexpected_exits.push(p.name);
        }
    }
    Ok(())
}

/// Each job's end, and every succeeded wordcount's and sort's output
/// against coreutils'.
async fn check_jobs(
    c: &Cluster,
    ids: &[(JobId, Workload)],
    figures: &mut ChaosFigures,
) -> anyhow::Result<Vec<JobRow>> {
    let mut rows = Vec::new();
    for (id, w) in ids {
        let r = c.client.job(*id, None).await?;
        let ok = r.state == JobState::Succeeded;
        figures.jobs_succeeded += u32::from(ok);
        let (mut checked, mut equal) = (false, false);
        if ok && w.has_reduce() {
            checked = true;
            let out = files::read_file(&c.client, r.output.as_deref().unwrap_or_default()).await?;
            equal = match w {
                Workload::Wordcount => {
                    verify::wordcount_pairs(&out).is_ok_and(|got| got == c.want_counts)
                }
                _ => out == c.want_sorted,
            };
            figures.outputs_checked += 1;
            figures.outputs_equal += u32::from(equal);
        }
        rows.push(JobRow {
            job: id.to_string(),
            workload: w.to_string(),
            state: format!("{:?}", r.state).to_lowercase(),
            jct_s: r.jct_ms.map_or(f64::NAN, |ms| ms as f64 / 1000.0),
            output_checked: checked,
            output_equal: equal,
            error: r.error.unwrap_or_default(),
        });
    }
    Ok(rows)
}

/// `results/chaos/<stamp>/`: runs.csv, events.csv, summary.md with the
/// verdict, meta.json.
fn write_results(
    opts: &ChaosOptions,
    provenance: Provenance,
    rows: &[JobRow],
    events: &[Event],
    figures: &ChaosFigures,
) -> anyhow::Result<(PathBuf, ChaosFigures)> {
    let mut body = format!(
        "# chaos run, seed {}\n\n{} workers, replication 3, block scanner at 50 MB/s; {} jobs \
         (wordcount, sort, input-sink in turn) arriving over 40 s; faults for {:.0} s: SIGKILL \
         every 20 s (restart 10 s later), one SIGSTOP for 30 s, one flipped byte every 10 s.\n\n\
         | figure | value |\n|---|---|\n",
        opts.seed, WORKERS, opts.jobs, figures.fault_window_s
    );
    let v = serde_json::to_value(figures)?;
    for (k, val) in v.as_object().expect("a struct") {
        body += &format!("| {k} | {val} |\n");
    }
    let meta = serde_json::json!({
        "seed": opts.seed,
        "jobs": opts.jobs,
        "figures": figures,
    });
    let dir = VerdictRun {
        name: "chaos",
        provenance,
        extra: ("events.csv", events),
        body,
        problems: figures.problems(),
        passed: "every requirement met".into(),
        files: "`runs.csv` (one row a job), `events.csv` (one row a fault), `meta.json`.",
        meta,
    }
    .write(&opts.results, rows)?;
    Ok((dir, figures.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_every_shortfall() {
        let good = ChaosFigures {
            jobs_submitted: 30,
            jobs_succeeded: 30,
            outputs_checked: 20,
            outputs_equal: 20,
            corruptions_injected: 6,
            corruptions_repaired: 6,
            healed_after_last_fault_s: Some(3.0),
            ..Default::default()
        };
        assert!(good.problems().is_empty());
        let bad = ChaosFigures {
            jobs_succeeded: 29,
            outputs_equal: 19,
            corruptions_repaired: 5,
            healed_after_last_fault_s: None,
            unexpected_exits: vec!["w2".into()],
            ..good.clone()
        };
        let p = bad.problems().join("; ");
        for part in [
            "29 of 30 jobs",
            "19 of 20 outputs",
            "5 of 6 corruptions",
            "did not heal",
            "w2",
        ] {
            assert!(p.contains(part), "{part}: {p}");
        }
        let slow = ChaosFigures {
            healed_after_last_fault_s: Some(61.0),
            ..good
        };
        assert!(slow.problems()[0].contains("61.0 s"));
    }

    #[test]
    fn block_ids_split_into_file_and_index() {
        let id = common::BlockId::for_file("chaos-3.out", 12).unwrap();
        assert_eq!(split_block(&id), ("chaos-3.out".to_owned(), 12));
    }
}
