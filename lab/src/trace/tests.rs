use super::*;
use crate::swim::{TraceFile, TraceJob};

fn model() -> Model {
    Model {
        point: "default".into(),
        overhead_ms: 100,
        remote: RemoteCost {
            base_ms: 50.0,
            per_mb_ms: 1000.0,
            ..Default::default()
        },
        transfer_ms: None,
        ref_bytes: 0,
        reduce_base_ms: 10.0,
        reduce_ms_per_mb: 2000.0,
        reduce_typical_ms_per_mb: None,
        shuffle_ratio: BTreeMap::new(),
    }
}

fn plan() -> TracePlan {
    let job = |file: usize, at: u64, reduces: Option<u32>, shuffle: u64| TraceJob {
        id: format!("job{at}"),
        arrival_ms: at,
        workload: Workload::InputSink,
        file,
        reduces,
        shuffle_bytes: shuffle,
        output_bytes: 0,
        ratios: None,
    };
    TracePlan {
        files: vec![
            TraceFile {
                path: "a".into(),
                blocks: 3,
                block_bytes: 1_000_000,
            },
            TraceFile {
                path: "b".into(),
                blocks: 1,
                block_bytes: 4096,
            },
        ],
        jobs: vec![
            job(0, 0, None, 0),
            job(1, 500, Some(2), 3_000_000),
            job(0, 900, None, 0),
        ],
        no_input: 0,
    }
}

fn shape(workers: u32) -> Shape {
    Shape {
        workers,
        reduce_workers: 0,
        placement: Placement::Random,
        slots: 2,
        replication: 2,
        heartbeat_ms: 100,
        out_of_band: false,
        slot_rate_mbs: Some(0.5),
        task_time_s: None,
        speculation: Default::default(),
        slow: None,
        shuffle_net: None,
    }
}

#[test]
fn jobs_that_share_a_file_share_its_replicas_and_tasks_are_timed_by_the_model() {
    let jobs = replay_jobs(&plan(), &shape(10), &model(), 1);
    assert_eq!(jobs.len(), 3);
    // A 1 MB block at 0.5 MB/s: 2 s, plus the 100 ms overhead.
    assert!(jobs[0]
        .tasks
        .iter()
        .all(|t| t.local_ms == 2_100 && t.bytes == 1_000_000));
    for (a, b) in jobs[0].tasks.iter().zip(&jobs[2].tasks) {
        assert_eq!(a.replicas, b.replicas, "the same file, the same blocks");
        assert_eq!(a.replicas.len(), 2);
        assert_ne!(a.replicas[0], a.replicas[1], "replicas on distinct workers");
    }
    // Two reduces of 1.5 MB each: 10 + 2000 x 1.5 ms.
    let r = &jobs[1].reduces;
    assert_eq!(
        (r.len(), r[0].local_ms, jobs[1].reduce_load),
        (2, 3_010, 1_500_000)
    );
    assert_eq!(r[0].index, 1, "reduces are numbered after the maps");
    assert_eq!(jobs[1].arrival_ms, 500);
    // Another seed, other replicas; more replicas than workers: all.
    assert_ne!(
        replay_jobs(&plan(), &shape(10), &model(), 2)[0].tasks[0].replicas,
        jobs[0].tasks[0].replicas
    );
    assert_eq!(
        replay_jobs(&plan(), &shape(1), &model(), 1)[0].tasks[0].replicas,
        [WorkerId(0)]
    );
}

#[test]
fn dedicated_reduce_workers_hold_no_data_and_run_no_maps() {
    let mut s = shape(6);
    s.reduce_workers = 2;
    let c = cluster(&s, 1);
    assert_eq!(c.runs_maps, [true, true, true, true, false, false]);
    assert_eq!(c.runs_reduces, [false, false, false, false, true, true]);
    s.replication = 3;
    for seed in 0..20 {
        for j in replay_jobs(&plan(), &s, &model(), seed) {
            for t in &j.tasks {
                assert!(t.replicas.iter().all(|w| w.0 < 4), "{t:?}");
            }
        }
    }
    assert!(cluster(&shape(6), 1).runs_maps.is_empty(), "all do both");
    // Even placement deals each file's blocks over the map workers.
    s.placement = Placement::Even;
    s.replication = 2;
    let jobs = replay_jobs(&plan(), &s, &model(), 1);
    let mut held = [0; 4];
    for t in &jobs[0].tasks {
        assert_ne!(t.replicas[0], t.replicas[1]);
        for w in &t.replicas {
            held[w.0 as usize] += 1;
        }
    }
    // 3 blocks x 2 replicas over 4 workers: 1 or 2 each.
    assert!(held.iter().all(|&n| (1..=2).contains(&n)), "{held:?}");
}

#[test]
fn background_fills_the_initial_share_then_arrives_poisson() {
    let cfg = BackgroundConfig {
        duration_s: [1.0, 6.0],
        initial: 0.5,
        per_minute: 30.0,
    };
    let bg = background(Some(&cfg), &shape(4), 7, 60_000);
    // 2 slots, half busy at start: one process per worker at 0.
    for w in 0..4 {
        let mine: Vec<&BackgroundRun> = bg.iter().filter(|b| b.worker == WorkerId(w)).collect();
        assert_eq!(mine.iter().filter(|b| b.start_ms == 0).count(), 1);
        // ~30 more in the minute.
        assert!((10..60).contains(&mine.len()), "{}", mine.len());
        assert!(mine
            .iter()
            .all(|b| (1_000..=6_000).contains(&(b.end_ms - b.start_ms)) && b.start_ms < 60_000));
    }
    assert_eq!(background(Some(&cfg), &shape(4), 7, 60_000).len(), bg.len());
    assert!(background(None, &shape(4), 7, 60_000).is_empty());
}

#[test]
fn slow_workers_are_read_with_clear_errors_and_drawn_per_seed() {
    let s: Slow = "0.25:4".parse().unwrap();
    assert_eq!((s.fraction, s.factor), (0.25, 4.0));
    for (bad, says) in [
        ("0.1", "FRACTION:FACTOR"),
        ("x:10", "fraction \"x\" is not a number"),
        ("0.1:y", "factor \"y\" is not a number"),
        ("1.5:10", "in [0, 1]"),
        ("0.1:0.5", ">= 1"),
    ] {
        let e = bad.parse::<Slow>().unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
    let mut sh = shape(20);
    sh.slow = Some(s);
    let a = slowdown(&sh, 1);
    assert_eq!(a.iter().filter(|f| **f == 4.0).count(), 5);
    assert_eq!(a.iter().filter(|f| **f == 1.0).count(), 15);
    assert_eq!(slowdown(&sh, 1), a, "the same seed, the same workers");
    assert_ne!(slowdown(&sh, 2), a, "another seed, others");
    assert!(slowdown(&shape(20), 1).is_empty());
}

/// A calibration fitted on reads of one size (no per-MB term, no
/// `ref_bytes`) charges a trace's reads of another size in proportion to
/// their bytes; one whose reads differed keeps its per-MB term alone.
#[test]
fn a_model_fitted_on_one_block_size_scales_its_fixed_terms_by_the_bytes() {
    let meta = |per_mb: f64, ref_bytes: u64| {
        serde_json::json!({"models": [{
            "point": "p", "overhead_mean_ms": 10.0, "transfer_ms": 800.0,
            "ref_bytes": ref_bytes, "block_bytes": 8_000_000u64,
            "reduce_base_ms": 1.0, "reduce_ms_per_mb": 2.0,
            "cost": {"base_ms": 4000.0, "per_source_ms": 400.0, "per_reader_ms": 200.0,
                     "per_mb_ms": per_mb}
        }]})
    };
    let one = Model::from_meta(&meta(0.0, 0), None).unwrap();
    assert_eq!(one.remote.ref_bytes, 8_000_000);
    assert_eq!(one.ref_bytes, 8_000_000, "the fair-share transfer's too");
    assert_eq!(one.remote.extra_ms(0, 0, 1_000_000), 500);
    assert_eq!(one.remote.extra_ms(1, 1, 8_000_000), 4600);
    let sized = Model::from_meta(&meta(100.0, 3_000_000), None).unwrap();
    assert_eq!(sized.remote.ref_bytes, 0);
    assert_eq!(sized.remote.extra_ms(0, 0, 1_000_000), 4100);
    // An older calibration without `block_bytes`: fixed, as before.
    let mut old = meta(0.0, 0);
    old["models"][0]
        .as_object_mut()
        .unwrap()
        .remove("block_bytes");
    let old = Model::from_meta(&old, None).unwrap();
    assert_eq!(old.remote.extra_ms(0, 0, 1_000_000), 4000);
}

/// Terms fitted on 2 MB reads: a 1 MB read costs half, a read of unknown
/// size (0 bytes) the fitted extra; a per-MB term is the fit's own size
/// term, with no scaling on top.
#[test]
fn fixed_terms_given_their_block_size_scale_by_each_reads_bytes() {
    let scaled = RemoteCost {
        base_ms: 500.0,
        per_source_ms: 300.0,
        per_reader_ms: 100.0,
        per_mb_ms: 0.0,
        ref_bytes: 2_000_000,
    };
    assert_eq!(scaled.extra_ms(1, 1, 1_000_000), 450);
    assert_eq!(scaled.extra_ms(1, 1, 0), 900);
    assert_eq!(
        scaled.formula(),
        "(500 + 300 n_src + 100 n_dst) x bytes / 2.000 MB"
    );
    let per_mb = RemoteCost {
        per_mb_ms: 100.0,
        ..scaled
    };
    assert_eq!(per_mb.extra_ms(0, 0, 1_000_000), 600);
}

#[test]
fn over_the_network_a_reduce_runs_the_typical_term_and_carries_its_output_share() {
    let mut p = plan();
    p.jobs[1].output_bytes = 600_000;
    let mut m = model();
    let mut s = shape(10);
    s.shuffle_net = Some(ShuffleNet {
        link_bpms: 1_250.0,
        extra_copies: 1,
    });
    // A calibration without the typical term: the fit, as before.
    let r = &replay_jobs(&p, &s, &m, 1)[1].reduces;
    assert_eq!((r[0].local_ms, r[0].bytes), (3_010, 300_000));
    // With it: 10 + 1800 x 1.5 ms; each reduce writes half the output.
    m.reduce_typical_ms_per_mb = Some(1_800.0);
    let r = &replay_jobs(&p, &s, &m, 1)[1].reduces;
    assert_eq!((r[0].local_ms, r[0].bytes), (2_710, 300_000));
    assert_eq!(cluster(&s, 1).shuffle_net, s.shuffle_net);
    // Without the network the typical term is not used.
    s.shuffle_net = None;
    assert_eq!(replay_jobs(&p, &s, &m, 1)[1].reduces[0].local_ms, 3_010);
}
