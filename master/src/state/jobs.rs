//! `Jobs`: the jobs of this incarnation and their tasks, the reports of
//! earlier incarnations' jobs, and the counters of jobs ended and maps run
//! again. It owns every field of a job and a task: the rest of the master
//! reads them (`get`, `job`, `task`) and changes them only through the
//! transitions below, each of which says what the caller must do next
//! (requeue, create the reduces, end the job) instead of doing it, since
//! that touches the view, the workers and the journal, which are not its.
//!
//! A task's life: Pending -> Running(attempt n on worker w, reading from s)
//! -> Done, or back to Pending as attempt n+1. A running map may also have
//! a backup attempt (speculation): the first of the two to succeed wins,
//! and one that ends otherwise leaves the other as the current attempt.
//! A map's successful attempt leaves its output on its worker (`MapOut`)
//! and adds to the job's counters; the output lost, the map is Pending
//! again and its counters are taken back.

use common::wire::{AttemptProgress, JobReport, JobState, JobSubmit, TaskRecord};
use common::{AttemptId, BlockId, JobId, TaskRef, WorkerId};
use sched::Millis;
use std::collections::{BTreeMap, HashMap};
use workloads::MapSummary;

/// A map output that is gone: (map, the worker that kept it, its attempt).
pub(super) type LostRef = (u32, WorkerId, u32);

#[derive(Clone, Copy, Debug)]
pub(super) struct RunningAttempt {
    pub attempt: u32,
    pub worker: WorkerId,
    pub source: WorkerId,
    /// When it was launched.
    pub started: Millis,
    /// The highest progress count its worker reported, and when it last
    /// grew (the launch until the first report): for the task timeout.
    pub progress: u64,
    pub progressed: Millis,
    /// The slot its worker runs it in, once a heartbeat said.
    pub slot: Option<u32>,
}

impl RunningAttempt {
    /// Data-remote when it reads from another worker than its own.
    pub fn locality(&self) -> common::wire::Locality {
        if self.remote() {
            common::wire::Locality::DataRemote
        } else {
            common::wire::Locality::DataLocal
        }
    }

    pub fn remote(&self) -> bool {
        self.worker != self.source
    }

    fn new(attempt: u32, worker: WorkerId, source: WorkerId, now: Millis) -> Self {
        RunningAttempt {
            attempt,
            worker,
            source,
            started: now,
            progress: 0,
            progressed: now,
            slot: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum TaskStatus {
    Pending,
    Running(RunningAttempt),
    Done,
}

#[derive(Debug)]
pub(super) struct Task {
    /// The input block of a map; the output block of a reduce.
    pub block: BlockId,
    /// `Some(r)` for the reduce of partition r.
    pub reduce: Option<u32>,
    pub len: u64,
    /// Number the next attempt gets.
    next_attempt: u32,
    /// Failed attempts (rejections and losses do not count).
    failures: u32,
    pub status: TaskStatus,
    /// A backup attempt while its current one runs (speculative
    /// execution): the first of the two to succeed wins.
    pub backup: Option<RunningAttempt>,
    /// Workers where an attempt of this map stalled (no progress for
    /// `task_timeout_ms`): their replicas of its block are not used for it
    /// again while another is live, as Hadoop keeps a task off the trackers
    /// it failed on.
    pub stalled_on: Vec<WorkerId>,
    /// A reduce: the workers its running attempts send output replicas to
    /// (its backup's after its first attempt's).
    pub out_targets: Vec<WorkerId>,
}

#[derive(Debug)]
pub(super) struct Job {
    pub id: JobId,
    pub name: String,
    pub spec: JobSubmit,
    pub scheduler: String,
    pub submitted: Millis,
    pub submit_unix_ms: u64,
    pub first_launch: Option<Millis>,
    pub finished: Option<Millis>,
    pub state: JobState,
    pub error: Option<String>,
    /// Maps first (index = block index), then the reduces once created.
    pub tasks: Vec<Task>,
    pub maps: u32,
    pub reduces: u32,
    /// Output file of a job with reduces.
    pub output: Option<String>,
    /// Where each map's successful attempt left its output.
    pub map_out: Vec<Option<MapOut>>,
    /// sort: keys sampled by the maps, then the reduces' split keys.
    samples: Vec<Vec<u8>>,
    pub splits: Vec<Vec<u8>>,
    /// Every finished attempt, for the report.
    pub records: Vec<TaskRecord>,
    pub counts: JobCounters,
    /// Restarts of the master the job lived through, and the attempts in
    /// flight at one of them that had to run again (launched, but no
    /// worker said it still ran them).
    pub restarts: u32,
    pub restart_reruns: u32,
    /// Backup attempts launched (speculation), and how many of them
    /// finished first.
    pub backups: u32,
    pub backups_won: u32,
}

/// What a new job is made of (`Jobs::add`).
pub(super) struct NewJob {
    pub name: String,
    pub spec: JobSubmit,
    pub scheduler: String,
    pub submitted: Millis,
    pub submit_unix_ms: u64,
    /// (block, length) of each input block: one map each.
    pub blocks: Vec<(BlockId, u64)>,
    pub reduces: u32,
    pub output: Option<String>,
}

impl Job {
    /// The reduces' tasks, once created.
    pub fn reduce_tasks(&self) -> &[Task] {
        &self.tasks[(self.maps as usize).min(self.tasks.len())..]
    }

    /// Map output bytes each worker holds for this job's reduces.
    pub fn output_on(&self) -> BTreeMap<WorkerId, u64> {
        let mut on = BTreeMap::new();
        for o in self.map_out.iter().flatten() {
            *on.entry(o.worker).or_insert(0) += o.output_bytes;
        }
        on
    }

    /// The map outputs kept on `worker`, as (map, worker, attempt).
    fn outputs_on(&self, worker: WorkerId) -> Vec<LostRef> {
        self.map_out
            .iter()
            .enumerate()
            .filter_map(|(m, o)| {
                o.filter(|o| o.worker == worker)
                    .map(|o| (m as u32, o.worker, o.attempt))
            })
            .collect()
    }
}

/// Where a map's successful attempt left its output, and what it counted
/// (taken back if the output is lost and the map runs again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MapOut {
    pub worker: WorkerId,
    pub attempt: u32,
    remote: bool,
    local_bytes: u64,
    remote_bytes: u64,
    /// Map output bytes it left for the reduces.
    pub output_bytes: u64,
}

/// What a job's successful attempts add up to (the report's counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct JobCounters {
    pub maps_done: u32,
    pub reduces_done: u32,
    /// Map output bytes the reduces fetched.
    pub shuffle_bytes: u64,
    pub data_local: u32,
    pub data_remote: u32,
    pub bytes_local: u64,
    pub bytes_remote: u64,
}

impl JobCounters {
    fn map_done(&mut self, remote: bool, local_bytes: u64, remote_bytes: u64) {
        self.maps_done += 1;
        if remote {
            self.data_remote += 1;
        } else {
            self.data_local += 1;
        }
        self.bytes_local += local_bytes;
        self.bytes_remote += remote_bytes;
    }

    /// A map's output was lost: it will run again and count again.
    fn map_lost(&mut self, out: &MapOut) {
        self.maps_done -= 1;
        if out.remote {
            self.data_remote -= 1;
        } else {
            self.data_local -= 1;
        }
        self.bytes_local -= out.local_bytes;
        self.bytes_remote -= out.remote_bytes;
    }

    fn reduce_done(&mut self, fetched_bytes: u64) {
        self.reduces_done += 1;
        self.shuffle_bytes += fetched_bytes;
    }
}

/// What follows a map's success.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AfterMap {
    /// Other maps are still to finish (or the job already ended).
    Wait,
    /// The last map of a map-only job: it succeeded.
    JobDone,
    /// The last map: the reduces are to be created.
    CreateReduces,
    /// The last of the maps that ran again: the waiting reduces may go on.
    ReleaseReduces,
}

/// What follows a failed attempt.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AfterFailure {
    /// Its job had ended already: nothing.
    Nothing,
    /// Back in its queue.
    Retry,
    /// It failed too often: the job fails with this error.
    FailJob(String),
}

#[derive(Debug)]
pub(super) struct Jobs {
    jobs: HashMap<JobId, Job>,
    /// The number the next job gets.
    next: u32,
    /// Jobs of earlier incarnations of the master, from the journal.
    archived: BTreeMap<JobId, JobReport>,
    /// Jobs that reached a final state (wakes long-polls).
    finished: u64,
    /// Maps run again because their output was lost.
    maps_rerun: u64,
    /// Ended jobs, oldest first, and how many of them stay in memory
    /// (`master.retained_jobs`): `retire` forgets the oldest beyond it.
    ended: std::collections::VecDeque<JobId>,
    retain: usize,
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new(usize::MAX)
    }
}

impl Jobs {
    /// No jobs yet; at most `retain` ended ones kept.
    pub fn new(retain: usize) -> Self {
        Jobs {
            jobs: HashMap::new(),
            next: 1,
            archived: BTreeMap::new(),
            finished: 0,
            maps_rerun: 0,
            ended: Default::default(),
            retain: retain.max(1),
        }
    }

    /// Forgets the oldest ended jobs beyond the retention (their reports
    /// are in the journal); how many.
    pub fn retire(&mut self) -> usize {
        let mut n = 0;
        while self.ended.len() > self.retain {
            let id = self.ended.pop_front().expect("longer than retain");
            self.jobs.remove(&id);
            self.archived.remove(&id);
            n += 1;
        }
        n
    }

    /// A job of this master or an earlier one that ended and was retired.
    pub fn retired(&self, id: JobId) -> bool {
        id.0 >= 1
            && id.0 < self.next
            && !self.jobs.contains_key(&id)
            && !self.archived.contains_key(&id)
    }

    pub fn get(&self, id: JobId) -> Option<&Job> {
        self.jobs.get(&id)
    }

    /// A job known to exist (a task of it was launched).
    pub fn job(&self, id: JobId) -> &Job {
        &self.jobs[&id]
    }

    pub fn task(&self, t: TaskRef) -> &Task {
        &self.jobs[&t.job].tasks[t.index as usize]
    }

    /// The jobs of this incarnation, in no order.
    pub fn all(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values()
    }

    /// The jobs that have not ended.
    pub fn live(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values().filter(|j| !j.state.is_done())
    }

    pub fn archived(&self, id: JobId) -> Option<&JobReport> {
        self.archived.get(&id)
    }

    /// Every job's id, this incarnation's and earlier ones', oldest first.
    pub fn ids(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self
            .jobs
            .keys()
            .chain(self.archived.keys())
            .copied()
            .collect();
        ids.sort();
        ids
    }

    pub fn state(&self, id: JobId) -> Option<JobState> {
        self.jobs
            .get(&id)
            .map(|j| j.state)
            .or_else(|| self.archived.get(&id).map(|r| r.state))
    }

    pub fn finished(&self) -> u64 {
        self.finished
    }

    pub fn maps_rerun(&self) -> u64 {
        self.maps_rerun
    }

    /// The id the next job will get.
    pub fn next_id(&self) -> JobId {
        JobId(self.next)
    }

    /// A job that has not ended and writes `file`.
    pub fn writing(&self, file: &str) -> bool {
        self.live().any(|j| j.output.as_deref() == Some(file))
    }

    /// A job that has not ended and reads or writes `file`, and which.
    pub fn using(&self, file: &str) -> Option<(JobId, &'static str)> {
        self.live()
            .find(|j| j.spec.input == file || j.output.as_deref() == Some(file))
            .map(|j| {
                let how = if j.spec.input == file {
                    "its input"
                } else {
                    "its output"
                };
                (j.id, how)
            })
    }

    /// Task `t`, if its job is here.
    fn find(&self, t: TaskRef) -> Option<&Task> {
        self.jobs.get(&t.job)?.tasks.get(t.index as usize)
    }

    /// Attempt `a` if it is one of its task's running attempts (the
    /// current one or its backup), on any worker.
    pub fn running(&self, a: AttemptId) -> Option<RunningAttempt> {
        self.find(a.task)?
            .attempts()
            .find(|ra| ra.attempt == a.attempt)
    }

    /// The other running attempt of `a`'s task (its backup, or the attempt
    /// it backs up), if any.
    pub fn other(&self, a: AttemptId) -> Option<RunningAttempt> {
        let t = self.find(a.task)?;
        t.backup?;
        t.attempts().find(|ra| ra.attempt != a.attempt)
    }

    /// Attempt `a` ends while its task's other attempt goes on (which is
    /// the current one from now); false if there is no other.
    pub fn drop_attempt(&mut self, a: AttemptId) -> bool {
        let Some(t) = self
            .jobs
            .get_mut(&a.task.job)
            .and_then(|j| j.tasks.get_mut(a.task.index as usize))
        else {
            return false;
        };
        let Some(b) = t.backup else {
            return false;
        };
        if b.attempt == a.attempt {
            t.backup = None;
            return true;
        }
        match t.status {
            TaskStatus::Running(ra) if ra.attempt == a.attempt => {
                t.status = TaskStatus::Running(b);
                t.backup = None;
                true
            }
            _ => false,
        }
    }

    /// Attempt `a` finished first of its task's two: if it is the backup,
    /// its job counts a backup that won.
    pub fn first_of_two(&mut self, a: AttemptId) {
        let Some(job) = self.jobs.get_mut(&a.task.job) else {
            return;
        };
        if job.tasks[a.task.index as usize]
            .backup
            .is_some_and(|b| b.attempt == a.attempt)
        {
            job.backups_won += 1;
        }
    }

    /// A backup of running task `t` starts on `worker`, reading from
    /// `source` (speculation; a reduce's reads from `worker`). Returns the
    /// attempt's number.
    pub fn start_backup(
        &mut self,
        t: TaskRef,
        worker: WorkerId,
        source: WorkerId,
        now: Millis,
    ) -> u32 {
        let job = self.jobs.get_mut(&t.job).expect("a running map");
        job.backups += 1;
        let task = &mut job.tasks[t.index as usize];
        debug_assert!(matches!(task.status, TaskStatus::Running(_)) && task.backup.is_none());
        let attempt = task.number();
        task.backup = Some(RunningAttempt::new(attempt, worker, source, now));
        attempt
    }

    /// Attempt `a` if it is its task's current one and runs on `worker`:
    /// only such an attempt's result counts (fencing).
    pub fn current(&self, a: AttemptId, worker: WorkerId) -> Option<RunningAttempt> {
        self.running(a).filter(|ra| ra.worker == worker)
    }

    /// Of the attempts `out`, those of jobs not ended whose progress count
    /// has not grown for more than `limit` ms, with their worker.
    pub fn stalled(
        &self,
        out: impl Iterator<Item = AttemptId>,
        now: Millis,
        limit: Millis,
    ) -> Vec<(WorkerId, AttemptId, RunningAttempt)> {
        let mut late = Vec::new();
        for a in out {
            let live = self
                .jobs
                .get(&a.task.job)
                .is_some_and(|j| !j.state.is_done());
            if let Some(ra) = self.running(a).filter(|_| live) {
                if now.saturating_sub(ra.progressed) > limit {
                    late.push((ra.worker, a, ra));
                }
            }
        }
        late.sort_by_key(|(_, a, _)| *a);
        late.dedup_by_key(|(_, a, _)| *a);
        late
    }

    /// For each job whose reduces still need map output: the outputs kept
    /// on `worker`.
    pub fn outputs_needed_on(&self, worker: WorkerId) -> Vec<(JobId, Vec<LostRef>)> {
        self.live()
            .filter(|j| j.counts.reduces_done < j.reduces)
            .map(|j| (j.id, j.outputs_on(worker)))
            .filter(|(_, l)| !l.is_empty())
            .collect()
    }

    /// A job with reduces that has not ended (its map output must stay).
    pub fn needs_outputs(&self, id: JobId) -> bool {
        self.jobs
            .get(&id)
            .is_some_and(|j| !j.state.is_done() && j.reduces > 0)
    }

    /// Adds a job (its id is `next_id()`), one pending map per block.
    pub fn add(&mut self, n: NewJob) -> JobId {
        let id = self.next_id();
        self.insert(id, n);
        id
    }

    /// Adds job `id` that an earlier incarnation accepted (the journal),
    /// one pending map per block, to be rebuilt by the replay below.
    pub fn add_again(&mut self, id: JobId, n: NewJob) {
        self.insert(id, n);
        self.jobs.get_mut(&id).expect("just added").restarts += 1;
    }

    fn insert(&mut self, id: JobId, n: NewJob) {
        self.seen(id);
        let tasks: Vec<Task> = n
            .blocks
            .into_iter()
            .map(|(block, len)| Task::new(block, None, len))
            .collect();
        let maps = tasks.len() as u32;
        self.jobs.insert(
            id,
            Job {
                id,
                name: n.name,
                spec: n.spec,
                scheduler: n.scheduler,
                submitted: n.submitted,
                submit_unix_ms: n.submit_unix_ms,
                first_launch: None,
                finished: None,
                state: JobState::Pending,
                error: None,
                tasks,
                maps,
                reduces: n.reduces,
                output: n.output,
                map_out: vec![None; maps as usize],
                samples: Vec::new(),
                splits: Vec::new(),
                records: Vec::new(),
                counts: JobCounters::default(),
                restarts: 0,
                restart_reruns: 0,
                backups: 0,
                backups_won: 0,
            },
        );
    }

    /// Replay: attempt `a` went out to `worker`, reading from `source`; it
    /// is its task's current attempt until the journal (or, at the end, the
    /// workers) say otherwise. Later attempts get higher numbers.
    pub fn launched_before(
        &mut self,
        a: AttemptId,
        worker: WorkerId,
        source: WorkerId,
        now: Millis,
    ) {
        let Some(job) = self.jobs.get_mut(&a.task.job) else {
            return;
        };
        let Some(task) = job.tasks.get_mut(a.task.index as usize) else {
            return;
        };
        task.next_attempt = task.next_attempt.max(a.attempt + 1);
        let ra = RunningAttempt::new(a.attempt, worker, source, now);
        match task.status {
            // A backup (speculation) of the attempt that runs.
            TaskStatus::Running(cur) if cur.attempt != a.attempt => {
                task.backup = Some(ra);
                job.backups += 1;
            }
            _ => task.status = TaskStatus::Running(ra),
        }
        job.first_launch.get_or_insert(now);
        job.state = JobState::Running;
    }

    /// Replay: attempt `a` ended with no failure counted and nothing else
    /// changed but its record.
    pub fn ended_before(&mut self, a: AttemptId, rec: Option<TaskRecord>) {
        let Some(job) = self.jobs.get_mut(&a.task.job) else {
            return;
        };
        job.records.extend(rec);
        if self.drop_attempt(a) {
            return;
        }
        let Some(job) = self.jobs.get_mut(&a.task.job) else {
            return;
        };
        if let Some(task) = job.tasks.get_mut(a.task.index as usize) {
            if matches!(task.status, TaskStatus::Running(ra) if ra.attempt == a.attempt) {
                task.settle(TaskStatus::Pending);
            }
        }
    }

    /// After the replay: an attempt the journal left running that no
    /// worker runs any more; its task is pending again, counted as a rerun
    /// caused by the restart.
    pub fn lost_in_restart(&mut self, t: TaskRef) {
        let job = self.jobs.get_mut(&t.job).expect("a held job");
        job.tasks[t.index as usize].settle(TaskStatus::Pending);
        job.restart_reruns += 1;
    }

    /// Map `t`'s next attempt starts on `worker`, reading from `source`;
    /// its job is running. Returns the attempt's number.
    pub fn start_map(
        &mut self,
        t: TaskRef,
        worker: WorkerId,
        source: WorkerId,
        now: Millis,
    ) -> u32 {
        let job = self.jobs.get_mut(&t.job).expect("scheduled job exists");
        job.first_launch.get_or_insert(now);
        job.state = JobState::Running;
        job.tasks[t.index as usize].start(worker, source, now)
    }

    /// Reduce `t`'s next attempt starts on `worker` (a `backup` of the
    /// one that runs, or its new current attempt), sending its output's
    /// other replicas to `out_targets`. Returns the attempt's number.
    pub fn start_reduce(
        &mut self,
        t: TaskRef,
        worker: WorkerId,
        now: Millis,
        out_targets: Vec<WorkerId>,
        backup: bool,
    ) -> u32 {
        if backup {
            let attempt = self.start_backup(t, worker, worker, now);
            let task = &mut self.jobs.get_mut(&t.job).expect("checked").tasks[t.index as usize];
            task.out_targets.extend(out_targets);
            return attempt;
        }
        let job = self.jobs.get_mut(&t.job).expect("job with pending reduces");
        job.first_launch.get_or_insert(now);
        let task = &mut job.tasks[t.index as usize];
        debug_assert!(task.reduce.is_some(), "a reduce task");
        let attempt = task.start(worker, worker, now);
        task.out_targets = out_targets;
        attempt
    }

    /// A heartbeat's progress count for an attempt on `worker`: its slot,
    /// and, if the count grew, when.
    pub fn progress(&mut self, worker: WorkerId, p: &AttemptProgress, now: Millis) {
        let Some(task) = self
            .jobs
            .get_mut(&p.attempt.task.job)
            .and_then(|j| j.tasks.get_mut(p.attempt.task.index as usize))
        else {
            return;
        };
        let current = match &mut task.status {
            TaskStatus::Running(ra) => Some(ra),
            _ => None,
        };
        for ra in current.into_iter().chain(task.backup.as_mut()) {
            if ra.attempt == p.attempt.attempt && ra.worker == worker {
                ra.slot = Some(p.slot);
                if p.units > ra.progress {
                    ra.progress = p.units;
                    ra.progressed = now;
                }
            }
        }
    }

    /// Task `t` is pending again, without a failure counted; whether its
    /// job is still live (then it goes back in its queue).
    pub fn pending_again(&mut self, t: TaskRef) -> bool {
        let job = self.jobs.get_mut(&t.job).expect("checked by the caller");
        job.tasks[t.index as usize].settle(TaskStatus::Pending);
        !job.state.is_done()
    }

    /// Adds the record of an attempt that changed nothing else.
    pub fn record(&mut self, id: JobId, rec: TaskRecord) {
        self.jobs.get_mut(&id).expect("checked").records.push(rec);
    }

    /// Map attempt `a` (running as `ra`) succeeded on `worker`, leaving
    /// `summary`'s output there.
    pub fn map_succeeded(
        &mut self,
        a: AttemptId,
        worker: WorkerId,
        ra: RunningAttempt,
        rec: TaskRecord,
        summary: &MapSummary,
    ) -> AfterMap {
        let job = self.jobs.get_mut(&a.task.job).expect("checked");
        job.tasks[a.task.index as usize].settle(TaskStatus::Done);
        let (local_bytes, remote_bytes) = (rec.local_bytes, rec.remote_bytes);
        job.records.push(rec);
        job.counts.map_done(ra.remote(), local_bytes, remote_bytes);
        job.map_out[a.task.index as usize] = Some(MapOut {
            worker,
            attempt: a.attempt,
            remote: ra.remote(),
            local_bytes,
            remote_bytes,
            output_bytes: summary.output_bytes,
        });
        job.samples.extend(summary.sample.iter().cloned());
        if job.state.is_done() || job.counts.maps_done < job.maps {
            AfterMap::Wait
        } else if job.reduces == 0 {
            AfterMap::JobDone
        } else if job.tasks.len() as u32 == job.maps {
            AfterMap::CreateReduces
        } else {
            AfterMap::ReleaseReduces
        }
    }

    /// Reduce attempt `a` succeeded, having fetched `fetched` bytes of map
    /// output; whether that was the live job's last reduce.
    pub fn reduce_succeeded(&mut self, a: AttemptId, rec: TaskRecord, fetched: u64) -> bool {
        let job = self.jobs.get_mut(&a.task.job).expect("checked");
        job.tasks[a.task.index as usize].settle(TaskStatus::Done);
        job.records.push(rec);
        job.counts.reduce_done(fetched);
        !job.state.is_done() && job.counts.reduces_done == job.reduces
    }

    /// Attempt `a` failed (counted): its task is pending again until it
    /// has failed `max` times.
    pub fn attempt_failed(
        &mut self,
        a: AttemptId,
        rec: TaskRecord,
        error: &str,
        max: u32,
    ) -> AfterFailure {
        let job = self.jobs.get_mut(&a.task.job).expect("checked");
        job.records.push(rec);
        let task = &mut job.tasks[a.task.index as usize];
        task.failures += 1;
        task.settle(TaskStatus::Pending);
        if job.state.is_done() {
            AfterFailure::Nothing
        } else if task.failures >= max {
            AfterFailure::FailJob(format!(
                "task {} failed {} times; last error: {error}",
                a.task, task.failures
            ))
        } else {
            AfterFailure::Retry
        }
    }

    /// Map `t` stalled on `worker`: its replica there is not used for it
    /// again while another is live.
    pub fn stalled_on(&mut self, t: TaskRef, worker: WorkerId) {
        let task = &mut self.jobs.get_mut(&t.job).expect("listed above").tasks[t.index as usize];
        if task.reduce.is_none() && !task.stalled_on.contains(&worker) {
            task.stalled_on.push(worker);
        }
    }

    /// Job `id` succeeded; its job completion time (ms) and its output file.
    pub fn succeed(&mut self, id: JobId) -> (u64, Option<String>) {
        let job = self.jobs.get_mut(&id).expect("job exists");
        let end = job.records.iter().map(|r| r.end_ms).max().unwrap_or(0);
        job.finished = Some(job.submitted + end);
        job.state = JobState::Succeeded;
        self.finished += 1;
        self.ended.push_back(id);
        (end, job.output.clone())
    }

    /// Job `id` fails with `error`; false if it had ended already (or is
    /// unknown).
    pub fn fail(&mut self, id: JobId, error: String) -> bool {
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        if job.state.is_done() {
            return false;
        }
        job.state = JobState::Failed;
        job.error = Some(error);
        job.finished = Some(job.submitted);
        self.finished += 1;
        self.ended.push_back(id);
        true
    }

    /// All of job `id`'s maps are done: its reduce tasks are created (sort:
    /// split keys from the maps' samples first). Their task indices and the
    /// output file.
    pub fn create_reduces(&mut self, id: JobId) -> (Vec<u32>, String) {
        let job = self.jobs.get_mut(&id).expect("job exists");
        if job.spec.workload.range_partitioned() {
            job.splits = workloads::sort::splits(std::mem::take(&mut job.samples), job.reduces);
        }
        let output = job
            .output
            .clone()
            .expect("jobs with reduces name an output");
        for r in 0..job.reduces {
            let block = BlockId::for_file(&output, r).expect("validated output name");
            job.tasks.push(Task::new(block, Some(r), 0));
        }
        ((job.maps..job.maps + job.reduces).collect(), output)
    }

    /// Map outputs of job `id` its reduces can no longer fetch: each map
    /// whose current output is that one is pending again (its counters
    /// taken back); outputs already replaced are ignored (a late report, or
    /// a worker back from the dead). The maps to run again.
    pub fn lose_outputs(&mut self, id: JobId, lost: impl IntoIterator<Item = LostRef>) -> Vec<u32> {
        let Some(job) = self.jobs.get_mut(&id) else {
            return Vec::new();
        };
        if job.state.is_done() {
            return Vec::new();
        }
        let mut again = Vec::new();
        for (m, worker, attempt) in lost {
            let Some(slot) = job.map_out.get_mut(m as usize) else {
                continue;
            };
            if let Some(out) = *slot {
                if out.worker == worker && out.attempt == attempt {
                    *slot = None;
                    job.counts.map_lost(&out);
                    job.tasks[m as usize].settle(TaskStatus::Pending);
                    again.push(m);
                }
            }
        }
        self.maps_rerun += again.len() as u64;
        again
    }

    /// An earlier incarnation used job id `id`: ids go on after it.
    pub fn seen(&mut self, id: JobId) {
        self.next = self.next.max(id.0 + 1);
    }

    /// The report of an earlier incarnation's job (its id is seen).
    pub fn archive(&mut self, report: JobReport) {
        self.seen(report.job);
        self.ended.push_back(report.job);
        self.archived.insert(report.job, report);
    }

    /// How many jobs the journal gave back.
    pub fn archived_count(&self) -> usize {
        self.archived.len()
    }
}

mod report;
mod task;

pub(super) use report::unstarted_report;

#[cfg(test)]
mod tests;
