//! The journal's file. Its first line is a header naming the format and
//! the cluster that wrote it (a fingerprint of the cluster token, not the
//! token); every other line is one entry's JSON; each line ends in a tab
//! and the CRC32C of its JSON in 8 hex digits, so a changed byte anywhere is found, not
//! replayed as another job's history.
//!
//! What each fault gives (tests in `tests.rs`):
//! - a last line cut short (a crash or a full disk while appending): the
//!   line is skipped with a warning, everything before it replays;
//! - a damaged line before the last (a flipped byte, a line lost): the
//!   master refuses to start, naming the line and what is intact; started
//!   with `--journal-recover` it keeps the entries before that line, drops
//!   the rest (their tasks run again, jobs first journaled there are lost)
//!   and keeps the whole file beside the journal as `<journal>.damaged-<ms>`;
//! - a journal another cluster wrote (another token, or with TLS on another
//!   authority: the header names the `ca.pem` it was written under): refused,
//!   naming both fingerprints; a journal written with TLS off (no
//!   authority named) is taken by a master with TLS on, which names its
//!   authority from then on;
//! - a full disk while appending: the append is cut back to the last whole
//!   entry, its entries stay in memory and go out with the next append
//!   (`AppState::with`), and the master takes no new job, deletion or
//!   replication change until the journal can be written (507, Insufficient
//!   Storage: not 503, which clients take for a master away and retry). The request
//!   whose own entry met the full disk was applied before the write failed:
//!   it is answered as taken, and its entry is among those held (a master
//!   killed before the disk has room forgets it);
//! - a journal of an earlier version (no header, no checksums): replayed as
//!   before, and rewritten in this format at the start.

use super::JournalEntry;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

const FORMAT: &str = "mrtb-job-journal";
const VERSION: u32 = 2;

/// The journal's first line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    journal: String,
    version: u32,
    /// `cluster_fingerprint` of the token of the cluster that wrote it.
    cluster: String,
    /// With TLS on: the fingerprint of the cluster's authority
    /// (`NodeTls::authority`) it was written under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authority: Option<String>,
}

/// A cluster's name in its journal: 16 hex digits of a SHA-256 of its
/// token (the journal does not hold the token).
pub fn cluster_fingerprint(token: &str) -> String {
    let digest = common::checksum::sha256(format!("mrtb job journal\0{token}").as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// What a master does with a journal damaged before its last line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Refuse to start, naming the line (the default).
    Refuse,
    /// Keep the entries before the damage, drop the rest, and keep the
    /// whole file beside the journal (`--journal-recover`).
    KeepIntact,
}

/// A journal read back.
#[derive(Debug, Default)]
pub struct Replayed {
    pub entries: Vec<JournalEntry>,
    /// The fingerprint its header names; `None` for a journal of an
    /// earlier version (or none at all).
    pub cluster: Option<String>,
    /// The authority its header names (written with TLS on).
    pub authority: Option<String>,
    /// What was left out, to log: a last line cut short, or the damaged
    /// lines when recovering.
    pub dropped: Vec<String>,
    /// The highest job number the dropped lines name (`"job":N`), so a
    /// recovered master's ids go on past it: a job it forgot must not lend
    /// its id, and its attempts' results, to a new one.
    pub dropped_job_max: Option<u32>,
}

/// Reads a journal, refusing damage before its last line.
pub fn read(path: &Path) -> anyhow::Result<Vec<JournalEntry>> {
    Ok(read_with(path, Damage::Refuse)?.entries)
}

/// Reads a journal (none yet: empty). A last line cut short is skipped
/// and said in `dropped`; damage before it is refused naming the line, or
/// with `Damage::KeepIntact`, cut off there (the whole file kept aside).
pub fn read_with(path: &Path, on_damage: Damage) -> anyhow::Result<Replayed> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Replayed::default()),
        Err(e) => anyhow::bail!("reading the job journal {}: {e}", path.display()),
    };
    let mut out = Replayed::default();
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // Every append ends its lines with a newline: a piece after the last
    // one is a line cut short.
    let torn = lines.pop().filter(|l| !l.is_empty());
    let whole = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if i == 0 {
            let header = checked(line, false)
                .ok()
                .and_then(|json| serde_json::from_slice::<Header>(json).ok());
            if let Some(h) = header {
                if h.journal != FORMAT || h.version != VERSION {
                    anyhow::bail!(
                        "{}: line 1: a journal of format {:?} version {}; this master reads {FORMAT:?} version {VERSION}",
                        path.display(),
                        h.journal,
                        h.version
                    );
                }
                out.cluster = Some(h.cluster);
                out.authority = h.authority;
                continue;
            }
        }
        match entry(line, out.cluster.is_some()) {
            Ok(e) => out.entries.push(e),
            Err(why) => {
                let n = i + 1;
                let after = whole - i + usize::from(torn.is_some());
                if on_damage == Damage::Refuse {
                    anyhow::bail!(
                        "{}: line {n}: {why}. The journal is damaged there: the {} entries before it are intact. \
                         `master serve --journal-recover` keeps them and drops the {after} lines from line {n} on \
                         (their tasks run again; a job first journaled there is lost), keeping the whole file \
                         beside it as {}.damaged-<unix ms>",
                        path.display(),
                        out.entries.len(),
                        path.display()
                    );
                }
                let kept = keep_aside(path)?;
                let rest: Vec<u8> = lines[i..].join(&b'\n');
                out.dropped_job_max = job_numbers(&rest).max();
                out.dropped.push(format!(
                    "line {n}: {why}: kept the {} entries before it and dropped {after} lines from it on; \
                     the whole journal is kept as {}",
                    out.entries.len(),
                    kept.display()
                ));
                return Ok(out);
            }
        }
    }
    if let Some(t) = torn {
        out.dropped.push(format!(
            "line {}: cut short ({} bytes without an end: a crash or a full disk while appending): skipped",
            whole + 1,
            t.len()
        ));
    }
    Ok(out)
}

/// One entry line: JSON, a tab and its CRC32C. `headed`: the journal has
/// a header, so every line carries its checksum (one of an earlier
/// version has none).
fn entry(line: &[u8], headed: bool) -> Result<JournalEntry, String> {
    serde_json::from_slice(checked(line, headed)?).map_err(|e| format!("not a journal entry: {e}"))
}

/// A line's JSON, its checksum verified; `required`: a line without one
/// is damaged.
fn checked(line: &[u8], required: bool) -> Result<&[u8], String> {
    let Some(p) = line.iter().rposition(|&b| b == b'\t') else {
        return if required {
            Err("no checksum (every line of this journal has one)".into())
        } else {
            Ok(line)
        };
    };
    let (json, sum) = (&line[..p], &line[p + 1..]);
    let want = std::str::from_utf8(sum)
        .ok()
        .filter(|s| s.len() == 8)
        .and_then(|s| u32::from_str_radix(s, 16).ok())
        .ok_or("its checksum is not 8 hex digits")?;
    let got = common::checksum::crc32c(json);
    if got != want {
        return Err(format!(
            "checksum mismatch (the line gives {want:08x}, its bytes {got:08x}): a byte changed"
        ));
    }
    Ok(json)
}

/// The numbers after every `"job":` in `bytes` (damaged lines: read as
/// text, not as entries).
fn job_numbers(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    const KEY: &[u8] = b"\"job\":";
    bytes.windows(KEY.len()).enumerate().filter_map(|(i, w)| {
        if w != KEY {
            return None;
        }
        let digits: Vec<u8> = bytes[i + KEY.len()..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .copied()
            .collect();
        std::str::from_utf8(&digits).ok()?.parse().ok()
    })
}

/// Copies a damaged journal to `<path>.damaged-<unix ms>`.
fn keep_aside(path: &Path) -> anyhow::Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".damaged-{}", common::unix_ms()));
    let aside = PathBuf::from(aside);
    std::fs::copy(path, &aside).map_err(|e| {
        anyhow::anyhow!(
            "keeping the damaged journal {} as {}: {e}",
            path.display(),
            aside.display()
        )
    })?;
    Ok(aside)
}

fn encode(entries: &[JournalEntry]) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    for e in entries {
        let json = serde_json::to_vec(e)?;
        buf.extend_from_slice(&json);
        writeln!(buf, "\t{:08x}", common::checksum::crc32c(&json))?;
    }
    Ok(buf)
}

/// Appends `entries`; fsyncs if one of them is `durable`, and returns
/// whether some were written but not fsynced (for `sync`). When the write
/// or its fsync fails (a full disk), the journal is cut back to its length
/// before, so no half line is left for later entries to follow.
pub fn append(path: &Path, entries: &[JournalEntry]) -> anyhow::Result<bool> {
    append_within(path, entries, None)
}

/// `append` on a disk that takes only `room` more bytes (tests: a disk
/// that fills in the middle of an append).
pub(super) fn append_within(
    path: &Path,
    entries: &[JournalEntry],
    room: Option<usize>,
) -> anyhow::Result<bool> {
    if entries.is_empty() {
        return Ok(false);
    }
    let buf = encode(entries)?;
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    };
    let mut f = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            open()?
        }
        f => f?,
    };
    let durable = entries.iter().any(JournalEntry::durable);
    let limit = room.map_or(buf.len(), |r| r.min(buf.len()));
    // Counted by hand, so a failed append knows what to cut back.
    let mut written = 0usize;
    let result = loop {
        if written == limit {
            break if limit < buf.len() {
                Err(std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    "no space left on device",
                ))
            } else if durable {
                f.sync_data()
            } else {
                Ok(())
            };
        }
        match f.write(&buf[written..limit]) {
            Ok(0) => break Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    if let Err(e) = result {
        let cut = f
            .metadata()
            .and_then(|m| f.set_len(m.len().saturating_sub(written as u64)))
            .and_then(|()| f.sync_data());
        let n = entries.len();
        return Err(match cut {
            Ok(()) => anyhow::anyhow!(
                "appending {n} entries to the job journal {}: {e} (cut back to its last whole entry)",
                path.display()
            ),
            Err(c) => anyhow::anyhow!(
                "appending {n} entries to the job journal {}: {e}, and cutting it back failed: {c} \
                 (it may end in part of a line: a restart skips it if it is the last)",
                path.display()
            ),
        });
    }
    Ok(!durable)
}

/// Replaces the journal with a header for `cluster` (a
/// `cluster_fingerprint`) and `authority` (with TLS on) and `entries`:
/// written to `<path>.new`, fsynced, and renamed over it (a crash leaves
/// the old one whole).
pub fn rewrite(
    path: &Path,
    cluster: &str,
    authority: Option<&str>,
    entries: &[JournalEntry],
) -> anyhow::Result<()> {
    let header = Header {
        journal: FORMAT.into(),
        version: VERSION,
        cluster: cluster.into(),
        authority: authority.map(str::to_owned),
    };
    let json = serde_json::to_vec(&header)?;
    let mut buf = json.clone();
    writeln!(buf, "\t{:08x}", common::checksum::crc32c(&json))?;
    buf.extend(encode(entries)?);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&buf)?;
    f.sync_data()?;
    std::fs::rename(&tmp, path)
        .map_err(|e| anyhow::anyhow!("replacing {}: {e}", path.display()))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The journal's history file, beside it: `<journal>.history.jsonl`.
pub fn history_path(journal: &Path) -> PathBuf {
    let mut p = journal.as_os_str().to_owned();
    p.push(".history.jsonl");
    PathBuf::from(p)
}

/// Appends the reports of jobs retired from the journal at a compaction to
/// its history file, one JSON line each, fsynced: written before the
/// compacted journal replaces the old one, so a crash between the two
/// writes a report twice (same job id) and loses none.
pub fn append_history(journal: &Path, reports: &[common::wire::JobReport]) -> anyhow::Result<()> {
    if reports.is_empty() {
        return Ok(());
    }
    let path = history_path(journal);
    let mut buf = Vec::new();
    for r in reports {
        serde_json::to_writer(&mut buf, r)?;
        buf.push(b'\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("opening the job history {}: {e}", path.display()))?;
    f.write_all(&buf)
        .and_then(|()| f.sync_data())
        .map_err(|e| anyhow::anyhow!("writing the job history {}: {e}", path.display()))
}

/// Fsyncs the journal (task entries appended since the last fsync).
pub fn sync(path: &Path) -> anyhow::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .sync_data()?;
    Ok(())
}

/// Refuses a journal another cluster wrote: under another token, or under
/// another authority than `authority` (TLS on).
pub fn check_cluster(
    path: &Path,
    replayed: &Replayed,
    token: &str,
    authority: Option<&str>,
) -> anyhow::Result<()> {
    if let (Some(theirs), Some(ours)) = (&replayed.authority, authority) {
        anyhow::ensure!(
            theirs == ours,
            "{}: the job journal was written under another TLS authority (ca.pem fingerprint {theirs}; \
             this master's is {ours}): another cluster's jobs. Start with the authority that wrote it, \
             or move the journal away to start without history",
            path.display()
        );
    }
    let ours = cluster_fingerprint(token);
    match &replayed.cluster {
        Some(theirs) if *theirs != ours => anyhow::bail!(
            "{}: the job journal was written by another cluster (token fingerprint {theirs}; this master's is \
             {ours}): replaying it would take back another cluster's jobs. Start with the token that wrote it, \
             or move the journal away to start without history",
            path.display()
        ),
        _ => Ok(()),
    }
}
