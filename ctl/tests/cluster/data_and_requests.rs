use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_sink_jobs_over_replicated_data() {
    let c = cluster(3, 2, None).await;
    load(&c, "data", 12, 300_000, 2).await;
    let f = c.client.file("data").await.unwrap();
    assert!(f.complete);
    assert!(f.replicas.iter().all(|r| r.len() == 2 && r[0] != r[1]));
    let id = c
        .client
        .submit(&JobSubmit::new(Workload::InputSink, "data"))
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
    // Read where it is stored, the attempt names the damaged chunk's offset;
    // read from the holder by another worker (a map may go remote), the
    // holder cuts the stream before that chunk: never served either way.
    let cut_at = attempt_err
        .split("stream broke after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok());
    assert!(
        attempt_err.contains("bad2.b00000")
            && (attempt_err.contains("1048576") || cut_at.is_some_and(|n| n <= 1_048_576)),
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
    // Sent as job output (`drop-behind`), the block is committed with its
    // writes still in flight (`workers.sync_output = false`): a reader
    // waits for them, and the file is whole once one has opened.
    let mut reader = c.workers[0].store.reader(&id).unwrap();
    let mut read = Vec::new();
    for i in 0..reader.chunk_count() {
        read.extend_from_slice(&reader.read_chunk(i).unwrap());
    }
    assert!(read == data, "the block read back differs");
    let back = std::fs::read(c.workers[0].store.data_path(&id)).unwrap();
    assert!(back == data, "the block's file differs");
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
                &w0.exec.peers.bulk,
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
                duration_s: [3.0, 3.0],
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
        submitted < before + 3000,
        "loading took too long to test this"
    );
    let r = cl.client.wait_job(id).await.unwrap();
    assert_eq!(r.state, JobState::Succeeded, "{r:?}");
    for a in r.attempts.iter().filter(|a| a.ok) {
        // 500 kB at 2 MB/s: at least 250 ms.
        assert!(a.end_ms - a.start_ms >= 250, "{a:?}");
        // Not before the 3 s background processes released the slots.
        assert!(r.submit_unix_ms + a.start_ms >= before + 3000, "{a:?}");
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
            placement: common::placement::Placement::Even,
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
