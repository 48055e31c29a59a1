//! Any algorithm of the lab, run on an instance: an offline planner
//! ([`sched::offline`]), or an online policy ([`sched::policy`]) driven by
//! the discrete-event simulator ([`crate::sim`]) or offered one round of
//! idle cores (Guo's one-round locality and waves).

use crate::compile_time::Skip;
use crate::sim::{add_as_job, assignment_of, simulate, SimError};
use base::TaskRef;
use base::{JobId, WorkerId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sched::model::{Assignment, Cost, Eval, Instance};
use sched::offline::Offline;
use sched::policy::build;
use sched::policy::strict::StrictParams;
use sched::policy::SchedulerConfig;
use sched::policy::Weights;
use sched::view::{offer, ClusterView, Millis, PendingTask, SchedContext, Scheduler};

/// Why an algorithm could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabError {
    #[error("{input:?} is neither an offline algorithm (bar, dyndl-off, list, ltfpa, ltfpa-scan, mb) nor a scheduler: {reason}")]
    UnknownAlgo { input: String, reason: String },
    #[error("{algo}: round locality needs an online policy")]
    NotOnline { algo: String },
    #[error("the instance has no idle core (initial load 0)")]
    NoIdleCore,
    #[error("{algo}: a wave placed nothing with {left} tasks left")]
    WaveStuck { algo: String, left: usize },
    #[error("a fairness round needs at least one group")]
    NoGroups,
    #[error("stopped by its caller before it finished")]
    Stopped,
    #[error("{algo}: a driver applies to online policies only (an offline planner assigns every task itself)")]
    DriverOffline { algo: String },
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// What an algorithm planned for an instance.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub assignment: Assignment,
    /// For an online policy, the makespan its simulated run reached.
    pub sim_makespan: Option<f64>,
}

/// Any algorithm of the lab: an offline planner, or an online policy of the
/// master driven by the discrete-event simulator.
#[derive(Clone, Debug)]
pub enum Algo {
    Offline(Offline),
    Online {
        label: String,
        config: SchedulerConfig,
        /// The cost parameters taken from each instance's cost model.
        from_instance: FromInstance,
        /// How the policy is run over an instance.
        driver: Driver,
    },
}

/// How the lab runs an online policy over an instance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Driver {
    /// The discrete-event simulator ([`crate::sim::simulate`]): cores free
    /// as their tasks end and every free one is offered each `tick`.
    #[default]
    Events,
    /// BAR's compile-time scheme ([`crate::compile_time`]): the least
    /// loaded core under the static cost model is offered next; a skipped
    /// one does as the [`Skip`] rule says.
    CompileTime(Skip),
}

impl std::fmt::Display for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Driver::Events => write!(f, "events"),
            Driver::CompileTime(skip) => write!(f, "compile-time:{skip}"),
        }
    }
}

impl std::str::FromStr for Driver {
    type Err = String;
    /// `events`, or `compile-time:RULE` with RULE `set-aside`, `wake` or
    /// `after=H`.
    fn from_str(s: &str) -> Result<Driver, String> {
        let s = s.trim();
        if s == "events" {
            return Ok(Driver::Events);
        }
        match s.strip_prefix("compile-time:") {
            Some(rule) => Ok(Driver::CompileTime(rule.parse()?)),
            None => Err(format!(
                "{s:?} is not a driver (events, compile-time:set-aside, compile-time:wake, compile-time:after=H)"
            )),
        }
    }
}

/// Which parameters of a policy's data-remote cost the lab takes from the
/// instance it runs on: every one the algorithm's text does not set. So
/// DynDLOn's g(n) is the instance's (θ under DynDL's model), as the paper's
/// simulations give it, unless a spec sets `remote_s` or `theta` on purpose.
/// Under DynDL's model: `remote_s` = 1 (a local task's time) and `theta` =
/// θ, for `dyndl-on`; θ for the live `dyndl-off`. Under BAR's: `remote_s` =
/// 1 and `theta` = q / C_loc for `dyndl-on`, whose g counts the server's own
/// remote tasks where BAR's cost counts the cluster's (the nearest g(n) can
/// come); q / C_loc for the live `bar`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FromInstance {
    pub remote_s: bool,
    pub theta: bool,
    pub q: bool,
}

impl FromInstance {
    fn any(&self) -> bool {
        self.remote_s || self.theta || self.q
    }

    /// `config` with the parameters marked here taken from `cost`.
    pub fn apply(&self, config: &SchedulerConfig, cost: Cost) -> SchedulerConfig {
        let mut c = config.clone();
        match (&mut c, cost) {
            (SchedulerConfig::DyndlOn(p), cost) => {
                if self.remote_s {
                    p.remote_s = 1.0;
                }
                if self.theta {
                    p.theta = match cost {
                        Cost::Dyndl { theta } => theta,
                        Cost::Bar { c_loc, q } => q / c_loc,
                    };
                }
            }
            (SchedulerConfig::DyndlOff(p), Cost::Dyndl { theta: t }) if self.theta => {
                p.theta = t;
            }
            (SchedulerConfig::Bar(p), Cost::Bar { c_loc, q: bq }) if self.q => {
                p.q = bq / c_loc;
            }
            _ => {}
        }
        c
    }
}

impl std::str::FromStr for Algo {
    type Err = LabError;
    /// `bar`, `dyndl-off`, `list`, `ltfpa`, `mb`, or anything `--scheduler`
    /// accepts (`hadoop`, `delay3`, `dyndl-on`, `policy = 'rand', ...`).
    fn from_str(s: &str) -> Result<Algo, LabError> {
        if let Ok(o) = s.parse::<Offline>() {
            return Ok(Algo::Offline(o));
        }
        let config: SchedulerConfig = s.parse().map_err(|reason| LabError::UnknownAlgo {
            input: s.into(),
            reason,
        })?;
        let given = SchedulerConfig::keys_given(s);
        let free = |k: &str| !given.iter().any(|g| g == k);
        let from_instance = match config {
            SchedulerConfig::DyndlOn(_) => FromInstance {
                remote_s: free("remote_s"),
                theta: free("theta"),
                q: false,
            },
            SchedulerConfig::DyndlOff(_) => FromInstance {
                theta: free("theta"),
                ..Default::default()
            },
            SchedulerConfig::Bar(_) => FromInstance {
                q: free("q"),
                ..Default::default()
            },
            _ => FromInstance::default(),
        };
        Ok(Algo::Online {
            label: if from_instance.any() {
                config.label_cost_from_instance()
            } else {
                config.label()
            },
            config,
            from_instance,
            driver: Driver::Events,
        })
    }
}

impl Algo {
    /// The same online policy run by `driver`; its label, when it is not
    /// the default driver, says which. An error for an offline planner.
    pub fn with_driver(self, driver: Driver) -> Result<Algo, LabError> {
        match self {
            Algo::Offline(o) => Err(LabError::DriverOffline {
                algo: o.name().into(),
            }),
            Algo::Online {
                label,
                config,
                from_instance,
                ..
            } => Ok(Algo::Online {
                label: match driver {
                    Driver::Events => label,
                    d => format!("{label} [{d}]"),
                },
                config,
                from_instance,
                driver,
            }),
        }
    }

    /// Guo's one-round measurement: every idle core (initial load 0) is
    /// offered once, in server order, at time 0 (for `hadoop`, Guo's
    /// dl-sched, a data-local-only pass over all of them comes first);
    /// returns the locality of the tasks launched (`tasks` = launched,
    /// `makespan` = NaN). Online policies only.
    pub fn run_round(&self, inst: &Instance, seed: u64) -> Result<Eval, LabError> {
        Ok(self.rounds(inst, seed, false, None)?.0)
    }

    /// Guo's waves (Fig 6): rounds as in [`Algo::run_round`] until every
    /// task is placed; before each later round the running tasks end and a
    /// fresh random set of idle cores, as many as the instance has, is
    /// drawn (seeded). Locality over all tasks; `makespan` = the number of
    /// waves.
    pub fn run_waves(&self, inst: &Instance, seed: u64) -> Result<Eval, LabError> {
        Ok(self.rounds(inst, seed, true, None)?.0)
    }

    /// Guo's fairness round (Fig 5): one round as in [`Algo::run_round`],
    /// with groups. Every busy core (initial load > 0) runs one task of a
    /// group drawn at random, every pending task belongs to a group drawn
    /// at random (seeded; uniform over `groups`), and the `fair` and
    /// `lsap-fair` policies are given `groups` as their weights. Returns
    /// the round's locality and its unfairness after the round:
    /// sum over groups of |s_i - w_i|, s_i the group's share of the
    /// occupied slots and w_i its normalised weight (0: every group at its
    /// ration; at most 2).
    pub fn run_fair_round(
        &self,
        inst: &Instance,
        seed: u64,
        groups: &Weights,
    ) -> Result<(Eval, f64), LabError> {
        let (e, u) = self.rounds(inst, seed, false, Some(groups))?;
        Ok((e, u.expect("a round with groups measures fairness")))
    }

    fn rounds(
        &self,
        inst: &Instance,
        seed: u64,
        waves: bool,
        groups: Option<&Weights>,
    ) -> Result<(Eval, Option<f64>), LabError> {
        let Algo::Online {
            config,
            from_instance,
            ..
        } = self
        else {
            return Err(LabError::NotOnline { algo: self.label() });
        };
        let mut config = from_instance.apply(config, inst.cost);
        match (groups, &mut config) {
            (Some(g), SchedulerConfig::Fair(p)) => p.weights.clone_from(g),
            (Some(g), SchedulerConfig::LsapFair(p)) => p.weights.clone_from(g),
            _ => {}
        }
        let config = &config;
        let cores = inst.flat();
        let n_idle = cores.init.iter().filter(|l| **l == 0.0).count();
        if n_idle == 0 {
            return Err(LabError::NoIdleCore);
        }
        let mut view = ClusterView::new();
        let set_idle = |view: &mut ClusterView, idle: &[usize]| {
            let mut free = vec![0u32; inst.servers()];
            for &p in idle {
                free[cores.server[p] as usize] += 1;
            }
            for (srv, f) in free.into_iter().enumerate() {
                view.set_free(WorkerId(srv as u32), f);
            }
        };
        for (srv, loads) in inst.cores.iter().enumerate() {
            view.upsert_worker(WorkerId(srv as u32), loads.len() as u32);
            if !inst.racks.is_empty() {
                view.set_rack(WorkerId(srv as u32), inst.rack(srv as u32));
            }
        }
        let first: Vec<usize> = (0..cores.init.len())
            .filter(|&p| cores.init[p] == 0.0)
            .collect();
        match groups {
            None => add_as_job(inst, &mut view, JobId(1)),
            Some(g) => add_group_jobs(inst, &mut view, g, seed)?,
        }
        set_idle(&mut view, &first);
        // Guo's simulated dl-sched visits every idle slot for a data-local
        // task before it places the rest (otherwise one task and many idle
        // slots would go to the first slot, local or not): a local-only
        // pass first, then (on several racks) a rack-local-only pass for
        // the same reason one level up, then the policy itself.
        let mut passes: Vec<Box<dyn Scheduler>> = Vec::new();
        if matches!(config, SchedulerConfig::Hadoop(_)) {
            passes.push(build(
                &SchedulerConfig::Strict(StrictParams::new(sched::policy::JobOrder::Fifo)),
                seed,
            ));
            if view.has_racks() {
                passes.push(Box::new(RackLocalOnly));
            }
        }
        passes.push(build(config, seed));
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9a7e);
        let (mut launched, mut remote, mut rack_local, mut rounds) = (0, 0, 0, 0usize);
        loop {
            rounds += 1;
            let before = launched;
            for pass in passes.iter_mut() {
                for srv in 0..inst.servers() as u32 {
                    for a in offer(pass.as_mut(), 0, WorkerId(srv), &mut view) {
                        launched += 1;
                        remote += usize::from(!a.is_local());
                        rack_local +=
                            usize::from(inst.is_rack_local(a.task.index as usize, a.worker.0));
                    }
                }
            }
            if !waves || launched == inst.tasks() {
                break;
            }
            if launched == before {
                return Err(LabError::WaveStuck {
                    algo: self.label(),
                    left: inst.tasks() - launched,
                });
            }
            let idle: Vec<usize> = rand::seq::index::sample(&mut rng, cores.init.len(), n_idle)
                .into_iter()
                .collect();
            set_idle(&mut view, &idle);
        }
        let unfairness = groups.map(|g| {
            let total_w: f64 = g.values().sum();
            let rt: Vec<f64> = g
                .keys()
                .map(|name| {
                    view.jobs()
                        .filter(|j| &j.group == name)
                        .map(|j| j.running as f64)
                        .sum()
                })
                .collect();
            let occupied: f64 = rt.iter().sum::<f64>().max(1.0);
            g.values()
                .zip(&rt)
                .map(|(w, r)| (r / occupied - w / total_w).abs())
                .sum()
        });
        Ok((
            Eval {
                makespan: if waves { rounds as f64 } else { f64::NAN },
                remote,
                rack_local,
                tasks: launched,
                sim_makespan: f64::NAN,
            },
            unfairness,
        ))
    }

    pub fn label(&self) -> String {
        match self {
            Algo::Offline(o) => o.name().into(),
            Algo::Online { label, .. } => label.clone(),
        }
    }

    /// Plans with the algorithm: an offline planner's assignment, or for an
    /// online policy the assignment its simulated run made (offered cores
    /// as they free and every `tick` units) and the simulated makespan.
    /// Callers that report running time time this call.
    pub fn plan(&self, inst: &Instance, seed: u64, tick: f64) -> Result<Planned, LabError> {
        self.plan_probed(inst, seed, tick, &mut sched::offline::NoProbe)?
            .ok_or(LabError::Stopped)
    }

    /// [`Algo::plan`] with an offline planner's phases reported to `probe`,
    /// which may stop it (None). An online policy's simulated run does not
    /// consult the probe.
    pub fn plan_probed(
        &self,
        inst: &Instance,
        seed: u64,
        tick: f64,
        probe: &mut dyn sched::offline::Probe,
    ) -> Result<Option<Planned>, LabError> {
        match self {
            Algo::Offline(o) => Ok(o.run_probed(inst, probe).map(|assignment| Planned {
                assignment,
                sim_makespan: None,
            })),
            Algo::Online {
                config,
                from_instance,
                driver: Driver::CompileTime(skip),
                ..
            } => {
                let mut s = build(&from_instance.apply(config, inst.cost), seed);
                Ok(Some(Planned {
                    assignment: crate::compile_time::run(s.as_mut(), inst, *skip)?,
                    sim_makespan: None,
                }))
            }
            Algo::Online {
                config,
                from_instance,
                driver: Driver::Events,
                ..
            } => {
                let mut s = build(&from_instance.apply(config, inst.cost), seed);
                let give_up = 1e9;
                let out = simulate(s.as_mut(), inst, tick, give_up)?;
                Ok(Some(Planned {
                    assignment: assignment_of(inst, &out.placements),
                    sim_makespan: Some(out.makespan),
                }))
            }
        }
    }

    /// Makespan and locality of what [`Algo::plan`] returned.
    pub fn evaluate(inst: &Instance, planned: &Planned) -> Eval {
        let mut e = inst.evaluate(&planned.assignment);
        if let Some(m) = planned.sim_makespan {
            e.sim_makespan = m;
        }
        e
    }

    /// [`Algo::plan`], then [`Algo::evaluate`].
    pub fn run(&self, inst: &Instance, seed: u64, tick: f64) -> Result<Eval, LabError> {
        Ok(Algo::evaluate(inst, &self.plan(inst, seed, tick)?))
    }
}

/// The lab's rack-local pass of dl-sched: the head job's rack-local task
/// for each free slot, nothing otherwise.
struct RackLocalOnly;

impl Scheduler for RackLocalOnly {
    fn name(&self) -> String {
        "rack-local-only".into()
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        ctx.fill(worker, |view| {
            view.rack_local_task(view.head_job()?, worker)
        });
    }
}

/// One job per group of `groups` (named after it): the instance's tasks,
/// each in a group drawn at random, and one running task, in a group drawn
/// at random, on every busy core (initial load > 0), launched there. The
/// caller then marks the idle cores free.
fn add_group_jobs(
    inst: &Instance,
    view: &mut ClusterView,
    groups: &Weights,
    seed: u64,
) -> Result<(), LabError> {
    use rand::Rng;
    let names: Vec<&String> = groups.keys().collect();
    if names.is_empty() {
        return Err(LabError::NoGroups);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6a0f);
    let cores = inst.flat();
    let mut tasks: Vec<Vec<PendingTask>> = vec![Vec::new(); names.len()];
    let mut running: Vec<(TaskRef, WorkerId)> = Vec::new();
    let mut next = vec![0u32; names.len()];
    let mut take = |g: usize| {
        let index = next[g];
        next[g] += 1;
        TaskRef {
            job: JobId(g as u32 + 1),
            index,
        }
    };
    for r in &inst.replicas {
        let g = rng.gen_range(0..names.len());
        tasks[g].push(PendingTask {
            task: take(g),
            len: 1,
            replicas: r.iter().map(|&s| WorkerId(s)).collect(),
        });
    }
    for p in (0..cores.init.len()).filter(|&p| cores.init[p] != 0.0) {
        let g = rng.gen_range(0..names.len());
        let srv = WorkerId(cores.server[p]);
        let task = take(g);
        tasks[g].push(PendingTask {
            task,
            len: 1,
            replicas: vec![srv],
        });
        running.push((task, srv));
    }
    for (g, t) in tasks.into_iter().enumerate() {
        view.add_job(JobId(g as u32 + 1), 0, names[g], t);
    }
    let mut ctx = sched::view::SchedContext::new(view);
    for (task, srv) in running {
        ctx.launch(task, srv, srv)
            .expect("a busy core's slot is free until the idle ones are set");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
