//! What an experiment writes to its results directory
//! ([`crate::results::ResultsDir`]): its `runs.csv` rows, `tasks.csv` (every
//! task attempt), the text of `summary.md` (the comparison table) and its
//! `meta.json` (spec, seeds, provenance).

use super::spec::{NamedScheduler, Point, Spec};
use crate::results::Provenance;
use anyhow::Context;
use common::wire::{JobReport, JobState, Locality};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

mod summary;
pub use summary::summary;

/// One run's figures. Times in seconds; JCT = finish - arrival per job.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub point: String,
    pub scheduler: String,
    pub policy: String,
    pub rep: u32,
    pub seed: u64,
    /// `ok`, or `failed` with `error` set.
    pub status: String,
    pub jobs: u32,
    pub jobs_failed: u32,
    pub makespan_s: f64,
    pub mean_jct_s: f64,
    pub total_jct_s: f64,
    pub p50_jct_s: f64,
    pub p95_jct_s: f64,
    pub data_local: u32,
    pub data_remote: u32,
    pub locality_pct: f64,
    pub remote_bytes: u64,
    pub local_bytes: u64,
    /// Map input MB / seconds until the last map ended (all map machines).
    pub map_throughput_mbs: f64,
    /// Shuffled MB / seconds until the last reduce ended (all reduce machines).
    pub reduce_throughput_mbs: f64,
    /// EAS's load-balance value (un-normalised): the time sum, in MB*s, of
    /// the standard deviation of the map machines' load, where a machine's
    /// load is the input not yet processed by its running maps (a running
    /// map's remainder shrinks linearly from its start to its end).
    pub load_balance: f64,
    /// EAS equation (3): the sum over map machines of the input their maps
    /// processed over the end of their last map (MB/s).
    #[serde(default = "nan")]
    pub map_tp_machines_mbs: f64,
    /// EAS equation (4): the same over the reduce machines (shuffle input).
    #[serde(default = "nan")]
    pub reduce_tp_machines_mbs: f64,
    /// EAS Section 5.4's load balance (un-normalised, MB): every N_m
    /// scheduled maps, the standard deviation over the map machines of the
    /// input not yet processed by running maps (a remote map charged to
    /// the machine it reads from), summed over those instants.
    #[serde(default = "nan")]
    pub load_balance_sampled: f64,
    /// The same with a remote map charged to the machine that runs it (the
    /// reader) instead of its source: Section 5.4 does not say which.
    #[serde(default = "nan")]
    pub load_balance_sampled_reader: f64,
    pub wall_s: f64,
    /// The host's CPU use over the run, % of all its cores (`/proc/stat`;
    /// NaN where it cannot be read, and in runs from before it was kept):
    /// a run on a saturated host measures the host, not the scheduler.
    #[serde(default = "nan")]
    pub host_cpu_pct: f64,
    /// The run's decision record run through its policy again
    /// (`lab::recheck`): `same` (row for row), `differs: <the first row
    /// that differs>`, or empty (no record kept).
    #[serde(default)]
    pub rechecked: String,
    /// What the policy's report says besides its launches (an external
    /// policy's calls, refusals and fallbacks), `; `-separated.
    #[serde(default)]
    pub scheduler_notes: String,
    pub error: String,
}

/// Host CPU use at or above this (% of all cores) marks a run whose host
/// was saturated.
pub const SATURATED_CPU_PCT: f64 = 95.0;

/// Repetitions from which a plotted bar's whisker is the mean's 95%
/// interval rather than the min-max over the repetitions (issue 59: a
/// spread over 3 seeds is not a confidence statement, and over 5 a t
/// interval is one).
pub const INTERVAL_FROM: usize = 5;

/// The host's CPU time counters (`/proc/stat`'s first line): busy and total
/// jiffies, or None off Linux.
pub fn host_cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    cpu_ticks(stat.lines().next()?)
}

/// Busy and total jiffies of a `/proc/stat` `cpu` line (idle and iowait
/// are not busy; guest time is already in user).
fn cpu_ticks(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    let total: u64 = v.iter().sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// % CPU busy between two [`host_cpu_ticks`] readings.
pub fn cpu_pct(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> f64 {
    match (before, after) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
            100.0 * b1.saturating_sub(b0) as f64 / (t1 - t0) as f64
        }
        _ => f64::NAN,
    }
}

fn nan() -> f64 {
    f64::NAN
}

/// EAS's per-machine metrics of one run, from its task attempts:
/// (map throughput, reduce throughput, sampled load balance with remote
/// maps charged to their source, and to their reader); see the fields of
/// [`RunRecord`]. Machines are named by `map_workers` and
/// `reduce_workers` (with shared machines, both lists name every worker).
pub fn eas_metrics(
    rows: &[TaskRow],
    map_workers: &[String],
    reduce_workers: &[String],
) -> (f64, f64, f64, f64) {
    let ok = |kind: &'static str| rows.iter().filter(move |r| r.ok && r.kind == kind);
    let per_machine = |kind: &'static str, machines: &[String]| -> f64 {
        let mut tp = 0.0;
        let mut any = false;
        for m in machines {
            let (mut bytes, mut end) = (0u64, 0f64);
            for r in ok(kind).filter(|r| &r.worker == m) {
                bytes += r.input_bytes;
                end = end.max(r.end_s);
                any = true;
            }
            if end > 0.0 {
                tp += bytes as f64 / 1e6 / end;
            }
        }
        if any {
            tp
        } else {
            f64::NAN
        }
    };
    let map_tp = per_machine("map", map_workers);
    let reduce_tp = per_machine("reduce", reduce_workers);
    // Sampled load balance.
    let mut maps: Vec<&TaskRow> = rows.iter().filter(|r| r.kind == "map").collect();
    maps.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let n = map_workers.len().max(1);
    let sampled = |to_source: bool| {
        let mut lb = 0.0;
        let mut samples = 0;
        for k in (n..=maps.len()).step_by(n) {
            let t = maps[k - 1].start_s;
            let mut load = vec![0.0f64; map_workers.len()];
            for r in maps.iter().take_while(|r| r.start_s <= t) {
                if r.end_s <= t {
                    continue;
                }
                let left = if r.end_s > r.start_s {
                    r.input_bytes as f64 * (r.end_s - t) / (r.end_s - r.start_s)
                } else {
                    0.0
                };
                let charged = if r.locality == "remote" && to_source {
                    &r.source
                } else {
                    &r.worker
                };
                if let Some(i) = map_workers.iter().position(|w| w == charged) {
                    load[i] += left / 1e6;
                }
            }
            let mean = load.iter().sum::<f64>() / load.len().max(1) as f64;
            let var = load.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>()
                / load.len().max(1) as f64;
            lb += var.sqrt();
            samples += 1;
        }
        if samples == 0 {
            f64::NAN
        } else {
            lb
        }
    };
    (map_tp, reduce_tp, sampled(true), sampled(false))
}

/// Step of the load-balance integral, seconds.
const LB_STEP_S: f64 = 0.1;

/// The load-balance value of a run (see [`RunRecord::load_balance`]).
pub fn load_balance(reports: &[JobReport], map_workers: &[String]) -> f64 {
    use common::wire::TaskKind;
    // (worker index, start, end, bytes) of every map attempt that ran.
    let mut runs: Vec<(usize, f64, f64, f64)> = Vec::new();
    for r in reports {
        for a in r
            .attempts
            .iter()
            .filter(|a| a.kind == TaskKind::Map && a.ok)
        {
            if let Some(w) = map_workers.iter().position(|m| *m == a.worker) {
                let s = (r.submit_unix_ms + a.start_ms) as f64 / 1000.0;
                let e = (r.submit_unix_ms + a.end_ms) as f64 / 1000.0;
                runs.push((w, s, e.max(s + 1e-3), a.input_bytes as f64 / 1e6));
            }
        }
    }
    if runs.is_empty() || map_workers.is_empty() {
        return 0.0;
    }
    let t0 = runs.iter().map(|r| r.1).fold(f64::MAX, f64::min);
    let t1 = runs.iter().map(|r| r.2).fold(f64::MIN, f64::max);
    let n = map_workers.len() as f64;
    let mut total = 0.0;
    let mut t = t0;
    while t < t1 {
        let mut load = vec![0.0; map_workers.len()];
        for &(w, s, e, mb) in &runs {
            if s <= t && t < e {
                load[w] += mb * (e - t) / (e - s);
            }
        }
        let mean = load.iter().sum::<f64>() / n;
        let sd = (load.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n).sqrt();
        total += sd * LB_STEP_S;
        t += LB_STEP_S;
    }
    total
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

impl RunRecord {
    #[allow(clippy::too_many_arguments)]
    pub fn from_reports(
        point: &str,
        s: &NamedScheduler,
        rep: u32,
        seed: u64,
        reports: &[JobReport],
        t0_unix: u64,
        map_workers: &[String],
        wall_s: f64,
    ) -> RunRecord {
        use common::wire::TaskKind;
        let last_end = |kind: TaskKind| {
            reports
                .iter()
                .flat_map(|r| {
                    r.attempts
                        .iter()
                        .filter(move |a| a.kind == kind && a.ok)
                        .map(move |a| r.submit_unix_ms + a.end_ms)
                })
                .max()
                .map(|e| e.saturating_sub(t0_unix) as f64 / 1000.0)
        };
        let rate =
            |mb: f64, secs: Option<f64>| secs.filter(|s| *s > 0.0).map_or(f64::NAN, |s| mb / s);
        let map_mb = reports
            .iter()
            .map(|r| (r.bytes_local + r.bytes_remote) as f64)
            .sum::<f64>()
            / 1e6;
        let shuffle_mb = reports.iter().map(|r| r.shuffle_bytes as f64).sum::<f64>() / 1e6;
        let mut jct: Vec<f64> = reports
            .iter()
            .filter_map(|r| r.jct_ms)
            .map(|m| m as f64 / 1000.0)
            .collect();
        jct.sort_by(f64::total_cmp);
        let end = reports
            .iter()
            .filter_map(|r| r.finish_ms.map(|f| r.submit_unix_ms + f))
            .max()
            .unwrap_or(t0_unix);
        let failed = reports
            .iter()
            .filter(|r| r.state != JobState::Succeeded)
            .count() as u32;
        let local: u32 = reports.iter().map(|r| r.data_local).sum();
        let remote: u32 = reports.iter().map(|r| r.data_remote).sum();
        let total: f64 = jct.iter().sum();
        RunRecord {
            point: point.into(),
            scheduler: s.label.clone(),
            policy: s.policy_label(),
            rep,
            seed,
            status: if failed == 0 { "ok" } else { "failed" }.into(),
            jobs: reports.len() as u32,
            jobs_failed: failed,
            makespan_s: end.saturating_sub(t0_unix) as f64 / 1000.0,
            mean_jct_s: if jct.is_empty() {
                f64::NAN
            } else {
                total / jct.len() as f64
            },
            total_jct_s: total,
            p50_jct_s: percentile(&jct, 50.0),
            p95_jct_s: percentile(&jct, 95.0),
            data_local: local,
            data_remote: remote,
            locality_pct: if local + remote == 0 {
                f64::NAN
            } else {
                100.0 * local as f64 / (local + remote) as f64
            },
            remote_bytes: reports.iter().map(|r| r.bytes_remote).sum(),
            local_bytes: reports.iter().map(|r| r.bytes_local).sum(),
            map_throughput_mbs: rate(map_mb, last_end(TaskKind::Map)),
            reduce_throughput_mbs: rate(shuffle_mb, last_end(TaskKind::Reduce)),
            load_balance: load_balance(reports, map_workers),
            map_tp_machines_mbs: f64::NAN,
            reduce_tp_machines_mbs: f64::NAN,
            load_balance_sampled: f64::NAN,
            load_balance_sampled_reader: f64::NAN,
            wall_s,
            host_cpu_pct: f64::NAN,
            rechecked: String::new(),
            scheduler_notes: String::new(),
            error: if failed == 0 {
                String::new()
            } else {
                format!("{failed} jobs did not succeed")
            },
        }
    }

    pub fn failed(
        point: &str,
        s: &NamedScheduler,
        rep: u32,
        seed: u64,
        jobs: u32,
        error: String,
        wall_s: f64,
    ) -> RunRecord {
        RunRecord {
            point: point.into(),
            scheduler: s.label.clone(),
            policy: s.policy_label(),
            rep,
            seed,
            status: "failed".into(),
            jobs,
            jobs_failed: jobs,
            makespan_s: f64::NAN,
            mean_jct_s: f64::NAN,
            total_jct_s: f64::NAN,
            p50_jct_s: f64::NAN,
            p95_jct_s: f64::NAN,
            data_local: 0,
            data_remote: 0,
            locality_pct: f64::NAN,
            remote_bytes: 0,
            local_bytes: 0,
            map_throughput_mbs: f64::NAN,
            reduce_throughput_mbs: f64::NAN,
            load_balance: f64::NAN,
            map_tp_machines_mbs: f64::NAN,
            reduce_tp_machines_mbs: f64::NAN,
            load_balance_sampled: f64::NAN,
            load_balance_sampled_reader: f64::NAN,
            wall_s,
            host_cpu_pct: f64::NAN,
            rechecked: String::new(),
            scheduler_notes: String::new(),
            error,
        }
    }

    /// Sets EAS's per-machine metrics from the run's task attempts.
    pub fn set_eas_metrics(
        &mut self,
        rows: &[TaskRow],
        map_workers: &[String],
        reduce_workers: &[String],
    ) {
        let (m, r, lb, lb_reader) = eas_metrics(rows, map_workers, reduce_workers);
        self.map_tp_machines_mbs = m;
        self.reduce_tp_machines_mbs = r;
        self.load_balance_sampled = lb;
        self.load_balance_sampled_reader = lb_reader;
    }

    pub fn one_line(&self) -> String {
        if self.status == "ok" {
            format!(
                "{} rep {} {}: mean JCT {:.2} s, makespan {:.2} s, {} local / {} remote, host CPU {:.0}%{}",
                self.point,
                self.rep,
                self.scheduler,
                self.mean_jct_s,
                self.makespan_s,
                self.data_local,
                self.data_remote,
                self.host_cpu_pct,
                if self.host_cpu_pct >= SATURATED_CPU_PCT {
                    " (saturated)"
                } else {
                    ""
                }
            )
        } else {
            format!(
                "{} rep {} {}: FAILED: {}",
                self.point, self.rep, self.scheduler, self.error
            )
        }
    }
}

/// One task attempt. Times in seconds after the run started.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct TaskRow {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub job: String,
    pub job_name: String,
    pub arrival_s: f64,
    pub task: u32,
    /// map or reduce.
    pub kind: String,
    pub attempt: u32,
    pub worker: String,
    pub slot: u32,
    pub locality: String,
    pub source: String,
    pub start_s: f64,
    pub end_s: f64,
    pub input_bytes: u64,
    pub remote_bytes: u64,
    pub ok: bool,
    pub error: String,
}

impl TaskRow {
    pub fn from_reports(
        point: &str,
        scheduler: &str,
        rep: u32,
        reports: &[JobReport],
        t0_unix: u64,
    ) -> Vec<TaskRow> {
        let rel = |unix: u64| (unix as f64 - t0_unix as f64) / 1000.0;
        reports
            .iter()
            .flat_map(|r| {
                r.attempts.iter().map(move |a| TaskRow {
                    point: point.into(),
                    scheduler: scheduler.into(),
                    rep,
                    job: r.job.to_string(),
                    job_name: r.name.clone(),
                    arrival_s: rel(r.submit_unix_ms),
                    task: a.task,
                    kind: match a.kind {
                        common::wire::TaskKind::Map => "map",
                        common::wire::TaskKind::Reduce => "reduce",
                    }
                    .into(),
                    attempt: a.attempt,
                    worker: a.worker.clone(),
                    slot: a.slot,
                    locality: match a.locality {
                        Locality::DataLocal => "local",
                        Locality::DataRemote => "remote",
                    }
                    .into(),
                    source: a.source.clone(),
                    start_s: rel(r.submit_unix_ms + a.start_ms),
                    end_s: rel(r.submit_unix_ms + a.end_ms),
                    input_bytes: a.input_bytes,
                    remote_bytes: a.remote_bytes,
                    ok: a.ok,
                    error: a.error.clone().unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// tasks.csv, appended to after every run so a crash keeps what ran.
pub struct TaskWriter {
    w: csv::Writer<std::fs::File>,
}

impl TaskWriter {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        Ok(TaskWriter {
            w: csv::Writer::from_path(path)
                .with_context(|| format!("creating {}", path.display()))?,
        })
    }

    pub fn write<T: Serialize>(&mut self, rows: &[T]) -> anyhow::Result<()> {
        for r in rows {
            self.w.serialize(r)?;
        }
        self.w.flush()?;
        Ok(())
    }
}

/// Means over the successful repetitions of one (point, scheduler).
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub runs: u32,
    pub failed: u32,
    pub mean_jct_s: f64,
    pub p95_jct_s: f64,
    pub makespan_s: f64,
    pub data_local: f64,
    pub data_remote: f64,
    pub locality_pct: f64,
    pub remote_mb: f64,
    pub total_jct_s: f64,
    pub map_tp: f64,
    pub reduce_tp: f64,
    pub load_balance: f64,
    pub map_tp_machines: f64,
    pub reduce_tp_machines: f64,
    pub load_balance_sampled: f64,
    pub load_balance_sampled_reader: f64,
    /// Min and max over the successful repetitions.
    pub spread: Spread,
}

/// Min and max over repetitions of the metrics the tables and plots show
/// with their spread.
#[derive(Clone, Debug)]
pub struct Spread {
    pub mean_jct_s: (f64, f64),
    pub makespan_s: (f64, f64),
    pub data_remote: (f64, f64),
    pub total_jct_s: (f64, f64),
}

impl Default for Spread {
    fn default() -> Spread {
        let e = (f64::INFINITY, f64::NEG_INFINITY);
        Spread {
            mean_jct_s: e,
            makespan_s: e,
            data_remote: e,
            total_jct_s: e,
        }
    }
}

fn widen(r: &mut (f64, f64), v: f64) {
    r.0 = r.0.min(v);
    r.1 = r.1.max(v);
}

pub fn cells(runs: &[RunRecord]) -> BTreeMap<(String, String), Cell> {
    let mut out: BTreeMap<(String, String), Cell> = BTreeMap::new();
    for r in runs {
        let c = out
            .entry((r.point.clone(), r.scheduler.clone()))
            .or_default();
        if r.status != "ok" {
            c.failed += 1;
            continue;
        }
        c.runs += 1;
        widen(&mut c.spread.mean_jct_s, r.mean_jct_s);
        widen(&mut c.spread.makespan_s, r.makespan_s);
        widen(&mut c.spread.data_remote, r.data_remote as f64);
        widen(&mut c.spread.total_jct_s, r.total_jct_s);
        c.mean_jct_s += r.mean_jct_s;
        c.p95_jct_s += r.p95_jct_s;
        c.makespan_s += r.makespan_s;
        c.data_local += r.data_local as f64;
        c.data_remote += r.data_remote as f64;
        c.locality_pct += r.locality_pct;
        c.remote_mb += r.remote_bytes as f64 / 1e6;
        c.total_jct_s += r.total_jct_s;
        c.map_tp += r.map_throughput_mbs;
        c.reduce_tp += r.reduce_throughput_mbs;
        c.load_balance += r.load_balance;
        c.map_tp_machines += r.map_tp_machines_mbs;
        c.reduce_tp_machines += r.reduce_tp_machines_mbs;
        c.load_balance_sampled += r.load_balance_sampled;
        c.load_balance_sampled_reader += r.load_balance_sampled_reader;
    }
    for c in out.values_mut() {
        let n = c.runs.max(1) as f64;
        if c.runs == 0 {
            let nan = f64::NAN;
            (c.mean_jct_s, c.p95_jct_s, c.makespan_s) = (nan, nan, nan);
            (c.data_local, c.data_remote, c.locality_pct, c.remote_mb) = (nan, nan, nan, nan);
            (c.total_jct_s, c.map_tp, c.reduce_tp, c.load_balance) = (nan, nan, nan, nan);
            (
                c.map_tp_machines,
                c.reduce_tp_machines,
                c.load_balance_sampled,
                c.load_balance_sampled_reader,
            ) = (nan, nan, nan, nan);
            continue;
        }
        c.map_tp_machines /= n;
        c.reduce_tp_machines /= n;
        c.load_balance_sampled /= n;
        c.load_balance_sampled_reader /= n;
        c.total_jct_s /= n;
        c.map_tp /= n;
        c.reduce_tp /= n;
        c.load_balance /= n;
        c.mean_jct_s /= n;
        c.p95_jct_s /= n;
        c.makespan_s /= n;
        c.data_local /= n;
        c.data_remote /= n;
        c.locality_pct /= n;
        c.remote_mb /= n;
    }
    out
}

/// meta.json: everything needed to rerun and to trust the figures.
#[derive(Serialize)]
pub struct Meta {
    pub experiment: String,
    pub spec_file: String,
    pub spec_text: String,
    pub spec: serde_json::Value,
    pub schedulers: Vec<NamedScheduler>,
    pub points: Vec<Point>,
    pub seeds: Vec<u64>,
    #[serde(flatten)]
    pub provenance: Provenance,
    pub runs: usize,
    pub failed_runs: usize,
    /// Where the clusters ran: `processes` or `docker`.
    #[serde(default = "processes")]
    pub deployment: String,
    /// Set when a signal stopped the experiment: which, after how many runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

fn processes() -> String {
    "processes".into()
}

impl Meta {
    pub fn new(
        spec: &Spec,
        text: &str,
        path: &Path,
        schedulers: &[NamedScheduler],
        points: &[Point],
        started: u64,
    ) -> Meta {
        Meta {
            experiment: spec.name.clone(),
            spec_file: path.display().to_string(),
            spec_text: text.into(),
            spec: serde_json::to_value(spec).unwrap_or_default(),
            schedulers: schedulers.to_vec(),
            points: points.to_vec(),
            seeds: (0..spec.repetitions)
                .map(|r| spec.seed + r as u64)
                .collect(),
            provenance: Provenance::capture(started),
            runs: 0,
            failed_runs: 0,
            deployment: processes(),
            interrupted: None,
        }
    }

    pub fn finish(&mut self, runs: &[RunRecord]) {
        self.provenance.finish();
        self.runs = runs.len();
        self.failed_runs = runs.iter().filter(|r| r.status != "ok").count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_cpu_use_is_busy_over_total_time() {
        // user nice system idle iowait irq softirq steal
        let a = cpu_ticks("cpu  100 0 50 800 50 0 0 0 0 0").unwrap();
        let b = cpu_ticks("cpu  400 0 150 900 150 0 0 0 0 0").unwrap();
        assert_eq!((a, b), ((150, 1000), (550, 1600)));
        assert!((cpu_pct(Some(a), Some(b)) - 400.0 / 6.0).abs() < 1e-9);
        assert!(cpu_pct(None, Some(b)).is_nan() && cpu_pct(Some(b), Some(a)).is_nan());
        assert_eq!(cpu_ticks("cpu0 1 2 3 4 5"), None, "the all-cores line only");
        assert_eq!(cpu_ticks("cpu  1 2 x 4 5"), None);
        let now = host_cpu_ticks().expect("Linux has /proc/stat");
        assert!(now.0 <= now.1);
    }

    fn row(worker: &str, source: &str, remote: bool, mb: u64, start: f64, end: f64) -> TaskRow {
        TaskRow {
            point: "p".into(),
            scheduler: "s".into(),
            rep: 0,
            job: "job-1".into(),
            job_name: "j".into(),
            arrival_s: 0.0,
            task: 0,
            kind: "map".into(),
            attempt: 0,
            worker: worker.into(),
            slot: 0,
            locality: if remote { "remote" } else { "local" }.into(),
            source: source.into(),
            start_s: start,
            end_s: end,
            input_bytes: mb * 1_000_000,
            remote_bytes: if remote { mb * 1_000_000 } else { 0 },
            ok: true,
            error: String::new(),
        }
    }

    #[test]
    fn eas_metrics_follow_the_papers_definitions() {
        let ws = ["w1".to_string(), "w2".to_string()];
        let rows = [
            row("w1", "w1", false, 10, 0.0, 10.0),
            // Remote: its load is charged to w1, the machine it reads from.
            row("w2", "w1", true, 10, 0.0, 5.0),
            row("w2", "w2", false, 10, 5.0, 10.0),
            row("w2", "w2", false, 10, 6.0, 8.0),
        ];
        let (map_tp, reduce_tp, lb, lb_reader) = eas_metrics(&rows, &ws, &ws);
        // w1: 10 MB by t = 10; w2: 30 MB by t = 10.
        assert!((map_tp - 4.0).abs() < 1e-9, "{map_tp}");
        assert!(reduce_tp.is_nan());
        // Every 2 scheduled maps: at t = 0 (w1 10 + 10 MB, w2 0: std 10) and
        // at t = 6 (w1 4, w2 8 + 10: std 7).
        assert!((lb - 17.0).abs() < 1e-9, "{lb}");
        // Charged to the reader, the remote map is w2's: at t = 0 both
        // machines hold 10 MB (std 0); at t = 6 as before (7).
        assert!((lb_reader - 7.0).abs() < 1e-9, "{lb_reader}");
    }

    #[test]
    fn percentiles_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(percentile(&v, 50.0), 5.0);
        assert_eq!(percentile(&v, 95.0), 10.0);
        assert_eq!(percentile(&[3.0], 95.0), 3.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
