use super::*;
use crate::Workload;

/// A seeded stream of pseudo-random u32s (a 64-bit LCG's high bits).
fn lcg(seed: u64) -> impl FnMut() -> u32 {
    let mut x = seed;
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as u32
    }
}

fn rec(key: &str, n: u32) -> Vec<u8> {
    let mut r = format!("{key:<10} {n:016x} ").into_bytes();
    r.resize(RECORD - 1, b'x');
    r.push(b'\n');
    r
}

#[test]
fn map_sorts_samples_and_serves_ranges() {
    let keys = [
        "mmmmmmmmmm",
        "aaaaaaaaaa",
        "zzzzzzzzzz",
        "cccccccccc",
        "mmmmmmmmmm",
    ];
    let data: Vec<u8> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, k)| rec(k, i as u32))
        .collect();
    let mut m = Workload::Sort.map_task(2);
    m.consume(&data[..150]);
    m.consume(&data[150..]);
    let (s, out) = m.finish();
    assert_eq!(s.records, 5);
    let MapOutput::SortedRun { run, sample } = out else {
        panic!("sort maps produce a sorted run")
    };
    let run = run.to_vec();
    assert_eq!(&run[..KEY], b"aaaaaaaaaa");
    assert_eq!(sample.len(), 5);
    let (a, b) = range_in_run(&run, Some(b"cccccccccc"), Some(b"mmmmmmmmmm"));
    assert_eq!((a, b), (RECORD, 2 * RECORD));
    let (a, b) = range_in_run(&run, Some(b"mmmmmmmmmm"), None);
    assert_eq!((a, b), (2 * RECORD, 5 * RECORD));
    assert_eq!(range_in_run(&run, None, Some(b"a")), (0, 0));
}

#[test]
fn reduce_merges_runs_in_line_order() {
    let mut r = Workload::Sort.reduce_task().unwrap();
    let a: Vec<u8> = [rec("b", 1), rec("d", 2)].concat();
    let b: Vec<u8> = [rec("a", 3), rec("b", 0), rec("e", 4)].concat();
    r.consume(a).unwrap();
    r.consume(b).unwrap();
    let (s, out) = r.finish().unwrap();
    assert_eq!(s.records, 5);
    let keys: Vec<u8> = out.chunks(RECORD).map(|c| c[0]).collect();
    assert_eq!(keys, b"abbde");
    // Equal keys: the whole line decides (record 0 before record 1).
    assert!(out[RECORD..2 * RECORD] < out[2 * RECORD..3 * RECORD]);
}

#[test]
fn merging_fetched_and_kept_runs_equals_a_full_sort() {
    // Many runs with duplicate keys, some empty, every other one kept
    // in memory (a map's sorted run, cut to a range of keys):
    // the merge must neither lose nor reorder records.
    // Every third trial holds no fetched run in memory (each goes to a
    // file at once), every third a few records' worth.
    let dir = tempfile::tempdir().unwrap();
    let mut next = lcg(7);
    for trial in 0..30 {
        let spill = match trial % 3 {
            0 => None,
            1 => Some(crate::Spill::unpaced(0, dir.path())),
            _ => Some(crate::Spill::unpaced(30 * RECORD as u64, dir.path())),
        };
        let mut r = Workload::Sort.reduce_task_within(spill).unwrap();
        let mut all: Vec<Vec<u8>> = Vec::new();
        // 0-6 runs, then 9-17 (trees of losers over 16 and 32 leaves);
        // the last trial's runs fill several output pieces.
        let runs = if trial < 20 { trial % 7 } else { trial - 11 };
        let per = if trial == 29 { 30_000 } else { 50 };
        for i in 0..runs {
            let run: Vec<Vec<u8>> = (0..(next() % per))
                .map(|_| rec(&format!("k{:02}", next() % 20), next()))
                .collect();
            if i % 2 == 0 {
                let mut sorted = run.clone();
                sorted.sort();
                all.extend(sorted.iter().cloned());
                r.consume(sorted.concat()).unwrap();
            } else {
                let mut m = Workload::Sort.map_task(1);
                m.consume(&run.concat());
                let (_, out) = m.finish();
                let MapOutput::SortedRun { run: sorted, .. } = &out else {
                    panic!("sort maps make runs")
                };
                // Keys k05 <= key < k15 of it.
                let (lo, hi) = (rec("k05", 0), rec("k15", 0));
                let (start, end) = sorted.range(Some(&lo[..KEY]), Some(&hi[..KEY]));
                all.extend(
                    run.iter()
                        .filter(|x| x[..KEY] >= lo[..KEY] && x[..KEY] < hi[..KEY])
                        .cloned(),
                );
                let kept = crate::KeptInput {
                    output: std::sync::Arc::new(out),
                    part: 0,
                    start,
                    end,
                };
                r.consume_kept(kept).unwrap();
            }
        }
        all.sort();
        assert_eq!(r.output_len(), Some((all.len() * RECORD) as u64));
        let mut pieces = 0;
        let mut out = Vec::new();
        let s = r
            .finish_into(&mut |p| {
                assert!(p.len().is_multiple_of(RECORD) && !p.is_empty());
                pieces += 1;
                out.extend_from_slice(&p);
                true
            })
            .unwrap();
        assert_eq!(s.records as usize, all.len());
        assert_eq!(out, all.concat(), "trial {trial}");
        assert_eq!(
            pieces,
            (out.len()).div_ceil(PIECE_RECORDS * RECORD),
            "trial {trial}"
        );
        if trial == 29 {
            assert!(pieces >= 3, "{pieces} pieces");
        }
    }
}

#[test]
fn a_reduce_past_its_budget_merges_to_files_and_gives_the_whole_sort() {
    // 75 fetched runs and 5 kept ones; a budget of 1 run: files of 2
    // runs are written as the runs come, merged into one at
    // SPILL_FACTOR, and the output is every record in order.
    let dir = tempfile::tempdir().unwrap();
    let mut next = lcg(5);
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = written.clone();
    let spill = crate::Spill {
        memory_budget: 300 * RECORD as u64,
        dir: dir.path().into(),
        charge: std::sync::Arc::new(move |n| {
            counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        }),
    };
    let mut task = SortReduce::new(Some(spill));
    let mut all: Vec<Vec<u8>> = Vec::new();
    let mut most_files = 0;
    for i in 0..80 {
        let mut run: Vec<Vec<u8>> = (0..300)
            .map(|_| rec(&format!("k{:03}", next() % 500), next() % 4))
            .collect();
        all.extend(run.iter().cloned());
        if i % 16 == 15 {
            let mut m = Workload::Sort.map_task(1);
            m.consume(&run.concat());
            let out = std::sync::Arc::new(m.finish().1);
            let end = out.part(0).unwrap().len();
            let kept = crate::KeptInput {
                output: out,
                part: 0,
                start: 0,
                end,
            };
            task.consume_kept(kept).unwrap();
        } else {
            run.sort();
            task.consume(run.concat()).unwrap();
        }
        most_files = most_files.max(task.spilled_files());
    }
    assert_eq!(
        most_files,
        SPILL_FACTOR - 1,
        "merged into one at the factor"
    );
    assert!(task.spilled_files() < SPILL_FACTOR);
    all.sort();
    let read_before = written.load(std::sync::atomic::Ordering::Relaxed);
    let (s, out) = (Box::new(task) as Box<dyn ReduceTask>).finish().unwrap();
    assert_eq!(s.records as usize, all.len());
    assert!(out == all.concat(), "the output is the whole sort");
    // Written: 74 fetched runs once (the 75th is still held), then the
    // 31 files' bytes again when merged into one at the factor; those
    // were charged when written and when read back for that merge.
    let run_bytes = 300 * RECORD as u64;
    let remerged = s.spilled_bytes - 74 * run_bytes;
    assert!(remerged > 0 && remerged < 74 * run_bytes, "{remerged}");
    assert_eq!(read_before, s.spilled_bytes + remerged);
    // Every spilled byte was charged when written and again when read.
    let all_read = written.load(std::sync::atomic::Ordering::Relaxed);
    assert!(read_before >= 75 * 300 * RECORD as u64, "{read_before}");
    assert!(all_read > read_before);
    // Nothing is left in the directory: the files were anonymous.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A spill directory that is not there is named in the error.
    let gone = dir.path().join("gone");
    let mut r = Workload::Sort
        .reduce_task_within(Some(crate::Spill::unpaced(0, &gone)))
        .unwrap();
    let e = r.consume(rec("a", 0)).unwrap_err();
    assert!(e.contains("gone") && e.contains("spill"), "{e}");
}

#[test]
fn the_coded_merge_orders_records_differing_anywhere_and_duplicates() {
    // Records of two byte values differing at a random few of their
    // 100 bytes (first difference anywhere, often late), with exact
    // duplicates within and across runs: every tie the codes leave
    // is compared further, from the byte the codes share.
    let mut next = lcg(19);
    for trial in 0..200 {
        let runs = 1 + (next() % 12) as usize;
        let mut all = Vec::new();
        let mut r = Workload::Sort.reduce_task().unwrap();
        for _ in 0..runs {
            let mut run: Vec<Vec<u8>> = (0..next() % 40)
                .map(|_| {
                    let mut x = vec![b'a'; RECORD];
                    for _ in 0..next() % 3 {
                        x[(next() as usize) % RECORD] = b'b';
                    }
                    x
                })
                .collect();
            run.sort();
            all.extend(run.iter().cloned());
            r.consume(run.concat()).unwrap();
        }
        all.sort();
        let (_, out) = r.finish().unwrap();
        assert_eq!(out, all.concat(), "trial {trial}");
    }
    assert_eq!(first_difference(&[7; RECORD], &[7; RECORD], 0), RECORD);
    let mut late = [7; RECORD];
    late[RECORD - 1] = 8;
    assert_eq!(first_difference(&[7; RECORD], &late, 3), RECORD - 1);
}

#[test]
fn a_merge_stops_when_its_output_is_refused_and_kept_input_is_checked() {
    let mut r = Workload::Sort.reduce_task().unwrap();
    let run: Vec<u8> = (0..3 * PIECE_RECORDS as u32)
        .flat_map(|i| rec(&format!("{i:09}"), i))
        .collect();
    r.consume(run).unwrap();
    let mut calls = 0;
    r.finish_into(&mut |_| {
        calls += 1;
        false
    })
    .unwrap();
    assert_eq!(calls, 1);
    // A kept range that cuts a record, and a partition, are refused.
    let mut m = Workload::Sort.map_task(1);
    m.consume(&[rec("a", 0), rec("b", 1)].concat());
    let out = std::sync::Arc::new(m.finish().1);
    let mut r = Workload::Sort.reduce_task().unwrap();
    let cut = crate::KeptInput {
        output: out.clone(),
        part: 0,
        start: 0,
        end: 150,
    };
    assert!(r.consume_kept(cut).unwrap_err().contains("0..150"));
    let parts = crate::KeptInput {
        output: std::sync::Arc::new(MapOutput::Partitions(vec![vec![0; 100]])),
        part: 0,
        start: 0,
        end: 100,
    };
    assert!(r.consume_kept(parts).unwrap_err().contains("sorted runs"));
}

#[test]
fn the_key_prefix_sort_equals_a_comparison_sort() {
    // Keys sharing their first two bytes (one bucket), equal keys with
    // different records, and keys that differ only past byte 8.
    let mut next = lcg(11);
    let mut data = Vec::new();
    for i in 0..3000u32 {
        let key = match i % 3 {
            0 => format!("ab{:08}", next() % 50),
            1 => format!("{:010}", next() % 1000),
            _ => format!("zzzzzzzzz{}", next() % 3),
        };
        data.extend(rec(&key, next() % 7));
    }
    let mut want: Vec<&[u8]> = data.chunks_exact(RECORD).collect();
    want.sort_unstable();
    let run = sorted_run(data.clone());
    let got: Vec<&[u8]> = (0..run.records()).map(|i| run.record(i)).collect();
    assert_eq!(got, want);
    // Written out: the same records, laid end to end.
    let laid = want.concat();
    assert_eq!(run.to_vec(), laid);
    let mut written = Vec::new();
    run.write_to(&mut written).unwrap();
    assert_eq!(written, laid);
    // Read at any offset, across records.
    for (at, n) in [(0, 1), (99, 2), (150, 1000), (laid.len() - 7, 7), (5, 0)] {
        let mut buf = vec![0; n];
        run.read_at(at, &mut buf);
        assert_eq!(buf, laid[at..at + n], "{at}+{n}");
    }
    // A range by key prefixes: exactly the records within the bounds.
    let (lo, hi): (&[u8], &[u8]) = (b"1", b"ab00000025");
    let (s, e) = run.range(Some(lo), Some(hi));
    let inside: Vec<&[u8]> = want
        .iter()
        .copied()
        .filter(|r| *r >= lo && *r < hi)
        .collect();
    assert_eq!(laid[s..e], inside.concat()[..]);
    assert_eq!(run.range(None, None), (0, laid.len()));
    assert!(key_order(&[]).is_empty());
    assert_eq!(sorted_run(Vec::new()).len(), 0);
}

/// `sorted_run` lays the records of `data` in a comparison sort's order.
fn assert_orders_as_a_comparison_sort(data: &[u8]) {
    let mut want: Vec<&[u8]> = data.chunks_exact(RECORD).collect();
    want.sort_unstable();
    let got = sorted_run(data.to_vec()).to_vec();
    assert!(got == want.concat(), "the sorted run differs");
}

#[test]
fn keys_sharing_long_prefixes_sort_as_a_comparison_sort_does() {
    // Buckets of the first two key bytes holding tens of thousands of
    // records whose keys share up to nine bytes (names, ids, dates in one
    // form): each ordered by the bytes past the shared ones, and equal
    // keys by their whole records.
    let mut next = lcg(5);
    let mut data = Vec::new();
    for _ in 0..60_000u32 {
        let key = match next() % 4 {
            0 => format!("user_0{}{:03}", next() % 2, next() % 1000),
            1 => format!("item_00{}", (b'!' + (next() % 90) as u8) as char),
            2 => format!("2026-12-0{}", next() % 10),
            _ => format!("user_0{}{:03}", next() % 2, next() % 7),
        };
        data.extend(rec(&key, next() % 50));
    }
    assert_orders_as_a_comparison_sort(&data);
}

#[test]
fn a_bucket_past_65536_records_splits_by_two_bytes_and_sorts_as_a_comparison_sort_does() {
    // Three prefixes of seven bytes, two of them in one bucket of their
    // first two bytes (the bench's shared-prefix keys), then three
    // printable bytes; and 70,000 records of one key (a single key's
    // bucket).
    let mut next = lcg(9);
    let mut data = Vec::new();
    let printable = |n: u32| (b' ' + (n % 95) as u8) as char;
    for _ in 0..150_000u32 {
        let p = ["user_00", "user_01", "item_00"][(next() % 3) as usize];
        let key = format!(
            "{p}{}{}{}",
            printable(next()),
            printable(next()),
            printable(next())
        );
        data.extend(rec(&key, next() % 1000));
    }
    for _ in 0..70_000u32 {
        data.extend(rec("zzzzzzzzzz", next() % 1000));
    }
    assert_orders_as_a_comparison_sort(&data);
}

#[test]
fn partial_records_are_errors() {
    let mut m = Workload::Sort.map_task(1);
    m.consume(&[b'a'; 150]);
    let (_, out) = m.finish();
    assert!(matches!(out, MapOutput::Invalid(e) if e.contains("50 left over")));
    let mut r = Workload::Sort.reduce_task().unwrap();
    assert!(r.consume(vec![b'a'; 99]).is_err());
}

#[test]
fn equal_keys_are_divided_evenly_and_the_partitions_stay_sorted() {
    // Eight maps over 2 distinct keys, one of them 90% of the records:
    // split on keys, one reduce would take at least 90%. Split on the
    // sampled whole records, each of 4 reduces takes a quarter, within
    // 10%, and the partitions laid end to end are the whole sort.
    let mut next = lcg(3);
    let mut runs = Vec::new();
    let mut samples = Vec::new();
    let mut all = Vec::new();
    for _ in 0..8 {
        let recs: Vec<Vec<u8>> = (0..5000)
            .map(|_| {
                let key = if next().is_multiple_of(10) {
                    "rare"
                } else {
                    "heavy"
                };
                rec(key, next())
            })
            .collect();
        all.extend(recs.iter().cloned());
        let mut m = Workload::Sort.map_task(4);
        m.consume(&recs.concat());
        let (_, out) = m.finish();
        let MapOutput::SortedRun { run, sample } = out else {
            panic!("sort maps make runs")
        };
        assert!(
            sample.iter().all(|s| s.len() == RECORD),
            "whole records sampled"
        );
        samples.extend(sample);
        runs.push(run.to_vec());
    }
    let cut = splits(samples, 4);
    assert_eq!(cut.len(), 3);
    let bound = |r: usize| -> (Option<&[u8]>, Option<&[u8]>) {
        (
            (r > 0).then(|| cut[r - 1].as_slice()),
            cut.get(r).map(|c| c.as_slice()),
        )
    };
    let mut laid = Vec::new();
    let mut sizes = Vec::new();
    for r in 0..4 {
        let (lo, hi) = bound(r);
        let mut part: Vec<&[u8]> = Vec::new();
        for run in &runs {
            let (s, e) = range_in_run(run, lo, hi);
            part.extend(run[s..e].chunks_exact(RECORD));
        }
        part.sort_unstable();
        sizes.push(part.len());
        laid.extend(part.concat());
    }
    all.sort();
    assert_eq!(laid, all.concat(), "partition order is the sort's order");
    let share = all.len() as f64 / 4.0;
    for s in &sizes {
        assert!((*s as f64 - share).abs() <= 0.1 * share, "{sizes:?}");
    }
}

#[test]
fn splits_at_quantiles() {
    let s: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i]).collect();
    assert_eq!(splits(s, 4), vec![vec![25], vec![50], vec![75]]);
    assert!(splits(vec![vec![1]], 1).is_empty());
}

#[test]
fn runs_of_equal_keys_are_checked_and_only_those_out_of_order_are_sorted() {
    // Interleaved in the block: runs of equal keys in order, out of order
    // (the whole run, only its last pair, the last run of the block), a
    // single record, and records equal as a whole.
    let recs = [
        ("e", 5),
        ("a", 1),
        ("b", 3),
        ("d", 0),
        ("a", 2),
        ("b", 1),
        ("c", 7),
        ("d", 2),
        ("b", 2),
        ("a", 3),
        ("d", 1),
        ("b", 0),
        ("e", 4),
        ("a", 3),
        ("e", 4),
    ];
    let data: Vec<u8> = recs.iter().flat_map(|&(k, n)| rec(k, n)).collect();
    assert_orders_as_a_comparison_sort(&data);
    // The same records with every run of equal keys already in order.
    let mut sorted = recs;
    sorted.sort_by_key(|&(_, n)| n);
    let data: Vec<u8> = sorted.iter().flat_map(|&(k, n)| rec(k, n)).collect();
    assert_orders_as_a_comparison_sort(&data);
}
