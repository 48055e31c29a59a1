//! The shuffle's map side: map output kept by the mapper, served to
//! reducers over HTTP through this worker's NIC (transmit), and read in
//! place by a reduce on this worker. The reduce attempt itself is
//! `reduce`.
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

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use common::http::ApiError;
use common::wire::KeyRange;
use common::{AttemptId, JobId};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use workloads::sort::RunFormat;
use workloads::MapOutput;

/// Root of this worker's map output.
pub fn root(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("shuffle")
}

fn map_dir(root: &std::path::Path, a: AttemptId) -> PathBuf {
    root.join(a.task.job.0.to_string())
        .join(format!("m{}.a{}", a.task.index, a.attempt))
}

/// This worker's map outputs: the shuffle service's store, kept in memory
/// within the budget and on disk under `root` beyond it. The map executor
/// writes into it, the shuffle server and a reduce on this worker read it,
/// the heartbeat loop forgets finished jobs.
pub struct MapOutputs {
    root: PathBuf,
    kept: KeptOutputs,
    /// Bytes the reduces here wrote to spill files (their memory budget's
    /// overflow, `workers.reduce_memory_mb`).
    reduce_spilled: std::sync::atomic::AtomicU64,
}

impl MapOutputs {
    /// Outputs under `root` (see [`root`]), at most `memory_budget` bytes
    /// of them in memory.
    pub fn new(root: PathBuf, memory_budget: u64) -> Self {
        MapOutputs {
            root,
            kept: KeptOutputs::new(memory_budget),
            reduce_spilled: Default::default(),
        }
    }

    /// Counts bytes a reduce here wrote to spill files.
    pub fn count_spilled(&self, bytes: u64) {
        self.reduce_spilled
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Bytes the reduces here wrote to spill files so far.
    pub fn reduce_spilled(&self) -> u64 {
        self.reduce_spilled
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes kept in memory now.
    pub fn kept_bytes(&self) -> u64 {
        self.kept.bytes()
    }

    /// Keeps a finished map's output in memory, or writes it to disk when
    /// the budget is spent; returns its bytes.
    pub fn write(&self, a: AttemptId, out: MapOutput) -> std::io::Result<u64> {
        if matches!(out, MapOutput::None | MapOutput::Invalid(_)) {
            return Ok(0);
        }
        let n = output_bytes(&out);
        let Err(out) = self.kept.keep(a, out) else {
            return Ok(n);
        };
        let written = write_map_files(&self.root, a, &out);
        recycle(out);
        written
    }

    /// Every map output kept here, in memory or on disk, as the attempt
    /// that made it (sorted): a restarted master asks at registration.
    pub fn held(&self) -> Vec<AttemptId> {
        let mut out: Vec<AttemptId> = self
            .kept
            .lock()
            .outputs
            .keys()
            .map(|&(job, map, attempt)| attempt_id(job, map, attempt))
            .collect();
        for job in std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
        {
            let Some(j) = job.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            for m in std::fs::read_dir(job.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                // `m<map>.a<attempt>`; a `.tmp-` directory is half written.
                let name = m.file_name();
                let parsed = name.to_str().and_then(|s| {
                    let (map, attempt) = s.strip_prefix('m')?.split_once(".a")?;
                    Some((map.parse::<u32>().ok()?, attempt.parse::<u32>().ok()?))
                });
                if let Some((map, attempt)) = parsed {
                    out.push(attempt_id(j, map, attempt));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Deletes one attempt's map output, kept or on disk (a killed
    /// attempt's: speculation's loser, or one the master gave up on).
    pub fn discard(&self, a: AttemptId) {
        self.kept.discard(a);
        let _ = std::fs::remove_dir_all(map_dir(&self.root, a));
    }

    /// Deletes a job's map output, kept and on disk.
    pub fn forget_job(&self, job: JobId) {
        self.kept.forget(job);
        let _ = std::fs::remove_dir_all(self.root.join(job.0.to_string()));
    }
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

fn attempt_id(job: u32, map: u32, attempt: u32) -> AttemptId {
    AttemptId {
        task: common::TaskRef {
            job: JobId(job),
            index: map,
        },
        attempt,
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
    fn discard(&self, a: AttemptId) {
        let gone = {
            let mut k = self.lock();
            let gone = k.outputs.remove(&key(a));
            if let Some(o) = &gone {
                k.bytes -= output_bytes(o);
            }
            gone
        };
        if let Some(Ok(out)) = gone.map(Arc::try_unwrap) {
            recycle(out);
        }
    }

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
            let mut f = std::fs::File::create(tmp.path().join(run.format().part()))?;
            run.write_to(&mut f)?;
            n += run.len() as u64;
        }
        MapOutput::None | MapOutput::Invalid(_) => return Ok(0),
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(tmp.keep(), &dir)?;
    Ok(n)
}

/// The shuffle service: the map outputs kept here, served through the
/// (emulated) disk and the NIC's transmit link.
#[derive(Clone)]
pub struct ShuffleService {
    pub outputs: Arc<MapOutputs>,
    pub disk: Arc<crate::nic::Link>,
    pub nic: Arc<crate::nic::Nic>,
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
        ("part" = String, Path, description = "p<r>: partition r (hash-partitioned jobs); run: the sorted run of records (sort); lines: the sorted run of lines (sort-lines)"),
        ("lo" = Option<String>, Query, description = "run: lowest key, hex (inclusive)"),
        ("hi" = Option<String>, Query, description = "run: key bound, hex (exclusive)")),
    responses((status = 200, description = "the map output asked for", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 400, description = "a bad part or key", body = common::wire::ErrorBody),
        (status = 404, description = "no such map output here", body = common::wire::ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = common::wire::ErrorBody)))]
pub async fn serve(
    State(svc): State<ShuffleService>,
    Path((job, map, attempt, part)): Path<(u32, u32, u32, String)>,
    Query(q): Query<RangeQuery>,
) -> Result<Response, ApiError> {
    let valid = RunFormat::of_part(&part).is_some()
        || (part.len() > 1
            && part.starts_with('p')
            && part[1..].bytes().all(|b| b.is_ascii_digit()));
    if !valid {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("shuffle part {part:?} must be `run`, `lines` or p<number>"),
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
    let outputs = svc.outputs.clone();
    let opened = tokio::task::spawn_blocking(move || {
        open_output(&outputs, &want, lo.as_deref(), hi.as_deref()).map(Arc::new)
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
        (Bytes::new(), start, file, svc),
        move |(mut buf, mut at, file, svc)| async move {
            if buf.is_empty() {
                if at >= end {
                    return None;
                }
                let n = READ.min(end - at);
                let f = file.clone();
                let read = tokio::task::spawn_blocking(move || f.read(at, n as usize))
                    .await
                    .map_err(std::io::Error::other)
                    .and_then(|r| r);
                match read {
                    Ok(v) => {
                        at += n;
                        buf = v;
                    }
                    Err(e) => return Some((Err(e), (Bytes::new(), end, file, svc))),
                }
            }
            let piece = buf.split_to(buf.len().min(crate::nic::PIECE));
            tokio::join!(
                svc.disk.acquire(piece.len()),
                svc.nic.tx.acquire(piece.len())
            );
            Some((Ok::<Bytes, std::io::Error>(piece), (buf, at, file, svc)))
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
pub(crate) struct OutputPart {
    pub job: u32,
    pub map: u32,
    pub attempt: u32,
    pub part: String,
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
    /// `n` bytes of the part from byte `at` (within `start..end`): a kept
    /// output's bytes where they lie, a file's read into a pooled buffer
    /// that goes back to the pool once the last piece of it is sent.
    fn read(&self, at: u64, n: usize) -> std::io::Result<Bytes> {
        match &self.src {
            Source::File(f) => read_file_range(f, at, n)
                .map(|v| Bytes::from_owner(workloads::pool::Pooled::new(v))),
            Source::Kept(out, part) => {
                let kept = workloads::KeptInput {
                    output: out.clone(),
                    part: *part,
                    start: at as usize,
                    end: at as usize + n,
                };
                workloads::KeptBytes::new(kept)
                    .map(Bytes::from_owner)
                    .map_err(std::io::Error::other)
            }
        }
    }
}

/// Bytes `at..at + n` of `f` into a pooled buffer, read into its spare
/// room (no zeroing first). `f`'s offset moves: each caller has its own
/// handle.
fn read_file_range(mut f: &std::fs::File, at: u64, n: usize) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    let mut v = workloads::pool::take(n);
    f.seek(std::io::SeekFrom::Start(at))?;
    f.take(n as u64).read_to_end(&mut v)?;
    if v.len() != n {
        let got = v.len();
        workloads::pool::give(v);
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("wanted {n} bytes at {at}, the file had {got}"),
        ));
    }
    Ok(v)
}

/// Opens a map output part kept here and finds the bytes asked for: the
/// whole partition, or a sorted run's range of records `lo <= record < hi`.
fn open_output(
    outputs: &MapOutputs,
    want: &OutputPart,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> std::io::Result<Opened> {
    let not_found = || std::io::Error::new(std::io::ErrorKind::NotFound, "not kept here");
    if let Some(out) = outputs.kept.get(want.job, want.map, want.attempt) {
        let (part, start, end) = match (&*out, want.part.as_str()) {
            (MapOutput::SortedRun { run, .. }, p) if p == run.format().part() => {
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
    let path = outputs
        .root
        .join(want.job.to_string())
        .join(format!("m{}.a{}", want.map, want.attempt))
        .join(&want.part);
    let file = std::fs::File::open(&path)?;
    let len = file.metadata()?.len();
    let (start, end) = match RunFormat::of_part(&want.part) {
        Some(RunFormat::Records) => range_in_file(&file, len, lo, hi)?,
        Some(RunFormat::Lines) => lines_in_file(&file, len, lo, hi)?,
        None => (0, len),
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
pub(crate) enum Input {
    Fetched(Vec<u8>),
    Kept(workloads::KeptInput),
}

impl Input {
    pub(crate) fn len(&self) -> usize {
        match self {
            Input::Fetched(v) => v.len(),
            Input::Kept(k) => k.len(),
        }
    }
}

/// Reads a map output part kept on this worker from its memory (handed
/// over as it lies, no copy) or its disk (a reduce's own worker's outputs
/// cross no network, as in Hadoop), paced by the emulated disk.
pub(crate) async fn read_local(
    outputs: &Arc<MapOutputs>,
    disk: &crate::nic::Link,
    want: OutputPart,
    range: Option<KeyRange>,
    progress: &crate::progress::Progress,
) -> Result<Input, String> {
    let what = format!(
        "map output job {} map {} attempt {} {} (local)",
        want.job, want.map, want.attempt, want.part
    );
    let opener = outputs.clone();
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
            Source::File(f) => Ok(Input::Fetched(read_file_range(
                &f,
                start as u64,
                end - start,
            )?)),
        }
    })
    .await
    .map_err(|e| format!("{what}: {e}"))?
    .map_err(|e| format!("{what}: {e}"))?;
    disk.acquire_all(data.len() as u64).await;
    progress.add(data.len() as u64);
    Ok(data)
}

/// The byte range of a stored sorted run (`len` bytes) holding the records
/// `lo <= record < hi`, reading only the records its binary search visits.
fn range_in_file(
    file: &std::fs::File,
    len: u64,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    use workloads::sort::RECORD;
    if !len.is_multiple_of(RECORD as u64) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a sorted run of {len} bytes is not whole {RECORD}-byte records"),
        ));
    }
    let record = |i: u64| {
        let mut r = [0u8; RECORD];
        file.read_exact_at(&mut r, i * RECORD as u64).map(|_| r)
    };
    workloads::sort::range_by_record(len / RECORD as u64, record, lo, hi)
}

/// The byte range of a stored sorted run of lines (`len` bytes) holding
/// the lines `lo <= line < hi`, reading only the lines its binary search
/// visits.
fn lines_in_file(
    file: &std::fs::File,
    len: u64,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    let read = |at: u64, buf: &mut Vec<u8>| -> std::io::Result<()> {
        buf.clear();
        let mut chunk = [0u8; 4096];
        let mut pos = at;
        while pos < len {
            let n = (len - pos).min(chunk.len() as u64) as usize;
            file.read_exact_at(&mut chunk[..n], pos)?;
            if let Some(p) = chunk[..n].iter().position(|&b| b == b'\n') {
                buf.extend_from_slice(&chunk[..=p]);
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
            pos += n as u64;
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a sorted run of lines of {len} bytes ends without a newline"),
        ))
    };
    workloads::lines::range_by_line(len, read, lo, hi)
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

    /// A killed attempt's output goes, in memory or on disk; the job's
    /// other outputs stay.
    #[test]
    fn a_discarded_attempt_leaves_no_output_behind() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = MapOutputs::new(dir.path().to_owned(), 250);
        let parts = |n: usize| MapOutput::Partitions(vec![vec![1; n], vec![2; 10]]);
        outputs.write(attempt(1, 0, 0), parts(90)).unwrap();
        outputs.write(attempt(1, 1, 0), parts(90)).unwrap();
        // Past the budget: on disk.
        outputs.write(attempt(1, 2, 1), parts(90)).unwrap();
        assert_eq!(outputs.held().len(), 3);
        outputs.discard(attempt(1, 0, 0));
        outputs.discard(attempt(1, 2, 1));
        assert_eq!(outputs.held(), [attempt(1, 1, 0)]);
        assert_eq!(outputs.kept_bytes(), 100);
        // One that was never kept: nothing happens.
        outputs.discard(attempt(9, 9, 9));
        assert_eq!(outputs.held(), [attempt(1, 1, 0)]);
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
