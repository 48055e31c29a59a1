//! `Record`: the decision record since the master started (every launch
//! and declined offer with its reason) and its inputs (every change to the
//! scheduler's view and every offer, for `lab::recheck`), each kept
//! within `master.decisions_max` by dropping its oldest entries.

use common::JobId;
use sched::decision::Decision;
use sched::input::Input;
use sched::ClusterView;
use std::collections::VecDeque;

#[derive(Debug)]
pub(super) struct Record {
    max: usize,
    rows: VecDeque<Decision>,
    inputs: VecDeque<Input>,
    /// Rows and inputs dropped from their fronts.
    rows_dropped: u64,
    inputs_dropped: u64,
}

impl Record {
    pub fn new(max: usize) -> Self {
        Record {
            max: max.max(1),
            rows: VecDeque::new(),
            inputs: VecDeque::new(),
            rows_dropped: 0,
            inputs_dropped: 0,
        }
    }

    /// Takes the view's new rows and inputs, dropping the oldest of each
    /// beyond the bound.
    pub fn keep(&mut self, view: &mut ClusterView) {
        self.add(view.take_decisions(), view.take_inputs());
    }

    fn add(&mut self, rows: Vec<Decision>, inputs: Vec<Input>) {
        self.rows.extend(rows);
        self.inputs.extend(inputs);
        while self.rows.len() > self.max {
            self.rows.pop_front();
            self.rows_dropped += 1;
        }
        while self.inputs.len() > self.max {
            self.inputs.pop_front();
            self.inputs_dropped += 1;
        }
    }

    /// All rows, or one job's, oldest first.
    pub fn rows(&self, job: Option<JobId>) -> Vec<Decision> {
        self.rows
            .iter()
            .filter(|d| job.is_none() || d.job == job)
            .cloned()
            .collect()
    }

    pub fn rows_dropped(&self) -> u64 {
        self.rows_dropped
    }

    /// The inputs, oldest first, and how many were dropped.
    pub fn inputs(&self) -> (Vec<Input>, u64) {
        (self.inputs.iter().cloned().collect(), self.inputs_dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::WorkerId;
    use sched::decision::{Kind, Rule};

    fn row(t: u64, job: u32) -> Decision {
        Decision {
            time_ms: t,
            kind: Kind::Map,
            offered: WorkerId(0),
            free_slots: 1,
            job: Some(JobId(job)),
            task: Some(0),
            worker: Some(WorkerId(0)),
            source: Some(WorkerId(0)),
            locality: None,
            replicas: Vec::new(),
            rule: Rule::DataLocal,
            order: None,
            rank: None,
            key: None,
            waited_ms: None,
            threshold_ms: None,
        }
    }

    fn input(w: u32) -> Input {
        Input::Worker {
            worker: WorkerId(w),
            slots: 1,
        }
    }

    #[test]
    fn the_newest_rows_and_inputs_stay_within_the_bound_and_drops_are_counted() {
        let mut r = Record::new(3);
        r.add((0..2).map(|t| row(t, 1)).collect(), vec![input(0)]);
        r.add(
            (2..5).map(|t| row(t, 2)).collect(),
            (1..5).map(input).collect(),
        );
        let times: Vec<u64> = r.rows(None).iter().map(|d| d.time_ms).collect();
        assert_eq!(times, vec![2, 3, 4]);
        assert_eq!(r.rows_dropped(), 2);
        let (inputs, dropped) = r.inputs();
        assert_eq!((inputs.len(), dropped), (3, 2));
        assert_eq!(inputs[0], input(2), "the oldest went first");
        assert_eq!(r.rows(Some(JobId(1))).len(), 0, "job 1's rows were dropped");
        assert_eq!(r.rows(Some(JobId(2))).len(), 3);
        assert_eq!(Record::new(0).max, 1, "a bound of 0 keeps one");
    }
}
