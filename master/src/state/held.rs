//! `Held`: the jobs a restarted master took back from the journal, from
//! the restart until the workers have registered again (every configured
//! worker, or `worker_timeout_ms` after the restart, whichever is first).
//! Meanwhile the jobs stay out of the scheduler's view: nothing of theirs
//! is launched, so an attempt still running on a worker that has not
//! registered yet is not duplicated. Each registering worker says which
//! attempts it runs (or finished and has not reported) and which map
//! outputs it keeps: the attempts the journal sent there are adopted, and
//! their results, if they arrive before the jobs go on, wait here
//! (`stash`) and are applied once they do (`Master::resume`).

use common::wire::TaskResult;
use common::{AttemptId, JobId, WorkerId};
use sched::Millis;
use std::collections::{BTreeSet, HashSet};

#[derive(Debug, Default)]
pub(super) struct Held {
    jobs: BTreeSet<JobId>,
    /// When the jobs go on even if some workers did not register.
    until: Millis,
    /// Attempts of the held jobs a registered worker said it runs.
    adopted: HashSet<AttemptId>,
    /// Results of adopted attempts that came before the jobs went on.
    stash: Vec<(WorkerId, TaskResult)>,
}

impl Held {
    /// Holds `jobs` until the workers registered, or until `until`.
    pub fn hold(&mut self, jobs: impl IntoIterator<Item = JobId>, until: Millis) {
        self.jobs.extend(jobs);
        self.until = until;
    }

    /// Whether any job is held.
    pub fn active(&self) -> bool {
        !self.jobs.is_empty()
    }

    pub fn holds(&self, job: JobId) -> bool {
        self.jobs.contains(&job)
    }

    /// The wait is over at `now`, whatever registered.
    pub fn due(&self, now: Millis) -> bool {
        self.active() && now >= self.until
    }

    pub fn adopt(&mut self, a: AttemptId) {
        self.adopted.insert(a);
    }

    /// An adopted attempt's result, kept until the jobs go on.
    pub fn stash(&mut self, worker: WorkerId, r: TaskResult) {
        self.stash.push((worker, r));
    }

    /// Ends the hold: the held jobs (oldest first), the adopted attempts
    /// and the stashed results (in arrival order).
    pub fn release(&mut self) -> (Vec<JobId>, HashSet<AttemptId>, Vec<(WorkerId, TaskResult)>) {
        let jobs = std::mem::take(&mut self.jobs).into_iter().collect();
        (
            jobs,
            std::mem::take(&mut self.adopted),
            std::mem::take(&mut self.stash),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::wire::TaskOutcome;
    use common::TaskRef;

    #[test]
    fn a_hold_keeps_its_jobs_until_released_and_gives_back_what_came_meanwhile() {
        let mut h = Held::default();
        assert!(!h.active() && !h.due(1_000_000), "nothing held");
        h.hold([JobId(3), JobId(1)], 500);
        assert!(h.holds(JobId(1)) && !h.holds(JobId(2)));
        assert!(!h.due(499) && h.due(500));
        let a = AttemptId {
            task: TaskRef {
                job: JobId(1),
                index: 0,
            },
            attempt: 2,
        };
        h.adopt(a);
        let r = TaskResult {
            attempt: a,
            slot: 0,
            outcome: TaskOutcome::Failed { error: "x".into() },
            started_unix_ms: 0,
            finished_unix_ms: 0,
            local_bytes: 0,
            remote_bytes: 0,
        };
        h.stash(WorkerId(1), r.clone());
        let (jobs, adopted, stash) = h.release();
        assert_eq!(jobs, vec![JobId(1), JobId(3)], "oldest first");
        assert!(adopted.contains(&a));
        assert_eq!(stash, vec![(WorkerId(1), r)]);
        assert!(!h.active() && !h.holds(JobId(1)));
    }
}
