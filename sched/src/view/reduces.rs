//! The view's reduce side: a job's reduces waiting for slots, held,
//! requeued, adopted and ended.

use super::*;

impl ClusterView {
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

    pub(super) fn end_reduce(&mut self, task: TaskRef, worker: WorkerId) {
        let load = self.running_reduces.remove(&(task, worker)).unwrap_or(0);
        self.with_worker(worker, |w| {
            w.free = (w.free + 1).min(w.slots);
            w.reduce_load = w.reduce_load.saturating_sub(load);
            w.reduces_running = w.reduces_running.saturating_sub(1);
        });
        if let Some(j) = self.jobs_mut().get_mut(&task.job) {
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
        if let Some(j) = self.jobs_mut().get_mut(&task.job) {
            t = j.remove(task.index);
            j.running += 1;
        }
        self.pending_maybe_gone();
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

    pub(super) fn apply_reduce(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
    ) -> Result<(), SchedError> {
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
    pub(super) fn run_reduce(&mut self, task: TaskRef, worker: WorkerId, load: u64) {
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
        if let Some(j) = self.jobs_mut().get_mut(&task.job) {
            j.running += 1;
        }
    }
}
