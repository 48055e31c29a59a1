//! Block checksums: CRC32C over fixed-size chunks, and a block digest that
//! names the whole block (SHA-256 of the block's length and its chunk
//! checksums in order), as HDFS checksums chunks with CRC32C and names a
//! block by an MD5 of its chunk CRCs.
//!
//! Chunking lets a reader verify any byte range by checking only the chunks
//! it touches, and lets an error name the exact offset of the damage. CRC32C
//! (the CPU's `crc32` instruction) costs a fraction of a cryptographic hash
//! on every byte read and written, and catches every burst of up to 32 bits
//! and all but 2^-32 of other damage to a chunk: checksums guard against
//! disks and wires, not against an adversary. The block digest is what an
//! uploader announces and a receiver must reproduce before the block
//! becomes visible.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bytes covered by one checksum. Every chunk but the last is exactly this long.
pub const CHUNK_BYTES: usize = 1 << 20;

pub type Sha = [u8; 32];

pub fn sha256(data: &[u8]) -> Sha {
    Sha256::digest(data).into()
}

/// The CRC32C (Castagnoli) of `data`, as a chunk's checksum.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// The per-chunk CRC32Cs of one block and its length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockChecksums {
    pub len: u64,
    pub chunk_bytes: u32,
    pub chunks: Vec<u32>,
}

impl BlockChecksums {
    pub fn of(data: &[u8]) -> Self {
        let mut h = ChunkHasher::new();
        h.update(data);
        h.finish()
    }

    /// SHA-256 of the length, the chunk size and the chunk checksums: one
    /// name for the whole content.
    pub fn block_digest(&self) -> Sha {
        let mut h = Sha256::new();
        h.update(self.len.to_le_bytes());
        h.update(self.chunk_bytes.to_le_bytes());
        for c in &self.chunks {
            h.update(c.to_le_bytes());
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

    /// Whether `data` is chunk `i`'s bytes.
    pub fn chunk_ok(&self, i: usize, data: &[u8]) -> bool {
        self.chunks.get(i) == Some(&crc32c(data))
    }
}

/// Streaming chunk checksummer: feed bytes in pieces of any size.
pub struct ChunkHasher {
    current: u32,
    in_current: usize,
    len: u64,
    chunks: Vec<u32>,
}

impl Default for ChunkHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkHasher {
    pub fn new() -> Self {
        ChunkHasher {
            current: 0,
            in_current: 0,
            len: 0,
            chunks: Vec::new(),
        }
    }

    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        while !data.is_empty() {
            let take = (CHUNK_BYTES - self.in_current).min(data.len());
            self.current = crc32c::crc32c_append(self.current, &data[..take]);
            self.in_current += take;
            data = &data[take..];
            if self.in_current == CHUNK_BYTES {
                self.chunks.push(std::mem::take(&mut self.current));
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
            self.chunks.push(self.current);
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
        assert_eq!(whole.chunks[0], crc32c(&data[..CHUNK_BYTES]));
        assert_eq!(whole.chunks[2], crc32c(&data[2 * CHUNK_BYTES..]));
        assert!(whole.chunk_ok(1, &data[CHUNK_BYTES..2 * CHUNK_BYTES]));
        assert!(!whole.chunk_ok(1, &data[..CHUNK_BYTES]));
        assert!(!whole.chunk_ok(3, &[]));
        // The standard CRC32C check value ("123456789").
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(
            whole.chunk_range(2),
            (2 * CHUNK_BYTES as u64, data.len() as u64)
        );
    }

    #[test]
    fn digest_changes_with_one_bit_anywhere_and_with_the_length() {
        let mut data = vec![0u8; CHUNK_BYTES + 1];
        let a = BlockChecksums::of(&data).block_digest();
        let mut seen = std::collections::HashSet::from([a]);
        for at in [0, 1, 4095, CHUNK_BYTES - 1, CHUNK_BYTES] {
            for bit in [0, 3, 7] {
                data[at] ^= 1 << bit;
                assert!(seen.insert(BlockChecksums::of(&data).block_digest()));
                data[at] ^= 1 << bit;
            }
        }
        // A shorter block of the same bytes.
        let b = BlockChecksums::of(&data[..CHUNK_BYTES]).block_digest();
        assert!(seen.insert(b));
        assert_eq!(BlockChecksums::of(&[]).chunks.len(), 0);
    }
}
