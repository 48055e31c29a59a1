//! Judging one claim on its folder: per point, the measured value with its
//! 95% interval and holds / does not hold / cannot be judged, with why.

use super::data::{Table, Values};
use super::stats::{decimals_for, Estimate};
use super::{resolve_folder, Claim, Kind};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A claim's or a point's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Holds,
    Fails,
    Unjudged,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Fails => "does not hold",
            Outcome::Unjudged => "cannot be judged",
        }
    }
}

/// One point's judgment.
#[derive(Clone, Debug)]
pub struct PointResult {
    pub point: String,
    pub outcome: Outcome,
    /// The measured value(s) with their intervals.
    pub measured: String,
    /// Why it does not hold or cannot be judged (empty when it holds).
    pub why: String,
}

/// One claim's judgment.
#[derive(Clone, Debug)]
pub struct ClaimResult {
    pub outcome: Outcome,
    /// `<spec>/<stamp>` judged on, if any.
    pub folder: Option<String>,
    /// The folder's meta.json says the tree was dirty (or has no meta.json).
    pub provenance: Option<String>,
    pub points: Vec<PointResult>,
    /// Why, for the claim as a whole.
    pub why: String,
}

/// Tables read once per folder and name.
#[derive(Default)]
pub struct Cache {
    tables: HashMap<(PathBuf, String), Table>,
}

impl Cache {
    fn table(&mut self, dir: &Path, name: &str) -> anyhow::Result<&Table> {
        let k = (dir.to_path_buf(), name.to_string());
        if !self.tables.contains_key(&k) {
            let t = Table::read(dir, name)?;
            self.tables.insert(k.clone(), t);
        }
        Ok(&self.tables[&k])
    }
}

/// Judges `claim` on its folder under `results`. An error is a claims
/// file that does not fit its folder (a missing column, a bad pin).
pub fn judge(claim: &Claim, results: &Path, cache: &mut Cache) -> anyhow::Result<ClaimResult> {
    let unjudged = |folder: Option<String>, why: String| ClaimResult {
        outcome: Outcome::Unjudged,
        folder,
        provenance: None,
        points: vec![],
        why,
    };
    if let Some(why) = &claim.unjudged {
        return Ok(unjudged(None, why.clone()));
    }
    let Some(dir) = resolve_folder(results, claim)? else {
        return Ok(unjudged(
            None,
            format!("no complete results folder of {}", claim.spec),
        ));
    };
    let stamp = dir.file_name().unwrap_or_default().to_string_lossy();
    let folder = format!("{}/{stamp}", claim.spec);
    let provenance = provenance(&dir);
    let what = format!("{}/{}.csv", dir.display(), claim.table);
    let table = cache.table(&dir, &claim.table)?;
    let values = match claim.aggregate.as_deref() {
        Some(agg) => table.job_values(&claim.metric, agg, claim.le, &what)?,
        None => table.run_values(&claim.metric, &what)?,
    };
    let all_points = cache.table(&dir, "runs")?.points();
    for p in &claim.points {
        if !all_points.contains(p) {
            anyhow::bail!(
                "claim {}: point {p:?} is not in {} (its points: {})",
                claim.id,
                folder,
                all_points.join(", ")
            );
        }
    }
    let points = if matches!(claim.kind, Kind::Rises | Kind::Falls) && claim.series.is_empty() {
        vec![trend_over_points(claim, &values)]
    } else {
        let at = if claim.points.is_empty() {
            &all_points
        } else {
            &claim.points
        };
        at.iter().map(|p| judge_point(claim, &values, p)).collect()
    };
    let outcome = points
        .iter()
        .map(|p| p.outcome)
        .max()
        .unwrap_or(Outcome::Unjudged);
    let why = points
        .iter()
        .filter(|p| p.outcome == outcome && outcome != Outcome::Holds)
        .map(|p| format!("{}: {}", p.point, p.why))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(ClaimResult {
        outcome,
        folder: Some(folder),
        provenance,
        points,
        why,
    })
}

/// What a reader should know of the folder's provenance: a dirty tree or
/// no meta.json.
fn provenance(dir: &Path) -> Option<String> {
    let Ok(text) = std::fs::read_to_string(dir.join("meta.json")) else {
        return Some("no meta.json".into());
    };
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    match v.get("git_dirty").and_then(|d| d.as_bool()) {
        Some(true) => Some("made from a dirty tree".into()),
        _ => None,
    }
}

/// The runs of `sched` at `point`; `name@other` names another point's
/// (to compare layouts: the runs are still paired by seed).
fn runs<'a>(values: &'a Values, point: &str, sched: &str) -> Option<&'a BTreeMap<String, f64>> {
    let (sched, point) = sched.split_once('@').unwrap_or((sched, point));
    values
        .get(&(point.to_string(), sched.to_string()))
        .filter(|m| !m.is_empty())
}

fn mean(m: &BTreeMap<String, f64>) -> f64 {
    m.values().sum::<f64>() / m.len() as f64
}

fn point_result(point: &str, outcome: Outcome, measured: String, why: String) -> PointResult {
    PointResult {
        point: point.to_string(),
        outcome,
        measured,
        why,
    }
}

fn judge_point(claim: &Claim, values: &Values, point: &str) -> PointResult {
    if !claim.series.is_empty() {
        return trend_over_series(claim, values, point);
    }
    let no_runs = |s: &str| {
        point_result(
            point,
            Outcome::Unjudged,
            String::new(),
            format!("no successful run of {s}"),
        )
    };
    let Some(a) = runs(values, point, &claim.a) else {
        return no_runs(&claim.a);
    };
    let b = match &claim.b {
        Some(name) => match runs(values, point, name) {
            Some(b) => Some((name.as_str(), b)),
            None => return no_runs(name),
        },
        None => None,
    };
    match (claim.kind, b) {
        (Kind::Less | Kind::Greater | Kind::Same, Some((bn, b))) => compare(claim, point, a, bn, b),
        (Kind::Ratio | Kind::AtMost | Kind::AtLeast, b) => bound(claim, point, a, b),
        _ => point_result(
            point,
            Outcome::Unjudged,
            String::new(),
            "the predicate does not fit the claim".into(),
        ),
    }
}

/// Seeds both ran, and the values of each on them.
fn paired(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> Vec<(f64, f64)> {
    a.iter()
        .filter_map(|(k, x)| b.get(k).map(|y| (*x, *y)))
        .collect()
}

/// less, greater, same: the paired difference a - b over shared seeds.
fn compare(
    claim: &Claim,
    point: &str,
    a: &BTreeMap<String, f64>,
    bn: &str,
    b: &BTreeMap<String, f64>,
) -> PointResult {
    let pairs = paired(a, b);
    let (ma, mb) = (mean(a), mean(b));
    let d = decimals_for(ma.abs().max(mb.abs()));
    let diffs: Vec<f64> = pairs.iter().map(|(x, y)| x - y).collect();
    if diffs.len() < 2 {
        return point_result(
            point,
            Outcome::Unjudged,
            format!("{} {ma:.d$}, {bn} {mb:.d$}", claim.a),
            format!("{} paired run(s): no interval", diffs.len()),
        );
    }
    let e = Estimate::of(&diffs);
    let measured = format!(
        "{} {ma:.d$}, {bn} {mb:.d$}; difference {} (n={})",
        claim.a,
        e.show(d),
        e.n
    );
    let side = match claim.kind {
        Kind::Less => -1,
        Kind::Greater => 1,
        _ => 0,
    };
    let (outcome, why) = if side != 0 {
        match e.sign() {
            s if s == side => (Outcome::Holds, String::new()),
            0 => (
                Outcome::Fails,
                "no difference shown (the interval holds 0)".into(),
            ),
            _ => (Outcome::Fails, "the opposite holds".into()),
        }
    } else {
        // Equivalence: the whole interval within +-tol of b's mean.
        let margin = claim.tol.unwrap_or(0.0) * mb.abs();
        if e.lo >= -margin && e.hi <= margin {
            (Outcome::Holds, String::new())
        } else {
            (
                Outcome::Fails,
                format!(
                    "the interval reaches beyond ±{:.0}% of {bn}'s mean (±{margin:.d$})",
                    claim.tol.unwrap_or(0.0) * 100.0
                ),
            )
        }
    };
    point_result(point, outcome, measured, why)
}

/// ratio, at-most, at-least: on the per-seed ratio a / b, or on a alone.
fn bound(
    claim: &Claim,
    point: &str,
    a: &BTreeMap<String, f64>,
    b: Option<(&str, &BTreeMap<String, f64>)>,
) -> PointResult {
    let (label, xs): (String, Vec<f64>) = match b {
        Some((bn, b)) => (
            format!("{} / {bn}", claim.a),
            paired(a, b)
                .into_iter()
                .filter(|(_, y)| *y != 0.0)
                .map(|(x, y)| x / y)
                .collect(),
        ),
        None => (claim.a.clone(), a.values().copied().collect()),
    };
    if xs.is_empty() {
        return point_result(
            point,
            Outcome::Unjudged,
            String::new(),
            "no paired runs".into(),
        );
    }
    let e = Estimate::of(&xs);
    let v = claim.value.unwrap_or(f64::NAN);
    let d = decimals_for(e.mean.abs().max(v.abs()));
    let measured = format!("{label} {} (n={})", e.show(d), e.n);
    let (ok, why) = match claim.kind {
        Kind::Ratio => {
            let tol = claim.tol.unwrap_or(0.0);
            let ok = (e.mean - v).abs() <= tol * v.abs();
            (
                ok,
                format!(
                    "{:.d$} is outside {v} ± {:.0}% ({:.d$}-{:.d$})",
                    e.mean,
                    tol * 100.0,
                    v * (1.0 - tol),
                    v * (1.0 + tol)
                ),
            )
        }
        Kind::AtMost => (e.mean <= v, format!("{:.d$} is above {v}", e.mean)),
        _ => (e.mean >= v, format!("{:.d$} is below {v}", e.mean)),
    };
    let outcome = if ok { Outcome::Holds } else { Outcome::Fails };
    point_result(
        point,
        outcome,
        measured,
        if ok { String::new() } else { why },
    )
}

/// Means along an axis and the last-minus-first interval (Welch): holds
/// when each step moves the claimed way and the interval agrees.
fn trend(claim: &Claim, axis: &[(String, &BTreeMap<String, f64>)], point: &str) -> PointResult {
    let means: Vec<f64> = axis.iter().map(|(_, m)| mean(m)).collect();
    let d = decimals_for(means.iter().fold(0.0f64, |a, m| a.max(m.abs())));
    let first: Vec<f64> = axis[0].1.values().copied().collect();
    let last: Vec<f64> = axis[axis.len() - 1].1.values().copied().collect();
    let e = Estimate::welch(&first, &last);
    let measured = format!(
        "{}; last - first {}",
        axis.iter()
            .zip(&means)
            .map(|((n, _), m)| format!("{n} {m:.d$}"))
            .collect::<Vec<_>>()
            .join(", "),
        e.show(d)
    );
    if !e.has_interval() {
        return point_result(
            point,
            Outcome::Unjudged,
            measured,
            "one run at an end: no interval".into(),
        );
    }
    let up = claim.kind == Kind::Rises;
    let steps_ok = means
        .windows(2)
        .all(|w| if up { w[1] > w[0] } else { w[1] < w[0] });
    let ends_ok = e.sign() == if up { 1 } else { -1 };
    let (outcome, why) = match (steps_ok, ends_ok) {
        (true, true) => (Outcome::Holds, String::new()),
        (false, _) => (
            Outcome::Fails,
            format!("not every step {}", if up { "rises" } else { "falls" }),
        ),
        (true, false) => (
            Outcome::Fails,
            "the ends' difference is not shown (its interval holds 0 or has the other sign)".into(),
        ),
    };
    point_result(point, outcome, measured, why)
}

fn trend_over_points(claim: &Claim, values: &Values) -> PointResult {
    let label = claim.points.join(" .. ");
    let mut axis = Vec::new();
    for p in &claim.points {
        match runs(values, p, &claim.a) {
            Some(m) => axis.push((p.clone(), m)),
            None => {
                return point_result(
                    &label,
                    Outcome::Unjudged,
                    String::new(),
                    format!("no successful run of {} at {p}", claim.a),
                )
            }
        }
    }
    trend(claim, &axis, &label)
}

fn trend_over_series(claim: &Claim, values: &Values, point: &str) -> PointResult {
    let mut axis = Vec::new();
    for s in &claim.series {
        match runs(values, point, s) {
            Some(m) => axis.push((s.clone(), m)),
            None => {
                return point_result(
                    point,
                    Outcome::Unjudged,
                    String::new(),
                    format!("no successful run of {s}"),
                )
            }
        }
    }
    trend(claim, &axis, point)
}
