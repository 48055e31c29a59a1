//! A real run's heartbeats from its decision record, for a replay in the
//! real heartbeat order (`master sim calibrate --recorded-heartbeats`).

use super::*;

/// A run's decision record: `decisions/<point>-<scheduler>-r<rep>.record.json.gz`.
fn record_file(dir: &Path, key: &RunKey) -> PathBuf {
    let file = format!(
        "{}-{}-r{}",
        super::super::timeline::slug(&key.0),
        super::super::timeline::slug(&key.1),
        key.2
    );
    dir.join("decisions").join(format!("{file}.record.json.gz"))
}

/// The master's clock minus the run's (tasks.csv's): the median over the
/// record's jobs of the time the master added the job less its arrival in
/// `maps` (the master stamps both as it takes the job). The record's own
/// rows place the master's clock by a reading of both clocks taken at the
/// end, a few ms off; a launch's start in tasks.csv is the worker's, which
/// a loaded host delays. None when no job of the record is in `maps`.
fn clock_offset(log: &common::wire::DecisionLog, maps: &[&TaskRow]) -> Option<i64> {
    let arrivals: BTreeMap<&str, i64> = maps
        .iter()
        .map(|t| (t.job.as_str(), ms(t.arrival_s) as i64))
        .collect();
    let mut diffs: Vec<i64> = log
        .inputs
        .iter()
        .filter_map(|i| match i {
            sched::input::Input::Job { job, now, .. } => {
                let arrival = arrivals.get(format!("job-{}", job.0).as_str())?;
                Some(*now as i64 - arrival)
            }
            _ => None,
        })
        .collect();
    if diffs.is_empty() {
        return None;
    }
    diffs.sort_unstable();
    Some(diffs[diffs.len() / 2])
}

/// Run `key`'s heartbeats as its master took them: every offer of its
/// decision record (regular and out-of-band heartbeats alike), as (ms
/// since the run began, worker), in the record's order. Offers from before
/// the run began are left out. Fails, naming the file, when the run kept
/// no whole record or its rows cannot place the master's clock.
pub(super) fn recorded_beats(
    dir: &Path,
    key: &RunKey,
    maps: &[&TaskRow],
) -> anyhow::Result<Vec<(u64, u32)>> {
    let record = record_file(dir, key);
    if !record.exists() {
        anyhow::bail!(
            "{}: no decision record for {} {} rep {} (--recorded-heartbeats needs runs made with cluster.decisions = true)",
            record.display(),
            key.0,
            key.1,
            key.2
        );
    }
    let log = crate::ops::report::read_record(&record)?;
    if log.dropped > 0 || log.inputs_dropped > 0 || !log.recording {
        anyhow::bail!(
            "{}: the record is not whole ({} rows and {} inputs dropped): its heartbeats cannot be replayed",
            record.display(),
            log.dropped,
            log.inputs_dropped
        );
    }
    let offset = clock_offset(&log, maps).with_context(|| {
        format!(
            "{}: no job of the record is in tasks.csv, so the master's clock cannot be placed in the run",
            record.display()
        )
    })?;
    let mut beats = Vec::new();
    for input in &log.inputs {
        if let sched::input::Input::Offer { now, worker } = input {
            let t = *now as i64 - offset;
            if t < 0 {
                continue;
            }
            let w = worker_id(&log.name(*worker))
                .with_context(|| format!("{}: an offer's worker", record.display()))?;
            beats.push((t as u64, w.0));
        }
    }
    if beats.is_empty() {
        anyhow::bail!(
            "{}: the record holds no offer after the run began (a record without inputs?)",
            record.display()
        );
    }
    Ok(beats)
}
