//! Task picking shared by the online policies: which pending task of one
//! job a free slot takes (a data-local one, a random one, dl-sched's choice)
//! and delay scheduling's per-job skip state.

use crate::decision::{Pick, Rule, Why};
use crate::order::JobOrder;
use crate::view::{ClusterView, JobView, Millis};
use base::{JobId, TaskRef, WorkerId};
use rand_chacha::ChaCha8Rng;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

/// Where delay scheduling measures a job's wait for a data-local slot from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WaitFrom {
    /// From the first time the job was skipped since its last data-local
    /// launch; once over the threshold it may launch remote tasks until it
    /// next launches a data-local one (Zaharia et al.'s Algorithm 2, the
    /// `j.skipped` / level rule of the EuroSys 2010 paper).
    #[default]
    FirstSkip,
    /// From the job's last launch of any task (or its submission): a job
    /// that has not launched for `threshold_s` takes the next free slot
    /// whether or not its data is there, and each launch restarts the clock
    /// (Spark before 3.1: `TaskSetManager` reset its locality timer on every
    /// launch).
    LastLaunch,
    /// Hadoop 1.x fair scheduler's accounting (`updateLocalityWaitTimes`):
    /// at every heartbeat, a job that was offered a slot and skipped at the
    /// previous heartbeat (from any worker) adds the time between the two to
    /// its wait; any launch resets the wait. Time in which the job is not
    /// offered a slot (every slot busy, or taken by a job ahead of it) does
    /// not count. After a remote launch it may launch remote tasks at once
    /// until it next launches a data-local one (Hadoop's rack level, all
    /// workers being on one rack).
    SkippedHeartbeats,
    /// Spark 3.1 and later (SPARK-18886, apache/spark pull request 27207):
    /// the wait runs from the job's submission or its last reset, and a
    /// launch resets it only if the job declined no offer for locality
    /// since the last reset. A job that keeps launching data-local tasks on
    /// one worker while it declines the others' free slots therefore still
    /// goes remote once `threshold_s` has passed (under `last-launch` it
    /// would wait for ever). Once remote launches are allowed no offer is
    /// declined, so the next launch resets the wait, and a data-local one
    /// takes the job back to data-local launches. Spark also resets after a
    /// round that offered all free resources without a decline; here every
    /// offer is one worker's, and a launch while remote launches are
    /// allowed plays that part.
    Spark,
}

impl WaitFrom {
    pub(crate) fn is_first_skip(&self) -> bool {
        *self == WaitFrom::FirstSkip
    }
}

/// Which pending task a data-remote launch takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RemotePick {
    /// A uniformly random pending task, from a random replica (Guo's dl-sched).
    #[default]
    Random,
    /// The oldest pending task, from its first replica (Hadoop 1.x's
    /// non-local task list, and the tie-break of DynDL's worked example).
    Oldest,
}

impl RemotePick {
    pub(crate) fn is_random(&self) -> bool {
        *self == RemotePick::Random
    }

    pub(crate) fn suffix(&self) -> &'static str {
        match self {
            RemotePick::Random => "",
            RemotePick::Oldest => ",oldest",
        }
    }
}

/// A pending task of `job` for `worker` when locality is given up: a
/// uniformly random one read from a random replica, or with
/// [`RemotePick::Oldest`] the oldest one read from its first replica; either
/// way data-local if it happens to have a replica on `worker`. None if the
/// job has no pending task or the task has no live replica.
pub fn random_task(
    rng: &mut impl rand::Rng,
    job: &JobView,
    worker: WorkerId,
    pick: RemotePick,
) -> Option<(TaskRef, WorkerId)> {
    if !job.has_pending() {
        return None;
    }
    let t = match pick {
        RemotePick::Random => job.pending_at(rng.gen_range(0..job.pending_len()))?,
        RemotePick::Oldest => job.pending_at(0)?,
    };
    if t.replicas.is_empty() {
        // The owner fails such tasks' jobs; never pick one.
        return None;
    }
    let src = if t.replicas.contains(&worker) {
        worker
    } else {
        match pick {
            RemotePick::Random => t.replicas[rng.gen_range(0..t.replicas.len())],
            RemotePick::Oldest => t.replicas[0],
        }
    };
    Some((t.task, src))
}

/// dl-sched's choice within one job: a data-local task for `worker` if the
/// job has one, else a random task read from a random replica.
pub fn dl_choice(
    rng: &mut impl rand::Rng,
    job: &JobView,
    worker: WorkerId,
    pick: RemotePick,
) -> Option<(TaskRef, WorkerId)> {
    match job.local_task(worker) {
        Some(t) => Some((t.task, worker)),
        None => random_task(rng, job, worker, pick),
    }
}

/// Per-job skip state of delay scheduling.
pub struct LocalityWait {
    threshold: Millis,
    pick: RemotePick,
    from: WaitFrom,
    /// `first-skip`: jobs being skipped, and since when; `last-launch`:
    /// each job's last launch; `skipped-heartbeats`: each job's wait so far.
    since: FxHashMap<JobId, Millis>,
    /// `skipped-heartbeats` only: the heartbeat accounting.
    hb: Heartbeats,
    /// `spark` only: jobs that declined an offer since their last reset.
    declined: FxHashSet<JobId>,
    /// `spark` only: jobs allowed to launch remote tasks.
    any_level: FxHashSet<JobId>,
}

/// Hadoop 1.x fair scheduler's wait accounting (`skipped-heartbeats`).
#[derive(Default)]
struct Heartbeats {
    /// The previous heartbeat, from any worker.
    last: Option<Millis>,
    /// Jobs offered a slot and skipped at the previous heartbeat.
    skipped: FxHashSet<JobId>,
    /// This heartbeat's visited jobs, and those of them that launched.
    visited: FxHashSet<JobId>,
    launched: FxHashSet<JobId>,
    /// Jobs whose last launch was remote: they may go remote at once.
    remote_level: FxHashSet<JobId>,
}

impl LocalityWait {
    pub fn new(threshold: Millis, pick: RemotePick) -> Self {
        LocalityWait {
            threshold,
            pick,
            from: WaitFrom::FirstSkip,
            since: FxHashMap::default(),
            hb: Heartbeats::default(),
            declined: FxHashSet::default(),
            any_level: FxHashSet::default(),
        }
    }

    /// The same, measuring the wait from where `from` says.
    pub fn measured_from(self, from: WaitFrom) -> Self {
        LocalityWait { from, ..self }
    }

    pub fn wait_from(&self) -> WaitFrom {
        self.from
    }

    /// What `job` launches on `worker` now, with the rule that allows it,
    /// or why it declines (its wait and threshold).
    pub fn choose(
        &mut self,
        rng: &mut ChaCha8Rng,
        now: Millis,
        worker: WorkerId,
        job: &JobView,
    ) -> Result<Pick, Why> {
        let threshold = self.threshold;
        let local = |t: &crate::view::PendingTask| Pick {
            task: t.task,
            source: worker,
            why: Why::rule(Rule::DataLocal),
        };
        // A remote pick (or a local one, when the random task happens to
        // have a replica here) allowed by `rule`.
        let remote = |rng: &mut ChaCha8Rng, rule: Rule, waited: Millis| {
            random_task(rng, job, worker, self.pick)
                .map(|(task, source)| Pick {
                    task,
                    source,
                    why: Why::rule(if source == worker {
                        Rule::DataLocal
                    } else {
                        rule
                    })
                    .waited(waited, threshold),
                })
                .ok_or(Why::rule(Rule::NothingToRun).for_job(job.id))
        };
        let waiting = |waited: Millis| {
            Err(Why::rule(Rule::Waiting)
                .waited(waited, threshold)
                .for_job(job.id))
        };
        match self.from {
            WaitFrom::FirstSkip => {
                if let Some(t) = job.local_task(worker) {
                    self.since.remove(&job.id);
                    return Ok(local(t));
                }
                let waited = now.saturating_sub(*self.since.entry(job.id).or_insert(now));
                if waited >= threshold {
                    // Zaharia's `j.skipped`: over the threshold until the
                    // next local launch.
                    remote(rng, Rule::WaitOver, waited)
                } else {
                    waiting(waited)
                }
            }
            WaitFrom::LastLaunch => {
                let choice = match job.local_task(worker) {
                    Some(t) => Ok(local(t)),
                    None => {
                        let since = self.since.get(&job.id).copied().unwrap_or(job.submitted_at);
                        let waited = now.saturating_sub(since);
                        if waited >= threshold {
                            remote(rng, Rule::WaitOver, waited)
                        } else {
                            waiting(waited)
                        }
                    }
                };
                if choice.is_ok() {
                    self.since.insert(job.id, now);
                }
                choice
            }
            WaitFrom::Spark => {
                let id = job.id;
                let choice = match job.local_task(worker) {
                    Some(t) => Ok(local(t)),
                    None => {
                        let since = self.since.get(&id).copied().unwrap_or(job.submitted_at);
                        let waited = now.saturating_sub(since);
                        let rule = if self.any_level.contains(&id) {
                            Rule::RemoteLevel
                        } else {
                            Rule::WaitOver
                        };
                        if waited >= threshold {
                            self.any_level.insert(id);
                        }
                        if self.any_level.contains(&id) {
                            remote(rng, rule, waited)
                        } else {
                            self.declined.insert(id);
                            waiting(waited)
                        }
                    }
                };
                if let Ok(p) = &choice {
                    if !self.declined.contains(&id) || self.any_level.contains(&id) {
                        self.since.insert(id, now);
                        self.declined.remove(&id);
                        if p.source == worker {
                            self.any_level.remove(&id);
                        }
                    }
                }
                choice
            }
            WaitFrom::SkippedHeartbeats => {
                self.hb.visited.insert(job.id);
                let choice = match job.local_task(worker) {
                    Some(t) => {
                        self.hb.remote_level.remove(&job.id);
                        Ok(local(t))
                    }
                    None => {
                        let waited = self.since.get(&job.id).copied().unwrap_or(0);
                        let level = self.hb.remote_level.contains(&job.id);
                        if waited >= threshold || level {
                            let rule = if level {
                                Rule::RemoteLevel
                            } else {
                                Rule::WaitOver
                            };
                            let c = remote(rng, rule, waited);
                            if let Ok(p) = &c {
                                if p.source == worker {
                                    self.hb.remote_level.remove(&job.id);
                                } else {
                                    self.hb.remote_level.insert(job.id);
                                }
                            }
                            c
                        } else {
                            waiting(waited)
                        }
                    }
                };
                if choice.is_ok() {
                    self.since.insert(job.id, 0);
                    self.hb.launched.insert(job.id);
                }
                choice
            }
        }
    }

    /// A heartbeat from any worker at `now`, before its offer (Hadoop's
    /// `updateLocalityWaitTimes`): jobs skipped at the previous heartbeat
    /// add the time since it to their wait. Only `skipped-heartbeats` keeps
    /// this account; the other rules ignore it.
    pub fn heartbeat(&mut self, now: Millis) {
        if self.from != WaitFrom::SkippedHeartbeats {
            return;
        }
        let dt = self.hb.last.map_or(0, |t| now.saturating_sub(t));
        self.hb.last = Some(now);
        for j in self.hb.skipped.drain() {
            *self.since.entry(j).or_insert(0) += dt;
        }
    }

    /// The end of one offer: the jobs it visited that launched nothing are
    /// the ones skipped at this heartbeat.
    pub fn offer_done(&mut self) {
        if self.from != WaitFrom::SkippedHeartbeats {
            return;
        }
        let hb = &mut self.hb;
        hb.skipped.clear();
        hb.skipped
            .extend(hb.visited.difference(&hb.launched).copied());
        hb.visited.clear();
        hb.launched.clear();
    }

    /// How long a job waits before it may read remotely.
    pub fn threshold(&self) -> Millis {
        self.threshold
    }

    /// How a remote task is picked once the wait is over.
    pub fn pick(&self) -> RemotePick {
        self.pick
    }

    /// Until when an offer from a worker that holds none of `jobs`' pending
    /// maps launches nothing and changes nothing here (`jobs`: those with a
    /// pending map): the first moment one of them may go remote. Under
    /// `first-skip` only once every one of them is being skipped (a job's
    /// first skip starts its wait), under `last-launch` always; the other
    /// rules count declined offers, so none.
    pub fn declines_until<'a>(&self, jobs: impl Iterator<Item = &'a JobView>) -> Option<Millis> {
        let mut until = Millis::MAX;
        for j in jobs {
            let since = match self.from {
                WaitFrom::FirstSkip => *self.since.get(&j.id)?,
                WaitFrom::LastLaunch => self.since.get(&j.id).copied().unwrap_or(j.submitted_at),
                WaitFrom::Spark | WaitFrom::SkippedHeartbeats => return None,
            };
            until = until.min(since.saturating_add(self.threshold));
        }
        Some(until)
    }

    /// Forgets jobs that left the view.
    pub fn retain(&mut self, alive: impl Fn(JobId) -> bool) {
        self.since.retain(|j, _| alive(*j));
        self.hb.skipped.retain(|j| alive(*j));
        self.hb.remote_level.retain(|j| alive(*j));
        self.declined.retain(|j| alive(*j));
        self.any_level.retain(|j| alive(*j));
    }
}

/// What the first job in `order` that launches something would launch on
/// `worker` now, under the delay rule of `wait`: the choice of one free slot
/// for [`crate::SchedContext::fill_why`], with the job's place in the order
/// (`order_name` and each job's key by `key`); or why the first job
/// visited declined.
pub fn first_choice(
    wait: &mut LocalityWait,
    rng: &mut ChaCha8Rng,
    now: Millis,
    worker: WorkerId,
    view: &ClusterView,
    order: &[JobId],
    job_order: JobOrder,
) -> Result<Pick, Why> {
    let mut first_decline = None;
    for (rank, &id) in order.iter().enumerate() {
        let Some(job) = view.job(id).filter(|j| j.has_pending()) else {
            continue;
        };
        match wait.choose(rng, now, worker, job) {
            Ok(mut p) => {
                p.why = job_order.ranked(view, p.why, job, rank);
                return Ok(p);
            }
            Err(why) => {
                first_decline.get_or_insert(job_order.ranked(view, why, job, rank));
            }
        }
    }
    Err(first_decline.unwrap_or(Why::rule(Rule::NothingToRun)))
}
