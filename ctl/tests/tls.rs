//! TLS on a real cluster of processes on loopback, started as `master up`
//! starts them (`[tls] enabled = true`): the authority and the nodes'
//! certificates are made, a job's blocks, shuffle and output cross HTTPS,
//! and a client that speaks plain HTTP or trusts another authority gets
//! nothing. A worker whose certificate its peers would refuse does not
//! start.

use common::credentials::Role;
use common::wire::{JobState, JobSubmit};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::local;
use std::path::{Path, PathBuf};
use std::time::Duration;
use workloads::Workload;

const TOKEN: &str = "tls-token";

fn bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "build the binaries first (`cargo build --bins`; make test does)"
    );
    bin.to_owned()
}

/// A loopback cluster.toml of `workers` workers with `[tls]` on.
fn tls_config(dir: &Path, workers: usize) -> common::config::ClusterConfig {
    let cfg = local::write_loopback_config(
        dir,
        TOKEN,
        workers,
        &format!(
            "replication = {}\nheartbeat_ms = 100\nseed = 3",
            workers.min(2)
        ),
        "slots = 2\nnic_mbps = 400",
    )
    .unwrap();
    let mut text = std::fs::read_to_string(&cfg.path).unwrap();
    text += "\n[tls]\nenabled = true\n";
    std::fs::write(&cfg.path, text).unwrap();
    common::config::ClusterConfig::load(&cfg.path).unwrap()
}

struct Down(common::config::ClusterConfig);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = local::down(&local::run_dir(&self.0));
    }
}

/// The master's and a worker's routes over HTTPS with the authority; the
/// same ports refuse plain HTTP and a client that trusts only reqwest's
/// defaults or another authority.
async fn only_the_clusters_authority_gets_in(cfg: &common::config::ClusterConfig) {
    let tls = cfg.client_tls().unwrap().unwrap();
    let good = common::http_client::builder(Some(&tls)).build().unwrap();
    let worker = format!("https://{}/status", cfg.worker[0].listen);
    let r = good.get(&worker).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), 200, "a worker's status over HTTPS");
    let plain = common::http_client::plain();
    for url in [
        format!("http://{}/v1/cluster", cfg.master.listen),
        format!("http://{}/status", cfg.worker[0].listen),
    ] {
        let e = plain.get(&url).bearer_auth(TOKEN).send().await;
        assert!(e.is_err(), "plain HTTP to a TLS port answered: {url}");
    }
    // Another authority, made in a folder of its own.
    let other = tempfile::tempdir().unwrap();
    common::tls::make::ensure(other.path(), &[]).unwrap();
    let foreign = common::tls::load::ClientTls::load(&other.path().join("ca.pem")).unwrap();
    let foreign = common::http_client::builder(Some(&foreign))
        .build()
        .unwrap();
    let e = foreign
        .get(cfg.master_url() + "/v1/cluster")
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap_err();
    let chain = format!("{e:?}");
    assert!(
        chain.contains("UnknownIssuer") || chain.contains("certificate"),
        "{chain}"
    );
}

/// `master up` of a TLS cluster: certificates made, a wordcount's blocks
/// loaded, its shuffle and output read back over HTTPS, the same counts
/// as counting here; every node says at start-up that it serves HTTPS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_runs_a_job_and_refuses_plain_and_foreign_clients() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tls_config(dir.path(), 2);
    local::start_with(&cfg, &bin()).await.unwrap();
    let _down = Down(cfg.clone());
    for f in ["ca.pem", "ca.key", "master.pem", "w1.pem", "w2.key"] {
        assert!(dir.path().join("run/tls").join(f).exists(), "{f} made");
    }
    let client = MasterClient::for_cluster(&cfg, Role::Client)
        .unwrap()
        .retrying(Duration::from_secs(20));
    assert!(client.base().starts_with("https://"), "{}", client.base());
    let spec = LoadSpec {
        name: "text".into(),
        source: Source::Generate {
            kind: Generator::Text,
            blocks: 4,
        },
        block_size: 100_000,
        replication: 2,
        seed: 5,
        placement: Default::default(),
    };
    loader::load(&client, &spec).await.unwrap();
    let mut job = JobSubmit::new(Workload::Wordcount, "text");
    job.reduces = Some(2);
    let id = client.submit(&job).await.unwrap();
    let report = client.wait_job(id).await.unwrap();
    assert_eq!(report.state, JobState::Succeeded, "{report:?}");
    let mut out = Vec::new();
    let output = report.output.clone().expect("an output file");
    ctl::ops::files::get(&client, &output, &mut out)
        .await
        .unwrap();
    let mut input = Vec::new();
    ctl::ops::files::get(&client, "text", &mut input)
        .await
        .unwrap();
    let words = input
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .count();
    let counted: u64 = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, words as u64, "every word counted once over HTTPS");
    only_the_clusters_authority_gets_in(&cfg).await;
    for node in ["master", "w1", "w2"] {
        let log = std::fs::read_to_string(dir.path().join(format!("run/logs/{node}.log"))).unwrap();
        assert!(log.contains("HTTPS (TLS on)"), "{node}: {log}");
    }
    // The same cluster.toml under a new authority is another cluster: its
    // master refuses the journal the first one wrote.
    local::down(&local::run_dir(&cfg)).unwrap();
    std::fs::remove_dir_all(dir.path().join("run/tls")).unwrap();
    let e = local::start_with(&cfg, &bin()).await.unwrap_err();
    assert!(format!("{e:#}").contains("another TLS authority"), "{e:#}");
}

/// A worker given a certificate of another authority (the user's own
/// files, no ca.key to make new ones) refuses to start, naming the file
/// and why, and `master up` says which node's certificate is unfit.
#[test]
fn a_certificate_its_peers_would_refuse_stops_the_worker_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tls_config(dir.path(), 1);
    let tls = dir.path().join("run/tls");
    cfg.make_tls().unwrap();
    let other = tempfile::tempdir().unwrap();
    common::tls::make::ensure(other.path(), &cfg.tls_nodes()).unwrap();
    for f in ["w1.pem", "w1.key"] {
        std::fs::copy(other.path().join(f), tls.join(f)).unwrap();
    }
    let out = std::process::Command::new(bin().join("worker"))
        .args(["--config"])
        .arg(&cfg.path)
        .args(["--name", "w1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("w1.pem is not valid for localhost"), "{err}");
    // Without the authority's key, `master up` cannot make a fit one.
    std::fs::remove_file(tls.join("ca.key")).unwrap();
    let e = cfg.make_tls().unwrap_err();
    assert!(e.0.contains("w1's certificate"), "{e}");
}
