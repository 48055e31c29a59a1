//! Block checksums: SHA-256 over fixed-size chunks, and a block digest that
//! names the whole block (SHA-256 of the chunk digests in order).
//!
//! Chunking lets a reader verify any byte range by hashing only the chunks it
//! touches, and lets an error name the exact offset of the damage. The block
//! digest is what an uploader announces and a receiver must reproduce before
//! the block becomes visible.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bytes covered by one checksum. Every chunk but the last is exactly this long.
pub const CHUNK_BYTES: usize = 1 << 20;

pub type Sha = [u8; 32];

pub fn sha256(data: &[u8]) -> Sha {
    Sha256::digest(data).into()
}

/// The per-chunk digests of one block and its length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockChecksums {
    pub len: u64,
    pub chunk_bytes: u32,
    pub chunks: Vec<Sha>,
}

impl BlockChecksums {
    pub fn of(data: &[u8]) -> Self {
        let mut h = ChunkHasher::new();
        h.update(data);
        h.finish()
    }

    /// SHA-256 of the chunk digests: one name for the whole content.
    pub fn block_digest(&self) -> Sha {
        let mut h = Sha256::new();
        for c in &self.chunks {
            h.update(c);
        }
        h.finalize().into()
    }

    pub fn block_digest_hex(&self) -> String {
        hex::encode(self.block_digest())
    }

    /// Number of chunks a block of `len` bytes has.
    pub fn chunk_count(len: u64, chunk_bytes: u32) -> usize {
        len.div_ceil(chunk_bytes as u64) as usize
    }

    /// Byte range `[start, end)` of chunk `i`.
    pub fn chunk_range(&self, i: usize) -> (u64, u64) {
        let start = i as u64 * self.chunk_bytes as u64;
        (start, (start + self.chunk_bytes as u64).min(self.len))
    }
}

/// Streaming chunk hasher: feed bytes in pieces of any size.
pub struct ChunkHasher {
    current: Sha256,
    in_current: usize,
    len: u64,
    chunks: Vec<Sha>,
}

impl Default for ChunkHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkHasher {
    pub fn new() -> Self {
        ChunkHasher {
            current: Sha256::new(),
            in_current: 0,
            len: 0,
            chunks: Vec::new(),
        }
    }

    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        while !data.is_empty() {
            let take = (CHUNK_BYTES - self.in_current).min(data.len());
            self.current.update(&data[..take]);
            self.in_current += take;
            data = &data[take..];
            if self.in_current == CHUNK_BYTES {
                let done = std::mem::replace(&mut self.current, Sha256::new());
                self.chunks.push(done.finalize().into());
                self.in_current = 0;
            }
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finish(mut self) -> BlockChecksums {
        if self.in_current > 0 {
            self.chunks.push(self.current.finalize().into());
        }
        BlockChecksums {
            len: self.len,
            chunk_bytes: CHUNK_BYTES as u32,
            chunks: self.chunks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_equals_one_shot_at_any_split() {
        let data: Vec<u8> = (0..(2 * CHUNK_BYTES + 12345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let whole = BlockChecksums::of(&data);
        assert_eq!(whole.chunks.len(), 3);
        assert_eq!(whole.len, data.len() as u64);
        for piece in [1usize, 4096, 999_999, CHUNK_BYTES, 3 * CHUNK_BYTES] {
            let mut h = ChunkHasher::new();
            for p in data.chunks(piece) {
                h.update(p);
            }
            assert_eq!(h.finish(), whole, "piece size {piece}");
        }
        assert_eq!(whole.chunks[0], sha256(&data[..CHUNK_BYTES]));
        assert_eq!(whole.chunks[2], sha256(&data[2 * CHUNK_BYTES..]));
        assert_eq!(
            whole.chunk_range(2),
            (2 * CHUNK_BYTES as u64, data.len() as u64)
        );
    }

    #[test]
    fn digest_changes_with_one_bit() {
        let mut data = vec![0u8; CHUNK_BYTES + 1];
        let a = BlockChecksums::of(&data).block_digest();
        data[CHUNK_BYTES] = 1;
        let b = BlockChecksums::of(&data).block_digest();
        assert_ne!(a, b);
        assert_eq!(BlockChecksums::of(&[]).chunks.len(), 0);
    }
}
