//! `master policy-server`: the reference external policy, delay scheduling
//! written again from the protocol's messages alone (none of `sched`'s
//! policy code), served on a Unix socket or loopback TCP.
//!
//! It is Zaharia et al.'s rule as the built-in `delay` runs it with
//! `pick = "oldest"`, fair order and `wait_from = "first-skip"`: for each
//! free slot, jobs in order of fewest running maps (ties by submission); a
//! job with a map whose input is on the offered worker launches the oldest
//! such map and its wait is cleared; a job without one is skipped, its wait
//! starting at its first skip; once it has waited `threshold`, it launches
//! its oldest map read from the map's first replica (or locally, if the
//! offered worker holds one). The order is taken again after each launch.
//! Given the same offers it makes the built-in's launches, one for one
//! (`ctl/tests/external_policy.rs` checks it in the simulator); the random
//! pick of the built-in's default would need its random draws, which the
//! protocol does not carry.

use anyhow::Context;
use common::JobId;
use sched::decision::Rule;
use sched::policy::external::{
    parse_address, Address, Explain, LaunchMessage, OfferMessage, Reply, PROTOCOL_VERSION,
};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};

/// Delay scheduling over protocol messages (see the module documentation).
pub struct RefDelay {
    threshold_ms: u64,
    /// Jobs being skipped, since when.
    since: HashMap<JobId, u64>,
}

impl RefDelay {
    pub fn new(threshold_s: f64) -> Self {
        RefDelay {
            threshold_ms: (threshold_s * 1000.0).round().max(0.0) as u64,
            since: HashMap::new(),
        }
    }

    /// The launches for one offer.
    pub fn decide(&mut self, msg: &OfferMessage) -> Reply {
        let now = msg.now_ms;
        let worker = msg.worker;
        // Each job's position, running maps, oldest tasks and local tasks,
        // changed as this offer launches.
        let mut jobs: Vec<(
            usize,
            u32,
            &sched::policy::external::JobMessage,
            Vec<u32>,
            usize,
        )> = msg
            .jobs
            .iter()
            .enumerate()
            .map(|(pos, j)| (pos, j.running, j, j.local.clone(), 0))
            .collect();
        let mut taken: std::collections::HashSet<(JobId, u32)> = Default::default();
        let mut launches = Vec::new();
        let mut declined = None;
        for _ in 0..msg.free_slots {
            let mut order: Vec<usize> = (0..jobs.len())
                .filter(|&i| jobs[i].2.pending as usize > jobs[i].4)
                .collect();
            order.sort_by_key(|&i| (jobs[i].1, jobs[i].0));
            let mut choice = None;
            let mut first_decline = None;
            for i in order {
                let (_, _, job, local, _) = &jobs[i];
                if let Some(&t) = local.first() {
                    self.since.remove(&job.id);
                    choice = Some((i, t, worker, Rule::DataLocal, None));
                    break;
                }
                let since = *self.since.entry(job.id).or_insert(now);
                let waited = now.saturating_sub(since);
                if waited < self.threshold_ms {
                    first_decline.get_or_insert(Explain {
                        rule: Some(Rule::Waiting),
                        job: Some(job.id),
                        waited_ms: Some(waited),
                        threshold_ms: Some(self.threshold_ms),
                    });
                    continue;
                }
                // The oldest pending map; one without a live replica is not
                // run (the master fails its job), and the job passes.
                let oldest = job
                    .tasks
                    .iter()
                    .find(|t| !taken.contains(&(job.id, t.index)))
                    .filter(|t| !t.replicas.is_empty());
                match oldest {
                    Some(t) if t.replicas.contains(&worker) => {
                        choice = Some((i, t.index, worker, Rule::DataLocal, Some(waited)));
                        break;
                    }
                    Some(t) => {
                        choice = Some((i, t.index, t.replicas[0], Rule::WaitOver, Some(waited)));
                        break;
                    }
                    None => {
                        first_decline.get_or_insert(Explain {
                            rule: Some(Rule::NothingToRun),
                            job: Some(job.id),
                            ..Explain::default()
                        });
                    }
                }
            }
            let Some((i, task, source, rule, waited)) = choice else {
                declined = Some(first_decline.unwrap_or(Explain {
                    rule: Some(Rule::NothingToRun),
                    ..Explain::default()
                }));
                break;
            };
            let j = &mut jobs[i];
            j.1 += 1;
            j.3.retain(|&t| t != task);
            j.4 += 1;
            taken.insert((j.2.id, task));
            launches.push(LaunchMessage {
                job: j.2.id,
                task,
                source,
                worker: None,
                rule: Some(rule),
                waited_ms: waited,
                threshold_ms: waited.map(|_| self.threshold_ms),
            });
        }
        // Forget jobs that ended.
        let live: std::collections::HashSet<JobId> = msg.jobs.iter().map(|j| j.id).collect();
        self.since.retain(|j, _| live.contains(j));
        Reply {
            version: PROTOCOL_VERSION,
            launches,
            declined,
            error: None,
        }
    }
}

/// Sessions kept at once: a server outlives runs (each simulation, each
/// start of the master is one); the oldest beyond this are forgotten.
const SESSIONS_KEPT: usize = 64;

/// The reference policy's state for each session (run) it serves.
pub struct Sessions {
    threshold_s: f64,
    runs: Vec<(String, RefDelay)>,
}

impl Sessions {
    pub fn new(threshold_s: f64) -> Self {
        Sessions {
            threshold_s,
            runs: Vec::new(),
        }
    }

    /// One request line's reply line: a reply, or a reply saying what was
    /// wrong with the request.
    pub fn answer(&mut self, line: &str) -> String {
        let reply = match serde_json::from_str::<OfferMessage>(line) {
            Ok(m) if m.version == PROTOCOL_VERSION => {
                let i = match self.runs.iter().position(|r| r.0 == m.session) {
                    Some(i) => i,
                    None => {
                        if self.runs.len() >= SESSIONS_KEPT {
                            self.runs.remove(0);
                        }
                        self.runs
                            .push((m.session.clone(), RefDelay::new(self.threshold_s)));
                        self.runs.len() - 1
                    }
                };
                self.runs[i].1.decide(&m)
            }
            Ok(m) => Reply::error(format!(
                "this policy speaks protocol version {PROTOCOL_VERSION}, the offer {}",
                m.version
            )),
            Err(e) => Reply::error(format!("the request is not an OfferMessage: {e}")),
        };
        serde_json::to_string(&reply).expect("a reply serialises")
    }
}

/// A bound listening socket.
pub enum Listener {
    Unix(std::os::unix::net::UnixListener, std::path::PathBuf),
    Tcp(std::net::TcpListener),
    /// `tls:`: TCP, each connection's TLS served with this configuration.
    Tls(std::net::TcpListener, Arc<rustls::ServerConfig>),
}

/// The certificate a policy server at `tls:<host>:<port>` serves with:
/// `policy.pem` / `policy.key` in the cluster's `[tls] dir`, made (as
/// `master up` makes the nodes') when missing or not valid for `host` and
/// the authority's key is there, and checked against `ca.pem`.
pub fn policy_tls(
    cfg: &common::config::ClusterConfig,
    host: &str,
) -> anyhow::Result<common::tls::load::NodeTls> {
    anyhow::ensure!(
        cfg.tls.enabled,
        "--listen tls:...: {} has TLS off ([tls] enabled = true makes the cluster's authority)",
        cfg.path.display()
    );
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    if !names.iter().any(|n| n == host) {
        names.push(host.to_owned());
    }
    let dir = cfg.tls_dir();
    let made = common::tls::make::ensure(&dir, &[("policy".to_owned(), names.clone())])?;
    if !made.is_empty() {
        println!("TLS: made {} in {}", made.join(", "), dir.display());
    }
    Ok(common::tls::load::NodeTls::load(
        &common::tls::Files::of(&dir, "policy"),
        &names,
    )?)
}

impl Listener {
    /// Binds `address` (`unix:<path>` or `tcp:<host>:<port>`; port 0 picks
    /// one). A Unix socket file left by an earlier server is replaced; any
    /// other file at the path is an error.
    /// `tls:` needs `tls`, the certificate to serve with ([`policy_tls`]).
    pub fn bind(
        address: &str,
        tls: Option<&common::tls::load::NodeTls>,
    ) -> anyhow::Result<Listener> {
        match parse_address(address).map_err(|e| anyhow::anyhow!("--listen: {e}"))? {
            Address::Unix(p) => {
                use std::os::unix::fs::FileTypeExt;
                let path = std::path::PathBuf::from(p);
                if let Ok(m) = std::fs::symlink_metadata(&path) {
                    anyhow::ensure!(
                        m.file_type().is_socket(),
                        "--listen: {} exists and is not a socket",
                        path.display()
                    );
                    std::fs::remove_file(&path)?;
                }
                let l = std::os::unix::net::UnixListener::bind(&path)
                    .with_context(|| format!("binding {}", path.display()))?;
                Ok(Listener::Unix(l, path))
            }
            Address::InProcess(_) => {
                anyhow::bail!(
                    "--listen: {address} is not a socket: use unix:<path> or tcp:<host>:<port>"
                )
            }
            Address::Tcp(hp) => Ok(Listener::Tcp(
                std::net::TcpListener::bind(&hp).with_context(|| format!("binding {hp}"))?,
            )),
            Address::Tls(hp) => {
                let tls = tls.context("--listen tls:...: no certificate to serve with")?;
                Ok(Listener::Tls(
                    std::net::TcpListener::bind(&hp).with_context(|| format!("binding {hp}"))?,
                    tls.server.clone(),
                ))
            }
        }
    }

    /// The address clients use (`tcp:` with the port bound).
    pub fn address(&self) -> String {
        match self {
            Listener::Unix(_, p) => format!("unix:{}", p.display()),
            Listener::Tcp(l) => format!(
                "tcp:{}",
                l.local_addr().map(|a| a.to_string()).unwrap_or_default()
            ),
            Listener::Tls(l, _) => format!(
                "tls:{}",
                l.local_addr().map(|a| a.to_string()).unwrap_or_default()
            ),
        }
    }

    /// Serves each connection on a thread, one policy for all, until the
    /// process ends.
    pub fn serve(self, policy: Arc<Mutex<Sessions>>) -> anyhow::Result<()> {
        fn conn<S: std::io::Read + Write>(
            read: S,
            mut write: impl Write,
            policy: Arc<Mutex<Sessions>>,
        ) {
            for line in BufReader::new(read).lines() {
                let Ok(line) = line else { return };
                let out = policy.lock().expect("policy lock").answer(&line);
                if write.write_all(format!("{out}\n").as_bytes()).is_err() {
                    return;
                }
            }
        }
        match self {
            Listener::Unix(l, _) => {
                for s in l.incoming() {
                    let s = s?;
                    let w = s.try_clone()?;
                    let p = policy.clone();
                    std::thread::spawn(move || conn(s, w, p));
                }
            }
            Listener::Tcp(l) => {
                for s in l.incoming() {
                    let s = s?;
                    s.set_nodelay(true)?;
                    let w = s.try_clone()?;
                    let p = policy.clone();
                    std::thread::spawn(move || conn(s, w, p));
                }
            }
            Listener::Tls(l, config) => {
                for s in l.incoming() {
                    let s = s?;
                    s.set_nodelay(true)?;
                    let (p, config) = (policy.clone(), config.clone());
                    std::thread::spawn(move || {
                        // A client that does not finish its handshake is
                        // dropped: the connection ends, nothing else.
                        let Ok(tls) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        serve_tls(rustls::StreamOwned::new(tls, s), p);
                    });
                }
            }
        }
        Ok(())
    }
}

/// One TLS connection's requests, a line each, answered in order.
fn serve_tls(
    mut s: rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>,
    policy: Arc<Mutex<Sessions>>,
) {
    let mut pending = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]);
            let out = policy.lock().expect("policy lock").answer(&line);
            if s.write_all(format!("{out}\n").as_bytes()).is_err() || s.flush().is_err() {
                return;
            }
        }
    }
}

/// `master policy-server`: the reference delay policy on a socket; at
/// `tls:<host>:<port>` with the cluster's `policy` certificate (`config`'s
/// `[tls]`).
pub async fn run(listen: &str, threshold_s: f64, config: &std::path::Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        threshold_s.is_finite() && threshold_s >= 0.0,
        "--threshold-s must be a number of seconds >= 0, not {threshold_s}"
    );
    let tls = match listen.strip_prefix("tls:") {
        Some(hp) => {
            let cfg = common::config::ClusterConfig::load(config)?;
            let host = hp.rsplit_once(':').map_or(hp, |(h, _)| h);
            Some(policy_tls(&cfg, host)?)
        }
        None => None,
    };
    let l = Listener::bind(listen, tls.as_ref())?;
    println!(
        "serving the reference delay policy (threshold {threshold_s} s) at {}",
        l.address()
    );
    let policy = std::sync::Arc::new(std::sync::Mutex::new(Sessions::new(threshold_s)));
    tokio::task::spawn_blocking(move || l.serve(policy)).await?
}

/// A reference policy served on a background thread (for tests and the
/// bench): its address.
pub fn spawn(address: &str, threshold_s: f64) -> anyhow::Result<String> {
    spawn_with(address, threshold_s, None)
}

/// [`spawn`], serving `tls:` addresses with `tls`.
pub fn spawn_with(
    address: &str,
    threshold_s: f64,
    tls: Option<&common::tls::load::NodeTls>,
) -> anyhow::Result<String> {
    let l = Listener::bind(address, tls)?;
    let a = l.address();
    let policy = Arc::new(Mutex::new(Sessions::new(threshold_s)));
    std::thread::spawn(move || l.serve(policy));
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(now: u64, session: &str, local: &[u32]) -> String {
        format!(
            r#"{{"version":1,"session":"{session}","now_ms":{now},"worker":0,"free_slots":2,"workers":[],
            "jobs":[{{"id":1,"submitted_ms":0,"group":"default","running":0,"pending":2,
            "tasks":[{{"index":0,"bytes":5,"replicas":[1]}},{{"index":1,"bytes":5,"replicas":[0,1]}}],
            "local":{local:?}}}]}}"#
        )
    }

    fn reply(line: &str) -> Reply {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn local_first_then_the_oldest_after_the_wait_per_session() {
        let mut s = Sessions::new(1.0);
        // A local task; the second slot finds none and starts the wait.
        let r = reply(&s.answer(&offer(0, "a", &[1])));
        assert_eq!(r.launches.len(), 1);
        assert_eq!((r.launches[0].task, r.launches[0].source.0), (1, 0));
        assert_eq!(r.declined.unwrap().rule, Some(Rule::Waiting));
        // Still waiting at 999 ms; over at 1000: the oldest, from its
        // first replica, then the next (local here).
        assert!(reply(&s.answer(&offer(999, "a", &[]))).launches.is_empty());
        let r = reply(&s.answer(&offer(1000, "a", &[])));
        let got: Vec<(u32, u32)> = r.launches.iter().map(|l| (l.task, l.source.0)).collect();
        assert_eq!(got, vec![(0, 1), (1, 0)]);
        assert_eq!(r.launches[0].rule, Some(Rule::WaitOver));
        // Another session starts afresh: its wait starts now.
        assert!(reply(&s.answer(&offer(1000, "b", &[]))).launches.is_empty());
    }

    #[test]
    fn a_request_it_cannot_read_gets_an_error_reply_naming_why() {
        let mut s = Sessions::new(1.0);
        let r = reply(&s.answer("{not json"));
        assert!(r.error.unwrap().contains("not an OfferMessage"));
        let r = reply(&s.answer(&offer(0, "a", &[]).replace("\"version\":1", "\"version\":9")));
        assert!(r.error.unwrap().contains("version 1, the offer 9"));
    }

    #[test]
    fn bind_refuses_a_path_that_is_not_a_socket() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("file");
        std::fs::write(&f, "x").unwrap();
        let e = Listener::bind(&format!("unix:{}", f.display()), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("exists and is not a socket"), "{e}");
        let e = Listener::bind("127.0.0.1:80", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("neither unix:"), "{e}");
        // A socket left by an earlier server is replaced.
        let p = dir.path().join("s.sock");
        drop(Listener::bind(&format!("unix:{}", p.display()), None).unwrap());
        assert!(p.exists());
        Listener::bind(&format!("unix:{}", p.display()), None).unwrap();
        // tls: without a certificate to serve with.
        let e = Listener::bind("tls:127.0.0.1:0", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no certificate"), "{e}");
    }
}
