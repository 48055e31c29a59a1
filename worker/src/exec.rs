//! Task slots and task execution. `TaskBook` is the single place that knows
//! which slots are busy, which attempts run and which results wait to be
//! reported; one lock guards all three so a heartbeat never sees an attempt
//! that is neither running nor finished.

use crate::fetch::fetch_block_from;
use crate::progress::Progress;
use crate::WorkerCtx;
use bytes::Bytes;
use common::wire::{
    AttemptProgress, Launch, LaunchTask, ReplicaAddr, ReplicaSource, TaskOutcome, TaskResult,
};
use common::{unix_ms, AttemptId};
use std::collections::HashMap;
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

struct RunningTask {
    slot: u32,
    progress: Progress,
    /// Stops the attempt's runner (set just after it is spawned).
    abort: Option<tokio::task::AbortHandle>,
}

pub struct TaskBook {
    busy: Vec<bool>,
    /// Per busy slot: since when, and for how long if known (background).
    since: Vec<Option<(std::time::Instant, Option<Duration>)>>,
    /// Slots held by background processes (see `background`).
    background: u32,
    running: HashMap<AttemptId, RunningTask>,
    finished: Vec<TaskResult>,
}

impl TaskBook {
    pub fn new(slots: u32) -> Self {
        TaskBook {
            busy: vec![false; slots as usize],
            since: vec![None; slots as usize],
            background: 0,
            running: HashMap::new(),
            finished: Vec::new(),
        }
    }

    pub fn free_slots(&self) -> u32 {
        self.busy.iter().filter(|b| !**b).count() as u32
    }

    pub fn running(&self) -> Vec<AttemptId> {
        let mut v: Vec<_> = self.running.keys().copied().collect();
        v.sort();
        v
    }

    /// Takes the finished results for a heartbeat; `restore` puts them back
    /// if the heartbeat did not get through.
    pub fn take_finished(&mut self) -> Vec<TaskResult> {
        std::mem::take(&mut self.finished)
    }

    pub fn restore(&mut self, mut results: Vec<TaskResult>) {
        results.append(&mut self.finished);
        self.finished = results;
    }

    /// Slots held by background processes now.
    pub fn background(&self) -> u32 {
        self.background
    }

    /// Takes a free slot for a background process that holds it for `dur`.
    pub fn start_background(&mut self, dur: Duration) -> Option<u32> {
        let slot = self.busy.iter().position(|b| !*b)?;
        self.busy[slot] = true;
        self.since[slot] = Some((std::time::Instant::now(), Some(dur)));
        self.background += 1;
        Some(slot as u32)
    }

    pub fn end_background(&mut self, slot: u32) {
        if let Some(b) = self.busy.get_mut(slot as usize) {
            if *b {
                *b = false;
                self.since[slot as usize] = None;
                self.background = self.background.saturating_sub(1);
            }
        }
    }

    /// Every busy slot's age and known remaining time, for the heartbeat.
    pub fn busy_report(&self) -> Vec<common::wire::SlotBusy> {
        let now = std::time::Instant::now();
        self.since
            .iter()
            .flatten()
            .map(|(t0, dur)| {
                let elapsed = now.saturating_duration_since(*t0);
                common::wire::SlotBusy {
                    elapsed_ms: elapsed.as_millis() as u64,
                    remaining_ms: dur.map(|d| d.saturating_sub(elapsed).as_millis() as u64),
                }
            })
            .collect()
    }

    /// Every running attempt's progress count, for the heartbeat.
    pub fn progress_report(&self) -> Vec<AttemptProgress> {
        let mut v: Vec<AttemptProgress> = self
            .running
            .iter()
            .map(|(a, r)| AttemptProgress {
                attempt: *a,
                units: r.progress.get(),
                slot: r.slot,
            })
            .collect();
        v.sort_by_key(|p| p.attempt);
        v
    }

    fn start(&mut self, attempt: AttemptId) -> Option<(u32, Progress)> {
        if self.running.contains_key(&attempt) {
            return None;
        }
        let slot = self.busy.iter().position(|b| !*b)? as u32;
        self.busy[slot as usize] = true;
        self.since[slot as usize] = Some((std::time::Instant::now(), None));
        let progress = Progress::default();
        self.running.insert(
            attempt,
            RunningTask {
                slot,
                progress: progress.clone(),
                abort: None,
            },
        );
        Some((slot, progress))
    }

    fn free(&mut self, attempt: &AttemptId) -> Option<RunningTask> {
        let r = self.running.remove(attempt)?;
        self.busy[r.slot as usize] = false;
        self.since[r.slot as usize] = None;
        Some(r)
    }

    fn finish(&mut self, result: TaskResult) {
        // A killed attempt's runner may still finish: nobody waits for it.
        if self.free(&result.attempt).is_some() {
            self.finished.push(result);
        }
    }

    /// Stops attempt `a` (the master no longer waits for it) and frees its
    /// slot; no result is reported. A thread blocked inside the kernel (a
    /// hung disk read) cannot be interrupted: it ends when its call returns,
    /// and its output is discarded. False if `a` was not running.
    pub fn kill(&mut self, a: &AttemptId) -> bool {
        match self.free(a) {
            Some(r) => {
                if let Some(h) = r.abort {
                    h.abort();
                }
                true
            }
            None => false,
        }
    }
}

/// Starts `launch` in a free slot, or reports it rejected.
pub fn launch(ctx: &Arc<WorkerCtx>, launch: Launch) {
    let started = ctx.book.lock().unwrap().start(launch.attempt);
    let Some((slot, progress)) = started else {
        let now = unix_ms();
        tracing::warn!(attempt = %launch.attempt, "no free slot; rejecting launch");
        ctx.outcomes.count(crate::metrics::Outcome::Rejected);
        ctx.book.lock().unwrap().finished.push(TaskResult {
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
        ctx.slot_freed();
        return;
    };
    tracing::debug!(attempt = %launch.attempt, slot, block = %launch.task.block(), "task started");
    let attempt = launch.attempt;
    let runner_ctx = ctx.clone();
    let runner = tokio::spawn(async move {
        let ctx = runner_ctx;
        let result = run(&ctx, launch, slot, &progress).await;
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
        ctx.outcomes.count(match &result.outcome {
            TaskOutcome::Succeeded { .. } | TaskOutcome::Reduced { .. } => Outcome::Succeeded,
            TaskOutcome::Failed { .. } => Outcome::Failed,
            TaskOutcome::FetchFailed { .. } => Outcome::FetchFailed,
            TaskOutcome::NoSpace { .. } => Outcome::NoSpace,
            TaskOutcome::Rejected { .. } => Outcome::Rejected,
        });
        ctx.book.lock().unwrap().finish(result);
        ctx.slot_freed();
    });
    if let Some(r) = ctx.book.lock().unwrap().running.get_mut(&attempt) {
        r.abort = Some(runner.abort_handle());
    }
}

/// Stops an attempt the master gave up on (see `TaskBook::kill`).
pub fn kill(ctx: &WorkerCtx, a: &AttemptId) {
    if ctx.book.lock().unwrap().kill(a) {
        ctx.outcomes.count(crate::metrics::Outcome::Killed);
        tracing::warn!(attempt = %a, "attempt killed at the master's request");
        ctx.slot_freed();
    }
}

/// Runs one attempt: reads its input block and feeds it to the map function
/// on a blocking thread (so CPU-heavy maps never stall the async runtime).
///
/// With compute pacing (`slot_rate_bytes`), a successful task lasts at least
/// input bytes / rate: emulation of slower cores, documented as such. A map
/// with `compute_ms` then computes (sleeps) that long on top.
pub async fn run(
    ctx: &Arc<WorkerCtx>,
    launch: Launch,
    slot: u32,
    progress: &Progress,
) -> TaskResult {
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
            match read_and_map(ctx, &launch, read, *reduces, progress).await {
                Ok((local, remote, summary)) => (local, remote, TaskOutcome::Succeeded { summary }),
                Err((local, remote, outcome)) => (local, remote, outcome),
            }
        }
        LaunchTask::Reduce(r) => {
            match crate::reduce::run_reduce(ctx, launch.attempt, launch.workload, r, progress).await
            {
                Ok((summary, local, remote)) => (local, remote, TaskOutcome::Reduced { summary }),
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
    if let (Some(rate), true) = (ctx.slot_rate_bytes, input > 0) {
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
    ctx: &Arc<WorkerCtx>,
    launch: &Launch,
    read: MapRead<'_>,
    reduces: u32,
    progress: &Progress,
) -> ReadResult {
    let (tx, mapper) = spawn_mapper(ctx, launch, read.len, reduces, progress);
    let (local, remote, problems) = read_block(ctx, &read, tx, progress).await;
    map_outcome(&read, local, remote, problems, mapper.await)
}

/// The map function, off the runtime: it consumes the pieces sent to it,
/// then writes its output for the reduces.
fn spawn_mapper(
    ctx: &Arc<WorkerCtx>,
    launch: &Launch,
    len: u64,
    reduces: u32,
    progress: &Progress,
) -> (
    tokio::sync::mpsc::Sender<Bytes>,
    tokio::task::JoinHandle<Result<MapSummary, TaskOutcome>>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(8);
    let workload = launch.workload;
    let outputs = ctx.shuffle.clone();
    let attempt = launch.attempt;
    let mapped = progress.clone();
    let mapper = tokio::task::spawn_blocking(move || -> Result<MapSummary, TaskOutcome> {
        let mut task = workload.map_task(reduces);
        task.expect_input(len);
        while let Some(piece) = rx.blocking_recv() {
            task.consume(&piece);
            mapped.add(piece.len() as u64);
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
    (tx, mapper)
}

/// Reads the block into the map: from the source the master chose, then
/// the other replicas; a checksum error or a dead peer costs a switch, not
/// the attempt, and each source continues where the last one stopped.
/// Returns the bytes read locally and remotely and what went wrong.
async fn read_block(
    ctx: &Arc<WorkerCtx>,
    read: &MapRead<'_>,
    tx: tokio::sync::mpsc::Sender<Bytes>,
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
            None => match read_local_replica(ctx, read.block, from, &tx, progress).await {
                Ok(n) => local += n,
                Err((n, e)) => {
                    local += n;
                    problems.push(format!("local replica: {e}"));
                }
            },
            Some(addr) => {
                let (n, problem) = read_remote_replica(ctx, addr, read, from, &tx, progress).await;
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
/// (emulated) disk; a damaged replica is dropped. The bytes sent, or those
/// and why it stopped.
async fn read_local_replica(
    ctx: &Arc<WorkerCtx>,
    block: &common::BlockId,
    from: u64,
    tx: &tokio::sync::mpsc::Sender<Bytes>,
    progress: &Progress,
) -> Result<u64, (u64, String)> {
    let ctx = ctx.clone();
    let block = block.clone();
    let tx = tx.clone();
    let read = progress.clone();
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || -> Result<u64, (u64, String)> {
        let damaged = |e: crate::store::StoreError| {
            ctx.replicas.drop_if_damaged(&e);
            e.to_string()
        };
        let mut reader = ctx.store.reader(&block).map_err(|e| (0, damaged(e)))?;
        let cb = reader.chunk_bytes().max(1);
        let mut n = 0u64;
        for i in (from / cb) as usize..reader.chunk_count() {
            let chunk = reader.read_chunk(i).map_err(|e| (n, damaged(e)))?;
            let skip = (from.saturating_sub(i as u64 * cb) as usize).min(chunk.len());
            let piece = chunk.slice(skip..);
            // The read takes its share of the (emulated) disk.
            rt.block_on(ctx.disk.acquire_all(piece.len() as u64));
            n += piece.len() as u64;
            read.add(piece.len() as u64);
            if tx.blocking_send(piece).is_err() {
                return Err((n, "map function stopped early".to_owned()));
            }
        }
        Ok(n)
    })
    .await
    .unwrap_or_else(|e| Err((0, format!("reader panicked: {e}"))))
}

/// The replica at `addr` from byte `from` on, through this worker's
/// receive link. The bytes sent, and why it stopped short if it did.
async fn read_remote_replica(
    ctx: &Arc<WorkerCtx>,
    addr: &str,
    read: &MapRead<'_>,
    from: u64,
    tx: &tokio::sync::mpsc::Sender<Bytes>,
    progress: &Progress,
) -> (u64, Option<String>) {
    let mut got = 0u64;
    let res = fetch_block_from(
        &ctx.http,
        &ctx.nic.rx,
        &ctx.token,
        addr,
        read.block,
        read.len,
        from,
        |piece| {
            got += piece.len() as u64;
            progress.add(piece.len() as u64);
            let tx = tx.clone();
            async move {
                tx.send(piece)
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
