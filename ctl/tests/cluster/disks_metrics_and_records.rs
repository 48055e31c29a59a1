use super::*;

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
            generation: 0,
        })
        .collect();
    let req = common::wire::RegisterRequest {
        name: "w0".into(),
        addr: c.workers[0].url(),
        slots: 1,
        protocol: common::wire::PROTOCOL,
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
    // The upload's partial file goes when its writer is dropped, which may
    // come a moment after the connection closes: gone within ten seconds.
    let half = || -> Vec<String> {
        walk(dir.path())
            .into_iter()
            .filter(|p| p.contains("half"))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !half().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let files = half();
    assert!(files.is_empty(), "{files:?}");
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
        // The blocking pool's threads by state (tokio's unstable figures,
        // in builds with `--cfg tokio_unstable`, as `.cargo/config.toml`
        // sets): the worker's own requests ran on it, so it has threads.
        if cfg!(tokio_unstable) {
            let pool: f64 = ["idle", "busy"]
                .iter()
                .map(|state| {
                    wm[&format!(
                        "mrtb_worker_blocking_threads{{worker=\"{name}\",state=\"{state}\"}}"
                    )]
                })
                .sum();
            assert!(pool >= 1.0, "{wm:?}");
        }
    }
    assert_eq!(succeeded, 12.0);
    assert!(sent >= r.bytes_remote as f64, "{sent} < {}", r.bytes_remote);
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
            include_str!("../../../master/src/http.rs"),
        ),
        (
            c.workers[0].url(),
            include_str!("../../../worker/src/http.rs"),
        ),
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
