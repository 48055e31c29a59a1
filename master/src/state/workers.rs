//! Workers: registration, heartbeats (results in, launches out), loss of
//! a silent worker, and the block catalog's live replicas.

use super::storage::{Holder, StorageOrders};
use super::{Master, MasterError, TaskStatus, WorkerState};
use common::config::WorkerSettings;
use common::wire::{
    AttemptProgress, BlockInfo, FileDeleted, FileInfo, Heartbeat, HeartbeatReply, RegisterReply,
    RegisterRequest, WorkerInfo,
};
use common::{AttemptId, TaskRef, WorkerId};
use sched::Millis;

impl Master {
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
            tracing::info!(worker = %req.name, "worker registered again; its running attempts and map outputs are lost");
            self.forget_attempts(id);
            self.rerun_outputs_on(id);
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
        w.out_of_band = req.out_of_band_heartbeat;
        w.woken = false;
        w.blocks = req.blocks.len();
        w.free_slots = req.slots;
        self.view.upsert_worker(id, req.slots);
        self.view.set_free(id, req.slots);
        let rack = &self.settings.workers[idx].rack;
        if let Some(k) = self.racks.iter().position(|r| r == rack) {
            self.view.set_rack(id, k as u32);
        }
        let role = self.settings.workers[idx].role;
        self.view.set_runs_maps(id, role.runs_maps());
        self.view.set_runs_reduces(id, role.runs_reduces());
        self.apply_block_report(id, &req.blocks);
        self.refresh_replicas();
        self.note_registered(now, id);
        tracing::info!(worker = %self.workers[idx].name, %id, addr = %self.workers[idx].addr, blocks = req.blocks.len(), "worker registered");
        Ok(RegisterReply {
            worker: id,
            heartbeat_ms: self.settings.heartbeat_ms,
        })
    }

    /// Workers to ask for a heartbeat now because tasks wait that they
    /// could take (a job arrived): alive, heartbeating out of band, with a
    /// free slot at their last heartbeat, and not asked already since it.
    /// Their addresses. The heartbeat that follows is an ordinary one, so
    /// every policy decides exactly as on a slot that freed.
    pub fn to_wake(&mut self) -> Vec<String> {
        if self.view.pending_total() == 0 {
            return Vec::new();
        }
        self.workers
            .iter_mut()
            .filter(|w| w.registered && w.alive && w.out_of_band && !w.woken && w.free_slots > 0)
            .map(|w| {
                w.woken = true;
                w.addr.clone()
            })
            .collect()
    }

    pub fn heartbeat(&mut self, now: Millis, hb: Heartbeat) -> HeartbeatReply {
        self.clock = self.clock.max(now);
        let id = hb.worker;
        let known = self
            .workers
            .get(id.0 as usize)
            .is_some_and(|w| w.registered && w.alive);
        if !known {
            return HeartbeatReply {
                reregister: true,
                ..Default::default()
            };
        }
        let seq = {
            let w = &mut self.workers[id.0 as usize];
            w.last_seen = now;
            w.hb_seq += 1;
            w.woken = false;
            w.free_slots = hb.free_slots;
            w.disk_free = hb.disk_free_bytes;
            w.background = hb.busy.iter().filter(|b| b.remaining_ms.is_some()).count() as u32;
            w.nic.update(now, hb.nic_rx_bytes, hb.nic_tx_bytes);
            if let (Some(at), Some(now_free)) = (w.full_at, w.disk_free) {
                if now_free > at {
                    tracing::info!(worker = %w.name, free = now_free, "worker's disk has room again");
                    w.full_at = None;
                }
            }
            w.hb_seq
        };
        if let Some(blocks) = &hb.blocks {
            self.workers[id.0 as usize].blocks = blocks.len();
            self.apply_block_report(id, blocks);
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
        self.note_progress(now, id, &hb.progress);
        // Attempts running there that nobody waits for any more: stop them.
        let kill: Vec<AttemptId> = hb
            .running
            .iter()
            .filter(|a| !self.workers[id.0 as usize].running.contains_key(a))
            .copied()
            .collect();
        let outbox = std::mem::take(&mut self.workers[id.0 as usize].outbox);
        let full = self.workers[id.0 as usize].full_at.is_some();
        self.view.set_free(
            id,
            if full {
                0
            } else {
                hb.free_slots.saturating_sub(outbox.len() as u32)
            },
        );
        self.view.set_busy(id, now, hb.busy);
        let mut launches = outbox;
        let decision = std::time::Instant::now();
        // Reduces first: they hold up their whole job.
        for t in sched::offer_reduces(&mut self.reducer, now, id, &mut self.view) {
            launches.push(self.start_reduce(now, t.job, t.index, id));
        }
        for a in sched::offer(self.scheduler.as_mut(), now, id, &mut self.view) {
            let launch = self.start_attempt(now, &a);
            if a.worker == id {
                launches.push(launch);
            } else {
                self.workers[a.worker.0 as usize].outbox.push(launch);
            }
        }
        self.after_decisions(now);
        self.metrics.decision_made(decision.elapsed().as_secs_f64());
        if self.view.recording() {
            let rows = self.view.take_decisions();
            self.decisions.extend(rows);
        }
        for l in &launches {
            self.workers[id.0 as usize].running.insert(l.attempt, seq);
        }
        let w = &mut self.workers[id.0 as usize];
        HeartbeatReply {
            launches,
            forget_jobs: std::mem::take(&mut w.forget),
            reregister: false,
            copy_blocks: std::mem::take(&mut w.copy_out),
            drop_blocks: std::mem::take(&mut w.drop_out),
            kill,
        }
    }

    /// Progress counts from `worker`'s heartbeat: an attempt whose count grew
    /// is not stalled.
    fn note_progress(&mut self, now: Millis, worker: WorkerId, progress: &[AttemptProgress]) {
        for p in progress {
            let status = self
                .jobs
                .get_mut(&p.attempt.task.job)
                .and_then(|j| j.tasks.get_mut(p.attempt.task.index as usize))
                .map(|t| &mut t.status);
            if let Some(TaskStatus::Running(ra)) = status {
                if ra.attempt == p.attempt.attempt && ra.worker == worker {
                    ra.slot = Some(p.slot);
                    if p.units > ra.progress {
                        ra.progress = p.units;
                        ra.progressed = now;
                    }
                }
            }
        }
    }

    /// Declares workers silent for longer than `worker_timeout_ms` lost,
    /// then plans re-replication (called every heartbeat interval).
    pub fn check_workers(&mut self, now: Millis) {
        self.check_liveness(now);
        self.check_instances(now);
        self.time_out_attempts(now);
        self.plan_replication(now);
    }

    fn check_liveness(&mut self, now: Millis) {
        for i in 0..self.workers.len() {
            let w = &self.workers[i];
            if w.alive && now.saturating_sub(w.last_seen) > self.settings.worker_timeout_ms {
                tracing::warn!(worker = %w.name, silent_ms = now - w.last_seen, "worker lost");
                self.lose_worker(WorkerId(i as u32));
            }
        }
    }

    pub(super) fn lose_worker(&mut self, id: WorkerId) {
        self.workers[id.0 as usize].alive = false;
        self.storage.worker_lost(id);
        let orphans = self.view.lose_worker(id);
        self.forget_attempts(id);
        self.rerun_outputs_on(id);
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
                background: if w.alive { w.background } else { 0 },
                nic_rx_bytes: w.nic.rx_bytes,
                nic_tx_bytes: w.nic.tx_bytes,
                nic_rx_rate: if w.alive { w.nic.rx_rate } else { 0.0 },
                nic_tx_rate: if w.alive { w.nic.tx_rate } else { 0.0 },
                nic_cap: self.settings.workers[i].nic_bytes_per_sec,
                disk_free_bytes: w.disk_free,
                instance_type: self.instance_type_name(WorkerId(i as u32)),
            })
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
            if let Some(job) = self.jobs.values().find(|j| {
                !j.state.is_done() && (j.spec.input == name || j.output.as_deref() == Some(name))
            }) {
                return Err(MasterError::FileInUse {
                    name: name.to_owned(),
                    job: job.id,
                    how: if job.spec.input == name {
                        "its input"
                    } else {
                        "its output"
                    },
                });
            }
        }
        let workers = &self.workers;
        let alive = |w: WorkerId| workers[w.0 as usize].alive;
        let (deleted, orders) =
            self.storage
                .delete_file(name, workers.len(), &alive, &mut self.journal)?;
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
    fn apply_block_report(&mut self, id: WorkerId, blocks: &[BlockInfo]) {
        let again = self.storage.apply_block_report(id, blocks);
        let w = &mut self.workers[id.0 as usize];
        for b in again {
            if !w.drop_out.contains(&b) {
                w.drop_out.push(b);
            }
        }
    }

    /// Storage's orders into the workers' next heartbeat replies.
    pub(super) fn send_storage_orders(&mut self, orders: StorageOrders) {
        for (w, order) in orders.copies {
            self.workers[w.0 as usize].copy_out.push(order);
        }
        for (w, block) in orders.drops {
            self.workers[w.0 as usize].drop_out.push(block);
        }
    }

    pub(super) fn is_alive(&self, w: WorkerId) -> bool {
        self.workers[w.0 as usize].alive
    }

    /// Keeps every block of `file` at `replication` replicas from now on.
    pub fn set_file_replication(
        &mut self,
        file: &str,
        replication: u32,
    ) -> Result<(), MasterError> {
        let data = self
            .settings
            .workers
            .iter()
            .filter(|w| w.role.holds_data())
            .count() as u32;
        self.storage
            .set_file_replication(file, replication, data, &mut self.journal)
    }

    /// Plans re-replication and trims (`Storage::plan_replication`).
    pub(super) fn plan_replication(&mut self, now: Millis) {
        let holders = holders(&self.workers, &self.settings.workers);
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
        let job = &self.jobs[&t.job];
        let live = self.live_replicas(&job.spec.input, t.index);
        let stalled = &job.tasks[t.index as usize].stalled_on;
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

    /// Block reports changed: bring pending tasks' replica lists up to date.
    fn refresh_replicas(&mut self) {
        let mut updates = Vec::new();
        for job in self.jobs.values().filter(|j| !j.state.is_done()) {
            let Some(jv) = self.view.job(job.id) else {
                continue;
            };
            for t in jv.pending() {
                let live = self.task_replicas(t.task);
                if live != t.replicas {
                    updates.push((t.task, live));
                }
            }
        }
        for (t, live) in updates {
            self.view.set_replicas(t, live);
        }
    }
}

/// What storage reads of the workers.
fn holders<'a>(workers: &'a [WorkerState], settings: &[WorkerSettings]) -> Vec<Holder<'a>> {
    workers
        .iter()
        .zip(settings)
        .map(|(w, s)| Holder {
            alive: w.alive,
            takes_data: w.registered && s.role.holds_data(),
            full: w.full_at.is_some(),
            blocks: w.blocks,
            addr: &w.addr,
            name: &w.name,
        })
        .collect()
}
