//! `BlockStore`: a worker's replicated input blocks on disk.
//!
//! Layout under the store's directory:
//! - `blocks/<id>.blk`: the bytes; `blocks/<id>.meta`: file, index, length,
//!   per-chunk CRC32C checksums and the replica's generation stamp (bincode,
//!   `MRBLK003`; a `MRBLK002` meta, from before generations, reads as
//!   generation 0). A block exists iff its `.meta` does.
//!   A store written before CRC32C (SHA-256 per chunk, `MRBLK001`) is
//!   converted when it opens: each block is read once, verified against its
//!   SHA-256 digests, and its meta rewritten (a block that fails is dropped
//!   as damaged, and the master copies it back from another replica).
//! - `tmp/`: uploads in progress; emptied when the store opens.
//! - `trash/`: deleted blocks' files, unlinked in the background (`trash`).
//!
//! Writes are crash-safe: data and meta go to temp files, are fsynced, the
//! data is renamed into place, then the meta (which makes it visible), then
//! the directory is fsynced. Job output in a store that does not sync it
//! before its task ends (`workers.sync_output = false`) is renamed into
//! place with its writes in flight and synced after (`writeback`); readers
//! wait for it, and a crash before that is found when the store opens. A writer dropped before `commit` deletes its temp
//! file. Every read verifies the chunks it touches; a mismatch is an error
//! naming the block and the chunk's offset, never data passed on.

use bytes::Bytes;
use common::checksum::{BlockChecksums, ChunkHasher, Sha};
use common::wire::BlockInfo;
use common::BlockId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

mod cache;
mod sink;
use sink::Sink;
mod trash;
mod writeback;
pub use cache::CacheStats;
pub use writeback::WritebackStats;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("block {block} not found")]
    NotFound { block: BlockId },
    #[error("block {block} is corrupt: chunk at offset {offset} ({len} bytes) fails its CRC32C checksum")]
    Corrupt {
        block: BlockId,
        offset: u64,
        len: u64,
    },
    #[error("block {block} is {actual} bytes on disk; its checksums cover {expected}")]
    Truncated {
        block: BlockId,
        expected: u64,
        actual: u64,
    },
    #[error("upload of block {block} rejected: announced digest {expected}, received data hashes to {actual}")]
    DigestMismatch {
        block: BlockId,
        expected: String,
        actual: String,
    },
    #[error("block {block} already exists with different content (digest {existing})")]
    Conflict { block: BlockId, existing: String },
    #[error("block {block}: a replica of generation {stored} is stored here, newer than this one's {offered} (written by a later attempt)")]
    Superseded {
        block: BlockId,
        stored: u64,
        offered: u64,
    },
    #[error("block {block}: byte range {start}..{end} is outside its {len} bytes")]
    BadRange {
        block: BlockId,
        start: u64,
        end: u64,
        len: u64,
    },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

const META_MAGIC: &[u8; 8] = b"MRBLK003";

/// The `.meta` of a store written before generation stamps.
const V2_META_MAGIC: &[u8; 8] = b"MRBLK002";

/// The `.meta` of a store written before CRC32C: SHA-256 per chunk.
const LEGACY_META_MAGIC: &[u8; 8] = b"MRBLK001";

/// What a legacy `.meta` holds.
#[derive(Debug, Serialize, Deserialize)]
struct LegacyMeta {
    file: String,
    index: u32,
    file_blocks: u32,
    len: u64,
    chunk_bytes: u32,
    chunks: Vec<Sha>,
}

/// What a `MRBLK002` `.meta` holds.
#[derive(Debug, Deserialize)]
struct V2Meta {
    file: String,
    index: u32,
    file_blocks: u32,
    sums: BlockChecksums,
}

/// What `.meta` holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct BlockMeta {
    file: String,
    index: u32,
    file_blocks: u32,
    sums: BlockChecksums,
    generation: u64,
}

/// A committed block: its report entry and its checksums.
#[derive(Debug)]
pub struct StoredBlock {
    pub info: BlockInfo,
    pub sums: BlockChecksums,
}

pub struct BlockStore {
    blocks_dir: PathBuf,
    tmp_dir: PathBuf,
    index: RwLock<HashMap<BlockId, Arc<StoredBlock>>>,
    /// Bumped on every change, so heartbeats send a block report only when needed.
    generation: AtomicU64,
    tmp_seq: AtomicU64,
    /// Serialises the exists-check and renames of concurrent commits.
    commit_lock: Mutex<()>,
    /// Blocks kept mapped and locked (`start_cache`), if any.
    cache: OnceLock<cache::BlockCache>,
    trash: trash::Trash,
    /// Job output (`Caching::DropBehind`) synced at commit; else written
    /// back after it (`workers.sync_output`).
    sync_output: std::sync::atomic::AtomicBool,
    writeback: writeback::Writeback,
    /// Blocks committed with writes in flight, each with its writeback's
    /// token; readers wait on `written` until theirs is gone.
    in_flight: Mutex<HashMap<BlockId, Arc<()>>>,
    written: std::sync::Condvar,
}

impl BlockStore {
    /// Opens (creating if needed) the store at `dir`, discarding leftovers of
    /// interrupted uploads and data files without meta.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let dir = dir.as_ref();
        let blocks_dir = dir.join("blocks");
        let tmp_dir = dir.join("tmp");
        fs::create_dir_all(&blocks_dir).map_err(io_err("creating", &blocks_dir))?;
        if tmp_dir.exists() {
            fs::remove_dir_all(&tmp_dir).map_err(io_err("cleaning", &tmp_dir))?;
        }
        fs::create_dir_all(&tmp_dir).map_err(io_err("creating", &tmp_dir))?;
        let trash_dir = dir.join("trash");
        let trash = trash::Trash::open(trash_dir.clone()).map_err(io_err("opening", &trash_dir))?;
        let writeback =
            writeback::Writeback::start().map_err(io_err("starting writeback for", dir))?;
        let mut index = HashMap::new();
        let entries = fs::read_dir(&blocks_dir).map_err(io_err("listing", &blocks_dir))?;
        let mut data_files = Vec::new();
        for e in entries {
            let path = e.map_err(io_err("listing", &blocks_dir))?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if let Some(id) = name.strip_suffix(".meta") {
                let Ok(id) = BlockId::new(id) else { continue };
                let data = blocks_dir.join(format!("{id}.blk"));
                match read_meta(&path, &data) {
                    Ok(meta) => {
                        let on_disk = fs::metadata(&data).map(|m| m.len()).ok();
                        if on_disk != Some(meta.sums.len) {
                            tracing::warn!(block = %id, ?on_disk, expected = meta.sums.len, "dropping block whose data file is missing or of the wrong size");
                            let _ = fs::remove_file(&path);
                            let _ = fs::remove_file(&data);
                            continue;
                        }
                        index.insert(id.clone(), Arc::new(stored(id, meta)));
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "dropping unreadable block meta");
                        let _ = fs::remove_file(&path);
                    }
                }
            } else if name.ends_with(".blk") {
                data_files.push(path);
            }
        }
        for data in data_files {
            let id = data
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if !BlockId::new(id).is_ok_and(|id| index.contains_key(&id)) {
                tracing::warn!(path = %data.display(), "removing data file without meta");
                let _ = fs::remove_file(&data);
            }
        }
        Ok(BlockStore {
            blocks_dir,
            tmp_dir,
            index: RwLock::new(index),
            generation: AtomicU64::new(1),
            tmp_seq: AtomicU64::new(0),
            commit_lock: Mutex::new(()),
            cache: OnceLock::new(),
            trash,
            sync_output: std::sync::atomic::AtomicBool::new(true),
            writeback,
            in_flight: Mutex::new(HashMap::new()),
            written: std::sync::Condvar::new(),
        })
    }

    /// Whether job output (`Caching::DropBehind`) is on the disk and synced
    /// before its commit returns (a store opens with `true`) or committed
    /// with its writes in flight and synced after (`workers.sync_output`).
    /// Input blocks are always synced.
    pub fn set_sync_output(&self, sync: bool) {
        self.sync_output.store(sync, Ordering::Relaxed);
    }

    /// Job output committed and not yet written back, and what was.
    pub fn writeback_stats(&self) -> WritebackStats {
        self.writeback.stats()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub fn list(&self) -> Vec<BlockInfo> {
        let mut v: Vec<BlockInfo> = self
            .index
            .read()
            .unwrap()
            .values()
            .map(|b| b.info.clone())
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    pub fn get(&self, id: &BlockId) -> Result<Arc<StoredBlock>, StoreError> {
        self.index
            .read()
            .unwrap()
            .get(id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound { block: id.clone() })
    }

    pub fn data_path(&self, id: &BlockId) -> PathBuf {
        self.blocks_dir.join(format!("{id}.blk"))
    }

    /// Opens a verified reader over block `id` ([`BlockStore::scan_reader`])
    /// for a task or a remote reader: a use of the block, which the block
    /// cache keeps ([`BlockStore::start_cache`]).
    pub fn reader(&self, id: &BlockId) -> Result<BlockReader, StoreError> {
        let reader = self.scan_reader(id)?;
        self.cache_use(id);
        Ok(reader)
    }

    /// A verified reader for the store's own passes (the scrubber, a copy
    /// to a new replica), which are not uses for the block cache. The
    /// checksums and the data file are taken under the index's lock, which
    /// a replacement by a newer generation holds while it renames: a reader
    /// has both of one generation.
    ///
    /// A block committed with its writes in flight is read once they are
    /// done (a block whose writes failed is gone by then).
    pub fn scan_reader(&self, id: &BlockId) -> Result<BlockReader, StoreError> {
        loop {
            let index = self.index.read().unwrap();
            let block = index
                .get(id)
                .cloned()
                .ok_or_else(|| StoreError::NotFound { block: id.clone() })?;
            // Taken under the index's lock, as a commit registers it.
            if self.in_flight.lock().unwrap().contains_key(id) {
                drop(index);
                self.wait_written(id)?;
                continue;
            }
            let path = self.data_path(id);
            let file = File::open(&path).map_err(io_err("opening", &path))?;
            drop(index);
            return Ok(BlockReader { block, file });
        }
    }

    /// Starts writing block `id`, which becomes visible only after `commit`
    /// and only if its data hashes to `expected_digest`.
    pub fn writer(
        self: &Arc<Self>,
        info: BlockTarget,
        expected_digest: Sha,
    ) -> Result<BlockWriter, StoreError> {
        self.writer_caching(info, expected_digest, Caching::Keep)
    }

    /// A writer that keeps the block in the page cache or not (`caching`).
    pub fn writer_caching(
        self: &Arc<Self>,
        info: BlockTarget,
        expected_digest: Sha,
        caching: Caching,
    ) -> Result<BlockWriter, StoreError> {
        let seq = self.tmp_seq.fetch_add(1, Ordering::SeqCst);
        let tmp = self
            .tmp_dir
            .join(format!("{}.{}.{seq}.part", info.id, std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io_err("creating", &tmp))?;
        let file = match caching {
            Caching::Keep => Sink::kept(file),
            Caching::DropBehind => {
                let defer = !self.sync_output.load(Ordering::Relaxed);
                Sink::direct(file, &tmp, defer)
            }
        };
        Ok(BlockWriter {
            store: self.clone(),
            target: info,
            expected_digest,
            verify: true,
            hasher: ChunkHasher::new(),
            known: None,
            written: 0,
            file: Some(file),
            tmp,
            caching,
        })
    }

    /// Writes a whole block in one call (loader, tests).
    pub fn put(
        self: &Arc<Self>,
        target: BlockTarget,
        data: &[u8],
    ) -> Result<BlockInfo, StoreError> {
        // The data comes from this process: hash it once, while writing.
        let mut w = self.writer(target, [0; 32])?;
        w.verify = false;
        w.write(data)?;
        w.commit()
    }

    /// A writer for bytes made in this process (a reduce's output): hashed
    /// as they are written, nothing to verify them against. Its
    /// [`BlockWriter::checksums`] name the block for the replicas sent at
    /// the same time.
    pub fn output_writer(
        self: &Arc<Self>,
        target: BlockTarget,
        caching: Caching,
    ) -> Result<BlockWriter, StoreError> {
        let mut w = self.writer_caching(target, [0; 32], caching)?;
        w.verify = false;
        Ok(w)
    }

    pub fn delete(&self, id: &BlockId) -> Result<(), StoreError> {
        let mut index = self.index.write().unwrap();
        if index.remove(id).is_none() {
            return Err(StoreError::NotFound { block: id.clone() });
        }
        self.cache_forget(id);
        drop(index);
        // Renamed away at once (the meta first: a block exists iff its
        // meta does), unlinked in the background.
        let meta = self.blocks_dir.join(format!("{id}.meta"));
        self.trash
            .discard(&meta)
            .map_err(io_err("removing", &meta))?;
        let data = self.data_path(id);
        self.trash
            .discard(&data)
            .map_err(io_err("removing", &data))?;
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Deletes this store's replica of `id` if it is at `generation` (the
    /// master found it stale); true if it did. A replica of another
    /// generation (a newer attempt's, which replaced it since) stays.
    pub fn delete_generation(&self, id: &BlockId, generation: u64) -> Result<bool, StoreError> {
        let _guard = self.commit_lock.lock().unwrap();
        match self.get(id) {
            Ok(b) if b.info.generation == generation => self.delete(id).map(|()| true),
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn stored(id: BlockId, meta: BlockMeta) -> StoredBlock {
    StoredBlock {
        info: BlockInfo {
            id,
            file: meta.file,
            index: meta.index,
            file_blocks: meta.file_blocks,
            len: meta.sums.len,
            generation: meta.generation,
        },
        sums: meta.sums,
    }
}

/// The meta at `path` of the block whose bytes are at `data`; a legacy
/// meta is converted first ([`convert_legacy`]).
fn read_meta(path: &Path, data: &Path) -> Result<BlockMeta, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    if let Some(body) = bytes.strip_prefix(LEGACY_META_MAGIC.as_slice()) {
        return convert_legacy(body, path, data);
    }
    if let Some(body) = bytes.strip_prefix(V2_META_MAGIC.as_slice()) {
        let (v2, _): (V2Meta, usize) =
            bincode::serde::decode_from_slice(body, meta_config()).map_err(|e| e.to_string())?;
        return consistent(BlockMeta {
            file: v2.file,
            index: v2.index,
            file_blocks: v2.file_blocks,
            sums: v2.sums,
            generation: 0,
        });
    }
    decode_meta(&bytes)
}

/// Converts a block written with SHA-256 chunk digests: reads its bytes
/// once, checks every chunk against its digest, and replaces its meta with
/// one of CRC32C checksums (written whole and synced, then renamed over
/// the old one). An error (a chunk that fails, a short file) leaves the
/// old meta for the caller to drop with the block.
fn convert_legacy(body: &[u8], path: &Path, data: &Path) -> Result<BlockMeta, String> {
    let (old, _): (LegacyMeta, usize) =
        bincode::serde::decode_from_slice(body, meta_config()).map_err(|e| e.to_string())?;
    if old.chunk_bytes == 0
        || old.chunks.len() != BlockChecksums::chunk_count(old.len, old.chunk_bytes)
    {
        return Err(format!(
            "inconsistent legacy meta: {} bytes in {} chunks of {}",
            old.len,
            old.chunks.len(),
            old.chunk_bytes
        ));
    }
    let mut file = File::open(data).map_err(|e| format!("opening {}: {e}", data.display()))?;
    let mut hasher = ChunkHasher::new();
    let mut buf = vec![0u8; old.chunk_bytes as usize];
    for (i, want) in old.chunks.iter().enumerate() {
        let start = i as u64 * old.chunk_bytes as u64;
        let n = (old.len - start).min(old.chunk_bytes as u64) as usize;
        file.read_exact(&mut buf[..n])
            .map_err(|e| format!("reading {} at byte {start}: {e}", data.display()))?;
        if common::checksum::sha256(&buf[..n]) != *want {
            return Err(format!(
                "chunk at offset {start} ({n} bytes) fails its SHA-256 checksum"
            ));
        }
        hasher.update(&buf[..n]);
    }
    let meta = consistent(BlockMeta {
        file: old.file,
        index: old.index,
        file_blocks: old.file_blocks,
        sums: hasher.finish(),
        generation: 0,
    })?;
    let part = path.with_extension("meta.part");
    write_synced(&part, &encode_meta(&meta)).map_err(|e| e.to_string())?;
    fs::rename(&part, path).map_err(|e| format!("renaming {}: {e}", part.display()))?;
    if let Some(d) = path.parent().and_then(|p| File::open(p).ok()) {
        let _ = d.sync_all();
    }
    Ok(meta)
}

/// A `.meta` file's bytes for `meta`.
fn encode_meta(meta: &BlockMeta) -> Vec<u8> {
    let mut bytes = META_MAGIC.to_vec();
    bytes.extend(
        bincode::serde::encode_to_vec(meta, bincode::config::standard())
            .expect("block meta always encodes"),
    );
    bytes
}

/// The largest `.meta` body decoded: a 4 GiB block (`MAX_BLOCK_BYTES`) in
/// 4 KiB chunks needs 32 MiB of digests. Bincode checks every length it
/// reads against it before allocating, so a damaged length prefix is an
/// error, not an attempt to allocate exabytes (found by the property test
/// below: it aborted the process).
const MAX_META_BYTES: usize = 64 << 20;

fn meta_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_META_BYTES>()
}

/// A `.meta` file's bytes: the magic, then the bincode of a `BlockMeta`
/// that must add up (chunks for its length, its index within its file).
fn decode_meta(bytes: &[u8]) -> Result<BlockMeta, String> {
    let body = bytes
        .strip_prefix(META_MAGIC.as_slice())
        .ok_or("bad magic")?;
    let (meta, _): (BlockMeta, usize) =
        bincode::serde::decode_from_slice(body, meta_config()).map_err(|e| e.to_string())?;
    consistent(meta)
}

/// `meta` if it adds up: chunks for its length, its index within its file.
fn consistent(meta: BlockMeta) -> Result<BlockMeta, String> {
    let s = &meta.sums;
    if s.chunk_bytes == 0
        || s.chunks.len() != BlockChecksums::chunk_count(s.len, s.chunk_bytes)
        || meta.file_blocks == 0
        || meta.file_blocks > common::wire::MAX_FILE_BLOCKS
        || meta.index >= meta.file_blocks
    {
        return Err(format!(
            "inconsistent meta: {} bytes in {} chunks of {}, block {} of {}",
            s.len,
            s.chunks.len(),
            s.chunk_bytes,
            meta.index,
            meta.file_blocks
        ));
    }
    Ok(meta)
}

/// Where a block belongs: its id, its place in a file, and the generation
/// stamp its replica is stored with (0: loaded data).
#[derive(Clone, Debug)]
pub struct BlockTarget {
    pub id: BlockId,
    pub file: String,
    pub index: u32,
    pub file_blocks: u32,
    pub generation: u64,
}

/// An upload in progress. Dropping it without `commit` deletes the temp file.
pub struct BlockWriter {
    store: Arc<BlockStore>,
    target: BlockTarget,
    expected_digest: Sha,
    /// Check `expected_digest` at commit (uploads); off for `put`, whose
    /// bytes never left this process.
    verify: bool,
    hasher: ChunkHasher,
    /// The checksums, once [`BlockWriter::checksums`] has finished them.
    known: Option<BlockChecksums>,
    written: u64,
    file: Option<Sink>,
    tmp: PathBuf,
    /// `Keep`: the block cache takes it at commit.
    caching: Caching,
}

/// Whether a block written here stays in the page cache. Job output is
/// written once and rarely read soon: HDFS lets its writer drop it behind
/// (`FSDataOutputStream.setDropBehind`, `dfs.datanode.drop.cache.behind.writes`),
/// and so does `DropBehind` here ([`sink`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caching {
    Keep,
    DropBehind,
}

impl BlockWriter {
    pub fn write(&mut self, data: &[u8]) -> Result<(), StoreError> {
        assert!(
            self.known.is_none(),
            "written after its checksums were taken"
        );
        self.hasher.update(data);
        self.written += data.len() as u64;
        let f = self.file.as_mut().expect("writer used after commit");
        f.write_all(data).map_err(io_err("writing", &self.tmp))
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// The checksums of everything written: the block's content is final
    /// (writing more is a bug), and `commit` stores these.
    pub fn checksums(&mut self) -> BlockChecksums {
        if self.known.is_none() {
            self.known = Some(std::mem::take(&mut self.hasher).finish());
        }
        self.known.clone().expect("just set")
    }

    /// The digest the data must hash to, learnt after the data (an upload
    /// that sends it as a trailer): checked at commit.
    pub fn expect_digest(&mut self, digest: Sha) {
        self.expected_digest = digest;
        self.verify = true;
    }

    /// Verifies the digest, makes the block durable, then visible.
    pub fn commit(mut self) -> Result<BlockInfo, StoreError> {
        let hasher = std::mem::take(&mut self.hasher);
        let sums = self.known.take().unwrap_or_else(|| hasher.finish());
        let id = self.target.id.clone();
        let actual = sums.block_digest();
        if self.verify && actual != self.expected_digest {
            return Err(StoreError::DigestMismatch {
                block: id,
                expected: hex::encode(self.expected_digest),
                actual: hex::encode(actual),
            });
        }
        let store = self.store.clone();
        let _guard = store.commit_lock.lock().unwrap();
        let generation = self.target.generation;
        if let Ok(existing) = store.get(&id) {
            let stored = existing.info.generation;
            if generation < stored {
                return Err(StoreError::Superseded {
                    block: id,
                    stored,
                    offered: generation,
                });
            }
            if generation == stored {
                // Same content already stored: uploads are idempotent.
                if existing.sums.block_digest() == actual {
                    return Ok(existing.info.clone());
                }
                return Err(StoreError::Conflict {
                    block: id,
                    existing: hex::encode(existing.sums.block_digest()),
                });
            }
            // A newer attempt's replica replaces the older one (HDFS keeps
            // the replica of the newest generation stamp).
            tracing::info!(block = %id, stored, generation, "replica replaced by a newer generation");
        }
        let file = self.file.take().expect("commit twice");
        let in_flight = match file.finish().map_err(io_err("writing", &self.tmp))? {
            sink::Finished::Written { file, drop } => {
                file.sync_all().map_err(io_err("syncing", &self.tmp))?;
                if drop {
                    // Written and synced: its pages are clean, and go.
                    sink::drop_pages(&file, 0, 0);
                }
                None
            }
            sink::Finished::InFlight(d) => Some(d),
        };
        let synced = in_flight.is_none();
        let meta = BlockMeta {
            file: self.target.file.clone(),
            index: self.target.index,
            file_blocks: self.target.file_blocks,
            sums,
            generation,
        };
        let meta_tmp = self.tmp.with_extension("meta.part");
        write_meta(&meta_tmp, &encode_meta(&meta), synced)?;
        let data_final = store.data_path(&id);
        let meta_final = store.blocks_dir.join(format!("{id}.meta"));
        let block = Arc::new(stored(id.clone(), meta));
        let info = block.info.clone();
        let token = Arc::new(());
        {
            // Readers take the checksums and open the data under this lock
            // (`reader`): a replaced block's renames are not seen half done.
            let mut index = store.index.write().unwrap();
            fs::rename(&self.tmp, &data_final)
                .map_err(io_err("renaming into place", &data_final))?;
            if let Err(e) = fs::rename(&meta_tmp, &meta_final) {
                let _ = fs::remove_file(&data_final);
                let _ = fs::remove_file(&meta_tmp);
                index.remove(&id);
                return Err(io_err("renaming into place", &meta_final)(e));
            }
            if in_flight.is_some() {
                // Before it is in the index: no reader sees it without.
                store
                    .in_flight
                    .lock()
                    .unwrap()
                    .insert(id.clone(), token.clone());
            }
            index.insert(id.clone(), block);
            // A replaced block's old file is not the one to keep mapped.
            store.cache_forget(&id);
        }
        if self.caching == Caching::Keep {
            store.cache_use(&id);
        }
        match in_flight {
            None => {
                if let Ok(d) = File::open(&store.blocks_dir) {
                    let _ = d.sync_all();
                }
            }
            Some(sink) => store.writeback.queue(writeback::Job {
                sink,
                store: Arc::downgrade(&store),
                id: id.clone(),
                token,
                generation,
                meta: meta_final,
                dir: store.blocks_dir.clone(),
            }),
        }
        store.generation.fetch_add(1, Ordering::SeqCst);
        Ok(info)
    }
}

impl Drop for BlockWriter {
    fn drop(&mut self) {
        // Not committed (or commit failed before the rename): leave nothing behind.
        if self.tmp.exists() {
            let _ = fs::remove_file(&self.tmp);
        }
        let meta_tmp = self.tmp.with_extension("meta.part");
        if meta_tmp.exists() {
            let _ = fs::remove_file(&meta_tmp);
        }
    }
}

fn write_synced(path: &Path, data: &[u8]) -> Result<(), StoreError> {
    write_meta(path, data, true)
}

/// Writes a meta file whole, synced or not (job output written back: the
/// journal's commit a sync forces would wait for the data's writeback).
fn write_meta(path: &Path, data: &[u8], sync: bool) -> Result<(), StoreError> {
    let mut f = File::create(path).map_err(io_err("creating", path))?;
    f.write_all(data).map_err(io_err("writing", path))?;
    if sync {
        f.sync_all().map_err(io_err("syncing", path))?;
    }
    Ok(())
}

/// Reads verified chunks of one block.
pub struct BlockReader {
    block: Arc<StoredBlock>,
    file: File,
}

impl BlockReader {
    pub fn len(&self) -> u64 {
        self.block.sums.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn chunk_count(&self) -> usize {
        self.block.sums.chunks.len()
    }

    pub fn info(&self) -> &BlockInfo {
        &self.block.info
    }

    /// Chunk `i`, verified against its checksum.
    pub fn read_chunk(&mut self, i: usize) -> Result<Bytes, StoreError> {
        let (start, end) = self.block.sums.chunk_range(i);
        // Read into the buffer's spare room: no zeroing first.
        let mut buf = Vec::with_capacity((end - start) as usize);
        self.read_chunk_into(i, &mut buf)?;
        Ok(Bytes::from(buf))
    }

    /// Chunk `i` appended to `buf` (into its spare room, which the caller
    /// may have reserved for the whole block), verified against its
    /// checksum; on an error `buf` is as it was.
    pub fn read_chunk_into(&mut self, i: usize, buf: &mut Vec<u8>) -> Result<(), StoreError> {
        let sums = &self.block.sums;
        let id = &self.block.info.id;
        let (start, end) = sums.chunk_range(i);
        let at = buf.len();
        buf.reserve((end - start) as usize);
        let read = self
            .file
            .seek(SeekFrom::Start(start))
            .and_then(|_| (&mut self.file).take(end - start).read_to_end(buf));
        let failure = match read {
            Err(source) => Some(StoreError::Io {
                what: "reading block",
                path: PathBuf::from(id.as_str()),
                source,
            }),
            Ok(n) if n < (end - start) as usize => Some(StoreError::Truncated {
                block: id.clone(),
                expected: sums.len,
                actual: start + n as u64,
            }),
            Ok(_) if !sums.chunk_ok(i, &buf[at..]) => Some(StoreError::Corrupt {
                block: id.clone(),
                offset: start,
                len: end - start,
            }),
            Ok(_) => None,
        };
        match failure {
            Some(e) => {
                buf.truncate(at);
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// The chunks covering byte range `[start, end)` and the offsets to trim
    /// from the first and keep of the last.
    pub fn chunks_for_range(
        &self,
        start: u64,
        end: u64,
    ) -> Result<std::ops::Range<usize>, StoreError> {
        let len = self.len();
        if start > end || end > len {
            return Err(StoreError::BadRange {
                block: self.block.info.id.clone(),
                start,
                end,
                len,
            });
        }
        if start == end {
            return Ok(0..0);
        }
        let cb = self.block.sums.chunk_bytes as u64;
        Ok((start / cb) as usize..end.div_ceil(cb) as usize)
    }

    pub fn chunk_bytes(&self) -> u64 {
        self.block.sums.chunk_bytes as u64
    }
}

#[cfg(test)]
mod tests;
