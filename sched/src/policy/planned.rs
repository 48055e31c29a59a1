//! `dyndl-off` and `bar` as live policies of the master: the offline
//! planners of the scheduling lab ([`crate::offline`]) applied to the cluster
//! as it is when tasks arrive.
//!
//! When an offer finds pending map tasks that no plan covers (a new job, or
//! tasks put back after a failure or a lost worker), they are planned at
//! once: every live map worker is a server whose cores are its slots; a
//! free slot's initial load is 0, a busy slot's is its estimated remaining
//! time, in units of one task: a background process's known remaining time,
//! or for a task the mean length of the map tasks finished so far (1 s
//! before any finished) minus how long it has run, at least a tenth of a
//! task. The planner (DynDLOff or BAR) assigns every task a slot; each
//! worker then gets its planned tasks, in plan order, as its slots free, data-
//! local ones from itself and remote ones from a random replica. Tasks
//! planned on a worker that died are planned again. Jobs are planned in
//! FIFO order: a later job's tasks queue behind the earlier plans.
//!
//! A plan is fixed once made unless `replan` is set: then an offer from a
//! worker with a free slot and nothing planned, while other workers still
//! have tasks queued, shows the plan has drifted from the cluster (slots
//! freed earlier or later than estimated); the plan is dropped and every
//! unlaunched task is planned again from the slots as they are now, at most
//! once every half task length.

use crate::decision::Rule;
use crate::model::{Cost, Instance};
use crate::offline::Offline;
use crate::policy::{fmt_num, nonneg, Policy};
use crate::view::{ClusterView, Millis, PendingTask, SchedContext, Scheduler, WorkerView};
use base::{TaskRef, WorkerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};

/// `policy = "dyndl-off"`: DynDLOff as a live policy: each new batch of
/// pending tasks is planned at once from every slot's estimated free time
/// (heartbeats report how long each busy slot has been busy; the mean
/// finished map task gives the expected length), then launched slot by
/// slot as planned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DyndlOffParams {
    /// θ of g(n) = 1 + θ·min(n, slots), in units of one local task.
    #[serde(default = "default_theta")]
    pub theta: f64,
    /// Plan again, from the slots as they are then, whenever a free slot
    /// has nothing planned while other workers still have tasks queued
    /// (at most every half task length). Off: a plan is fixed when made.
    #[serde(default)]
    pub replan: bool,
}

fn default_theta() -> f64 {
    1.0
}

impl Policy for DyndlOffParams {
    const EXAMPLES: &'static [&'static str] = &[
        "dyndl-off",
        "policy = \"dyndl-off\", theta = 0.5, replan = true",
    ];

    fn name(&self) -> &'static str {
        "dyndl-off"
    }

    fn label(&self, cost_from_instance: bool) -> String {
        format!(
            "dyndl-off(theta={}{})",
            if cost_from_instance {
                "instance".to_owned()
            } else {
                fmt_num(self.theta)
            },
            if self.replan { ",replan" } else { "" }
        )
    }

    fn validate(&self) -> Result<(), String> {
        nonneg("dyndl-off", "theta", self.theta)
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Planned::new(
            Offline::DyndlOff,
            Cost::Dyndl { theta: self.theta },
            self.replan,
            seed,
        ))
    }
}

/// `policy = "bar"`: BAR as a live policy, planned like `dyndl-off`; remote
/// cost 1 + q·r in units of one local task, r = all remote tasks of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BarParams {
    /// q of the remote cost 1 + q·r.
    #[serde(default = "default_q")]
    pub q: f64,
    /// As for `dyndl-off`.
    #[serde(default)]
    pub replan: bool,
}

fn default_q() -> f64 {
    0.1
}

impl Policy for BarParams {
    const EXAMPLES: &'static [&'static str] = &["bar", "policy = \"bar\", q = 0.5, replan = true"];

    fn name(&self) -> &'static str {
        "bar"
    }

    fn label(&self, cost_from_instance: bool) -> String {
        format!(
            "bar(q={}{})",
            if cost_from_instance {
                "instance".to_owned()
            } else {
                fmt_num(self.q)
            },
            if self.replan { ",replan" } else { "" }
        )
    }

    fn validate(&self) -> Result<(), String> {
        nonneg("bar", "q", self.q)
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Planned::new(
            Offline::Bar,
            Cost::Bar {
                c_loc: 1.0,
                q: self.q,
            },
            self.replan,
            seed,
        ))
    }
}

/// Task length assumed before any map task has finished.
const DEFAULT_TASK_MS: f64 = 1000.0;

pub struct Planned {
    algo: Offline,
    cost: Cost,
    /// Per worker, the tasks planned there (task, replica to read).
    plan: HashMap<WorkerId, VecDeque<(TaskRef, WorkerId)>>,
    planned: HashSet<TaskRef>,
    replan: bool,
    last_replan: Option<Millis>,
    rng: ChaCha8Rng,
}

impl Planned {
    pub fn new(algo: Offline, cost: Cost, replan: bool, seed: u64) -> Self {
        Planned {
            algo,
            cost,
            plan: HashMap::new(),
            planned: HashSet::new(),
            replan,
            last_replan: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// With `replan`: when `worker` has a free slot and nothing planned
    /// while other workers still have tasks queued, the plan is stale;
    /// drop it (at most every half task length) so every unlaunched task
    /// is planned again from the slots as they are now.
    fn drop_stale_plan(&mut self, now: Millis, worker: WorkerId, view: &ClusterView) {
        if !self.replan
            || self.planned.is_empty()
            || view.free_slots(worker) == 0
            || self.plan.get(&worker).is_some_and(|q| !q.is_empty())
        {
            return;
        }
        let half = (view.task_ms().unwrap_or(DEFAULT_TASK_MS) / 2.0) as Millis;
        if self.last_replan.is_some_and(|t| now < t + half) {
            return;
        }
        self.last_replan = Some(now);
        self.plan.clear();
        self.planned.clear();
    }

    /// Plans every pending task no plan covers.
    fn plan_new(&mut self, now: Millis, view: &ClusterView) {
        // Forget plans on workers that are gone.
        let dead: Vec<WorkerId> = self
            .plan
            .keys()
            .copied()
            .filter(|w| !view.worker(*w).is_some_and(|v| v.alive && v.runs_maps))
            .collect();
        for w in dead {
            for (t, _) in self.plan.remove(&w).unwrap_or_default() {
                self.planned.remove(&t);
            }
        }
        let tasks: Vec<&PendingTask> = view
            .jobs()
            .flat_map(|j| j.pending())
            .filter(|t| !self.planned.contains(&t.task) && !t.replicas.is_empty())
            .collect();
        if tasks.is_empty() {
            return;
        }
        let workers: Vec<&WorkerView> = view
            .workers()
            .filter(|w| w.alive && w.runs_maps && w.slots > 0)
            .collect();
        if workers.is_empty() {
            return;
        }
        let index: HashMap<WorkerId, u32> = workers
            .iter()
            .enumerate()
            .map(|(i, w)| (w.id, i as u32))
            .collect();
        let unit = view.task_ms().unwrap_or(DEFAULT_TASK_MS).max(1.0);
        // Tasks already planned on a worker keep its slots busy too.
        let queued = |w: WorkerId| self.plan.get(&w).map_or(0, VecDeque::len) as f64;
        let cores: Vec<Vec<f64>> = workers
            .iter()
            .map(|w| {
                let since = now.saturating_sub(w.busy_at) as f64;
                let mut loads: Vec<f64> = w
                    .busy
                    .iter()
                    .map(|b| {
                        let left = match b.remaining_ms {
                            Some(r) => r as f64 - since,
                            None => unit - b.elapsed_ms as f64 - since,
                        };
                        (left / unit).max(0.1)
                    })
                    .collect();
                loads.truncate(w.slots as usize);
                while loads.len() < w.slots as usize {
                    loads.push(0.0);
                }
                // Spread the already planned tasks over the slots.
                let extra = queued(w.id) / w.slots as f64;
                loads.iter().map(|l| l + extra).collect()
            })
            .collect();
        let replicas: Vec<Vec<u32>> = tasks
            .iter()
            .map(|t| {
                let r: Vec<u32> = t
                    .replicas
                    .iter()
                    .filter_map(|w| index.get(w).copied())
                    .collect();
                // A task whose replicas are all on non-map workers still
                // needs a (remote) slot: pretend its block is on server 0.
                if r.is_empty() {
                    vec![0]
                } else {
                    r
                }
            })
            .collect();
        let inst = Instance {
            cores,
            replicas,
            cost: self.cost,
            racks: Vec::new(),
        };
        let flat = inst.flat();
        let assignment = self.algo.run(&inst);
        for (i, t) in tasks.iter().enumerate() {
            let server = flat.server[assignment[i] as usize] as usize;
            let w = workers[server].id;
            let source = if t.replicas.contains(&w) {
                w
            } else {
                t.replicas[self.rng.gen_range(0..t.replicas.len())]
            };
            self.plan.entry(w).or_default().push_back((t.task, source));
            self.planned.insert(t.task);
        }
    }
}

impl Scheduler for Planned {
    fn name(&self) -> String {
        let replan = self.replan;
        match (self.algo, self.cost) {
            (Offline::Bar, Cost::Bar { q, .. }) => BarParams { q, replan }.label(false),
            (_, Cost::Dyndl { theta }) => DyndlOffParams { theta, replan }.label(false),
            _ => self.algo.name().into(),
        }
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        self.drop_stale_plan(now, worker, ctx.view());
        self.plan_new(now, ctx.view());
        let (plan, planned) = (&mut self.plan, &mut self.planned);
        ctx.fill_by(worker, Rule::Plan, |view| loop {
            let (task, source) = plan.get_mut(&worker).and_then(VecDeque::pop_front)?;
            planned.remove(&task);
            // A task launched elsewhere is skipped; one whose replica went
            // away is planned again next time.
            let launchable = view
                .job(task.job)
                .and_then(|j| j.pending_task(task.index))
                .is_some_and(|t| t.replicas.contains(&source));
            if launchable {
                return Some((task, source));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::offer;
    use crate::view::SlotBusy;
    use base::JobId;

    fn view() -> ClusterView {
        let mut v = ClusterView::new();
        for w in 0..3 {
            v.upsert_worker(WorkerId(w), 1);
            v.set_free(WorkerId(w), 0);
        }
        v
    }

    /// Worker 0's one slot, as reported at `now`, frees in `remaining_ms`.
    fn busy_for(v: &mut ClusterView, now: Millis, remaining_ms: Millis) {
        v.set_busy(
            WorkerId(0),
            now,
            vec![SlotBusy {
                elapsed_ms: 0,
                remaining_ms: Some(remaining_ms),
            }],
        );
    }

    fn add_job(v: &mut ClusterView, tasks: u32, on: u32) {
        let job = JobId(1);
        v.add_job(
            job,
            0,
            "default",
            (0..tasks)
                .map(|i| PendingTask {
                    task: TaskRef { job, index: i },
                    len: 1,
                    replicas: vec![WorkerId(on)],
                })
                .collect(),
        );
    }

    /// Worker 0 holds both blocks but is busy for 10 tasks' time; workers 1
    /// and 2 are free. DynDLOff moves one task to a free worker (remote) and
    /// keeps the other for worker 0 (its Phase II never makes every task
    /// remote): the free workers launch exactly one, read from worker 0.
    #[test]
    fn plans_around_a_long_busy_slot() {
        let mut v = view();
        v.note_task_ms(1000);
        busy_for(&mut v, 0, 10_000);
        v.set_free(WorkerId(1), 1);
        v.set_free(WorkerId(2), 1);
        add_job(&mut v, 2, 0);
        let mut s = Planned::new(Offline::DyndlOff, Cost::Dyndl { theta: 1.0 }, false, 1);
        let mut a = offer(&mut s, 0, WorkerId(1), &mut v);
        a.extend(offer(&mut s, 0, WorkerId(2), &mut v));
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(a[0].source, WorkerId(0));
        assert!(!a[0].is_local());
        // The other waits for worker 0.
        v.set_free(WorkerId(0), 1);
        let b = offer(&mut s, 10_000, WorkerId(0), &mut v);
        assert!(b.len() == 1 && b[0].is_local(), "{b:?}");
    }

    /// When the replica holder frees soon, the plan waits for it: both tasks
    /// stay data-local on worker 0.
    #[test]
    fn waits_for_a_replica_holder_that_frees_soon() {
        let mut v = view();
        v.note_task_ms(1000);
        v.set_busy(
            WorkerId(0),
            0,
            vec![SlotBusy {
                elapsed_ms: 900,
                remaining_ms: None,
            }],
        );
        v.set_free(WorkerId(1), 1);
        add_job(&mut v, 2, 0);
        // θ = 4: a remote task costs 5 local ones.
        let mut s = Planned::new(Offline::DyndlOff, Cost::Dyndl { theta: 4.0 }, false, 1);
        assert!(offer(&mut s, 0, WorkerId(1), &mut v).is_empty());
        v.set_free(WorkerId(0), 1);
        let a = offer(&mut s, 100, WorkerId(0), &mut v);
        assert!(a.len() == 1 && a[0].is_local());
        v.task_ended(JobId(1), WorkerId(0), false);
        let b = offer(&mut s, 1100, WorkerId(0), &mut v);
        assert!(b.len() == 1 && b[0].is_local());
    }

    /// Worker 0 holds both blocks and reports it frees in 0.5 s, so with
    /// θ = 4 both tasks are planned there. Then its slot turns out to stay
    /// busy for 20 s more: a fixed plan leaves free worker 1 idle; with
    /// `replan` its offer finds the plan stale and it takes a task remotely.
    #[test]
    fn a_stale_plan_is_redone_only_with_replan() {
        for replan in [false, true] {
            let mut v = view();
            v.note_task_ms(1000);
            busy_for(&mut v, 0, 500);
            v.set_free(WorkerId(1), 1);
            add_job(&mut v, 2, 0);
            let mut s = Planned::new(Offline::DyndlOff, Cost::Dyndl { theta: 4.0 }, replan, 1);
            assert!(offer(&mut s, 0, WorkerId(1), &mut v).is_empty());
            busy_for(&mut v, 1000, 20_000);
            let a = offer(&mut s, 1000, WorkerId(1), &mut v);
            if replan {
                assert!(a.len() == 1 && !a[0].is_local(), "{a:?}");
            } else {
                assert!(a.is_empty(), "{a:?}");
            }
        }
    }

    /// Tasks planned on a worker that is lost are planned again elsewhere.
    #[test]
    fn replans_after_a_lost_worker() {
        let mut v = view();
        v.set_free(WorkerId(0), 1);
        let job = JobId(1);
        v.add_job(
            job,
            0,
            "default",
            vec![PendingTask {
                task: TaskRef { job, index: 0 },
                len: 1,
                replicas: vec![WorkerId(0), WorkerId(1)],
            }],
        );
        let mut s = Planned::new(Offline::Bar, Cost::Bar { c_loc: 1.0, q: 0.1 }, false, 1);
        // Offered to worker 2 (no free slot counts): plans on worker 0.
        v.set_free(WorkerId(2), 1);
        assert!(offer(&mut s, 0, WorkerId(2), &mut v).is_empty());
        v.lose_worker(WorkerId(0));
        v.set_free(WorkerId(1), 1);
        let a = offer(&mut s, 10, WorkerId(1), &mut v);
        assert!(a.len() == 1 && a[0].is_local(), "{a:?}");
    }
}
