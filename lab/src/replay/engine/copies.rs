//! A reduce's output copies over the network
//! ([`ReplayCluster::shuffle_net`]): the workers that take them are picked
//! when the reduce starts, by the master's own rule
//! ([`sched::reduce::targets::output_targets`]: the fewest copies coming
//! in, then not running a reduce), and each copy is a transfer from the
//! reducer's transmit link into its target's receive link, shared with
//! every other transfer on them (fetches, remote reads, other copies). The
//! reduce ends once its fetch and then its copies are done, and not before
//! its own time.

use super::*;
use sched::reduce::targets::{output_targets, Load};

/// A reduce attempt waiting on the network ([`ReplayCluster::shuffle_net`]):
/// the end of its own time, how long each of its output's copies takes
/// alone (ms), its fetch's parts in flight and then its copies in flight.
pub(super) struct Fetching {
    pub(super) floor: u64,
    pub(super) copy_ms: f64,
    pub(super) in_flight: usize,
    pub(super) copies: usize,
}

/// The running reduce attempts' output targets, and what the rule weighs.
#[derive(Default)]
pub(super) struct Copies {
    /// Each running reduce attempt (by task, worker and start): the
    /// workers its output copies go to (none without the network).
    targets: HashMap<(TaskRef, u32, u64), Vec<u32>>,
    /// Per worker: copies it is to receive from running reduces, and
    /// reduce attempts it runs.
    incoming: Vec<u32>,
    reducing: Vec<u32>,
}

impl Replay<'_> {
    /// A reduce attempt of `task` starts on worker `w` at `t`. Its fetch
    /// loads the disks (and links) its job's maps ran on; with the shuffle
    /// over the network its end waits for that fetch.
    pub(super) fn start_reduce(&mut self, task: TaskRef, w: u32, t: u64) {
        let job = &self.jobs[self.job_index[&task.job]];
        let (len, output) =
            find(&job.reduces, task.index).map_or((0, 0), |r| (r.local_ms, r.bytes));
        let measured = self.cluster.measured(task, true, w, w);
        let len =
            measured.unwrap_or((len as f64 * self.cluster.slowdown(w as usize)).round() as u64);
        let net = self.cluster.shuffle_net.filter(|_| measured.is_none());
        let mut parts = match self.map_spread.get(&task.job) {
            Some(spread) => super::super::flows::fetch_parts(
                task,
                (w, t),
                job.reduce_load,
                spread,
                |v| self.cluster.disk_bpms(v),
                net.map_or(0.0, |n| n.link_bpms),
            ),
            None => VecDeque::new(),
        };
        // Over the network its output's copies go out once its fetch is
        // done, to the workers the master's rule picks now.
        let copies = net.map_or(0, |n| n.extra_copies);
        self.reduce_started(task, w, t, if output > 0 { copies } else { 0 });
        let copy_ms = net.map_or(0.0, |n| output as f64 / n.link_bpms);
        let waits = net.is_some();
        self.running[w as usize].push(t);
        self.live.entry((task, true)).or_default().push(Attempt {
            worker: w,
            source: w,
            start: t,
            end: (!waits).then_some(t + len),
        });
        self.last_progress = t;
        let mut in_flight = 0;
        for _ in 0..super::super::FETCH_PARALLEL {
            if let Some(x) = parts.pop_front() {
                self.flows.push(x);
                in_flight += 1;
            }
        }
        if !parts.is_empty() {
            self.fetch_left.insert((task, w, t), parts);
        }
        if waits {
            let f = Fetching {
                floor: t + len,
                copy_ms,
                in_flight,
                copies: 0,
            };
            self.fetching.insert((task, w, t), f);
            if in_flight == 0 {
                // Nothing to fetch over the links (its maps ran here): its
                // output's copies still go out.
                self.copies_or_end((task, w, t), t);
            }
        } else {
            let end = t + len;
            self.ends
                .push(Reverse((end, w, task.job, task.index, w, t, true)));
        }
    }

    /// Reduce `task` starts on `w` at `t`: it counts as running there, and
    /// over the network (`copies` of its output beyond its own) it picks
    /// the workers that take them, among those that hold data, as the
    /// master does at launch.
    pub(super) fn reduce_started(&mut self, task: TaskRef, w: u32, t: u64, copies: u32) {
        let n = self.cluster.slots.len();
        let c = &mut self.copies;
        if c.incoming.len() < n {
            c.incoming.resize(n, 0);
            c.reducing.resize(n, 0);
        }
        let mut targets = Vec::new();
        if copies > 0 {
            let alive: Vec<WorkerId> = (0..n as u32)
                .filter(|&v| {
                    v == w
                        || self
                            .cluster
                            .runs_maps
                            .get(v as usize)
                            .copied()
                            .unwrap_or(true)
                })
                .map(WorkerId)
                .collect();
            let job = &self.jobs[self.job_index[&task.job]];
            // The reduce's number among its job's reduces.
            let r = task.index.saturating_sub(job.tasks.len() as u32) as usize;
            let reducing: Vec<bool> = c.reducing.iter().map(|&k| k > 0).collect();
            let load = Load {
                // No worker is slow to the replay (the master avoids a
                // job's slow nodes, which speculation names).
                slow: &[],
                incoming: &c.incoming,
                reducing: &reducing,
            };
            let shift = (task.job.0 as usize + r) % alive.len().max(1);
            targets = output_targets(&alive, WorkerId(w), copies as usize, &load, shift)
                .into_iter()
                .map(|v| v.0)
                .collect();
        }
        for &v in &targets {
            c.incoming[v as usize] += 1;
        }
        c.reducing[w as usize] += 1;
        c.targets.insert((task, w, t), targets);
    }

    /// The reduce attempt started at `start` on `w` ended or was killed:
    /// it no longer counts. A killed one's transfers in flight are
    /// dropped; an ended one's fetch parts, if any are left, go on loading
    /// the disks (without the network its end does not wait for them).
    pub(super) fn reduce_gone(&mut self, task: TaskRef, w: u32, start: u64, killed: bool) {
        let key = (task, w, start);
        if let Some(targets) = self.copies.targets.remove(&key) {
            for v in targets {
                self.copies.incoming[v as usize] -= 1;
            }
            self.copies.reducing[w as usize] -= 1;
        }
        if killed {
            self.fetch_left.remove(&key);
            self.fetching.remove(&key);
            self.flows.drop_reduce(task, w, start);
        }
    }

    /// A reduce waiting on the network (`key`) has its whole input at
    /// `at`: its output copies start, or, with none to send, it ends (not
    /// before its own time).
    pub(super) fn copies_or_end(&mut self, key: (TaskRef, u32, u64), at: u64) {
        let Some(f) = self.fetching.get_mut(&key) else {
            return;
        };
        let (task, w, start) = key;
        let targets = match self.copies.targets.get(&key) {
            Some(t) if f.copy_ms > 0.0 => t.clone(),
            _ => Vec::new(),
        };
        if targets.is_empty() {
            let end = f.floor.max(at);
            self.fetching.remove(&key);
            self.attempt_ends(task, true, (w, w), start, end);
            return;
        }
        f.copies = targets.len();
        let left = f.copy_ms;
        for v in targets {
            self.flows.push(Transfer {
                job: task.job,
                index: task.index,
                worker: v,
                source: w,
                start,
                left,
                then_ms: 0,
                floor: 0,
                how: Flow::Net,
                only_load: false,
                fetch: false,
                copy_of: Some(w),
            });
        }
    }

    /// An output copy `x` of the reduce on `owner` is in at `at`: the
    /// reduce ends with its last one (not before its own time).
    pub(super) fn copy_done(&mut self, x: &Transfer, owner: u32, at: u64) {
        let task = TaskRef {
            job: x.job,
            index: x.index,
        };
        let key = (task, owner, x.start);
        let Some(f) = self.fetching.get_mut(&key) else {
            return;
        };
        f.copies = f.copies.saturating_sub(1);
        if f.copies > 0 {
            return;
        }
        let end = f.floor.max(at);
        self.fetching.remove(&key);
        self.attempt_ends(task, true, (owner, owner), x.start, end);
    }
}
