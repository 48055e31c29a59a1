//! The randomized fault campaign (`master campaign`, `make campaign`): a
//! 5-worker cluster (replication 3) in network namespaces when root can
//! make them, else of local processes, runs wordcount and sort jobs at a
//! steady rate for `--minutes` while a schedule drawn from the seed
//! ([`schedule`]) partitions the master from workers, workers from each
//! other and one way only, restarts the master, kills and stops workers,
//! fills a worker's disk and slows its disk and NIC, healing each after
//! its drawn time. Then everything is healed, the jobs go on without
//! faults for `--quiet-minutes`, and the checker ([`check`]) reads the
//! whole history: every succeeded job has the reference output
//! byte for byte; every failed job lived through a fault that explains
//! it; no result of a fenced attempt was accepted and each reduce has one;
//! the input files and the kept outputs are stored whole and unchanged;
//! the catalog agrees with the workers' disks; deleted files stay
//! deleted; each node's memory, descriptors and threads at rest once the
//! jobs have ended are those it had at rest after a warm-up before the
//! first fault; no
//! process exited unasked. Results in `<results>/campaign/<stamp>/`:
//! schedule.csv (as drawn), history.csv (faults injected and healed, jobs
//! submitted and ended, in time order), runs.csv (one row a job),
//! verdicts.csv, samples.csv, rest.csv, summary.md and meta.json.

pub mod check;
pub mod inject;
pub mod jobs;
pub mod schedule;
mod setup;

use crate::results::{Provenance, ResultsDir};
use check::{Injected, JobSeen, Timing, Verdict};
use schedule::{Fault, Kind};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use setup::{Deploy, Rest};

pub struct CampaignOptions {
    pub results: PathBuf,
    /// Scratch space: the cluster's config, disks, journal and logs.
    pub work: PathBuf,
    pub bin: PathBuf,
    pub seed: u64,
    pub minutes: f64,
    /// Mean seconds between faults.
    pub mean_gap_s: f64,
    /// Seconds between job arrivals.
    pub arrival_s: f64,
    /// Seconds between resource samples.
    pub sample_s: f64,
    /// Minutes of jobs without faults after the last heal.
    pub quiet_minutes: f64,
    /// HTTPS on every link.
    pub tls: bool,
    pub deploy: Deploy,
    /// Blocks of each input file (text and records) and their size.
    pub input_blocks: u32,
    pub block_bytes: u64,
    /// Run the nodes with glibc's per-thread caches (its default); without
    /// them (the campaign's default) a node's heap in use at rest counts
    /// what it holds, not what its threads' caches keep free.
    pub thread_caches: bool,
}

/// The environment the campaign's nodes run in: glibc's per-thread caches
/// off unless asked for. Those caches (up to 7 free chunks of each small
/// size, per thread) count as in use in the heap a node reports, and they
/// fill as its threads meet more sizes: a worker's heap at rest grew by
/// +80 to +369 kB over 6 minutes with them and by at most 13 kB without
/// (results/campaign/20261130-051252 and -2, docs/experiments/testbed.md).
pub fn node_env(opts: &CampaignOptions) -> Vec<(String, String)> {
    if opts.thread_caches {
        Vec::new()
    } else {
        vec![(
            "GLIBC_TUNABLES".to_owned(),
            "glibc.malloc.tcache_count=0".to_owned(),
        )]
    }
}

/// The campaign's cluster timing (written into its config).
pub const TIMING: Timing = Timing {
    worker_timeout_s: 2.0,
    heartbeat_s: 0.1,
};

/// One line of history.csv.
#[derive(Clone, Debug, Serialize)]
struct Event {
    t_s: f64,
    event: String,
    fault: Option<u32>,
    job: Option<u32>,
    detail: String,
}

/// One row of runs.csv.
#[derive(Clone, Debug, Serialize)]
struct JobRow {
    index: u32,
    job: String,
    workload: String,
    state: String,
    submit_s: f64,
    end_s: Option<f64>,
    output_equal: Option<bool>,
    attempts: usize,
    explained_by: String,
    error: String,
}

/// What the campaign found; summary.md and meta.json carry it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CampaignFigures {
    pub deployment: String,
    pub tls: bool,
    pub minutes: f64,
    /// When the last fault was healed and the quiet minutes began.
    pub healed_s: f64,
    pub quiet_minutes: f64,
    pub faults_drawn: usize,
    pub faults_injected: usize,
    pub faults_by_kind: std::collections::BTreeMap<String, usize>,
    pub injection_errors: Vec<String>,
    pub jobs: usize,
    pub jobs_succeeded: usize,
    pub jobs_failed: usize,
    pub results_refused: u64,
    pub maps_rerun: u64,
    pub verdicts: Vec<Verdict>,
    /// Every process at rest, before the faults and after the jobs.
    pub rest: Vec<Rest>,
}

impl CampaignFigures {
    /// Every verdict that did not hold, and every injection that failed.
    pub fn problems(&self) -> Vec<String> {
        let mut p: Vec<String> = self
            .verdicts
            .iter()
            .filter(|v| !v.passed)
            .map(|v| format!("{}: {}", v.check, v.detail))
            .collect();
        if !self.injection_errors.is_empty() {
            p.push(format!(
                "faults not injected: {}",
                self.injection_errors.join("; ")
            ));
        }
        p
    }
}

/// Runs the faults of `schedule` against the cluster until `window_s`,
/// healing each at its time; returns them as injected, with the history.
async fn run_faults(
    inj: &mut inject::Injector,
    schedule: &[Fault],
    t0: Instant,
    window_s: f64,
    history: &mut Vec<Event>,
) -> Vec<Injected> {
    let mut done: Vec<Injected> = Vec::new();
    let mut live: Vec<(usize, Fault)> = Vec::new();
    let mut next = 0;
    loop {
        let t = t0.elapsed().as_secs_f64();
        // Heals due first: a worker's next fault may follow at once.
        let (due, rest): (Vec<_>, Vec<_>) = live.into_iter().partition(|(_, f)| f.heal_s <= t);
        live = rest;
        for (i, f) in due {
            let r = inj.heal(&f).await;
            let t = t0.elapsed().as_secs_f64();
            done[i].heal_s = t;
            let detail = match r {
                Ok(()) => String::new(),
                Err(e) => format!("heal failed: {e:#}"),
            };
            history.push(event(t, "heal", Some(f.id), &f, detail));
        }
        while next < schedule.len() && schedule[next].at_s <= t {
            let f = schedule[next].clone();
            next += 1;
            let at = t0.elapsed().as_secs_f64();
            let r = inj.inject(&f).await;
            let (detail, error) = match r {
                Ok(d) => (d, String::new()),
                Err(e) => (String::new(), format!("{e:#}")),
            };
            history.push(event(
                at,
                "inject",
                Some(f.id),
                &f,
                format!("{detail}{error}"),
            ));
            done.push(Injected {
                id: f.id,
                kind: f.kind,
                workers: f.workers.clone(),
                at_s: at,
                heal_s: f.heal_s,
                error: error.clone(),
            });
            if error.is_empty() {
                live.push((done.len() - 1, f));
            }
        }
        if next >= schedule.len() && live.is_empty() && t >= window_s {
            return done;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn event(t_s: f64, what: &str, fault: Option<u32>, f: &Fault, detail: String) -> Event {
    Event {
        t_s,
        event: format!("{what} {}", f.kind.name()),
        fault,
        job: None,
        detail: if f.workers.is_empty() {
            detail
        } else {
            format!("{} {detail}", f.workers.join("|"))
                .trim()
                .to_owned()
        },
    }
}

/// Runs the campaign; returns its results directory and figures.
pub async fn run(opts: &CampaignOptions) -> anyhow::Result<(PathBuf, CampaignFigures)> {
    let started_ms = common::unix_ms();
    // The commit and the tree as the campaign starts (the code that runs),
    // not as it ends half an hour later.
    let provenance = Provenance::capture(started_ms);
    crate::ops::local::set_node_env(node_env(opts));
    let c = setup::Cluster::start(opts).await?;
    jobs::warm_up(&c.client, &c.refs).await?;
    let mut rest = setup::at_rest(&c.probes(), "before").await;
    let mut inj = inject::Injector::new(c.target()?);
    let kinds = inj.kinds();
    let window_s = opts.minutes * 60.0;
    let schedule = schedule::draw(&schedule::Plan {
        seed: opts.seed,
        window_s,
        mean_gap_s: opts.mean_gap_s,
        workers: &c.names,
        kinds: &kinds,
        max_out: 2,
    });
    let t0 = Instant::now();
    let t0_ms = common::unix_ms();
    let stop = Arc::new(AtomicBool::new(false));
    // The jobs on this task beside the faults (reading a file is not Send).
    let driver = jobs::drive(
        c.client.clone(),
        c.refs.clone(),
        t0,
        t0_ms,
        opts.arrival_s,
        stop.clone(),
        Duration::from_secs(300),
    );
    let sampler = setup::sample(c.probes(), t0, opts.sample_s, stop.clone());
    let mut history = Vec::new();
    let quiet_s = opts.quiet_minutes * 60.0;
    let faults = async {
        let done = run_faults(&mut inj, &schedule, t0, window_s, &mut history).await;
        let healed_s = t0.elapsed().as_secs_f64();
        let healed = setup::healed(&c).await;
        // The quiet minutes: jobs as before, no fault.
        let left = healed_s + quiet_s - t0.elapsed().as_secs_f64();
        if left > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(left)).await;
        }
        stop.store(true, Ordering::Relaxed);
        (done, healed, healed_s)
    };
    let (driven, (injected, healed, healed_s)) = tokio::join!(driver, faults);
    let samples = sampler.await?;
    let end = setup::end_checks(&c, &driven).await;
    let mut verdicts = vec![check::outputs(&driven.jobs)];
    let (failed, named) = check::failures(&driven.jobs, &injected, TIMING);
    verdicts.push(failed);
    verdicts.push(check::fencing(&driven.jobs, &injected, TIMING));
    verdicts.push(healed);
    verdicts.extend(end.verdicts);
    let after = setup::at_rest(&c.probes(), "after").await;
    verdicts.push(setup::rested(&rest, &after));
    rest.extend(after);
    let summary = c.client.cluster().await.ok();
    let figures = CampaignFigures {
        deployment: c.deployment.clone(),
        tls: opts.tls,
        minutes: opts.minutes,
        healed_s,
        quiet_minutes: opts.quiet_minutes,
        faults_drawn: schedule.len(),
        faults_injected: injected.iter().filter(|f| f.error.is_empty()).count(),
        faults_by_kind: Kind::ALL
            .iter()
            .map(|k| {
                let n = injected
                    .iter()
                    .filter(|f| f.kind == *k && f.error.is_empty())
                    .count();
                (k.name().to_owned(), n)
            })
            .collect(),
        injection_errors: injected
            .iter()
            .filter(|f| !f.error.is_empty())
            .map(|f| format!("fault {} ({}): {}", f.id, f.kind.name(), f.error))
            .collect(),
        jobs: driven.jobs.len(),
        jobs_succeeded: driven
            .jobs
            .iter()
            .filter(|j| j.state == "succeeded")
            .count(),
        jobs_failed: driven
            .jobs
            .iter()
            .filter(|j| j.state != "succeeded")
            .count(),
        results_refused: summary.as_ref().map_or(0, |s| s.results_refused),
        maps_rerun: summary.as_ref().map_or(0, |s| s.maps_rerun),
        verdicts,
        rest,
    };
    for j in &driven.jobs {
        history.push(job_event(j.submit_s, "submit", j, String::new()));
        if let Some(e) = j.end_s {
            history.push(job_event(e, &j.state, j, j.error.clone()));
        }
    }
    history.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let dir = write(
        opts,
        provenance,
        &schedule,
        &history,
        &driven.jobs,
        &named,
        &samples,
        &figures,
    )?;
    Ok((dir, figures))
}

fn job_event(t_s: f64, what: &str, j: &JobSeen, detail: String) -> Event {
    Event {
        t_s,
        event: format!("job {what}"),
        fault: None,
        job: Some(j.index),
        detail: format!("{} {} {detail}", j.workload, j.job)
            .trim()
            .to_owned(),
    }
}

/// `<results>/campaign/<stamp>/`, every file written whole.
#[allow(clippy::too_many_arguments)]
fn write(
    opts: &CampaignOptions,
    mut provenance: Provenance,
    schedule: &[Fault],
    history: &[Event],
    jobs: &[JobSeen],
    named: &[(u32, String)],
    samples: &[crate::soak::Sample],
    figures: &CampaignFigures,
) -> anyhow::Result<PathBuf> {
    let dir = ResultsDir::create(&opts.results, "campaign", provenance.started_unix_ms)?;
    #[derive(Serialize)]
    struct Drawn<'a> {
        id: u32,
        kind: &'static str,
        at_s: f64,
        heal_s: f64,
        workers: String,
        #[serde(skip)]
        _f: &'a Fault,
    }
    let drawn: Vec<Drawn> = schedule
        .iter()
        .map(|f| Drawn {
            id: f.id,
            kind: f.kind.name(),
            at_s: f.at_s,
            heal_s: f.heal_s,
            workers: f.workers.join("|"),
            _f: f,
        })
        .collect();
    dir.write_csv("schedule.csv", &drawn)?;
    dir.write_csv("history.csv", history)?;
    dir.write_csv("verdicts.csv", &figures.verdicts)?;
    dir.write_csv("samples.csv", samples)?;
    dir.write_csv("rest.csv", &figures.rest)?;
    #[derive(Serialize)]
    struct AttemptRow<'a> {
        job: u32,
        task: u32,
        reduce: bool,
        worker: &'a str,
        source: &'a str,
        start_s: f64,
        end_s: f64,
        ok: bool,
    }
    let attempts: Vec<AttemptRow> = jobs
        .iter()
        .flat_map(|j| {
            j.attempts.iter().map(|a| AttemptRow {
                job: j.index,
                task: a.task,
                reduce: a.reduce,
                worker: &a.worker,
                source: &a.source,
                start_s: a.start_s,
                end_s: a.end_s,
                ok: a.ok,
            })
        })
        .collect();
    dir.write_csv("attempts.csv", &attempts)?;
    let rows: Vec<JobRow> = jobs
        .iter()
        .map(|j| JobRow {
            index: j.index,
            job: j.job.clone(),
            workload: j.workload.clone(),
            state: j.state.clone(),
            submit_s: j.submit_s,
            end_s: j.end_s,
            output_equal: j.output_equal,
            attempts: j.attempts.len(),
            explained_by: named
                .iter()
                .find(|(i, _)| *i == j.index)
                .map(|(_, f)| f.clone())
                .unwrap_or_default(),
            error: j.error.clone(),
        })
        .collect();
    dir.write_runs(&rows)?;
    dir.write_summary(&summary(opts, figures))?;
    provenance.finish();
    dir.write_meta(&serde_json::json!({
        "experiment": "campaign",
        "seed": opts.seed,
        "minutes": opts.minutes,
        "quiet_minutes": opts.quiet_minutes,
        "tls": opts.tls,
        "mean_gap_s": opts.mean_gap_s,
        "arrival_s": opts.arrival_s,
        "input_blocks": opts.input_blocks,
        "block_bytes": opts.block_bytes,
        "node_env": node_env(opts)
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        "figures": figures,
        "provenance": provenance,
    }))?;
    Ok(dir.path().to_path_buf())
}

fn summary(opts: &CampaignOptions, f: &CampaignFigures) -> String {
    let mut s = format!(
        "# fault campaign, seed {}\n\n{} workers ({}, {}), replication 3, {:.0} minutes of faults \
         (one every {:.0} s on average, drawn from the seed), the last healed at {:.0} s, then \
         {:.0} minutes without faults; a wordcount or a sort of {} blocks \
         of {:.1} MB every {:.0} s (at most 4 running) throughout. The nodes ran {}.\n\n\
         | kind | injected |\n|---|---|\n",
        opts.seed,
        setup::WORKERS,
        f.deployment,
        if f.tls { "HTTPS" } else { "plain HTTP" },
        f.minutes,
        opts.mean_gap_s,
        f.healed_s,
        f.quiet_minutes,
        opts.input_blocks,
        opts.block_bytes as f64 / 1e6,
        opts.arrival_s,
        if opts.thread_caches {
            "with glibc's per-thread malloc caches (its default)"
        } else {
            "without glibc's per-thread malloc caches (GLIBC_TUNABLES=glibc.malloc.tcache_count=0)"
        }
    );
    for (k, n) in &f.faults_by_kind {
        s += &format!("| {k} | {n} |\n");
    }
    s += &format!(
        "\n{} jobs: {} succeeded, {} failed or not accepted; since the master's last restart, {} \
         results of fenced attempts refused and {} maps run again.\n\n\
         | verdict | held | detail |\n|---|---|---|\n",
        f.jobs, f.jobs_succeeded, f.jobs_failed, f.results_refused, f.maps_rerun
    );
    for v in &f.verdicts {
        let d: String = v.detail.chars().take(380).collect();
        s += &format!(
            "| {} | {} | {} |\n",
            v.check,
            if v.passed { "yes" } else { "NO" },
            d
        );
    }
    let p = f.problems();
    s += &format!(
        "\nVerdict: {}\n\nFiles: `schedule.csv` (the faults as drawn), `history.csv` (faults \
         injected and healed, jobs submitted and ended), `runs.csv` (one row a job), \
         `attempts.csv` (every attempt of every job), `verdicts.csv`, `samples.csv` (memory, \
         descriptors, threads, each node's heap, every 30 s), `rest.csv` (each process at rest \
         before the faults and after the jobs), `meta.json`.\n",
        if p.is_empty() {
            "every check held".to_owned()
        } else {
            p.join("; ")
        }
    );
    s
}
