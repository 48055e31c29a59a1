//! Checking a cluster's work from outside: a file read back block by block
//! from its live replica holders, and the references that nobody here
//! wrote that wordcount and sort outputs are compared with (coreutils, in
//! the C locale). The chaos run and the end-to-end tests use them.

use crate::ops::client::MasterClient;
use anyhow::{bail, Context};
use common::BlockId;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One block from the worker at `addr` (its checksums verified on the way
/// out by the worker).
pub async fn get_block(client: &MasterClient, addr: &str, id: &BlockId) -> anyhow::Result<Vec<u8>> {
    let resp = client
        .http()
        .get(format!("{addr}/blocks/{id}"))
        .bearer_auth(client.token())
        .timeout(Duration::from_secs(20))
        .send()
        .await?;
    let resp = common::http_client::check(resp, format!("GET {addr}/blocks/{id}")).await?;
    Ok(resp.bytes().await?.to_vec())
}

/// A file's bytes, block by block in index order, each from the first live
/// holder that serves it whole.
pub async fn read_file(client: &MasterClient, name: &str) -> anyhow::Result<Vec<u8>> {
    let f = client.file(name).await?;
    if !f.complete {
        bail!("file {name} is incomplete: {f:?}");
    }
    let workers = client.workers().await?;
    let mut out = Vec::new();
    for (i, reps) in f.replicas.iter().enumerate() {
        let id = BlockId::for_file(name, i as u32)?;
        let mut got = None;
        for w in workers.iter().filter(|w| w.alive && reps.contains(&w.name)) {
            if let Ok(b) = get_block(client, &w.addr, &id).await {
                got = Some(b);
                break;
            }
        }
        out.extend(got.with_context(|| format!("no live replica of {id} serves it ({reps:?})"))?);
    }
    Ok(out)
}

/// Runs `sh -c cmd` with `LC_ALL=C`, `input` on its stdin; its stdout.
pub fn pipe(cmd: &str, input: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {cmd}"))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let data = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output()?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("writer panicked"))??;
    if !out.status.success() {
        bail!("{cmd} failed");
    }
    Ok(out.stdout)
}

/// `LC_ALL=C sort` of `input`: what a sort job's output must equal.
pub fn sort_reference(input: &[u8]) -> anyhow::Result<Vec<u8>> {
    pipe("sort", input)
}

/// (word, count) pairs, sorted, of `tr -s '[:space:]' '\n' | sort | uniq
/// -c` over `input` (`tr` leaves an empty "word" when the input starts
/// with space: dropped).
pub fn wordcount_reference(input: &[u8]) -> anyhow::Result<Vec<(Vec<u8>, u64)>> {
    let out = pipe("tr -s '[:space:]' '\\n' | sort | uniq -c", input)?;
    let mut v: Vec<(Vec<u8>, u64)> = out
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let s = l.iter().position(|&b| b != b' ')?;
            let sp = s + l[s..].iter().position(|&b| b == b' ')?;
            let n = std::str::from_utf8(&l[s..sp]).ok()?.parse().ok()?;
            let w = l[sp + 1..].to_vec();
            (!w.is_empty()).then_some((w, n))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// (word, count) pairs, sorted, of a wordcount output (`word\tcount`
/// lines); a line that is not one is an error naming it.
pub fn wordcount_pairs(out: &[u8]) -> anyhow::Result<Vec<(Vec<u8>, u64)>> {
    let mut v = Vec::new();
    for l in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let bad = || {
            anyhow::anyhow!(
                "not a word<TAB>count line: {:?}",
                String::from_utf8_lossy(l)
            )
        };
        let tab = l.iter().position(|&b| b == b'\t').ok_or_else(bad)?;
        let n = std::str::from_utf8(&l[tab + 1..])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        v.push((l[..tab].to_vec(), n));
    }
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_come_from_coreutils() {
        let text = b" b a\tb\n\nc a b\n";
        let want = vec![(b"a".to_vec(), 2), (b"b".to_vec(), 3), (b"c".to_vec(), 1)];
        assert_eq!(wordcount_reference(text).unwrap(), want);
        assert_eq!(wordcount_pairs(b"b\t3\na\t2\nc\t1\n").unwrap(), want);
        assert!(wordcount_pairs(b"a 2\n").is_err());
        assert_eq!(sort_reference(b"b\na\nB\n").unwrap(), b"B\na\nb\n");
    }
}
