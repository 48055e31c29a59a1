//! Public instances (MROSA's hybrid cloud): made a worker when the
//! scheduler asks for one (`take_provisioning` gives the HTTP layer the
//! process to start), registered like any worker once booted, stopped when
//! idle for `public.idle_stop_s` and holding no map output a running job
//! needs, and billed: by the second from the request until the stop, and by
//! the byte its tasks received and sent. Jobs the scheduler refuses fail
//! with its reason.

use super::{Master, WorkerState};
use crate::provision::Provision;
use common::public::{PublicCost, PublicType};
use common::{JobId, WorkerId};
use sched::hybrid::{InstanceId, WorkerProfile};
use sched::Millis;
use std::collections::BTreeMap;

/// An instance that does not register within its start-up time plus this
/// is given up (stopped, and the scheduler told it is gone).
pub const BOOT_GRACE_MS: Millis = 30_000;

#[derive(Debug)]
pub(super) struct Instance {
    pub id: InstanceId,
    pub worker: WorkerId,
    pub ty: usize,
    pub port_offset: u32,
    pub requested_at: Millis,
    pub registered_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    pub for_job: JobId,
    pub last_busy: Millis,
    /// Per job: slot-ms of its attempts here, bytes they received and sent.
    pub usage: BTreeMap<JobId, Usage>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Usage {
    pub slot_ms: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl Master {
    /// The hybrid part of the view, set once at start.
    pub(super) fn init_public(&mut self) {
        let types = self.settings.public_types.clone();
        let max = if types.is_empty() {
            0
        } else {
            self.settings.public.max_instances
        };
        self.view.hybrid_mut().set_types(types, max);
    }

    /// The scheduler's requests and refusals from the last decision round.
    pub(super) fn after_decisions(&mut self, now: Millis) {
        for r in self.view.hybrid_mut().take_requests() {
            self.start_instance(now, r.id, r.ty, r.for_job);
        }
        for (job, why) in self.view.hybrid_mut().take_refusals() {
            self.fail_job(job, format!("refused: {why}"));
        }
    }

    fn start_instance(&mut self, now: Millis, id: InstanceId, ty: usize, for_job: JobId) {
        let t: &PublicType = &self.settings.public_types[ty];
        let used: Vec<u32> = self
            .instances
            .iter()
            .filter(|i| i.stopped_at.is_none())
            .map(|i| i.port_offset)
            .collect();
        let Some(port_offset) = (0..self.settings.public.max_instances).find(|p| !used.contains(p))
        else {
            tracing::error!(instance = %id, "no port left for a public instance");
            self.view.hybrid_mut().instance_gone(id);
            return;
        };
        let name = format!("{}-{}", t.name, id.0);
        let index = self.workers.len() as u32;
        let settings = common::config::instance_worker_settings(
            t,
            &self.settings.public,
            self.settings.slot_rate_mbs,
            index,
            &name,
            port_offset,
        );
        self.workers.push(WorkerState::new(&name, settings.slots));
        self.settings.workers.push(settings);
        tracing::info!(instance = %name, r#type = %t.name, job = %for_job, "public instance requested");
        self.provision.push(Provision::Start {
            name,
            instance_type: t.name.clone(),
            port_offset,
        });
        self.instances.push(Instance {
            id,
            worker: WorkerId(index),
            ty,
            port_offset,
            requested_at: now,
            registered_at: None,
            stopped_at: None,
            for_job,
            last_busy: now,
            usage: BTreeMap::new(),
        });
    }

    /// Orders for the HTTP layer since the last call.
    pub fn take_provisioning(&mut self) -> Vec<Provision> {
        std::mem::take(&mut self.provision)
    }

    /// Every instance still running, to stop when the master stops.
    pub fn running_instances(&self) -> Vec<String> {
        self.instances
            .iter()
            .filter(|i| i.stopped_at.is_none())
            .map(|i| self.workers[i.worker.0 as usize].name.clone())
            .collect()
    }

    fn instance_at(&self, w: WorkerId) -> Option<usize> {
        self.instances
            .iter()
            .position(|i| i.worker == w && i.stopped_at.is_none())
    }

    /// Worker `w` registered: the scheduler's profile of it, and, for an
    /// instance, the instance is up.
    pub(super) fn note_registered(&mut self, now: Millis, w: WorkerId) {
        let s = &self.settings.workers[w.0 as usize];
        let mut profile = WorkerProfile {
            slot_rate: s.slot_rate_bytes,
            nic: s.nic_bytes_per_sec,
            speed: 1.0,
        };
        if let Some(k) = self.instance_at(w) {
            let i = &mut self.instances[k];
            i.registered_at.get_or_insert(now);
            i.last_busy = now;
            profile.speed = self.settings.public_types[i.ty].speed;
            let id = i.id;
            self.view.hybrid_mut().instance_up(id, w);
        }
        self.view.hybrid_mut().set_profile(w, profile);
    }

    /// An attempt of `job` ended on `w` after `ms`, having received `bytes_in`
    /// and left `bytes_out` of map output (sent to the reduces).
    pub(super) fn meter(
        &mut self,
        w: WorkerId,
        job: JobId,
        ms: u64,
        bytes_in: u64,
        bytes_out: u64,
    ) {
        if let Some(k) = self.instance_at(w) {
            let u = self.instances[k].usage.entry(job).or_default();
            u.slot_ms += ms;
            u.bytes_in += bytes_in;
            u.bytes_out += bytes_out;
        }
    }

    /// Stops idle instances and gives up on those that never registered
    /// (called every heartbeat interval).
    pub(super) fn check_instances(&mut self, now: Millis) {
        self.clock = self.clock.max(now);
        for k in 0..self.instances.len() {
            let i = &self.instances[k];
            if i.stopped_at.is_some() {
                continue;
            }
            let w = &self.workers[i.worker.0 as usize];
            let ty = &self.settings.public_types[i.ty];
            let why = if i.registered_at.is_none() {
                let limit = i.requested_at + (ty.start_s * 1000.0) as Millis + BOOT_GRACE_MS;
                (now > limit).then_some("it did not register in time")
            } else if !w.alive {
                Some("it was lost")
            } else {
                let busy = !w.running.is_empty() || !w.outbox.is_empty();
                let needed = i.usage.keys().any(|j| {
                    self.jobs
                        .get(j)
                        .is_some_and(|job| !job.state.is_done() && job.reduces > 0)
                });
                if busy || needed {
                    self.instances[k].last_busy = now;
                    None
                } else {
                    let idle = now.saturating_sub(i.last_busy);
                    (idle as f64 >= self.settings.public.idle_stop_s * 1000.0).then_some("idle")
                }
            };
            if let Some(why) = why {
                self.stop_instance(now, k, why);
            }
        }
    }

    fn stop_instance(&mut self, now: Millis, k: usize, why: &str) {
        let (id, w) = (self.instances[k].id, self.instances[k].worker);
        self.instances[k].stopped_at = Some(now);
        let name = self.workers[w.0 as usize].name.clone();
        tracing::info!(instance = %name, why, "stopping public instance");
        if self.workers[w.0 as usize].alive {
            self.lose_worker(w);
        }
        self.view.hybrid_mut().instance_gone(id);
        self.provision.push(Provision::Stop { name });
    }

    /// What job `job` spent on public instances so far; None if it used
    /// none and asked for none.
    pub(super) fn public_cost(&self, job: JobId) -> Option<PublicCost> {
        let mut cost = PublicCost::default();
        let mut any = false;
        for i in &self.instances {
            let mine = i.usage.get(&job);
            if mine.is_none() && i.for_job != job {
                continue;
            }
            any = true;
            let ty = &self.settings.public_types[i.ty];
            let end = i.stopped_at.unwrap_or(self.clock.max(i.requested_at));
            let life_ms = end.saturating_sub(i.requested_at) as f64;
            let life_cost = ty.price_per_s * life_ms / 1000.0;
            let capacity = (life_ms * ty.slots as f64).max(1.0);
            let busy: u64 = i.usage.values().map(|u| u.slot_ms).sum();
            if let Some(u) = mine {
                cost.compute += life_cost * (u.slot_ms as f64 / capacity).min(1.0);
                cost.storage += u.bytes_in as f64 * ty.storage_per_gb / 1e9;
                cost.transfer += (u.bytes_in as f64 * ty.transfer_in_per_gb
                    + u.bytes_out as f64 * ty.transfer_out_per_gb)
                    / 1e9;
            }
            if i.for_job == job {
                cost.compute += life_cost * ((capacity - busy as f64) / capacity).max(0.0);
            }
            cost.instances
                .push(self.workers[i.worker.0 as usize].name.clone());
        }
        any.then_some(cost)
    }

    /// The public type of worker `w`, if it is an instance.
    pub(super) fn instance_type_name(&self, w: WorkerId) -> Option<String> {
        self.instances
            .iter()
            .find(|i| i.worker == w)
            .map(|i| self.settings.public_types[i.ty].name.clone())
    }
}
