//! The worker's conversation with the master: register (with a full block
//! report), then heartbeat every `heartbeat_ms`, and at once when the block
//! store changes or (with `out_of_band_heartbeat`, Hadoop's out-of-band
//! heartbeat) when a task ends. Launches come
//! back in heartbeat replies. Results are kept until a heartbeat carrying them
//! got through, so none is lost when the master is briefly unreachable or
//! restarts: a registration names the attempts running or finished here
//! and the map outputs kept, and a restarted master adopts those it had
//! sent (see the master's `state::restore`).

use crate::exec::Executor;
use common::http_client::check;
use common::wire::{Heartbeat, HeartbeatReply, RegisterReply, RegisterRequest};
use common::WorkerId;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What the heartbeat loop needs: who this worker is, where the master
/// is and how often to call, when to ask for no new task, and the
/// executor whose slots, store and map outputs it reports and which runs
/// the launches the master sends back.
pub struct Node {
    pub name: String,
    pub master_url: String,
    pub heartbeat_ms: u64,
    /// See `WorkerOptions::min_free_bytes`.
    pub min_free_bytes: u64,
    pub data_dir: PathBuf,
    pub exec: Arc<Executor>,
}

impl Node {
    /// Bytes an unprivileged writer may still use on the data directory's
    /// file system (statvfs), if it can be asked.
    pub fn disk_free(&self) -> Option<u64> {
        let s = nix::sys::statvfs::statvfs(&self.data_dir).ok()?;
        // fsblkcnt_t and c_ulong are u64 here but narrower on some targets.
        #[allow(clippy::useless_conversion)]
        let (blocks, size) = (
            u64::from(s.blocks_available()),
            u64::from(s.fragment_size()),
        );
        Some(blocks.saturating_mul(size))
    }
}

async fn post<Req: Serialize, Resp: DeserializeOwned>(
    ctx: &Node,
    path: &str,
    body: &Req,
) -> Result<Resp, String> {
    let resp = crate::commit::send_to_master(&ctx.exec.peers, &ctx.master_url, path, body).await?;
    let resp = check(resp, format!("master at {}", ctx.master_url))
        .await
        .map_err(|e| e.to_string())?;
    resp.json()
        .await
        .map_err(|e| format!("bad reply from master: {e}"))
}

/// Registers (retrying until the master answers and takes it): this
/// worker's id and the master's incarnation. A master of an older protocol
/// is not worked for: its output targets carry no generation stamps.
async fn register(ctx: &Node) -> (WorkerId, u64) {
    let mut warned: Option<String> = None;
    loop {
        let req = RegisterRequest {
            name: ctx.name.clone(),
            addr: ctx.exec.advertise.clone(),
            slots: ctx.exec.slots.count(),
            protocol: common::wire::PROTOCOL,
            blocks: ctx.exec.store.list(),
            out_of_band_heartbeat: ctx.exec.slots.out_of_band(),
            running: ctx.exec.slots.book().unreported(),
            map_outputs: ctx.exec.shuffle.held(),
        };
        let answer = post::<_, RegisterReply>(ctx, "/v1/workers/register", &req)
            .await
            .and_then(|r| master_speaks(&ctx.master_url, r));
        match answer {
            Ok(r) => {
                tracing::info!(worker = %ctx.name, id = %r.worker, incarnation = r.incarnation, "registered with master");
                return (r.worker, r.incarnation);
            }
            Err(e) => {
                // Said once per reason: a master restarted with another
                // answer (upgraded, or its config fixed) is said again.
                if warned.as_deref() != Some(e.as_str()) {
                    tracing::warn!(error = %e, "registration failed; retrying");
                    warned = Some(e);
                }
                tokio::time::sleep(Duration::from_millis(ctx.heartbeat_ms)).await;
            }
        }
    }
}

/// `r` if the master that sent it speaks this worker's protocol, else why
/// not. A master from before generation stamps would take this worker's
/// stamped replicas; registered there, the worker would run its tasks
/// with output targets that carry no stamp.
fn master_speaks(master: &str, r: RegisterReply) -> Result<RegisterReply, String> {
    if r.protocol < common::wire::PROTOCOL {
        return Err(format!(
            "the master at {master} speaks protocol {}, this worker needs {} (generation stamps on output replicas; 0 = a master built before them): upgrade the master",
            r.protocol,
            common::wire::PROTOCOL
        ));
    }
    Ok(r)
}

/// How long a free task buffer stays in the pool (`workloads::pool`).
const POOL_IDLE: Duration = Duration::from_secs(30);
/// How often freed heap memory goes back to the system (`release_heap`).
const HEAP_RELEASE: Duration = Duration::from_secs(10);

/// Sets glibc's allocator up for a long-running worker, before its threads
/// start: at most two arenas (glibc makes up to 8 per core, each keeping
/// the pages its threads freed; the runtime's and the blocking pool's
/// threads hand task buffers between them), and a fixed mmap threshold of
/// 1 MiB (glibc otherwise raises it to the largest block freed, up to
/// 32 MiB, after which multi-megabyte buffers come from the arenas and
/// their pages stay when freed). Large buffers are then mapped on their
/// own and go back to the system when freed; the task buffer pool
/// (`workloads::pool`) keeps those it wants to reuse. Measured by
/// `make soak` (heap in use against resident memory, per worker).
pub fn tune_allocator() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets the allocator's parameters; called before
    // any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Blocking threads (block reads and writes, map functions, merges) a
/// worker starts with and keeps: more than a worker of a few slots uses at
/// once (a 25-minute soak of 5 workers x 2 slots peaked at 6), so that its
/// thread count is flat, as a Java daemon's core pool is
/// (`prestartAllCoreThreads`), and a thread that appears later is a real
/// change, not the pool reaching a new peak. Bursts beyond it still get
/// threads (tokio's pool grows to 512); those end after
/// [`BLOCKING_KEEP_ALIVE`] idle.
pub const CORE_BLOCKING_THREADS: usize = 8;

/// How long an idle blocking thread waits for work before it ends: an hour,
/// so the core pool stays (a thread ending and another starting later
/// would look like churn, or growth, to a long run's sampling).
pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(3600);

/// Starts [`CORE_BLOCKING_THREADS`] blocking threads on `rt` at once (each
/// waits for the others, so none is reused for the next) and returns once
/// they are idle in the pool.
pub fn prestart_blocking_pool(rt: &tokio::runtime::Runtime) {
    let all = std::sync::Arc::new(std::sync::Barrier::new(CORE_BLOCKING_THREADS));
    let started: Vec<_> = (0..CORE_BLOCKING_THREADS)
        .map(|_| {
            let all = all.clone();
            rt.spawn_blocking(move || {
                all.wait();
            })
        })
        .collect();
    rt.block_on(async {
        for h in started {
            let _ = h.await;
        }
    });
}

/// Gives the heap's free pages back to the system. glibc keeps memory a
/// thread freed in that thread's arena; with task buffers of megabytes
/// freed on the runtime's and the blocking pool's threads in turn, a
/// worker's resident memory crept up by about 1 MB a minute over a 22-minute
/// soak (`make soak`). `malloc_trim` returns the free pages of every arena
/// (a millisecond or so; the heartbeat loop calls it every 10 s).
fn release_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory of the allocator's own
    // arenas; it takes the arenas' locks and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How often the worker logs its memory figures.
const MEMORY_LOG: Duration = Duration::from_secs(60);

/// Logs the heap in use, the heap free in the allocator's arenas and the
/// task buffers pooled for reuse (what a long run's resident memory is
/// made of).
fn log_memory() {
    let mb = |b: u64| b as f64 / 1e6;
    let pooled = workloads::pool::held() as u64;
    match crate::metrics::heap_figures() {
        Some((in_use, free)) => tracing::info!(
            heap_in_use_mb = mb(in_use),
            heap_free_mb = mb(free),
            pooled_mb = mb(pooled),
            "memory"
        ),
        None => tracing::info!(pooled_mb = mb(pooled), "memory"),
    }
}

/// Runs forever: registration, then heartbeats.
pub async fn run(ctx: Node) {
    let ex = ctx.exec.clone();
    let interval = Duration::from_millis(ctx.heartbeat_ms);
    let mut released = std::time::Instant::now();
    let mut logged = std::time::Instant::now();
    loop {
        let (id, incarnation) = register(&ctx).await;
        ex.master.registered(id, incarnation);
        // The registration carried a full report: only later changes need one.
        let mut reported_generation = ex.store.generation();
        let mut failures = 0u32;
        loop {
            // Wait for the interval or an early wake-up (task ended, block stored).
            let _ = tokio::time::timeout(interval, ex.slots.heartbeat_wanted().notified()).await;
            // Task buffers nobody reused for a while go back to the system.
            workloads::pool::trim_idle(POOL_IDLE);
            if released.elapsed() >= HEAP_RELEASE {
                released = std::time::Instant::now();
                release_heap();
                if logged.elapsed() >= MEMORY_LOG {
                    logged = std::time::Instant::now();
                    log_memory();
                }
            }
            let generation = ex.store.generation();
            let (free_slots, running, results, busy, progress) = {
                let mut book = ex.slots.book();
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
                blocks: (generation != reported_generation).then(|| ex.store.list()),
                results,
                busy,
                disk_free_bytes: disk_free,
                progress,
                nic_rx_bytes: ex.peers.nic.rx.bytes(),
                nic_tx_bytes: ex.peers.nic.tx.bytes(),
                incarnation,
                copies_failed: ex.replicas.take_copies_failed(),
            };
            match post::<_, HeartbeatReply>(&ctx, "/v1/workers/heartbeat", &hb).await {
                Ok(reply) => {
                    failures = 0;
                    reported_generation = generation;
                    for r in &reply.refused {
                        tracing::warn!(attempt = %r.attempt, reason = %r.reason, "the master refused this attempt's result");
                    }
                    if reply.reregister && reply.lost {
                        // The master gave this worker's attempts to others:
                        // what it runs is killed before it registers again.
                        // Results it finished and did not report yet go to
                        // the master after the registration, which refuses
                        // and counts them (fencing: not current attempts).
                        let running = ex.slots.book().running();
                        for a in &running {
                            crate::exec::kill(&ex, a);
                        }
                        let refused: std::collections::HashSet<_> =
                            reply.refused.iter().map(|r| r.attempt).collect();
                        ex.slots.book().restore(
                            hb.results
                                .into_iter()
                                .filter(|r| !refused.contains(&r.attempt))
                                .collect(),
                        );
                        tracing::warn!(killed = running.len(),
                            "the master declared this worker lost: its running attempts are killed; registering again");
                        break;
                    }
                    if reply.reregister {
                        // The master did not take the results (it restarted,
                        // or does not know this worker): they go again after
                        // the registration, which names their attempts.
                        ex.slots.book().restore(hb.results);
                        tracing::warn!("master asked to register again");
                        break;
                    }
                    for a in &reply.kill {
                        crate::exec::kill(&ex, a);
                    }
                    for job in reply.forget_jobs {
                        let outputs = ex.shuffle.clone();
                        tokio::task::spawn_blocking(move || outputs.forget_job(job));
                    }
                    for l in reply.launches {
                        crate::exec::launch(&ex, l);
                    }
                    for order in reply.copy_blocks {
                        let ex = ex.clone();
                        tokio::spawn(async move {
                            let copied = crate::replicate::copy_block(
                                &ex.replicas,
                                &ex.disk,
                                ex.peers.uplink(),
                                &order.block,
                                &order.to,
                            );
                            match copied.await {
                                Ok(()) => {
                                    tracing::info!(block = %order.block, to = %order.to, "replica copied")
                                }
                                Err(e) => {
                                    tracing::warn!(block = %order.block, to = %order.to, error = %e, "re-replication failed; the master is told");
                                    ex.replicas.copy_failed(order);
                                }
                            }
                        });
                    }
                    for block in reply.drop_blocks {
                        crate::replicate::drop_block(&ex.replicas, &block);
                    }
                    for stale in reply.drop_stale {
                        crate::replicate::drop_stale(&ex.replicas, &stale);
                    }
                }
                Err(e) => {
                    ex.slots.book().restore(hb.results);
                    ex.replicas.copies_not_reported(hb.copies_failed);
                    failures += 1;
                    if failures == 1 || failures.is_multiple_of(50) {
                        tracing::warn!(error = %e, failures, "heartbeat failed");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The threads of this process whose name is `name`.
    fn named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter(|t| {
                let comm = t.as_ref().unwrap().path().join("comm");
                std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == name)
            })
            .count()
    }

    #[test]
    fn the_core_blocking_pool_is_started_at_once_and_kept() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("core-pool-test")
            .thread_keep_alive(BLOCKING_KEEP_ALIVE)
            .build()
            .unwrap();
        prestart_blocking_pool(&rt);
        let after_start = named("core-pool-test");
        assert_eq!(
            after_start,
            CORE_BLOCKING_THREADS + 1,
            "the pool and the one worker"
        );
        // Work at most as wide as the pool makes no new thread. A pool
        // thread that just ran a task counts as idle only once it is back
        // waiting (a busy host can hold it off for a while): each batch
        // starts after a pause for that, and a new thread then means the
        // pool was let go.
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(200));
            let jobs: Vec<_> = (0..4)
                .map(|_| rt.spawn_blocking(|| std::thread::sleep(Duration::from_millis(5))))
                .collect();
            rt.block_on(async {
                for j in jobs {
                    j.await.unwrap();
                }
            });
        }
        assert_eq!(named("core-pool-test"), after_start);
    }

    /// The worker's metrics tell the pool's idle threads from busy ones
    /// (what the fault campaign's at-rest check leaves out).
    #[cfg(tokio_unstable)]
    #[test]
    fn the_metrics_tell_idle_pool_threads_from_busy_ones() {
        use crate::metrics::{blocking_pool, BlockingPool};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_keep_alive(BLOCKING_KEEP_ALIVE)
            .build()
            .unwrap();
        prestart_blocking_pool(&rt);
        // A thread counts as idle once it is back waiting: poll for it.
        let reaches = |want: BlockingPool| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let now = rt.block_on(async { blocking_pool() });
                if now == Some(want) || std::time::Instant::now() > deadline {
                    return now;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        let core = CORE_BLOCKING_THREADS;
        let all_idle = BlockingPool {
            idle: core,
            busy: 0,
        };
        assert_eq!(reaches(all_idle), Some(all_idle));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let held: Vec<_> = (0..2)
            .map(|_| {
                let rx = rx.clone();
                rt.spawn_blocking(move || {
                    let _ = rx.lock().unwrap().recv();
                })
            })
            .collect();
        let two_busy = BlockingPool {
            idle: core - 2,
            busy: 2,
        };
        assert_eq!(reaches(two_busy), Some(two_busy));
        drop(tx);
        rt.block_on(async {
            for h in held {
                h.await.unwrap();
            }
        });
        assert_eq!(reaches(all_idle), Some(all_idle));
        // Outside a runtime there is nothing to report.
        assert_eq!(blocking_pool(), None);
    }
}
