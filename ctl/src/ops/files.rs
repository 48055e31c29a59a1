//! Reading a cluster file back and deleting one, from outside the master:
//! `master get`, `master cat` and `master rm`, and the checks of the chaos
//! run and the tests.
//!
//! A file is read block by block in index order, each block from the first
//! live holder that serves it whole and whose bytes hash to the digest the
//! holder sent (`x-block-digest`, from the same chunk CRC32Cs the store keeps):
//! a damaged or short replica costs a switch to the next holder, never a
//! wrong byte out.

use crate::ops::client::MasterClient;
use anyhow::{bail, Context};
use common::checksum::ChunkHasher;
use common::wire::BLOCK_DIGEST_HEADER;
use common::BlockId;
use futures_util::StreamExt;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// One block from the worker at `addr`, its digest checked against the one
/// the worker sent with it.
pub async fn get_block(client: &MasterClient, addr: &str, id: &BlockId) -> anyhow::Result<Vec<u8>> {
    let what = format!("GET {addr}/blocks/{id}");
    let resp = client
        .http()
        .get(format!("{addr}/blocks/{id}"))
        .bearer_auth(client.token())
        // The idle read, not the whole transfer: a large block on a shaped
        // link takes as long as it takes.
        .timeout(Duration::from_secs(600))
        .send()
        .await
        .with_context(|| format!("{what}: worker unreachable"))?;
    let resp = common::http_client::check(resp, &what).await?;
    let digest = resp
        .headers()
        .get(BLOCK_DIGEST_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .with_context(|| format!("{what}: no {BLOCK_DIGEST_HEADER} header"))?;
    let mut hasher = ChunkHasher::new();
    let mut data = Vec::with_capacity(resp.content_length().unwrap_or(0) as usize);
    let mut stream = resp.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece.with_context(|| format!("{what}: broke after {} bytes", data.len()))?;
        hasher.update(&piece);
        data.extend_from_slice(&piece);
    }
    let got = hasher.finish().block_digest_hex();
    if got != digest {
        bail!(
            "{what}: {} bytes hash to {got}, the worker sent {digest}",
            data.len()
        );
    }
    Ok(data)
}

/// Streams file `name` into `out`, block by block in index order; returns
/// the bytes written. Fails, naming the block, when no live holder serves a
/// block whole and intact (what was written before stays written: callers
/// writing a file write to a temporary one, see [`get_to_path`]).
pub async fn get(client: &MasterClient, name: &str, out: &mut dyn Write) -> anyhow::Result<u64> {
    let f = client.file(name).await?;
    if !f.complete {
        let missing = f.replicas.iter().filter(|r| r.is_empty()).count();
        bail!(
            "file {name} is incomplete: {missing} of {} blocks have no live replica",
            f.blocks
        );
    }
    let workers = client.workers().await?;
    let mut total = 0u64;
    for (i, holders) in f.replicas.iter().enumerate() {
        let id = BlockId::for_file(name, i as u32)?;
        let mut problems = Vec::new();
        let mut got = None;
        for w in workers
            .iter()
            .filter(|w| w.alive && holders.contains(&w.name))
        {
            match get_block(client, &w.addr, &id).await {
                Ok(b) => {
                    got = Some(b);
                    break;
                }
                Err(e) => problems.push(format!("{}: {e:#}", w.name)),
            }
        }
        let data = got.with_context(|| {
            format!(
                "block {i} ({id}) of {name}: no live holder served it whole ({})",
                if problems.is_empty() {
                    format!("holders {holders:?}, none alive")
                } else {
                    problems.join("; ")
                }
            )
        })?;
        out.write_all(&data)
            .with_context(|| format!("writing block {i} of {name}"))?;
        total += data.len() as u64;
    }
    out.flush()?;
    Ok(total)
}

/// A whole file in memory (tests, checks).
pub async fn read_file(client: &MasterClient, name: &str) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    get(client, name, &mut out).await?;
    Ok(out)
}

/// [`get`] into `path`: written to a temporary file beside it and renamed
/// into place only once every block arrived intact, so a failed read
/// leaves no partial file under the name.
pub async fn get_to_path(client: &MasterClient, name: &str, path: &Path) -> anyhow::Result<u64> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".master-get-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
    let n = get(client, name, &mut w).await?;
    drop(w);
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(n)
}

/// `master rm`: deletes file `name` and waits (up to `wait`) until no live
/// worker holds a replica any more, so a file loaded under the same name
/// afterwards is never mixed with the old one's blocks.
pub async fn remove(
    client: &MasterClient,
    name: &str,
    wait: Duration,
) -> anyhow::Result<common::wire::FileDeleted> {
    let deleted = client.delete_file(name).await?;
    let deadline = tokio::time::Instant::now() + wait;
    while !client.file_gone(name).await? {
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "file {name} deleted, but live workers still held replicas {} s later",
                wait.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(deleted)
}
