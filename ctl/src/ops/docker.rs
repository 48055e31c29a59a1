//! The container mode: the master and every worker of cluster.toml in its
//! own Docker container, each at its own address on a private bridge
//! network, block stores on named volumes, started and stopped with Docker
//! Compose. Nothing is pulled: each image is `FROM scratch` plus one
//! statically linked binary (`make docker-bins` builds them with
//! `-C target-feature=+crt-static`), built locally with `docker build`.
//!
//! Layout for project `p` (default `mrtb`) on subnet `10.78.0.0/24`:
//! - the master at `.2`, workers at `.10`, `.11`, ... on the ports of
//!   cluster.toml (the host reaches them there: a bridge network is routed
//!   from the host, and only from it);
//! - `run/docker/cluster.toml`: cluster.toml with those addresses, the block
//!   stores under `/data` (a volume per worker) and the master's journal on
//!   its own volume; the CLI uses it (`master --config run/docker/cluster.toml`);
//! - `run/docker/compose.yml`, `run/docker/{master,worker}/` (build contexts).
//!
//! NIC caps apply as in the process mode: each worker's emulated NIC paces
//! its transfers at `nic_mbps` inside its container (no tc is needed; the
//! containers' veths are not shaped). With `[[public_type]]`, the master's
//! container also gets the engine's socket and starts each public instance
//! as a container of the worker image at the addresses after the workers'
//! (see [`crate::ops::instances`]). Addresses are IPs, not service names:
//! a static glibc binary cannot load the resolver's NSS modules, and none
//! are in the images.

use crate::ops::client::MasterClient;
use crate::ops::run_command as run;
use anyhow::{bail, Context};
use common::config::ClusterConfig;
use serde::{Deserialize, Serialize};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const DEFAULT_PROJECT: &str = "mrtb";
/// The default private subnet, `10.78.<third>.0/24` (the netns mode uses 10.77).
pub const DEFAULT_SUBNET_THIRD: u8 = 0;
/// Where the static binaries are by default (`make docker-bins`).
pub const DEFAULT_BIN: &str = "target/x86_64-unknown-linux-gnu/release";

/// Where and under which names a cluster runs in containers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Layout {
    /// Compose project name: prefixes containers, network and volumes.
    pub project: String,
    /// Third octet of the subnet `10.78.<third>.0/24`.
    pub subnet_third: u8,
    pub master_ip: Ipv4Addr,
    /// (worker name, address), in cluster.toml's order.
    pub workers: Vec<(String, Ipv4Addr)>,
    /// Public instances alive at once (`public.max_instances` with
    /// `[[public_type]]`, else 0): containers the master starts, at the
    /// addresses after the workers'.
    #[serde(default)]
    pub instances: u32,
}

impl Layout {
    pub fn plan(cfg: &ClusterConfig, project: &str, subnet_third: u8) -> anyhow::Result<Layout> {
        if project.is_empty()
            || project.len() > 32
            || !project
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            || !project.starts_with(|c: char| c.is_ascii_lowercase())
        {
            bail!("docker project {project:?} must be 1 to 32 characters of [a-z0-9_-], starting with a letter");
        }
        let n = cfg.worker.len();
        if n > 240 {
            bail!("the container mode supports at most 240 workers ({n} in the config)");
        }
        let instances =
            crate::ops::reserve_instances(cfg, "container", &format!("10.78.{subnet_third}"))?;
        for w in &cfg.worker {
            let ok = !w.name.is_empty()
                && w.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && w.name != "master";
            if !ok {
                bail!(
                    "worker name {:?} cannot name a container: use [A-Za-z0-9_-] (and not `master`)",
                    w.name
                );
            }
        }
        Ok(Layout {
            project: project.to_owned(),
            subnet_third,
            master_ip: Ipv4Addr::new(10, 78, subnet_third, 2),
            workers: cfg
                .worker
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    (
                        w.name.clone(),
                        Ipv4Addr::new(10, 78, subnet_third, 10 + i as u8),
                    )
                })
                .collect(),
            instances,
        })
    }

    /// The compose network (Compose names it `<project>_net`).
    pub fn network(&self) -> String {
        format!("{}_net", self.project)
    }

    /// How the master starts public instances: containers of the worker
    /// image `tag` reading `config_on_host`, through the engine's socket.
    pub fn instance_backend(
        &self,
        tag: &str,
        config_on_host: &Path,
    ) -> crate::ops::instances::Backend {
        crate::ops::instances::Backend::Docker {
            socket: crate::ops::docker_api::DEFAULT_SOCKET.into(),
            project: self.project.clone(),
            image: format!("{}-worker:{tag}", self.project),
            network: self.network(),
            config_on_host: config_on_host.to_owned(),
            first_ip: Ipv4Addr::new(10, 78, self.subnet_third, 10 + self.workers.len() as u8),
        }
    }

    /// The addresses public instances get: after the workers'.
    pub fn instance_ips(&self) -> Vec<Ipv4Addr> {
        (0..self.instances)
            .map(|k| {
                let first = 10 + self.workers.len() as u32;
                Ipv4Addr::new(10, 78, self.subnet_third, (first + k).min(254) as u8)
            })
            .collect()
    }

    pub fn subnet(&self) -> String {
        format!("10.78.{}.0/24", self.subnet_third)
    }

    /// `cfg` with every node at its container address (same ports), the
    /// block stores under `/data` and the journal under `/state`.
    pub fn derive_config(&self, cfg: &ClusterConfig) -> ClusterConfig {
        let mut d = cfg.clone();
        d.master.listen = SocketAddr::new(self.master_ip.into(), cfg.master.listen.port());
        d.master.journal = PathBuf::from("/state/journal.jsonl");
        for (w, (_, ip)) in d.worker.iter_mut().zip(&self.workers) {
            w.listen = SocketAddr::new((*ip).into(), w.listen.port());
        }
        d.cluster.data_dir = PathBuf::from("/data");
        d
    }

    /// The compose file (format 2.4: docker-compose 1.x and 2.x read it).
    /// With `tls`, every node also mounts the derived config's `tls`
    /// folder (its certificates for the containers' addresses).
    pub fn compose(&self, image_tag: &str, tls: bool) -> String {
        let tls_volume = if tls {
            ", \"./tls:/etc/mrtb/tls:ro\""
        } else {
            ""
        };
        let mut y = String::from(
            "# Written by `master up --docker`; `master down` removes what it starts.\n\
             version: \"2.4\"\nservices:\n",
        );
        // With public instances the master starts containers itself: it
        // gets the engine's socket and the file that says how.
        let (instances_arg, instances_volumes) = if self.instances > 0 {
            (
                ", \"--instances\", \"/etc/mrtb/instances.json\"",
                ", \"./instances.json:/etc/mrtb/instances.json:ro\", \
                 \"/var/run/docker.sock:/var/run/docker.sock\"",
            )
        } else {
            ("", "")
        };
        y += &format!(
            "  master:\n    image: {p}-master:{image_tag}\n    container_name: {p}-master\n    \
             command: [\"--config\", \"/etc/mrtb/cluster.toml\", \"serve\"{instances_arg}]\n    \
             environment: [\"NO_COLOR=1\"]\n    \
             volumes: [\"./cluster.toml:/etc/mrtb/cluster.toml:ro\", \"master-state:/state\"{instances_volumes}{tls_volume}]\n    \
             networks:\n      net:\n        ipv4_address: {ip}\n",
            p = self.project,
            ip = self.master_ip
        );
        for (name, ip) in &self.workers {
            y += &format!(
                "  {name}:\n    image: {p}-worker:{image_tag}\n    container_name: {p}-{name}\n    \
                 command: [\"--config\", \"/etc/mrtb/cluster.toml\", \"--name\", \"{name}\"]\n    \
                 environment: [\"NO_COLOR=1\"]\n    \
                 volumes: [\"./cluster.toml:/etc/mrtb/cluster.toml:ro\", \"data-{name}:/data\"{tls_volume}]\n    \
                 cap_add: [\"IPC_LOCK\"]\n    \
                 networks:\n      net:\n        ipv4_address: {ip}\n",
                p = self.project
            );
        }
        y += &format!(
            "networks:\n  net:\n    driver: bridge\n    ipam:\n      config:\n        - subnet: {}\n",
            self.subnet()
        );
        y += "volumes:\n  master-state: {}\n";
        for (name, _) in &self.workers {
            y += &format!("  data-{name}: {{}}\n");
        }
        y
    }
}

/// The compose command of this machine: `docker compose` (v2) or
/// `docker-compose` (v1).
fn compose_cmd() -> anyhow::Result<Vec<String>> {
    let works = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if works("docker", &["compose", "version"]) {
        return Ok(vec!["docker".into(), "compose".into()]);
    }
    if works("docker-compose", &["version"]) {
        return Ok(vec!["docker-compose".into()]);
    }
    bail!("the container mode needs Docker Compose (`docker compose` or `docker-compose`)")
}

/// Whether a Docker engine answers here.
pub fn engine_answers() -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the ELF file at `path` is statically linked (no program
/// interpreter), so it runs in a `FROM scratch` image.
pub fn is_static_elf(path: &Path) -> anyhow::Result<bool> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if data.len() < 64 || &data[..4] != b"\x7fELF" || data[4] != 2 || data[5] != 1 {
        bail!("{} is not a 64-bit little-endian ELF file", path.display());
    }
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"));
    let phoff = u64::from_le_bytes(data[32..40].try_into().expect("8 bytes")) as usize;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if o + 4 > data.len() {
            bail!("{}: program headers past the end", path.display());
        }
        // PT_INTERP: a dynamic executable.
        if u32_at(o) == 3 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What `up` records for `down`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Record {
    pub layout: Layout,
    pub compose: Vec<String>,
    pub dir: PathBuf,
}

fn record_path(run: &Path) -> PathBuf {
    run.join("docker.json")
}

/// The derived config of the container mode.
pub fn config_path(cfg: &ClusterConfig) -> PathBuf {
    crate::ops::local::run_dir(cfg)
        .join("docker")
        .join("cluster.toml")
}

/// Builds the two images from the static binaries in `bin`; returns the
/// tag (a digest of the binaries, so a rebuild makes a new image).
fn build_images(layout: &Layout, bin: &Path, dir: &Path) -> anyhow::Result<String> {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    for b in ["master", "worker"] {
        let p = bin.join(b);
        if !is_static_elf(&p)? {
            bail!(
                "{} is dynamically linked; the images hold nothing else. Build static binaries: \
                 make docker-bins (RUSTFLAGS='-C target-feature=+crt-static --cfg tokio_unstable' cargo build --release \
                 --target x86_64-unknown-linux-gnu)",
                p.display()
            );
        }
        std::fs::read(&p)?.hash(&mut h);
    }
    let tag = format!("{:012x}", h.finish() >> 16);
    for b in ["master", "worker"] {
        let ctx = dir.join(b);
        std::fs::create_dir_all(&ctx)?;
        // Without its debug information where binutils' strip is here (a
        // tenth of the size); as it is otherwise.
        let (src, dst) = (bin.join(b), ctx.join(b));
        let stripped = Command::new("strip")
            .arg("-o")
            .arg(&dst)
            .arg(&src)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stripped {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} into {}", b, ctx.display()))?;
        }
        std::fs::write(
            ctx.join("Dockerfile"),
            format!(
                "# Written by `master up --docker`: nothing is pulled.\nFROM scratch\nCOPY {b} /{b}\nENTRYPOINT [\"/{b}\"]\n"
            ),
        )?;
        let image = format!("{}-{b}:{tag}", layout.project);
        let ctx_s = ctx.to_string_lossy().into_owned();
        run("docker", &["build", "-q", "-t", &image, &ctx_s], None)
            .with_context(|| format!("building image {image}"))?;
    }
    Ok(tag)
}

/// `master up --docker`: builds the images, writes the compose file and the
/// derived config, starts the containers and returns once every worker has
/// registered. On failure everything it started is removed.
pub async fn up(
    cfg: &ClusterConfig,
    fresh: bool,
    project: &str,
    subnet_third: u8,
    bin: &Path,
) -> anyhow::Result<()> {
    crate::ops::local::refuse_rack_links(cfg, "containers")?;
    if !engine_answers() {
        bail!("no Docker engine answers here (`docker info` fails)");
    }
    let compose = compose_cmd()?;
    if let Some(w) = cfg.worker.iter().find(|w| w.remote().is_some()) {
        bail!(
            "worker {} has a `host`: the container mode runs every node on this machine",
            w.name
        );
    }
    let layout = Layout::plan(cfg, project, subnet_third)?;
    let run_dir = crate::ops::local::run_dir(cfg);
    // A previous container cluster of this config: stopped (and with
    // --fresh its volumes removed).
    if record_path(&run_dir).exists() {
        down_with(&run_dir, fresh)?;
    }
    let dir = run_dir.join("docker");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let tag = build_images(&layout, bin, &dir)?;
    let mut derived = layout.derive_config(cfg);
    let instance_ips = layout.instance_ips();
    crate::ops::local::derive_tls(cfg, &mut derived, &dir, &instance_ips)?;
    std::fs::write(
        dir.join("cluster.toml"),
        format!(
            "# Written by `master up --docker` from {}: the same cluster with every node at\n\
             # its container address, block stores on volumes under /data.\n{}",
            cfg.path.display(),
            toml::to_string(&derived).context("serialising the derived config")?
        ),
    )?;
    std::fs::write(
        dir.join("compose.yml"),
        layout.compose(&tag, derived.tls.enabled),
    )?;
    if layout.instances > 0 {
        let config_on_host = std::path::absolute(dir.join("cluster.toml"))?;
        layout
            .instance_backend(&tag, &config_on_host)
            .write(&dir.join("instances.json"))?;
    }
    let record = Record {
        layout: layout.clone(),
        compose: compose.clone(),
        dir: std::path::absolute(&dir)?,
    };
    std::fs::write(
        record_path(&run_dir),
        serde_json::to_string_pretty(&record)?,
    )?;
    let started = async {
        compose_run(&record, &["up", "-d"])?;
        if layout.instances > 0 {
            let net = network(&layout.project)?;
            if net != layout.network() {
                bail!(
                    "Compose named the network {net}, not {}: the master could not attach \
                     public instances to it",
                    layout.network()
                );
            }
        }
        let derived = ClusterConfig::load(dir.join("cluster.toml"))?;
        let client = MasterClient::for_cluster(&derived, common::credentials::Role::Client)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(c) = client.cluster().await {
                if c.workers_alive == layout.workers.len() {
                    return anyhow::Ok(());
                }
            }
            if Instant::now() > deadline {
                let logs = compose_run(&record, &["logs", "--no-color", "--tail", "20"])
                    .unwrap_or_default();
                bail!(
                    "the containers did not all register within 60 s; their last log lines:\n{logs}"
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    .await;
    if let Err(e) = started {
        let _ = down_with(&run_dir, true);
        return Err(e);
    }
    Ok(())
}

fn compose_run(r: &Record, args: &[&str]) -> anyhow::Result<String> {
    let file = r.dir.join("compose.yml");
    let file = file.to_string_lossy();
    let mut all: Vec<&str> = r.compose[1..].iter().map(String::as_str).collect();
    all.extend(["-p", &r.layout.project, "-f", &file]);
    all.extend(args);
    run(&r.compose[0], &all, Some(&r.dir))
}

/// Every container's log of the cluster recorded under `run` (`docker
/// compose logs`, each line prefixed with its service), or `None` when no
/// cluster is recorded there.
pub fn logs(run: &Path) -> anyhow::Result<Option<String>> {
    match read_record(run)? {
        Some(r) => Ok(Some(compose_run(&r, &["logs", "--no-color"])?)),
        None => Ok(None),
    }
}

/// The container cluster recorded under `run`, if any.
fn read_record(run: &Path) -> anyhow::Result<Option<Record>> {
    let path = record_path(run);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let r = serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(r))
}

/// Stops the container cluster recorded under `run` (if any) and removes
/// its containers and network, and with `volumes` its volumes (the block
/// stores) and the record; without, the record stays so that a later
/// `down_with(.., true)` still finds the volumes. True if there was one.
pub fn down_with(run: &Path, volumes: bool) -> anyhow::Result<bool> {
    let Some(r) = read_record(run)? else {
        return Ok(false);
    };
    // Instances the master started (and could not stop: it is stopped
    // first, or was killed): they hold the network.
    remove_instances(&r.layout.project)?;
    let mut args = vec!["down", "--remove-orphans", "-t", "5"];
    if volumes {
        args.push("-v");
    }
    compose_run(&r, &args)?;
    if volumes {
        std::fs::remove_file(record_path(run))?;
    }
    Ok(true)
}

/// Removes every public-instance container of `project`; returns their names.
pub fn remove_instances(project: &str) -> anyhow::Result<Vec<String>> {
    let label = format!("label={}={project}", crate::ops::instances::INSTANCE_LABEL);
    let names: Vec<String> = run(
        "docker",
        &["ps", "-a", "--filter", &label, "--format", "{{.Names}}"],
        None,
    )?
    .lines()
    .filter(|l| !l.is_empty())
    .map(str::to_owned)
    .collect();
    for n in &names {
        run("docker", &["rm", "-f", n], None)?;
    }
    Ok(names)
}

/// The container of node `node` (`master` or a worker's name) of `project`.
pub fn container(project: &str, node: &str) -> String {
    format!("{project}-{node}")
}

/// The name of `project`'s network on the engine.
pub fn network(project: &str) -> anyhow::Result<String> {
    let label = format!("label=com.docker.compose.project={project}");
    let out = run(
        "docker",
        &["network", "ls", "--filter", &label, "--format", "{{.Name}}"],
        None,
    )?;
    out.lines()
        .find(|l| !l.is_empty())
        .map(str::to_owned)
        .with_context(|| format!("no network of project {project}"))
}

/// Runs `docker args...` (fault injection: kill, start, restart, network
/// disconnect and connect).
pub fn docker(args: &[&str]) -> anyhow::Result<String> {
    run("docker", args, None)
}

/// Removes the images `up` built for `project` (every tag).
pub fn remove_images(project: &str) -> anyhow::Result<()> {
    for b in ["master", "worker"] {
        let refs = run(
            "docker",
            &[
                "image",
                "ls",
                "--filter",
                &format!("reference={project}-{b}"),
                "--format",
                "{{.Repository}}:{{.Tag}}",
            ],
            None,
        )?;
        for r in refs.lines().filter(|l| !l.is_empty()) {
            run("docker", &["rmi", r], None)?;
        }
    }
    Ok(())
}

/// Names of the containers, networks and volumes of `project` still on this
/// engine (what `down` must leave empty).
pub fn leftovers(project: &str) -> anyhow::Result<Vec<String>> {
    let label = format!("label=com.docker.compose.project={project}");
    let mut out = Vec::new();
    let instances = format!("label={}={project}", crate::ops::instances::INSTANCE_LABEL);
    out.extend(
        run(
            "docker",
            &["ps", "-a", "--filter", &instances, "--format", "{{.Names}}"],
            None,
        )?
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| format!("instance: {l}")),
    );
    for (what, fmt) in [
        ("ps", "{{.Names}}"),
        ("network", "{{.Name}}"),
        ("volume", "{{.Name}}"),
    ] {
        let args: Vec<&str> = if what == "ps" {
            vec!["ps", "-a", "--filter", &label, "--format", fmt]
        } else {
            vec![what, "ls", "--filter", &label, "--format", fmt]
        };
        out.extend(
            run("docker", &args, None)?
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| format!("{what}: {l}")),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compose_file_names_every_node_at_its_address() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = crate::ops::local::write_loopback_config(dir.path(), "t", 3, "", "").unwrap();
        let l = Layout::plan(&cfg, "mrtb", 5).unwrap();
        let y = l.compose("abc", false);
        assert!(!y.contains("/etc/mrtb/tls"));
        assert!(l
            .compose("abc", true)
            .contains("\"./tls:/etc/mrtb/tls:ro\""));
        assert!(y.contains("image: mrtb-master:abc"));
        assert!(y.contains("ipv4_address: 10.78.5.2"));
        for (i, w) in ["w1", "w2", "w3"].iter().enumerate() {
            assert!(y.contains(&format!("  {w}:\n    image: mrtb-worker:abc")));
            assert!(y.contains(&format!("ipv4_address: 10.78.5.{}", 10 + i)));
            assert!(y.contains(&format!("data-{w}:/data")));
        }
        assert!(y.contains("subnet: 10.78.5.0/24"));
        let d = l.derive_config(&cfg);
        assert_eq!(d.worker_data_dir("w2"), PathBuf::from("/data/w2"));
        assert_eq!(d.master.listen.ip().to_string(), "10.78.5.2");
        assert!(Layout::plan(&cfg, "Bad Name", 0).is_err());
        // Our own binary is dynamic (a test build); a static one is not.
        let me = std::env::current_exe().unwrap();
        assert!(!is_static_elf(&me).unwrap());
        assert!(is_static_elf(Path::new("/etc/hostname")).is_err());
    }
}
