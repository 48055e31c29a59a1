//! Workers on other machines over ssh, on one box: three network-namespace
//! hosts, each with its own address and its own sshd (Debian's
//! openssh-server; keys made for the test), and the master's namespace
//! where `master up` runs. `up` copies the worker binary and cluster.toml to
//! each host over scp, starts the workers over ssh, a wordcount runs through
//! them (output checked against coreutils), `down` stops them, and a second
//! `up` finds nothing stale to copy. Needs root; elsewhere it says so.

mod skip;
use ctl::ops::netns;
use ctl::ops::verify;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const HOSTS: usize = 3;

fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

fn sshd() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stops the sshds and removes the namespaces however the test ends.
struct Cleanup {
    prefix: String,
    pid_files: Vec<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for f in &self.pid_files {
            if let Some(pid) = std::fs::read_to_string(f)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
        }
        let _ = netns::teardown(&self.prefix);
    }
}

/// `master` with `args`, run inside namespace `ns`; (success, stdout+stderr).
fn master_in(ns: &str, config: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_master")])
        .arg("--config")
        .arg(config)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn worker_pids(ns: &str) -> Vec<i32> {
    sh("ip", &["netns", "pids", ns])
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains("--name"))
                .unwrap_or(false)
        })
        .collect()
}

/// Keys made for the test (the client's, and one host key per host) and
/// an sshd on each host's address; returns the client's key.
fn start_sshds(d: &Path, layout: &netns::Layout, sshd: &Path, cleanup: &mut Cleanup) -> PathBuf {
    let key = d.join("id");
    sh(
        "ssh-keygen",
        &["-q", "-t", "ed25519", "-N", "", "-f", key.to_str().unwrap()],
    );
    std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let mut known = String::new();
    for h in &layout.workers {
        let hk = d.join(format!("hostkey-{}", h.name));
        sh(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", hk.to_str().unwrap()],
        );
        known += &format!(
            "{} {}",
            h.ip,
            std::fs::read_to_string(hk.with_extension("pub")).unwrap()
        );
        let pid_file = d.join(format!("sshd-{}.pid", h.name));
        let conf = d.join(format!("sshd-{}.conf", h.name));
        std::fs::write(
            &conf,
            format!(
                "Port 22\nListenAddress {ip}\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 Subsystem sftp /usr/lib/openssh/sftp-server\n",
                ip = h.ip,
                hk = hk.display(),
                pid = pid_file.display(),
                ak = d.join("authorized_keys").display()
            ),
        )
        .unwrap();
        cleanup.pid_files.push(pid_file.clone());
        sh(
            "ip",
            &[
                "netns",
                "exec",
                &h.ns,
                sshd.to_str().unwrap(),
                "-f",
                conf.to_str().unwrap(),
                "-E",
                d.join(format!("sshd-{}.log", h.name)).to_str().unwrap(),
            ],
        );
    }
    std::fs::write(d.join("known_hosts"), known).unwrap();
    key
}

/// The cluster: the master in its namespace, each worker on its host,
/// reached over ssh with `key`; returns the config's path.
fn write_cluster_config(d: &Path, layout: &netns::Layout, key: &Path) -> PathBuf {
    let mut text = format!(
        r#"[cluster]
token = "ssh-test"
replication = 2
heartbeat_ms = 100
seed = 3
[master]
listen = "{m}:7070"
[workers]
slots = 2
pretouch_mb = 0
ssh_options = ["-i", "{key}", "-o", "UserKnownHostsFile={kh}", "-o", "StrictHostKeyChecking=yes"]
"#,
        m = layout.master.ip,
        key = key.display(),
        kh = d.join("known_hosts").display()
    );
    for h in &layout.workers {
        text += &format!(
            "[[worker]]\nname = \"{n}\"\nlisten = \"{ip}:7101\"\nhost = \"{ip}\"\nssh_user = \"root\"\nremote_dir = \"{rd}\"\n",
            n = h.name,
            ip = h.ip,
            rd = d.join(format!("host-{}", h.name)).display()
        );
    }
    // Every link over TLS: `up` makes the certificates for the hosts'
    // addresses and copies each worker its own.
    text += "[tls]\nenabled = true\n";
    let cfg = d.join("cluster.toml");
    std::fs::write(&cfg, text).unwrap();
    cfg
}

#[test]
fn master_up_starts_copies_and_stops_workers_over_ssh_on_three_hosts() {
    if !is_root() {
        skip::skipped("the ssh test needs root (network namespaces)");
        return;
    }
    let Some(sshd) = sshd() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs openssh-server (.ci/run)"
        );
        skip::skipped("no sshd (package openssh-server)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prefix = format!("mrs{}-", std::process::id() % 100_000);
    // The hosts' layout: the netns mode's (a bridge, the master's namespace
    // at 10.77.0.1, hosts from 10.77.0.10), with no shaping.
    let mut plan_text = String::from(
        "[cluster]\ntoken = \"ssh-test\"\nreplication = 2\n[master]\nlisten = \"127.0.0.1:7070\"\n",
    );
    for i in 1..=HOSTS {
        plan_text += &format!(
            "[[worker]]\nname = \"h{i}\"\nlisten = \"127.0.0.1:{}\"\n",
            7100 + i
        );
    }
    std::fs::write(d.join("plan.toml"), plan_text).unwrap();
    let plan = common::config::ClusterConfig::load(d.join("plan.toml")).unwrap();
    let layout = netns::Layout::plan(&prefix, &plan).unwrap();
    let mut cleanup = Cleanup {
        prefix: prefix.clone(),
        pid_files: Vec::new(),
    };
    netns::setup(&layout).unwrap();

    let key = start_sshds(d, &layout, &sshd, &mut cleanup);
    let cfg = write_cluster_config(d, &layout, &key);
    let ns = layout.master.ns.as_str();

    let (ok, out) = master_in(ns, &cfg, &["up", "--fresh"]);
    assert!(ok, "{out}");
    for h in &layout.workers {
        assert!(
            out.contains(&format!("started {} over ssh", h.name)) && out.contains("copied"),
            "{out}"
        );
        let remote = d.join(format!("host-{}", h.name));
        assert!(remote.join("worker").exists() && remote.join("cluster.toml").exists());
        // Its certificate and key and the authority's, not the authority's key.
        let tls = |f: &str| remote.join("run/tls").join(f).exists();
        let own = tls(&format!("{}.pem", h.name)) && tls(&format!("{}.key", h.name));
        assert!(own && tls("ca.pem") && !tls("ca.key"), "{}", h.name);
        assert_eq!(worker_pids(&h.ns).len(), 1, "one worker runs on {}", h.name);
    }

    // A wordcount through the workers on the three hosts.
    let (ok, out) = master_in(
        ns,
        &cfg,
        &[
            "load",
            "--name",
            "text",
            "--generate",
            "text",
            "--blocks",
            "6",
            "--block-size",
            "200000",
        ],
    );
    assert!(ok, "{out}");
    let (ok, out) = master_in(
        ns,
        &cfg,
        &[
            "submit",
            "--workload",
            "wordcount",
            "--input",
            "text",
            "--reduces",
            "2",
            "--output",
            "counts",
            "--wait",
        ],
    );
    assert!(ok && out.contains("succeeded"), "{out}");
    let cat = |file: &str| {
        let o = Command::new("ip")
            .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_master")])
            .arg("--config")
            .arg(&cfg)
            .args(["cat", file])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let input = cat("text");
    assert_eq!(input.len(), 1_200_000);
    assert_eq!(
        verify::wordcount_pairs(&cat("counts")).unwrap(),
        verify::wordcount_reference(&input).unwrap()
    );
    for h in &layout.workers {
        let log = d
            .join(format!("host-{}", h.name))
            .join(format!("{}.log", h.name));
        let log = std::fs::read_to_string(&log).unwrap();
        assert!(log.contains("registered with master"), "{log}");
        assert!(log.contains("HTTPS (TLS on)"), "{log}");
    }

    // down stops them on every host.
    let (ok, out) = master_in(ns, &cfg, &["down"]);
    assert!(ok, "{out}");
    for h in &layout.workers {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !worker_pids(&h.ns).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "{} still runs a worker",
                h.name
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    // Up again: nothing stale, nothing copied; the data is still there.
    let (ok, out) = master_in(ns, &cfg, &["up"]);
    assert!(ok, "{out}");
    assert_eq!(
        out.matches("binary and config up to date").count(),
        HOSTS,
        "{out}"
    );
    assert_eq!(cat("text"), input);
    let (ok, out) = master_in(ns, &cfg, &["down"]);
    assert!(ok, "{out}");
    drop(cleanup);
    assert!(netns::list(&prefix).unwrap().is_empty());
}
