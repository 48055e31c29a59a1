//! `Placement`: where tasks go. It owns the scheduler's view of the
//! cluster (`ClusterView`), the map scheduler, the reduce placer and the
//! decision record, and is the only part that writes the view: the
//! master's other files tell it what happened (a worker joined, a job
//! arrived, an attempt ended) and ask it to decide (`offer_reduces`,
//! `offer_maps`). Everything it holds is a pure, clock-free state machine
//! (every call is given the time), as in the simulators, which drive the
//! same view and policies.

use super::record::Record;
use super::MasterSettings;
use common::config::Role;
use common::public::PublicType;
use common::{JobId, TaskRef, WorkerId};
use sched::decision::Decision;
use sched::hybrid::{InstanceId, InstanceRequest, WorkerProfile};
use sched::input::{Input, SlotBusy};
use sched::reduce::ReducePlacement;
use sched::{Assignment, ClusterView, JobQos, LaunchedBy, Millis, PendingTask};
use sched::{ReducePlacer, Scheduler};
use std::collections::BTreeMap;

pub(super) struct Placement {
    view: ClusterView,
    scheduler: Box<dyn Scheduler>,
    /// Places the reduces (a pure state machine, like `scheduler`).
    reducer: ReducePlacer,
    /// The decision record since the master started (empty unless
    /// `record_decisions`) and its inputs.
    record: Record,
}

impl Placement {
    pub fn new(settings: &MasterSettings, scheduler: Box<dyn Scheduler>) -> Self {
        let mut view = ClusterView::new();
        view.record_decisions(settings.record_decisions);
        view.set_speculation(settings.speculation.clone());
        Placement {
            view,
            scheduler,
            reducer: ReducePlacer::new(settings.reduce_placement, &settings.scheduler),
            record: Record::new(settings.decisions_max),
        }
    }

    /// What the policies see (read-only for everyone else).
    pub fn view(&self) -> &ClusterView {
        &self.view
    }

    pub fn scheduler_name(&self) -> String {
        self.scheduler.name()
    }

    pub fn scheduler_notes(&self) -> Vec<String> {
        self.scheduler.notes()
    }

    /// Which of `job`'s launches the policy decided and which its fallback
    /// did (external policies; `None` for the built-in ones).
    pub fn launched_by(&self, job: JobId) -> Option<LaunchedBy> {
        self.scheduler.launched_by(job)
    }

    pub fn reduce_placement(&self) -> ReducePlacement {
        self.reducer.placement()
    }

    // ---- the decisions and their record ----

    /// Reduces for worker `id`'s free slots (they go first: they hold up
    /// their whole job).
    pub fn offer_reduces(&mut self, now: Millis, id: WorkerId) -> Vec<TaskRef> {
        sched::offer_reduces(&mut self.reducer, now, id, &mut self.view)
    }

    /// The map scheduler's launches for worker `id`'s offer (some may be
    /// for other workers, as a global policy decides).
    pub fn offer_maps(&mut self, now: Millis, id: WorkerId) -> Vec<Assignment> {
        sched::offer(self.scheduler.as_mut(), now, id, &mut self.view)
    }

    pub fn recording(&self) -> bool {
        self.view.recording()
    }

    /// Moves the view's new decision rows and inputs into the record.
    pub fn keep_record(&mut self) {
        if self.view.recording() {
            self.record.keep(&mut self.view);
        }
    }

    pub fn decisions(&self, job: Option<JobId>) -> Vec<Decision> {
        self.record.rows(job)
    }

    pub fn decisions_dropped(&self) -> u64 {
        self.record.rows_dropped()
    }

    /// The record's inputs, oldest first, and how many were dropped.
    pub fn inputs(&mut self) -> (Vec<Input>, u64) {
        self.keep_record();
        self.record.inputs()
    }

    // ---- workers ----

    /// A worker registered (first time or again) with `slots`, all free.
    pub fn worker_joined(&mut self, id: WorkerId, slots: u32, rack: u32, role: Role) {
        self.view.upsert_worker(id, slots);
        self.view.set_free(id, slots);
        self.view.set_rack(id, rack);
        self.view.set_runs_maps(id, role.runs_maps());
        self.view.set_runs_reduces(id, role.runs_reduces());
    }

    /// Worker `id` was declared lost: the map tasks it ran that have no
    /// other replica to read (their jobs cannot go on).
    pub fn worker_lost(&mut self, id: WorkerId) -> Vec<TaskRef> {
        self.view.lose_worker(id)
    }

    /// What a heartbeat said: free slots and what the busy ones run.
    pub fn heartbeat(&mut self, id: WorkerId, now: Millis, free: u32, busy: Vec<SlotBusy>) {
        self.view.set_free(id, free);
        self.view.set_busy(id, now, busy);
    }

    /// Whether speculation judges running tasks' progress.
    pub fn speculating(&self) -> bool {
        self.view.speculation().enabled
    }

    /// Task `task` on `worker` has done `done` of its work (0..=1).
    pub fn progress(&mut self, task: TaskRef, worker: WorkerId, done: f64, now: Millis) {
        self.view.task_progress(task, worker, done, now);
    }

    /// The speed and link of a worker that registered.
    pub fn profile(&mut self, worker: WorkerId, profile: WorkerProfile) {
        self.view.set_profile(worker, profile);
    }

    // ---- rented instances ----

    pub fn public_types(&mut self, types: Vec<PublicType>, max: u32) {
        self.view.set_public_types(types, max);
    }

    /// The instances the scheduler asked for in its last round.
    pub fn take_requests(&mut self) -> Vec<InstanceRequest> {
        self.view.take_requests()
    }

    /// The jobs the scheduler refused in its last round, with why.
    pub fn take_refusals(&mut self) -> Vec<(JobId, String)> {
        self.view.take_refusals()
    }

    pub fn instance_up(&mut self, id: InstanceId, worker: WorkerId) {
        self.view.instance_up(id, worker);
    }

    pub fn instance_gone(&mut self, id: InstanceId) {
        self.view.instance_gone(id);
    }

    // ---- jobs and tasks ----

    /// A job's map tasks wait from `submitted` (a new job, or one a
    /// restarted master takes back).
    pub fn job_added(
        &mut self,
        id: JobId,
        submitted: Millis,
        group: &str,
        pending: Vec<PendingTask>,
    ) {
        self.view.add_job(id, submitted, group, pending);
    }

    pub fn job_qos(&mut self, id: JobId, qos: JobQos) {
        self.view.set_job_qos(id, qos);
    }

    /// The job ended (or was retired): the scheduler forgets it.
    pub fn job_gone(&mut self, id: JobId) {
        self.view.remove_job(id);
    }

    /// A pending task's live replicas changed (block reports).
    pub fn replicas(&mut self, task: TaskRef, live: Vec<WorkerId>) {
        self.view.set_replicas(task, live);
    }

    /// A map task waits again (its attempt failed or its output was lost).
    pub fn map_requeued(&mut self, t: PendingTask) {
        self.view.requeue(t);
    }

    /// The job's reduces wait to be placed, each expecting `load` bytes;
    /// `output_on` says where the job's output blocks may go.
    pub fn reduces_added(
        &mut self,
        job: JobId,
        indices: impl IntoIterator<Item = u32>,
        load: u64,
        output_on: BTreeMap<WorkerId, u64>,
    ) {
        self.view.add_reduces(job, indices, load, output_on);
    }

    /// The job's reduces wait for its maps again (a map output was lost).
    pub fn reduces_held(&mut self, job: JobId) {
        self.view.hold_reduces(job);
    }

    pub fn reduce_requeued(&mut self, task: TaskRef) {
        self.view.requeue_reduce(task);
    }

    /// Whether `worker` is too slow for `job` to place a reduce on
    /// (speculation's view of it).
    pub fn slow_for(&self, job: JobId, worker: WorkerId) -> bool {
        self.view.slow_for(job, worker)
    }

    /// A map attempt a restarted master found running (reading from
    /// `source`) after its journal.
    pub fn adopted_map(&mut self, task: TaskRef, worker: WorkerId, source: WorkerId) {
        self.view.adopt(task, worker, source);
    }

    /// A reduce attempt a restarted master found running.
    pub fn adopted_reduce(&mut self, task: TaskRef, worker: WorkerId) {
        self.view.adopt_reduce(task, worker);
    }

    /// An attempt of `task` on `worker` ended (`ok` or not); a map's
    /// `remote` says whether it read its block from another worker.
    pub fn attempt_ended(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        map: Option<bool>,
        now: Millis,
        ok: bool,
    ) {
        match map {
            Some(remote) => self.view.map_ended(task, worker, remote, now, ok),
            None => self.view.reduce_attempt_ended(task, worker, now, ok),
        }
    }

    /// A map's measured time for `len` bytes (`local`: read on its own
    /// worker) and its output, for the cost-aware policies' estimates.
    pub fn map_measured(&mut self, worker: WorkerId, len: u64, ms: u64, local: bool, output: u64) {
        self.view.note_map(worker, len, ms, local, output);
    }

    /// A map's length in ms, for the planners' expected task length.
    pub fn task_ms(&mut self, ms: u64) {
        self.view.note_task_ms(ms);
    }

    /// A reduce's measured time for `input` bytes.
    pub fn reduce_measured(&mut self, input: u64, ms: u64) {
        self.view.note_reduce(input, ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(index: u32, replicas: &[u32]) -> PendingTask {
        PendingTask {
            task: TaskRef {
                job: JobId(1),
                index,
            },
            len: 1 << 20,
            replicas: replicas.iter().map(|&w| WorkerId(w)).collect(),
        }
    }

    fn placement(record: bool) -> Placement {
        let mut s = crate::state::tests::settings(2, 1);
        s.record_decisions = record;
        let sched = sched::build(&s.scheduler, s.seed);
        let mut p = Placement::new(&s, sched);
        for w in 0..2 {
            p.worker_joined(WorkerId(w), 1, 0, Role::Both);
        }
        p
    }

    #[test]
    fn a_job_added_is_offered_where_its_block_is_and_the_record_keeps_the_decision() {
        let mut p = placement(true);
        p.job_added(JobId(1), 0, "", vec![task(0, &[1]), task(1, &[1])]);
        assert_eq!(p.view().pending_total(), 2);
        let on1 = p.offer_maps(10, WorkerId(1));
        assert_eq!(on1.len(), 1, "one free slot on w1");
        assert_eq!((on1[0].worker, on1[0].source), (WorkerId(1), WorkerId(1)));
        assert_eq!(p.view().pending_total(), 1);
        // The task ends; its slot is free again at the next heartbeat.
        p.attempt_ended(on1[0].task, WorkerId(1), Some(false), 20, true);
        p.heartbeat(WorkerId(1), 20, 1, Vec::new());
        assert_eq!(p.offer_maps(20, WorkerId(1)).len(), 1);
        p.keep_record();
        let launched = p.decisions(Some(JobId(1)));
        assert!(launched.len() >= 2, "{launched:?}");
        let (inputs, dropped) = p.inputs();
        assert!(!inputs.is_empty());
        assert_eq!(dropped, 0);
    }

    #[test]
    fn a_lost_worker_takes_its_only_replicas_and_a_requeued_task_waits_again() {
        let mut p = placement(false);
        p.job_added(JobId(1), 0, "", vec![task(0, &[0]), task(1, &[0, 1])]);
        let orphans = p.worker_lost(WorkerId(0));
        assert_eq!(
            orphans,
            vec![TaskRef {
                job: JobId(1),
                index: 0
            }]
        );
        let a = p.offer_maps(5, WorkerId(1));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].task.index, 1);
        p.attempt_ended(a[0].task, WorkerId(1), Some(false), 6, false);
        p.map_requeued(task(1, &[1]));
        p.heartbeat(WorkerId(1), 7, 1, Vec::new());
        let again = p.offer_maps(7, WorkerId(1));
        assert_eq!(again.iter().map(|a| a.task.index).collect::<Vec<_>>(), [1]);
        assert!(p.decisions(None).is_empty(), "not recording");
        p.job_gone(JobId(1));
        assert_eq!(p.view().pending_total(), 0);
    }
}
