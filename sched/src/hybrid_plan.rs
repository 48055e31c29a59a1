//! What `mrosa` and `coshic` share: MROSA's execution-time estimates
//! (equations 2-5 of Mao et al.), its per-task public cost (6, 7), the
//! resources' estimated free times (the paper's Rft, per slot), each job's
//! plan (which task goes to which private worker or public instance), and
//! the launch of planned tasks when slots are offered.

use crate::decision::Rule;
use crate::hybrid::{HybridView, InstanceId};
use crate::view::{ClusterView, JobView, Millis, SchedContext};
use base::public::PublicType;
use base::{JobId, TaskRef, WorkerId};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Where a task was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Private(WorkerId),
    Public(InstanceId),
}

/// One job's plan.
#[derive(Clone, Debug, Default)]
pub struct JobPlan {
    /// Task index -> where it was planned. A pending task without an entry
    /// (a retry) runs privately.
    pub at: FxHashMap<u32, Target>,
    /// The job's place in the policy's order (higher first).
    pub priority: f64,
    /// Public tasks planned, and instances asked for.
    pub public_tasks: u32,
    pub instances: Vec<InstanceId>,
    /// Estimated cost of its public part.
    pub est_cost: f64,
}

impl JobPlan {
    fn target(&self, index: u32) -> Option<Target> {
        self.at.get(&index).copied()
    }
}

/// Estimated free time of every slot (ms, scheduler time): MROSA's Rft.
#[derive(Clone, Debug, Default)]
pub struct Book {
    pub private: BTreeMap<WorkerId, Vec<f64>>,
    pub public: BTreeMap<InstanceId, InstanceBook>,
}

/// An instance's slots and its link, which all its slots share: the
/// paper's equation 2 gives every map the whole bandwidth, but eight maps
/// reading at once over one link each get an eighth of it. The link is
/// booked as one resource: a map's transfer starts when both its slot and
/// the link are free, and its compute follows (equation 4's sum).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstanceBook {
    pub slots: Vec<f64>,
    pub link: f64,
}

impl InstanceBook {
    /// A new instance of `slots` slots ready at `ready` (ms).
    pub fn ready_at(slots: u32, ready: f64) -> Self {
        InstanceBook {
            slots: vec![ready; slots as usize],
            link: ready,
        }
    }

    /// Where a map of `transfer` + `compute` ms would run here: (slot,
    /// transfer end, finish).
    pub fn fit(&self, transfer: f64, compute: f64) -> (usize, f64, f64) {
        let (s, free) = self
            .slots
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, f64::INFINITY));
        let moved = free.max(self.link) + transfer;
        (s, moved, moved + compute)
    }

    /// Books what [`InstanceBook::fit`] found.
    pub fn take(&mut self, slot: usize, moved: f64, finish: f64) {
        self.link = moved;
        self.slots[slot] = finish;
    }
}

impl Book {
    /// Brings the book in line with the view: live private map workers and
    /// instances asked for; no slot free before `now` (an instance's not
    /// before its boot is done).
    pub fn sync(&mut self, now: Millis, view: &ClusterView) {
        let now = now as f64;
        let h = view.hybrid();
        self.private.retain(|w, _| is_private_map_worker(view, *w));
        for w in view.workers() {
            if w.alive && w.runs_maps && h.instance_type(w.id).is_none() {
                let slots = self.private.entry(w.id).or_default();
                slots.resize(w.slots as usize, now);
            }
        }
        for s in self.private.values_mut().flatten() {
            *s = s.max(now);
        }
        self.public.retain(|i, _| h.instance(*i).is_some());
        for i in h.instances() {
            let ty = &h.types[i.ty];
            let ready = (i.requested_at as f64 + ty.start_s * 1000.0).max(now);
            let b = self
                .public
                .entry(i.id)
                .or_insert_with(|| InstanceBook::ready_at(ty.slots, ready));
            for s in b.slots.iter_mut() {
                *s = s.max(ready);
            }
            b.link = b.link.max(ready);
        }
    }

    /// The private slot where a map of `task` would finish first: (worker,
    /// slot, finish ms).
    pub fn best_private(
        &self,
        view: &ClusterView,
        len: u64,
        replicas: &[WorkerId],
    ) -> Option<(WorkerId, usize, f64)> {
        let mut best: Option<(WorkerId, usize, f64)> = None;
        let spb = view.hybrid().map_secs_per_byte();
        for (w, slots) in &self.private {
            let run = map_ms_private_at(view.hybrid(), spb, *w, len, replicas.contains(w));
            for (s, free) in slots.iter().enumerate() {
                let fit = free + run;
                if best.is_none_or(|b| fit < b.2) {
                    best = Some((*w, s, fit));
                }
            }
        }
        best
    }
}

fn is_private_map_worker(view: &ClusterView, w: WorkerId) -> bool {
    view.worker(w).is_some_and(|v| v.alive && v.runs_maps)
        && view.hybrid().instance_type(w).is_none()
}

/// Equation 4 on a private worker, ms: compute (input x measured seconds
/// per byte, at the worker's speed) plus, when it holds no replica, the
/// transfer over its link.
pub fn map_ms_private(h: &HybridView, w: WorkerId, len: u64, local: bool) -> f64 {
    map_ms_private_at(h, h.map_secs_per_byte(), w, len, local)
}

/// [`map_ms_private`] at `spb` seconds per byte (looked up once per plan).
fn map_ms_private_at(h: &HybridView, spb: f64, w: WorkerId, len: u64, local: bool) -> f64 {
    let p = h.profile(w);
    let compute = len as f64 * spb / p.speed.max(1e-9);
    let transfer = if local {
        0.0
    } else {
        p.nic.map_or(0.0, |b| len as f64 / b)
    };
    (compute + transfer) * 1000.0
}

/// Equation 4 on an instance of `ty`, ms: compute at its speed plus the
/// transfer of the whole input over its link (it holds no replica).
pub fn map_ms_public(h: &HybridView, ty: &PublicType, len: u64) -> f64 {
    let (transfer, compute) = map_parts_public(h, ty, len);
    transfer + compute
}

/// Equation 4's two parts on an instance of `ty`, ms: (transfer over its
/// whole link, equation 2; compute at its speed).
pub fn map_parts_public(h: &HybridView, ty: &PublicType, len: u64) -> (f64, f64) {
    let compute = len as f64 * h.map_secs_per_byte() / ty.speed;
    let transfer = len as f64 / ty.nic_bytes_per_sec();
    (transfer * 1000.0, compute * 1000.0)
}

/// Equation 5, ms: a reduce of `job` on a private slot (measured seconds
/// per input byte, which include the fetch and the sort, t_s). 0 until a
/// map has ended: before that nothing tells how much a map leaves (a
/// wordcount's combiner leaves a few percent, a sort all of it), and the
/// paper's check of each task against D_i reserves nothing either.
pub fn reduce_ms(h: &HybridView, job: &JobView) -> f64 {
    let Some(f) = h.measured_output_ratio() else {
        return 0.0;
    };
    if job.qos.reduces == 0 {
        return 0.0;
    }
    let input = job.qos.input_bytes as f64 * f / job.qos.reduces as f64;
    input * h.reduce_secs_per_byte() * 1000.0
}

/// Equation 6: a map of `len` bytes running `ms` on an instance of `ty`:
/// compute seconds at its price, and its input stored, received and (as
/// the paper writes it, mD x Cout) sent.
pub fn map_cost(ty: &PublicType, len: u64, ms: f64) -> f64 {
    ty.price_per_s * ms / 1000.0 + len as f64 * ty.data_price_per_byte()
}

/// Equation 8: (map input + reduce input) x (rho / C + (1 - rho) / D),
/// D in seconds from submission; an absent budget or deadline adds 0.
pub fn priority(h: &HybridView, job: &JobView, rho: f64) -> f64 {
    let size = job.qos.input_bytes as f64 * (1.0 + h.output_ratio());
    let c = job.qos.budget.filter(|b| *b > 0.0).map_or(0.0, |b| rho / b);
    let d = job
        .qos
        .deadline
        .map(|d| d.saturating_sub(job.submitted_at).max(1) as f64 / 1000.0)
        .map_or(0.0, |d| (1.0 - rho) / d);
    size * (c + d)
}

/// The job's map deadline: its deadline less the estimated reduce time
/// (a map that ends at the deadline leaves its job late). None: no deadline.
pub fn map_deadline(h: &HybridView, job: &JobView) -> Option<f64> {
    job.qos.deadline.map(|d| d as f64 - reduce_ms(h, job))
}

/// Plans, by job, and the jobs refused.
#[derive(Clone, Debug, Default)]
pub struct Plans {
    pub jobs: FxHashMap<JobId, JobPlan>,
    pub refused: rustc_hash::FxHashSet<JobId>,
}

impl Plans {
    /// The view's jobs neither planned nor refused, with their submission
    /// rank, once ended jobs are forgotten and `book` is brought up to
    /// date. Called before every offer: when no job arrived it returns at
    /// once, having done nothing.
    pub fn fresh(
        &mut self,
        book: &mut Book,
        now: Millis,
        view: &ClusterView,
    ) -> Vec<(usize, JobView)> {
        let new =
            |p: &Plans, j: &JobView| !p.jobs.contains_key(&j.id) && !p.refused.contains(&j.id);
        if !view.jobs().any(|j| new(self, j)) {
            return Vec::new();
        }
        self.prune(view);
        self.refused.retain(|j| view.job(*j).is_some());
        book.sync(now, view);
        view.jobs()
            .enumerate()
            .filter(|(_, j)| new(self, j))
            .map(|(i, j)| (i, j.clone()))
            .collect()
    }

    /// Forgets the plans of jobs the view no longer has.
    pub fn prune(&mut self, view: &ClusterView) {
        self.jobs.retain(|j, _| view.job(*j).is_some());
    }

    /// Jobs of the view with a plan, by priority (higher first), then
    /// submission.
    pub fn order(&self, view: &ClusterView) -> Vec<JobId> {
        let mut jobs: Vec<(f64, usize, JobId)> = view
            .jobs()
            .enumerate()
            .filter_map(|(i, j)| self.jobs.get(&j.id).map(|p| (p.priority, i, j.id)))
            .collect();
        jobs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        jobs.into_iter().map(|(_, _, j)| j).collect()
    }

    /// Fills `worker`'s free slots with planned tasks, jobs in `order`.
    /// A private worker takes, per job, a task planned for it, else a
    /// private task with a replica on it, else any private task (read
    /// remotely), else a public task whose instance is gone, or (`steal`)
    /// has not registered yet. An instance takes its own public tasks (and those
    /// of an instance that is gone).
    pub fn fill(&self, ctx: &mut SchedContext<'_>, worker: WorkerId, order: &[JobId], steal: bool) {
        let instance = ctx.view().hybrid().instance_of(worker);
        ctx.fill_by(worker, Rule::Plan, |view| {
            for j in order {
                let (Some(job), Some(plan)) = (view.job(*j), self.jobs.get(j)) else {
                    continue;
                };
                let pick = match instance {
                    Some(me) => pick_public(view, job, plan, me),
                    None => pick_private(view, job, plan, worker, steal),
                };
                if pick.is_some() {
                    return pick;
                }
            }
            None
        });
    }
}

fn source_for(t: &crate::view::PendingTask) -> Option<WorkerId> {
    if t.replicas.is_empty() {
        return None;
    }
    Some(t.replicas[t.task.index as usize % t.replicas.len()])
}

/// An instance takes the maps planned for it, and those planned for an
/// instance that is gone (given up, lost); not another live instance's:
/// the plan gave each instance what its one link moves in time, and the
/// first to register would otherwise take all it has slots for.
fn pick_public(
    view: &ClusterView,
    job: &JobView,
    plan: &JobPlan,
    me: InstanceId,
) -> Option<(TaskRef, WorkerId)> {
    let h = view.hybrid();
    let t = job.pending().find(|t| match plan.target(t.task.index) {
        Some(Target::Public(i)) => i == me || h.instance(i).is_none(),
        _ => false,
    })?;
    Some((t.task, source_for(t)?))
}

fn pick_private(
    view: &ClusterView,
    job: &JobView,
    plan: &JobPlan,
    worker: WorkerId,
    steal: bool,
) -> Option<(TaskRef, WorkerId)> {
    let private = |i: u32| !matches!(plan.target(i), Some(Target::Public(_)));
    let local = |t: &crate::view::PendingTask| t.replicas.contains(&worker);
    let from = |t: &crate::view::PendingTask| {
        if local(t) {
            Some((t.task, worker))
        } else {
            Some((t.task, source_for(t)?))
        }
    };
    if let Some(t) = job
        .pending()
        .find(|t| plan.target(t.task.index) == Some(Target::Private(worker)))
    {
        return from(t);
    }
    if job.local_count(worker) > 0 {
        if let Some(t) = job.pending().find(|t| local(t) && private(t.task.index)) {
            return from(t);
        }
    }
    if let Some(t) = job.pending().find(|t| private(t.task.index)) {
        return from(t);
    }
    // A task planned for an instance that is gone (lost, given up, or
    // stopped) runs here: the plan for it is void, and nothing else would
    // take it once no instance is left. With `steal`, also one whose
    // instance has not registered yet.
    let h = view.hybrid();
    if let Some(t) = job.pending().find(|t| match plan.target(t.task.index) {
        Some(Target::Public(i)) => match h.instance(i) {
            None => true,
            Some(i) => steal && i.worker.is_none(),
        },
        _ => false,
    }) {
        return from(t);
    }
    None
}
