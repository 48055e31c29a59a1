//! `eas`: the efficiency-aware scheduler of "EAS" (IEICE Trans. 2013),
//! Algorithms 1 and 2, for map tasks:
//!
//! - a map machine's load is the input bytes of the map tasks placed on it
//!   and not yet finished (queued here, plus its running tasks);
//! - job selection (Algorithm 1): when a map machine has a free slot and
//!   nothing queued, every waiting job is tried: its maps are placed as
//!   Algorithm 2 would place them and the standard deviation of the
//!   map-machine loads is computed; the job with the least is selected (ties:
//!   the oldest) and all of its maps are placed at once;
//! - map placement (Algorithm 2): strict data locality, each map on the
//!   least-loaded live machine holding its input;
//! - each machine then runs its queue in order as its slots free up.
//!
//! `order` replaces Algorithm 1's selection by a [`JobOrder`]: the first
//! waiting job of that order with a map to place is selected, and placed by
//! Algorithm 2 as before (EAS's placement under another job order, an
//! ablation labelled `eas(fifo)` and so on).
//!
//! Reduces follow Algorithm 3 (pushed to the least-loaded reduce machine
//! when the job's maps are done): `sched::reduce`'s `least-loaded`, which
//! `cluster.reduce_placement = "policy"` gives `eas`. Running map bytes are
//! estimated as the machine's busy slots times the mean input of the tasks
//! it was given (the scheduler is not told when a map ends).

use crate::decision::{Pick, Rule, Why};
use crate::order::{job_order, JobOrder};
use crate::policy::Policy;
use crate::view::{ClusterView, Millis, SchedContext, Scheduler};
use base::{JobId, TaskRef, WorkerId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet, VecDeque};

/// `policy = "eas"`: EAS (IEICE 2013), load-balance-aware job selection; a
/// selected job's maps are all placed at once on their least-loaded
/// replica holder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EasParams {
    /// Select jobs in this order instead of by Algorithm 1 (absent: EAS's
    /// own selection, the paper's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<JobOrder>,
}

impl Policy for EasParams {
    const EXAMPLES: &'static [&'static str] = &["eas", "policy = \"eas\", order = \"fifo\""];

    fn name(&self) -> &'static str {
        "eas"
    }

    fn label(&self, _: bool) -> String {
        match self.order {
            None => "eas".into(),
            Some(o) => format!("eas({})", o.name()),
        }
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = Some(order);
        Ok(())
    }

    fn build(&self, _seed: u64) -> Box<dyn Scheduler> {
        Box::new(Eas::with_order(self.order))
    }
}

/// A map placed on a machine: the task, its input bytes, the machine.
type Placed = (TaskRef, u64, WorkerId);

#[derive(Default)]
struct Machine {
    queue: VecDeque<(TaskRef, u64)>,
    queued_bytes: u64,
    launched: u64,
    launched_bytes: u64,
}

#[derive(Default)]
pub struct Eas {
    machines: BTreeMap<WorkerId, Machine>,
    /// Pending maps already placed in some machine's queue. A job with a
    /// pending map not in here is waiting (new, or a map came back after a
    /// failed or lost attempt).
    queued: HashSet<TaskRef>,
    /// Job selection by this order instead of Algorithm 1.
    order: Option<JobOrder>,
}

impl Eas {
    pub fn new() -> Self {
        Self::default()
    }

    /// Selecting jobs in `order` (None: Algorithm 1).
    pub fn with_order(order: Option<JobOrder>) -> Self {
        Eas {
            order,
            ..Self::default()
        }
    }

    fn load(&self, view: &ClusterView, w: WorkerId) -> f64 {
        let Some(v) = view.worker(w) else { return 0.0 };
        let m = self.machines.get(&w);
        let queued = m.map_or(0, |m| m.queued_bytes) as f64;
        let mean = m
            .filter(|m| m.launched > 0)
            .map_or(0.0, |m| m.launched_bytes as f64 / m.launched as f64);
        queued + (v.slots - v.free.min(v.slots)) as f64 * mean
    }

    /// Algorithm 2 on top of `loads`: each unplaced pending map of `job` to
    /// its least-loaded live replica holder. Returns the placements.
    fn place(
        &self,
        view: &ClusterView,
        job: JobId,
        loads: &mut BTreeMap<WorkerId, f64>,
    ) -> Vec<Placed> {
        let Some(j) = view.job(job) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in j.pending().filter(|t| !self.queued.contains(&t.task)) {
            let best = t
                .replicas
                .iter()
                .filter(|r| loads.contains_key(r))
                .min_by(|a, b| loads[a].total_cmp(&loads[b]).then(a.cmp(b)));
            if let Some(&w) = best {
                *loads.get_mut(&w).expect("present") += t.len as f64;
                out.push((t.task, t.len, w));
            }
        }
        out
    }

    /// Algorithm 1: selects the waiting job whose placement leaves the map
    /// machines' loads most even, and queues its maps.
    fn select_job(&mut self, view: &ClusterView) -> bool {
        let base: BTreeMap<WorkerId, f64> = view
            .workers()
            .filter(|w| w.alive && w.runs_maps)
            .map(|w| (w.id, self.load(view, w.id)))
            .collect();
        let mut best: Option<(f64, JobId, Vec<Placed>)> = None;
        if let Some(order) = self.order {
            best = job_order(view, order).into_iter().find_map(|j| {
                let placed = self.place(view, j, &mut base.clone());
                (!placed.is_empty()).then_some((0.0, j, placed))
            });
        }
        for j in view
            .jobs()
            .filter(|j| self.order.is_none() && j.has_pending())
        {
            let mut loads = base.clone();
            let placed = self.place(view, j.id, &mut loads);
            if placed.is_empty() {
                continue;
            }
            let n = loads.len() as f64;
            let mean = loads.values().sum::<f64>() / n;
            let sd = (loads.values().map(|l| (l - mean).powi(2)).sum::<f64>() / n).sqrt();
            if best.as_ref().is_none_or(|b| sd < b.0) {
                best = Some((sd, j.id, placed));
            }
        }
        let Some((_, _, placed)) = best else {
            return false;
        };
        for (t, len, w) in placed {
            self.queued.insert(t);
            let m = self.machines.entry(w).or_default();
            m.queue.push_back((t, len));
            m.queued_bytes += len;
        }
        true
    }

    /// Drops queued tasks that are no longer pending (their job ended) and
    /// puts back the maps queued on machines that died.
    fn tidy(&mut self, view: &ClusterView) {
        let dead: Vec<WorkerId> = self
            .machines
            .keys()
            .copied()
            .filter(|w| !view.worker(*w).is_some_and(|v| v.alive))
            .collect();
        for w in dead {
            if let Some(m) = self.machines.remove(&w) {
                // Its queued maps wait to be placed again (their jobs become
                // selectable for them).
                for (t, _) in m.queue {
                    self.queued.remove(&t);
                }
            }
        }
        let queued = &mut self.queued;
        for m in self.machines.values_mut() {
            m.queue.retain(|(t, len)| {
                let keep = view
                    .job(t.job)
                    .is_some_and(|j| j.pending_task(t.index).is_some());
                if !keep {
                    m.queued_bytes -= len;
                    queued.remove(t);
                }
                keep
            });
        }
    }
}

impl Scheduler for Eas {
    fn name(&self) -> String {
        EasParams { order: self.order }.label(false)
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        self.tidy(ctx.view());
        // A launch runs where Algorithm 2 queued it, on a holder of its
        // input (data-local); an offer is declined when nothing is queued
        // here and no waiting job can be placed.
        ctx.fill_why(worker, |view| loop {
            let next = self
                .machines
                .get_mut(&worker)
                .and_then(|m| m.queue.pop_front());
            match next {
                Some((t, len)) => {
                    self.queued.remove(&t);
                    let m = self.machines.get_mut(&worker).expect("popped above");
                    m.queued_bytes -= len;
                    // Skip a task that left the queue or lost its replica here.
                    let launchable = view
                        .job(t.job)
                        .and_then(|j| j.pending_task(t.index))
                        .is_some_and(|p| p.replicas.contains(&worker));
                    if launchable {
                        m.launched += 1;
                        m.launched_bytes += len;
                        return Ok(Pick {
                            task: t,
                            source: worker,
                            why: Why::rule(Rule::DataLocal),
                        });
                    }
                }
                // Idle with nothing queued: select jobs until this machine
                // has work or no job is waiting.
                None if !self.select_job(view) => return Err(Why::rule(Rule::QueuedElsewhere)),
                None => {}
            }
        });
    }
}
