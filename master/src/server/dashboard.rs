//! The dashboard: one hand-written page (`ui/index.html`, `ui/app.js`,
//! `ui/style.css`, compiled into the binary, no build step) served by the
//! master on its own port. The page holds no data: it reads the token from
//! the URL fragment (`/#token=...`, never sent to a server) or asks for it,
//! keeps it in the tab's session storage, and sends it as a bearer header
//! to `GET /v1/events` (server-sent events, live cluster and job state) and
//! `GET /v1/jobs/{id}` (a job's attempts, for its timeline).

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("ui/index.html");
const APP: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/style.css");

/// The dashboard's routes (no token: see the module's text).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { page(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/ui",
            get(|| async { page(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/ui/app.js",
            get(|| async { page(APP, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/ui/style.css",
            get(|| async { page(STYLE, "text/css; charset=utf-8") }),
        )
}

fn page(body: &'static str, content_type: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            // The page loads only its own code and talks only to its origin.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'",
            ),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
}
