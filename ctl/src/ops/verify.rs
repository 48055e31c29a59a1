//! Checking a cluster's work from outside: the references that nobody here
//! wrote that wordcount and sort outputs are compared with (coreutils, in
//! the C locale; files are read back with [`crate::ops::files`]). The chaos
//! run and the end-to-end tests use them.

use anyhow::{bail, Context};
use std::io::Write;
use std::process::{Command, Stdio};

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
