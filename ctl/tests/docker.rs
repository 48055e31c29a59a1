//! The container mode on this machine's Docker engine: `master up --docker`
//! builds the two images from the static binaries (`make docker-bins`; make
//! test builds them), starts a master and three workers in containers on a
//! private network of their own (every link over TLS, certificates made for
//! the containers' addresses), and the test runs a wordcount through them
//! (output checked against coreutils), measures a capped worker link, then
//! `master down` must leave no container, network or volume behind. Skipped
//! with a message where no engine answers.

mod skip;
use common::wire::{JobState, JobSubmit};
use ctl::ops::client::MasterClient;
use ctl::ops::docker;
use ctl::ops::files;
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use ctl::ops::verify;
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

/// A test's cluster in containers, removed (with its images) when dropped.
struct Containers {
    client: MasterClient,
    derived: common::config::ClusterConfig,
    project: String,
    third: u8,
    run: PathBuf,
    _down: Down,
    _dir: tempfile::TempDir,
}

/// Starts three workers and a master in containers (project
/// `<tag><pid>`, subnet 10.78.(100 + (pid + offset) % 150).0/24), every
/// link over TLS when `tls`; None, after saying so, where no engine answers
/// or (off CI) no static binaries exist.
async fn containers(
    tag: &str,
    offset: u32,
    cluster_keys: &str,
    worker_keys: &str,
    tls: bool,
) -> Option<Containers> {
    if !docker::engine_answers() {
        skip::skipped(
            "no Docker engine answers here (package docker.io or Docker Engine, started)",
        );
        return None;
    }
    let Some(bin) = static_bins() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI builds the static binaries first (make docker-bins)"
        );
        skip::skipped("no static binaries; run make docker-bins");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cfg =
        ctl::ops::local::write_loopback_config(dir.path(), TOKEN, 3, cluster_keys, worker_keys)
            .unwrap();
    if tls {
        let text = std::fs::read_to_string(&cfg.path).unwrap() + "\n[tls]\nenabled = true\n";
        std::fs::write(&cfg.path, text).unwrap();
        cfg = common::config::ClusterConfig::load(&cfg.path).unwrap();
    }
    let pid = std::process::id();
    let project = format!("{tag}{pid}");
    let third = 100 + ((pid + offset) % 150) as u8;
    let run = ctl::ops::local::run_dir(&cfg);
    let down = Down(run.clone(), project.clone());
    docker::up(&cfg, true, &project, third, &bin).await.unwrap();
    let derived = common::config::ClusterConfig::load(docker::config_path(&cfg)).unwrap();
    Some(Containers {
        client: MasterClient::for_cluster(&derived, common::credentials::Role::Client).unwrap(),
        derived,
        project,
        third,
        run,
        _down: down,
        _dir: dir,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_in_containers_runs_jobs_and_caps_its_links() {
    // 40 Mbit/s links: 5 MB/s per direction per worker.
    let Some(c) = containers(
        "mrtbtest",
        0,
        "replication = 1\nheartbeat_ms = 100",
        "slots = 2\nnic_mbps = 40",
        true,
    )
    .await
    else {
        return;
    };
    let (client, derived, project, third, run) =
        (&c.client, &c.derived, &c.project, c.third, &c.run);
    assert_eq!(
        derived.master.listen.ip().to_string(),
        format!("10.78.{third}.2")
    );
    let workers = client.workers().await.unwrap();
    assert_eq!(workers.len(), 3);
    for w in &workers {
        assert!(
            w.alive && w.addr.starts_with(&format!("https://10.78.{third}.")),
            "{w:?}"
        );
    }

    // A wordcount across the containers, checked against coreutils.
    loader::load(
        client,
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
    let input = files::read_file(client, "text").await.unwrap();
    let output = files::read_file(client, "counts").await.unwrap();
    assert_eq!(
        verify::wordcount_pairs(&output).unwrap(),
        verify::wordcount_reference(&input).unwrap()
    );

    // Each worker's block cache holds and locks its blocks inside its
    // container: the compose file lifts the container's RLIMIT_MEMLOCK.
    let mut held = 0.0;
    for w in &workers {
        let text = client
            .http()
            .get(format!("{}/metrics", w.addr))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let get = |m: &str| -> f64 {
            let key = format!(
                "mrtb_worker_block_cache_{m}_bytes{{worker=\"{}\"}} ",
                w.name
            );
            text.lines()
                .find_map(|l| l.strip_prefix(key.as_str()))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {text}"))
        };
        assert_eq!(get("locked"), get("held"), "{}: {text}", w.name);
        held += get("held");
    }
    // Every block read is held: the input's and the output's, read above.
    assert_eq!(held, (input.len() + output.len()) as f64);

    // A capped link gives its configured rate: a 2 MB block served by a
    // worker at 5 MB/s takes about 0.4 s (the worker's emulated NIC paces
    // what it sends from inside its container).
    let f = client.file("text").await.unwrap();
    let holder = workers.iter().find(|w| w.name == f.replicas[0][0]).unwrap();
    let block = common::BlockId::for_file("text", 0).unwrap();
    let t0 = Instant::now();
    let data = files::get_block(client, &holder.addr, &block)
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
    assert!(docker::down_with(run, true).unwrap());
    let left = docker::leftovers(project).unwrap();
    assert!(left.is_empty(), "{left:?}");
}

/// Faults across real container networks, on a cluster of three workers
/// (replication 2): `docker kill` of a worker while a sort's maps run,
/// `docker network disconnect` of a worker holding map output once the
/// maps are done (a partition during the shuffle) and its reconnection,
/// and `docker restart` of the master while a job runs. Every job succeeds
/// with the output of `LC_ALL=C sort`, the one running through the restart
/// too; the restarted master still lists the jobs it finished and gives the
/// next one a new id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_survive_a_killed_container_a_partition_and_a_master_restart() {
    let Some(c) = containers(
        "mrtbfault",
        75,
        "replication = 2\nheartbeat_ms = 100\nworker_timeout_ms = 3000\nmax_task_attempts = 4",
        "slots = 2\nnic_mbps = 80",
        false,
    )
    .await
    else {
        return;
    };
    let (client, project) = (&c.client, &c.project);
    loader::load(
        client,
        &LoadSpec {
            name: "recs".into(),
            source: Source::Generate {
                kind: Generator::Records,
                blocks: 6,
            },
            block_size: 1_000_000,
            replication: 2,
            seed: 5,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let input = files::read_file(client, "recs").await.unwrap();
    let reference = verify::sort_reference(&input).unwrap();
    let sort = sort_job;
    let check = |r: &common::wire::JobReport, out: Vec<u8>| check_sorted(r, &out, &reference);

    // 1. docker kill of a worker while it runs maps (1.5 s each).
    let id = client.submit(&sort("sorted1", 1500)).await.unwrap();
    let (victim, killed) = loop {
        let r = client.job(id, None).await.unwrap();
        if let Some(a) = r
            .running
            .iter()
            .find(|a| a.kind == common::wire::TaskKind::Map)
        {
            let n = r.running.iter().filter(|b| b.worker == a.worker).count();
            break (a.worker.clone(), n);
        }
        assert!(!r.state.is_done(), "no map seen running");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    docker::docker(&["kill", &docker::container(project, &victim)]).unwrap();
    let r = client.wait_job(id).await.unwrap();
    check(&r, files::read_file(client, "sorted1").await.unwrap());
    let maps_on_victim = r
        .attempts
        .iter()
        .filter(|a| a.ok && a.worker == victim && a.kind == common::wire::TaskKind::Map)
        .count();
    eprintln!(
        "kill of {victim} with {killed} maps running: job {} succeeded, {} of its 6 maps done on {victim} before the kill",
        r.job, maps_on_victim
    );
    assert!(maps_on_victim < 6);
    docker::docker(&["start", &docker::container(project, &victim)]).unwrap();
    wait_alive(client, 3).await;

    partition_during_shuffle(&c, &reference).await;

    // 3. docker restart of the master while a job runs: the journal is on
    // a volume, so finished jobs stay listed, ids are not reused, and the
    // running job is taken back and succeeds (work-preserving restart).
    let running = client.submit(&sort("sorted-restart", 3000)).await.unwrap();
    loop {
        let r = client.job(running, None).await.unwrap();
        if !r.running.is_empty() {
            break;
        }
        assert!(!r.state.is_done(), "{r:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let before = client.jobs().await.unwrap();
    docker::docker(&["restart", "-t", "2", &docker::container(project, "master")]).unwrap();
    wait_alive(client, 3).await;
    let after = client.jobs().await.unwrap();
    for j in before.iter().filter(|j| j.job != running) {
        let again = after.iter().find(|a| a.job == j.job).expect("still listed");
        assert_eq!(again.state, j.state);
    }
    let r = client.wait_job(running).await.unwrap();
    check(
        &r,
        files::read_file(client, "sorted-restart").await.unwrap(),
    );
    assert_eq!(r.master_restarts, 1, "{r:?}");
    eprintln!(
        "master restart: {} succeeded; attempts rerun after the restart: {}",
        r.job, r.restart_reruns
    );
    // The catalog comes back from the workers' block reports.
    let id = client.submit(&sort("sorted3", 0)).await.unwrap();
    assert!(
        before.iter().all(|j| j.job < id),
        "a new id after the restart"
    );
    let r = client.wait_job(id).await.unwrap();
    check(&r, files::read_file(client, "sorted3").await.unwrap());
}

/// A sort of 1 MB-block records into `out` with 2 reduces, each map
/// computing `compute_ms` (0: none).
fn sort_job(out: &str, compute_ms: u64) -> JobSubmit {
    let mut j = JobSubmit::new(Workload::Sort, "recs");
    j.reduces = Some(2);
    j.output = Some(out.into());
    if compute_ms > 0 {
        j.compute = Some(common::wire::TaskCompute {
            min_ms: compute_ms,
            max_ms: compute_ms,
            seed: 1,
        });
    }
    j
}

/// The job succeeded with `LC_ALL=C sort`'s output.
fn check_sorted(r: &common::wire::JobReport, out: &[u8], reference: &[u8]) {
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert!(
        out == reference,
        "{}: output differs from LC_ALL=C sort",
        r.job
    );
}

/// Step 2, a partition during the shuffle: once the maps are done, a worker
/// that holds map output is cut off its network, then put back.
async fn partition_during_shuffle(c: &Containers, reference: &[u8]) {
    let (client, derived, project) = (&c.client, &c.derived, &c.project);
    let sort = sort_job;
    let check = |r: &common::wire::JobReport, out: Vec<u8>| check_sorted(r, &out, reference);
    let net = docker::network(project).unwrap();
    let id = client.submit(&sort("sorted2", 0)).await.unwrap();
    let victim = loop {
        let r = client.job(id, None).await.unwrap();
        if r.tasks_done == r.tasks || r.state.is_done() {
            break r
                .attempts
                .iter()
                .rev()
                .find(|a| a.ok && a.kind == common::wire::TaskKind::Map)
                .map(|a| a.worker.clone())
                .expect("a map ran");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let ip = derived
        .worker
        .iter()
        .find(|w| w.name == victim)
        .unwrap()
        .listen
        .ip()
        .to_string();
    let victim_c = docker::container(project, &victim);
    docker::docker(&["network", "disconnect", "-f", &net, &victim_c]).unwrap();
    let r = client.wait_job(id).await.unwrap();
    check(&r, files::read_file(client, "sorted2").await.unwrap());
    let summary = client.cluster().await.unwrap();
    eprintln!(
        "partition of {victim}: job {} succeeded; maps re-run so far: {}",
        r.job, summary.maps_rerun
    );
    docker::docker(&["network", "connect", "--ip", &ip, &net, &victim_c]).unwrap();
    wait_alive(client, 3).await;
}

/// Waits (up to 60 s) until `n` workers are alive at the master (which may
/// itself be restarting).
async fn wait_alive(client: &MasterClient, n: usize) {
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Ok(c) = client.cluster().await {
            if c.workers_alive == n {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{n} workers never alive again");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
