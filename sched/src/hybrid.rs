//! The hybrid-cloud part of the scheduler's view: the public instance
//! types a policy may rent, the instances asked for and alive, the
//! requests and refusals a decision round leaves for the view's owner, and
//! the task-time estimates (MROSA's execution-time estimation, ETE)
//! calibrated from finished tasks.
//!
//! A policy asks for an instance through `SchedContext::request_instance`;
//! the owner (the master, or the simulator) drains [`HybridView::take_requests`],
//! starts the instance, and calls [`HybridView::instance_up`] when it has
//! registered as a worker, and [`HybridView::instance_gone`] when it stops.

/// Scheduler time, ms (as `view::Millis`; this module sits below `view`).
type Millis = u64;
use base::public::PublicType;
use base::{JobId, WorkerId};
use std::collections::BTreeMap;

/// An instance, named before it exists as a worker.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct InstanceId(pub u32);

impl std::fmt::Display for InstanceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "i{}", self.0)
    }
}

/// One instance asked for, booting, or alive.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceView {
    pub id: InstanceId,
    /// Index into [`HybridView::types`].
    pub ty: usize,
    pub requested_at: Millis,
    /// The job it was asked for.
    pub for_job: JobId,
    /// Its worker once it registered.
    pub worker: Option<WorkerId>,
}

/// A request for the owner: start an instance of type `ty` for `for_job`.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceRequest {
    pub id: InstanceId,
    pub ty: usize,
    pub for_job: JobId,
}

/// A running mean.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Mean {
    pub n: u64,
    pub mean: f64,
}

impl Mean {
    pub fn add(&mut self, x: f64) {
        if x.is_finite() {
            self.n += 1;
            self.mean += (x - self.mean) / self.n as f64;
        }
    }

    pub fn get(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }
}

/// Seconds per byte a private slot takes when nothing has been measured and
/// no pacing is configured: 100 MB/s.
pub const DEFAULT_SECS_PER_BYTE: f64 = 1.0 / 100e6;

/// Map output bytes per input byte before any map has finished (MROSA's f).
pub const DEFAULT_OUTPUT_RATIO: f64 = 0.5;

/// The hybrid cloud as the scheduler sees it. Empty on a private cluster.
#[derive(Clone, Debug, Default)]
pub struct HybridView {
    /// Rentable instance types (cluster.toml's `[[public_type]]`).
    pub types: Vec<PublicType>,
    /// Most instances alive or booting at once.
    pub max_instances: u32,
    /// Instances asked for and not yet stopped, by id.
    instances: BTreeMap<InstanceId, InstanceView>,
    next_id: u32,
    requests: Vec<InstanceRequest>,
    refusals: Vec<(JobId, String)>,
    /// Per worker: the public type it is an instance of.
    instance_of: BTreeMap<WorkerId, (InstanceId, usize)>,
    /// Per worker: the configured pacing (bytes/s per slot) and link
    /// (bytes/s), for estimates before anything was measured.
    profile: BTreeMap<WorkerId, WorkerProfile>,
    /// Measured: seconds per input byte of a data-local map at speed 1
    /// (its duration over its input, times its worker's speed).
    map_spb: Mean,
    /// Measured: seconds per input byte of a reduce (fetch, sort, reduce).
    reduce_spb: Mean,
    /// Measured: map output bytes per input byte.
    output_ratio: Mean,
}

/// What the owner knows of a worker's hardware.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkerProfile {
    /// Compute pacing per slot, bytes/s (None: not emulated).
    pub slot_rate: Option<f64>,
    /// NIC rate per direction, bytes/s (None: unlimited).
    pub nic: Option<f64>,
    /// Compute speed relative to a private slot (1 for private workers).
    pub speed: f64,
}

impl HybridView {
    /// Whether there is a public cloud to rent from.
    pub fn has_public(&self) -> bool {
        !self.types.is_empty() && self.max_instances > 0
    }

    pub fn set_types(&mut self, types: Vec<PublicType>, max_instances: u32) {
        self.types = types;
        self.max_instances = max_instances;
    }

    pub fn set_profile(&mut self, w: WorkerId, p: WorkerProfile) {
        self.profile.insert(w, p);
    }

    pub fn profile(&self, w: WorkerId) -> WorkerProfile {
        self.profile.get(&w).copied().unwrap_or(WorkerProfile {
            slot_rate: None,
            nic: None,
            speed: 1.0,
        })
    }

    /// The public type `w` is an instance of, if it is one.
    pub fn instance_type(&self, w: WorkerId) -> Option<usize> {
        self.instance_of.get(&w).map(|(_, t)| *t)
    }

    /// The instance `w` is, if it is one.
    pub fn instance_of(&self, w: WorkerId) -> Option<InstanceId> {
        self.instance_of.get(&w).map(|(i, _)| *i)
    }

    pub fn instances(&self) -> impl Iterator<Item = &InstanceView> {
        self.instances.values()
    }

    pub fn instance(&self, id: InstanceId) -> Option<&InstanceView> {
        self.instances.get(&id)
    }

    /// Instances asked for and not stopped (booting or alive).
    pub fn instance_count(&self) -> u32 {
        self.instances.len() as u32
    }

    // ---- the policy's side (through SchedContext) ----

    pub(crate) fn request(&mut self, now: Millis, ty: usize, for_job: JobId) -> Option<InstanceId> {
        if ty >= self.types.len() || self.instance_count() >= self.max_instances {
            return None;
        }
        self.next_id += 1;
        let id = InstanceId(self.next_id);
        self.instances.insert(
            id,
            InstanceView {
                id,
                ty,
                requested_at: now,
                for_job,
                worker: None,
            },
        );
        self.requests.push(InstanceRequest { id, ty, for_job });
        Some(id)
    }

    pub(crate) fn refuse(&mut self, job: JobId, why: String) {
        self.refusals.push((job, why));
    }

    // ---- the owner's side ----

    /// Instance requests made since the last call, in order.
    pub fn take_requests(&mut self) -> Vec<InstanceRequest> {
        std::mem::take(&mut self.requests)
    }

    /// Jobs refused since the last call, with the reason.
    pub fn take_refusals(&mut self) -> Vec<(JobId, String)> {
        std::mem::take(&mut self.refusals)
    }

    /// Instance `id` registered as worker `w`.
    pub fn instance_up(&mut self, id: InstanceId, w: WorkerId) {
        if let Some(i) = self.instances.get_mut(&id) {
            i.worker = Some(w);
            self.instance_of.insert(w, (id, i.ty));
        }
    }

    /// Instance `id` stopped (or could not be started).
    pub fn instance_gone(&mut self, id: InstanceId) {
        if let Some(i) = self.instances.remove(&id) {
            if let Some(w) = i.worker {
                self.instance_of.remove(&w);
            }
        }
    }

    /// A map of `len` input bytes took `ms` on `w`; `local`: it read its
    /// own disk; `output`: the bytes it wrote.
    pub fn note_map(&mut self, w: WorkerId, len: u64, ms: u64, local: bool, output: u64) {
        if len == 0 {
            return;
        }
        if local && self.instance_type(w).is_none() {
            let speed = self.profile(w).speed;
            self.map_spb.add(ms as f64 / 1000.0 / len as f64 * speed);
        }
        self.output_ratio.add(output as f64 / len as f64);
    }

    /// A reduce of `input` bytes took `ms`.
    pub fn note_reduce(&mut self, input: u64, ms: u64) {
        if input > 0 {
            self.reduce_spb.add(ms as f64 / 1000.0 / input as f64);
        }
    }

    /// Seconds per input byte of a map on a private slot at speed 1:
    /// measured, else the slowest configured pacing, else 100 MB/s.
    pub fn map_secs_per_byte(&self) -> f64 {
        self.map_spb.get().unwrap_or_else(|| self.prior_spb())
    }

    /// Seconds per input byte of a reduce: measured, else as a map.
    pub fn reduce_secs_per_byte(&self) -> f64 {
        self.reduce_spb
            .get()
            .unwrap_or_else(|| self.map_secs_per_byte())
    }

    /// Map output per input byte (MROSA's f).
    pub fn output_ratio(&self) -> f64 {
        self.output_ratio.get().unwrap_or(DEFAULT_OUTPUT_RATIO)
    }

    /// f as measured, None before the first map ended.
    pub fn measured_output_ratio(&self) -> Option<f64> {
        self.output_ratio.get()
    }

    fn prior_spb(&self) -> f64 {
        self.profile
            .iter()
            .filter(|(w, _)| !self.instance_of.contains_key(w))
            .filter_map(|(_, p)| p.slot_rate.map(|r| p.speed / r))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
            .unwrap_or(DEFAULT_SECS_PER_BYTE)
    }
}
