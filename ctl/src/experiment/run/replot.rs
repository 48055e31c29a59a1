//! A runner folder opened again: its recorded spec parsed, its summary
//! and plots written from its files (`master replot`).

use super::*;

/// A results directory, its `meta.json`, and the spec recorded there with
/// its schedulers and points.
pub type OpenedResults = (
    ResultsDir,
    serde_json::Value,
    Spec,
    Vec<NamedScheduler>,
    Vec<Point>,
);

/// Opens a results directory of the runner and parses the spec its
/// `meta.json` recorded (errors name the spec file and the key).
pub fn open_results(dir: &Path) -> anyhow::Result<OpenedResults> {
    let results = ResultsDir::open(dir);
    let meta = results.read_meta()?;
    let text = meta["spec_text"]
        .as_str()
        .context("meta.json has no spec_text")?;
    let recorded = meta["spec_file"].as_str().unwrap_or("spec.toml");
    // The spec's path as the run was given it, relative to where it ran:
    // from elsewhere, relative to the checkout holding `results/<name>/<stamp>`
    // (a trace's file is found from the spec's directory).
    let file = match Path::new(recorded) {
        p if p.is_relative() && !p.exists() => std::fs::canonicalize(dir)
            .ok()
            .and_then(|d| d.ancestors().nth(3).map(|root| root.join(p)))
            .filter(|p| p.exists())
            .unwrap_or_else(|| p.to_owned()),
        p => p.to_owned(),
    };
    let mut spec = Spec::parse(text, &file)?;
    // Folders from before `[trace] shuffle` existed ran wordcount: their
    // recorded resolved spec has no such key.
    if let Some(t) = spec.trace.as_mut() {
        if meta["spec"]["trace"].is_object() && meta["spec"]["trace"].get("shuffle").is_none() {
            t.shuffle = lab::swim::TraceShuffle::Wordcount;
        }
    }
    let schedulers = spec.schedulers().map_err(|e| e.in_file(&file))?;
    let points = spec.points().map_err(|e| e.in_file(&file))?;
    Ok((results, meta, spec, schedulers, points))
}

/// Rewrites `summary.md` and `plots/` of a results directory from its
/// `runs.csv` and the spec recorded in `meta.json` (after a change to the
/// tables or plots; the runs are not repeated).
pub fn replot(dir: &Path) -> anyhow::Result<()> {
    let (results, _, spec, schedulers, points) = open_results(dir)?;
    let mut runs: Vec<RunRecord> = results.read_runs()?;
    // Metrics computed from the task attempts (EAS's per-machine ones) are
    // recomputed when tasks.csv is there.
    // (`read_csv` reads tasks.csv, or tasks.csv.gz where that is what is kept.)
    let tasks = dir.join("tasks.csv");
    if tasks.exists() || dir.join("tasks.csv.gz").exists() {
        // The task attempts of each run, grouped once.
        let mut by_run: std::collections::BTreeMap<(String, String, u32), Vec<TaskRow>> =
            Default::default();
        for t in crate::results::read_csv::<TaskRow>(&tasks)? {
            by_run
                .entry((t.point.clone(), t.scheduler.clone(), t.rep))
                .or_default()
                .push(t);
        }
        let (maps, reduces) = spec.machines();
        for r in runs.iter_mut().filter(|r| r.status == "ok") {
            let key = (r.point.clone(), r.scheduler.clone(), r.rep);
            r.set_eas_metrics(by_run.get(&key).map_or(&[][..], |v| v), &maps, &reduces);
        }
        results.write_runs(&runs)?;
        // Timelines already drawn are drawn again from nic.csv and
        // background.csv (when both are there).
        let tl_dir = dir.join("timelines");
        if tl_dir.is_dir() && dir.join("nic.csv").exists() && dir.join("background.csv").exists() {
            let series = timeline::read_series(dir, spec.cluster.workers, spec.cluster.slots)?;
            for (key, workers) in &series {
                let (point, sched, rep) = key;
                let file = timeline::run_stem(point, sched, *rep);
                if !tl_dir.join(format!("{file}.png")).exists() {
                    continue;
                }
                let seed = runs
                    .iter()
                    .find(|r| &r.point == point && &r.scheduler == sched && r.rep == *rep)
                    .map_or(String::from("?"), |r| r.seed.to_string());
                timeline::plot(
                    &tl_dir,
                    &file,
                    &format!("{point} / {sched} / repetition {rep} (seed {seed})"),
                    by_run.get(key).map_or(&[][..], |v| v),
                    workers,
                )?;
            }
        }
    }
    // The QoS section, as the run wrote it, from the per-job rows.
    let jobs_csv = dir.join("jobs.csv");
    let job_rows: Vec<crate::experiment::qos::JobRow> = if jobs_csv.exists() {
        crate::results::read_csv(&jobs_csv)?
    } else {
        Vec::new()
    };
    results.write_summary(&summary_md(
        dir,
        &spec,
        &schedulers,
        &points,
        &runs,
        &job_rows,
    ))?;
    plots::plot_all(dir, &schedulers, &points, &runs)?;
    Ok(())
}

/// A results folder's `summary.md`: the runs' tables, the QoS section (for
/// specs with deadlines, budgets or public types), the grid's effects.
pub(super) fn summary_md(
    dir: &Path,
    spec: &Spec,
    schedulers: &[NamedScheduler],
    points: &[Point],
    runs: &[RunRecord],
    job_rows: &[crate::experiment::qos::JobRow],
) -> String {
    let point_labels: Vec<String> = points.iter().map(|p| p.label.clone()).collect();
    format!(
        "{}{}{}",
        output::summary(
            spec,
            schedulers,
            points,
            runs,
            dir.join("failed-runs").exists()
        ),
        crate::experiment::qos::summary(spec, schedulers, points, job_rows),
        crate::experiment::grid::section(schedulers, &point_labels, runs)
    )
}
