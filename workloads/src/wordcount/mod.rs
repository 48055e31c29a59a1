//! wordcount: counts words, with a combiner in every map.
//!
//! Words: maximal runs of bytes that are not ASCII whitespace, where
//! whitespace is exactly what `tr -s '[:space:]' '\n'` treats as space in the
//! C locale: space, \t, \n, \v (0x0b), \f (0x0c) and \r. Words are byte
//! strings (no case folding, no punctuation stripping, no UTF-8 decoding), so
//! the result equals `tr -s '[:space:]' '\n' | LC_ALL=C sort | uniq -c`.
//!
//! Map: counts its block's words in a [`WordCounter`] (the combiner: an
//! open-addressing table of 32-byte slots over an arena that holds each
//! distinct word once, so a word already counted costs a hash, a probe of
//! one or two adjacent slots and a compare, with no allocation and no
//! pointer to chase), then splits them into R partitions by a fixed hash of
//! the word (FNV-1a, so every mapper sends a word to the same reducer).
//! Partition encoding: repeated `u32 LE length, word bytes, u64 LE count`.
//! Reduce: sums the counts of its partition from every mapper in a hash
//! table (a word already there costs a lookup, no allocation), then writes
//! `word\tcount\n` lines sorted by word bytes (LC_ALL=C order).

use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask};
use std::io::Write;

pub const fn is_space(b: u8) -> bool {
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

mod counter;
pub use counter::WordCounter;
use counter::SPACE;

pub struct WordcountMap {
    reduces: u32,
    counts: WordCounter,
    /// A word cut by a piece boundary, waiting for the next piece.
    partial: Vec<u8>,
    input_bytes: u64,
    words: u64,
}

impl WordcountMap {
    pub fn new(reduces: u32) -> Self {
        WordcountMap {
            reduces: reduces.max(1),
            counts: WordCounter::default(),
            partial: Vec::new(),
            input_bytes: 0,
            words: 0,
        }
    }

    #[inline]
    fn add(&mut self, w: &[u8]) {
        self.words += 1;
        self.counts.add(w);
    }
}

impl MapTask for WordcountMap {
    fn consume(&mut self, piece: &[u8]) {
        self.input_bytes += piece.len() as u64;
        let mut start = 0;
        // Finish a word cut by the previous piece.
        if !self.partial.is_empty() {
            let end = piece
                .iter()
                .position(|&b| SPACE[b as usize])
                .unwrap_or(piece.len());
            self.partial.extend_from_slice(&piece[..end]);
            if end == piece.len() {
                return;
            }
            let w = std::mem::take(&mut self.partial);
            self.add(&w);
            start = end;
        }
        let (words, cut) = self.counts.add_words(&piece[start..]);
        self.words += words;
        // The last word, if the piece ends inside it, waits for the next.
        self.partial.extend_from_slice(&piece[start + cut..]);
    }

    fn finish(mut self: Box<Self>) -> (MapSummary, MapOutput) {
        if !self.partial.is_empty() {
            let w = std::mem::take(&mut self.partial);
            self.add(&w);
        }
        let r = self.reduces as usize;
        // Each partition's share of the encoded words, reserved once.
        let bytes = self.counts.word_bytes() + 12 * self.counts.len();
        let mut parts: Vec<Vec<u8>> = (0..r).map(|_| Vec::with_capacity(bytes / r + 64)).collect();
        for (w, c) in self.counts.iter() {
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
    counts: rustc_hash::FxHashMap<Box<[u8]>, u64>,
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
        let mut sorted: Vec<(&[u8], u64)> = self.counts.iter().map(|(w, &c)| (&**w, c)).collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (w, c) in sorted {
            out.extend_from_slice(w);
            out.push(b'\t');
            // Digits written straight into the piece (no string made).
            let _ = write!(out, "{c}");
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
            match self.counts.get_mut(w) {
                Some(n) => *n += c,
                None => {
                    self.counts.insert(w.into(), c);
                }
            }
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

    /// The counter against a `HashMap`: the same counts, through many
    /// growths of its table, for words of every length (empty, 1 byte, 8,
    /// 9, 16, 17 and 40: its hash's steps) and words that differ in one byte.
    #[test]
    fn the_word_counter_counts_as_a_hash_map_does() {
        let mut c = WordCounter::default();
        let mut want: std::collections::HashMap<Vec<u8>, u64> = Default::default();
        let (mut text, mut in_text) = (Vec::new(), std::collections::HashMap::new());
        let mut x: u64 = 7;
        for i in 0..200_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = [0usize, 1, 8, 9, 16, 17, 40][(x >> 60) as usize % 7];
            let id = (x >> 33) % if i % 2 == 0 { 50 } else { 30_000 };
            let mut w = format!("{id:0>width$}", width = len.max(1)).into_bytes();
            w.truncate(len.max(w.len().min(len)));
            c.add(&w);
            if !w.is_empty() {
                text.extend_from_slice(&w);
                text.push(if i % 7 == 0 { b'\n' } else { b' ' });
                *in_text.entry(w.clone()).or_default() += 1;
            }
            *want.entry(w).or_default() += 1;
        }
        assert_eq!(c.len(), want.len());
        let got: std::collections::HashMap<Vec<u8>, u64> =
            c.iter().map(|(w, n)| (w.to_vec(), n)).collect();
        assert_eq!(got, want);
        // The same words as a text, counted in batches straight from it.
        let mut t = WordCounter::default();
        let (words, cut) = t.add_words(&text);
        assert_eq!((words, cut), (in_text.values().sum::<u64>(), text.len()));
        let got: std::collections::HashMap<Vec<u8>, u64> =
            t.iter().map(|(w, n)| (w.to_vec(), n)).collect();
        assert_eq!(got, in_text);
        // A text ending inside a word leaves it for the next piece.
        assert_eq!(WordCounter::default().add_words(b"ab cd ef"), (2, 6));
    }

    /// Random bytes (every value: the five control spaces, 0x20, bytes of
    /// 0x80 and up, NUL) counted 64 bytes at a time equal a split on
    /// `is_space`, at every offset a text may start at.
    #[test]
    fn the_space_mask_splits_every_byte_as_is_space_does() {
        let mut x: u64 = 99;
        let text: Vec<u8> = (0..20_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                // Spaces often enough for short words.
                let b = (x >> 56) as u8;
                if b.is_multiple_of(5) {
                    [b' ', b'\t', b'\n', 0x0b, 0x0c, b'\r'][(b % 6) as usize]
                } else {
                    b
                }
            })
            .collect();
        for skip in [0, 1, 7, 63, 64, 65] {
            let t = &text[skip..];
            let mut c = WordCounter::default();
            let (words, cut) = c.add_words(t);
            let mut want: std::collections::HashMap<&[u8], u64> = Default::default();
            let end = t.iter().rposition(|&b| is_space(b)).map_or(0, |p| p + 1);
            for w in t[..end].split(|&b| is_space(b)).filter(|w| !w.is_empty()) {
                *want.entry(w).or_default() += 1;
            }
            let got: std::collections::HashMap<&[u8], u64> = c.iter().collect();
            assert_eq!(got, want, "from byte {skip}");
            assert_eq!(words, want.values().sum::<u64>());
            assert_eq!(cut, end, "the cut word starts after the last space");
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
