//! Decision agreement: a simulated run's launches against the real run's,
//! task by task. Means can agree while the decisions do not; this says how
//! many maps the simulator placed at the same locality level, on the same
//! worker and within one heartbeat of the real launch, and where and why
//! the two runs first went apart.
//!
//! The first divergence is the matched map, earliest by the sooner of its
//! two launches, that went to another worker or started more than one
//! heartbeat apart. Every launch before it agreed, so its cause is read
//! off what the two runs knew then ([`Cause`]).

use std::collections::BTreeMap;

/// One task attempt as it ran: its job, index, kind, worker, the worker it
/// read its input from (itself when data-local; a reduce's own worker),
/// start and end in ms from the run's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub job: u64,
    pub index: u32,
    pub reduce: bool,
    pub worker: u32,
    pub source: u32,
    pub start_ms: u64,
    pub end_ms: u64,
}

impl Launch {
    /// Data-local (the only levels the testbed has: local and remote).
    pub fn is_local(&self) -> bool {
        self.worker == self.source
    }
}

/// Why the runs first went apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cause {
    /// A task on either run's worker had ended, when the sooner of the two
    /// launches came, in one run and not in the other (its two ends more
    /// than a heartbeat apart): the model got a finish time wrong and the
    /// slot came free at another time.
    Finish {
        /// The task (job, index, reduce) and its ends, real then simulated.
        task: (u64, u32, bool),
        real_end_ms: u64,
        sim_end_ms: u64,
    },
    /// The same locality level within one heartbeat, another worker: the
    /// policy chose among equal offers, which came in another order (the
    /// workers' heartbeat phases, or a tie the policy broke otherwise).
    Tie,
    /// The sooner launch's offer (its worker, within a fifth of a heartbeat:
    /// the launches of one heartbeat) went to
    /// another map in the other run: the policy picked otherwise on the
    /// same offer (a job order, a locality wait or a task pick that
    /// differed). The other map, (job, index).
    Pick { other: (u64, u32) },
    /// A pick whose other map's job the sooner launch's run also served in
    /// the same heartbeat round (within a fifth of a heartbeat) on another
    /// worker: the round's offers reached the policy in another order, the
    /// same jobs going to other workers. The other map, (job, index).
    Order { other: (u64, u32) },
    /// The other run launched nothing on the sooner launch's worker within
    /// a fifth of a heartbeat of it: that offer was not made there (the worker's
    /// heartbeat came at another time, or its slots were taken).
    Heartbeat,
}

impl Cause {
    /// Its name, as in the summaries and CSVs.
    pub fn name(&self) -> &'static str {
        match self {
            Cause::Finish { .. } => "finish",
            Cause::Tie => "tie",
            Cause::Pick { .. } => "pick",
            Cause::Order { .. } => "order",
            Cause::Heartbeat => "heartbeat",
        }
    }

    /// A line: the cause and, for a finish, the task and both ends.
    pub fn describe(&self) -> String {
        match *self {
            Cause::Finish {
                task,
                real_end_ms,
                sim_end_ms,
            } => format!(
                "finish: job-{} {} {} ended at {:.1} s, simulated {:.1} s",
                task.0,
                if task.2 { "reduce" } else { "map" },
                task.1,
                real_end_ms as f64 / 1000.0,
                sim_end_ms as f64 / 1000.0
            ),
            Cause::Pick { other } => {
                format!("pick: that offer took job-{} map {}", other.0, other.1)
            }
            Cause::Order { other } => format!(
                "order: that offer took job-{} map {}, a job served in the same round on another worker",
                other.0, other.1
            ),
            other => other.name().to_owned(),
        }
    }
}

/// Where the two runs first went apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Divergence {
    pub real: Launch,
    pub sim: Launch,
    pub cause: Cause,
}

/// Map launches compared one by one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Agreement {
    /// Maps launched in both runs (by job and index).
    pub maps: usize,
    /// Of them, at the same locality level; on the same worker; started
    /// within one heartbeat; both the same worker and within a heartbeat.
    pub same_level: usize,
    pub same_worker: usize,
    pub same_time: usize,
    pub same_worker_and_time: usize,
    /// Maps in one run only (a run that failed part-way, or a job the
    /// other left out).
    pub unmatched: usize,
    pub first: Option<Divergence>,
}

impl Agreement {
    /// A share of the matched maps, 0-1 (NaN with none).
    pub fn share(&self, n: usize) -> f64 {
        if self.maps == 0 {
            f64::NAN
        } else {
            n as f64 / self.maps as f64
        }
    }
}

/// Compares `sim`'s launches with `real`'s (each task's first attempt;
/// later attempts of a task are ignored), a heartbeat being `heartbeat_ms`.
pub fn compare(real: &[Launch], sim: &[Launch], heartbeat_ms: u64) -> Agreement {
    let first = |ls: &[Launch]| {
        let mut by: BTreeMap<(u64, u32, bool), Launch> = BTreeMap::new();
        for l in ls {
            let e = by.entry((l.job, l.index, l.reduce)).or_insert(*l);
            if l.start_ms < e.start_ms {
                *e = *l;
            }
        }
        by
    };
    let (real_by, sim_by) = (first(real), first(sim));
    let mut a = Agreement::default();
    let mut diverged: Vec<(Launch, Launch)> = Vec::new();
    for (key, r) in real_by.iter().filter(|(k, _)| !k.2) {
        let Some(s) = sim_by.get(key) else {
            a.unmatched += 1;
            continue;
        };
        a.maps += 1;
        let same_worker = r.worker == s.worker;
        let same_time = r.start_ms.abs_diff(s.start_ms) <= heartbeat_ms;
        a.same_level += usize::from(r.is_local() == s.is_local());
        a.same_worker += usize::from(same_worker);
        a.same_time += usize::from(same_time);
        a.same_worker_and_time += usize::from(same_worker && same_time);
        if !(same_worker && same_time) {
            diverged.push((*r, *s));
        }
    }
    a.unmatched += sim_by
        .keys()
        .filter(|k| !k.2 && !real_by.contains_key(k))
        .count();
    let earliest = diverged
        .into_iter()
        .min_by_key(|(r, s)| (r.start_ms.min(s.start_ms), r.job, r.index));
    a.first = earliest.map(|(r, s)| Divergence {
        real: r,
        sim: s,
        cause: cause(&real_by, &sim_by, &r, &s, heartbeat_ms),
    });
    a
}

/// Why `r` and `s` (one map, real and simulated) went apart.
fn cause(
    real_by: &BTreeMap<(u64, u32, bool), Launch>,
    sim_by: &BTreeMap<(u64, u32, bool), Launch>,
    r: &Launch,
    s: &Launch,
    heartbeat_ms: u64,
) -> Cause {
    // At the sooner of the two launches, one run launched and the other
    // did not. A task on either worker that had ended by then in one run
    // and not in the other (its ends more than a heartbeat apart) freed a
    // slot in one run only: the latest such end is the cause.
    let t0 = r.start_ms.min(s.start_ms);
    let finish = real_by
        .iter()
        .filter(|(k, _)| **k != (r.job, r.index, false))
        .filter_map(|(k, x)| {
            let y = sim_by.get(k)?;
            let on = [x.worker, y.worker];
            let near = on.contains(&r.worker) || on.contains(&s.worker);
            let (lo, hi) = (x.end_ms.min(y.end_ms), x.end_ms.max(y.end_ms));
            (near && lo <= t0 && t0 < hi && hi - lo > heartbeat_ms).then_some((lo, *k, x, y))
        })
        .max_by_key(|c| (c.0, c.1));
    if let Some((_, task, x, y)) = finish {
        return Cause::Finish {
            task,
            real_end_ms: x.end_ms,
            sim_end_ms: y.end_ms,
        };
    }
    if r.is_local() == s.is_local() && r.start_ms.abs_diff(s.start_ms) <= heartbeat_ms {
        return Cause::Tie;
    }
    // The sooner launch, its run's maps and the other run's.
    let (sooner, own, other) = if r.start_ms <= s.start_ms {
        (r, real_by, sim_by)
    } else {
        (s, sim_by, real_by)
    };
    let round = heartbeat_ms / 5;
    let took = other
        .iter()
        .filter(|(k, x)| {
            !k.2 && (k.0, k.1) != (r.job, r.index)
                && x.worker == sooner.worker
                && x.start_ms.abs_diff(sooner.start_ms) <= round
        })
        .min_by_key(|(k, x)| (x.start_ms.abs_diff(sooner.start_ms), **k));
    let Some((k, _)) = took else {
        return Cause::Heartbeat;
    };
    let other = (k.0, k.1);
    let same_round_elsewhere = own.iter().any(|(j, x)| {
        !j.2 && j.0 == k.0
            && x.worker != sooner.worker
            && x.start_ms.abs_diff(sooner.start_ms) <= round
    });
    if same_round_elsewhere {
        Cause::Order { other }
    } else {
        Cause::Pick { other }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(job: u64, index: u32, worker: u32, source: u32, start_ms: u64, end_ms: u64) -> Launch {
        Launch {
            job,
            index,
            reduce: false,
            worker,
            source,
            start_ms,
            end_ms,
        }
    }

    #[test]
    fn identical_runs_agree_on_every_map() {
        let real = vec![map(1, 0, 0, 0, 0, 1000), map(1, 1, 1, 0, 0, 1500)];
        let a = compare(&real, &real, 100);
        assert_eq!((a.maps, a.same_worker_and_time, a.same_level), (2, 2, 2));
        assert_eq!(a.first, None);
        assert_eq!(a.share(a.same_worker), 1.0);
    }

    #[test]
    fn a_map_on_another_worker_within_a_heartbeat_is_a_tie() {
        let real = vec![map(1, 0, 0, 0, 0, 1000), map(1, 1, 1, 1, 50, 900)];
        let sim = vec![map(1, 0, 0, 0, 0, 1000), map(1, 1, 2, 2, 80, 900)];
        let a = compare(&real, &sim, 100);
        assert_eq!(
            (a.maps, a.same_level, a.same_worker, a.same_time),
            (2, 2, 1, 2)
        );
        let d = a.first.unwrap();
        assert_eq!((d.real.index, d.sim.worker), (1, 2));
        assert_eq!(d.cause, Cause::Tie);
    }

    #[test]
    fn a_slot_freed_late_is_named_as_the_cause() {
        // Task 0 ends at 1 s for real and at 3 s simulated on worker 0, so
        // task 1 starts there 2 s later.
        let real = vec![map(1, 0, 0, 0, 0, 1000), map(1, 1, 0, 0, 1000, 2000)];
        let sim = vec![map(1, 0, 0, 0, 0, 3000), map(1, 1, 0, 0, 3000, 4000)];
        let a = compare(&real, &sim, 100);
        assert_eq!((a.same_worker, a.same_time), (2, 1));
        let d = a.first.unwrap();
        assert_eq!(d.real.index, 1);
        assert_eq!(
            d.cause,
            Cause::Finish {
                task: (1, 0, false),
                real_end_ms: 1000,
                sim_end_ms: 3000
            }
        );
        assert!(d
            .cause
            .describe()
            .contains("job-1 map 0 ended at 1.0 s, simulated 3.0 s"));
    }

    #[test]
    fn an_offer_taken_by_another_map_is_a_pick_and_one_not_made_a_heartbeat() {
        // The simulated map reads remotely on worker 1 at 200 ms, where the
        // real run launched job 2's map on that offer; the real one ran
        // locally on worker 0 at 500 ms.
        let real = vec![map(1, 0, 0, 0, 500, 1500), map(2, 0, 1, 1, 210, 900)];
        let sim = vec![map(1, 0, 1, 0, 200, 1400), map(2, 0, 1, 1, 1400, 2000)];
        let a = compare(&real, &sim, 100);
        assert_eq!((a.same_level, a.same_time), (1, 0));
        let d = a.first.unwrap();
        assert_eq!((d.real.job, d.cause), (1, Cause::Pick { other: (2, 0) }));
        assert_eq!(d.cause.describe(), "pick: that offer took job-2 map 0");
        // The sim launched job 2's map in the same round on worker 2: the
        // round's offers came in another order.
        let sim2 = vec![map(1, 0, 1, 0, 200, 1400), map(2, 0, 2, 2, 205, 2000)];
        let cause = compare(&real, &sim2, 100).first.unwrap().cause;
        assert_eq!(cause, Cause::Order { other: (2, 0) });
        assert!(cause
            .describe()
            .starts_with("order: that offer took job-2 map 0"));
        // Nothing on worker 1 near 200 ms for real: that offer was not made.
        let real = vec![map(1, 0, 0, 0, 500, 1500), map(2, 0, 1, 1, 1400, 2000)];
        let sim = vec![map(1, 0, 1, 0, 200, 1400), map(2, 0, 1, 1, 1400, 2000)];
        assert_eq!(
            compare(&real, &sim, 100).first.unwrap().cause,
            Cause::Heartbeat
        );
    }

    #[test]
    fn the_earliest_divergence_is_reported_and_unmatched_maps_counted() {
        let real = vec![
            map(1, 0, 0, 0, 0, 1000),
            map(1, 1, 1, 1, 5000, 6000),
            map(2, 0, 2, 2, 2000, 3000),
        ];
        let sim = vec![
            map(1, 0, 0, 0, 0, 1000),
            map(1, 1, 3, 3, 5000, 6000),
            map(2, 0, 3, 3, 2050, 3000),
            map(3, 0, 0, 0, 0, 10),
        ];
        let a = compare(&real, &sim, 100);
        assert_eq!((a.maps, a.unmatched), (3, 1));
        assert_eq!(a.first.unwrap().real.job, 2);
        // Reduces are not counted as maps, and a task's later attempt is
        // not its launch.
        let mut with = real.clone();
        with.push(Launch {
            reduce: true,
            ..map(1, 0, 4, 4, 7000, 8000)
        });
        with.push(map(1, 0, 5, 5, 9000, 9500));
        assert_eq!(compare(&with, &sim, 100), a);
    }
}
