//! End to end on loopback: a real master and three real workers (port 0),
//! replicated data uploaded through the workers' API, input-sink jobs, and
//! the bad-input cases of the API.

use common::wire::{JobState, JobSubmit};
use ctl::ops::client::MasterClient;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use workloads::Workload;

const TOKEN: &str = "test-token";

mod support;

struct Cluster {
    _master: master::http::MasterHandle,
    workers: Vec<worker::WorkerHandle>,
    client: MasterClient,
    _dir: tempfile::TempDir,
}

async fn cluster(n: u32, slots: u32, nic: Option<f64>) -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, slots, &vec![nic; n as usize], 50).await;
    Cluster {
        _master: c._master,
        workers: c.workers,
        client: c.client,
        _dir: dir,
    }
}

async fn load(c: &Cluster, name: &str, blocks: u32, size: u64, replication: u32) {
    loader::load(
        &c.client,
        &LoadSpec {
            name: name.into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks,
            },
            block_size: size,
            replication,
            seed: 11,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
}

fn corrupt_only_replica<'a>(c: &'a Cluster, file: &str) -> &'a worker::WorkerHandle {
    let id = common::BlockId::for_file(file, 0).unwrap();
    let holder = c.workers.iter().find(|w| w.store.get(&id).is_ok()).unwrap();
    let path = holder.store.data_path(&id);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1_500_000] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    holder
}

/// Every file under `dir`, as strings.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

/// A Prometheus text exposition as (series with labels, value) pairs;
/// fails on a line that is not a comment or `series value`.
fn parse_metrics(text: &str) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("{line:?}"));
        out.insert(series.to_owned(), v);
    }
    assert!(
        text.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF"
    );
    out
}

async fn scrape(client: &MasterClient, base: &str) -> std::collections::BTreeMap<String, f64> {
    let resp = client
        .http()
        .get(format!("{base}/metrics"))
        .bearer_auth(client.token())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    parse_metrics(&resp.text().await.unwrap())
}

/// The routes of a module's API table (`//! | METHOD | /path | ...`).
fn api_table(source: &str) -> std::collections::BTreeSet<(String, String)> {
    source
        .lines()
        .filter_map(|l| l.strip_prefix("//! | "))
        .filter_map(|l| {
            let mut cols = l.split(" | ");
            let method = cols.next()?.trim();
            let path = cols.next()?.trim();
            (["GET", "PUT", "POST", "DELETE"].contains(&method))
                .then(|| (method.to_owned(), path.to_owned()))
        })
        .collect()
}

/// The (method, path) pairs of an OpenAPI description.
fn described(doc: &serde_json::Value) -> std::collections::BTreeSet<(String, String)> {
    let mut out = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            out.insert((method.to_uppercase(), path.clone()));
        }
    }
    out
}

#[path = "cluster/data_and_requests.rs"]
mod data_and_requests;
#[path = "cluster/disks_metrics_and_records.rs"]
mod disks_metrics_and_records;
#[path = "cluster/protocol.rs"]
mod protocol;
