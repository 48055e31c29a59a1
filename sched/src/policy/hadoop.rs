//! `hadoop`: Hadoop's default FIFO scheduler with best-effort locality
//! (Guo et al.'s dl-sched).
//!
//! Jobs run in submission order. For each free slot of the offered worker,
//! the head job (oldest with a pending task) launches a data-local task if it
//! has one for this worker; otherwise, when the workers span several racks,
//! its first pending task with a replica in this worker's rack, read from
//! that rack; otherwise a uniformly random pending task of the head job,
//! read from a uniformly random replica (`pick = "oldest"`: the oldest
//! pending task, from its first replica). On one rack (no rack set) the
//! rack level never applies. `order` replaces submission order by another
//! [`JobOrder`] (the head job is the first of that order): an ablation,
//! labelled `hadoop(fair)` and so on.

use crate::decision::{Pick, Rule, Why};
use crate::order::first_job;
use crate::pick::random_task;
use crate::policy::{JobOrder, Policy, RemotePick};
use crate::view::{Millis, SchedContext, Scheduler};
use base::WorkerId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `policy = "hadoop"`: FIFO jobs; a data-local task of the head job, else
/// a random task of it read remotely. Preset `fifo-be` (EAS's FIFO
/// best-effort baseline).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HadoopParams {
    /// Which pending task a data-remote launch takes.
    #[serde(default, skip_serializing_if = "RemotePick::is_random")]
    pub pick: RemotePick,
    /// Job order: `fifo` (default, Hadoop's) or another, as an ablation.
    #[serde(default = "fifo", skip_serializing_if = "JobOrder::is_fifo")]
    pub order: JobOrder,
}

fn fifo() -> JobOrder {
    JobOrder::Fifo
}

impl Default for HadoopParams {
    fn default() -> Self {
        HadoopParams {
            pick: RemotePick::Random,
            order: JobOrder::Fifo,
        }
    }
}

impl Policy for HadoopParams {
    const EXAMPLES: &'static [&'static str] = &[
        "hadoop",
        "policy = \"hadoop\", pick = \"oldest\"",
        "policy = \"hadoop\", order = \"shortest-remaining\"",
    ];

    fn name(&self) -> &'static str {
        "hadoop"
    }

    fn label(&self, _: bool) -> String {
        let mut extra = Vec::new();
        if self.pick == RemotePick::Oldest {
            extra.push("oldest");
        }
        if self.order != JobOrder::Fifo {
            extra.push(self.order.name());
        }
        if extra.is_empty() {
            "hadoop".into()
        } else {
            format!("hadoop({})", extra.join(","))
        }
    }

    fn set_order(&mut self, order: JobOrder) -> Result<(), String> {
        self.order = order;
        Ok(())
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![("fifo-be", HadoopParams::default())]
    }

    fn build(&self, seed: u64) -> Box<dyn Scheduler> {
        Box::new(Hadoop::new(self.clone(), seed))
    }
}

pub struct Hadoop {
    params: HadoopParams,
    rng: ChaCha8Rng,
}

impl Hadoop {
    pub fn new(params: HadoopParams, seed: u64) -> Self {
        Hadoop {
            params,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Scheduler for Hadoop {
    /// With nothing waiting an offer finds no job: nothing changes.
    fn idle_offers_matter(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        self.params.label(false)
    }

    fn offer(&mut self, _now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>) {
        let (rng, pick, order) = (&mut self.rng, self.params.pick, self.params.order);
        ctx.fill_why(worker, |view| {
            let job = first_job(view, order).ok_or(Why::rule(Rule::NothingToRun))?;
            let (rule, (task, source)) = match job.local_task(worker) {
                Some(t) => (Rule::DataLocal, (t.task, worker)),
                None => match view.rack_local_task(job, worker) {
                    Some(c) => (Rule::RackLocal, c),
                    None => (
                        Rule::NoWait,
                        random_task(rng, job, worker, pick)
                            .ok_or(Why::rule(Rule::NothingToRun).for_job(job.id))?,
                    ),
                },
            };
            let rule = if source == worker {
                Rule::DataLocal
            } else {
                rule
            };
            Ok(Pick {
                task,
                source,
                why: order.ranked(view, Why::rule(rule), job, 0),
            })
        });
    }
}
