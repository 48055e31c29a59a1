//! The campaign's jobs: wordcount and sort in turn at a steady rate (at
//! most `MAX_RUNNING` at once), each followed to its end through whatever
//! the faults do to the master, its output compared with the reference
//! when it succeeded and then deleted (every `KEEP_EVERY`-th is kept, at
//! most `KEEP_MOST`, for the end's check that stored files neither vanish
//! nor change).

use super::check::{Attempt, JobSeen};
use crate::ops::client::MasterClient;
use crate::ops::{files, verify};
use common::wire::{JobReport, JobState, JobSubmit, TaskKind};
use common::JobId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workloads::Workload;

/// Jobs running at once, at most: the rate holds unless faults slow the
/// cluster down, and then arrivals wait instead of piling up.
const MAX_RUNNING: usize = 4;
/// Every this many jobs, the output stays stored until the end.
pub const KEEP_EVERY: u32 = 25;
/// Outputs kept at most (each worker's disk is small).
pub const KEEP_MOST: usize = 8;
/// How long a submission is tried again while the master is unreachable.
const SUBMIT_FOR: Duration = Duration::from_secs(30);
/// How long a delete is tried again through the faults.
const DELETE_FOR: Duration = Duration::from_secs(60);

/// The references every output is compared with.
#[derive(Clone)]
pub struct References {
    pub counts: Arc<Vec<(Vec<u8>, u64)>>,
    pub sorted: Arc<Vec<u8>>,
}

impl References {
    pub fn equal(&self, w: Workload, out: &[u8]) -> bool {
        match w {
            Workload::Wordcount => {
                verify::wordcount_pairs(out).is_ok_and(|got| got == *self.counts)
            }
            _ => out == self.sorted.as_slice(),
        }
    }
}

/// What the driver hands back: every job, and the outputs kept.
pub struct Driven {
    pub jobs: Vec<JobSeen>,
    /// (output file, workload) of the kept outputs that were equal.
    pub kept: Vec<(String, Workload)>,
    /// Outputs whose delete the master acknowledged: they must stay gone.
    pub deleted: Vec<String>,
    /// Outputs neither deleted nor found gone within `DELETE_FOR`.
    pub undeleted: Vec<String>,
}

fn workload(i: u32) -> Workload {
    [Workload::Wordcount, Workload::Sort][i as usize % 2]
}

/// Ended jobs the master keeps (its history is full after the warm-up).
pub const RETAINED_JOBS: u32 = 24;
/// Jobs the warm-up runs before the faults, `MAX_RUNNING` at a time: as
/// many as the master retains, so its job history is as full at the first
/// rest as at the last.
pub const WARM_UP_JOBS: u32 = RETAINED_JOBS;

/// Runs `WARM_UP_JOBS` jobs of the campaign's mix before any fault (named
/// `warm-<i>`), each output checked and deleted: the processes' pools,
/// caches and connections as warm as they will be.
pub async fn warm_up(client: &MasterClient, refs: &References) -> anyhow::Result<()> {
    let mut i = 0;
    while i < WARM_UP_JOBS {
        let mut ids = Vec::new();
        for _ in 0..MAX_RUNNING.min((WARM_UP_JOBS - i) as usize) {
            let mut job = submission(i);
            job.name = Some(format!("warm-{i}"));
            job.output = Some(format!("warm-{i}.out"));
            ids.push((i, client.submit(&job).await?));
            i += 1;
        }
        for (i, id) in ids {
            let rep = client.wait_job(id).await?;
            anyhow::ensure!(
                rep.state == JobState::Succeeded,
                "warm-up job warm-{i} ended {:?}: {}",
                rep.state,
                rep.error.unwrap_or_default()
            );
            let output = rep.output.unwrap_or_default();
            let bytes = files::read_file(client, &output).await?;
            anyhow::ensure!(
                refs.equal(workload(i), &bytes),
                "warm-up job warm-{i}: output differs from the reference"
            );
            client.delete_file(&output).await?;
        }
    }
    Ok(())
}

fn submission(i: u32) -> JobSubmit {
    let w = workload(i);
    let mut job = JobSubmit::new(w, if w == Workload::Sort { "recs" } else { "text" });
    job.name = Some(format!("campaign-{i}"));
    job.reduces = Some(2);
    job.output = Some(format!("campaign-{i}.out"));
    job
}

/// The job's attempts on the campaign's clock (seconds from `t0_ms`).
fn attempts(r: &JobReport, t0_ms: u64) -> Vec<Attempt> {
    let at = |ms: u64| (r.submit_unix_ms + ms) as f64 / 1000.0 - t0_ms as f64 / 1000.0;
    r.attempts
        .iter()
        .map(|a| Attempt {
            task: a.task,
            reduce: a.kind == TaskKind::Reduce,
            worker: a.worker.clone(),
            source: if a.kind == TaskKind::Map {
                a.source.clone()
            } else {
                String::new()
            },
            start_s: at(a.start_ms),
            end_s: at(a.end_ms),
            ok: a.ok,
        })
        .collect()
}

/// Deletes `output`, trying again for `DELETE_FOR`: acknowledged, it goes
/// in `out.deleted`; found gone without an answer (the answer lost, or a
/// failed job's output never made), nowhere; else in `out.undeleted`.
async fn delete(client: &MasterClient, output: &str, out: &mut Driven) {
    let deadline = Instant::now() + DELETE_FOR;
    loop {
        if client.delete_file(output).await.is_ok() {
            out.deleted.push(output.to_owned());
            return;
        }
        if client.file_gone(output).await.unwrap_or(false) {
            return;
        }
        if Instant::now() > deadline {
            out.undeleted.push(output.to_owned());
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Submits job `i`, trying again while the master cannot be reached; a
/// submission whose answer was lost is found by its name.
async fn submit(client: &MasterClient, i: u32) -> Result<JobId, String> {
    let deadline = Instant::now() + SUBMIT_FOR;
    let name = format!("campaign-{i}");
    loop {
        match client.submit(&submission(i)).await {
            Ok(id) => return Ok(id),
            Err(e) => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if let Ok(jobs) = client.jobs().await {
                    if let Some(r) = jobs.iter().find(|r| r.name == name) {
                        return Ok(r.job);
                    }
                }
                if Instant::now() > deadline {
                    return Err(format!("{e:#}"));
                }
            }
        }
    }
}

struct Running {
    index: u32,
    id: JobId,
    submit_s: f64,
}

/// Runs jobs from `t0` every `arrival_s` until `stop` is set, then
/// follows the running ones to their end (at most `drain`).
pub async fn drive(
    client: MasterClient,
    refs: References,
    t0: Instant,
    t0_ms: u64,
    arrival_s: f64,
    stop: Arc<AtomicBool>,
    drain: Duration,
) -> Driven {
    let mut out = Driven {
        jobs: Vec::new(),
        kept: Vec::new(),
        deleted: Vec::new(),
        undeleted: Vec::new(),
    };
    let mut running: Vec<Running> = Vec::new();
    let mut next = 0u32;
    let mut drain_until: Option<Instant> = None;
    loop {
        let now = t0.elapsed().as_secs_f64();
        let stopping = stop.load(Ordering::Relaxed);
        if !stopping && now >= next as f64 * arrival_s && running.len() < MAX_RUNNING {
            let i = next;
            next += 1;
            match submit(&client, i).await {
                Ok(id) => running.push(Running {
                    index: i,
                    id,
                    submit_s: now,
                }),
                Err(e) => out.jobs.push(JobSeen {
                    index: i,
                    job: String::new(),
                    workload: workload(i).to_string(),
                    submit_s: now,
                    end_s: Some(t0.elapsed().as_secs_f64()),
                    state: "not-accepted".into(),
                    error: e,
                    output_equal: None,
                    attempts: Vec::new(),
                }),
            }
        }
        let mut still = Vec::new();
        for r in running.drain(..) {
            match client.job(r.id, None).await {
                Ok(rep) if rep.state.is_done() => {
                    let seen = ended(&client, &refs, &r, rep, t0, t0_ms, &mut out).await;
                    out.jobs.push(seen);
                }
                _ => still.push(r),
            }
        }
        running = still;
        if stopping {
            let until = *drain_until.get_or_insert_with(|| Instant::now() + drain);
            if running.is_empty() || Instant::now() > until {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Jobs still running at the drain's end are reported as they are.
    for r in running {
        let rep = client.job(r.id, None).await.ok();
        out.jobs.push(JobSeen {
            index: r.index,
            job: r.id.to_string(),
            workload: workload(r.index).to_string(),
            submit_s: r.submit_s,
            end_s: None,
            state: rep.as_ref().map_or("unknown".into(), |x| {
                format!("{:?}", x.state).to_lowercase()
            }),
            error: "still running when the campaign ended".into(),
            output_equal: None,
            attempts: rep.map(|x| attempts(&x, t0_ms)).unwrap_or_default(),
        });
    }
    out.jobs.sort_by_key(|j| j.index);
    out
}

/// A job seen ending: its output read and compared (tried for a while
/// through the faults), then deleted unless kept.
async fn ended(
    client: &MasterClient,
    refs: &References,
    r: &Running,
    rep: JobReport,
    t0: Instant,
    t0_ms: u64,
    out: &mut Driven,
) -> JobSeen {
    let end_s = t0.elapsed().as_secs_f64();
    let w = workload(r.index);
    let mut output_equal = None;
    let mut unread = String::new();
    let output = rep.output.clone().unwrap_or_default();
    if rep.state == JobState::Succeeded {
        let deadline = Instant::now() + Duration::from_secs(60);
        while output_equal.is_none() && Instant::now() < deadline {
            match files::read_file(client, &output).await {
                Ok(bytes) => output_equal = Some(refs.equal(w, &bytes)),
                Err(e) => {
                    unread = format!("reading {output}: {e:#}");
                    tokio::time::sleep(Duration::from_secs(1)).await
                }
            }
        }
    }
    if output_equal == Some(true)
        && r.index.is_multiple_of(KEEP_EVERY)
        && out.kept.len() < KEEP_MOST
    {
        out.kept.push((output.clone(), w));
    } else if !output.is_empty() {
        // A failed job's partial output goes too; tried through the faults
        // (a restarting master), as a user would: left outputs fill disks.
        delete(client, &output, out).await;
    }
    JobSeen {
        index: r.index,
        job: r.id.to_string(),
        workload: w.to_string(),
        submit_s: r.submit_s,
        end_s: Some(end_s),
        state: format!("{:?}", rep.state).to_lowercase(),
        error: match (&rep.error, output_equal) {
            (Some(e), _) => e.clone(),
            (None, None) => unread,
            _ => String::new(),
        },
        output_equal,
        attempts: attempts(&rep, t0_ms),
    }
}
