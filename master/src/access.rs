//! Which role may call which of the master's routes: the table the HTTP
//! API's middleware (`common::auth::authorize`) reads. `cluster.toml`'s
//! `cluster.token` may call every route; `ctl/tests/credentials.rs` tries
//! each route with each role.

use common::auth::{Rule, CLIENT, READERS, WORKER};
use common::credentials::{Caller, Role};
use common::wire::ErrorBody;

/// Which role may call which route (`cluster.token` may call every one):
/// workers register and heartbeat, clients change files and jobs, and
/// clients and the read-only role read.
pub const RULES: &[Rule] = &[
    Rule::new("POST", "/v1/workers/register", WORKER, "register a worker"),
    Rule::new(
        "POST",
        "/v1/workers/heartbeat",
        WORKER,
        "heartbeat as a worker",
    ),
    Rule::new(
        "POST",
        "/v1/workers/commit",
        WORKER,
        "ask to commit a task's output",
    ),
    Rule::new("GET", "/v1/workers", READERS, "list the workers"),
    Rule::new("GET", "/v1/files", READERS, "list the files"),
    Rule::new("GET", "/v1/files/{name}", READERS, "read a file's blocks"),
    Rule::new("DELETE", "/v1/files/{name}", CLIENT, "delete a file"),
    Rule::new(
        "PUT",
        "/v1/files/{name}/replication",
        CLIENT,
        "change a file's replication",
    ),
    Rule::new("POST", "/v1/jobs", CLIENT, "submit a job"),
    Rule::new("GET", "/v1/jobs", READERS, "list the jobs"),
    Rule::new("GET", "/v1/jobs/{id}", READERS, "read a job's report"),
    Rule::new("GET", "/v1/decisions", READERS, "read the decision record"),
    Rule::new("GET", "/v1/cluster", READERS, "read the cluster's summary"),
    Rule::new("GET", "/metrics", READERS, "read the metrics"),
    Rule::new(
        "GET",
        "/v1/events",
        READERS,
        "follow the dashboard's events",
    ),
    Rule::new("GET", "/v1/whoami", EVERY_ROLE, "say which role it has"),
];

/// Every role: what any known credential may ask.
const EVERY_ROLE: &[Role] = &[Role::Worker, Role::Client, Role::Read];

/// What `GET /v1/whoami` says of the credential that asked.
#[derive(Debug, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Whoami {
    /// `admin` (`cluster.token`: every route), `worker`, `client` or `read`.
    pub role: String,
}

/// `GET /v1/whoami`: the role of the credential that asked (the dashboard
/// refuses a link that carries more than a read credential).
#[utoipa::path(get, path = "/v1/whoami", tag = "cluster",
    responses((status = 200, description = "the caller's role", body = Whoami), (status = 401, description = "no or wrong bearer token", body = ErrorBody)))]
pub async fn whoami(caller: Option<axum::Extension<Caller>>) -> axum::Json<Whoami> {
    let role = match caller.map(|c| c.0) {
        Some(Caller::Role(r)) => r.name(),
        _ => "admin",
    };
    axum::Json(Whoami {
        role: role.to_owned(),
    })
}
