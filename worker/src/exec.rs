//! Task execution: a launch takes a free slot (`slots`) and runs there,
//! a map here (its block read into the map function: locally through the
//! emulated disk, or from a peer through the receive link), a reduce in
//! `reduce`. The `Executor` holds what an attempt uses: the slots, the
//! store, the map outputs, the disk and the way to the peers.

use crate::fetch::{fetch_block_from, Peers};
use crate::nic::Link;
use crate::progress::Progress;
use crate::replicas::Replicas;
use crate::shuffle::MapOutputs;
use crate::slots::Slots;
use crate::store::BlockStore;
use bytes::Bytes;
use common::wire::{Launch, LaunchTask, ReplicaAddr, ReplicaSource, TaskOutcome, TaskResult};
use common::{unix_ms, AttemptId};
use std::sync::Arc;
use std::time::Duration;
use workloads::MapSummary;

/// Sleeps until `until`, counting progress every second meanwhile (the
/// emulated compute and pacing of a task are work, not a stall).
async fn sleep_making_progress(until: tokio::time::Instant, progress: &Progress) {
    loop {
        let now = tokio::time::Instant::now();
        if now >= until {
            return;
        }
        tokio::time::sleep_until(until.min(now + Duration::from_secs(1))).await;
        progress.add(1);
    }
}

/// What a task attempt uses.
pub struct Executor {
    /// This worker's address as the master names it (a reduce reads the
    /// map outputs kept here in place).
    pub advertise: String,
    pub slots: Arc<Slots>,
    pub store: Arc<BlockStore>,
    /// The store as readers guard it: damaged replicas dropped and counted.
    pub replicas: Arc<Replicas>,
    /// Map output for the reduces: in memory up to its budget, on disk
    /// beyond it.
    pub shuffle: Arc<MapOutputs>,
    /// The emulated disk (unlimited when off).
    pub disk: Arc<Link>,
    pub peers: Arc<Peers>,
    /// Compute pacing per slot, bytes/s.
    pub slot_rate_bytes: Option<f64>,
    /// Fetched map output a sort reduce holds before merging it to disk.
    pub reduce_memory_bytes: u64,
    /// Where reduces put their spill files (anonymous ones).
    pub spill_dir: std::path::PathBuf,
    /// Asked before a reduce's output becomes visible.
    pub master: Arc<crate::commit::MasterSession>,
}

impl Executor {
    fn reduce_io(&self) -> crate::reduce::ReduceIo<'_> {
        crate::reduce::ReduceIo {
            advertise: &self.advertise,
            store: &self.store,
            shuffle: &self.shuffle,
            disk: &self.disk,
            peers: &self.peers,
            reduce_memory: self.reduce_memory_bytes,
            spill_dir: &self.spill_dir,
            master: &self.master,
        }
    }
}

/// Starts `launch` in a free slot, or reports it rejected.
pub fn launch(ex: &Arc<Executor>, launch: Launch) {
    let started = ex.slots.book().start(launch.attempt);
    let Some((slot, progress)) = started else {
        let now = unix_ms();
        tracing::warn!(attempt = %launch.attempt, "no free slot; rejecting launch");
        ex.slots.ended(crate::metrics::Outcome::Rejected);
        ex.slots.book().reject(TaskResult {
            attempt: launch.attempt,
            slot: 0,
            outcome: TaskOutcome::Rejected {
                reason: "no free slot (or attempt already running)".into(),
            },
            started_unix_ms: now,
            finished_unix_ms: now,
            local_bytes: 0,
            remote_bytes: 0,
        });
        ex.slots.slot_freed();
        return;
    };
    tracing::debug!(attempt = %launch.attempt, slot, block = %launch.task.block(), "task started");
    let attempt = launch.attempt;
    let runner_ex = ex.clone();
    let runner = tokio::spawn(async move {
        let ex = runner_ex;
        let result = run(&ex, launch, slot, &progress).await;
        match &result.outcome {
            TaskOutcome::Failed { error } => {
                tracing::warn!(attempt = %result.attempt, %error, "task failed")
            }
            TaskOutcome::FetchFailed { lost, error } => {
                tracing::warn!(attempt = %result.attempt, lost = lost.len(), %error, "reduce could not fetch map output")
            }
            _ => tracing::debug!(attempt = %result.attempt, "task finished"),
        }
        use crate::metrics::Outcome;
        ex.slots.ended(match &result.outcome {
            TaskOutcome::Succeeded { .. } | TaskOutcome::Reduced { .. } => Outcome::Succeeded,
            TaskOutcome::Failed { .. } => Outcome::Failed,
            TaskOutcome::FetchFailed { .. } => Outcome::FetchFailed,
            TaskOutcome::NoSpace { .. } => Outcome::NoSpace,
            TaskOutcome::Rejected { .. } => Outcome::Rejected,
        });
        ex.slots.book().finish(result);
        ex.slots.slot_freed();
    });
    ex.slots.book().set_abort(&attempt, runner.abort_handle());
}

/// Stops an attempt the master gave up on (see `TaskBook::kill`).
pub fn kill(ex: &Executor, a: &AttemptId) {
    if ex.slots.book().kill(a) {
        // A map that finished before the kill came leaves no output behind
        // (one killed earlier never writes any: `spawn_mapper`).
        ex.shuffle.discard(*a);
        ex.slots.ended(crate::metrics::Outcome::Killed);
        tracing::warn!(attempt = %a, "attempt killed at the master's request");
        ex.slots.slot_freed();
    }
}

/// Runs one attempt: reads its input block and feeds it to the map function
/// on a blocking thread (so CPU-heavy maps never stall the async runtime).
///
/// With compute pacing (`slot_rate_bytes`), a successful task lasts at least
/// input bytes / rate: emulation of slower cores, documented as such. A map
/// with `compute_ms` then computes (sleeps) that long on top.
pub async fn run(ex: &Arc<Executor>, launch: Launch, slot: u32, progress: &Progress) -> TaskResult {
    let started = unix_ms();
    let t0 = tokio::time::Instant::now();
    let (local_bytes, remote_bytes, outcome) = match &launch.task {
        LaunchTask::Map {
            block,
            len,
            source,
            reduces,
            alternates,
            ..
        } => {
            let read = MapRead {
                block,
                len: *len,
                source,
                alternates,
            };
            match read_and_map(ex, &launch, read, *reduces, progress).await {
                Ok((local, remote, summary)) => (local, remote, TaskOutcome::Succeeded { summary }),
                Err((local, remote, outcome)) => (local, remote, outcome),
            }
        }
        LaunchTask::Reduce(r) => {
            let io = ex.reduce_io();
            match crate::reduce::run_reduce(
                &io,
                launch.attempt,
                launch.workload,
                launch.ratios,
                r,
                progress,
            )
            .await
            {
                Ok((summary, local, remote)) => {
                    // Its output block is stored here: report it now.
                    ex.slots.wake_heartbeat();
                    (local, remote, TaskOutcome::Reduced { summary })
                }
                Err((local, remote, crate::reduce::ReduceError::Failed(error))) => {
                    (local, remote, TaskOutcome::Failed { error })
                }
                Err((local, remote, crate::reduce::ReduceError::NoSpace(error))) => {
                    (local, remote, TaskOutcome::NoSpace { error })
                }
                Err((local, remote, crate::reduce::ReduceError::FetchFailed { lost, error })) => {
                    (local, remote, TaskOutcome::FetchFailed { lost, error })
                }
            }
        }
    };
    // Compute pacing: a successful task lasts at least its input / rate.
    let input = match &outcome {
        TaskOutcome::Succeeded { .. } | TaskOutcome::Reduced { .. } => local_bytes + remote_bytes,
        _ => 0,
    };
    if let (Some(rate), true) = (ex.slot_rate_bytes, input > 0) {
        let floor = std::time::Duration::from_secs_f64(input as f64 / rate);
        sleep_making_progress(t0 + floor, progress).await;
    }
    // Emulated compute of a successful map, after its input is in.
    if let (LaunchTask::Map { compute_ms, .. }, TaskOutcome::Succeeded { .. }) =
        (&launch.task, &outcome)
    {
        let until = tokio::time::Instant::now() + Duration::from_millis(*compute_ms);
        sleep_making_progress(until, progress).await;
    }
    TaskResult {
        attempt: launch.attempt,
        slot,
        outcome,
        started_unix_ms: started,
        finished_unix_ms: unix_ms(),
        local_bytes,
        remote_bytes,
    }
}

/// The bytes read locally and remotely, and the summary or the outcome
/// that says why not (`Failed`, or `NoSpace` when the map output did not
/// fit on the disk).
type ReadResult = Result<(u64, u64, MapSummary), (u64, u64, TaskOutcome)>;

/// What a map reads: its block, the block's length, the source the master
/// chose and the other replica holders.
struct MapRead<'a> {
    block: &'a common::BlockId,
    len: u64,
    source: &'a ReplicaSource,
    alternates: &'a [ReplicaAddr],
}

/// A map attempt: the map function runs off the runtime
/// (`spawn_mapper`) while its block is read into it (`read_block`), then
/// the read is checked against the block's length (`map_outcome`).
async fn read_and_map(
    ex: &Arc<Executor>,
    launch: &Launch,
    read: MapRead<'_>,
    reduces: u32,
    progress: &Progress,
) -> ReadResult {
    let (tx, whole, mapper) = spawn_mapper(ex, launch, read.len, reduces, progress);
    let (local, remote, problems) = read_block(ex, &read, tx, whole, progress).await;
    map_outcome(&read, local, remote, problems, mapper.await)
}

/// What the reader hands the map function: a piece of the block, or
/// (for a map that keeps its input) the block's bytes read into one
/// pooled buffer the map may keep.
enum MapInput {
    Piece(Bytes),
    Owned(Vec<u8>),
}

/// The map function, off the runtime: it consumes the pieces sent to it,
/// then writes its output for the reduces. Also says whether the map keeps
/// its whole input (the reader then fills one buffer for it).
fn spawn_mapper(
    ex: &Arc<Executor>,
    launch: &Launch,
    len: u64,
    reduces: u32,
    progress: &Progress,
) -> (
    tokio::sync::mpsc::Sender<MapInput>,
    bool,
    tokio::task::JoinHandle<Result<MapSummary, TaskOutcome>>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<MapInput>(8);
    let mut task = launch
        .workload
        .map_task_with(reduces, launch.ratios.unwrap_or_default());
    let whole = task.keeps_input();
    let outputs = ex.shuffle.clone();
    let attempt = launch.attempt;
    let mapped = progress.clone();
    let mapper = tokio::task::spawn_blocking(move || -> Result<MapSummary, TaskOutcome> {
        task.expect_input(len);
        let mut consumed = 0u64;
        while let Some(input) = rx.blocking_recv() {
            let n = match input {
                MapInput::Piece(piece) => {
                    task.consume(&piece);
                    piece.len()
                }
                MapInput::Owned(buf) => {
                    let n = buf.len();
                    task.consume_owned(buf);
                    n
                }
            } as u64;
            consumed += n;
            mapped.add(n);
        }
        if consumed != len {
            // Its input was cut short (the attempt was killed, or every
            // replica failed): no output is kept, partial or not.
            return Err(TaskOutcome::Failed {
                error: format!("map input ended at {consumed} of {len} bytes"),
            });
        }
        let (mut summary, out) = task.finish();
        if let workloads::MapOutput::Invalid(e) = &out {
            return Err(TaskOutcome::Failed { error: e.clone() });
        }
        summary.output_bytes = outputs.write(attempt, out).map_err(|e| {
            let error = format!("writing map output: {e}");
            if e.kind() == std::io::ErrorKind::StorageFull {
                TaskOutcome::NoSpace { error }
            } else {
                TaskOutcome::Failed { error }
            }
        })?;
        mapped.add(summary.output_bytes);
        Ok(summary)
    });
    (tx, whole, mapper)
}

/// Reads the block into the map: from the source the master chose, then
/// the other replicas; a checksum error or a dead peer costs a switch, not
/// the attempt, and each source continues where the last one stopped.
/// Returns the bytes read locally and remotely and what went wrong.
async fn read_block(
    ex: &Arc<Executor>,
    read: &MapRead<'_>,
    tx: tokio::sync::mpsc::Sender<MapInput>,
    whole: bool,
    progress: &Progress,
) -> (u64, u64, Vec<String>) {
    let mut sources: Vec<Option<&str>> = vec![match read.source {
        ReplicaSource::Local => None,
        ReplicaSource::Remote { addr, .. } => Some(addr.as_str()),
    }];
    sources.extend(read.alternates.iter().map(|a| Some(a.addr.as_str())));
    let (mut local, mut remote) = (0u64, 0u64);
    let mut problems: Vec<String> = Vec::new();
    for src in sources {
        let from = local + remote;
        if from >= read.len && read.len > 0 || tx.is_closed() {
            break;
        }
        match src {
            None => match read_local_replica(ex, (read.block, from, whole), &tx, progress).await {
                Ok(n) => local += n,
                Err((n, e)) => {
                    local += n;
                    problems.push(format!("local replica: {e}"));
                }
            },
            Some(addr) => {
                let (n, problem) = read_remote_replica(ex, addr, read, from, &tx, progress).await;
                remote += n;
                problems.extend(problem);
            }
        }
        if !problems.is_empty() && local + remote < read.len {
            tracing::warn!(block = %read.block, problem = %problems.last().expect("pushed"), read = local + remote, "replica failed mid-read; trying the next");
        }
    }
    (local, remote, problems)
}

/// This worker's replica from byte `from` on, chunk by chunk through the
/// (emulated) disk; a damaged replica is dropped. For a map that keeps its
/// input (`whole`), a read from the start fills one pooled buffer, handed
/// over once the block is read (or the replica fails: what it holds so
/// far); else each chunk is sent as it is read. The bytes read, or those
/// and why it stopped.
async fn read_local_replica(
    ex: &Arc<Executor>,
    (block, from, whole): (&common::BlockId, u64, bool),
    tx: &tokio::sync::mpsc::Sender<MapInput>,
    progress: &Progress,
) -> Result<u64, (u64, String)> {
    let ex = ex.clone();
    let block = block.clone();
    let tx = tx.clone();
    let read = progress.clone();
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || -> Result<u64, (u64, String)> {
        let damaged = |e: crate::store::StoreError| {
            ex.replicas.drop_if_damaged(&e);
            e.to_string()
        };
        let stopped = |n| (n, "map function stopped early".to_owned());
        let mut reader = ex.store.reader(&block).map_err(|e| (0, damaged(e)))?;
        let cb = reader.chunk_bytes().max(1);
        let mut whole =
            (whole && from == 0).then(|| workloads::pool::take(reader.len() as usize + 1));
        let (mut n, mut failed) = (0u64, None);
        for i in (from / cb) as usize..reader.chunk_count() {
            let got = if let Some(buf) = whole.as_mut() {
                if tx.is_closed() {
                    return Err(stopped(n));
                }
                if let Err(e) = reader.read_chunk_into(i, buf) {
                    failed = Some(damaged(e));
                    break;
                }
                buf.len() as u64 - n
            } else {
                let chunk = match reader.read_chunk(i) {
                    Ok(chunk) => chunk,
                    Err(e) => {
                        failed = Some(damaged(e));
                        break;
                    }
                };
                let skip = (from.saturating_sub(i as u64 * cb) as usize).min(chunk.len());
                let piece = chunk.slice(skip..);
                let len = piece.len() as u64;
                if tx.blocking_send(MapInput::Piece(piece)).is_err() {
                    return Err(stopped(n));
                }
                len
            };
            // The read takes its share of the (emulated) disk.
            rt.block_on(ex.disk.acquire_all(got));
            n += got;
            read.add(got);
        }
        if let Some(buf) = whole {
            if buf.is_empty() {
                workloads::pool::give(buf);
            } else if tx.blocking_send(MapInput::Owned(buf)).is_err() {
                return Err(stopped(n));
            }
        }
        failed.map_or(Ok(n), |e| Err((n, e)))
    })
    .await
    .unwrap_or_else(|e| Err((0, format!("reader panicked: {e}"))))
}

/// The replica at `addr` from byte `from` on, through this worker's
/// receive link. The bytes sent, and why it stopped short if it did.
async fn read_remote_replica(
    ex: &Arc<Executor>,
    addr: &str,
    read: &MapRead<'_>,
    from: u64,
    tx: &tokio::sync::mpsc::Sender<MapInput>,
    progress: &Progress,
) -> (u64, Option<String>) {
    let mut got = 0u64;
    let res = fetch_block_from(
        &ex.peers.bulk,
        &ex.peers.nic.rx,
        &ex.peers.token.get(),
        addr,
        read.block,
        read.len,
        from,
        |piece| {
            got += piece.len() as u64;
            progress.add(piece.len() as u64);
            let tx = tx.clone();
            async move {
                tx.send(MapInput::Piece(piece))
                    .await
                    .map_err(|_| "map function stopped early".to_owned())
            }
        },
    )
    .await;
    (got, res.err().map(|e| e.to_string()))
}

/// The attempt's outcome once the read is over and the map has ended:
/// short of the block after every source, the problems say why (a short
/// block without any is the length check's); else the map's own.
fn map_outcome(
    read: &MapRead<'_>,
    local: u64,
    remote: u64,
    problems: Vec<String>,
    mapped: Result<Result<MapSummary, TaskOutcome>, tokio::task::JoinError>,
) -> ReadResult {
    let failed = |error: String| Err((local, remote, TaskOutcome::Failed { error }));
    if local + remote != read.len {
        if !problems.is_empty() {
            return failed(problems.join("; "));
        }
        return failed(format!(
            "block {} has {} bytes, the master expected {}",
            read.block,
            local + remote,
            read.len
        ));
    }
    match mapped {
        Ok(Ok(s)) => Ok((local, remote, s)),
        Ok(Err(e)) => Err((local, remote, e)),
        Err(e) => failed(format!("map function panicked: {e}")),
    }
}
