//! The calibrated simulator's model of a point and how it is fitted: a
//! local map's overhead distribution, a remote read's cost under three
//! models (a fixed extra with source and reader terms, the papers'
//! reader-only one, a fair-share transfer), a reduce's time, and the
//! per-job error measures that judge its predictions. Pure: the
//! command line (`ctl::experiment::calibrate`) reads a results folder into
//! samples, fits them here, and simulates with [`crate::replay`].

use crate::replay::{RemoteCost, RemoteModel};
use serde::Serialize;
use std::collections::BTreeMap;

mod disk;
mod fit;
#[cfg(test)]
mod tests;

pub use crate::replay::{pacing_ms, FETCH_PARALLEL};
pub use disk::{shared_reads, DiskRead, FetchChain};
pub use fit::{
    fit, fit_sized, fit_transfer, median_range, sizes_differ, solve, spread, typical_per_mb,
};

/// One remote attempt for the fit: extra ms over its local time, n_src, n_dst.
pub type Sample = (f64, f64, f64);

/// The fitted model of one point.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PointModel {
    pub point: String,
    /// Local overheads (ms), sorted: the empirical distribution (kept in
    /// `models.json.gz`, not in meta.json).
    /// With the host term, what is left of each after it (may be < 0).
    #[serde(skip)]
    pub overheads: Vec<i64>,
    pub local_attempts: usize,
    pub overhead_mean_ms: f64,
    pub overhead_p10_ms: i64,
    pub overhead_p90_ms: i64,
    /// Host contention: ms per other map launched on the host in the
    /// [`crate::replay::HOST_WINDOW_MS`] before a map (least squares over the
    /// local maps; 0 unless fitted with `host_term`).
    #[serde(default)]
    pub host_ms_per_start: f64,
    pub remote_attempts: usize,
    /// Mean measured extra of a remote map over its local time (ms).
    pub remote_extra_mean_ms: f64,
    /// Source and reader terms.
    pub cost: Cost,
    /// The papers' model: the reader's term only.
    pub cost_reader_only: Cost,
    /// Fair-share transfers: a block read alone takes this long (ms), a
    /// block of `ref_bytes` where the point's remote reads differ in size
    /// (others in proportion; 0: every block alike).
    pub transfer_ms: f64,
    pub ref_bytes: u64,
    /// The mean bytes a map of the point read (its block size): a model
    /// predicting another point whose blocks differ in size by more than
    /// 1% charges its fair-share transfers in proportion (`ref_bytes` set
    /// to this); 0 in models stored before it was kept.
    #[serde(default)]
    pub block_bytes: u64,
    /// Reduces: base + per MB of input (ms), fitted on this many.
    pub reduce_attempts: usize,
    pub reduce_base_ms: f64,
    pub reduce_ms_per_mb: f64,
    /// The typical reduce's ms per MB over the base
    /// ([`fit::typical_per_mb`]): what `sim trace --network-shuffle`
    /// charges a reduce as its own time, the network its slower fetches
    /// (0 in models stored before it was kept).
    #[serde(default)]
    pub reduce_typical_ms_per_mb: f64,
    /// Per workload (`sort`, `wordcount`): the bytes its reduces fetched
    /// over the bytes its maps read, over the point's jobs with reduces
    /// (what a simulated job of a spec's mix shuffles; none for a trace,
    /// whose jobs give their own).
    #[serde(default)]
    pub shuffle_ratio: BTreeMap<String, f64>,
    /// Fitted with the disk term ([`crate::replay::DiskShare`]): the
    /// emulated disk's MB/s and the slot's pacing (MB/s, 0: none) of the
    /// runs it was fitted on. Then a map's overheads leave out its block's
    /// read as the shared disk would have made it (or its pacing floor
    /// where longer), and the remote extra of the fixed models what is
    /// left after that (0: no disk term).
    #[serde(default)]
    pub disk_mbs: f64,
    #[serde(default)]
    pub disk_slot_mbs: f64,
}

/// The remote-read models' names, in the order of [`PointModel::models`]
/// and of the summary's tables.
pub const MODELS: [&str; 3] = ["source+reader", "reader-only", "fair-share"];

impl PointModel {
    /// The remote-read models every run is simulated under, by name.
    pub fn models(&self) -> [(&'static str, RemoteModel); 3] {
        [
            (MODELS[0], RemoteModel::Static(self.cost.remote())),
            (
                MODELS[1],
                RemoteModel::Static(self.cost_reader_only.remote()),
            ),
            (
                MODELS[2],
                RemoteModel::FairShare {
                    transfer_ms: self.transfer_ms,
                    ref_bytes: self.ref_bytes,
                },
            ),
        ]
    }
}

#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize)]
pub struct Cost {
    pub base_ms: f64,
    pub per_source_ms: f64,
    pub per_reader_ms: f64,
    /// Per 10^6 bytes of the block read: fitted only where a point's remote
    /// reads differ in size (a trace's maps), else 0.
    pub per_mb_ms: f64,
    /// Root mean square error of the fit over the remote attempts (ms).
    pub rmse_ms: f64,
    /// Set when a model fitted on one block size predicts reads of
    /// another (`--model-from`): the fitted size, which the terms scale
    /// from by each read's bytes ([`RemoteCost::ref_bytes`]); 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ref_bytes: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Cost {
    pub fn remote(&self) -> RemoteCost {
        RemoteCost {
            base_ms: self.base_ms,
            per_source_ms: self.per_source_ms,
            per_reader_ms: self.per_reader_ms,
            per_mb_ms: self.per_mb_ms,
            ref_bytes: self.ref_bytes,
        }
    }
}

/// One run, measured and predicted under one model.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Prediction {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    /// `source+reader` or `reader-only`.
    pub model: String,
    pub measured_mean_jct_s: f64,
    pub predicted_mean_jct_s: f64,
    pub measured_makespan_s: f64,
    pub predicted_makespan_s: f64,
    pub measured_remote: u32,
    pub predicted_remote: u32,
}

/// One job of one run, measured (`jobs.csv`) and predicted under one model.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PredictedJob {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub model: String,
    pub job: String,
    pub measured_jct_s: f64,
    pub predicted_jct_s: f64,
}

/// The spread of per-job errors: relative, |predicted / measured - 1|, or
/// in seconds, |predicted - measured|.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorSpread {
    pub jobs: usize,
    pub mean: f64,
    pub median: f64,
    /// Nearest-rank 90th percentile.
    pub p90: f64,
}

/// The spread of |predicted / measured - 1| over `(measured, predicted)`
/// pairs with a positive measured value; None without any.
pub fn error_spread(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<ErrorSpread> {
    spread_of(
        pairs
            .into_iter()
            .filter(|(m, p)| *m > 0.0 && m.is_finite() && p.is_finite())
            .map(|(m, p)| (p / m - 1.0).abs())
            .collect(),
    )
}

/// The spread of |predicted - measured| (seconds) over the same pairs as
/// [`error_spread`].
pub fn seconds_spread(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<ErrorSpread> {
    spread_of(
        pairs
            .into_iter()
            .filter(|(m, p)| *m > 0.0 && m.is_finite() && p.is_finite())
            .map(|(m, p)| (p - m).abs())
            .collect(),
    )
}

/// `jobs` paired rank by rank within each run: the k-th shortest measured
/// JCT with the k-th shortest predicted one. Its error is the simulator's
/// error on the distribution of JCTs, leaving out which job got which.
pub fn rank_pairs<'a>(jobs: impl IntoIterator<Item = &'a PredictedJob>) -> Vec<(f64, f64)> {
    // (point, scheduler, rep, model) -> measured and predicted JCTs.
    type Run<'a> = (&'a str, &'a str, u32, &'a str);
    let mut runs: BTreeMap<Run, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for j in jobs {
        let r = runs
            .entry((&j.point, &j.scheduler, j.rep, &j.model))
            .or_default();
        r.0.push(j.measured_jct_s);
        r.1.push(j.predicted_jct_s);
    }
    runs.into_values()
        .flat_map(|(mut m, mut p)| {
            m.sort_by(f64::total_cmp);
            p.sort_by(f64::total_cmp);
            m.into_iter().zip(p)
        })
        .collect()
}

fn spread_of(mut e: Vec<f64>) -> Option<ErrorSpread> {
    if e.is_empty() {
        return None;
    }
    e.sort_by(f64::total_cmp);
    let n = e.len();
    let rank = |q: f64| e[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    Some(ErrorSpread {
        jobs: n,
        mean: e.iter().sum::<f64>() / n as f64,
        median: if n % 2 == 1 {
            e[n / 2]
        } else {
            (e[n / 2 - 1] + e[n / 2]) / 2.0
        },
        p90: rank(0.9),
    })
}
