//! `make bench`: the backbone's benchmarks, each printing ratios measured in
//! this one run (the machine is shared and noisy; compare ratios, not times).
//! 1. remote fetch into a worker whose NIC is capped at C = 400 Mbit/s, with
//!    1, 2 and 4 concurrent readers: aggregate / C and each reader / (C/k);
//! 2. local input-sink of a 256 MB block (checksums verified) vs `sha256sum`;
//! 3. a 64-task input-sink job over 1 MB blocks on 4 workers x 4 slots, submit to report;
//! 4. a sort and a wordcount job against `LC_ALL=C sort` and the coreutils
//!    wordcount pipeline on the same bytes;
//! 5. the same at 1 GiB on 2 workers x 1 slot, unlimited NICs (the setting
//!    the Spark and coreutils figures of the README were measured in);
//! 6. a 1 GiB sort on the default `make cluster` shape (4 workers x 4 slots,
//!    NICs at 400 Mbit/s, 4 reduces): its time and on how many workers the
//!    reduces ran;
//! 7. 100 tiny map tasks on 2 workers x 1 slot, submit to done;
//! 8. sort of 1 GiB of gensort-shaped lines made outside the testbed, four
//!    key distributions, against `LC_ALL=C sort -o`, with the largest
//!    reduce's share;
//! 9. sequences of mixed jobs, back to back and spaced, without and with
//!    `workers.pretouch_mb`: each workload's slowest / fastest run.

use common::wire::{JobSubmit, Launch, LaunchTask, ReplicaSource};
use common::{AttemptId, BlockId, JobId, TaskRef};
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
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
            let peers = ws[0].exec.peers.clone();
            let url = ws[1].url();
            async move {
                let id = BlockId::for_file("nic", i as u32).unwrap();
                let s = Instant::now();
                worker::fetch::fetch_block(
                    &peers.http,
                    &peers.nic.rx,
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
    if let Err(e) = ctl::ops::local::up_netns_with(&cfg, true, prefix, bin).await {
        println!("1b. netns variant failed to start: {e:#}");
        return;
    }
    let layout = ctl::ops::netns::Layout::plan(prefix, &cfg).unwrap();
    let derived = layout.derive_config(&cfg);
    let s_url = format!("http://{}", derived.worker[1].listen);
    let cap = common::config::mbps_to_bytes(NIC_MBPS);
    let ns = layout.worker("r").unwrap().ns.clone();
    println!(
        "1b. the same with netns + tc tbf at C = {NIC_MBPS} Mbit/s (kernel TCP, emulated NIC off)"
    );
    let r = tokio::task::spawn_blocking(move || {
        ctl::ops::netns::in_ns(&ns, move || {
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
    let _ = ctl::ops::local::down(&ctl::ops::local::run_dir(&cfg));
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
    ws[0].store.put(target, &data).unwrap();
    drop(data);
    let path = ws[0].store.data_path(&id);
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
                alternates: Vec::new(),
                compute_ms: 0,
            },
        };
        let t = Instant::now();
        let r = worker::exec::run(&ws[0].exec, launch, 0, &Default::default()).await;
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

/// Loads `blocks` text blocks of `block_size` bytes as `name` and runs 5
/// input-sink jobs over it, one after another: each one's seconds from
/// submission to its report, sorted.
async fn sink_job_times(
    c: &ctl::ops::client::MasterClient,
    name: &str,
    blocks: u32,
    block_size: u64,
) -> Vec<f64> {
    loader::load(
        c,
        &LoadSpec {
            name: name.into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks,
            },
            block_size,
            replication: 2,
            seed: 5,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let id = c
            .submit(&JobSubmit::new(Workload::InputSink, name))
            .await
            .unwrap();
        let r = c.wait_job(id).await.unwrap();
        assert!(r.state == common::wire::JobState::Succeeded);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    times
}

async fn overhead_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 4, &[None; 4], 100).await;
    let times = sink_job_times(&cl.client, "small", 64, 1 << 20).await;
    println!(
        "3. 64 x 1 MiB input-sink tasks on 4 workers x 4 slots, submit to report: median {:.3} s over 5 jobs (target <= 0.5 s; ratio {:.2})",
        times[2],
        times[2] / 0.5
    );
}

/// Loads `source` as `name` in blocks of `block_size`, `replication`
/// replicas each (seed 9 for generated data).
async fn load(
    cl: &support::LocalCluster,
    name: &str,
    source: Source,
    block_size: u64,
    replication: u32,
) {
    loader::load(
        &cl.client,
        &LoadSpec {
            name: name.into(),
            source,
            block_size,
            replication,
            seed: 9,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
}

/// Concatenates a loaded file's blocks (read from the worker holding them)
/// into `path`; returns its size.
async fn dump_file(cl: &support::LocalCluster, name: &str, path: &std::path::Path) -> u64 {
    let f = cl.client.file(name).await.unwrap();
    let mut out = Vec::new();
    for (i, reps) in f.replicas.iter().enumerate() {
        let w = cl.workers.iter().find(|w| w.name == reps[0]).unwrap();
        let id = BlockId::for_file(name, i as u32).unwrap();
        let target = w.store.data_path(&id);
        out.extend_from_slice(&std::fs::read(target).unwrap());
    }
    std::fs::write(path, &out).unwrap();
    out.len() as u64
}

/// The input bytes of each successful reduce attempt of a job.
fn reduce_inputs(r: &common::wire::JobReport) -> Vec<u64> {
    r.attempts
        .iter()
        .filter(|a| a.kind == common::wire::TaskKind::Reduce && a.ok)
        .map(|a| a.input_bytes)
        .collect()
}

/// The largest reduce's share of all reduce input (0 with none).
fn largest_share(inputs: &[u64]) -> f64 {
    inputs.iter().max().copied().unwrap_or(0) as f64 / inputs.iter().sum::<u64>().max(1) as f64
}

/// Wall time of a shell pipeline over `input` (LC_ALL=C), its output written
/// to a file next to the input (as the job writes its output file).
fn time_shell(cmd: &str, input: &std::path::Path) -> f64 {
    let out = input.with_extension("reference-out");
    let t = Instant::now();
    let st = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("( {cmd} ) < '{}' > '{}'", input.display(), out.display()),
        ])
        .env("LC_ALL", "C")
        .status()
        .unwrap();
    assert!(st.success(), "{cmd} failed");
    t.elapsed().as_secs_f64()
}

/// The sort and the wordcount (name, generator, workload, the coreutils
/// command doing the same on the same bytes, the target ratio).
const VERSUS: [(Generator, &str, Workload, &str, f64); 2] = [
    (Generator::Records, "recs", Workload::Sort, "sort", 2.0),
    (
        Generator::Text,
        "words",
        Workload::Wordcount,
        "tr -s '[:space:]' '\\n' | sort | uniq -c",
        5.0,
    ),
];

/// Loads `blocks` blocks of `block_size` with each generator of [`VERSUS`]
/// (`replication` replicas each), runs the job (best of `rounds`, `reduces` reduces) and the coreutils
/// command on the same bytes, and prints both and their ratio.
async fn versus_coreutils(
    cl: &support::LocalCluster,
    dir: &std::path::Path,
    blocks: u32,
    block_size: u64,
    reduces: u32,
    rounds: u32,
    replication: u32,
) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // `BENCH_WORKLOAD=sort|wordcount` runs one of the two.
    let only = std::env::var("BENCH_WORKLOAD").ok();
    for (kind, name, workload, cmd, target) in VERSUS {
        if only.as_deref().is_some_and(|o| o != workload.name()) {
            continue;
        }
        load(
            cl,
            name,
            Source::Generate { kind, blocks },
            block_size,
            replication,
        )
        .await;
        let file = dir.join(format!("{name}.input"));
        let bytes = dump_file(cl, name, &file).await as f64;
        let mut ours = f64::MAX;
        let mut shares: Vec<u64> = Vec::new();
        for round in 0..rounds {
            let mut job = JobSubmit::new(workload, name);
            job.reduces = Some(reduces);
            job.output = Some(format!("{name}-out{round}"));
            let t = Instant::now();
            let id = cl.client.submit(&job).await.unwrap();
            let r = cl.client.wait_job(id).await.unwrap();
            assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
            let secs = t.elapsed().as_secs_f64();
            if secs < ours {
                ours = secs;
                shares = reduce_inputs(&r);
            }
            if std::env::var_os("BENCH_DETAIL").is_some() {
                for a in &r.attempts {
                    println!(
                        "      {:?} task {} on {}: {} -> {} ms",
                        a.kind, a.task, a.worker, a.start_ms, a.end_ms
                    );
                }
            }
            cl.client
                .delete_file(&format!("{name}-out{round}"))
                .await
                .unwrap();
        }
        let theirs = time_shell(cmd, &file);
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(file.with_extension("reference-out"));
        cl.client.delete_file(name).await.unwrap();
        let (a, b) = (bytes / 1e6 / ours, bytes / 1e6 / theirs);
        let largest = largest_share(&shares);
        println!(
            "   {workload} of {:.0} MB: job {:.2} s = {:.1} MB/s ({:.1} MB/s per core); `LC_ALL=C {cmd}` {:.2} s = {:.1} MB/s ({:.1} per core); ratio {:.2} (target >= {target}); largest of {} reduces' input {:.3} (target <= {:.3})",
            bytes / 1e6,
            ours,
            a,
            a / cores,
            theirs,
            b,
            b / cores,
            a / b,
            shares.len(),
            largest,
            1.1 / shares.len().max(1) as f64
        );
    }
}

/// Section 4: sort and wordcount jobs (a map machine and a reduce machine,
/// unlimited NIC) against coreutils on the same bytes.
async fn mapreduce_bench() {
    use common::config::Role;
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster_roles(
        dir.path(),
        TOKEN,
        2,
        &[None, None],
        &[Role::Map, Role::Reduce],
        50,
        |_| {},
    )
    .await;
    println!(
        "4. map and reduce vs coreutils (a map machine and a reduce machine, 2 slots each, 2 reduces; output stored durably with checksums)"
    );
    // The reduce machine has 2 slots: 2 reduces use both cores.
    // One worker holds data: one replica.
    versus_coreutils(&cl, dir.path(), 16, 8_000_000, 2, 2, 1).await;
}

/// Section 5: 1 GiB on 2 workers x 1 slot (both map and reduce), output
/// and its replica written.
async fn gib_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 100).await;
    println!(
        "5. 1 GiB (16 x 64 MiB blocks) on 2 workers x 1 slot, unlimited NICs, 2 reduces, output and its replica written"
    );
    versus_coreutils(&cl, dir.path(), 16, 64 << 20, 2, 1, 2).await;
}

/// Section 6: a 1 GiB sort on `make cluster`'s shape.
async fn default_cluster_sort_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cap = Some(common::config::mbps_to_bytes(400.0));
    let cl = support::start_cluster(dir.path(), TOKEN, 4, &[cap; 4], 100).await;
    load(
        &cl,
        "recs",
        Source::Generate {
            kind: Generator::Records,
            blocks: 16,
        },
        64 << 20,
        2,
    )
    .await;
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(4);
    job.output = Some("recs-sorted".into());
    let t = Instant::now();
    let id = cl.client.submit(&job).await.unwrap();
    let r = cl.client.wait_job(id).await.unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
    let reduce_workers: std::collections::BTreeSet<&str> = r
        .attempts
        .iter()
        .filter(|a| a.kind == common::wire::TaskKind::Reduce)
        .map(|a| a.worker.as_str())
        .collect();
    let maps_end = r
        .attempts
        .iter()
        .filter(|a| a.kind == common::wire::TaskKind::Map)
        .map(|a| a.end_ms)
        .max()
        .unwrap_or(0);
    println!(
        "6. 1 GiB sort on 4 workers x 4 slots, NICs 400 Mbit/s, 4 reduces: {secs:.2} s (target <= 20 s; ratio {:.2}); maps done at {:.2} s; reduces on {} workers ({})",
        secs / 20.0,
        maps_end as f64 / 1e3,
        reduce_workers.len(),
        reduce_workers.into_iter().collect::<Vec<_>>().join(", ")
    );
}

/// Section 7: 100 tiny map tasks (1 KiB blocks, input-sink) on 2 workers x
/// 1 slot: what a task costs beyond its work.
async fn tiny_tasks_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 100).await;
    let times = sink_job_times(&cl.client, "tiny", 100, 1024).await;
    println!(
        "7. 100 tiny map tasks on 2 workers x 1 slot, submit to done: median {:.3} s over 5 jobs (min {:.3}; target <= 0.05 s; ratio {:.2})",
        times[2],
        times[0],
        times[2] / 0.05
    );
}

/// Section 8: sort on 1 GiB of lines made outside the testbed (gensort's
/// ASCII shape, four key distributions) on 2 workers x 1 slot, 64 MiB
/// blocks, 2 reduces, against `LC_ALL=C sort -o` on the same file; the
/// output checked equal to GNU sort's, and the largest reduce's share of
/// the shuffled bytes (balanced: 0.50).
async fn anyones_records_bench() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let cl = support::start_cluster(dir.path(), TOKEN, 1, &[None, None], 100).await;
    let bytes: u64 = std::env::var("BENCH_LINES_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1024)
        << 20;
    let reduces = 2u32;
    println!(
        "8. sort of {} MiB of gensort-shaped lines made outside the testbed, 2 workers x 1 slot, 64 MiB blocks, replication 2, {reduces} reduces, vs `LC_ALL=C sort -o` (target ratio >= 2.5; largest reduce's share target <= {:.2})",
        bytes >> 20,
        1.1 / reduces as f64
    );
    // `BENCH_LINES_KEYS=uniform|few-distinct|shared-prefix|zipf` runs one.
    let only = std::env::var("BENCH_LINES_KEYS").ok();
    for keys in Keys::ALL {
        if only.as_deref().is_some_and(|o| o != keys.name()) {
            continue;
        }
        let input = dir.path().join(format!("{}.lines", keys.name()));
        lines::write_file(&input, keys, bytes, 17).unwrap();
        let name = format!("lines-{}", keys.name());
        load(&cl, &name, Source::File(input.clone()), 64 << 20, 2).await;
        // Best of `ROUNDS` on each side (the first job of the cluster also
        // pays for its buffers' first touch: see workloads::pool).
        let (mut ours, mut theirs) = (f64::MAX, f64::MAX);
        let (mut shares, mut maps_done) = (Vec::new(), 0.0);
        let reference = input.with_extension("gnu");
        for round in 0..ROUNDS {
            let out = format!("{name}-sorted");
            if round > 0 {
                cl.client.delete_file(&out).await.unwrap();
            }
            let mut job = JobSubmit::new(Workload::Sort, &name);
            job.reduces = Some(reduces);
            job.output = Some(out);
            // Neither side pays for the bench's own writes (the generated
            // file, the other side's output): both start with nothing dirty.
            sync_disks();
            let t = Instant::now();
            let id = cl.client.submit(&job).await.unwrap();
            let r = cl.client.wait_job(id).await.unwrap();
            let secs = t.elapsed().as_secs_f64();
            assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
            if secs < ours {
                ours = secs;
                shares = reduce_inputs(&r);
                maps_done = r
                    .attempts
                    .iter()
                    .filter(|a| a.kind == common::wire::TaskKind::Map)
                    .map(|a| a.end_ms)
                    .max()
                    .unwrap_or(0) as f64
                    / 1e3;
            }
            theirs = theirs.min(gnu_sort(&input, &reference));
        }
        let largest = largest_share(&shares);
        let got = input.with_extension("ours");
        dump_file(&cl, &format!("{name}-sorted"), &got).await;
        let same = files_equal(&got, &reference);
        println!(
            "   {:<13} job {:.2} s (maps done at {:.2} s), `LC_ALL=C sort -o` {:.2} s, best of {ROUNDS} each: ratio {:.2}; largest reduce's share {:.3} ({}); output {}",
            keys.name(),
            ours,
            maps_done,
            theirs,
            theirs / ours,
            largest,
            shares
                .iter()
                .map(|b| format!("{:.0} MB", *b as f64 / 1e6))
                .collect::<Vec<_>>()
                .join(" / "),
            if same { "equal to GNU sort's" } else { "DIFFERS from GNU sort's" }
        );
        assert!(same, "the sort of {} differs from GNU sort's", keys.name());
        for p in [&input, &reference, &got] {
            let _ = std::fs::remove_file(p);
        }
        cl.client.delete_file(&name).await.unwrap();
        cl.client
            .delete_file(&format!("{name}-sorted"))
            .await
            .unwrap();
    }
}

/// Section 9: a job's time in sequences of mixed jobs, 2 workers x 1 slot,
/// 64 MiB blocks at replication 2: 1 GiB of gensort-shaped lines and 1 GiB
/// of dictionary words loaded, then the issue's sequence (3 sorts, then 3
/// wordcounts), an alternating one (sort, wordcount, 3 times), both back
/// to back with every output kept, as a user would run them (no sync
/// between them), and a spaced one (sort, wordcount, twice, each after a
/// pause longer than the buffer pool's idle trim). All of it three times,
/// on fresh clusters: workers with no buffers faulted in, then workers with
/// [`SEQUENCE_PRETOUCH_MB`] each (`workers.pretouch_mb`), then the same
/// with output written once instead of twice. Prints each
/// job's time with the dirty pages and pooled buffers it started with and,
/// per workload and cluster, slowest / fastest (target <= 1.25).
async fn sequence_bench() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let lines_path = dir.path().join("seq.lines");
    lines::write_file(&lines_path, Keys::Uniform, 1 << 30, 23).unwrap();
    let words_path = dir.path().join("seq.words");
    lines::write_words_file(&words_path, 1 << 30, 29).unwrap();
    // Written back before the first cluster starts: the bench's own 2 GiB
    // of dirty pages would otherwise be flushed during its first jobs.
    for p in [&lines_path, &words_path] {
        std::fs::File::open(p).unwrap().sync_all().unwrap();
    }
    let pause = std::time::Duration::from_secs(
        std::env::var("BENCH_SEQUENCE_PAUSE_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(35),
    );
    println!(
        "9. sequences of jobs on 2 workers x 1 slot (1 GiB of gensort-shaped lines, 1 GiB of dictionary words, both made outside the testbed; 2 reduces each, every output kept, no sync between jobs): the issue's (3 sorts, then 3 wordcounts), alternating (sort, wordcount, 3 times), then spaced (sort, wordcount, twice, each after {} s idle; the pool trims buffers idle 30 s); on a fresh cluster without and then with {SEQUENCE_PRETOUCH_MB} MB of buffers faulted in per worker (`workers.pretouch_mb`), then with output replication 1 instead of 2",
        pause.as_secs()
    );
    // (pretouch_mb, output replication): the third shows how much of what
    // varies is the output's writes to the disk.
    for (pretouch_mb, output_replication) in
        [(0, 2), (SEQUENCE_PRETOUCH_MB, 2), (SEQUENCE_PRETOUCH_MB, 1)]
    {
        // Each cluster starts with the pool as a fresh process has it.
        let limit = workloads::pool::limit();
        workloads::pool::set_limit(0);
        workloads::pool::set_limit(limit);
        let store = tempfile::tempdir_in(dir.path()).unwrap();
        let t = Instant::now();
        let cl = support::start_cluster_tuned(
            store.path(),
            TOKEN,
            1,
            &[None, None],
            &[common::config::Role::Both; 2],
            100,
            |m| m.replication = output_replication,
            |o| o.pretouch_bytes = pretouch_mb * 1_000_000,
        )
        .await;
        println!(
            "   pretouch_mb = {pretouch_mb}, output replication {output_replication}: workers up in {:.2} s",
            t.elapsed().as_secs_f64()
        );
        for (name, path) in [("seq-lines", &lines_path), ("seq-words", &words_path)] {
            load(&cl, name, Source::File(path.clone()), 64 << 20, 2).await;
        }
        run_sequences(&cl, pause).await;
        drop(cl);
    }
}

/// Buffers each worker faults in for the second cluster of section 9: a
/// 1 GiB sort's working set on 2 workers (each keeps 512 MiB of sorted
/// runs, fetches 256 MiB, and reads blocks and hands on output besides).
const SEQUENCE_PRETOUCH_MB: u64 = 1100;

/// Section 9's sequences on `cl` (see [`sequence_bench`]).
async fn run_sequences(cl: &support::LocalCluster, pause: std::time::Duration) {
    let grouped = [Workload::Sort; 3]
        .into_iter()
        .chain([Workload::Wordcount; 3]);
    let alternating = [Workload::Sort, Workload::Wordcount]
        .into_iter()
        .cycle()
        .take(6);
    let spaced = [Workload::Sort, Workload::Wordcount]
        .into_iter()
        .cycle()
        .take(4);
    let mut times: Vec<(Workload, f64)> = Vec::new();
    let mut outputs = Vec::new();
    for (sequence, jobs, gap) in [
        (
            "3 sorts, 3 wordcounts",
            grouped.collect::<Vec<_>>(),
            std::time::Duration::ZERO,
        ),
        (
            "alternating",
            alternating.collect(),
            std::time::Duration::ZERO,
        ),
        ("spaced", spaced.collect(), pause),
    ] {
        let mut line = Vec::new();
        for workload in jobs {
            tokio::time::sleep(gap).await;
            let input = match workload {
                Workload::Sort => "seq-lines",
                _ => "seq-words",
            };
            let out = format!("{input}-out{}", outputs.len());
            let mut job = JobSubmit::new(workload, input);
            job.reduces = Some(2);
            job.output = Some(out.clone());
            // What the node carries into the job: dirty and in-writeback
            // pages, free pooled buffers.
            let (dirty, pooled) = (dirty_bytes(), workloads::pool::held());
            let cpu = cpu_ticks();
            let t = Instant::now();
            let id = cl.client.submit(&job).await.unwrap();
            let r = cl.client.wait_job(id).await.unwrap();
            assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
            let secs = t.elapsed().as_secs_f64();
            let (busy, steal) = cpu_ticks().since(cpu);
            times.push((workload, secs));
            outputs.push(out);
            let of =
                |k: common::wire::TaskKind| r.attempts.iter().filter(move |a| a.ok && a.kind == k);
            let maps_done = of(common::wire::TaskKind::Map).map(|a| a.end_ms).max();
            let map_ms: Vec<u64> = of(common::wire::TaskKind::Map)
                .map(|a| a.end_ms - a.start_ms)
                .collect();
            let reduce_ms = of(common::wire::TaskKind::Reduce)
                .map(|a| a.end_ms - a.start_ms)
                .max();
            line.push(format!(
                "{workload} {secs:.2} s [maps done {:.2} s, a map {:.2} s on average; longest reduce {:.2} s; CPU busy {:.0}%, stolen {:.1}%; dirty {:.0} MB, pooled {:.0} MB at its start]",
                maps_done.unwrap_or(0) as f64 / 1e3,
                map_ms.iter().sum::<u64>() as f64 / map_ms.len().max(1) as f64 / 1e3,
                reduce_ms.unwrap_or(0) as f64 / 1e3,
                busy * 100.0,
                steal * 100.0,
                dirty as f64 / 1e6,
                pooled as f64 / 1e6
            ));
        }
        println!("     {sequence}:\n       {}", line.join("\n       "));
    }
    for out in &outputs {
        cl.client.delete_file(out).await.unwrap();
    }
    for w in [Workload::Sort, Workload::Wordcount] {
        let ts: Vec<f64> = times
            .iter()
            .filter(|(x, _)| *x == w)
            .map(|(_, t)| *t)
            .collect();
        let (lo, hi) = ts
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), t| (lo.min(*t), hi.max(*t)));
        println!(
            "     {w}: slowest / fastest of {} runs {:.2} (target <= 1.25)",
            ts.len(),
            hi / lo
        );
    }
}

/// The machine's CPU time so far, in clock ticks of all CPUs together
/// (/proc/stat's `cpu` line).
#[derive(Clone, Copy)]
struct CpuTicks {
    total: u64,
    idle: u64,
    steal: u64,
}

impl CpuTicks {
    /// The shares of the CPUs' time since `then` that were busy (neither
    /// idle nor waiting for IO) and stolen by the hypervisor.
    fn since(self, then: CpuTicks) -> (f64, f64) {
        let total = self.total.saturating_sub(then.total).max(1) as f64;
        let idle = self.idle.saturating_sub(then.idle) as f64;
        let steal = self.steal.saturating_sub(then.steal) as f64;
        (1.0 - idle / total - steal / total, steal / total)
    }
}

fn cpu_ticks() -> CpuTicks {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("cpu "))
        .expect("/proc/stat starts with the cpu line")
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice
    // (guest time is also counted in user).
    CpuTicks {
        total: f.iter().take(8).sum(),
        idle: f[3] + f[4],
        steal: f.get(7).copied().unwrap_or(0),
    }
}

/// The machine's dirty and in-writeback page-cache bytes (/proc/meminfo).
fn dirty_bytes() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    info.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == "Dirty" || k == "Writeback")
                .then(|| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .flatten()
        })
        .sum::<u64>()
        * 1024
}

/// Memory each worker holds for the shuffle in section 10: map output kept
/// (`workers.shuffle_memory_mb`) and a sort reduce's fetched runs
/// (`workers.reduce_memory_mb`), each this many MB.
const SCALE_BUDGET_MB: u64 = 256;

/// Section 10: linear cost. Sort (gensort-shaped lines, uniform keys) and
/// wordcount (lines of 10 words from a 74,585-word dictionary), both made
/// outside the testbed, at 1, 4 and 10 GiB (`BENCH_SCALE_GIB=1,4,10`) on 2
/// workers x 1 slot, 64 MiB blocks, 2 reduces, each worker's shuffle
/// memory held to [`SCALE_BUDGET_MB`] for kept map output and as much for
/// each reduce's fetched runs (the rest goes to disk). Replication 2 at
/// every size, or 1 at every size if the disk is short for the largest
/// (it says which). Each size prints the
/// job's time per GiB, the bytes spilled, the process's peak RSS during
/// the job (the master and both workers), and for sort `LC_ALL=C sort -o`
/// on the same file; then, per workload, the time per GiB at the largest
/// size over that at the smallest (target <= 1.2).
async fn linear_cost_bench() {
    use support::lines::{self, Keys};
    let dir = tempfile::tempdir().unwrap();
    let budget = SCALE_BUDGET_MB * 1_000_000;
    let cl = support::start_cluster_with(dir.path(), TOKEN, 1, &[None, None], 100, |o| {
        o.shuffle_memory_bytes = budget;
        o.reduce_memory_bytes = budget;
    })
    .await;
    let sizes: Vec<u64> = std::env::var("BENCH_SCALE_GIB")
        .unwrap_or_else(|_| "1,4,10".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("BENCH_SCALE_GIB: GiB numbers, e.g. 1,4,10")
        })
        .collect();
    println!(
        "10. linear cost: sort and wordcount at {} GiB, 2 workers x 1 slot, 64 MiB blocks, 2 reduces; per worker {SCALE_BUDGET_MB} MB of kept map output and {SCALE_BUDGET_MB} MB of fetched runs per reduce, the rest spilled to disk",
        sizes.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(", ")
    );
    // One replication for every size, so the sizes differ in nothing
    // else: 2 if the largest sort fits, else 1. At its peak the sort holds
    // GNU sort's output, the loaded input, the map output on disk, the
    // spill files and its output: 2 + 2r times the input.
    let largest = sizes.iter().max().copied().unwrap_or(0) << 30;
    let free = free_bytes(dir.path());
    let margin = 4u64 << 30;
    let Some(replication) = [2u64, 1]
        .into_iter()
        .find(|r| free >= (2 + 2 * r) * largest + margin)
    else {
        println!(
            "   skipped: {:.1} GB free on the bench's disk, {:.1} GB needed at replication 1",
            free as f64 / 1e9,
            (4 * largest + margin) as f64 / 1e9
        );
        return;
    };
    let replication = replication as u32;
    println!(
        "   replication {replication} at every size ({:.1} GB free on the bench's disk; replication 2 needs {:.1} GB)",
        free as f64 / 1e9,
        (6 * largest + margin) as f64 / 1e9
    );
    let mut per_gib: Vec<(Workload, u64, f64)> = Vec::new();
    for &gib in &sizes {
        let bytes = gib << 30;
        // Sort: GNU sort first, on the file the cluster then loads.
        let input = dir.path().join(format!("scale-{gib}.lines"));
        lines::write_file(&input, Keys::Uniform, bytes, 31).unwrap();
        let reference = input.with_extension("gnu");
        let theirs = gnu_sort(&input, &reference);
        let name = format!("scale-{gib}-lines");
        load_file(&cl, &name, &input, replication).await;
        let (secs, spilled, peak) =
            timed_job(&cl, Workload::Sort, &name, &format!("{name}-sorted")).await;
        cl.client.delete_file(&name).await.unwrap();
        let same = output_equals(&cl, &format!("{name}-sorted"), &reference).await;
        let _ = std::fs::remove_file(&reference);
        cl.client
            .delete_file(&format!("{name}-sorted"))
            .await
            .unwrap();
        println!(
            "   sort      {gib:>2} GiB: job {secs:.1} s, {:.2} s/GiB; spilled {:.2} GB; peak RSS {:.2} GB; `LC_ALL=C sort -o` {theirs:.1} s, {:.2} s/GiB (ratio {:.2}); output {}",
            secs / gib as f64,
            spilled as f64 / 1e9,
            peak as f64 / 1e9,
            theirs / gib as f64,
            theirs / secs,
            if same { "equal to GNU sort's" } else { "DIFFERS from GNU sort's" }
        );
        assert!(same, "the {gib} GiB sort differs from GNU sort's");
        per_gib.push((Workload::Sort, gib, secs / gib as f64));
        // Wordcount.
        let input = dir.path().join(format!("scale-{gib}.words"));
        let words = lines::write_words_file(&input, bytes, 37).unwrap();
        let name = format!("scale-{gib}-words");
        load_file(&cl, &name, &input, replication).await;
        let out = format!("{name}-counts");
        let (secs, _, peak) = timed_job(&cl, Workload::Wordcount, &name, &out).await;
        let counts = ctl::ops::verify::wordcount_pairs(
            &ctl::ops::files::read_file(&cl.client, &out).await.unwrap(),
        )
        .unwrap();
        let counted: u64 = counts.iter().map(|(_, c)| c).sum();
        cl.client.delete_file(&name).await.unwrap();
        cl.client.delete_file(&out).await.unwrap();
        println!(
            "   wordcount {gib:>2} GiB: job {secs:.1} s, {:.2} s/GiB; peak RSS {:.2} GB; {counted} words counted of {words} written, {} distinct",
            secs / gib as f64,
            peak as f64 / 1e9,
            counts.len()
        );
        assert_eq!(counted, words, "wordcount lost or invented words");
        per_gib.push((Workload::Wordcount, gib, secs / gib as f64));
    }
    for w in [Workload::Sort, Workload::Wordcount] {
        let runs: Vec<&(Workload, u64, f64)> = per_gib.iter().filter(|r| r.0 == w).collect();
        if let (Some(small), Some(large)) = (runs.first(), runs.last()) {
            if small.1 != large.1 {
                println!(
                    "   {w}: time per GiB at {} GiB / at {} GiB = {:.2} (target <= 1.2)",
                    large.1,
                    small.1,
                    large.2 / small.2
                );
            }
        }
    }
}

/// Runs one job of `workload` on `input` (2 reduces) into `output`, from
/// clean disks; returns its seconds, the bytes its reduces spilled, and the
/// process's peak resident memory while it ran.
async fn timed_job(
    cl: &support::LocalCluster,
    workload: Workload,
    input: &str,
    output: &str,
) -> (f64, u64, u64) {
    let spilled = || -> u64 {
        cl.workers
            .iter()
            .map(|w| w.exec.shuffle.reduce_spilled())
            .sum()
    };
    sync_disks();
    let before = spilled();
    // The peak from here on (Linux: 5 resets VmHWM to the current RSS).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let mut job = JobSubmit::new(workload, input);
    job.reduces = Some(2);
    job.output = Some(output.into());
    let t = Instant::now();
    let id = cl.client.submit(&job).await.unwrap();
    let r = cl.client.wait_job(id).await.unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(r.state == common::wire::JobState::Succeeded, "{r:?}");
    (secs, spilled() - before, peak_rss())
}

/// Seconds `LC_ALL=C sort -o reference input` takes, from clean disks.
fn gnu_sort(input: &std::path::Path, reference: &std::path::Path) -> f64 {
    sync_disks();
    let t = Instant::now();
    let st = std::process::Command::new("sort")
        .arg("-o")
        .arg(reference)
        .arg(input)
        .env("LC_ALL", "C")
        .status()
        .unwrap();
    assert!(st.success(), "GNU sort failed");
    t.elapsed().as_secs_f64()
}

/// Loads the file at `path` as `name` in 64 MiB blocks, then deletes the file.
async fn load_file(
    cl: &support::LocalCluster,
    name: &str,
    path: &std::path::Path,
    replication: u32,
) {
    load(cl, name, Source::File(path.into()), 64 << 20, replication).await;
    let _ = std::fs::remove_file(path);
}

/// This process's peak resident memory (VmHWM), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

/// Bytes free for an unprivileged user on the file system holding `path`.
fn free_bytes(path: &std::path::Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(path).unwrap();
    s.blocks_available() as u64 * s.fragment_size() as u64
}

/// Whether a loaded file's blocks, in order (each read from the worker
/// holding its first replica, 8 MiB at a time), are `reference`'s bytes.
async fn output_equals(
    cl: &support::LocalCluster,
    name: &str,
    reference: &std::path::Path,
) -> bool {
    use std::io::Read;
    let f = cl.client.file(name).await.unwrap();
    let mut theirs = std::fs::File::open(reference).unwrap();
    let (mut a, mut b) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    let mut total = 0u64;
    for (i, reps) in f.replicas.iter().enumerate() {
        let w = cl.workers.iter().find(|w| w.name == reps[0]).unwrap();
        let id = BlockId::for_file(name, i as u32).unwrap();
        let mut ours = std::fs::File::open(w.store.data_path(&id)).unwrap();
        loop {
            let n = ours.read(&mut a).unwrap();
            if n == 0 {
                break;
            }
            if theirs.read_exact(&mut b[..n]).is_err() || a[..n] != b[..n] {
                return false;
            }
            total += n as u64;
        }
    }
    total == theirs.metadata().unwrap().len()
}

/// Writes every dirty page of the machine to disk (`sync`).
fn sync_disks() {
    let st = std::process::Command::new("sync").status().unwrap();
    assert!(st.success(), "sync failed");
}

/// Rounds of each side in section 8 (the best of them is compared).
const ROUNDS: usize = 2;

/// Whether two files hold the same bytes (read in 8 MiB pieces).
fn files_equal(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::io::Read;
    let (mut fa, mut fb) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    if fa.metadata().unwrap().len() != fb.metadata().unwrap().len() {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    loop {
        let n = fa.read(&mut ba).unwrap();
        if n == 0 {
            return true;
        }
        fb.read_exact(&mut bb[..n]).unwrap();
        if ba[..n] != bb[..n] {
            return false;
        }
    }
}

fn main() {
    // `cargo bench` passes --bench; nothing to parse. RUST_LOG shows the
    // cluster's logs (e.g. `worker::shuffle=debug` for the reduce phases).
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .init();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `BENCH_ONLY=nic|netns|sink|overhead|mapreduce|gib|default|tiny|lines|sequence|scale` runs one part.
    let only = std::env::var("BENCH_ONLY").ok();
    let run = |part: &str| only.as_deref().is_none_or(|o| o == part);
    rt.block_on(async {
        if run("nic") {
            nic_bench().await;
        }
        if run("netns") {
            nic_netns_bench().await;
        }
        if run("sink") {
            local_sink_bench().await;
        }
        if run("overhead") {
            overhead_bench().await;
        }
        if run("mapreduce") {
            mapreduce_bench().await;
        }
        if run("gib") {
            gib_bench().await;
        }
        if run("default") {
            default_cluster_sort_bench().await;
        }
        if run("tiny") {
            tiny_tasks_bench().await;
        }
        if run("lines") {
            anyones_records_bench().await;
        }
        if run("sequence") {
            sequence_bench().await;
        }
        if run("scale") {
            linear_cost_bench().await;
        }
    });
}
