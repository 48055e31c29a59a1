//! The scheduler's view of the cluster and its checked launches.
//!
//! A [`Scheduler`] is offered a worker with free slots at a given time and
//! answers by launching pending tasks through a [`SchedContext`], which checks
//! every launch and applies it to the [`ClusterView`] at once, so the next
//! decision sees the last one.
//!
//! The view is maintained incrementally by its owner (the master or the
//! simulator): per job, pending tasks are indexed by the workers holding a
//! replica, so "a data-local task of this job for this worker" is O(1) and no
//! decision scans every pending task.
//!
//! Online policies decide for the offered worker; batch policies may launch
//! on any worker with free slots (the master delivers those launches at that
//! worker's next heartbeat).

use crate::decision::{Decision, Kind, Locality, Pick, Recorder, Rule, Why};
use crate::hybrid::{InstanceId, InstanceRequest, WorkerProfile};
pub use crate::input::{Input, JobQos, SlotBusy};
use crate::pending::PendingQueue;
pub use crate::pending::PendingTask;
use crate::speculation::{RunningTasks, Speculation, TaskAttempt};
use base::public::PublicType;
use base::{JobId, TaskRef, WorkerId};
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::collections::BTreeMap;

/// Insertion-ordered map and set with a fast hasher (keys are small ids;
/// these are looked up on every scheduling decision).
type IndexMap<K, V> = indexmap::IndexMap<K, V, FxBuildHasher>;
type IndexSet<T> = indexmap::IndexSet<T, FxBuildHasher>;

/// Scheduler time: milliseconds since the master (or simulation) started.
pub type Millis = u64;

/// One worker as the scheduler sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerView {
    pub id: WorkerId,
    pub alive: bool,
    pub slots: u32,
    pub free: u32,
    /// Data-remote tasks running on this worker (DynDL's r_s).
    pub remote_running: u32,
    /// Whether maps may run here (false on reduce-only machines).
    pub runs_maps: bool,
    /// Whether reduces may run here (false on map-only machines).
    pub runs_reduces: bool,
    /// Estimated input bytes of the reduces running here.
    pub reduce_load: u64,
    /// Reduces running here.
    pub reduces_running: u32,
    /// Busy slots as the last heartbeat reported them, and when.
    pub busy: Vec<crate::view::SlotBusy>,
    pub busy_at: Millis,
}

/// One job's queue of pending tasks.
#[derive(Clone, Debug)]
pub struct JobView {
    pub id: JobId,
    pub submitted_at: Millis,
    /// Fair-share group (pool) the job was submitted to.
    pub group: String,
    /// Pending tasks by task index, in insertion order.
    pending: PendingQueue,
    /// Worker -> pending task indices with a replica there.
    local: FxHashMap<WorkerId, IndexSet<u32>>,
    pub running: u32,
    /// Deadline, budget and sizes (set by the owner with `set_job_qos`).
    pub qos: JobQos,
    /// When the job last launched a map (its first attempt or a retry).
    pub last_launch_at: Option<Millis>,
}

impl JobView {
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub fn pending(&self) -> impl Iterator<Item = &PendingTask> {
        self.pending.iter()
    }

    pub fn pending_task(&self, index: u32) -> Option<&PendingTask> {
        self.pending.get(index)
    }

    /// The `i`-th pending task (insertion order, shifted by launches); for
    /// uniform random picks.
    pub fn pending_at(&self, i: usize) -> Option<&PendingTask> {
        self.pending.nth(i)
    }

    /// The first pending task with a replica on `w`, if any.
    pub fn local_task(&self, w: WorkerId) -> Option<&PendingTask> {
        let idx = self.local.get(&w)?.first()?;
        self.pending.get(*idx)
    }

    /// The pending tasks with a replica on `w`, by index, oldest first.
    pub fn local_indices(&self, w: WorkerId) -> impl Iterator<Item = u32> + '_ {
        self.local.get(&w).into_iter().flatten().copied()
    }

    /// How many pending tasks have a replica on `w`.
    pub fn local_count(&self, w: WorkerId) -> usize {
        self.local.get(&w).map_or(0, IndexSet::len)
    }

    fn insert(&mut self, t: PendingTask) {
        for &w in &t.replicas {
            self.local.entry(w).or_default().insert(t.task.index);
        }
        self.pending.insert(t);
    }

    fn remove(&mut self, index: u32) -> Option<PendingTask> {
        let t = self.pending.remove(index)?;
        for w in &t.replicas {
            if let Some(set) = self.local.get_mut(w) {
                set.shift_remove(&index);
                if set.is_empty() {
                    self.local.remove(w);
                }
            }
        }
        Some(t)
    }
}

/// One job's reduces, from the moment its maps are done until it ends.
#[derive(Clone, Debug)]
pub struct ReduceJobView {
    pub job: JobId,
    /// Reduce task indices waiting for a slot, in order.
    pending: IndexSet<u32>,
    /// Estimated input bytes of each reduce: the job's map output over its
    /// reduce count.
    pub load_each: u64,
    /// Map output bytes per worker that keeps some.
    pub output_on: BTreeMap<WorkerId, u64>,
    /// Lost map outputs are being rebuilt: no reduce may start.
    pub held: bool,
}

impl ReduceJobView {
    pub fn pending(&self) -> impl Iterator<Item = u32> + '_ {
        self.pending.iter().copied()
    }

    pub fn is_pending(&self, index: u32) -> bool {
        self.pending.contains(&index)
    }

    /// Whether a reduce of this job may start now.
    pub fn ready(&self) -> bool {
        !self.held && !self.pending.is_empty()
    }

    pub fn output_total(&self) -> u64 {
        self.output_on.values().sum()
    }
}

/// What the scheduler sees of the cluster. Kept up to date by its owner.
#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    workers: BTreeMap<WorkerId, WorkerView>,
    /// Running mean of finished map tasks' durations (ms), for planners.
    task_ms: Option<f64>,
    task_ms_n: u64,
    /// Live map workers, and those of them with a free slot (kept by
    /// [`ClusterView::with_worker`], so counting is O(1)).
    live_map: u32,
    idle_map: u32,
    /// Live reduce workers by the reduces they run (kept by `with_worker`,
    /// so the fewest is O(log n), not a scan of every worker).
    reduce_counts: BTreeMap<u32, u32>,
    /// Active jobs in submission order.
    jobs: IndexMap<JobId, JobView>,
    /// Jobs whose reduces exist, oldest first, and a count of the changes
    /// to them (a job's reduces added, ended, held, taken, put back), so a
    /// reader can tell that nothing changed since it last looked.
    reduces: BTreeMap<JobId, ReduceJobView>,
    reduce_changes: u64,
    /// Running reduce attempts (a reduce and its backup are two): their
    /// estimated input bytes.
    running_reduces: FxHashMap<(TaskRef, WorkerId), u64>,
    /// Public instances and task-time estimates (empty on a private cluster).
    hybrid: crate::hybrid::HybridView,
    /// Each worker's rack (HDFS's topology; none set = one rack), and the
    /// workers of each rack in id order.
    rack_of: FxHashMap<WorkerId, u32>,
    rack_members: FxHashMap<u32, Vec<WorkerId>>,
    /// The decision record, when its owner keeps one
    /// ([`crate::decision`]), and its inputs ([`crate::input`]).
    record: Option<Box<Recorder>>,
    inputs: Vec<Input>,
    /// Speculative execution's settings, and (while they are on) the
    /// running tasks it judges.
    speculation: Speculation,
    running_tasks: RunningTasks,
    /// The time of the offer under way (a launch's start), or of the
    /// latest heartbeat.
    now: Millis,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchedError {
    #[error("task {0} is not pending")]
    NotPending(TaskRef),
    #[error("map {0} is not a running map without a backup elsewhere")]
    NotSpeculable(TaskRef),
    #[error("task {0} is not a waiting reduce")]
    NotWaitingReduce(TaskRef),
    #[error("worker {0} does not run reduces")]
    NoReduces(WorkerId),
    #[error("worker {0} has no free slot")]
    NoFreeSlot(WorkerId),
    #[error("worker {0} is unknown or not alive")]
    DeadWorker(WorkerId),
    #[error("worker {source_worker} holds no replica of task {task}'s input")]
    NoReplica {
        task: TaskRef,
        source_worker: WorkerId,
    },
}

impl ClusterView {
    pub fn new() -> Self {
        Self::default()
    }

    // ---- the decision record ----

    /// Starts (or stops, dropping what was kept) the decision record and
    /// its inputs.
    pub fn record_decisions(&mut self, on: bool) {
        self.record = on.then(Box::default);
        self.inputs = Vec::new();
    }

    pub fn recording(&self) -> bool {
        self.record.is_some()
    }

    /// The decisions recorded since the last call, oldest first.
    pub fn take_decisions(&mut self) -> Vec<Decision> {
        self.record
            .as_mut()
            .map(|r| std::mem::take(&mut r.rows))
            .unwrap_or_default()
    }

    /// The record's inputs since the last call, oldest first: every change
    /// the owner made to the view and every offer ([`crate::input`]).
    pub fn take_inputs(&mut self) -> Vec<Input> {
        std::mem::take(&mut self.inputs)
    }

    /// Keeps `input` in the record, when there is one (built only then).
    fn note(&mut self, input: impl FnOnce() -> Input) {
        if self.record.is_some() {
            self.inputs.push(input());
        }
    }

    /// Applies one recorded change, as the method it names would (offers
    /// are the caller's: [`crate::offer`], [`crate::offer_reduces`]; this
    /// ignores them).
    pub fn feed(&mut self, input: Input) {
        match input {
            Input::Worker { worker, slots } => self.upsert_worker(worker, slots),
            Input::Rack { worker, rack } => self.set_rack(worker, rack),
            Input::RunsMaps { worker, on } => self.set_runs_maps(worker, on),
            Input::RunsReduces { worker, on } => self.set_runs_reduces(worker, on),
            Input::Free { worker, free } => self.set_free(worker, free),
            Input::Busy { worker, now, busy } => self.set_busy(worker, now, busy),
            Input::Lost { worker } => {
                self.lose_worker(worker);
            }
            Input::Job {
                job,
                now,
                group,
                tasks,
            } => self.add_job(job, now, &group, tasks),
            Input::Qos { job, qos } => self.set_job_qos(job, qos),
            Input::JobGone { job } => self.remove_job(job),
            Input::Requeue { task } => self.requeue(task),
            Input::Replicas { task, replicas } => self.set_replicas(task, replicas),
            Input::MapEnded {
                job,
                worker,
                remote,
            } => self.task_ended(job, worker, remote),
            Input::MapMs { ms } => self.note_task_ms(ms),
            Input::Reduces {
                job,
                indices,
                load_each,
                output_on,
            } => self.add_reduces(job, indices, load_each, output_on.into_iter().collect()),
            Input::RequeueReduce { task } => self.requeue_reduce(task),
            Input::HoldReduces { job } => self.hold_reduces(job),
            Input::ReduceEnded { task, worker } => self.reduce_ended(task, worker),
            Input::Adopted {
                task,
                worker,
                source,
            } => self.adopt(task, worker, source),
            Input::AdoptedReduce { task, worker } => self.adopt_reduce(task, worker),
            Input::Speculation { config } => self.set_speculation(config),
            Input::Progress {
                task,
                worker,
                done,
                now,
            } => self.task_progress(task, worker, done, now),
            Input::AttemptEnded {
                task,
                worker,
                remote,
                now,
                ok,
            } => self.map_ended(task, worker, remote, now, ok),
            Input::ReduceAttemptEnded {
                task,
                worker,
                now,
                ok,
            } => self.reduce_attempt_ended(task, worker, now, ok),
            Input::PublicTypes {
                types,
                max_instances,
            } => self.set_public_types(types, max_instances),
            Input::Profile { worker, profile } => self.set_profile(worker, profile),
            Input::InstanceUp { instance, worker } => self.instance_up(instance, worker),
            Input::InstanceGone { instance } => self.instance_gone(instance),
            Input::MapMeasured {
                worker,
                len,
                ms,
                local,
                output,
            } => self.note_map(worker, len, ms, local, output),
            Input::ReduceMeasured { input, ms } => self.note_reduce(input, ms),
            Input::TookRequests => {
                self.take_requests();
            }
            Input::TookRefusals => {
                self.take_refusals();
            }
            Input::ReduceOffer { .. } | Input::Offer { .. } => {}
        }
    }

    /// Where `source` is seen from `worker`.
    pub fn locality(&self, worker: WorkerId, source: WorkerId) -> Locality {
        if worker == source {
            Locality::NodeLocal
        } else if self.has_racks()
            && self.rack_of(worker).is_some()
            && self.rack_of(worker) == self.rack_of(source)
        {
            Locality::RackLocal
        } else {
            Locality::Remote
        }
    }

    fn begin_offer(&mut self, now: Millis, worker: WorkerId) {
        if self.record.is_none() {
            return;
        }
        let free = self.free_slots(worker);
        if let Some(r) = self.record.as_mut() {
            r.begin(now, worker, free);
        }
    }

    /// Records that the offer under way launched no map (when some job had
    /// a pending one).
    fn record_idle(&mut self) {
        let Some(head) = self.head_job().map(|j| j.id) else {
            return;
        };
        let Some(r) = self.record.as_mut() else {
            return;
        };
        let why = r
            .declined
            .unwrap_or(Why::rule(Rule::Unexplained).for_job(head));
        let mut d = Recorder::with_why(r.row(Kind::Idle, why.rule), &why);
        d.job = why.job;
        r.rows.push(d);
    }

    // ---- queries ----

    pub fn worker(&self, w: WorkerId) -> Option<&WorkerView> {
        self.workers.get(&w)
    }

    /// The hybrid cloud: instance types, instances, estimates.
    pub fn hybrid(&self) -> &crate::hybrid::HybridView {
        &self.hybrid
    }

    /// The tests' handle on the hybrid part. Its owner changes it through
    /// the view's methods below, so the record keeps each change.
    #[cfg(test)]
    pub(crate) fn hybrid_mut(&mut self) -> &mut crate::hybrid::HybridView {
        &mut self.hybrid
    }

    /// The public instance types and how many instances may run at once.
    pub fn set_public_types(&mut self, types: Vec<PublicType>, max_instances: u32) {
        self.note(|| Input::PublicTypes {
            types: types.clone(),
            max_instances,
        });
        self.hybrid.set_types(types, max_instances);
    }

    /// What the owner knows of `worker`'s hardware.
    pub fn set_profile(&mut self, worker: WorkerId, profile: WorkerProfile) {
        self.note(|| Input::Profile { worker, profile });
        self.hybrid.set_profile(worker, profile);
    }

    /// Instance `instance` registered as worker `worker`.
    pub fn instance_up(&mut self, instance: InstanceId, worker: WorkerId) {
        self.note(|| Input::InstanceUp { instance, worker });
        self.hybrid.instance_up(instance, worker);
    }

    /// Instance `instance` stopped (or could not be started).
    pub fn instance_gone(&mut self, instance: InstanceId) {
        self.note(|| Input::InstanceGone { instance });
        self.hybrid.instance_gone(instance);
    }

    /// A map of `len` input bytes took `ms` on `worker`; `local`: it read
    /// its own disk; `output`: the bytes it wrote.
    pub fn note_map(&mut self, worker: WorkerId, len: u64, ms: u64, local: bool, output: u64) {
        self.note(|| Input::MapMeasured {
            worker,
            len,
            ms,
            local,
            output,
        });
        self.hybrid.note_map(worker, len, ms, local, output);
    }

    /// A reduce of `input` bytes took `ms`.
    pub fn note_reduce(&mut self, input: u64, ms: u64) {
        self.note(|| Input::ReduceMeasured { input, ms });
        self.hybrid.note_reduce(input, ms);
    }

    /// The policy's instance requests since the last call, in order.
    pub fn take_requests(&mut self) -> Vec<InstanceRequest> {
        self.note(|| Input::TookRequests);
        self.hybrid.take_requests()
    }

    /// The jobs the policy refused since the last call, with the reason.
    pub fn take_refusals(&mut self) -> Vec<(JobId, String)> {
        self.note(|| Input::TookRefusals);
        self.hybrid.take_refusals()
    }

    /// Sets a job's deadline, budget and sizes.
    pub fn set_job_qos(&mut self, job: JobId, qos: JobQos) {
        self.note(|| Input::Qos {
            job,
            qos: qos.clone(),
        });
        if let Some(j) = self.jobs.get_mut(&job) {
            j.qos = qos;
        }
    }

    pub fn workers(&self) -> impl Iterator<Item = &WorkerView> {
        self.workers.values()
    }

    // ---- speculative execution ----

    /// Turns speculative execution on or off, with its settings (off: the
    /// running maps are no longer kept).
    pub fn set_speculation(&mut self, config: Speculation) {
        self.note(|| Input::Speculation {
            config: config.clone(),
        });
        if !config.enabled {
            self.running_tasks = RunningTasks::default();
        }
        self.speculation = config;
    }

    pub fn speculation(&self) -> &Speculation {
        &self.speculation
    }

    /// Whether `worker` is a slow node for `job`'s reduces: speculation is
    /// on, a backup overtook an attempt of the job's there, and another
    /// live reduce worker is not such a node ([`crate::speculation`]).
    pub fn slow_for(&self, job: JobId, worker: WorkerId) -> bool {
        if !self.speculation.enabled {
            return false;
        }
        let slow = self.running_tasks.overtaken(job);
        slow.contains(&worker) && self.reduce_workers().any(|w| !slow.contains(&w.id))
    }

    /// The running tasks and their attempts (empty while speculation is
    /// off).
    pub fn running_tasks(&self) -> &RunningTasks {
        &self.running_tasks
    }

    /// The attempt of running task `task` (a map or a reduce) on `worker`
    /// is `done` (a fraction in [0, 1]) done. Kept only while speculation
    /// is on (its owner need not call it otherwise).
    pub fn task_progress(&mut self, task: TaskRef, worker: WorkerId, done: f64, now: Millis) {
        if !self.speculation.enabled {
            return;
        }
        self.note(|| Input::Progress {
            task,
            worker,
            done,
            now,
        });
        self.running_tasks.progress(task, worker, done, now);
    }

    /// The attempt of map `task` that ran on `worker` ended at `now`,
    /// successfully (`ok`: the map is done; its other attempt, if any, is
    /// its owner's to kill and end) or not: [`ClusterView::task_ended`]
    /// with the task named, which speculation needs.
    pub fn map_ended(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        remote: bool,
        now: Millis,
        ok: bool,
    ) {
        self.note(|| Input::AttemptEnded {
            task,
            worker,
            remote,
            now,
            ok,
        });
        self.end_map(task.job, worker, remote);
        if self.speculation.enabled {
            self.running_tasks.ended(task, worker, now, ok);
        }
    }

    /// [`ClusterView::reduce_ended`] for an attempt that ended at `now`,
    /// successfully (`ok`: the reduce is done; its other attempt, if any,
    /// is its owner's to kill and end) or not, which speculation needs.
    pub fn reduce_attempt_ended(&mut self, task: TaskRef, worker: WorkerId, now: Millis, ok: bool) {
        self.note(|| Input::ReduceAttemptEnded {
            task,
            worker,
            now,
            ok,
        });
        self.end_reduce(task, worker);
        if self.speculation.enabled {
            self.running_tasks.ended(task, worker, now, ok);
        }
    }

    /// A backup of a slow task for `worker` now, by the rule of
    /// [`crate::speculation`].
    fn pick_backup(&self, now: Millis, worker: WorkerId) -> Option<crate::speculation::Backup> {
        let alive = |w: WorkerId| self.workers.get(&w).is_some_and(|v| v.alive);
        let runs_maps = |w: WorkerId| self.workers.get(&w).is_some_and(|v| v.runs_maps);
        let runs_reduces = |w: WorkerId| self.workers.get(&w).is_some_and(|v| v.runs_reduces);
        let rack = |w: WorkerId| {
            if self.has_racks() {
                self.rack_of(w)
            } else {
                None
            }
        };
        let pending = |j: JobId| self.jobs.get(&j).map_or(0, JobView::pending_len);
        self.running_tasks.pick(
            &self.speculation,
            now,
            worker,
            &crate::speculation::Cluster {
                alive: &alive,
                rack: &rack,
                pending: &pending,
                runs_maps: &runs_maps,
                runs_reduces: &runs_reduces,
            },
        )
    }

    /// Starts a backup of running task `task` on `worker`, reading from
    /// `source` (a reduce: `worker`); a map's input bytes (a reduce: 0).
    fn apply_backup(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        source: WorkerId,
    ) -> Result<u64, SchedError> {
        let w = self
            .workers
            .get(&worker)
            .filter(|w| w.alive)
            .ok_or(SchedError::DeadWorker(worker))?;
        if w.free == 0 {
            return Err(SchedError::NoFreeSlot(worker));
        }
        let runs_reduces = w.runs_reduces;
        let attempts = self.running_tasks.attempts(task);
        if attempts.len() != 1 || attempts[0].worker == worker {
            return Err(SchedError::NotSpeculable(task));
        }
        if self.running_tasks.is_reduce(task) == Some(true) {
            if !runs_reduces {
                return Err(SchedError::NoReduces(worker));
            }
            let load = self.reduces.get(&task.job).map_or(0, |r| r.load_each);
            self.run_reduce(task, worker, load);
            return Ok(0);
        }
        let len = self.running_tasks.len(task).unwrap_or(0);
        let remote = worker != source;
        self.with_worker(worker, |w| {
            w.free -= 1;
            if remote {
                w.remote_running += 1;
            }
        });
        if let Some(j) = self.jobs.get_mut(&task.job) {
            j.running += 1;
        }
        let now = self.now;
        self.running_tasks
            .launched(task, len, &[], TaskAttempt::new(worker, source, now));
        Ok(len)
    }

    /// Free slots of `w` for map tasks (0 on a reduce-only worker).
    pub fn free_slots(&self, w: WorkerId) -> u32 {
        self.workers
            .get(&w)
            .filter(|v| v.alive && v.runs_maps)
            .map_or(0, |v| v.free)
    }

    /// Free slots of `w` for any task (the owner's reduce placement).
    pub fn free_slots_any(&self, w: WorkerId) -> u32 {
        self.workers
            .get(&w)
            .filter(|v| v.alive)
            .map_or(0, |v| v.free)
    }

    /// Marks whether reduces may run on `w` (worker roles).
    pub fn set_runs_reduces(&mut self, w: WorkerId, runs_reduces: bool) {
        self.note(|| Input::RunsReduces {
            worker: w,
            on: runs_reduces,
        });
        self.with_worker(w, |v| v.runs_reduces = runs_reduces);
    }

    /// Free slots of `w` for reduces (0 on a map-only worker).
    pub fn free_reduce_slots(&self, w: WorkerId) -> u32 {
        self.workers
            .get(&w)
            .filter(|v| v.alive && v.runs_reduces)
            .map_or(0, |v| v.free)
    }

    /// The fewest reduces any live reduce worker runs (None: there is no
    /// live reduce worker). O(log n).
    pub fn fewest_reduces_running(&self) -> Option<u32> {
        self.reduce_counts.keys().next().copied()
    }

    /// Live workers that run reduces, in id order.
    pub fn reduce_workers(&self) -> impl Iterator<Item = &WorkerView> {
        self.workers.values().filter(|w| w.alive && w.runs_reduces)
    }

    /// Jobs whose reduces exist (maps done), oldest first.
    pub fn reduce_jobs(&self) -> impl Iterator<Item = &ReduceJobView> {
        self.reduces.values()
    }

    /// Changes to the jobs' reduces so far (equal readings: the same jobs
    /// with the same waiting reduces).
    pub fn reduce_changes(&self) -> u64 {
        self.reduce_changes
    }

    pub fn reduce_job(&self, id: JobId) -> Option<&ReduceJobView> {
        self.reduces.get(&id)
    }

    /// Marks whether maps may run on `w` (worker roles).
    pub fn set_runs_maps(&mut self, w: WorkerId, runs_maps: bool) {
        self.note(|| Input::RunsMaps {
            worker: w,
            on: runs_maps,
        });
        self.with_worker(w, |v| v.runs_maps = runs_maps);
    }

    /// Records a finished map task's duration (for [`ClusterView::task_ms`]).
    pub fn note_task_ms(&mut self, ms: u64) {
        self.note(|| Input::MapMs { ms });
        self.task_ms_n += 1;
        let m = self.task_ms.unwrap_or(0.0);
        self.task_ms = Some(m + (ms as f64 - m) / self.task_ms_n as f64);
    }

    /// Mean duration of the map tasks finished so far (ms), if any.
    pub fn task_ms(&self) -> Option<f64> {
        self.task_ms
    }

    /// A worker's busy slots as its heartbeat at `now` reported them.
    pub fn set_busy(&mut self, id: WorkerId, now: Millis, busy: Vec<SlotBusy>) {
        self.note(|| Input::Busy {
            worker: id,
            now,
            busy: busy.clone(),
        });
        self.with_worker(id, |w| {
            w.busy = busy;
            w.busy_at = now;
        });
        // The latest heartbeat's time: when an attempt adopted after a
        // restart (`adopt`) is taken to have started.
        self.now = self.now.max(now);
    }

    /// Live map workers.
    pub fn live_map_workers(&self) -> u32 {
        self.live_map
    }

    /// Live map workers with a free slot (`idle_workers().count()`, O(1)).
    pub fn idle_map_workers(&self) -> u32 {
        self.idle_map
    }

    /// Changes one worker and keeps the counters right.
    fn with_worker<R>(&mut self, id: WorkerId, f: impl FnOnce(&mut WorkerView) -> R) -> Option<R> {
        let w = self.workers.get_mut(&id)?;
        let (live0, idle0) = counted(w);
        let red0 = reduce_count(w);
        let r = f(w);
        let (live1, idle1) = counted(w);
        let red1 = reduce_count(w);
        self.live_map = self.live_map + u32::from(live1) - u32::from(live0);
        self.idle_map = self.idle_map + u32::from(idle1) - u32::from(idle0);
        if red0 != red1 {
            if let Some(n) = red0 {
                if let std::collections::btree_map::Entry::Occupied(mut e) =
                    self.reduce_counts.entry(n)
                {
                    *e.get_mut() -= 1;
                    if *e.get() == 0 {
                        e.remove();
                    }
                }
            }
            if let Some(n) = red1 {
                *self.reduce_counts.entry(n).or_default() += 1;
            }
        }
        Some(r)
    }

    /// Active jobs, oldest first.
    pub fn jobs(&self) -> impl Iterator<Item = &JobView> {
        self.jobs.values()
    }

    pub fn job(&self, id: JobId) -> Option<&JobView> {
        self.jobs.get(&id)
    }

    /// The oldest job with a pending task (FIFO's head of queue).
    /// The rack of `w`, if the owner set one.
    pub fn rack_of(&self, w: WorkerId) -> Option<u32> {
        self.rack_of.get(&w).copied()
    }

    /// Whether the workers span more than one rack.
    pub fn has_racks(&self) -> bool {
        self.rack_members.len() > 1
    }

    /// Hadoop's rack level: `job`'s first pending task (lowest index) with
    /// a replica on another worker of `w`'s rack, and that worker (the
    /// replica to read). None without racks, or if no such task exists.
    /// Costs one lookup per worker of the rack.
    pub fn rack_local_task(&self, job: &JobView, w: WorkerId) -> Option<(TaskRef, WorkerId)> {
        if !self.has_racks() {
            return None;
        }
        let members = self.rack_members.get(&self.rack_of(w)?)?;
        members
            .iter()
            .filter(|&&m| m != w)
            .filter_map(|&m| job.local_task(m).map(|t| (t.task, m)))
            .min_by_key(|(t, _)| t.index)
    }

    pub fn head_job(&self) -> Option<&JobView> {
        self.jobs.values().find(|j| j.has_pending())
    }

    pub fn pending_total(&self) -> usize {
        self.jobs.values().map(JobView::pending_len).sum()
    }

    /// Slots of all live workers (Guo's AS).
    pub fn total_slots(&self) -> u32 {
        self.workers
            .values()
            .filter(|w| w.alive)
            .map(|w| w.slots)
            .sum()
    }

    /// Live map workers with a free slot, in id order.
    pub fn idle_workers(&self) -> impl Iterator<Item = &WorkerView> {
        self.workers
            .values()
            .filter(|w| w.alive && w.runs_maps && w.free > 0)
    }

    /// Slots of all live map workers.
    pub fn total_map_slots(&self) -> u32 {
        self.workers
            .values()
            .filter(|w| w.alive && w.runs_maps)
            .map(|w| w.slots)
            .sum()
    }

    // ---- updates by the owner (master or simulator) ----

    pub fn upsert_worker(&mut self, id: WorkerId, slots: u32) {
        self.note(|| Input::Worker { worker: id, slots });
        self.workers.entry(id).or_insert(WorkerView {
            id,
            alive: false,
            slots,
            free: slots,
            remote_running: 0,
            runs_maps: true,
            runs_reduces: true,
            reduce_load: 0,
            reduces_running: 0,
            busy: Vec::new(),
            busy_at: 0,
        });
        self.with_worker(id, |w| {
            w.alive = true;
            w.slots = slots;
        });
    }

    /// Puts `w` on `rack` (moving it if it was on another).
    pub fn set_rack(&mut self, w: WorkerId, rack: u32) {
        self.note(|| Input::Rack { worker: w, rack });
        if let Some(old) = self.rack_of.insert(w, rack) {
            if let Some(m) = self.rack_members.get_mut(&old) {
                m.retain(|x| *x != w);
                if m.is_empty() {
                    self.rack_members.remove(&old);
                }
            }
        }
        let m = self.rack_members.entry(rack).or_default();
        if let Err(i) = m.binary_search(&w) {
            m.insert(i, w);
        }
    }

    /// Sets a worker's free slots as it reported them.
    pub fn set_free(&mut self, id: WorkerId, free: u32) {
        self.note(|| Input::Free { worker: id, free });
        self.with_worker(id, |w| w.free = free.min(w.slots));
    }

    /// Marks a worker lost: no slots, and its replicas vanish from every
    /// pending task. Returns the tasks left without any replica.
    pub fn lose_worker(&mut self, id: WorkerId) -> Vec<TaskRef> {
        self.note(|| Input::Lost { worker: id });
        self.with_worker(id, |w| {
            w.alive = false;
            w.free = 0;
            w.remote_running = 0;
        });
        // Its running reduces end with it (the owner runs them again).
        self.running_reduces.retain(|(_, w), _| *w != id);
        self.with_worker(id, |w| {
            w.reduce_load = 0;
            w.reduces_running = 0;
        });
        let mut orphans = Vec::new();
        for job in self.jobs.values_mut() {
            let Some(indices) = job.local.remove(&id) else {
                continue;
            };
            for i in indices {
                if let Some(t) = job.pending.get_mut(i) {
                    t.replicas.retain(|r| *r != id);
                    if t.replicas.is_empty() {
                        orphans.push(t.task);
                    }
                }
            }
        }
        orphans
    }

    pub fn add_job(
        &mut self,
        id: JobId,
        submitted_at: Millis,
        group: &str,
        tasks: Vec<PendingTask>,
    ) {
        self.note(|| Input::Job {
            job: id,
            now: submitted_at,
            group: group.to_owned(),
            tasks: tasks.clone(),
        });
        let mut job = JobView {
            id,
            submitted_at,
            group: group.to_owned(),
            pending: PendingQueue::default(),
            local: FxHashMap::default(),
            running: 0,
            qos: JobQos::default(),
            last_launch_at: None,
        };
        job.qos.input_bytes = tasks.iter().map(|t| t.len).sum();
        for t in tasks {
            job.insert(t);
        }
        self.jobs.insert(id, job);
    }

    /// Drops a finished or failed job (its running tasks are the owner's
    /// business; a running reduce's load stays until `reduce_ended`).
    pub fn remove_job(&mut self, id: JobId) {
        self.note(|| Input::JobGone { job: id });
        self.jobs.shift_remove(&id);
        self.running_tasks.job_gone(id);
        if self.reduces.remove(&id).is_some() {
            self.reduce_changes += 1;
        }
    }

    /// A job's maps are done: its reduces `indices` wait for slots. Each is
    /// expected to read `load_each` bytes; `output_on` is the job's map
    /// output per worker. Called again for reduces that must run again.
    pub fn add_reduces(
        &mut self,
        job: JobId,
        indices: impl IntoIterator<Item = u32>,
        load_each: u64,
        output_on: BTreeMap<WorkerId, u64>,
    ) {
        let indices: Vec<u32> = indices.into_iter().collect();
        self.note(|| Input::Reduces {
            job,
            indices: indices.clone(),
            load_each,
            output_on: output_on.iter().map(|(&w, &b)| (w, b)).collect(),
        });
        self.reduce_changes += 1;
        let r = self.reduces.entry(job).or_insert_with(|| ReduceJobView {
            job,
            pending: IndexSet::default(),
            load_each,
            output_on: BTreeMap::new(),
            held: false,
        });
        r.load_each = load_each;
        r.output_on = output_on;
        r.held = false;
        r.pending.extend(indices);
    }

    /// A reduce goes back to waiting (its attempt failed or was lost).
    pub fn requeue_reduce(&mut self, task: TaskRef) {
        self.note(|| Input::RequeueReduce { task });
        self.reduce_changes += 1;
        if let Some(r) = self.reduces.get_mut(&task.job) {
            r.pending.insert(task.index);
        }
    }

    /// Some of a job's map outputs are lost and their maps run again: no
    /// reduce of the job starts until `add_reduces` releases them.
    pub fn hold_reduces(&mut self, job: JobId) {
        self.note(|| Input::HoldReduces { job });
        self.reduce_changes += 1;
        if let Some(r) = self.reduces.get_mut(&job) {
            r.held = true;
        }
    }

    /// A reduce that ran on `worker` ended (successfully or not): its slot
    /// and its load are freed. Speculation needs to know which: the master
    /// and the replay call [`ClusterView::reduce_attempt_ended`]; this one
    /// stays for records made before it and for owners that never
    /// speculate.
    pub fn reduce_ended(&mut self, task: TaskRef, worker: WorkerId) {
        self.note(|| Input::ReduceEnded { task, worker });
        self.end_reduce(task, worker);
    }

    fn end_reduce(&mut self, task: TaskRef, worker: WorkerId) {
        let load = self.running_reduces.remove(&(task, worker)).unwrap_or(0);
        self.with_worker(worker, |w| {
            w.free = (w.free + 1).min(w.slots);
            w.reduce_load = w.reduce_load.saturating_sub(load);
            w.reduces_running = w.reduces_running.saturating_sub(1);
        });
        if let Some(j) = self.jobs.get_mut(&task.job) {
            j.running = j.running.saturating_sub(1);
        }
    }

    /// A map its owner finds running on `worker`, reading from `source`,
    /// without having been offered it (a restarted master adopting an
    /// attempt an earlier incarnation launched): no longer pending, and
    /// counted running as a launch would be.
    pub fn adopt(&mut self, task: TaskRef, worker: WorkerId, source: WorkerId) {
        self.note(|| Input::Adopted {
            task,
            worker,
            source,
        });
        let mut t = None;
        if let Some(j) = self.jobs.get_mut(&task.job) {
            t = j.remove(task.index);
            j.running += 1;
        }
        if self.speculation.enabled {
            let (len, replicas) = t.map_or((0, Vec::new()), |t| (t.len, t.replicas));
            let now = self.now;
            self.running_tasks.launched(
                task,
                len,
                &replicas,
                TaskAttempt::new(worker, source, now),
            );
        }
        let remote = worker != source;
        self.with_worker(worker, |w| {
            w.free = w.free.saturating_sub(1);
            if remote {
                w.remote_running += 1;
            }
        });
    }

    /// [`ClusterView::adopt`] for a reduce: it runs on `worker` with its
    /// job's expected load.
    pub fn adopt_reduce(&mut self, task: TaskRef, worker: WorkerId) {
        self.note(|| Input::AdoptedReduce { task, worker });
        self.reduce_changes += 1;
        let load = match self.reduces.get_mut(&task.job) {
            Some(r) => {
                r.pending.shift_remove(&task.index);
                r.load_each
            }
            None => 0,
        };
        self.run_reduce(task, worker, load);
    }

    fn apply_reduce(&mut self, task: TaskRef, worker: WorkerId) -> Result<(), SchedError> {
        let w = self
            .workers
            .get(&worker)
            .filter(|w| w.alive)
            .ok_or(SchedError::DeadWorker(worker))?;
        if !w.runs_reduces {
            return Err(SchedError::NoReduces(worker));
        }
        if w.free == 0 {
            return Err(SchedError::NoFreeSlot(worker));
        }
        let r = self
            .reduces
            .get_mut(&task.job)
            .filter(|r| !r.held && r.pending.contains(&task.index))
            .ok_or(SchedError::NotWaitingReduce(task))?;
        r.pending.shift_remove(&task.index);
        let load = r.load_each;
        self.reduce_changes += 1;
        self.run_reduce(task, worker, load);
        Ok(())
    }

    /// An attempt of reduce `task` (expected to read `load` bytes) runs on
    /// `worker` from now: a slot and the load taken there, the job's
    /// running count, and speculation's record of it.
    fn run_reduce(&mut self, task: TaskRef, worker: WorkerId, load: u64) {
        self.running_reduces.insert((task, worker), load);
        if self.speculation.enabled {
            let now = self.now;
            self.running_tasks
                .launched_reduce(task, TaskAttempt::new(worker, worker, now));
        }
        self.with_worker(worker, |w| {
            w.free = w.free.saturating_sub(1);
            w.reduce_load += load;
            w.reduces_running += 1;
        });
        if let Some(j) = self.jobs.get_mut(&task.job) {
            j.running += 1;
        }
    }

    /// Puts a task back in its job's queue (retry, lost launch).
    pub fn requeue(&mut self, t: PendingTask) {
        self.note(|| Input::Requeue { task: t.clone() });
        if let Some(job) = self.jobs.get_mut(&t.task.job) {
            job.insert(t);
        }
    }

    /// Replaces a pending task's replica list (block reports changed).
    pub fn set_replicas(&mut self, task: TaskRef, replicas: Vec<WorkerId>) {
        self.note(|| Input::Replicas {
            task,
            replicas: replicas.clone(),
        });
        if let Some(job) = self.jobs.get_mut(&task.job) {
            if let Some(mut t) = job.remove(task.index) {
                t.replicas = replicas;
                job.insert(t);
            }
        }
    }

    /// A task that ran on `worker` ended (successfully or not).
    pub fn task_ended(&mut self, job: JobId, worker: WorkerId, remote: bool) {
        self.note(|| Input::MapEnded {
            job,
            worker,
            remote,
        });
        self.end_map(job, worker, remote);
    }

    fn end_map(&mut self, job: JobId, worker: WorkerId, remote: bool) {
        self.with_worker(worker, |w| {
            w.free = (w.free + 1).min(w.slots);
            if remote {
                w.remote_running = w.remote_running.saturating_sub(1);
            }
        });
        if let Some(j) = self.jobs.get_mut(&job) {
            j.running = j.running.saturating_sub(1);
        }
    }

    fn apply(&mut self, a: &Assignment) -> Result<PendingTask, SchedError> {
        let w = self
            .workers
            .get(&a.worker)
            .filter(|w| w.alive)
            .ok_or(SchedError::DeadWorker(a.worker))?;
        if w.free == 0 {
            return Err(SchedError::NoFreeSlot(a.worker));
        }
        let job = self
            .jobs
            .get_mut(&a.task.job)
            .ok_or(SchedError::NotPending(a.task))?;
        let t = job
            .pending
            .get(a.task.index)
            .ok_or(SchedError::NotPending(a.task))?;
        if !t.replicas.contains(&a.source) {
            return Err(SchedError::NoReplica {
                task: a.task,
                source_worker: a.source,
            });
        }
        let t = job.remove(a.task.index).expect("checked above");
        job.running += 1;
        job.last_launch_at = Some(self.now);
        if self.speculation.enabled {
            self.running_tasks.launched(
                a.task,
                t.len,
                &t.replicas,
                TaskAttempt::new(a.worker, a.source, self.now),
            );
        }
        let remote = a.worker != a.source;
        self.with_worker(a.worker, |w| {
            w.free -= 1;
            if remote {
                w.remote_running += 1;
            }
        });
        Ok(t)
    }
}

/// A live reduce worker's running reduces (None: not a live reduce worker).
fn reduce_count(w: &WorkerView) -> Option<u32> {
    (w.alive && w.runs_reduces).then_some(w.reduces_running)
}

/// (live map worker, live map worker with a free slot).
fn counted(w: &WorkerView) -> (bool, bool) {
    let live = w.alive && w.runs_maps;
    (live, live && w.free > 0)
}

/// A decision: run `task` on `worker`, reading its input from `source`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub task: TaskRef,
    pub worker: WorkerId,
    pub source: WorkerId,
    pub len: u64,
    /// A backup attempt of a task that already runs (speculation): the
    /// first of its attempts to succeed wins, the owner kills the other.
    /// A reduce's backup (the task is a reduce) has `source` = `worker`
    /// and `len` 0.
    pub backup: bool,
}

impl Assignment {
    pub fn is_local(&self) -> bool {
        self.worker == self.source
    }
}

/// The scheduler's handle on the view during one decision round.
pub struct SchedContext<'a> {
    view: &'a mut ClusterView,
    launched: Vec<Assignment>,
    reduces: Vec<TaskRef>,
}

impl<'a> SchedContext<'a> {
    pub fn new(view: &'a mut ClusterView) -> Self {
        SchedContext {
            view,
            launched: Vec::new(),
            reduces: Vec::new(),
        }
    }

    pub fn view(&self) -> &ClusterView {
        self.view
    }

    /// Launches `task` on `worker` reading from `source` (== `worker` for a
    /// data-local launch). The view is updated at once.
    pub fn launch(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        source: WorkerId,
    ) -> Result<(), SchedError> {
        self.launch_why(task, worker, source, Why::default())
    }

    /// [`SchedContext::launch`], saying why for the decision record.
    pub fn launch_why(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        source: WorkerId,
        why: Why,
    ) -> Result<(), SchedError> {
        let mut a = Assignment {
            task,
            worker,
            source,
            len: 0,
            backup: false,
        };
        // The replicas as the policy saw them (the launch removes the task).
        let replicas = match self.view.record {
            Some(_) => self
                .view
                .job(task.job)
                .and_then(|j| j.pending_task(task.index))
                .map(|t| t.replicas.clone()),
            None => None,
        };
        let t = self.view.apply(&a)?;
        a.len = t.len;
        self.launched.push(a);
        let locality = replicas
            .is_some()
            .then(|| self.view.locality(worker, source));
        if let (Some(r), Some(locality)) = (self.view.record.as_mut(), locality) {
            let mut why = why;
            if why.rule == Rule::Unexplained && locality == Locality::NodeLocal {
                why.rule = Rule::DataLocal;
            }
            let mut d = Recorder::with_why(r.row(Kind::Map, why.rule), &why);
            d.job = Some(task.job);
            d.task = Some(task.index);
            d.worker = Some(worker);
            d.source = Some(source);
            d.locality = Some(locality);
            d.replicas = replicas.unwrap_or_default();
            r.rows.push(d);
        }
        Ok(())
    }

    /// Launches a backup of running task `task` on `worker` reading from
    /// `source` (speculation's pick, which `offer` makes).
    fn launch_backup(
        &mut self,
        b: crate::speculation::Backup,
        worker: WorkerId,
    ) -> Result<(), SchedError> {
        let len = self.view.apply_backup(b.task, worker, b.source)?;
        let kind = if b.reduce { Kind::Reduce } else { Kind::Map };
        self.launched.push(Assignment {
            task: b.task,
            worker,
            source: b.source,
            len,
            backup: true,
        });
        let locality = (!b.reduce).then(|| self.view.locality(worker, b.source));
        if let Some(r) = self.view.record.as_mut() {
            let mut why = Why::rule(Rule::Backup);
            // No progress yet: no finite estimate (and JSON has no
            // infinity: the record would not read back the same).
            why.key = b.why.left_ms.is_finite().then_some(b.why.left_ms);
            let mut d = Recorder::with_why(r.row(kind, Rule::Backup), &why);
            d.job = Some(b.task.job);
            d.task = Some(b.task.index);
            d.worker = Some(worker);
            d.source = (!b.reduce).then_some(b.source);
            d.locality = locality;
            r.rows.push(d);
        }
        Ok(())
    }

    /// Records that the policy declined the rest of this offer, and why
    /// (a no-op unless the view records decisions).
    pub fn decline(&mut self, why: Why) {
        if let Some(r) = self.view.record.as_mut() {
            r.declined = Some(why);
        }
    }

    /// Gives `worker`'s free slots, one at a time, to `choose`, which names
    /// a pending task and the worker to read its input from, or nothing.
    /// Stops when the worker is full, `choose` has nothing, or a launch is
    /// refused (only a view inconsistency gets there: never spin on it).
    /// Returns how many tasks it launched.
    pub fn fill(
        &mut self,
        worker: WorkerId,
        choose: impl FnMut(&ClusterView) -> Option<(TaskRef, WorkerId)>,
    ) -> u32 {
        self.fill_by(worker, Rule::Unexplained, choose)
    }

    /// [`SchedContext::fill`], recording each launch under `rule` (a launch
    /// that reads its input where it runs as data-local, unless the rule is
    /// [`Rule::Plan`]).
    pub fn fill_by(
        &mut self,
        worker: WorkerId,
        rule: Rule,
        mut choose: impl FnMut(&ClusterView) -> Option<(TaskRef, WorkerId)>,
    ) -> u32 {
        self.fill_why(worker, |view| {
            choose(view)
                .map(|(task, source)| Pick {
                    task,
                    source,
                    why: Why::rule(if source == worker && rule != Rule::Plan {
                        Rule::DataLocal
                    } else {
                        rule
                    }),
                })
                .ok_or_else(|| {
                    if rule == Rule::Plan {
                        Why::rule(Rule::NotPlanned)
                    } else {
                        Why::default()
                    }
                })
        })
    }

    /// [`SchedContext::fill`] with reasons: `choose` names a [`Pick`], or
    /// says why it launches nothing (for the decision record).
    pub fn fill_why(
        &mut self,
        worker: WorkerId,
        mut choose: impl FnMut(&ClusterView) -> Result<Pick, Why>,
    ) -> u32 {
        let mut launched = 0;
        while self.view.free_slots(worker) > 0 {
            let p = match choose(self.view) {
                Ok(p) => p,
                Err(why) => {
                    self.decline(why);
                    break;
                }
            };
            if self.launch_why(p.task, worker, p.source, p.why).is_err() {
                break;
            }
            launched += 1;
        }
        launched
    }

    /// Starts waiting reduce `task` on `worker` (a reduce-capable worker
    /// with a free slot). The view is updated at once.
    pub fn launch_reduce(&mut self, task: TaskRef, worker: WorkerId) -> Result<(), SchedError> {
        self.view.apply_reduce(task, worker)?;
        self.reduces.push(task);
        if let Some(r) = self.view.record.as_mut() {
            let mut d = r.row(Kind::Reduce, Rule::ReducePlacement);
            d.job = Some(task.job);
            d.task = Some(task.index);
            d.worker = Some(worker);
            r.rows.push(d);
        }
        Ok(())
    }

    pub fn into_launched(self) -> Vec<Assignment> {
        self.launched
    }

    /// The reduces launched, in order.
    pub fn into_reduces(self) -> Vec<TaskRef> {
        self.reduces
    }
}

/// The scheduler's handle during planning: it may ask for public
/// instances and refuse jobs, not launch.
pub struct PlanContext<'a> {
    view: &'a mut ClusterView,
    now: Millis,
}

impl PlanContext<'_> {
    pub fn view(&self) -> &ClusterView {
        self.view
    }

    pub fn now(&self) -> Millis {
        self.now
    }

    /// Asks the owner for an instance of public type `ty` for `job`; None
    /// when the type is unknown or `max_instances` are already asked for.
    pub fn request_instance(&mut self, ty: usize, job: JobId) -> Option<crate::hybrid::InstanceId> {
        self.view.hybrid.request(self.now, ty, job)
    }

    /// Refuses `job` (the owner fails it with `why`).
    pub fn refuse(&mut self, job: JobId, why: String) {
        self.view.hybrid.refuse(job, why);
    }
}

/// A scheduling policy. See the module docs.
pub trait Scheduler: Send {
    /// The policy's name with its parameters, as reports show it.
    fn name(&self) -> String;

    /// Called at every heartbeat, before any offer, whether or not a slot
    /// is free: a policy that plans when jobs arrive (MROSA, COSHIC) asks
    /// for public instances or refuses jobs here. Default: nothing.
    fn plan(&mut self, _now: Millis, _ctx: &mut PlanContext<'_>) {}

    /// `worker` has at least one free slot at time `now`: launch what the
    /// policy wants through `ctx`, or nothing to leave the slots idle until
    /// the next offer.
    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>);

    /// What the run's report should say about the policy besides its
    /// launches (an external policy's calls, refusals and fallbacks).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Named counts for reports and benches (an external policy's calls,
    /// replies, refusals and fallbacks).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Runs the policy's planning step.
pub fn plan(sched: &mut dyn Scheduler, now: Millis, view: &mut ClusterView) {
    let mut ctx = PlanContext { view, now };
    sched.plan(now, &mut ctx);
}

/// Runs the policy's planning step, then, if `worker` has a free map slot,
/// one offer; then, while speculation is on, the slots it left free (a
/// reduce-only worker's too) go to backups ([`crate::speculation`]).
/// Returns the launches made (a reduce's backup among them: its task is a
/// reduce). The owner calls it at every heartbeat, and drains the view's
/// instance requests and refusals after.
pub fn offer(
    sched: &mut dyn Scheduler,
    now: Millis,
    worker: WorkerId,
    view: &mut ClusterView,
) -> Vec<Assignment> {
    view.note(|| Input::Offer { now, worker });
    plan(sched, now, view);
    // The policy places maps; speculation may also back up a reduce in a
    // reduce-only worker's free slot.
    let maps = view.free_slots(worker) > 0;
    let backups = view.speculation.enabled && view.free_slots_any(worker) > 0;
    if !maps && !backups {
        return Vec::new();
    }
    view.begin_offer(now, worker);
    view.now = now;
    let mut ctx = SchedContext::new(view);
    if maps {
        sched.offer(now, worker, &mut ctx);
    }
    // Speculation takes the slots the policy left free, one at a time.
    if backups {
        while ctx.view.free_slots_any(worker) > 0 {
            let Some(b) = ctx.view.pick_backup(now, worker) else {
                break;
            };
            if ctx.launch_backup(b, worker).is_err() {
                break;
            }
        }
    }
    let launched = ctx.into_launched();
    if maps && launched.is_empty() && view.recording() {
        view.record_idle();
    }
    launched
}

/// Begins a reduce offer in the decision record (see
/// [`crate::offer_reduces`]).
pub(crate) fn begin_reduce_offer(view: &mut ClusterView, now: Millis, worker: WorkerId) {
    view.note(|| Input::ReduceOffer { now, worker });
    view.now = now;
    view.begin_offer(now, worker);
}
