//! `fifo-s` / `hfs-s`: strict data locality, the EAS paper's FIFO-S and
//! HFS-S baselines. A map runs only where its input is: for each free slot of
//! the offered worker, jobs are visited in FIFO order (`fair = false`) or
//! fair-sharing order (`fair = true`: fewest running tasks first, as `delay`
//! orders them), and the first one with a data-local task for this worker
//! launches it. No job ever reads remotely, so a worker without local work
//! stays idle. (Their best-effort twins FIFO-BE and HFS-BE are `hadoop` and
//! `fair`.)

use crate::order::fair_order;
use crate::view::{Millis, SchedContext, Scheduler};
use common::policy::{SchedulerConfig, Weights};
use common::{JobId, WorkerId};

pub struct Strict {
    fair: bool,
}

impl Strict {
    pub fn new(fair: bool) -> Self {
        Strict { fair }
    }
}

impl Scheduler for Strict {
    fn name(&self) -> String {
        SchedulerConfig::Strict { fair: self.fair }.label()
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let no_groups = Weights::new();
        let fair = self.fair;
        ctx.fill(worker, |view| {
            let order: Vec<JobId> = if fair {
                fair_order(view, &no_groups, false)
            } else {
                view.jobs()
                    .filter(|j| j.has_pending())
                    .map(|j| j.id)
                    .collect()
            };
            let task = order
                .iter()
                .find_map(|id| view.job(*id)?.local_task(worker).map(|t| t.task))?;
            Some((task, worker))
        });
    }
}
