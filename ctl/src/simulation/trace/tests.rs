use super::*;
use lab::swim::TraceShuffle;

fn mode(spec: &Spec) -> TraceShuffle {
    spec.trace.as_ref().map(|t| t.shuffle).unwrap_or_default()
}

#[test]
fn a_spec_without_a_trace_runs_its_own_jobs_at_every_point() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("s.toml");
    std::fs::write(
        &spec,
        r#"
name = "tiny"
seed = 3
repetitions = 2
schedulers = ["hadoop", { label = "DELAY6", scheduler = "policy = 'delay', threshold_s = 3" }]
[cluster]
workers = 8
slots = 2
replication = 2
heartbeat_ms = 1500
out_of_band_heartbeat = false
[background]
duration_s = [1, 6]
initial = 0.5
[data]
files = 1
blocks = 10
block_size = "1MiB"
[jobs]
count = 6
workload = "input-sink"
arrival_s = [0, 4]
task_time_s = [1, 6]
[[points]]
label = "one-file"
[[points]]
label = "three-files"
files = 3
jobs = 9
"#,
    )
    .unwrap();
    let cal = root.join("results/dyndl-real/20261124-173842/calibration");
    let opts = TraceOptions {
        point: Some("64MB-50".into()),
        ..TraceOptions::at(Some(40), Some(3))
    };
    let (table, runs) = run(&spec, &cal, &opts).unwrap();
    // 2 points x 2 schedulers x 2 seeds; every map of every job ran.
    assert_eq!(runs.len(), 8, "{table}");
    for r in &runs {
        let jobs = if r.point == "one-file" { 6 } else { 9 };
        assert_eq!(r.maps, jobs * 10, "{r:?}");
        // Each map computes at least 1 s.
        assert!(r.makespan_s >= 1.0 && r.mean_jct_s > 1.0, "{r:?}");
    }
    assert!(
        table.contains("| three-files | 9 | 90 | DELAY6 |"),
        "{table}"
    );
    assert!(table.contains("40 workers x 3 slots"), "{table}");
    assert!(table.contains("each map computing U[1, 6] s"), "{table}");
    assert!(table.contains("610 + 81 n_src + 33 n_dst"), "{table}");
    // On 40 workers with 20 holders at most, hadoop reads remotely more
    // than DELAY6, which waits.
    let remote = |s: &str| -> usize {
        runs.iter()
            .filter(|r| r.scheduler == s)
            .map(|r| r.remote)
            .sum()
    };
    assert!(remote("hadoop") > remote("DELAY6"), "{table}");
    // The calibration's fair-share transfer instead of the fixed extra.
    let fair_opts = TraceOptions {
        fair_share: true,
        ..opts.clone()
    };
    let (fair, fair_runs) = run(&spec, &cal, &fair_opts).unwrap();
    assert!(fair.contains("a transfer of 273 ms alone"), "{fair}");
    assert_eq!(fair_runs.len(), 8);
    assert!(fair_runs.iter().all(|r| r.mean_jct_s > 1.0));
    // The plan: job i reads file i mod files, arrivals in the window.
    let (parsed, _) = Spec::load(&spec).unwrap();
    let points = parsed.points().unwrap();
    let none = BTreeMap::new();
    let plan = synthetic_plan(&parsed, &points[1], 3, &none).unwrap();
    assert_eq!(plan.files.len(), 3);
    let files: Vec<usize> = plan.jobs.iter().map(|j| j.file).collect();
    assert_eq!(files, [0, 1, 2, 0, 1, 2, 0, 1, 2]);
    assert!(plan.jobs.iter().all(|j| j.arrival_ms <= 4_000));
    assert_ne!(
        synthetic_plan(&parsed, &points[1], 4, &none).unwrap().jobs[8].arrival_ms,
        plan.jobs[8].arrival_ms
    );
    // A mix with reduces needs the shuffle the calibration measured:
    // dyndl-real's input-sink runs had none, and the error says so.
    std::fs::write(
        &spec,
        r#"
name = "tiny-mix"
seed = 3
schedulers = ["hadoop"]
[cluster]
workers = 8
slots = 2
replication = 2
[data]
block_size = "1MiB"
[jobs]
count = 3
arrival_s = [0, 4]
mix = [
    { workload = "wordcount", count = 2, maps = 3, reduces = 1 },
    { workload = "input-sink", count = 1, maps = 2 },
]
"#,
    )
    .unwrap();
    let e = format!(
        "{:#}",
        run(
            &spec,
            &cal,
            &TraceOptions {
                point: Some("64MB-50".into()),
                ..Default::default()
            }
        )
        .unwrap_err()
    );
    assert!(
        e.contains("measured no shuffle for wordcount (it has none)"),
        "{e}"
    );
    // With a ratio: each job its own file of its class's maps, in the
    // runner's seeded order, shuffling its input x the ratio.
    let (parsed, _) = Spec::load(&spec).unwrap();
    let points = parsed.points().unwrap();
    let ratio = BTreeMap::from([("wordcount".to_owned(), 0.25)]);
    let plan = synthetic_plan(&parsed, &points[0], 3, &ratio).unwrap();
    let order = crate::experiment::run::mix_order(&parsed.jobs.mix, 3);
    assert_eq!(plan.jobs.len(), 3);
    for (i, (j, c)) in plan.jobs.iter().zip(&order).enumerate() {
        assert_eq!((j.file, j.workload, j.reduces), (i, c.workload, c.reduces));
        assert_eq!(plan.files[i].blocks, c.maps);
        let want = if c.reduces.is_some() {
            3 * (1 << 20) / 4
        } else {
            0
        };
        assert_eq!(j.shuffle_bytes, want, "{j:?}");
    }
}

#[test]
fn a_calibration_folder_gives_its_points_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("meta.json"),
        r#"{"models": [{"point": "p1", "overhead_mean_ms": 99.6, "reduce_base_ms": 1.0,
                "reduce_ms_per_mb": 2.0, "cost": {"base_ms": 3.0, "per_source_ms": 4.0,
                "per_reader_ms": 5.0, "per_mb_ms": 6.0, "rmse_ms": 0.0}},
               {"point": "p2", "overhead_mean_ms": 1.0, "reduce_base_ms": 1.0,
                "reduce_ms_per_mb": 2.0, "cost": {"base_ms": 3.0, "per_source_ms": 4.0,
                "per_reader_ms": 5.0, "rmse_ms": 0.0}},
               {"point": "p3", "overhead_mean_ms": 1.0, "reduce_base_ms": 1.0,
                "reduce_ms_per_mb": 2.0, "cost": {"base_ms": 3.0, "per_source_ms": 4.0,
                "per_reader_ms": 5.0, "rmse_ms": 0.0}, "transfer_ms": 250.0,
                "ref_bytes": 0, "block_bytes": 1048576}]}"#,
    )
    .unwrap();
    let m = read_model(dir.path(), None).unwrap();
    assert_eq!(
        (m.point.as_str(), m.overhead_ms, m.remote.per_mb_ms),
        ("p1", 100, 6.0)
    );
    let m = read_model(dir.path(), Some("p2")).unwrap();
    assert_eq!(
        m.remote.per_mb_ms, 0.0,
        "an older calibration: no per-MB term"
    );
    assert_eq!(m.ref_bytes, 0, "an older calibration: every block alike");
    let m = read_model(dir.path(), Some("p3")).unwrap();
    assert_eq!(
        (m.transfer_ms, m.ref_bytes),
        (Some(250.0), 1 << 20),
        "one block size fitted: transfers scale from it"
    );
    let e = read_model(dir.path(), Some("p4")).unwrap_err().to_string();
    assert!(e.contains("no point p4 (points: p1, p2, p3)"), "{e}");
    let e = read_model(&dir.path().join("nope"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("a `master sim calibrate` folder"), "{e}");
}

#[test]
fn the_shipped_trace_spec_runs_at_a_larger_scale_with_its_calibration() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cal = shipped_swim_calibration(&root).expect("a calibrated swim-hour folder is shipped");
    let spec = root.join("experiments/swim-hour.toml");
    let (table, runs) = run(&spec, &cal, &TraceOptions::at(Some(30), None)).unwrap();
    // 5 schedulers x 3 seeds, every job of the hour run.
    assert_eq!(runs.len(), 15, "{table}");
    assert!(table.contains("30 workers x 2 slots"), "{table}");
    let maps = runs[0].maps;
    assert!(maps > 500 && runs.iter().all(|r| r.maps == maps), "{table}");
    assert!(runs
        .iter()
        .all(|r| r.mean_jct_s > 0.0 && r.makespan_s >= r.mean_jct_s));
    // Locality tells the policies apart: hadoop reads remote, delay
    // scheduling waits.
    let remote = |s: &str| {
        runs.iter()
            .filter(|r| r.scheduler == s)
            .map(|r| r.remote)
            .sum::<usize>()
    };
    assert!(remote("hadoop") > 3 * remote("delay1.5"), "{table}");
    // swim-hour ran wordcount, and its calibration (regenerated since the
    // ratio is kept) measured what wordcount shuffles: that is charged,
    // with no note that the trace's bytes stood in for it.
    assert!(!table.contains("predates it"), "{table}");

    // A tenth of the workers ten times slower: the hour's jobs wait on
    // their stragglers; speculation gives them backups, which win, and
    // every policy's jobs end sooner.
    let slow = TraceOptions {
        slow: Some("0.1:10".parse().unwrap()),
        ..TraceOptions::at(Some(30), None)
    };
    let (slow_table, slow_runs) = run(&spec, &cal, &slow).unwrap();
    assert!(slow_table.contains("3 workers (10%)"), "{slow_table}");
    let spec_opts = TraceOptions {
        speculate: true,
        ..slow
    };
    let (spec_table, spec_runs) = run(&spec, &cal, &spec_opts).unwrap();
    assert!(
        spec_table.contains("speculative execution on"),
        "{spec_table}"
    );
    let mean = |runs: &[TraceRun], s: &str| {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r.scheduler == s)
            .map(|r| r.mean_jct_s)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    for s in ["hadoop", "delay1.5"] {
        let (base, off, on) = (mean(&runs, s), mean(&slow_runs, s), mean(&spec_runs, s));
        eprintln!("{s}: mean JCT {base:.2} s; slow workers {off:.2} s, with speculation {on:.2} s");
        assert!(off > base && on < off, "{s}: {base} {off} {on}");
    }
    assert!(slow_runs.iter().all(|r| r.backups == 0));
    assert!(
        spec_runs
            .iter()
            .all(|r| r.backups > 0 && r.backups_won > 0 && r.backups_won <= r.backups),
        "{spec_table}"
    );
}

/// What `sim trace` charges a job's reduces is what the real replay moves:
/// the trace's scaled bytes for synthetic jobs, wordcount's measured ratio
/// of the job's file under `shuffle = "wordcount"`, and the trace's bytes,
/// said in a note, when the calibration has no such ratio.
#[test]
fn a_trace_job_is_charged_the_shuffle_its_replay_moves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("experiments/swim-hour.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let wordcount = Spec::parse(&text, &path).unwrap();
    let trace = Spec::parse(&text.replace("shuffle = \"wordcount\"", ""), &path).unwrap();
    let plan = wordcount.trace_plan(1 << 20).unwrap().unwrap();
    let synthetic = trace.trace_plan(1 << 20).unwrap().unwrap();
    let ratio: BTreeMap<String, f64> = [("wordcount".to_owned(), 0.2)].into();
    let mut notes = Vec::new();
    let as_trace = charged(mode(&trace), &synthetic, &ratio, &mut notes);
    assert_eq!(as_trace, synthetic);
    let as_wordcount = charged(mode(&wordcount), &plan, &ratio, &mut notes);
    assert!(notes.is_empty(), "{notes:?}");
    let mut shuffling = 0;
    for (j, w) in plan.jobs.iter().zip(&as_wordcount.jobs) {
        let f = &plan.files[j.file];
        if j.reduces.is_some() {
            let stored = (f.block_bytes * u64::from(f.blocks)) as f64;
            assert_eq!(w.shuffle_bytes, (0.2 * stored).round() as u64, "{}", j.id);
            shuffling += 1;
        } else {
            assert_eq!(w.shuffle_bytes, 0, "{}", j.id);
        }
    }
    assert!(shuffling > 100, "{shuffling}");
    let fallback = charged(mode(&wordcount), &plan, &BTreeMap::new(), &mut notes);
    assert_eq!(fallback, plan);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("the trace's scaled shuffle bytes"),
        "{notes:?}"
    );
}

#[test]
fn the_network_shuffle_needs_a_nic_rate_and_the_typical_reduce_term() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("s.toml");
    let write = |nic: &str| {
        let text = format!(
            "name = \"tiny-net\"\nseed = 3\nschedulers = [\"hadoop\"]\n[cluster]\nworkers = 4\n\
             slots = 2\nreplication = 2\n{nic}\n[data]\nblock_size = \"1MiB\"\n\
             [jobs]\ncount = 2\nmix = [{{ workload = \"wordcount\", count = 2, maps = 4, reduces = 2 }}]\n"
        );
        std::fs::write(&spec, text).unwrap();
    };
    let cal = root.join("results/dyndl-real/20261124-173842/calibration");
    let opts = TraceOptions {
        point: Some("64MB-50".into()),
        shuffle: ShuffleModel::Network,
        ..TraceOptions::at(Some(4), None)
    };
    let auto = TraceOptions {
        shuffle: ShuffleModel::Auto,
        ..opts.clone()
    };
    let fitted = TraceOptions {
        shuffle: ShuffleModel::Fitted,
        ..opts.clone()
    };
    let err = |cal: &Path| format!("{:#}", run(&spec, cal, &opts).unwrap_err());
    // The calibration with a wordcount shuffle ratio, without (`cal1`)
    // and with (`cal2`) the typical reduce term.
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cal.join("meta.json")).unwrap()).unwrap();
    let copy = |meta: &serde_json::Value, name: &str| {
        let c = dir.path().join(name);
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(c.join("meta.json"), meta.to_string()).unwrap();
        c
    };
    for m in meta["models"].as_array_mut().unwrap() {
        m["shuffle_ratio"] = serde_json::json!({"wordcount": 0.5});
    }
    let cal1 = copy(&meta, "cal1");
    for m in meta["models"].as_array_mut().unwrap() {
        m["reduce_typical_ms_per_mb"] = 50.0.into();
    }
    let cal2 = copy(&meta, "cal2");
    // The default falls back to the fitted term where the links cannot
    // carry the shuffle, and its notes say why; --network-shuffle refuses.
    let fell_back = |cal: &Path, why: &str| {
        let (table, _) = run(&spec, cal, &auto).unwrap();
        assert!(
            table.contains("took the calibration's fitted term")
                && table.contains(why)
                && table.contains("(the fitted term)"),
            "{table}"
        );
    };
    write("");
    let e = err(&cal);
    assert!(
        e.contains("--network-shuffle: point") && e.contains("has no NIC rate"),
        "{e}"
    );
    fell_back(&cal2, "has no NIC rate");
    // With a NIC: that calibration was made before the typical term.
    write("nic_mbps = 80");
    let e = err(&cal);
    assert!(e.contains("no typical reduce term"), "{e}");
    fell_back(&cal1, "no typical reduce term");
    // With the term and a shuffle ratio it runs, and the table says how
    // its reduces were timed.
    let (table, runs) = run(&spec, &cal2, &opts).unwrap();
    assert_eq!(runs.len(), 1, "{table}");
    assert!(
        table.contains("over 80 Mbit/s links")
            && table.contains("to 1 more replica (on workers picked"),
        "{table}"
    );
    // There the default is the shuffle over the links, run for run, and
    // --fitted-reduce the fitted term, which times the reduces otherwise.
    let (auto_table, auto_runs) = run(&spec, &cal2, &auto).unwrap();
    assert!(
        auto_table.contains("over 80 Mbit/s links") && !auto_table.contains("(the fitted term)"),
        "{auto_table}"
    );
    let jct = |r: &[TraceRun]| r.iter().map(|r| r.mean_jct_s).collect::<Vec<_>>();
    assert_eq!(jct(&auto_runs), jct(&runs));
    let (fit_table, fit_runs) = run(&spec, &cal2, &fitted).unwrap();
    assert!(
        fit_table.contains("(the fitted term)")
            && !fit_table.contains("links shared")
            && !fit_table.contains("took the calibration's fitted term"),
        "{fit_table}"
    );
    assert_ne!(jct(&fit_runs), jct(&runs), "{fit_table}\n{table}");
}
