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
