//! The dashboard: one hand-written page (`ui/index.html`, `ui/app.js`,
//! `ui/style.css`, compiled into the binary, no build step) served by the
//! master on its own port. The page holds no data: it reads the token from
//! the URL fragment (`/#token=...`, never sent to a server) or asks for it,
//! keeps it in the tab's session storage, and sends it as a bearer header
//! to `GET /v1/events` (server-sent events, live cluster and job state) and
//! `GET /v1/jobs/{id}` (a job's attempts, for its timeline).

use axum::http::header;
use axum::response::IntoResponse;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

const INDEX: &str = include_str!("ui/index.html");
const APP: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/style.css");

/// The dashboard's routes (no token: see the module's text).
pub fn routes<S: Clone + Send + Sync + 'static>() -> OpenApiRouter<S> {
    OpenApiRouter::new()
        .routes(routes!(index))
        .routes(routes!(ui))
        .routes(routes!(app_js))
        .routes(routes!(style_css))
}

#[utoipa::path(get, path = "/", tag = "dashboard", security(()),
    responses((status = 200, description = "the dashboard's page", content_type = "text/html")))]
/// The dashboard (open it as `/#token=...`).
async fn index() -> impl IntoResponse {
    page(INDEX, "text/html; charset=utf-8")
}

#[utoipa::path(get, path = "/ui", tag = "dashboard", security(()),
    responses((status = 200, description = "the dashboard's page", content_type = "text/html")))]
/// The dashboard, also here.
async fn ui() -> impl IntoResponse {
    page(INDEX, "text/html; charset=utf-8")
}

#[utoipa::path(get, path = "/ui/app.js", tag = "dashboard", security(()),
    responses((status = 200, description = "the dashboard's code", content_type = "text/javascript")))]
async fn app_js() -> impl IntoResponse {
    page(APP, "text/javascript; charset=utf-8")
}

#[utoipa::path(get, path = "/ui/style.css", tag = "dashboard", security(()),
    responses((status = 200, description = "the dashboard's style", content_type = "text/css")))]
async fn style_css() -> impl IntoResponse {
    page(STYLE, "text/css; charset=utf-8")
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
