use super::*;

#[test]
fn the_per_job_error_spread_is_relative_and_nearest_rank() {
    // Errors 0, 0.1, ..., 0.9: one job per 10% step.
    let pairs: Vec<(f64, f64)> = (0..10).map(|i| (10.0, 10.0 + i as f64)).collect();
    let e = error_spread(pairs).unwrap();
    assert_eq!(e.jobs, 10);
    assert!((e.mean - 0.45).abs() < 1e-12, "{e:?}");
    assert!((e.median - 0.45).abs() < 1e-12, "{e:?}");
    assert!((e.p90 - 0.8).abs() < 1e-12, "{e:?}");
    // Under- and over-predictions count alike; unmeasured jobs not at all.
    let e = error_spread([(4.0, 2.0), (4.0, 6.0), (0.0, 1.0), (f64::NAN, 1.0)]).unwrap();
    assert_eq!((e.jobs, e.mean, e.median, e.p90), (2, 0.5, 0.5, 0.5));
    assert_eq!(error_spread([(0.0, 1.0)]), None);
    let odd = error_spread([(1.0, 1.0), (1.0, 3.0), (1.0, 1.5)]).unwrap();
    assert_eq!((odd.median, odd.p90), (0.5, 2.0));
    // In seconds: a tiny job's large relative error is a small one.
    let s = seconds_spread([(0.1, 0.3), (10.0, 9.0), (0.0, 1.0)]).unwrap();
    assert_eq!((s.jobs, s.median, s.p90), (2, 0.6, 1.0));
    assert!((s.mean - 0.6).abs() < 1e-12);
    // Two jobs that swap places: 100% and 50% off job by job, exact
    // rank by rank.
    let job = |rep: u32, name: &str, m: f64, p: f64| PredictedJob {
        point: "p".into(),
        scheduler: "s".into(),
        rep,
        model: "source+reader".into(),
        job: name.into(),
        measured_jct_s: m,
        predicted_jct_s: p,
    };
    let jobs = [
        job(0, "job-1", 1.0, 2.0),
        job(0, "job-2", 2.0, 1.0),
        job(1, "job-1", 4.0, 5.0),
    ];
    let by_job = error_spread(jobs.iter().map(|j| (j.measured_jct_s, j.predicted_jct_s)));
    assert_eq!(by_job.unwrap().median, 0.5);
    let ranked = rank_pairs(&jobs);
    assert_eq!(
        ranked,
        [(1.0, 1.0), (2.0, 2.0), (4.0, 5.0)],
        "pairs within a run only"
    );
}

#[test]
fn the_fit_recovers_a_linear_cost() {
    let samples: Vec<Sample> = (0..4)
        .flat_map(|a| (0..4).map(move |b| (a as f64, b as f64)))
        .map(|(a, b)| (500.0 + 300.0 * a + 100.0 * b, a, b))
        .collect();
    let c = fit(&samples, true);
    assert!((c.base_ms - 500.0).abs() < 1e-6, "{c:?}");
    assert!((c.per_source_ms - 300.0).abs() < 1e-6, "{c:?}");
    assert!((c.per_reader_ms - 100.0).abs() < 1e-6, "{c:?}");
    assert!(c.rmse_ms < 1e-6);
    // Without its source term, the fit is worse.
    let r = fit(&samples, false);
    assert_eq!(r.per_source_ms, 0.0);
    assert!(r.rmse_ms > 100.0, "{r:?}");
    // One distinct point: the mean.
    let one = fit(&[(700.0, 1.0, 1.0), (900.0, 1.0, 1.0)], true);
    assert!((one.base_ms - 800.0).abs() < 1e-6 && one.per_source_ms == 0.0);
    // Blocks of different sizes: the per-MB term too.
    let mbs: Vec<f64> = (0..samples.len()).map(|i| (i % 3) as f64 * 0.5).collect();
    let sized: Vec<Sample> = samples
        .iter()
        .zip(&mbs)
        .map(|(s, mb)| (s.0 + 2_000.0 * mb, s.1, s.2))
        .collect();
    let c = fit_sized(&sized, &mbs);
    assert!((c.per_mb_ms - 2_000.0).abs() < 1e-6, "{c:?}");
    assert!(
        (c.base_ms - 500.0).abs() < 1e-6 && c.rmse_ms < 1e-6,
        "{c:?}"
    );
    // All of one size: exactly the fit without it.
    let same = fit_sized(&samples, &vec![8.0; samples.len()]);
    assert_eq!(
        (same.base_ms, same.per_mb_ms),
        (fit(&samples, true).base_ms, 0.0)
    );
}

#[test]
fn the_typical_reduce_term_is_the_median_and_the_network_bound_tail_does_not_move_it() {
    // Reduces of 1 MB at 2,000 ms plus a base of 10 ms, and a few the
    // network made 3x slower: the least-squares slope moves, the median
    // does not. Reduces under 0.1 MB are left out.
    let mut samples: Vec<Sample> = (1..=9)
        .map(|i| (10.0 + 2_000.0 * f64::from(i) / 3.0, 0.0, f64::from(i) / 3.0))
        .collect();
    samples.push((10.0 + 6_000.0 * 3.0, 0.0, 3.0));
    samples.push((10.0 + 6_000.0 * 2.0, 0.0, 2.0));
    samples.push((500.0, 0.0, 0.01));
    assert!((typical_per_mb(&samples, 10.0) - 2_000.0).abs() < 1e-6);
    assert!(fit(&samples, false).per_reader_ms > 2_500.0);
    // A negative base counts as none; an even count takes the middle two.
    let even = [(1_000.0, 0.0, 1.0), (3_000.0, 0.0, 1.0)];
    assert!((typical_per_mb(&even, -50.0) - 2_000.0).abs() < 1e-6);
    assert_eq!(typical_per_mb(&[(5.0, 0.0, 0.05)], 0.0), 0.0);
}
