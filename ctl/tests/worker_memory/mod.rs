//! The memory a worker process takes for itself: the buffers it faults
//! in at start (`workers.pretouch_mb`) and the blocks it keeps mapped and
//! locked (`workers.block_cache_mb`); and the job output it leaves to
//! its writeback thread (`workers.sync_output`).

use super::*;

/// The value of `metric` for worker `name` in its OpenMetrics text `wm`.
fn metric(wm: &str, metric: &str, name: &str) -> f64 {
    let key = format!("{metric}{{worker=\"{name}\"}} ");
    let line = wm.lines().find(|l| l.starts_with(&key));
    line.and_then(|l| l[key.len()..].trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {wm}"))
}

/// Worker `url`'s metrics.
async fn scrape(client: &MasterClient, url: &str) -> String {
    let resp = client
        .http()
        .get(format!("{url}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

/// A field of /proc/<pid>/status in kB (`VmRSS:`, `VmLck:`).
fn status_kb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// A worker given `workers.<key>` past the machine's available memory
/// stops at start with an error naming the key.
fn refused_past_available(key: &str) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 2, "", &format!("{key} = 1000000000"));
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let out = Command::new(bin.join("worker"))
        .arg("--config")
        .arg(&cfg.path)
        .args(["--name", "w1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("workers.{key} = 1000000000 is more than"))
            && err.contains("MB of memory available"),
        "{err}"
    );
}

/// `workers.block_cache_mb` on worker processes: the blocks a load stores
/// on a worker are mapped and locked there (the process's own `VmLck`
/// says so, beside its metrics), and let go as soon as their file is
/// deleted. A value past the machine's available memory stops the worker
/// with an error naming the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_block_cache_locks_a_workers_blocks_and_lets_go_of_deleted_ones() {
    const HELD: f64 = 3_000_000.0;
    let c = start(2, "block_cache_mb = 8").await;
    // Three 1 MB blocks at replication 2 on two workers: all three on each.
    load(&c.client, "recs", Generator::Records, 3, 1_000_000, 5).await;
    let procs = pids(&c.cfg);
    let root = unsafe { libc::geteuid() } == 0;
    let cached = |wm: &str, name: &str| {
        (
            metric(wm, "mrtb_worker_block_cache_held_bytes", name),
            metric(wm, "mrtb_worker_block_cache_locked_bytes", name),
        )
    };
    for w in &c.cfg.worker {
        let url = format!("http://{}", w.listen);
        let deadline = Instant::now() + Duration::from_secs(10);
        let wm = loop {
            let wm = scrape(&c.client, &url).await;
            if cached(&wm, &w.name).0 >= HELD || Instant::now() > deadline {
                break wm;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let (held, locked) = cached(&wm, &w.name);
        assert_eq!(held, HELD, "{}: {wm}", w.name);
        assert_eq!(
            metric(&wm, "mrtb_worker_block_cache_budget_bytes", &w.name),
            8e6
        );
        let pid = procs.iter().find(|(n, _)| *n == w.name).unwrap().1;
        if root {
            // Root may lock: every block held is locked, in the process.
            assert_eq!(locked, HELD, "{}: {wm}", w.name);
            assert!(status_kb(pid, "VmLck:") * 1024.0 >= HELD, "{}", w.name);
        }
    }
    files::remove(&c.client, "recs", Duration::from_secs(10))
        .await
        .unwrap();
    for w in &c.cfg.worker {
        let wm = scrape(&c.client, &format!("http://{}", w.listen)).await;
        assert_eq!(cached(&wm, &w.name), (0.0, 0.0), "{}: {wm}", w.name);
        let pid = procs.iter().find(|(n, _)| *n == w.name).unwrap().1;
        assert!(status_kb(pid, "VmLck:") * 1024.0 < HELD, "{}", w.name);
    }
    drop(c);

    refused_past_available("block_cache_mb");
}

/// `workers.pretouch_mb` on worker processes: each faults its buffers in
/// before it registers (resident from the start, shown as free pooled
/// bytes), a job takes and returns them, and they are still kept after it.
/// `"auto"` faults in each worker's share of the machine. A value past the
/// machine's available memory stops the worker at start with an error
/// naming the key, instead of ending in the OOM killer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pretouched_buffers_are_resident_from_the_start_and_kept() {
    // 150 MB: three 64 MiB buffers.
    const KEPT: f64 = (3u64 << 26) as f64;
    let c = start(2, "pretouch_mb = 150").await;
    let free = |wm: &str, name: &str| metric(wm, "mrtb_worker_buffer_pool_free_bytes", name);
    let procs = pids(&c.cfg);
    for w in &c.cfg.worker {
        let wm = scrape(&c.client, &format!("http://{}", w.listen)).await;
        assert_eq!(free(&wm, &w.name), KEPT, "{}", w.name);
        let pid = procs.iter().find(|(n, _)| *n == w.name).unwrap().1;
        let rss_kb = status_kb(pid, "VmRSS:");
        assert!(
            rss_kb * 1024.0 >= KEPT,
            "{}: resident {rss_kb} kB, less than the buffers faulted in",
            w.name
        );
    }
    // A sort's 2 MB blocks take pooled buffers and give them back.
    load(&c.client, "recs", Generator::Records, 4, 2_000_000, 3).await;
    let mut job = JobSubmit::new(Workload::Sort, "recs");
    job.reduces = Some(2);
    let id = c.client.submit(&job).await.unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    for w in &c.cfg.worker {
        let wm = scrape(&c.client, &format!("http://{}", w.listen)).await;
        assert!(free(&wm, &w.name) >= KEPT, "{}: {wm}", w.name);
    }
    drop(c);

    // "auto", the default but for scratch clusters: each of the two
    // workers sharing this machine faults in up to 1 GiB, in whole 64 MiB
    // buffers, and no less than its share of what is available now.
    let c = start(2, "pretouch_mb = \"auto\"").await;
    let floor =
        common::config::MbOrAuto::Auto.pretouch_bytes(common::config::available_memory(), 2);
    for w in &c.cfg.worker {
        let got = free(
            &scrape(&c.client, &format!("http://{}", w.listen)).await,
            &w.name,
        );
        assert!(
            got > 0.0
                && got >= floor as f64
                && got <= (1u64 << 30) as f64
                && got % (1u64 << 26) as f64 == 0.0,
            "{}: {got} bytes faulted in, at least {floor} expected",
            w.name
        );
    }
    drop(c);

    refused_past_available("pretouch_mb");
}

/// `workers.sync_output` on worker processes: at the default (`false`)
/// every output block of a job, the reducer's and its replica, is
/// committed with its writes in flight and finished by the worker's
/// writeback thread; with `true` each is synced before and none is left to
/// it. (On a tmpfs, which refuses O_DIRECT, output is always synced.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_output_is_written_back_after_its_task_unless_synced() {
    let tmp = tempfile::tempdir().unwrap();
    let tmpfs = nix::sys::statfs::statfs(tmp.path())
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
    let deferred = if tmpfs { 0.0 } else { 4.0 };
    for (settings, want) in [("", deferred), ("sync_output = true", 0.0)] {
        let c = start(2, settings).await;
        load(&c.client, "recs", Generator::Records, 4, 2_000_000, 3).await;
        let mut job = JobSubmit::new(Workload::Sort, "recs");
        job.reduces = Some(2);
        job.output_replication = Some(2);
        let id = c.client.submit(&job).await.unwrap();
        let r = c.client.wait_job(id).await.unwrap();
        assert_eq!(r.state, JobState::Succeeded, "{r:?}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let (written, pending) = loop {
            let (mut written, mut pending) = (0.0, 0.0);
            for w in &c.cfg.worker {
                let wm = scrape(&c.client, &format!("http://{}", w.listen)).await;
                let m = |k: &str| metric(&wm, k, &w.name);
                written += m("mrtb_worker_output_written_back_blocks_total");
                pending += m("mrtb_worker_output_writeback_pending_bytes");
                assert_eq!(m("mrtb_worker_output_writeback_errors_total"), 0.0);
            }
            if written >= want || Instant::now() > deadline {
                break (written, pending);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!((written, pending), (want, 0.0), "{settings:?}");
        drop(c);
    }
}
