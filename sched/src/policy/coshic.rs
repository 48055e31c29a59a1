//! COSHIC, MROSA's baseline for its public-cloud experiments: Van den
//! Bossche, Vanmechelen and Broeckhove, "Cost-Optimal Scheduling in Hybrid
//! IaaS Clouds for Deadline Constrained Workloads" (IEEE CLOUD 2010),
//! implemented from its public description. Its model: applications with a
//! deadline, made of tasks, that are not migrated between providers once
//! placed; the private data center is used as much as possible; what must
//! go out goes to the public offer that minimises cost while meeting the
//! deadline, chosen by a binary integer program.
//!
//! Here, when a job arrives (`plan`, earliest deadline first):
//! - if its maps, added to the private slots' estimated free times (the
//!   same execution-time estimates as MROSA's), end before its deadline
//!   less its estimated reduce time, the whole job runs privately;
//! - else the whole job's maps go public, to `n` new instances of one type
//!   (an application is not split between providers): over every type and
//!   every n allowed by `max_instances`, the cheapest (n x price x the
//!   instances' life, start-up to the last map's end, plus the input's
//!   storage and transfer) whose last map ends before the deadline (the
//!   maps of an instance share its slots and its one link, as MROSA's
//!   estimates here). That search is exhaustive, so it finds what the
//!   paper's integer program would for one job at a time. If no choice meets the deadline the job is
//!   refused; if the cheapest exceeds the budget the job runs privately.
//!
//! Choices where the description leaves one: the paper bills by the hour,
//! the testbed (as MROSA's Table IV) by the second; instances are not
//! shared between jobs; reduces run in the private cluster, as for MROSA;
//! private maps launch like Hadoop's, earliest deadline first, a data-local
//! map first (COSHIC places no task within the private cluster).

use crate::hybrid_plan::{
    map_deadline, map_parts_public, Book, InstanceBook, JobPlan, Plans, Target,
};
use crate::view::{ClusterView, JobView, Millis, PlanContext, SchedContext, Scheduler};
use base::WorkerId;
use serde::{Deserialize, Serialize};

/// `policy = "coshic"`: COSHIC (Van den Bossche et al., IEEE CLOUD 2010) as
/// MROSA's paper uses it: a job runs wholly in the private cluster when it
/// can meet its deadline there, else wholly on the cheapest set of
/// instances of one type that meets it; earliest deadline first. No
/// parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CoshicParams {}

impl crate::policy::Policy for CoshicParams {
    const EXAMPLES: &'static [&'static str] = &["coshic"];

    fn name(&self) -> &'static str {
        "coshic"
    }

    fn label(&self, _: bool) -> String {
        "coshic".into()
    }

    fn build(&self, _seed: u64) -> Box<dyn Scheduler> {
        Box::new(Coshic::new())
    }
}

#[derive(Default)]
pub struct Coshic {
    book: Book,
    plans: Plans,
}

enum Decision {
    Private(Book),
    Public { ty: usize, n: u32, cost: f64 },
    Refuse(String),
}

impl Coshic {
    pub fn new() -> Self {
        Self::default()
    }

    fn decide(&self, now: Millis, job: &JobView, view: &ClusterView) -> Decision {
        let h = view.hybrid();
        let deadline = map_deadline(h, job);
        let mut book = self.book.clone();
        let mut finish = now as f64;
        for t in job.pending() {
            if let Some((w, s, fit)) = book.best_private(view, t.len, &t.replicas) {
                book.private.get_mut(&w).expect("best_private's worker")[s] = fit;
                finish = finish.max(fit);
            }
        }
        let Some(d) = deadline else {
            return Decision::Private(book);
        };
        if finish <= d || !h.has_public() {
            return Decision::Private(book);
        }
        let maps = job.pending_len() as u32;
        let len = job.pending().map(|t| t.len).max().unwrap_or(0);
        let bytes: u64 = job.pending().map(|t| t.len).sum();
        let cap = h.max_instances.saturating_sub(h.instance_count());
        let mut best: Option<(usize, u32, f64)> = None;
        for (i, ty) in h.types.iter().enumerate() {
            let (tr, co) = map_parts_public(h, ty, len);
            for n in 1..=cap.min(maps) {
                // Each instance runs its share through its slots and its
                // one link (see `InstanceBook`).
                let mut b = InstanceBook::ready_at(ty.slots, now as f64 + ty.start_s * 1000.0);
                let mut end = now as f64;
                for _ in 0..maps.div_ceil(n) {
                    let (s, moved, fit) = b.fit(tr, co);
                    b.take(s, moved, fit);
                    end = end.max(fit);
                }
                if end > d {
                    continue;
                }
                let life_s = (end - now as f64) / 1000.0;
                let cost =
                    n as f64 * ty.price_per_s * life_s + bytes as f64 * ty.data_price_per_byte();
                if best.is_none_or(|b| cost < b.2) {
                    best = Some((i, n, cost));
                }
            }
        }
        match best {
            None => Decision::Refuse(format!(
                "coshic: the job cannot meet its deadline in the private cluster (its maps would \
                 end {:.1} s after it) nor on any set of at most {cap} instances of one type",
                (finish - d) / 1000.0
            )),
            Some((_, _, cost)) if job.qos.budget.is_some_and(|b| cost > b) => {
                Decision::Private(book)
            }
            Some((ty, n, cost)) => Decision::Public { ty, n, cost },
        }
    }

    fn plan_job(&mut self, now: Millis, job: &JobView, ctx: &mut PlanContext<'_>) {
        let mut plan = JobPlan {
            priority: job.qos.deadline.map_or(f64::MIN, |d| -(d as f64)),
            ..JobPlan::default()
        };
        match self.decide(now, job, ctx.view()) {
            Decision::Private(book) => self.book = book,
            Decision::Refuse(why) => {
                self.plans.refused.insert(job.id);
                ctx.refuse(job.id, why);
                return;
            }
            Decision::Public { ty, n, cost } => {
                let ids: Vec<_> = (0..n)
                    .filter_map(|_| ctx.request_instance(ty, job.id))
                    .collect();
                if !ids.is_empty() {
                    for (k, t) in job.pending().enumerate() {
                        plan.at
                            .insert(t.task.index, Target::Public(ids[k % ids.len()]));
                        plan.public_tasks += 1;
                    }
                    plan.est_cost = cost;
                }
                plan.instances = ids;
            }
        }
        self.plans.jobs.insert(job.id, plan);
    }
}

impl Scheduler for Coshic {
    fn name(&self) -> String {
        "coshic".into()
    }

    fn plan(&mut self, now: Millis, ctx: &mut PlanContext<'_>) {
        let mut fresh = self.plans.fresh(&mut self.book, now, ctx.view());
        // Earliest deadline first.
        fresh.sort_by_key(|(i, j)| (j.qos.deadline.unwrap_or(Millis::MAX), *i));
        for (_, job) in fresh {
            self.plan_job(now, &job, ctx);
        }
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let order = self.plans.order(ctx.view());
        self.plans.fill(ctx, worker, &order, false);
    }
}
