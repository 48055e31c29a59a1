//! The least-squares fits of the calibration: a remote read's cost
//! (source and reader terms, and per MB where blocks differ), a reduce's
//! time, the fair-share transfer time.

use super::{Cost, PointModel, Sample};
use crate::replay::{RemoteModel, ReplayJob, ReplayOutcome};
use base::JobId;
use std::collections::BTreeMap;

/// The fair-share transfer time (ms alone) at which the simulated runs'
/// remote maps take, on average, as much longer than their local time as
/// the measured ones did: bisection (the simulated extra grows with it).
/// 0 when no measured map read remotely.
pub fn fit_transfer<S, E>(
    setups: &[&S],
    m: &PointModel,
    simulate: &impl Fn(&S, &PointModel, RemoteModel) -> Result<(ReplayOutcome, Vec<ReplayJob>), E>,
) -> Result<f64, E> {
    let target = m.remote_extra_mean_ms;
    if m.remote_attempts == 0 || target.is_nan() || target <= 0.0 {
        return Ok(0.0);
    }
    // Mean simulated extra of the remote maps at transfer time `t`.
    let extra = |t: f64| -> Result<Option<f64>, E> {
        let (mut sum, mut n) = (0.0, 0usize);
        for s in setups {
            let remote = RemoteModel::FairShare {
                transfer_ms: t,
                ref_bytes: m.ref_bytes,
            };
            let (out, jobs) = simulate(s, m, remote)?;
            let local: BTreeMap<(JobId, u32), u64> = jobs
                .iter()
                .flat_map(|j| j.tasks.iter().map(move |x| ((j.id, x.index), x.local_ms)))
                .collect();
            for r in out.runs.iter().filter(|r| r.is_remote()) {
                let l = local.get(&(r.task.job, r.task.index)).copied().unwrap_or(0);
                sum += (r.end_ms - r.start_ms) as f64 - l as f64;
                n += 1;
            }
        }
        Ok((n > 0).then(|| sum / n as f64))
    };
    let (mut lo, mut hi) = (0.0f64, target.max(1.0));
    // Widen until the simulated extra reaches the measured one.
    for _ in 0..8 {
        match extra(hi)? {
            Some(e) if e >= target => break,
            _ => {
                lo = hi;
                hi *= 2.0;
            }
        }
    }
    for _ in 0..14 {
        let mid = (lo + hi) / 2.0;
        match extra(mid)? {
            Some(e) if e >= target => hi = mid,
            _ => lo = mid,
        }
    }
    Ok((lo + hi) / 2.0)
}

/// The typical reduce's ms per MB over `base` (clamped at 0): the median
/// over the reduces (samples of time, -, MB) that fetched at least 0.1 MB,
/// so the few the network made slower do not weigh in. 0: none did.
pub fn typical_per_mb(samples: &[Sample], base: f64) -> f64 {
    let base = base.max(0.0);
    let v: Vec<f64> = samples
        .iter()
        .filter(|s| s.2 >= 0.1)
        .map(|s| (s.0 - base) / s.2)
        .collect();
    if v.is_empty() {
        return 0.0;
    }
    median_range(v).0
}

/// (median, min, max) of `v` (NaN without any).
pub fn median_range(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (med, v[0], v[n - 1])
}

/// Least squares of extra ~ base + a n_src + b n_dst (`source`), or
/// extra ~ base + b n_dst. With too few distinct samples, the mean.
pub fn fit(samples: &[Sample], source: bool) -> Cost {
    let k = if source { 3 } else { 2 };
    let row = |s: &Sample| -> Vec<f64> {
        if source {
            vec![1.0, s.1, s.2]
        } else {
            vec![1.0, s.2]
        }
    };
    let mut a = vec![vec![0.0; k + 1]; k];
    for s in samples {
        let x = row(s);
        for i in 0..k {
            for j in 0..k {
                a[i][j] += x[i] * x[j];
            }
            a[i][k] += x[i] * s.0;
        }
    }
    let beta = solve(a).unwrap_or_else(|| {
        let mean = samples.iter().map(|s| s.0).sum::<f64>() / samples.len().max(1) as f64;
        let mut b = vec![0.0; k];
        b[0] = if mean.is_finite() { mean } else { 0.0 };
        b
    });
    let (base, ps, pr) = if source {
        (beta[0], beta[1], beta[2])
    } else {
        (beta[0], 0.0, beta[1])
    };
    let sse: f64 = samples
        .iter()
        .map(|s| (s.0 - (base + ps * s.1 + pr * s.2)).powi(2))
        .sum();
    Cost {
        base_ms: base,
        per_source_ms: ps,
        per_reader_ms: pr,
        per_mb_ms: 0.0,
        rmse_ms: (sse / samples.len().max(1) as f64).sqrt(),
        ref_bytes: 0,
    }
}

/// Whether blocks of these sizes differ by more than 1% of their mean.
pub fn sizes_differ(mbs: &[f64]) -> bool {
    let mean = mbs.iter().sum::<f64>() / mbs.len().max(1) as f64;
    let (lo, hi) = mbs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    mbs.len() > 1 && mean > 0.0 && (hi - lo) > 0.01 * mean
}

/// The source+reader fit with a term per MB of the block read when the
/// reads differ in size (`mbs`, in `samples`' order): least squares of
/// extra ~ base + a n_src + b n_dst + c MB. Blocks all of one size: the
/// MB term is the base's twin, so [`fit`] as it is.
pub fn fit_sized(samples: &[Sample], mbs: &[f64]) -> Cost {
    if !sizes_differ(mbs) {
        return fit(samples, true);
    }
    let mut a = vec![vec![0.0; 5]; 4];
    for (s, &mb) in samples.iter().zip(mbs) {
        let x = [1.0, s.1, s.2, mb];
        for i in 0..4 {
            for j in 0..4 {
                a[i][j] += x[i] * x[j];
            }
            a[i][4] += x[i] * s.0;
        }
    }
    let Some(b) = solve(a) else {
        return fit(samples, true);
    };
    let sse: f64 = samples
        .iter()
        .zip(mbs)
        .map(|(s, &mb)| (s.0 - (b[0] + b[1] * s.1 + b[2] * s.2 + b[3] * mb)).powi(2))
        .sum();
    Cost {
        base_ms: b[0],
        per_source_ms: b[1],
        per_reader_ms: b[2],
        per_mb_ms: b[3],
        rmse_ms: (sse / samples.len().max(1) as f64).sqrt(),
        ref_bytes: 0,
    }
}

/// Gaussian elimination with partial pivoting on an augmented k x (k+1)
/// matrix; `None` if singular.
pub fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    for c in 0..k {
        let p = (c..k).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))?;
        if a[p][c].abs() < 1e-9 {
            return None;
        }
        a.swap(c, p);
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i]).collect())
}

/// (mean, min, max) of `v`.
pub fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}
