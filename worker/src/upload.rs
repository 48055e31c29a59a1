//! Uploads to a peer while the block is being made: a reduce's output
//! replicas (`reduce`) and the master's re-replication copies
//! (`replicate`) stream their pieces as they come, paced by this worker's
//! transmit link, and send the block's digest as a trailer at the end.

use crate::fetch::PeerLink;
use crate::progress::Progress;
use axum::http::header;
use bytes::Bytes;
use common::http::bearer;
use common::http_client::check;
use common::http_client::error_chain;
use common::wire::{
    OutputTarget, BLOCK_CACHE_HEADER, BLOCK_DIGEST_HEADER, BLOCK_FILE_BLOCKS_HEADER,
    BLOCK_FILE_HEADER, BLOCK_GENERATION_HEADER, BLOCK_INDEX_HEADER,
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
/// here), the upload is broken off and the receiver keeps nothing. The
/// receiver answers only once the whole block is in, so the upload may
/// last any time while it moves: it is broken off when no piece has gone
/// out for the link's `idle` time (a stopped or cut-off receiver), or no
/// answer came that long after its last piece.
pub(crate) async fn upload_streamed(
    peer: PeerLink<'_>,
    addr: &str,
    target: &OutputTarget,
    mut pieces: tokio::sync::mpsc::Receiver<Bytes>,
    digest: tokio::sync::oneshot::Receiver<String>,
    progress: &Progress,
) -> Result<(), String> {
    let url = format!("{addr}/blocks/{}", target.block);
    let idle = peer.idle;
    // When a piece last went out, in ms since `t0`.
    let t0 = tokio::time::Instant::now();
    let moved = std::sync::atomic::AtomicU64::new(0);
    let moved_now = || {
        moved.store(
            t0.elapsed().as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        )
    };
    let (frames, body) = tokio::sync::mpsc::channel(4);
    let request = peer
        .http
        .put(&url)
        .header(AUTHORIZATION, bearer(&peer.token.get()))
        .header(header::TRAILER, BLOCK_DIGEST_HEADER)
        .header(BLOCK_FILE_HEADER, &target.file)
        .header(BLOCK_INDEX_HEADER, target.index.to_string())
        .header(BLOCK_FILE_BLOCKS_HEADER, target.file_blocks.to_string())
        .header(BLOCK_GENERATION_HEADER, target.generation.to_string())
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
                moved_now();
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
        moved_now();
    };
    let stalled = async {
        loop {
            tokio::time::sleep(idle / 4).await;
            let last =
                std::time::Duration::from_millis(moved.load(std::sync::atomic::Ordering::Relaxed));
            if t0.elapsed().saturating_sub(last) > idle {
                return;
            }
        }
    };
    let resp = tokio::select! {
        (resp, ()) = async { tokio::join!(request, feed) } => resp,
        () = stalled => {
            return Err(format!(
                "replicating output to {url}: nothing moved for {} ms (the receiver stopped taking the block or did not answer)",
                idle.as_millis()
            ));
        }
    };
    let resp = resp.map_err(|e| format!("replicating output to {url}: {}", error_chain(&e)))?;
    check(resp, format!("replicating output to {url}"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A block server that takes the whole upload and answers 200 only
    /// once its digest trailer is in (nothing before).
    async fn receiver() -> String {
        let app = axum::Router::new().route(
            "/blocks/{id}",
            axum::routing::put(|body: axum::body::Body| async move {
                let collected = body
                    .collect()
                    .await
                    .map_err(|e| (axum::http::StatusCode::BAD_REQUEST, e.to_string()))?;
                let digest = collected
                    .trailers()
                    .and_then(|t| t.get(BLOCK_DIGEST_HEADER))
                    .map(|v| v.to_str().unwrap_or("").to_owned());
                let bytes = collected.to_bytes().len();
                match digest {
                    Some(d) if d == "ab" => Ok(format!("{bytes}")),
                    _ => Err((axum::http::StatusCode::BAD_REQUEST, "no digest".to_owned())),
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}")
    }

    /// Uploads 1.2 MB through a 1 MB/s link to the block server at
    /// `addr`, nothing allowed to go 300 ms without moving: the result and
    /// how long it took.
    async fn upload_to(addr: &str) -> (Result<(), String>, std::time::Duration) {
        let http = common::http_client::builder(None).build().unwrap();
        let token = common::credentials::Secret::new("t");
        let link = crate::nic::Link::new(Some(1e6));
        let bulk = common::bulk_client::BulkClient::new(
            None,
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(1),
        );
        let peer = PeerLink {
            http: &http,
            bulk: &bulk,
            token: &token,
            link: &link,
            idle: std::time::Duration::from_millis(300),
        };
        let target = OutputTarget {
            block: common::BlockId::new("out-0").unwrap(),
            file: "out".into(),
            index: 0,
            file_blocks: 1,
            replicas: Vec::new(),
            generation: 0,
        };
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let (dtx, drx) = tokio::sync::oneshot::channel();
        let progress = Progress::default();
        let feed = async move {
            for _ in 0..6 {
                if tx.send(Bytes::from(vec![7u8; 200_000])).await.is_err() {
                    return;
                }
            }
            drop(tx);
            let _ = dtx.send("ab".to_owned());
        };
        let t = std::time::Instant::now();
        let (res, ()) = tokio::join!(
            upload_streamed(peer, addr, &target, rx, drx, &progress),
            feed
        );
        (res, t.elapsed())
    }

    #[tokio::test]
    async fn an_upload_longer_than_the_read_timeout_is_not_cut_off_while_it_moves() {
        // The upload takes about 1.2 s, the receiver answering only at
        // its end (a client read timeout of 300 ms cut it off at 0.3 s).
        let (res, took) = upload_to(&receiver().await).await;
        res.unwrap();
        assert!(took > std::time::Duration::from_millis(900), "{took:?}");
    }

    #[tokio::test]
    async fn an_upload_to_a_receiver_that_never_answers_is_broken_off() {
        // A receiver that takes the request and then nothing: the pieces
        // fill the socket's buffers and stop, or all go out and no answer
        // comes; either way 300 ms without a move end it, with the reason.
        let app = axum::Router::new().route(
            "/blocks/{id}",
            axum::routing::put(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                "late"
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let (res, took) = upload_to(&format!("http://{addr}")).await;
        let e = res.unwrap_err();
        assert!(e.contains("nothing moved for 300 ms"), "{e}");
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }
}
