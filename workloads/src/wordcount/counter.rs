//! The wordcount map's combiner: a word counter built for the cache.
//!
//! - An open-addressing table (linear probing, at most 5/8 full) of 32-byte
//!   [`Slot`]s, two to a cache line, over one arena that holds each distinct
//!   word once, in the order first seen: no allocation per word, no pointer
//!   to chase.
//! - A slot holds its word's first 16 bytes: a word of up to 16 bytes (all
//!   but a few words of a text) is found and compared without reading the
//!   arena. (The layout before, 24-byte slots with 8 bytes of the word, a
//!   quarter of them across two lines, counted 14-21% slower on dictionary
//!   words of 2-14 letters, half of which read the arena.)
//! - Words are read 8 bytes at a time straight from the block (over-reading
//!   within it, masked), for the hash and the compare alike.
//! - Word boundaries come from a mask of a text's space bytes, 64 at a time
//!   (SSE2 on x86-64).
//! - A word's slot is fetched (a prefetch) when the word is read, and the
//!   word is counted [`BATCH`] words later, from a ring, so the cache misses
//!   of a large vocabulary (75,000 distinct words are 3 MiB of slots)
//!   overlap instead of stalling one after another. (Batches of [`BATCH`]
//!   counted once full, before, left the last words of each little time.)
//! - No branch on a word's length to make its key: the second 8 bytes are
//!   always loaded and masked to nothing for a short word. (On dictionary
//!   words of 2-14 letters that branch went either way at random and cost
//!   a fifth of the map's time.)

use super::is_space;

/// Words whose slots are fetched together.
const BATCH: usize = 16;

/// C-locale whitespace as a table ([`is_space`]).
pub(super) static SPACE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = is_space(b as u8);
        b += 1;
    }
    t
};

/// One distinct word: its first 16 bytes (zero-padded), its length, where
/// its bytes are in the arena, its count, and 32 bits of its hash; 32
/// bytes, aligned, so a slot never straddles two cache lines.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    first: [u64; 2],
    tag: u32,
    len: u32,
    at: u32,
    /// 0: an empty slot.
    count: u32,
}

/// A word counter for one map's block (at most 4 GiB, so every offset,
/// length and count fits 32 bits). See the module's notes.
pub struct WordCounter {
    slots: Vec<Slot>,
    /// 64 - log2(slots): a hash's top bits pick its first slot.
    shift: u32,
    arena: Vec<u8>,
    distinct: usize,
}

impl Default for WordCounter {
    fn default() -> Self {
        const FIRST: usize = 1 << 12;
        WordCounter {
            slots: vec![Slot::default(); FIRST],
            shift: 64 - FIRST.trailing_zeros(),
            arena: Vec::new(),
            distinct: 0,
        }
    }
}

/// `len` (at most 8) bytes of `buf` from `at`, little-endian, zero above:
/// one unaligned load, masked by a table (no branch on the length), where
/// 8 bytes are there to read, else a copy.
#[inline(always)]
fn load(buf: &[u8], at: usize, len: usize) -> u64 {
    debug_assert!(len <= 8 && (len == 0 || at + len <= buf.len()));
    match buf.get(at..at + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")) & LOW[len & 15],
        None => {
            let mut b = [0u8; 8];
            let end = (at + len).min(buf.len());
            if at < end {
                b[..end - at].copy_from_slice(&buf[at..end]);
            }
            u64::from_le_bytes(b)
        }
    }
}

/// `LOW[n]`: the low `n` bytes of a word set (n <= 8).
const LOW: [u64; 16] = {
    let mut t = [u64::MAX; 16];
    let mut n = 0;
    while n < 8 {
        t[n] = (1u64 << (8 * n)) - 1;
        n += 1;
    }
    t
};

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// A word's first 16 bytes and its hash (8 bytes a step, multiply-rotate
/// as FxHash, then mixed so both the top bits, the slot, and the low bits,
/// the tag, depend on every byte). The words are the job's own input: a job
/// that floods its own table only slows itself.
#[inline(always)]
fn key(buf: &[u8], at: usize, len: usize) -> ([u64; 2], u64) {
    let a = load(buf, at, len.min(8));
    // Zero for a word of 8 bytes or fewer, without a branch on its length.
    let b = load(buf, at + 8, len.saturating_sub(8).min(8));
    let mut h = (a ^ (len as u64).rotate_right(8)).wrapping_mul(K);
    h = (h.rotate_left(5) ^ b).wrapping_mul(K);
    let mut off = 16;
    while off < len {
        let x = load(buf, at + off, (len - off).min(8));
        h = (h.rotate_left(5) ^ x).wrapping_mul(K);
        off += 8;
    }
    ([a, b], (h ^ (h >> 32)).wrapping_mul(K))
}

#[inline(always)]
fn prefetch(slot: &Slot) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (slot as *const Slot).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// The last [`BATCH`] words taken from a text, a ring: (offset, length,
/// first 16 bytes, hash) each; `k` words taken so far.
struct Batch {
    words: [(usize, usize, [u64; 2], u64); BATCH],
    k: usize,
}

/// Bit i set where `chunk[i]` (64 bytes) is a space byte: SSE2 compares 16
/// bytes at a time on x86-64 (every x86-64 has it), the table elsewhere.
#[inline(always)]
fn space_mask(chunk: &[u8]) -> u64 {
    assert!(chunk.len() >= 64);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut m = 0u64;
        for j in 0..4 {
            // SAFETY: SSE2 is part of x86-64; the 16 bytes read are within
            // `chunk` (at least 64 bytes, asserted above).
            let bits = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr().add(16 * j).cast::<__m128i>());
                let blank = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x20));
                // \t \n \v \f \r: 9..=13 (bytes of 0x80 and up compare negative).
                let control = _mm_and_si128(
                    _mm_cmpgt_epi8(v, _mm_set1_epi8(8)),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(14)),
                );
                _mm_movemask_epi8(_mm_or_si128(blank, control)) as u16
            };
            m |= u64::from(bits) << (16 * j);
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        chunk[..64]
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &c)| m | (u64::from(SPACE[c as usize]) << i))
    }
}

impl WordCounter {
    /// Counts one occurrence of `w`.
    pub fn add(&mut self, w: &[u8]) {
        let (first, h) = key(w, 0, w.len());
        self.add_keyed(w, 0, w.len(), first, h);
    }

    /// Counts every word of `text` that ends before its end (a following
    /// space byte); returns how many it counted and where the last, cut
    /// word starts (`text.len()` if none is cut). Word boundaries come 64
    /// bytes at a time from a mask of the space bytes ([`space_mask`]).
    pub fn add_words(&mut self, text: &[u8]) -> (u64, usize) {
        let mut b = Batch {
            words: [(0, 0, [0; 2], 0); BATCH],
            k: 0,
        };
        let n = text.len();
        let (mut pos, mut in_word, mut start) = (0usize, false, 0usize);
        while pos + 64 <= n {
            let sp = space_mask(&text[pos..pos + 64]);
            let word = !sp;
            let starts = word & ((sp << 1) | u64::from(!in_word));
            let ends = sp & ((word << 1) | u64::from(in_word));
            let mut events = starts | ends;
            while events != 0 {
                let bit = events.trailing_zeros() as usize;
                events &= events - 1;
                if starts >> bit & 1 == 1 {
                    start = pos + bit;
                } else {
                    self.push(&mut b, text, start, pos + bit - start);
                }
            }
            in_word = word >> 63 == 1;
            pos += 64;
        }
        for (i, &c) in text.iter().enumerate().skip(pos) {
            let space = SPACE[c as usize];
            if !space && !in_word {
                (start, in_word) = (i, true);
            } else if space && in_word {
                self.push(&mut b, text, start, i - start);
                in_word = false;
            }
        }
        self.flush(&b, text);
        (b.k as u64, if in_word { start } else { n })
    }

    /// Takes the word `text[at..at + len]` into the ring: its key, and its
    /// slot fetched; counts the word taken [`BATCH`] words before, whose
    /// place it takes, so every slot is fetched that many words ahead.
    #[inline(always)]
    fn push(&mut self, b: &mut Batch, text: &[u8], at: usize, len: usize) {
        let (first, h) = key(text, at, len);
        prefetch(&self.slots[(h >> self.shift) as usize]);
        let i = b.k % BATCH;
        if b.k >= BATCH {
            let (at, len, first, h) = b.words[i];
            self.add_keyed(text, at, len, first, h);
        }
        b.words[i] = (at, len, first, h);
        b.k += 1;
    }

    /// Counts the words still in the ring, oldest first.
    fn flush(&mut self, b: &Batch, text: &[u8]) {
        for k in b.k.saturating_sub(BATCH)..b.k {
            let (at, len, first, h) = b.words[k % BATCH];
            self.add_keyed(text, at, len, first, h);
        }
    }

    /// Counts the word `buf[at..at + len]` whose key is `(first, h)`.
    #[inline(always)]
    fn add_keyed(&mut self, buf: &[u8], at: usize, len: usize, first: [u64; 2], h: u64) {
        let tag = h as u32;
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = &mut self.slots[i];
            if s.count == 0 {
                *s = Slot {
                    first,
                    tag,
                    len: len as u32,
                    at: self.arena.len() as u32,
                    count: 1,
                };
                break;
            }
            if s.first == first
                && s.tag == tag
                && s.len as usize == len
                && (len <= 16
                    || self.arena[s.at as usize + 16..s.at as usize + len]
                        == buf[at + 16..at + len])
            {
                s.count += 1;
                return;
            }
            i = (i + 1) & mask;
        }
        self.arena.extend_from_slice(&buf[at..at + len]);
        self.distinct += 1;
        if self.distinct * 8 > self.slots.len() * 5 {
            self.grow();
        }
    }

    /// Doubles the table, placing every word again.
    fn grow(&mut self) {
        let bigger = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.count > 0) {
            let (_, h) = key(&self.arena, s.at as usize, s.len as usize);
            let mut i = (h >> self.shift) as usize;
            while self.slots[i].count != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    /// Distinct words counted.
    pub fn len(&self) -> usize {
        self.distinct
    }

    pub fn is_empty(&self) -> bool {
        self.distinct == 0
    }

    /// Bytes of the distinct words, end to end.
    pub fn word_bytes(&self) -> usize {
        self.arena.len()
    }

    /// Every distinct word with its count, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        self.slots.iter().filter(|s| s.count > 0).map(|s| {
            let w = &self.arena[s.at as usize..s.at as usize + s.len as usize];
            (w, u64::from(s.count))
        })
    }
}
