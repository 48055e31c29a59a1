//! `fifo-s` / `hfs-s`: strict data locality, the EAS paper's FIFO-S and
//! HFS-S baselines. A map runs only where its input is: for each free slot of
//! the offered worker, jobs are visited in FIFO order (`order = "fifo"`,
//! FIFO-S) or fair-sharing order (`order = "fair"`, HFS-S: fewest running
//! tasks first, as `delay` orders them; or any other [`JobOrder`]), and the
//! first one with a data-local task for this worker
//! launches it. No job ever reads remotely, so a worker without local work
//! stays idle. With `head_only`, only the first job of the order is looked
//! at, as the EAS paper's search does (its line 255): a slot whose head job
//! has nothing local here stays idle even if a later job has. (Their best-effort twins FIFO-BE and HFS-BE are `hadoop` and
//! `fair`.)

use crate::decision::{Pick, Rule, Why};
use crate::order::job_order;
use crate::policy::{is_false, JobOrder, Policy};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use serde::{Deserialize, Serialize};

/// `policy = "strict"`: strict data locality (EAS's FIFO-S and HFS-S
/// baselines): a free slot takes a data-local task of the first job that
/// has one, in FIFO order or (`order = "fair"`) fair-sharing order; never a
/// remote one. Presets `fifo-s`, `hfs-s`. The earlier spelling `fair =
/// true` / `false` (in the specs of results recorded before `order`) still
/// reads as `order = "fair"` / `"fifo"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, try_from = "StrictToml")]
pub struct StrictParams {
    /// Job order: `fifo` (default, FIFO-S), `fair` (HFS-S) or another.
    pub order: JobOrder,
    /// Look only at the first job of the order (the EAS paper's search,
    /// its line 255): a slot whose head job has nothing local here stays
    /// idle. Off: the first job with a local task takes the slot.
    #[serde(default, skip_serializing_if = "is_false")]
    pub head_only: bool,
}

/// What `[scheduler] policy = "strict"` may say, the old `fair` included.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictToml {
    #[serde(default)]
    order: Option<JobOrder>,
    #[serde(default)]
    fair: Option<bool>,
    #[serde(default)]
    head_only: bool,
}

impl TryFrom<StrictToml> for StrictParams {
    type Error = String;
    fn try_from(t: StrictToml) -> Result<Self, String> {
        let order = match (t.order, t.fair) {
            (Some(_), Some(_)) => {
                return Err(
                    "strict: `fair` is the old spelling of `order`; give one of them".into(),
                )
            }
            (Some(o), None) => o,
            (None, Some(true)) => JobOrder::Fair,
            (None, Some(false) | None) => JobOrder::Fifo,
        };
        Ok(StrictParams {
            order,
            head_only: t.head_only,
        })
    }
}

impl StrictParams {
    /// In `order`, looking at every job.
    pub fn new(order: JobOrder) -> Self {
        StrictParams {
            order,
            head_only: false,
        }
    }
}

impl Policy for StrictParams {
    const EXAMPLES: &'static [&'static str] = &[
        "fifo-s",
        "hfs-s",
        "policy = \"strict\", order = \"fair\", head_only = true",
        "policy = \"strict\", order = \"deadline\"",
    ];

    fn name(&self) -> &'static str {
        match self.order {
            JobOrder::Fifo => "fifo-s",
            JobOrder::Fair => "hfs-s",
            _ => "strict",
        }
    }

    fn label(&self, _: bool) -> String {
        let mut extra = Vec::new();
        if !matches!(self.order, JobOrder::Fifo | JobOrder::Fair) {
            extra.push(self.order.name());
        }
        if self.head_only {
            extra.push("head");
        }
        if extra.is_empty() {
            self.name().into()
        } else {
            format!("{}({})", self.name(), extra.join(","))
        }
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("fifo-s", StrictParams::new(JobOrder::Fifo)),
            ("hfs-s", StrictParams::new(JobOrder::Fair)),
        ]
    }

    fn build(&self, _seed: u64) -> Box<dyn Scheduler> {
        Box::new(Strict::new(self.clone()))
    }
}

pub struct Strict {
    params: StrictParams,
}

impl Strict {
    pub fn new(params: StrictParams) -> Self {
        Strict { params }
    }
}

impl Scheduler for Strict {
    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (order, head_only) = (self.params.order, self.params.head_only);
        ctx.fill_why(worker, |view| {
            let jobs = job_order(view, order);
            let looked_at = if head_only {
                &jobs[..jobs.len().min(1)]
            } else {
                &jobs[..]
            };
            looked_at
                .iter()
                .enumerate()
                .find_map(|(rank, id)| {
                    let job = view.job(*id)?;
                    let t = job.local_task(worker)?;
                    Some(Pick {
                        task: t.task,
                        source: worker,
                        why: order.ranked(view, Why::rule(Rule::DataLocal), job, rank),
                    })
                })
                .ok_or_else(|| {
                    let why = Why::rule(Rule::NoLocalTask);
                    match jobs.first() {
                        Some(&j) => why.for_job(j),
                        None => why,
                    }
                })
        });
    }
}
