//! A simulator of a whole real run: many jobs arriving over time, workers
//! that heartbeat at their own phase, background processes holding slots,
//! tasks of given lengths, and data-remote reads that cost more the more
//! remote reads share their source and their reader. It drives the same
//! [`Scheduler`] through the same [`ClusterView`] and [`offer`] calls as
//! the master, so a policy runs here exactly as on the real cluster, on
//! virtual time in milliseconds.
//!
//! The model (every part measured on real runs by `master sim calibrate`):
//! - a worker is offered its free slots only at its heartbeats (every
//!   `heartbeat_ms`, from its `phase_ms`), and also at once when one of its
//!   tasks ends and when a job arrives (the master wakes idle workers) if
//!   `out_of_band`; launches start at the heartbeat. Without `out_of_band`
//!   the master learns of a map's end at its worker's next heartbeat, as
//!   the real one does: until then the job counts it running (the fair
//!   order sees it), and a job whose last map it was ends at that report;
//! - free slots = slots - running tasks - background processes running;
//! - a data-local task lasts its `local_ms`; a data-remote one first reads
//!   its block, by one of two [`RemoteModel`]s: a fixed extra when it starts
//!   ([`RemoteCost::extra_ms`] of the remote reads running from the same
//!   source and on the same reader, and of the block's size), or a transfer
//!   that shares the source's uplink and the reader's downlink fairly with
//!   the other transfers for as long as it lasts (its time alone in
//!   proportion to the block's size when the maps' inputs differ);
//! - when a job's last map ends its reduces wait, and each heartbeat offers
//!   the worker to the [`ReducePlacer`] before any map (as the master
//!   does); a reduce lasts its given time; a job ends when its last task
//!   (map, or reduce if it has any) ends.
//!
//! Launches a batch policy makes for another worker start at once (the
//! master would hold them until that worker's next heartbeat).

use crate::reduce::{offer_reduces, ReducePlacer};
use crate::sim::SimError;
use crate::view::SlotBusy;
use crate::view::{offer, ClusterView, Millis, PendingTask, Scheduler};
use base::{JobId, TaskRef, WorkerId};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// The workers: slots, heartbeat cadence and phase.
#[derive(Clone, Debug)]
pub struct ReplayCluster {
    /// Slots per worker; worker `i` is `WorkerId(i)`.
    pub slots: Vec<u32>,
    pub heartbeat_ms: u64,
    /// Each worker's first heartbeat (then one every period).
    pub phase_ms: Vec<u64>,
    /// Each worker's heartbeat period as measured (ms; a real worker's
    /// drifts a little above `heartbeat_ms`); empty: `heartbeat_ms`.
    pub period_ms: Vec<f64>,
    /// A worker also heartbeats when one of its tasks ends, and when a job
    /// arrives (the master asks idle workers to).
    pub out_of_band: bool,
    /// Worker roles (EAS's dedicated machines); empty: every worker runs
    /// both.
    pub runs_maps: Vec<bool>,
    pub runs_reduces: Vec<bool>,
    /// Each regular heartbeat comes up to this many ms late, drawn per
    /// worker and heartbeat from `jitter_seed` (0: on time). Real workers'
    /// heartbeats reach the master in an order that varies from round to
    /// round; this lets the replay vary it too.
    pub jitter_ms: u64,
    pub jitter_seed: u64,
    /// Keep the decision record ([`crate::decision`]), as the master does
    /// with `master.decisions`: [`ReplayOutcome::decisions`].
    pub record_decisions: bool,
    /// Host contention: each map lasts this many ms longer per other map
    /// launched anywhere in the cluster in the [`HOST_WINDOW_MS`] before
    /// it. The testbed's workers share one host's cores, so a burst of
    /// block reads and checks slows every task starting in it, and the
    /// bursts grow with the number of workers (0: none, as on a cluster of
    /// separate machines).
    pub host_ms_per_start: f64,
    /// Each worker's tasks last this many times their given length (a
    /// slow machine: 10 = a tenth of the speed); empty or missing: 1.
    pub slowdown: Vec<f64>,
    /// Speculative execution, as the master's `[speculation]`: the view
    /// runs the same rule, a backup runs like any map or reduce, the first
    /// attempt the master learns of wins and the other is killed then.
    pub speculation: crate::speculation::Speculation,
}

/// The window of [`ReplayCluster::host_ms_per_start`]: launches this recent
/// count.
pub const HOST_WINDOW_MS: u64 = 1_000;

#[derive(Clone, Debug)]
pub struct ReplayTask {
    pub index: u32,
    pub replicas: Vec<WorkerId>,
    /// How long it runs data-local.
    pub local_ms: u64,
    /// A map's input bytes (0: not known), which the per-byte terms of a
    /// remote read scale with.
    pub bytes: u64,
}

#[derive(Clone, Debug)]
pub struct ReplayJob {
    pub id: JobId,
    pub arrival_ms: u64,
    /// The maps.
    pub tasks: Vec<ReplayTask>,
    /// The reduces (their `replicas` are unused; `local_ms` is how long
    /// each runs), waiting once every map has ended.
    pub reduces: Vec<ReplayTask>,
    /// Estimated input bytes of each reduce (the least-loaded placement's
    /// load).
    pub reduce_load: u64,
}

/// A background process holding one slot of `worker` over [start, end).
#[derive(Clone, Copy, Debug)]
pub struct BackgroundRun {
    pub worker: WorkerId,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// What a data-remote read adds to a task: `base_ms + per_source_ms *
/// n_src + per_reader_ms * n_dst + per_mb_ms * MB`, with n_src (n_dst) the
/// other remote reads running from the same source (on the same reader)
/// when it starts and MB its block's size in 10^6 bytes. Never negative.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RemoteCost {
    pub base_ms: f64,
    pub per_source_ms: f64,
    pub per_reader_ms: f64,
    pub per_mb_ms: f64,
}

impl RemoteCost {
    /// The cost as a formula in ms: `base + a n_src + b n_dst`, and
    /// `+ c/MB` when it has a per-MB term.
    pub fn formula(&self) -> String {
        let mut f = format!(
            "{:.0} + {:.0} n_src + {:.0} n_dst",
            self.base_ms, self.per_source_ms, self.per_reader_ms
        );
        if self.per_mb_ms != 0.0 {
            f += &format!(" + {:.0}/MB", self.per_mb_ms);
        }
        f
    }

    pub fn extra_ms(&self, n_src: u32, n_dst: u32, bytes: u64) -> u64 {
        let mut x = self.base_ms
            + self.per_source_ms * f64::from(n_src)
            + self.per_reader_ms * f64::from(n_dst);
        if self.per_mb_ms != 0.0 {
            x += self.per_mb_ms * bytes as f64 / 1e6;
        }
        x.max(0.0).round() as u64
    }
}

/// How a data-remote read is charged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RemoteModel {
    /// A fixed extra decided when the task starts.
    Static(RemoteCost),
    /// A transfer of `transfer_ms` when alone (for a block of `ref_bytes`;
    /// a block of `bytes` takes `transfer_ms * bytes / ref_bytes`, unless
    /// either is 0), progressing at 1 / n, n the larger of the transfers
    /// from its source and to its reader now (max of the two links' fair
    /// shares); then the task runs its `local_ms`.
    FairShare { transfer_ms: f64, ref_bytes: u64 },
}

/// A block read in flight under [`RemoteModel::FairShare`].
struct Transfer {
    job: JobId,
    index: u32,
    worker: u32,
    source: u32,
    start: u64,
    /// Work left, in ms alone.
    left: f64,
    /// The task's local time, run once the block is read.
    then_ms: u64,
}

/// One task as it ran in the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRun {
    pub task: TaskRef,
    pub worker: WorkerId,
    /// Where a map read its block (the worker itself for a reduce).
    pub source: WorkerId,
    pub start_ms: u64,
    pub end_ms: u64,
    pub reduce: bool,
}

impl TaskRun {
    pub fn is_remote(&self) -> bool {
        self.worker != self.source
    }
}

#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    /// (job, arrival, end) per job, in `jobs` order.
    pub jobs: Vec<(JobId, u64, u64)>,
    pub runs: Vec<TaskRun>,
    /// The decision record (empty unless `record_decisions`), oldest first,
    /// and its inputs ([`crate::input`]).
    pub decisions: Vec<crate::decision::Decision>,
    pub inputs: Vec<crate::input::Input>,
    /// Backup attempts launched (speculation), and how many finished
    /// before the attempt they backed up.
    pub backups: u32,
    pub backups_won: u32,
}

impl ReplayOutcome {
    pub fn mean_jct_s(&self) -> f64 {
        let n = self.jobs.len().max(1) as f64;
        self.jobs
            .iter()
            .map(|(_, a, e)| e.saturating_sub(*a) as f64 / 1000.0)
            .sum::<f64>()
            / n
    }

    /// The last job's end, seconds from time 0 (the run's start).
    pub fn makespan_s(&self) -> f64 {
        self.jobs.iter().map(|j| j.2).max().unwrap_or(0) as f64 / 1000.0
    }

    pub fn remote_tasks(&self) -> usize {
        self.runs.iter().filter(|r| r.is_remote()).count()
    }
}

/// A running task: (end, worker, job, index, source, start, reduce).
type Ending = Reverse<(u64, u32, JobId, u32, u32, u64, bool)>;

/// One attempt of a map in flight: its worker, source, start and (once
/// its read is over, or at once without a fair-share read) its end.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    worker: u32,
    source: u32,
    start: u64,
    end: Option<u64>,
}

/// Task `task` succeeded on `winner`: its other attempts in flight, as
/// (worker, source, start), are taken off `live` to be killed.
fn kill_others(
    live: &mut BTreeMap<(TaskRef, bool), Vec<Attempt>>,
    task: (TaskRef, bool),
    winner: u32,
) -> Vec<(u32, u32, u64)> {
    live.remove(&task)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.worker != winner)
        .map(|a| (a.worker, a.source, a.start))
        .collect()
}

/// A reduce attempt of `task` starts on worker `w` at `t` for `len` ms.
fn start_reduce(
    live: &mut BTreeMap<(TaskRef, bool), Vec<Attempt>>,
    running: &mut [Vec<u64>],
    ends: &mut BinaryHeap<Ending>,
    task: TaskRef,
    w: u32,
    t: u64,
    len: u64,
) {
    running[w as usize].push(t);
    live.entry((task, true)).or_default().push(Attempt {
        worker: w,
        source: w,
        start: t,
        end: Some(t + len),
    });
    ends.push(Reverse((t + len, w, task.job, task.index, w, t, true)));
}

/// Runs `sched` over `jobs` on `cluster` with `background` and `remote`.
/// Fails if `give_up_ms` pass with tasks waiting and nothing launched.
#[allow(clippy::too_many_arguments)]
pub fn replay(
    sched: &mut dyn Scheduler,
    placer: &mut ReducePlacer,
    cluster: &ReplayCluster,
    jobs: &[ReplayJob],
    background: &[BackgroundRun],
    remote: RemoteModel,
    give_up_ms: u64,
) -> Result<ReplayOutcome, SimError> {
    let n = cluster.slots.len();
    let hb = cluster.heartbeat_ms.max(1);
    let mut view = ClusterView::new();
    view.record_decisions(cluster.record_decisions);
    for (i, &s) in cluster.slots.iter().enumerate() {
        let w = WorkerId(i as u32);
        view.upsert_worker(w, s);
        view.set_runs_maps(w, cluster.runs_maps.get(i).copied().unwrap_or(true));
        view.set_runs_reduces(w, cluster.runs_reduces.get(i).copied().unwrap_or(true));
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&j| (jobs[j].arrival_ms, j));
    let mut next_job = 0;
    // Per job: its index, maps left, reduces left, maps run per worker.
    let mut left: std::collections::HashMap<JobId, (usize, usize, usize, BTreeMap<WorkerId, u64>)> =
        Default::default();
    let mut done_at: Vec<Option<u64>> = vec![None; jobs.len()];
    let local_ms = |job: usize, index: u32| {
        jobs[job]
            .tasks
            .iter()
            .find(|t| t.index == index)
            .map_or((0, 0), |t| (t.local_ms, t.bytes))
    };
    // Heartbeats: (time, worker, Some(k) for the k-th regular one), earliest
    // first; a regular one schedules the next, an out-of-band one does not.
    let phase = |w: usize| cluster.phase_ms.get(w).copied().unwrap_or(0) as f64;
    let period = |w: usize| {
        cluster
            .period_ms
            .get(w)
            .copied()
            .filter(|p| p.is_finite() && *p >= 1.0)
            .unwrap_or(hb as f64)
    };
    let jitter = |w: usize, k: u64| {
        if cluster.jitter_ms == 0 {
            return 0;
        }
        let h = base::hash::splitmix64(
            cluster.jitter_seed ^ base::hash::splitmix64(((w as u64) << 40) ^ k),
        );
        h % (cluster.jitter_ms + 1)
    };
    let mut beats: BinaryHeap<Reverse<(u64, u32, Option<u64>)>> = (0..n)
        .map(|w| Reverse((phase(w).round() as u64 + jitter(w, 0), w as u32, Some(0))))
        .collect();
    if cluster.out_of_band {
        // A job's arrival wakes every worker (one with no free slot takes
        // nothing, as one the master does not wake).
        let mut arrivals: Vec<u64> = jobs.iter().map(|j| j.arrival_ms).collect();
        arrivals.sort_unstable();
        arrivals.dedup();
        for t in arrivals {
            beats.extend((0..n).map(|w| Reverse((t, w as u32, None))));
        }
    }
    let mut ends: BinaryHeap<Ending> = BinaryHeap::new();
    // Per worker: running tasks (start times), remote reads in and out.
    let mut running: Vec<Vec<u64>> = vec![Vec::new(); n];
    // Map launches in the last HOST_WINDOW_MS, for the host term.
    let mut launched: VecDeque<u64> = VecDeque::new();
    let mut remote_in = vec![0u32; n];
    let mut remote_out = vec![0u32; n];
    let mut runs: Vec<TaskRun> = Vec::new();
    let total: usize = jobs.iter().map(|j| j.tasks.len() + j.reduces.len()).sum();
    let mut finished = 0usize;
    let mut last_progress = 0u64;
    let job_index: std::collections::HashMap<JobId, usize> =
        jobs.iter().enumerate().map(|(i, j)| (j.id, i)).collect();
    // FairShare: transfers in flight, per source and per reader.
    let mut transfers: Vec<Transfer> = Vec::new();
    let mut xfer_out = vec![0u32; n];
    let mut xfer_in = vec![0u32; n];
    // Tasks in flight, by task and kind (true: a reduce; a job's reduces
    // may be numbered as its maps are): each task's attempts (worker,
    // source, start, end when known), and the attempts killed whose end is
    // still to come.
    let mut live: BTreeMap<(TaskRef, bool), Vec<Attempt>> = BTreeMap::new();
    let mut killed: std::collections::HashSet<(TaskRef, bool, u32, u64)> = Default::default();
    let mut tasks_done: std::collections::HashSet<(TaskRef, bool)> = Default::default();
    // Backups launched, and their attempts (start times) until they end.
    let (mut backups, mut backups_won) = (0u32, 0u32);
    let mut backup_of: std::collections::HashSet<(TaskRef, bool, u32, u64)> = Default::default();
    view.set_speculation(cluster.speculation.clone());
    let slowdown = |w: usize| {
        cluster
            .slowdown
            .get(w)
            .copied()
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0)
    };
    // Maps ended whose worker has not heartbeated since.
    let mut unreported: Vec<Vec<(TaskRef, u32, u64)>> = vec![Vec::new(); n];
    // The master learns at `at` that `task` ended on worker `w`.
    macro_rules! report {
        ($at:expr, $w:expr, $task:expr, $src:expr, $reduce:expr, $start:expr) => {{
            let (at, w, task, src, reduce, start): (u64, u32, TaskRef, u32, bool, u64) =
                ($at, $w, $task, $src, $reduce, $start);
            // The view hears of an attempt's end, successful or not.
            let ended = |view: &mut ClusterView, w: u32, src: u32, ok: bool| {
                if reduce {
                    view.reduce_attempt_ended(task, WorkerId(w), at, ok);
                } else {
                    view.map_ended(task, WorkerId(w), w != src, at, ok);
                }
            };
            if !tasks_done.insert((task, reduce)) {
                // A task's second attempt to end after the master took the
                // first's (speculation): its slot frees, nothing counts.
                ended(&mut view, w, src, false);
            } else {
                let job = task.job;
                ended(&mut view, w, src, true);
                if backup_of.contains(&(task, reduce, w, start)) {
                    backups_won += 1;
                }
                {
                    // Its other attempt, if any, lost: killed now.
                    for (lw, lsrc, lstart) in kill_others(&mut live, (task, reduce), w) {
                        if let Some(p) = running[lw as usize].iter().position(|s| *s == lstart) {
                            running[lw as usize].swap_remove(p);
                        }
                        if lw != lsrc {
                            remote_in[lw as usize] -= 1;
                            remote_out[lsrc as usize] -= 1;
                        }
                        if let Some(i) = transfers.iter().position(|x| {
                            x.job == job
                                && x.index == task.index
                                && x.worker == lw
                                && x.start == lstart
                        }) {
                            let x = transfers.swap_remove(i);
                            xfer_out[x.source as usize] -= 1;
                            xfer_in[x.worker as usize] -= 1;
                        } else {
                            killed.insert((task, reduce, lw, lstart));
                        }
                        ended(&mut view, lw, lsrc, false);
                    }
                }
                finished += 1;
                let e = left.get_mut(&job).expect("running job");
                if reduce {
                    e.2 -= 1;
                } else {
                    e.1 -= 1;
                    *e.3.entry(WorkerId(w)).or_default() += 1;
                    if e.1 == 0 && e.2 > 0 {
                        // The reduces wait; map output counted one unit a map.
                        let j = &jobs[e.0];
                        view.add_reduces(
                            job,
                            j.reduces.iter().map(|r| r.index),
                            j.reduce_load,
                            std::mem::take(&mut e.3),
                        );
                    }
                }
                if e.1 == 0 && e.2 == 0 {
                    done_at[e.0] = Some(at);
                    view.remove_job(job);
                }
            }
        }};
    }
    let mut clock = 0.0f64;
    while finished < total {
        let next_end = ends.peek().map(|Reverse(e)| e.0);
        let Reverse((t_beat, ..)) = *beats.peek().expect("every worker heartbeats");
        let share = |x: &Transfer, o: &[u32], i: &[u32]| {
            f64::from(o[x.source as usize].max(i[x.worker as usize]).max(1))
        };
        let next_xfer = transfers
            .iter()
            .map(|x| clock + x.left * share(x, &xfer_out, &xfer_in))
            .fold(f64::INFINITY, f64::min);
        let next_event = next_end.map_or(t_beat, |e| e.min(t_beat)) as f64;
        let to = next_xfer.min(next_event);
        // Transfers progress at their current shares until then.
        for x in &mut transfers {
            x.left -= (to - clock) / share(x, &xfer_out, &xfer_in);
        }
        clock = clock.max(to);
        if next_xfer < next_event {
            let at = clock.round() as u64;
            let mut i = 0;
            while i < transfers.len() {
                if transfers[i].left <= 1e-6 {
                    let x = transfers.swap_remove(i);
                    xfer_out[x.source as usize] -= 1;
                    xfer_in[x.worker as usize] -= 1;
                    let t = TaskRef {
                        job: x.job,
                        index: x.index,
                    };
                    if let Some(a) = live.get_mut(&(t, false)).and_then(|a| {
                        a.iter_mut()
                            .find(|a| a.worker == x.worker && a.start == x.start)
                    }) {
                        a.end = Some(at + x.then_ms);
                    }
                    ends.push(Reverse((
                        at + x.then_ms,
                        x.worker,
                        x.job,
                        x.index,
                        x.source,
                        x.start,
                        false,
                    )));
                } else {
                    i += 1;
                }
            }
            continue;
        }
        // A task end comes first (ties: before the heartbeat, which then
        // sees the slot free).
        if let Some(t_end) = next_end.filter(|e| *e <= t_beat) {
            let Reverse((end, w, job, index, src, start, reduce)) = ends.pop().expect("peeked");
            let task = TaskRef { job, index };
            if killed.remove(&(task, reduce, w, start)) {
                // Speculation's loser: its slot was freed when it was killed.
                continue;
            }
            if let Some(a) = live.get_mut(&(task, reduce)) {
                a.retain(|x| !(x.worker == w && x.start == start));
            }
            runs.push(TaskRun {
                task,
                worker: WorkerId(w),
                source: WorkerId(src),
                start_ms: start,
                end_ms: end,
                reduce,
            });
            if let Some(p) = running[w as usize].iter().position(|s| *s == start) {
                running[w as usize].swap_remove(p);
            }
            if w != src {
                remote_in[w as usize] -= 1;
                remote_out[src as usize] -= 1;
            }
            last_progress = end;
            if reduce || cluster.out_of_band {
                report!(end, w, task, src, reduce, start);
            } else {
                // Without out-of-band heartbeats the master learns of a
                // map's end at the worker's next heartbeat (a reduce's
                // worker heartbeats once its output is stored).
                unreported[w as usize].push((task, src, start));
            }
            if cluster.out_of_band {
                beats.push(Reverse((t_end, w, None)));
            }
            continue;
        }
        let Reverse((t, w, regular)) = beats.pop().expect("peeked");
        let wid = WorkerId(w);
        for (task, src, start) in std::mem::take(&mut unreported[w as usize]) {
            report!(t, w, task, src, false, start);
        }
        if let Some(k) = regular {
            let next = (phase(w as usize) + (k + 1) as f64 * period(w as usize)).round() as u64
                + jitter(w as usize, k + 1);
            beats.push(Reverse((next.max(t + 1), w, Some(k + 1))));
        }
        while next_job < order.len() && jobs[order[next_job]].arrival_ms <= t {
            let j = &jobs[order[next_job]];
            left.insert(
                j.id,
                (
                    order[next_job],
                    j.tasks.len(),
                    j.reduces.len(),
                    BTreeMap::new(),
                ),
            );
            if j.tasks.is_empty() {
                // No map, so no reduce either: done on arrival.
                done_at[order[next_job]] = Some(j.arrival_ms);
                finished += j.reduces.len();
            } else {
                view.add_job(
                    j.id,
                    j.arrival_ms,
                    "default",
                    j.tasks
                        .iter()
                        .map(|task| PendingTask {
                            task: TaskRef {
                                job: j.id,
                                index: task.index,
                            },
                            len: 1,
                            replicas: task.replicas.clone(),
                        })
                        .collect(),
                );
            }
            next_job += 1;
        }
        let bg: Vec<&BackgroundRun> = background
            .iter()
            .filter(|b| b.worker == wid && b.start_ms <= t && t < b.end_ms)
            .collect();
        let slots = cluster.slots[w as usize];
        let busy_n = running[w as usize].len() as u32 + bg.len() as u32;
        view.set_free(wid, slots.saturating_sub(busy_n));
        let busy: Vec<SlotBusy> = running[w as usize]
            .iter()
            .map(|s| SlotBusy {
                elapsed_ms: t - s,
                remaining_ms: None,
            })
            .chain(bg.iter().map(|b| SlotBusy {
                elapsed_ms: t.saturating_sub(b.start_ms),
                remaining_ms: Some(b.end_ms - t),
            }))
            .collect();
        view.set_busy(wid, t, busy);
        if cluster.speculation.enabled {
            // The worker's heartbeat says how far its tasks are.
            for ((task, _), attempts) in &live {
                for a in attempts.iter().filter(|a| a.worker == w) {
                    let done = a.end.map_or(0.0, |end| {
                        t.saturating_sub(a.start) as f64 / end.saturating_sub(a.start).max(1) as f64
                    });
                    view.task_progress(*task, wid, done.min(1.0), t);
                }
            }
        }
        // Waiting reduces first, as the master offers them.
        for task in offer_reduces(placer, t as Millis, wid, &mut view) {
            let len = jobs[job_index[&task.job]]
                .reduces
                .iter()
                .find(|r| r.index == task.index)
                .map_or(0, |r| r.local_ms);
            let len = (len as f64 * slowdown(w as usize)).round() as u64;
            start_reduce(&mut live, &mut running, &mut ends, task, w, t, len);
            last_progress = t;
        }
        for a in offer(sched, t as Millis, wid, &mut view) {
            let job = job_index[&a.task.job];
            if view.running_tasks().is_reduce(a.task) == Some(true) {
                // A reduce's backup (speculation), run as a reduce.
                let len = jobs[job]
                    .reduces
                    .iter()
                    .find(|r| r.index == a.task.index)
                    .map_or(0, |r| r.local_ms);
                let len = (len as f64 * slowdown(w as usize)).round() as u64;
                start_reduce(&mut live, &mut running, &mut ends, a.task, w, t, len);
                backups += 1;
                backup_of.insert((a.task, true, w, t));
                last_progress = t;
                continue;
            }
            let (tw, src) = (a.worker.0 as usize, a.source.0 as usize);
            if a.backup {
                backups += 1;
                backup_of.insert((a.task, false, tw as u32, t));
            }
            let (len0, bytes) = local_ms(job, a.task.index);
            let mut len = (len0 as f64 * slowdown(tw)).round() as u64;
            if cluster.host_ms_per_start > 0.0 {
                while launched.front().is_some_and(|&at| at + HOST_WINDOW_MS <= t) {
                    launched.pop_front();
                }
                len += (cluster.host_ms_per_start * launched.len() as f64).round() as u64;
                launched.push_back(t);
            }
            running[tw].push(t);
            last_progress = t;
            if tw != src {
                remote_in[tw] += 1;
                remote_out[src] += 1;
                match remote {
                    RemoteModel::Static(cost) => {
                        len += cost.extra_ms(remote_out[src] - 1, remote_in[tw] - 1, bytes);
                    }
                    RemoteModel::FairShare {
                        transfer_ms,
                        ref_bytes,
                    } => {
                        let alone = if ref_bytes > 0 && bytes > 0 {
                            transfer_ms * bytes as f64 / ref_bytes as f64
                        } else {
                            transfer_ms
                        };
                        xfer_out[src] += 1;
                        xfer_in[tw] += 1;
                        live.entry((a.task, false)).or_default().push(Attempt {
                            worker: tw as u32,
                            source: src as u32,
                            start: t,
                            end: None,
                        });
                        transfers.push(Transfer {
                            job: a.task.job,
                            index: a.task.index,
                            worker: tw as u32,
                            source: src as u32,
                            start: t,
                            left: alone.max(0.0),
                            then_ms: len,
                        });
                        continue;
                    }
                }
            }
            live.entry((a.task, false)).or_default().push(Attempt {
                worker: tw as u32,
                source: src as u32,
                start: t,
                end: Some(t + len),
            });
            ends.push(Reverse((
                t + len,
                tw as u32,
                a.task.job,
                a.task.index,
                src as u32,
                t,
                false,
            )));
        }
        let waiting = next_job < order.len() || view.pending_total() > 0;
        let idle = ends.is_empty() && transfers.is_empty();
        if waiting && idle && t.saturating_sub(last_progress) > give_up_ms {
            return Err(SimError {
                policy: sched.name(),
                unassigned: total - finished,
                tasks: total,
                at: t as f64 / 1000.0,
            });
        }
    }
    runs.sort_by_key(|r| (r.start_ms, r.task.job, r.task.index));
    Ok(ReplayOutcome {
        jobs: jobs
            .iter()
            .zip(&done_at)
            .map(|(j, d)| (j.id, j.arrival_ms, d.unwrap_or(j.arrival_ms)))
            .collect(),
        runs,
        decisions: view.take_decisions(),
        inputs: view.take_inputs(),
        backups,
        backups_won,
    })
}

#[cfg(test)]
mod tests;
