//! Runs an experiment: for every parameter point and repetition, the data is
//! generated and placed once (seeded); then, for every scheduler, a fresh
//! cluster of real local processes (master and workers, as `master up`
//! starts them) runs the same jobs with the same arrivals and the same
//! background load, and its reports are collected. Runs are sequential; a
//! run that fails is recorded with its error and the others go on.

use super::output::{self, RunRecord, TaskRow};
use super::plots;
use super::spec::{NamedScheduler, Point, Spec};
use super::timeline;
use crate::ops::client::MasterClient;
use crate::ops::deploy::{Deployment, Keep};
use crate::ops::files;
use crate::ops::loader::{self, Generator, LoadSpec, Source};
use crate::results::ResultsDir;
use anyhow::{bail, Context};
use common::config::{ClusterConfig, ClusterSection, MasterSection, WorkerDefaults, WorkerEntry};
use common::hash::splitmix64;
use common::wire::{JobReport, JobState, JobSubmit, TaskCompute};
use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched::policy::SchedulerConfig;
use sched::reduce::ReducePlacement;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use workloads::Workload;

mod record;
mod replot;
pub use record::write_decisions;
use record::{keep_failed_logs, record_run, RunOutcome};
use replot::summary_md;
pub use replot::{open_results, replot, OpenedResults};

const TOKEN: &str = "experiment";

pub struct Options {
    pub spec: PathBuf,
    /// Results go to `<results>/<name>/<UTC timestamp>/`.
    pub results: PathBuf,
    /// Scratch space for block stores, configs and logs.
    pub work: PathBuf,
    pub keep_data: bool,
    /// Where the `master` and `worker` binaries are.
    pub bin: PathBuf,
    /// Where each run's cluster runs (the results have the same layout
    /// whichever it is, so the deployments' JCTs compare side by side).
    pub deployment: Box<dyn Deployment>,
}

/// Runs the experiment and returns its result directory.
pub async fn run(opts: &Options) -> anyhow::Result<PathBuf> {
    let (spec, text) = Spec::load(&opts.spec)?;
    let schedulers = spec.schedulers().map_err(|e| e.in_file(&opts.spec))?;
    let points = spec.points().map_err(|e| e.in_file(&opts.spec))?;
    if !opts.deployment.shapes_racks() {
        if let Some(p) = points.iter().find(|p| p.rack_link_mbps.is_some()) {
            anyhow::bail!(
                "{}: point {:?} has a rack link (rack_link_mbps), which the {} deployment does not shape: run with --deployment netns (root)",
                opts.spec.display(),
                p.label,
                opts.deployment.name()
            );
        }
    }
    let started = common::unix_ms();
    let dir = ResultsDir::create(&opts.results, &spec.name, started)?;
    let out = dir.path().to_path_buf();
    let work = opts.work.join(&spec.name);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let work = std::path::absolute(&work)?;
    let ports = std::cell::RefCell::new(free_ports(spec.cluster.workers as usize + 1)?);
    let mut meta = output::Meta::new(&spec, &text, &opts.spec, &schedulers, &points, started);
    meta.deployment = opts.deployment.name().into();
    dir.write_meta(&meta)?;

    let total = points.len() * spec.repetitions as usize * schedulers.len();
    let pb = progress_bar(total);
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut job_rows: Vec<super::qos::JobRow> = Vec::new();
    // The runs, until they end or a signal stops them: dropping the body's
    // future stops its requests, and the run's cluster is stopped below.
    let body = async {
        let mut tasks_csv = output::TaskWriter::create(&out.join("tasks.csv"))?;
        let mut jobs_csv = output::TaskWriter::create(&out.join("jobs.csv"))?;
        let mut timelines_csv = timeline::TimelineWriter::create(&out)?;
        for point in &points {
            for rep in 0..spec.repetitions {
                let seed = spec.seed + rep as u64;
                let env = RunEnv {
                    spec: &spec,
                    point,
                    seed,
                    ports: &ports,
                    work: &work,
                    bin: &opts.bin,
                    deployment: opts.deployment.as_ref(),
                };
                pb.set_message(format!("{} rep {rep}: loading data", point.label));
                let load_started = std::time::SystemTime::now();
                let loaded = load_data(&env).await;
                for (i, s) in schedulers.iter().enumerate() {
                    pb.set_message(format!("{} rep {rep}: {}", point.label, s.label));
                    // Logs older than this are an earlier run's.
                    let since = loaded.as_ref().map_or(load_started, |()| SystemTime::now());
                    let t0 = Instant::now();
                    let cpu0 = super::output::host_cpu_ticks();
                    let result = match &loaded {
                        Ok(()) => run_retrying(&env, s).await,
                        Err(e) => Err(anyhow::anyhow!("loading the data failed: {e:#}")),
                    };
                    // Data that failed to load fails every scheduler's run of
                    // it: its logs once.
                    let failed = match &result {
                        Ok((reports, ..)) => reports.iter().any(|r| r.state != JobState::Succeeded),
                        Err(_) => loaded.is_ok() || i == 0,
                    };
                    let kept = failed
                        .then(|| keep_failed_logs(&env, &out, s, rep, since))
                        .flatten();
                    env.stop();
                    let wall = t0.elapsed().as_secs_f64();
                    let host_cpu_pct =
                        super::output::cpu_pct(cpu0, super::output::host_cpu_ticks());
                    let (mut record, rows) = match result {
                        Ok(outcome) => {
                            let (rec, rows, jobs) = record_run(
                                &out,
                                &env,
                                s,
                                rep,
                                wall,
                                outcome,
                                &mut jobs_csv,
                                &mut timelines_csv,
                            )?;
                            job_rows.extend(jobs);
                            (rec, rows)
                        }
                        Err(e) => (
                            RunRecord::failed(
                                &point.label,
                                s,
                                rep,
                                seed,
                                point.jobs,
                                format!("{e:#}"),
                                wall,
                            ),
                            Vec::new(),
                        ),
                    };
                    record.host_cpu_pct = host_cpu_pct;
                    // A hidden bar (no terminal, e.g. CI or a log file) drops
                    // println; progress must still reach the log.
                    let line = match kept {
                        Some(dir) => {
                            format!("{} (node logs in {})", record.one_line(), dir.display())
                        }
                        None => record.one_line(),
                    };
                    if pb.is_hidden() {
                        println!("[{}/{total}] {line}", runs.len() + 1);
                    } else {
                        pb.println(line);
                    }
                    tasks_csv.write(&rows)?;
                    runs.push(record);
                    dir.write_runs(&runs)?;
                    pb.inc(1);
                }
            }
        }
        anyhow::Ok(())
    };
    let signal = tokio::select! {
        r = body => { r?; None }
        s = interrupted() => Some(s),
    };
    if let Some(signal) = signal {
        pb.abandon();
        stop_cluster(opts.deployment.as_ref(), &work, opts.keep_data);
        return Err(interrupted_exit(
            signal, opts, &out, &dir, &mut meta, &runs, total,
        ));
    }
    pb.finish_and_clear();
    let summary = summary_md(&out, &spec, &schedulers, &points, &runs, &job_rows);
    dir.write_summary(&summary)?;
    plots::plot_all(&out, &schedulers, &points, &runs)?;
    meta.finish(&runs);
    dir.write_meta(&meta)?;
    stop_cluster(opts.deployment.as_ref(), &work, opts.keep_data);
    let failed = runs.iter().filter(|r| r.status != "ok").count();
    println!(
        "{} runs ({failed} failed); results in {}",
        runs.len(),
        out.display()
    );
    Ok(out)
}

/// The runner's progress bar over `total` runs.
fn progress_bar(total: usize) -> ProgressBar {
    let pb = ProgressBar::new(total as u64);
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs, elapsed {elapsed}, ETA {eta}: {msg}",
        )
        .expect("valid template"),
    );
    pb
}

/// An experiment a signal stopped (its cluster stopped already): meta.json
/// says after how many runs, and the error says where the finished ones are.
fn interrupted_exit(
    signal: &str,
    opts: &Options,
    out: &Path,
    dir: &ResultsDir,
    meta: &mut output::Meta,
    runs: &[RunRecord],
    total: usize,
) -> anyhow::Error {
    let why = format!("{signal} after {} of {total} runs", runs.len());
    meta.finish(runs);
    meta.interrupted = Some(why.clone());
    if let Err(e) = dir.write_meta(meta) {
        return e;
    }
    anyhow::anyhow!(
        "interrupted by {why}: stopped the cluster of the run in progress{}; the finished runs are in {} (runs.csv, tasks.csv; no summary or plots)",
        if opts.keep_data { "" } else { " and removed the scratch space" },
        out.display()
    )
}

/// Removes what the experiment's last cluster left: in the container mode
/// its containers, network, images and (unless kept) the volumes holding
/// the block stores; in the other modes its processes and network
/// namespaces (each run stops its own, so these are an interrupted run's);
/// then the scratch space, unless kept.
fn stop_cluster(deployment: &dyn Deployment, work: &Path, keep_data: bool) {
    let run = work.join("cluster").join("run");
    if let Err(e) = deployment.down(&run, keep_data) {
        tracing::warn!(error = %format!("{e:#}"), "cannot stop the run's cluster");
    }
    if !keep_data {
        let _ = std::fs::remove_dir_all(work);
    }
}

/// Resolves at the first SIGINT, SIGTERM or SIGHUP, naming it; never where
/// the handlers cannot be installed.
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::warn!(
            "cannot install signal handlers: an interrupted experiment leaves its cluster running"
        );
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
        _ = hup.recv() => "SIGHUP",
    }
}

/// One job of a run.
struct JobPlan {
    workload: Workload,
    input: String,
    maps: u32,
    reduces: Option<u32>,
    /// A synthetic job's ratios (a trace's job with shuffle).
    ratios: Option<workloads::Ratios>,
}

/// What every run of one (point, repetition) shares.
struct RunEnv<'a> {
    spec: &'a Spec,
    point: &'a Point,
    seed: u64,
    /// Master then workers; re-picked when another process took one.
    ports: &'a std::cell::RefCell<Vec<u16>>,
    work: &'a Path,
    bin: &'a Path,
    deployment: &'a dyn Deployment,
}

impl RunEnv<'_> {
    /// Starts the cluster of `cfg` where the experiment runs them, after
    /// stopping the previous one (its block stores deleted with `fresh`);
    /// every run starts with no job history. Returns the config the
    /// clients use (the containers' addresses in the container mode).
    async fn start(&self, cfg: &ClusterConfig, fresh: bool) -> anyhow::Result<ClusterConfig> {
        let keep = if fresh { Keep::Nothing } else { Keep::Stores };
        self.deployment.start(cfg, keep, self.bin).await?;
        self.deployment.config(cfg)
    }

    /// Copies the logs of the run's nodes into `dest` (each process's log
    /// file written `since`, others being an earlier run's; the containers'
    /// logs in one file); returns how many files.
    fn keep_logs(&self, dest: &Path, since: std::time::SystemTime) -> anyhow::Result<usize> {
        self.deployment
            .logs(&self.cluster_dir().join("run"), dest, since)
    }

    /// Stops the run's cluster (its block stores stay for the next run).
    fn stop(&self) {
        let _ = self.deployment.stop(&self.cluster_dir().join("run"));
    }

    fn cluster_dir(&self) -> PathBuf {
        self.work.join("cluster")
    }

    fn file_name(&self, i: u32) -> String {
        format!(
            "{}-f{i}",
            self.point
                .label
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        )
    }

    /// The point's trace sample, if the spec replays a trace.
    fn trace(&self) -> Option<lab::swim::TracePlan> {
        self.spec
            .trace_plan(self.point.block_bytes)
            .expect("validated when the spec was loaded")
    }

    fn trace_file_name(&self, path: &str) -> String {
        let clean: String = path
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("{}-{clean}", self.file_name(0))
    }

    /// The input files of this point: (name, kind, blocks, block bytes).
    fn files(&self) -> Vec<(String, Generator, u32, u64)> {
        if let Some(plan) = self.trace() {
            return plan
                .files
                .iter()
                .map(|f| {
                    (
                        self.trace_file_name(&f.path),
                        Generator::Text,
                        f.blocks,
                        f.block_bytes,
                    )
                })
                .collect();
        }
        let block = self.point.block_bytes;
        if self.spec.jobs.mix.is_empty() {
            (0..self.point.files)
                .map(|f| {
                    (
                        self.file_name(f),
                        self.spec.data.kind.clone(),
                        self.point.blocks,
                        block,
                    )
                })
                .collect()
        } else {
            self.jobs()
                .into_iter()
                .map(|j| {
                    let kind = if j.workload == Workload::Sort {
                        Generator::Records
                    } else {
                        self.spec.data.kind.clone()
                    };
                    (j.input, kind, j.maps, block)
                })
                .collect()
        }
    }

    /// Each job's submission, ms after the run starts (sorted): the
    /// trace's, or seeded in `jobs.arrival_s`.
    fn arrivals(&self) -> Vec<u64> {
        match self.trace() {
            Some(plan) => plan.jobs.iter().map(|j| j.arrival_ms).collect(),
            None => arrivals(
                self.seed,
                self.jobs().len() as u32,
                self.spec.jobs.arrival_s,
            ),
        }
    }

    /// The jobs of a run, in submission order.
    fn jobs(&self) -> Vec<JobPlan> {
        if let Some(plan) = self.trace() {
            return plan
                .jobs
                .iter()
                .map(|j| {
                    let f = &plan.files[j.file];
                    JobPlan {
                        workload: j.workload,
                        input: self.trace_file_name(&f.path),
                        maps: f.blocks,
                        reduces: j.reduces,
                        ratios: j.ratios,
                    }
                })
                .collect();
        }
        let j = &self.spec.jobs;
        if j.mix.is_empty() {
            return (0..self.point.jobs)
                .map(|i| JobPlan {
                    workload: j.workload(),
                    input: self.file_name(i % self.point.files),
                    maps: self.point.blocks,
                    reduces: j.reduces.or(j
                        .reduce_fraction
                        .map(|f| ((self.point.blocks as f64 * f).round() as u32).max(1))),
                    ratios: None,
                })
                .collect();
        }
        mix_order(&j.mix, self.seed)
            .into_iter()
            .enumerate()
            .map(|(i, c)| JobPlan {
                workload: c.workload,
                input: format!("{}-j{i}", self.file_name(0)),
                maps: c.maps,
                reduces: c.reduces,
                ratios: None,
            })
            .collect()
    }

    /// The cluster.toml of a run (written to the scratch directory).
    fn config(
        &self,
        scheduler: &SchedulerConfig,
        reduces: ReducePlacement,
        shaped: bool,
    ) -> anyhow::Result<ClusterConfig> {
        let c = &self.spec.cluster;
        let dir = self.cluster_dir();
        std::fs::create_dir_all(&dir)?;
        let ports = self.ports.borrow();
        let addr = |i: usize| SocketAddr::from(([127, 0, 0, 1], ports[i]));
        let cfg = ClusterConfig {
            cluster: ClusterSection {
                token: TOKEN.into(),
                token_grace_s: 600,
                replication: self.point.replication,
                heartbeat_ms: self.point.heartbeat_ms,
                out_of_band_heartbeat: self.point.out_of_band_heartbeat,
                worker_timeout_ms: c
                    .worker_timeout_ms
                    .unwrap_or((50 * self.point.heartbeat_ms).max(5_000)),
                max_task_attempts: 4,
                task_timeout_ms: 600_000,
                data_dir: self.work.join("data"),
                seed: self.seed,
                reduce_placement: reduces,
                output_replication: c.output_replication,
                rack_link_mbps: if shaped {
                    self.point.rack_link_mbps
                } else {
                    None
                },
            },
            master: MasterSection {
                listen: addr(0),
                journal: PathBuf::from("run/master/journal.jsonl"),
                decisions: shaped && c.decisions,
                // Every row of a run: the runner writes them all (TOML's
                // integers stop at i64's maximum).
                decisions_max: i64::MAX as u64,
                retained_jobs: i64::MAX as u64,
            },
            scheduler: scheduler.clone(),
            speculation: c.speculation.clone(),
            workers: WorkerDefaults {
                slots: c.slots,
                nic_mbps: if shaped { self.point.nic_mbps } else { None },
                slot_rate_mbs: if shaped {
                    self.point.slot_rate_mbs
                } else {
                    None
                },
                disk_mbs: if shaped { self.point.disk_mbs } else { None },
                role: common::config::Role::Both,
                // Experiments measure schedulers: no scanner reads the disks.
                scrub_mbps: None,
                min_free_mb: common::config::WorkerDefaults::default().min_free_mb,
                shuffle_memory_mb: common::config::WorkerDefaults::default().shuffle_memory_mb,
                reduce_memory_mb: common::config::WorkerDefaults::default().reduce_memory_mb,
                // None, as every committed result and calibration ran:
                // "auto" would change the tasks' overheads they were fitted on.
                pretouch_mb: common::config::MbOrAuto::Mb(0),
                block_cache_mb: common::config::MbOrAuto::Mb(0),
                // Synced, as the reduces' output costs were fitted on.
                sync_output: true,
                ssh_options: Vec::new(),
            },
            worker: (0..c.workers as usize)
                .map(|i| WorkerEntry {
                    name: format!("w{}", i + 1),
                    listen: addr(i + 1),
                    slots: None,
                    nic_mbps: if shaped {
                        self.spec.nic_mbps(self.point, i as u32)
                    } else {
                        None
                    },
                    slot_rate_mbs: None,
                    disk_mbs: None,
                    role: self.spec.role(self.point, i as u32),
                    rack: self.point.rack(i as u32, c.workers),
                    data_dir: None,
                    host: None,
                    ssh_user: None,
                    ssh_port: None,
                    remote_dir: None,
                    remote_bin: None,
                    ssh_options: None,
                })
                .collect(),
            background: if shaped {
                self.point.background.clone()
            } else {
                None
            },
            // Loading the data (unshaped) needs no public cloud.
            public: self.spec.public.clone().filter(|_| shaped),
            credentials: Default::default(),
            tls: Default::default(),
            public_type: if shaped {
                self.spec.public_type.clone()
            } else {
                Vec::new()
            },
            base_dir: dir.clone(),
            path: dir.join("cluster.toml"),
        };
        std::fs::write(&cfg.path, toml::to_string(&cfg)?)?;
        // Round-trip through the parser: the same validation as any cluster.toml.
        Ok(ClusterConfig::load(&cfg.path)?)
    }

    fn client(cfg: &ClusterConfig) -> MasterClient {
        MasterClient::new(
            cfg.master_url(),
            cfg.secret(common::credentials::Role::Client),
        )
    }
}

/// Fresh block stores holding the point's files, placed with the run seed.
/// Loaded with the NICs unshaped and no background load: setup, not experiment.
async fn load_data(env: &RunEnv<'_>) -> anyhow::Result<()> {
    let cfg = env.config(&SchedulerConfig::hadoop(), ReducePlacement::Policy, false)?;
    let cfg = env.start(&cfg, true).await?;
    let client = RunEnv::client(&cfg);
    let result = async {
        for (f, (name, kind, blocks, block_size)) in env.files().into_iter().enumerate() {
            loader::load(
                &client,
                &LoadSpec {
                    name,
                    source: Source::Generate { kind, blocks },
                    block_size,
                    replication: env.point.replication,
                    seed: env.seed.wrapping_mul(1_000_003).wrapping_add(f as u64),
                    placement: env.spec.data.placement,
                },
            )
            .await?;
        }
        anyhow::Ok(())
    }
    .await;
    env.stop();
    result
}

/// A job mix's jobs in submission order for `seed`: each class `count`
/// times, interleaved in a seeded order (job i of a run is entry i).
pub fn mix_order(mix: &[super::spec::JobClass], seed: u64) -> Vec<&super::spec::JobClass> {
    let mut classes: Vec<&super::spec::JobClass> = mix
        .iter()
        .flat_map(|c| std::iter::repeat_n(c, c.count as usize))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6d17);
    for i in (1..classes.len()).rev() {
        classes.swap(i, rng.gen_range(0..=i));
    }
    classes
}

/// Job arrival offsets in milliseconds, sorted, seeded.
pub fn arrivals(seed: u64, count: u32, window_s: [f64; 2]) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xa11_1ea1);
    let [a, b] = window_s;
    let mut v: Vec<u64> = (0..count)
        .map(|_| {
            let s = if b > a { rng.gen_range(a..=b) } else { a };
            (s * 1000.0).round() as u64
        })
        .collect();
    v.sort_unstable();
    v
}

/// One run: a fresh cluster with `sched`, the jobs at their arrival times,
/// until all end. Returns the reports, the run's start (unix ms) and the
/// workers' timelines.
async fn run_once(env: &RunEnv<'_>, sched: &NamedScheduler) -> anyhow::Result<RunOutcome> {
    let cfg = env.config(&sched.config, sched.reduces, true)?;
    // Same data, but no job history: every run's ids start at 1 (output
    // replicas rotate by job id), as they did before the journal.
    let cfg = env.start(&cfg, false).await?;
    let client = RunEnv::client(&cfg);
    // Every replica must be back in the catalog before the first job.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let files = client.files().await?;
        let ready = env.files().iter().all(|(name, _, blocks, _)| {
            files.iter().any(|fi| {
                fi.name == *name
                    && fi.replicas.len() == *blocks as usize
                    && fi
                        .replicas
                        .iter()
                        .all(|r| r.len() == env.point.replication as usize)
            })
        });
        if ready {
            break;
        }
        if Instant::now() > deadline {
            bail!("the workers did not report every replica within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let plans = env.jobs();
    let at = env.arrivals();
    let t0 = Instant::now();
    let t0_unix = common::unix_ms();
    let timeout = Duration::from_secs_f64(env.spec.timeout_s);
    let work = async {
        let mut ids = Vec::new();
        for (i, (ms, plan)) in at.iter().zip(&plans).enumerate() {
            tokio::time::sleep_until((t0 + Duration::from_millis(*ms)).into()).await;
            let mut job = JobSubmit::new(plan.workload, plan.input.clone());
            job.name = Some(format!("j{i}"));
            job.reduces = plan.reduces;
            job.ratios = plan.ratios;
            job.compute = env.spec.jobs.task_time_s.map(|[a, b]| TaskCompute {
                min_ms: (a * 1000.0).round() as u64,
                max_ms: (b * 1000.0).round() as u64,
                seed: splitmix64(env.seed ^ splitmix64(0xc0de ^ i as u64)),
            });
            job.deadline_s = env.spec.jobs.deadline_of(i);
            job.budget = env.spec.jobs.budget;
            if plan.workload.has_reduce() {
                // Distinct per scheduler, in case a deleted replica lingers.
                let tag: String = sched
                    .label
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                job.output = Some(format!("j{i}-{tag}.out"));
            }
            ids.push(client.submit(&job).await?);
        }
        let mut reports = Vec::new();
        for id in ids {
            reports.push(client.wait_job(id).await?);
        }
        anyhow::Ok(reports)
    };
    let mut reports = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| anyhow::anyhow!("run exceeded timeout_s = {}", env.spec.timeout_s))??;
    if !cfg.public_type.is_empty() {
        // Bills end when the instances stop (idle): wait for that, then
        // take the reports again.
        let limit = Instant::now()
            + Duration::from_secs_f64(cfg.public_section().idle_stop_s + 15.0 + 40.0);
        loop {
            let ws = client.workers().await?;
            if !ws.iter().any(|w| w.instance_type.is_some() && w.alive) {
                break;
            }
            if Instant::now() > limit {
                tracing::warn!("public instances still running; their bills are not final");
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        for r in reports.iter_mut() {
            *r = client.job(r.job, None).await?;
        }
    }
    // Outputs are not kept: the disk is shared by all runs of the point.
    for out in reports.iter().filter_map(|r| r.output.as_deref()) {
        if let Err(e) = files::remove(&client, out, Duration::from_secs(30)).await {
            tracing::warn!(file = out, error = %e, "could not remove a run's output");
        }
    }
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| r.state != JobState::Succeeded)
        .map(|r| {
            format!(
                "{} ({})",
                r.job,
                r.error.clone().unwrap_or_else(|| "no error given".into())
            )
        })
        .collect();
    if !failed.is_empty() {
        tracing::warn!(scheduler = %sched.label, failed = ?failed, "jobs failed in this run");
    }
    let workers: Vec<(String, String)> = cfg
        .worker
        .iter()
        .map(|w| (w.name.clone(), format!("http://{}", w.listen)))
        .collect();
    let timelines = timeline::fetch(&client, &workers, t0_unix).await?;
    let decisions = match env.spec.cluster.decisions {
        true => Some(client.decision_record().await?),
        false => None,
    };
    let notes = client.cluster().await?.scheduler_notes;
    Ok((reports, t0_unix, timelines, decisions, notes))
}

/// A run's job reports, its start (Unix ms), the workers' timelines and,
/// if the spec keeps it, the master's decision record.
/// A run, again on new ports (at most twice) when another process took
/// one of its ports between runs.
async fn run_retrying(env: &RunEnv<'_>, s: &NamedScheduler) -> anyhow::Result<RunOutcome> {
    let mut result = run_once(env, s).await;
    for _ in 0..2 {
        match &result {
            Err(e) if format!("{e:#}").contains("Address already in use") => {
                tracing::warn!("a port was taken; retrying the run on new ports");
                env.stop();
                *env.ports.borrow_mut() = free_ports(env.spec.cluster.workers as usize + 1)?;
                result = run_once(env, s).await;
            }
            _ => break,
        }
    }
    result
}

/// `n` distinct free TCP ports on 127.0.0.1, below the kernel's ephemeral
/// range, so that no outgoing connection takes one while a cluster is down
/// between runs (a port 0 pick comes from that range and can be).
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let ephemeral_low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let (lo, hi) = (10_000u16, ephemeral_low.max(10_000 + n as u16 * 4));
    // Experiments running at once in one process (the tests) must not get
    // the same ports: a process-wide count in the seed, and no port handed
    // out twice by this process.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut rng = ChaCha8Rng::seed_from_u64(
        (std::process::id() as u64) ^ common::unix_ms() ^ call.wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..10_000 {
        if ports.len() == n {
            break;
        }
        let p = rng.gen_range(lo..hi);
        if ports.contains(&p) || given.contains(&p) {
            continue;
        }
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", p)) {
            held.push(l);
            ports.push(p);
        }
    }
    if ports.len() < n {
        bail!("cannot find {n} free TCP ports on 127.0.0.1 in {lo}..{hi}");
    }
    given.extend(&ports);
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_seeded_sorted_and_inside_the_window() {
        let a = arrivals(3, 50, [0.0, 120.0]);
        assert_eq!(a, arrivals(3, 50, [0.0, 120.0]));
        assert_ne!(a, arrivals(4, 50, [0.0, 120.0]));
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        assert!(a.iter().all(|&t| t <= 120_000));
        assert_eq!(arrivals(3, 5, [0.0, 0.0]), vec![0; 5]);
    }
}
