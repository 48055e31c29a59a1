//! The campaign's checker: verdicts over the whole history once every
//! fault is healed, each a pure function of what was recorded (the faults
//! as injected, every job with its attempts, the catalog and the workers'
//! disks), so that each is tested on histories made to break it.

use super::schedule::Kind;
use serde::Serialize;

/// A fault as it was injected and healed (campaign seconds).
#[derive(Clone, Debug, Serialize)]
pub struct Injected {
    pub id: u32,
    pub kind: Kind,
    pub workers: Vec<String>,
    pub at_s: f64,
    pub heal_s: f64,
    /// Why the injection did nothing (empty: it was injected).
    pub error: String,
}

/// One attempt of a job, in campaign seconds.
#[derive(Clone, Debug, Serialize)]
pub struct Attempt {
    pub task: u32,
    pub reduce: bool,
    pub worker: String,
    /// Where a map read its input (empty for a reduce).
    pub source: String,
    pub start_s: f64,
    pub end_s: f64,
    pub ok: bool,
}

/// One job of the campaign as the checker sees it.
#[derive(Clone, Debug)]
pub struct JobSeen {
    pub index: u32,
    pub job: String,
    pub workload: String,
    pub submit_s: f64,
    /// When its end was seen (None: it never ended, or was never accepted).
    pub end_s: Option<f64>,
    pub state: String,
    pub error: String,
    /// For a succeeded job with an output: whether it equals the
    /// reference (None: it could not be read).
    pub output_equal: Option<bool>,
    pub attempts: Vec<Attempt>,
}

/// One verdict: the property, whether it held, and what broke it.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub check: &'static str,
    pub passed: bool,
    pub detail: String,
}

impl Verdict {
    pub fn of(check: &'static str, problems: Vec<String>, ok_detail: String) -> Verdict {
        Verdict {
            check,
            passed: problems.is_empty(),
            detail: if problems.is_empty() {
                ok_detail
            } else {
                let n = problems.len();
                let mut d = problems.into_iter().take(8).collect::<Vec<_>>().join("; ");
                if n > 8 {
                    d += &format!("; and {} more", n - 8);
                }
                d
            },
        }
    }
}

/// The cluster's timing the checks depend on, seconds.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// The master declares a silent worker lost after this.
    pub worker_timeout_s: f64,
    pub heartbeat_s: f64,
}

impl Timing {
    /// How long after a fault is healed a job may still fail of it: a
    /// lost worker's tasks are retried, a fetch times out, a reduce
    /// gives up on a map output.
    fn grace_s(&self) -> f64 {
        self.worker_timeout_s + 30.0
    }

    /// A cut longer than this surely got its worker declared lost.
    fn surely_lost_s(&self) -> f64 {
        self.worker_timeout_s + 2.0 * self.heartbeat_s + 1.0
    }
}

/// Every succeeded job's output equals the reference, byte for byte.
pub fn outputs(jobs: &[JobSeen]) -> Verdict {
    let mut p = Vec::new();
    let mut checked = 0;
    for j in jobs.iter().filter(|j| j.state == "succeeded") {
        match j.output_equal {
            Some(true) => checked += 1,
            Some(false) => p.push(format!("job {} ({}): output differs", j.index, j.workload)),
            None => p.push(format!(
                "job {} ({}): output could not be read ({})",
                j.index, j.workload, j.error
            )),
        }
    }
    Verdict::of(
        "succeeded jobs have the reference output",
        p,
        format!("{checked} outputs equal the reference"),
    )
}

/// The faults that explain a job's failure: injected ones whose span
/// (with the grace after healing) meets the job's life, and that touched
/// it: a master restart, or a fault on a worker that ran one of its
/// failed attempts or served one its input. A job the master never
/// accepted is explained only by the master's restart. Those cutting
/// workers off come first.
pub fn explaining(j: &JobSeen, faults: &[Injected], t: Timing) -> Vec<u32> {
    let (from, to) = (j.submit_s, j.end_s.unwrap_or(f64::INFINITY));
    let touched: Vec<&String> = j
        .attempts
        .iter()
        .filter(|a| !a.ok)
        .flat_map(|a| [&a.worker, &a.source])
        .filter(|w| !w.is_empty())
        .collect();
    let mut hits: Vec<&Injected> = faults
        .iter()
        .filter(|f| f.error.is_empty() && f.at_s <= to && f.heal_s + t.grace_s() >= from)
        .filter(|f| {
            f.kind == Kind::MasterRestart
                || (j.state != "not-accepted" && f.workers.iter().any(|w| touched.contains(&w)))
        })
        .collect();
    hits.sort_by_key(|f| (!f.kind.cuts_off(), f.id));
    hits.iter().map(|f| f.id).collect()
}

/// Every failed job (and every job the master never accepted) lived
/// through a fault that explains it.
pub fn failures(jobs: &[JobSeen], faults: &[Injected], t: Timing) -> (Verdict, Vec<(u32, String)>) {
    let mut p = Vec::new();
    let mut named = Vec::new();
    for j in jobs.iter().filter(|j| j.state != "succeeded") {
        let to = j.end_s.unwrap_or(f64::INFINITY);
        let ids = explaining(j, faults, t);
        match ids.first() {
            Some(id) => named.push((j.index, format!("fault {id}"))),
            None => p.push(format!(
                "job {} ({}, {}) at {:.0}-{:.0} s: no fault explains \"{}\"",
                j.index, j.workload, j.state, j.submit_s, to, j.error
            )),
        }
    }
    let n = named.len();
    (
        Verdict::of(
            "every failed job is explained by a fault",
            p,
            format!("{n} failed, each during or just after a fault on a worker it ran or read on, or a master restart"),
        ),
        named,
    )
}

/// The longest stretch of `[from, to]` the master was up through: a
/// master that is down (killed, until a second after its restart) sees no
/// silence, and a restarted one counts a worker's silence from its start.
fn watched(from: f64, to: f64, down: &[(f64, f64)]) -> f64 {
    let mut best = 0.0f64;
    let mut start = from;
    let mut cuts: Vec<(f64, f64)> = down
        .iter()
        .copied()
        .filter(|d| d.1 > from && d.0 < to)
        .collect();
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (a, b) in cuts {
        best = best.max(a.max(start) - start);
        start = start.max(b);
    }
    best.max(to - start)
}

/// Each reduce of a job had one accepted result, and no accepted result
/// came from an attempt its worker could not have delivered before the
/// master gave it away: one that ran on across a kill of its worker, or
/// that ended after its worker had been cut off from the master, while
/// the master was up, for surely longer than the worker timeout (the
/// master declared it lost and must refuse what it sends once back). A
/// restarted master adopts what its workers still run, so a cut-off the
/// master spent down fences nothing.
pub fn fencing(jobs: &[JobSeen], faults: &[Injected], t: Timing) -> Verdict {
    let down: Vec<(f64, f64)> = faults
        .iter()
        .filter(|f| f.error.is_empty() && f.kind == Kind::MasterRestart)
        .map(|f| (f.at_s, f.heal_s + 1.0))
        .collect();
    let mut p = Vec::new();
    let mut accepted = 0;
    for j in jobs {
        let mut reduces: std::collections::BTreeMap<u32, u32> = Default::default();
        for a in j.attempts.iter().filter(|a| a.ok) {
            accepted += 1;
            if a.reduce {
                *reduces.entry(a.task).or_default() += 1;
            }
            for f in faults.iter().filter(|f| {
                f.error.is_empty() && f.kind.cuts_off() && f.workers.contains(&a.worker)
            }) {
                let long = f.kind == Kind::KillWorker
                    || watched(f.at_s, f.heal_s, &down) > t.surely_lost_s();
                if long && a.end_s > f.at_s + 0.5 && a.start_s < f.heal_s {
                    p.push(format!(
                        "job {} task {} on {}: accepted an attempt of {:.1}-{:.1} s across fault {} ({} {:.1}-{:.1} s)",
                        j.index,
                        a.task,
                        a.worker,
                        a.start_s,
                        a.end_s,
                        f.id,
                        f.kind.name(),
                        f.at_s,
                        f.heal_s
                    ));
                }
            }
        }
        for (task, n) in reduces.into_iter().filter(|(_, n)| *n > 1) {
            p.push(format!(
                "job {} reduce {task}: {n} accepted results",
                j.index
            ));
        }
    }
    Verdict::of(
        "no result of a fenced attempt accepted, one result per reduce",
        p,
        format!("{accepted} accepted attempts, none across a cut-off"),
    )
}

/// A replica as the catalog or a disk names it: (file, block index,
/// worker).
pub type Replica = (String, u32, String);

/// The catalog (what the master says each live worker holds) against
/// the workers' own block lists: what the catalog names that no disk
/// holds, and what a disk holds that the catalog does not name.
pub fn catalog(catalog: &[Replica], disks: &[Replica]) -> Verdict {
    use std::collections::BTreeSet;
    let c: BTreeSet<&Replica> = catalog.iter().collect();
    let d: BTreeSet<&Replica> = disks.iter().collect();
    let mut p = Vec::new();
    for (f, i, w) in c.difference(&d) {
        p.push(format!(
            "the catalog names {f} block {i} on {w}, which does not hold it"
        ));
    }
    for (f, i, w) in d.difference(&c) {
        p.push(format!(
            "{w} holds {f} block {i}, which the catalog does not name"
        ));
    }
    Verdict::of(
        "the catalog agrees with the workers' disks",
        p,
        format!("{} replicas, the same on both sides", c.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timing = Timing {
        worker_timeout_s: 2.0,
        heartbeat_s: 0.1,
    };

    fn fault(id: u32, kind: Kind, w: &str, at: f64, heal: f64) -> Injected {
        Injected {
            id,
            kind,
            workers: vec![w.into()],
            at_s: at,
            heal_s: heal,
            error: String::new(),
        }
    }

    fn job(index: u32, state: &str, submit: f64, end: f64, attempts: Vec<Attempt>) -> JobSeen {
        JobSeen {
            index,
            job: format!("j{index}"),
            workload: "sort".into(),
            submit_s: submit,
            end_s: Some(end),
            state: state.into(),
            error: "a task failed 4 times".into(),
            output_equal: (state == "succeeded").then_some(true),
            attempts,
        }
    }

    fn attempt(task: u32, reduce: bool, w: &str, start: f64, end: f64, ok: bool) -> Attempt {
        Attempt {
            task,
            reduce,
            worker: w.into(),
            source: String::new(),
            start_s: start,
            end_s: end,
            ok,
        }
    }

    #[test]
    fn a_failure_is_explained_only_by_a_fault_it_lived_through_on_its_workers() {
        let faults = vec![fault(0, Kind::KillWorker, "w1", 100.0, 110.0)];
        let failed_on = |w: &str| vec![attempt(0, false, w, 96.0, 101.0, false)];
        let during = job(1, "failed", 95.0, 105.0, failed_on("w1"));
        let after_grace = job(2, "failed", 200.0, 210.0, failed_on("w1"));
        let elsewhere = job(3, "failed", 95.0, 105.0, failed_on("w2"));
        let (v, _) = failures(&[elsewhere], &faults, T);
        assert!(!v.passed && v.detail.contains("job 3"), "{v:?}");
        // A map that read from the killed worker is touched by it.
        let mut read_there = job(4, "failed", 95.0, 105.0, failed_on("w2"));
        read_there.attempts[0].source = "w1".into();
        assert!(
            failures(std::slice::from_ref(&read_there), &faults, T)
                .0
                .passed
        );
        // A job never accepted: only the master's restart explains it.
        read_there.state = "not-accepted".into();
        assert!(
            !failures(std::slice::from_ref(&read_there), &faults, T)
                .0
                .passed
        );
        let restart = vec![fault(1, Kind::MasterRestart, "", 100.0, 103.0)];
        assert!(failures(&[read_there], &restart, T).0.passed);
        let (v, named) = failures(std::slice::from_ref(&during), &faults, T);
        assert!(v.passed, "{v:?}");
        assert_eq!(named, vec![(1, "fault 0".to_owned())]);
        let (v, _) = failures(&[during, after_grace], &faults, T);
        assert!(!v.passed && v.detail.contains("job 2"), "{v:?}");
        // A fault whose injection failed explains nothing.
        let mut failed = faults.clone();
        failed[0].error = "no such worker".into();
        let (v, _) = failures(
            &[job(1, "failed", 95.0, 105.0, failed_on("w1"))],
            &failed,
            T,
        );
        assert!(!v.passed);
    }

    #[test]
    fn an_attempt_accepted_across_a_long_cut_or_a_kill_is_a_fencing_failure() {
        let faults = vec![
            fault(0, Kind::PartitionMaster, "w1", 100.0, 120.0),
            fault(1, Kind::PartitionMaster, "w2", 100.0, 101.0),
            fault(2, Kind::KillWorker, "w3", 100.0, 110.0),
        ];
        let ok = |w: &str, s: f64, e: f64| {
            job(
                1,
                "succeeded",
                0.0,
                200.0,
                vec![attempt(0, false, w, s, e, true)],
            )
        };
        // Ended before the cut, or after it on a short cut: fine.
        for j in [
            ok("w1", 90.0, 99.0),
            ok("w2", 99.0, 103.0),
            ok("w1", 121.0, 125.0),
        ] {
            assert!(
                fencing(std::slice::from_ref(&j), &faults, T).passed,
                "{j:?}"
            );
        }
        // Across the long cut, or across the kill: refused by the master,
        // so accepting it is the failure.
        for j in [
            ok("w1", 99.0, 110.0),
            ok("w1", 99.0, 130.0),
            ok("w3", 99.0, 101.0),
        ] {
            let v = fencing(std::slice::from_ref(&j), &faults, T);
            assert!(
                !v.passed && v.detail.contains("across fault"),
                "{j:?}: {v:?}"
            );
        }
        // The same attempt, refused (not ok), is what should happen.
        let refused = job(
            1,
            "succeeded",
            0.0,
            200.0,
            vec![attempt(0, false, "w1", 99.0, 130.0, false)],
        );
        assert!(fencing(&[refused], &faults, T).passed);
    }

    #[test]
    fn a_cut_the_master_spent_down_fences_nothing() {
        // Stopped 5 s, but the master was down for 2 s of it: it watched
        // the silence 2 s and 1 s at a time, never long enough.
        let mut faults = vec![
            fault(0, Kind::StopWorker, "w1", 28.0, 33.0),
            fault(1, Kind::MasterRestart, "", 30.0, 31.0),
        ];
        faults[1].workers.clear();
        let j = job(
            1,
            "succeeded",
            0.0,
            40.0,
            vec![attempt(8, true, "w1", 27.0, 33.5, true)],
        );
        assert!(fencing(std::slice::from_ref(&j), &faults, T).passed);
        // The same stop with the master up all along is a fencing failure.
        assert!(!fencing(&[j], &faults[..1], T).passed);
        assert_eq!(watched(0.0, 10.0, &[(2.0, 3.0), (8.0, 12.0)]), 5.0);
        assert_eq!(watched(0.0, 10.0, &[]), 10.0);
    }

    #[test]
    fn two_accepted_results_of_one_reduce_fail() {
        let j = job(
            4,
            "succeeded",
            0.0,
            10.0,
            vec![
                attempt(8, true, "w1", 1.0, 2.0, true),
                attempt(8, true, "w2", 1.0, 3.0, true),
            ],
        );
        let v = fencing(&[j], &[], T);
        assert!(
            !v.passed && v.detail.contains("reduce 8: 2 accepted"),
            "{v:?}"
        );
    }

    #[test]
    fn outputs_fail_on_a_difference_or_an_unread_output() {
        let mut a = job(1, "succeeded", 0.0, 1.0, vec![]);
        assert!(outputs(std::slice::from_ref(&a)).passed);
        a.output_equal = Some(false);
        assert!(outputs(std::slice::from_ref(&a)).detail.contains("differs"));
        a.output_equal = None;
        assert!(outputs(&[a]).detail.contains("could not be read"));
    }

    #[test]
    fn the_catalog_and_the_disks_must_name_the_same_replicas() {
        let r = |f: &str, i: u32, w: &str| (f.to_owned(), i, w.to_owned());
        let c = vec![r("text", 0, "w1"), r("text", 1, "w2")];
        assert!(catalog(&c, &c).passed);
        let v = catalog(&c, &[r("text", 0, "w1"), r("old", 3, "w2")]);
        assert!(!v.passed);
        assert!(v.detail.contains("names text block 1 on w2"), "{v:?}");
        assert!(v.detail.contains("w2 holds old block 3"), "{v:?}");
    }
}
