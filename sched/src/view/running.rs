//! The view's running maps and reduces for speculative execution: their
//! progress, which is slow, and the backup an offer may launch.

use super::*;

impl ClusterView {
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
    pub(super) fn pick_backup(
        &self,
        now: Millis,
        worker: WorkerId,
    ) -> Option<crate::speculation::Backup> {
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
    pub(super) fn apply_backup(
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
        if let Some(j) = self.jobs_mut().get_mut(&task.job) {
            j.running += 1;
        }
        let now = self.now;
        self.running_tasks
            .launched(task, len, &[], TaskAttempt::new(worker, source, now));
        Ok(len)
    }
}
