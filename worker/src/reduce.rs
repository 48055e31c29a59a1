//! A reduce attempt, in the order it runs: fetch this partition of every
//! map's output (`shuffle_in`: a few at once, its own worker's outputs read
//! in place, the others through this worker's receive link) and consume
//! each as it arrives; open the output block here (`open_output_block`);
//! then merge, write and replicate at once (`merge_store_and_replicate`):
//! the reduce hands on pieces as they fill, each is hashed and written
//! here and sent to the replica workers, which get the block's digest as a
//! trailer once the last piece is hashed and the master has let the attempt
//! commit (`commit`; HDFS pipelines a block's write the same way). No copy
//! of the whole output is held.

use crate::fetch::{PeerLink, Peers};
use crate::nic::Link;
use crate::progress::Progress;
use crate::shuffle::{read_local, Input, MapOutputs, OutputPart};
use crate::store::{BlockStore, BlockTarget, BlockWriter, Caching, StoreError};
use crate::upload::upload_streamed;
use bytes::Bytes;
use common::http::bearer;
use common::wire::{KeyRange, LostOutput, ReduceLaunch, ShuffleInput};
use common::{AttemptId, JobId};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use workloads::{ReduceSummary, ReduceTask, Workload};

/// What a reduce attempt uses: this worker's address (its own map outputs
/// are read in place), the store its output block goes to, the map
/// outputs kept here, the disk, and the way to the peers.
pub struct ReduceIo<'a> {
    pub advertise: &'a str,
    pub store: &'a Arc<BlockStore>,
    pub shuffle: &'a Arc<MapOutputs>,
    pub disk: &'a Arc<Link>,
    pub peers: &'a Peers,
    /// Fetched map output a sort reduce holds before merging it to disk.
    pub reduce_memory: u64,
    /// Where its spill files go.
    pub spill_dir: &'a std::path::Path,
    /// Asked before the output becomes visible ([`crate::commit`]).
    pub master: &'a crate::commit::MasterSession,
}

/// Why a reduce attempt ended without output.
#[derive(Debug)]
pub enum ReduceError {
    /// Counts against the reduce's attempts.
    Failed(String),
    /// The output block did not fit on this worker's disk: runs again
    /// elsewhere without counting.
    NoSpace(String),
    /// Map outputs could not be fetched: they run again, the reduce retries.
    FetchFailed {
        lost: Vec<LostOutput>,
        error: String,
    },
}

/// A failed step: the bytes fetched locally and remotely until then, and why.
type Failure = (u64, u64, ReduceError);

/// Runs one reduce attempt: fetch this partition from every map, reduce,
/// store the output block here and copy it to the replica workers.
/// Returns (summary, bytes fetched from this worker, bytes fetched remotely).
pub async fn run_reduce(
    io: &ReduceIo<'_>,
    attempt: AttemptId,
    workload: Workload,
    ratios: Option<workloads::Ratios>,
    r: &ReduceLaunch,
    progress: &Progress,
) -> Result<(ReduceSummary, u64, u64), Failure> {
    let Some(task) = workload.reduce_task_with(Some(spill(io)), ratios.unwrap_or_default()) else {
        return Err((
            0,
            0,
            ReduceError::Failed(format!("{workload} has no reduce phase")),
        ));
    };
    let t0 = Instant::now();
    let part = part_name(workload, r);
    let (task, local, remote) =
        shuffle_in(io, (attempt.task.job, &part), r, task, progress).await?;
    let fetched = t0.elapsed();
    let phases = async {
        let writer = open_output_block(io, r).await?;
        merge_store_and_replicate(io, (attempt, r), task, writer, progress, t0).await
    };
    let (summary, merged, stored, replicated) = phases.await.map_err(|e| (local, remote, e))?;
    io.shuffle.count_spilled(summary.spilled_bytes);
    let ms = |d: Duration| d.as_millis() as u64;
    tracing::debug!(%attempt, fetched_ms = ms(fetched), merged_ms = ms(merged),
        stored_ms = ms(stored), replicated_ms = ms(replicated), spilled_bytes = summary.spilled_bytes,
        "reduce phases (ms from its start)");
    Ok((summary, local, remote))
}

/// The reduce's memory budget and spill files, their writes and reads
/// paced by this worker's (emulated) disk.
fn spill(io: &ReduceIo<'_>) -> workloads::Spill {
    let disk = io.disk.clone();
    let rt = tokio::runtime::Handle::current();
    workloads::Spill {
        memory_budget: io.reduce_memory,
        dir: io.spill_dir.to_path_buf(),
        // Called from the reduce's blocking threads (consume, the merge).
        charge: Arc::new(move |n| rt.block_on(disk.acquire_all(n))),
    }
}

/// The shuffle: every map's part for this reduce, a few at once (remote
/// ones share this worker's receive link, its own are read from its memory
/// or disk), each consumed by the reduce as it arrives. Returns the task
/// and the bytes read locally and remotely; a part that cannot be had
/// fails the attempt with every output kept where that one is.
async fn shuffle_in(
    io: &ReduceIo<'_>,
    job: (JobId, &str),
    r: &ReduceLaunch,
    mut task: Box<dyn ReduceTask>,
    progress: &Progress,
) -> Result<(Box<dyn ReduceTask>, u64, u64), Failure> {
    let (mut local, mut remote) = (0u64, 0u64);
    // Progress: the first half of the work is every map's part, counted
    // by parts (as Hadoop counts its copy phase by map outputs).
    let parts = r.inputs.len().max(1) as f64;
    let mut consumed_parts = 0usize;
    progress.set_done(0.0);
    let addrs: Vec<&str> = r.inputs.iter().map(|i| i.addr.as_str()).collect();
    let order = fetch_order(&addrs, r.partition);
    let mut fetches = futures_util::stream::iter(order.into_iter().map(|i| async move {
        fetch_input(io, job, r, &r.inputs[i], progress)
            .await
            .map_err(|e| (i, e))
    }))
    .buffered(4);
    while let Some(res) = fetches.next().await {
        let (own, data) = match res {
            Ok(v) => v,
            Err((i, error)) => {
                let lost = lost_with(r, &r.inputs[i].addr);
                return Err((local, remote, ReduceError::FetchFailed { lost, error }));
            }
        };
        if own {
            local += data.len() as u64;
        } else {
            remote += data.len() as u64;
        }
        let consumed = progress.clone();
        let (res, t) = tokio::task::spawn_blocking(move || {
            let n = data.len() as u64;
            let res = match data {
                Input::Fetched(v) => task.consume(v),
                Input::Kept(k) => task.consume_kept(k),
            };
            consumed.add(n);
            (res, task)
        })
        .await
        .map_err(|e| {
            (
                local,
                remote,
                ReduceError::Failed(format!("reduce panicked: {e}")),
            )
        })?;
        task = t;
        res.map_err(|e| (local, remote, ReduceError::Failed(e)))?;
        consumed_parts += 1;
        progress.set_done(0.5 * consumed_parts as f64 / parts);
    }
    Ok((task, local, remote))
}

/// One map's part for this reduce: read in place when the map ran here,
/// else fetched from its worker. True with it when it was this worker's.
async fn fetch_input(
    io: &ReduceIo<'_>,
    (job, part): (JobId, &str),
    r: &ReduceLaunch,
    input: &ShuffleInput,
    progress: &Progress,
) -> Result<(bool, Input), String> {
    let part = part.to_owned();
    if input.addr == io.advertise {
        let want = OutputPart {
            job: job.0,
            map: input.map,
            attempt: input.attempt,
            part,
        };
        let got = read_local(io.shuffle, io.disk, want, r.range.clone(), progress).await?;
        return Ok((true, got));
    }
    let url = shuffle_url(job, input, &part, r.range.as_ref());
    let got = fetch_whole(io.peers.downlink(), &url, progress).await?;
    Ok((false, Input::Fetched(got)))
}

/// A reduce's part of a map output: its partition (`p<r>`), or a sorted
/// run (`run` of records, `lines`), asked for by key range.
fn part_name(workload: Workload, r: &ReduceLaunch) -> String {
    match (&r.range, workload.run_part()) {
        (Some(_), Some(run)) => run.to_owned(),
        _ => format!("p{}", r.partition),
    }
}

/// Where a map's part is served (`worker/src/http.rs`'s shuffle route).
fn shuffle_url(job: JobId, input: &ShuffleInput, part: &str, range: Option<&KeyRange>) -> String {
    let base = format!(
        "{}/shuffle/{}/{}/{}",
        input.addr, job.0, input.map, input.attempt
    );
    match range {
        Some(KeyRange { lo, hi }) => {
            let mut q = Vec::new();
            if let Some(lo) = lo {
                q.push(format!("lo={}", hex::encode(lo)));
            }
            if let Some(hi) = hi {
                q.push(format!("hi={}", hex::encode(hi)));
            }
            format!("{base}/{part}?{}", q.join("&"))
        }
        None => format!("{base}/{part}"),
    }
}

/// Every output kept at `addr`, whose part could not be had: that worker
/// is most likely gone (the master fences by attempt, so outputs already
/// run again elsewhere are not run a third time).
fn lost_with(r: &ReduceLaunch, addr: &str) -> Vec<LostOutput> {
    r.inputs
        .iter()
        .filter(|x| x.addr == addr)
        .map(|x| LostOutput {
            map: x.map,
            attempt: x.attempt,
            worker: x.worker,
        })
        .collect()
}

/// The writer of this reduce's output block in the local store, around the
/// page cache (job output is read rarely).
async fn open_output_block(
    io: &ReduceIo<'_>,
    r: &ReduceLaunch,
) -> Result<BlockWriter, ReduceError> {
    let target = BlockTarget {
        id: r.output.block.clone(),
        file: r.output.file.clone(),
        index: r.output.index,
        file_blocks: r.output.file_blocks,
        generation: r.output.generation,
    };
    let store = io.store.clone();
    tokio::task::spawn_blocking(move || store.output_writer(target, Caching::DropBehind))
        .await
        .map_err(|e| ReduceError::Failed(format!("storing output panicked: {e}")))?
        .map_err(store_failure)
}

/// The merge, the local write and the uploads to the replica workers, all
/// at once, piece by piece. Nothing is committed (here, or by the replicas,
/// which get no digest) unless the merge ended well, every byte it made
/// was written and the master let this attempt commit. Returns the summary and when (from `t0`) the merge ended,
/// the block was stored here, and the last replica was sent.
async fn merge_store_and_replicate(
    io: &ReduceIo<'_>,
    (attempt, r): (AttemptId, &ReduceLaunch),
    task: Box<dyn ReduceTask>,
    writer: BlockWriter,
    progress: &Progress,
    t0: Instant,
) -> Result<(ReduceSummary, Duration, Duration, Duration), ReduceError> {
    // Progress: the second half is the output, by bytes written here and
    // handed to the replicas.
    let out_len = task.output_len().filter(|&n| n > 0);
    let mut out_done = 0u64;
    progress.set_done(0.5);
    let (mut pieces, merging) = spawn_merge(task);
    let (write_tx, writing) = spawn_block_writer(writer);
    let mut feeds = Vec::new();
    let mut digests = Vec::new();
    let uploads = futures_util::future::join_all(r.output.replicas.iter().map(|addr| {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(2);
        let (dtx, drx) = tokio::sync::oneshot::channel::<String>();
        feeds.push(Some(tx));
        digests.push(dtx);
        async move {
            // A replica target that fails is left out, as HDFS's write
            // pipeline drops a failed datanode: the block is stored here,
            // and the master's re-replication makes up the factor once the
            // job is done.
            if let Err(e) =
                upload_streamed(io.peers.uplink(), addr, &r.output, rx, drx, progress).await
            {
                tracing::warn!(block = %r.output.block, error = %e, "output replica skipped");
            }
            t0.elapsed()
        }
    }));
    let store_here = async {
        while let Some(piece) = pieces.recv().await {
            let n = piece.len() as u64;
            progress.add(n);
            // The job's output is written through the (emulated) disk.
            io.disk.acquire_all(n).await;
            for feed in feeds.iter_mut() {
                if let Some(tx) = feed {
                    if tx.send(piece.clone()).await.is_err() {
                        // That upload ended; it logs why.
                        *feed = None;
                    }
                }
            }
            if write_tx.send(piece).await.is_err() {
                // The writer stopped on an error: it says which below.
                break;
            }
            progress.add(n);
            out_done += n;
            if let Some(len) = out_len {
                progress.set_done(0.5 + 0.5 * (out_done as f64 / len as f64).min(1.0));
            }
        }
        // The merge stops at its next piece if it is not done.
        drop(pieces);
        let summary = merging
            .await
            .map_err(|e| ReduceError::Failed(format!("reduce panicked: {e}")))?
            .map_err(ReduceError::Failed)?;
        let merged_at = t0.elapsed();
        drop(write_tx);
        drop(feeds);
        let (writer, sums) = writing
            .await
            .map_err(|e| ReduceError::Failed(format!("storing output panicked: {e}")))?
            .map_err(store_failure)?;
        if sums.len != summary.output_bytes {
            return Err(ReduceError::Failed(format!(
                "the reduce made {} bytes of output but {} were written",
                summary.output_bytes, sums.len
            )));
        }
        // Still the task's current attempt? Only then do the replicas
        // (sent the digest) and this store commit the block.
        io.master
            .may_commit(io.peers, attempt)
            .await
            .map_err(|refused| {
                ReduceError::Failed(format!(
                    "the master refused this attempt's output commit: {}",
                    refused.0
                ))
            })?;
        let digest = sums.block_digest_hex();
        for d in digests {
            let _ = d.send(digest.clone());
        }
        tokio::task::spawn_blocking(move || writer.commit())
            .await
            .map_err(|e| ReduceError::Failed(format!("storing output panicked: {e}")))?
            .map_err(store_failure)?;
        Ok::<_, ReduceError>((summary, merged_at, t0.elapsed()))
    };
    let (stored, replicated) = tokio::join!(store_here, uploads);
    let (summary, merged, stored) = stored?;
    let replicated = replicated.into_iter().max().unwrap_or(stored);
    Ok((summary, merged, stored, replicated))
}

/// The reduce's merge, off the runtime, handing on pooled pieces as they
/// fill; it stops at its next piece once the receiver is dropped.
fn spawn_merge(
    task: Box<dyn ReduceTask>,
) -> (
    tokio::sync::mpsc::Receiver<Bytes>,
    tokio::task::JoinHandle<Result<ReduceSummary, String>>,
) {
    let (piece_tx, piece_rx) = tokio::sync::mpsc::channel::<Bytes>(2);
    let merging = tokio::task::spawn_blocking(move || {
        task.finish_into(&mut |piece| {
            piece_tx
                .blocking_send(Bytes::from_owner(workloads::pool::Pooled::new(piece)))
                .is_ok()
        })
    });
    (piece_rx, merging)
}

/// The local write of the output block, off the runtime: every piece sent,
/// then the writer and its checksums once the sender is dropped.
#[allow(clippy::type_complexity)]
fn spawn_block_writer(
    mut writer: BlockWriter,
) -> (
    tokio::sync::mpsc::Sender<Bytes>,
    tokio::task::JoinHandle<Result<(BlockWriter, common::checksum::BlockChecksums), StoreError>>,
) {
    let (write_tx, mut write_rx) = tokio::sync::mpsc::channel::<Bytes>(2);
    let writing = tokio::task::spawn_blocking(move || {
        while let Some(piece) = write_rx.blocking_recv() {
            writer.write(&piece)?;
        }
        let sums = writer.checksums();
        Ok::<_, StoreError>((writer, sums))
    });
    (write_tx, writing)
}

/// The order a reduce fetches its inputs in: one from each source worker
/// in turn, and each reduce starting at another worker (by its partition),
/// so concurrent reduces do not all fetch from one worker's uplink at once
/// (Hadoop's and Spark's reducers randomise their fetch order for this).
fn fetch_order(addrs: &[&str], partition: u32) -> Vec<usize> {
    let mut by_source: std::collections::BTreeMap<&str, std::collections::VecDeque<usize>> =
        Default::default();
    for (i, a) in addrs.iter().enumerate() {
        by_source.entry(a).or_default().push_back(i);
    }
    let mut queues: Vec<_> = by_source.into_values().collect();
    if !queues.is_empty() {
        let k = partition as usize % queues.len();
        queues.rotate_left(k);
    }
    let mut order = Vec::with_capacity(addrs.len());
    while order.len() < addrs.len() {
        for q in queues.iter_mut() {
            if let Some(i) = q.pop_front() {
                order.push(i);
            }
        }
    }
    order
}

/// GETs `url` whole, paced by the peer link.
async fn fetch_whole(
    peer: PeerLink<'_>,
    url: &str,
    progress: &Progress,
) -> Result<Vec<u8>, String> {
    let resp = peer
        .bulk
        .get(url, &bearer(&peer.token.get()), 0)
        .await
        .map_err(|e| format!("fetching {url}: {e}"))?;
    let mut resp = resp
        .check(format!("fetching {url}"))
        .await
        .map_err(|e| e.to_string())?;
    // The whole body is kept: reserve it once rather than grow by copies.
    let mut out = workloads::pool::take(resp.content_length().unwrap_or(0).min(1 << 32) as usize);
    while let Some(piece) = resp.chunk().await.map_err(|e| {
        format!(
            "fetching {url}: stream broke after {} bytes: {e}",
            out.len()
        )
    })? {
        peer.link.acquire(piece.len()).await;
        progress.add(piece.len() as u64);
        out.extend_from_slice(&piece);
    }
    Ok(out)
}

/// A store error as the reduce's failure: a full disk runs the reduce
/// again elsewhere without counting.
fn store_failure(e: StoreError) -> ReduceError {
    let full = matches!(&e, StoreError::Io { source, .. }
            if source.kind() == std::io::ErrorKind::StorageFull);
    let error = format!("storing output block: {e}");
    if full {
        ReduceError::NoSpace(error)
    } else {
        ReduceError::Failed(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_fetch_from_each_source_in_turn_starting_apart() {
        let addrs = ["a", "b", "a", "c", "b", "a"];
        // a: 0 2 5, b: 1 4, c: 3.
        assert_eq!(fetch_order(&addrs, 0), [0, 1, 3, 2, 4, 5]);
        assert_eq!(fetch_order(&addrs, 1), [1, 3, 0, 4, 2, 5]);
        assert_eq!(fetch_order(&addrs, 5), [3, 0, 1, 2, 4, 5]);
        assert!(fetch_order(&[], 3).is_empty());
        // Every input exactly once.
        let mut o = fetch_order(&addrs, 7);
        o.sort_unstable();
        assert_eq!(o, [0, 1, 2, 3, 4, 5]);
    }
}
