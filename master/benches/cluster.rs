//! `make bench`: the backbone's benchmarks, each printing ratios measured in
//! this one run (the machine is shared and noisy; compare ratios, not times).
//! 1. remote fetch into a worker whose NIC is capped at C = 400 Mbit/s, with
//!    1, 2 and 4 concurrent readers: aggregate / C and each reader / (C/k);
//! 2. local input-sink of a 256 MB block (checksums verified) vs `sha256sum`;
//! 3. a 64-task input-sink job over 1 MB blocks on 4 workers x 4 slots, submit to report.

use common::wire::{JobSubmit, Launch, LaunchTask, ReplicaSource};
use common::{AttemptId, BlockId, JobId, TaskRef};
use master::loader::{self, Generator, LoadSpec, Source};
use std::time::Instant;
use workloads::Workload;

const TOKEN: &str = "bench";

#[path = "../tests/support/mod.rs"]
mod support;

/// Starts `k` concurrent fetches of `size` bytes (fetch(i) returns the
/// seconds reader i took) and prints aggregate / C and each reader / (C/k).
async fn nic_round<F, Fut>(k: usize, size: usize, cap: f64, fetch: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = f64>,
{
    let t0 = Instant::now();
    let per: Vec<f64> = futures_util::future::join_all((0..k).map(&fetch))
        .await
        .into_iter()
        .map(|secs| size as f64 / secs)
        .collect();
    let agg = (k * size) as f64 / t0.elapsed().as_secs_f64();
    let each: Vec<String> = per
        .iter()
        .map(|r| format!("{:.2}", r / (cap / k as f64)))
        .collect();
    println!(
        "   k={k}: aggregate {:.1} MB/s = {:.2} x C (target >= 0.90); each reader / (C/k): [{}] (target 0.85..1.15)",
        agg / 1e6,
        agg / cap,
        each.join(", ")
    );
}

const NIC_MBPS: f64 = 400.0;
const NIC_BLOCK: usize = 25_000_000;

async fn nic_bench() {
    let cap = common::config::mbps_to_bytes(NIC_MBPS);
    let dir = tempfile::tempdir().unwrap();
    // w0 reads (capped); w1 serves (unlimited).
    let cl = support::start_cluster(dir.path(), TOKEN, 4, &[Some(cap), None], 100).await;
    let ws = &cl.workers;
    let size = NIC_BLOCK;
    upload_nic_blocks(&ws[1].url()).await;
    println!(
        "1. remote fetch into a worker with an emulated NIC C = {NIC_MBPS} Mbit/s, {} MB per reader",
        size / 1_000_000
    );
    for k in [1usize, 2, 4] {
        nic_round(k, size, cap, |i| {
            let ctx = ws[0].ctx.clone();
            let url = ws[1].url();
            async move {
                let id = BlockId::for_file("nic", i as u32).unwrap();
                let s = Instant::now();
                worker::fetch::fetch_block(
                    &ctx.http,
                    &ctx.nic.rx,
                    TOKEN,
                    &url,
                    &id,
                    size as u64,
                    |_| async { Ok(()) },
                )
                .await
                .unwrap();
                s.elapsed().as_secs_f64()
            }
        })
        .await;
    }
}

async fn upload_nic_blocks(url: &str) {
    let data = bytes::Bytes::from(vec![b'n'; NIC_BLOCK]);
    for i in 0..4u32 {
        let id = BlockId::for_file("nic", i).unwrap();
        loader::upload_block(
            &reqwest::Client::new(),
            TOKEN,
            url,
            &id,
            "nic",
            i,
            4,
            data.clone(),
        )
        .await
        .unwrap();
    }
}

/// The same measurement in the netns mode (root only): worker `r` shaped by
/// tc to C in both directions, worker `s` unshaped; the readers run in r's
/// namespace (the emulated NIC off) and fetch from s's server process.
async fn nic_netns_bench() {
    if !nix::unistd::Uid::effective().is_root() {
        println!("1b. netns variant skipped: needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg_path = dir.path().join("cluster.toml");
    std::fs::write(
        &cfg_path,
        format!(
            "[cluster]\ntoken = \"{TOKEN}\"\nreplication = 1\ndata_dir = \"data\"\n\
             [master]\nlisten = \"127.0.0.1:7400\"\n\
             [[worker]]\nname = \"r\"\nlisten = \"127.0.0.1:7401\"\nnic_mbps = {NIC_MBPS}\n\
             [[worker]]\nname = \"s\"\nlisten = \"127.0.0.1:7402\"\n"
        ),
    )
    .unwrap();
    let cfg = common::config::ClusterConfig::load(&cfg_path).unwrap();
    let prefix = "mrtbench-";
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_master"))
        .parent()
        .unwrap();
    if let Err(e) = master::local::up_netns_with(&cfg, true, prefix, bin).await {
        println!("1b. netns variant failed to start: {e:#}");
        return;
    }
    let layout = master::netns::Layout::plan(prefix, &cfg).unwrap();
    let derived = layout.derive_config(&cfg);
    let s_url = format!("http://{}", derived.worker[1].listen);
    let cap = common::config::mbps_to_bytes(NIC_MBPS);
    let ns = layout.worker("r").unwrap().ns.clone();
    println!(
        "1b. the same with netns + tc tbf at C = {NIC_MBPS} Mbit/s (kernel TCP, emulated NIC off)"
    );
    let r = tokio::task::spawn_blocking(move || {
        master::netns::in_ns(&ns, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                upload_nic_blocks(&s_url).await;
                let http = reqwest::Client::new();
                let unlimited = worker::nic::Link::new(None);
                for k in [1usize, 2, 4] {
                    nic_round(k, NIC_BLOCK, cap, |i| {
                        let (http, url, link) = (&http, &s_url, &unlimited);
                        async move {
                            let id = BlockId::for_file("nic", i as u32).unwrap();
                            let s = Instant::now();
                            worker::fetch::fetch_block(
                                http,
                                link,
                                TOKEN,
                                url,
                                &id,
                                NIC_BLOCK as u64,
                                |_| async { Ok(()) },
                            )
                            .await
                            .unwrap();
                            s.elapsed().as_secs_f64()
                        }
                    })
                    .await;
                }
            })
        })
    })
    .await
    .unwrap();
    if let Err(e) = r {
        println!("1b. netns variant failed: {e:#}");
    }
    let _ = master::local::down(&master::local::run_dir(&cfg));
}

async fn local_sink_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 1, &[None], 100).await;
    let ws = &cl.workers;
    let size = 256usize << 20;
    let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let id = BlockId::for_file("local", 0).unwrap();
    let target = worker::store::BlockTarget {
        id: id.clone(),
        file: "local".into(),
        index: 0,
        file_blocks: 1,
    };
    ws[0].ctx.store.put(target, &data).unwrap();
    drop(data);
    let path = ws[0].ctx.store.data_path(&id);
    // Warm the page cache for both.
    let _ = std::process::Command::new("cat")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .status();
    let mut best_sha = f64::MAX;
    let mut best_sink = f64::MAX;
    for round in 0..3u32 {
        let t = Instant::now();
        let st = std::process::Command::new("sha256sum")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        best_sha = best_sha.min(t.elapsed().as_secs_f64());
        let launch = Launch {
            attempt: AttemptId {
                task: TaskRef {
                    job: JobId(1),
                    index: 0,
                },
                attempt: round,
            },
            workload: Workload::InputSink,
            task: LaunchTask::Map {
                block: id.clone(),
                len: size as u64,
                source: ReplicaSource::Local,
                reduces: 0,
            },
        };
        let t = Instant::now();
        let r = worker::exec::run(&ws[0].ctx, launch, 0).await;
        assert!(
            matches!(r.outcome, common::wire::TaskOutcome::Succeeded { .. }),
            "{r:?}"
        );
        best_sink = best_sink.min(t.elapsed().as_secs_f64());
    }
    let mb = size as f64 / 1e6;
    println!(
        "2. local input-sink of a 256 MiB block: {:.0} MB/s; sha256sum {:.0} MB/s; ratio {:.2} (target >= 0.70)",
        mb / best_sink,
        mb / best_sha,
        best_sha / best_sink
    );
}

async fn overhead_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 4, &[None; 4], 100).await;
    let c = &cl.client;
    loader::load(
        c,
        &LoadSpec {
            name: "small".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 64,
            },
            block_size: 1 << 20,
            replication: 2,
            seed: 5,
        },
    )
    .await
    .unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let id = c
            .submit(&JobSubmit {
                workload: Workload::InputSink,
                input: "small".into(),
                name: None,
                group: None,
                reduces: None,
                output: None,
            })
            .await
            .unwrap();
        let r = c.wait_job(id).await.unwrap();
        assert!(r.state == common::wire::JobState::Succeeded);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "3. 64 x 1 MiB input-sink tasks on 4 workers x 4 slots, submit to report: median {:.3} s over 5 jobs (target <= 0.5 s; ratio {:.2})",
        times[2],
        times[2] / 0.5
    );
}

fn main() {
    // `cargo bench` passes --bench; nothing to parse.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        nic_bench().await;
        nic_netns_bench().await;
        local_sink_bench().await;
        overhead_bench().await;
    });
}
