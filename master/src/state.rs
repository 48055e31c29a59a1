//! `Master`: the cluster's state and the rules that change it. Synchronous
//! and clock-free (every call is given the time), so tests drive it with
//! fake workers exactly as the HTTP layer drives it with real ones.
//!
//! Task life: Pending -> Running(attempt n on worker w, reading from s) ->
//! Done, or back to Pending as attempt n+1 when the attempt failed (counted),
//! was rejected, lost in transit or its worker was lost (not counted).
//! Results are accepted only from the current attempt on the worker it was
//! sent to (fencing).
//!
//! Jobs with reduces (wordcount, sort): when the last map succeeds, the
//! reduce tasks are created (sort: with split keys from the maps' samples)
//! and take free slots before any map, on whichever worker heartbeats next
//! (like Hadoop's reduce slots, they have no input locality). Each fetches
//! its partition from every map's worker; a reduce whose fetch fails is
//! retried, and the job fails once it has failed `max_task_attempts` times
//! (a lost mapper's output is not recomputed).

use crate::catalog::Catalog;
use crate::sched::{self, Assignment, ClusterView, Millis, PendingTask, Scheduler};
use common::config::{ClusterConfig, SchedulerConfig, WorkerSettings};
use common::wire::{
    FileInfo, Heartbeat, HeartbeatReply, JobReport, JobState, JobSubmit, KeyRange, Launch,
    LaunchTask, Locality, OutputTarget, ReduceLaunch, RegisterReply, RegisterRequest,
    ReplicaSource, ShuffleInput, TaskKind, TaskOutcome, TaskRecord, TaskResult, WorkerInfo,
};
use common::{AttemptId, BlockId, JobId, TaskRef, WorkerId};
use std::collections::{HashMap, VecDeque};
use workloads::Workload;

/// Upper bound on a job's reduce tasks.
pub const MAX_REDUCES: u32 = 10_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MasterError {
    #[error("no [[worker]] named {name:?} in cluster.toml (known: {known})")]
    UnknownWorker { name: String, known: String },
    #[error("no file named {name:?}; load it first (files: {known})")]
    UnknownFile { name: String, known: String },
    #[error("file {name:?} is incomplete: blocks {missing:?} have no live replica")]
    IncompleteFile { name: String, missing: Vec<u32> },
    #[error("no job {0}")]
    UnknownJob(JobId),
    #[error("{0}")]
    BadRequest(String),
}

/// What the master takes from cluster.toml.
#[derive(Clone, Debug)]
pub struct MasterSettings {
    pub heartbeat_ms: u64,
    pub worker_timeout_ms: u64,
    pub max_task_attempts: u32,
    pub scheduler: SchedulerConfig,
    pub seed: u64,
    /// Replicas of every reduce output block (capped by live workers).
    pub replication: u32,
    pub workers: Vec<WorkerSettings>,
}

impl MasterSettings {
    pub fn from_config(cfg: &ClusterConfig) -> Self {
        MasterSettings {
            heartbeat_ms: cfg.cluster.heartbeat_ms,
            worker_timeout_ms: cfg.cluster.worker_timeout_ms,
            max_task_attempts: cfg.cluster.max_task_attempts,
            scheduler: cfg.scheduler.clone(),
            seed: cfg.cluster.seed,
            replication: cfg.cluster.replication,
            workers: cfg.worker_settings(),
        }
    }
}

#[derive(Debug)]
struct WorkerState {
    name: String,
    addr: String,
    slots: u32,
    registered: bool,
    alive: bool,
    last_seen: Millis,
    /// Heartbeats received since registration.
    hb_seq: u64,
    /// Attempts sent to this worker, with the heartbeat whose reply carried them.
    running: HashMap<AttemptId, u64>,
    /// Launches decided for this worker, awaiting its next heartbeat.
    outbox: Vec<Launch>,
    /// Ended jobs whose map output this worker may delete.
    forget: Vec<JobId>,
    blocks: usize,
    free_slots: u32,
}

#[derive(Clone, Copy, Debug)]
struct RunningAttempt {
    attempt: u32,
    worker: WorkerId,
    source: WorkerId,
}

#[derive(Clone, Copy, Debug)]
enum TaskStatus {
    Pending,
    Running(RunningAttempt),
    Done,
}

#[derive(Debug)]
struct Task {
    /// The input block of a map; the output block of a reduce.
    block: BlockId,
    /// `Some(r)` for the reduce of partition r.
    reduce: Option<u32>,
    len: u64,
    /// Number the next attempt gets.
    next_attempt: u32,
    /// Failed attempts (rejections and losses do not count).
    failures: u32,
    status: TaskStatus,
}

#[derive(Debug)]
struct Job {
    id: JobId,
    name: String,
    spec: JobSubmit,
    scheduler: String,
    submitted: Millis,
    submit_unix_ms: u64,
    first_launch: Option<Millis>,
    finished: Option<Millis>,
    state: JobState,
    error: Option<String>,
    /// Maps first (index = block index), then the reduces once created.
    tasks: Vec<Task>,
    maps: u32,
    reduces: u32,
    /// Output file of a job with reduces.
    output: Option<String>,
    /// Where each map's successful attempt left its output.
    map_out: Vec<Option<(WorkerId, u32)>>,
    /// sort: keys sampled by the maps, then the reduces' split keys.
    samples: Vec<Vec<u8>>,
    splits: Vec<Vec<u8>>,
    /// Reduce task indices waiting for a slot.
    pending_reduces: VecDeque<u32>,
    done: u32,
    reduces_done: u32,
    shuffle_bytes: u64,
    records: Vec<TaskRecord>,
    data_local: u32,
    data_remote: u32,
    bytes_local: u64,
    bytes_remote: u64,
}

pub struct Master {
    settings: MasterSettings,
    workers: Vec<WorkerState>,
    catalog: Catalog,
    jobs: HashMap<JobId, Job>,
    next_job: u32,
    view: ClusterView,
    scheduler: Box<dyn Scheduler>,
    /// Bumped whenever a job reaches a final state (wakes long-polls).
    pub finished_jobs: u64,
}

impl Master {
    pub fn new(settings: MasterSettings) -> Self {
        let scheduler = sched::build(&settings.scheduler, settings.seed);
        Self::with_scheduler(settings, scheduler)
    }

    pub fn with_scheduler(settings: MasterSettings, scheduler: Box<dyn Scheduler>) -> Self {
        let workers = settings
            .workers
            .iter()
            .map(|w| WorkerState {
                name: w.name.clone(),
                addr: String::new(),
                slots: w.slots,
                registered: false,
                alive: false,
                last_seen: 0,
                hb_seq: 0,
                running: HashMap::new(),
                outbox: Vec::new(),
                forget: Vec::new(),
                blocks: 0,
                free_slots: 0,
            })
            .collect();
        Master {
            settings,
            workers,
            catalog: Catalog::default(),
            jobs: HashMap::new(),
            next_job: 1,
            view: ClusterView::new(),
            scheduler,
            finished_jobs: 0,
        }
    }

    pub fn scheduler_name(&self) -> String {
        self.scheduler.name()
    }

    pub fn view(&self) -> &ClusterView {
        &self.view
    }

    fn worker_name(&self, w: WorkerId) -> String {
        self.workers
            .get(w.0 as usize)
            .map_or_else(|| w.to_string(), |s| s.name.clone())
    }

    // ---------------------------------------------------------------- workers

    pub fn register(
        &mut self,
        now: Millis,
        req: RegisterRequest,
    ) -> Result<RegisterReply, MasterError> {
        let Some(idx) = self.workers.iter().position(|w| w.name == req.name) else {
            return Err(MasterError::UnknownWorker {
                name: req.name,
                known: self
                    .workers
                    .iter()
                    .map(|w| w.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let id = WorkerId(idx as u32);
        if self.workers[idx].registered {
            // A restart: whatever it ran before is gone.
            tracing::info!(worker = %req.name, "worker registered again; its running attempts are lost");
            self.forget_attempts(id);
        }
        if req.slots != self.workers[idx].slots {
            tracing::warn!(worker = %req.name, configured = self.workers[idx].slots, reported = req.slots,
                "worker reports a different slot count than the master's cluster.toml; using the worker's");
        }
        let w = &mut self.workers[idx];
        w.addr = req.addr;
        w.slots = req.slots;
        w.registered = true;
        w.alive = true;
        w.last_seen = now;
        w.hb_seq = 0;
        w.blocks = req.blocks.len();
        w.free_slots = req.slots;
        self.view.upsert_worker(id, req.slots);
        self.view.set_free(id, req.slots);
        let role = self.settings.workers[idx].role;
        self.view.set_runs_maps(id, role.runs_maps());
        self.catalog.apply_report(id, &req.blocks);
        self.refresh_replicas();
        tracing::info!(worker = %self.workers[idx].name, %id, addr = %self.workers[idx].addr, blocks = req.blocks.len(), "worker registered");
        Ok(RegisterReply {
            worker: id,
            heartbeat_ms: self.settings.heartbeat_ms,
        })
    }

    pub fn heartbeat(&mut self, now: Millis, hb: Heartbeat) -> HeartbeatReply {
        let id = hb.worker;
        let known = self
            .workers
            .get(id.0 as usize)
            .is_some_and(|w| w.registered && w.alive);
        if !known {
            return HeartbeatReply {
                launches: Vec::new(),
                forget_jobs: Vec::new(),
                reregister: true,
            };
        }
        let seq = {
            let w = &mut self.workers[id.0 as usize];
            w.last_seen = now;
            w.hb_seq += 1;
            w.free_slots = hb.free_slots;
            w.hb_seq
        };
        if let Some(blocks) = &hb.blocks {
            self.workers[id.0 as usize].blocks = blocks.len();
            self.catalog.apply_report(id, blocks);
            self.refresh_replicas();
        }
        let reported: std::collections::HashSet<AttemptId> = hb
            .running
            .iter()
            .copied()
            .chain(hb.results.iter().map(|r| r.attempt))
            .collect();
        for r in hb.results {
            self.on_result(id, r);
        }
        // Launches delivered in an earlier reply that the worker does not
        // know: the reply was lost. Run them again, without penalty.
        let lost: Vec<AttemptId> = self.workers[id.0 as usize]
            .running
            .iter()
            .filter(|(a, tag)| **tag < seq && !reported.contains(a))
            .map(|(a, _)| *a)
            .collect();
        for a in lost {
            tracing::warn!(attempt = %a, worker = %self.worker_name(id), "launch never reached the worker; rescheduling");
            self.end_attempt(id, a, None);
        }
        let outbox = std::mem::take(&mut self.workers[id.0 as usize].outbox);
        self.view
            .set_free(id, hb.free_slots.saturating_sub(outbox.len() as u32));
        self.view.set_busy(id, now, hb.busy);
        let mut launches = outbox;
        // Reduces first: they hold up their whole job.
        launches.extend(self.launch_reduces(now, id));
        for a in sched::offer(self.scheduler.as_mut(), now, id, &mut self.view) {
            let launch = self.start_attempt(now, &a);
            if a.worker == id {
                launches.push(launch);
            } else {
                self.workers[a.worker.0 as usize].outbox.push(launch);
            }
        }
        for l in &launches {
            self.workers[id.0 as usize].running.insert(l.attempt, seq);
        }
        HeartbeatReply {
            launches,
            forget_jobs: std::mem::take(&mut self.workers[id.0 as usize].forget),
            reregister: false,
        }
    }

    /// Fills `id`'s free slots with waiting reduces, oldest job first
    /// (only on workers whose role runs reduces).
    fn launch_reduces(&mut self, now: Millis, id: WorkerId) -> Vec<Launch> {
        let mut out = Vec::new();
        if !self.settings.workers[id.0 as usize].role.runs_reduces() {
            return out;
        }
        let mut jobs: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| !j.state.is_done() && !j.pending_reduces.is_empty())
            .map(|j| j.id)
            .collect();
        jobs.sort();
        for jid in jobs {
            while self.view.free_slots_any(id) > 0 {
                let Some(idx) = self
                    .jobs
                    .get_mut(&jid)
                    .and_then(|j| j.pending_reduces.pop_front())
                else {
                    break;
                };
                self.view.start_external(jid, id);
                out.push(self.start_reduce(now, jid, idx, id));
            }
        }
        out
    }

    fn start_reduce(&mut self, now: Millis, jid: JobId, idx: u32, worker: WorkerId) -> Launch {
        // Output replicas go to live workers that hold data (run maps),
        // plus the reducer itself.
        let alive: Vec<WorkerId> = (0..self.workers.len() as u32)
            .map(WorkerId)
            .filter(|w| {
                self.workers[w.0 as usize].alive
                    && (*w == worker || self.settings.workers[w.0 as usize].role.runs_maps())
            })
            .collect();
        let replication = self.settings.replication.max(1) as usize;
        let job = self.jobs.get_mut(&jid).expect("job with pending reduces");
        job.first_launch.get_or_insert(now);
        let r = job.tasks[idx as usize].reduce.expect("a reduce task");
        let task = &mut job.tasks[idx as usize];
        let attempt = task.next_attempt;
        task.next_attempt += 1;
        task.status = TaskStatus::Running(RunningAttempt {
            attempt,
            worker,
            source: worker,
        });
        // Output replicas: the reducer, then the next live workers after it
        // in a rotation that differs per job and partition.
        let start = alive.iter().position(|w| *w == worker).unwrap_or(0);
        let shift = (jid.0 as usize + r as usize) % alive.len().max(1);
        let others: Vec<WorkerId> = (0..alive.len())
            .map(|k| alive[(start + shift + k) % alive.len()])
            .filter(|w| *w != worker)
            .take(replication.saturating_sub(1))
            .collect();
        let inputs = job
            .map_out
            .iter()
            .enumerate()
            .filter_map(|(m, o)| {
                o.map(|(w, a)| ShuffleInput {
                    map: m as u32,
                    attempt: a,
                    worker: w,
                    addr: self.workers[w.0 as usize].addr.clone(),
                })
            })
            .collect();
        let range = (job.spec.workload == Workload::Sort).then(|| KeyRange {
            lo: (r > 0)
                .then(|| job.splits.get(r as usize - 1).cloned())
                .flatten(),
            hi: job.splits.get(r as usize).cloned(),
        });
        let output = job
            .output
            .clone()
            .expect("jobs with reduces name an output");
        Launch {
            attempt: AttemptId {
                task: TaskRef {
                    job: jid,
                    index: idx,
                },
                attempt,
            },
            workload: job.spec.workload,
            task: LaunchTask::Reduce(ReduceLaunch {
                partition: r,
                inputs,
                range,
                output: OutputTarget {
                    block: job.tasks[idx as usize].block.clone(),
                    file: output,
                    index: r,
                    file_blocks: job.reduces,
                    replicas: others
                        .iter()
                        .map(|w| self.workers[w.0 as usize].addr.clone())
                        .collect(),
                },
            }),
        }
    }

    /// Declares workers silent for longer than `worker_timeout_ms` lost.
    pub fn check_workers(&mut self, now: Millis) {
        for i in 0..self.workers.len() {
            let w = &self.workers[i];
            if w.alive && now.saturating_sub(w.last_seen) > self.settings.worker_timeout_ms {
                tracing::warn!(worker = %w.name, silent_ms = now - w.last_seen, "worker lost");
                self.lose_worker(WorkerId(i as u32));
            }
        }
    }

    fn lose_worker(&mut self, id: WorkerId) {
        self.workers[id.0 as usize].alive = false;
        self.catalog.drop_worker(id);
        let orphans = self.view.lose_worker(id);
        self.forget_attempts(id);
        for t in orphans {
            let block = self.jobs[&t.job].tasks[t.index as usize].block.clone();
            self.fail_job(
                t.job,
                format!(
                    "block {block} has no live replica (worker {} lost)",
                    self.worker_name(id)
                ),
            );
        }
    }

    /// Every attempt sent or queued to `id` is gone: reschedule without penalty.
    fn forget_attempts(&mut self, id: WorkerId) {
        let w = &mut self.workers[id.0 as usize];
        let mut gone: Vec<AttemptId> = w.running.keys().copied().collect();
        gone.extend(w.outbox.drain(..).map(|l| l.attempt));
        w.forget.clear();
        gone.sort();
        for a in gone {
            self.end_attempt(id, a, None);
        }
    }

    pub fn workers(&self) -> Vec<WorkerInfo> {
        self.workers
            .iter()
            .enumerate()
            .map(|(i, w)| WorkerInfo {
                id: WorkerId(i as u32),
                role: self.settings.workers[i].role,
                name: w.name.clone(),
                addr: w.addr.clone(),
                slots: w.slots,
                free_slots: if w.alive { w.free_slots } else { 0 },
                alive: w.alive,
                blocks: w.blocks,
                running: w.running.len(),
            })
            .collect()
    }

    // ------------------------------------------------------------------ files

    pub fn files(&self) -> Vec<FileInfo> {
        self.catalog
            .files()
            .filter_map(|(n, _)| self.catalog.info(n, |w| self.worker_name(w)))
            .collect()
    }

    pub fn file(&self, name: &str) -> Result<FileInfo, MasterError> {
        self.catalog
            .info(name, |w| self.worker_name(w))
            .ok_or_else(|| self.unknown_file(name))
    }

    fn unknown_file(&self, name: &str) -> MasterError {
        let known: Vec<&str> = self.catalog.files().map(|(n, _)| n.as_str()).collect();
        MasterError::UnknownFile {
            name: name.to_owned(),
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        }
    }

    fn live_replicas(&self, file: &str, index: u32) -> Vec<WorkerId> {
        self.catalog
            .file(file)
            .and_then(|f| f.blocks.get(index as usize))
            .and_then(|b| b.as_ref())
            .map(|b| {
                b.replicas
                    .iter()
                    .copied()
                    .filter(|w| self.workers[w.0 as usize].alive)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Block reports changed: bring pending tasks' replica lists up to date.
    fn refresh_replicas(&mut self) {
        let mut updates = Vec::new();
        for job in self.jobs.values().filter(|j| !j.state.is_done()) {
            let Some(jv) = self.view.job(job.id) else {
                continue;
            };
            for t in jv.pending() {
                let live = self.live_replicas(&job.spec.input, t.task.index);
                if live != t.replicas {
                    updates.push((t.task, live));
                }
            }
        }
        for (t, live) in updates {
            self.view.set_replicas(t, live);
        }
    }

    // ------------------------------------------------------------------- jobs

    pub fn submit(
        &mut self,
        now: Millis,
        unix_ms: u64,
        spec: JobSubmit,
    ) -> Result<JobId, MasterError> {
        if let Some(g) = &spec.group {
            if g.is_empty()
                || g.len() > 64
                || !g
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(MasterError::BadRequest(format!(
                    "group {g:?} must be 1-64 ASCII letters, digits, '-', '_' or '.'"
                )));
            }
        }
        let reduces = spec.reduces.unwrap_or(spec.workload.default_reduces());
        if !spec.workload.has_reduce() && reduces > 0 {
            return Err(MasterError::BadRequest(format!(
                "{} is map-only; `reduces` must be 0 or absent (got {reduces})",
                spec.workload
            )));
        }
        if spec.workload.has_reduce() && !(1..=MAX_REDUCES).contains(&reduces) {
            return Err(MasterError::BadRequest(format!(
                "`reduces` must be 1..={MAX_REDUCES} for {} (got {reduces})",
                spec.workload
            )));
        }
        if !spec.workload.has_reduce() && spec.output.is_some() {
            return Err(MasterError::BadRequest(format!(
                "{} writes no output; drop `output`",
                spec.workload
            )));
        }
        let file = self
            .catalog
            .file(&spec.input)
            .ok_or_else(|| self.unknown_file(&spec.input))?;
        let missing: Vec<u32> = (0..file.blocks.len() as u32)
            .filter(|&i| self.live_replicas(&spec.input, i).is_empty())
            .collect();
        if !missing.is_empty() {
            return Err(MasterError::IncompleteFile {
                name: spec.input.clone(),
                missing,
            });
        }
        let id = JobId(self.next_job);
        let name = spec
            .name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", spec.workload, id.0));
        let output = if spec.workload.has_reduce() {
            let out = spec.output.clone().unwrap_or_else(|| format!("{name}.out"));
            common::ids::validate_file_name(&out)
                .map_err(|e| MasterError::BadRequest(format!("output file name {out:?}: {e}")))?;
            let taken = self.catalog.file(&out).is_some()
                || self
                    .jobs
                    .values()
                    .any(|j| !j.state.is_done() && j.output.as_deref() == Some(out.as_str()));
            if taken {
                return Err(MasterError::BadRequest(format!(
                    "output file {out:?} already exists or is being written; pick another `output`"
                )));
            }
            Some(out)
        } else {
            None
        };
        self.next_job += 1;
        let tasks: Vec<Task> = file
            .blocks
            .iter()
            .map(|b| {
                let b = b.as_ref().expect("complete file");
                Task {
                    block: b.id.clone(),
                    reduce: None,
                    len: b.len,
                    next_attempt: 0,
                    failures: 0,
                    status: TaskStatus::Pending,
                }
            })
            .collect();
        let pending = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| PendingTask {
                task: TaskRef {
                    job: id,
                    index: i as u32,
                },
                len: t.len,
                replicas: self.live_replicas(&spec.input, i as u32),
            })
            .collect();
        self.view.add_job(id, now, spec.group(), pending);
        let maps = tasks.len() as u32;
        tracing::info!(job = %id, %name, workload = %spec.workload, input = %spec.input, tasks = tasks.len(), "job submitted");
        self.jobs.insert(
            id,
            Job {
                id,
                name,
                spec,
                scheduler: self.scheduler.name(),
                submitted: now,
                submit_unix_ms: unix_ms,
                first_launch: None,
                finished: None,
                state: JobState::Pending,
                error: None,
                tasks,
                maps,
                reduces,
                output,
                map_out: vec![None; maps as usize],
                samples: Vec::new(),
                splits: Vec::new(),
                pending_reduces: VecDeque::new(),
                done: 0,
                reduces_done: 0,
                shuffle_bytes: 0,
                records: Vec::new(),
                data_local: 0,
                data_remote: 0,
                bytes_local: 0,
                bytes_remote: 0,
            },
        );
        Ok(id)
    }

    fn start_attempt(&mut self, now: Millis, a: &Assignment) -> Launch {
        let job = self
            .jobs
            .get_mut(&a.task.job)
            .expect("scheduled job exists");
        job.first_launch.get_or_insert(now);
        job.state = JobState::Running;
        let task = &mut job.tasks[a.task.index as usize];
        let attempt = task.next_attempt;
        task.next_attempt += 1;
        task.status = TaskStatus::Running(RunningAttempt {
            attempt,
            worker: a.worker,
            source: a.source,
        });
        let source = if a.is_local() {
            ReplicaSource::Local
        } else {
            ReplicaSource::Remote {
                worker: a.source,
                addr: self.workers[a.source.0 as usize].addr.clone(),
            }
        };
        Launch {
            attempt: AttemptId {
                task: a.task,
                attempt,
            },
            workload: job.spec.workload,
            task: LaunchTask::Map {
                block: task.block.clone(),
                len: task.len,
                source,
                reduces: job.reduces,
            },
        }
    }

    fn on_result(&mut self, worker: WorkerId, r: TaskResult) {
        let current = self
            .jobs
            .get(&r.attempt.task.job)
            .and_then(|j| j.tasks.get(r.attempt.task.index as usize))
            .and_then(|t| match t.status {
                TaskStatus::Running(ra)
                    if ra.attempt == r.attempt.attempt && ra.worker == worker =>
                {
                    Some(ra)
                }
                _ => None,
            });
        let Some(ra) = current else {
            tracing::debug!(attempt = %r.attempt, "ignoring result of a stale attempt");
            return;
        };
        self.end_attempt(worker, r.attempt, Some((ra, r)));
    }

    /// Ends attempt `a` on `worker`: with its result, or lost (`None`).
    fn end_attempt(
        &mut self,
        worker: WorkerId,
        a: AttemptId,
        result: Option<(RunningAttempt, TaskResult)>,
    ) {
        self.workers[worker.0 as usize].running.remove(&a);
        let Some(job) = self.jobs.get_mut(&a.task.job) else {
            return;
        };
        let task = &mut job.tasks[a.task.index as usize];
        let ra = match task.status {
            TaskStatus::Running(ra) if ra.attempt == a.attempt => ra,
            _ => return,
        };
        let remote = ra.worker != ra.source;
        self.view.task_ended(a.task.job, worker, remote);
        let active = !job.state.is_done();
        let Some((_, r)) = result else {
            // Lost or rejected: back in the queue, nothing counted.
            task.status = TaskStatus::Pending;
            if active {
                self.requeue(a.task);
            }
            return;
        };
        let locality = if remote {
            Locality::DataRemote
        } else {
            Locality::DataLocal
        };
        let is_reduce = task.reduce.is_some();
        let record = |ok: bool, error: Option<String>, job: &Job| TaskRecord {
            task: a.task.index,
            kind: if is_reduce {
                TaskKind::Reduce
            } else {
                TaskKind::Map
            },
            attempt: a.attempt,
            worker: String::new(),
            slot: r.slot,
            locality,
            source: String::new(),
            block: job.tasks[a.task.index as usize].block.clone(),
            start_ms: r.started_unix_ms.saturating_sub(job.submit_unix_ms),
            end_ms: r.finished_unix_ms.saturating_sub(job.submit_unix_ms),
            input_bytes: r.local_bytes + r.remote_bytes,
            local_bytes: r.local_bytes,
            remote_bytes: r.remote_bytes,
            ok,
            error,
        };
        if !is_reduce && matches!(r.outcome, TaskOutcome::Succeeded { .. }) {
            // The planners' expected task length.
            self.view
                .note_task_ms(r.finished_unix_ms.saturating_sub(r.started_unix_ms));
        }
        let (wname, sname) = (self.worker_name(ra.worker), self.worker_name(ra.source));
        let job = self.jobs.get_mut(&a.task.job).expect("checked");
        match &r.outcome {
            TaskOutcome::Succeeded { summary } if !is_reduce => {
                let mut rec = record(true, None, job);
                rec.worker = wname;
                rec.source = sname;
                job.tasks[a.task.index as usize].status = TaskStatus::Done;
                job.records.push(rec);
                job.done += 1;
                if remote {
                    job.data_remote += 1;
                } else {
                    job.data_local += 1;
                }
                job.bytes_local += r.local_bytes;
                job.bytes_remote += r.remote_bytes;
                job.map_out[a.task.index as usize] = Some((worker, a.attempt));
                job.samples.extend(summary.sample.iter().cloned());
                if active && job.done == job.maps {
                    if job.reduces == 0 {
                        self.job_succeeded(a.task.job);
                    } else {
                        self.create_reduces(a.task.job);
                    }
                }
            }
            TaskOutcome::Reduced { .. } if is_reduce => {
                let mut rec = record(true, None, job);
                rec.worker = wname;
                rec.source = sname;
                rec.input_bytes = r.local_bytes + r.remote_bytes;
                job.tasks[a.task.index as usize].status = TaskStatus::Done;
                job.records.push(rec);
                job.reduces_done += 1;
                job.shuffle_bytes += r.local_bytes + r.remote_bytes;
                if active && job.reduces_done == job.reduces {
                    self.job_succeeded(a.task.job);
                }
            }
            TaskOutcome::Succeeded { .. } | TaskOutcome::Reduced { .. } => {
                // A map that answered like a reduce or the reverse: a worker
                // bug; count it as a failure so the task runs again.
                tracing::error!(attempt = %a, "result kind does not match the task");
                job.tasks[a.task.index as usize].status = TaskStatus::Pending;
                if active {
                    self.requeue(a.task);
                }
            }
            TaskOutcome::Failed { error } => {
                let mut rec = record(false, Some(error.clone()), job);
                rec.worker = wname;
                rec.source = sname;
                job.records.push(rec);
                let task = &mut job.tasks[a.task.index as usize];
                task.failures += 1;
                task.status = TaskStatus::Pending;
                if !active {
                    return;
                }
                if task.failures >= self.settings.max_task_attempts {
                    let msg = format!(
                        "task {} failed {} times; last error: {error}",
                        a.task, task.failures
                    );
                    self.fail_job(a.task.job, msg);
                } else {
                    self.requeue(a.task);
                }
            }
            TaskOutcome::Rejected { reason } => {
                tracing::debug!(attempt = %a, %reason, "attempt rejected by worker");
                job.tasks[a.task.index as usize].status = TaskStatus::Pending;
                if active {
                    self.requeue(a.task);
                }
            }
        }
    }

    fn job_succeeded(&mut self, id: JobId) {
        let job = self.jobs.get_mut(&id).expect("job exists");
        let end = job.records.iter().map(|r| r.end_ms).max().unwrap_or(0);
        job.finished = Some(job.submitted + end);
        job.state = JobState::Succeeded;
        self.finished_jobs += 1;
        self.view.remove_job(id);
        self.forget_everywhere(id);
        tracing::info!(job = %id, jct_ms = end, "job succeeded");
    }

    /// Tells every worker (at its next heartbeat) to drop the job's map output.
    fn forget_everywhere(&mut self, id: JobId) {
        let reduces = self.jobs.get(&id).is_some_and(|j| j.reduces > 0);
        if reduces {
            for w in self.workers.iter_mut().filter(|w| w.alive) {
                w.forget.push(id);
            }
        }
    }

    /// All maps are done: create the reduce tasks (sort: split keys first).
    fn create_reduces(&mut self, id: JobId) {
        let job = self.jobs.get_mut(&id).expect("job exists");
        if job.spec.workload == Workload::Sort {
            job.splits = workloads::sort::splits(std::mem::take(&mut job.samples), job.reduces);
        }
        let output = job
            .output
            .clone()
            .expect("jobs with reduces name an output");
        for r in 0..job.reduces {
            let block = BlockId::for_file(&output, r).expect("validated output name");
            job.tasks.push(Task {
                block,
                reduce: Some(r),
                len: 0,
                next_attempt: 0,
                failures: 0,
                status: TaskStatus::Pending,
            });
            job.pending_reduces.push_back(job.maps + r);
        }
        tracing::info!(job = %id, reduces = job.reduces, "maps done; reduces created");
    }

    fn requeue(&mut self, t: TaskRef) {
        let job = &self.jobs[&t.job];
        if job.tasks[t.index as usize].reduce.is_some() {
            self.jobs
                .get_mut(&t.job)
                .expect("checked")
                .pending_reduces
                .push_back(t.index);
            return;
        }
        let replicas = self.live_replicas(&job.spec.input, t.index);
        if replicas.is_empty() {
            let block = job.tasks[t.index as usize].block.clone();
            self.fail_job(t.job, format!("block {block} has no live replica"));
            return;
        }
        let len = job.tasks[t.index as usize].len;
        self.view.requeue(PendingTask {
            task: t,
            len,
            replicas,
        });
    }

    fn fail_job(&mut self, id: JobId, error: String) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.state.is_done() {
            return;
        }
        tracing::warn!(job = %id, %error, "job failed");
        job.state = JobState::Failed;
        job.error = Some(error);
        job.finished = Some(job.submitted);
        job.pending_reduces.clear();
        self.finished_jobs += 1;
        self.view.remove_job(id);
        self.forget_everywhere(id);
    }

    pub fn job_state(&self, id: JobId) -> Option<JobState> {
        self.jobs.get(&id).map(|j| j.state)
    }

    pub fn report(&self, id: JobId) -> Result<JobReport, MasterError> {
        let j = self.jobs.get(&id).ok_or(MasterError::UnknownJob(id))?;
        let finish_ms = match j.state {
            JobState::Succeeded => j.finished.map(|f| f - j.submitted),
            _ => None,
        };
        let mut attempts = j.records.clone();
        attempts.sort_by_key(|r| (r.end_ms, r.task, r.attempt));
        Ok(JobReport {
            job: j.id,
            name: j.name.clone(),
            workload: j.spec.workload,
            input: j.spec.input.clone(),
            group: j.spec.group().to_owned(),
            scheduler: j.scheduler.clone(),
            state: j.state,
            error: j.error.clone(),
            submit_unix_ms: j.submit_unix_ms,
            start_ms: j
                .records
                .iter()
                .map(|r| r.start_ms)
                .min()
                .or(j.first_launch.map(|f| f - j.submitted)),
            finish_ms,
            jct_ms: finish_ms,
            tasks: j.maps,
            tasks_done: j.done,
            reduces: j.reduces,
            reduces_done: j.reduces_done,
            shuffle_bytes: j.shuffle_bytes,
            output: j.output.clone(),
            data_local: j.data_local,
            data_remote: j.data_remote,
            bytes_local: j.bytes_local,
            bytes_remote: j.bytes_remote,
            attempts,
        })
    }

    /// All jobs, oldest first, without their attempt lists.
    pub fn reports(&self) -> Vec<JobReport> {
        let mut ids: Vec<JobId> = self.jobs.keys().copied().collect();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| self.report(id).ok())
            .map(|mut r| {
                r.attempts.clear();
                r
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
