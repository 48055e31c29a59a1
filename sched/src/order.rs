//! Job ordering shared by the online policies: fair-share order (by group
//! shares, then running tasks, then submission) and group weights.

use crate::view::{ClusterView, JobView};
use base::JobId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Group weights for the fair policies: group name -> weight (any positive
/// numbers; they are normalised). Jobs name their group at submission
/// (`group`, default `default`); a group not listed has weight 1.
pub type Weights = BTreeMap<String, f64>;

/// The order in which an online policy visits jobs for a free slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobOrder {
    /// Submission order (Hadoop's FIFO; DynDLOn's default).
    Fifo,
    /// Fewest running tasks first, ties by submission (Zaharia's fair
    /// sharing; delay scheduling's default).
    Fair,
}

impl JobOrder {
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

/// Jobs with pending tasks in `order`: submission order, or fair-sharing
/// order in one group ([`fair_order`] without groups).
pub fn job_order(view: &ClusterView, order: JobOrder) -> Vec<JobId> {
    match order {
        JobOrder::Fifo => view
            .jobs()
            .filter(|j| j.has_pending())
            .map(|j| j.id)
            .collect(),
        JobOrder::Fair => fair_order(view, &Weights::new(), false),
    }
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
