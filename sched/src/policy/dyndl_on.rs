//! `dyndl-on`: DynDL's online algorithm (DynDLOn, Algorithm 1 of "Dynamic
//! Data Locality", Applied Sciences 2018), extended to many jobs as the
//! paper's real execution does.
//!
//! For each free slot of the offered worker s:
//! 1. a data-local task for s, from the oldest job that has one, launches at
//!    once and restarts s's wait (Algorithm 1, lines 1-4);
//! 2. otherwise the slot waits. Its delay is W when s runs no data-remote
//!    task, else max(g(r_s), W), where r_s is the number of data-remote tasks
//!    running on s and g(n) = remote * (1 + θ * min(n, slots)) is the
//!    expected running time of a data-remote task there (lines 5-8). Once s
//!    has waited that long since its last launch, the head job's random task
//!    launches remotely and the wait restarts (lines 9-12).
//!
//! `one_remote` is the variant the paper ran for real (Section 6.2): never
//! start a second data-remote task on a worker already running one.
//!
//! Where the wait is measured from (`wait`):
//! - `worker` (default): per worker, from the first offer of a free slot that
//!   found no data-local task since the worker's last launch;
//! - `core`: per core, from the core's last assignment, as Algorithm 1
//!   writes it (`p.wait <- currentTime` on every launch, lines 3 and 11), so
//!   a core freed by a task that ran longer than the delay may go remote at
//!   once. Which core freed is not part of the view: the policy keeps every
//!   core's last assignment time and takes the busy cores to be those the
//!   last heartbeat reported (matched by age); the rest are free and the one
//!   assigned longest ago decides first. Without a consistent busy report
//!   (the simulator has none), the free cores are taken to be the ones
//!   assigned longest ago.
//!
//! `order`: jobs in FIFO order (default; the oldest job with a data-local
//! task, the head job for a remote one), or `fair` (fewest running tasks
//! first, as delay scheduling orders them): an ablation that tells DynDLOn's
//! locality rule from its job order.
//!
//! Parameters: `w_s` (W, seconds), `remote_s` (seconds a data-remote task
//! takes alone), `theta` (θ).

use crate::decision::{Pick, Rule, Why};
use crate::order::job_order;
use crate::pick::random_task;
use crate::policy::{fmt_num, nonneg, secs_to_ms, JobOrder, Policy, RemotePick};
use crate::view::{Millis, SchedContext, Scheduler, WorkerView};
use base::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// `policy = "dyndl-on"`: DynDL's online algorithm (DynDLOn, Algorithm 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DyndlOnParams {
    /// W: the base delay in seconds a free slot waits for a data-local task.
    #[serde(default = "defaults::w_s")]
    pub w_s: f64,
    /// Seconds a data-remote task takes when it is alone on its worker;
    /// the data-remote cost is g(n) = remote_s * (1 + theta * min(n, slots)).
    #[serde(default)]
    pub remote_s: f64,
    /// θ, the network factor of g(n).
    #[serde(default = "defaults::theta")]
    pub theta: f64,
    /// The variant the paper ran for real: never start a second
    /// data-remote task on a worker already running one.
    #[serde(default = "defaults::yes")]
    pub one_remote: bool,
    /// Which pending task a data-remote launch takes.
    #[serde(default, skip_serializing_if = "RemotePick::is_random")]
    pub pick: RemotePick,
    /// Where the wait is measured from: `worker` (default) or `core`
    /// (Algorithm 1 as written).
    #[serde(default, skip_serializing_if = "WaitClock::is_worker")]
    pub wait: WaitClock,
    /// Job order; `fair` is an ablation (DynDLOn's locality rule under
    /// delay scheduling's fair sharing).
    #[serde(default = "defaults::fifo", skip_serializing_if = "JobOrder::is_fifo")]
    pub order: JobOrder,
}

mod defaults {
    use super::JobOrder;
    pub fn w_s() -> f64 {
        3.0
    }
    pub fn theta() -> f64 {
        1.0
    }
    pub fn yes() -> bool {
        true
    }
    pub fn fifo() -> JobOrder {
        JobOrder::Fifo
    }
}

impl Default for DyndlOnParams {
    fn default() -> Self {
        DyndlOnParams {
            w_s: defaults::w_s(),
            remote_s: 0.0,
            theta: defaults::theta(),
            one_remote: true,
            pick: RemotePick::Random,
            wait: WaitClock::Worker,
            order: JobOrder::Fifo,
        }
    }
}

impl Policy for DyndlOnParams {
    const EXAMPLES: &'static [&'static str] = &[
        "dyndl-on",
        "policy = \"dyndl-on\", w_s = 0.2, remote_s = 0.3, theta = 1, one_remote = false",
        "policy = \"dyndl-on\", wait = \"core\", order = \"fair\"",
    ];

    fn name(&self) -> &'static str {
        "dyndl-on"
    }

    fn label(&self, cost_from_instance: bool) -> String {
        format!(
            "dyndl-on(W={}s,g={}{}{}{}{})",
            fmt_num(self.w_s),
            if cost_from_instance {
                "instance".to_owned()
            } else {
                format!("{}s*(1+{}n)", fmt_num(self.remote_s), fmt_num(self.theta))
            },
            if self.one_remote { ",one-remote" } else { "" },
            self.pick.suffix(),
            if self.wait == WaitClock::Core {
                ",per-core"
            } else {
                ""
            },
            if self.order == JobOrder::Fifo {
                String::new()
            } else {
                format!(",{}", self.order.name())
            },
        )
    }

    fn validate(&self) -> Result<(), String> {
        nonneg("dyndl-on", "w_s", self.w_s)?;
        nonneg("dyndl-on", "remote_s", self.remote_s)?;
        nonneg("dyndl-on", "theta", self.theta)
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(DyndlOn::new(self.clone(), seed))
    }
}

/// Where DynDLOn's wait for a data-local task is measured from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WaitClock {
    /// Per worker, from the first offer of a free slot that found no
    /// data-local task since the worker's last launch.
    #[default]
    Worker,
    /// Per core, from the core's last assignment, as Algorithm 1 writes it
    /// (`p.wait <- currentTime` on every launch): a core freed by a task
    /// that ran longer than the delay may go remote at once.
    Core,
}

impl WaitClock {
    pub(crate) fn is_worker(&self) -> bool {
        *self == WaitClock::Worker
    }
}

pub struct DyndlOn {
    params: DyndlOnParams,
    delays: Delays,
    one_remote: bool,
    pick: RemotePick,
    wait: WaitClock,
    order: JobOrder,
    rng: ChaCha8Rng,
    /// `worker` clock: worker -> when its current wait began.
    waiting_since: HashMap<WorkerId, Millis>,
    /// `core` clock: worker -> every core's last assignment time.
    cores: HashMap<WorkerId, Vec<Millis>>,
}

impl DyndlOn {
    pub fn new(p: DyndlOnParams, seed: u64) -> Self {
        DyndlOn {
            delays: Delays {
                w: secs_to_ms(p.w_s),
                remote: secs_to_ms(p.remote_s),
                theta: p.theta,
            },
            one_remote: p.one_remote,
            pick: p.pick,
            wait: p.wait,
            order: p.order,
            params: p,
            rng: ChaCha8Rng::seed_from_u64(seed),
            waiting_since: HashMap::new(),
            cores: HashMap::new(),
        }
    }

    /// g(n) in milliseconds.
    pub fn remote_cost(&self, n: u32, slots: u32) -> Millis {
        self.delays.remote_cost(n, slots)
    }

    /// The delay a free slot of a worker running `r` remote tasks waits.
    pub fn delay(&self, r: u32, slots: u32) -> Millis {
        self.delays.delay(r, slots)
    }
}

/// W, the time a data-remote task takes alone, and θ.
#[derive(Clone, Copy, Debug)]
struct Delays {
    w: Millis,
    remote: Millis,
    theta: f64,
}

impl Delays {
    fn remote_cost(&self, n: u32, slots: u32) -> Millis {
        (self.remote as f64 * (1.0 + self.theta * n.min(slots) as f64)).round() as Millis
    }

    fn delay(&self, r: u32, slots: u32) -> Millis {
        if r == 0 {
            self.w
        } else {
            self.remote_cost(r, slots).max(self.w)
        }
    }
}

/// Indices into `clocks` of the free cores, the one assigned longest ago
/// first. Busy cores are matched to the heartbeat's busy slots by age (each
/// busy slot takes the unmatched clock nearest its start); without a
/// report that accounts for every busy core, the oldest clocks are free.
pub(crate) fn free_cores(clocks: &[Millis], wv: &WorkerView) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..clocks.len()).collect();
    idx.sort_by_key(|&i| clocks[i]);
    let free = wv.free as usize;
    let busy = clocks.len().saturating_sub(free);
    if wv.busy.len() == busy && busy > 0 {
        let mut taken = vec![false; clocks.len()];
        for b in &wv.busy {
            let started = wv.busy_at.saturating_sub(b.elapsed_ms);
            if let Some(&i) = idx
                .iter()
                .filter(|&&i| !taken[i])
                .min_by_key(|&&i| clocks[i].abs_diff(started))
            {
                taken[i] = true;
            }
        }
        idx.retain(|&i| !taken[i]);
    } else {
        idx.truncate(free);
    }
    idx
}

impl Scheduler for DyndlOn {
    /// With nothing waiting an offer finds no job: only the slot's wait
    /// ends ([`Scheduler::idle_offer`]).
    fn idle_offers_matter(&self) -> bool {
        false
    }

    fn idle_offer(&mut self, _now: Millis, worker: WorkerId) {
        // As `offer` does when nothing is pending.
        self.waiting_since.remove(&worker);
    }

    /// The worker clock's wait is the worker's own: W at least.
    fn own_wait_floor(&self) -> Option<Millis> {
        (self.wait == WaitClock::Worker).then_some(self.delays.w)
    }

    /// As `offer` decides for a worker without a data-local task: from its
    /// wait's start, the delay for the remote tasks it runs; never while
    /// one blocks the slot (until that task ends).
    fn own_wait_ends(
        &self,
        now: Millis,
        view: &crate::view::ClusterView,
        worker: WorkerId,
    ) -> Option<Millis> {
        if self.wait != WaitClock::Worker {
            return None;
        }
        let wv = view.worker(worker)?;
        let r = wv.remote_running;
        if self.one_remote && r >= 1 {
            return Some(Millis::MAX);
        }
        let since = self.waiting_since.get(&worker).copied().unwrap_or(now);
        Some(since.saturating_add(self.delays.delay(r, wv.slots)))
    }

    fn declined_offer(&mut self, now: Millis, worker: WorkerId) {
        // As `offer` does when the worker's wait has not ended.
        self.waiting_since.entry(worker).or_insert(now);
    }

    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (delays, one_remote, pick, order) =
            (self.delays, self.one_remote, self.pick, self.order);
        let (rng, waiting_since) = (&mut self.rng, &mut self.waiting_since);
        // `core` clock: the free cores, longest since their last assignment first.
        let mut free: std::collections::VecDeque<usize> = Default::default();
        let mut clocks = None;
        if self.wait == WaitClock::Core {
            let view = ctx.view();
            if let (Some(wv), Some(_)) = (view.worker(worker), view.head_job()) {
                let c = self
                    .cores
                    .entry(worker)
                    .or_insert_with(|| vec![now; wv.slots as usize]);
                c.resize(wv.slots as usize, now);
                free = free_cores(c, wv).into();
                clocks = Some(c);
            }
        }
        ctx.fill_why(worker, |view| {
            // FIFO walks the jobs in place; another order is computed per slot.
            let ordered = (order != JobOrder::Fifo).then(|| job_order(view, order));
            let (local, head) = match &ordered {
                None => (
                    view.jobs()
                        .filter(|j| j.has_pending())
                        .enumerate()
                        .find_map(|(rank, j)| Some((rank, j, j.local_task(worker)?))),
                    view.head_job(),
                ),
                Some(jobs) => (
                    jobs.iter().enumerate().find_map(|(rank, id)| {
                        let j = view.job(*id)?;
                        Some((rank, j, j.local_task(worker)?))
                    }),
                    jobs.first().and_then(|id| view.job(*id)),
                ),
            };
            if let Some((rank, job, t)) = local {
                waiting_since.remove(&worker);
                if let (Some(c), Some(i)) = (clocks.as_deref_mut(), free.pop_front()) {
                    c[i] = now;
                }
                return Ok(Pick {
                    task: t.task,
                    source: worker,
                    why: order.ranked(view, Why::rule(Rule::DataLocal), job, rank),
                });
            }
            // Nothing pending: not waiting for anything.
            let (Some(wv), Some(job)) = (view.worker(worker), head) else {
                waiting_since.remove(&worker);
                return Err(Why::rule(Rule::NothingToRun));
            };
            let (r, slots) = (wv.remote_running, wv.slots);
            let delay = delays.delay(r, slots);
            let blocked = one_remote && r >= 1;
            // The head job goes remote once the worker's (or core's) wait
            // is over.
            let decide = |waited: Millis| {
                let why = order
                    .ranked(view, Why::rule(Rule::Waiting), job, 0)
                    .waited(waited, delay)
                    .for_job(job.id);
                if blocked {
                    Err(Why {
                        rule: Rule::RemoteLimit,
                        ..why
                    })
                } else if waited < delay {
                    Err(why)
                } else {
                    Ok(why)
                }
            };
            let remote = |rng: &mut ChaCha8Rng, why: Why| {
                let (task, source) = random_task(rng, job, worker, pick)
                    .ok_or(Why::rule(Rule::NothingToRun).for_job(job.id))?;
                let rule = if source == worker {
                    Rule::DataLocal
                } else {
                    Rule::WaitOver
                };
                Ok::<_, Why>(Pick {
                    task,
                    source,
                    why: Why {
                        rule,
                        job: None,
                        ..why
                    },
                })
            };
            match clocks.as_deref_mut() {
                Some(c) => {
                    let &i = free.front().ok_or(Why::rule(Rule::Unexplained))?;
                    let why = decide(now.saturating_sub(c[i]))?;
                    let choice = remote(rng, why)?;
                    free.pop_front();
                    c[i] = now;
                    Ok(choice)
                }
                None => {
                    // The wait runs while a remote task blocks the slot.
                    let since = *waiting_since.entry(worker).or_insert(now);
                    let why = decide(now.saturating_sub(since))?;
                    let choice = remote(rng, why)?;
                    waiting_since.remove(&worker);
                    Ok(choice)
                }
            }
        });
    }
}
