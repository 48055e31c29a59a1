//! Starts and stops a cluster of local processes: the master and every
//! worker of cluster.toml, each with its log under `<run>/logs/`, their pids
//! in `<run>/cluster.json`. `up` returns once every worker has registered;
//! the processes keep running until `down`.

use crate::ops::client::MasterClient;
use anyhow::{bail, Context};
use common::config::ClusterConfig;
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// Variables set in the environment of every node this process starts
/// (and restarts) from now on, beside what it inherits: the fault
/// campaign runs its nodes without glibc's per-thread caches, so their
/// heap at rest counts what they hold.
static NODE_ENV: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// Sets the variables every node started from now on gets (replacing
/// what was set before).
pub fn set_node_env(vars: Vec<(String, String)>) {
    *NODE_ENV.write().unwrap_or_else(|e| e.into_inner()) = vars;
}

fn with_node_env(cmd: &mut Command) {
    let vars = NODE_ENV.read().unwrap_or_else(|e| e.into_inner());
    cmd.envs(vars.iter().map(|(k, v)| (k, v)));
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Proc {
    pub name: String,
    pub pid: u32,
    pub log: PathBuf,
}

/// Where run state lives: `<dir of cluster.toml>/run`.
pub fn run_dir(cfg: &ClusterConfig) -> PathBuf {
    cfg.run_dir()
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
    is_running(p.pid)
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
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
    // TERM, then KILL what is left, each followed by a wait of up to 5 s:
    // `down` returns once they are gone, since a process still dying holds
    // its ports and the next `up` on them would fail.
    for sig in ["-TERM", "-KILL"] {
        let left: Vec<&Proc> = procs.iter().filter(|p| alive(p)).collect();
        for p in &left {
            signal(p.pid, sig);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while left.iter().any(|p| alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What `down` stopped.
#[derive(Debug, Default)]
pub struct Stopped {
    pub processes: usize,
    /// Network namespaces removed (netns mode).
    pub namespaces: Vec<String>,
}

/// The netns mode's record: the namespace prefix, written before any
/// namespace is created so that `down` can clean up after any failure.
fn netns_file(run: &Path) -> PathBuf {
    run.join("netns.json")
}

#[derive(Serialize, Deserialize)]
struct NetnsRecord {
    prefix: String,
}

/// Stops the cluster recorded in `run`: its processes, and in the netns mode
/// every namespace it created.
pub fn down(run: &Path) -> anyhow::Result<Stopped> {
    let mut stopped = Stopped::default();
    stopped.processes += crate::ops::remote::down(run)?;
    let f = pids_file(run);
    if let Ok(text) = std::fs::read_to_string(&f) {
        let procs: Vec<Proc> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a process list", f.display()))?;
        let procs: Vec<Proc> = procs.into_iter().filter(ours).collect();
        stopped.processes = procs.iter().filter(|p| alive(p)).count();
        stop_all(&procs);
        std::fs::remove_file(&f).with_context(|| format!("removing {}", f.display()))?;
    }
    let nf = netns_file(run);
    if let Ok(text) = std::fs::read_to_string(&nf) {
        let rec: NetnsRecord = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a netns record", nf.display()))?;
        stopped.namespaces = crate::ops::netns::teardown(&rec.prefix)?;
        std::fs::remove_file(&nf).with_context(|| format!("removing {}", nf.display()))?;
    }
    Ok(stopped)
}

/// The start of a log (where a start-up error is), ANSI colours removed.
fn head(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = String::new();
    let mut esc = false;
    for c in text
        .lines()
        .take(lines)
        .collect::<Vec<_>>()
        .join("\n")
        .chars()
    {
        match (esc, c) {
            (false, '\x1b') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// Starts worker `name` of `cfg` again (after it was killed), appending to
/// its log, and records its new pid so that [`down`] stops it.
pub fn restart_worker(cfg: &ClusterConfig, bin: &Path, name: &str) -> anyhow::Result<u32> {
    let config = cfg.path.to_string_lossy().into_owned();
    let args = ["--config", config.as_str(), "--name", name];
    restart(cfg, name, &bin.join("worker"), &args, None)
}

/// Starts the master of `cfg` again (after it was killed), as
/// [`restart_worker`] does a worker.
pub fn restart_master(cfg: &ClusterConfig, bin: &Path) -> anyhow::Result<u32> {
    restart_master_with(cfg, bin, &[])
}

/// [`restart_master`] with more `master serve` arguments
/// (`--journal-recover`).
pub fn restart_master_with(cfg: &ClusterConfig, bin: &Path, extra: &[&str]) -> anyhow::Result<u32> {
    let config = cfg.path.to_string_lossy().into_owned();
    let mut args = vec!["serve", "--config", config.as_str()];
    args.extend_from_slice(extra);
    restart(cfg, "master", &bin.join("master"), &args, None)
}

/// Starts process `name` of the netns cluster of `cfg` again in its
/// namespace `ns` (`program` with `args`, as `up_netns_layout` started
/// it), as [`restart_worker`] does on loopback.
pub fn restart_in_ns(
    cfg: &ClusterConfig,
    name: &str,
    program: &Path,
    args: &[&str],
    ns: &str,
) -> anyhow::Result<u32> {
    restart(cfg, name, program, args, Some(ns))
}

fn restart(
    cfg: &ClusterConfig,
    name: &str,
    program: &Path,
    args: &[&str],
    ns: Option<&str>,
) -> anyhow::Result<u32> {
    let run = run_dir(cfg);
    let f = pids_file(&run);
    let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
    let mut procs: Vec<Proc> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a process list", f.display()))?;
    let entry = procs
        .iter_mut()
        .find(|p| p.name == name)
        .with_context(|| format!("{name} is not a process of this cluster"))?;
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&entry.log)
        .with_context(|| format!("opening {}", entry.log.display()))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    with_node_env(&mut cmd);
    if let Some(ns) = ns {
        crate::ops::netns::exec_in(&mut cmd, ns)?;
    }
    let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
    entry.pid = child.id();
    std::fs::write(&f, serde_json::to_string_pretty(&procs)?)?;
    Ok(reap_when_done(child))
}

/// Waits for `child` on a thread of its own, so a long-lived parent (the
/// experiment runner, the chaos run) leaves no zombie behind each process
/// it started; a short-lived one (`master up`) exits first and the process
/// goes on. Returns its pid.
fn reap_when_done(mut child: std::process::Child) -> u32 {
    let pid = child.id();
    let _ = std::thread::Builder::new()
        .name(format!("reap-{pid}"))
        .spawn(move || child.wait());
    pid
}

/// The recorded processes of the cluster in `run`, by name and pid.
pub fn processes(run: &Path) -> anyhow::Result<Vec<Proc>> {
    let f = pids_file(run);
    let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a process list", f.display()))
}

/// Writes `<dir>/cluster.toml` for a cluster of `workers` workers (`w1`,
/// `w2`, ...) on free loopback ports, with `cluster_keys` under `[cluster]`
/// (after the token) and `worker_keys` under `[workers]`, and loads it:
/// the scratch clusters of the chaos run and the fault tests. Their
/// workers fault no buffers in unless `worker_keys` sets `pretouch_mb`:
/// they restart often and run small jobs, which "auto"'s 1 GiB a worker
/// would not serve.
pub fn write_loopback_config(
    dir: &Path,
    token: &str,
    workers: usize,
    cluster_keys: &str,
    worker_keys: &str,
) -> anyhow::Result<ClusterConfig> {
    // Bound together, then released for the processes to take.
    let held = (0..=workers)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    let ports = held
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()?;
    drop(held);
    let pretouch = if worker_keys.contains("pretouch_mb") {
        ""
    } else {
        "pretouch_mb = 0\n"
    };
    let mut t = format!(
        "[cluster]\ntoken = \"{token}\"\n{cluster_keys}\n\n[master]\nlisten = \"127.0.0.1:{}\"\n\n\
         [workers]\n{pretouch}{worker_keys}\n",
        ports[0]
    );
    for (i, p) in ports[1..].iter().enumerate() {
        t += &format!(
            "\n[[worker]]\nname = \"w{}\"\nlisten = \"127.0.0.1:{p}\"\n",
            i + 1
        );
    }
    let path = dir.join("cluster.toml");
    std::fs::write(&path, t).with_context(|| format!("writing {}", path.display()))?;
    Ok(ClusterConfig::load(&path)?)
}

/// A process to start: its name, binary and arguments.
pub struct Spawn {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Run in this network namespace (the netns mode), else in this one.
    pub netns: Option<String>,
}

/// Spawns `specs` detached (own process group, logs to files), records them,
/// and waits until the master at `client` sees `expect_workers` alive.
/// On failure everything started is stopped and the failing log is shown.
pub async fn spawn_and_wait<F, Fut>(
    run: &Path,
    specs: Vec<Spawn>,
    mut alive_workers: F,
    expect_workers: usize,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<usize>>,
{
    let logs = run.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let mut procs = Vec::new();
    for s in specs {
        let log = logs.join(format!("{}.log", s.name));
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(&s.program);
        cmd.args(&s.args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0);
        with_node_env(&mut cmd);
        let child = match &s.netns {
            Some(ns) => crate::ops::netns::exec_in(&mut cmd, ns).and_then(|()| Ok(cmd.spawn()?)),
            None => cmd.spawn().map_err(anyhow::Error::from),
        };
        match child {
            Ok(c) => procs.push(Proc {
                name: s.name,
                pid: reap_when_done(c),
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
                head(&dead.log, 12)
            );
            stop_all(&procs);
            let _ = std::fs::remove_file(pids_file(run));
            bail!(msg);
        }
        if alive_workers().await == Some(expect_workers) {
            return Ok(());
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

/// Fails if `cfg` sets `cluster.rack_link_mbps`, which only the netns mode
/// shapes (`mode` names the one refused).
pub fn refuse_rack_links(cfg: &ClusterConfig, mode: &str) -> anyhow::Result<()> {
    if let Some(m) = cfg.cluster.rack_link_mbps {
        bail!(
            "cluster.rack_link_mbps = {m}: rack links are shaped by tc in the netns mode only \
             (`master up --netns`, or `--deployment netns`); {mode} cannot shape them"
        );
    }
    Ok(())
}

/// Starts the master and every worker of `cfg` as local processes (binaries
/// next to this one), silently; returns once every worker has registered.
/// Stop them with [`down`].
pub async fn start(cfg: &ClusterConfig) -> anyhow::Result<()> {
    start_with(cfg, &bin_dir()?).await
}

/// [`start`] with the `master` and `worker` binaries taken from `bin`.
pub async fn start_with(cfg: &ClusterConfig, bin: &Path) -> anyhow::Result<()> {
    refuse_rack_links(cfg, "local processes")?;
    say_tls(cfg)?;
    let run = run_dir(cfg);
    let config = cfg.path.to_string_lossy().into_owned();
    let mut specs = vec![Spawn {
        name: "master".into(),
        program: bin.join("master"),
        args: vec!["serve".into(), "--config".into(), config.clone()],
        netns: None,
    }];
    for w in cfg.worker.iter().filter(|w| w.remote().is_none()) {
        specs.push(Spawn {
            name: w.name.clone(),
            program: bin.join("worker"),
            args: vec![
                "--config".into(),
                config.clone(),
                "--name".into(),
                w.name.clone(),
            ],
            netns: None,
        });
    }
    // Workers on other machines first: they register once the master is up.
    for (name, s) in crate::ops::remote::start_all(cfg, bin, &run)? {
        let copied = if s.copied.is_empty() {
            "binary and config up to date".to_owned()
        } else {
            format!("copied {}", s.copied.join(", "))
        };
        println!("started {name} over ssh (pid {}; {copied})", s.pid);
    }
    let client = MasterClient::for_cluster(cfg, common::credentials::Role::Client)?;
    let probe = || async { client.cluster().await.ok().map(|c| c.workers_alive) };
    let r = spawn_and_wait(&run, specs, probe, cfg.worker.len()).await;
    if r.is_err() {
        let _ = crate::ops::remote::down(&run);
    }
    r
}

/// Makes the TLS files `cfg` lacks (`ClusterConfig::make_tls`) and
/// says which it made and where; nothing with TLS off.
pub fn say_tls(cfg: &ClusterConfig) -> anyhow::Result<()> {
    let made = cfg.make_tls()?;
    if !made.is_empty() {
        println!(
            "TLS: made {} in {}",
            made.join(", "),
            cfg.tls_dir().display()
        );
    }
    Ok(())
}

/// The TLS of a derived deployment (namespaces, containers), whose nodes
/// have other addresses: its own folder `tls` beside its config
/// (`config_dir`), holding `cfg`'s authority (made first if `cfg` has none)
/// and certificates for the derived addresses. Sets `derived`'s `[tls] dir`
/// to it, relative, so the nodes and the host's clients both find it. The
/// public instances' certificate also names `instance_ips`, the addresses
/// the deployment gives them.
pub fn derive_tls(
    cfg: &ClusterConfig,
    derived: &mut ClusterConfig,
    config_dir: &Path,
    instance_ips: &[std::net::Ipv4Addr],
) -> anyhow::Result<()> {
    if !cfg.tls.enabled {
        return Ok(());
    }
    let src = cfg.tls_dir();
    common::tls::make::ensure(&src, &[])?;
    let dst = config_dir.join("tls");
    std::fs::create_dir_all(&dst).with_context(|| format!("creating {}", dst.display()))?;
    for f in ["ca.pem", "ca.key"] {
        let (from, to) = (src.join(f), dst.join(f));
        if from.exists() && std::fs::read(&from).ok() != std::fs::read(&to).ok() {
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
    }
    derived.tls.dir = PathBuf::from("tls");
    let mut nodes = derived.tls_nodes();
    for (node, names) in &mut nodes {
        if node == common::tls::INSTANCES {
            names.extend(instance_ips.iter().map(|ip| ip.to_string()));
        }
    }
    let made = common::tls::make::ensure(&dst, &nodes)?;
    if !made.is_empty() {
        println!("TLS: made {} in {}", made.join(", "), dst.display());
    }
    Ok(())
}

/// Says what a start stopped of the previous cluster, if anything.
pub fn print_stopped(stopped: &Stopped) {
    if stopped.processes > 0 || !stopped.namespaces.is_empty() {
        println!(
            "stopped the previous cluster ({} processes, {} namespaces)",
            stopped.processes,
            stopped.namespaces.len()
        );
    }
}

/// Stops what `run_dir(cfg)` records; with `fresh`, deletes the block stores.
pub fn stop_previous(cfg: &ClusterConfig, fresh: bool) -> anyhow::Result<Stopped> {
    let stopped = down(&run_dir(cfg))?;
    if fresh {
        let data = cfg.resolve(&cfg.cluster.data_dir);
        if data.exists() {
            std::fs::remove_dir_all(&data)
                .with_context(|| format!("removing {}", data.display()))?;
        }
        // Local workers' own store directories, and the remote ones'.
        for w in cfg.worker.iter().filter(|w| w.remote().is_none()) {
            let d = cfg.worker_data_dir(&w.name);
            if d.exists() {
                std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
            }
        }
        crate::ops::remote::delete_stores(cfg)?;
        // A fresh cluster starts its job history afresh too.
        let journal = cfg.resolve(&cfg.master.journal);
        if journal.exists() {
            std::fs::remove_file(&journal)
                .with_context(|| format!("removing {}", journal.display()))?;
        }
    }
    Ok(stopped)
}

/// Where `up_netns` writes the cluster.toml that names the namespace
/// addresses; the CLI uses it from inside the master's namespace.
pub fn netns_config_path(cfg: &ClusterConfig) -> PathBuf {
    run_dir(cfg).join("netns").join("cluster.toml")
}

/// The netns mode (root only; see [`crate::ops::netns`]): the master and every
/// worker in its own network namespace, links shaped by tc at `nic_mbps`,
/// the workers' emulated NIC off. Writes the derived config to
/// [`netns_config_path`]. On failure, every process and namespace it
/// started is removed before the error returns.
/// The `master` and `worker` binaries are taken from `bin`.
pub async fn up_netns_with(
    cfg: &ClusterConfig,
    fresh: bool,
    prefix: &str,
    bin: &Path,
) -> anyhow::Result<()> {
    let layout = crate::ops::netns::Layout::plan(prefix, cfg)?;
    up_netns_layout(cfg, fresh, &layout, bin).await
}

/// [`up_netns_with`] on a given layout (another subnet, a host link).
pub async fn up_netns_layout(
    cfg: &ClusterConfig,
    fresh: bool,
    layout: &crate::ops::netns::Layout,
    bin: &Path,
) -> anyhow::Result<()> {
    use crate::ops::netns;
    let prefix = layout.prefix.as_str();
    netns::require_root()?;
    if let Some(w) = cfg.worker.iter().find(|w| w.remote().is_some()) {
        bail!(
            "worker {} has a `host`: the netns mode runs every node on this machine",
            w.name
        );
    }
    let stopped = stop_previous(cfg, fresh)?;
    print_stopped(&stopped);
    let leftover = netns::teardown(prefix)?;
    if !leftover.is_empty() {
        println!("removed {} leftover namespaces {prefix}*", leftover.len());
    }
    let run = run_dir(cfg);
    std::fs::create_dir_all(run.join("netns"))
        .with_context(|| format!("creating {}", run.display()))?;
    std::fs::write(
        netns_file(&run),
        serde_json::to_string(&NetnsRecord {
            prefix: prefix.into(),
        })?,
    )?;
    let result = async {
        netns::setup(layout)?;
        let mut derived = layout.derive_config(cfg);
        let dpath = netns_config_path(cfg);
        let first = 1 + layout.workers.len();
        let instance_ips = &layout.addresses()[first..first + layout.instances as usize];
        derive_tls(cfg, &mut derived, &run.join("netns"), instance_ips)?;
        let client_tls = ClusterConfig {
            base_dir: run.join("netns"),
            ..derived.clone()
        }
        .client_tls()?;
        let text = format!(
            "# Written by `master up --netns` from {}: the same cluster with every node\n\
             # at its network-namespace address. Links are shaped by tc, not emulated.\n{}",
            cfg.path.display(),
            toml::to_string(&derived).context("serialising the derived config")?
        );
        std::fs::write(&dpath, text).with_context(|| format!("writing {}", dpath.display()))?;
        let dconf = dpath.to_string_lossy().into_owned();
        // The processes join their namespace only (not a new mount
        // namespace, as `ip netns exec` would make): the namespaces the
        // master adds for public instances must be seen by everyone.
        let mut master_args = vec!["serve".into(), "--config".into(), dconf.clone()];
        if layout.instances > 0 {
            let file = dpath.with_file_name("instances.json");
            let logs = std::path::absolute(run.join("logs"))?;
            crate::ops::instances::Backend::for_netns(layout, &logs).write(&file)?;
            master_args.extend(["--instances".into(), file.to_string_lossy().into_owned()]);
        }
        let mut specs = vec![Spawn {
            name: "master".into(),
            program: bin.join("master"),
            args: master_args,
            netns: Some(layout.master.ns.clone()),
        }];
        for w in &layout.workers {
            specs.push(Spawn {
                name: w.name.clone(),
                program: bin.join("worker"),
                args: vec![
                    "--config".into(),
                    dconf.clone(),
                    "--name".into(),
                    w.name.clone(),
                    "--no-nic-emulation".into(),
                ],
                netns: Some(w.ns.clone()),
            });
        }
        let url = derived.master_url();
        let token = derived.secret(common::credentials::Role::Client).to_owned();
        let master_ns = layout.master.ns.clone();
        let probe = || {
            let (url, token, ns) = (url.clone(), token.clone(), master_ns.clone());
            let tls = client_tls.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    netns::in_ns(&ns, move || {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .ok()?;
                        rt.block_on(async {
                            let c = MasterClient::new(url, &token).with_tls(tls.as_ref());
                            c.cluster().await.ok().map(|c| c.workers_alive)
                        })
                    })
                    .ok()
                    .flatten()
                })
                .await
                .ok()
                .flatten()
            }
        };
        spawn_and_wait(&run, specs, probe, cfg.worker.len()).await?;
        anyhow::Ok(())
    }
    .await;
    if result.is_err() {
        let _ = down(&run);
        let _ = netns::teardown(prefix);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_started_after_the_environment_is_set_gets_it() {
        let echo = || {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "printf '%s' \"$MRTB_NODE_ENV_TEST\""]);
            with_node_env(&mut cmd);
            String::from_utf8(cmd.output().unwrap().stdout).unwrap()
        };
        set_node_env(vec![("MRTB_NODE_ENV_TEST".into(), "on".into())]);
        assert_eq!(echo(), "on");
        set_node_env(Vec::new());
        assert_eq!(echo(), "");
    }
}
