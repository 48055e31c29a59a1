//! BAR's online baselines (Jin et al., CCGrid 2011, Section V):
//!
//! - `ds` (DS0.15, DS0.25): delay scheduling counted in scheduling
//!   opportunities. The head job (FIFO) launches a data-local task on the
//!   offered worker if it has one. Otherwise the offer is skipped and the
//!   delay counter grows by one; when the counter exceeds `fraction` x the
//!   number of live workers, the slot takes a random pending task remotely.
//!   The counter restarts at zero after a remote launch (as BAR describes
//!   DS) and, by default, after a data-local one too (as in Zaharia et
//!   al.'s Algorithm 1, the delay scheduling BAR cites); `restart =
//!   "remote"` keeps it through data-local launches (BAR's text alone).
//! - `gcc` (Good Cache Compute, from Raicu et al.'s data diffusion): the
//!   head job launches a data-local task if it has one; otherwise, while
//!   the number of workers with a free slot is below `idle_fraction` x the
//!   live workers, the offer is skipped; when at least that many are idle,
//!   a random task runs remotely.
//!
//! An opportunity is one offer of one free slot: in the master, a
//! heartbeat or a finished task; in the simulator, a core freeing or a tick.

use crate::decision::{Pick, Rule, Why};
use crate::order::first_job;
use crate::pick::{dl_choice, random_task};
use crate::policy::{fmt_num, unit_interval, JobOrder, Policy, RemotePick};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `policy = "ds"`: BAR's DS baseline, delay scheduling counted in
/// scheduling opportunities: a free slot without a data-local task of the
/// head job is skipped and a counter grows; once the counter exceeds
/// `fraction` x the number of workers, the slot takes a random task
/// remotely and the counter restarts. Presets `ds0.15`, `ds0.25`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DsParams {
    /// In [0, 1]: skipped opportunities allowed, as a fraction of the workers.
    pub fraction: f64,
    /// Job order: `fifo` (default, BAR's) or another, as an ablation.
    #[serde(default = "fifo", skip_serializing_if = "JobOrder::is_fifo")]
    pub order: JobOrder,
    /// Which launches restart the counter: `any` (default; Zaharia et
    /// al.'s Algorithm 1) or `remote` (only a remote one, BAR's words).
    #[serde(default, skip_serializing_if = "Restart::is_any")]
    pub restart: Restart,
}

/// Which launches restart DS's count of skipped opportunities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// Every launch, data-local or remote.
    #[default]
    Any,
    /// Only a remote launch.
    Remote,
}

impl Restart {
    fn is_any(&self) -> bool {
        *self == Restart::Any
    }
}

fn fifo() -> JobOrder {
    JobOrder::Fifo
}

/// `name(x)`, or `name(x,order)` for an order other than FIFO.
fn with_order(name: &str, x: f64, order: JobOrder) -> String {
    match order {
        JobOrder::Fifo => format!("{name}{}", fmt_num(x)),
        o => format!("{name}{}({})", fmt_num(x), o.name()),
    }
}

impl DsParams {
    /// `fraction`, FIFO order.
    pub fn new(fraction: f64) -> Self {
        DsParams {
            fraction,
            order: JobOrder::Fifo,
            restart: Restart::Any,
        }
    }
}

impl Policy for DsParams {
    const EXAMPLES: &'static [&'static str] = &[
        "ds0.15",
        "ds0.25",
        "policy = \"ds\", fraction = 0.15, order = \"fair\"",
        "policy = \"ds\", fraction = 0.15, restart = \"remote\"",
    ];

    fn name(&self) -> &'static str {
        "ds"
    }

    fn label(&self, _: bool) -> String {
        let l = with_order("ds", self.fraction, self.order);
        match self.restart {
            Restart::Any => l,
            Restart::Remote => format!("{l}-restart-remote"),
        }
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        unit_interval("ds", "fraction", self.fraction)
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("ds0.15", DsParams::new(0.15)),
            ("ds0.25", DsParams::new(0.25)),
        ]
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Ds::new(self.clone(), seed))
    }
}

/// `policy = "gcc"`: BAR's GCC baseline (Good Cache Compute, Raicu et
/// al.): a free slot without a data-local task is skipped while fewer than
/// `idle_fraction` of the workers have a free slot; otherwise it takes a
/// random task remotely.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GccParams {
    /// In [0, 1]: the share of workers with a free slot at which a slot may
    /// go remote.
    #[serde(default = "default_idle_fraction")]
    pub idle_fraction: f64,
    /// Job order: `fifo` (default, BAR's) or another, as an ablation.
    #[serde(default = "fifo", skip_serializing_if = "JobOrder::is_fifo")]
    pub order: JobOrder,
}

impl GccParams {
    /// `idle_fraction`, FIFO order.
    pub fn new(idle_fraction: f64) -> Self {
        GccParams {
            idle_fraction,
            order: JobOrder::Fifo,
        }
    }
}

fn default_idle_fraction() -> f64 {
    0.9
}

impl Policy for GccParams {
    const EXAMPLES: &'static [&'static str] = &["gcc", "policy = \"gcc\", idle_fraction = 0.5"];

    fn name(&self) -> &'static str {
        "gcc"
    }

    fn label(&self, _: bool) -> String {
        match self.order {
            JobOrder::Fifo => format!("gcc({})", fmt_num(self.idle_fraction)),
            o => format!("gcc({},{})", fmt_num(self.idle_fraction), o.name()),
        }
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        unit_interval("gcc", "idle_fraction", self.idle_fraction)
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Gcc::new(self.clone(), seed))
    }
}

pub struct Ds {
    params: DsParams,
    counter: u64,
    rng: ChaCha8Rng,
}

impl Ds {
    pub fn new(params: DsParams, seed: u64) -> Self {
        Ds {
            params,
            counter: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Ds {
    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let live = ctx.view().live_map_workers() as f64;
        let threshold = self.params.fraction * live;
        let (order, restart) = (self.params.order, self.params.restart);
        let (counter, rng) = (&mut self.counter, &mut self.rng);
        ctx.fill_why(worker, |view| {
            let job = first_job(view, order).ok_or(Why::rule(Rule::NothingToRun))?;
            let ranked = |rule: Rule| order.ranked(view, Why::rule(rule), job, 0);
            match job.local_task(worker) {
                Some(t) => {
                    if restart == Restart::Any {
                        *counter = 0;
                    }
                    Ok(Pick {
                        task: t.task,
                        source: worker,
                        why: ranked(Rule::DataLocal),
                    })
                }
                None => {
                    // The wait here is counted in skipped opportunities,
                    // not time: the record's `waited_ms` stays empty.
                    *counter += 1;
                    let waited = ranked(Rule::Waiting);
                    if *counter as f64 > threshold {
                        *counter = 0;
                        let (task, source) = random_task(rng, job, worker, RemotePick::Random)
                            .ok_or(Why::rule(Rule::NothingToRun).for_job(job.id))?;
                        Ok(Pick {
                            task,
                            source,
                            why: Why {
                                rule: if source == worker {
                                    Rule::DataLocal
                                } else {
                                    Rule::WaitOver
                                },
                                ..waited
                            },
                        })
                    } else {
                        Err(waited.for_job(job.id))
                    }
                }
            }
        });
    }
}

pub struct Gcc {
    params: GccParams,
    rng: ChaCha8Rng,
}

impl Gcc {
    pub fn new(params: GccParams, seed: u64) -> Self {
        Gcc {
            params,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Gcc {
    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (rng, idle_fraction, order) =
            (&mut self.rng, self.params.idle_fraction, self.params.order);
        ctx.fill_why(worker, |view| {
            let job = first_job(view, order).ok_or(Why::rule(Rule::NothingToRun))?;
            let live = view.live_map_workers() as f64;
            let idle = view.idle_map_workers() as f64;
            // GCC waits for the cluster's idleness, not for time: the
            // record's `waited_ms` stays empty.
            let why = order.ranked(view, Why::rule(Rule::Waiting), job, 0);
            if job.local_task(worker).is_some() || idle >= idle_fraction * live {
                let (task, source) = dl_choice(rng, job, worker, RemotePick::Random)
                    .ok_or(Why::rule(Rule::NothingToRun).for_job(job.id))?;
                let rule = if source == worker {
                    Rule::DataLocal
                } else {
                    Rule::WaitOver
                };
                Ok(Pick {
                    task,
                    source,
                    why: Why { rule, ..why },
                })
            } else {
                Err(why.for_job(job.id))
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{offer, ClusterView, PendingTask};
    use base::{JobId, TaskRef};

    fn view(workers: u32) -> ClusterView {
        let mut v = ClusterView::new();
        for w in 0..workers {
            v.upsert_worker(WorkerId(w), 1);
        }
        let job = JobId(1);
        // Every task's block is on worker 0 only.
        v.add_job(
            job,
            0,
            "default",
            (0..4)
                .map(|i| PendingTask {
                    task: TaskRef { job, index: i },
                    len: 1,
                    replicas: vec![WorkerId(0)],
                })
                .collect(),
        );
        v
    }

    #[test]
    fn ds_skips_fraction_times_workers_opportunities() {
        // 10 workers, fraction 0.2: two skips, the third opportunity goes remote.
        let mut v = view(10);
        let mut s = Ds::new(DsParams::new(0.2), 1);
        assert!(offer(&mut s, 0, WorkerId(1), &mut v).is_empty());
        assert!(offer(&mut s, 0, WorkerId(2), &mut v).is_empty());
        let l = offer(&mut s, 0, WorkerId(3), &mut v);
        assert_eq!(l.len(), 1);
        assert!(!l[0].is_local());
        // The counter restarted: the next non-local offer is skipped again,
        // a local one is taken at once.
        assert!(offer(&mut s, 0, WorkerId(4), &mut v).is_empty());
        let l = offer(&mut s, 0, WorkerId(0), &mut v);
        assert!(l.len() == 1 && l[0].is_local());
        // The local launch restarted the counter too: two more skips.
        assert!(offer(&mut s, 0, WorkerId(5), &mut v).is_empty());
        assert!(offer(&mut s, 0, WorkerId(6), &mut v).is_empty());
        assert_eq!(offer(&mut s, 0, WorkerId(7), &mut v).len(), 1);
    }

    #[test]
    fn ds_restarting_on_remote_launches_only_keeps_the_count_through_local_ones() {
        // As above, but the local launch leaves the count at 1: the next
        // skip brings it to 2 and the one after goes remote.
        let mut v = view(10);
        let p: super::super::SchedulerConfig = "policy = 'ds', fraction = 0.2, restart = 'remote'"
            .parse()
            .unwrap();
        let super::super::SchedulerConfig::Ds(p) = p else {
            panic!("{p:?}")
        };
        assert_eq!(p.label(false), "ds0.2-restart-remote");
        let mut s = Ds::new(p, 1);
        assert!(offer(&mut s, 0, WorkerId(1), &mut v).is_empty());
        let l = offer(&mut s, 0, WorkerId(0), &mut v);
        assert!(l.len() == 1 && l[0].is_local());
        assert!(offer(&mut s, 0, WorkerId(2), &mut v).is_empty());
        let l = offer(&mut s, 0, WorkerId(3), &mut v);
        assert!(l.len() == 1 && !l[0].is_local(), "{l:?}");
        // The remote launch restarted it: two skips again.
        assert!(offer(&mut s, 0, WorkerId(4), &mut v).is_empty());
        assert!(offer(&mut s, 0, WorkerId(5), &mut v).is_empty());
        assert_eq!(offer(&mut s, 0, WorkerId(6), &mut v).len(), 1);
    }

    #[test]
    fn gcc_goes_remote_only_when_enough_workers_are_idle() {
        let mut v = view(10);
        let mut s = Gcc::new(GccParams::new(0.9), 1);
        // All 10 idle: remote at once.
        let l = offer(&mut s, 0, WorkerId(1), &mut v);
        assert!(l.len() == 1 && !l[0].is_local());
        // Now 9 of 10 idle = 0.9: still remote.
        let l = offer(&mut s, 0, WorkerId(2), &mut v);
        assert_eq!(l.len(), 1);
        // 8 of 10 idle: skipped.
        assert!(offer(&mut s, 0, WorkerId(3), &mut v).is_empty());
        // A local task is always taken.
        assert_eq!(offer(&mut s, 0, WorkerId(0), &mut v).len(), 1);
    }
}

#[cfg(test)]
mod counter_tests {
    use crate::view::{offer, ClusterView, PendingTask};
    use base::{JobId, TaskRef, WorkerId};
    use rand::{Rng, SeedableRng};

    /// The O(1) worker counters agree with a recount after any sequence of
    /// view updates and launches.
    #[test]
    fn worker_counters_match_a_recount() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut v = ClusterView::new();
        let job = JobId(1);
        v.add_job(
            job,
            0,
            "default",
            (0..200)
                .map(|i| PendingTask {
                    task: TaskRef { job, index: i },
                    len: 1,
                    replicas: vec![WorkerId(i % 7)],
                })
                .collect(),
        );
        let mut s = super::Gcc::new(super::GccParams::new(0.5), 1);
        for _ in 0..2000 {
            let w = WorkerId(rng.gen_range(0..8));
            match rng.gen_range(0..6) {
                0 => v.upsert_worker(w, rng.gen_range(1..4)),
                1 => v.set_free(w, rng.gen_range(0..4)),
                2 => {
                    v.lose_worker(w);
                }
                3 => v.set_runs_maps(w, rng.gen_bool(0.7)),
                4 => v.task_ended(job, w, rng.gen_bool(0.5)),
                _ => {
                    offer(&mut s, 0, w, &mut v);
                }
            }
            let live = v.workers().filter(|w| w.alive && w.runs_maps).count() as u32;
            assert_eq!(v.live_map_workers(), live);
            assert_eq!(v.idle_map_workers(), v.idle_workers().count() as u32);
        }
    }
}
