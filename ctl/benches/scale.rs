//! `make bench`, the master at scale: a real `master serve` process and
//! 1,000 emulated workers in this process, each registering with a block
//! report and then heartbeating every 100 ms over real HTTP, against 100,000
//! pending map tasks in 100 input-sink jobs (their files' replication
//! declared, as the loader does). An emulated worker has 2 slots, sends its
//! block report with one heartbeat in a hundred (as a worker whose store changed
//! does), and "runs" each launch for 1 s, then reports it done. Prints heartbeats
//! handled per second (against the 10,000 asked for), the master's CPU share
//! (from /proc), the p50 and p99 heartbeat latency seen by the workers, and
//! the master's own share of it (its `heartbeat_handling` histogram): the
//! workers here share the master's two cores, so what they see also holds
//! the time the master's threads wait for a core.
//! `SCALE_WORKERS=`, `SCALE_HEARTBEAT_MS=` and `SCALE_SECONDS=` change the
//! size, the interval and the length: `make bench` also runs 10,000 workers
//! every 3 s (Hadoop 1.x's interval at that size, about 3,300 heartbeats/s),
//! where registration must take under 30 s.

use common::wire::{
    AttemptProgress, BlockInfo, Heartbeat, HeartbeatReply, JobSubmit, RegisterReply,
    RegisterRequest, TaskOutcome, TaskResult,
};
use common::{AttemptId, BlockId, WorkerId};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use workloads::{MapSummary, Workload};

const TOKEN: &str = "scale-bench";
const JOBS: usize = 100;
const BLOCKS_PER_JOB: u32 = 1000;
const REPLICATION: usize = 3;
const SLOTS: u32 = 2;
const TASK: Duration = Duration::from_secs(1);
const BLOCK_LEN: u64 = 64 << 20;
/// One heartbeat in this many carries the worker's block report.
const REPORT_EVERY: usize = 100;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system) process `pid` has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime), counted from the state (3rd).
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

struct Stats {
    latencies_us: Vec<u64>,
    beats: u64,
    launches: u64,
    errors: u64,
}

fn main() {
    let workers = env_or("SCALE_WORKERS", 1000);
    let seconds = env_or("SCALE_SECONDS", 10) as u64;
    let heartbeat_ms = env_or("SCALE_HEARTBEAT_MS", 100) as u64;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Workers' addresses are names only: nobody dials them here. The
    // emulated workers heartbeat only once all are registered, so the
    // timeout outlasts registering them all (10,000 took 24.6 s, then more
    // than 30 s on a slower afternoon, and the first were declared lost).
    let timeout_ms = (heartbeat_ms * 10).max(120_000);
    let mut cfg = format!(
        "[cluster]\ntoken = \"{TOKEN}\"\nreplication = {REPLICATION}\nheartbeat_ms = {heartbeat_ms}\n\
         worker_timeout_ms = {timeout_ms}\n[master]\nlisten = \"127.0.0.1:{port}\"\n[workers]\nslots = {SLOTS}\n"
    );
    for i in 0..workers {
        cfg += &format!(
            "[[worker]]\nname = \"w{i}\"\nlisten = \"127.0.0.2:{}\"\n",
            10_000 + i
        );
    }
    let path = dir.path().join("cluster.toml");
    std::fs::write(&path, cfg).unwrap();
    let mut master = std::process::Command::new(env!("CARGO_BIN_EXE_master"))
        .arg("--config")
        .arg(&path)
        .arg("serve")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = master.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let result = rt.block_on(run(&base, workers, heartbeat_ms, seconds, pid));
    let _ = master.kill();
    let _ = master.wait();
    result.unwrap();
}

async fn run(
    base: &str,
    workers: usize,
    heartbeat_ms: u64,
    seconds: u64,
    pid: u32,
) -> anyhow::Result<()> {
    let http = common::http_client::builder(None)
        .pool_max_idle_per_host(workers)
        .build()?;
    // Wait for the master.
    let deadline = Instant::now() + Duration::from_secs(20);
    while http
        .get(format!("{base}/v1/openapi.json"))
        .send()
        .await
        .is_err()
    {
        anyhow::ensure!(Instant::now() < deadline, "the master did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Block reports: block i of file j on REPLICATION consecutive workers.
    let mut held: Vec<Vec<BlockInfo>> = vec![Vec::new(); workers];
    for j in 0..JOBS {
        let file = format!("f{j}");
        for i in 0..BLOCKS_PER_JOB {
            let first = (j * 7919 + i as usize * REPLICATION) % workers;
            for k in 0..REPLICATION {
                held[(first + k) % workers].push(BlockInfo {
                    id: BlockId::for_file(&file, i)?,
                    file: file.clone(),
                    index: i,
                    file_blocks: BLOCKS_PER_JOB,
                    len: BLOCK_LEN,
                    generation: 0,
                });
            }
        }
    }
    let t_reg = Instant::now();
    let ids = register_all(&http, base, &held).await?;
    let registered = t_reg.elapsed().as_secs_f64();
    // Each file's factor declared, as the loader does: the master then
    // keeps every block at it, checking them every interval.
    for j in 0..JOBS {
        http.put(format!("{base}/v1/files/f{j}/replication"))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({ "replication": REPLICATION }))
            .send()
            .await?
            .error_for_status()?;
    }
    for j in 0..JOBS {
        http.post(format!("{base}/v1/jobs"))
            .bearer_auth(TOKEN)
            .json(&JobSubmit::new(Workload::InputSink, format!("f{j}")))
            .send()
            .await?
            .error_for_status()?;
    }
    let stats = Arc::new(Mutex::new(Stats {
        latencies_us: Vec::new(),
        beats: 0,
        launches: 0,
        errors: 0,
    }));
    let measuring = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let settle = Duration::from_millis(heartbeat_ms.max(2000));
    let stop = Instant::now() + settle + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for (i, id) in ids.into_iter().enumerate() {
        let (http, base, stats, measuring, blocks) = (
            http.clone(),
            base.to_owned(),
            stats.clone(),
            measuring.clone(),
            held[i].clone(),
        );
        tasks.push(tokio::spawn(async move {
            emulated_worker(
                i,
                id,
                workers,
                heartbeat_ms,
                http,
                base,
                stats,
                measuring,
                stop,
                blocks,
            )
            .await
        }));
    }
    // One interval (at least 2 s) to settle, then the measured window.
    tokio::time::sleep(settle).await;
    {
        let mut s = stats.lock().unwrap();
        s.latencies_us.clear();
        (s.beats, s.launches, s.errors) = (0, 0, 0);
    }
    measuring.store(true, std::sync::atomic::Ordering::SeqCst);
    let (cpu0, own0) = (cpu_seconds(pid), cpu_seconds(std::process::id()));
    let handled0 = handling_histogram(&http, base).await?;
    let t0 = Instant::now();
    for t in tasks {
        t.await?;
    }
    let wall = t0.elapsed().as_secs_f64();
    let (cpu, own) = (
        cpu_seconds(pid) - cpu0,
        cpu_seconds(std::process::id()) - own0,
    );
    let handled = handling_histogram(&http, base).await?;
    // Every worker registers again, as after a restart, with the jobs'
    // maps pending: each report must cost its own blocks, not the catalog's
    // or the backlog's.
    let pending = cluster_pending(&http, base).await?;
    let t_again = Instant::now();
    register_all(&http, base, &held).await?;
    let again = t_again.elapsed().as_secs_f64();
    let mut s = stats.lock().unwrap();
    s.latencies_us.sort_unstable();
    let pct = |p: f64| percentile_ms(&s.latencies_us, p);
    let asked = workers as f64 * 1000.0 / heartbeat_ms as f64;
    report(&Measured {
        workers,
        heartbeat_ms,
        registered,
        again,
        pending,
        wall,
        asked,
        beats: s.beats as f64,
        launches: s.launches as f64,
        cpu,
        own,
        p50: pct(50.0),
        p99: pct(99.0),
        master_p50: bucket_quantile(&handled0, &handled, 0.50),
        master_p99: bucket_quantile(&handled0, &handled, 0.99),
        errors: s.errors as f64,
    });
    Ok(())
}

/// Registers worker i with block report `held[i]`, one after another:
/// their ids.
async fn register_all(
    http: &reqwest::Client,
    base: &str,
    held: &[Vec<BlockInfo>],
) -> anyhow::Result<Vec<WorkerId>> {
    let mut ids = Vec::with_capacity(held.len());
    for (i, blocks) in held.iter().enumerate() {
        let r: RegisterReply = http
            .post(format!("{base}/v1/workers/register"))
            .bearer_auth(TOKEN)
            .json(&RegisterRequest {
                name: format!("w{i}"),
                addr: format!("http://127.0.0.2:{}", 10_000 + i),
                slots: SLOTS,
                protocol: common::wire::PROTOCOL,
                blocks: blocks.clone(),
                out_of_band_heartbeat: false,
                running: Vec::new(),
                map_outputs: Vec::new(),
            })
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        ids.push(r.worker);
    }
    Ok(ids)
}

/// Percentile `p` of sorted latencies in microseconds, in ms.
fn percentile_ms(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return f64::NAN;
    }
    sorted_us[((p / 100.0) * (sorted_us.len() - 1) as f64).round() as usize] as f64 / 1000.0
}

/// The master's own histogram of its time on one heartbeat, the wait for
/// its state's lock included (`mrtb_heartbeat_handling_seconds` on
/// `/metrics`): each bucket's upper bound in seconds and the heartbeats at
/// or under it so far. What the workers see besides is the HTTP stack and
/// the time the master's threads wait for a core.
async fn handling_histogram(http: &reqwest::Client, base: &str) -> anyhow::Result<Vec<(f64, u64)>> {
    let text = get_ok(http, &format!("{base}/metrics"))
        .await?
        .text()
        .await?;
    let prefix = "mrtb_heartbeat_handling_seconds_bucket{le=\"";
    let buckets: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|rest| {
            let (le, count) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, count.trim().parse().ok()?))
        })
        .collect();
    anyhow::ensure!(
        !buckets.is_empty(),
        "no {prefix}...}} lines in the master's /metrics"
    );
    Ok(buckets)
}

/// The upper bound, in ms, of the bucket holding quantile `q` of the
/// heartbeats counted between two scrapes of the histogram.
fn bucket_quantile(before: &[(f64, u64)], after: &[(f64, u64)], q: f64) -> f64 {
    let counts: Vec<(f64, u64)> = after
        .iter()
        .map(|&(le, n)| {
            let was = before.iter().find(|b| b.0 == le).map_or(0, |b| b.1);
            (le, n.saturating_sub(was))
        })
        .collect();
    let total = counts.last().map_or(0, |c| c.1);
    let rank = (q * total as f64).ceil() as u64;
    counts
        .iter()
        .find(|c| c.1 >= rank.max(1))
        .map_or(f64::NAN, |c| c.0 * 1000.0)
}

/// The tasks pending at the master now.
async fn cluster_pending(http: &reqwest::Client, base: &str) -> anyhow::Result<usize> {
    let c: common::wire::ClusterSummary = get_ok(http, &format!("{base}/v1/cluster"))
        .await?
        .json()
        .await?;
    Ok(c.pending_tasks)
}

/// A GET of `url` with the bench's token, failed unless its status is a
/// success.
async fn get_ok(http: &reqwest::Client, url: &str) -> anyhow::Result<reqwest::Response> {
    Ok(http
        .get(url)
        .bearer_auth(TOKEN)
        .send()
        .await?
        .error_for_status()?)
}

/// What one scale run measured.
struct Measured {
    workers: usize,
    heartbeat_ms: u64,
    registered: f64,
    /// Every worker registering again afterwards, with `pending` maps
    /// waiting.
    again: f64,
    pending: usize,
    wall: f64,
    asked: f64,
    beats: f64,
    launches: f64,
    cpu: f64,
    /// This process's CPU seconds (the emulated workers) in the window.
    own: f64,
    p50: f64,
    p99: f64,
    /// The master's own time on a heartbeat (`handling_histogram`): the
    /// upper bounds of the buckets holding its p50 and p99.
    master_p50: f64,
    master_p99: f64,
    errors: f64,
}

/// Prints a scale run's figures and records them for the results folder.
fn report(m: &Measured) {
    let (workers, heartbeat_ms, wall) = (m.workers, m.heartbeat_ms, m.wall);
    println!(
        "scale. master with {workers} emulated workers (one process, real HTTP, heartbeat {heartbeat_ms} ms), {} pending maps in {JOBS} jobs: \
         registration with block reports {:.1} s (target < 30 s); over {wall:.1} s: {:.0} heartbeats/s handled ({:.2} of the {:.0} asked), \
         {:.0} launches/s, master CPU {:.2} cores (the emulated workers {:.2}), heartbeat latency p50 {:.2} ms, p99 {:.2} ms (target p99 <= 5 ms, CPU < 1 core), of which the master's own time \
         (its histogram's buckets) p50 <= {:.2} ms, p99 <= {:.2} ms, {} errors; \
         every worker registering again with {} maps pending {:.1} s (target < 30 s)",
        JOBS as u32 * BLOCKS_PER_JOB,
        m.registered,
        m.beats / wall,
        m.beats / wall / m.asked,
        m.asked,
        m.launches / wall,
        m.cpu / wall,
        m.own / wall,
        m.p50,
        m.p99,
        m.master_p50,
        m.master_p99,
        m.errors,
        m.pending,
        m.again
    );
    let id = format!("scale.{workers}w");
    let what =
        format!("the master with {workers} emulated workers heartbeating every {heartbeat_ms} ms");
    for (name, said, value, unit, target) in [
        (
            "handled",
            "heartbeats handled / asked",
            m.beats / wall / m.asked,
            "x",
            ">= 0.99",
        ),
        (
            "cpu_cores",
            "master CPU, cores",
            m.cpu / wall,
            "cores",
            "<= 1",
        ),
        (
            "emulator_cpu_cores",
            "the emulated workers' CPU (this process, on the master's cores), cores",
            m.own / wall,
            "cores",
            "",
        ),
        ("p50_ms", "heartbeat latency p50, ms", m.p50, "ms", ""),
        ("p99_ms", "heartbeat latency p99, ms", m.p99, "ms", "<= 5"),
        (
            "master_p50_ms",
            "the master's own time on a heartbeat (its lock's wait included), p50, ms: the upper bound of its histogram's bucket",
            m.master_p50,
            "ms",
            "",
        ),
        (
            "master_p99_ms",
            "the master's own time on a heartbeat (its lock's wait included), p99, ms: the upper bound of its histogram's bucket",
            m.master_p99,
            "ms",
            "",
        ),
        (
            "register_s",
            "registration with block reports",
            m.registered,
            "s",
            "<= 30",
        ),
        ("errors", "errors", m.errors, "", "<= 0"),
        (
            "reregister_s",
            "every worker registering again, one after another, with the jobs' maps pending",
            m.again,
            "s",
            "<= 30",
        ),
    ] {
        common::bench::record(
            &format!("{id}.{name}"),
            &format!("{what}: {said}"),
            value,
            unit,
            target,
        );
    }
}

#[allow(clippy::too_many_arguments)]
async fn emulated_worker(
    i: usize,
    id: WorkerId,
    workers: usize,
    heartbeat_ms: u64,
    http: reqwest::Client,
    base: String,
    stats: Arc<Mutex<Stats>>,
    measuring: Arc<std::sync::atomic::AtomicBool>,
    stop: Instant,
    blocks: Vec<BlockInfo>,
) {
    let mut beat = i;
    // Spread the workers' phases over the interval, as real ones drift.
    tokio::time::sleep(Duration::from_micros(
        (i as u64 * heartbeat_ms * 1000) / workers as u64,
    ))
    .await;
    let mut tick = tokio::time::interval(Duration::from_millis(heartbeat_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut running: Vec<(AttemptId, Instant, u64)> = Vec::new();
    let mut pending_results: Vec<TaskResult> = Vec::new();
    while Instant::now() < stop {
        tick.tick().await;
        let now = Instant::now();
        let unix = common::unix_ms();
        running.retain(|(a, end, started)| {
            if *end <= now {
                pending_results.push(TaskResult {
                    attempt: *a,
                    slot: 0,
                    outcome: TaskOutcome::Succeeded {
                        summary: MapSummary {
                            input_bytes: BLOCK_LEN,
                            records: 1,
                            output_bytes: 0,
                            sample: Vec::new(),
                        },
                    },
                    started_unix_ms: *started,
                    finished_unix_ms: unix,
                    local_bytes: BLOCK_LEN,
                    remote_bytes: 0,
                });
                false
            } else {
                true
            }
        });
        let hb = Heartbeat {
            worker: id,
            free_slots: SLOTS.saturating_sub(running.len() as u32),
            running: running.iter().map(|r| r.0).collect(),
            // Every REPORT_EVERY-th heartbeat carries the worker's block
            // report, as one whose store changed (a reduce's output, a
            // copy that landed) does.
            blocks: beat.is_multiple_of(REPORT_EVERY).then(|| blocks.clone()),
            results: std::mem::take(&mut pending_results),
            busy: Vec::new(),
            disk_free_bytes: None,
            progress: running
                .iter()
                .enumerate()
                .map(|(s, r)| AttemptProgress {
                    attempt: r.0,
                    units: now.saturating_duration_since(r.1 - TASK).as_millis() as u64,
                    slot: s as u32,
                    done_ppm: None,
                })
                .collect(),
            nic_rx_bytes: 0,
            nic_tx_bytes: 0,
            incarnation: 0,
            copies_failed: Vec::new(),
        };
        beat += 1;
        // The body is made before the clock starts: the latency is the
        // master's answer, not this emulator's encoding of a block report.
        let body = serde_json::to_vec(&hb).expect("a heartbeat encodes");
        let t0 = Instant::now();
        let reply = http
            .post(format!("{base}/v1/workers/heartbeat"))
            .bearer_auth(TOKEN)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        let reply: Option<HeartbeatReply> = match reply {
            Ok(r) if r.status().is_success() => r.json().await.ok(),
            _ => None,
        };
        let us = t0.elapsed().as_micros() as u64;
        let measured = measuring.load(std::sync::atomic::Ordering::Relaxed);
        match reply {
            Some(reply) => {
                for l in &reply.launches {
                    running.push((l.attempt, Instant::now() + TASK, unix));
                }
                if measured {
                    let mut s = stats.lock().unwrap();
                    s.latencies_us.push(us);
                    s.beats += 1;
                    s.launches += reply.launches.len() as u64;
                }
            }
            None => {
                pending_results.extend(hb.results);
                if measured {
                    stats.lock().unwrap().errors += 1;
                }
            }
        }
    }
}
