//! Which role may call which of the master's routes: the table the HTTP
//! API's middleware (`common::auth::authorize`) reads. `cluster.toml`'s
//! `cluster.token` may call every route; `ctl/tests/credentials.rs` tries
//! each route with each role.

use common::auth::Rule;
use common::credentials::Role;

const WORKER: &[Role] = &[Role::Worker];
const CLIENT: &[Role] = &[Role::Client];
const READERS: &[Role] = &[Role::Client, Role::Read];

const fn rule(
    method: &'static str,
    path: &'static str,
    roles: &'static [Role],
    what: &'static str,
) -> Rule {
    Rule {
        method,
        path,
        roles,
        what,
    }
}

/// Which role may call which route (`cluster.token` may call every one):
/// workers register and heartbeat, clients change files and jobs, and
/// clients and the read-only role read.
pub const RULES: &[Rule] = &[
    rule("POST", "/v1/workers/register", WORKER, "register a worker"),
    rule(
        "POST",
        "/v1/workers/heartbeat",
        WORKER,
        "heartbeat as a worker",
    ),
    rule("GET", "/v1/workers", READERS, "list the workers"),
    rule("GET", "/v1/files", READERS, "list the files"),
    rule("GET", "/v1/files/{name}", READERS, "read a file's blocks"),
    rule("DELETE", "/v1/files/{name}", CLIENT, "delete a file"),
    rule(
        "PUT",
        "/v1/files/{name}/replication",
        CLIENT,
        "change a file's replication",
    ),
    rule("POST", "/v1/jobs", CLIENT, "submit a job"),
    rule("GET", "/v1/jobs", READERS, "list the jobs"),
    rule("GET", "/v1/jobs/{id}", READERS, "read a job's report"),
    rule("GET", "/v1/decisions", READERS, "read the decision record"),
    rule("GET", "/v1/cluster", READERS, "read the cluster's summary"),
    rule("GET", "/metrics", READERS, "read the metrics"),
    rule(
        "GET",
        "/v1/events",
        READERS,
        "follow the dashboard's events",
    ),
];
