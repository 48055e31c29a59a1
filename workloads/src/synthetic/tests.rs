use super::*;
use crate::Workload;

fn map(input: &[u8], cuts: &[usize], reduces: u32, shuffle: f64) -> (MapSummary, MapOutput) {
    let ratios = Ratios {
        shuffle,
        output: 1.0,
    };
    let mut m = Workload::Synthetic.map_task_with(reduces, ratios);
    let mut at = 0;
    for &c in cuts {
        m.consume(&input[at..c]);
        at = c;
    }
    m.consume(&input[at..]);
    m.finish()
}

fn parts(out: MapOutput) -> Vec<Vec<u8>> {
    match out {
        MapOutput::Partitions(p) => p,
        _ => panic!("a synthetic map with reduces has partitions"),
    }
}

fn text(n: usize) -> Vec<u8> {
    (0..n).map(|i| b"the quick brown fox\n"[i % 20]).collect()
}

#[test]
fn a_map_writes_its_ratio_of_its_input_in_whole_lines_over_every_partition() {
    let input = text(100_000);
    let (s, out) = map(&input, &[], 4, 0.37);
    assert_eq!((s.input_bytes, s.records), (100_000, 5_000));
    let p = parts(out);
    assert_eq!(p.len(), 4);
    let total: usize = p.iter().map(Vec::len).sum();
    assert_eq!(total, 37_000);
    // 370 records of 100 bytes, spread over the 4 partitions (about 92
    // each), each a line with a 10-character key.
    for part in &p {
        assert!(part.len() > 5_000, "{} bytes", part.len());
        assert_eq!(part.len() % RECORD, 0);
        for rec in part.chunks(RECORD) {
            assert_eq!(rec[RECORD - 1], b'\n');
            assert!(rec[..RECORD - 1].iter().all(|c| ALPHABET.contains(c)));
        }
    }
}

#[test]
fn the_last_record_is_cut_to_what_the_ratio_leaves() {
    let (_, out) = map(&text(1_000), &[], 3, 0.123);
    let p = parts(out);
    assert_eq!(p.iter().map(Vec::len).sum::<usize>(), 123);
    // One partition ends with the 23-byte record, still a line.
    let short: Vec<&Vec<u8>> = p.iter().filter(|x| x.len() % RECORD != 0).collect();
    assert_eq!(short.len(), 1);
    assert_eq!(short[0].len() % RECORD, 23);
    assert_eq!(short[0].last(), Some(&b'\n'));
    // A ratio that leaves no byte writes nothing; a map-only job nothing
    // to shuffle.
    assert_eq!(
        parts(map(&text(1_000), &[], 3, 0.0).1)
            .iter()
            .map(Vec::len)
            .sum::<usize>(),
        0
    );
    assert!(matches!(map(&text(1_000), &[], 0, 1.0).1, MapOutput::None));
}

#[test]
fn a_maps_output_follows_from_its_input_not_from_how_it_arrived() {
    let input = text(10_007);
    let whole = parts(map(&input, &[], 5, 2.5).1);
    let cut = parts(map(&input, &[1, 9, 4_000, 4_003, 10_000], 5, 2.5).1);
    assert_eq!(whole, cut);
    let mut other = input.clone();
    other[5_000] ^= 1;
    assert_ne!(whole, parts(map(&other, &[], 5, 2.5).1));
}

#[test]
fn a_ratio_past_the_limit_fails_the_map_with_the_reason() {
    let (_, out) = map(&text(1 << 20), &[], 1, 1e4);
    match out {
        MapOutput::Invalid(e) => assert!(e.contains("ratios.shuffle"), "{e}"),
        _ => panic!("10 GB from one map must be refused"),
    }
    for bad in [-1.0, f64::NAN, f64::INFINITY, 2e9] {
        let r = Ratios {
            shuffle: 1.0,
            output: bad,
        };
        let e = r.validate().unwrap_err();
        assert!(e.contains("ratios.output"), "{e}");
    }
    assert!(Ratios::default().validate().is_ok());
}

#[test]
fn a_reduce_writes_its_ratio_of_what_it_fetched_whatever_the_order() {
    let p = parts(map(&text(50_000), &[], 1, 1.0).1);
    let q = parts(map(&text(30_000), &[], 1, 1.0).1);
    let ratios = Ratios {
        shuffle: 1.0,
        output: 0.51,
    };
    let run = |a: &[u8], b: &[u8]| {
        let mut r = Workload::Synthetic
            .reduce_task_with(None, ratios)
            .expect("has a reduce");
        r.consume(a.to_vec()).unwrap();
        r.consume(b.to_vec()).unwrap();
        assert_eq!(r.output_len(), Some(40_800));
        r.finish().unwrap()
    };
    let (s, out) = run(&p[0], &q[0]);
    assert_eq!((s.input_bytes, s.output_bytes), (80_000, 40_800));
    assert_eq!(out.len(), 40_800);
    assert_eq!(s.records, 408);
    assert!(out.chunks(RECORD).all(|r| r.last() == Some(&b'\n')));
    assert_eq!(run(&q[0], &p[0]).1, out, "the fetch order changes nothing");
}

#[test]
fn a_large_reduce_output_comes_in_pieces_and_stops_when_told() {
    let ratios = Ratios {
        shuffle: 1.0,
        output: 3.0,
    };
    let mut r = Workload::Synthetic
        .reduce_task_with(None, ratios)
        .expect("has a reduce");
    r.consume(vec![b'x'; 5 << 20]).unwrap();
    let mut pieces = Vec::new();
    let s = r
        .finish_into(&mut |p| {
            pieces.push(p.len());
            true
        })
        .unwrap();
    assert_eq!(s.output_bytes, 15 << 20);
    assert!(pieces.len() >= 4, "{pieces:?}");
    assert!(pieces.iter().all(|&n| n <= crate::OUTPUT_PIECE));
    assert_eq!(pieces.iter().sum::<usize>(), 15 << 20);
    let mut r = Workload::Synthetic
        .reduce_task_with(None, ratios)
        .expect("has a reduce");
    r.consume(vec![b'x'; 5 << 20]).unwrap();
    let mut n = 0;
    let s = r.finish_into(&mut |_| {
        n += 1;
        false
    });
    assert_eq!(n, 1);
    assert!(s.unwrap().output_bytes <= crate::OUTPUT_PIECE as u64);
}

proptest::proptest! {
    /// However the input is cut, a map writes exactly round(ratio x input)
    /// bytes, in whole records but for one.
    #[test]
    fn map_output_is_exact(len in 0usize..5_000, ratio in 0.0f64..8.0, reduces in 1u32..6, cut in 0usize..5_000) {
        let input = text(len);
        let c = cut.min(len);
        let p = parts(map(&input, &[c], reduces, ratio).1);
        let total: u64 = p.iter().map(|x| x.len() as u64).sum();
        proptest::prop_assert_eq!(total, (ratio * len as f64).round() as u64);
        proptest::prop_assert!(p.iter().filter(|x| x.len() % RECORD != 0).count() <= 1);
    }
}
