use super::*;

#[test]
fn a_folder_without_models_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_models(dir.path()).unwrap_err().to_string();
    assert!(e.contains("no models.json.gz"), "{e}");
    assert_eq!(
        Fit::From(
            PathBuf::from("results/scale-dyndl-8/20261126-000000/calibration"),
            None
        )
        .folder(),
        "calibration-from-scale-dyndl-8"
    );
    assert_eq!(
        Fit::From(
            PathBuf::from("results/scale-dyndl-8/20261126-000000/calibration"),
            Some("512MB".into())
        )
        .folder(),
        "calibration-from-scale-dyndl-8-512MB"
    );
}

#[test]
fn pacing_gives_a_map_its_inputs_time() {
    // 1 MiB at 0.5 MB/s: 2.1 s; a 4 KiB block: 8 ms; no pacing: none.
    assert_eq!(pacing_ms(1 << 20, 0.5), 2097);
    assert_eq!(pacing_ms(4096, 0.5), 8);
    assert_eq!(pacing_ms(1 << 20, 0.0), 0);
    assert_eq!(pacing_ms(1 << 20, f64::NAN), 0);
}

#[test]
fn heartbeat_phase_and_period_are_fitted_from_launches() {
    let row = |w: &str, start_s: f64| TaskRow {
        point: "p".into(),
        scheduler: "s".into(),
        rep: 0,
        job: "job-1".into(),
        job_name: "j0".into(),
        arrival_s: 0.0,
        task: 0,
        kind: "map".into(),
        attempt: 0,
        worker: w.into(),
        slot: 0,
        locality: "local".into(),
        source: w.into(),
        start_s,
        end_s: start_s + 1.0,
        input_bytes: 0,
        remote_bytes: 0,
        ok: true,
        error: String::new(),
    };
    // w1 launches at heartbeats 0, 1, 3 and 4 of a 1.51 s period from
    // 1.4 s (two launches at the first); w2 once at 0.7 s.
    let rows = [
        row("w1", 1.400),
        row("w1", 1.402),
        row("w1", 2.910),
        row("w1", 5.930),
        row("w1", 7.440),
        row("w2", 0.7),
    ];
    let refs: Vec<&TaskRow> = rows.iter().collect();
    let (phase, period) = heartbeats(&refs, 3, 1_500).unwrap();
    assert!((period[0] - 1_510.0).abs() < 0.5, "{period:?}");
    assert!((phase[0] as i64 - 1_400).abs() <= 1, "{phase:?}");
    assert_eq!((phase[1], period[1]), (700, 1_500.0));
    assert_eq!((phase[2], period[2]), (0, 1_500.0));
}

#[test]
fn names_must_be_the_runners() {
    assert_eq!(worker_id("w3").unwrap(), WorkerId(2));
    assert!(worker_id("w0").is_err());
    assert!(worker_id("node3").is_err());
    assert_eq!(job_number("j17").unwrap(), 17);
    assert!(job_number("wc").unwrap_err().to_string().contains("\"wc\""));
}

#[test]
fn a_runs_recorded_heartbeats_line_up_with_its_launches() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/scale-dyndl-onefile-16/20261128-020832");
    let tasks: Vec<TaskRow> = read_csv(&dir.join("tasks.csv")).unwrap();
    let key: RunKey = ("512MB".into(), "DELAY3".into(), 0);
    let maps: Vec<&TaskRow> = tasks
        .iter()
        .filter(|t| (&t.point, &t.scheduler, t.rep) == (&key.0, &key.1, key.2))
        .filter(|t| t.kind == "map" && t.ok)
        .collect();
    assert!(maps.len() > 100);
    let record = recorded::read(&dir, &key, &maps).unwrap();
    let beats = &record.beats;
    // In the master's order, its clock never going back.
    assert!(beats.windows(2).all(|p| p[0].0 <= p[1].0));
    // Every launch came at a heartbeat of its worker, and the worker
    // started it then or later (its start in tasks.csv is the worker's:
    // never before the master's decision, mostly within a few ms).
    let mut lags: Vec<u64> = maps
        .iter()
        .map(|t| {
            let (s, w) = (ms(t.start_s), worker_id(&t.worker).unwrap().0);
            let at = beats
                .iter()
                .filter(|&&(b, bw)| bw == w && b <= s + 1)
                .map(|&(b, _)| b)
                .max()
                .unwrap_or_else(|| {
                    panic!(
                        "{} task {}: no heartbeat of {} before it",
                        t.job, t.task, t.worker
                    )
                });
            s + 1 - at
        })
        .collect();
    lags.sort_unstable();
    assert!(
        lags[lags.len() / 2] <= 5,
        "median lag {} ms",
        lags[lags.len() / 2]
    );
    // Each map read its block from a holder the record names, and its
    // job arrived when tasks.csv says (within a ms).
    for t in &maps {
        let job = JobId(t.job.strip_prefix("job-").unwrap().parse().unwrap());
        let holders = &record.replicas[&(job, t.task)];
        assert!(
            holders.contains(&worker_id(&t.source).unwrap()),
            "{} task {}",
            t.job,
            t.task
        );
        assert!(
            record.arrivals[&job].abs_diff(ms(t.arrival_s)) <= 1,
            "{}",
            t.job
        );
    }
    // A run without a record is named, with what the option needs.
    let e = recorded::read(&dir, &("512MB".into(), "DELAY3".into(), 9), &maps)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("512MB-DELAY3-r9.record.json.gz") && e.contains("decisions = true"),
        "{e}"
    );
}

#[test]
fn the_disk_term_keeps_the_pacing_floor_and_reduces_load_the_disk() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/eas-table1-headline/20261128-045932");
    let tasks: Vec<TaskRow> = read_csv(&dir.join("tasks.csv")).unwrap();
    let of = |kind: &str| -> Vec<&TaskRow> {
        tasks
            .iter()
            .filter(|t| (t.point.as_str(), t.scheduler.as_str(), t.rep) == ("rep1", "FIFO-BE", 0))
            .filter(|t| t.kind == kind && t.ok)
            .collect()
    };
    let (maps, reduces) = (of("map"), of("reduce"));
    assert!(maps.len() > 100 && !reduces.is_empty());
    // The spec's disk (1 MB/s) and pacing (0.625 MB/s per slot).
    let disk = Some((1.0, 0.625));
    let alone = disk_reads(&maps, &[], disk).unwrap();
    let loaded = disk_reads(&maps, &reduces, disk).unwrap();
    assert_eq!((alone.len(), loaded.len()), (maps.len(), maps.len()));
    for ((t, a), l) in maps.iter().zip(&alone).zip(&loaded) {
        // Never shorter than the pacing floor (in whole ms); the fetches
        // only add.
        assert!(*a >= t.input_bytes as f64 / 625.0 - 0.5, "{a}");
        assert!(*l >= *a - 1e-6, "{l} < {a}");
    }
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    assert!(sum(&loaded) > sum(&alone) * 1.05);
    // Maps sharing their source's disk take longer than alone.
    assert!(alone.iter().any(|a| *a > 2_100_000.0 / 625.0 * 1.2));
    assert!(disk_reads(&maps, &reduces, None)
        .unwrap()
        .iter()
        .all(|r| *r == 0.0));
}

/// One run of a committed SWIM replay that moves the trace's bytes
/// (hour 22, hadoop, first seed) simulated by hour 22's own model, with
/// and without the shuffle over the network: (jobs, outcome) each.
fn hour22_hadoop(network: bool) -> (Vec<ReplayJob>, lab::replay::ReplayOutcome) {
    hour22_hadoop_with(Options {
        network_shuffle: network,
        ..Options::new(Fit::InSample)
    })
}

/// The same run simulated under `opts`.
fn hour22_hadoop_with(opts: Options) -> (Vec<ReplayJob>, lab::replay::ReplayOutcome) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results/swim-hour22-shuffle/20261128-195751");
    let (_, _, spec, schedulers, points) = super::super::run::open_results(&dir).unwrap();
    let runs: Vec<RunRecord> = read_csv(&dir.join("runs.csv")).unwrap();
    let tasks: Vec<TaskRow> = read_csv(&dir.join("tasks.csv")).unwrap();
    let measured = Measured::new(&dir, &spec, &points, &runs, &tasks, &[]).unwrap();
    let key = ("default".to_owned(), "hadoop".to_owned(), 0);
    let keys = vec![&key];
    let replicas = measured.replicas(&keys).unwrap();
    let setups = measured
        .setups(&points[0], &keys, &schedulers, &opts)
        .unwrap();
    let model = &read_models(&dir.join("calibration")).unwrap()["default"];
    let remote = model.models()[0].1;
    measured
        .simulate(&setups[0], model, remote, &replicas, false)
        .map(|(out, jobs)| (jobs, out))
        .unwrap()
}

#[test]
fn over_the_network_a_reduce_waits_for_its_fetch_and_sends_its_copies() {
    let (plain_jobs, plain) = hour22_hadoop(false);
    let (jobs, net) = hour22_hadoop(true);
    let reduce_of = |jobs: &[ReplayJob], r: &lab::replay::TaskRun| {
        let j = jobs.iter().find(|j| j.id == r.task.job).unwrap();
        j.reduces
            .iter()
            .find(|t| t.index == r.task.index)
            .cloned()
            .unwrap()
    };
    // Without it, a reduce lasts the fitted time and sends nothing.
    let plain_reduces: Vec<_> = plain.runs.iter().filter(|r| r.reduce).collect();
    assert!(plain_reduces.len() > 100, "{}", plain_reduces.len());
    for r in &plain_reduces {
        let t = reduce_of(&plain_jobs, r);
        assert_eq!(r.end_ms - r.start_ms, t.local_ms, "{r:?}");
        assert_eq!(t.bytes, 0);
    }
    // With it, a reduce's own time is the typical reduce's (shorter than
    // the fitted one, which holds the network's share), its output the
    // trace's over the job's reduces; it never ends before its own time,
    // and some wait for their fetch and copies.
    let (mut waited, mut writes) = (0, 0);
    for r in net.runs.iter().filter(|r| r.reduce) {
        let t = reduce_of(&jobs, r);
        let fitted = reduce_of(&plain_jobs, r);
        assert!(t.local_ms <= fitted.local_ms, "{t:?} {fitted:?}");
        assert!(r.end_ms - r.start_ms >= t.local_ms, "{r:?} {t:?}");
        waited += usize::from(r.end_ms - r.start_ms > t.local_ms);
        writes += usize::from(t.bytes > 0);
    }
    assert!(waited > 5, "{waited} reduces waited for the network");
    assert!(writes > 100, "{writes} reduces write output");
    // A trace replayed as wordcount records no reduce output: refused.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/swim-hour/20261125-142849");
    let (_, _, spec, _, points) = super::super::run::open_results(&dir).unwrap();
    let tasks: Vec<TaskRow> = read_csv(&dir.join("tasks.csv")).unwrap();
    let measured = Measured::new(&dir, &spec, &points, &[], &tasks, &[]).unwrap();
    let reduce = tasks.iter().find(|t| t.kind == "reduce").unwrap();
    let e = measured.reduce_output(11, reduce).unwrap_err().to_string();
    assert!(
        e.contains("wordcount") && e.contains("shuffle = \"trace\""),
        "{e}"
    );
}

#[test]
fn another_order_draw_reorders_the_woken_heartbeats_of_the_same_run() {
    let placed = |k: u64| {
        let (_, out) = hour22_hadoop_with(Options {
            order_draw: k,
            ..Options::new(Fit::InSample)
        });
        let mut v: Vec<_> = out
            .runs
            .iter()
            .map(|r| {
                let task = (r.task.job.0, r.task.index, r.reduce);
                (task, r.worker.0, r.start_ms, r.end_ms)
            })
            .collect();
        v.sort_unstable();
        v
    };
    let own = placed(0);
    // Draw 0 is the run's own seed, and a draw is the same every time.
    assert_eq!(super::measured::order_seed(11, 0), 11);
    assert_eq!(placed(0), own);
    // Another draw runs the same tasks, some on other workers (the
    // workers an arrival wakes answer in another order).
    let other = placed(1);
    assert_eq!(other.len(), own.len());
    assert!(own.iter().zip(&other).all(|(a, b)| a.0 == b.0));
    let moved = own.iter().zip(&other).filter(|(a, b)| a.1 != b.1).count();
    assert!(moved > 10, "{moved} tasks moved under another draw");
    assert_ne!(
        super::measured::order_seed(11, 1),
        super::measured::order_seed(11, 2)
    );
}
