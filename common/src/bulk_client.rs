//! The client the workers read bulk data with (block reads, shuffle
//! fetches): HTTP/1.1 GETs over pooled connections, like reqwest's, with
//! the receive path under TLS made for bulk bytes.
//!
//! rustls takes a connection's bytes 4 KiB at a time, so a TLS client
//! reading a 64 MiB block makes 16,384 receives where a plain one makes a
//! few hundred; on a CPU-bound sort that was most of what TLS cost beyond
//! the cipher. Here a TLS connection reads through a [`READ_BUFFER`] buffer
//! that one receive fills, as the servers' connections do
//! (`common::http::serve`). reqwest builds its TLS connections itself and
//! offers no way under them, hence a client of our own for these GETs;
//! everything else (heartbeats, uploads, the API) stays on reqwest.
//!
//! A plain connection is a bare TCP stream (hyper reads it in large pieces
//! already). An answer's body is read a piece at a time, each within the
//! idle timeout: a peer that stops sending fails the read, while pauses
//! between reads (the NIC's pacing) do not count.

use crate::http_client::{error_chain, HttpError};
use crate::tls::load::ClientTls;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, BufReader, ReadBuf};
use tokio::net::TcpStream;

/// The receive buffer under a TLS connection.
pub const READ_BUFFER: usize = 256 * 1024;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// GETs bulk bytes from the cluster's nodes (see the module's text).
#[derive(Clone)]
pub struct BulkClient {
    client: hyper_util::client::legacy::Client<Connector, http_body_util::Empty<Bytes>>,
    idle: Duration,
}

impl std::fmt::Debug for BulkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkClient")
            .field("idle", &self.idle)
            .finish()
    }
}

impl BulkClient {
    /// A client trusting `tls`'s authority for `https://` URLs (without it
    /// such a URL fails), connecting within `connect` and failing a read
    /// that waits longer than `idle`; idle pooled connections close after
    /// [`crate::http::CLIENT_POOL_IDLE`], as reqwest's do.
    pub fn new(tls: Option<&ClientTls>, connect: Duration, idle: Duration) -> BulkClient {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect));
        let connector = Connector {
            http,
            tls: tls.map(|t| Arc::new(t.config())),
        };
        let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .build(connector);
        BulkClient { client, idle }
    }

    /// GETs `url` with `authorization` (a header value) and, if `from` is
    /// over 0, a `Range` from that byte on. Errors say what failed.
    pub async fn get(
        &self,
        url: &str,
        authorization: &str,
        from: u64,
    ) -> Result<BulkResponse, String> {
        let mut req = hyper::Request::get(url).header(hyper::header::AUTHORIZATION, authorization);
        if from > 0 {
            req = req.header(hyper::header::RANGE, format!("bytes={from}-"));
        }
        let req = req
            .body(http_body_util::Empty::new())
            .map_err(|e| format!("not a request: {e}"))?;
        let resp = match tokio::time::timeout(self.idle, self.client.request(req)).await {
            Ok(r) => r.map_err(|e| error_chain(&e))?,
            Err(_) => return Err(format!("no answer within {:?}", self.idle)),
        };
        Ok(BulkResponse {
            resp,
            idle: self.idle,
        })
    }
}

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = crate::http::CLIENT_POOL_IDLE;

/// An answer whose body is read piece by piece ([`BulkResponse::chunk`]).
pub struct BulkResponse {
    resp: hyper::Response<Incoming>,
    idle: Duration,
}

impl BulkResponse {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.resp.status().as_u16()
    }

    /// The body's length as the server announced it.
    pub fn content_length(&self) -> Option<u64> {
        self.resp
            .headers()
            .get(hyper::header::CONTENT_LENGTH)?
            .to_str()
            .ok()?
            .parse()
            .ok()
    }

    /// The body's next piece; `None` at its end. A piece that does not
    /// come within the idle timeout is an error.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        loop {
            let frame = match tokio::time::timeout(self.idle, self.resp.body_mut().frame()).await {
                Ok(Some(f)) => f.map_err(|e| error_chain(&e))?,
                Ok(None) => return Ok(None),
                Err(_) => return Err(format!("nothing received for {:?}", self.idle)),
            };
            // Trailers carry no bytes of the body.
            if let Ok(data) = frame.into_data() {
                return Ok(Some(data));
            }
        }
    }

    /// Passes a 2xx answer through; turns any other into an [`HttpError`]
    /// with the message of the server's JSON error body.
    pub async fn check(mut self, what: impl std::fmt::Display) -> Result<Self, HttpError> {
        let status = self.status();
        if (200..300).contains(&status) {
            return Ok(self);
        }
        let mut body = Vec::new();
        while let Ok(Some(piece)) = self.chunk().await {
            body.extend_from_slice(&piece);
        }
        Err(HttpError {
            what: what.to_string(),
            status,
            message: crate::wire::ErrorBody::message_of(&String::from_utf8_lossy(&body)),
        })
    }
}

/// Makes the client's connections: TCP, then TLS over a receive buffer
/// for `https://` URLs.
#[derive(Clone)]
struct Connector {
    http: HttpConnector,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl tower_service::Service<hyper::Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<TokioIo<Stream>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: hyper::Uri) -> Self::Future {
        let mut http = self.http.clone();
        let tls = self.tls.clone();
        Box::pin(async move {
            let https = dst.scheme_str() == Some("https");
            let host = dst
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let tcp = http.call(dst).await?.into_inner();
            if !https {
                return Ok(TokioIo::new(Stream::Plain(tcp)));
            }
            let config = tls.ok_or("an https:// URL, but this client has no TLS authority")?;
            let name = rustls::pki_types::ServerName::try_from(host)?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, BufReader::with_capacity(READ_BUFFER, tcp))
                .await?;
            Ok(TokioIo::new(Stream::Tls(Box::new(stream))))
        })
    }
}

/// One of the client's connections.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<BufReader<TcpStream>>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Stream::Plain(s) => s.connected(),
            Stream::Tls(s) => s.get_ref().0.get_ref().connected(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const SECOND: Duration = Duration::from_secs(1);

    /// A server on loopback that answers one request with `head` and
    /// `body`, then holds the connection open for `hold`: the request it
    /// got comes back.
    async fn one_answer(
        head: String,
        body: Vec<u8>,
        hold: Duration,
    ) -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            while !req.ends_with(b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client closed before its request ended");
                req.extend_from_slice(&buf[..n]);
            }
            s.write_all(head.as_bytes()).await.unwrap();
            s.write_all(&body).await.unwrap();
            tokio::time::sleep(hold).await;
            String::from_utf8(req).unwrap()
        });
        (format!("http://{addr}"), served)
    }

    async fn all_of(resp: &mut BulkResponse) -> Vec<u8> {
        let mut got = Vec::new();
        while let Some(p) = resp.chunk().await.unwrap() {
            got.extend_from_slice(&p);
        }
        got
    }

    #[tokio::test]
    async fn a_body_comes_whole_with_the_credential_and_range_asked() {
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let (url, served) = one_answer(head, body.clone(), Duration::ZERO).await;
        let c = BulkClient::new(None, SECOND, SECOND);
        let mut resp = c
            .get(&format!("{url}/blocks/b1"), "Bearer s3", 7)
            .await
            .unwrap();
        assert_eq!(resp.content_length(), Some(3_000_000));
        assert_eq!(resp.status(), 206);
        let got = all_of(&mut resp).await;
        assert!(got == body, "{} bytes, not the body sent", got.len());
        let req = served.await.unwrap().to_ascii_lowercase();
        assert!(req.starts_with("get /blocks/b1 http/1.1\r\n"), "{req}");
        assert!(req.contains("authorization: bearer s3\r\n"), "{req}");
        assert!(req.contains("range: bytes=7-\r\n"), "{req}");
    }

    #[tokio::test]
    async fn a_peer_that_stops_sending_fails_the_read_after_the_idle_time() {
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n".to_owned();
        let (url, _served) = one_answer(head, vec![b'x'; 10], Duration::from_secs(5)).await;
        let c = BulkClient::new(None, SECOND, Duration::from_millis(200));
        let mut resp = c.get(&format!("{url}/b"), "Bearer t", 0).await.unwrap();
        let t0 = std::time::Instant::now();
        let mut got = 0;
        let err = loop {
            match resp.chunk().await {
                Ok(Some(p)) => got += p.len(),
                Ok(None) => panic!("the body ended after {got} bytes of 1000"),
                Err(e) => break e,
            }
        };
        assert_eq!(got, 10);
        assert!(err.contains("nothing received for 200ms"), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    }

    #[tokio::test]
    async fn an_error_answer_gives_the_servers_message() {
        let body = br#"{"error":"no block b9 here"}"#.to_vec();
        let head = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let (url, _served) = one_answer(head, body, Duration::ZERO).await;
        let c = BulkClient::new(None, SECOND, SECOND);
        let resp = c
            .get(&format!("{url}/blocks/b9"), "Bearer t", 0)
            .await
            .unwrap();
        let e = resp.check("GET b9").await.err().expect("a 404 is an error");
        assert_eq!(e.status, 404);
        assert_eq!(e.to_string(), "GET b9: HTTP 404: no block b9 here");
    }

    #[tokio::test]
    async fn an_https_url_without_an_authority_and_a_dead_peer_are_named() {
        let c = BulkClient::new(None, SECOND, SECOND);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let e = c
            .get(&format!("https://{addr}/b"), "t", 0)
            .await
            .err()
            .unwrap();
        assert!(e.contains("has no TLS authority"), "{e}");
        drop(listener);
        let e = c
            .get(&format!("http://{addr}/b"), "t", 0)
            .await
            .err()
            .unwrap();
        assert!(e.to_lowercase().contains("connect"), "{e}");
    }

    /// Over TLS through the cluster's own server: a body of many records
    /// comes whole, twice over one pooled connection, and a client of
    /// another authority is refused.
    #[cfg(feature = "tls-gen")]
    #[tokio::test]
    async fn over_tls_a_large_body_comes_whole_and_a_foreign_authority_is_refused() {
        use crate::tls::{load::NodeTls, make, Files};
        let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let names = vec!["127.0.0.1".to_owned()];
        for d in [&ours, &theirs] {
            make::ensure(d.path(), &[("w1".into(), names.clone())]).unwrap();
        }
        let node = NodeTls::load(&Files::of(ours.path(), "w1"), &names).unwrap();
        let foreign = NodeTls::load(&Files::of(theirs.path(), "w1"), &names).unwrap();
        let body: Vec<u8> = (0..9_000_000u32).map(|i| (i % 253) as u8).collect();
        let served = bytes::Bytes::from(body.clone());
        let app = axum::Router::new().route(
            "/b",
            axum::routing::get(move || {
                let b = served.clone();
                async move { b }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/b", listener.local_addr().unwrap());
        let timeouts = crate::http::ServerTimeouts::DEFAULT;
        let server = tokio::spawn(crate::http::serve(
            listener,
            app,
            timeouts,
            Some(node.server),
        ));
        let c = BulkClient::new(Some(&node.client), SECOND, SECOND);
        for _ in 0..2 {
            let mut resp = c.get(&url, "Bearer t", 0).await.unwrap();
            assert_eq!(resp.status(), 200);
            let got = all_of(&mut resp).await;
            assert!(got == body, "{} bytes, not the body sent", got.len());
        }
        let stranger = BulkClient::new(Some(&foreign.client), SECOND, SECOND);
        let e = stranger.get(&url, "Bearer t", 0).await.err().unwrap();
        assert!(e.to_lowercase().contains("certificate"), "{e}");
        server.abort();
    }
}
