//! Speculative execution: a backup attempt of a task that runs far slower
//! than its siblings, as Hadoop runs one (LATE, Zaharia et al. 2008, in
//! Hadoop 1's `JobInProgress` and the knobs Hadoop 2 kept), for maps and
//! for reduces alike.
//!
//! The view keeps, while [`Speculation::enabled`], every running attempt
//! with its progress (a fraction its owner derives from what the worker
//! reports) and each job's finished map and reduce durations
//! ([`RunningTasks`]). When an offer leaves a worker with a free slot
//! (after the policy, which keeps every slot it wants: backups only take
//! what it left), [`RunningTasks::pick`] names at most one backup at a
//! time:
//!
//! - a task is *slow* when it has run at least `min_runtime_ms` and its
//!   progress rate (fraction done per ms) is more than
//!   `slow_task_threshold` standard deviations below the mean rate of its
//!   job's tasks of the same kind (maps with maps, reduces with reduces;
//!   running ones, and finished ones at 1/duration): Hadoop's
//!   `mapreduce.job.speculative.slowtaskthreshold`;
//! - a backup must help: the slow attempt's estimated time left
//!   ((1 - done) / rate) exceeds what a new attempt is expected to take
//!   (the mean finished duration of the job's tasks of that kind), as LATE
//!   asks;
//! - at most one backup per task, and per job at most
//!   max(`min_allowed`, `cap_running` x its running tasks, `cap_total` x
//!   its tasks) backups at once (Hadoop 2's
//!   `speculative-cap-running-tasks`, `speculative-cap-total-tasks`,
//!   `minimum-allowed-tasks`);
//! - no backup goes to a worker that runs an attempt of the same task or
//!   where one of its attempts ended without success, nor to a worker
//!   that itself runs a slow attempt (Hadoop's slow-node rule, judged by
//!   what it runs now), nor to a worker whose role excludes the task's
//!   kind;
//! - locality: among the slow tasks, a map with a replica on the offered
//!   worker first (the backup reads locally), then one with a replica in
//!   its rack, then any map or reduce (a reduce reads every map's output
//!   wherever it is: no backup of it is nearer than another); within a
//!   level the one with the most time left (LATE). A map's backup that
//!   reads remotely reads from a live replica that neither the slow
//!   attempt's worker nor its source holds when there is one (the
//!   straggler may be the replica it reads), in the offered worker's rack
//!   first.
//!
//! The first attempt of a task to succeed wins; its owner kills the other
//! (the view forgets both at once). A worker whose attempt a backup
//! overtook is a slow node for that job: while speculation is on, the
//! reduce placement gives it none of the job's waiting reduces as long as
//! another live worker can run them (LATE's slow-node rule), and its
//! owner sends it the job's output replicas last. Not for a map that read
//! its block from another worker: that attempt was as slow as its read
//! (the source's disk and link), which says nothing of its own worker (on
//! `make cluster`'s links, a worker whose two remote maps lost to local
//! backups was kept from the sort's reduces, and one worker ran two).

use base::{JobId, TaskRef, WorkerId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Scheduler time in milliseconds (as [`crate::Millis`]).
type Millis = u64;

/// Speculative execution's settings (`[speculation]` in cluster.toml, and
/// in a spec's cluster). Off unless `enabled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Speculation {
    pub enabled: bool,
    /// Standard deviations below its job's mean progress rate at which a
    /// map counts as slow (Hadoop: `slowtaskthreshold`, 1.0).
    pub slow_task_threshold: f64,
    /// Most backups of one job at once, as a fraction of its running maps
    /// (Hadoop: `speculative-cap-running-tasks`, 0.1) ...
    pub cap_running: f64,
    /// ... or of all its maps (`speculative-cap-total-tasks`, 0.01) ...
    pub cap_total: f64,
    /// ... or this many, whichever is most (`minimum-allowed-tasks`, 10).
    pub min_allowed: u32,
    /// How long a map runs before it may be judged, ms (Hadoop 1 waited
    /// 60 s, for tasks of minutes; this testbed's maps last seconds).
    pub min_runtime_ms: u64,
}

impl Default for Speculation {
    fn default() -> Self {
        Speculation {
            enabled: false,
            slow_task_threshold: 1.0,
            cap_running: 0.1,
            cap_total: 0.01,
            min_allowed: 10,
            min_runtime_ms: 1000,
        }
    }
}

impl Speculation {
    /// The settings on, with Hadoop's defaults.
    pub fn on() -> Self {
        Speculation {
            enabled: true,
            ..Speculation::default()
        }
    }

    /// Checks the settings: the bad one's key and what is wrong with it.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.slow_task_threshold.is_finite() && self.slow_task_threshold >= 0.0) {
            return Err((
                "speculation.slow_task_threshold",
                format!("must be a number >= 0 (got {})", self.slow_task_threshold),
            ));
        }
        for (key, v) in [
            ("speculation.cap_running", self.cap_running),
            ("speculation.cap_total", self.cap_total),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err((key, format!("must be a fraction in [0, 1] (got {v})")));
            }
        }
        Ok(())
    }
}

/// One running attempt of a map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskAttempt {
    pub worker: WorkerId,
    pub source: WorkerId,
    pub started: Millis,
    /// Fraction done, in [0, 1], as its owner last said, and when.
    pub done: f64,
    pub done_at: Millis,
}

impl TaskAttempt {
    /// An attempt that starts at `started`, nothing done.
    pub fn new(worker: WorkerId, source: WorkerId, started: Millis) -> Self {
        TaskAttempt {
            worker,
            source,
            started,
            done: 0.0,
            done_at: started,
        }
    }

    /// Fraction done per ms as of its last report (None before one came
    /// after its start: nothing is known of it yet).
    fn rate(&self) -> Option<f64> {
        let elapsed = self.done_at.saturating_sub(self.started);
        (elapsed > 0).then(|| self.done / elapsed as f64)
    }
}

#[derive(Clone, Debug)]
struct Running {
    /// A reduce (else a map).
    reduce: bool,
    /// A map's replica holders at launch (a backup's possible sources).
    replicas: Vec<WorkerId>,
    len: u64,
    /// Workers where an attempt of it ended without success: no backup
    /// goes there (as Hadoop keeps a task off trackers it failed on).
    failed_on: Vec<WorkerId>,
    /// The first attempt, then the backup if one runs.
    attempts: Vec<TaskAttempt>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Finished {
    n: u32,
    sum_ms: f64,
}

/// Why a backup was picked (for the decision record).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackupWhy {
    /// The slow attempt's estimated time left, ms.
    pub left_ms: f64,
    /// What a new attempt is expected to take, ms.
    pub expected_ms: f64,
}

/// A backup to launch: `task` on the offered worker, reading `source`
/// (a reduce: the offered worker itself).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backup {
    pub task: TaskRef,
    /// A reduce's backup (else a map's).
    pub reduce: bool,
    pub source: WorkerId,
    pub why: BackupWhy,
}

/// Whether enough of a job's tasks of one kind have finished for the kind
/// to be judged: at least [`MIN_FINISHED`] and [`MIN_FINISHED_SHARE`] of
/// `total`, as Hadoop 2's runtime estimators ask
/// (`MINIMUM_COMPLETE_NUMBER_TO_SPECULATE`, `..._PROPORTION_...`). Before
/// that, what a new attempt would take is unknown, and the running tasks'
/// progress rates, early in a reduce's shuffle above all, say little of
/// their length: a network-bound sort's reduces were backed up a second
/// after they started, their backups fetching the shuffle a second time
/// over the links the originals needed.
fn enough_finished(finished: usize, total: usize) -> bool {
    finished >= MIN_FINISHED && finished as f64 >= MIN_FINISHED_SHARE * total as f64
}

/// Tasks of a kind that must have finished before any is judged slow.
pub const MIN_FINISHED: usize = 1;
/// The share of a kind's tasks that must have finished before any is
/// judged slow.
pub const MIN_FINISHED_SHARE: f64 = 0.05;

/// What the rule asks of the rest of the view.
pub struct Cluster<'a> {
    /// Whether a worker is alive.
    pub alive: &'a dyn Fn(WorkerId) -> bool,
    /// A worker's rack (None: no racks).
    pub rack: &'a dyn Fn(WorkerId) -> Option<u32>,
    /// A job's pending maps.
    pub pending: &'a dyn Fn(JobId) -> usize,
    /// Whether a worker may run maps, and reduces (worker roles).
    pub runs_maps: &'a dyn Fn(WorkerId) -> bool,
    pub runs_reduces: &'a dyn Fn(WorkerId) -> bool,
}

/// The running tasks and each job's finished map and reduce durations
/// (kept only while speculation is on).
#[derive(Clone, Debug, Default)]
pub struct RunningTasks {
    tasks: BTreeMap<TaskRef, Running>,
    /// By job and kind (true: reduces).
    finished: BTreeMap<(JobId, bool), Finished>,
    /// Per job, the workers whose map attempt a backup overtook (slow
    /// nodes for that job: none of its reduces go there).
    overtaken: BTreeMap<JobId, Vec<WorkerId>>,
}

impl RunningTasks {
    /// Attempt `a` of `task` (`len` input bytes, replicas on `replicas`)
    /// started; a second one is its backup.
    pub fn launched(&mut self, task: TaskRef, len: u64, replicas: &[WorkerId], a: TaskAttempt) {
        self.start(task, false, len, replicas, a);
    }

    /// Attempt `a` of reduce `task` started; a second one is its backup.
    pub fn launched_reduce(&mut self, task: TaskRef, a: TaskAttempt) {
        self.start(task, true, 0, &[], a);
    }

    fn start(
        &mut self,
        task: TaskRef,
        reduce: bool,
        len: u64,
        replicas: &[WorkerId],
        a: TaskAttempt,
    ) {
        let r = self.tasks.entry(task).or_insert_with(|| Running {
            reduce,
            replicas: replicas.to_vec(),
            len,
            failed_on: Vec::new(),
            attempts: Vec::new(),
        });
        r.attempts.retain(|x| x.worker != a.worker);
        r.attempts.push(a);
    }

    /// The input bytes of running map `task`.
    pub fn len(&self, task: TaskRef) -> Option<u64> {
        self.tasks.get(&task).map(|r| r.len)
    }

    /// Whether running `task` is a reduce (None: not running).
    pub fn is_reduce(&self, task: TaskRef) -> Option<bool> {
        self.tasks.get(&task).map(|r| r.reduce)
    }

    /// The attempt of `task` on `worker` is `done` (a fraction) done at
    /// `now`.
    pub fn progress(&mut self, task: TaskRef, worker: WorkerId, done: f64, now: Millis) {
        if let Some(a) = self
            .tasks
            .get_mut(&task)
            .and_then(|r| r.attempts.iter_mut().find(|a| a.worker == worker))
        {
            a.done = if done.is_nan() {
                0.0
            } else {
                done.clamp(0.0, 1.0)
            };
            a.done_at = now.max(a.started);
        }
    }

    /// The attempt of `task` on `worker` ended at `now`: a success ends
    /// the task (its other attempt is its owner's to kill) and counts its
    /// duration; else only that attempt is gone.
    pub fn ended(&mut self, task: TaskRef, worker: WorkerId, now: Millis, ok: bool) {
        let Some(r) = self.tasks.get_mut(&task) else {
            return;
        };
        let Some(i) = r.attempts.iter().position(|a| a.worker == worker) else {
            return;
        };
        let a = r.attempts.remove(i);
        if ok {
            // A backup won: the first attempt's worker was slow, unless
            // the first read its input from another worker.
            let first = (i > 0).then(|| r.attempts[0]);
            if let Some(slow) = first.filter(|a| a.source == a.worker).map(|a| a.worker) {
                let o = self.overtaken.entry(task.job).or_default();
                if !o.contains(&slow) {
                    o.push(slow);
                }
            }
            let f = self.finished.entry((task.job, r.reduce)).or_default();
            f.n += 1;
            f.sum_ms += now.saturating_sub(a.started) as f64;
            self.tasks.remove(&task);
        } else if r.attempts.is_empty() {
            self.tasks.remove(&task);
        } else {
            r.failed_on.push(worker);
        }
    }

    /// The attempts of `task` running now.
    pub fn attempts(&self, task: TaskRef) -> &[TaskAttempt] {
        self.tasks.get(&task).map_or(&[], |r| &r.attempts)
    }

    /// Every running task of every job, with its attempts.
    pub fn all(&self) -> impl Iterator<Item = (TaskRef, &[TaskAttempt])> {
        self.tasks.iter().map(|(t, r)| (*t, r.attempts.as_slice()))
    }

    /// The workers whose map attempt of `job` a backup overtook.
    pub fn overtaken(&self, job: JobId) -> &[WorkerId] {
        self.overtaken.get(&job).map_or(&[], Vec::as_slice)
    }

    /// A job ended: forget it.
    pub fn job_gone(&mut self, job: JobId) {
        self.tasks.retain(|t, _| t.job != job);
        self.finished.remove(&(job, false));
        self.finished.remove(&(job, true));
        self.overtaken.remove(&job);
    }

    fn job_tasks(&self, job: JobId) -> impl Iterator<Item = (&TaskRef, &Running)> {
        let lo = TaskRef { job, index: 0 };
        let hi = TaskRef {
            job,
            index: u32::MAX,
        };
        self.tasks.range(lo..=hi)
    }

    /// The slow tasks of `job` of one kind (`reduce`) at `now`: (task, its
    /// first attempt's time left in ms), with what a new attempt is
    /// expected to take.
    fn slow(
        &self,
        cfg: &Speculation,
        (job, pending): (JobId, usize),
        reduce: bool,
        now: Millis,
    ) -> (Vec<(TaskRef, f64)>, f64) {
        let fin = self
            .finished
            .get(&(job, reduce))
            .copied()
            .unwrap_or_default();
        let mut rates: Vec<f64> = Vec::new();
        for (_, r) in self.job_tasks(job).filter(|(_, r)| r.reduce == reduce) {
            rates.extend(r.attempts.first().and_then(TaskAttempt::rate));
        }
        // Tasks of the kind: running, finished and (maps) waiting.
        let kind_total = self
            .job_tasks(job)
            .filter(|(_, r)| r.reduce == reduce)
            .count()
            + fin.n as usize
            + if reduce { 0 } else { pending };
        if !enough_finished(fin.n as usize, kind_total) {
            return (Vec::new(), 0.0);
        }
        let n = rates.len() as f64 + f64::from(fin.n);
        if n < 2.0 {
            return (Vec::new(), 0.0);
        }
        // Finished tasks count at their mean rate, each once.
        let fr = f64::from(fin.n) / fin.sum_ms.max(1.0);
        let sum: f64 = rates.iter().sum::<f64>() + fr * f64::from(fin.n);
        let mean = sum / n;
        let var = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>()
            + f64::from(fin.n) * (fr - mean).powi(2))
            / n;
        let limit = mean - cfg.slow_task_threshold * var.sqrt();
        let expected = fin.sum_ms / f64::from(fin.n);
        let slow = self
            .job_tasks(job)
            .filter(|(_, r)| r.reduce == reduce && r.attempts.len() == 1)
            .filter_map(|(t, r)| {
                let a = r.attempts[0];
                if now.saturating_sub(a.started) < cfg.min_runtime_ms {
                    return None;
                }
                let rate = a.rate()?;
                if rate >= limit {
                    return None;
                }
                // Its time left as of now: at its rate from its last report.
                let since = now.saturating_sub(a.done_at) as f64;
                let left = if rate > 0.0 {
                    ((1.0 - a.done) / rate - since).max(0.0)
                } else {
                    f64::INFINITY
                };
                (left > expected).then_some((*t, left))
            })
            .collect();
        (slow, expected)
    }

    /// The backup the rule gives `worker` (a free slot) at `now`, if any.
    pub fn pick(
        &self,
        cfg: &Speculation,
        now: Millis,
        worker: WorkerId,
        cluster: &Cluster<'_>,
    ) -> Option<Backup> {
        let jobs: Vec<JobId> = {
            let mut j: Vec<JobId> = self.tasks.keys().map(|t| t.job).collect();
            j.dedup();
            j
        };
        let kinds = [
            (false, (cluster.runs_maps)(worker)),
            (true, (cluster.runs_reduces)(worker)),
        ];
        let mut best: Option<(u8, f64, Backup)> = None;
        let mut slow_here = false;
        for job in jobs {
            let running = self.job_tasks(job).count();
            let backups = self
                .job_tasks(job)
                .filter(|(_, r)| r.attempts.len() > 1)
                .count();
            let finished: usize = [false, true]
                .iter()
                .map(|&k| self.finished.get(&(job, k)).map_or(0, |f| f.n) as usize)
                .sum();
            let total = running + finished + (cluster.pending)(job);
            let cap = (cfg.min_allowed as f64)
                .max(cfg.cap_running * running as f64)
                .max(cfg.cap_total * total as f64)
                .floor() as usize;
            for (reduce, runs_here) in kinds {
                let (slow, expected) = self.slow(cfg, (job, (cluster.pending)(job)), reduce, now);
                for (t, left) in slow {
                    let r = &self.tasks[&t];
                    if r.attempts[0].worker == worker {
                        slow_here = true;
                        continue;
                    }
                    if !runs_here || backups >= cap || r.failed_on.contains(&worker) {
                        continue;
                    }
                    let Some((level, source)) = self.source(r, worker, cluster) else {
                        continue;
                    };
                    let better = match &best {
                        None => true,
                        Some((l, b, _)) => (level, left) > (*l, *b),
                    };
                    if better {
                        let why = BackupWhy {
                            left_ms: left,
                            expected_ms: expected,
                        };
                        best = Some((
                            level,
                            left,
                            Backup {
                                task: t,
                                reduce,
                                source,
                                why,
                            },
                        ));
                    }
                }
            }
        }
        if slow_here {
            return None;
        }
        best.map(|(_, _, b)| b)
    }

    /// Where a backup of `r` on `worker` reads, and how near that is (2:
    /// its own replica, 1: its rack, 0: elsewhere; a reduce reads every
    /// map's output: `worker` itself, at 0).
    fn source(
        &self,
        r: &Running,
        worker: WorkerId,
        cluster: &Cluster<'_>,
    ) -> Option<(u8, WorkerId)> {
        if r.reduce {
            return Some((0, worker));
        }
        let first = r.attempts[0];
        let live = |w: &&WorkerId| (cluster.alive)(**w);
        if r.replicas.contains(&worker) {
            return Some((2, worker));
        }
        let rack = (cluster.rack)(worker);
        let same_rack = |w: WorkerId| rack.is_some() && (cluster.rack)(w) == rack;
        let avoid = |w: WorkerId| w == first.worker || w == first.source;
        let mut choices: Vec<WorkerId> = r.replicas.iter().filter(live).copied().collect();
        choices.sort_by_key(|&w| (avoid(w), !same_rack(w), w));
        let s = *choices.first()?;
        Some((u8::from(same_rack(s)), s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(i: u32) -> TaskRef {
        TaskRef {
            job: JobId(1),
            index: i,
        }
    }

    fn w(i: u32) -> WorkerId {
        WorkerId(i)
    }

    fn at(worker: u32, started: Millis) -> TaskAttempt {
        TaskAttempt::new(w(worker), w(worker), started)
    }

    fn cluster_check(
        rm: &RunningTasks,
        cfg: &Speculation,
        now: Millis,
        worker: u32,
    ) -> Option<Backup> {
        let alive = |_w: WorkerId| true;
        let rack = |_w: WorkerId| None;
        let pending = |_j: JobId| 0;
        // Worker 8 runs only maps, worker 9 only reduces.
        let runs_maps = |w: WorkerId| w.0 != 9;
        let runs_reduces = |w: WorkerId| w.0 != 8;
        rm.pick(
            cfg,
            now,
            w(worker),
            &Cluster {
                alive: &alive,
                rack: &rack,
                pending: &pending,
                runs_maps: &runs_maps,
                runs_reduces: &runs_reduces,
            },
        )
    }

    /// Six maps on workers 0..=2 that finish in 1 s, and two on worker 3
    /// (replicas on 3 and 0) that have done a tenth by then.
    fn straggling() -> RunningTasks {
        let mut rm = RunningTasks::default();
        for i in 0..6 {
            rm.launched(t(i), 1, &[w(i % 3), w(3)], at(i % 3, 0));
        }
        rm.launched(t(6), 1, &[w(3), w(0)], at(3, 0));
        rm.launched(t(7), 1, &[w(3), w(1)], at(3, 0));
        for i in 0..6 {
            rm.ended(t(i), w(i % 3), 1000, true);
        }
        rm.progress(t(6), w(3), 0.1, 1000);
        rm.progress(t(7), w(3), 0.12, 1000);
        rm
    }

    #[test]
    fn a_straggler_gets_one_backup_where_its_data_is_and_never_on_a_slow_worker() {
        let cfg = Speculation::on();
        let rm = straggling();
        // Worker 0 holds map 6's other replica: a local backup of it.
        let b = cluster_check(&rm, &cfg, 1000, 0).expect("a backup");
        assert_eq!((b.task, b.source), (t(6), w(0)));
        assert!(
            b.why.left_ms > 8000.0 && (b.why.expected_ms - 1000.0).abs() < 1e-9,
            "{b:?}"
        );
        // Worker 2 holds neither: the slowest (map 6) reads from worker 0,
        // not from the straggler's worker.
        let b = cluster_check(&rm, &cfg, 1000, 2).expect("a backup");
        assert_eq!((b.task, b.source), (t(6), w(0)));
        // The slow worker gets none, and nothing is judged before its time.
        assert_eq!(cluster_check(&rm, &cfg, 1000, 3), None);
        let late = Speculation {
            min_runtime_ms: 1001,
            ..cfg.clone()
        };
        assert_eq!(cluster_check(&rm, &late, 1000, 0), None);
        // Once a backup runs, the map gets no second one.
        let mut rm = rm;
        rm.launched(t(6), 1, &[], at(0, 1000));
        let b = cluster_check(&rm, &cfg, 1000, 1).expect("map 7");
        assert_eq!((b.task, b.source), (t(7), w(1)));
        let cap1 = Speculation {
            min_allowed: 1,
            ..cfg.clone()
        };
        assert_eq!(cluster_check(&rm, &cap1, 1000, 1), None, "the cap");
        // The backup wins: both attempts are gone, its duration counted,
        // and the first attempt's worker is a slow node for the job.
        rm.ended(t(6), w(0), 1500, true);
        assert!(rm.attempts(t(6)).is_empty());
        rm.ended(t(6), w(3), 1500, false);
        assert_eq!(rm.finished[&(JobId(1), false)].n, 7);
        assert_eq!(rm.overtaken(JobId(1)), [w(3)]);
        // A first attempt that beats its backup marks nobody.
        rm.launched(t(7), 1, &[], at(2, 1600));
        rm.ended(t(7), w(3), 1700, true);
        assert_eq!(rm.overtaken(JobId(1)), [w(3)]);
        rm.job_gone(JobId(1));
        assert!(rm.overtaken(JobId(1)).is_empty());
    }

    #[test]
    fn a_slow_reduce_is_judged_against_reduces_and_backed_up_where_reduces_run() {
        let cfg = Speculation::on();
        let mut rm = RunningTasks::default();
        // The job's maps took 100 ms each: they say nothing of reduces.
        for i in 0..4 {
            rm.launched(t(i), 1, &[w(i)], at(i, 0));
            rm.ended(t(i), w(i), 100, true);
        }
        // Reduces 10..13 on workers 0..3 from 100 ms; at 1100 ms, three
        // are half done and the one on worker 3 a twentieth.
        for i in 0..4 {
            rm.launched_reduce(t(10 + i), at(i, 100));
            let done = if i == 3 { 0.05 } else { 0.5 };
            rm.progress(t(10 + i), w(i), done, 1100);
        }
        assert_eq!(rm.is_reduce(t(13)), Some(true));
        // No reduce has finished: how long one takes is unknown, and the
        // slow-looking one is not backed up (Hadoop's estimators).
        assert_eq!(cluster_check(&rm, &cfg, 1100, 9), None);
        // Once one finishes in 1.9 s, the slow one is: a map-only worker
        // gets no backup, a reduce-only one gets it, reading from itself.
        rm.ended(t(10), w(0), 2000, true);
        assert_eq!(rm.finished[&(JobId(1), true)].n, 1);
        assert_eq!(cluster_check(&rm, &cfg, 2000, 8), None);
        let b = cluster_check(&rm, &cfg, 2000, 9).expect("a reduce backup");
        assert_eq!((b.task, b.reduce, b.source), (t(13), true, w(9)));
        // Its time left is judged at its own rate (about 18 s), and a new
        // attempt's time by the finished reduce's, not by the maps' 100 ms.
        assert!(b.why.left_ms > 17_000.0, "{b:?}");
        assert!((b.why.expected_ms - 1900.0).abs() < 1e-9, "{b:?}");
        for i in 1..3 {
            rm.ended(t(10 + i), w(i), 2000, true);
        }
        assert_eq!(rm.finished[&(JobId(1), true)].n, 3);
        let b = cluster_check(&rm, &cfg, 2000, 0).expect("still slow");
        assert!((b.why.expected_ms - 1900.0).abs() < 1e-9, "{b:?}");
        // The backup wins: worker 3 is a slow node for the job.
        rm.launched_reduce(t(13), at(0, 2000));
        rm.ended(t(13), w(0), 3900, true);
        assert!(rm.attempts(t(13)).is_empty());
        assert_eq!(rm.overtaken(JobId(1)), [w(3)]);
    }

    /// A remote map overtaken by its backup marks no slow node: it was as
    /// slow as its read from another worker.
    #[test]
    fn a_remote_map_overtaken_by_its_backup_marks_no_slow_node() {
        let mut rm = RunningTasks::default();
        rm.launched(t(1), 1, &[w(0)], TaskAttempt::new(w(3), w(0), 0));
        rm.launched(t(1), 1, &[w(0)], at(0, 500));
        rm.ended(t(1), w(0), 900, true);
        assert!(rm.attempts(t(1)).is_empty());
        assert!(rm.overtaken(JobId(1)).is_empty());
        // A local one is: its worker was the slow part.
        rm.launched(t(2), 1, &[w(3)], at(3, 0));
        rm.launched(t(2), 1, &[w(3)], TaskAttempt::new(w(1), w(3), 500));
        rm.ended(t(2), w(1), 900, true);
        assert_eq!(rm.overtaken(JobId(1)), [w(3)]);
    }

    /// A kind is judged once one of its tasks, and a twentieth of them,
    /// finished.
    #[test]
    fn a_kind_is_judged_once_enough_of_it_finished() {
        assert!(!enough_finished(0, 4));
        assert!(enough_finished(1, 4));
        assert!(enough_finished(1, 20));
        assert!(!enough_finished(1, 21));
        assert!(enough_finished(5, 100));
        assert!(!enough_finished(4, 100));
    }

    #[test]
    fn even_maps_and_off_settings_get_no_backup() {
        let mut rm = RunningTasks::default();
        for i in 0..4 {
            rm.launched(t(i), 1, &[w(i)], at(i, 0));
            rm.progress(t(i), w(i), 0.5, 1000);
        }
        assert_eq!(cluster_check(&rm, &Speculation::on(), 2000, 9), None);
        // A map that failed on one worker is gone only there.
        rm.launched(t(0), 1, &[w(5)], at(5, 100));
        rm.ended(t(0), w(0), 200, false);
        assert_eq!(rm.attempts(t(0)).len(), 1);
        assert_eq!(rm.tasks[&t(0)].failed_on, vec![w(0)]);
        rm.job_gone(JobId(1));
        assert_eq!(rm.all().count(), 0);
    }

    #[test]
    fn settings_are_checked() {
        assert!(Speculation::default().check().is_ok());
        let bad = Speculation {
            cap_running: 1.5,
            ..Speculation::on()
        };
        assert_eq!(bad.check().unwrap_err().0, "speculation.cap_running");
        let bad = Speculation {
            slow_task_threshold: f64::NAN,
            ..Speculation::on()
        };
        let (key, why) = bad.check().unwrap_err();
        assert!(
            key.ends_with("slow_task_threshold") && why.contains("NaN"),
            "{why}"
        );
        let t: Speculation = toml::from_str("enabled = true\nmin_runtime_ms = 5").unwrap();
        assert_eq!((t.enabled, t.min_runtime_ms, t.min_allowed), (true, 5, 10));
        assert!(toml::from_str::<Speculation>("enabeld = true").is_err());
    }
}
