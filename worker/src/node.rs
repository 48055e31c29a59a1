//! The worker's conversation with the master: register (with a full block
//! report), then heartbeat every `heartbeat_ms`, and at once when the block
//! store changes or (with `out_of_band_heartbeat`, Hadoop's out-of-band
//! heartbeat) when a task ends. Launches come
//! back in heartbeat replies. Results are kept until a heartbeat carrying them
//! got through, so none is lost when the master is briefly unreachable.

use crate::WorkerCtx;
use common::http::bearer;
use common::http_client::check;
use common::wire::{Heartbeat, HeartbeatReply, RegisterReply, RegisterRequest};
use common::WorkerId;
use reqwest::header::AUTHORIZATION;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

async fn post<Req: Serialize, Resp: DeserializeOwned>(
    ctx: &WorkerCtx,
    path: &str,
    body: &Req,
) -> Result<Resp, String> {
    let resp = ctx
        .http
        .post(format!("{}{path}", ctx.master_url))
        .header(AUTHORIZATION, bearer(&ctx.token))
        .json(body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| format!("master unreachable at {}: {e}", ctx.master_url))?;
    let resp = check(resp, format!("master at {}", ctx.master_url))
        .await
        .map_err(|e| e.to_string())?;
    resp.json()
        .await
        .map_err(|e| format!("bad reply from master: {e}"))
}

async fn register(ctx: &WorkerCtx) -> WorkerId {
    let mut warned = false;
    loop {
        let req = RegisterRequest {
            name: ctx.name.clone(),
            addr: ctx.advertise.clone(),
            slots: ctx.slots,
            blocks: ctx.store.list(),
            out_of_band_heartbeat: ctx.out_of_band_heartbeat,
        };
        match post::<_, RegisterReply>(ctx, "/v1/workers/register", &req).await {
            Ok(r) => {
                tracing::info!(worker = %ctx.name, id = %r.worker, "registered with master");
                return r.worker;
            }
            Err(e) => {
                if !warned {
                    tracing::warn!(error = %e, "registration failed; retrying");
                    warned = true;
                }
                tokio::time::sleep(Duration::from_millis(ctx.heartbeat_ms)).await;
            }
        }
    }
}

/// How long a free task buffer stays in the pool (`workloads::pool`).
const POOL_IDLE: Duration = Duration::from_secs(30);

/// Runs forever: registration, then heartbeats.
pub async fn run(ctx: Arc<WorkerCtx>) {
    let interval = Duration::from_millis(ctx.heartbeat_ms);
    loop {
        let id = register(&ctx).await;
        // The registration carried a full report: only later changes need one.
        let mut reported_generation = ctx.store.generation();
        let mut failures = 0u32;
        loop {
            // Wait for the interval or an early wake-up (task ended, block stored).
            let _ = tokio::time::timeout(interval, ctx.heartbeat_now.notified()).await;
            // Task buffers nobody reused for a while go back to the system.
            workloads::pool::trim_idle(POOL_IDLE);
            let generation = ctx.store.generation();
            let (free_slots, running, results, busy, progress) = {
                let mut book = ctx.book.lock().unwrap();
                (
                    book.free_slots(),
                    book.running(),
                    book.take_finished(),
                    book.busy_report(),
                    book.progress_report(),
                )
            };
            // Short of disk: ask for nothing new (running tasks go on).
            let disk_free = ctx.disk_free();
            let short = disk_free.is_some_and(|f| f < ctx.min_free_bytes);
            let hb = Heartbeat {
                worker: id,
                free_slots: if short { 0 } else { free_slots },
                running,
                blocks: (generation != reported_generation).then(|| ctx.store.list()),
                results,
                busy,
                disk_free_bytes: disk_free,
                progress,
                nic_rx_bytes: ctx.nic.rx.bytes(),
                nic_tx_bytes: ctx.nic.tx.bytes(),
            };
            match post::<_, HeartbeatReply>(&ctx, "/v1/workers/heartbeat", &hb).await {
                Ok(reply) => {
                    failures = 0;
                    reported_generation = generation;
                    if reply.reregister {
                        tracing::warn!("master asked to register again");
                        break;
                    }
                    for a in &reply.kill {
                        crate::exec::kill(&ctx, a);
                    }
                    for job in reply.forget_jobs {
                        let ctx = ctx.clone();
                        tokio::task::spawn_blocking(move || ctx.shuffle.forget_job(job));
                    }
                    for l in reply.launches {
                        crate::exec::launch(&ctx, l);
                    }
                    for order in reply.copy_blocks {
                        let ctx = ctx.clone();
                        tokio::spawn(async move {
                            let copied = crate::replicate::copy_block(
                                &ctx.replicas,
                                &ctx.disk,
                                ctx.uplink(),
                                &order.block,
                                &order.to,
                            );
                            match copied.await {
                                Ok(()) => {
                                    tracing::info!(block = %order.block, to = %order.to, "replica copied")
                                }
                                Err(e) => {
                                    tracing::warn!(block = %order.block, to = %order.to, error = %e, "re-replication failed")
                                }
                            }
                        });
                    }
                    for block in reply.drop_blocks {
                        crate::replicate::drop_block(&ctx.replicas, &block);
                    }
                }
                Err(e) => {
                    ctx.book.lock().unwrap().restore(hb.results);
                    failures += 1;
                    if failures == 1 || failures.is_multiple_of(50) {
                        tracing::warn!(error = %e, failures, "heartbeat failed");
                    }
                }
            }
        }
    }
}
