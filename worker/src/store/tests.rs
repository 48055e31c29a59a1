use super::*;
use common::checksum::CHUNK_BYTES;

fn target(id: &str) -> BlockTarget {
    BlockTarget {
        id: BlockId::new(id).unwrap(),
        file: "f".into(),
        index: 0,
        file_blocks: 1,
        generation: 0,
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 253) as u8).collect()
}

#[test]
fn a_store_written_with_sha256_chunks_is_converted_when_it_opens() {
    // The layout the previous version wrote, nested as it was.
    #[derive(Serialize)]
    struct OldSums {
        len: u64,
        chunk_bytes: u32,
        chunks: Vec<Sha>,
    }
    #[derive(Serialize)]
    struct OldMeta {
        file: String,
        index: u32,
        file_blocks: u32,
        sums: OldSums,
    }
    let dir = tempfile::tempdir().unwrap();
    let blocks = dir.path().join("blocks");
    fs::create_dir_all(&blocks).unwrap();
    let d = data(2 * CHUNK_BYTES + 10);
    let old = OldMeta {
        file: "f".into(),
        index: 0,
        file_blocks: 1,
        sums: OldSums {
            len: d.len() as u64,
            chunk_bytes: CHUNK_BYTES as u32,
            chunks: d
                .chunks(CHUNK_BYTES)
                .map(common::checksum::sha256)
                .collect(),
        },
    };
    let mut bytes = LEGACY_META_MAGIC.to_vec();
    bytes.extend(bincode::serde::encode_to_vec(&old, bincode::config::standard()).unwrap());
    // "good" is whole; "bad" has one byte changed in its last chunk.
    let mut bad = d.clone();
    bad[2 * CHUNK_BYTES + 3] ^= 1;
    for (name, content) in [("good", &d), ("bad", &bad)] {
        fs::write(blocks.join(format!("{name}.b00000.blk")), content).unwrap();
        fs::write(blocks.join(format!("{name}.b00000.meta")), &bytes).unwrap();
    }
    for round in 0..2 {
        let s = Arc::new(BlockStore::open(dir.path()).unwrap());
        let ids: Vec<String> = s.list().iter().map(|b| b.id.to_string()).collect();
        assert_eq!(ids, ["good.b00000"], "round {round}");
        let id = BlockId::new("good.b00000").unwrap();
        assert_eq!(s.get(&id).unwrap().sums, BlockChecksums::of(&d));
        let mut r = s.reader(&id).unwrap();
        let mut all = Vec::new();
        for i in 0..r.chunk_count() {
            all.extend_from_slice(&r.read_chunk(i).unwrap());
        }
        assert!(all == d);
        let meta = fs::read(blocks.join("good.b00000.meta")).unwrap();
        assert!(meta.starts_with(META_MAGIC));
        assert!(!blocks.join("bad.b00000.blk").exists());
        assert!(!blocks.join("bad.b00000.meta").exists());
    }
}

#[test]
fn put_read_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let d = data(2 * CHUNK_BYTES + 10);
    {
        let s = Arc::new(BlockStore::open(dir.path()).unwrap());
        let info = s.put(target("f.b00000"), &d).unwrap();
        assert_eq!(info.len, d.len() as u64);
        let mut r = s.reader(&info.id).unwrap();
        let mut all = Vec::new();
        for i in 0..r.chunk_count() {
            all.extend_from_slice(&r.read_chunk(i).unwrap());
        }
        assert_eq!(all, d);
    }
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    assert_eq!(s.list().len(), 1);
    assert_eq!(s.list()[0].file, "f");
}

/// Drop-behind writes, around the page cache (O_DIRECT from buffers a
/// thread writes in turn) where the file system allows and streamed to
/// the disk chunk by chunk otherwise, each tried: any length, in pieces
/// that do not line up with the chunks or buffers, read back exactly, and
/// a committed block leaves its pages out of the page cache.
#[test]
fn drop_behind_blocks_of_any_length_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    let chunk = sink::StreamSink::CHUNK as usize;
    let buf = sink::DirectSink::BUF;
    let lengths = [
        0,
        1,
        4095,
        4096,
        chunk,
        chunk + 3,
        buf - 1,
        buf + 4097,
        2 * CHUNK_BYTES + 10,
        3 * chunk + 5,
    ];
    let ways = lengths
        .iter()
        .flat_map(|&n| [(n, true), (n, false)])
        .enumerate();
    for (k, (n, direct)) in ways {
        let d = data(n);
        let id = format!("d.b{k:05}");
        let mut w = s
            .writer_caching(target(&id), [0; 32], Caching::DropBehind)
            .unwrap();
        if direct {
            // Around the page cache, unless the file system refuses.
            let around = matches!(w.file, Some(Sink::Direct(_)));
            assert!(around || on_tmpfs(dir.path()), "O_DIRECT refused");
        } else {
            let f = fs::OpenOptions::new().write(true).open(&w.tmp).unwrap();
            w.file = Some(Sink::streamed(f));
        }
        w.verify = false;
        for piece in d.chunks(777_777) {
            w.write(piece).unwrap();
        }
        // The checksums taken before commit (a streamed output's, sent
        // on as the replicas' trailer) are the stored ones.
        let sums = w.checksums();
        assert_eq!(sums, BlockChecksums::of(&d));
        let info = w.commit().unwrap();
        assert_eq!(s.get(&info.id).unwrap().sums, sums);
        assert_eq!(info.len, n as u64);
        assert_eq!(fs::metadata(s.data_path(&info.id)).unwrap().len(), n as u64);
        // Dropped behind: where the file system keeps a page cache that
        // takes the advice (not tmpfs), next to none of it stays.
        if n >= chunk && !on_tmpfs(dir.path()) {
            let cached = super::cache::tests::resident(&s.data_path(&info.id));
            assert!(cached < 0.25, "{n} bytes: {cached:.2} of the pages cached");
        }
        let mut r = s.reader(&info.id).unwrap();
        let mut all = Vec::new();
        for i in 0..r.chunk_count() {
            all.extend_from_slice(&r.read_chunk(i).unwrap());
        }
        assert!(all == d, "{n} bytes, direct {direct}");
    }
}

#[test]
fn output_not_synced_is_committed_in_flight_and_read_once_written() {
    let dir = tempfile::tempdir().unwrap();
    if on_tmpfs(dir.path()) {
        // No O_DIRECT there: output is streamed and synced at its commit.
        return;
    }
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    let n = 3 * sink::DirectSink::BUF + 12_345;
    let d = data(n);
    let write = |id: &str| {
        let mut w = s.output_writer(target(id), Caching::DropBehind).unwrap();
        for piece in d.chunks(1_000_003) {
            w.write(piece).unwrap();
        }
        w.commit().unwrap()
    };
    // A store syncs its output unless told otherwise: nothing is left over.
    write("synced.b00000");
    assert_eq!(s.writeback_stats(), WritebackStats::default());
    s.set_sync_output(false);
    let held = s.writeback.hold();
    let info = write("later.b00000");
    let stats = s.writeback_stats();
    assert_eq!((stats.pending_blocks, stats.pending_bytes), (1, n as u64));
    assert!(s.in_flight(&info.id));
    // Listed at once; a reader waits for its writes.
    assert!(s.list().iter().any(|b| b.id == info.id));
    let reading = {
        let (s, id) = (s.clone(), info.id.clone());
        std::thread::spawn(move || {
            let mut r = s.reader(&id).unwrap();
            let mut all = Vec::new();
            for i in 0..r.chunk_count() {
                all.extend_from_slice(&r.read_chunk(i).unwrap());
            }
            all
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!reading.is_finished(), "read before its writes were done");
    drop(held);
    assert!(reading.join().unwrap() == d);
    let stats = s.writeback_stats();
    assert_eq!(
        (
            stats.pending_blocks,
            stats.pending_bytes,
            stats.written_blocks,
            stats.errors
        ),
        (0, 0, 1, 0)
    );
    assert!(!s.in_flight(&info.id));
    // Cut to its length, and there when the store opens again.
    assert_eq!(fs::metadata(s.data_path(&info.id)).unwrap().len(), n as u64);
    drop(s);
    let s = BlockStore::open(dir.path()).unwrap();
    assert_eq!(s.get(&info.id).unwrap().sums, BlockChecksums::of(&d));
}

/// Whether `dir` is on a tmpfs (its pages are the file: they cannot go).
fn on_tmpfs(dir: &std::path::Path) -> bool {
    nix::sys::statfs::statfs(dir)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
}

#[test]
fn corrupted_chunk_names_block_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    let d = data(3 * CHUNK_BYTES);
    let info = s.put(target("c.b00000"), &d).unwrap();
    // Flip one byte in the second chunk.
    let path = s.data_path(&info.id);
    let mut bytes = fs::read(&path).unwrap();
    bytes[CHUNK_BYTES + 77] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    let mut r = s.reader(&info.id).unwrap();
    assert!(r.read_chunk(0).is_ok());
    let e = r.read_chunk(1).unwrap_err();
    match &e {
        StoreError::Corrupt { block, offset, .. } => {
            assert_eq!(block.as_str(), "c.b00000");
            assert_eq!(*offset, CHUNK_BYTES as u64);
        }
        other => panic!("expected corruption, got {other}"),
    }
    assert!(e.to_string().contains("c.b00000") && e.to_string().contains("1048576"));
    // Read into one buffer: the good chunk is appended, the damaged one
    // leaves the buffer as it was, and the third still reads after it.
    let mut buf = b"kept".to_vec();
    r.read_chunk_into(0, &mut buf).unwrap();
    assert!(buf[4..] == d[..CHUNK_BYTES]);
    let e = r.read_chunk_into(1, &mut buf).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert_eq!(
        buf.len(),
        4 + CHUNK_BYTES,
        "nothing of the damaged chunk kept"
    );
    r.read_chunk_into(2, &mut buf).unwrap();
    assert!(buf[4 + CHUNK_BYTES..] == d[2 * CHUNK_BYTES..]);
}

#[test]
fn digest_mismatch_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    let mut w = s.writer(target("x.b00000"), [0u8; 32]).unwrap();
    w.write(b"hello").unwrap();
    assert!(matches!(w.commit(), Err(StoreError::DigestMismatch { .. })));
    assert!(s.list().is_empty());
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    assert_eq!(fs::read_dir(dir.path().join("blocks")).unwrap().count(), 0);
}

#[test]
fn abandoned_writer_and_orphans_are_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Arc::new(BlockStore::open(dir.path()).unwrap());
        let mut w = s.writer(target("y.b00000"), [0u8; 32]).unwrap();
        w.write(b"partial").unwrap();
        drop(w);
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }
    // A crash between the data rename and the meta rename leaves an orphan.
    fs::write(dir.path().join("blocks/z.b00000.blk"), b"orphan").unwrap();
    fs::write(dir.path().join("tmp/q.part"), b"interrupted").unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    assert!(s.list().is_empty());
    assert!(!dir.path().join("blocks/z.b00000.blk").exists());
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
}

fn meta_strategy() -> impl proptest::strategy::Strategy<Value = BlockMeta> {
    use proptest::prelude::*;
    (
        0u64..4_000_000,
        512u32..=1 << 20,
        "\\PC{0,16}",
        1u32..=1000,
        any::<u64>(),
    )
        .prop_flat_map(|(len, chunk_bytes, file, file_blocks, seed)| {
            let n = BlockChecksums::chunk_count(len, chunk_bytes);
            (0..file_blocks).prop_map(move |index| {
                let chunks = (0..n).map(|i| (seed ^ i as u64) as u32).collect();
                BlockMeta {
                    file: file.clone(),
                    index,
                    file_blocks,
                    sums: BlockChecksums {
                        len,
                        chunk_bytes,
                        chunks,
                    },
                    generation: seed,
                }
            })
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Block metadata round trips through its binary encoding; damaged
    /// (cut, flipped) or arbitrary bytes decode to an error or to a
    /// meta that still adds up, never a panic.
    #[test]
    fn block_meta_round_trips_and_damage_never_panics(
        meta in meta_strategy(),
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        flip in proptest::prelude::any::<(proptest::sample::Index, u8)>(),
        junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
    ) {
        let bytes = encode_meta(&meta);
        let back = decode_meta(&bytes).unwrap();
        proptest::prop_assert_eq!(
            (&back.file, back.index, back.file_blocks, &back.sums),
            (&meta.file, meta.index, meta.file_blocks, &meta.sums)
        );
        let mut damaged = bytes.clone();
        let i = flip.0.index(damaged.len());
        damaged[i] = flip.1;
        damaged.truncate(cut.index(damaged.len() + 1));
        for b in [damaged, junk.clone(), [META_MAGIC.to_vec(), junk].concat()] {
            if let Ok(m) = decode_meta(&b) {
                let s = &m.sums;
                proptest::prop_assert!(s.chunk_bytes > 0 && m.index < m.file_blocks);
                proptest::prop_assert_eq!(
                    s.chunks.len(),
                    BlockChecksums::chunk_count(s.len, s.chunk_bytes)
                );
            }
        }
    }
}

#[test]
fn an_inconsistent_meta_is_dropped_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Arc::new(BlockStore::open(dir.path()).unwrap());
        s.put(target("m.b00000"), b"some data").unwrap();
    }
    // Decodes, but claims chunks of 0 bytes and more chunks than bytes.
    let meta = BlockMeta {
        file: "m".into(),
        index: 0,
        file_blocks: 1,
        sums: BlockChecksums {
            len: 9,
            chunk_bytes: 0,
            chunks: vec![0; 3],
        },
        generation: 0,
    };
    fs::write(dir.path().join("blocks/m.b00000.meta"), encode_meta(&meta)).unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    assert!(s.list().is_empty());
    assert!(!dir.path().join("blocks/m.b00000.blk").exists());
}

#[test]
fn reupload_same_is_idempotent_different_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    s.put(target("r.b00000"), b"abc").unwrap();
    let g = s.generation();
    s.put(target("r.b00000"), b"abc").unwrap();
    assert_eq!(s.generation(), g);
    assert!(matches!(
        s.put(target("r.b00000"), b"abd"),
        Err(StoreError::Conflict { .. })
    ));
    s.delete(&BlockId::new("r.b00000").unwrap()).unwrap();
    assert!(s.list().is_empty());
}

#[test]
fn range_to_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    let info = s
        .put(target("g.b00000"), &data(2 * CHUNK_BYTES + 5))
        .unwrap();
    let r = s.reader(&info.id).unwrap();
    let cb = CHUNK_BYTES as u64;
    assert_eq!(r.chunks_for_range(0, 1).unwrap(), 0..1);
    assert_eq!(r.chunks_for_range(cb - 1, cb + 1).unwrap(), 0..2);
    assert_eq!(r.chunks_for_range(2 * cb, 2 * cb + 5).unwrap(), 2..3);
    assert!(r.chunks_for_range(0, 2 * cb + 6).is_err());
}

fn at(id: &str, generation: u64) -> BlockTarget {
    BlockTarget {
        generation,
        ..target(id)
    }
}

fn read_all(s: &BlockStore, id: &BlockId) -> Vec<u8> {
    let mut r = s.reader(id).unwrap();
    (0..r.chunk_count())
        .flat_map(|i| r.read_chunk(i).unwrap().to_vec())
        .collect()
}

/// A replica of a newer generation replaces the stored one (content and
/// generation, kept across a reopen); an older one is refused naming both;
/// the same generation is idempotent for the same bytes and a conflict
/// for others; a stale delete takes only the generation it names.
#[test]
fn a_newer_generation_replaces_a_replica_and_an_older_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let id = BlockId::new("o.b00000").unwrap();
    {
        let s = Arc::new(BlockStore::open(dir.path()).unwrap());
        assert_eq!(s.put(at("o.b00000", 3), b"first").unwrap().generation, 3);
        assert_eq!(s.put(at("o.b00000", 5), b"second!").unwrap().generation, 5);
        assert_eq!(read_all(&s, &id), b"second!");
        match s.put(at("o.b00000", 4), b"first") {
            Err(e @ StoreError::Superseded { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("generation 5") && msg.contains("4"), "{msg}");
            }
            r => panic!("{r:?}"),
        }
        assert!(s.put(at("o.b00000", 5), b"second!").is_ok());
        assert!(matches!(
            s.put(at("o.b00000", 5), b"other"),
            Err(StoreError::Conflict { .. })
        ));
        assert_eq!(s.list().len(), 1);
    }
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    assert_eq!(s.get(&id).unwrap().info.generation, 5);
    assert_eq!(read_all(&s, &id), b"second!");
    assert!(
        !s.delete_generation(&id, 3).unwrap(),
        "another generation stays"
    );
    assert!(s.get(&id).is_ok());
    assert!(s.delete_generation(&id, 5).unwrap());
    assert!(s.get(&id).is_err());
    assert!(!s.delete_generation(&id, 5).unwrap(), "gone: nothing to do");
}

/// A `.meta` written before generation stamps (`MRBLK002`) opens at
/// generation 0, its block whole.
#[test]
fn a_block_stored_before_generations_opens_at_generation_0() {
    #[derive(Serialize)]
    struct V2 {
        file: String,
        index: u32,
        file_blocks: u32,
        sums: BlockChecksums,
    }
    let dir = tempfile::tempdir().unwrap();
    let blocks = dir.path().join("blocks");
    fs::create_dir_all(&blocks).unwrap();
    let d = data(CHUNK_BYTES + 7);
    let mut h = ChunkHasher::new();
    h.update(&d);
    let v2 = V2 {
        file: "f".into(),
        index: 0,
        file_blocks: 1,
        sums: h.finish(),
    };
    let mut bytes = V2_META_MAGIC.to_vec();
    bytes.extend(bincode::serde::encode_to_vec(&v2, bincode::config::standard()).unwrap());
    fs::write(blocks.join("f.b00000.blk"), &d).unwrap();
    fs::write(blocks.join("f.b00000.meta"), &bytes).unwrap();
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    let id = BlockId::new("f.b00000").unwrap();
    assert_eq!(s.get(&id).unwrap().info.generation, 0);
    assert_eq!(read_all(&s, &id), d);
    // A later attempt's replica of it replaces it.
    assert_eq!(s.put(at("f.b00000", 1), b"new").unwrap().generation, 1);
}

/// A deletion renames the block's files into the trash and returns: the
/// caller (a heartbeat) never waits for the unlink, which the trash's
/// thread does later; a block written again under the same id meanwhile
/// is not the file unlinked; a store opened over a full trash empties it.
#[test]
fn a_deleted_block_is_unlinked_in_the_background_not_by_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let d = data(2 * CHUNK_BYTES + 10);
    let id = BlockId::new("f.b00000").unwrap();
    let trash = dir.path().join("trash");
    let count = |p: &Path| fs::read_dir(p).unwrap().count();
    {
        let s = Arc::new(BlockStore::open(dir.path()).unwrap());
        s.put(target("f.b00000"), &d).unwrap();
        let held = s.trash.hold();
        s.delete(&id).unwrap();
        assert!(s.list().is_empty());
        assert!(matches!(s.reader(&id), Err(StoreError::NotFound { .. })));
        assert_eq!(count(&dir.path().join("blocks")), 0);
        // Both files wait in the trash for the held thread.
        assert_eq!(s.trash.files(), 2);
        let again: Vec<u8> = d.iter().map(|b| b ^ 0x5a).collect();
        s.put(target("f.b00000"), &again).unwrap();
        drop(held);
        let t = std::time::Instant::now();
        while s.trash.files() > 0 {
            assert!(t.elapsed().as_secs() < 10, "the trash was not emptied");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(read_all(&s, &id), again);
    }
    // What a process killed before its thread got to it left behind.
    fs::write(trash.join("7.1.f.b00000.blk"), &d).unwrap();
    assert_eq!(count(&trash), 1);
    let s = Arc::new(BlockStore::open(dir.path()).unwrap());
    assert_eq!(s.list().len(), 1);
    let t = std::time::Instant::now();
    while s.trash.files() > 0 {
        assert!(t.elapsed().as_secs() < 10, "an opened store left its trash");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
