//! Workers on other machines, started and stopped over ssh the way Hadoop's
//! and Spark's start scripts do it: for each `[[worker]]` with a `host`,
//! `master up` makes `remote_dir` there, copies the worker binary and
//! cluster.toml with scp when they are missing or differ (by SHA-256), and
//! starts `worker --config cluster.toml --name <w>` detached, its log in
//! `remote_dir/<w>.log`; `master down` stops it. ssh runs with BatchMode (the
//! user's keys or agent; never a password prompt) plus the configured
//! `ssh_options`. The pids are recorded in `run/remote.json`.
//!
//! Addresses in cluster.toml are what the workers listen on and what others
//! dial: a remote worker's `listen` must be an address of its host, and the
//! master's one every worker can reach.

use anyhow::Context;
use common::config::{ClusterConfig, WorkerEntry};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How to reach one remote worker's machine.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Target {
    pub name: String,
    /// `user@host` or `host`.
    pub dest: String,
    pub port: Option<u16>,
    pub options: Vec<String>,
    pub dir: PathBuf,
    pub bin: PathBuf,
}

impl Target {
    pub fn of(cfg: &ClusterConfig, w: &WorkerEntry) -> Option<Target> {
        let host = w.host.as_ref()?;
        let dir = w
            .remote_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("mrtb"));
        Some(Target {
            name: w.name.clone(),
            dest: match &w.ssh_user {
                Some(u) => format!("{u}@{host}"),
                None => host.clone(),
            },
            port: w.ssh_port,
            options: cfg
                .workers
                .ssh_options
                .iter()
                .chain(w.ssh_options.iter().flatten())
                .cloned()
                .collect(),
            bin: w.remote_bin.clone().unwrap_or_else(|| dir.join("worker")),
            dir,
        })
    }

    fn base(&self, program: &str, port_flag: &str) -> Command {
        let mut c = Command::new(program);
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        if let Some(p) = self.port {
            c.args([port_flag, &p.to_string()]);
        }
        c.args(&self.options);
        c.stdin(Stdio::null());
        c
    }

    /// Runs `script` with `sh -c` on the machine; its stdout.
    pub fn ssh(&self, script: &str) -> anyhow::Result<String> {
        let mut c = self.base("ssh", "-p");
        c.arg(&self.dest)
            .arg("--")
            .arg(format!("sh -c {}", quote(script)));
        crate::ops::stdout_of(c, &format!("ssh {} ({})", self.dest, self.name))
    }

    /// Copies local `from` to `to` on the machine (mode kept).
    pub fn scp(&self, from: &Path, to: &Path) -> anyhow::Result<()> {
        let mut c = self.base("scp", "-P");
        c.args(["-p", "-q"])
            .arg(from)
            .arg(format!("{}:{}", self.dest, to.display()));
        let what = format!("scp {} to {}:{}", from.display(), self.dest, to.display());
        crate::ops::stdout_of(c, &what).map(drop)
    }
}

/// `s` single-quoted for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn quote_path(p: &Path) -> String {
    quote(&p.to_string_lossy())
}

fn sha256_file(p: &Path) -> anyhow::Result<String> {
    let data = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
    Ok(hex::encode(Sha256::digest(&data)))
}

/// A started remote worker, for `down`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RemoteProc {
    pub target: Target,
    pub pid: u32,
}

fn record_path(run: &Path) -> PathBuf {
    run.join("remote.json")
}

/// What `start` did on one machine.
#[derive(Clone, Debug, Default)]
pub struct Started {
    pub copied: Vec<String>,
    pub pid: u32,
}

/// Starts every remote worker of `cfg` (`bin` holds the local worker
/// binary to copy); records them under `run`. On failure the ones already
/// started are stopped.
pub fn start_all(
    cfg: &ClusterConfig,
    bin: &Path,
    run: &Path,
) -> anyhow::Result<Vec<(String, Started)>> {
    let targets: Vec<Target> = cfg
        .worker
        .iter()
        .filter_map(|w| Target::of(cfg, w))
        .collect();
    let mut procs: Vec<RemoteProc> = Vec::new();
    let mut out = Vec::new();
    for t in targets {
        match start_one(cfg, bin, &t) {
            Ok(s) => {
                procs.push(RemoteProc {
                    target: t.clone(),
                    pid: s.pid,
                });
                std::fs::create_dir_all(run)?;
                std::fs::write(record_path(run), serde_json::to_string_pretty(&procs)?)?;
                out.push((t.name.clone(), s));
            }
            Err(e) => {
                stop(&procs);
                let _ = std::fs::remove_file(record_path(run));
                return Err(e.context(format!("starting worker {} on {}", t.name, t.dest)));
            }
        }
    }
    Ok(out)
}

/// Makes the directory, copies what is missing or stale, starts the worker.
fn start_one(cfg: &ClusterConfig, bin: &Path, t: &Target) -> anyhow::Result<Started> {
    let local_bin = bin.join("worker");
    let mut started = Started::default();
    let config = t.dir.join("cluster.toml");
    let mut want = vec![
        (local_bin.clone(), t.bin.clone()),
        (cfg.path.clone(), config.clone()),
    ];
    // With TLS: the authority's certificate and the worker's own
    // certificate and key (never the authority's key), where the copied
    // cluster.toml's `[tls] dir` points there.
    if cfg.tls.enabled {
        let files = common::tls::Files::of(&cfg.tls_dir(), &t.name);
        let there = common::tls::Files::of(&t.dir.join(&cfg.tls.dir), &t.name);
        want.push((files.ca, there.ca));
        want.push((files.cert, there.cert));
        want.push((files.key, there.key));
    }
    // Checksums of what is there ("-" where missing).
    let script = format!(
        "mkdir -p {dir} && for f in {files}; do if [ -f \"$f\" ]; then sha256sum \"$f\" | cut -d' ' -f1; else echo -; fi; done",
        dir = quote_path(&t.dir),
        files = want
            .iter()
            .map(|(_, to)| quote_path(to))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let there: Vec<String> = t.ssh(&script)?.lines().map(str::to_owned).collect();
    for (i, (from, to)) in want.iter().enumerate() {
        let local = sha256_file(from)?;
        if there.get(i).map(String::as_str) != Some(local.as_str()) {
            if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
                t.ssh(&format!("mkdir -p {}", quote_path(parent)))?;
            }
            t.scp(from, to)?;
            if to.extension().is_some_and(|e| e == "key") {
                t.ssh(&format!("chmod 600 {}", quote_path(to)))?;
            }
            started.copied.push(to.display().to_string());
        }
    }
    let log = t.dir.join(format!("{}.log", t.name));
    let script = format!(
        "cd {dir} && NO_COLOR=1 nohup {bin} --config cluster.toml --name {name} > {log} 2>&1 < /dev/null & echo $!",
        dir = quote_path(&t.dir),
        bin = if t.bin.is_absolute() {
            quote_path(&t.bin)
        } else {
            // Relative to the ssh user's home, where the script starts.
            format!("\"$HOME\"/{}", quote_path(&t.bin))
        },
        name = quote(&t.name),
        log = quote(&format!("{}.log", t.name)),
    );
    let pid = t.ssh(&script)?;
    started.pid = pid
        .trim()
        .parse()
        .with_context(|| format!("no pid from {}: {pid:?} (log: {})", t.dest, log.display()))?;
    Ok(started)
}

/// Stops `procs` (SIGTERM; only a process that is still this worker).
fn stop(procs: &[RemoteProc]) -> usize {
    let mut n = 0;
    for p in procs {
        let script = format!(
            "if grep -q worker /proc/{pid}/cmdline 2>/dev/null; then kill {pid} && echo stopped; fi",
            pid = p.pid
        );
        match p.target.ssh(&script) {
            Ok(o) if o.contains("stopped") => n += 1,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(worker = %p.target.name, error = %e, "could not stop a remote worker")
            }
        }
    }
    n
}

/// Stops the remote workers recorded under `run`; how many were running.
pub fn down(run: &Path) -> anyhow::Result<usize> {
    let path = record_path(run);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(0);
    };
    let procs: Vec<RemoteProc> =
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    let n = stop(&procs);
    std::fs::remove_file(&path)?;
    Ok(n)
}

/// Deletes every remote worker's block store (`up --fresh`), as the worker
/// resolves it: relative paths from its `remote_dir`.
pub fn delete_stores(cfg: &ClusterConfig) -> anyhow::Result<()> {
    for w in &cfg.worker {
        let Some(t) = Target::of(cfg, w) else {
            continue;
        };
        let store = match &w.data_dir {
            Some(d) => d.clone(),
            None => cfg.cluster.data_dir.join(&w.name),
        };
        t.ssh(&format!(
            "mkdir -p {dir} && cd {dir} && rm -rf -- {store}",
            dir = quote_path(&t.dir),
            store = quote_path(&store)
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"
[cluster]
token = "t"
replication = 1
[master]
listen = "10.0.0.1:7070"
[workers]
ssh_options = ["-i", "/k"]
[[worker]]
name = "w1"
listen = "10.0.0.11:7101"
host = "10.0.0.11"
ssh_user = "hadoop"
ssh_port = 2222
remote_dir = "/srv/mrtb"
ssh_options = ["-o", "UserKnownHostsFile=/kh"]
[[worker]]
name = "w2"
listen = "127.0.0.1:7102"
"#;
        let path = dir.path().join("cluster.toml");
        std::fs::write(&path, text).unwrap();
        let cfg = ClusterConfig::load(&path).unwrap();
        let t = Target::of(&cfg, &cfg.worker[0]).unwrap();
        assert_eq!(t.dest, "hadoop@10.0.0.11");
        assert_eq!(t.port, Some(2222));
        assert_eq!(t.options, ["-i", "/k", "-o", "UserKnownHostsFile=/kh"]);
        assert_eq!(t.bin, PathBuf::from("/srv/mrtb/worker"));
        assert!(Target::of(&cfg, &cfg.worker[1]).is_none());
        assert_eq!(quote("it's"), r"'it'\''s'");
        // ssh keys without a host are a mistake, named.
        let bad = text.replace("host = \"10.0.0.11\"\n", "");
        std::fs::write(&path, bad).unwrap();
        let e = ClusterConfig::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("worker[0].ssh_user") && e.contains("host"),
            "{e}"
        );
    }
}
