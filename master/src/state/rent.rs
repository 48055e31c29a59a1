//! Rented public instances, orchestrated: the scheduler's requests
//! started (`after_decisions`), a registration that brings an instance up,
//! idle ones stopped and those that never registered given up
//! (`check_instances`). The instances' own bookkeeping (ports, usage,
//! bills, orders) is the part `public::Instances`.

use super::public::WorkerActivity;
use super::Master;
use crate::provision::Provision;
use common::WorkerId;
use sched::hybrid::WorkerProfile;
use sched::Millis;

impl Master {
    /// The hybrid part of the view, set once at start.
    pub(super) fn init_public(&mut self) {
        let (types, max) = self.instances.types();
        self.placement.public_types(types, max);
    }

    /// The scheduler's requests and refusals from the last decision round.
    pub(super) fn after_decisions(&mut self, now: Millis) {
        for r in self.placement.take_requests() {
            let index = self.workers.len() as u32;
            match self.instances.start(now, r.id, r.ty, r.for_job, index) {
                Ok(settings) => {
                    self.workers.add(settings);
                }
                Err(why) => {
                    tracing::error!(instance = %r.id, "{why}");
                    self.placement.instance_gone(r.id);
                }
            }
        }
        for (job, why) in self.placement.take_refusals() {
            self.fail_job(job, format!("refused: {why}"));
        }
    }

    /// Orders for the HTTP layer since the last call.
    pub fn take_provisioning(&mut self) -> Vec<Provision> {
        self.instances.take_provisioning()
    }

    /// Worker `w` registered: the scheduler's profile of it, and, for an
    /// instance, the instance is up.
    pub(super) fn note_registered(&mut self, now: Millis, w: WorkerId) {
        let s = self.workers.settings(w);
        let mut profile = WorkerProfile {
            slot_rate: s.slot_rate_bytes,
            nic: s.nic_bytes_per_sec,
            speed: 1.0,
        };
        if let Some((id, speed)) = self.instances.registered(now, w) {
            profile.speed = speed;
            self.placement.instance_up(id, w);
        }
        self.placement.profile(w, profile);
    }

    /// Stops idle instances and gives up on those that never registered
    /// (called every heartbeat interval).
    pub(super) fn check_instances(&mut self, now: Millis) {
        let workers = &self.workers;
        let jobs = &self.jobs;
        let stopped = self.instances.check(
            now,
            |w| WorkerActivity {
                alive: workers.alive(w),
                busy: workers.busy(w),
            },
            |j| jobs.needs_outputs(j),
        );
        for s in stopped {
            if self.workers.alive(s.worker) {
                self.lose_worker(s.worker);
            }
            self.placement.instance_gone(s.id);
        }
    }
}
