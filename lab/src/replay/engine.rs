//! The replay's state on virtual time, and one method per event: a job's
//! arrival, a heartbeat's offer (reduces, then maps), a block read's end, a
//! task's end and the master learning of it, the background and the
//! progress a heartbeat reports, speculation's backups and their losers.
//! [`Replay::run`] takes the earliest event until every task has ended.

mod copies;
mod own;
mod park;
mod reads;

use copies::Fetching;

use super::beats::{first_beats, wakes_and_background, Beat, RECORDED_RANK, WOKEN_RANK};
use super::flows::{Flow, Flows, Transfer};
use super::{
    BackgroundRun, RemoteModel, ReplayCluster, ReplayJob, ReplayOutcome, ReplayTask, TaskRun,
    HOST_WINDOW_MS,
};
use crate::sim::SimError;
use base::{JobId, TaskRef, WorkerId};
use sched::reduce::{offer_reduces, ReducePlacer};
use sched::view::{offer, Assignment, ClusterView, Millis, PendingTask, Scheduler, SlotBusy};
use std::cmp::Reverse;
// Fx: the engine's maps are keyed by small ids and looked up at every
// event, and never iterated where the order would show.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// A running task: (end, worker, job, index, source, start, reduce).
type Ending = Reverse<(u64, u32, JobId, u32, u32, u64, bool)>;

/// An attempt, by task, kind (true: a reduce), worker and start.
type AttemptKey = (TaskRef, bool, u32, u64);

/// One attempt of a task in flight: its worker, source, start and (once
/// its read is over, or at once without a fair-share read) its end.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    worker: u32,
    source: u32,
    start: u64,
    end: Option<u64>,
}

/// What a job has left: its index in the jobs, maps and reduces left, and
/// the maps it ran per worker (the reduces' input, counted one unit a map).
struct JobLeft {
    index: usize,
    maps: usize,
    reduces: usize,
    ran_on: BTreeMap<WorkerId, u64>,
}

/// The next thing to happen.
enum Event {
    /// Block reads ended (fair-share), at the clock.
    ReadsDone,
    /// A task ends (ties: before the heartbeat, which then sees the slot
    /// free).
    TaskEnd,
    Heartbeat,
}

/// A whole run on virtual time: the policy, the view it decides on and
/// everything the simulated cluster holds.
pub struct Replay<'a> {
    sched: &'a mut dyn Scheduler,
    placer: &'a mut ReducePlacer,
    cluster: &'a ReplayCluster,
    jobs: &'a [ReplayJob],
    background: &'a [BackgroundRun],
    remote: RemoteModel,
    give_up_ms: u64,
    view: ClusterView,
    /// Jobs by arrival, and the next to arrive.
    order: Vec<usize>,
    next_job: usize,
    left: HashMap<JobId, JobLeft>,
    job_index: HashMap<JobId, usize>,
    done_at: Vec<Option<u64>>,
    beats: BinaryHeap<Beat>,
    /// Per worker, its recorded heartbeats still to come: while any is,
    /// the record holds the heartbeats an arrival woke, and none is
    /// simulated.
    recorded_left: Vec<usize>,
    /// Per worker: a job's last map ended there, released its reduces, and
    /// this many tasks waited before; its next heartbeat wakes the other
    /// idle workers if it leaves more waiting (`Master::heartbeat_waking`).
    wake_check: Vec<Option<usize>>,
    /// Out-of-band heartbeats: the arrival times that wake every worker,
    /// and the next whose heartbeats are not yet in `beats` (pushed just
    /// before the clock reaches it, not all at the start).
    wakes: Vec<u64>,
    next_wake: usize,
    /// Each worker's background processes (indices into `background`, in
    /// its order).
    background_of: Vec<Vec<usize>>,
    ends: BinaryHeap<Ending>,
    /// Per worker: running tasks (start times), remote reads in and out.
    running: Vec<Vec<u64>>,
    remote_in: Vec<u32>,
    remote_out: Vec<u32>,
    /// Map launches in the last HOST_WINDOW_MS, for the host term.
    launched: VecDeque<u64>,
    runs: Vec<TaskRun>,
    total: usize,
    finished: usize,
    last_progress: u64,
    /// Block reads in flight that share links (and disks).
    flows: Flows,
    /// With the disk term, where each job's maps ran (maps per worker):
    /// its reduces fetch from those disks.
    map_spread: HashMap<JobId, BTreeMap<WorkerId, u64>>,
    /// Each reduce attempt's fetch parts not yet started (by task, worker
    /// and start).
    fetch_left: HashMap<(TaskRef, u32, u64), VecDeque<Transfer>>,
    /// With the shuffle over the network, each reduce attempt whose end
    /// waits for its fetch (by task, worker and start).
    fetching: HashMap<(TaskRef, u32, u64), Fetching>,
    /// Where the running reduces send their output copies.
    copies: copies::Copies,
    clock: f64,
    /// Tasks in flight, by task and kind (a job's reduces may be numbered
    /// as its maps are): each task's attempts; the attempts killed whose
    /// end is still to come; the tasks whose first end the master took.
    live: BTreeMap<(TaskRef, bool), Vec<Attempt>>,
    killed: HashSet<AttemptKey>,
    tasks_done: HashSet<(TaskRef, bool)>,
    /// Backups launched, won, and their attempts until they end.
    backups: u32,
    backups_won: u32,
    backup_of: HashSet<AttemptKey>,
    /// Maps ended whose worker has not heartbeated since.
    unreported: Vec<Vec<(TaskRef, u32, u64)>>,
    /// Events taken so far.
    events: u64,
    /// Idle heartbeats left out ([`Replay::parks`]): per worker, the
    /// regular heartbeat (its `k`) it stopped at, and how many are.
    park: bool,
    parked: Vec<Option<u64>>,
    n_parked: usize,
    /// The parked workers in their heartbeats' order, where that order is
    /// kept (a wake then puts back only the heartbeats a waiting task sees).
    sleepers: Option<park::Sleepers>,
    /// The policy's waits of a worker's own, where they are left out.
    own: Option<own::OwnWaits>,
    /// The last heartbeat taken: (time, rank).
    last_beat: (u64, u64),
    /// Workers whose heartbeats were left out since their last one taken,
    /// and the time of the last left out: the view hears of them when a
    /// task waits again ([`Replay::wake`]).
    stale: Vec<Option<u64>>,
    stale_list: Vec<u32>,
    /// When the view last heard of each worker's state.
    state_at: Vec<u64>,
}

impl<'a> Replay<'a> {
    /// The cluster at time 0: workers registered, first heartbeats due at
    /// their phases, and (with out-of-band heartbeats) one for every worker
    /// at each arrival.
    pub fn new(
        sched: &'a mut dyn Scheduler,
        placer: &'a mut ReducePlacer,
        cluster: &'a ReplayCluster,
        jobs: &'a [ReplayJob],
        background: &'a [BackgroundRun],
        remote: RemoteModel,
        give_up_ms: u64,
    ) -> Self {
        let n = cluster.slots.len();
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
        let (beats, recorded_left) = first_beats(cluster);
        let (wakes, background_of) = wakes_and_background(cluster, jobs, background);
        view.set_speculation(cluster.speculation.clone());
        // Only where leaving a heartbeat out cannot change what follows: a
        // policy idle offers do not touch, no record, no backups, no
        // record's heartbeats, heartbeats on time.
        let park = !sched.idle_offers_matter()
            && !cluster.record_decisions
            && !cluster.speculation.enabled
            && cluster.recorded_beats.is_empty()
            && cluster.jitter_ms == 0;
        let floor = sched.own_wait_floor();
        Replay {
            sched,
            placer,
            cluster,
            jobs,
            background,
            remote,
            give_up_ms,
            view,
            order,
            next_job: 0,
            left: HashMap::default(),
            job_index: jobs.iter().enumerate().map(|(i, j)| (j.id, i)).collect(),
            done_at: vec![None; jobs.len()],
            beats,
            recorded_left,
            wake_check: vec![None; n],
            wakes,
            next_wake: 0,
            background_of,
            ends: BinaryHeap::new(),
            running: vec![Vec::new(); n],
            remote_in: vec![0; n],
            remote_out: vec![0; n],
            launched: VecDeque::new(),
            runs: Vec::new(),
            total: jobs.iter().map(|j| j.tasks.len() + j.reduces.len()).sum(),
            finished: 0,
            last_progress: 0,
            flows: Flows::new(n),
            map_spread: HashMap::default(),
            fetch_left: HashMap::default(),
            fetching: HashMap::default(),
            copies: Default::default(),
            clock: 0.0,
            live: BTreeMap::new(),
            killed: HashSet::default(),
            tasks_done: HashSet::default(),
            backups: 0,
            backups_won: 0,
            backup_of: HashSet::default(),
            unreported: vec![Vec::new(); n],
            events: 0,
            park,
            parked: vec![None; n],
            n_parked: 0,
            sleepers: park.then(|| park::Sleepers::of(cluster)).flatten(),
            own: park.then(|| own::OwnWaits::of(cluster, floor)).flatten(),
            last_beat: (0, 0),
            stale: vec![None; n],
            stale_list: Vec::new(),
            state_at: vec![0; n],
        }
    }

    /// Every event in time order until every task has ended. Fails if
    /// `give_up_ms` pass with tasks waiting and nothing launched.
    pub fn run(mut self) -> Result<ReplayOutcome, SimError> {
        while self.finished < self.total {
            self.events += 1;
            let from = match self.advance() {
                Event::ReadsDone => {
                    // Every heartbeat due by now came before it.
                    let now = (self.clock.floor() as u64, u64::MAX);
                    self.last_beat = self.last_beat.max(now);
                    self.reads_done();
                    (self.clock.ceil() as u64, 0)
                }
                Event::TaskEnd => {
                    self.task_end();
                    (self.clock.ceil() as u64, 0)
                }
                Event::Heartbeat => {
                    let key = self.beats.peek().map_or((0, 0), |Reverse(b)| (b.0, b.1));
                    self.heartbeat()?;
                    (key.0, key.1.saturating_add(1))
                }
            };
            self.note_pending(from);
            if (!self.stale_list.is_empty() || self.n_parked > 0) && !self.nothing_waits() {
                let now = self.clock.round() as u64;
                self.wake(now);
                self.pull(now);
            }
        }
        Ok(self.outcome())
    }

    /// Moves the clock to the next event, the transfers progressing at
    /// their current shares until then, and says which it is.
    fn advance(&mut self) -> Event {
        let (next_end, t_beat, next_xfer) = loop {
            let next_end = self.ends.peek().map(|Reverse(e)| e.0);
            let t_beat = self.beats.peek().map_or(u64::MAX, |Reverse(b)| b.0);
            let next_xfer = self.flows.next_done();
            // An arrival's out-of-band heartbeats join before anything at
            // or after its time happens.
            let earliest = next_xfer.min(next_end.map_or(t_beat, |e| e.min(t_beat)) as f64);
            // A job arriving while workers are parked wakes them first.
            let arrival = (self.n_parked > 0)
                .then(|| self.order.get(self.next_job))
                .flatten()
                .map(|&j| self.jobs[j].arrival_ms);
            if let Some(a) = arrival.filter(|&a| a as f64 <= earliest) {
                let stale = !self.stale_list.is_empty();
                self.wake(a);
                if self.pull(a) || stale {
                    continue;
                }
            }
            match self.wakes.get(self.next_wake) {
                Some(&a) if a as f64 <= earliest => {
                    let n = self.cluster.slots.len() as u32;
                    self.beats.extend(
                        (0..n)
                            .filter(|&w| self.recorded_left[w as usize] == 0)
                            .map(|w| Reverse((a, self.cluster.woken_order(a, w), w, None))),
                    );
                    self.next_wake += 1;
                }
                _ => break (next_end, t_beat, next_xfer),
            }
        };
        let next_event = next_end.map_or(t_beat, |e| e.min(t_beat)) as f64;
        let to = next_xfer.min(next_event);
        self.clock = self.clock.max(to);
        self.flows.advance_to(self.clock);
        if next_xfer < next_event {
            Event::ReadsDone
        } else if next_end.is_some_and(|e| e <= t_beat) {
            Event::TaskEnd
        } else {
            Event::Heartbeat
        }
    }

    /// Block reads whose work is done: each task now runs its local time.
    fn reads_done(&mut self) {
        let at = self.clock.round() as u64;
        while let Some(x) = self.flows.pop_done() {
            if x.only_load {
                continue;
            }
            if let Some(owner) = x.copy_of {
                self.copy_done(&x, owner, at);
                continue;
            }
            if x.fetch {
                self.fetch_part_done(&x, at);
                continue;
            }
            self.ends_at(&x, false, at.max(x.floor) + x.then_ms);
        }
    }

    /// The attempt whose read (or a reduce's fetch) `x` was now ends at
    /// `end`: its live attempt knows it, and the end is queued.
    fn ends_at(&mut self, x: &Transfer, reduce: bool, end: u64) {
        let task = TaskRef {
            job: x.job,
            index: x.index,
        };
        // A reduce's source is its own worker.
        let source = if reduce { x.worker } else { x.source };
        self.attempt_ends(task, reduce, (x.worker, source), x.start, end);
    }

    /// `task`'s attempt started at `start` on `worker` (reading from
    /// `source`) ends at `end`: its live attempt knows it, and the end is
    /// queued.
    fn attempt_ends(
        &mut self,
        task: TaskRef,
        reduce: bool,
        (worker, source): (u32, u32),
        start: u64,
        end: u64,
    ) {
        if let Some(a) = self.live.get_mut(&(task, reduce)).and_then(|a| {
            a.iter_mut()
                .find(|a| a.worker == worker && a.start == start)
        }) {
            a.end = Some(end);
        }
        self.ends.push(Reverse((
            end, worker, task.job, task.index, source, start, reduce,
        )));
    }

    /// A part of a reduce's fetch is done at `at`: its next part starts;
    /// a reduce waiting for its fetch (the shuffle over the network) whose
    /// last part this was sends its output's copies
    /// ([`Self::copies_or_end`]).
    fn fetch_part_done(&mut self, x: &Transfer, at: u64) {
        let task = TaskRef {
            job: x.job,
            index: x.index,
        };
        let key = (task, x.worker, x.start);
        let mut next = false;
        if let Some(parts) = self.fetch_left.get_mut(&key) {
            if let Some(part) = parts.pop_front() {
                self.flows.push(part);
                next = true;
            }
            if parts.is_empty() {
                self.fetch_left.remove(&key);
            }
        }
        let Some(f) = self.fetching.get_mut(&key) else {
            return;
        };
        if !next {
            f.in_flight -= 1;
        }
        if f.in_flight > 0 {
            return;
        }
        self.copies_or_end(key, at);
    }

    /// The earliest task ends: its slot and remote read free; the master
    /// hears at once of a reduce (or of anything with out-of-band
    /// heartbeats), of a map at the worker's next heartbeat.
    fn task_end(&mut self) {
        let Reverse((end, w, job, index, src, start, reduce)) = self.ends.pop().expect("peeked");
        let task = TaskRef { job, index };
        if self.killed.remove(&(task, reduce, w, start)) {
            // Speculation's loser: its slot was freed when it was killed.
            return;
        }
        if let Some(a) = self.live.get_mut(&(task, reduce)) {
            a.retain(|x| !(x.worker == w && x.start == start));
        }
        self.runs.push(TaskRun {
            task,
            worker: WorkerId(w),
            source: WorkerId(src),
            start_ms: start,
            end_ms: end,
            reduce,
        });
        self.free_slot(w, src, start);
        if reduce {
            self.reduce_gone(task, w, start, false);
            if self.own.is_some() {
                // Its free slots changed: it heartbeats again.
                self.unpark(w, end);
            }
        }
        self.last_progress = end;
        if reduce || self.cluster.out_of_band {
            self.report(end, w, task, src, reduce, start);
        } else {
            // Without out-of-band heartbeats the master learns of a map's
            // end at the worker's next heartbeat (a reduce's worker
            // heartbeats once its output is stored).
            self.unreported[w as usize].push((task, src, start));
            // A parked worker heartbeats again to report it.
            self.unpark(w, end);
        }
        if self.cluster.out_of_band {
            // With a record too: the simulated task ends when the model
            // says, and its worker heartbeats then, as the real one did
            // when its own task ended.
            self.beats.push(Reverse((end, u64::from(w), w, None)));
        }
    }

    /// The slot of the attempt started at `start` on `w` frees, and its
    /// remote read from `src` with it.
    fn free_slot(&mut self, w: u32, src: u32, start: u64) {
        if let Some(p) = self.running[w as usize].iter().position(|s| *s == start) {
            self.running[w as usize].swap_remove(p);
        }
        if w != src {
            self.remote_in[w as usize] -= 1;
            self.remote_out[src as usize] -= 1;
        }
    }

    /// The view hears of an attempt's end, successful or not.
    fn attempt_ended(&mut self, task: TaskRef, reduce: bool, w: u32, src: u32, at: u64, ok: bool) {
        if reduce {
            self.view.reduce_attempt_ended(task, WorkerId(w), at, ok);
        } else {
            self.view.map_ended(task, WorkerId(w), w != src, at, ok);
        }
    }

    /// The master learns at `at` that `task`'s attempt started at `start`
    /// ended on worker `w`: the first end of a task counts (its other
    /// attempts are killed), a later one only frees its slot.
    fn report(&mut self, at: u64, w: u32, task: TaskRef, src: u32, reduce: bool, start: u64) {
        if !self.tasks_done.insert((task, reduce)) {
            // A task's second attempt to end after the master took the
            // first's (speculation): its slot frees, nothing counts.
            self.attempt_ended(task, reduce, w, src, at, false);
            return;
        }
        self.attempt_ended(task, reduce, w, src, at, true);
        if self.backup_of.contains(&(task, reduce, w, start)) {
            self.backups_won += 1;
        }
        self.kill_losers(task, reduce, w, at);
        self.finished += 1;
        let job = task.job;
        let e = self.left.get_mut(&job).expect("running job");
        let mut released = None;
        if reduce {
            e.reduces -= 1;
        } else {
            e.maps -= 1;
            *e.ran_on.entry(WorkerId(w)).or_default() += 1;
            if e.maps == 0 && e.reduces > 0 {
                // The reduces wait; map output counted one unit a map.
                released = Some(self.view.waiting_tasks());
                let j = &self.jobs[e.index];
                if self.cluster.disk.is_some() || self.cluster.shuffle_net.is_some() {
                    self.map_spread.insert(job, e.ran_on.clone());
                }
                self.view.add_reduces(
                    job,
                    j.reduces.iter().map(|r| r.index),
                    j.reduce_load,
                    std::mem::take(&mut e.ran_on),
                );
            }
        }
        if e.maps == 0 && e.reduces == 0 {
            self.done_at[e.index] = Some(at);
            self.view.remove_job(job);
        }
        if let Some(before) = released.filter(|_| self.cluster.out_of_band) {
            let c = &mut self.wake_check[w as usize];
            *c = Some(c.map_or(before, |b| b.min(before)));
        }
    }

    /// With out-of-band heartbeats, the heartbeat that reports a job's
    /// last map and leaves more tasks waiting than before makes the master
    /// ask the other idle workers to heartbeat now
    /// (`Master::heartbeat_waking`): each other worker with a free slot
    /// heartbeats at `at`, after `w`'s own. Not a worker whose heartbeats
    /// come from the real run's record (its woken ones are in it).
    fn wake_idle_others(&mut self, at: u64, w: u32) {
        for o in 0..self.cluster.slots.len() as u32 {
            let ou = o as usize;
            if o == w || self.recorded_left[ou] > 0 {
                continue;
            }
            let busy = self.running[ou].len() + self.background_running(at, o).len();
            if self.cluster.slots[ou] as usize > busy {
                self.beats.push(Reverse((
                    at,
                    WOKEN_RANK + self.cluster.woken_order(at, o),
                    o,
                    None,
                )));
            }
        }
    }

    /// `task` succeeded on `winner`: its other attempts in flight lost,
    /// killed now (a read in flight is dropped; a running task's end is
    /// ignored when it comes).
    fn kill_losers(&mut self, task: TaskRef, reduce: bool, winner: u32, at: u64) {
        let losers: Vec<Attempt> = self
            .live
            .remove(&(task, reduce))
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a.worker != winner)
            .collect();
        for a in losers {
            self.free_slot(a.worker, a.source, a.start);
            if reduce {
                // Its fetch and copies in flight go with it: no end comes.
                self.reduce_gone(task, a.worker, a.start, true);
                if a.end.is_some() {
                    self.killed.insert((task, reduce, a.worker, a.start));
                }
            } else {
                let read = self
                    .flows
                    .take_read(task.job, task.index, a.worker, a.start);
                if read.is_none() {
                    self.killed.insert((task, reduce, a.worker, a.start));
                }
                // Its block stops crossing the links too.
                self.flows
                    .drop_load(task.job, task.index, a.worker, a.start);
            }
            self.attempt_ended(task, reduce, a.worker, a.source, at, false);
        }
    }

    /// The earliest heartbeat: the worker reports the maps that ended
    /// since its last one, the jobs arrived so far join, the worker's
    /// slots, background and progress reach the view, and it is offered
    /// to the reduce placement and then the policy.
    fn heartbeat(&mut self) -> Result<(), SimError> {
        let Reverse((t, rank, w, regular)) = self.beats.pop().expect("peeked");
        if rank >= RECORDED_RANK {
            self.recorded_left[w as usize] -= 1;
        }
        self.last_beat = self.last_beat.max((t, rank));
        let wake_check = self.wake_check[w as usize].take();
        self.catch_up(w, (t, rank), regular);
        if self.parks(t, w, regular) {
            return Ok(());
        }
        // A parked worker offered now (an out-of-band heartbeat) heartbeats
        // on: a later idle one must tell the policy so.
        self.unpark(w, t);
        for (task, src, start) in std::mem::take(&mut self.unreported[w as usize]) {
            self.report(t, w, task, src, false, start);
        }
        if let Some(k) = regular {
            let wu = w as usize;
            let next = (self.cluster.phase(wu) + (k + 1) as f64 * self.cluster.period(wu)).round()
                as u64
                + self.cluster.jitter(wu, k + 1);
            self.beats
                .push(Reverse((next.max(t + 1), u64::from(w), w, Some(k + 1))));
        }
        // Arrivals are not the heartbeat's own (a job's arrival wakes
        // workers of itself).
        let arrived = wake_check.map(|_| self.view.waiting_tasks());
        self.arrivals(t);
        let arrived = arrived.map_or(0, |pre| self.view.waiting_tasks() - pre);
        if !self.stale_list.is_empty() && !self.nothing_waits() {
            self.wake(t);
        }
        self.worker_state(t, w);
        self.offer_reduces(t, w);
        let wid = WorkerId(w);
        for a in offer(&mut *self.sched, t as Millis, wid, &mut self.view) {
            self.launch(a, w, t);
        }
        if wake_check.is_some_and(|before| self.view.waiting_tasks() > before + arrived) {
            self.wake_idle_others(t, w);
        }
        if let Some(why) = self.sched.failure() {
            return Err(SimError {
                policy: self.sched.name(),
                unassigned: self.total - self.finished,
                tasks: self.total,
                at: t as f64 / 1000.0,
                reason: Some(why),
            });
        }
        let waiting = self.next_job < self.order.len() || self.view.pending_total() > 0;
        let idle = self.ends.is_empty() && self.flows.is_empty();
        if waiting && idle && t.saturating_sub(self.last_progress) > self.give_up_ms {
            return Err(SimError {
                policy: self.sched.name(),
                unassigned: self.total - self.finished,
                tasks: self.total,
                at: t as f64 / 1000.0,
                reason: None,
            });
        }
        Ok(())
    }

    /// The jobs that have arrived by `t` join the view (a job with no map
    /// is done on arrival).
    fn arrivals(&mut self, t: u64) {
        while self.next_job < self.order.len()
            && self.jobs[self.order[self.next_job]].arrival_ms <= t
        {
            let (index, jobs) = (self.order[self.next_job], self.jobs);
            let j = &jobs[index];
            self.left.insert(
                j.id,
                JobLeft {
                    index,
                    maps: j.tasks.len(),
                    reduces: j.reduces.len(),
                    ran_on: BTreeMap::new(),
                },
            );
            if j.tasks.is_empty() {
                // No map, so no reduce either: done on arrival.
                self.done_at[index] = Some(j.arrival_ms);
                self.finished += j.reduces.len();
            } else {
                let tasks = j.tasks.iter().map(|task| PendingTask {
                    task: TaskRef {
                        job: j.id,
                        index: task.index,
                    },
                    len: 1,
                    replicas: task.replicas.clone(),
                });
                self.view
                    .add_job(j.id, j.arrival_ms, "default", tasks.collect());
                self.note_pending((j.arrival_ms, 0));
                // Its blocks' holders heartbeat again: their offers count.
                for r in j.tasks.iter().flat_map(|x| &x.replicas) {
                    self.unpark(r.0, t);
                }
            }
            self.next_job += 1;
        }
    }

    /// What worker `w`'s heartbeat at `t` tells the view: its free slots
    /// (slots - running tasks - background processes running), each busy
    /// slot's age, and with speculation each attempt's progress.
    fn worker_state(&mut self, t: u64, w: u32) {
        self.state_at[w as usize] = t;
        let wid = WorkerId(w);
        let bg = self.background_running(t, w);
        let slots = self.cluster.slots[w as usize];
        let busy_n = self.running[w as usize].len() as u32 + bg.len() as u32;
        self.view.set_free(wid, slots.saturating_sub(busy_n));
        let busy: Vec<SlotBusy> = self.running[w as usize]
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
        self.view.set_busy(wid, t, busy);
        if self.cluster.speculation.enabled {
            for ((task, _), attempts) in &self.live {
                for a in attempts.iter().filter(|a| a.worker == w) {
                    let done = a.end.map_or(0.0, |end| {
                        t.saturating_sub(a.start) as f64 / end.saturating_sub(a.start).max(1) as f64
                    });
                    self.view.task_progress(*task, wid, done.min(1.0), t);
                }
            }
        }
    }

    /// Worker `w`'s background processes running at `t`.
    fn background_running(&self, t: u64, w: u32) -> Vec<&'a BackgroundRun> {
        self.background_of[w as usize]
            .iter()
            .map(|&i| &self.background[i])
            .filter(|b| b.start_ms <= t && t < b.end_ms)
            .collect()
    }

    /// Waiting reduces first, as the master offers them.
    fn offer_reduces(&mut self, t: u64, w: u32) {
        for task in offer_reduces(self.placer, t as Millis, WorkerId(w), &mut self.view) {
            self.start_reduce(task, w, t);
        }
    }

    /// A launch the policy made at worker `w`'s heartbeat: a reduce's
    /// backup (speculation) runs as a reduce; a map runs its local time,
    /// slowed by its worker and the host term, after its block's read.
    fn launch(&mut self, a: Assignment, w: u32, t: u64) {
        if self.view.running_tasks().is_reduce(a.task) == Some(true) {
            self.start_reduce(a.task, w, t);
            self.backups += 1;
            self.backup_of.insert((a.task, true, w, t));
            return;
        }
        let (tw, src) = (a.worker.0 as usize, a.source.0 as usize);
        if a.backup {
            self.backups += 1;
            self.backup_of.insert((a.task, false, tw as u32, t));
        }
        let measured = self.cluster.measured(a.task, false, tw as u32, src as u32);
        let (len0, bytes) = self.map_time(a.task);
        let mut len = (len0 as f64 * self.cluster.slowdown(tw)).round() as u64;
        // A measured task's length is its own, but it counts among the
        // launches the host term sees.
        if self.cluster.host_ms_per_start > 0.0 {
            while self
                .launched
                .front()
                .is_some_and(|&at| at + HOST_WINDOW_MS <= t)
            {
                self.launched.pop_front();
            }
            len += (self.cluster.host_ms_per_start * self.launched.len() as f64).round() as u64;
            self.launched.push_back(t);
        }
        self.running[tw].push(t);
        self.last_progress = t;
        let mut end = Some(t + measured.unwrap_or(len));
        if tw != src {
            self.remote_in[tw] += 1;
            self.remote_out[src] += 1;
        }
        if measured.is_none() {
            end = self.start_read(a.task, (tw, src), t, len, bytes);
        }
        self.live.entry((a.task, false)).or_default().push(Attempt {
            worker: tw as u32,
            source: src as u32,
            start: t,
            end,
        });
        if let Some(end) = end {
            self.ends.push(Reverse((
                end,
                tw as u32,
                a.task.job,
                a.task.index,
                src as u32,
                t,
                false,
            )));
        }
    }

    /// A map's local time and input bytes.
    fn map_time(&self, task: TaskRef) -> (u64, u64) {
        find(&self.jobs[self.job_index[&task.job]].tasks, task.index)
            .map_or((0, 0), |t| (t.local_ms, t.bytes))
    }

    fn outcome(mut self) -> ReplayOutcome {
        self.runs
            .sort_by_key(|r| (r.start_ms, r.task.job, r.task.index));
        ReplayOutcome {
            jobs: self
                .jobs
                .iter()
                .zip(&self.done_at)
                .map(|(j, d)| (j.id, j.arrival_ms, d.unwrap_or(j.arrival_ms)))
                .collect(),
            runs: self.runs,
            decisions: self.view.take_decisions(),
            inputs: self.view.take_inputs(),
            backups: self.backups,
            backups_won: self.backups_won,
            events: self.events,
        }
    }
}

/// The task numbered `index` of `tasks`: at its place when tasks are
/// numbered from their list's first number on (a job's maps from 0, its
/// reduces after them), else found.
fn find(tasks: &[ReplayTask], index: u32) -> Option<&ReplayTask> {
    let first = tasks.first()?.index;
    index
        .checked_sub(first)
        .and_then(|k| tasks.get(k as usize))
        .filter(|t| t.index == index)
        .or_else(|| tasks.iter().find(|t| t.index == index))
}
