//! The shuffle: map output kept by the mapper, served to reducers over HTTP
//! through this worker's NIC (transmit), fetched by reducers through theirs
//! (receive); and the reduce attempt itself, which writes its output as a
//! replicated block of the job's output file.
//!
//! A map's output is kept in memory while the worker's budget
//! (`workers.shuffle_memory_mb`) allows ([`KeptOutputs`]), else on its local
//! disk. Either way it lives until its job ends or the worker stops: the
//! master forgets a worker's map outputs when it restarts.
//!
//! Disk layout: `<data_dir>/shuffle/<job>/m<map>.a<attempt>/` holding `p<r>`
//! (hash-partitioned output, one file per reduce) or `run` (sort: the sorted
//! records, served by key range). A map's directory is written under a
//! temporary name and renamed, so a reducer never sees half of it. Job
//! directories are deleted when the master says the job ended, and the whole
//! tree when the worker starts (the master forgets earlier attempts then).

use crate::nic::Link;
use crate::WorkerCtx;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use common::http::{bearer, ApiError};
use common::http_client::check;
use common::wire::{
    KeyRange, LostOutput, ReduceLaunch, BLOCK_CACHE_HEADER, BLOCK_DIGEST_HEADER,
    BLOCK_FILE_BLOCKS_HEADER, BLOCK_FILE_HEADER, BLOCK_INDEX_HEADER,
};
use common::{AttemptId, JobId};
use futures_util::StreamExt;
use reqwest::header::AUTHORIZATION;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use workloads::{MapOutput, ReduceSummary, Workload};

/// Root of this worker's map output.
pub fn root(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("shuffle")
}

fn map_dir(root: &std::path::Path, a: AttemptId) -> PathBuf {
    root.join(a.task.job.0.to_string())
        .join(format!("m{}.a{}", a.task.index, a.attempt))
}

/// Map outputs kept in memory, by (job, map, attempt), within a budget.
pub struct KeptOutputs {
    budget: u64,
    inner: std::sync::Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    bytes: u64,
    outputs: std::collections::HashMap<(u32, u32, u32), Arc<MapOutput>>,
    /// Jobs that had an output go to disk (said once per job in the log).
    spilled: std::collections::HashSet<u32>,
}

fn output_bytes(out: &MapOutput) -> u64 {
    match out {
        MapOutput::Partitions(parts) => parts.iter().map(|p| p.len() as u64).sum(),
        MapOutput::SortedRun { run, .. } => run.len() as u64,
        MapOutput::None | MapOutput::Invalid(_) => 0,
    }
}

fn key(a: AttemptId) -> (u32, u32, u32) {
    (a.task.job.0, a.task.index, a.attempt)
}

impl KeptOutputs {
    pub fn new(budget: u64) -> Self {
        KeptOutputs {
            budget,
            inner: Default::default(),
        }
    }

    /// Bytes kept now.
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `out` if it fits the budget; gives it back if not.
    fn keep(&self, a: AttemptId, out: MapOutput) -> Result<(), MapOutput> {
        let n = output_bytes(&out);
        let mut k = self.lock();
        if k.bytes + n > self.budget {
            if k.spilled.insert(a.task.job.0) {
                tracing::info!(job = %a.task.job, kept_bytes = k.bytes, output_bytes = n,
                    budget_bytes = self.budget,
                    "map output beyond workers.shuffle_memory_mb goes to disk (said once per job)");
            }
            return Err(out);
        }
        k.bytes += n;
        if let Some(old) = k.outputs.insert(key(a), Arc::new(out)) {
            k.bytes -= output_bytes(&old);
        }
        Ok(())
    }

    fn get(&self, job: u32, map: u32, attempt: u32) -> Option<Arc<MapOutput>> {
        self.lock().outputs.get(&(job, map, attempt)).cloned()
    }

    /// Drops a job's outputs; their buffers go back to the pool unless a
    /// read still holds them.
    fn forget(&self, job: JobId) {
        let gone: Vec<Arc<MapOutput>> = {
            let mut k = self.lock();
            let keys: Vec<_> = k.outputs.keys().filter(|x| x.0 == job.0).copied().collect();
            let gone: Vec<_> = keys.iter().filter_map(|x| k.outputs.remove(x)).collect();
            k.spilled.remove(&job.0);
            k.bytes -= gone.iter().map(|o| output_bytes(o)).sum::<u64>();
            gone
        };
        for o in gone {
            if let Ok(out) = Arc::try_unwrap(o) {
                recycle(out);
            }
        }
    }
}

/// A map output's buffers back to the pool (`workloads::pool`).
fn recycle(out: MapOutput) {
    match out {
        MapOutput::Partitions(parts) => parts.into_iter().for_each(workloads::pool::give),
        MapOutput::SortedRun { run, .. } => workloads::pool::give(run.into_buffer()),
        MapOutput::None | MapOutput::Invalid(_) => {}
    }
}

/// Keeps a finished map's output in memory, or writes it to disk when the
/// budget is spent; returns its bytes.
pub fn write_map_output(ctx: &WorkerCtx, a: AttemptId, out: MapOutput) -> std::io::Result<u64> {
    if matches!(out, MapOutput::None | MapOutput::Invalid(_)) {
        return Ok(0);
    }
    let n = output_bytes(&out);
    let Err(out) = ctx.kept.keep(a, out) else {
        return Ok(n);
    };
    let written = write_map_files(&ctx.shuffle_root, a, &out);
    recycle(out);
    written
}

fn write_map_files(root: &std::path::Path, a: AttemptId, out: &MapOutput) -> std::io::Result<u64> {
    let dir = map_dir(root, a);
    let parent = dir.parent().expect("map dir has a parent");
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(parent)?;
    let mut n = 0u64;
    match out {
        MapOutput::Partitions(parts) => {
            for (r, p) in parts.iter().enumerate() {
                std::fs::write(tmp.path().join(format!("p{r}")), p)?;
                n += p.len() as u64;
            }
        }
        MapOutput::SortedRun { run, .. } => {
            let mut f = std::fs::File::create(tmp.path().join("run"))?;
            run.write_to(&mut f)?;
            n += run.len() as u64;
        }
        MapOutput::None | MapOutput::Invalid(_) => return Ok(0),
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(tmp.keep(), &dir)?;
    Ok(n)
}

/// Deletes a job's map output, kept and on disk.
pub fn forget_job(ctx: &WorkerCtx, job: JobId) {
    ctx.kept.forget(job);
    let _ = std::fs::remove_dir_all(ctx.shuffle_root.join(job.0.to_string()));
}

#[derive(Deserialize)]
pub struct RangeQuery {
    /// sort: hex-encoded key bounds of the requested range.
    lo: Option<String>,
    hi: Option<String>,
}

/// `GET /shuffle/{job}/{map}/{attempt}/{part}`: `p<r>` or `run?lo=&hi=`.
#[utoipa::path(get, path = "/shuffle/{job}/{map}/{attempt}/{part}", tag = "shuffle",
    params(("job" = u32, Path, description = "the job's number"),
        ("map" = u32, Path, description = "the map task's index"),
        ("attempt" = u32, Path, description = "the map attempt"),
        ("part" = String, Path, description = "p<r>: partition r (hash-partitioned jobs); run: the sorted run (sort)"),
        ("lo" = Option<String>, Query, description = "run: lowest key, hex (inclusive)"),
        ("hi" = Option<String>, Query, description = "run: key bound, hex (exclusive)")),
    responses((status = 200, description = "the map output asked for", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 400, description = "a bad part or key", body = common::wire::ErrorBody),
        (status = 404, description = "no such map output here", body = common::wire::ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = common::wire::ErrorBody)))]
pub async fn serve(
    State(ctx): State<Arc<WorkerCtx>>,
    Path((job, map, attempt, part)): Path<(u32, u32, u32, String)>,
    Query(q): Query<RangeQuery>,
) -> Result<Response, ApiError> {
    let valid = part == "run"
        || (part.len() > 1
            && part.starts_with('p')
            && part[1..].bytes().all(|b| b.is_ascii_digit()));
    if !valid {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("shuffle part {part:?} must be `run` or p<number>"),
        ));
    }
    let unhex = |s: &Option<String>, name: &str| -> Result<Option<Vec<u8>>, ApiError> {
        s.as_ref()
            .map(|h| {
                hex::decode(h).map_err(|_| {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        format!("`{name}` is not hex: {h:?}"),
                    )
                })
            })
            .transpose()
    };
    let (lo, hi) = (unhex(&q.lo, "lo")?, unhex(&q.hi, "hi")?);
    let want = OutputPart {
        job,
        map,
        attempt,
        part: part.clone(),
    };
    let opener = ctx.clone();
    let opened = tokio::task::spawn_blocking(move || {
        open_output(&opener, &want, lo.as_deref(), hi.as_deref()).map(Arc::new)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?;
    let file = opened.map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        ApiError::new(
            code,
            format!("map output job {job} map {map} attempt {attempt} {part}: {e}"),
        )
    })?;
    let (start, end) = (file.start, file.end);
    let len = end - start;
    // Read ahead in large reads (one blocking call each), sent in NIC
    // pieces so concurrent streams interleave on the links.
    const READ: u64 = 4 << 20;
    let stream = futures_util::stream::unfold(
        (Bytes::new(), start, file, ctx),
        move |(mut buf, mut at, file, ctx)| async move {
            if buf.is_empty() {
                if at >= end {
                    return None;
                }
                let n = READ.min(end - at);
                let f = file.clone();
                // Read into a pooled buffer, which goes back to the pool
                // once the last piece of it is sent.
                let read = tokio::task::spawn_blocking(move || {
                    let mut v = workloads::pool::take(n as usize);
                    v.resize(n as usize, 0);
                    f.read_at(at, &mut v)
                        .map(|_| Bytes::from_owner(workloads::pool::Pooled::new(v)))
                })
                .await
                .map_err(std::io::Error::other)
                .and_then(|r| r);
                match read {
                    Ok(v) => {
                        at += n;
                        buf = v;
                    }
                    Err(e) => return Some((Err(e), (Bytes::new(), end, file, ctx))),
                }
            }
            let piece = buf.split_to(buf.len().min(crate::nic::PIECE));
            tokio::join!(
                ctx.disk.acquire(piece.len()),
                ctx.nic.tx.acquire(piece.len())
            );
            Some((Ok::<Bytes, std::io::Error>(piece), (buf, at, file, ctx)))
        },
    );
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_LENGTH, len)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// One map attempt's output part: `p<r>` or `run`.
#[derive(Clone, Debug)]
struct OutputPart {
    job: u32,
    map: u32,
    attempt: u32,
    part: String,
}

/// A map output part kept here, memory or file, and the byte range of it
/// asked for.
struct Opened {
    src: Source,
    start: u64,
    end: u64,
}

enum Source {
    File(std::fs::File),
    /// A kept output; for hash partitions, the partition's index.
    Kept(Arc<MapOutput>, usize),
}

impl Opened {
    /// Fills `buf` from byte `at` of the part (within `start..end`).
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        match &self.src {
            Source::File(f) => f.read_exact_at(buf, at),
            Source::Kept(out, part) => out
                .read_at(*part, at as usize, buf)
                .map_err(std::io::Error::other),
        }
    }
}

/// Opens a map output part kept here and finds the bytes asked for: the
/// whole partition, or a sorted run's key range `lo <= key < hi`.
fn open_output(
    ctx: &WorkerCtx,
    want: &OutputPart,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> std::io::Result<Opened> {
    let not_found = || std::io::Error::new(std::io::ErrorKind::NotFound, "not kept here");
    if let Some(out) = ctx.kept.get(want.job, want.map, want.attempt) {
        let (part, start, end) = match (&*out, want.part.as_str()) {
            (MapOutput::SortedRun { run, .. }, "run") => {
                let (s, e) = run.range(lo, hi);
                (0, s as u64, e as u64)
            }
            (MapOutput::Partitions(parts), p) => {
                let r: usize = p
                    .strip_prefix('p')
                    .and_then(|r| r.parse().ok())
                    .filter(|r| *r < parts.len())
                    .ok_or_else(not_found)?;
                (r, 0, parts[r].len() as u64)
            }
            _ => return Err(not_found()),
        };
        return Ok(Opened {
            src: Source::Kept(out, part),
            start,
            end,
        });
    }
    let path = ctx
        .shuffle_root
        .join(want.job.to_string())
        .join(format!("m{}.a{}", want.map, want.attempt))
        .join(&want.part);
    let file = std::fs::File::open(&path)?;
    let len = file.metadata()?.len();
    let (start, end) = if want.part == "run" {
        range_in_file(&file, len, lo, hi)?
    } else {
        (0, len)
    };
    Ok(Opened {
        src: Source::File(file),
        start,
        end,
    })
}

/// A reduce's input from one map: bytes fetched (or read from this
/// worker's disk), or a map output this worker keeps in memory, which the
/// reduce reads where it lies.
enum Input {
    Fetched(Vec<u8>),
    Kept(workloads::KeptInput),
}

impl Input {
    fn len(&self) -> usize {
        match self {
            Input::Fetched(v) => v.len(),
            Input::Kept(k) => k.len(),
        }
    }
}

/// Reads a map output part kept on this worker from its memory (handed
/// over as it lies, no copy) or its disk (a reduce's own worker's outputs
/// cross no network, as in Hadoop), paced by the emulated disk.
async fn read_local(
    ctx: &Arc<WorkerCtx>,
    want: OutputPart,
    range: Option<KeyRange>,
    progress: &crate::progress::Progress,
) -> Result<Input, String> {
    let what = format!(
        "map output job {} map {} attempt {} {} (local)",
        want.job, want.map, want.attempt, want.part
    );
    let opener = ctx.clone();
    let data = tokio::task::spawn_blocking(move || -> std::io::Result<Input> {
        let (lo, hi) = match &range {
            Some(r) => (r.lo.as_deref(), r.hi.as_deref()),
            None => (None, None),
        };
        let out = open_output(&opener, &want, lo, hi)?;
        let (start, end) = (out.start as usize, out.end as usize);
        match out.src {
            Source::Kept(output, part) => Ok(Input::Kept(workloads::KeptInput {
                output,
                part,
                start,
                end,
            })),
            Source::File(f) => {
                use std::os::unix::fs::FileExt;
                let mut v = workloads::pool::take(end - start);
                v.resize(end - start, 0);
                f.read_exact_at(&mut v, start as u64)?;
                Ok(Input::Fetched(v))
            }
        }
    })
    .await
    .map_err(|e| format!("{what}: {e}"))?
    .map_err(|e| format!("{what}: {e}"))?;
    ctx.disk.acquire_all(data.len() as u64).await;
    progress.add(data.len() as u64);
    Ok(data)
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

/// The byte range of a stored sorted run (`len` bytes) holding the keys
/// `lo <= key < hi`, reading only the keys its binary search visits.
fn range_in_file(
    file: &std::fs::File,
    len: u64,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    use workloads::sort::{KEY, RECORD};
    if !len.is_multiple_of(RECORD as u64) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a sorted run of {len} bytes is not whole {RECORD}-byte records"),
        ));
    }
    let key = |i: u64| {
        let mut k = [0u8; KEY];
        file.read_exact_at(&mut k, i * RECORD as u64).map(|_| k)
    };
    workloads::sort::range_by_key(len / RECORD as u64, key, lo, hi)
}

/// `e` with the causes below it (reqwest's own text omits them).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s += &format!(": {c}");
        cur = c.source();
    }
    s
}

/// GETs `url` whole, paced by `rx`.
async fn fetch(
    http: &reqwest::Client,
    rx: &Link,
    token: &str,
    url: &str,
    progress: &crate::progress::Progress,
) -> Result<Vec<u8>, String> {
    let resp = http
        .get(url)
        .header(AUTHORIZATION, bearer(token))
        .send()
        .await
        .map_err(|e| format!("fetching {url}: {}", error_chain(&e)))?;
    let resp = check(resp, format!("fetching {url}"))
        .await
        .map_err(|e| e.to_string())?;
    // The whole body is kept: reserve it once rather than grow by copies.
    let mut out = workloads::pool::take(resp.content_length().unwrap_or(0).min(1 << 32) as usize);
    let mut stream = resp.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece.map_err(|e| {
            format!(
                "fetching {url}: stream broke after {} bytes: {e}",
                out.len()
            )
        })?;
        rx.acquire(piece.len()).await;
        progress.add(piece.len() as u64);
        out.extend_from_slice(&piece);
    }
    Ok(out)
}

/// An HTTP body fed frame by frame through a channel: the data, then the
/// trailers (or an error, which aborts the request).
struct FrameBody(tokio::sync::mpsc::Receiver<Result<http_body::Frame<Bytes>, std::io::Error>>);

impl http_body::Body for FrameBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx)
    }
}

/// PUTs an output block to a replica worker while it is produced: the
/// pieces as they come from `pieces`, paced by this worker's transmit
/// link, then the block's digest as the `x-block-digest` trailer once
/// `digest` gives it. If `digest` is dropped instead (the output failed
/// here), the upload is broken off and the receiver keeps nothing.
pub(crate) async fn upload_streamed(
    ctx: &Arc<WorkerCtx>,
    addr: &str,
    target: &common::wire::OutputTarget,
    mut pieces: tokio::sync::mpsc::Receiver<Bytes>,
    digest: tokio::sync::oneshot::Receiver<String>,
    progress: &crate::progress::Progress,
) -> Result<(), String> {
    let url = format!("{addr}/blocks/{}", target.block);
    let (frames, body) = tokio::sync::mpsc::channel(4);
    let request = ctx
        .http
        .put(&url)
        .header(AUTHORIZATION, bearer(&ctx.token))
        .header(header::TRAILER, BLOCK_DIGEST_HEADER)
        .header(BLOCK_FILE_HEADER, &target.file)
        .header(BLOCK_INDEX_HEADER, target.index.to_string())
        .header(BLOCK_FILE_BLOCKS_HEADER, target.file_blocks.to_string())
        // Job output: written around the receiver's page cache.
        .header(BLOCK_CACHE_HEADER, "drop-behind")
        .body(reqwest::Body::wrap(FrameBody(body)))
        .send();
    let feed = async move {
        while let Some(mut rest) = pieces.recv().await {
            while !rest.is_empty() {
                let piece = rest.split_to(rest.len().min(crate::nic::PIECE));
                ctx.nic.tx.acquire(piece.len()).await;
                progress.add(piece.len() as u64);
                if frames
                    .send(Ok(http_body::Frame::data(piece)))
                    .await
                    .is_err()
                {
                    // The request ended: it says why.
                    return;
                }
            }
        }
        let last = match digest.await {
            Ok(d) => {
                let mut t = axum::http::HeaderMap::new();
                t.insert(
                    BLOCK_DIGEST_HEADER,
                    d.parse().expect("a hex digest is a header value"),
                );
                Ok(http_body::Frame::trailers(t))
            }
            Err(_) => Err(std::io::Error::other(
                "the output block was not completed on the reduce's worker",
            )),
        };
        let _ = frames.send(last).await;
    };
    let (resp, ()) = tokio::join!(request, feed);
    let resp = resp.map_err(|e| format!("replicating output to {url}: {}", error_chain(&e)))?;
    check(resp, format!("replicating output to {url}"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
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

/// Runs one reduce attempt: fetch this partition from every map, reduce,
/// store the output block here and copy it to the replica workers.
/// Returns (summary, bytes fetched from this worker, bytes fetched remotely).
pub async fn run_reduce(
    ctx: &Arc<WorkerCtx>,
    attempt: AttemptId,
    workload: Workload,
    r: &ReduceLaunch,
    progress: &crate::progress::Progress,
) -> Result<(ReduceSummary, u64, u64), (u64, u64, ReduceError)> {
    let Some(mut task) = workload.reduce_task() else {
        return Err((
            0,
            0,
            ReduceError::Failed(format!("{workload} has no reduce phase")),
        ));
    };
    let job = attempt.task.job;
    let t0 = std::time::Instant::now();
    let (mut local, mut remote) = (0u64, 0u64);
    // Fetch a few inputs at once; remote ones share this worker's receive
    // link, its own are read from its disk.
    let addrs: Vec<&str> = r.inputs.iter().map(|i| i.addr.as_str()).collect();
    let order = fetch_order(&addrs, r.partition);
    let part = if r.range.is_some() {
        "run".to_owned()
    } else {
        format!("p{}", r.partition)
    };
    let mut fetches = futures_util::stream::iter(order.into_iter().map(|i| {
        let input = &r.inputs[i];
        let own = input.addr == ctx.advertise;
        let want = OutputPart {
            job: job.0,
            map: input.map,
            attempt: input.attempt,
            part: part.clone(),
        };
        let ctx = ctx.clone();
        let progress = progress.clone();
        let range = r.range.clone();
        let part = part.clone();
        async move {
            let got = if own {
                read_local(&ctx, want, range, &progress).await
            } else {
                let base = format!(
                    "{}/shuffle/{}/{}/{}",
                    input.addr, job.0, input.map, input.attempt
                );
                let url = match &range {
                    Some(KeyRange { lo, hi }) => {
                        let mut q = Vec::new();
                        if let Some(lo) = lo {
                            q.push(format!("lo={}", hex::encode(lo)));
                        }
                        if let Some(hi) = hi {
                            q.push(format!("hi={}", hex::encode(hi)));
                        }
                        format!("{base}/run?{}", q.join("&"))
                    }
                    None => format!("{base}/{part}"),
                };
                fetch(&ctx.http, &ctx.nic.rx, &ctx.token, &url, &progress)
                    .await
                    .map(Input::Fetched)
            };
            got.map(|d| (own, d)).map_err(|e| (i, e))
        }
    }))
    .buffered(4);
    while let Some(res) = fetches.next().await {
        let (own, data) = match res {
            Ok(v) => v,
            Err((i, error)) => {
                // Every output kept where the failing one is: that worker is
                // most likely gone (the master fences by attempt, so outputs
                // already run again elsewhere are not run a third time).
                let addr = &r.inputs[i].addr;
                let lost = r
                    .inputs
                    .iter()
                    .filter(|x| x.addr == *addr)
                    .map(|x| LostOutput {
                        map: x.map,
                        attempt: x.attempt,
                        worker: x.worker,
                    })
                    .collect();
                return Err((local, remote, ReduceError::FetchFailed { lost, error }));
            }
        };
        if own {
            local += data.len() as u64;
        } else {
            remote += data.len() as u64;
        }
        let consumed = progress.clone();
        let (data, t) = tokio::task::spawn_blocking(move || {
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
        data.map_err(|e| (local, remote, ReduceError::Failed(e)))?;
    }
    let fetched = t0.elapsed();
    // The output, streamed: the reduce hands on pieces as they fill; each
    // is hashed and written here and sent to the replica workers at the
    // same time (HDFS pipelines a block's write the same way). No copy of
    // the whole output is ever held. The replicas get the block's digest
    // as a trailer once the last piece is hashed.
    let target = crate::store::BlockTarget {
        id: r.output.block.clone(),
        file: r.output.file.clone(),
        index: r.output.index,
        file_blocks: r.output.file_blocks,
    };
    let store = ctx.store.clone();
    let writer = tokio::task::spawn_blocking(move || {
        store.output_writer(target, crate::store::Caching::DropBehind)
    })
    .await
    .map_err(|e| {
        (
            local,
            remote,
            ReduceError::Failed(format!("storing output panicked: {e}")),
        )
    })?
    .map_err(|e| (local, remote, store_failure(e)))?;
    let (piece_tx, mut piece_rx) = tokio::sync::mpsc::channel::<Bytes>(2);
    let merging = tokio::task::spawn_blocking(move || {
        task.finish_into(&mut |piece| {
            piece_tx
                .blocking_send(Bytes::from_owner(workloads::pool::Pooled::new(piece)))
                .is_ok()
        })
    });
    let (write_tx, mut write_rx) = tokio::sync::mpsc::channel::<Bytes>(2);
    let writing = tokio::task::spawn_blocking(move || {
        let mut writer = writer;
        while let Some(piece) = write_rx.blocking_recv() {
            writer.write(&piece)?;
        }
        let sums = writer.checksums();
        Ok::<_, crate::store::StoreError>((writer, sums))
    });
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
            if let Err(e) = upload_streamed(ctx, addr, &r.output, rx, drx, progress).await {
                tracing::warn!(block = %r.output.block, error = %e, "output replica skipped");
            }
            t0.elapsed()
        }
    }));
    let store_here = async {
        while let Some(piece) = piece_rx.recv().await {
            let n = piece.len() as u64;
            progress.add(n);
            // The job's output is written through the (emulated) disk.
            ctx.disk.acquire_all(n).await;
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
        }
        // The merge stops at its next piece if it is not done; nothing is
        // committed (here, or by the replicas, which get no digest) unless
        // it ended well and every byte it made was written.
        drop(piece_rx);
        let summary = merging
            .await
            .map_err(|e| ReduceError::Failed(format!("reduce panicked: {e}")))?;
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
    let (summary, merged, stored) = stored.map_err(|e| (local, remote, e))?;
    ctx.wake_heartbeat();
    let ms = |d: std::time::Duration| d.as_millis() as u64;
    let replicated = replicated.into_iter().max().unwrap_or(stored);
    tracing::debug!(%attempt, fetched_ms = ms(fetched), merged_ms = ms(merged),
        stored_ms = ms(stored), replicated_ms = ms(replicated), "reduce phases (ms from its start)");
    Ok((summary, local, remote))
}

/// A store error as the reduce's failure: a full disk runs the reduce
/// again elsewhere without counting.
fn store_failure(e: crate::store::StoreError) -> ReduceError {
    let full = matches!(&e, crate::store::StoreError::Io { source, .. }
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
    use workloads::sort::{range_in_run, RECORD};

    fn attempt(job: u32, map: u32, attempt: u32) -> AttemptId {
        AttemptId {
            task: common::TaskRef {
                job: JobId(job),
                index: map,
            },
            attempt,
        }
    }

    #[test]
    fn kept_outputs_stay_within_their_budget_until_the_job_is_forgotten() {
        let kept = KeptOutputs::new(250);
        let parts = |n: usize| MapOutput::Partitions(vec![vec![1; n], vec![2; 10]]);
        assert!(kept.keep(attempt(1, 0, 0), parts(90)).is_ok());
        assert!(kept.keep(attempt(2, 0, 0), parts(90)).is_ok());
        assert_eq!(kept.bytes(), 200);
        // 60 more would pass the budget: given back, to go to disk.
        let back = kept.keep(attempt(1, 1, 0), parts(50)).unwrap_err();
        assert!(matches!(back, MapOutput::Partitions(p) if p[0].len() == 50));
        // The same attempt kept again replaces, not adds.
        assert!(kept.keep(attempt(1, 0, 0), parts(40)).is_ok());
        assert_eq!(kept.bytes(), 150);
        assert!(kept.get(1, 0, 0).is_some() && kept.get(1, 1, 0).is_none());
        kept.forget(JobId(1));
        assert_eq!(kept.bytes(), 100);
        assert!(kept.get(1, 0, 0).is_none() && kept.get(2, 0, 0).is_some());
        // Nothing is kept with no budget.
        assert!(KeptOutputs::new(0)
            .keep(attempt(1, 0, 0), parts(1))
            .is_err());
    }

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

    #[test]
    fn a_stored_run_gives_the_ranges_of_the_run_in_memory() {
        let keys = [
            "aaaaaaaaaa",
            "cccccccccc",
            "mmmmmmmmmm",
            "mmmmmmmmmm",
            "zzzzzzzzzz",
        ];
        let run: Vec<u8> = keys
            .iter()
            .flat_map(|k| {
                let mut r = format!("{k} ").into_bytes();
                r.resize(RECORD - 1, b'x');
                r.push(b'\n');
                r
            })
            .collect();
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &run).unwrap();
        let len = run.len() as u64;
        let bounds: [Option<&[u8]>; 5] = [
            None,
            Some(b"a"),
            Some(b"cccccccccc"),
            Some(b"mmmmmmmmmm"),
            Some(b"zzzzzzzzzzz"),
        ];
        for lo in bounds {
            for hi in bounds {
                let (a, b) = range_in_file(&f, len, lo, hi).unwrap();
                let (c, d) = range_in_run(&run, lo, hi);
                assert_eq!((a as usize, b as usize), (c, d), "lo {lo:?} hi {hi:?}");
            }
        }
        assert_eq!(
            range_in_file(&f, len, Some(b"cccccccccc"), Some(b"mmmmmmmmmm")).unwrap(),
            (100, 200)
        );
        let err = range_in_file(&f, len - 1, None, None).unwrap_err();
        assert!(
            err.to_string().contains("not whole 100-byte records"),
            "{err}"
        );
    }
}
