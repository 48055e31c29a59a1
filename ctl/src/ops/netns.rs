//! The Linux network-namespace mode (root only): every worker runs in its own
//! network namespace with its own address, joined by a veth pair to a bridge,
//! and its link is shaped in both directions by a `tbf` qdisc at the worker's
//! `nic_mbps`, so transfers contend in the kernel's TCP through a real qdisc
//! (the workers' emulated NIC is then off).
//!
//! Layout for prefix `p` (default `mrt-`):
//! - `p` + `bridge`: holds the bridge `br0` and the bridge end `v<tag>` of every veth pair;
//! - `p` + `master`: the master at 10.77.0.1, unshaped (the CLI runs here too);
//! - `p` + the worker's name (or `w<i>` if the name is not a plain word):
//!   worker i at 10.77.0.(10 + i), its end named `eth0`.
//!
//! Worker transmit is shaped on its `eth0` (in its namespace), receive on the
//! bridge end of its veth (egress towards the worker).
//!
//! Neighbours: every node's `eth0` has the MAC [`mac_of`] its address, and
//! every namespace (and the host link) holds a permanent neighbour entry for
//! every address of the layout, public instances' included, so no node ever
//! resolves another by ARP. The kernel keeps one neighbour table for all
//! namespaces and, past `gc_thresh3` (1024 by default) learned entries
//! counted over all of them, drops the packets that would need a new one
//! ("neighbor table overflow"): 10 workers whose reduces fetch from 60
//! rented instances need more than that, and their connections, and the
//! runner's to the master, timed out. Permanent entries are not counted
//! (Linux 4.20 and later).
//!
//! Racks: when the workers name more than one rack, rack k (1-based, in the
//! order the config first names them) gets its own bridge `br<k>` in the
//! bridge namespace, its workers attach there, and a veth pair `ru<k>` (on
//! `br<k>`) / `rd<k>` (on `br0`, with the master) is the rack's link to the
//! core, shaped by `tbf` at `cluster.rack_link_mbps` in both directions when
//! set: all traffic between racks, or with the master, shares it. Nothing is added to the
//! root namespace: no address, no route, no interface, so nothing here can
//! reach or be reached from any other network. [`teardown`] removes every
//! namespace with the prefix, after stopping the processes inside, whatever
//! state a failed run left behind.

use anyhow::{bail, Context};
use common::config::ClusterConfig;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const DEFAULT_PREFIX: &str = "mrt-";
/// tbf bucket and queue: the GUIDE's measured settings (burst >= 256 kB).
const TBF_BURST: &str = "256kb";
const TBF_LATENCY: &str = "50ms";

/// One node (master or worker) of the namespace layout.
#[derive(Clone, Debug)]
pub struct Node {
    /// Worker name from cluster.toml, or `master`.
    pub name: String,
    pub ns: String,
    /// Bridge-side veth name (in the bridge namespace).
    pub bridge_end: String,
    pub ip: Ipv4Addr,
    /// Shaping rate in bits per second, both directions; None = unshaped.
    pub rate_bits: Option<u64>,
    /// The bridge its veth joins (`br0`, or its rack's).
    pub bridge: String,
}

/// A rack's bridge and its link to the core bridge `br0`.
#[derive(Clone, Debug)]
pub struct RackNet {
    /// As the config names it.
    pub name: String,
    pub bridge: String,
    /// Link ends: `up` on the rack's bridge (its egress leaves the rack),
    /// `down` on `br0` (its egress enters the rack).
    pub up: String,
    pub down: String,
    /// Shaping rate in bits per second, both directions; None = unshaped.
    pub rate_bits: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Layout {
    pub prefix: String,
    pub bridge_ns: String,
    pub master: Node,
    pub workers: Vec<Node>,
    /// A veth from the root namespace into the bridge, with this address
    /// (`.254` of the subnet), so that a process here (the experiment
    /// runner) reaches the nodes as the host reaches Docker's containers;
    /// None (the default, `master up --netns`): nothing in the root namespace.
    pub host_link: Option<(String, Ipv4Addr)>,
    /// Public instances alive at once (`public.max_instances` when the
    /// config has `[[public_type]]`, else 0): each is a node the master adds
    /// when it starts one, at the addresses after the workers'.
    pub instances: u32,
    /// One per rack when the workers span several; else empty (all on `br0`).
    pub racks: Vec<RackNet>,
}

/// The core bridge: the master's, the host link's, and (without racks)
/// every worker's.
pub const CORE_BRIDGE: &str = "br0";

/// The interface name inside each node's namespace.
pub const NODE_IF: &str = "eth0";

/// The MAC address of the node at `ip` (locally administered, unicast): one
/// per address, so a namespace can be given any node's before it exists.
pub fn mac_of(ip: Ipv4Addr) -> String {
    let o = ip.octets();
    format!("02:6d:{:02x}:{:02x}:{:02x}:{:02x}", o[0], o[1], o[2], o[3])
}

/// Every address a layout on `any`'s /24 can use: the master (.1), `hosts`
/// workers and public instances from .10, and the host link (.254).
pub fn subnet_addresses(any: Ipv4Addr, hosts: usize) -> Vec<Ipv4Addr> {
    let [a, b, c, _] = any.octets();
    std::iter::once(1)
        .chain((10..=253).take(hosts))
        .chain(std::iter::once(254))
        .map(|d| Ipv4Addr::new(a, b, c, d))
        .collect()
}

impl Layout {
    /// The layout for `cfg`'s workers under `prefix`.
    pub fn plan(prefix: &str, cfg: &ClusterConfig) -> anyhow::Result<Layout> {
        Self::plan_in(prefix, cfg, 0)
    }

    /// [`Layout::plan`] on subnet 10.77.`third`.0/24.
    pub fn plan_in(prefix: &str, cfg: &ClusterConfig, third: u8) -> anyhow::Result<Layout> {
        if prefix.is_empty()
            || prefix.len() > 16
            || !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            bail!("netns prefix {prefix:?} must be 1 to 16 characters of [A-Za-z0-9_-]");
        }
        let n = cfg.worker.len();
        if n > 240 {
            bail!("the netns mode supports at most 240 workers ({n} in the config)");
        }
        let master = Node {
            name: "master".into(),
            ns: format!("{prefix}master"),
            bridge_end: "vm".into(),
            ip: Ipv4Addr::new(10, 77, third, 1),
            rate_bits: None,
            bridge: CORE_BRIDGE.into(),
        };
        let rack_names = cfg.racks();
        let racks: Vec<RackNet> = if rack_names.len() > 1 {
            rack_names
                .iter()
                .enumerate()
                .map(|(k, name)| RackNet {
                    name: name.clone(),
                    bridge: format!("br{}", k + 1),
                    up: format!("ru{}", k + 1),
                    down: format!("rd{}", k + 1),
                    rate_bits: cfg
                        .cluster
                        .rack_link_mbps
                        .map(|m| (common::config::mbps_to_bytes(m) * 8.0).round() as u64),
                })
                .collect()
        } else {
            Vec::new()
        };
        let bridge_of = |rack: &str| {
            racks
                .iter()
                .find(|r| r.name == rack)
                .map_or(CORE_BRIDGE.to_owned(), |r| r.bridge.clone())
        };
        let workers: Vec<Node> = cfg
            .worker_settings()
            .into_iter()
            .enumerate()
            .map(|(i, w)| Node {
                ns: worker_ns(prefix, &w.name, i),
                bridge: bridge_of(&w.rack),
                name: w.name,
                bridge_end: format!("vw{i}"),
                ip: Ipv4Addr::new(10, 77, third, 10 + i as u8),
                rate_bits: w.nic_bytes_per_sec.map(|b| (b * 8.0).round() as u64),
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        for ns in workers.iter().map(|w| &w.ns) {
            if !seen.insert(ns) {
                bail!("two workers map to the network namespace {ns}; rename one");
            }
        }
        let instances = crate::ops::reserve_instances(cfg, "netns", &format!("10.77.{third}"))?;
        for k in 0..instances {
            let ns = instance_ns(prefix, k);
            if seen.contains(&ns) {
                bail!("a worker's network namespace {ns} is the one of public instance {k}; rename the worker");
            }
        }
        Ok(Layout {
            prefix: prefix.into(),
            bridge_ns: format!("{prefix}bridge"),
            master,
            workers,
            host_link: None,
            instances,
            racks,
        })
    }

    /// With a link from the root namespace (see [`Layout::host_link`]).
    pub fn with_host_link(mut self) -> Self {
        let ip = self.master.ip.octets();
        self.host_link = Some((
            format!("{}host", self.prefix),
            Ipv4Addr::new(ip[0], ip[1], ip[2], 254),
        ));
        self
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        std::iter::once(&self.master).chain(self.workers.iter())
    }

    /// Every address of the layout: master, workers, public instances (alive
    /// or not) and host link; each namespace gets a permanent neighbour
    /// entry for each (see the module's doc).
    pub fn addresses(&self) -> Vec<Ipv4Addr> {
        subnet_addresses(self.master.ip, self.workers.len() + self.instances as usize)
    }

    pub fn worker(&self, name: &str) -> Option<&Node> {
        self.workers.iter().find(|w| w.name == name)
    }

    /// `cfg` with the master and every worker at its namespace address (same
    /// ports), and the data directory made absolute.
    pub fn derive_config(&self, cfg: &ClusterConfig) -> ClusterConfig {
        let mut d = cfg.clone();
        d.master.listen = SocketAddr::new(self.master.ip.into(), cfg.master.listen.port());
        for (w, node) in d.worker.iter_mut().zip(&self.workers) {
            w.listen = SocketAddr::new(node.ip.into(), w.listen.port());
        }
        let data = cfg.resolve(&cfg.cluster.data_dir);
        d.cluster.data_dir = std::path::absolute(&data).unwrap_or(data);
        d
    }
}

/// `<prefix><name>` when the worker's name is a plain word, else `<prefix>w<i>`.
fn worker_ns(prefix: &str, name: &str, i: usize) -> String {
    let plain = !name.is_empty()
        && name.len() <= 24
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name != "master"
        && name != "bridge";
    if plain {
        format!("{prefix}{name}")
    } else {
        format!("{prefix}w{i}")
    }
}

/// The namespace of the public instance at `port_offset`.
fn instance_ns(prefix: &str, port_offset: u32) -> String {
    format!("{prefix}pi{port_offset}")
}

/// The node of the public instance `name` at `port_offset`: namespace
/// `<prefix>pi<k>`, bridge end `vp<k>`, address `ip`, its link shaped at
/// `rate_bits` in both directions.
pub fn instance_node(
    prefix: &str,
    ip: Ipv4Addr,
    port_offset: u32,
    name: &str,
    rate_bits: u64,
) -> Node {
    Node {
        name: name.to_owned(),
        ns: instance_ns(prefix, port_offset),
        bridge_end: format!("vp{port_offset}"),
        ip,
        rate_bits: Some(rate_bits),
        bridge: CORE_BRIDGE.into(),
    }
}

/// Fails unless running as root with `ip` and `tc` available.
pub fn require_root() -> anyhow::Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!("the netns mode needs root (network namespaces, veth, tc)");
    }
    for tool in ["ip", "tc"] {
        let ok = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            bail!("the netns mode needs `{tool}` (Debian package iproute2)");
        }
    }
    Ok(())
}

/// Runs a command, failing with its stderr.
fn sh(program: &str, args: &[&str]) -> anyhow::Result<String> {
    crate::ops::run_command(program, args, None)
}

/// Creates the namespaces, bridge, veth pairs, addresses and qdiscs. On any
/// failure, everything with the prefix is removed before the error returns.
pub fn setup(layout: &Layout) -> anyhow::Result<()> {
    let r = setup_inner(layout);
    if r.is_err() {
        let _ = teardown(&layout.prefix);
    }
    r
}

fn setup_inner(l: &Layout) -> anyhow::Result<()> {
    let br = l.bridge_ns.as_str();
    sh("ip", &["netns", "add", br])?;
    sh("ip", &["-n", br, "link", "set", "lo", "up"])?;
    sh(
        "ip",
        &["-n", br, "link", "add", CORE_BRIDGE, "type", "bridge"],
    )?;
    sh("ip", &["-n", br, "link", "set", CORE_BRIDGE, "up"])?;
    for r in &l.racks {
        sh(
            "ip",
            &["-n", br, "link", "add", &r.bridge, "type", "bridge"],
        )?;
        sh("ip", &["-n", br, "link", "set", &r.bridge, "up"])?;
        sh(
            "ip",
            &[
                "-n", br, "link", "add", &r.up, "type", "veth", "peer", "name", &r.down,
            ],
        )?;
        for (end, bridge) in [(&r.up, &r.bridge), (&r.down, &CORE_BRIDGE.to_owned())] {
            sh("ip", &["-n", br, "link", "set", end, "master", bridge])?;
            sh("ip", &["-n", br, "link", "set", end, "up"])?;
            if let Some(bits) = r.rate_bits {
                // Each end's egress: `down` (on br0) carries core -> rack,
                // `up` (on the rack's bridge) rack -> core.
                tbf(br, end, bits)?;
            }
        }
    }
    let addresses = l.addresses();
    for n in l.nodes() {
        add_node(br, n, &addresses)?;
    }
    if let Some((name, ip)) = &l.host_link {
        if name.len() > 15 {
            bail!("host link name {name} is longer than 15 characters");
        }
        if let Some(user) = subnet_user(*ip)? {
            bail!(
                "{ip}/24 is already in use in this namespace ({user}): another cluster with a \
                 host link (or an interface of this machine) holds it; stop it, or pick another \
                 subnet"
            );
        }
        sh(
            "ip",
            &[
                "link", "add", name, "type", "veth", "peer", "name", "vhost", "netns", br,
            ],
        )?;
        sh(
            "ip",
            &["-n", br, "link", "set", "vhost", "master", CORE_BRIDGE],
        )?;
        sh("ip", &["-n", br, "link", "set", "vhost", "up"])?;
        sh("ip", &["link", "set", name, "address", &mac_of(*ip)])?;
        sh("ip", &["addr", "add", &format!("{ip}/24"), "dev", name])?;
        sh("ip", &["link", "set", name, "up"])?;
        static_neighbors(None, name, *ip, &addresses)?;
    }
    Ok(())
}

/// Shapes `dev` in `ns` at `bits` per second from now on (a tbf replacing
/// its root qdisc, with the layout's bucket and queue): a NIC slowed or
/// restored while the cluster runs.
pub fn reshape(ns: &str, dev: &str, bits: u64) -> anyhow::Result<()> {
    root_tbf(ns, dev, bits, "replace")
}

/// Adds (or, with `on` false, removes) a blackhole route to `to` in
/// namespace `ns`: every packet from `ns` to `to` is dropped, a one-way
/// cut (TCP connections then fail both ways, their replies lost).
pub fn blackhole(ns: &str, to: Ipv4Addr, on: bool) -> anyhow::Result<()> {
    let dst = format!("{to}/32");
    let op = if on { "add" } else { "del" };
    sh("ip", &["-n", ns, "route", op, "blackhole", &dst])?;
    Ok(())
}

/// Shapes `dev`'s egress in namespace `ns` to `bits` per second.
fn tbf(ns: &str, dev: &str, bits: u64) -> anyhow::Result<()> {
    root_tbf(ns, dev, bits, "add")
}

/// `tc qdisc <op> dev <dev> root tbf ...` in `ns` at `bits` per second.
fn root_tbf(ns: &str, dev: &str, bits: u64, op: &str) -> anyhow::Result<()> {
    let rate = format!("{bits}bit");
    sh(
        "tc",
        &[
            "-n",
            ns,
            "qdisc",
            op,
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            &rate,
            "burst",
            TBF_BURST,
            "latency",
            TBF_LATENCY,
        ],
    )?;
    Ok(())
}

/// Adds one node to a running layout: its namespace, a veth pair with its
/// end `eth0` at `n.ip`/24 (MAC [`mac_of`] it) and the other on bridge
/// `n.bridge` of namespace `br`, a permanent neighbour entry for each of
/// `addresses` (the layout's, [`Layout::addresses`]) but its own, and the
/// tbf qdiscs of `n.rate_bits` in both directions.
pub fn add_node(br: &str, n: &Node, addresses: &[Ipv4Addr]) -> anyhow::Result<()> {
    let ns = n.ns.as_str();
    sh("ip", &["netns", "add", ns])?;
    sh("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    sh(
        "ip",
        &[
            "-n",
            br,
            "link",
            "add",
            &n.bridge_end,
            "type",
            "veth",
            "peer",
            "name",
            NODE_IF,
            "netns",
            ns,
        ],
    )?;
    sh(
        "ip",
        &["-n", br, "link", "set", &n.bridge_end, "master", &n.bridge],
    )?;
    sh("ip", &["-n", br, "link", "set", &n.bridge_end, "up"])?;
    let cidr = format!("{}/24", n.ip);
    sh(
        "ip",
        &["-n", ns, "link", "set", NODE_IF, "address", &mac_of(n.ip)],
    )?;
    sh("ip", &["-n", ns, "addr", "add", &cidr, "dev", NODE_IF])?;
    sh("ip", &["-n", ns, "link", "set", NODE_IF, "up"])?;
    static_neighbors(Some(ns), NODE_IF, n.ip, addresses)?;
    if let Some(bits) = n.rate_bits {
        // Transmit: the node's own end. Receive: the bridge end's egress.
        tbf(ns, NODE_IF, bits)?;
        tbf(br, &n.bridge_end, bits)?;
    }
    Ok(())
}

/// Permanent neighbour entries on `dev` (in namespace `ns`, or the root
/// one) for every address of `addresses` but `own`, each at its [`mac_of`],
/// in one `ip -batch`.
fn static_neighbors(
    ns: Option<&str>,
    dev: &str,
    own: Ipv4Addr,
    addresses: &[Ipv4Addr],
) -> anyhow::Result<()> {
    use std::io::Write;
    let batch: String = addresses
        .iter()
        .filter(|a| **a != own)
        .map(|a| {
            format!(
                "neigh replace {a} lladdr {} dev {dev} nud permanent\n",
                mac_of(*a)
            )
        })
        .collect();
    if batch.is_empty() {
        return Ok(());
    }
    let mut cmd = Command::new("ip");
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    let mut child = cmd
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running `ip -batch` for the static neighbours")?;
    let written = child
        .stdin
        .take()
        .context("no stdin for `ip -batch`")?
        .write_all(batch.as_bytes());
    let out = child
        .wait_with_output()
        .context("waiting for `ip -batch`")?;
    let place = ns.unwrap_or("the root namespace");
    if !out.status.success() {
        bail!(
            "static neighbours on {dev} in {place}: `ip -batch` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    written.with_context(|| format!("writing the static neighbours of {dev} in {place}"))
}

/// Removes a node [`add_node`] made (its veth pair goes with its
/// namespace), after the processes in it are stopped.
pub fn remove_node(n: &Node) -> anyhow::Result<()> {
    sh("ip", &["netns", "del", &n.ns]).map(|_| ())
}

/// Names of the existing namespaces that start with `prefix`.
pub fn list(prefix: &str) -> anyhow::Result<Vec<String>> {
    let out = sh("ip", &["netns", "list"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_owned)
        .collect())
}

/// What in this (the root) namespace already holds `any`'s /24: an
/// address or a route on it, named with its device; None when it is free.
pub fn subnet_user(any: Ipv4Addr) -> anyhow::Result<Option<String>> {
    let [a, b, c, _] = any.octets();
    let net = format!("{a}.{b}.{c}.");
    let addrs = sh("ip", &["-4", "-o", "addr", "show"])?;
    let routes = sh("ip", &["-4", "route", "show"])?;
    Ok(in_use(&net, &addrs, &routes))
}

/// [`subnet_user`] over `ip -4 -o addr show` and `ip -4 route show`.
fn in_use(net: &str, addrs: &str, routes: &str) -> Option<String> {
    let from_addr = addrs.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let at = f.iter().position(|w| *w == "inet")?;
        f.get(at + 1)
            .filter(|a| a.starts_with(net))
            .map(|a| format!("address {a} on {}", f.get(1).unwrap_or(&"?")))
    });
    from_addr.or_else(|| {
        routes.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dst = *f.first()?;
            let dev = f
                .iter()
                .position(|w| *w == "dev")
                .and_then(|i| f.get(i + 1));
            dst.starts_with(net)
                .then(|| format!("route {dst} via {}", dev.unwrap_or(&"?")))
        })
    })
}

/// The first subnet 10.77.`third`.0/24 from `from` on (wrapping, 1 to 250)
/// that this namespace does not use: where a host link can go.
pub fn free_third(from: u8) -> anyhow::Result<u8> {
    let start = from.clamp(1, 250);
    for k in 0..250u16 {
        let third = ((start as u16 - 1 + k) % 250 + 1) as u8;
        if subnet_user(Ipv4Addr::new(10, 77, third, 1))?.is_none() {
            return Ok(third);
        }
    }
    bail!("every subnet 10.77.1-250.0/24 is in use in this namespace")
}

fn pids_in(ns: &str) -> Vec<i32> {
    sh("ip", &["netns", "pids", ns])
        .map(|o| o.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Stops every process in, then deletes, every namespace named `prefix*`.
/// Returns the namespaces it deleted.
pub fn teardown(prefix: &str) -> anyhow::Result<Vec<String>> {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let names = list(prefix)?;
    let pids = |names: &[String]| -> Vec<i32> { names.iter().flat_map(|n| pids_in(n)).collect() };
    for p in pids(&names) {
        let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids(&names).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in pids(&names) {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
    let mut errors = Vec::new();
    for n in &names {
        if let Err(e) = sh("ip", &["netns", "del", n]) {
            errors.push(e.to_string());
        }
    }
    // A host link dies with its peer in the bridge namespace; one left by a
    // failed setup is removed here.
    let host = format!("{prefix}host");
    if std::path::Path::new("/sys/class/net").join(&host).exists() {
        let _ = sh("ip", &["link", "del", &host]);
    }
    if !errors.is_empty() {
        bail!("netns cleanup incomplete: {}", errors.join("; "));
    }
    Ok(names)
}

/// Runs `f` on a new thread that has joined namespace `ns`; sockets it opens
/// live in that namespace. The calling thread is untouched.
pub fn in_ns<R: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> anyhow::Result<R> {
    let path = Path::new("/var/run/netns").join(ns);
    let file = std::fs::File::open(&path)
        .with_context(|| format!("network namespace {ns} not found ({})", path.display()))?;
    std::thread::spawn(move || -> anyhow::Result<R> {
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
            .context("setns into the network namespace")?;
        Ok(f())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("thread in namespace panicked"))?
}

/// Makes `cmd`'s process join namespace `ns` before it executes (its mount
/// namespace stays this one's, so namespaces it adds are seen by all).
pub fn exec_in(cmd: &mut Command, ns: &str) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let path = Path::new("/var/run/netns").join(ns);
    let file = std::fs::File::open(&path)
        .with_context(|| format!("network namespace {ns} not found ({})", path.display()))?;
    // SAFETY: setns is a plain system call on an fd opened before the fork;
    // nothing that allocates or locks runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(std::io::Error::from)
        });
    }
    Ok(())
}

/// Bytes sent by the qdisc of `dev` in namespace `ns` (`tc -s`).
fn qdisc_sent(ns: &str, dev: &str) -> anyhow::Result<u64> {
    let out = sh("tc", &["-n", ns, "-s", "qdisc", "show", "dev", dev])?;
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("Sent "))
        .with_context(|| format!("no statistics for {dev} in {ns}: {out}"))?;
    line.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("cannot parse tc statistics line {line:?}"))
}

/// Bytes a node's qdiscs have sent: (transmit, receive), from `tc -s`.
pub fn shaped_bytes(layout: &Layout, node: &Node) -> anyhow::Result<(u64, u64)> {
    Ok((
        qdisc_sent(&node.ns, NODE_IF)?,
        qdisc_sent(&layout.bridge_ns, &node.bridge_end)?,
    ))
}

/// Bytes a rack's link has carried: (into the rack, out of it), from `tc -s`.
pub fn rack_link_bytes(layout: &Layout, rack: &RackNet) -> anyhow::Result<(u64, u64)> {
    Ok((
        qdisc_sent(&layout.bridge_ns, &rack.down)?,
        qdisc_sent(&layout.bridge_ns, &rack.up)?,
    ))
}

/// The shaping rate of `dev`'s root qdisc in the bridge namespace, bits
/// per second, as tc reports it; None if it has no tbf.
pub fn bridge_rate_bits(layout: &Layout, dev: &str) -> anyhow::Result<Option<u64>> {
    let out = sh(
        "tc",
        &["-n", &layout.bridge_ns, "qdisc", "show", "dev", dev],
    )?;
    let Some(rate) = out.split_whitespace().skip_while(|w| *w != "rate").nth(1) else {
        return Ok(None);
    };
    let (num, unit) = rate.split_at(
        rate.find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(rate.len()),
    );
    let v: f64 = num
        .parse()
        .with_context(|| format!("cannot parse tc rate {rate:?}"))?;
    let mult = match unit {
        "bit" | "" => 1.0,
        "Kbit" => 1e3,
        "Mbit" => 1e6,
        "Gbit" => 1e9,
        other => anyhow::bail!("unknown tc rate unit {other:?} in {rate:?}"),
    };
    Ok(Some((v * mult).round() as u64))
}

#[cfg(test)]
mod tests {
    use super::in_use;

    #[test]
    fn a_subnet_held_by_an_address_or_a_route_is_named_and_a_free_one_is_not() {
        let addrs = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                     7: mct12-host    inet 10.77.7.254/24 scope global mct12-host\\ valid_lft forever\n";
        let routes = "default via 192.0.2.1 dev eth0\n\
                      10.77.9.0/24 dev mct13-host proto kernel scope link src 10.77.9.254\n";
        assert_eq!(
            in_use("10.77.7.", addrs, routes).as_deref(),
            Some("address 10.77.7.254/24 on mct12-host")
        );
        assert_eq!(
            in_use("10.77.9.", addrs, routes).as_deref(),
            Some("route 10.77.9.0/24 via mct13-host")
        );
        assert_eq!(in_use("10.77.8.", addrs, routes), None);
        // 10.77.1. is not 10.77.10.
        assert_eq!(in_use("10.77.1.", "", "10.77.10.0/24 dev x\n"), None);
    }
}
