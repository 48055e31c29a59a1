//! The master's HTTP API: a thin layer over [`Master`]. Every route but the
//! dashboard's page and the API description needs a credential of a role
//! `crate::access::RULES` lets in (or `cluster.token`); every error is JSON. `GET /v1/openapi.json` describes every route below,
//! generated from the handlers and the Rust types (a test checks that this
//! table, the description and the routes agree).
//!
//! | method | path | body / query | answer |
//! |---|---|---|---|
//! | POST | /v1/workers/register | RegisterRequest | RegisterReply |
//! | POST | /v1/workers/heartbeat | Heartbeat | HeartbeatReply |
//! | POST | /v1/workers/commit | CommitRequest | 204 (409 stale, 503 register again) |
//! | GET | /v1/workers | | [WorkerInfo] |
//! | GET | /v1/files | | [FileInfo] |
//! | GET | /v1/files/{name} | | FileInfo (409 while being deleted) |
//! | DELETE | /v1/files/{name} | | FileDeleted (409 while a job uses it) |
//! | PUT | /v1/files/{name}/replication | FileReplication | 204 |
//! | POST | /v1/jobs | JobSubmit | 201 JobSubmitted |
//! | GET | /v1/jobs | | [JobReport] (without attempts) |
//! | GET | /v1/jobs/{id} | ?wait_ms=N | JobReport, after waiting up to N ms for it to end |
//! | GET | /v1/decisions | ?job=N | DecisionLog: the decision record (empty unless `master.decisions`) |
//! | GET | /v1/cluster | | ClusterSummary |
//! | GET | /metrics | | Prometheus metrics (OpenMetrics text; see `metrics`) |
//! | GET | /v1/events | | server-sent events: `state` = DashboardState every 0.5 s |
//! | GET | /v1/whoami | | Whoami: the role of the credential that asked |
//! | GET | /v1/openapi.json | | this API's OpenAPI description (no token) |
//! | GET | / | | the dashboard (no token; see `dashboard`) |
//! | GET | /ui | | the dashboard |
//! | GET | /ui/app.js | | the dashboard's code |
//! | GET | /ui/style.css | | the dashboard's style |

use crate::metrics::{JobStateName, Snapshot};
use crate::provision::Provision;
use crate::state::{journal, Master, MasterError, MasterSettings};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;

use crate::access::RULES;
use axum::{Json, Router};
use common::credentials::{Credentials, Role, Secret};
use common::http::{ApiError, ApiJson, BearerSecurity, ServerTimeouts};
use common::wire::ErrorBody;
use common::wire::{
    ClusterSummary, DecisionLog, FileDeleted, FileInfo, FileReplication, Heartbeat, HeartbeatReply,
    JobReport, JobSubmit, JobSubmitted, RegisterReply, RegisterRequest, WorkerInfo,
};
use common::wire::{DashboardState, JobState};
use common::JobId;
use sched::Millis;
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

pub struct AppState {
    pub master: Mutex<Master>,
    /// The job journal's file, if any.
    journal: Option<std::path::PathBuf>,
    /// Task entries were appended to the journal since its last fsync.
    journal_dirty: std::sync::atomic::AtomicBool,
    /// Why the journal could not be written last time (a full disk):
    /// until an append succeeds, no job, deletion or replication change
    /// is taken (`journaled`).
    journal_failure: Mutex<Option<String>>,
    started: Instant,
    /// Notified whenever a job reaches a final state.
    job_ended: Notify,
    /// Asks workers to heartbeat now (`POST /v1/heartbeat-now`).
    wake: WakeClient,
}

/// Sends workers `POST /v1/heartbeat-now`, fire and forget: a worker that
/// does not answer heartbeats at its interval as before.
struct WakeClient {
    http: reqwest::Client,
    /// The worker role's secret (workers accept it on this route).
    token: Secret,
}

impl WakeClient {
    fn send(&self, addrs: Vec<String>) {
        for addr in addrs {
            let req = self.http.post(format!("{addr}/v1/heartbeat-now")).header(
                reqwest::header::AUTHORIZATION,
                common::http::bearer(&self.token.get()),
            );
            tokio::spawn(async move {
                if let Err(e) = req.send().await {
                    tracing::debug!(%addr, error = %e, "heartbeat-now not delivered");
                }
            });
        }
    }
}

impl AppState {
    pub fn now(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    /// Fsyncs the journal's task entries appended since the last time.
    fn sync_journal(&self) {
        let Some(path) = &self.journal else {
            return;
        };
        if self
            .journal_dirty
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            if let Err(e) = journal::sync(path) {
                tracing::error!(path = %path.display(), error = %e, "cannot fsync the job journal");
            }
        }
    }

    /// After `cluster.token` changed: the journal's header names the new
    /// token's cluster, so the next start under it takes the journal back
    /// (rewritten whole under the master's lock: no entry is appended
    /// meanwhile). A journal that cannot be read or written is said; the
    /// next start names the token it was written under.
    fn restamp_journal(&self, token: &str, authority: Option<&str>) {
        let Some(path) = &self.journal else {
            return;
        };
        let _m = self
            .master
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let done = journal::read_with(path, journal::Damage::Refuse).and_then(|r| {
            journal::rewrite(
                path,
                &journal::cluster_fingerprint(token),
                authority,
                &r.entries,
            )
        });
        match done {
            Ok(()) => {
                tracing::info!(path = %path.display(), "job journal stamped with the new cluster.token")
            }
            Err(e) => {
                tracing::error!(path = %path.display(), error = %format!("{e:#}"), "job journal not stamped with the new cluster.token")
            }
        }
    }

    /// Runs `f` on the master and wakes long-polls if a job ended meanwhile.
    fn with<R>(&self, f: impl FnOnce(&mut Master, Millis) -> R) -> R {
        // A panic in an earlier request must not make every later one fail:
        // take the state as it is (each change to it is one step).
        let mut m = self
            .master
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The time is read under the lock, so the steps the master takes see
        // non-decreasing times in the order they take them (read before it,
        // a request that waited for the lock would step back in time: a task
        // launched before its job was submitted).
        let now = self.now();
        let before = m.finished_jobs();
        let r = f(&mut m, now);
        // Journal under the lock, so entries land in the order they happened.
        if let Some(path) = &self.journal {
            let entries = m.take_journal();
            let result = journal::append(path, &entries);
            let mut failure = self
                .journal_failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match result {
                Ok(dirty) => {
                    if dirty {
                        self.journal_dirty
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    if failure.take().is_some() {
                        tracing::info!(path = %path.display(), entries = entries.len(), "the job journal is written again; the entries held meanwhile are in it");
                    }
                }
                Err(e) => {
                    if failure.is_none() {
                        tracing::error!(path = %path.display(), error = %e, "cannot append to the job journal: its entries are held in memory and written with the next; no new job is taken until then");
                    }
                    *failure = Some(format!("{e:#}"));
                    m.requeue_journal(entries);
                }
            }
        }
        let ended = m.finished_jobs() != before;
        drop(m);
        if ended {
            self.job_ended.notify_waiters();
        }
        r
    }
}

impl AppState {
    /// `with`, for a change the journal must hold before it is answered
    /// (a job, a deletion, a replication factor): refused with 507 (Insufficient Storage) while
    /// the journal cannot be written, after trying once more to write
    /// what it holds.
    fn journaled<R>(&self, f: impl FnOnce(&mut Master, Millis) -> R) -> Result<R, ApiError> {
        let failing = || {
            self.journal_failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        };
        if failing().is_some() {
            self.with(|_, _| ()); // writes the held entries if it can now
        }
        if let Some(e) = failing() {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                format!(
                    "the job journal cannot be written ({e}): the master runs what it has but takes no new job, \
                     deletion or replication change until it can"
                ),
            ));
        }
        Ok(self.with(f))
    }
}

fn api_error(e: MasterError) -> ApiError {
    let status = match e {
        MasterError::UnknownFile { .. }
        | MasterError::UnknownJob(_)
        | MasterError::RetiredJob(_) => StatusCode::NOT_FOUND,
        MasterError::IncompleteFile { .. }
        | MasterError::FileInUse { .. }
        | MasterError::FileBeingDeleted { .. }
        | MasterError::OldWorker { .. } => StatusCode::CONFLICT,
        MasterError::UnknownWorker { .. } => StatusCode::FORBIDDEN,
        MasterError::BadRequest(_) => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, e.to_string())
}

/// The largest registration or heartbeat body: a block report of about a
/// million blocks (axum's default of 2 MB holds only some 20,000).
pub const MAX_REPORT_BYTES: usize = 256 << 20;

/// The master's API description (`GET /v1/openapi.json`): the routes
/// below, each from its handler's `#[utoipa::path]`, with the wire types'
/// schemas derived from the Rust types.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "mini-MapReduce testbed: master",
        description = "The master's HTTP API. Every route but the dashboard's page and this description needs a bearer credential: cluster.token (every route) or a [credentials] secret of a role the route lets in (master::access::RULES; another role gets 403 with the reason). The schemas OfferMessage and Reply are not routes of this API: they are the messages of the external policy protocol (docs/schedulers.md), which the master sends to a policy's socket."
    ),
    components(schemas(
        sched::policy::external::OfferMessage,
        sched::policy::external::Reply
    )),
    modifiers(&BearerSecurity),
    security(("token" = []))
)]
struct ApiDoc;

/// The master's routes and their OpenAPI description, one list; every
/// route but the dashboard's page and the description needs a credential
/// of a role [`RULES`] lets in.
pub fn api(
    credentials: impl Into<Credentials>,
) -> (Router<Arc<AppState>>, utoipa::openapi::OpenApi) {
    let reports = axum::extract::DefaultBodyLimit::max(MAX_REPORT_BYTES);
    let (api, mut doc) = OpenApiRouter::with_openapi(<ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(register).layer(reports))
        .routes(routes!(heartbeat).layer(reports))
        .routes(routes!(commit))
        .routes(routes!(workers))
        .routes(routes!(files))
        .routes(routes!(file, delete_file))
        .routes(routes!(file_replication))
        .routes(routes!(submit, jobs))
        .routes(routes!(job))
        .routes(routes!(decisions))
        .routes(routes!(cluster))
        .routes(routes!(metrics))
        .routes(routes!(events))
        .routes(routes!(crate::access::whoami))
        .split_for_parts();
    let api = api
        .route_layer(axum::middleware::from_fn_with_state(
            RULES,
            common::auth::authorize,
        ))
        .fallback(|| async {
            ApiError::not_found(
                "no such endpoint; see GET /v1/openapi.json or the API table in master/src/http.rs",
            )
        })
        .layer(axum::middleware::from_fn_with_state(
            credentials.into(),
            common::auth::authenticate,
        ));
    // The dashboard's page and code hold no data: served without the
    // token, which the page keeps in the URL fragment or the tab's
    // session storage and sends only as a header.
    let (public, public_doc) = crate::dashboard::routes()
        .routes(routes!(openapi))
        .split_for_parts();
    doc.merge(public_doc);
    (api.merge(public), doc)
}

pub fn router(state: Arc<AppState>, credentials: impl Into<Credentials>) -> Router {
    api(credentials).0.with_state(state)
}

/// The master's OpenAPI description as JSON (built once).
pub fn openapi_json() -> &'static str {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        serde_json::to_string_pretty(&api("").1).expect("the description serialises")
    })
}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "cluster", security(()),
    responses((status = 200, description = "this API's OpenAPI 3.1 description", content_type = "application/json")))]
/// The API's description, generated from the routes and the Rust types.
async fn openapi() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        openapi_json(),
    )
}

/// How often `/v1/events` sends the dashboard's state.
pub const EVENTS_EVERY: Duration = Duration::from_millis(500);

/// `GET /v1/events`: server-sent events, one `state` event
/// ([`DashboardState`]) every [`EVENTS_EVERY`], for as long as the client
/// stays.
#[utoipa::path(get, path = "/v1/events", tag = "cluster",
    responses((status = 200, description = "server-sent events: a `state` event with a DashboardState every 0.5 s", content_type = "text/event-stream", body = DashboardState), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
async fn events(
    State(s): State<Arc<AppState>>,
) -> axum::response::sse::Sse<
    impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let mut tick = tokio::time::interval(EVENTS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let stream = futures_util::stream::unfold((s, tick), |(s, mut tick)| async move {
        tick.tick().await;
        let state = s.with(|m, _| dashboard_state(m));
        let event = Event::default()
            .event("state")
            .json_data(&state)
            .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
        Some((Ok(event), (s, tick)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn dashboard_state(m: &Master) -> DashboardState {
    let mut jobs = m.reports();
    jobs.reverse();
    DashboardState {
        unix_ms: common::unix_ms(),
        cluster: cluster_summary(m),
        scheduler: m.scheduler_config().clone(),
        workers: m.workers(),
        jobs,
    }
}

#[utoipa::path(post, path = "/v1/workers/register", tag = "workers",
    request_body = RegisterRequest,
    responses((status = 200, body = RegisterReply),
        (status = 403, description = "no [[worker]] of that name", body = ErrorBody),
        (status = 409, description = "the worker speaks an older protocol (`protocol` absent or below this master's): upgrade it", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// A worker announces itself with its full block report.
async fn register(
    State(s): State<Arc<AppState>>,
    ApiJson(req): ApiJson<RegisterRequest>,
) -> Result<Json<RegisterReply>, ApiError> {
    s.with(|m, now| m.register(now, req))
        .map(Json)
        .map_err(api_error)
}

#[utoipa::path(post, path = "/v1/workers/heartbeat", tag = "workers",
    request_body = Heartbeat,
    responses((status = 200, description = "launches, kills, copies and drops for the worker", body = HeartbeatReply), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// A worker's heartbeat: free slots, running attempts and their progress,
/// results, block report when it changed.
async fn heartbeat(
    State(s): State<Arc<AppState>>,
    ApiJson(hb): ApiJson<Heartbeat>,
) -> Json<HeartbeatReply> {
    let t0 = Instant::now();
    let ((reply, wake), metrics) =
        s.with(|m, now| (m.heartbeat_waking(now, hb), m.metrics.clone()));
    metrics.heartbeat_handled(t0.elapsed().as_secs_f64());
    s.wake.send(wake);
    Json(reply)
}

#[utoipa::path(post, path = "/v1/workers/commit", tag = "workers",
    request_body = common::wire::CommitRequest,
    responses((status = 204, description = "the attempt may commit its output"),
        (status = 409, description = "the attempt is stale: its output is dropped", body = ErrorBody),
        (status = 503, description = "the worker is not registered with this master: it registers, then asks again", body = ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// A reduce attempt asks, before its output becomes visible, whether it is
/// still its task's current attempt (Hadoop's `canCommit`).
async fn commit(
    State(s): State<Arc<AppState>>,
    ApiJson(req): ApiJson<common::wire::CommitRequest>,
) -> Result<StatusCode, ApiError> {
    use crate::state::commit::CommitRefusal;
    match s.with(|m, _| m.commit(&req)) {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(CommitRefusal::Stale(why)) => Err(ApiError::new(StatusCode::CONFLICT, why)),
        Err(CommitRefusal::NotNow(why)) => Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, why)),
    }
}

#[utoipa::path(get, path = "/metrics", tag = "cluster",
    responses((status = 200, description = "Prometheus metrics", content_type = "application/openmetrics-text", body = String), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Prometheus metrics (OpenMetrics text).
async fn metrics(State(s): State<Arc<AppState>>) -> impl axum::response::IntoResponse {
    let (snap, metrics) = s.with(|m, _| {
        let reports = m.reports();
        let snap = Snapshot {
            jobs: [
                JobState::Pending,
                JobState::Running,
                JobState::Succeeded,
                JobState::Failed,
            ]
            .into_iter()
            .map(|st| {
                let n = reports.iter().filter(|r| r.state == st).count();
                (JobStateName(st), n)
            })
            .collect(),
            workers: m.workers(),
            pending_tasks: m.view().pending_total(),
            maps_rerun: m.maps_rerun(),
            results_refused: m.results_refused(),
            blocks_copied: m.blocks_copied(),
        };
        (snap, m.metrics.clone())
    });
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        metrics.encode(&snap),
    )
}

#[utoipa::path(get, path = "/v1/workers", tag = "workers",
    responses((status = 200, body = [WorkerInfo]), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Every configured worker, alive or not, with slots, NIC rates and blocks.
async fn workers(State(s): State<Arc<AppState>>) -> Json<Vec<WorkerInfo>> {
    Json(s.with(|m, _| m.workers()))
}

#[utoipa::path(get, path = "/v1/files", tag = "files",
    responses((status = 200, body = [FileInfo]), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Every file of the catalog and where its blocks are.
async fn files(State(s): State<Arc<AppState>>) -> Json<Vec<FileInfo>> {
    Json(s.with(|m, _| m.files()))
}

#[utoipa::path(get, path = "/v1/files/{name}", tag = "files",
    params(("name" = String, Path, description = "file name")),
    responses((status = 200, body = FileInfo),
        (status = 404, description = "no such file", body = ErrorBody),
        (status = 409, description = "being deleted", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// One file and where its blocks are.
async fn file(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<FileInfo>, ApiError> {
    s.with(|m, _| m.file(&name)).map(Json).map_err(api_error)
}

#[utoipa::path(delete, path = "/v1/files/{name}", tag = "files",
    params(("name" = String, Path, description = "file name")),
    responses((status = 200, body = FileDeleted),
        (status = 404, description = "no such file", body = ErrorBody),
        (status = 409, description = "a job that has not ended reads or writes it", body = ErrorBody), (status = 507, description = "the job journal cannot be written (a full disk)", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Deletes a file: every holder drops its replicas at its next heartbeat.
async fn delete_file(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<FileDeleted>, ApiError> {
    s.journaled(|m, _| m.delete_file(&name))?
        .map(Json)
        .map_err(api_error)
}

#[utoipa::path(put, path = "/v1/files/{name}/replication", tag = "files",
    params(("name" = String, Path, description = "file name")),
    request_body = FileReplication,
    responses((status = 204, description = "kept at that factor from now on"),
        (status = 400, description = "factor out of range", body = ErrorBody),
        (status = 404, description = "no such file", body = ErrorBody), (status = 507, description = "the job journal cannot be written (a full disk)", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// The replication factor the master keeps a file at.
async fn file_replication(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
    ApiJson(r): ApiJson<FileReplication>,
) -> Result<StatusCode, ApiError> {
    s.journaled(|m, _| m.set_file_replication(&name, r.replication))?
        .map(|()| StatusCode::NO_CONTENT)
        .map_err(api_error)
}

#[utoipa::path(post, path = "/v1/jobs", tag = "jobs",
    request_body = JobSubmit,
    responses((status = 201, body = JobSubmitted),
        (status = 400, description = "a bad field, named", body = ErrorBody),
        (status = 404, description = "no such input file", body = ErrorBody),
        (status = 409, description = "the input is incomplete", body = ErrorBody), (status = 507, description = "the job journal cannot be written (a full disk)", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Submits a job.
async fn submit(
    State(s): State<Arc<AppState>>,
    ApiJson(spec): ApiJson<JobSubmit>,
) -> Result<(StatusCode, Json<JobSubmitted>), ApiError> {
    let unix = common::unix_ms();
    let (job, wake) = s.journaled(|m, now| {
        let job = m.submit(now, unix, spec);
        (job, m.to_wake())
    })?;
    // Free slots take the new tasks now, not at their next heartbeat.
    s.wake.send(wake);
    job.map(|job| (StatusCode::CREATED, Json(JobSubmitted { job })))
        .map_err(api_error)
}

#[utoipa::path(get, path = "/v1/jobs", tag = "jobs",
    responses((status = 200, description = "every job, oldest first, without attempts", body = [JobReport]), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Every job of this master and its earlier incarnations (the journal).
async fn jobs(State(s): State<Arc<AppState>>) -> Json<Vec<JobReport>> {
    Json(s.with(|m, _| m.reports()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitQuery {
    #[serde(default)]
    wait_ms: u64,
}

pub fn parse_job_id(raw: &str) -> Result<JobId, String> {
    raw.strip_prefix("job-")
        .unwrap_or(raw)
        .parse::<u32>()
        .map(JobId)
        .map_err(|_| format!("{raw:?} is not a job id (expected job-N or N)"))
}

#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "job-N or N"),
        ("wait_ms" = Option<u64>, Query, description = "wait up to this long (at most 600000) for the job to end")),
    responses((status = 200, body = JobReport),
        (status = 400, description = "not a job id", body = ErrorBody),
        (status = 404, description = "no such job", body = ErrorBody), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// One job's report with every attempt; a long-poll with `wait_ms`.
async fn job(
    State(s): State<Arc<AppState>>,
    Path(raw): Path<String>,
    Query(q): Query<WaitQuery>,
) -> Result<Json<JobReport>, ApiError> {
    let id = parse_job_id(&raw).map_err(ApiError::bad_request)?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(q.wait_ms.min(600_000));
    loop {
        let notified = s.job_ended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let report = s.with(|m, _| m.report(id)).map_err(api_error)?;
        if report.state.is_done() || tokio::time::Instant::now() >= deadline {
            return Ok(Json(report));
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionsQuery {
    #[serde(default)]
    job: Option<String>,
    #[serde(default)]
    inputs: bool,
}

#[utoipa::path(get, path = "/v1/decisions", tag = "jobs",
    params(("job" = Option<String>, Query, description = "only this job's rows (job-N or N)"),
        ("inputs" = Option<bool>, Query, description = "also the record's inputs (every change to the scheduler's view and every offer), to run it again; not with `job`")),
    responses((status = 200, body = DecisionLog),
        (status = 400, description = "not a job id", body = ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// The decision record: every map and reduce launch and every declined
/// offer, with the rule that allowed or declined it (empty unless
/// cluster.toml sets `master.decisions = true`).
async fn decisions(
    State(s): State<Arc<AppState>>,
    Query(q): Query<DecisionsQuery>,
) -> Result<Json<DecisionLog>, ApiError> {
    let job = q
        .job
        .as_deref()
        .map(parse_job_id)
        .transpose()
        .map_err(ApiError::bad_request)?;
    if q.inputs && job.is_some() {
        return Err(ApiError::bad_request(
            "inputs=true takes the whole record: not with job (the inputs are every job's)",
        ));
    }
    Ok(Json(s.with(|m, now| {
        let (inputs, inputs_dropped) = if q.inputs {
            m.inputs()
        } else {
            (Vec::new(), 0)
        };
        DecisionLog {
            recording: m.recording_decisions(),
            now_ms: now,
            now_unix_ms: common::unix_ms(),
            workers: m.worker_names(),
            decisions: m.decisions(job),
            dropped: m.decisions_dropped(),
            scheduler: Some(m.scheduler_config().clone()),
            seed: m.seed(),
            reduce_placement: Some(m.reduce_placement()),
            inputs,
            inputs_dropped,
        }
    })))
}

#[utoipa::path(get, path = "/v1/cluster", tag = "cluster",
    responses((status = 200, body = ClusterSummary), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
/// Scheduler, workers alive, slots, pending maps, re-runs and copies.
async fn cluster(State(s): State<Arc<AppState>>) -> Json<ClusterSummary> {
    Json(s.with(|m, _| cluster_summary(m)))
}

fn cluster_summary(m: &Master) -> ClusterSummary {
    let ws = m.workers();
    ClusterSummary {
        scheduler: m.scheduler_name(),
        reduce_placement: m.reduce_placement().name().into(),
        workers_configured: ws.len(),
        workers_alive: ws.iter().filter(|w| w.alive).count(),
        slots_alive: ws.iter().filter(|w| w.alive).map(|w| w.slots).sum(),
        pending_tasks: m.view().pending_total(),
        maps_rerun: m.maps_rerun(),
        results_refused: m.results_refused(),
        blocks_copied: m.blocks_copied(),
        incarnation: m.incarnation(),
        scheduler_notes: m.scheduler_notes(),
    }
}

/// A running master.
pub struct MasterHandle {
    pub addr: SocketAddr,
    /// `https` with TLS on, else `http`.
    pub scheme: &'static str,
    pub state: Arc<AppState>,
    server: tokio::task::JoinHandle<()>,
    reaper: tokio::task::JoinHandle<()>,
    /// Re-reads `[credentials]` when cluster.toml changes.
    watcher: Option<tokio::task::JoinHandle<()>>,
}

/// How often the master and the workers look at their cluster.toml for
/// new credentials.
pub const CREDENTIALS_EVERY: Duration = Duration::from_secs(1);

impl MasterHandle {
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    pub fn abort(&self) {
        self.server.abort();
        self.reaper.abort();
        if let Some(w) = &self.watcher {
            w.abort();
        }
    }
}

impl Drop for MasterHandle {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Binds `listen` and serves the API; a background task declares silent workers lost.
pub async fn start(
    listen: SocketAddr,
    token: &str,
    settings: MasterSettings,
) -> anyhow::Result<MasterHandle> {
    start_with(listen, token, settings, ServerTimeouts::DEFAULT).await
}

/// Takes back what the journal at `path` holds (`Master::restore`), moves
/// the reports of retired jobs to its history and rewrites it compacted;
/// returns the time the master's clock starts at.
fn replay_journal(
    master: &mut Master,
    path: &std::path::Path,
    damage: journal::Damage,
    token: &str,
    authority: Option<&str>,
    retained: usize,
) -> anyhow::Result<Duration> {
    let replayed = journal::read_with(path, damage)?;
    journal::check_cluster(path, &replayed, token, authority)?;
    for what in &replayed.dropped {
        tracing::warn!(path = %path.display(), "job journal: {what}");
    }
    let entries = replayed.entries;
    let (mut kept, retired) = journal::compacted(&entries, retained);
    let dropped = entries.len() - kept.len();
    journal::append_history(path, &retired)?;
    let clock_from = Duration::from_millis(master.restore(entries, common::unix_ms()));
    if let Some(job) = replayed.dropped_job_max {
        master.reserve_ids_through(common::JobId(job));
    }
    kept.extend(master.take_journal());
    journal::rewrite(path, &journal::cluster_fingerprint(token), authority, &kept)?;
    if dropped > 0 {
        tracing::info!(path = %path.display(), dropped, kept = kept.len(), retired = retired.len(), history = %journal::history_path(path).display(), "job journal compacted; the reports of retired jobs are in its history");
    }
    Ok(clock_from)
}

/// [`start`] with the HTTP server's timeouts (tests shorten them).
pub async fn start_with(
    listen: SocketAddr,
    token: &str,
    settings: MasterSettings,
    timeouts: ServerTimeouts,
) -> anyhow::Result<MasterHandle> {
    let heartbeat = Duration::from_millis(settings.heartbeat_ms);
    let journal_path = settings.journal.clone();
    let settings_damage = if settings.journal_recover {
        journal::Damage::KeepIntact
    } else {
        journal::Damage::Refuse
    };
    let provision = settings.provision.clone();
    let credentials = Credentials::new(token, &settings.credentials);
    let wake_secret = Secret::new(settings.credentials.sending(Role::Worker).unwrap_or(token));
    let config_path = settings.config_path.clone();
    let tls = settings.tls.clone();
    let retained = settings.retained_jobs;
    let mut master = Master::new(settings);
    // The master's clock (ms since it started) begins at the age of the
    // oldest job it takes back, so that job's submission is at 0 or later.
    let clock_from = match &journal_path {
        Some(path) => {
            let authority = tls.as_ref().map(|t| t.authority.as_str());
            replay_journal(
                &mut master,
                path,
                settings_damage,
                token,
                authority,
                retained,
            )?
        }
        None => Duration::ZERO,
    };
    let now = Instant::now();
    let started = now.checked_sub(clock_from).unwrap_or(now);
    tracing::info!(scheduler = %master.scheduler_name(), reduces = master.reduce_placement().name(), "master starting");
    let state = Arc::new(AppState {
        master: Mutex::new(master),
        journal: journal_path,
        journal_dirty: Default::default(),
        journal_failure: Default::default(),
        started,
        job_ended: Notify::new(),
        wake: WakeClient {
            http: common::http_client::builder(tls.as_ref().map(|t| &t.client))
                .tcp_nodelay(true)
                .connect_timeout(Duration::from_secs(2))
                .timeout(Duration::from_secs(5))
                .pool_idle_timeout(common::http::CLIENT_POOL_IDLE)
                .build()
                .expect("HTTP client builds"),
            token: wake_secret.clone(),
        },
    });
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("master: cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr()?;
    common::http::say_transport("master API", addr, tls.is_some());
    let app = router(state.clone(), credentials.clone());
    let watcher = config_path.map(|path| {
        let (st, authority) = (state.clone(), tls.as_ref().map(|t| t.authority.clone()));
        common::auth::watch_credentials(
            path,
            token.to_owned(),
            credentials,
            Some(wake_secret),
            CREDENTIALS_EVERY,
            Some(Box::new(move |token: &str| {
                st.restamp_journal(token, authority.as_deref())
            })),
        )
    });
    let server_tls = tls.as_ref().map(|t| t.server.clone());
    let scheme = common::tls::scheme(tls.is_some());
    let server = tokio::spawn(async move {
        if let Err(e) = common::http::serve(listener, app, timeouts, server_tls).await {
            tracing::error!(error = %e, "master HTTP server stopped");
        }
    });
    let st = state.clone();
    let reaper = tokio::spawn(async move {
        let mut tick = tokio::time::interval(heartbeat);
        // The instances' launcher runs on a thread of its own, for the
        // master's whole life: it runs commands and waits (off the runtime),
        // and it is the parent of the instance processes, whose parent-death
        // signal fires when that thread ends (a pool thread would end when
        // idle). Made at the first order: a master with no public types
        // never starts it. It stops every instance when the reaper ends.
        let mut to_launcher: Option<std::sync::mpsc::Sender<Vec<Provision>>> = None;
        loop {
            tick.tick().await;
            st.sync_journal();
            let orders = st.with(|m, now| {
                m.check_workers(now);
                m.take_provisioning()
            });
            if orders.is_empty() {
                continue;
            }
            if to_launcher.is_none() {
                let Some(p) = provision.clone() else {
                    tracing::warn!(?orders, "no provisioner: public instances are not started");
                    continue;
                };
                let (tx, rx) = std::sync::mpsc::channel::<Vec<Provision>>();
                let spawned = std::thread::Builder::new()
                    .name("instances".into())
                    .spawn(move || match p.launcher() {
                        Ok(mut launcher) => {
                            while let Ok(orders) = rx.recv() {
                                launcher.apply(orders);
                            }
                        }
                        Err(e) => {
                            tracing::error!(error = %format!("{e:#}"), "cannot make the instance launcher")
                        }
                    });
                if let Err(e) = spawned {
                    tracing::error!(error = %e, "cannot start the instance launcher's thread");
                    continue;
                }
                to_launcher = Some(tx);
            }
            if let Some(tx) = &to_launcher {
                if tx.send(orders).is_err() {
                    tracing::error!("the instance launcher has stopped; instances are not started");
                }
            }
        }
    });
    tracing::info!(%addr, "master listening");
    Ok(MasterHandle {
        addr,
        scheme,
        state,
        server,
        reaper,
        watcher,
    })
}

#[cfg(test)]
mod tests;
