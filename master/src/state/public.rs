//! Public instances (MROSA's hybrid cloud): made a worker when the
//! scheduler asks for one (`take_provisioning` gives the HTTP layer the
//! process to start), registered like any worker once booted, stopped when
//! idle for `public.idle_stop_s` and holding no map output a running job
//! needs, and billed: by the second from the request until the stop, and by
//! the byte its tasks received and sent. Jobs the scheduler refuses fail
//! with its reason.
//!
//! `Instances` owns the instances, their port offsets, their usage and the
//! start/stop orders for the HTTP layer; it knows a worker only by its id
//! and asks the caller what it needs about one (alive, busy) and about a job
//! (still needing its map output). `Master` routes the scheduler's requests
//! to it and the stops it decides back to the workers and the view.

use crate::provision::Provision;
use common::config::WorkerSettings;
use common::public::{PublicCost, PublicSection, PublicType};
use common::{JobId, WorkerId};
use sched::hybrid::InstanceId;
use sched::Millis;
use std::collections::BTreeMap;

/// An instance that does not register within its start-up time plus this
/// is given up (stopped, and the scheduler told it is gone).
pub const BOOT_GRACE_MS: Millis = 30_000;

#[derive(Debug)]
struct Instance {
    id: InstanceId,
    /// Its worker's name (`<type>-<n>`) and id.
    name: String,
    worker: WorkerId,
    ty: usize,
    port_offset: u32,
    requested_at: Millis,
    registered_at: Option<Millis>,
    stopped_at: Option<Millis>,
    for_job: JobId,
    last_busy: Millis,
    /// Per job: slot-ms of its attempts here, bytes they received and sent.
    usage: BTreeMap<JobId, Usage>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    slot_ms: u64,
    bytes_in: u64,
    bytes_out: u64,
}

/// What `Instances::check` needs to know of an instance's worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct WorkerActivity {
    pub alive: bool,
    /// Runs an attempt, or has launches waiting for its next heartbeat.
    pub busy: bool,
}

/// An instance `Instances::check` stopped: its worker is to be lost and the
/// scheduler told it is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stopped {
    pub id: InstanceId,
    pub worker: WorkerId,
    pub name: String,
    pub why: &'static str,
}

/// The public instances asked for since the master started.
#[derive(Debug, Default)]
pub(super) struct Instances {
    types: Vec<PublicType>,
    section: PublicSection,
    /// The private workers' compute pacing, which an instance's speed scales.
    slot_rate_mbs: Option<f64>,
    list: Vec<Instance>,
    /// Instances to start or stop (the HTTP layer takes them).
    provision: Vec<Provision>,
    /// The latest time given (for live costs in reports).
    clock: Millis,
}

impl Instances {
    pub fn new(types: Vec<PublicType>, section: PublicSection, slot_rate_mbs: Option<f64>) -> Self {
        Instances {
            types,
            section,
            slot_rate_mbs,
            ..Default::default()
        }
    }

    /// The types and the cap on instances alive at once (0 without types).
    pub fn types(&self) -> (Vec<PublicType>, u32) {
        let max = if self.types.is_empty() {
            0
        } else {
            self.section.max_instances
        };
        (self.types.clone(), max)
    }

    pub fn tick(&mut self, now: Millis) {
        self.clock = self.clock.max(now);
    }

    /// Starts instance `id` of type `ty` for `for_job` as worker `index`:
    /// its worker's settings, or why it cannot start (no port left).
    pub fn start(
        &mut self,
        now: Millis,
        id: InstanceId,
        ty: usize,
        for_job: JobId,
        index: u32,
    ) -> Result<WorkerSettings, String> {
        let t = self
            .types
            .get(ty)
            .ok_or_else(|| format!("no public type {ty}"))?;
        let used: Vec<u32> = self
            .list
            .iter()
            .filter(|i| i.stopped_at.is_none())
            .map(|i| i.port_offset)
            .collect();
        let port_offset = (0..self.section.max_instances)
            .find(|p| !used.contains(p))
            .ok_or("no port left for a public instance")?;
        let name = format!("{}-{}", t.name, id.0);
        let settings = common::config::instance_worker_settings(
            t,
            &self.section,
            self.slot_rate_mbs,
            index,
            &name,
            port_offset,
        );
        tracing::info!(instance = %name, r#type = %t.name, job = %for_job, "public instance requested");
        self.provision.push(Provision::Start {
            name: name.clone(),
            instance_type: t.name.clone(),
            port_offset,
        });
        self.list.push(Instance {
            id,
            name,
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
        Ok(settings)
    }

    /// Orders for the HTTP layer since the last call.
    pub fn take_provisioning(&mut self) -> Vec<Provision> {
        std::mem::take(&mut self.provision)
    }

    fn running_at(&self, w: WorkerId) -> Option<usize> {
        self.list
            .iter()
            .position(|i| i.worker == w && i.stopped_at.is_none())
    }

    /// Worker `w` registered: if it is a running instance, the instance is
    /// up; its id and its type's speed.
    pub fn registered(&mut self, now: Millis, w: WorkerId) -> Option<(InstanceId, f64)> {
        let k = self.running_at(w)?;
        let i = &mut self.list[k];
        i.registered_at.get_or_insert(now);
        i.last_busy = now;
        Some((i.id, self.types[i.ty].speed))
    }

    /// An attempt of `job` ended on `w` after `ms`, having received
    /// `bytes_in` and left `bytes_out` of map output (sent to the reduces).
    pub fn meter(&mut self, w: WorkerId, job: JobId, ms: u64, bytes_in: u64, bytes_out: u64) {
        if let Some(k) = self.running_at(w) {
            let u = self.list[k].usage.entry(job).or_default();
            u.slot_ms += ms;
            u.bytes_in += bytes_in;
            u.bytes_out += bytes_out;
        }
    }

    /// Stops the instances that never registered in time, were lost, or
    /// were idle for `idle_stop_s` while no job that ran there still needs
    /// its map output (`needed`); what it stopped.
    pub fn check(
        &mut self,
        now: Millis,
        activity: impl Fn(WorkerId) -> WorkerActivity,
        needed: impl Fn(JobId) -> bool,
    ) -> Vec<Stopped> {
        self.tick(now);
        let mut stopped = Vec::new();
        for i in self.list.iter_mut().filter(|i| i.stopped_at.is_none()) {
            let ty = &self.types[i.ty];
            let w = activity(i.worker);
            let why = if i.registered_at.is_none() {
                let limit = i.requested_at + (ty.start_s * 1000.0) as Millis + BOOT_GRACE_MS;
                (now > limit).then_some("it did not register in time")
            } else if !w.alive {
                Some("it was lost")
            } else if w.busy || i.usage.keys().any(|j| needed(*j)) {
                i.last_busy = now;
                None
            } else {
                let idle = now.saturating_sub(i.last_busy);
                (idle as f64 >= self.section.idle_stop_s * 1000.0).then_some("idle")
            };
            if let Some(why) = why {
                i.stopped_at = Some(now);
                tracing::info!(instance = %i.name, why, "stopping public instance");
                self.provision.push(Provision::Stop {
                    name: i.name.clone(),
                });
                stopped.push(Stopped {
                    id: i.id,
                    worker: i.worker,
                    name: i.name.clone(),
                    why,
                });
            }
        }
        stopped
    }

    /// What job `job` spent on public instances so far; None if it used
    /// none and asked for none.
    pub fn cost(&self, job: JobId) -> Option<PublicCost> {
        let mut cost = PublicCost::default();
        let mut any = false;
        for i in &self.list {
            let mine = i.usage.get(&job);
            if mine.is_none() && i.for_job != job {
                continue;
            }
            any = true;
            let ty = &self.types[i.ty];
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
            cost.instances.push(i.name.clone());
        }
        any.then_some(cost)
    }

    /// The public type of worker `w`, if it is or was an instance.
    pub fn type_name(&self, w: WorkerId) -> Option<String> {
        self.list
            .iter()
            .find(|i| i.worker == w)
            .map(|i| self.types[i.ty].name.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str, slots: u32, price_per_s: f64) -> PublicType {
        PublicType {
            name: name.into(),
            provider: String::new(),
            slots,
            speed: 2.0,
            nic_mbps: 100.0,
            start_s: 5.0,
            price_per_s,
            storage_per_gb: 1.0,
            transfer_in_per_gb: 2.0,
            transfer_out_per_gb: 3.0,
        }
    }

    fn instances(max: u32) -> Instances {
        let section = PublicSection {
            idle_stop_s: 10.0,
            max_instances: max,
            ..Default::default()
        };
        Instances::new(vec![ty("small", 2, 0.01)], section, Some(1.0))
    }

    const IDLE: WorkerActivity = WorkerActivity {
        alive: true,
        busy: false,
    };

    #[test]
    fn an_instance_gets_a_free_port_offset_and_a_start_order_until_the_cap() {
        let mut p = instances(2);
        let a = p.start(0, InstanceId(0), 0, JobId(1), 4).unwrap();
        let b = p.start(0, InstanceId(1), 0, JobId(1), 5).unwrap();
        assert_eq!((a.name.as_str(), a.index, a.slots), ("small-0", 4, 2));
        assert_eq!(
            a.slot_rate_bytes,
            Some(2e6),
            "paced at the private rate x speed"
        );
        assert_eq!(b.listen.port(), a.listen.port() + 1);
        let err = p.start(0, InstanceId(2), 0, JobId(1), 6).unwrap_err();
        assert!(err.contains("no port left"), "{err}");
        assert!(
            p.start(0, InstanceId(3), 7, JobId(1), 6).is_err(),
            "unknown type"
        );
        let orders = p.take_provisioning();
        assert_eq!(orders.len(), 2);
        assert!(
            matches!(&orders[1], Provision::Start { name, port_offset: 1, .. } if name == "small-1")
        );
        assert!(p.take_provisioning().is_empty(), "taken once");
        // Instance 0 stops: its port is free for the next one.
        p.registered(1_000, WorkerId(4)).unwrap();
        let stopped = p.check(20_000, |_| IDLE, |_| false);
        assert_eq!(
            stopped.iter().map(|s| s.worker).collect::<Vec<_>>(),
            [WorkerId(4)]
        );
        let c = p.start(20_000, InstanceId(4), 0, JobId(2), 8).unwrap();
        assert_eq!(c.listen.port(), a.listen.port());
    }

    #[test]
    fn an_instance_that_never_registers_is_given_up_after_its_boot_and_the_grace() {
        let mut p = instances(4);
        p.start(0, InstanceId(0), 0, JobId(1), 3).unwrap();
        let limit = 5_000 + BOOT_GRACE_MS;
        assert!(p.check(limit, |_| IDLE, |_| false).is_empty());
        let s = p.check(limit + 1, |_| IDLE, |_| false);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].why, s[0].name.as_str()),
            ("it did not register in time", "small-0")
        );
        assert!(
            p.registered(limit + 2, WorkerId(3)).is_none(),
            "stopped for good"
        );
        assert!(
            p.check(limit + 100_000, |_| IDLE, |_| false).is_empty(),
            "stopped once"
        );
    }

    #[test]
    fn an_instance_stops_when_idle_long_enough_and_not_while_busy_or_needed() {
        let mut p = instances(4);
        p.start(0, InstanceId(0), 0, JobId(1), 3).unwrap();
        assert_eq!(p.registered(2_000, WorkerId(3)), Some((InstanceId(0), 2.0)));
        p.meter(WorkerId(3), JobId(1), 1_000, 10, 10);
        let busy = WorkerActivity {
            alive: true,
            busy: true,
        };
        assert!(p.check(30_000, |_| busy, |_| false).is_empty(), "busy");
        // Job 1's map output is still needed by its reduces.
        assert!(p.check(39_000, |_| IDLE, |j| j == JobId(1)).is_empty());
        assert!(
            p.check(48_999, |_| IDLE, |_| false).is_empty(),
            "idle 9.999 s"
        );
        let s = p.check(49_000, |_| IDLE, |_| false);
        assert_eq!(s[0].why, "idle");
        assert!(matches!(&p.take_provisioning()[1], Provision::Stop { name } if name == "small-0"));
    }

    #[test]
    fn a_lost_instance_is_stopped() {
        let mut p = instances(4);
        p.start(0, InstanceId(0), 0, JobId(1), 3).unwrap();
        p.registered(1_000, WorkerId(3));
        let lost = WorkerActivity::default();
        assert_eq!(p.check(1_100, |_| lost, |_| false)[0].why, "it was lost");
    }

    #[test]
    fn a_job_pays_its_share_of_an_instance_and_the_asker_its_idle_capacity() {
        let mut p = instances(4);
        p.start(0, InstanceId(0), 0, JobId(1), 3).unwrap();
        p.registered(0, WorkerId(3));
        // 10 s of life x 2 slots = 20,000 slot-ms at 0.01/s = 0.1 in all.
        p.meter(WorkerId(3), JobId(1), 5_000, 0, 0);
        p.meter(WorkerId(3), JobId(2), 10_000, 1_000_000_000, 2_000_000_000);
        p.check(10_000, |_| WorkerActivity::default(), |_| false);
        let one = p.cost(JobId(1)).unwrap();
        let two = p.cost(JobId(2)).unwrap();
        assert!(
            (one.compute - 0.1 * (5.0 + 5.0) / 20.0).abs() < 1e-12,
            "{one:?}"
        );
        assert!((two.compute - 0.1 * 10.0 / 20.0).abs() < 1e-12, "{two:?}");
        assert!((two.storage - 1.0).abs() < 1e-12 && (two.transfer - 8.0).abs() < 1e-12);
        assert_eq!(one.instances, ["small-0"]);
        assert!(
            (one.total() + two.total() - 0.1 - 9.0).abs() < 1e-12,
            "the life is paid once"
        );
        assert_eq!(p.cost(JobId(3)), None);
        assert_eq!(p.type_name(WorkerId(3)).as_deref(), Some("small"));
        assert_eq!(p.type_name(WorkerId(2)), None);
    }
}
