//! A finished run written down: its row, its tasks and jobs, its
//! decision record, and a failed run's node logs.

use super::*;

/// A failed run's node logs (jobs that failed, a master that stopped
/// answering), kept with the results in
/// `failed-runs/<point>-<scheduler>-r<rep>/` (the next run's cluster
/// overwrites them); the folder, if any log was written since `since`.
pub(super) fn keep_failed_logs(
    env: &RunEnv<'_>,
    out: &Path,
    s: &NamedScheduler,
    rep: u32,
    since: std::time::SystemTime,
) -> Option<PathBuf> {
    let dest = out
        .join("failed-runs")
        .join(timeline::run_stem(&env.point.label, &s.label, rep));
    match env.keep_logs(&dest, since) {
        Ok(n) if n > 0 => Some(dest),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "cannot keep the failed run's logs");
            None
        }
    }
}

/// What a successful run leaves in the results folder `out`: its jobs
/// (jobs.csv), timelines, decision record (rechecked against its policy)
/// and Gantt chart. Returns its runs.csv row, its tasks and its jobs.
#[allow(clippy::too_many_arguments)]
pub(super) fn record_run(
    out: &Path,
    env: &RunEnv<'_>,
    s: &NamedScheduler,
    rep: u32,
    wall: f64,
    outcome: RunOutcome,
    jobs_csv: &mut output::TaskWriter,
    timelines_csv: &mut timeline::TimelineWriter,
) -> anyhow::Result<(RunRecord, Vec<TaskRow>, Vec<crate::experiment::qos::JobRow>)> {
    let (reports, t0_unix, timelines, decisions, notes) = outcome;
    let (map_workers, _) = env.spec.machines();
    let mut rec = RunRecord::from_reports(
        &env.point.label,
        s,
        rep,
        env.seed,
        &reports,
        t0_unix,
        &map_workers,
        wall,
    );
    rec.scheduler_notes = notes.join("; ");
    let rows = TaskRow::from_reports(&env.point.label, &s.label, rep, &reports, t0_unix);
    let jobs =
        crate::experiment::qos::JobRow::from_reports(&env.point.label, &s.label, rep, &reports);
    jobs_csv.write(&jobs)?;
    let (maps, reduces) = env.spec.machines();
    rec.set_eas_metrics(&rows, &maps, &reduces);
    timelines_csv.write((&env.point.label, &s.label, rep), t0_unix, &timelines)?;
    let file = timeline::run_stem(&env.point.label, &s.label, rep);
    if let Some(log) = &decisions {
        let dir = out.join("decisions");
        write_decisions(&dir.join(format!("{file}.csv.gz")), log, t0_unix)?;
        crate::ops::report::write_record(&dir.join(format!("{file}.record.json.gz")), log)?;
        rec.rechecked = match crate::ops::report::recheck(log) {
            Ok(_) => "same".into(),
            Err(e) => format!("differs: {e:#}"),
        };
    }
    timeline::plot(
        &out.join("timelines"),
        &file,
        &format!(
            "{} / {} / repetition {rep} (seed {})",
            env.point.label, s.label, env.seed
        ),
        &rows,
        &timeline::series(&timelines, t0_unix),
    )?;
    Ok((rec, rows, jobs))
}

pub(super) type RunOutcome = (
    Vec<JobReport>,
    u64,
    Vec<common::wire::WorkerTimeline>,
    Option<common::wire::DecisionLog>,
    Vec<String>,
);

/// Writes a run's decision record as gzipped CSV, times in seconds since
/// the run began (as tasks.csv's).
pub fn write_decisions(
    path: &Path,
    log: &common::wire::DecisionLog,
    t0_unix: u64,
) -> anyhow::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Written aside and renamed: never a partial file under the real name.
    let tmp = path.with_extension("gz.partial");
    let f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(f), Default::default());
    writeln!(gz, "t_s,{}", sched::decision::Decision::CSV_HEADER)?;
    for d in &log.decisions {
        let t = (log.unix_ms(d) as f64 - t0_unix as f64) / 1000.0;
        writeln!(gz, "{t:.3},{}", d.csv_row(|w| log.name(w)))?;
    }
    gz.finish()?.flush()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
