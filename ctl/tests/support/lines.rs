//! Sort input made outside the testbed's loader, in the shape of gensort's
//! ASCII mode: 100-byte lines of a 10-byte key, a space, an 88-byte payload
//! (the row number as 32 hex digits, then filler) and a newline. The key
//! distribution is what the bench varies; nothing of the loader's
//! `records` generator (its keys, its payload) is used.

use rand::{Rng, SeedableRng};
use std::io::Write;

pub const LINE: usize = 100;

/// How the 10-byte keys are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// Each byte uniform over printable ASCII (' '..='~'), as gensort -a.
    Uniform,
    /// 8 distinct keys: every line shares its key with an eighth of the file.
    FewDistinct,
    /// Three 7-byte prefixes ("user_00", "user_01", "item_00"), then 3
    /// uniform bytes: comparisons decide on the last bytes of the key.
    SharedPrefix,
    /// One million distinct keys drawn by rank with P(rank) ~ 1/rank: the
    /// most common key is about 7% of the lines.
    Zipf,
}

impl Keys {
    pub const ALL: [Keys; 4] = [
        Keys::Uniform,
        Keys::FewDistinct,
        Keys::SharedPrefix,
        Keys::Zipf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Keys::Uniform => "uniform",
            Keys::FewDistinct => "few-distinct",
            Keys::SharedPrefix => "shared-prefix",
            Keys::Zipf => "zipf",
        }
    }
}

fn printable(r: &mut impl Rng) -> u8 {
    r.gen_range(b' '..=b'~')
}

fn random_key(r: &mut impl Rng) -> [u8; 10] {
    std::array::from_fn(|_| printable(r))
}

/// Writes `lines` lines with `keys` to `out`, deterministically from `seed`.
pub fn write(out: &mut impl Write, keys: Keys, lines: u64, seed: u64) -> std::io::Result<()> {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let few: Vec<[u8; 10]> = (0..8).map(|_| random_key(&mut r)).collect();
    let (zipf_keys, zipf_cdf) = if keys == Keys::Zipf {
        const N: usize = 1_000_000;
        let keys: Vec<[u8; 10]> = (0..N).map(|_| random_key(&mut r)).collect();
        let total: f64 = (1..=N).map(|k| 1.0 / k as f64).sum();
        let mut acc = 0.0;
        let cdf: Vec<f64> = (1..=N)
            .map(|k| {
                acc += 1.0 / k as f64 / total;
                acc
            })
            .collect();
        (keys, cdf)
    } else {
        (Vec::new(), Vec::new())
    };
    const PREFIXES: [&[u8; 7]; 3] = [b"user_00", b"user_01", b"item_00"];
    let mut buf = Vec::with_capacity(1 << 20);
    for row in 0..lines {
        let key: [u8; 10] = match keys {
            Keys::Uniform => random_key(&mut r),
            Keys::FewDistinct => few[r.gen_range(0..few.len())],
            Keys::SharedPrefix => {
                let mut k = [0u8; 10];
                k[..7].copy_from_slice(PREFIXES[r.gen_range(0..3)]);
                for b in &mut k[7..] {
                    *b = printable(&mut r);
                }
                k
            }
            Keys::Zipf => {
                let u: f64 = r.gen();
                let at = zipf_cdf
                    .partition_point(|c| *c < u)
                    .min(zipf_keys.len() - 1);
                zipf_keys[at]
            }
        };
        buf.extend_from_slice(&key);
        buf.push(b' ');
        // gensort's payload: the row number in hex, then filler of hex
        // digits in groups of four.
        write!(buf, "{row:032X}").expect("to memory");
        for g in 0..14 {
            let c = b"0123456789ABCDEF"[((row as usize) + g) % 16];
            buf.extend_from_slice(&[c; 4]);
        }
        buf.push(b'\n');
        debug_assert_eq!(buf.len() % LINE, 0);
        if buf.len() >= (1 << 20) - LINE {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Writes `bytes` (rounded down to whole lines) of `keys` lines to `path`.
pub fn write_file(
    path: &std::path::Path,
    keys: Keys,
    bytes: u64,
    seed: u64,
) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    write(&mut f, keys, bytes / LINE as u64, seed)?;
    f.flush()
}

/// Distinct words in [`write_words`]' dictionary (the size of the one
/// the measurements drew from).
pub const DICTIONARY: usize = 74_585;

/// Words per line in [`write_words`].
pub const WORDS_PER_LINE: u64 = 10;

/// Writes about `bytes` of wordcount input to `out`: lines of
/// [`WORDS_PER_LINE`] words separated by single spaces, each drawn
/// uniformly from a dictionary of [`DICTIONARY`] distinct lowercase words
/// of 2 to 12 letters, all made from `seed`. Nothing of the loader's
/// `text` generator is used. Returns the words written.
pub fn write_words(out: &mut impl Write, bytes: u64, seed: u64) -> std::io::Result<u64> {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let dictionary = dictionary(&mut r);
    let (mut written, mut words) = (0u64, 0u64);
    let mut buf = Vec::with_capacity(1 << 20);
    while written < bytes {
        for i in 0..WORDS_PER_LINE {
            if i > 0 {
                buf.push(b' ');
            }
            buf.extend_from_slice(&dictionary[r.gen_range(0..DICTIONARY)]);
        }
        buf.push(b'\n');
        words += WORDS_PER_LINE;
        if buf.len() >= (1 << 20) - 256 {
            written += buf.len() as u64;
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    Ok(words)
}

/// Writes about `bytes` of [`write_words`]' lines to `path`; returns the
/// words written.
pub fn write_words_file(path: &std::path::Path, bytes: u64, seed: u64) -> std::io::Result<u64> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let words = write_words(&mut f, bytes, seed)?;
    f.flush()?;
    Ok(words)
}

/// [`DICTIONARY`] distinct lowercase words of 2 to 12 letters drawn from `r`.
fn dictionary(r: &mut rand_chacha::ChaCha8Rng) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    let mut dictionary: Vec<Vec<u8>> = Vec::with_capacity(DICTIONARY);
    while dictionary.len() < DICTIONARY {
        let len = r.gen_range(2..=12);
        let w: Vec<u8> = (0..len).map(|_| r.gen_range(b'a'..=b'z')).collect();
        if seen.insert(w.clone()) {
            dictionary.push(w);
        }
    }
    dictionary
}

/// Writes about `bytes` of text lines of any length to `path`, in the
/// shape of prose: sentences of 1 to 25 words of [`write_words`]'
/// dictionary (a capital first letter, a full stop), 4% empty lines, one
/// line in a thousand a paragraph of 200 to 2,000 words (kilobytes), no
/// final newline. All from `seed`. Returns the lines written.
pub fn write_prose_file(path: &std::path::Path, bytes: u64, seed: u64) -> std::io::Result<u64> {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let dictionary = dictionary(&mut r);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let (mut written, mut lines) = (0u64, 0u64);
    let mut line = Vec::new();
    while written < bytes {
        line.clear();
        let words = match r.gen_range(0..1000) {
            0..=39 => 0,
            40 => r.gen_range(200..=2000),
            _ => r.gen_range(1..=25),
        };
        for i in 0..words {
            if i > 0 {
                line.push(b' ');
            }
            line.extend_from_slice(&dictionary[r.gen_range(0..DICTIONARY)]);
        }
        if let Some(c) = line.first_mut() {
            c.make_ascii_uppercase();
            line.push(b'.');
        }
        if lines > 0 {
            f.write_all(b"\n")?;
            written += 1;
        }
        f.write_all(&line)?;
        written += line.len() as u64;
        lines += 1;
    }
    f.flush()?;
    Ok(lines)
}
