//! The servers' side of the credentials (`common::credentials`): who is
//! calling ([`authenticate`], 401 otherwise), whether the route's [`Rule`]
//! lets that role in ([`authorize`], 403 with the reason otherwise), and
//! the re-reading of `[credentials]` when cluster.toml changes
//! ([`watch_credentials`]), which is how a secret is rotated without a
//! restart.

use crate::credentials::{Caller, Credentials, Role, Secret};
use crate::http::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;
use std::time::Duration;

/// Which roles may call one route (its method and its path as routed,
/// `/v1/jobs/{id}`), and what the route does, for the refusal.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub method: &'static str,
    pub path: &'static str,
    pub roles: &'static [Role],
    pub what: &'static str,
}

impl Rule {
    pub const fn new(
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
}

/// The role sets the servers' rules share.
pub const WORKER: &[Role] = &[Role::Worker];
pub const CLIENT: &[Role] = &[Role::Client];
/// Clients and the read-only role: whoever may look.
pub const READERS: &[Role] = &[Role::Client, Role::Read];

/// Middleware (outermost): 401 unless the request carries a secret the
/// server knows; the caller goes on in the request's extensions.
pub async fn authenticate(State(c): State<Credentials>, mut req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(given) = given else {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing `Authorization: Bearer <credential>` header (cluster.token or a [credentials] secret)",
        )
        .into_response();
    };
    match c.caller(given) {
        Some(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        None => ApiError::new(StatusCode::UNAUTHORIZED, "unknown credential").into_response(),
    }
}

/// Middleware (a route layer, after routing): 403 for a caller whose role
/// the route's [`Rule`] does not list, naming both; the administrator
/// passes everywhere, and a route without a rule is the administrator's.
pub async fn authorize(State(rules): State<&'static [Rule]>, req: Request, next: Next) -> Response {
    let caller = req.extensions().get::<Caller>().copied();
    let Some(Caller::Role(role)) = caller else {
        return next.run(req).await; // the administrator (authenticate ran first)
    };
    let path = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let rule = rules
        .iter()
        .find(|r| r.path == path && r.method.eq_ignore_ascii_case(req.method().as_str()));
    match rule {
        Some(r) if r.roles.contains(&role) => next.run(req).await,
        Some(r) => {
            let needed: Vec<&str> = r.roles.iter().map(|r| r.name()).collect();
            forbidden(format!(
                "this credential has the {} role; to {} needs the {} role",
                role.name(),
                r.what,
                needed.join(" or ")
            ))
        }
        None => forbidden(format!(
            "this credential has the {} role; {} {path} is the administrator's (cluster.token)",
            role.name(),
            req.method()
        )),
    }
}

fn forbidden(why: String) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, why).into_response()
}

/// Told the new `cluster.token` when it changes ([`watch_credentials`]).
pub type OnToken = Box<dyn Fn(&str) + Send + Sync>;

/// Re-reads `path` (a cluster.toml) every `every` and, when it changed and
/// parses, makes its `[credentials]` the accepted ones and `sending` the
/// worker role's secret to send. The administrator's secret stays the one
/// the server started with until the file's `cluster.token` changes: then
/// the new one is the administrator's, the old one is accepted for
/// `cluster.token_grace_s` more, and `on_token` is told (the master stamps
/// its journal with it). A file that does not parse is said and the
/// secrets stay.
pub fn watch_credentials(
    path: PathBuf,
    admin: String,
    credentials: Credentials,
    sending: Option<Secret>,
    every: Duration,
    on_token: Option<OnToken>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let stamp = |p: &PathBuf| {
            std::fs::metadata(p)
                .and_then(|m| Ok((m.modified()?, m.len())))
                .ok()
        };
        let mut seen = stamp(&path);
        let first = crate::config::ClusterConfig::load(&path).ok();
        let mut section = first
            .as_ref()
            .map(|c| c.credentials.clone())
            .unwrap_or_default();
        // The file's token: the node's own secret stays `admin` (which may
        // be given apart from the file, or be its hash) until it changes.
        let mut token = first.map(|c| c.cluster.token);
        let mut admin = admin;
        loop {
            tokio::time::sleep(every).await;
            let now = stamp(&path);
            if now == seen {
                continue;
            }
            seen = now;
            let cfg = match crate::config::ClusterConfig::load(&path) {
                Ok(cfg) => cfg,
                Err(e) => {
                    tracing::warn!(error = %e, "credentials not re-read: the file does not load");
                    continue;
                }
            };
            let token_changed = token.as_ref() != Some(&cfg.cluster.token);
            if !token_changed && cfg.credentials == section {
                continue;
            }
            let grace = Duration::from_secs(cfg.cluster.token_grace_s);
            if token_changed {
                admin = cfg.cluster.token.clone();
                token = Some(cfg.cluster.token.clone());
                tracing::info!(path = %path.display(), grace_s = grace.as_secs(), "cluster.token changed: the old one is accepted for the grace period");
                if let Some(f) = &on_token {
                    f(&admin);
                }
            }
            credentials.rotate(&admin, &cfg.credentials, grace);
            if let Some(s) = &sending {
                s.set(cfg.credentials.sending(Role::Worker).unwrap_or(&admin));
            }
            tracing::info!(path = %path.display(), "credentials re-read");
            section = cfg.credentials;
        }
    })
}
