//! `fifo-s` / `hfs-s`: strict data locality, the EAS paper's FIFO-S and
//! HFS-S baselines. A map runs only where its input is: for each free slot of
//! the offered worker, jobs are visited in FIFO order (`fair = false`) or
//! fair-sharing order (`fair = true`: fewest running tasks first, as `delay`
//! orders them), and the first one with a data-local task for this worker
//! launches it. No job ever reads remotely, so a worker without local work
//! stays idle. With `head_only`, only the first job of the order is looked
//! at, as the EAS paper's search does (its line 255): a slot whose head job
//! has nothing local here stays idle even if a later job has. (Their best-effort twins FIFO-BE and HFS-BE are `hadoop` and
//! `fair`.)

use crate::order::job_order;
use crate::view::{Millis, SchedContext, Scheduler};
use common::policy::{JobOrder, SchedulerConfig};
use common::WorkerId;

pub struct Strict {
    fair: bool,
    head_only: bool,
}

impl Strict {
    pub fn new(fair: bool, head_only: bool) -> Self {
        Strict { fair, head_only }
    }
}

impl Scheduler for Strict {
    fn name(&self) -> String {
        SchedulerConfig::Strict {
            fair: self.fair,
            head_only: self.head_only,
        }
        .label()
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let order = if self.fair {
            JobOrder::Fair
        } else {
            JobOrder::Fifo
        };
        let head_only = self.head_only;
        ctx.fill(worker, |view| {
            let jobs = job_order(view, order);
            let looked_at = if head_only {
                &jobs[..jobs.len().min(1)]
            } else {
                &jobs[..]
            };
            let task = looked_at
                .iter()
                .find_map(|id| view.job(*id)?.local_task(worker).map(|t| t.task))?;
            Some((task, worker))
        });
    }
}
