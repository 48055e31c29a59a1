//! synthetic: a job that moves the bytes it is told to, as SWIM's
//! synthetic jobs do when they replay a production trace: its map reads
//! its whole block and writes `shuffle` bytes of map output per input
//! byte, hash-partitioned over the reduces; each reduce writes `output`
//! bytes per shuffle byte it fetched. The trace's ratios, not a real
//! computation's, decide how many bytes cross the network and reach the
//! file system.
//!
//! Records are text lines of 100 bytes (a 10-character key, 89 characters
//! of filler, a newline), so an output is a text file other jobs can read;
//! the last record of a map (or of a reduce's output) is cut to what the
//! ratio leaves, so the byte counts are exact: a map of `n` input bytes
//! writes `round(shuffle * n)` bytes. A map's records, and so the bytes of
//! every partition, follow from its input's content alone (however the
//! block arrives in pieces); a reduce's output from the set of partitions
//! it fetched, in whatever order they came.

use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask};
use serde::{Deserialize, Serialize};

/// Bytes of a record.
pub const RECORD: usize = 100;
/// Characters of a record's key.
pub const KEY: usize = 10;
/// Most map output one map task may write (a larger ratio x block fails
/// the task with the reason, instead of exhausting the worker's memory).
pub const MAX_MAP_OUTPUT: u64 = 4 << 30;

/// A synthetic job's byte ratios (SWIM's shuffle/input and
/// output/shuffle).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Ratios {
    /// Map output bytes per map input byte.
    pub shuffle: f64,
    /// Reduce output bytes per shuffle byte a reduce fetched.
    pub output: f64,
}

impl Default for Ratios {
    fn default() -> Self {
        Ratios {
            shuffle: 1.0,
            output: 1.0,
        }
    }
}

impl Ratios {
    /// The largest ratio accepted: the production traces have jobs whose
    /// shuffle is 10^6 times their input (a few bytes read, megabytes
    /// shuffled); beyond 10^9 it is a typo.
    pub const MAX: f64 = 1e9;

    /// Checks both ratios; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [("shuffle", self.shuffle), ("output", self.output)] {
            if !(v.is_finite() && (0.0..=Self::MAX).contains(&v)) {
                return Err(format!(
                    "ratios.{name} must be a number in [0, {:e}] (got {v})",
                    Self::MAX
                ));
            }
        }
        Ok(())
    }
}

/// splitmix64's finalizer: a fixed, well-mixed function of a word.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A digest of a byte stream that does not depend on how it is cut into
/// pieces: 8-byte words folded in order, a partial word carried over.
#[derive(Default)]
struct StreamDigest {
    state: u64,
    carry: [u8; 8],
    carried: usize,
    bytes: u64,
}

impl StreamDigest {
    fn add(&mut self, mut piece: &[u8]) {
        self.bytes += piece.len() as u64;
        if self.carried > 0 {
            let n = (8 - self.carried).min(piece.len());
            self.carry[self.carried..self.carried + n].copy_from_slice(&piece[..n]);
            self.carried += n;
            piece = &piece[n..];
            if self.carried < 8 {
                return;
            }
            self.fold(u64::from_le_bytes(self.carry));
            self.carried = 0;
        }
        let mut words = piece.chunks_exact(8);
        for w in &mut words {
            self.fold(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carried = rest.len();
    }

    #[inline]
    fn fold(&mut self, w: u64) {
        self.state = mix(self.state ^ w);
    }

    fn finish(&self) -> u64 {
        let mut tail = [0u8; 8];
        tail[..self.carried].copy_from_slice(&self.carry[..self.carried]);
        mix(self.state ^ u64::from_le_bytes(tail) ^ self.bytes.rotate_left(32))
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Record `i` of a stream seeded by `seed`, cut to `len` bytes (at most
/// [`RECORD`]; a cut record still ends with a newline), appended to `out`.
/// Returns the hash its partition is chosen by.
fn push_record(out: &mut Vec<u8>, seed: u64, i: u64, len: usize) -> u64 {
    let h = mix(seed ^ mix(i));
    let mut rec = [0u8; RECORD];
    for (k, c) in rec[..KEY].iter_mut().enumerate() {
        *c = ALPHABET[((h >> (6 * k)) & 63) as usize];
    }
    let mut f = mix(h);
    for c in rec[KEY..RECORD - 1].iter_mut() {
        *c = ALPHABET[(f & 63) as usize];
        f = f.rotate_right(6);
    }
    rec[len - 1] = b'\n';
    out.extend_from_slice(&rec[..len]);
    h
}

/// The bytes `ratio x bytes` makes, rounded.
fn scaled(ratio: f64, bytes: u64) -> u64 {
    (ratio * bytes as f64).round() as u64
}

pub struct SyntheticMap {
    reduces: u32,
    ratio: f64,
    digest: StreamDigest,
    lines: u64,
}

impl SyntheticMap {
    pub fn new(reduces: u32, ratios: Ratios) -> Self {
        SyntheticMap {
            reduces,
            ratio: ratios.shuffle,
            digest: StreamDigest::default(),
            lines: 0,
        }
    }
}

impl MapTask for SyntheticMap {
    fn consume(&mut self, piece: &[u8]) {
        self.digest.add(piece);
        self.lines += memchr::memchr_iter(b'\n', piece).count() as u64;
    }

    fn finish(self: Box<Self>) -> (MapSummary, MapOutput) {
        let input = self.digest.bytes;
        let summary = MapSummary {
            input_bytes: input,
            records: self.lines,
            output_bytes: 0,
            sample: Vec::new(),
        };
        if self.reduces == 0 {
            // Map-only: nothing to shuffle.
            return (summary, MapOutput::None);
        }
        let total = scaled(self.ratio, input);
        if total > MAX_MAP_OUTPUT {
            return (
                summary,
                MapOutput::Invalid(format!(
                    "ratios.shuffle {} makes {total} bytes of map output from {input} input bytes; a map may write at most {MAX_MAP_OUTPUT}",
                    self.ratio
                )),
            );
        }
        let r = self.reduces as usize;
        let mut parts: Vec<Vec<u8>> = (0..r)
            .map(|_| Vec::with_capacity((total as usize / r) * 9 / 8 + RECORD))
            .collect();
        let seed = self.digest.finish();
        let whole = total / RECORD as u64;
        let mut scratch = Vec::with_capacity(RECORD);
        for i in 0..=whole {
            let len = if i < whole {
                RECORD
            } else {
                (total % RECORD as u64) as usize
            };
            if len == 0 {
                break;
            }
            scratch.clear();
            let h = push_record(&mut scratch, seed, i, len);
            let p = ((u128::from(h) * r as u128) >> 64) as usize;
            parts[p].extend_from_slice(&scratch);
        }
        (summary, MapOutput::Partitions(parts))
    }
}

/// Reduce: counts what it fetched and writes `output` bytes per fetched
/// byte; keeps no input.
pub struct SyntheticReduce {
    ratio: f64,
    input_bytes: u64,
    /// Sum of the fetched partitions' digests: the same whatever order
    /// they arrive in.
    seed: u64,
}

impl SyntheticReduce {
    pub fn new(ratios: Ratios) -> Self {
        SyntheticReduce {
            ratio: ratios.output,
            input_bytes: 0,
            seed: 0,
        }
    }
}

impl SyntheticReduce {
    /// Counts one fetched partition and folds its digest into the seed.
    fn take(&mut self, part: &[u8]) {
        let mut d = StreamDigest::default();
        d.add(part);
        self.input_bytes += part.len() as u64;
        self.seed = self.seed.wrapping_add(d.finish());
    }
}

impl ReduceTask for SyntheticReduce {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String> {
        self.take(&input);
        crate::pool::give(input);
        Ok(())
    }

    fn consume_kept(&mut self, input: crate::KeptInput) -> Result<(), String> {
        let b = input.bytes().ok_or_else(|| {
            format!(
                "bytes {}..{} of part {} are not in this map output",
                input.start, input.end, input.part
            )
        })?;
        self.take(b);
        Ok(())
    }

    fn output_len(&self) -> Option<u64> {
        Some(scaled(self.ratio, self.input_bytes))
    }

    fn finish_into(
        self: Box<Self>,
        emit: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<ReduceSummary, String> {
        let total = scaled(self.ratio, self.input_bytes);
        let whole = total / RECORD as u64;
        let cut = (total % RECORD as u64) as usize;
        let mut out = crate::pool::take(crate::OUTPUT_PIECE);
        let mut written = 0u64;
        let mut records = 0u64;
        for i in 0..whole + u64::from(cut > 0) {
            let len = if i < whole { RECORD } else { cut };
            push_record(&mut out, self.seed, i, len);
            records += 1;
            if out.len() + RECORD > crate::OUTPUT_PIECE {
                written += out.len() as u64;
                let next = crate::pool::take(crate::OUTPUT_PIECE);
                if !emit(std::mem::replace(&mut out, next)) {
                    out.clear();
                    break;
                }
            }
        }
        if !out.is_empty() {
            written += out.len() as u64;
            emit(out);
        }
        Ok(ReduceSummary {
            input_bytes: self.input_bytes,
            records,
            output_bytes: written,
            spilled_bytes: 0,
        })
    }
}

#[cfg(test)]
mod tests;
