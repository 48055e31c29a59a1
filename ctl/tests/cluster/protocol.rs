//! The protocol exchanged at registration: a master and a worker of
//! different builds, one from before generation stamps, refuse each other
//! with the reason, so no stamp-less replica of a stale attempt is taken.

use super::{cluster, TOKEN};
use axum::routing::post;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A worker from before generation stamps sends no `protocol`: the master
/// answers 409 naming both protocols, and keeps the worker of that name
/// registered as it was (address, blocks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_from_before_generation_stamps_is_refused() {
    let c = cluster(1, 1, None).await;
    let before = c.client.workers().await.unwrap();
    // The body a worker of an earlier build sends: no "protocol" field.
    let old = serde_json::json!({
        "name": "w0",
        "addr": "http://127.0.0.1:9",
        "slots": 4,
        "blocks": [],
    });
    let r = c
        .client
        .http()
        .post(format!("{}/v1/workers/register", c._master.url()))
        .bearer_auth(TOKEN)
        .json(&old)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let why = r.text().await.unwrap();
    assert!(
        why.contains("speaks protocol 0")
            && why.contains(&format!("needs {}", common::wire::PROTOCOL))
            && why.contains("upgrade the worker"),
        "{why}"
    );
    let after = c.client.workers().await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].addr, before[0].addr);
    assert_eq!(after[0].slots, before[0].slots);
    assert_eq!(after[0].addr, c.workers[0].advertise);
}

/// A master of an earlier build answers a registration without
/// `protocol`: the worker does not take it for registered (no heartbeat)
/// and asks again; once the master answers with this protocol, it
/// heartbeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_does_not_work_for_a_master_from_before_generation_stamps() {
    #[derive(Default)]
    struct Seen {
        registers: AtomicUsize,
        heartbeats: AtomicUsize,
        /// The protocol the master answers with (0: the field left out).
        speaks: AtomicUsize,
    }
    let seen = Arc::new(Seen::default());
    let (s1, s2) = (seen.clone(), seen.clone());
    let app = axum::Router::new()
        .route(
            "/v1/workers/register",
            post(move || async move {
                s1.registers.fetch_add(1, Ordering::SeqCst);
                let mut reply =
                    serde_json::json!({"worker": 0, "heartbeat_ms": 20, "incarnation": 1});
                match s1.speaks.load(Ordering::SeqCst) {
                    0 => {}
                    p => reply["protocol"] = p.into(),
                }
                axum::Json(reply)
            }),
        )
        .route(
            "/v1/workers/heartbeat",
            post(move || async move {
                s2.heartbeats.fetch_add(1, Ordering::SeqCst);
                axum::http::StatusCode::SERVICE_UNAVAILABLE
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let opts = super::support::worker_options("w0", dir.path(), &url, TOKEN, 1, 20);
    let w = worker::start(opts).await.unwrap();
    let wait_for = |what: fn(&Seen) -> bool| {
        let seen = seen.clone();
        async move {
            for _ in 0..500 {
                if what(&seen) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            false
        }
    };
    assert!(wait_for(|s| s.registers.load(Ordering::SeqCst) >= 5).await);
    assert_eq!(seen.heartbeats.load(Ordering::SeqCst), 0);
    seen.speaks
        .store(common::wire::PROTOCOL as usize, Ordering::SeqCst);
    assert!(wait_for(|s| s.heartbeats.load(Ordering::SeqCst) >= 1).await);
    drop(w);
    server.abort();
}
