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
use crate::policy::{is_false, JobOrder, Policy};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use serde::{Deserialize, Serialize};

/// `policy = "strict"`: strict data locality (EAS's FIFO-S and HFS-S
/// baselines): a free slot takes a data-local task of the first job that
/// has one, in FIFO order or (`fair`) fair-sharing order; never a remote
/// one. Presets `fifo-s`, `hfs-s`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StrictParams {
    /// Fair-sharing job order (HFS-S); off: FIFO (FIFO-S).
    #[serde(default)]
    pub fair: bool,
    /// Look only at the first job of the order (the EAS paper's search,
    /// its line 255): a slot whose head job has nothing local here stays
    /// idle. Off: the first job with a local task takes the slot.
    #[serde(default, skip_serializing_if = "is_false")]
    pub head_only: bool,
}

impl Policy for StrictParams {
    const EXAMPLES: &'static [&'static str] = &[
        "fifo-s",
        "hfs-s",
        "policy = \"strict\", fair = true, head_only = true",
    ];

    fn name(&self) -> &'static str {
        if self.fair {
            "hfs-s"
        } else {
            "fifo-s"
        }
    }

    fn label(&self, _: bool) -> String {
        format!(
            "{}{}",
            self.name(),
            if self.head_only { "(head)" } else { "" }
        )
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("fifo-s", StrictParams::default()),
            (
                "hfs-s",
                StrictParams {
                    fair: true,
                    head_only: false,
                },
            ),
        ]
    }

    fn build(&self, _seed: u64) -> Box<dyn Scheduler> {
        Box::new(Strict::new(self.fair, self.head_only))
    }
}

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
        StrictParams {
            fair: self.fair,
            head_only: self.head_only,
        }
        .label(false)
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
