//! What a real run recorded, for a replay that takes it as it was: from
//! its decision record its heartbeats in the real order, its jobs'
//! arrivals and its blocks' replicas (`master sim calibrate
//! --recorded-heartbeats`), and from tasks.csv its tasks' lengths
//! (`--measured-task-times`).

use super::*;

/// A run's decision record: `decisions/<point>-<scheduler>-r<rep>.record.json.gz`.
fn record_file(dir: &Path, key: &RunKey) -> PathBuf {
    let file = super::super::timeline::run_stem(&key.0, &key.1, key.2);
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

/// What a run's decision record holds of the replay's inputs, placed on
/// the run's clock (tasks.csv's).
#[derive(Clone, Debug, Default)]
pub(super) struct Record {
    /// Every offer (regular and out-of-band heartbeats alike) as (ms,
    /// worker), in the record's order; offers from before the run began
    /// are left out.
    pub(super) beats: Vec<(u64, u32)>,
    /// When the master added each job.
    pub(super) arrivals: BTreeMap<JobId, u64>,
    /// Each map's replicas as the master knew them when it added the job
    /// (the placement; tasks.csv shows only the replicas that were read).
    pub(super) replicas: BTreeMap<(JobId, u32), Vec<WorkerId>>,
}

impl Record {
    /// `jobs` given the record's arrivals and replicas where it has them.
    pub(super) fn apply(&self, jobs: &mut [ReplayJob]) {
        for j in jobs {
            if let Some(&t) = self.arrivals.get(&j.id) {
                j.arrival_ms = t;
            }
            for t in &mut j.tasks {
                if let Some(r) = self.replicas.get(&(j.id, t.index)) {
                    t.replicas = r.clone();
                }
            }
        }
    }
}

/// Run `key`'s decision record ([`Record`]). Fails, naming the file, when
/// the run kept no whole record or its jobs cannot place the master's
/// clock.
pub(super) fn read(dir: &Path, key: &RunKey, maps: &[&TaskRow]) -> anyhow::Result<Record> {
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
    let at = |now: u64| u64::try_from(now as i64 - offset).ok();
    let worker = |w: WorkerId| {
        worker_id(&log.name(w)).with_context(|| format!("{}: a worker", record.display()))
    };
    let mut out = Record::default();
    for input in &log.inputs {
        match input {
            sched::input::Input::Offer { now, worker: w } => {
                if let Some(t) = at(*now) {
                    out.beats.push((t, worker(*w)?.0));
                }
            }
            sched::input::Input::Job {
                job, now, tasks, ..
            } => {
                out.arrivals.insert(*job, at(*now).unwrap_or(0));
                for t in tasks {
                    let r = t
                        .replicas
                        .iter()
                        .map(|&w| worker(w))
                        .collect::<anyhow::Result<_>>()?;
                    out.replicas.insert((*job, t.task.index), r);
                }
            }
            _ => {}
        }
    }
    if out.beats.is_empty() {
        anyhow::bail!(
            "{}: the record holds no offer after the run began (a record without inputs?)",
            record.display()
        );
    }
    Ok(out)
}

/// Run `maps`' and `reduces`' real lengths for [`ReplayCluster::measured_ms`]:
/// every successful attempt's (worker, source, end - start), by (job, task,
/// reduce?). A reduce reads from everywhere: its source is its worker.
pub(super) fn measured_ms(
    maps: &[&TaskRow],
    reduces: &[&TaskRow],
) -> anyhow::Result<lab::replay::MeasuredMs> {
    let mut out = lab::replay::MeasuredMs::new();
    for (rows, reduce) in [(maps, false), (reduces, true)] {
        for t in rows.iter().filter(|t| t.ok) {
            let job = t
                .job
                .strip_prefix("job-")
                .and_then(|n| n.parse().ok())
                .with_context(|| format!("job id {:?} is not job-<N>", t.job))?;
            let w = worker_id(&t.worker)?.0;
            let src = if reduce { w } else { worker_id(&t.source)?.0 };
            let len = ms(t.end_s).saturating_sub(ms(t.start_s));
            out.entry((JobId(job), t.task, reduce))
                .or_default()
                .push((w, src, len));
        }
    }
    Ok(out)
}
