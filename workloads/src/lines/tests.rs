use super::*;
use crate::Workload;

/// `LC_ALL=C sort`'s output for `input`: its lines (a last one without a
/// newline included) sorted by their bytes, each with a newline.
fn c_sort(input: &[u8]) -> Vec<u8> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    if input.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    lines.sort();
    lines
        .iter()
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect()
}

/// Blocks of at most `size` bytes, each ending at a newline where it can
/// (a longer line makes its block longer), as the loader splits a file.
fn blocks(input: &[u8], size: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < input.len() {
        let end = (start + size).min(input.len());
        let end = if end == input.len() {
            end
        } else {
            match input[start..end].iter().rposition(|&b| b == b'\n') {
                Some(p) => start + p + 1,
                None => memchr::memchr(b'\n', &input[end..]).map_or(input.len(), |p| end + p + 1),
            }
        };
        out.push(&input[start..end]);
        start = end;
    }
    out
}

/// The whole job in one process: maps, splits from the samples, each
/// reduce fed its range of every map's run, outputs in partition order.
fn sort_lines(input: &[u8], block: usize, reduces: u32, budget: Option<u64>) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    let mut samples = Vec::new();
    for b in blocks(input, block) {
        let mut m = Workload::SortLines.map_task(reduces);
        m.expect_input(b.len() as u64);
        for piece in b.chunks(7) {
            m.consume(piece);
        }
        let (s, out) = m.finish();
        assert_eq!(s.input_bytes, b.len() as u64);
        let MapOutput::SortedRun { run, sample } = out else {
            panic!("sort-lines maps make a sorted run")
        };
        assert_eq!(run.format(), RunFormat::Lines);
        assert_eq!(run.bytes(), c_sort(b), "a map's run is its block sorted");
        samples.extend(sample);
        runs.push(run);
    }
    let splits = crate::sort::splits(samples, reduces);
    let mut out = Vec::new();
    for r in 0..reduces as usize {
        let lo = r
            .checked_sub(1)
            .and_then(|i| splits.get(i))
            .map(|v| v.as_slice());
        let hi = splits.get(r).map(|v| v.as_slice());
        let spill = budget.map(|b| crate::Spill::unpaced(b, dir.path()));
        let mut red = Workload::SortLines.reduce_task_within(spill).unwrap();
        for run in &runs {
            let (s, e) = run.range(lo, hi);
            red.consume(run.bytes()[s..e].to_vec()).unwrap();
        }
        let (_, part) = red.finish().unwrap();
        out.extend(part);
    }
    out
}

/// Real prose: this repository's own documents (lines from none to
/// kilobytes long, empty lines, tables), whatever they say today.
fn prose() -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut all = Vec::new();
    for f in [
        "README.md",
        "ARCHITECTURE.md",
        "EXPERIMENTS.md",
        "docs/guide.md",
    ] {
        all.extend(std::fs::read(root.join(f)).unwrap_or_default());
    }
    assert!(all.len() > 10_000, "the repository's documents are there");
    all
}

#[test]
fn map_sorts_lines_adds_a_last_newline_and_samples_whole_lines() {
    let input = b"pear\n\napple\tred\napple\n\x00zero\nbanana";
    let mut m = Workload::SortLines.map_task(2);
    m.consume(&input[..9]);
    m.consume(&input[9..]);
    let (s, out) = m.finish();
    assert_eq!((s.input_bytes, s.records), (input.len() as u64, 6));
    let MapOutput::SortedRun { run, sample } = out else {
        panic!("a sorted run")
    };
    // A tab sorts after the end of a line, as in `LC_ALL=C sort`.
    assert_eq!(
        run.bytes(),
        b"\n\x00zero\napple\napple\tred\nbanana\npear\n"
    );
    assert_eq!(s.output_bytes, run.len() as u64);
    assert_eq!(sample.len(), 6);
    assert!(sample.iter().all(|l| !l.contains(&b'\n')));
    let (a, b) = run.range(Some(b"apple"), Some(b"b"));
    assert_eq!(&run.bytes()[a..b], b"apple\napple\tred\n");
    assert_eq!(run.range(Some(b"zzz"), None), (run.len(), run.len()));
    assert_eq!(run.range(None, Some(b"")), (0, 0));
    assert_eq!(run.range(None, Some(b"\x00")), (0, 1));
}

#[test]
fn the_whole_job_equals_c_sort_on_prose() {
    let text = prose();
    let want = c_sort(&text);
    assert_eq!(sort_lines(&text, 4096, 3, None), want);
    // Blocks smaller than the longest lines; a spill at every run.
    assert_eq!(sort_lines(&text, 200, 4, Some(0)), want);
    // Without a final newline, and with blank lines only.
    let cut =
        &text[..text.len() - 1 - text.iter().rev().skip(1).position(|&b| b == b'\n').unwrap()];
    let mut unterminated = cut.to_vec();
    unterminated.extend_from_slice(b"no final newline");
    assert_eq!(
        sort_lines(&unterminated, 1000, 2, Some(3000)),
        c_sort(&unterminated)
    );
    assert_eq!(sort_lines(b"\n\n\n", 1, 2, None), b"\n\n\n");
}

#[test]
fn copies_of_a_line_merge_in_pieces_and_equal_c_sort() {
    // Every line of the documents at least twice, and one line in more
    // copies than a piece holds.
    let docs = prose();
    let mut text = docs.repeat(2);
    text.extend(b"copy\n".repeat(crate::OUTPUT_PIECE / 5 + 1000));
    text.extend_from_slice(&docs);
    let want = c_sort(&text);
    assert_eq!(sort_lines(&text, 1 << 16, 3, None), want);
    let mut red = Workload::SortLines.reduce_task().unwrap();
    // Two blocks split at a line's end, as a map's records are.
    let mid = text.len() / 2
        + text[text.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    for half in [&text[..mid], &text[mid..]] {
        let mut m = Workload::SortLines.map_task(1);
        m.consume(half);
        let MapOutput::SortedRun { run, .. } = m.finish().1 else {
            panic!("a sorted run")
        };
        red.consume(run.to_vec()).unwrap();
    }
    let (mut out, mut largest) = (Vec::new(), 0);
    red.finish_into(&mut |piece| {
        largest = largest.max(piece.len());
        out.extend_from_slice(&piece);
        true
    })
    .unwrap();
    assert_eq!(out, want);
    let longest = want.split(|&b| b == b'\n').map(<[u8]>::len).max().unwrap();
    assert!(
        largest <= crate::OUTPUT_PIECE + longest + 1,
        "a piece of {largest} bytes"
    );
}

#[test]
fn a_line_longer_than_the_merge_window_survives_a_spill() {
    let long = vec![b'q'; 3 * WINDOW + 17];
    let mut input = b"b\na\n".to_vec();
    input.extend_from_slice(&long);
    input.extend_from_slice(b"\nc\n");
    let dir = tempfile::tempdir().unwrap();
    let mut red = Workload::SortLines
        .reduce_task_within(Some(crate::Spill::unpaced(0, dir.path())))
        .unwrap();
    for half in [&input[..4], &input[4..]] {
        let mut m = Workload::SortLines.map_task(1);
        m.consume(half);
        let MapOutput::SortedRun { run, .. } = m.finish().1 else {
            panic!("a sorted run")
        };
        red.consume(run.to_vec()).unwrap();
    }
    let (s, out) = red.finish().unwrap();
    assert_eq!(out, c_sort(&input));
    assert_eq!(s.records, 4);
    assert!(s.spilled_bytes >= input.len() as u64);
}

#[test]
fn reduce_refuses_input_that_is_not_whole_lines() {
    let mut r = Workload::SortLines.reduce_task().unwrap();
    let e = r.consume(b"a\nb".to_vec()).unwrap_err();
    assert!(e.contains("does not end with a newline"), "{e}");
    // A run of records is not a run of lines, and the other way round.
    let mut m = Workload::Sort.map_task(1);
    m.consume(&[b'x'; 100]);
    let out = std::sync::Arc::new(m.finish().1);
    let kept = crate::KeptInput {
        output: out,
        part: 0,
        start: 0,
        end: 100,
    };
    assert!(r.consume_kept(kept).is_err());
    let mut m = Workload::SortLines.map_task(1);
    m.consume(b"b\na\n");
    let lines = std::sync::Arc::new(m.finish().1);
    let mid = crate::KeptInput {
        output: lines.clone(),
        part: 0,
        start: 1,
        end: 4,
    };
    assert!(r.consume_kept(mid).is_err(), "a range must start a line");
    let mut s = Workload::Sort.reduce_task().unwrap();
    let whole = crate::KeptInput {
        output: lines,
        part: 0,
        start: 0,
        end: 4,
    };
    assert!(s.consume_kept(whole).is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Any lines (bytes below the newline and above it, empty lines, a
    /// missing last newline), any block size and reduce count: the job's
    /// output is `LC_ALL=C sort`'s.
    #[test]
    fn any_lines_sort_as_c_sort_does(
        lines in proptest::collection::vec(proptest::collection::vec(
            proptest::prop_oneof![proptest::prelude::Just(b'a'), proptest::prelude::Just(b'\t'),
                proptest::prelude::Just(0u8), proptest::prelude::Just(0xffu8), 32u8..127], 0..12), 0..60),
        last_newline in proptest::prelude::any::<bool>(),
        block in 1usize..64,
        reduces in 1u32..5,
        spill in proptest::prelude::any::<bool>(),
    ) {
        let mut input: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
        if !last_newline && !input.is_empty() && lines.last().is_some_and(|l| !l.is_empty()) {
            input.pop();
        }
        let got = sort_lines(&input, block, reduces, spill.then_some(16));
        proptest::prop_assert_eq!(got, c_sort(&input));
    }

    /// Lines long enough to tie over many 8-byte steps (copies of a few
    /// stems of up to 70 bytes from a 3-byte alphabet with NUL, each
    /// cut and extended): a map's sorted run is `LC_ALL=C sort`'s.
    #[test]
    fn lines_alike_for_many_bytes_sort_as_c_sort_does(
        stems in proptest::collection::vec(proptest::collection::vec(
            proptest::prop_oneof![proptest::prelude::Just(b'a'), proptest::prelude::Just(b'b'),
                proptest::prelude::Just(0u8)], 0..70), 1..4),
        picks in proptest::collection::vec((0usize..4, 0usize..80, proptest::collection::vec(97u8..99, 0..20)), 0..80),
    ) {
        let mut input = Vec::new();
        for (stem, cut, tail) in &picks {
            let stem = &stems[stem % stems.len()];
            input.extend_from_slice(&stem[..(*cut).min(stem.len())]);
            input.extend_from_slice(tail);
            input.push(b'\n');
        }
        let mut m = Workload::SortLines.map_task(1);
        m.expect_input(input.len() as u64);
        m.consume(&input);
        let MapOutput::SortedRun { run, .. } = m.finish().1 else {
            panic!("sort-lines maps make a sorted run")
        };
        proptest::prop_assert_eq!(run.bytes(), &c_sort(&input)[..]);
    }

    /// The binary search finds the same range as a scan, for any bounds.
    #[test]
    fn line_ranges_equal_a_scan(
        lines in proptest::collection::vec(proptest::collection::vec(97u8..100, 0..5), 0..40),
        lo in proptest::option::of(proptest::collection::vec(97u8..100, 0..5)),
        hi in proptest::option::of(proptest::collection::vec(97u8..100, 0..5)),
    ) {
        let mut sorted = lines.clone();
        sorted.sort();
        let run: Vec<u8> = sorted.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
        let (s, e) = range_in_lines(&run, lo.as_deref(), hi.as_deref());
        let want: Vec<u8> = sorted
            .iter()
            .filter(|l| lo.as_ref().is_none_or(|k| l.as_slice() >= k.as_slice()))
            .filter(|l| hi.as_ref().is_none_or(|k| l.as_slice() < k.as_slice()))
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect();
        if lo.is_none() || hi.is_none() || lo <= hi {
            proptest::prop_assert_eq!(&run[s..e], want.as_slice());
        } else {
            proptest::prop_assert_eq!(s, e);
        }
    }
}

#[test]
fn splits_balance_the_reduces_bytes_where_long_lines_sort_together() {
    // 20,000 short lines sorting first (7 bytes each) and 2,000 long ones
    // sorting last (200 bytes each), interleaved, in blocks of 64 KiB: by
    // line count the median is a short line and one reduce would take
    // nearly every byte; sampled by bytes, each of 2 reduces takes about
    // half.
    let mut input = Vec::new();
    for i in 0..20_000u32 {
        input.extend_from_slice(format!("a{:05}\n", (i * 7919) % 20_000).as_bytes());
        if i % 10 == 0 {
            let long = format!("z{:05}", (i * 7919) % 20_000);
            input.extend_from_slice(format!("{long:x<199}\n").as_bytes());
        }
    }
    let (mut runs, mut samples) = (Vec::new(), Vec::new());
    for b in blocks(&input, 64 << 10) {
        let mut m = Workload::SortLines.map_task(2);
        m.consume(b);
        let MapOutput::SortedRun { run, sample } = m.finish().1 else {
            panic!("sort-lines maps make a sorted run")
        };
        samples.extend(sample);
        runs.push(run);
    }
    let splits = crate::sort::splits(samples, 2);
    let low: usize = runs
        .iter()
        .map(|r| {
            let (s, e) = r.range(None, Some(&splits[0]));
            e - s
        })
        .sum();
    let share = low as f64 / input.len() as f64;
    assert!(
        (0.45..0.55).contains(&share),
        "the first reduce's share {share}"
    );
    // And the job's output is still `LC_ALL=C sort`'s.
    assert_eq!(sort_lines(&input, 64 << 10, 2, None), c_sort(&input));
}
