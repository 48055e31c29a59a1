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

mod context;
mod jobs;
mod public;
mod reduces;
mod running;

pub(crate) use context::begin_reduce_offer;
pub use context::{offer, plan, Assignment, LaunchedBy, PlanContext, SchedContext, Scheduler};

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

    /// Where pending task `index` stands in the pending order: smaller for
    /// an older one (comparable between the job's tasks, not a rank).
    pub fn pending_place(&self, index: u32) -> Option<usize> {
        self.pending.place(index)
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

    /// Reduces waiting for a slot.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
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
    /// No job before this index in `jobs` has a pending task (kept by
    /// `jobs.rs`, so finding FIFO's head skips the jobs whose maps all
    /// launched).
    pending_from: usize,
    /// A number drawn afresh (from a counter of the process) at every
    /// change to `jobs` (`jobs_mut`): the same number means the same jobs,
    /// so a policy may keep an order it built ([`ClusterView::jobs_epoch`]).
    jobs_epoch: u64,
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

/// The last [`ClusterView::jobs_epoch`] given out, by any view.
static JOBS_EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl ClusterView {
    pub fn new() -> Self {
        Self::default()
    }

    /// The jobs, to change them: every change goes through here and gets a
    /// new [`ClusterView::jobs_epoch`].
    fn jobs_mut(&mut self) -> &mut IndexMap<JobId, JobView> {
        self.jobs_epoch = JOBS_EPOCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        &mut self.jobs
    }

    /// Identifies the jobs' state (their set, order, pending tasks, running
    /// counts and QoS): it changes at every change to them and is never
    /// given to another state, in this view or another (a clone shares it
    /// with the state it copied). An order of the jobs built at one epoch
    /// holds while the epoch does.
    pub fn jobs_epoch(&self) -> u64 {
        self.jobs_epoch
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

    pub fn pending_total(&self) -> usize {
        self.jobs
            .values()
            .skip(self.pending_from)
            .map(JobView::pending_len)
            .sum()
    }

    /// Tasks a free slot could take now: pending maps and the waiting
    /// reduces of jobs whose reduces may start.
    pub fn waiting_tasks(&self) -> usize {
        let reduces: usize = self
            .reduces
            .values()
            .filter(|r| r.ready())
            .map(ReduceJobView::pending_len)
            .sum();
        self.pending_total() + reduces
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
        for job in self.jobs_mut().values_mut() {
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
        if let Some(j) = self.jobs_mut().get_mut(&job) {
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
        let now = self.now;
        let job = self
            .jobs_mut()
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
        job.last_launch_at = Some(now);
        self.pending_maybe_gone();
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
