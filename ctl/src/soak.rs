//! The soak run (`master soak`, `make soak`): the chaos run's cluster and
//! job mix (5 workers, replication 3, wordcount, sort and input-sink over
//! the same two files) at a steady arrival rate for a stated time, without
//! faults (a killed worker starts with fresh memory, which would hide
//! growth). Every job must succeed and every output equal coreutils'; each
//! output is deleted once checked, so the disk stays flat. Every
//! `sample_s` the master, every worker and this client are sampled for
//! resident memory, open file descriptors and threads (from /proc), and
//! the cluster's directory for disk use; descriptors and threads are read
//! each second between samples, and each sample keeps the fewest (what the
//! process held all along; see [`growth`]). The run fails if any job fails,
//! any output differs, or a process's memory, descriptors or threads grew
//! by more than 10% between the reference samples (from the tenth minute,
//! or a third of a run shorter than 20 minutes) and the last. Results in
//! `<results>/soak/<stamp>/`: samples.csv, runs.csv, summary.md, meta.json.

use crate::chaos::{ChaosOptions, Cluster};
use crate::ops::{files, local, verify};
use crate::results::{Provenance, VerdictRun};
use common::wire::{JobState, JobSubmit};
use common::JobId;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workloads::Workload;

/// Most a figure may grow between the reference sample and the last.
pub const GROWTH_LIMIT: f64 = 0.10;
/// Jobs kept in the master's memory during a soak (`master.retained_jobs`):
/// fewer than a soak runs, so that the retention is what bounds it.
const RETAINED_JOBS: u64 = 100;

pub struct SoakOptions {
    pub results: PathBuf,
    pub work: PathBuf,
    pub bin: PathBuf,
    pub seed: u64,
    pub minutes: f64,
    /// Seconds between samples.
    pub sample_s: f64,
    /// Seconds between job arrivals.
    pub arrival_s: f64,
}

/// One process (or the cluster's disk) at one time.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    pub t_s: f64,
    pub process: String,
    pub rss_kb: u64,
    /// The fewest open descriptors and threads read (once a second) since
    /// the sample before: what the process held through the whole interval.
    /// A leaked descriptor or thread stays and so raises it; a socket of a
    /// transfer in flight or a blocking thread used for a moment does not.
    pub fds: u64,
    pub threads: u64,
    /// The most open descriptors read in the same interval.
    pub fds_peak: u64,
    /// The cluster's directory (block stores, map output, logs, journal).
    pub disk_kb: u64,
    /// A worker's heap in use (allocated, not freed) and its task buffers
    /// pooled for reuse, kB, from its `/metrics` (what its resident memory
    /// holds besides the allocator's free pages).
    pub heap_kb: Option<u64>,
    pub pooled_kb: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
struct JobRow {
    job: String,
    workload: String,
    state: String,
    jct_s: f64,
    output_equal: bool,
    error: String,
}

/// A process's growth between the reference sample and the last.
#[derive(Clone, Debug, Serialize)]
pub struct Growth {
    pub process: String,
    pub from_t_s: f64,
    pub to_t_s: f64,
    pub rss_kb: (u64, u64),
    pub fds: (u64, u64),
    pub threads: (u64, u64),
    /// A worker's heap in use and pooled buffers (kB), the same medians.
    pub heap_kb: Option<(u64, u64)>,
    pub pooled_kb: Option<(u64, u64)>,
}

impl Growth {
    fn grew(a: u64, b: u64) -> f64 {
        if a == 0 {
            if b == 0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            b as f64 / a as f64 - 1.0
        }
    }

    /// What grew by more than the limit.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        for (what, (a, b)) in [
            ("resident memory (kB)", self.rss_kb),
            ("open descriptors", self.fds),
            ("threads", self.threads),
        ] {
            let g = Self::grew(a, b);
            if g > GROWTH_LIMIT {
                p.push(format!(
                    "{}: {what} grew {:.0}% ({a} at {:.0} s -> {b} at {:.0} s)",
                    self.process,
                    g * 100.0,
                    self.from_t_s,
                    self.to_t_s
                ));
            }
        }
        p
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SoakFigures {
    pub minutes: f64,
    pub jobs_submitted: u32,
    pub jobs_succeeded: u32,
    pub outputs_checked: u32,
    pub outputs_equal: u32,
    pub growth: Vec<Growth>,
    pub disk_kb: (u64, u64),
    pub unexpected_exits: Vec<String>,
}

impl SoakFigures {
    pub fn problems(&self) -> Vec<String> {
        let mut p = crate::chaos::job_problems(
            self.jobs_succeeded,
            self.jobs_submitted,
            self.outputs_equal,
            self.outputs_checked,
        );
        if self.growth.is_empty() {
            p.push("too few samples to compare".into());
        }
        for g in &self.growth {
            p.extend(g.problems());
        }
        if !self.unexpected_exits.is_empty() {
            p.push(format!("processes exited: {:?}", self.unexpected_exits));
        }
        p
    }
}

/// `/proc/<pid>`: (resident kB, open descriptors, threads).
pub fn proc_figures(pid: u32) -> anyhow::Result<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64;
    Ok((field("VmRSS:"), fds, field("Threads:")))
}

/// Bytes of files under `dir` (kB, as allocated).
pub(crate) fn disk_kb(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total / 1024
}

/// A worker's heap in use and pooled buffers (kB), from its `/metrics`;
/// None where it does not say (another allocator than glibc's).
async fn worker_memory(c: &Cluster, name: &str) -> (Option<u64>, Option<u64>) {
    let Some(w) = c.cfg.worker.iter().find(|w| w.name == name) else {
        return (None, None);
    };
    let text = async {
        c.client
            .http()
            .get(format!("http://{}/metrics", w.listen))
            .bearer_auth(c.cfg.secret(common::credentials::Role::Client))
            .timeout(Duration::from_secs(10))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await
    };
    let Ok(text) = text.await else {
        return (None, None);
    };
    (
        metric_kb(&text, "mrtb_worker_heap_in_use_bytes"),
        metric_kb(&text, "mrtb_worker_buffer_pool_free_bytes"),
    )
}

/// A byte gauge of a worker's metrics text, in kB.
pub fn metric_kb(text: &str, metric: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(metric))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|b| (b / 1024.0).round() as u64)
}

/// Seconds between two readings of each process's descriptors and threads.
const READING_S: f64 = 1.0;

/// Each process's fewest descriptors and threads, and most descriptors,
/// read since the last sample.
#[derive(Default)]
struct Readings(std::collections::BTreeMap<String, (u64, u64, u64)>);

impl Readings {
    fn add(&mut self, name: &str, fds: u64, threads: u64) {
        let e = self
            .0
            .entry(name.to_owned())
            .or_insert((u64::MAX, u64::MAX, 0));
        *e = (e.0.min(fds), e.1.min(threads), e.2.max(fds));
    }

    /// Reads every process of the cluster and this client once.
    fn read(&mut self, run_dir: &Path) -> anyhow::Result<()> {
        for (name, pid) in processes(run_dir)? {
            // A process that just exited is reported by the sample.
            if let Ok((_, fds, threads)) = proc_figures(pid) {
                self.add(&name, fds, threads);
            }
        }
        Ok(())
    }

    /// `name`'s (fewest descriptors, fewest threads, most descriptors)
    /// since the last take, counting `now`'s reading; starts over.
    fn take(&mut self, name: &str, now: (u64, u64)) -> (u64, u64, u64) {
        self.add(name, now.0, now.1);
        self.0.remove(name).unwrap_or((now.0, now.1, now.0))
    }
}

fn processes(run_dir: &Path) -> anyhow::Result<Vec<(String, u32)>> {
    let mut procs: Vec<(String, u32)> = local::processes(run_dir)?
        .into_iter()
        .map(|p| (p.name, p.pid))
        .collect();
    procs.push(("client".into(), std::process::id()));
    Ok(procs)
}

/// [`sample`], with each worker's heap and pooled buffers.
async fn sample_all(
    c: &Cluster,
    work: &Path,
    t_s: f64,
    readings: &mut Readings,
) -> anyhow::Result<Vec<Sample>> {
    let mut out = sample(&c.run_dir, work, t_s, readings)?;
    for s in &mut out {
        if s.process.starts_with('w') {
            (s.heap_kb, s.pooled_kb) = worker_memory(c, &s.process).await;
        }
    }
    Ok(out)
}

/// One sample of every process of the cluster and of this client.
fn sample(
    run_dir: &Path,
    work: &Path,
    t_s: f64,
    readings: &mut Readings,
) -> anyhow::Result<Vec<Sample>> {
    let disk = disk_kb(work);
    let mut out = Vec::new();
    for (name, pid) in processes(run_dir)? {
        let (rss_kb, fds, threads) = proc_figures(pid)?;
        let (fds, threads, fds_peak) = readings.take(&name, (fds, threads));
        out.push(Sample {
            t_s,
            process: name,
            rss_kb,
            fds,
            threads,
            fds_peak,
            disk_kb: disk,
            heap_kb: None,
            pooled_kb: None,
        });
    }
    Ok(out)
}

/// The job mix: wordcount, sort and input-sink in turn.
fn job(i: u32) -> JobSubmit {
    let w = [Workload::Wordcount, Workload::Sort, Workload::InputSink][i as usize % 3];
    let mut job = JobSubmit::new(w, if w == Workload::Sort { "recs" } else { "text" });
    job.name = Some(format!("soak-{i}"));
    if w.has_reduce() {
        job.reduces = Some(2);
        job.output = Some(format!("soak-{i}.out"));
    }
    job
}

/// Waits for job `id`, checks its output against coreutils' and deletes it.
async fn check(c: &Cluster, id: JobId, w: Workload) -> anyhow::Result<JobRow> {
    let r = c.client.wait_job(id).await?;
    let ok = r.state == JobState::Succeeded;
    let mut equal = !w.has_reduce();
    if ok && w.has_reduce() {
        let name = r.output.clone().unwrap_or_default();
        let out = files::read_file(&c.client, &name).await?;
        equal = match w {
            Workload::Wordcount => verify::wordcount_pairs(&out).is_ok_and(|g| g == c.want_counts),
            _ => out == c.want_sorted,
        };
        c.client.delete_file(&name).await?;
    }
    Ok(JobRow {
        job: id.to_string(),
        workload: w.to_string(),
        state: format!("{:?}", r.state).to_lowercase(),
        jct_s: r.jct_ms.map_or(f64::NAN, |ms| ms as f64 / 1000.0),
        output_equal: ok && equal,
        error: r.error.unwrap_or_default(),
    })
}

pub async fn run(opts: &SoakOptions) -> anyhow::Result<(PathBuf, SoakFigures)> {
    // Taken before anything runs: the commit and tree the run was made at.
    let provenance = Provenance::capture(common::unix_ms());
    let c = Cluster::start_with(
        &ChaosOptions {
            results: opts.results.clone(),
            work: opts.work.clone(),
            bin: opts.bin.clone(),
            seed: opts.seed,
            jobs: 0,
        },
        &format!("retained_jobs = {RETAINED_JOBS}"),
    )
    .await?;
    let work = std::path::absolute(&opts.work)?;
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(opts.minutes * 60.0);
    let mut readings = Readings::default();
    let mut samples = sample_all(&c, &work, 0.0, &mut readings).await?;
    let mut next_sample = t0 + Duration::from_secs_f64(opts.sample_s);
    let mut next_reading = t0 + Duration::from_secs_f64(READING_S);
    let mut next_job = t0;
    let mut figures = SoakFigures {
        minutes: opts.minutes,
        ..Default::default()
    };
    let mut rows = Vec::new();
    // Jobs in flight, oldest first: checked in order, so at most a few wait.
    let mut in_flight: std::collections::VecDeque<(JobId, Workload)> = Default::default();
    let mut i = 0u32;
    while Instant::now() < end || !in_flight.is_empty() {
        let now = Instant::now();
        if now >= next_reading {
            readings.read(&c.run_dir)?;
            next_reading += Duration::from_secs_f64(READING_S);
        }
        if now >= next_sample {
            let t_s = t0.elapsed().as_secs_f64();
            samples.extend(sample_all(&c, &work, t_s, &mut readings).await?);
            next_sample += Duration::from_secs_f64(opts.sample_s);
            let last = samples.last().map_or(0, |s| s.disk_kb);
            tracing::info!(
                t_s = t0.elapsed().as_secs(),
                jobs = i,
                disk_kb = last,
                "soak sample"
            );
        }
        if now >= next_job && now < end {
            let j = job(i);
            let w = j.workload;
            in_flight.push_back((c.client.submit(&j).await?, w));
            figures.jobs_submitted += 1;
            i += 1;
            next_job += Duration::from_secs_f64(opts.arrival_s);
            continue;
        }
        // Check the oldest job once it ended (or wait a little).
        if let Some(&(id, w)) = in_flight.front() {
            if c.client.job(id, None).await?.state.is_done() {
                in_flight.pop_front();
                let row = check(&c, id, w).await?;
                figures.jobs_succeeded += u32::from(row.state == "succeeded");
                if w.has_reduce() {
                    figures.outputs_checked += 1;
                    figures.outputs_equal += u32::from(row.output_equal);
                }
                rows.push(row);
                continue;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let t_s = t0.elapsed().as_secs_f64();
    samples.extend(sample_all(&c, &work, t_s, &mut readings).await?);
    for p in local::processes(&c.run_dir)? {
        if !local::is_running(p.pid) {
            figures.unexpected_exits.push(p.name);
        }
    }
    figures.growth = growth(&samples, opts.minutes * 60.0);
    let first_disk = samples.first().map_or(0, |s| s.disk_kb);
    figures.disk_kb = (first_disk, samples.last().map_or(0, |s| s.disk_kb));
    write_results(opts, provenance, &rows, &samples, &figures)
}

/// Samples each end of the comparison takes the median of, so that one
/// transient (a blocking thread spawned for a moment, a connection being
/// opened) is not taken for growth.
pub const WINDOW: usize = 5;

/// Each process's growth from the reference (the `WINDOW` samples from the
/// tenth minute of a run of 20 minutes or more, from a third of a shorter
/// one) to its last `WINDOW` samples. Memory is compared by the windows'
/// medians. Descriptors and threads by the least of each window: each
/// sample's figure is already the fewest read over its interval, so this is
/// what the process held through all of the window. At any moment a worker
/// holds a few sockets of transfers in flight (17-24 descriptors from one
/// minute's sample to the next in the soaks of 2026-11-26, with no trend),
/// while a leaked descriptor or thread stays, and so raises the floor.
pub fn growth(samples: &[Sample], run_s: f64) -> Vec<Growth> {
    let from = if run_s >= 1200.0 { 600.0 } else { run_s / 3.0 };
    let mut names: Vec<&str> = samples.iter().map(|s| s.process.as_str()).collect();
    names.sort();
    names.dedup();
    let median = |w: &[&Sample], f: fn(&Sample) -> u64| -> u64 {
        let mut v: Vec<u64> = w.iter().map(|s| f(s)).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let floor =
        |w: &[&Sample], f: fn(&Sample) -> u64| -> u64 { w.iter().map(|s| f(s)).min().unwrap_or(0) };
    names
        .into_iter()
        .filter_map(|n| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.process == n).collect();
            let start = mine.iter().position(|s| s.t_s >= from)?;
            // Fewer samples after the reference: smaller windows apart.
            let w = WINDOW.min((mine.len() - start) / 2);
            if w == 0 {
                return None;
            }
            let a = &mine[start..start + w];
            let b = &mine[mine.len() - w..];
            Some(Growth {
                process: n.to_owned(),
                from_t_s: a[0].t_s,
                to_t_s: b[b.len() - 1].t_s,
                rss_kb: (median(a, |s| s.rss_kb), median(b, |s| s.rss_kb)),
                fds: (floor(a, |s| s.fds), floor(b, |s| s.fds)),
                threads: (floor(a, |s| s.threads), floor(b, |s| s.threads)),
                heap_kb: a.iter().chain(b).all(|s| s.heap_kb.is_some()).then(|| {
                    let f = |s: &Sample| s.heap_kb.unwrap_or(0);
                    (median(a, f), median(b, f))
                }),
                pooled_kb: a.iter().chain(b).all(|s| s.pooled_kb.is_some()).then(|| {
                    let f = |s: &Sample| s.pooled_kb.unwrap_or(0);
                    (median(a, f), median(b, f))
                }),
            })
        })
        .collect()
}

fn write_results(
    opts: &SoakOptions,
    provenance: Provenance,
    rows: &[JobRow],
    samples: &[Sample],
    figures: &SoakFigures,
) -> anyhow::Result<(PathBuf, SoakFigures)> {
    let mut body = format!(
        "# soak run, {:.0} minutes, seed {}\n\n5 workers, replication 3; a job every {} s \
         (wordcount, sort, input-sink in turn over 8 MB of text and 8 MB of records), each \
         output checked against coreutils' and deleted; `master.retained_jobs = {RETAINED_JOBS}`; \
         no faults. Sampled every {} s; descriptors and threads are the fewest read (each second) \
         over each window, what the process held throughout.\n\n\
         Jobs: {} submitted, {} succeeded; outputs: {} of {} equal. Disk: {} kB at the start, {} kB at the end.\n\n\
         | process | from (s) | to (s) | resident kB | descriptors | threads | heap in use kB | pooled buffers kB |\n|---|---|---|---|---|---|---|---|\n",
        opts.minutes,
        opts.seed,
        opts.arrival_s,
        opts.sample_s,
        figures.jobs_submitted,
        figures.jobs_succeeded,
        figures.outputs_equal,
        figures.outputs_checked,
        figures.disk_kb.0,
        figures.disk_kb.1,
    );
    let pair = |p: Option<(u64, u64)>| {
        p.map_or("-".to_owned(), |(a, b)| {
            format!("{a} -> {b} ({:+.1}%)", Growth::grew(a, b) * 100.0)
        })
    };
    for g in &figures.growth {
        body += &format!(
            "| {} | {:.0} | {:.0} | {} -> {} ({:+.1}%) | {} -> {} | {} -> {} | {} | {} |\n",
            g.process,
            g.from_t_s,
            g.to_t_s,
            g.rss_kb.0,
            g.rss_kb.1,
            Growth::grew(g.rss_kb.0, g.rss_kb.1) * 100.0,
            g.fds.0,
            g.fds.1,
            g.threads.0,
            g.threads.1,
            pair(g.heap_kb),
            pair(g.pooled_kb)
        );
    }
    let meta = serde_json::json!({
        "seed": opts.seed,
        "minutes": opts.minutes,
        "sample_s": opts.sample_s,
        "arrival_s": opts.arrival_s,
        "retained_jobs": RETAINED_JOBS,
        "figures": figures,
    });
    let dir = VerdictRun {
        name: "soak",
        provenance,
        extra: ("samples.csv", samples),
        body,
        problems: figures.problems(),
        passed: format!(
            "every job succeeded, every output equal, nothing grew by more than {:.0}%",
            GROWTH_LIMIT * 100.0
        ),
        files:
            "`samples.csv` (every process every sample), `runs.csv` (one row a job), `meta.json`.",
        meta,
    }
    .write(&opts.results, rows)?;
    Ok((dir, figures.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_s: f64, process: &str, rss_kb: u64, fds: u64) -> Sample {
        Sample {
            t_s,
            process: process.into(),
            rss_kb,
            fds,
            threads: 10,
            fds_peak: fds + 4,
            disk_kb: 0,
            heap_kb: Some(rss_kb / 2),
            pooled_kb: None,
        }
    }

    #[test]
    fn growth_is_measured_from_the_tenth_minute_and_names_what_grew() {
        let mut samples = Vec::new();
        for m in 0..=30 {
            let t = m as f64 * 60.0;
            // The master's descriptors creep up; w1's memory too, with a
            // spike at minute 11 that the median ignores.
            samples.push(s(t, "master", 5000, 20 + m / 10));
            samples.push(s(t, "w1", if m == 11 { 900 } else { 100 + m }, 5));
            samples.push(s(t, "w2", 100, if m == 29 { 9 } else { 5 }));
            // w3's sockets in flight come and go (17-24, no trend); w4
            // keeps one more descriptor every 4 minutes under the same
            // noise.
            let noise = m * 5 % 8;
            samples.push(s(t, "w3", 100, 17 + noise));
            samples.push(s(t, "w4", 100, 17 + noise + m / 4));
        }
        let g = growth(&samples, 1800.0);
        assert_eq!(g.len(), 5);
        assert_eq!((g[0].from_t_s, g[0].to_t_s), (600.0, 1800.0));
        assert_eq!(g[0].fds, (21, 22));
        assert_eq!(
            g[1].rss_kb,
            (113, 128),
            "medians of minutes 10-14 and 26-30"
        );
        assert_eq!(g[1].heap_kb, Some((56, 64)), "the same medians");
        assert_eq!(g[1].pooled_kb, None, "not sampled");
        assert_eq!(g[3].fds, (18, 18), "w3: the floors of its windows");
        let p: Vec<String> = g.iter().flat_map(|g| g.problems()).collect();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with("w1: resident memory (kB) grew 13%"),
            "{p:?}"
        );
        assert!(p[1].starts_with("w4: open descriptors grew"), "{p:?}");
        // A 3-minute run compares from its first minute.
        let short: Vec<Sample> = (0..=3).map(|m| s(m as f64 * 60.0, "m", 10, 1)).collect();
        let g = growth(&short, 180.0);
        assert_eq!(g[0].from_t_s, 60.0);
        assert!(g[0].problems().is_empty());
        // A 20-minute run compares from its tenth minute.
        let g = growth(&samples[..21 * 5], 1200.0);
        assert_eq!((g[0].from_t_s, g[0].to_t_s), (600.0, 1200.0));
    }

    #[test]
    fn a_sample_keeps_the_fewest_descriptors_and_threads_read_since_the_last() {
        let mut r = Readings::default();
        for (fds, threads) in [(23, 12), (17, 11), (21, 13)] {
            r.add("w1", fds, threads);
        }
        r.add("w2", 30, 5);
        assert_eq!(r.take("w1", (22, 11)), (17, 11, 23));
        // Taking starts the interval over; w2 keeps its own.
        assert_eq!(r.take("w1", (20, 12)), (20, 12, 20));
        assert_eq!(r.take("w2", (31, 6)), (30, 5, 31));
        r.read(Path::new("/nonexistent-run-dir")).unwrap_err();
    }

    #[test]
    fn this_process_can_be_sampled() {
        let (rss, fds, threads) = proc_figures(std::process::id()).unwrap();
        assert!(rss > 0 && fds > 0 && threads > 0);
    }
}
