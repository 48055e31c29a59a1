//! Injecting and healing the campaign's faults on a real cluster. In
//! network namespaces (root): partitions are blackhole routes in the
//! namespaces concerned (both sides for a partition, one side for a
//! one-way cut), a slow NIC is the worker's tbf replaced at a lower rate on
//! both ends of its link, a full disk is a filler file written until its
//! tmpfs answers ENOSPC. On local processes only what needs no namespace:
//! restarts, kills, stops, a slow disk and a slow (emulated) NIC. A slow
//! disk is the worker's emulated disk set lower (`PUT /v1/emulation`).

use super::schedule::{Fault, Kind};
use crate::chaos::signal;
use crate::ops::{local, netns};
use anyhow::Context;
use common::config::ClusterConfig;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A slowed disk or NIC runs at this share of its configured rate.
pub const SLOW_SHARE: f64 = 0.05;
/// The filler file's name in a worker's data directory.
const FILLER: &str = "campaign-filler";

/// The cluster the faults are injected into.
pub struct Target {
    /// The config the campaign wrote (its run directory holds the pids).
    pub cfg: ClusterConfig,
    /// The config the clients use (the namespaces' addresses).
    pub derived: ClusterConfig,
    pub bin: PathBuf,
    /// The namespace layout (None: local processes).
    pub layout: Option<netns::Layout>,
    /// Whether each worker's data directory is a tmpfs of its own.
    pub own_disks: bool,
    pub http: reqwest::Client,
    pub token: String,
    pub disk_mbs: f64,
    pub nic_mbps: f64,
}

/// Injects and heals faults; keeps what healing needs.
pub struct Injector {
    pub t: Target,
    /// Stopped workers' pids.
    stopped: BTreeMap<String, u32>,
}

/// Writes `path` in 1 MiB pieces until the file system is full; returns
/// the bytes written. Any other error is returned.
pub fn fill(path: &Path) -> anyhow::Result<u64> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let piece = vec![0x5au8; 1 << 20];
    let mut n = 0u64;
    loop {
        match f.write(&piece) {
            Ok(0) => return Ok(n),
            Ok(k) => n += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                let _ = f.sync_all();
                return Ok(n);
            }
            Err(e) => return Err(e).with_context(|| format!("filling {}", path.display())),
        }
    }
}

impl Injector {
    pub fn new(t: Target) -> Injector {
        Injector {
            t,
            stopped: BTreeMap::new(),
        }
    }

    /// The kinds this cluster can be given.
    pub fn kinds(&self) -> Vec<Kind> {
        Kind::ALL
            .into_iter()
            .filter(|k| match k {
                Kind::PartitionMaster
                | Kind::PartitionWorkers
                | Kind::OneWayToMaster
                | Kind::OneWayFromMaster => self.t.layout.is_some(),
                Kind::DiskFull => self.t.own_disks,
                _ => true,
            })
            .collect()
    }

    fn pid(&self, name: &str) -> anyhow::Result<u32> {
        local::processes(&local::run_dir(&self.t.cfg))?
            .into_iter()
            .find(|p| p.name == name)
            .map(|p| p.pid)
            .with_context(|| format!("no process {name}"))
    }

    fn node(&self, name: &str) -> anyhow::Result<&netns::Node> {
        let l = self.t.layout.as_ref().context("no namespaces")?;
        if name == "master" {
            return Ok(&l.master);
        }
        l.worker(name)
            .with_context(|| format!("no namespace of {name}"))
    }

    /// Drops `from`'s packets to `to` (on) or lets them through again.
    fn cut(&self, from: &str, to: &str, on: bool) -> anyhow::Result<()> {
        let ip = self.node(to)?.ip;
        netns::blackhole(&self.node(from)?.ns, ip, on)
    }

    fn addr(&self, worker: &str) -> anyhow::Result<String> {
        self.t
            .derived
            .worker
            .iter()
            .find(|w| w.name == worker)
            .map(|w| format!("{}://{}", self.t.derived.scheme(), w.listen))
            .with_context(|| format!("no worker {worker}"))
    }

    async fn emulate(&self, worker: &str, body: serde_json::Value) -> anyhow::Result<()> {
        let url = format!("{}/v1/emulation", self.addr(worker)?);
        let r = self
            .t
            .http
            .put(&url)
            .bearer_auth(&self.t.token)
            .timeout(Duration::from_secs(5))
            .json(&body)
            .send()
            .await
            .with_context(|| format!("PUT {url}"))?;
        crate::ops::client::check(r, &format!("PUT {url}")).await?;
        Ok(())
    }

    fn nic(&self, worker: &str, mbps: f64) -> anyhow::Result<()> {
        let l = self.t.layout.as_ref().context("no namespaces")?;
        let n = self.node(worker)?;
        let bits = (mbps * 1e6) as u64;
        netns::reshape(&n.ns, netns::NODE_IF, bits)?;
        netns::reshape(&l.bridge_ns, &n.bridge_end, bits)
    }

    fn restart(&self, name: &str) -> anyhow::Result<u32> {
        let Some(l) = &self.t.layout else {
            return if name == "master" {
                local::restart_master(&self.t.cfg, &self.t.bin)
            } else {
                local::restart_worker(&self.t.cfg, &self.t.bin, name)
            };
        };
        let dconf = local::netns_config_path(&self.t.cfg);
        let dconf = dconf.to_string_lossy();
        if name == "master" {
            let program = self.t.bin.join("master");
            let args = ["serve", "--config", &dconf];
            return local::restart_in_ns(&self.t.cfg, name, &program, &args, &l.master.ns);
        }
        let program = self.t.bin.join("worker");
        let args = ["--config", &dconf, "--name", name, "--no-nic-emulation"];
        local::restart_in_ns(&self.t.cfg, name, &program, &args, &self.node(name)?.ns)
    }

    fn filler(&self, worker: &str) -> PathBuf {
        self.t.cfg.worker_data_dir(worker).join(FILLER)
    }

    /// Injects `f`; returns a detail for the history.
    pub async fn inject(&mut self, f: &Fault) -> anyhow::Result<String> {
        let w = f.workers.first().map(String::as_str).unwrap_or("master");
        match f.kind {
            Kind::PartitionMaster => {
                self.cut(w, "master", true)?;
                self.cut("master", w, true)?;
            }
            Kind::PartitionWorkers => {
                let v = f.workers[1].as_str();
                self.cut(w, v, true)?;
                self.cut(v, w, true)?;
            }
            Kind::OneWayToMaster => self.cut(w, "master", true)?,
            Kind::OneWayFromMaster => self.cut("master", w, true)?,
            Kind::MasterRestart => signal(self.pid("master")?, "-KILL")?,
            Kind::KillWorker => signal(self.pid(w)?, "-KILL")?,
            Kind::StopWorker => {
                let pid = self.pid(w)?;
                signal(pid, "-STOP")?;
                self.stopped.insert(w.to_owned(), pid);
            }
            Kind::DiskFull => {
                let path = self.filler(w);
                let n = tokio::task::spawn_blocking(move || fill(&path)).await??;
                return Ok(format!(
                    "{:.1} MB written until the disk was full",
                    n as f64 / 1e6
                ));
            }
            Kind::SlowDisk => {
                let r = self.t.disk_mbs * SLOW_SHARE;
                self.emulate(w, serde_json::json!({ "disk_mbs": r }))
                    .await?;
                return Ok(format!("disk at {r} MB/s"));
            }
            Kind::SlowNic => {
                let r = self.t.nic_mbps * SLOW_SHARE;
                if self.t.layout.is_some() {
                    self.nic(w, r)?;
                } else {
                    self.emulate(w, serde_json::json!({ "nic_mbps": r }))
                        .await?;
                }
                return Ok(format!("NIC at {r} Mbit/s"));
            }
        }
        Ok(String::new())
    }

    /// Heals `f` (its worker started again, its routes removed, its rate
    /// restored, its filler deleted).
    pub async fn heal(&mut self, f: &Fault) -> anyhow::Result<()> {
        let w = f.workers.first().map(String::as_str).unwrap_or("master");
        match f.kind {
            Kind::PartitionMaster => {
                self.cut(w, "master", false)?;
                self.cut("master", w, false)?;
            }
            Kind::PartitionWorkers => {
                let v = f.workers[1].as_str();
                self.cut(w, v, false)?;
                self.cut(v, w, false)?;
            }
            Kind::OneWayToMaster => self.cut(w, "master", false)?,
            Kind::OneWayFromMaster => self.cut("master", w, false)?,
            Kind::MasterRestart => {
                self.restart("master")?;
            }
            Kind::KillWorker => {
                self.restart(w)?;
            }
            Kind::StopWorker => {
                if let Some(pid) = self.stopped.remove(w) {
                    signal(pid, "-CONT")?;
                }
            }
            Kind::DiskFull => {
                let path = self.filler(w);
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
            Kind::SlowDisk => {
                self.emulate(w, serde_json::json!({ "disk_mbs": self.t.disk_mbs }))
                    .await?
            }
            Kind::SlowNic => {
                if self.t.layout.is_some() {
                    self.nic(w, self.t.nic_mbps)?;
                } else {
                    self.emulate(w, serde_json::json!({ "nic_mbps": self.t.nic_mbps }))
                        .await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fill_stops_at_a_full_disk_or_says_why_it_cannot_write() {
        // /dev/full answers every write with ENOSPC.
        let full = std::path::Path::new("/dev/full");
        if full.exists() {
            assert_eq!(super::fill(full).unwrap(), 0);
        }
        let e = super::fill(std::path::Path::new("/nonexistent-dir/x")).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent-dir/x"), "{e:#}");
    }
}
