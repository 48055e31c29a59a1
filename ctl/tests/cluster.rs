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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_sink_jobs_over_replicated_data() {
    let c = cluster(3, 2, None).await;
    load(&c, "data", 12, 300_000, 2).await;
    let f = c.client.file("data").await.unwrap();
    assert!(f.complete);
    assert!(f.replicas.iter().all(|r| r.len() == 2 && r[0] != r[1]));
    let id = c
        .client
        .submit(&JobSubmit {
            workload: Workload::InputSink,
            input: "data".into(),
            name: None,
            group: None,
            reduces: None,
            output: None,
            compute: None,
            deadline_s: None,
            budget: None,
        })
        .await
        .unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    assert_eq!(r.tasks, 12);
    assert_eq!(r.tasks_done, 12);
    assert_eq!(r.data_local + r.data_remote, 12);
    assert_eq!(r.bytes_local + r.bytes_remote, 12 * 300_000);
    let successes: Vec<_> = r.attempts.iter().filter(|a| a.ok).collect();
    assert_eq!(successes.len(), 12);
    for a in &successes {
        assert_eq!(a.input_bytes, 300_000);
        let remote = a.locality == common::wire::Locality::DataRemote;
        assert_eq!(a.remote_bytes, if remote { 300_000 } else { 0 });
        assert_eq!(remote, a.worker != a.source);
        // The source really holds the block.
        assert!(f.replicas[a.task as usize].contains(&a.source));
    }
    assert_eq!(r.bytes_remote, r.data_remote as u64 * 300_000);
    assert!(r.jct_ms.is_some());
}

/// Flips one byte of the only replica of `file`'s block 0; returns its holder.
/// With out-of-band heartbeats, a job's tasks start when it arrives: the
/// master asks idle workers to heartbeat now (`POST /v1/heartbeat-now`)
/// rather than leaving the tasks until their next interval, here 60 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_job_starts_without_waiting_for_the_heartbeat_interval() {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 2, &[None, None], 60_000).await;
    loader::load(
        &c.client,
        &LoadSpec {
            name: "data".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 8,
            },
            block_size: 10_000,
            replication: 1,
            seed: 11,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    // The stored blocks made each worker heartbeat once (a block report);
    // the next interval is a minute away.
    for _ in 0..2 {
        let id = c
            .client
            .submit(&JobSubmit::new(Workload::InputSink, "data"))
            .await
            .unwrap();
        let r = tokio::time::timeout(std::time::Duration::from_secs(30), c.client.wait_job(id))
            .await
            .expect("the job ended long before a heartbeat interval")
            .unwrap();
        assert_eq!(r.state, JobState::Succeeded, "{r:?}");
        assert_eq!(r.attempts.len(), 8);
        let first = r.attempts.iter().map(|a| a.start_ms).min().unwrap();
        assert!(
            first < 5_000,
            "the first task started {first} ms after submission"
        );
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_chunk_is_detected_and_never_served() {
    let c = cluster(3, 1, None).await;
    // Replication 1: the corrupt replica is the only one.
    load(&c, "bad", 1, 2_500_000, 1).await;
    let holder = corrupt_only_replica(&c, "bad");
    let id = common::BlockId::for_file("bad", 0).unwrap();
    // Served: the download breaks off instead of passing bad data on, and
    // the holder deletes the replica its checksums condemn.
    let got = c
        .client
        .http()
        .get(format!("{}/blocks/{id}", holder.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    assert!(got.is_err() || got.unwrap().len() < 2_500_000);
    assert!(
        holder.store.get(&id).is_err(),
        "the damaged replica is gone"
    );
    assert!(!holder.store.data_path(&id).exists());
    // Its block report drops it: the file is incomplete, and a job on it is
    // refused naming the block.
    let mut complete = true;
    for _ in 0..100 {
        complete = c.client.file("bad").await.unwrap().complete;
        if !complete {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!complete);
    let e = c
        .client
        .submit(&JobSubmit::new(Workload::InputSink, "bad"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("409") && e.contains("[0]"), "{e}");

    // Read by a job (the only replica, so nowhere else to read from): the
    // attempt fails naming the block and the offset, the replica is
    // dropped, and the job fails (for want of a live replica, or, if a retry
    // beats the block report, because the retry finds the block gone).
    load(&c, "bad2", 1, 2_500_000, 1).await;
    let holder2 = corrupt_only_replica(&c, "bad2");
    let job = c
        .client
        .submit(&JobSubmit::new(Workload::InputSink, "bad2"))
        .await
        .unwrap();
    let r = c.client.wait_job(job).await.unwrap();
    assert_eq!(r.state, JobState::Failed);
    let attempt_err = r.attempts[0].error.clone().unwrap();
    assert!(
        attempt_err.contains("bad2.b00000") && attempt_err.contains("1048576"),
        "{attempt_err}"
    );
    let err = r.error.unwrap();
    assert!(err.contains("bad2.b00000"), "{err}");
    let id2 = common::BlockId::for_file("bad2", 0).unwrap();
    assert!(
        holder2.store.get(&id2).is_err(),
        "the damaged replica is gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_errors() {
    let c = cluster(3, 1, None).await;
    load(&c, "ok", 2, 1000, 2).await;
    let http = c.client.http();
    let master = c._master.url();
    let w = c.workers[0].url();
    // No or wrong token: 401 everywhere, master and worker.
    for url in [
        format!("{master}/v1/jobs"),
        format!("{master}/v1/workers"),
        format!("{master}/v1/files"),
        format!("{w}/blocks"),
        format!("{w}/status"),
        format!("{w}/blocks/ok.b00000"),
    ] {
        assert_eq!(http.get(&url).send().await.unwrap().status(), 401, "{url}");
        assert_eq!(
            http.get(&url)
                .bearer_auth("nope")
                .send()
                .await
                .unwrap()
                .status(),
            401,
            "{url}"
        );
    }
    let r = http
        .post(format!("{master}/v1/jobs"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Unknown workload / unknown file: 4xx with a JSON error.
    let r = http
        .post(format!("{master}/v1/jobs"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"workload": "grep", "input": "ok"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_client_error());
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("grep"), "{body}");
    let r = http
        .post(format!("{master}/v1/jobs"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"workload": "input-sink", "input": "missing"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("missing"),
        "{body}"
    );
    // Malformed block ids: 400.
    for bad in ["..%2Fx", "", &"a".repeat(200)] {
        let r = http
            .get(format!("{w}/blocks/{bad}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{bad:?}");
    }
    // A count no file can have is refused before anything is allocated.
    let r = http
        .put(format!("{w}/blocks/huge.b00000"))
        .bearer_auth(TOKEN)
        .header("x-block-digest", "00".repeat(32))
        .header("x-block-file", "huge")
        .header("x-block-index", "0")
        .header("x-block-file-blocks", "4294967295")
        .body(vec![7u8; 10])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e = r.text().await.unwrap();
    assert!(
        e.contains("x-block-file-blocks") && e.contains("1000000"),
        "{e}"
    );
    // A caching mode it does not know is named, not ignored.
    let r = http
        .put(format!("{w}/blocks/cached.b00000"))
        .bearer_auth(TOKEN)
        .header("x-block-digest", "00".repeat(32))
        .header("x-block-file", "cached")
        .header("x-block-index", "0")
        .header("x-block-file-blocks", "1")
        .header("x-block-cache", "drop")
        .body(vec![7u8; 10])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    let e = body["error"].as_str().unwrap();
    assert!(
        e.contains("x-block-cache") && e.contains("drop-behind") && e.contains("\"drop\""),
        "{e}"
    );
    // An upload whose digest does not match is rejected and leaves nothing.
    let before = c.workers[0].store.list().len();
    let r = http
        .put(format!("{w}/blocks/new.b00000"))
        .bearer_auth(TOKEN)
        .header("x-block-digest", "00".repeat(32))
        .header("x-block-file", "new")
        .header("x-block-index", "0")
        .header("x-block-file-blocks", "1")
        .body(vec![7u8; 5000])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(c.workers[0].store.list().len(), before);
    let dir = c._dir.path().join("w0");
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
    assert!(!dir.join("blocks/new.b00000.blk").exists());
}

/// A reduce streams its output to the replica workers while producing it,
/// so the block's digest comes after the data, as a chunked-encoding
/// trailer: checked like the header, and an upload without it keeps
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_may_send_their_digest_as_a_trailer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let c = cluster(1, 1, None).await;
    let addr = c.workers[0].addr;
    let data: Vec<u8> = (0..(1u32 << 20) + 4321)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let digest = common::checksum::BlockChecksums::of(&data).block_digest_hex();
    // Sends `data` chunked (in 3 chunks), then `trailer` (if any), and
    // returns the response's status and body.
    let put = |name: &'static str, announce: bool, trailer: Option<String>| {
        let data = data.clone();
        async move {
            let id = common::BlockId::for_file(name, 0).unwrap();
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut head = format!(
                "PUT /blocks/{id} HTTP/1.1\r\nHost: w0\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Connection: close\r\nTransfer-Encoding: chunked\r\n\
                 {}: {name}\r\n{}: 0\r\n{}: 1\r\n{}: drop-behind\r\n",
                common::wire::BLOCK_FILE_HEADER,
                common::wire::BLOCK_INDEX_HEADER,
                common::wire::BLOCK_FILE_BLOCKS_HEADER,
                common::wire::BLOCK_CACHE_HEADER,
            );
            if announce {
                head += &format!("Trailer: {}\r\n", common::wire::BLOCK_DIGEST_HEADER);
            }
            head += "\r\n";
            s.write_all(head.as_bytes()).await.unwrap();
            // Without an announced trailer or the header, the worker
            // answers on the headers alone, before any body: no body is
            // sent then, so none is left unread (a close would then reset
            // the connection and could lose the answer).
            if announce {
                let mut body = Vec::new();
                for part in data.chunks(400_000) {
                    body.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
                    body.extend_from_slice(part);
                    body.extend_from_slice(b"\r\n");
                }
                body.extend_from_slice(b"0\r\n");
                if let Some(t) = trailer {
                    body.extend_from_slice(
                        format!("{}: {t}\r\n", common::wire::BLOCK_DIGEST_HEADER).as_bytes(),
                    );
                }
                body.extend_from_slice(b"\r\n");
                s.write_all(&body).await.unwrap();
            }
            let mut got = String::new();
            s.read_to_string(&mut got).await.unwrap();
            let status: u16 = got[9..12].parse().unwrap();
            (status, got)
        }
    };
    let (status, got) = put("trailed", true, Some(digest.clone())).await;
    assert_eq!(status, 201, "{got}");
    let id = common::BlockId::for_file("trailed", 0).unwrap();
    let back = std::fs::read(c.workers[0].store.data_path(&id)).unwrap();
    assert!(back == data, "the block read back differs");
    let sums = &c.workers[0].store.get(&id).unwrap().sums;
    assert_eq!(sums.block_digest_hex(), digest);
    // A wrong digest, a missing trailer, a digest that is not hex, and no
    // digest announced at all: each refused by name, nothing kept.
    let wrong = "00".repeat(32);
    let (status, got) = put("wrong", true, Some(wrong)).await;
    assert_eq!(status, 422, "{got}");
    let (status, got) = put("untrailed", true, None).await;
    assert_eq!(status, 400, "{got}");
    assert!(
        got.contains("ended without its x-block-digest trailer"),
        "{got}"
    );
    let (status, got) = put("nothex", true, Some("xyz".into())).await;
    assert_eq!(status, 400, "{got}");
    assert!(
        got.contains("trailer x-block-digest: expected 64 hex digits"),
        "{got}"
    );
    let (status, got) = put("unannounced", false, Some(digest)).await;
    assert_eq!(status, 400, "{got}");
    assert!(got.contains("missing header x-block-digest"), "{got}");
    let stored: Vec<String> = c.workers[0]
        .store
        .list()
        .iter()
        .map(|b| b.id.to_string())
        .collect();
    assert_eq!(stored, ["trailed.b00000"]);
    let dir = c._dir.path().join("w0");
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_remote_reads_share_the_nic() {
    // Every worker's NIC at 40 MB/s; two remote tasks on one worker must take
    // about twice as long as one alone would.
    let c = cluster(2, 2, Some(40e6)).await;
    let id0 = common::BlockId::for_file("r", 0).unwrap();
    let id1 = common::BlockId::for_file("r", 1).unwrap();
    let data = bytes::Bytes::from(vec![b'x'; 8_000_000]);
    for (i, id) in [(0, &id0), (1, &id1)] {
        loader::upload_block(
            c.client.http(),
            TOKEN,
            &c.workers[1].url(),
            id,
            "r",
            i,
            2,
            data.clone(),
        )
        .await
        .unwrap();
    }
    let rx = &c.workers[0].nic.rx;
    let t0 = std::time::Instant::now();
    let fetch = |id: common::BlockId| {
        let w0 = &c.workers[0];
        let url = c.workers[1].url();
        async move {
            worker::fetch::fetch_block(
                &w0.exec.peers.http,
                rx,
                TOKEN,
                &url,
                &id,
                8_000_000,
                |_| async { Ok(()) },
            )
            .await
            .unwrap()
        }
    };
    let (a, b) = tokio::join!(fetch(id0), fetch(id1));
    assert_eq!(a + b, 16_000_000);
    let secs = t0.elapsed().as_secs_f64();
    // 16 MB through a 40 MB/s link: 0.4 s at best; far above unlimited loopback.
    assert!(secs >= 0.38, "16 MB crossed a 40 MB/s NIC in {secs} s");
}

/// Compute pacing makes a task last at least input / rate; background load
/// holds every slot at start, so no task starts before it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compute_pacing_and_background_load_shape_task_times() {
    let dir = tempfile::tempdir().unwrap();
    let before = common::unix_ms();
    let c = support::start_cluster_with(dir.path(), TOKEN, 2, &[None, None, None], 50, |o| {
        o.slot_rate_bytes = Some(2_000_000.0); // 2 MB/s per slot
        o.background = Some((
            common::config::BackgroundConfig {
                duration_s: [1.5, 1.5],
                initial: 1.0,
                per_minute: 0.0,
            },
            7,
        ));
    })
    .await;
    // Every slot of every worker is held by a background process now.
    for w in &c.workers {
        let b = w.exec.slots.book();
        assert_eq!((b.background(), b.free_slots()), (2, 0));
    }
    let cl = Cluster {
        _master: c._master,
        workers: c.workers,
        client: c.client,
        _dir: dir,
    };
    load(&cl, "paced", 4, 500_000, 1).await;
    let id = cl
        .client
        .submit(&JobSubmit::new(Workload::InputSink, "paced"))
        .await
        .unwrap();
    let submitted = common::unix_ms();
    assert!(
        submitted < before + 1500,
        "loading took too long to test this"
    );
    let r = cl.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    for a in r.attempts.iter().filter(|a| a.ok) {
        // 500 kB at 2 MB/s: at least 250 ms.
        assert!(a.end_ms - a.start_ms >= 250, "{a:?}");
        // Not before the 1.5 s background processes released the slots.
        assert!(r.submit_unix_ms + a.start_ms >= before + 1500, "{a:?}");
    }
    for w in &cl.workers {
        assert_eq!(w.exec.slots.book().background(), 0);
    }
}

/// The fidelity settings of the reproductions, end to end: evenly placed
/// replicas, per-task compute drawn from the job's range (the same draw for
/// every task index, whatever the schedule), and each worker's timeline
/// (NIC samples) over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn even_placement_task_compute_and_worker_timelines() {
    let c = cluster(4, 2, Some(50e6)).await;
    let t0 = common::unix_ms();
    loader::load(
        &c.client,
        &LoadSpec {
            name: "even".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 6,
            },
            block_size: 100_000,
            replication: 2,
            seed: 5,
            placement: loader::Placement::Even,
        },
    )
    .await
    .unwrap();
    let f = c.client.file("even").await.unwrap();
    let mut per_worker = std::collections::BTreeMap::<String, u32>::new();
    for r in &f.replicas {
        assert_eq!(r.len(), 2);
        assert_ne!(r[0], r[1]);
        for w in r {
            *per_worker.entry(w.clone()).or_default() += 1;
        }
    }
    // 12 replicas on 4 workers: 3 each.
    assert_eq!(
        per_worker.values().copied().collect::<Vec<_>>(),
        [3, 3, 3, 3]
    );

    let compute = common::wire::TaskCompute {
        min_ms: 200,
        max_ms: 400,
        seed: 9,
    };
    let mut job = JobSubmit::new(Workload::InputSink, "even");
    job.compute = Some(compute);
    let id = c.client.submit(&job).await.unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    for a in r.attempts.iter().filter(|a| a.ok) {
        let want = compute.for_task(a.task);
        assert!((200..=400).contains(&want));
        let took = a.end_ms - a.start_ms;
        assert!(took >= want, "task {} took {took} ms < {want} ms", a.task);
    }
    // A range outside the limits is refused by name.
    let mut bad = JobSubmit::new(Workload::InputSink, "even");
    bad.compute = Some(common::wire::TaskCompute {
        min_ms: 5,
        max_ms: 1,
        seed: 0,
    });
    let e = c.client.submit(&bad).await.unwrap_err().to_string();
    assert!(e.contains("compute"), "{e}");

    // Timelines: samples in time order whose counters cover the bytes moved
    // (once the samplers have looked after the job's end).
    let settle = 3 * common::wire::TIMELINE_SAMPLE_MS;
    tokio::time::sleep(std::time::Duration::from_millis(settle)).await;
    let workers: Vec<(String, String)> = c
        .workers
        .iter()
        .map(|w| (w.name.clone(), w.url()))
        .collect();
    let tl = ctl::experiment::timeline::fetch(&c.client, &workers, t0)
        .await
        .unwrap();
    assert_eq!(tl.len(), 4);
    let mut rx_total = 0;
    for t in &tl {
        assert!(t.samples.len() >= 2, "{}: {:?}", t.worker, t.samples);
        assert!(t.samples.windows(2).all(|w| w[0].unix_ms <= w[1].unix_ms));
        assert!(t.samples.iter().all(|s| s.unix_ms >= t0));
        assert_eq!(t.nic_bytes_per_sec, Some(50e6));
        rx_total += t.samples.last().unwrap().rx_bytes;
    }
    // Every remote read crossed some worker's receive link (uploads too).
    assert!(
        rx_total >= r.bytes_remote,
        "{rx_total} < {}",
        r.bytes_remote
    );
}

/// The emulated disk: every local read of a map goes through it at its
/// rate, and the worker's timeline counts the bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_disk_paces_its_local_reads() {
    let dir = tempfile::tempdir().unwrap();
    let disk = 2e6;
    let c = support::start_cluster_with(dir.path(), TOKEN, 2, &[None], 50, |o| {
        o.disk_bytes_per_sec = Some(disk)
    })
    .await;
    let t0 = common::unix_ms();
    loader::load(
        &c.client,
        &LoadSpec {
            name: "d".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 2,
            },
            block_size: 500_000,
            replication: 1,
            seed: 3,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let id = c
        .client
        .submit(&JobSubmit::new(Workload::InputSink, "d"))
        .await
        .unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    // Two local reads of 0.5 MB share 2 MB/s: each lasts about 0.5 s.
    for a in r.attempts.iter().filter(|a| a.ok) {
        let took = a.end_ms - a.start_ms;
        assert!(took >= 400, "a 0.5 MB local read took {took} ms at 2 MB/s");
    }
    let w = &c.workers[0];
    let settle = 3 * common::wire::TIMELINE_SAMPLE_MS;
    tokio::time::sleep(std::time::Duration::from_millis(settle)).await;
    let tl = ctl::experiment::timeline::fetch(&c.client, &[(w.name.clone(), w.url())], t0)
        .await
        .unwrap();
    assert_eq!(tl[0].disk_bytes_per_sec, Some(disk));
    // The uploads (1 MB written) and the reads (1 MB) crossed the disk.
    let last = tl[0].samples.last().unwrap().disk_bytes;
    assert!(last >= 2_000_000, "{last}");
}

/// A worker holding many blocks registers: its full block report (here
/// 50,000 blocks, about 4 MB of JSON) is over axum's default body limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_block_report_registers() {
    let c = cluster(1, 1, None).await;
    let n = 50_000u32;
    let blocks: Vec<common::wire::BlockInfo> = (0..n)
        .map(|i| common::wire::BlockInfo {
            id: common::BlockId::for_file("many", i).unwrap(),
            file: "many".into(),
            index: i,
            file_blocks: n,
            len: 1,
        })
        .collect();
    let req = common::wire::RegisterRequest {
        name: "w0".into(),
        addr: c.workers[0].url(),
        slots: 1,
        blocks,
        out_of_band_heartbeat: false,
        running: Vec::new(),
        map_outputs: Vec::new(),
    };
    let body = serde_json::to_vec(&req).unwrap();
    assert!(body.len() > 2 << 20, "{} bytes", body.len());
    let r = c
        .client
        .http()
        .post(format!("{}/v1/workers/register", c._master.url()))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let f = c.client.file("many").await.unwrap();
    assert_eq!(f.blocks, n);
    assert!(f.complete);
}

/// A client that opens a connection and sends half a header, sends nothing,
/// or stops in the middle of an upload is cut off after the server's
/// timeouts (a stopped peer costs a bounded wait, never a task held for
/// ever), and the half upload leaves no block behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_clients_are_cut_off_and_half_uploads_leave_nothing() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let short = common::http::ServerTimeouts {
        header: std::time::Duration::from_millis(500),
        body_idle: std::time::Duration::from_millis(500),
    };
    let c = support::start_cluster_with(dir.path(), TOKEN, 1, &[None], 50, |o| {
        o.http_timeouts = short
    })
    .await;
    let addr = c.workers[0].addr;
    // Reads until the server closes the connection; what it sent, if any.
    // Ten seconds is far beyond the timeouts and far below never.
    async fn closed_by_server(s: &mut tokio::net::TcpStream) -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = std::time::Duration::from_secs(10);
        loop {
            match tokio::time::timeout(deadline, s.read(&mut buf)).await {
                Err(_) => panic!("the server kept a silent connection open: {got:?}"),
                Ok(Ok(0)) | Ok(Err(_)) => return String::from_utf8_lossy(&got).into(),
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            }
        }
    }
    // Half a header.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /status HTTP/1.1\r\nHost: w0\r\n")
        .await
        .unwrap();
    closed_by_server(&mut s).await;
    // Nothing at all.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    closed_by_server(&mut s).await;
    // A whole request, then an idle keep-alive connection: answered, then closed.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET /status HTTP/1.1\r\nHost: w0\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    assert!(closed_by_server(&mut s).await.starts_with("HTTP/1.1 200"));
    // An upload that stops after 1000 of its 1 MiB.
    let id = common::BlockId::for_file("half", 0).unwrap();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "PUT /blocks/{id} HTTP/1.1\r\nHost: w0\r\nAuthorization: Bearer {TOKEN}\r\n\
         {}: {}\r\n{}: half\r\n{}: 0\r\n{}: 1\r\nContent-Length: 1048576\r\n\r\n",
        common::wire::BLOCK_DIGEST_HEADER,
        "0".repeat(64),
        common::wire::BLOCK_FILE_HEADER,
        common::wire::BLOCK_INDEX_HEADER,
        common::wire::BLOCK_FILE_BLOCKS_HEADER,
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(&[b'x'; 1000]).await.unwrap();
    closed_by_server(&mut s).await;
    // Nothing of it is stored or listed, and the worker still answers.
    let blocks = c
        .client
        .http()
        .get(format!("http://{addr}/blocks"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert!(blocks.status().is_success());
    assert!(!blocks.text().await.unwrap().contains("half"));
    let files: Vec<String> = walk(dir.path())
        .into_iter()
        .filter(|p| p.contains("half"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
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

/// `GET /metrics` on the master and the workers: the locality counters move
/// while a job runs and end equal to the job's report (Hadoop's counters),
/// bytes read locally and remotely match it too, and the workers' NIC
/// counters and task outcomes add up. Without the token: 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_metrics_follow_the_job() {
    let c = cluster(3, 1, None).await;
    load(&c, "data", 12, 200_000, 1).await;
    let base = c.client.base().to_owned();
    let anon = c
        .client
        .http()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);
    let before = scrape(&c.client, &base).await;
    assert_eq!(before.get("mrtb_workers{state=\"alive\"}"), Some(&3.0));
    let mut job = JobSubmit::new(Workload::InputSink, "data");
    job.compute = Some(common::wire::TaskCompute {
        min_ms: 250,
        max_ms: 250,
        seed: 1,
    });
    let id = c.client.submit(&job).await.unwrap();
    let maps = |m: &std::collections::BTreeMap<String, f64>| {
        m.get("mrtb_maps_total{locality=\"data_local\"}")
            .copied()
            .unwrap_or(0.0)
            + m.get("mrtb_maps_total{locality=\"data_remote\"}")
                .copied()
                .unwrap_or(0.0)
    };
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let m = scrape(&c.client, &base).await;
        seen.insert(maps(&m) as u64);
        if c.client.job(id, None).await.unwrap().state.is_done() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    }
    let between: Vec<_> = seen.iter().filter(|n| **n > 0 && **n < 12).collect();
    assert!(
        between.len() >= 2,
        "the counters moved while the job ran: {seen:?}"
    );
    let r = c.client.job(id, None).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded);
    let m = scrape(&c.client, &base).await;
    let get = |k: &str| m.get(k).copied().unwrap_or(0.0);
    assert_eq!(
        get("mrtb_maps_total{locality=\"data_local\"}"),
        r.data_local as f64
    );
    assert_eq!(
        get("mrtb_maps_total{locality=\"data_remote\"}"),
        r.data_remote as f64
    );
    assert_eq!(
        get("mrtb_map_input_bytes_total{source=\"local\"}"),
        r.bytes_local as f64
    );
    assert_eq!(
        get("mrtb_map_input_bytes_total{source=\"remote\"}"),
        r.bytes_remote as f64
    );
    assert_eq!(get("mrtb_jobs{state=\"succeeded\"}"), 1.0);
    assert_eq!(
        get("mrtb_task_duration_seconds_count{kind=\"map\",locality=\"data_local\"}"),
        r.data_local as f64
    );
    assert!(get("mrtb_heartbeat_handling_seconds_count") > 10.0);
    assert!(get("mrtb_scheduling_decision_seconds_count") > 10.0);
    // The workers: attempts succeeded add up to the job's; NIC bytes sent
    // cover the remote reads.
    let mut succeeded = 0.0;
    let mut sent = 0.0;
    for w in &c.workers {
        let wm = scrape(&c.client, &w.url()).await;
        let name = &w.name;
        succeeded += wm
            .get(&format!(
                "mrtb_worker_task_attempts_total{{worker=\"{name}\",outcome=\"succeeded\"}}"
            ))
            .copied()
            .unwrap_or_else(|| panic!("{wm:?}"));
        sent += wm[&format!("mrtb_worker_nic_bytes_total{{worker=\"{name}\",direction=\"tx\"}}")];
        assert_eq!(
            wm[&format!("mrtb_worker_slots{{worker=\"{name}\",state=\"free\"}}")],
            1.0
        );
        // input-sink leaves no map output to keep.
        assert_eq!(
            wm[&format!("mrtb_worker_shuffle_kept_bytes{{worker=\"{name}\"}}")],
            0.0
        );
        assert!(wm.contains_key(&format!(
            "mrtb_worker_buffer_pool_free_bytes{{worker=\"{name}\"}}"
        )));
    }
    assert_eq!(succeeded, 12.0);
    assert!(sent >= r.bytes_remote as f64, "{sent} < {}", r.bytes_remote);
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

/// `GET /v1/openapi.json` on the master and a worker (no token needed):
/// valid OpenAPI 3.1 whose routes are exactly those of the module's API
/// table, every one of them answered by a real route (not the fallback,
/// not 405), with the token scheme declared and the wire types' schemas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_descriptions_cover_every_route() {
    let c = cluster(1, 1, None).await;
    let http = c.client.http().clone();
    let servers = [
        (
            c.client.base().to_owned(),
            include_str!("../../master/src/http.rs"),
        ),
        (c.workers[0].url(), include_str!("../../worker/src/http.rs")),
    ];
    for (base, source) in servers {
        let doc: serde_json::Value = http
            .get(format!("{base}/v1/openapi.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{doc}");
        assert_eq!(
            doc["components"]["securitySchemes"]["token"]["scheme"],
            "bearer"
        );
        let table = api_table(source);
        let routes = described(&doc);
        assert!(table.len() >= 10, "{table:?}");
        assert_eq!(table, routes, "the API table of {base} and its description");
        for (method, path) in &routes {
            let concrete = path
                .replace("{name}", "nothing")
                .replace("{id}", "job-1")
                .replace("{job}", "1")
                .replace("{map}", "0")
                .replace("{attempt}", "0")
                .replace("{part}", "p0");
            if path == "/v1/events" {
                continue; // a stream that does not end; answered below
            }
            let resp = http
                .request(method.parse().unwrap(), format!("{base}{concrete}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let body = resp.text().await.unwrap();
            assert!(
                status != 405 && !body.contains("no such endpoint"),
                "{method} {concrete} on {base}: {status} {body}"
            );
        }
        // The external policy protocol's messages are described beside the
        // routes, with what they refer to.
        if base == c.client.base() {
            for name in ["OfferMessage", "JobMessage", "Reply", "LaunchMessage"] {
                assert!(
                    doc["components"]["schemas"].get(name).is_some(),
                    "{name} is not described on {base}"
                );
            }
        }
        // Every schema a route refers to is there.
        let text = doc.to_string();
        for r in text.split("\"#/components/schemas/").skip(1) {
            let name = &r[..r.find('"').unwrap()];
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "{name} referred to but not described on {base}"
            );
        }
    }
    let events = http
        .get(format!("{}/v1/events", c.client.base()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    assert_eq!(events.headers()["content-type"], "text/event-stream");
}

/// The decision record on a real cluster under delay scheduling: every map
/// attempt the master launched has one row, a data-local row reads where it
/// runs, and every remote launch names the rule that allowed it with the
/// job's wait at or over the threshold; `?job=` filters, the report explains
/// each row in words, and a master without the record says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_record_explains_every_launch() {
    let dir = tempfile::tempdir().unwrap();
    let threshold_ms = 150;
    let c = support::start_cluster_tuned(
        dir.path(),
        TOKEN,
        1,
        &[None; 3],
        &[common::config::Role::Both; 3],
        50,
        |m| {
            m.scheduler = sched::policy::SchedulerConfig::Delay(
                sched::policy::delay::DelayParams::new(threshold_ms as f64 / 1000.0),
            );
            m.record_decisions = true;
        },
        |_| {},
    )
    .await;
    let c = Cluster {
        _master: c._master,
        workers: c.workers,
        client: c.client,
        _dir: dir,
    };
    load(&c, "data", 12, 100_000, 1).await;
    // Uneven placement (fixed by the loader's seed): the worker with the
    // fewest blocks runs out of local tasks first and must go remote.
    let f = c.client.file("data").await.unwrap();
    let mut per_worker = std::collections::BTreeMap::<_, u32>::new();
    for r in &f.replicas {
        *per_worker.entry(r[0].clone()).or_default() += 1;
    }
    let counts: Vec<u32> = per_worker.values().copied().collect();
    assert!(
        counts.len() < 3 || counts.iter().max() != counts.iter().min(),
        "{counts:?}"
    );
    let mut job = JobSubmit::new(Workload::InputSink, "data");
    job.compute = Some(common::wire::TaskCompute {
        min_ms: 300,
        max_ms: 400,
        seed: 5,
    });
    let id = c.client.submit(&job).await.unwrap();
    let r = c.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");

    let log = c.client.decisions(Some(id)).await.unwrap();
    assert!(log.recording);
    let all = c.client.decisions(None).await.unwrap();
    assert!(all.decisions.len() >= log.decisions.len());
    use sched::decision::{Kind, Locality, Rule};
    let maps: Vec<_> = log
        .decisions
        .iter()
        .filter(|d| d.kind == Kind::Map)
        .collect();
    assert!(log.decisions.iter().all(|d| d.job == Some(id)));
    // One row per attempt, with the attempt's worker and source.
    assert_eq!(maps.len(), r.attempts.len(), "{:#?}", log.decisions);
    for a in &r.attempts {
        let d = maps
            .iter()
            .find(|d| d.task == Some(a.task))
            .unwrap_or_else(|| panic!("no row for task {}", a.task));
        assert_eq!(log.name(d.worker.unwrap()), a.worker);
        assert_eq!(log.name(d.source.unwrap()), a.source);
    }
    let mut remote = 0;
    for d in &maps {
        assert!(d.replicas.contains(&d.source.unwrap()), "{d:?}");
        assert_eq!(d.order.as_deref(), Some("fair"), "{d:?}");
        match d.locality.unwrap() {
            Locality::NodeLocal => assert_eq!(d.rule, Rule::DataLocal, "{d:?}"),
            Locality::RackLocal => panic!("no racks here: {d:?}"),
            Locality::Remote => {
                remote += 1;
                assert!(!d.replicas.contains(&d.worker.unwrap()), "{d:?}");
                assert!(
                    matches!(d.rule, Rule::WaitOver | Rule::RemoteLevel),
                    "{d:?}"
                );
                assert_eq!(d.threshold_ms, Some(threshold_ms));
                assert!(d.waited_ms.unwrap() >= threshold_ms, "{d:?}");
            }
        }
    }
    assert!(remote > 0, "no remote launch: {:#?}", maps);
    assert_eq!(remote, r.data_remote as usize);
    // Offers declined while the job waited: the wait below the threshold.
    for d in log.decisions.iter().filter(|d| d.kind == Kind::Idle) {
        if d.rule == Rule::Waiting {
            assert!(d.waited_ms.unwrap() < threshold_ms, "{d:?}");
        }
    }
    let text = ctl::ops::report::decisions(&log);
    assert!(text.contains("remote by wait-over"), "{text}");
    assert!(text.contains("(waited "), "{text}");

    // The whole record with its inputs runs through the policy again to
    // the same decisions; the inputs come only with the whole record.
    let rec = c.client.decision_record().await.unwrap();
    assert!(
        matches!(
            rec.scheduler,
            Some(sched::policy::SchedulerConfig::Delay(_))
        ),
        "{:?}",
        rec.scheduler
    );
    assert!(rec.inputs.iter().any(|i| i.is_offer()));
    let again = ctl::ops::report::recheck(&rec).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(again.decisions, rec.decisions.len());
    assert!(all.inputs.is_empty());
    let r = c
        .client
        .http()
        .get(format!(
            "{}/v1/decisions?job={}&inputs=true",
            c.client.base(),
            id.0
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("not with job"),
        "{body}"
    );

    // A master that keeps no record says so.
    let plain = cluster(1, 1, None).await;
    let none = plain.client.decisions(None).await.unwrap();
    assert!(!none.recording && none.decisions.is_empty());
    let e = ctl::ops::report::recheck(&none).unwrap_err();
    assert!(
        format!("{e:#}").contains("master.decisions = false"),
        "{e:#}"
    );
}
