//! The data loader: turns a synthetic or local file into blocks, places each
//! block's replicas on distinct workers (seeded), uploads them through the
//! workers' API and waits until the master's catalog shows every replica.
//!
//! Blocks are self-contained: generated text and split files end every block
//! at a newline (a line longer than a block makes its block longer), and
//! sort records (100 bytes each) never straddle blocks. So a map task never
//! needs bytes from a neighbouring block.

use crate::ops::client::{check, MasterClient};
use anyhow::{bail, Context};
use bytes::Bytes;
use common::checksum::BlockChecksums;
use common::http::bearer;
use common::placement::{place, Placement};
use common::wire::{
    FileInfo, BLOCK_DIGEST_HEADER, BLOCK_FILE_BLOCKS_HEADER, BLOCK_FILE_HEADER, BLOCK_INDEX_HEADER,
};
use common::{BlockId, WorkerId};
use futures_util::{StreamExt, TryStreamExt};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::header::AUTHORIZATION;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Bytes of one sort record: 10-byte key, space, 16 hex digits of record
/// number, space, 71 filler bytes, newline (TeraSort's shape, ASCII).
pub const RECORD_BYTES: usize = 100;
pub const KEY_BYTES: usize = 10;

#[derive(Clone, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generator {
    /// Lines of words drawn from a Zipf-like vocabulary (wordcount input).
    Text,
    /// 100-byte records with 10-byte random keys (sort input).
    Records,
}

#[derive(Clone, Debug)]
pub enum Source {
    Generate { kind: Generator, blocks: u32 },
    File(PathBuf),
}

#[derive(Clone, Debug)]
pub struct LoadSpec {
    pub name: String,
    pub source: Source,
    pub block_size: u64,
    pub replication: u32,
    pub seed: u64,
    pub placement: Placement,
}

fn block_rng(seed: u64, index: u32, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r.set_word_pos(index as u128 * (1 << 40));
    r
}

/// The vocabulary: 5,000 pseudo-words of 2-10 lowercase letters, fixed.
fn vocabulary() -> Vec<String> {
    let mut r = ChaCha8Rng::seed_from_u64(0x05EE_D0F7_0C4B);
    (0..5000)
        .map(|_| {
            let n = r.gen_range(2..=10);
            (0..n)
                .map(|_| (b'a' + r.gen_range(0..26u8)) as char)
                .collect()
        })
        .collect()
}

/// Generated text block `index` of `size` bytes: lines of 4-16 words,
/// word ranks drawn ~ 1/rank (Zipf), ending in a newline.
pub fn generate_text(seed: u64, index: u32, size: usize) -> Vec<u8> {
    let vocab = vocabulary();
    // Inverse-CDF table for P(rank) ~ 1/rank.
    let weights: Vec<f64> = (1..=vocab.len()).map(|r| 1.0 / r as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(weights.len());
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = block_rng(seed, index, 1);
    let mut out = Vec::with_capacity(size);
    let mut line = Vec::with_capacity(128);
    while out.len() < size {
        line.clear();
        for k in 0..rng.gen_range(4..=16) {
            if k > 0 {
                line.push(b' ');
            }
            let u: f64 = rng.gen();
            let rank = cdf.partition_point(|c| *c < u).min(vocab.len() - 1);
            line.extend_from_slice(vocab[rank].as_bytes());
        }
        let room = size - out.len();
        if line.len() < room {
            out.extend_from_slice(&line);
            out.push(b'\n');
        } else {
            // Last line: cut to fit, still newline-terminated.
            out.extend_from_slice(&line[..room - 1]);
            out.push(b'\n');
        }
    }
    out
}

/// Generated record block `index`: `size / 100` records (at least one).
pub fn generate_records(seed: u64, index: u32, size: usize) -> Vec<u8> {
    let n = (size / RECORD_BYTES).max(1);
    let mut rng = block_rng(seed, index, 2);
    let mut out = Vec::with_capacity(n * RECORD_BYTES);
    for i in 0..n {
        for _ in 0..KEY_BYTES {
            out.push(rng.gen_range(b'!'..=b'~'));
        }
        let recno = ((index as u64) << 32) | i as u64;
        out.extend_from_slice(format!(" {recno:016X} ").as_bytes());
        let fill = b'A' + (recno % 26) as u8;
        out.extend(std::iter::repeat_n(fill, RECORD_BYTES - KEY_BYTES - 19));
        out.push(b'\n');
    }
    out
}

/// A line longer than this many blocks is cut (see [`split_points`]).
pub const LONGEST_LINE_BLOCKS: u64 = 16;

/// Splits a local file into blocks of at most `block_size` bytes, each
/// ending at a newline where the window holds one. A line longer than a
/// block makes its block longer, to the line's end, so every block is whole
/// lines (a map never needs its neighbour's bytes); one longer than
/// [`LONGEST_LINE_BLOCKS`] blocks (a file that is not text) is cut there,
/// and the cuts are said in the log. Returns byte ranges.
pub fn split_points(path: &std::path::Path, block_size: u64) -> anyhow::Result<Vec<(u64, u64)>> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = f.metadata()?.len();
    if len == 0 {
        bail!("{} is empty: nothing to load", path.display());
    }
    let mut ranges = Vec::new();
    let mut cuts = 0u64;
    let mut start = 0u64;
    let mut buf = vec![0u8; block_size as usize];
    while start < len {
        let want = block_size.min(len - start);
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf[..want as usize])?;
        let end = if start + want == len {
            len
        } else {
            match buf[..want as usize].iter().rposition(|&b| b == b'\n') {
                Some(p) => start + p as u64 + 1,
                None => {
                    let cap = start.saturating_add(block_size.saturating_mul(LONGEST_LINE_BLOCKS));
                    let end = line_end(&mut f, start + want, cap.min(len), &mut buf)?;
                    cuts += u64::from(end == cap && end < len);
                    end
                }
            }
        };
        ranges.push((start, end));
        start = end;
    }
    if cuts > 0 {
        tracing::warn!(file = %path.display(), cuts, longest_line_blocks = LONGEST_LINE_BLOCKS,
            "lines longer than the longest a block may grow to were cut at block ends: a map sees each cut as a line end");
    }
    Ok(ranges)
}

/// The end of the line running at `from` (past its newline), reading `f`
/// through `buf`; `cap` if it runs on that far.
fn line_end(f: &mut std::fs::File, from: u64, cap: u64, buf: &mut [u8]) -> anyhow::Result<u64> {
    let mut at = from;
    f.seek(SeekFrom::Start(at))?;
    while at < cap {
        let n = (cap - at).min(buf.len() as u64) as usize;
        f.read_exact(&mut buf[..n])?;
        if let Some(p) = buf[..n].iter().position(|&b| b == b'\n') {
            return Ok(at + p as u64 + 1);
        }
        at += n as u64;
    }
    Ok(cap)
}

/// Uploads one block to the worker at `addr`.
#[allow(clippy::too_many_arguments)]
pub async fn upload_block(
    http: &reqwest::Client,
    token: &str,
    addr: &str,
    id: &BlockId,
    file: &str,
    index: u32,
    file_blocks: u32,
    data: Bytes,
) -> anyhow::Result<()> {
    let digest = BlockChecksums::of(&data).block_digest_hex();
    let what = format!("uploading block {id} to {addr}");
    let resp = http
        .put(format!("{addr}/blocks/{id}"))
        .header(AUTHORIZATION, bearer(token))
        .header(BLOCK_DIGEST_HEADER, digest)
        .header(BLOCK_FILE_HEADER, file)
        .header(BLOCK_INDEX_HEADER, index.to_string())
        .header(BLOCK_FILE_BLOCKS_HEADER, file_blocks.to_string())
        .body(data)
        .send()
        .await
        .with_context(|| what.clone())?;
    check(resp, &what).await?;
    Ok(())
}

/// Loads a file into the cluster; returns its catalog entry once every
/// replica is reported.
pub async fn load(client: &MasterClient, spec: &LoadSpec) -> anyhow::Result<FileInfo> {
    load_showing(client, spec, &indicatif::ProgressBar::hidden()).await
}

/// [`load`], advancing `progress` by each block's bytes once all its
/// replicas are uploaded (its length is set to the file's size).
pub async fn load_showing(
    client: &MasterClient,
    spec: &LoadSpec,
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<FileInfo> {
    common::ids::validate_file_name(&spec.name)
        .with_context(|| format!("file name {:?}", spec.name))?;
    if spec.block_size == 0 {
        bail!("block size must be positive");
    }
    let workers: Vec<_> = client
        .workers()
        .await?
        .into_iter()
        .filter(|w| w.alive && w.role.holds_data())
        .collect();
    if spec.replication == 0 || spec.replication as usize > workers.len() {
        bail!(
            "replication {} needs that many live workers that hold data (role map or both); {} are alive",
            spec.replication,
            workers.len()
        );
    }
    let ranges = match &spec.source {
        Source::Generate { blocks, .. } => {
            if *blocks == 0 {
                bail!("--blocks must be at least 1");
            }
            (0..*blocks as u64)
                .map(|i| (i * spec.block_size, (i + 1) * spec.block_size))
                .collect()
        }
        Source::File(p) => split_points(p, spec.block_size)?,
    };
    let n = ranges.len() as u32;
    // A name still being deleted would have its new blocks dropped with the
    // old ones (block ids follow the name): said now, not after 30 s.
    if let Err(e) = client.file(&spec.name).await {
        if e.downcast_ref::<common::http_client::HttpError>()
            .is_some_and(|h| h.status == 409)
        {
            return Err(e.context(format!("cannot load {}", spec.name)));
        }
    }
    progress.set_length(ranges.iter().map(|(s, e)| e - s).sum());
    let ids: Vec<WorkerId> = workers.iter().map(|w| w.id).collect();
    let placement = place(spec.placement, spec.seed, n, &ids, spec.replication);
    let started = Instant::now();
    futures_util::stream::iter(ranges.into_iter().enumerate())
        .map(|(i, (start, end))| {
            let placement = &placement;
            let workers = &workers;
            async move {
                let i = i as u32;
                let size = (end - start) as usize;
                let source = spec.source.clone();
                let seed = spec.seed;
                let data = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<u8>> {
                    Ok(match source {
                        Source::Generate {
                            kind: Generator::Text,
                            ..
                        } => generate_text(seed, i, size),
                        Source::Generate {
                            kind: Generator::Records,
                            ..
                        } => generate_records(seed, i, size),
                        Source::File(p) => {
                            let mut f = std::fs::File::open(&p)?;
                            f.seek(SeekFrom::Start(start))?;
                            let mut buf = vec![0u8; size];
                            f.read_exact(&mut buf)?;
                            buf
                        }
                    })
                })
                .await??;
                let data = Bytes::from(data);
                let id = BlockId::for_file(&spec.name, i)?;
                for w in &placement[i as usize] {
                    let addr = &workers
                        .iter()
                        .find(|x| x.id == *w)
                        .expect("placed on a live worker")
                        .addr;
                    upload_block(
                        client.http(),
                        client.token(),
                        addr,
                        &id,
                        &spec.name,
                        i,
                        n,
                        data.clone(),
                    )
                    .await?;
                }
                progress.inc(end - start);
                anyhow::Ok(())
            }
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await?;
    // The workers report new blocks at their next heartbeat.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = client.file(&spec.name).await;
        if let Ok(info) = &info {
            if info.blocks == n
                && info
                    .replicas
                    .iter()
                    .all(|r| r.len() >= spec.replication as usize)
            {
                tracing::info!(file = %spec.name, blocks = n, secs = started.elapsed().as_secs_f64(), "file loaded");
                // Placed as asked: from now on the master keeps it so.
                client.set_replication(&spec.name, spec.replication).await?;
                return Ok(info.clone());
            }
        }
        if Instant::now() > deadline {
            bail!(
                "file {} uploaded, but the master did not see all replicas within 30 s: {info:?}",
                spec.name
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Parses sizes like `1048576`, `64KiB`, `8MiB`, `1GiB`, `100MB`, `2GB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 8MiB, 64MB, 1048576)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        u => {
            return Err(format!(
                "{s:?}: unknown unit {u:?} (B, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_are_deterministic_and_newline_terminated() {
        let a = generate_text(7, 3, 10_000);
        assert_eq!(a.len(), 10_000);
        assert_eq!(*a.last().unwrap(), b'\n');
        assert_eq!(a, generate_text(7, 3, 10_000));
        assert_ne!(a, generate_text(7, 4, 10_000));
        assert_ne!(a, generate_text(8, 3, 10_000));
        assert!(a
            .iter()
            .all(|b| b.is_ascii_lowercase() || *b == b' ' || *b == b'\n'));
    }

    #[test]
    fn records_are_100_bytes_with_10_byte_keys() {
        let r = generate_records(1, 0, 1050);
        assert_eq!(r.len(), 1000);
        for rec in r.chunks(RECORD_BYTES) {
            assert_eq!(rec[99], b'\n');
            assert!(rec[..10].iter().all(|b| (b'!'..=b'~').contains(b)));
            assert_eq!(rec[10], b' ');
        }
        assert_eq!(r, generate_records(1, 0, 1050));
    }

    #[test]
    fn split_ends_blocks_at_newlines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in.txt");
        std::fs::write(&p, b"aaaa\nbb\ncccccccccccc\nd").unwrap();
        let r = split_points(&p, 6).unwrap();
        // The 12-byte line makes its block 13 bytes long.
        assert_eq!(r, vec![(0, 5), (5, 8), (8, 21), (21, 22)]);
        // A line beyond 16 blocks (a file that is not text) is cut there.
        std::fs::write(&p, [b"x".repeat(200), b"\ny\n".to_vec()].concat()).unwrap();
        assert_eq!(split_points(&p, 6).unwrap()[..2], [(0, 96), (96, 192)]);
        assert_eq!(split_points(&p, 6).unwrap()[2..], [(192, 201), (201, 203)]);
        std::fs::write(dir.path().join("e"), b"").unwrap();
        assert!(split_points(&dir.path().join("e"), 6).is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("8 parsecs").is_err());
        assert!(parse_size("").is_err());
    }
}
