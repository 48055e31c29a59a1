//! A decision record run again: the recorded inputs ([`sched::input`]) fed,
//! in order, to a fresh [`ClusterView`] and to the policy and reduce
//! placement built from the recorded configuration and seed. Each offer's
//! decisions must equal the recorded ones, row for row (the task, where it
//! runs and reads, the rule, the job's order, rank, key and wait). The real
//! master, the simulators and this check all run the same code, so a
//! difference means the record left out an input, or a policy depends on
//! something it was not given (a clock, a hash order, a global).

use sched::decision::Decision;
use sched::input::Input;
use sched::policy::SchedulerConfig;
use sched::reduce::{offer_reduces, ReducePlacement, ReducePlacer};
use sched::view::{offer, ClusterView};

/// What a record holds: how the policy was built, what it was given, and
/// what it decided.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub scheduler: &'a SchedulerConfig,
    pub seed: u64,
    pub reduce_placement: ReducePlacement,
    pub inputs: &'a [Input],
    pub decisions: &'a [Decision],
}

/// A record that decides the same again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rechecked {
    /// Offers to the policy and to the reduce placement.
    pub offers: usize,
    /// Decision rows, all equal.
    pub decisions: usize,
}

/// The first place where the run again differs from the record.
#[derive(Clone, Debug, PartialEq)]
pub struct Differs {
    /// The decision row (0-based) that differs.
    pub row: usize,
    /// The input (0-based) whose offer made it; `None`: the record has rows
    /// no offer made again.
    pub input: Option<usize>,
    pub recorded: Option<Box<Decision>>,
    pub again: Option<Box<Decision>>,
}

impl Differs {
    /// One sentence, workers named by `name`.
    pub fn explain(&self, name: impl Fn(base::WorkerId) -> String) -> String {
        let show = |d: &Option<Box<Decision>>| match d {
            Some(d) => d.explain(&name),
            None => "nothing".to_owned(),
        };
        let mut s = format!("decision row {} differs", self.row);
        if let Some(i) = self.input {
            s += &format!(" (made at input {i})");
        }
        s + &format!(
            ": recorded {}; run again {}",
            show(&self.recorded),
            show(&self.again)
        )
    }
}

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.explain(|w| w.to_string()))
    }
}

/// Runs `record`'s inputs through its policy again and compares each
/// offer's decisions with the recorded ones.
pub fn recheck(record: Record<'_>) -> Result<Rechecked, Differs> {
    let mut view = ClusterView::new();
    view.record_decisions(true);
    let mut policy = sched::build(record.scheduler, record.seed);
    let mut placer = ReducePlacer::new(record.reduce_placement, record.scheduler);
    let mut row = 0;
    let mut offers = 0;
    for (i, input) in record.inputs.iter().enumerate() {
        match *input {
            Input::Offer { now, worker } => {
                offer(policy.as_mut(), now, worker, &mut view);
            }
            Input::ReduceOffer { now, worker } => {
                offer_reduces(&mut placer, now, worker, &mut view);
            }
            _ => view.feed(input.clone()),
        }
        // The view records what it is fed too; only its decisions count.
        view.take_inputs();
        if !input.is_offer() {
            continue;
        }
        offers += 1;
        for again in view.take_decisions() {
            let recorded = record.decisions.get(row);
            if recorded != Some(&again) {
                return Err(Differs {
                    row,
                    input: Some(i),
                    recorded: recorded.cloned().map(Box::new),
                    again: Some(Box::new(again)),
                });
            }
            row += 1;
        }
    }
    if let Some(extra) = record.decisions.get(row) {
        return Err(Differs {
            row,
            input: None,
            recorded: Some(Box::new(extra.clone())),
            again: None,
        });
    }
    Ok(Rechecked {
        offers,
        decisions: row,
    })
}

#[cfg(test)]
mod tests;
