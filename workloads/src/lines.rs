//! sort-lines: a sort of newline-terminated lines of any length, in
//! `LC_ALL=C sort`'s order (lines compared byte by byte without their
//! newline, a line before every longer line it begins). Output, read in
//! partition order, equals `LC_ALL=C sort` of the input byte for byte: a
//! last line without a newline gets one, empty lines stay (first).
//!
//! The loader ends every block of a local file at a newline (a line longer
//! than a block makes its block longer), so a map's block is whole lines.
//! Map: sorts its block's lines and lays them out in order, each with its
//! newline, and samples whole lines (without the newline) at evenly spaced
//! bytes of that run, so that the splits balance the reduces' bytes. The master picks R - 1 split lines at the quantiles of every
//! map's sample (as for `sort`); reducer r takes the lines with
//! split[r-1] <= line < split[r], which each mapper finds in its sorted run
//! by a binary search over byte offsets that reads only the lines it
//! visits ([`range_by_line`], as `look(1)` searches a sorted file), so a
//! run stored on disk needs no index. Reduce: merges the sorted runs it
//! fetched (one per mapper), holding at most its memory budget of them and
//! merging the rest to spill files first, as `sort`'s reduce does.

use crate::run::{prefetch, recycle, Run, RunFormat, SortedRun, AHEAD};
pub use crate::run::{range_by_line, range_in_lines};
use crate::sort::SAMPLES_PER_MAP;
use crate::{MapOutput, MapSummary, MapTask, ReduceSummary, ReduceTask, WholeInput};

#[derive(Default)]
pub struct LinesMap {
    data: WholeInput,
}

impl MapTask for LinesMap {
    fn expect_input(&mut self, bytes: u64) {
        self.data.expect(bytes);
    }

    fn keeps_input(&self) -> bool {
        true
    }

    fn consume(&mut self, piece: &[u8]) {
        self.data.push(piece);
    }

    fn consume_owned(&mut self, piece: Vec<u8>) {
        self.data.push_owned(piece);
    }

    fn finish(self: Box<Self>) -> (MapSummary, MapOutput) {
        let mut data = self.data.into_vec();
        let input = data.len() as u64;
        if data.len() > u32::MAX as usize {
            crate::pool::give(data);
            return (
                MapSummary {
                    input_bytes: input,
                    ..Default::default()
                },
                MapOutput::Invalid(format!(
                    "a sort-lines block holds at most {} bytes; this one has {input}",
                    u32::MAX
                )),
            );
        }
        if data.last().is_some_and(|&b| b != b'\n') {
            data.push(b'\n');
        }
        let order = sorted_lines(&data);
        let n = order.len();
        let k = SAMPLES_PER_MAP.min(n);
        // The sampled lines sit at evenly spaced bytes of the sorted run,
        // not ranks: lines differ in length, and where long lines sort
        // together (a document's table rows) splits at rank quantiles
        // would give one reduce far more bytes than another. A line
        // longer than the spacing may be sampled more than once.
        let total = data.len() as u64;
        let mut marks = (0..k as u64).map(|i| i * total / k as u64).peekable();
        let mut sample = Vec::with_capacity(k);
        let mut laid = crate::pool::take(data.len());
        for (i, &(_, start, len)) in order.iter().enumerate() {
            if let Some(ahead) = order.get(i + AHEAD) {
                prefetch(&data, ahead.1 as usize);
            }
            let (s, e) = (start as usize, start as usize + len as usize);
            let ends_at = (laid.len() + len as usize + 1) as u64;
            while marks.next_if(|&m| m < ends_at).is_some() {
                sample.push(data[s..e].to_vec());
            }
            laid.extend_from_slice(&data[s..=e]);
        }
        crate::pool::give(data);
        (
            MapSummary {
                input_bytes: input,
                records: n as u64,
                output_bytes: laid.len() as u64,
                sample: sample.clone(),
            },
            MapOutput::SortedRun {
                run: SortedRun::new(laid, RunFormat::Lines),
                sample,
            },
        )
    }
}

/// The lines of `data` (whole newline-terminated lines) in sorted order:
/// (a key the sort used; start; length without the newline). As the
/// record sort does, one counting pass distributes the lines by their
/// first two bytes (65,536 buckets, in order), then each bucket is sorted
/// on its own, in the cache: by its lines' first 8 bytes as a big-endian
/// integer (zero-padded), which orders two lines as their bytes do
/// wherever the two differ in it; lines whose 8 bytes are equal are
/// ordered from there by [`refine`].
fn sorted_lines(data: &[u8]) -> Vec<(u64, u32, u32)> {
    const BUCKETS: usize = 1 << 16;
    let mut lines = Vec::with_capacity(data.len() / 32 + 1);
    let mut start = 0usize;
    let mut count = vec![0u32; BUCKETS + 1];
    for end in memchr::memchr_iter(b'\n', data) {
        let p = prefix(&data[start..end]);
        count[(p >> 48) as usize + 1] += 1;
        lines.push((p, start as u32, (end - start) as u32));
        start = end + 1;
    }
    for b in 0..BUCKETS {
        count[b + 1] += count[b];
    }
    let mut at = count.clone();
    let mut sorted = vec![(0u64, 0u32, 0u32); lines.len()];
    for &l in &lines {
        let b = (l.0 >> 48) as usize;
        sorted[at[b] as usize] = l;
        at[b] += 1;
    }
    drop(lines);
    let mut ties = Vec::new();
    for b in 0..BUCKETS {
        let (s, e) = (count[b] as usize, count[b + 1] as usize);
        if e - s < 2 {
            continue;
        }
        let bucket = &mut sorted[s..e];
        bucket.sort_unstable_by_key(|l| l.0);
        let mut i = 0;
        while i < bucket.len() {
            let j = i + bucket[i..]
                .iter()
                .take_while(|l| l.0 == bucket[i].0)
                .count();
            if j - i > 1 {
                // Lines of 8 bytes or more tie on their first 8; a
                // shorter one ties with others zero-padded alike.
                let from = if bucket[i..j].iter().all(|l| l.2 >= 8) {
                    8
                } else {
                    0
                };
                ties.push((i, j, from));
            }
            i = j;
        }
        refine(data, bucket, &mut ties);
    }
    sorted
}

/// Orders each `ties` range of `lines`, (start, end, offset): lines whose
/// first `offset` bytes are equal, ordered from there on. A range first
/// skips the bytes all its lines share with its first line (so copies of
/// one line, or table rows that begin alike, cost one pass over their
/// bytes, not a comparison of them per step of a sort); then it is sorted
/// by the next 8 bytes as an integer and by how many of those 8 each line
/// has (a line before every longer one it begins), and the lines equal in
/// both, with 8 bytes there, go on from 8 bytes further. Multikey
/// quicksort's idea (Bentley and Sedgewick) on 8-byte digits; the ranges
/// wait on a stack, so a long line costs no depth of recursion.
fn refine(data: &[u8], lines: &mut [(u64, u32, u32)], ties: &mut Vec<(usize, usize, usize)>) {
    fn text<'d>(data: &'d [u8], l: &(u64, u32, u32)) -> &'d [u8] {
        &data[l.1 as usize..l.1 as usize + l.2 as usize]
    }
    while let Some((s, e, mut off)) = ties.pop() {
        let range = &mut lines[s..e];
        let key = |l: &(u64, u32, u32), off: usize| (l.0, (l.2 as usize - off).min(8));
        let mut alike = true;
        for i in 0..range.len() {
            if let Some(ahead) = range.get(i + AHEAD) {
                prefetch(data, ahead.1 as usize + off);
            }
            let l = &mut range[i];
            l.0 = prefix(&text(data, l)[off..]);
            alike &= key(l, off) == key(&range[0], off);
        }
        if alike {
            if key(&range[0], off).1 < 8 {
                // Every line ends within these 8 bytes, alike: all equal.
                continue;
            }
            // The next 8 bytes split nothing: skip every byte all the
            // lines share with the first, and take the range from there
            // (where at least one line differs or ends).
            off += 8;
            let first = text(data, &range[0]);
            let mut common = first.len() - off;
            for i in 1..range.len() {
                if common == 0 {
                    break;
                }
                if let Some(ahead) = range.get(i + AHEAD) {
                    prefetch(data, ahead.1 as usize + off);
                }
                common = common_prefix(&first[off..off + common], &text(data, &range[i])[off..]);
            }
            ties.push((s, e, off + common));
            continue;
        }
        range.sort_unstable_by_key(|l| key(l, off));
        let mut i = 0;
        while i < range.len() {
            let k = key(&range[i], off);
            let j = i + range[i..].iter().take_while(|l| key(l, off) == k).count();
            if j - i > 1 && k.1 == 8 {
                ties.push((s + i, s + j, off + 8));
            }
            i = j;
        }
    }
}

/// How many bytes `a` and `b` begin with alike (at most `a`'s length).
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap())
            ^ u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[inline]
fn prefix(line: &[u8]) -> u64 {
    if let Some(p) = line.first_chunk::<8>() {
        return u64::from_be_bytes(*p);
    }
    let mut p = [0u8; 8];
    let n = line.len().min(8);
    p[..n].copy_from_slice(&line[..n]);
    u64::from_be_bytes(p)
}

/// A sort-lines reduce: the sorted runs it is given (one per map), merged
/// into its partition; fetched runs held up to its [`crate::Spill`]
/// budget, then merged into a sorted file whose memory goes back to the
/// pool (see [`crate::sort::SortReduce`], the same for records).
pub struct LinesReduce {
    runs: Vec<Run>,
    held: u64,
    taken: u64,
    lines: u64,
    spill: Option<crate::Spill>,
    files: Vec<(std::fs::File, u64)>,
    spilled: u64,
}

impl LinesReduce {
    pub fn new(spill: Option<crate::Spill>) -> LinesReduce {
        LinesReduce {
            runs: Vec::new(),
            held: 0,
            taken: 0,
            lines: 0,
            spill,
            files: Vec::new(),
            spilled: 0,
        }
    }

    /// Sorted files written so far.
    pub fn spilled_files(&self) -> usize {
        self.files.len()
    }

    fn spill_held(&mut self) -> Result<(), String> {
        let Some(spill) = self.spill.clone() else {
            return Ok(());
        };
        let (fetched, kept): (Vec<Run>, Vec<Run>) = std::mem::take(&mut self.runs)
            .into_iter()
            .partition(|r| matches!(r, Run::Fetched(_)));
        self.runs = kept;
        let cursors = fetched.iter().map(|r| Cursor::memory(r.bytes())).collect();
        let written = write_merged(&spill, cursors);
        recycle(fetched);
        let written = written?;
        self.spilled += written.1;
        self.files.push(written);
        self.held = 0;
        if self.files.len() >= crate::sort::SPILL_FACTOR {
            let files = std::mem::take(&mut self.files);
            let cursors = files
                .iter()
                .map(|(f, len)| Cursor::file(f, *len, &*spill.charge))
                .collect();
            let merged = write_merged(&spill, cursors)?;
            self.spilled += merged.1;
            self.files.push(merged);
        }
        Ok(())
    }
}

/// Merges `cursors` into a new anonymous file in `spill.dir`.
fn write_merged(
    spill: &crate::Spill,
    cursors: Vec<Cursor<'_>>,
) -> Result<(std::fs::File, u64), String> {
    use std::io::Write;
    let dir = spill.dir.display();
    let mut file = tempfile::tempfile_in(&spill.dir)
        .map_err(|e| format!("making a spill file in {dir}: {e}"))?;
    let mut len = 0u64;
    let mut failed = None;
    merge(cursors, &mut |piece| {
        (spill.charge)(piece.len() as u64);
        let res = file.write_all(&piece);
        len += piece.len() as u64;
        crate::pool::give(piece);
        match res {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(format!("writing a spill file in {dir}: {e}"));
    }
    Ok((file, len))
}

/// Bytes of a spill file a merge reads at a time (a window grows to hold a
/// line longer than it).
const WINDOW: usize = 1 << 20;

/// Where a merge stands in one sorted run of lines: its head line is
/// `window[at..end]` (its newline at `end`).
struct Cursor<'a> {
    src: Source<'a>,
    at: usize,
    end: usize,
}

enum Source<'a> {
    Memory(&'a [u8]),
    File {
        file: &'a std::fs::File,
        len: u64,
        next: u64,
        window: Vec<u8>,
        filled: usize,
        charge: &'a (dyn Fn(u64) + Send + Sync),
    },
}

impl<'a> Cursor<'a> {
    fn memory(data: &'a [u8]) -> Cursor<'a> {
        Cursor {
            src: Source::Memory(data),
            at: 0,
            end: 0,
        }
    }

    fn file(
        file: &'a std::fs::File,
        len: u64,
        charge: &'a (dyn Fn(u64) + Send + Sync),
    ) -> Cursor<'a> {
        Cursor {
            src: Source::File {
                file,
                len,
                next: 0,
                window: Vec::new(),
                filled: 0,
                charge,
            },
            at: 0,
            end: 0,
        }
    }

    fn window(&self) -> &[u8] {
        match &self.src {
            Source::Memory(d) => d,
            Source::File { window, filled, .. } => &window[..*filled],
        }
    }

    #[inline]
    fn done(&self) -> bool {
        self.at >= self.window().len()
    }

    /// The head line without its newline (not [`Cursor::done`]).
    #[inline]
    fn head(&self) -> &[u8] {
        &self.window()[self.at..self.end]
    }

    /// The head line with its newline.
    #[inline]
    fn head_line(&self) -> &[u8] {
        &self.window()[self.at..=self.end]
    }

    /// Finds the head line from `at` on, reading more of a file where the
    /// window holds no whole line.
    fn settle(&mut self) -> Result<(), String> {
        loop {
            let w = self.window();
            if self.at < w.len() {
                if let Some(p) = memchr::memchr(b'\n', &w[self.at..]) {
                    self.end = self.at + p;
                    return Ok(());
                }
            }
            if !self.read_more()? {
                return if self.at < self.window().len() {
                    Err("a sorted run of lines ends without a newline".into())
                } else {
                    Ok(())
                };
            }
        }
    }

    /// Past the head line.
    #[inline]
    fn advance(&mut self) -> Result<(), String> {
        self.at = self.end + 1;
        self.settle()
    }

    /// Moves a file's unread bytes to its window's front and reads more
    /// after them (the window doubles when a line fills it); false at the
    /// file's end (and for a run in memory).
    fn read_more(&mut self) -> Result<bool, String> {
        use std::os::unix::fs::FileExt;
        let at = self.at;
        let Source::File {
            file,
            len,
            next,
            window,
            filled,
            charge,
        } = &mut self.src
        else {
            return Ok(false);
        };
        if *next >= *len {
            return Ok(false);
        }
        window.copy_within(at.min(*filled)..*filled, 0);
        *filled -= at.min(*filled);
        self.at = 0;
        if window.len() < WINDOW {
            window.resize(WINDOW, 0);
        } else if *filled == window.len() {
            window.resize(window.len() * 2, 0);
        }
        let n = (*len - *next).min((window.len() - *filled) as u64) as usize;
        charge(n as u64);
        file.read_exact_at(&mut window[*filled..*filled + n], *next)
            .map_err(|e| format!("reading back a spill file at byte {next}: {e}"))?;
        *next += n as u64;
        *filled += n;
        Ok(true)
    }
}

/// Checks that a run fetched for a reduce is whole lines.
fn whole_lines(input: &[u8]) -> Result<u64, String> {
    match input.last() {
        None => Ok(0),
        Some(b'\n') => Ok(memchr::memchr_iter(b'\n', input).count() as u64),
        Some(_) => Err(format!(
            "sort-lines reduce input of {} bytes does not end with a newline",
            input.len()
        )),
    }
}

impl ReduceTask for LinesReduce {
    fn consume(&mut self, input: Vec<u8>) -> Result<(), String> {
        self.lines += whole_lines(&input)?;
        let n = input.len() as u64;
        self.taken += n;
        self.held += n;
        self.runs.push(Run::Fetched(input));
        match &self.spill {
            Some(s) if self.held > s.memory_budget => self.spill_held(),
            _ => Ok(()),
        }
    }

    fn consume_kept(&mut self, input: crate::KeptInput) -> Result<(), String> {
        let MapOutput::SortedRun { run, .. } = &*input.output else {
            return Err("a sort-lines reduce reads sorted runs, not this map output".into());
        };
        let bytes = run.bytes();
        let starts_line = |at: usize| at == 0 || bytes.get(at - 1) == Some(&b'\n');
        if run.format() != RunFormat::Lines
            || input.start > input.end
            || input.end > run.len()
            || !starts_line(input.start)
            || !starts_line(input.end)
        {
            return Err(format!(
                "bytes {}..{} of a {}-byte sorted run are not whole lines of it",
                input.start,
                input.end,
                run.len()
            ));
        }
        self.lines += whole_lines(&bytes[input.start..input.end])?;
        self.taken += input.len() as u64;
        self.runs.push(Run::Kept(input));
        Ok(())
    }

    fn output_len(&self) -> Option<u64> {
        Some(self.taken)
    }

    fn finish_into(
        self: Box<Self>,
        emit: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<ReduceSummary, String> {
        let none: &(dyn Fn(u64) + Send + Sync) = &|_| {};
        let charge = self.spill.as_ref().map_or(none, |s| &*s.charge);
        let cursors = self
            .runs
            .iter()
            .map(|r| Cursor::memory(r.bytes()))
            .chain(
                self.files
                    .iter()
                    .map(|(f, len)| Cursor::file(f, *len, charge)),
            )
            .collect();
        let merged = merge(cursors, emit);
        recycle(self.runs);
        merged?;
        Ok(ReduceSummary {
            input_bytes: self.taken,
            records: self.lines,
            output_bytes: self.taken,
            spilled_bytes: self.spilled,
        })
    }
}

/// K-way merge of sorted runs of lines, handed to `emit` in pieces of
/// whole lines of about [`crate::OUTPUT_PIECE`] bytes; stops when `emit`
/// returns false. A tree of losers: each step replays one leaf's path,
/// comparing the new head with the log2(k) losers on it, by each head's
/// first 8 bytes kept as an integer beside the tree ([`prefix`]), the
/// lines themselves only where those are equal.
fn merge(mut runs: Vec<Cursor<'_>>, emit: &mut dyn FnMut(Vec<u8>) -> bool) -> Result<(), String> {
    let k = runs.len();
    if k == 0 {
        return Ok(());
    }
    for r in runs.iter_mut() {
        r.settle()?;
    }
    let n = k.next_power_of_two();
    // Per leaf: (done, the head's prefix); padding leaves are done.
    let key = |c: &Cursor<'_>| {
        if c.done() {
            (true, 0)
        } else {
            (false, prefix(c.head()))
        }
    };
    let mut keys: Vec<(bool, u64)> = (0..n).map(|i| runs.get(i).map_or((true, 0), key)).collect();
    let mut tree = vec![usize::MAX; n];
    fn play(
        node: usize,
        n: usize,
        tree: &mut [usize],
        win: &dyn Fn(usize, usize) -> bool,
    ) -> usize {
        if node >= n {
            return node - n;
        }
        let a = play(2 * node, n, tree, win);
        let b = play(2 * node + 1, n, tree, win);
        let (w, l) = if win(a, b) { (a, b) } else { (b, a) };
        tree[node] = l;
        w
    }
    let mut winner = play(1, n, &mut tree, &|a, b| before(&runs, &keys, a, b));
    let mut out = crate::pool::take(crate::OUTPUT_PIECE);
    while !keys[winner].0 {
        let at = out.len();
        out.extend_from_slice(runs[winner].head_line());
        runs[winner].advance()?;
        // The winner's copies of the line it just gave still go before
        // every other head: taken without a replay of the tree (copies
        // of one line, common in text, cost one comparison each), up to
        // a piece.
        let line = at..out.len();
        while out.len() < crate::OUTPUT_PIECE
            && !runs[winner].done()
            && runs[winner].head_line() == &out[line.clone()]
        {
            out.extend_from_within(line.clone());
            runs[winner].advance()?;
        }
        keys[winner] = key(&runs[winner]);
        if out.len() >= crate::OUTPUT_PIECE {
            let next = crate::pool::take(crate::OUTPUT_PIECE);
            if !emit(std::mem::replace(&mut out, next)) {
                return Ok(());
            }
        }
        let mut node = (winner + n) / 2;
        while node >= 1 {
            if before(&runs, &keys, tree[node], winner) {
                std::mem::swap(&mut tree[node], &mut winner);
            }
            node /= 2;
        }
    }
    if !out.is_empty() {
        emit(out);
    } else {
        crate::pool::give(out);
    }
    Ok(())
}

/// Whether leaf a's head goes before leaf b's: by their prefixes (a done
/// leaf last), then by the whole lines, then (equal lines) by run.
#[inline]
fn before(runs: &[Cursor<'_>], keys: &[(bool, u64)], a: usize, b: usize) -> bool {
    let (ka, kb) = (keys[a], keys[b]);
    if ka != kb {
        return ka < kb;
    }
    if ka.0 {
        return a < b;
    }
    match runs[a].head().cmp(runs[b].head()) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a < b,
    }
}

#[cfg(test)]
mod tests;
