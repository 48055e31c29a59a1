//! The scheduling lab's side that touches files and clocks: instance files
//! (JSON), timed runs of any algorithm, and sweeps of the papers'
//! simulations ([`sweep`]), hybrid-cloud specs in the simulator ([`hybrid`]), a trace
//! spec's hour at any scale with a calibrated model ([`trace`]). The model, the planners, the policies and the
//! simulator themselves are the pure `sched` crate.

pub mod hybrid;
pub mod sweep;
pub mod trace;

pub use lab::algo::{Algo, LabError, Planned};
pub use sched::model::{Cost, Eval, GenParams, Instance};
pub use sched::offline::Offline;

use anyhow::Context;
use std::path::Path;
use std::time::{Duration, Instant};

/// Reads and validates an instance file.
pub fn read_instance(path: &Path) -> anyhow::Result<Instance> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Instance::from_json(&text).with_context(|| format!("{}", path.display()))
}

/// Writes an instance as JSON, atomically (temp file, then rename).
pub fn write_instance(inst: &Instance, path: &Path) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, inst.to_json()).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_files_round_trip_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("i.json");
        let inst = GenParams {
            servers: 4,
            cores: 2,
            tasks: 5,
            replication: 2,
            alpha: 0.0,
            beta: 3.0,
            cost: Cost::Dyndl { theta: 0.5 },
            idle: None,
            racks: Some(2),
            placement: sched::model::gen::Placement::RackAware,
        }
        .generate(1);
        write_instance(&inst, &f).unwrap();
        assert_eq!(read_instance(&f).unwrap(), inst);
        assert!(!dir.path().join("i.json.tmp").exists());
        let mut bad = inst.clone();
        bad.replicas[2] = vec![1, 9];
        write_instance(&bad, &f).unwrap();
        let e = format!("{:#}", read_instance(&f).unwrap_err());
        assert!(
            e.contains("i.json") && e.contains("replicas[2]") && e.contains("server 9"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            read_instance(&dir.path().join("none.json")).unwrap_err()
        );
        assert!(e.contains("none.json"), "{e}");
    }
}
