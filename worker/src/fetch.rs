//! Client side of block transfers: fetch a block from another worker, pacing
//! every received piece through this worker's NIC receive link.

use crate::nic::Link;
use bytes::Bytes;
use common::bulk_client::BulkClient;
use common::http::bearer;
use common::BlockId;

/// What a transfer with a peer needs: the HTTP client, the cluster token,
/// and the link of this worker's NIC it is paced by (receive for a fetch,
/// transmit for an upload). `Peers::downlink` and `uplink` make one.
#[derive(Clone, Copy)]
pub struct PeerLink<'a> {
    pub http: &'a reqwest::Client,
    /// For bulk reads (blocks, map outputs).
    pub bulk: &'a BulkClient,
    pub token: &'a common::credentials::Secret,
    pub link: &'a Link,
    /// How long a transfer may go without moving a byte (an upload's
    /// client has no read timeout: the peer answers only at its end).
    pub idle: std::time::Duration,
}

/// This worker's way to its peers and the master: one HTTP client, the
/// cluster token and the NIC every transfer is paced by.
pub struct Peers {
    pub http: reqwest::Client,
    /// Block reads and shuffle fetches: their own client, whose TLS
    /// connections receive in large pieces (`common::bulk_client`).
    pub bulk: BulkClient,
    /// For uploads (`uplink`): no idle read timeout, since the receiver
    /// answers only once the whole block is in; the upload watches its
    /// own progress instead ([`PeerLink::idle`]).
    pub upload: reqwest::Client,
    /// How long a transfer may go without moving a byte
    /// ([`PeerLink::idle`]).
    pub idle: std::time::Duration,
    /// The worker role's secret (or the cluster token), replaced when
    /// cluster.toml's `[credentials]` change.
    pub token: common::credentials::Secret,
    pub nic: std::sync::Arc<crate::nic::Nic>,
}

impl Peers {
    /// Transfers from peers, paced by this worker's receive link.
    pub fn downlink(&self) -> PeerLink<'_> {
        PeerLink {
            http: &self.http,
            bulk: &self.bulk,
            token: &self.token,
            link: &self.nic.rx,
            idle: self.idle,
        }
    }

    /// Transfers to peers, paced by this worker's transmit link.
    pub fn uplink(&self) -> PeerLink<'_> {
        PeerLink {
            http: &self.upload,
            bulk: &self.bulk,
            token: &self.token,
            link: &self.nic.tx,
            idle: self.idle,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetching block {block} from {addr}: {message}")]
    Remote {
        block: BlockId,
        addr: String,
        message: String,
    },
    #[error("fetching block {block} from {addr}: got {got} bytes, expected {expected}")]
    Length {
        block: BlockId,
        addr: String,
        got: u64,
        expected: u64,
    },
    #[error("fetching block {block}: consumer stopped: {0}", block = .1)]
    Sink(String, BlockId),
}

/// Streams block `block` of `expected_len` bytes from the worker at `addr`
/// into `sink`, piece by piece. Returns the bytes received.
pub async fn fetch_block<F, Fut>(
    client: &BulkClient,
    rx: &Link,
    token: &str,
    addr: &str,
    block: &BlockId,
    expected_len: u64,
    sink: F,
) -> Result<u64, FetchError>
where
    F: FnMut(Bytes) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    fetch_block_from(client, rx, token, addr, block, expected_len, 0, sink).await
}

/// [`fetch_block`] from byte `from` on (a `Range` request): the rest of a
/// block whose first `from` bytes came from another replica.
#[allow(clippy::too_many_arguments)]
pub async fn fetch_block_from<F, Fut>(
    client: &BulkClient,
    rx: &Link,
    token: &str,
    addr: &str,
    block: &BlockId,
    expected_len: u64,
    from: u64,
    mut sink: F,
) -> Result<u64, FetchError>
where
    F: FnMut(Bytes) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let expected_len = expected_len.saturating_sub(from);
    let remote = |message: String| FetchError::Remote {
        block: block.clone(),
        addr: addr.to_owned(),
        message,
    };
    let url = format!("{addr}/blocks/{block}");
    let resp = client
        .get(&url, &bearer(token), from)
        .await
        .map_err(|e| remote(format!("request failed: {e}")))?;
    let mut resp = resp
        .check(format!("GET {url}"))
        .await
        .map_err(|e| remote(e.to_string()))?;
    let mut got = 0u64;
    loop {
        let piece = match resp.chunk().await {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(remote(format!("stream broke after {got} bytes: {e}"))),
        };
        rx.acquire(piece.len()).await;
        got += piece.len() as u64;
        sink(piece)
            .await
            .map_err(|e| FetchError::Sink(e, block.clone()))?;
    }
    if got != expected_len {
        return Err(FetchError::Length {
            block: block.clone(),
            addr: addr.to_owned(),
            got,
            expected: expected_len,
        });
    }
    Ok(got)
}
