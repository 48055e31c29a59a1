//! wordcount: counts words, with a combiner in every map.
//!
//! Words: maximal runs of bytes that are not ASCII whitespace, where
//! whitespace is exactly what `tr -s '[:space:]' '\n'` treats as space in the
//! C locale: space, \t, \n, \v (0x0b), \f (0x0c) and \r. Words are byte
//! strings (no case folding, no punctuation stripping, no UTF-8 decoding), so
//! the result equals `tr -s '[:space:]' '\n' | LC_ALL=C sort | uniq -c`.
//!
//! Map: counts its block's words in a hash map (the combiner; FxHash, a fast
//! non-cryptographic hash: the words come from the job's own input, and a
//! word already counted costs a lookup, no allocation), then splits
//! them into R partitions by a fixed hash of the word (FNV-1a, so every
//! mapper sends a word to the same reducer). Partition encoding: repeated
//! `u32 LE length, word bytes, u64 LE count`.
//! Reduce: sums the counts of its partition from every mapper and writes
//! `word\tcount\n` lines sorted by word bytes (LC_ALL=C order).

use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask};
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// FNV-1a 64: stable across processes and machines.
pub fn word_hash(w: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in w {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The combiner's hash by default (rustc's FxHash).
pub type FastHash = rustc_hash::FxBuildHasher;

pub struct WordcountMap<S = FastHash> {
    reduces: u32,
    counts: HashMap<Vec<u8>, u64, S>,
    /// A word cut by a piece boundary, waiting for the next piece.
    partial: Vec<u8>,
    input_bytes: u64,
    words: u64,
}

impl WordcountMap {
    pub fn new(reduces: u32) -> Self {
        Self::with_hasher(reduces, FastHash::default())
    }
}

impl<S: BuildHasher> WordcountMap<S> {
    /// A map whose combiner hashes with `hasher` (benchmarks compare them).
    pub fn with_hasher(reduces: u32, hasher: S) -> Self {
        WordcountMap {
            reduces: reduces.max(1),
            counts: HashMap::with_hasher(hasher),
            partial: Vec::new(),
            input_bytes: 0,
            words: 0,
        }
    }

    fn add(&mut self, w: &[u8]) {
        self.words += 1;
        if let Some(c) = self.counts.get_mut(w) {
            *c += 1;
        } else {
            self.counts.insert(w.to_vec(), 1);
        }
    }
}

impl<S: BuildHasher + Send> MapTask for WordcountMap<S> {
    fn consume(&mut self, piece: &[u8]) {
        self.input_bytes += piece.len() as u64;
        let mut start = 0;
        // Finish a word cut by the previous piece.
        if !self.partial.is_empty() {
            let end = piece
                .iter()
                .position(|&b| is_space(b))
                .unwrap_or(piece.len());
            self.partial.extend_from_slice(&piece[..end]);
            if end == piece.len() {
                return;
            }
            let w = std::mem::take(&mut self.partial);
            self.add(&w);
            start = end;
        }
        let mut i = start;
        let n = piece.len();
        while i < n {
            while i < n && is_space(piece[i]) {
                i += 1;
            }
            let s = i;
            while i < n && !is_space(piece[i]) {
                i += 1;
            }
            if s < i {
                if i == n {
                    self.partial.extend_from_slice(&piece[s..i]);
                } else {
                    self.add(&piece[s..i]);
                }
            }
        }
    }

    fn finish(mut self: Box<Self>) -> (MapSummary, MapOutput) {
        if !self.partial.is_empty() {
            let w = std::mem::take(&mut self.partial);
            self.add(&w);
        }
        let r = self.reduces as usize;
        let mut parts: Vec<Vec<u8>> = vec![Vec::new(); r];
        for (w, c) in &self.counts {
            let p = &mut parts[(word_hash(w) % r as u64) as usize];
            p.extend_from_slice(&(w.len() as u32).to_le_bytes());
            p.extend_from_slice(w);
            p.extend_from_slice(&c.to_le_bytes());
        }
        let output_bytes = parts.iter().map(|p| p.len() as u64).sum();
        (
            MapSummary {
                input_bytes: self.input_bytes,
                records: self.words,
                output_bytes,
                ..Default::default()
            },
            MapOutput::Partitions(parts),
        )
    }
}

#[derive(Default)]
pub struct WordcountReduce {
    counts: BTreeMap<Vec<u8>, u64>,
    input_bytes: u64,
}

impl ReduceTask for WordcountReduce {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String> {
        let added = self.add(&input);
        crate::pool::give(input);
        added
    }

    fn consume_kept(&mut self, input: crate::KeptInput) -> Result<(), String> {
        match &*input.output {
            MapOutput::Partitions(parts) => {
                let bytes = parts
                    .get(input.part)
                    .and_then(|p| p.get(input.start..input.end))
                    .ok_or_else(|| {
                        format!(
                            "bytes {}..{} of partition {} are not in this map output",
                            input.start, input.end, input.part
                        )
                    })?;
                self.add(bytes)
            }
            _ => Err("a wordcount reduce reads hash partitions, not this map output".into()),
        }
    }

    fn output_len(&self) -> Option<u64> {
        // A line per word: the word, a tab, its count, a newline.
        let digits = |c: u64| u64::from(c.checked_ilog10().unwrap_or(0) + 1);
        Some(
            self.counts
                .iter()
                .map(|(w, &c)| w.len() as u64 + 2 + digits(c))
                .sum(),
        )
    }

    fn finish_into(
        self: Box<Self>,
        emit: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<ReduceSummary, String> {
        let mut out = crate::pool::take(crate::OUTPUT_PIECE);
        let mut written = 0u64;
        let mut going = true;
        for (w, c) in &self.counts {
            out.extend_from_slice(w);
            out.push(b'\t');
            out.extend_from_slice(c.to_string().as_bytes());
            out.push(b'\n');
            // Handed on before a line would outgrow the piece's buffer.
            if out.len() + (64 << 10) >= crate::OUTPUT_PIECE {
                written += out.len() as u64;
                let next = crate::pool::take(crate::OUTPUT_PIECE);
                going = emit(std::mem::replace(&mut out, next));
                if !going {
                    break;
                }
            }
        }
        if going && !out.is_empty() {
            written += out.len() as u64;
            emit(out);
        }
        Ok(ReduceSummary {
            input_bytes: self.input_bytes,
            records: self.counts.len() as u64,
            output_bytes: written,
            spilled_bytes: 0,
        })
    }
}

impl WordcountReduce {
    /// Adds one map's encoded partition to the counts.
    fn add(&mut self, input: &[u8]) -> Result<(), String> {
        self.input_bytes += input.len() as u64;
        let mut i = 0;
        while i < input.len() {
            let bad = || format!("corrupt wordcount partition at byte {i}");
            let len = u32::from_le_bytes(input.get(i..i + 4).ok_or_else(bad)?.try_into().unwrap())
                as usize;
            let w = input.get(i + 4..i + 4 + len).ok_or_else(bad)?;
            let c = u64::from_le_bytes(
                input
                    .get(i + 4 + len..i + 12 + len)
                    .ok_or_else(bad)?
                    .try_into()
                    .unwrap(),
            );
            *self.counts.entry(w.to_vec()).or_default() += c;
            i += 12 + len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Workload;

    fn run(pieces: &[&[u8]], reduces: u32) -> Vec<u8> {
        let mut m = Workload::Wordcount.map_task(reduces);
        for p in pieces {
            m.consume(p);
        }
        let (_, out) = m.finish();
        let MapOutput::Partitions(parts) = out else {
            panic!("wordcount maps partition")
        };
        assert_eq!(parts.len(), reduces as usize);
        let mut all = Vec::new();
        for p in parts {
            let mut r = Workload::Wordcount.reduce_task().unwrap();
            r.consume(p).unwrap();
            // It says its output's length before making it.
            let len = r.output_len();
            let out = r.finish().unwrap().1;
            assert_eq!(len, Some(out.len() as u64));
            all.extend(out);
        }
        all
    }

    #[test]
    fn words_split_on_c_locale_space_across_pieces() {
        let out = run(&[b"a bb\tc", b"c\x0bbb\r\n\x0c a"], 1);
        assert_eq!(out, b"a\t2\nbb\t2\ncc\t1\n");
        // Same counts whatever the piece boundaries and reducer count.
        let text: &[u8] = b"the cat  the\nhat\n\nthe end caf\xc3\xa9 caf\xc3\xa9";
        let whole = run(&[text], 1);
        let mut want: Vec<&[u8]> = whole.split(|&b| b == b'\n').collect();
        want.sort();
        for cut in 0..text.len() {
            for r in [1u32, 3] {
                let got = run(&[&text[..cut], &text[cut..]], r);
                let mut lines: Vec<&[u8]> = got.split(|&b| b == b'\n').collect();
                lines.sort();
                // Reducers' outputs concatenated: one trailing "" per reducer.
                lines.retain(|l| !l.is_empty());
                let want: Vec<&[u8]> = want.iter().copied().filter(|l| !l.is_empty()).collect();
                assert_eq!(lines, want, "cut at {cut}, {r} reducers");
            }
        }
    }

    #[test]
    fn corrupt_partitions_are_errors() {
        let mut r = Workload::Wordcount.reduce_task().unwrap();
        assert!(r
            .consume(vec![5, 0, 0, 0, b'a'])
            .unwrap_err()
            .contains("byte 0"));
    }
}
