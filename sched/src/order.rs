//! Job ordering shared by the online policies: the orders a policy may
//! visit jobs in ([`JobOrder`]: submission, fair sharing, shortest
//! remaining, earliest deadline), fair-share order by group shares, and
//! group weights.

use crate::decision::Why;
use crate::view::{ClusterView, JobView};
use base::JobId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Group weights for the fair policies: group name -> weight (any positive
/// numbers; they are normalised). Jobs name their group at submission
/// (`group`, default `default`); a group not listed has weight 1.
pub type Weights = BTreeMap<String, f64>;

/// The order in which an online policy visits jobs for a free slot: a
/// factor of its own, apart from where the policy places a job's tasks
/// (each policy that visits jobs in an order takes `order`, defaulting to
/// its paper's).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum JobOrder {
    /// Submission order (Hadoop's FIFO; DynDLOn's default).
    Fifo,
    /// Fewest running tasks first, ties by submission (Zaharia's fair
    /// sharing; delay scheduling's default).
    Fair,
    /// Fewest tasks left (pending and running) first, ties by submission:
    /// shortest remaining processing time counted in tasks.
    ShortestRemaining,
    /// Earliest deadline first (jobs submitted with `deadline_s`); jobs
    /// without a deadline after those with one, in submission order.
    Deadline,
}

impl JobOrder {
    pub const ALL: [JobOrder; 4] = [
        JobOrder::Fifo,
        JobOrder::Fair,
        JobOrder::ShortestRemaining,
        JobOrder::Deadline,
    ];

    /// The kebab-case name, as TOML spells it.
    pub fn name(&self) -> &'static str {
        match self {
            JobOrder::Fifo => "fifo",
            JobOrder::Fair => "fair",
            JobOrder::ShortestRemaining => "shortest-remaining",
            JobOrder::Deadline => "deadline",
        }
    }

    /// `job`'s key in this order (smaller goes first): its submission time
    /// (ms), running tasks, tasks left, or deadline (ms; none: infinite).
    pub fn key(&self, job: &JobView) -> f64 {
        match self {
            JobOrder::Fifo => job.submitted_at as f64,
            JobOrder::Fair => f64::from(job.running),
            JobOrder::ShortestRemaining => job.pending_len() as f64 + f64::from(job.running),
            JobOrder::Deadline => job.qos.deadline.map_or(f64::INFINITY, |d| d as f64),
        }
    }

    /// `why` with `job`'s place `rank` in this order and its key, when
    /// `view` keeps the decision record (else `why` as it is: the key is
    /// not computed for nobody).
    pub fn ranked(&self, view: &ClusterView, why: Why, job: &JobView, rank: usize) -> Why {
        if !view.recording() {
            return why;
        }
        Why {
            order: Some(self.name()),
            rank: rank as u32,
            key: Some(self.key(job)),
            ..why
        }
    }

    pub(crate) fn is_fifo(&self) -> bool {
        *self == JobOrder::Fifo
    }
    pub(crate) fn is_fair(&self) -> bool {
        *self == JobOrder::Fair
    }
}

/// Jobs with pending tasks in fair-share order (`by_group`: weighted group
/// shares first; without, every job is in one group).
pub fn fair_order(view: &ClusterView, weights: &Weights, by_group: bool) -> Vec<JobId> {
    // Groups are few: a flat list beats maps here (this runs per free slot).
    let mut groups: Vec<(&str, f64, u32)> = Vec::new();
    let mut group_of: Vec<usize> = Vec::with_capacity(64);
    for j in view.jobs() {
        let name = if by_group { j.group.as_str() } else { "" };
        // One group without `by_group`: no string comparisons (they were
        // most of delay's decision cost).
        let found = if by_group {
            groups.iter().position(|g| g.0 == name)
        } else {
            (!groups.is_empty()).then_some(0)
        };
        let g = match found {
            Some(g) => g,
            None => {
                let w = weights.get(name).copied().unwrap_or(1.0);
                groups.push((name, w, 0));
                groups.len() - 1
            }
        };
        groups[g].2 += j.running;
        group_of.push(g);
    }
    let total: f64 = groups.iter().map(|g| g.1).sum::<f64>().max(1e-12);
    let mut jobs: Vec<(f64, u32, usize, JobId)> = view
        .jobs()
        .enumerate()
        .filter(|(_, j)| j.has_pending())
        .map(|(pos, j)| {
            let (_, w, running) = groups[group_of[pos]];
            (
                running as f64 / (w / total).max(1e-12),
                j.running,
                pos,
                j.id,
            )
        })
        .collect();
    jobs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    jobs.into_iter().map(|j| j.3).collect()
}

/// Jobs with pending tasks in `order`: submission order, fair-sharing
/// order in one group ([`fair_order`] without groups), fewest tasks left,
/// or earliest deadline.
pub fn job_order(view: &ClusterView, order: JobOrder) -> Vec<JobId> {
    let pending = || view.jobs().filter(|j| j.has_pending());
    match order {
        JobOrder::Fifo => pending().map(|j| j.id).collect(),
        JobOrder::Fair => fair_order(view, &Weights::new(), false),
        JobOrder::ShortestRemaining => {
            by_key(pending(), |j| j.pending_len() as u64 + u64::from(j.running))
        }
        JobOrder::Deadline => by_key(pending(), |j| j.qos.deadline.unwrap_or(u64::MAX)),
    }
}

/// A [`job_order`] kept while the view's jobs do not change
/// ([`ClusterView::jobs_epoch`]): heartbeats that change nothing (most of
/// them, in a large cluster running short tasks) do not sort the jobs
/// again. Debug builds check every kept order against a fresh one.
#[derive(Debug, Default)]
pub struct OrderCache {
    key: Option<(u64, JobOrder)>,
    jobs: Vec<JobId>,
}

impl OrderCache {
    /// `view`'s jobs in `order`, built afresh only if they changed.
    pub fn get(&mut self, view: &ClusterView, order: JobOrder) -> &[JobId] {
        let key = (view.jobs_epoch(), order);
        if self.key != Some(key) {
            self.jobs = job_order(view, order);
            self.key = Some(key);
        } else {
            debug_assert_eq!(
                self.jobs,
                job_order(view, order),
                "a kept job order no longer holds"
            );
        }
        &self.jobs
    }
}

/// The first job of `order` with a pending task: [`ClusterView::head_job`]
/// for FIFO, without building the whole order.
pub fn first_job(view: &ClusterView, order: JobOrder) -> Option<&JobView> {
    match order {
        JobOrder::Fifo => view.head_job(),
        _ => job_order(view, order).first().and_then(|&j| view.job(j)),
    }
}

/// `jobs` (in submission order) sorted by `key`, ties kept in submission
/// order.
fn by_key<'a>(
    jobs: impl Iterator<Item = &'a JobView>,
    key: impl Fn(&JobView) -> u64,
) -> Vec<JobId> {
    let mut v: Vec<(u64, JobId)> = jobs.map(|j| (key(j), j.id)).collect();
    v.sort_by_key(|(k, _)| *k);
    v.into_iter().map(|(_, j)| j).collect()
}

/// Normalised weight of each group present among `jobs` (absent from
/// `weights` = 1), for the fair policies.
pub fn group_weights<'a>(
    weights: &Weights,
    jobs: impl Iterator<Item = &'a JobView>,
) -> BTreeMap<&'a str, f64> {
    let mut w: BTreeMap<&'a str, f64> = BTreeMap::new();
    for j in jobs {
        w.entry(j.group.as_str())
            .or_insert_with(|| weights.get(&j.group).copied().unwrap_or(1.0));
    }
    let total: f64 = w.values().sum();
    if total > 0.0 {
        for v in w.values_mut() {
            *v /= total;
        }
    }
    w
}
