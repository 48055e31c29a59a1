//! HTTP conventions shared by the master's and the workers' servers: every
//! endpoint requires a credential (`common::auth`), and every error is a JSON
//! `{"error": "..."}` with a status that says whose fault it is.

use crate::wire::ErrorBody;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

/// An error answered as JSON.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
    pub fn bad_request(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, m)
    }
    pub fn not_found(m: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, m)
    }
    pub fn internal(m: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, m)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                error: self.message,
            }),
        )
            .into_response()
    }
}

/// A JSON body whose rejections (bad syntax, unknown field, unknown enum
/// value) are answered as JSON errors naming the problem.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(rej) => Err(ApiError::new(rej.status(), rej.body_text())),
        }
    }
}

/// `Authorization` header value for `token`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// How long a server waits on a client before it closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerTimeouts {
    /// For a request's whole header, and for the next request on an idle
    /// keep-alive connection (a client that opens a connection and sends
    /// nothing, or half a header, is cut off after this).
    pub header: std::time::Duration,
    /// Between two pieces of a request body (a client that stops sending
    /// in the middle of an upload is cut off after this; the handler sees
    /// a body error and keeps nothing).
    pub body_idle: std::time::Duration,
}

impl ServerTimeouts {
    /// 30 s each: far above any pause a paced transfer makes, and above the
    /// clients' idle pool time (`CLIENT_POOL_IDLE`), so a pooled connection
    /// is never reused just as the server closes it.
    pub const DEFAULT: ServerTimeouts = ServerTimeouts {
        header: std::time::Duration::from_secs(30),
        body_idle: std::time::Duration::from_secs(30),
    };
}

impl Default for ServerTimeouts {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How long the clients keep an idle pooled connection: well under
/// [`ServerTimeouts::DEFAULT`]'s header timeout.
pub const CLIENT_POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `app` on `listener` until the task is dropped, with `timeouts`
/// (axum::serve has none: a client could hold a connection and a task for
/// ever). One task per connection, HTTP/1.1; over TLS when `tls` is given
/// (the handshake within the header timeout), else plain HTTP.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    timeouts: ServerTimeouts,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
) -> std::io::Result<()> {
    let app = app.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        timeouts.body_idle,
    ));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            // Out of file descriptors and the like: wait, then go on.
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        match acceptor.clone() {
            None => {
                tokio::spawn(serve_connection(stream, app, timeouts));
            }
            Some(acceptor) => {
                tokio::spawn(async move {
                    // rustls reads its records 4 KiB at a time: under a
                    // buffer one receive fills TLS_READ_BUFFER instead
                    // (4x fewer receives on a bulk upload: ~10% of a
                    // CPU-bound sort's time; writes pass straight through).
                    let stream = tokio::io::BufReader::with_capacity(TLS_READ_BUFFER, stream);
                    match tokio::time::timeout(timeouts.header, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => serve_connection(tls, app, timeouts).await,
                        // A client that does not speak TLS or does not
                        // trust us: its connection closes, nothing else.
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        }
    }
}

/// The receive buffer under a TLS server connection.
const TLS_READ_BUFFER: usize = 256 * 1024;

/// One connection's HTTP/1.1 requests until it closes.
async fn serve_connection<S>(stream: S, app: axum::Router, timeouts: ServerTimeouts)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    let service = hyper_util::service::TowerToHyperService::new(app);
    // HTTP/1.1 only: the version sniffing of an automatic builder would
    // wait for a silent client's first bytes without a timer.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header);
    // Errors here are the client's (timeouts, resets): the connection is
    // closed and nothing else is affected.
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Says at start-up how `what` is reached: over TLS, or in plain HTTP
/// (loudly when it listens beyond loopback, where others could read it).
pub fn say_transport(what: &str, listen: std::net::SocketAddr, tls: bool) {
    if tls {
        tracing::info!(%listen, "{what}: HTTPS (TLS on)");
    } else if listen.ip().is_loopback() {
        tracing::info!(%listen, "{what}: plain HTTP on loopback (TLS off: [tls] enabled = false)");
    } else {
        tracing::warn!(%listen, "{what}: plain HTTP beyond loopback: secrets and data cross the network unencrypted (set [tls] enabled = true in cluster.toml)");
    }
}

/// Adds the `token` bearer scheme to an OpenAPI description (the cluster
/// token every protected route requires).
pub struct BearerSecurity;

impl utoipa::Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("cluster.token (every route) or a [credentials] secret of a role the route lets in (common::credentials)"))
                    .build(),
            ),
        );
    }
}
