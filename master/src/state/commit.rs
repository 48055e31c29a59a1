//! Output commits: a reduce attempt asks before its output becomes visible
//! (`common::wire::CommitRequest`), and only its task's current attempt,
//! on a worker this master hears, of a job that has not ended, may.

use super::Master;
use common::wire::CommitRequest;

/// Why an attempt may not commit its output.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitRefusal {
    /// Not now: the worker is not registered with this master's
    /// incarnation (it restarted, or has not heard of the worker yet). The
    /// worker registers again, naming its running attempts, then asks again.
    NotNow(String),
    /// Never: the attempt is stale (its worker was declared lost, another
    /// attempt replaced it, it timed out, or its job ended). Its output is
    /// dropped unseen.
    Stale(String),
}

impl Master {
    /// May the attempt `req` names commit its output now?
    pub fn commit(&mut self, req: &CommitRequest) -> Result<(), CommitRefusal> {
        let (w, a) = (req.worker, req.attempt);
        if req.incarnation != self.incarnation {
            return Err(CommitRefusal::NotNow(format!(
                "worker {} registered with master incarnation {}, this is incarnation {}: register again",
                w.0, req.incarnation, self.incarnation
            )));
        }
        let stale = if self.workers.declared_lost(w) {
            format!(
                "attempt {a}: the master declared worker {} lost and gave its attempts to others",
                self.worker_name(w)
            )
        } else if !self.workers.known(w) {
            return Err(CommitRefusal::NotNow(format!(
                "worker {} is not registered here: register again",
                w.0
            )));
        } else if self.jobs.current(a, w).is_none() {
            self.why_stale(a, w)
        } else if self.jobs.get(a.task.job).is_some_and(|j| j.state.is_done()) {
            format!("attempt {a}: job {} has ended", a.task.job)
        } else {
            return Ok(());
        };
        self.workers.refuse(1);
        tracing::warn!(worker = %self.worker_name(w), attempt = %a, reason = %stale, "output commit refused");
        Err(CommitRefusal::Stale(stale))
    }
}
