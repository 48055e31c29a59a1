//! The `master` command line: one enum of subcommands, parsed by clap, and
//! one function per subcommand. The binary (`src/bin/master.rs`) only
//! installs logging and calls [`run`].

use crate::experiment;
use crate::ops::client::MasterClient;
use crate::ops::deploy::{Keep, Kind};
use crate::ops::loader::{self, Generator, LoadSpec, Source};
use crate::ops::{local, report};
use crate::simulation::{self, Algo, Cost, GenParams, Measure};
use anyhow::Context;
use clap::{Parser, Subcommand};
use common::config::ClusterConfig;
use common::wire::JobSubmit;
use sched::policy::SchedulerConfig;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use workloads::Workload;

mod args;
pub mod exit;
mod faults;
mod results;
pub use args::{Cli, Cmd, GenArgs, SimCmd};
use exit::{bad_input, Failed};

/// Runs one command line.
/// The commands that need no cluster.toml; false for the others.
async fn run_tools(cmd: &Cmd, config: &Path) -> anyhow::Result<bool> {
    let r = match cmd {
        Cmd::Sim { cmd } => sim(cmd),
        Cmd::PolicyServer {
            listen,
            threshold_s,
        } => crate::policy_server::run(listen, *threshold_s, config).await,
        Cmd::Replot { dir } => replot(dir),
        Cmd::PolicySchema => {
            let text = serde_json::to_string_pretty(&sched::policy::external::protocol_schema())?;
            println!("{text}");
            Ok(())
        }
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "master", &mut script);
            // Into a buffer first: a reader that stops early (`| head`) ends
            // the output, not the program with a panic.
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
        Cmd::Claims { cmd } => crate::claims::run(cmd),
        Cmd::Results { cmd } => results::run(cmd).await,
        Cmd::Chaos { .. } | Cmd::Campaign { .. } | Cmd::Soak { .. } => faults::run(cmd).await,
        Cmd::Experiment {
            spec,
            results,
            work,
            keep_data,
            deployment,
            docker_bin,
        } => {
            let deployment = Kind::for_experiments(deployment, docker_bin)?.deployment();
            run_experiment(spec, results, work, *keep_data, deployment).await
        }
        _ => return Ok(false),
    };
    r?;
    Ok(true)
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    // External policies (`policy = "external"`) are reached over sockets.
    common::policy_socket::install();
    if run_tools(&cli.cmd, &cli.config).await? {
        return Ok(());
    }
    let cfg = ClusterConfig::load(&cli.config)?;
    // `master up` makes the TLS files before it starts anything and uses
    // clients of its own; every other command trusts the cluster's ca.pem.
    let tls = match cli.cmd {
        Cmd::Up { .. } => None,
        _ => cfg.client_tls()?,
    };
    let client = MasterClient::new(
        cli.master.clone().unwrap_or_else(|| cfg.master_url()),
        cfg.secret(common::credentials::Role::Client),
    )
    .with_tls(tls.as_ref())
    .retrying(std::time::Duration::from_secs(cli.retry_s));
    run_cluster(cli.cmd, &cfg, &client).await
}

/// `--compute-ms MIN:MAX`'s per-task compute, drawn by `seed`.
fn task_compute((min_ms, max_ms): (u64, u64), seed: u64) -> common::wire::TaskCompute {
    common::wire::TaskCompute {
        min_ms,
        max_ms,
        seed,
    }
}

/// A synthetic job's ratios from `--shuffle-ratio` and `--output-ratio`
/// (either alone: the other's default), or None when neither is given.
fn ratios(shuffle: Option<f64>, output: Option<f64>) -> Option<workloads::Ratios> {
    let d = workloads::Ratios::default();
    (shuffle.is_some() || output.is_some()).then(|| workloads::Ratios {
        shuffle: shuffle.unwrap_or(d.shuffle),
        output: output.unwrap_or(d.output),
    })
}

/// The commands that act on the cluster of `cfg` through `client`.
async fn run_cluster(cmd: Cmd, cfg: &ClusterConfig, client: &MasterClient) -> anyhow::Result<()> {
    match cmd {
        Cmd::Serve {
            listen,
            scheduler,
            instances,
            journal_recover,
        } => {
            serve(
                cfg,
                listen,
                scheduler,
                instances.as_deref(),
                journal_recover,
            )
            .await
        }
        Cmd::Up {
            fresh,
            netns,
            netns_prefix,
            docker,
            docker_project,
            docker_subnet,
            docker_bin,
        } => {
            let kind = match (docker, netns) {
                (true, _) => Kind::Docker {
                    project: docker_project,
                    third: docker_subnet,
                    bin: docker_bin,
                },
                (false, true) => Kind::Netns {
                    prefix: netns_prefix,
                    third: 0,
                    host_link: false,
                },
                (false, false) => Kind::Processes,
            };
            up(cfg, kind, fresh).await
        }
        Cmd::Down => down(cfg),
        Cmd::Load {
            name,
            generate,
            blocks,
            file,
            block_size,
            replication,
            seed,
            placement,
        } => {
            let source = match (generate, file) {
                (Some(kind), None) => Source::Generate {
                    kind,
                    blocks: blocks.unwrap_or(0),
                },
                (None, Some(p)) => Source::File(p),
                _ => {
                    return Err(bad_input(
                        "give either --generate KIND --blocks N or --file PATH",
                    ))
                }
            };
            let spec = LoadSpec {
                name,
                source,
                block_size,
                replication: replication.unwrap_or(cfg.cluster.replication),
                seed: seed.unwrap_or(cfg.cluster.seed),
                placement,
            };
            load(client, &spec).await
        }
        Cmd::Submit {
            workload,
            input,
            name,
            count,
            group,
            reduces,
            output,
            compute_ms,
            spread_s,
            wait,
            json,
            deadline_s,
            budget,
            shuffle_ratio,
            output_ratio,
            output_replication,
        } => {
            let job = JobSubmit {
                workload,
                input,
                name,
                group,
                reduces,
                output,
                compute: compute_ms.map(|range| task_compute(range, cfg.cluster.seed)),
                deadline_s,
                budget,
                ratios: ratios(shuffle_ratio, output_ratio),
                output_replication,
            };
            let how = Submission {
                count,
                spread_s,
                seed: cfg.cluster.seed,
                wait,
                json,
            };
            submit(client, &job, &how).await
        }
        Cmd::Jobs => {
            print!("{}", report::jobs_table(&client.jobs().await?));
            Ok(())
        }
        Cmd::Report {
            job,
            json,
            wait,
            decisions,
        } => match decisions {
            false => show_report(client, &job, json, wait).await,
            true => show_decisions(client, &job, json, wait).await,
        },
        Cmd::Workers => workers(client).await,
        Cmd::Files => files(client).await,
        Cmd::Get { file, output } => get(client, &file, output.as_deref()).await,
        Cmd::Cat { file } => get(client, &file, None).await,
        Cmd::Rm { file } => rm(client, &file).await,
        Cmd::Experiment { .. }
        | Cmd::Sim { .. }
        | Cmd::Replot { .. }
        | Cmd::Claims { .. }
        | Cmd::Results { .. }
        | Cmd::Chaos { .. }
        | Cmd::Campaign { .. }
        | Cmd::Soak { .. }
        | Cmd::Completions { .. }
        | Cmd::PolicySchema
        | Cmd::PolicyServer { .. } => {
            unreachable!("handled above")
        }
    }
}

/// `master rm`: a file deleted from every worker.
async fn rm(client: &MasterClient, file: &str) -> anyhow::Result<()> {
    let d = crate::ops::files::remove(client, file, std::time::Duration::from_secs(60)).await?;
    println!(
        "deleted {}: {} blocks, {} replicas",
        d.name, d.blocks, d.replicas
    );
    Ok(())
}

/// `master soak`: fails when the run's figures fall short.
/// `master up`: the cluster of `cfg` started where `kind` says.
async fn up(cfg: &ClusterConfig, kind: Kind, fresh: bool) -> anyhow::Result<()> {
    let d = kind.deployment();
    let keep = if fresh {
        Keep::Nothing
    } else {
        Keep::Everything
    };
    d.start(cfg, keep, &local::bin_dir()?).await?;
    println!("{}", d.up_line(cfg)?);
    Ok(())
}

/// `master get` and `master cat`.
async fn get(client: &MasterClient, file: &str, output: Option<&Path>) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            let n = crate::ops::files::get_to_path(client, file, path).await?;
            eprintln!("{file}: {n} bytes to {}", path.display());
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
            if let Err(e) = crate::ops::files::get(client, file, &mut out).await {
                // `master cat f | head`: the reader stopped; not an error.
                let closed = e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                });
                if !closed {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// `master serve`: the master alone, until Ctrl-C.
pub async fn serve(
    cfg: &ClusterConfig,
    listen: Option<SocketAddr>,
    scheduler: Option<SchedulerConfig>,
    instances: Option<&std::path::Path>,
    journal_recover: bool,
) -> anyhow::Result<()> {
    let mut settings = master::state::MasterSettings::from_config(cfg);
    settings.journal_recover = journal_recover;
    settings.tls = cfg.node_tls(common::tls::MASTER)?;
    if let Some(t) = &settings.tls {
        // An external policy at `tls:<host>:<port>` must present a
        // certificate of the cluster's authority.
        common::policy_socket::trust(&t.client);
    }
    if let Some(s) = scheduler {
        settings.scheduler = s;
    }
    if let Some(path) = instances {
        let p = crate::ops::instances::Backend::load(path)?.provisioning(cfg)?;
        tracing::info!(instances = %p.describe(), "public instances start as");
        settings.provision = Some(p);
    }
    master::daemon::serve_until_stopped(
        listen.unwrap_or(cfg.master.listen),
        &cfg.cluster.token,
        settings,
    )
    .await
}

/// `master down`: stops the local cluster of either mode.
pub fn down(cfg: &ClusterConfig) -> anyhow::Result<()> {
    if crate::ops::docker::down_with(&local::run_dir(cfg), true)? {
        println!("stopped the container cluster; removed its containers, network and volumes");
    }
    let s = local::down(&local::run_dir(cfg))?;
    println!(
        "stopped {} processes, removed {} network namespaces",
        s.processes,
        s.namespaces.len()
    );
    Ok(())
}

/// `master load`.
pub async fn load(client: &MasterClient, spec: &LoadSpec) -> anyhow::Result<()> {
    let pb = progress_bar(
        "{bar:30} {bytes}/{total_bytes} uploaded ({bytes_per_sec}), ETA {eta}",
        0,
    );
    let info = loader::load_showing(client, spec, &pb).await;
    pb.finish_and_clear();
    let info = info?;
    println!(
        "loaded {}: {} blocks, {:.1} MB, replication {}",
        info.name,
        info.blocks,
        info.bytes as f64 / 1e6,
        spec.replication
    );
    Ok(())
}

/// How `master submit` submits its jobs.
pub struct Submission {
    /// Identical jobs (names and outputs get `-<i>`).
    pub count: u32,
    /// Arrivals spread uniformly over this many seconds, seeded by `seed`.
    pub spread_s: f64,
    pub seed: u64,
    /// Print the reports when the jobs end.
    pub wait: bool,
    /// With `wait`: only a JSON array of the reports on stdout.
    pub json: bool,
}

/// A progress bar on stderr when stdout is a terminal; hidden otherwise
/// (plain lines in logs and pipes).
fn progress_bar(template: &str, len: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template"));
    pb
}

/// `--compute-ms MIN:MAX`.
fn parse_compute(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("expected MIN:MAX milliseconds such as 2000:12000 (got {s:?})");
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let (a, b) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    common::wire::TaskCompute {
        min_ms: a,
        max_ms: b,
        seed: 0,
    }
    .validate()?;
    Ok((a, b))
}

/// `master submit`.
pub async fn submit(
    client: &MasterClient,
    job: &JobSubmit,
    how: &Submission,
) -> anyhow::Result<()> {
    let Submission {
        count,
        spread_s,
        seed,
        wait,
        json,
    } = *how;
    if !(spread_s.is_finite() && spread_s >= 0.0) {
        return Err(bad_input(format!(
            "--spread-s must be a number of seconds >= 0 (got {spread_s})"
        )));
    }
    let at = experiment::run::arrivals(seed, count, [0.0, spread_s]);
    let t0 = tokio::time::Instant::now();
    let mut ids = Vec::new();
    for (i, ms) in at.into_iter().enumerate() {
        tokio::time::sleep_until(t0 + std::time::Duration::from_millis(ms)).await;
        let numbered = |n: &String| {
            if count > 1 {
                format!("{n}-{i}")
            } else {
                n.clone()
            }
        };
        let id = client
            .submit(&JobSubmit {
                workload: job.workload,
                input: job.input.clone(),
                name: job.name.as_ref().map(numbered),
                group: job.group.clone(),
                reduces: job.reduces,
                output: job.output.as_ref().map(numbered),
                // Job i of a batch draws its own task lengths.
                compute: job.compute.map(|c| common::wire::TaskCompute {
                    seed: common::hash::splitmix64(c.seed ^ i as u64),
                    ..c
                }),
                deadline_s: job.deadline_s,
                budget: job.budget,
                ratios: job.ratios,
                output_replication: job.output_replication,
            })
            .await?;
        if json {
            eprintln!("submitted {id}");
        } else {
            println!("submitted {id}");
        }
        ids.push(id);
    }
    if wait {
        // Tasks done over all the jobs, while they run (on a terminal only).
        let pb = progress_bar(
            "{bar:30} {pos}/{len} tasks done, elapsed {elapsed}: {msg}",
            0,
        );
        let watcher = (!pb.is_hidden() && !json).then(|| {
            let (client, pb, ids) = (client.clone(), pb.clone(), ids.clone());
            tokio::spawn(async move {
                loop {
                    if let Ok(jobs) = client.jobs().await {
                        let mine: Vec<_> = jobs.iter().filter(|j| ids.contains(&j.job)).collect();
                        pb.set_length(mine.iter().map(|j| (j.tasks + j.reduces) as u64).sum());
                        pb.set_position(
                            mine.iter()
                                .map(|j| (j.tasks_done + j.reduces_done) as u64)
                                .sum(),
                        );
                        let done = mine.iter().filter(|j| j.state.is_done()).count();
                        pb.set_message(format!("{done} of {} jobs ended", ids.len()));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
            })
        });
        let mut reports = Vec::new();
        let mut pending = Vec::new();
        for id in ids {
            pending.push(client.wait_job(id).await);
        }
        if let Some(w) = watcher {
            w.abort();
        }
        pb.finish_and_clear();
        for r in pending {
            let r = r?;
            if !json {
                println!("{}", report::job_report(&r));
            }
            reports.push(r);
        }
        if json {
            println!("{}", serde_json::to_string_pretty(&reports)?);
        } else {
            println!("{}", report::jobs_table(&client.jobs().await?));
        }
        let failed: Vec<String> = reports
            .iter()
            .filter(|r| r.state != common::wire::JobState::Succeeded)
            .map(|r| format!("{} {:?}", r.job, r.state))
            .collect();
        if !failed.is_empty() {
            return Err(Failed(format!("jobs that did not succeed: {}", failed.join(", "))).into());
        }
    }
    Ok(())
}

/// `master report`.
pub async fn show_report(
    client: &MasterClient,
    job: &str,
    json: bool,
    wait: bool,
) -> anyhow::Result<()> {
    let r = job_report(client, job, wait).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", report::job_report(&r));
    }
    if wait && r.state != common::wire::JobState::Succeeded {
        return Err(Failed(format!("{} ended {:?}", r.job, r.state)).into());
    }
    Ok(())
}

/// Job `job`'s report (`job-N` or `N`), once it ends if `wait`.
async fn job_report(
    client: &MasterClient,
    job: &str,
    wait: bool,
) -> anyhow::Result<common::wire::JobReport> {
    let id = master::http::parse_job_id(job).map_err(bad_input)?;
    Ok(if wait {
        client.wait_job(id).await?
    } else {
        client.job(id, None).await?
    })
}

/// `master report JOB --decisions`: one line per decision, oldest first.
pub async fn show_decisions(
    client: &MasterClient,
    job: &str,
    json: bool,
    wait: bool,
) -> anyhow::Result<()> {
    // The job must exist (a clear error, not an empty record).
    let id = job_report(client, job, wait).await?.job;
    let log = client.decisions(Some(id)).await?;
    if !log.recording {
        anyhow::bail!(
            "the master keeps no decision record: set decisions = true under [master] in cluster.toml and restart it"
        );
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&log)?);
    } else {
        print!("{}", report::decisions(&log));
    }
    Ok(())
}

/// `master workers`.
pub async fn workers(client: &MasterClient) -> anyhow::Result<()> {
    println!(
        "{:<4} {:<10} {:<24} {:>5} {:>5} {:>7} {:>7} alive",
        "id", "name", "addr", "slots", "free", "blocks", "running"
    );
    for w in client.workers().await? {
        println!(
            "{:<4} {:<10} {:<24} {:>5} {:>5} {:>7} {:>7} {}",
            w.id.0, w.name, w.addr, w.slots, w.free_slots, w.blocks, w.running, w.alive
        );
    }
    // What the scheduler has to say (an external policy's calls, refusals
    // and fallbacks).
    let c = client.cluster().await?;
    println!("scheduler: {}", c.scheduler);
    for n in c.scheduler_notes {
        println!("  {n}");
    }
    Ok(())
}

/// `master files`.
pub async fn files(client: &MasterClient) -> anyhow::Result<()> {
    for f in client.files().await.context("listing files")? {
        let under = f.under_replicated();
        println!(
            "{} {} blocks {:.1} MB complete={} replication={} under-replicated={}",
            f.name,
            f.blocks,
            f.bytes as f64 / 1e6,
            f.complete,
            f.replication.map_or("-".into(), |r| r.to_string()),
            under.len()
        );
        for (i, r) in f.replicas.iter().enumerate() {
            let mark = if under.contains(&(i as u32)) {
                format!(
                    "  (under-replicated: {} of {})",
                    r.len(),
                    f.replication.unwrap_or(0)
                )
            } else {
                String::new()
            };
            println!("  block {i:>5}: {}{mark}", r.join(" "));
        }
    }
    Ok(())
}

/// `master experiment`.
pub async fn run_experiment(
    spec: &Path,
    results: &Path,
    work: &Path,
    keep_data: bool,
    deployment: Box<dyn crate::ops::deploy::Deployment>,
) -> anyhow::Result<()> {
    experiment::run::run(&experiment::run::Options {
        spec: spec.into(),
        results: results.into(),
        work: work.into(),
        keep_data,
        bin: local::bin_dir()?,
        deployment,
    })
    .await?;
    Ok(())
}

/// `master replot`.
pub fn replot(dir: &Path) -> anyhow::Result<()> {
    experiment::run::replot(dir)?;
    println!("rewrote {}/summary.md and plots", dir.display());
    Ok(())
}

/// `master sim ...`.
pub fn sim(cmd: &SimCmd) -> anyhow::Result<()> {
    match cmd {
        SimCmd::Gen { gen, seed, out } => sim_gen(&gen.params()?, *seed, out),
        SimCmd::Calibrate {
            dir,
            hold_out,
            model_from,
            model_point,
            heartbeat_jitter_ms,
            order_draw,
            host_term,
            recorded_heartbeats,
            measured_task_times,
            disk_share,
            network_shuffle,
        } => {
            use crate::experiment::calibrate::{calibrate, Fit, Options};
            let fit = match (model_from, hold_out) {
                (Some(cal), _) => Fit::From(cal.clone(), model_point.clone()),
                (None, true) => Fit::HoldOut,
                (None, false) => Fit::InSample,
            };
            let out = calibrate(
                dir,
                &Options {
                    fit,
                    jitter_ms: *heartbeat_jitter_ms,
                    order_draw: *order_draw,
                    host_term: *host_term,
                    recorded_beats: *recorded_heartbeats,
                    measured_times: *measured_task_times,
                    disk_share: *disk_share,
                    network_shuffle: *network_shuffle,
                },
            )?;
            print!("{}", std::fs::read_to_string(out.join("summary.md"))?);
            println!("\nwrote {}", out.display());
            Ok(())
        }
        SimCmd::ScaleError { dirs, results } => {
            let out = crate::experiment::scale::scale_error(dirs, results)?;
            print!("{}", std::fs::read_to_string(out.join("summary.md"))?);
            println!("\nwrote {}", out.display());
            Ok(())
        }
        SimCmd::Run {
            instance,
            gen,
            seed,
            algos,
            tick,
        } => {
            let inst = match instance {
                Some(p) => simulation::read_instance(p)?,
                None => gen.params()?.generate(*seed),
            };
            sim_run(&inst, *seed, algos, *tick)
        }
        SimCmd::Hybrid { spec, workers } => {
            print!("{}", simulation::hybrid::run_file(spec, *workers)?);
            Ok(())
        }
        SimCmd::Trace {
            spec,
            calibration,
            point,
            workers,
            slots,
            fair_share,
            network_shuffle,
            fitted_reduce,
            slow,
            speculation,
            scheduler,
        } => {
            let opts = simulation::trace::TraceOptions {
                point: point.clone(),
                workers: *workers,
                slots: *slots,
                fair_share: *fair_share,
                slow: *slow,
                speculate: *speculation,
                schedulers: scheduler.clone(),
                keep_outcomes: false,
                seed: None,
                shuffle: match (network_shuffle, fitted_reduce) {
                    (true, _) => simulation::trace::ShuffleModel::Network,
                    (false, true) => simulation::trace::ShuffleModel::Fitted,
                    (false, false) => simulation::trace::ShuffleModel::Auto,
                },
            };
            print!("{}", simulation::trace::run_file(spec, calibration, &opts)?);
            Ok(())
        }
        SimCmd::Recheck { file } => {
            let log = crate::ops::report::read_record(file)?;
            let done =
                crate::ops::report::recheck(&log).with_context(|| format!("{}", file.display()))?;
            println!(
                "{}: {} policy, seed {}: {} offers run again, {} decisions the same, row for row",
                file.display(),
                log.scheduler.as_ref().map_or(String::new(), |s| s.label()),
                log.seed,
                done.offers,
                done.decisions
            );
            Ok(())
        }
        SimCmd::Sweep { spec, results } => {
            let out = simulation::sweep::run(spec, results)?;
            println!("results in {}", out.display());
            Ok(())
        }
    }
}

/// `master sim gen`.
pub fn sim_gen(params: &GenParams, seed: u64, out: &Path) -> anyhow::Result<()> {
    let inst = params.generate(seed);
    simulation::write_instance(&inst, out)?;
    println!(
        "wrote {}: {} servers, {} cores, {} tasks",
        out.display(),
        inst.servers(),
        inst.flat().init.len(),
        inst.tasks()
    );
    Ok(())
}

/// `master sim run`: every algorithm on one instance, a line each.
pub fn sim_run(
    inst: &simulation::Instance,
    seed: u64,
    algos: &[String],
    tick: f64,
) -> anyhow::Result<()> {
    if !(tick.is_finite() && tick > 0.0) {
        return Err(bad_input(format!("--tick must be > 0 (got {tick})")));
    }
    let algos: Vec<Algo> = algos
        .iter()
        .map(|a| a.parse().context("--algo"))
        .collect::<anyhow::Result<_>>()?;
    println!(
        "{} servers, {} cores, {} tasks, cost {:?}, seed {seed}",
        inst.servers(),
        inst.flat().init.len(),
        inst.tasks(),
        inst.cost
    );
    println!(
        "{:<28} {:>12} {:>8} {:>10} {:>12}",
        "algorithm", "makespan", "remote", "locality%", "time_ms"
    );
    for a in &algos {
        let run = simulation::timed_run(a, inst, seed, Measure::Makespan { tick }, None)?;
        let (e, dt) = (run.eval.expect("no time limit"), run.time);
        let phases: Vec<String> = run
            .phases
            .iter()
            .map(|(n, d)| format!("{n} {:.3} ms", d.as_secs_f64() * 1e3))
            .collect();
        println!(
            "{:<28} {:>12.3} {:>8} {:>10.1} {:>12.3}",
            a.label(),
            e.makespan,
            e.remote,
            e.locality() * 100.0,
            dt.as_secs_f64() * 1e3
        );
        if !phases.is_empty() {
            println!("{:<28} {}", "", phases.join(", "));
        }
    }
    Ok(())
}
