//! The container mode on this machine's Docker engine: `master up --docker`
//! builds the two images from the static binaries (`make docker-bins`; make
//! test builds them), starts a master and three workers in containers on a
//! private network of their own, and the test runs a wordcount through them
//! (output checked against coreutils), measures a capped worker link, then
//! `master down` must leave no container, network or volume behind. Skipped
//! with a message where no engine answers.

use common::wire::{JobState, JobSubmit};
use master::ops::client::MasterClient;
use master::ops::docker;
use master::ops::files;
use master::ops::loader::{self, Generator, LoadSpec, Source};
use master::ops::verify;
use std::path::{Path, PathBuf};
use std::time::Instant;
use workloads::Workload;

const TOKEN: &str = "docker-token";

/// Removes the containers, network, volumes and images of a test cluster,
/// passed or not.
struct Down(PathBuf, String);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = docker::down_with(&self.0, true);
        let _ = docker::remove_images(&self.1);
    }
}

fn static_bins() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let bin = root.join(docker::DEFAULT_BIN);
    let ok = ["master", "worker"]
        .iter()
        .all(|b| docker::is_static_elf(&bin.join(b)).unwrap_or(false));
    ok.then_some(bin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_in_containers_runs_jobs_and_caps_its_links() {
    let ci = std::env::var_os("CI").is_some();
    if !docker::engine_answers() {
        eprintln!("SKIPPED: no Docker engine answers here");
        return;
    }
    let Some(bin) = static_bins() else {
        assert!(
            !ci,
            "CI builds the static binaries first (make docker-bins)"
        );
        eprintln!("SKIPPED: no static binaries; run make docker-bins");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 40 Mbit/s links: 5 MB/s per direction per worker.
    let cfg = master::ops::local::write_loopback_config(
        dir.path(),
        TOKEN,
        3,
        "replication = 1\nheartbeat_ms = 100",
        "slots = 2\nnic_mbps = 40",
    )
    .unwrap();
    let pid = std::process::id();
    let project = format!("mrtbtest{pid}");
    let third = 100 + (pid % 150) as u8;
    let run = master::ops::local::run_dir(&cfg);
    let _down = Down(run.clone(), project.clone());
    docker::up(&cfg, true, &project, third, &bin).await.unwrap();
    let derived = common::config::ClusterConfig::load(docker::config_path(&cfg)).unwrap();
    assert_eq!(
        derived.master.listen.ip().to_string(),
        format!("10.78.{third}.2")
    );
    let client = MasterClient::new(derived.master_url(), TOKEN);
    let workers = client.workers().await.unwrap();
    assert_eq!(workers.len(), 3);
    for w in &workers {
        assert!(
            w.alive && w.addr.starts_with(&format!("http://10.78.{third}.")),
            "{w:?}"
        );
    }

    // A wordcount across the containers, checked against coreutils.
    loader::load(
        &client,
        &LoadSpec {
            name: "text".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 6,
            },
            block_size: 2_000_000,
            replication: 1,
            seed: 3,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let mut job = JobSubmit::new(Workload::Wordcount, "text");
    job.reduces = Some(2);
    job.output = Some("counts".into());
    let id = client.submit(&job).await.unwrap();
    let r = client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!(r.data_local + r.data_remote, 6);
    let input = files::read_file(&client, "text").await.unwrap();
    let output = files::read_file(&client, "counts").await.unwrap();
    assert_eq!(
        verify::wordcount_pairs(&output).unwrap(),
        verify::wordcount_reference(&input).unwrap()
    );

    // A capped link gives its configured rate: a 2 MB block served by a
    // worker at 5 MB/s takes about 0.4 s (the worker's emulated NIC paces
    // what it sends from inside its container).
    let f = client.file("text").await.unwrap();
    let holder = workers.iter().find(|w| w.name == f.replicas[0][0]).unwrap();
    let block = common::BlockId::for_file("text", 0).unwrap();
    let t0 = Instant::now();
    let data = files::get_block(&client, &holder.addr, &block)
        .await
        .unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let rate = data.len() as f64 / secs;
    let cap = 40e6 / 8.0;
    eprintln!(
        "capped link: {} bytes in {secs:.3} s = {:.2} MB/s (cap {:.2} MB/s)",
        data.len(),
        rate / 1e6,
        cap / 1e6
    );
    assert!(
        rate > 0.75 * cap && rate < 1.1 * cap,
        "{rate} B/s against a cap of {cap}"
    );

    // down leaves nothing of the project behind.
    assert!(docker::down_with(&run, true).unwrap());
    let left = docker::leftovers(&project).unwrap();
    assert!(left.is_empty(), "{left:?}");
}
