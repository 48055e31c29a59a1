//! The client side of the HTTP conventions, for every crate that calls a
//! master or a worker (the worker's block, shuffle and registration
//! clients, the CLI's API client): one decoder of error answers.

use reqwest::Response;

/// A client builder for the cluster's nodes: trusting `tls`'s authority
/// only when given (HTTPS), plain HTTP otherwise. Every HTTP client of the
/// workspace is made here: it also installs the process's TLS provider,
/// without which reqwest cannot build even a plain client.
///
/// Without `tls` the client trusts no authority at all (an `https://` URL
/// fails): never the system's roots, which a container `FROM scratch` does
/// not have (reqwest would refuse to build a client there).
pub fn builder(tls: Option<&crate::tls::load::ClientTls>) -> reqwest::ClientBuilder {
    let config = match tls {
        Some(t) => t.config(),
        None => crate::tls::load::ClientTls::trusting_nothing().config(),
    };
    reqwest::Client::builder().tls_backend_preconfigured(config)
}

/// A plain client with reqwest's defaults (tests and tools that reach
/// plain-HTTP servers).
pub fn plain() -> reqwest::Client {
    builder(None).build().expect("HTTP client builds")
}

/// `e` with the causes below it (reqwest's and hyper's own texts omit
/// them: "error sending request" without the refused connection).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s += &format!(": {c}");
        cur = c.source();
    }
    s
}

/// A non-2xx answer, with the message the server put in its JSON error
/// body (or the raw body if it sent something else).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: HTTP {status}: {message}")]
pub struct HttpError {
    /// What was asked (`fetching http://.../blocks/b3`).
    pub what: String,
    pub status: u16,
    pub message: String,
}

/// Passes a 2xx answer through; turns any other into an [`HttpError`].
pub async fn check(resp: Response, what: impl std::fmt::Display) -> Result<Response, HttpError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let body = resp.text().await.unwrap_or_default();
    Err(HttpError {
        what: what.to_string(),
        status: status.as_u16(),
        message: crate::wire::ErrorBody::message_of(&body),
    })
}
