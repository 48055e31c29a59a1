//! Workers: registration, heartbeats (results in, launches out), loss of
//! a silent worker, and the block catalog's live replicas.

use super::storage::StorageOrders;
use super::{Master, MasterError};
use common::wire::{
    AttemptProgress, BlockInfo, FileDeleted, FileInfo, Heartbeat, HeartbeatReply, Refused,
    RegisterReply, RegisterRequest, WorkerInfo,
};
use common::{AttemptId, TaskRef, WorkerId};
use sched::Millis;
use std::collections::{HashMap, HashSet};

impl Master {
    pub fn register(
        &mut self,
        now: Millis,
        req: RegisterRequest,
    ) -> Result<RegisterReply, MasterError> {
        if req.protocol < common::wire::PROTOCOL {
            return Err(MasterError::OldWorker {
                name: req.name,
                speaks: req.protocol,
            });
        }
        let (id, restart) = self.workers.find(&req.name)?;
        if restart {
            // Whatever it ran before is gone.
            tracing::info!(worker = %req.name, "worker registered again; its running attempts and map outputs are lost");
            self.forget_attempts(id);
            self.rerun_outputs_on(id);
        }
        let rack = self.workers.register(now, id, &req);
        let role = self.workers.settings(id).role;
        self.placement.worker_joined(id, req.slots, rack, role);
        self.apply_block_report(id, &req.blocks);
        self.storage.beat(id, now);
        self.note_registered(now, id);
        self.adopt(id, &req.running, &req.map_outputs);
        self.forget_ended_outputs(id, &req.map_outputs);
        tracing::info!(worker = %req.name, %id, addr = %req.addr, blocks = req.blocks.len(), "worker registered");
        Ok(RegisterReply {
            worker: id,
            heartbeat_ms: self.settings.heartbeat_ms,
            incarnation: self.incarnation,
            protocol: common::wire::PROTOCOL,
        })
    }

    /// Map outputs a registering worker keeps of jobs that are over, or
    /// that this master does not know (they ended before a restart, or
    /// long ago): nobody will fetch them, and the order to delete them was
    /// lost with the worker (declared lost when its jobs ended, its orders
    /// dropped) or with the master (restarted): it is told to now. Without
    /// this, a worker cut off or a master restarted while jobs ended kept
    /// their map output on disk for good (the fault campaign filled every
    /// worker's disk with it).
    fn forget_ended_outputs(&mut self, id: WorkerId, outputs: &[AttemptId]) {
        let mut ended: Vec<common::JobId> = outputs
            .iter()
            .map(|a| a.task.job)
            .filter(|j| self.jobs.get(*j).is_none_or(|x| x.state.is_done()))
            .collect();
        ended.sort();
        ended.dedup();
        if !ended.is_empty() {
            tracing::info!(worker = %self.worker_name(id), jobs = ended.len(), "map output of ended jobs kept there: deleted");
        }
        for job in ended {
            self.workers.forget_on(id, job);
        }
    }

    /// Workers to ask for a heartbeat now because tasks wait that they
    /// could take (a job arrived): alive, heartbeating out of band, with a
    /// free slot at their last heartbeat, and not asked already since it.
    /// Their addresses. The heartbeat that follows is an ordinary one, so
    /// every policy decides exactly as on a slot that freed.
    pub fn to_wake(&mut self) -> Vec<String> {
        if self.placement.view().waiting_tasks() == 0 {
            return Vec::new();
        }
        self.workers.wake(None)
    }

    /// A heartbeat, and the other workers to ask for one now if it left
    /// more tasks waiting than before: the last map's report releases a
    /// job's reduces, a failed attempt puts its task back, and idle workers
    /// would otherwise learn of them only at their next interval.
    pub fn heartbeat_waking(
        &mut self,
        now: Millis,
        hb: Heartbeat,
    ) -> (HeartbeatReply, Vec<String>) {
        let id = hb.worker;
        let before = self.placement.view().waiting_tasks();
        let reply = self.heartbeat(now, hb);
        let wake = if self.placement.view().waiting_tasks() > before {
            self.workers.wake(Some(id))
        } else {
            Vec::new()
        };
        (reply, wake)
    }

    pub fn heartbeat(&mut self, now: Millis, hb: Heartbeat) -> HeartbeatReply {
        self.now = self.now.max(now);
        self.instances.tick(now);
        let id = hb.worker;
        if let Some(reply) = self.refuse_heartbeat(&hb) {
            return reply;
        }
        let seq = self.workers.beat(now, &hb);
        if let Some(blocks) = &hb.blocks {
            self.apply_block_report(id, blocks);
        }
        self.storage.beat(id, now);
        for c in &hb.copies_failed {
            // A target no longer at that address: its copy is left to the
            // copy timeout.
            if let Some(to) = self.workers.at_addr(&c.to) {
                self.storage.copy_failed(id, &c.block, to);
            }
        }
        let reported: std::collections::HashSet<AttemptId> = hb
            .running
            .iter()
            .copied()
            .chain(hb.results.iter().map(|r| r.attempt))
            .collect();
        let mut refused = Vec::new();
        for r in hb.results {
            let attempt = r.attempt;
            if let Some(reason) = self.on_result(id, r) {
                tracing::info!(%attempt, worker = %self.worker_name(id), %reason, "result refused");
                refused.push(Refused { attempt, reason });
            }
        }
        self.workers.refuse(refused.len());
        // Launches delivered in an earlier reply that the worker does not
        // know: the reply was lost. Run them again, without penalty.
        for a in self.workers.undelivered(id, seq, &reported) {
            tracing::warn!(attempt = %a, worker = %self.worker_name(id), "launch never reached the worker; rescheduling");
            self.end_attempt(id, a, None);
        }
        self.note_progress(now, id, &hb.progress);
        // Attempts running there that nobody waits for any more: stop them.
        let kill: Vec<AttemptId> = hb
            .running
            .iter()
            .filter(|a| !self.workers.runs(id, a))
            .copied()
            .collect();
        let outbox = self.workers.take_outbox(id);
        let full = self.workers.full(id);
        let free = if full {
            0
        } else {
            hb.free_slots.saturating_sub(outbox.len() as u32)
        };
        self.placement.heartbeat(id, now, free, hb.busy);
        let mut launches = outbox;
        let decision = std::time::Instant::now();
        // Reduces first: they hold up their whole job.
        for t in self.placement.offer_reduces(now, id) {
            launches.push(self.start_reduce(now, t.job, t.index, id, false));
        }
        for a in self.placement.offer_maps(now, id) {
            let launch = self.start_attempt(now, &a);
            if a.worker == id {
                launches.push(launch);
            } else {
                self.workers.queue(a.worker, launch);
            }
        }
        self.after_decisions(now);
        self.metrics.decision_made(decision.elapsed().as_secs_f64());
        self.placement.keep_record();
        let orders = self.workers.reply(id, seq, launches);
        HeartbeatReply {
            launches: orders.launches,
            forget_jobs: orders.forget_jobs,
            reregister: false,
            copy_blocks: orders.copy_blocks,
            drop_blocks: orders.drop_blocks,
            drop_stale: orders.drop_stale,
            kill,
            lost: false,
            refused,
        }
    }

    /// A heartbeat this master does not take: from a worker it does not
    /// know, stamped with another incarnation of the master (it restarted
    /// since the worker registered), or from a worker it declared lost.
    /// The worker registers again; a lost one is told so, and its results
    /// are refused and counted (the attempts were given to others).
    fn refuse_heartbeat(&mut self, hb: &Heartbeat) -> Option<HeartbeatReply> {
        let id = hb.worker;
        let stale = hb.incarnation != 0 && hb.incarnation != self.incarnation;
        if self.workers.known(id) && !stale {
            return None;
        }
        let lost = !stale && self.workers.declared_lost(id);
        let mut refused = Vec::new();
        if lost {
            let reason = format!(
                "the master declared worker {} lost (no heartbeat for {:.1} s, cluster.worker_timeout_ms) and gave its attempts to others",
                self.worker_name(id),
                self.settings.worker_timeout_ms as f64 / 1000.0
            );
            refused = hb
                .results
                .iter()
                .map(|r| Refused {
                    attempt: r.attempt,
                    reason: reason.clone(),
                })
                .collect();
            self.workers.refuse(refused.len());
            if !refused.is_empty() {
                tracing::warn!(worker = %self.worker_name(id), results = refused.len(), "results of a worker declared lost refused");
            }
        } else if stale {
            tracing::info!(
                worker = hb.worker.0,
                theirs = hb.incarnation,
                ours = self.incarnation,
                "heartbeat from an earlier incarnation of the master: the worker registers again"
            );
        }
        Some(HeartbeatReply {
            reregister: true,
            lost,
            refused,
            ..Default::default()
        })
    }

    /// Progress counts from `worker`'s heartbeat: an attempt whose count grew
    /// is not stalled.
    fn note_progress(&mut self, now: Millis, worker: WorkerId, progress: &[AttemptProgress]) {
        for p in progress {
            self.jobs.progress(worker, p, now);
        }
        if !self.placement.speculating() {
            return;
        }
        // Speculation judges tasks by the fraction they have done: as the
        // worker says (reduces), or a map's input share read.
        for p in progress {
            let t = p.attempt.task;
            let running = self
                .jobs
                .running(p.attempt)
                .filter(|ra| ra.worker == worker);
            if running.is_none() || self.held.holds(t.job) {
                continue;
            }
            let task = self.jobs.task(t);
            let done = match (p.done_ppm, task.reduce) {
                (Some(ppm), _) => f64::from(ppm.min(1_000_000)) / 1e6,
                (None, None) => map_fraction(p.units, task.len),
                (None, Some(_)) => continue,
            };
            self.placement.progress(t, worker, done, now);
        }
    }

    /// Declares workers silent for longer than `worker_timeout_ms` lost,
    /// then plans re-replication (called every heartbeat interval).
    pub fn check_workers(&mut self, now: Millis) {
        self.now = self.now.max(now);
        self.check_liveness(now);
        if self.held.due(now) {
            tracing::warn!("not every worker registered again in worker_timeout_ms; the jobs taken back go on without them");
            self.resume();
        }
        self.check_instances(now);
        self.time_out_attempts(now);
        self.plan_replication(now);
    }

    fn check_liveness(&mut self, now: Millis) {
        for id in self.workers.silent(now, self.settings.worker_timeout_ms) {
            self.lose_worker(id);
        }
    }

    pub(super) fn lose_worker(&mut self, id: WorkerId) {
        self.workers.lose(id);
        self.storage.worker_lost(id);
        let orphans = self.placement.worker_lost(id);
        self.forget_attempts(id);
        self.rerun_outputs_on(id);
        for t in orphans {
            // The view's list leaves out the workers the map stalled on:
            // a live replica there is still one to read.
            let live = self.task_replicas(t);
            if !live.is_empty() {
                self.placement.replicas(t, live);
                continue;
            }
            let block = self.jobs.task(t).block.clone();
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
        for a in self.workers.take_attempts(id) {
            self.end_attempt(id, a, None);
        }
    }

    pub fn workers(&self) -> Vec<WorkerInfo> {
        self.workers
            .ids()
            .map(|w| self.workers.info(w, self.instances.type_name(w)))
            .collect()
    }

    pub fn files(&self) -> Vec<FileInfo> {
        self.storage
            .catalog()
            .files()
            .filter_map(|(n, _)| self.storage.file_info(n, |w| self.worker_name(w)))
            .collect()
    }

    pub fn file(&self, name: &str) -> Result<FileInfo, MasterError> {
        self.storage
            .file(name, &|w| self.is_alive(w), |w| self.worker_name(w))
    }

    /// `DELETE /v1/files/{name}`: refused while a job that has not ended
    /// reads or writes it; else the file leaves the catalog at once and
    /// every holder is told to delete its replicas (`Storage::delete_file`).
    pub fn delete_file(&mut self, name: &str) -> Result<FileDeleted, MasterError> {
        if self.storage.catalog().file(name).is_some() {
            if let Some((job, how)) = self.jobs.using(name) {
                return Err(MasterError::FileInUse {
                    name: name.to_owned(),
                    job,
                    how,
                });
            }
        }
        let workers = &self.workers;
        let alive = |w: WorkerId| workers.alive(w);
        let (deleted, orders) =
            self.storage
                .delete_file(name, workers.len(), &alive, self.now, &mut self.journal)?;
        self.send_storage_orders(orders);
        tracing::info!(
            file = name,
            blocks = deleted.blocks,
            replicas = deleted.replicas,
            "file deleted; its holders drop their replicas"
        );
        Ok(deleted)
    }

    /// A worker's full block report into the catalog; replicas of deleted
    /// files it still lists it is told, again, to drop.
    /// `id`'s full block report into the catalog, and the pending maps
    /// of the blocks it held before or holds now given their live replicas.
    fn apply_block_report(&mut self, id: WorkerId, blocks: &[BlockInfo]) {
        let mut touched: HashSet<(String, u32)> =
            self.storage.catalog().held_by(id).cloned().collect();
        let (again, stale) = self.storage.apply_block_report(id, blocks);
        touched.extend(self.storage.catalog().held_by(id).cloned());
        self.refresh_replicas(&touched);
        for b in again {
            self.workers.drop_block(id, b);
        }
        for s in stale {
            self.workers.drop_stale(id, s);
        }
    }

    /// Storage's orders into the workers' next heartbeat replies.
    pub(super) fn send_storage_orders(&mut self, orders: StorageOrders) {
        for (w, order) in orders.copies {
            self.workers.copy(w, order);
        }
        for (w, block) in orders.drops {
            self.workers.drop_block(w, block);
        }
        for (w, stale) in orders.stale {
            self.workers.drop_stale(w, stale);
        }
    }

    pub(super) fn is_alive(&self, w: WorkerId) -> bool {
        self.workers.alive(w)
    }

    /// Keeps every block of `file` at `replication` replicas from now on.
    pub fn set_file_replication(
        &mut self,
        file: &str,
        replication: u32,
    ) -> Result<(), MasterError> {
        let data = self.data_workers();
        self.storage
            .set_file_replication(file, replication, data, &mut self.journal)
    }

    /// How many workers of the roster hold data: the most replicas a file
    /// or a job's output can have.
    pub(super) fn data_workers(&self) -> u32 {
        self.workers
            .ids()
            .filter(|&w| self.workers.settings(w).role.holds_data())
            .count() as u32
    }

    /// Plans re-replication and trims (`Storage::plan_replication`).
    pub(super) fn plan_replication(&mut self, now: Millis) {
        let holders = self.workers.holders();
        let orders = self
            .storage
            .plan_replication(now, &holders, &mut self.journal);
        self.send_storage_orders(orders);
    }

    pub(super) fn unknown_file(&self, name: &str) -> MasterError {
        self.storage.unknown_file(name)
    }

    pub(super) fn live_replicas(&self, file: &str, index: u32) -> Vec<WorkerId> {
        self.storage
            .live_replicas(file, index, &|w| self.is_alive(w))
    }

    /// The live replicas map `t` may read: all but those on workers where
    /// it stalled, unless only those are left.
    pub(super) fn task_replicas(&self, t: TaskRef) -> Vec<WorkerId> {
        let job = self.jobs.job(t.job);
        let live = self.live_replicas(&job.spec.input, t.index);
        let stalled = &self.jobs.task(t).stalled_on;
        let good: Vec<WorkerId> = live
            .iter()
            .copied()
            .filter(|w| !stalled.contains(w))
            .collect();
        if good.is_empty() {
            live
        } else {
            good
        }
    }

    /// The replicas of blocks `touched` (file, index) changed: bring the
    /// replica lists of the pending maps that read them up to date. Only
    /// those maps are looked at (a full pass over every pending map, per
    /// block report, cost a heartbeat about 10 ms with 100,000 waiting).
    fn refresh_replicas(&mut self, touched: &HashSet<(String, u32)>) {
        let mut by_file: HashMap<&str, Vec<u32>> = HashMap::new();
        for (file, index) in touched {
            by_file.entry(file.as_str()).or_default().push(*index);
        }
        let mut updates = Vec::new();
        for job in self.jobs.live() {
            let (Some(jv), Some(indices)) = (
                self.placement.view().job(job.id),
                by_file.get(job.spec.input.as_str()),
            ) else {
                continue;
            };
            // In the pending order, as a pass over every pending map made
            // them: a task whose replicas change goes to the queue's end.
            let mut changed: Vec<(usize, TaskRef, Vec<WorkerId>)> = Vec::new();
            for t in indices.iter().filter_map(|&i| jv.pending_task(i)) {
                let live = self.task_replicas(t.task);
                if live != t.replicas {
                    let place = jv.pending_place(t.task.index).unwrap_or(usize::MAX);
                    changed.push((place, t.task, live));
                }
            }
            changed.sort_by_key(|c| c.0);
            updates.extend(changed.into_iter().map(|(_, t, live)| (t, live)));
        }
        for (t, live) in updates {
            self.placement.replicas(t, live);
        }
    }
}

/// How much of a map is done, from its progress count: the worker counts
/// each input byte twice (read, then consumed by the map function), then
/// the output bytes and a unit per second of pacing or emulated compute,
/// so the input's share is Hadoop's map progress (the fraction of the
/// split read); past it, the map is taken as done.
fn map_fraction(units: u64, len: u64) -> f64 {
    (units as f64 / (2 * len).max(1) as f64).min(1.0)
}
