//! A results folder's table read for claims: one value per run, keyed by
//! point, scheduler (or algorithm) and the run's pairing key (its seed, or
//! its repetition where the table has no seed), so that two schedulers of
//! a point are compared on the runs that saw the same data.

use anyhow::{bail, Context};
use std::collections::{BTreeMap, HashMap};

/// (point, scheduler) -> pairing key -> value.
pub type Values = BTreeMap<(String, String), BTreeMap<String, f64>>;

pub use crate::results::table::Table;

impl Table {
    fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    fn need(&self, name: &str, what: &str) -> anyhow::Result<usize> {
        self.col(name)
            .with_context(|| format!("{what} has no column {name:?}"))
    }

    /// The column naming the compared policies: `scheduler` in the real
    /// runner's tables, `algorithm` in the lab's sweeps.
    fn group_col(&self, what: &str) -> anyhow::Result<usize> {
        self.col("scheduler")
            .or_else(|| self.col("algorithm"))
            .with_context(|| format!("{what} has neither a scheduler nor an algorithm column"))
    }

    /// One value a run of `metric`: runs.csv's own (rows whose `status` is
    /// not `ok` left out, as are empty and NaN cells).
    pub fn run_values(&self, metric: &str, what: &str) -> anyhow::Result<Values> {
        let (p, g, m) = (
            self.need("point", what)?,
            self.group_col(what)?,
            self.need(metric, what)?,
        );
        let key = self.col("seed").or(self.col("rep")).with_context(|| {
            format!("{what} has neither a seed nor a rep column to pair runs by")
        })?;
        let status = self.col("status");
        let mut out = Values::new();
        for r in &self.rows {
            if status.is_some_and(|s| r[s] != "ok") {
                continue;
            }
            let Some(v) = parse(&r[m]) else { continue };
            out.entry((r[p].clone(), r[g].clone()))
                .or_default()
                .insert(r[key].clone(), v);
        }
        Ok(out)
    }

    /// One value a run, aggregated over the run's jobs (jobs.csv: keyed by
    /// point, scheduler and rep): `mean` of the column over the succeeded
    /// jobs whose cell is a number, or `share`, the percentage of jobs whose cell is
    /// `true` (or, with `le`, a number at most `le`).
    pub fn job_values(
        &self,
        metric: &str,
        aggregate: &str,
        le: Option<f64>,
        what: &str,
    ) -> anyhow::Result<Values> {
        let (p, g, m) = (
            self.need("point", what)?,
            self.group_col(what)?,
            self.need(metric, what)?,
        );
        let key = self.need("rep", what)?;
        let state = self.col("state");
        let mut acc: HashMap<(String, String, String), (f64, usize)> = HashMap::new();
        for r in &self.rows {
            let cell = r[m].trim();
            let v = match (aggregate, le) {
                // A job with no number (refused, failed) is not within the bound.
                ("share", Some(le)) => match parse(cell) {
                    Some(x) if x <= le => 100.0,
                    _ => 0.0,
                },
                ("share", None) => match cell {
                    "true" => 100.0,
                    "false" | "" => 0.0,
                    other => bail!("{what}: {metric} is {other:?}, not true or false"),
                },
                // A mean is over the jobs that ran: a refused or failed job
                // has no cost or JCT to compare.
                _ if state.is_some_and(|s| r[s] != "succeeded") => continue,
                _ => match parse(cell) {
                    Some(v) => v,
                    None => continue,
                },
            };
            let e = acc
                .entry((r[p].clone(), r[g].clone(), r[key].clone()))
                .or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
        let mut out = Values::new();
        for ((point, sched, rep), (sum, n)) in acc {
            out.entry((point, sched))
                .or_default()
                .insert(rep, sum / n as f64);
        }
        Ok(out)
    }

    /// The points of the table, in their first appearance's order.
    pub fn points(&self) -> Vec<String> {
        let Some(p) = self.col("point") else {
            return vec![];
        };
        let mut seen = Vec::new();
        for r in &self.rows {
            if !seen.contains(&r[p]) {
                seen.push(r[p].clone());
            }
        }
        seen
    }
}

fn parse(cell: &str) -> Option<f64> {
    cell.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}
