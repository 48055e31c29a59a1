//! Uploads to a peer while the block is being made: a reduce's output
//! replicas (`reduce`) and the master's re-replication copies
//! (`replicate`) stream their pieces as they come, paced by this worker's
//! transmit link, and send the block's digest as a trailer at the end.

use crate::fetch::{error_chain, PeerLink};
use crate::progress::Progress;
use axum::http::header;
use bytes::Bytes;
use common::http::bearer;
use common::http_client::check;
use common::wire::{
    OutputTarget, BLOCK_CACHE_HEADER, BLOCK_DIGEST_HEADER, BLOCK_FILE_BLOCKS_HEADER,
    BLOCK_FILE_HEADER, BLOCK_INDEX_HEADER,
};
use reqwest::header::AUTHORIZATION;

/// An HTTP body fed frame by frame through a channel: the data, then the
/// trailers (or an error, which aborts the request).
struct FrameBody(tokio::sync::mpsc::Receiver<Result<http_body::Frame<Bytes>, std::io::Error>>);

impl http_body::Body for FrameBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx)
    }
}

/// PUTs an output block to a replica worker while it is produced: the
/// pieces as they come from `pieces`, paced by this worker's transmit
/// link, then the block's digest as the `x-block-digest` trailer once
/// `digest` gives it. If `digest` is dropped instead (the output failed
/// here), the upload is broken off and the receiver keeps nothing.
pub(crate) async fn upload_streamed(
    peer: PeerLink<'_>,
    addr: &str,
    target: &OutputTarget,
    mut pieces: tokio::sync::mpsc::Receiver<Bytes>,
    digest: tokio::sync::oneshot::Receiver<String>,
    progress: &Progress,
) -> Result<(), String> {
    let url = format!("{addr}/blocks/{}", target.block);
    let (frames, body) = tokio::sync::mpsc::channel(4);
    let request = peer
        .http
        .put(&url)
        .header(AUTHORIZATION, bearer(&peer.token.get()))
        .header(header::TRAILER, BLOCK_DIGEST_HEADER)
        .header(BLOCK_FILE_HEADER, &target.file)
        .header(BLOCK_INDEX_HEADER, target.index.to_string())
        .header(BLOCK_FILE_BLOCKS_HEADER, target.file_blocks.to_string())
        // Job output: written around the receiver's page cache.
        .header(BLOCK_CACHE_HEADER, "drop-behind")
        .body(reqwest::Body::wrap(FrameBody(body)))
        .send();
    let feed = async move {
        while let Some(mut rest) = pieces.recv().await {
            while !rest.is_empty() {
                let piece = rest.split_to(rest.len().min(crate::nic::PIECE));
                peer.link.acquire(piece.len()).await;
                progress.add(piece.len() as u64);
                if frames
                    .send(Ok(http_body::Frame::data(piece)))
                    .await
                    .is_err()
                {
                    // The request ended: it says why.
                    return;
                }
            }
        }
        let last = match digest.await {
            Ok(d) => {
                let mut t = axum::http::HeaderMap::new();
                t.insert(
                    BLOCK_DIGEST_HEADER,
                    d.parse().expect("a hex digest is a header value"),
                );
                Ok(http_body::Frame::trailers(t))
            }
            Err(_) => Err(std::io::Error::other(
                "the output block was not completed on the reduce's worker",
            )),
        };
        let _ = frames.send(last).await;
    };
    let (resp, ()) = tokio::join!(request, feed);
    let resp = resp.map_err(|e| format!("replicating output to {url}: {}", error_chain(&e)))?;
    check(resp, format!("replicating output to {url}"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}
