//! Reduce placement: which worker's free slot a waiting reduce takes.
//!
//! The owner (the master) announces a job's reduces in the [`ClusterView`]
//! when its maps are done ([`ClusterView::add_reduces`]); at every offer of
//! a worker, before any map, [`offer_reduces`] asks the [`ReducePlacer`]
//! which waiting reduces start there. Like a [`crate::Scheduler`], a placer
//! is a deterministic state machine given the time and the view; its
//! launches go through [`SchedContext::launch_reduce`], which checks them.
//!
//! The placements are [`ReducePlacement`]'s (see its docs): `first-free`,
//! `spread` (Hadoop 1.x), `least-loaded` (EAS's Algorithm 3) and
//! `most-output` (Spark's reduce locality).

use crate::policy::SchedulerConfig;
use crate::view::{ClusterView, Millis, SchedContext};
use base::{JobId, TaskRef, WorkerId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::str::FromStr;

pub mod targets;

/// Where a job's reduces run once its maps are done. Reduces have no input
/// locality of their own (every reduce fetches from every map), so this
/// decides how the shuffle loads the workers' receive links and slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReducePlacement {
    /// The policy's own: `least-loaded` for EAS (its Algorithm 3),
    /// `spread` for every other policy.
    #[default]
    Policy,
    /// Every free slot of the worker that asks takes a waiting reduce,
    /// oldest job first (the testbed before reduce placement was a policy:
    /// one worker may take all of a job's reduces).
    FirstFree,
    /// At most one new reduce per worker per heartbeat, oldest job first,
    /// as Hadoop 1.x's JobQueueTaskScheduler and the Fair Scheduler assign
    /// them; and a worker that runs more reduces than another reduce-capable
    /// worker takes none for 3 s (out-of-band heartbeats would otherwise
    /// hand one worker every reduce): a job's reduces spread over the
    /// reduce-capable workers.
    Spread,
    /// EAS's Algorithm 3: when a job's maps are done, each of its reduces
    /// is pushed to the live reduce machine with the least reduce load
    /// (the estimated input bytes of the reduces queued or running there),
    /// and that load grows by the reduce's; each machine runs its queue in
    /// order as its slots free up.
    LeastLoaded,
    /// Where the job's map output already sits (Spark's reduce locality):
    /// a worker holding at least a fifth of the job's map output takes the
    /// job's reduces first, one per heartbeat; after 3 s, or when no live
    /// reduce-capable worker holds that much, any worker takes them.
    MostOutput,
}

impl ReducePlacement {
    pub const ALL: [ReducePlacement; 5] = [
        ReducePlacement::Policy,
        ReducePlacement::FirstFree,
        ReducePlacement::Spread,
        ReducePlacement::LeastLoaded,
        ReducePlacement::MostOutput,
    ];

    pub fn is_policy(&self) -> bool {
        *self == ReducePlacement::Policy
    }

    /// The kebab-case name, as cluster.toml and specs spell it.
    pub fn name(&self) -> &'static str {
        match self {
            ReducePlacement::Policy => "policy",
            ReducePlacement::FirstFree => "first-free",
            ReducePlacement::Spread => "spread",
            ReducePlacement::LeastLoaded => "least-loaded",
            ReducePlacement::MostOutput => "most-output",
        }
    }

    /// What `policy` means for `scheduler`; other values stand as they are.
    pub fn resolve(self, scheduler: &SchedulerConfig) -> ReducePlacement {
        match (self, scheduler) {
            (ReducePlacement::Policy, SchedulerConfig::Eas(_)) => ReducePlacement::LeastLoaded,
            (ReducePlacement::Policy, _) => ReducePlacement::Spread,
            (other, _) => other,
        }
    }
}

impl FromStr for ReducePlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ReducePlacement::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| {
                let known: Vec<&str> = ReducePlacement::ALL.iter().map(|p| p.name()).collect();
                format!("reduce placement {s:?} is not one of {}", known.join(", "))
            })
    }
}

/// A worker preferred by `most-output` holds at least this share of its
/// job's map output (Spark's `REDUCER_PREF_LOCS_FRACTION`).
pub const MOST_OUTPUT_FRACTION: f64 = 0.2;

/// How long `most-output` keeps a job's reduces for its preferred workers
/// before any worker may take them (ms; Spark's default locality wait).
pub const MOST_OUTPUT_WAIT_MS: Millis = 3_000;

/// How long `spread` keeps a job's reduces off a worker that already runs
/// more reduces than another reduce-capable worker (ms).
pub const SPREAD_WAIT_MS: Millis = 3_000;

/// Places reduces by one [`ReducePlacement`] (never `policy`: resolved at
/// construction).
#[derive(Debug)]
pub struct ReducePlacer {
    placement: ReducePlacement,
    /// `least-loaded`: each machine's queue of pushed reduces, with their
    /// estimated input bytes.
    queues: BTreeMap<WorkerId, VecDeque<(TaskRef, u64)>>,
    /// Waiting reduces that sit in some machine's queue.
    queued: HashSet<TaskRef>,
    /// `spread` and `most-output`: when each job's reduces were first seen
    /// waiting, and the view's reduce changes then (the same again: nothing
    /// to note).
    since: BTreeMap<JobId, Millis>,
    noted: Option<u64>,
}

impl ReducePlacer {
    /// The placer for `placement`, `policy` resolved for `scheduler`.
    pub fn new(placement: ReducePlacement, scheduler: &SchedulerConfig) -> Self {
        ReducePlacer {
            placement: placement.resolve(scheduler),
            queues: BTreeMap::new(),
            queued: HashSet::new(),
            since: BTreeMap::new(),
            noted: None,
        }
    }

    /// The placement in use (never `policy`).
    pub fn placement(&self) -> ReducePlacement {
        self.placement
    }

    /// `worker` asks for work at `now`: start the waiting reduces the
    /// placement gives it, through `ctx`.
    pub fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        match self.placement {
            ReducePlacement::FirstFree => {
                while ctx.view().free_reduce_slots(worker) > 0 {
                    let Some(t) = first_ready(ctx.view(), worker, |_| true) else {
                        return;
                    };
                    if ctx.launch_reduce(t, worker).is_err() {
                        return;
                    }
                }
            }
            ReducePlacement::Policy | ReducePlacement::Spread => self.spread(now, worker, ctx),
            ReducePlacement::LeastLoaded => self.least_loaded(worker, ctx),
            ReducePlacement::MostOutput => self.most_output(now, worker, ctx),
        }
    }

    /// Records when each ready job's reduces were first seen waiting, and
    /// forgets jobs whose reduces are gone.
    fn note_waiting(&mut self, now: Millis, view: &ClusterView) {
        if self.noted == Some(view.reduce_changes()) {
            return;
        }
        self.noted = Some(view.reduce_changes());
        self.since.retain(|j, _| view.reduce_job(*j).is_some());
        for r in view.reduce_jobs().filter(|r| r.ready()) {
            self.since.entry(r.job).or_insert(now);
        }
    }

    /// One reduce per offer, oldest job first; a worker that already runs
    /// more reduces than some other live reduce-capable worker takes none
    /// until the job's reduces have waited `SPREAD_WAIT_MS` (a worker that
    /// heartbeats often, out of band, would otherwise take them all).
    fn spread(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let view = ctx.view();
        self.note_waiting(now, view);
        if view.free_reduce_slots(worker) == 0 {
            return;
        }
        let mine = view.worker(worker).map_or(0, |w| w.reduces_running);
        // Whether no live reduce-capable worker runs fewer reduces than this
        // one (the view keeps the fewest: no scan of 1,000s of workers on
        // each offer).
        let fewest = mine <= view.fewest_reduces_running().unwrap_or(0);
        let since = &self.since;
        let pick = first_ready(view, worker, |r| {
            fewest
                || now.saturating_sub(since.get(&r.job).copied().unwrap_or(now)) >= SPREAD_WAIT_MS
        });
        if let Some(t) = pick {
            let _ = ctx.launch_reduce(t, worker);
        }
    }

    /// EAS's Algorithm 3: push every newly waiting reduce to the machine
    /// with the least load, then run `worker`'s queue in order.
    fn least_loaded(&mut self, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let view = ctx.view();
        // Nothing queued and nothing newly waiting: nothing to do (and no
        // scan of every reduce worker's load).
        if self.queues.is_empty()
            && !view
                .reduce_jobs()
                .any(|r| r.ready() && r.pending().next().is_some())
        {
            return;
        }
        // Queued reduces whose machine died, or that no longer wait (their
        // job ended), leave the queues; the first are pushed again below.
        let dead: Vec<WorkerId> = self
            .queues
            .keys()
            .copied()
            .filter(|w| !view.worker(*w).is_some_and(|v| v.alive && v.runs_reduces))
            .collect();
        for w in dead {
            for (t, _) in self.queues.remove(&w).unwrap_or_default() {
                self.queued.remove(&t);
            }
        }
        for q in self.queues.values_mut() {
            q.retain(|(t, _)| {
                let keep = view
                    .reduce_job(t.job)
                    .is_some_and(|r| r.is_pending(t.index));
                if !keep {
                    self.queued.remove(t);
                }
                keep
            });
        }
        // L^rm: running reduces' bytes plus what is queued there.
        let mut load: BTreeMap<WorkerId, u64> = view
            .reduce_workers()
            .map(|w| {
                let queued: u64 = self
                    .queues
                    .get(&w.id)
                    .map_or(0, |q| q.iter().map(|(_, l)| l).sum());
                (w.id, w.reduce_load + queued)
            })
            .collect();
        for r in view.reduce_jobs().filter(|r| r.ready()) {
            for index in r.pending() {
                let t = TaskRef { job: r.job, index };
                if self.queued.contains(&t) {
                    continue;
                }
                // The least-loaded machine that is not a slow node for the
                // job; ties go to the lowest id.
                let Some((&m, _)) = load
                    .iter()
                    .filter(|(w, _)| !view.slow_for(r.job, **w))
                    .min_by_key(|(w, l)| (**l, **w))
                else {
                    return;
                };
                *load.get_mut(&m).expect("present") += r.load_each;
                self.queues
                    .entry(m)
                    .or_default()
                    .push_back((t, r.load_each));
                self.queued.insert(t);
            }
        }
        // The machine runs its queue in order; a reduce of a job held for
        // rebuilt map outputs keeps its place.
        let Some(q) = self.queues.get_mut(&worker) else {
            return;
        };
        let mut i = 0;
        while i < q.len() && ctx.view().free_reduce_slots(worker) > 0 {
            let (t, _) = q[i];
            let held = ctx.view().reduce_job(t.job).is_none_or(|r| r.held);
            if !held && ctx.launch_reduce(t, worker).is_ok() {
                q.remove(i);
                self.queued.remove(&t);
            } else {
                i += 1;
            }
        }
    }

    /// Spark-like reduce locality: one reduce per offer, of the oldest job
    /// that prefers `worker`, or whose preferred workers had their chance.
    fn most_output(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let view = ctx.view();
        self.note_waiting(now, view);
        if view.free_reduce_slots(worker) == 0 {
            return;
        }
        let since = &self.since;
        let pick = first_ready(view, worker, |r| {
            let total = r.output_total();
            let preferred: Vec<WorkerId> = view
                .reduce_workers()
                .map(|w| w.id)
                .filter(|w| {
                    total > 0
                        && r.output_on.get(w).copied().unwrap_or(0) as f64
                            >= MOST_OUTPUT_FRACTION * total as f64
                })
                .collect();
            preferred.is_empty()
                || preferred.contains(&worker)
                || now.saturating_sub(since.get(&r.job).copied().unwrap_or(now))
                    >= MOST_OUTPUT_WAIT_MS
        });
        if let Some(t) = pick {
            let _ = ctx.launch_reduce(t, worker);
        }
    }
}

/// The first waiting reduce of the oldest ready job that `accept`s, of
/// those `worker` is not a slow node for.
fn first_ready(
    view: &ClusterView,
    worker: WorkerId,
    mut accept: impl FnMut(&crate::view::ReduceJobView) -> bool,
) -> Option<TaskRef> {
    view.reduce_jobs()
        .filter(|r| r.ready() && !view.slow_for(r.job, worker))
        .find(|r| accept(r))
        .and_then(|r| {
            r.pending()
                .next()
                .map(|index| TaskRef { job: r.job, index })
        })
}

/// Runs one reduce offer of `worker` and returns the reduces it started.
pub fn offer_reduces(
    placer: &mut ReducePlacer,
    now: Millis,
    worker: WorkerId,
    view: &mut ClusterView,
) -> Vec<TaskRef> {
    crate::view::begin_reduce_offer(view, now, worker);
    let mut ctx = SchedContext::new(view);
    placer.offer(now, worker, &mut ctx);
    ctx.into_reduces()
}

#[cfg(test)]
mod tests;
