//! Starts and stops a cluster of local processes: the master and every
//! worker of cluster.toml, each with its log under `<run>/logs/`, their pids
//! in `<run>/cluster.json`. `up` returns once every worker has registered;
//! the processes keep running until `down`.

use crate::client::MasterClient;
use anyhow::{bail, Context};
use common::config::ClusterConfig;
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Serialize, Deserialize, Debug)]
pub struct Proc {
    pub name: String,
    pub pid: u32,
    pub log: PathBuf,
}

/// Where run state lives: `<dir of cluster.toml>/run`.
pub fn run_dir(cfg: &ClusterConfig) -> PathBuf {
    cfg.base_dir.join("run")
}

fn pids_file(run: &Path) -> PathBuf {
    run.join("cluster.json")
}

/// The directory holding the `master` and `worker` binaries: this binary's.
pub fn bin_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the running binary")?;
    Ok(exe.parent().context("binary has no directory")?.to_owned())
}

/// Running and not a zombie.
fn alive(p: &Proc) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", p.pid))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Still one of ours, not a reused pid (checked before signalling from `down`).
fn ours(p: &Proc) -> bool {
    std::fs::read(format!("/proc/{}/cmdline", p.pid))
        .map(|c| {
            let c = String::from_utf8_lossy(&c);
            c.contains("master") || c.contains("worker")
        })
        .unwrap_or(false)
}

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn stop_all(procs: &[Proc]) {
    for p in procs.iter().filter(|p| alive(p)) {
        signal(p.pid, "-TERM");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while procs.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in procs.iter().filter(|p| alive(p)) {
        signal(p.pid, "-KILL");
    }
}

/// Stops the cluster recorded in `run`. Returns how many processes it stopped.
pub fn down(run: &Path) -> anyhow::Result<usize> {
    let f = pids_file(run);
    let Ok(text) = std::fs::read_to_string(&f) else {
        return Ok(0);
    };
    let procs: Vec<Proc> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a process list", f.display()))?;
    let procs: Vec<Proc> = procs.into_iter().filter(ours).collect();
    let n = procs.iter().filter(|p| alive(p)).count();
    stop_all(&procs);
    std::fs::remove_file(&f).with_context(|| format!("removing {}", f.display()))?;
    Ok(n)
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<&str> = text.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

/// A process to start: its name, binary and arguments.
pub struct Spawn {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// Spawns `specs` detached (own process group, logs to files), records them,
/// and waits until the master at `client` sees `expect_workers` alive.
/// On failure everything started is stopped and the failing log is shown.
pub async fn spawn_and_wait(
    run: &Path,
    specs: Vec<Spawn>,
    client: &MasterClient,
    expect_workers: usize,
) -> anyhow::Result<()> {
    let logs = run.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let mut procs = Vec::new();
    for s in specs {
        let log = logs.join(format!("{}.log", s.name));
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(&s.program)
            .args(&s.args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .spawn();
        match child {
            Ok(c) => procs.push(Proc {
                name: s.name,
                pid: c.id(),
                log,
            }),
            Err(e) => {
                stop_all(&procs);
                bail!("cannot start {} ({}): {e}", s.name, s.program.display());
            }
        }
    }
    std::fs::write(pids_file(run), serde_json::to_string_pretty(&procs)?)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(dead) = procs.iter().find(|p| !alive(p)) {
            let msg = format!(
                "{} exited during start-up; its log ({}):\n{}",
                dead.name,
                dead.log.display(),
                tail(&dead.log, 20)
            );
            stop_all(&procs);
            let _ = std::fs::remove_file(pids_file(run));
            bail!(msg);
        }
        if let Ok(c) = client.cluster().await {
            if c.workers_alive == expect_workers {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            stop_all(&procs);
            let _ = std::fs::remove_file(pids_file(run));
            bail!(
                "the cluster did not come up within 30 s; logs are in {}",
                logs.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts the master and every worker of `cfg` as local processes.
pub async fn up(cfg: &ClusterConfig, fresh: bool) -> anyhow::Result<()> {
    let run = run_dir(cfg);
    let stopped = down(&run)?;
    if stopped > 0 {
        println!("stopped the previous cluster ({stopped} processes)");
    }
    if fresh {
        let data = cfg.resolve(&cfg.cluster.data_dir);
        if data.exists() {
            std::fs::remove_dir_all(&data)
                .with_context(|| format!("removing {}", data.display()))?;
        }
    }
    let bin = bin_dir()?;
    let config = cfg.path.to_string_lossy().into_owned();
    let mut specs = vec![Spawn {
        name: "master".into(),
        program: bin.join("master"),
        args: vec!["serve".into(), "--config".into(), config.clone()],
    }];
    for w in &cfg.worker {
        specs.push(Spawn {
            name: w.name.clone(),
            program: bin.join("worker"),
            args: vec![
                "--config".into(),
                config.clone(),
                "--name".into(),
                w.name.clone(),
            ],
        });
    }
    let client = MasterClient::new(cfg.master_url(), &cfg.cluster.token);
    spawn_and_wait(&run, specs, &client, cfg.worker.len()).await?;
    println!(
        "cluster up: master at {}, {} workers; logs in {}",
        cfg.master_url(),
        cfg.worker.len(),
        run.join("logs").display()
    );
    Ok(())
}
