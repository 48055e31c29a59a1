//! The planners' timing harness: any algorithm run on an instance against
//! the wall clock, phase by phase, with an optional time limit (`master lab
//! run`, the sweeps, `make bench`).

use crate::algo::{Algo, LabError};
use sched::model::{Eval, Instance};
use std::time::{Duration, Instant};

/// What a run of an algorithm measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure<'a> {
    /// Every task to completion (online policies re-offered every `tick`).
    Makespan { tick: f64 },
    /// Guo's one-round locality ([`Algo::run_round`]).
    Round,
    /// Guo's waves ([`Algo::run_waves`]).
    Waves,
    /// Guo's fairness round with these groups ([`Algo::run_fair_round`]).
    FairRound(&'a sched::policy::Weights),
}

/// A timed run of an algorithm.
#[derive(Clone, Debug)]
pub struct Timed {
    /// None: the run passed its time limit and was stopped (or, for an
    /// algorithm that cannot be stopped midway, finished past it).
    pub eval: Option<Eval>,
    /// Wall time of the run (the planning of an offline planner, the whole
    /// simulated run of an online policy, or the rounds).
    pub time: Duration,
    /// An offline planner's phases and their wall times, in order.
    pub phases: Vec<(&'static str, Duration)>,
    /// A fairness round's unfairness ([`Algo::run_fair_round`]).
    pub unfairness: Option<f64>,
}

/// The lab's clock inside a planner: phase times and the time limit.
struct Clock {
    last: Instant,
    deadline: Option<Instant>,
    phases: Vec<(&'static str, Duration)>,
}

impl sched::offline::Probe for Clock {
    fn phase_done(&mut self, name: &'static str) {
        let now = Instant::now();
        self.phases.push((name, now - self.last));
        self.last = now;
    }
    fn go_on(&mut self) -> bool {
        self.deadline.is_none_or(|d| Instant::now() < d)
    }
}

/// Runs `algo` on `inst` and times it: the planning of an offline
/// planner (phase by phase), the whole simulated run of an online policy,
/// or the rounds. With a `limit`, a planner that can be stopped midway
/// (MaxCover-BalAssign between iterations, the two-phase planners between
/// phases) is stopped at it, and any run that took longer counts as over
/// it (`eval` None).
pub fn timed_run(
    algo: &Algo,
    inst: &Instance,
    seed: u64,
    measure: Measure<'_>,
    limit: Option<Duration>,
) -> Result<Timed, LabError> {
    let t0 = Instant::now();
    let mut clock = Clock {
        last: t0,
        deadline: limit.map(|l| t0 + l),
        phases: Vec::new(),
    };
    let mut unfairness = None;
    let eval = match measure {
        Measure::Makespan { tick } => algo
            .plan_probed(inst, seed, tick, &mut clock)?
            .map(|p| Algo::evaluate(inst, &p)),
        Measure::Round => Some(algo.run_round(inst, seed)?),
        Measure::Waves => Some(algo.run_waves(inst, seed)?),
        Measure::FairRound(groups) => {
            let (e, u) = algo.run_fair_round(inst, seed, groups)?;
            unfairness = Some(u);
            Some(e)
        }
    };
    let time = t0.elapsed();
    let over = limit.is_some_and(|l| time > l);
    Ok(Timed {
        eval: eval.filter(|_| !over),
        time,
        phases: clock.phases,
        unfairness,
    })
}
