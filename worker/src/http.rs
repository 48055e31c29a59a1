//! The worker's HTTP server: block listing, ranged block downloads (paced by
//! the NIC's transmit link, verified chunk by chunk), uploads (paced by the
//! receive link, visible only once their digest verifies), map output for
//! the reduces, status, metrics and timelines. Every route but the API
//! description requires a credential of a role `RULES` lets in. `GET /v1/openapi.json` describes
//! every route below (a test checks that this table, the description and
//! the routes agree).
//!
//! | method | path | body / query | answer |
//! |---|---|---|---|
//! | GET | /blocks | | [BlockInfo] |
//! | GET | /blocks/{id} | Range header | the block (x-block-digest), 206 for a range |
//! | PUT | /blocks/{id} | the block; x-block-digest, x-block-file, x-block-index, x-block-file-blocks, x-block-generation | 201 BlockInfo |
//! | DELETE | /blocks/{id} | | 204 |
//! | GET | /blocks/ | | 400: an empty id |
//! | PUT | /blocks/ | | 400: an empty id |
//! | DELETE | /blocks/ | | 400: an empty id |
//! | GET | /status | | WorkerStatus |
//! | GET | /metrics | | Prometheus metrics (OpenMetrics text) |
//! | GET | /timeline | ?since_ms=UNIX_MS | WorkerTimeline |
//! | GET | /shuffle/{job}/{map}/{attempt}/{part} | ?lo=HEX&hi=HEX for part `run` | map output |
//! | POST | /v1/heartbeat-now | | 204: heartbeats at once (with out-of-band heartbeats) |
//! | PUT | /v1/emulation | EmulationRates | EmulationRates: the emulated disk's and NIC's rates from now on |
//! | GET | /v1/openapi.json | | this API's OpenAPI description (no token) |

use crate::nic::{Link, Nic};
use crate::replicas::Replicas;
use crate::shuffle::{MapOutputs, ShuffleService};
use crate::slots::Slots;
use crate::store::{BlockReader, BlockStore, BlockTarget, Caching, StoreError};
use crate::timeline::Timeline;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Json, Router};
use bytes::Bytes;
use common::auth::{Rule, CLIENT, READERS, WORKER};
use common::credentials::{Credentials, Role};
use common::http::{ApiError, BearerSecurity};
use common::wire::ErrorBody;
use common::wire::{
    BlockInfo, BLOCK_CACHE_HEADER, BLOCK_DIGEST_HEADER, BLOCK_FILE_BLOCKS_HEADER,
    BLOCK_FILE_HEADER, BLOCK_GENERATION_HEADER, BLOCK_INDEX_HEADER, MAX_BLOCK_BYTES,
    MAX_FILE_BLOCKS,
};
use common::BlockId;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The worker's API description (`GET /v1/openapi.json`).
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "mini-MapReduce testbed: worker",
        description = "A worker's HTTP API: its block store, map output for reduces, status and metrics. Every route but this description needs a bearer credential: cluster.token (every route) or a [credentials] secret of a role the route lets in (worker::http::RULES; another role gets 403 with the reason)."
    ),
    modifiers(&BearerSecurity),
    security(("token" = []))
)]
struct ApiDoc;

/// What the server's routes read and change: the store (and its guard),
/// the links every transfer is paced by, the slots (status, metrics, the
/// heartbeat's wake-up), the map outputs it serves and the timeline.
pub struct Served {
    pub name: String,
    pub store: Arc<BlockStore>,
    pub replicas: Arc<Replicas>,
    pub nic: Arc<Nic>,
    pub disk: Arc<Link>,
    pub slots: Arc<Slots>,
    pub shuffle: Arc<MapOutputs>,
    pub timeline: Arc<Timeline>,
}

impl axum::extract::FromRef<Arc<Served>> for ShuffleService {
    fn from_ref(s: &Arc<Served>) -> Self {
        ShuffleService {
            outputs: s.shuffle.clone(),
            disk: s.disk.clone(),
            nic: s.nic.clone(),
        }
    }
}

const PEERS: &[Role] = &[Role::Worker, Role::Client];

/// Which role may call which route (`cluster.token` may call every one):
/// workers and clients read and write blocks, only workers fetch map
/// output and wake a worker (the master sends the worker role's secret),
/// clients delete blocks, and clients and the read-only role watch.
pub const RULES: &[Rule] = &[
    Rule::new("GET", "/blocks", PEERS, "list blocks"),
    Rule::new("GET", "/blocks/", PEERS, "read a block"),
    Rule::new("PUT", "/blocks/", PEERS, "store a block"),
    Rule::new("DELETE", "/blocks/", CLIENT, "delete a block"),
    Rule::new("GET", "/blocks/{id}", PEERS, "read a block"),
    Rule::new("PUT", "/blocks/{id}", PEERS, "store a block"),
    Rule::new("DELETE", "/blocks/{id}", CLIENT, "delete a block"),
    Rule::new("GET", "/status", READERS, "read the worker's status"),
    Rule::new("GET", "/metrics", READERS, "read the metrics"),
    Rule::new("GET", "/timeline", READERS, "read the timeline"),
    Rule::new(
        "GET",
        "/shuffle/{job}/{map}/{attempt}/{part}",
        WORKER,
        "fetch map output",
    ),
    Rule::new("POST", "/v1/heartbeat-now", WORKER, "wake a worker"),
    Rule::new("PUT", "/v1/emulation", CLIENT, "change the emulated rates"),
];

/// The worker's routes and their OpenAPI description, one list; every
/// route but the description needs a credential of a role [`RULES`]
/// lets in.
pub fn api(credentials: impl Into<Credentials>) -> (Router<Arc<Served>>, utoipa::openapi::OpenApi) {
    let (api, doc) = OpenApiRouter::with_openapi(<ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(list_blocks))
        .routes(routes!(empty_id))
        .routes(routes!(get_block, put_block, delete_block))
        .routes(routes!(status))
        .routes(routes!(metrics))
        .routes(routes!(timeline))
        .routes(routes!(crate::shuffle::serve))
        .routes(routes!(heartbeat_now))
        .routes(routes!(set_emulation))
        .split_for_parts();
    let api = api
        .route_layer(axum::middleware::from_fn_with_state(
            RULES,
            common::auth::authorize,
        ))
        .layer(axum::middleware::from_fn_with_state(
            credentials.into(),
            common::auth::authenticate,
        ))
        .route("/v1/openapi.json", axum::routing::get(openapi));
    (api, doc)
}

/// The server's routes over `served`, each refused to a credential
/// whose role its rule does not list.
pub fn router(served: Arc<Served>, credentials: impl Into<Credentials>) -> Router {
    api(credentials).0.with_state(served)
}

/// The worker's OpenAPI description as JSON (built once; no token).
pub fn openapi_json() -> &'static str {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let (_, mut doc) = api("");
        doc.merge(<OpenApiDescription as utoipa::OpenApi>::openapi());
        serde_json::to_string_pretty(&doc).expect("the description serialises")
    })
}

#[derive(utoipa::OpenApi)]
#[openapi(paths(openapi))]
struct OpenApiDescription;

#[utoipa::path(get, path = "/v1/openapi.json", tag = "worker", security(()),
    responses((status = 200, description = "this API's OpenAPI 3.1 description", content_type = "application/json")))]
/// The API's description, generated from the routes and the Rust types.
async fn openapi() -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(openapi_json()))
        .expect("a valid response")
}

fn store_error(e: StoreError) -> ApiError {
    let status = match &e {
        StoreError::NotFound { .. } => StatusCode::NOT_FOUND,
        StoreError::DigestMismatch { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        StoreError::Conflict { .. } | StoreError::Superseded { .. } => StatusCode::CONFLICT,
        StoreError::BadRange { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
        StoreError::Corrupt { .. } | StoreError::Truncated { .. } | StoreError::Io { .. } => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    };
    ApiError::new(status, e.to_string())
}

fn block_id(raw: String) -> Result<BlockId, ApiError> {
    BlockId::new(raw).map_err(|e| ApiError::bad_request(e.to_string()))
}

#[utoipa::path(method(get, put, delete), path = "/blocks/", tag = "blocks",
    responses((status = 400, description = "a block id is needed", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// An empty block id (GET, PUT and DELETE): a clear 400.
async fn empty_id() -> ApiError {
    ApiError::bad_request("block id is empty")
}

#[utoipa::path(get, path = "/blocks", tag = "blocks",
    responses((status = 200, body = [BlockInfo]), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Every block stored here.
async fn list_blocks(State(ctx): State<Arc<Served>>) -> Json<Vec<BlockInfo>> {
    Json(ctx.store.list())
}

/// Parses a single `Range: bytes=...` into `[start, end)` of a `len`-byte block.
fn parse_range(h: &HeaderMap, len: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let Some(v) = h.get(header::RANGE) else {
        return Ok(None);
    };
    let bad = || {
        ApiError::bad_request(format!(
            "malformed Range header {v:?}; expected bytes=START-END, bytes=START- or bytes=-SUFFIX"
        ))
    };
    let spec = v.to_str().map_err(|_| bad())?.trim();
    let spec = spec.strip_prefix("bytes=").ok_or_else(bad)?;
    if spec.contains(',') {
        return Err(ApiError::bad_request(
            "multiple byte ranges are not supported",
        ));
    }
    let (a, b) = spec.split_once('-').ok_or_else(bad)?;
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let (start, end) = match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, false) => {
            let n = num(b)?.min(len);
            (len - n, len)
        }
        (false, true) => (num(a)?, len),
        (false, false) => (num(a)?, num(b)?.saturating_add(1).min(len)),
        (true, true) => return Err(bad()),
    };
    if start >= len || start >= end {
        return Err(ApiError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            format!("range {spec:?} is outside the block's {len} bytes"),
        ));
    }
    Ok(Some((start, end)))
}

/// State of one download: the chunks left to read and the piece being sent.
struct Download {
    reader: Option<BlockReader>,
    next_chunk: usize,
    end_chunk: usize,
    start: u64,
    end: u64,
    pending: Bytes,
    ctx: Arc<Served>,
}

impl Download {
    /// Reads and verifies the next chunk, trimmed to the requested range.
    async fn fill(&mut self) -> Result<(), StoreError> {
        let i = self.next_chunk;
        let mut reader = self.reader.take().expect("reader present between chunks");
        let (reader, res) = tokio::task::spawn_blocking(move || {
            let r = reader.read_chunk(i);
            (reader, r)
        })
        .await
        .expect("chunk reader panicked");
        let cb = reader.chunk_bytes();
        self.reader = Some(reader);
        let chunk = res?;
        let c0 = i as u64 * cb;
        let lo = self.start.saturating_sub(c0) as usize;
        let hi = (self.end.min(c0 + chunk.len() as u64) - c0) as usize;
        self.pending = chunk.slice(lo..hi);
        self.next_chunk += 1;
        Ok(())
    }
}

#[utoipa::path(get, path = "/blocks/{id}", tag = "blocks",
    params(("id" = String, Path, description = "block id: <file>.b<index, 5 digits or more>"), ("Range" = Option<String>, Header, description = "bytes=START-END, bytes=START- or bytes=-SUFFIX")),
    responses((status = 200, description = "the block, verified chunk by chunk as it is sent; x-block-digest carries its digest", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "the range asked for", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 404, description = "not stored here", body = ErrorBody),
        (status = 416, description = "range outside the block", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// A stored block (or a range of it), paced by the NIC's transmit link.
async fn get_block(
    State(ctx): State<Arc<Served>>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = block_id(raw)?;
    let reader = if ctx.store.in_flight(&id) {
        // Output committed with its writes in flight: wait for them off
        // the runtime's threads.
        let (store, id) = (ctx.store.clone(), id.clone());
        tokio::task::spawn_blocking(move || store.reader(&id))
            .await
            .map_err(|e| ApiError::internal(format!("opening the block panicked: {e}")))?
    } else {
        ctx.store.reader(&id)
    }
    .map_err(store_error)?;
    let len = reader.len();
    let digest = ctx
        .store
        .get(&id)
        .map_err(store_error)?
        .sums
        .block_digest_hex();
    let range = parse_range(&headers, len)?;
    let (start, end) = range.unwrap_or((0, len));
    let chunks = reader.chunks_for_range(start, end).map_err(store_error)?;
    let mut dl = Download {
        reader: Some(reader),
        next_chunk: chunks.start,
        end_chunk: chunks.end,
        start,
        end,
        pending: Bytes::new(),
        ctx: ctx.clone(),
    };
    // Verify the first chunk before answering, so damage there is a clean error.
    if dl.next_chunk < dl.end_chunk {
        if let Err(e) = dl.fill().await {
            tracing::error!(block = %id, error = %e, "serving a corrupt block");
            ctx.replicas.drop_if_damaged(&e);
            return Err(store_error(e));
        }
    }
    let stream = futures_util::stream::unfold(dl, |mut dl| async move {
        if dl.pending.is_empty() {
            if dl.next_chunk >= dl.end_chunk {
                return None;
            }
            if let Err(e) = dl.fill().await {
                tracing::error!(error = %e, "aborting block download");
                dl.ctx.replicas.drop_if_damaged(&e);
                dl.next_chunk = dl.end_chunk;
                return Some((Err(std::io::Error::other(e.to_string())), dl));
            }
        }
        let n = dl.pending.len().min(crate::nic::PIECE);
        let piece = dl.pending.split_to(n);
        // Read from the disk and sent, both at their shared rates.
        tokio::join!(dl.ctx.disk.acquire(n), dl.ctx.nic.tx.acquire(n));
        Some((Ok::<Bytes, std::io::Error>(piece), dl))
    });
    let mut resp = Response::builder()
        .header(header::CONTENT_LENGTH, end - start)
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(BLOCK_DIGEST_HEADER, digest);
    resp = match range {
        Some(_) => resp.status(StatusCode::PARTIAL_CONTENT).header(
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{len}", end - 1),
        ),
        None => resp.status(StatusCode::OK),
    };
    resp.body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn required_header<'a>(h: &'a HeaderMap, name: &str) -> Result<&'a str, ApiError> {
    h.get(name)
        .ok_or_else(|| ApiError::bad_request(format!("missing header {name}")))?
        .to_str()
        .map_err(|_| ApiError::bad_request(format!("header {name} is not ASCII")))
}

/// A block digest sent as a header or a trailer (`what`).
fn parse_digest(what: &str, hex_digits: &str) -> Result<[u8; 32], ApiError> {
    hex::decode(hex_digits)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "{what} {BLOCK_DIGEST_HEADER}: expected 64 hex digits, got {hex_digits:?}"
            ))
        })
}

/// The request's `trailer` header names `name`.
fn announces_trailer(h: &HeaderMap, name: &str) -> bool {
    h.get_all(axum::http::header::TRAILER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|n| n.trim().eq_ignore_ascii_case(name))
}

fn parse_header<T: std::str::FromStr>(h: &HeaderMap, name: &str) -> Result<T, ApiError> {
    let v = required_header(h, name)?;
    v.parse()
        .map_err(|_| ApiError::bad_request(format!("header {name}: {v:?} is not a valid number")))
}

#[utoipa::path(put, path = "/blocks/{id}", tag = "blocks",
    params(("id" = String, Path, description = "block id: <file>.b<index, 5 digits or more>"),
        ("x-block-digest" = String, Header, description = "hex SHA-256 of the block's length, chunk size and chunk CRC32Cs"),
        ("x-block-file" = String, Header, description = "the file the block belongs to"),
        ("x-block-index" = u32, Header, description = "its index in the file"),
        ("x-block-file-blocks" = u32, Header, description = "the file's block count"),
        ("x-block-generation" = Option<u64>, Header, description = "the replica's generation stamp (default 0, loaded data): a job's output carries its attempt's; a newer one replaces a stored replica, an older one is refused (409)"),
        ("x-block-cache" = Option<String>, Header, description = "keep (default): the block stays in the page cache; drop-behind: written around the page cache (O_DIRECT) where the file system allows, else streamed to the disk and dropped from the page cache behind (sync_file_range, then POSIX_FADV_DONTNEED), for output read rarely")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "the block, at most 4 GiB"),
    responses((status = 201, description = "stored, visible once its digest verified", body = BlockInfo),
        (status = 400, description = "a bad header, named", body = ErrorBody),
        (status = 409, description = "a different block of that id and generation, or a newer generation of it, is stored", body = ErrorBody),
        (status = 422, description = "the data does not hash to x-block-digest", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Stores a block (a replica upload), paced by the receive link.
async fn put_block(
    State(ctx): State<Arc<Served>>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<BlockInfo>), ApiError> {
    let id = block_id(raw)?;
    // The digest comes first, as a header, or after the data, as a trailer
    // the uploader announced (it sends the block while producing it).
    let digest = match headers.get(BLOCK_DIGEST_HEADER) {
        Some(_) => Some(parse_digest(
            "header",
            required_header(&headers, BLOCK_DIGEST_HEADER)?,
        )?),
        None if announces_trailer(&headers, BLOCK_DIGEST_HEADER) => None,
        None => {
            return Err(ApiError::bad_request(format!(
                "missing header {BLOCK_DIGEST_HEADER} (send it as a header, or after the data as a trailer announced by `trailer: {BLOCK_DIGEST_HEADER}`)"
            )))
        }
    };
    let file = required_header(&headers, BLOCK_FILE_HEADER)?.to_owned();
    common::ids::validate_file_name(&file)
        .map_err(|e| ApiError::bad_request(format!("header {BLOCK_FILE_HEADER}: {e}")))?;
    let index: u32 = parse_header(&headers, BLOCK_INDEX_HEADER)?;
    let file_blocks: u32 = parse_header(&headers, BLOCK_FILE_BLOCKS_HEADER)?;
    if !(1..=MAX_FILE_BLOCKS).contains(&file_blocks) {
        return Err(ApiError::bad_request(format!(
            "header {BLOCK_FILE_BLOCKS_HEADER}: a file has 1..={MAX_FILE_BLOCKS} blocks (got {file_blocks})"
        )));
    }
    if index >= file_blocks {
        return Err(ApiError::bad_request(format!(
            "block index {index} is not below the file's block count {file_blocks}"
        )));
    }
    let generation: u64 = match headers.get(BLOCK_GENERATION_HEADER) {
        None => 0,
        Some(_) => parse_header(&headers, BLOCK_GENERATION_HEADER)?,
    };
    let target = BlockTarget {
        id: id.clone(),
        file,
        index,
        file_blocks,
        generation,
    };
    let caching = match headers.get(BLOCK_CACHE_HEADER).map(|v| v.to_str()) {
        None | Some(Ok("keep")) => Caching::Keep,
        Some(Ok("drop-behind")) => Caching::DropBehind,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "header {BLOCK_CACHE_HEADER}: expected keep or drop-behind, got {:?}",
                v.unwrap_or("(not ASCII)")
            )))
        }
    };
    let writer = ctx
        .store
        .writer_caching(target, digest.unwrap_or([0; 32]), caching)
        .map_err(store_error)?;
    // Hashing and writing run on a blocking thread, fed as the body
    // arrives: the runtime's threads keep serving, and the hash of one
    // piece overlaps the receipt of the next.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    let writing = tokio::task::spawn_blocking(move || {
        let mut writer = writer;
        while let Some(piece) = rx.blocking_recv() {
            writer.write(&piece)?;
        }
        Ok::<_, StoreError>(writer)
    });
    let mut body = body;
    let mut received = 0u64;
    let mut trailers = None;
    while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
        let frame = frame
            .map_err(|e| ApiError::bad_request(format!("upload of block {id} broke off: {e}")))?;
        let piece = match frame.into_data() {
            Ok(piece) => piece,
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers = Some(t);
                }
                continue;
            }
        };
        received += piece.len() as u64;
        if received > MAX_BLOCK_BYTES {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("block {id}: uploads are limited to {MAX_BLOCK_BYTES} bytes"),
            ));
        }
        for p in piece.chunks(crate::nic::PIECE) {
            tokio::join!(ctx.nic.rx.acquire(p.len()), ctx.disk.acquire(p.len()));
        }
        if tx.send(piece).await.is_err() {
            // The writer stopped on an error: it says which below.
            break;
        }
    }
    drop(tx);
    // A failure drops the writer, which deletes its temp file (as does an
    // upload that broke off above: the writer ends when `tx` is dropped).
    let mut writer = writing
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(store_error)?;
    if digest.is_none() {
        let value = trailers
            .as_ref()
            .and_then(|t| t.get(BLOCK_DIGEST_HEADER))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "upload of block {id} ended without its {BLOCK_DIGEST_HEADER} trailer"
                ))
            })?
            .to_str()
            .map_err(|_| {
                ApiError::bad_request(format!("trailer {BLOCK_DIGEST_HEADER} is not ASCII"))
            })?;
        writer.expect_digest(parse_digest("trailer", value)?);
    }
    // fsync and rename off the async threads.
    let info = tokio::task::spawn_blocking(move || writer.commit())
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| {
            tracing::warn!(block = %id, error = %e, "upload rejected");
            store_error(e)
        })?;
    ctx.slots.wake_heartbeat();
    Ok((StatusCode::CREATED, Json(info)))
}

#[utoipa::path(delete, path = "/blocks/{id}", tag = "blocks",
    params(("id" = String, Path, description = "block id: <file>.b<index, 5 digits or more>")),
    responses((status = 204, description = "deleted"),
        (status = 404, description = "not stored here", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Deletes a stored replica.
async fn delete_block(
    State(ctx): State<Arc<Served>>,
    Path(raw): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = block_id(raw)?;
    ctx.store.delete(&id).map_err(store_error)?;
    ctx.slots.wake_heartbeat();
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkerStatus {
    pub name: String,
    pub slots: u32,
    pub free_slots: u32,
    pub blocks: usize,
    pub nic_bytes_per_sec: Option<f64>,
    pub nic_tx_bytes: u64,
    pub nic_rx_bytes: u64,
    /// Damaged replicas deleted (on a read, while serving, or by the
    /// scanner), of them found by the scanner, and the bytes it verified.
    #[serde(default)]
    pub corrupt_dropped: u64,
    #[serde(default)]
    pub scrub_found: u64,
    #[serde(default)]
    pub scrubbed_bytes: u64,
}

#[utoipa::path(post, path = "/v1/heartbeat-now", tag = "worker",
    responses((status = 204, description = "a heartbeat follows at once if this worker heartbeats out of band; otherwise at its next interval"),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// The master has work this worker may take (a job arrived): heartbeat now
/// rather than at the next interval, as after a task ends. A worker with
/// out-of-band heartbeats off keeps its cadence.
async fn heartbeat_now(State(ctx): State<Arc<Served>>) -> StatusCode {
    ctx.slots.slot_freed();
    StatusCode::NO_CONTENT
}

/// The emulated disk's and NIC's rates (MB/s and Mbit/s; absent: that
/// link is not emulated, or, in a request, left as it is).
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmulationRates {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mbs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_mbps: Option<f64>,
}

#[utoipa::path(put, path = "/v1/emulation", tag = "worker", request_body = EmulationRates,
    responses((status = 200, description = "the rates from now on", body = EmulationRates),
        (status = 400, description = "a rate that is not positive and finite", body = ErrorBody),
        (status = 409, description = "a link the worker does not emulate", body = ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Slows (or speeds) the worker's emulated disk and NIC from now on, as a
/// failing disk or a congested link would: transfers in flight continue
/// at the new rate from their next piece. A link the worker started
/// without a rate (an unlimited disk; the NIC in the netns mode, shaped by
/// tc) cannot be set. Nothing is changed unless every field given is valid.
async fn set_emulation(
    State(ctx): State<Arc<Served>>,
    Json(req): Json<EmulationRates>,
) -> Result<Json<EmulationRates>, ApiError> {
    let links: [(&str, Option<f64>, f64, Vec<&Link>); 2] = [
        ("disk_mbs", req.disk_mbs, 1e6, vec![&ctx.disk]),
        (
            "nic_mbps",
            req.nic_mbps,
            1e6 / 8.0,
            vec![&ctx.nic.tx, &ctx.nic.rx],
        ),
    ];
    for (field, rate, _, ls) in &links {
        let Some(r) = rate else { continue };
        if !(r.is_finite() && *r > 0.0) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("{field} = {r}: a rate must be positive and finite"),
            ));
        }
        if ls.iter().any(|l| l.rate().is_none()) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("{field}: worker {} does not emulate this link (it started without a rate for it)", ctx.name),
            ));
        }
    }
    for (field, rate, unit, ls) in &links {
        if let Some(r) = rate {
            for l in ls {
                l.set_rate(r * unit)
                    .map_err(|e| ApiError::new(StatusCode::CONFLICT, format!("{field}: {e}")))?;
            }
            tracing::warn!(worker = %ctx.name, field, rate = r, "emulated rate changed");
        }
    }
    Ok(Json(EmulationRates {
        disk_mbs: ctx.disk.rate().map(|r| r / 1e6),
        nic_mbps: ctx.nic.tx.rate().map(|r| r * 8.0 / 1e6),
    }))
}

#[utoipa::path(get, path = "/status", tag = "worker",
    responses((status = 200, body = WorkerStatus), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Slots, blocks, NIC counters and the block scanner's findings.
async fn status(State(ctx): State<Arc<Served>>) -> Json<WorkerStatus> {
    Json(WorkerStatus {
        name: ctx.name.clone(),
        slots: ctx.slots.count(),
        free_slots: ctx.slots.book().free_slots(),
        blocks: ctx.store.list().len(),
        nic_bytes_per_sec: ctx.nic.tx.rate(),
        nic_tx_bytes: ctx.nic.tx.bytes(),
        nic_rx_bytes: ctx.nic.rx.bytes(),
        corrupt_dropped: ctx.replicas.corrupt_dropped.load(Ordering::Relaxed),
        scrub_found: ctx.replicas.scrub_found.load(Ordering::Relaxed),
        scrubbed_bytes: ctx.replicas.scrubbed_bytes.load(Ordering::Relaxed),
    })
}

#[utoipa::path(get, path = "/metrics", tag = "worker",
    responses((status = 200, description = "Prometheus metrics", content_type = "application/openmetrics-text", body = String), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Prometheus metrics (OpenMetrics text).
async fn metrics(State(ctx): State<Arc<Served>>) -> Response {
    let (free_slots, background_slots) = {
        let book = ctx.slots.book();
        (book.free_slots(), book.background())
    };
    let body = crate::metrics::encode(&crate::metrics::Snapshot {
        name: &ctx.name,
        nic: &ctx.nic,
        nic_rates: ctx.timeline.current_rates(),
        disk_bytes: ctx.disk.bytes(),
        slots: ctx.slots.count(),
        free_slots,
        background_slots,
        blocks: ctx.store.list().len(),
        shuffle_kept: ctx.shuffle.kept_bytes(),
        reduce_spilled: ctx.shuffle.reduce_spilled(),
        replicas: &ctx.replicas,
        outcomes: ctx.slots.outcomes(),
        cache: ctx.store.cache_stats(),
        writeback: ctx.store.writeback_stats(),
    });
    Response::builder()
        .header(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)
        .body(Body::from(body))
        .expect("a valid response")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimelineQuery {
    #[serde(default)]
    since_ms: u64,
}

#[utoipa::path(get, path = "/timeline", tag = "worker",
    params(("since_ms" = Option<u64>, Query, description = "unix ms; everything from then on")),
    responses((status = 200, body = common::wire::WorkerTimeline),
        (status = 400, description = "a bad query", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// NIC samples and background runs, for per-run timelines.
async fn timeline(
    State(ctx): State<Arc<Served>>,
    q: Result<axum::extract::Query<TimelineQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<common::wire::WorkerTimeline>, ApiError> {
    let q = q.map_err(|e| ApiError::bad_request(format!("GET /timeline: {e}")))?;
    Ok(Json(ctx.timeline.since(
        &ctx.name,
        ctx.slots.count(),
        &ctx.nic,
        &ctx.disk,
        q.since_ms,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// A digest header or trailer is accepted exactly when it is 64 hex
        /// digits; anything else is refused with a 400 naming the header and
        /// the value.
        #[test]
        fn a_digest_is_64_hex_digits_or_an_error_naming_it(s in "[0-9a-fA-F]{62,66}|\\PC{0,70}") {
            let ok = s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit());
            match parse_digest("trailer", &s) {
                Ok(d) => {
                    proptest::prop_assert!(ok, "{:?} accepted", s);
                    proptest::prop_assert_eq!(hex::encode(d), s.to_ascii_lowercase());
                }
                Err(e) => {
                    proptest::prop_assert!(!ok, "{:?} refused", s);
                    proptest::prop_assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
                    let msg = e.message.clone();
                    proptest::prop_assert!(
                        msg.contains(BLOCK_DIGEST_HEADER) && msg.contains(&format!("{s:?}")),
                        "{}", msg
                    );
                }
            }
        }
    }
}
