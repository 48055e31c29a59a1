//! Public instances as hosts of the deployment they join, started and
//! stopped by the master (`master serve --instances <file>`; the file is
//! written by `master up --netns` and `master up --docker` when the cluster
//! has `[[public_type]]`):
//! - netns: the instance gets its own network namespace on the cluster's
//!   bridge, at the address after the workers' (`Layout::instances` of
//!   them are reserved), its link shaped by tbf at the type's `nic_mbps` in
//!   both directions, and its worker runs there with the emulation off, as
//!   every worker of that mode; stopping it deletes the namespace;
//! - docker: the instance is a container of the worker image on the
//!   cluster's network, at the address after the workers', started through
//!   the engine's API on the socket the master's container mounts; its link
//!   is emulated, as every worker's in that mode. Containers carry the
//!   label `mrtb.instance-of=<project>`, so `master down` removes any the
//!   master could not.
//!
//! Every instance listens on `[public] listen`'s port + its offset, at its
//! own address.

use crate::ops::docker_api::{ContainerSpec, Engine};
use crate::ops::netns;
use anyhow::{bail, Context};
use common::config::ClusterConfig;
use common::public::PublicType;
use master::provision::{stop_child, Launcher, ProvisionSettings, Provisioning};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Child;

/// The label a container instance carries, with the project as its value.
pub const INSTANCE_LABEL: &str = "mrtb.instance-of";
/// Where the container mode's master finds this file and the config.
pub const CONTAINER_CONFIG: &str = "/etc/mrtb/cluster.toml";

/// How a deployment's master starts instances (the `--instances` file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Backend {
    /// Network-namespace hosts on `bridge_ns`'s bridge; instance k at
    /// `first_ip` + k in namespace `<prefix>pi<k>`, logging to
    /// `log_dir/<name>.log` beside the cluster's other logs.
    Netns {
        prefix: String,
        bridge_ns: String,
        first_ip: Ipv4Addr,
        log_dir: PathBuf,
    },
    /// Containers of `image` on `network`; instance k at `first_ip` + k,
    /// named `<project>-<instance>`, reading cluster.toml from
    /// `config_on_host` (a path on the engine's machine).
    Docker {
        socket: PathBuf,
        project: String,
        image: String,
        network: String,
        config_on_host: PathBuf,
        first_ip: Ipv4Addr,
    },
}

impl Backend {
    /// How the master of a namespace layout starts its public instances
    /// (their logs in `log_dir`): at the addresses after the workers'.
    pub fn for_netns(layout: &netns::Layout, log_dir: &Path) -> Backend {
        let ip = layout.master.ip.octets();
        Backend::Netns {
            prefix: layout.prefix.clone(),
            bridge_ns: layout.bridge_ns.clone(),
            first_ip: Ipv4Addr::new(ip[0], ip[1], ip[2], 10 + layout.workers.len() as u8),
            log_dir: log_dir.to_owned(),
        }
    }

    pub fn load(path: &Path) -> anyhow::Result<Backend> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the instances file {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not an instances file", path.display()))
    }

    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The master's provisioning for this backend and the config it runs.
    pub fn provisioning(self, cfg: &ClusterConfig) -> anyhow::Result<Provisioning> {
        let types = cfg.public_type.clone();
        let port = cfg.public_section().listen.port();
        match self {
            Backend::Netns {
                prefix,
                bridge_ns,
                first_ip,
                log_dir,
            } => {
                let mut settings = ProvisionSettings::from_config(cfg)
                    .context("cannot find this binary's directory (the worker is beside it)")?;
                settings.log_dir = log_dir;
                // The layout's addresses, as `netns::Layout::addresses`
                // gives them to the master and workers.
                let addresses = netns::subnet_addresses(
                    first_ip,
                    cfg.worker.len() + crate::ops::max_instances(cfg) as usize,
                );
                let what = format!("network namespaces {prefix}pi*");
                Ok(Provisioning::custom(what, move || {
                    netns::require_root()?;
                    Ok(Box::new(NetnsLauncher {
                        settings: settings.clone(),
                        types: types.clone(),
                        prefix: prefix.clone(),
                        bridge_ns: bridge_ns.clone(),
                        first_ip,
                        addresses: addresses.clone(),
                        port,
                        running: BTreeMap::new(),
                    }) as _)
                }))
            }
            Backend::Docker {
                socket,
                project,
                image,
                network,
                config_on_host,
                first_ip,
            } => {
                let what = format!("containers {project}-* of {image}");
                Ok(Provisioning::custom(what, move || {
                    let engine = Engine::new(&socket);
                    engine.ping()?;
                    Ok(Box::new(DockerLauncher {
                        engine,
                        project: project.clone(),
                        image: image.clone(),
                        network: network.clone(),
                        config_on_host: config_on_host.clone(),
                        first_ip,
                        port,
                        running: BTreeMap::new(),
                    }) as _)
                }))
            }
        }
    }
}

fn ip_at(first: Ipv4Addr, k: u32) -> anyhow::Result<Ipv4Addr> {
    let ip = u32::from(first) + k;
    if ip & 0xff > 254 || ip >> 8 != u32::from(first) >> 8 {
        bail!("public instance {k} has no address after {first} in its /24");
    }
    Ok(Ipv4Addr::from(ip))
}

struct NetnsLauncher {
    settings: ProvisionSettings,
    types: Vec<PublicType>,
    prefix: String,
    bridge_ns: String,
    first_ip: Ipv4Addr,
    /// Every address of the layout (each instance gets a permanent
    /// neighbour entry for each).
    addresses: Vec<Ipv4Addr>,
    port: u16,
    running: BTreeMap<String, (Child, netns::Node)>,
}

/// Instances a netns launcher sets up at once (each runs a few `ip` and
/// `tc` commands).
const PARALLEL_STARTS: usize = 8;

impl NetnsLauncher {
    /// Makes instance `name`'s namespace (any left by an earlier one
    /// first removed); returns the node and its link rate in Mbit/s.
    fn make_node(&self, name: &str, ty: &str, k: u32) -> anyhow::Result<(netns::Node, f64)> {
        let t = self
            .types
            .iter()
            .find(|t| t.name == ty)
            .with_context(|| format!("no [[public_type]] named {ty:?}"))?;
        let node = netns::instance_node(
            &self.prefix,
            ip_at(self.first_ip, k)?,
            k,
            name,
            (t.nic_mbps * 1e6).round() as u64,
        );
        // One left by an instance whose stop failed, or a killed master.
        if Path::new("/var/run/netns").join(&node.ns).exists() {
            netns::remove_node(&node)?;
        }
        netns::add_node(&self.bridge_ns, &node, &self.addresses).inspect_err(|_| {
            let _ = netns::remove_node(&node);
        })?;
        Ok((node, t.nic_mbps))
    }

    /// Starts instance `name`'s worker in its namespace. On the launcher's
    /// own thread: the child's parent-death signal fires when the thread
    /// that forked it ends.
    fn spawn(
        &mut self,
        name: &str,
        ty: &str,
        k: u32,
        node: netns::Node,
        mbps: f64,
    ) -> anyhow::Result<String> {
        let started = (|| {
            let mut cmd = self.settings.worker_command(name, ty, k)?;
            cmd.arg("--listen")
                .arg(format!(
                    "{}:{}",
                    node.ip,
                    self.port.saturating_add(k as u16)
                ))
                .arg("--no-nic-emulation");
            netns::exec_in(&mut cmd, &node.ns)?;
            anyhow::Ok(cmd.spawn()?)
        })();
        match started {
            Ok(child) => {
                let at = format!(
                    "process {} in namespace {} at {}, link {mbps} Mbit/s",
                    child.id(),
                    node.ns,
                    node.ip,
                );
                self.running.insert(name.to_owned(), (child, node));
                Ok(at)
            }
            Err(e) => {
                let _ = netns::remove_node(&node);
                Err(e)
            }
        }
    }
}

impl Launcher for NetnsLauncher {
    fn start(&mut self, name: &str, ty: &str, k: u32) -> anyhow::Result<String> {
        let (node, mbps) = self.make_node(name, ty, k)?;
        self.spawn(name, ty, k, node, mbps)
    }

    /// The namespaces [`PARALLEL_STARTS`] at a time (a round that rents 60
    /// instances would otherwise start the last one seconds after the
    /// first), then the workers.
    fn start_all(&mut self, orders: &[(String, String, u32)]) -> Vec<anyhow::Result<String>> {
        let mut out = Vec::with_capacity(orders.len());
        for chunk in orders.chunks(PARALLEL_STARTS) {
            let me: &NetnsLauncher = self;
            let nodes: Vec<_> = std::thread::scope(|s| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|(name, ty, k)| s.spawn(move || me.make_node(name, ty, *k)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(anyhow::anyhow!("namespace thread panicked")))
                    })
                    .collect()
            });
            for ((name, ty, k), n) in chunk.iter().zip(nodes) {
                out.push(n.and_then(|(node, mbps)| self.spawn(name, ty, *k, node, mbps)));
            }
        }
        out
    }

    fn stop(&mut self, name: &str) {
        if let Some((mut c, node)) = self.running.remove(name) {
            stop_child(&mut c);
            if let Err(e) = netns::remove_node(&node) {
                tracing::error!(instance = %name, error = %format!("{e:#}"), "cannot remove the instance's namespace");
            }
        }
    }

    fn running(&self) -> Vec<String> {
        self.running.keys().cloned().collect()
    }

    fn reap(&mut self) {
        let ended: Vec<String> = self
            .running
            .iter_mut()
            .filter_map(|(n, (c, _))| matches!(c.try_wait(), Ok(Some(_))).then(|| n.clone()))
            .collect();
        for n in ended {
            self.stop(&n);
        }
    }
}

struct DockerLauncher {
    engine: Engine,
    project: String,
    image: String,
    network: String,
    config_on_host: PathBuf,
    first_ip: Ipv4Addr,
    port: u16,
    /// Instance name -> container name.
    running: BTreeMap<String, String>,
}

impl DockerLauncher {
    /// The config, and with TLS the `tls` folder beside it (the container
    /// mode's: certificates for the containers' addresses, instances' too).
    fn binds(&self) -> Vec<String> {
        let mut binds = vec![format!(
            "{}:{CONTAINER_CONFIG}:ro",
            self.config_on_host.display()
        )];
        if let Some(tls) = self.config_on_host.parent().map(|d| d.join("tls")) {
            if tls.is_dir() {
                binds.push(format!("{}:/etc/mrtb/tls:ro", tls.display()));
            }
        }
        binds
    }
}

impl Launcher for DockerLauncher {
    fn start(&mut self, name: &str, ty: &str, k: u32) -> anyhow::Result<String> {
        let ip = ip_at(self.first_ip, k)?;
        let container = format!("{}-{name}", self.project);
        let listen = format!("{ip}:{}", self.port.saturating_add(k as u16));
        let cmd: Vec<String> = [
            "--config",
            CONTAINER_CONFIG,
            "--name",
            name,
            "--instance-type",
            ty,
            "--port-offset",
            &k.to_string(),
            "--listen",
            &listen,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let id = self.engine.run(&ContainerSpec {
            name: &container,
            image: &self.image,
            cmd,
            binds: self.binds(),
            network: &self.network,
            ip,
            labels: vec![(INSTANCE_LABEL.into(), self.project.clone())],
        })?;
        self.running.insert(name.to_owned(), container.clone());
        Ok(format!(
            "container {container} ({}) at {ip}",
            &id[..12.min(id.len())]
        ))
    }

    fn stop(&mut self, name: &str) {
        if let Some(c) = self.running.remove(name) {
            if let Err(e) = self.engine.stop_and_remove(&c, 2) {
                tracing::error!(instance = %name, error = %format!("{e:#}"), "cannot remove the instance's container");
            }
        }
    }

    fn running(&self) -> Vec<String> {
        self.running.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instances_file_round_trips_and_refuses_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("instances.json");
        let b = Backend::Netns {
            prefix: "mrt-".into(),
            bridge_ns: "mrt-bridge".into(),
            first_ip: Ipv4Addr::new(10, 77, 0, 13),
            log_dir: "/tmp/run/logs".into(),
        };
        b.write(&p).unwrap();
        assert_eq!(Backend::load(&p).unwrap(), b);
        std::fs::write(
            &p,
            r#"{"kind":"netns","prefix":"a","bridge_ns":"b","first_ip":"10.0.0.1","log_dir":"/l","extra":1}"#,
        )
        .unwrap();
        let e = format!("{:#}", Backend::load(&p).unwrap_err());
        assert!(e.contains("extra") && e.contains("instances.json"), "{e}");
        std::fs::write(&p, r#"{"kind":"vm"}"#).unwrap();
        assert!(format!("{:#}", Backend::load(&p).unwrap_err()).contains("vm"));
        assert!(Backend::load(&dir.path().join("none.json")).is_err());
    }

    #[test]
    fn instance_addresses_stay_in_the_subnet() {
        let first = Ipv4Addr::new(10, 78, 0, 13);
        assert_eq!(ip_at(first, 0).unwrap(), first);
        assert_eq!(ip_at(first, 241).unwrap(), Ipv4Addr::new(10, 78, 0, 254));
        assert!(ip_at(first, 242).is_err());
        assert!(ip_at(first, 300).is_err());
        let n = netns::instance_node("p-", ip_at(first, 3).unwrap(), 3, "burst-4", 8_000_000);
        assert_eq!(
            (n.ns.as_str(), n.bridge_end.as_str(), n.ip),
            ("p-pi3", "vp3", Ipv4Addr::new(10, 78, 0, 16))
        );
        assert_eq!(n.rate_bits, Some(8_000_000));
    }
}
