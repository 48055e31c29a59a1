//! `Roster`: the workers the master knows, configured and rented, and what
//! each one's last heartbeat said. It owns every worker's fields: liveness,
//! address, free slots, disk, NIC rates, the attempts sent to it and the
//! orders waiting for its next heartbeat reply (launches, jobs whose map
//! output to forget, blocks to copy or drop). It knows nothing of jobs,
//! blocks or the scheduler; `Master` runs a registration or a heartbeat
//! through it and through the other parts.

use super::storage::Holder;
use super::MasterError;
use common::config::WorkerSettings;
use common::wire::{CopyOrder, Heartbeat, Launch, RegisterRequest, StaleReplica, WorkerInfo};
use common::{AttemptId, BlockId, JobId, WorkerId};
use sched::Millis;
use std::collections::{HashMap, HashSet};

#[derive(Debug)]
struct WorkerState {
    name: String,
    addr: String,
    slots: u32,
    registered: bool,
    alive: bool,
    last_seen: Millis,
    /// Heartbeats received since registration.
    hb_seq: u64,
    /// It heartbeats at once when asked (see `Roster::wake`).
    out_of_band: bool,
    /// Asked to heartbeat now, and has not yet: not asked again.
    woken: bool,
    /// Attempts sent to this worker, with the heartbeat whose reply carried them.
    running: HashMap<AttemptId, u64>,
    /// Launches decided for this worker, awaiting its next heartbeat.
    outbox: Vec<Launch>,
    /// Ended jobs whose map output this worker may delete.
    forget: Vec<JobId>,
    /// Re-replication orders for this worker's next heartbeat reply.
    copy_out: Vec<CopyOrder>,
    /// Free bytes on its disk, as its last heartbeat said.
    disk_free: Option<u64>,
    /// An attempt there ran out of disk when it had this much free, at
    /// this time: it gets no task and no replica until it reports more, or
    /// until [`FULL_RETRY_MS`] have passed.
    full_at: Option<(u64, Millis)>,
    drop_out: Vec<BlockId>,
    /// Replicas at a stale generation to delete (if still at it).
    stale_out: Vec<StaleReplica>,
    blocks: usize,
    free_slots: u32,
    /// Slots its background processes hold, as its last heartbeat said.
    background: u32,
    nic: NicState,
}

impl WorkerState {
    fn new(name: &str, slots: u32) -> Self {
        WorkerState {
            name: name.to_owned(),
            addr: String::new(),
            slots,
            registered: false,
            alive: false,
            last_seen: 0,
            hb_seq: 0,
            out_of_band: false,
            woken: false,
            running: HashMap::new(),
            outbox: Vec::new(),
            forget: Vec::new(),
            copy_out: Vec::new(),
            disk_free: None,
            full_at: None,
            drop_out: Vec::new(),
            stale_out: Vec::new(),
            blocks: 0,
            free_slots: 0,
            background: 0,
            nic: NicState::default(),
        }
    }
}

/// A worker's NIC as its heartbeats tell it: byte counters, and rates over
/// windows of at least [`NIC_RATE_WINDOW_MS`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NicState {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_rate: f64,
    pub tx_rate: f64,
    /// Start of the current rate window and the counters then.
    since: Option<(Millis, u64, u64)>,
}

/// Shortest window a NIC rate is measured over.
pub const NIC_RATE_WINDOW_MS: Millis = 1000;

/// How long a worker whose disk ran full is left without tasks when it
/// reports no more room than it had (the report may predate the room).
pub const FULL_RETRY_MS: Millis = 30_000;

impl NicState {
    fn update(&mut self, now: Millis, rx: u64, tx: u64) {
        self.rx_bytes = rx;
        self.tx_bytes = tx;
        match self.since {
            // A restarted worker's counters start again: a new window.
            Some((t0, rx0, tx0)) if rx >= rx0 && tx >= tx0 => {
                if now >= t0 + NIC_RATE_WINDOW_MS {
                    let dt = (now - t0) as f64 / 1000.0;
                    self.rx_rate = (rx - rx0) as f64 / dt;
                    self.tx_rate = (tx - tx0) as f64 / dt;
                    self.since = Some((now, rx, tx));
                }
            }
            _ => self.since = Some((now, rx, tx)),
        }
    }
}

/// What a worker's heartbeat reply carries besides launches and kills.
#[derive(Debug, Default)]
pub(super) struct Orders {
    pub launches: Vec<Launch>,
    pub forget_jobs: Vec<JobId>,
    pub copy_blocks: Vec<CopyOrder>,
    pub drop_blocks: Vec<BlockId>,
    pub drop_stale: Vec<StaleReplica>,
}

/// The workers the master knows, by id (their index).
#[derive(Debug, Default)]
pub(super) struct Roster {
    /// Results refused since the master started (stale attempts, results
    /// of a worker declared lost).
    refused: u64,
    list: Vec<WorkerState>,
    settings: Vec<WorkerSettings>,
    /// The racks in order of first appearance; a worker's rack index.
    racks: Vec<String>,
}

impl Roster {
    pub fn new(settings: Vec<WorkerSettings>) -> Self {
        let mut r = Roster::default();
        for s in settings {
            r.add(s);
        }
        r
    }

    /// A worker not yet registered (configured, or a rented instance).
    pub fn add(&mut self, s: WorkerSettings) -> WorkerId {
        if !self.racks.contains(&s.rack) {
            self.racks.push(s.rack.clone());
        }
        self.list.push(WorkerState::new(&s.name, s.slots));
        self.settings.push(s);
        WorkerId(self.list.len() as u32 - 1)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn ids(&self) -> impl Iterator<Item = WorkerId> {
        (0..self.list.len() as u32).map(WorkerId)
    }

    pub fn settings(&self, w: WorkerId) -> &WorkerSettings {
        &self.settings[w.0 as usize]
    }

    /// Its name, or its id for one the roster does not know.
    pub fn name(&self, w: WorkerId) -> String {
        self.list
            .get(w.0 as usize)
            .map_or_else(|| w.to_string(), |s| s.name.clone())
    }

    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|w| w.name.clone()).collect()
    }

    pub fn addr(&self, w: WorkerId) -> &str {
        &self.list[w.0 as usize].addr
    }

    /// The worker registered at `addr` (a copy order's target).
    pub fn at_addr(&self, addr: &str) -> Option<WorkerId> {
        self.list
            .iter()
            .position(|w| w.addr == addr)
            .map(|i| WorkerId(i as u32))
    }

    pub fn alive(&self, w: WorkerId) -> bool {
        self.list[w.0 as usize].alive
    }

    /// Registered and not lost: its heartbeats are heard.
    pub fn known(&self, w: WorkerId) -> bool {
        self.list
            .get(w.0 as usize)
            .is_some_and(|w| w.registered && w.alive)
    }

    /// Registered, then declared lost (silent too long): what it ran was
    /// given to others.
    pub fn declared_lost(&self, w: WorkerId) -> bool {
        self.list
            .get(w.0 as usize)
            .is_some_and(|w| w.registered && !w.alive)
    }

    /// Its disk ran full and has not reported more room since.
    pub fn full(&self, w: WorkerId) -> bool {
        self.list[w.0 as usize].full_at.is_some()
    }

    /// Runs an attempt, or has launches waiting for its next heartbeat.
    pub fn busy(&self, w: WorkerId) -> bool {
        let w = &self.list[w.0 as usize];
        !w.running.is_empty() || !w.outbox.is_empty()
    }

    /// The worker named `name`, and whether it registered before (a
    /// restart: whatever it ran is gone).
    pub fn find(&self, name: &str) -> Result<(WorkerId, bool), MasterError> {
        match self.list.iter().position(|w| w.name == name) {
            Some(i) => Ok((WorkerId(i as u32), self.list[i].registered)),
            None => Err(MasterError::UnknownWorker {
                name: name.to_owned(),
                known: self.names().join(", "),
            }),
        }
    }

    /// Worker `id` (found by `req.name`) registers, again after a restart:
    /// alive from `now` with the slots it reports. Its rack's index (in
    /// order of first appearance).
    pub fn register(&mut self, now: Millis, id: WorkerId, req: &RegisterRequest) -> u32 {
        let idx = id.0 as usize;
        let w = &mut self.list[idx];
        if req.slots != w.slots {
            tracing::warn!(worker = %req.name, configured = w.slots, reported = req.slots,
                "worker reports a different slot count than the master's cluster.toml; using the worker's");
        }
        w.addr = req.addr.clone();
        w.slots = req.slots;
        w.registered = true;
        w.alive = true;
        w.last_seen = now;
        w.hb_seq = 0;
        w.out_of_band = req.out_of_band_heartbeat;
        w.woken = false;
        w.blocks = req.blocks.len();
        w.free_slots = req.slots;
        let rack = &self.settings[idx].rack;
        self.racks.iter().position(|r| r == rack).unwrap_or(0) as u32
    }

    /// A heartbeat from a known worker: what it says about itself. The
    /// heartbeat's number since registration.
    pub fn beat(&mut self, now: Millis, hb: &Heartbeat) -> u64 {
        let w = &mut self.list[hb.worker.0 as usize];
        w.last_seen = now;
        w.hb_seq += 1;
        w.woken = false;
        w.free_slots = hb.free_slots;
        w.disk_free = hb.disk_free_bytes;
        w.background = hb.busy.iter().filter(|b| b.remaining_ms.is_some()).count() as u32;
        w.nic.update(now, hb.nic_rx_bytes, hb.nic_tx_bytes);
        if let (Some((at, since)), Some(now_free)) = (w.full_at, w.disk_free) {
            if now_free > at {
                tracing::info!(worker = %w.name, free = now_free, "worker's disk has room again");
                w.full_at = None;
            } else if now.saturating_sub(since) >= FULL_RETRY_MS {
                // The free space it had may have been read after the room
                // was made (a heartbeat between the freeing and the failed
                // write's report): with no task there it would never
                // change. Tried again; another failure sets it again.
                tracing::info!(worker = %w.name, free = now_free, "worker's disk full for a while: tasks tried there again");
                w.full_at = None;
            }
        }
        if let Some(blocks) = &hb.blocks {
            w.blocks = blocks.len();
        }
        w.hb_seq
    }

    /// An attempt there ran out of disk at `now`: no task and no replica
    /// for it until it reports more room than it had, or for
    /// [`FULL_RETRY_MS`].
    pub fn disk_full(&mut self, id: WorkerId, now: Millis, error: &str) {
        let w = &mut self.list[id.0 as usize];
        w.full_at = Some((w.disk_free.unwrap_or(0), now));
        tracing::warn!(worker = %w.name, free = ?w.disk_free, %error, "worker's disk is full; no new tasks there until it has more room");
    }

    /// Alive workers silent for longer than `timeout_ms`.
    pub fn silent(&self, now: Millis, timeout_ms: u64) -> Vec<WorkerId> {
        self.ids()
            .filter(|&id| {
                let w = &self.list[id.0 as usize];
                let silent = w.alive && now.saturating_sub(w.last_seen) > timeout_ms;
                if silent {
                    tracing::warn!(worker = %w.name, silent_ms = now - w.last_seen, "worker lost");
                }
                silent
            })
            .collect()
    }

    pub fn lose(&mut self, id: WorkerId) {
        self.list[id.0 as usize].alive = false;
    }

    /// Every attempt sent or queued to `id`, taken off it (in id order),
    /// and its jobs to forget dropped: it lost them all.
    pub fn take_attempts(&mut self, id: WorkerId) -> Vec<AttemptId> {
        let w = &mut self.list[id.0 as usize];
        let mut gone: Vec<AttemptId> = w.running.drain().map(|(a, _)| a).collect();
        gone.extend(w.outbox.drain(..).map(|l| l.attempt));
        w.forget.clear();
        gone.sort();
        gone
    }

    /// Every attempt out on a worker: sent, or waiting in an outbox.
    pub fn attempts_out(&self) -> impl Iterator<Item = AttemptId> + '_ {
        self.list.iter().flat_map(|w| {
            w.running
                .keys()
                .copied()
                .chain(w.outbox.iter().map(|l| l.attempt))
        })
    }

    /// Whether `a` was sent to `id` and has not ended.
    pub fn runs(&self, id: WorkerId, a: &AttemptId) -> bool {
        self.list[id.0 as usize].running.contains_key(a)
    }

    /// `n` results were refused.
    pub fn refuse(&mut self, n: usize) {
        self.refused += n as u64;
    }

    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// A registering worker still runs `a`, which an earlier incarnation
    /// sent it: it runs there (its next heartbeat reports it).
    pub fn adopt(&mut self, id: WorkerId, a: AttemptId) {
        let w = &mut self.list[id.0 as usize];
        w.running.insert(a, w.hb_seq);
    }

    /// Every worker of cluster.toml has registered since the master started.
    pub fn all_registered(&self) -> bool {
        self.list
            .iter()
            .take(self.settings.len())
            .all(|w| w.registered)
    }

    /// `a` ended on `id` (or never reached it).
    pub fn ended(&mut self, id: WorkerId, a: &AttemptId) {
        self.list[id.0 as usize].running.remove(a);
    }

    /// Attempts delivered in a reply before heartbeat `seq` that the worker
    /// does not report (`reported`): that reply was lost.
    pub fn undelivered(
        &self,
        id: WorkerId,
        seq: u64,
        reported: &HashSet<AttemptId>,
    ) -> Vec<AttemptId> {
        let mut lost: Vec<AttemptId> = self.list[id.0 as usize]
            .running
            .iter()
            .filter(|(a, tag)| **tag < seq && !reported.contains(a))
            .map(|(a, _)| *a)
            .collect();
        lost.sort();
        lost
    }

    /// Queues a launch for `id`'s next heartbeat reply.
    pub fn queue(&mut self, id: WorkerId, launch: Launch) {
        self.list[id.0 as usize].outbox.push(launch);
    }

    /// Launches queued for `id` since its last heartbeat.
    pub fn take_outbox(&mut self, id: WorkerId) -> Vec<Launch> {
        std::mem::take(&mut self.list[id.0 as usize].outbox)
    }

    /// The reply to heartbeat `seq` carries `launches`: they are running
    /// there from now on, with the other orders waiting for it.
    pub fn reply(&mut self, id: WorkerId, seq: u64, launches: Vec<Launch>) -> Orders {
        let w = &mut self.list[id.0 as usize];
        for l in &launches {
            w.running.insert(l.attempt, seq);
        }
        Orders {
            launches,
            forget_jobs: std::mem::take(&mut w.forget),
            copy_blocks: std::mem::take(&mut w.copy_out),
            drop_blocks: std::mem::take(&mut w.drop_out),
            drop_stale: std::mem::take(&mut w.stale_out),
        }
    }

    /// Worker `id` may delete `job`'s map output.
    pub fn forget_on(&mut self, id: WorkerId, job: JobId) {
        self.list[id.0 as usize].forget.push(job);
    }

    /// Every alive worker may delete `job`'s map output.
    pub fn forget_everywhere(&mut self, job: JobId) {
        for w in self.list.iter_mut().filter(|w| w.alive) {
            w.forget.push(job);
        }
    }

    pub fn copy(&mut self, id: WorkerId, order: CopyOrder) {
        self.list[id.0 as usize].copy_out.push(order);
    }

    /// `id` is to drop `block` (once, however often asked before it does).
    pub fn drop_block(&mut self, id: WorkerId, block: BlockId) {
        let w = &mut self.list[id.0 as usize];
        if !w.drop_out.contains(&block) {
            w.drop_out.push(block);
        }
    }

    /// `id` is to delete its replica `stale` if still at that generation
    /// (once, however often asked before it does).
    pub fn drop_stale(&mut self, id: WorkerId, stale: StaleReplica) {
        let w = &mut self.list[id.0 as usize];
        if !w.stale_out.contains(&stale) {
            w.stale_out.push(stale);
        }
    }

    /// Out-of-band workers to ask for a heartbeat now: alive, with a free
    /// slot at their last heartbeat, not asked already since it, and not
    /// `except` (the worker whose heartbeat is being answered). Their
    /// addresses.
    pub fn wake(&mut self, except: Option<WorkerId>) -> Vec<String> {
        self.list
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| except.is_none_or(|e| e.0 as usize != *i))
            .map(|(_, w)| w)
            .filter(|w| w.registered && w.alive && w.out_of_band && !w.woken && w.free_slots > 0)
            .map(|w| {
                w.woken = true;
                w.addr.clone()
            })
            .collect()
    }

    /// What storage reads of the workers.
    pub fn holders(&self) -> Vec<Holder<'_>> {
        self.list
            .iter()
            .zip(&self.settings)
            .map(|(w, s)| Holder {
                alive: w.alive,
                takes_data: w.registered && s.role.holds_data(),
                full: w.full_at.is_some(),
                blocks: w.blocks,
                addr: &w.addr,
                name: &w.name,
            })
            .collect()
    }

    /// Worker `id` as the API shows it.
    pub fn info(&self, id: WorkerId, instance_type: Option<String>) -> WorkerInfo {
        let (w, s) = (&self.list[id.0 as usize], &self.settings[id.0 as usize]);
        WorkerInfo {
            id,
            role: s.role,
            name: w.name.clone(),
            addr: w.addr.clone(),
            slots: w.slots,
            free_slots: if w.alive { w.free_slots } else { 0 },
            alive: w.alive,
            blocks: w.blocks,
            running: w.running.len(),
            background: if w.alive { w.background } else { 0 },
            nic_rx_bytes: w.nic.rx_bytes,
            nic_tx_bytes: w.nic.tx_bytes,
            nic_rx_rate: if w.alive { w.nic.rx_rate } else { 0.0 },
            nic_tx_rate: if w.alive { w.nic.tx_rate } else { 0.0 },
            nic_cap: s.nic_bytes_per_sec,
            disk_free_bytes: w.disk_free,
            instance_type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::config::Role;
    use common::wire::{LaunchTask, ReplicaSource};
    use common::TaskRef;
    use workloads::Workload;

    fn worker(i: u32, rack: &str, role: Role) -> WorkerSettings {
        WorkerSettings {
            index: i,
            name: format!("w{i}"),
            listen: "127.0.0.1:0".parse().unwrap(),
            slots: 2,
            nic_bytes_per_sec: Some(1e6),
            slot_rate_bytes: None,
            disk_bytes_per_sec: None,
            role,
            rack: rack.into(),
        }
    }

    fn roster() -> Roster {
        Roster::new(vec![
            worker(0, "r1", Role::Both),
            worker(1, "r2", Role::Compute),
            worker(2, "r1", Role::Both),
        ])
    }

    fn req(name: &str, slots: u32, oob: bool) -> RegisterRequest {
        RegisterRequest {
            name: name.into(),
            addr: format!("http://{name}"),
            slots,
            protocol: common::wire::PROTOCOL,
            blocks: Vec::new(),
            out_of_band_heartbeat: oob,
            running: Vec::new(),
            map_outputs: Vec::new(),
        }
    }

    fn hb(w: u32, free: u32) -> Heartbeat {
        Heartbeat {
            worker: WorkerId(w),
            free_slots: free,
            running: Vec::new(),
            blocks: None,
            results: Vec::new(),
            busy: Vec::new(),
            disk_free_bytes: None,
            progress: Vec::new(),
            nic_rx_bytes: 0,
            nic_tx_bytes: 0,
            incarnation: 0,
            copies_failed: Vec::new(),
        }
    }

    fn attempt(job: u32, index: u32) -> AttemptId {
        AttemptId {
            task: TaskRef {
                job: JobId(job),
                index,
            },
            attempt: 0,
        }
    }

    fn launch(a: AttemptId) -> Launch {
        Launch {
            attempt: a,
            workload: Workload::InputSink,
            task: LaunchTask::Map {
                block: BlockId::new("f.b00000").unwrap(),
                len: 1,
                source: ReplicaSource::Local,
                reduces: 0,
                alternates: Vec::new(),
                compute_ms: 0,
            },
            ratios: None,
        }
    }

    /// Registers `name` as `Master::register` does; its rack.
    fn join(r: &mut Roster, now: Millis, rq: &RegisterRequest) -> u32 {
        let (id, _) = r.find(&rq.name).unwrap();
        r.register(now, id, rq)
    }

    #[test]
    fn registration_names_the_known_workers_and_marks_a_restart() {
        let mut r = roster();
        let err = r.find("w9").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no [[worker]] named \"w9\" in cluster.toml (known: w0, w1, w2)"
        );
        assert_eq!(r.find("w1").unwrap(), (WorkerId(1), false));
        assert_eq!(join(&mut r, 0, &req("w1", 4, false)), 1);
        assert!(r.known(WorkerId(1)) && !r.known(WorkerId(0)) && !r.known(WorkerId(7)));
        assert_eq!(
            r.info(WorkerId(1), None).slots,
            4,
            "the worker's own count wins"
        );
        assert_eq!(join(&mut r, 5, &req("w2", 2, false)), 0);
        assert_eq!(r.find("w1").unwrap(), (WorkerId(1), true), "a restart");
    }

    #[test]
    fn a_silent_worker_is_named_once_lost() {
        let mut r = roster();
        join(&mut r, 0, &req("w0", 2, false));
        join(&mut r, 0, &req("w1", 2, false));
        r.beat(900, &hb(1, 2));
        assert!(r.silent(1_000, 1_000).is_empty());
        assert_eq!(r.silent(1_001, 1_000), [WorkerId(0)]);
        r.lose(WorkerId(0));
        assert!(!r.alive(WorkerId(0)) && !r.known(WorkerId(0)));
        assert!(
            r.silent(5_000, 1_000) == [WorkerId(1)],
            "a lost worker is not lost again"
        );
        assert_eq!(
            r.info(WorkerId(0), None).free_slots,
            0,
            "a lost worker offers nothing"
        );
    }

    #[test]
    fn attempts_are_running_once_their_reply_is_sent_and_undelivered_when_not_reported() {
        let mut r = roster();
        join(&mut r, 0, &req("w0", 2, false));
        let (a, b, c) = (attempt(1, 0), attempt(1, 1), attempt(2, 0));
        r.queue(WorkerId(0), launch(b));
        assert!(r.busy(WorkerId(0)));
        assert_eq!(r.attempts_out().collect::<Vec<_>>(), [b]);
        let seq = r.beat(10, &hb(0, 2));
        let mut out = r.take_outbox(WorkerId(0));
        out.push(launch(a));
        let orders = r.reply(WorkerId(0), seq, out);
        assert_eq!(orders.launches.len(), 2);
        assert!(r.runs(WorkerId(0), &a) && r.runs(WorkerId(0), &b));
        // The next heartbeat reports b only: a's reply was lost.
        let seq = r.beat(20, &hb(0, 1));
        let reported: HashSet<AttemptId> = [b].into();
        assert_eq!(r.undelivered(WorkerId(0), seq, &reported), [a]);
        assert!(
            r.undelivered(WorkerId(0), 1, &HashSet::new()).is_empty(),
            "sent with this reply"
        );
        r.ended(WorkerId(0), &a);
        r.queue(WorkerId(0), launch(c));
        r.forget_everywhere(JobId(1));
        assert_eq!(r.take_attempts(WorkerId(0)), [b, c]);
        assert!(!r.busy(WorkerId(0)));
        assert!(
            r.reply(WorkerId(0), seq, Vec::new()).forget_jobs.is_empty(),
            "forgotten with the attempts"
        );
    }

    #[test]
    fn orders_wait_for_the_next_reply_and_a_drop_is_asked_once() {
        let mut r = roster();
        join(&mut r, 0, &req("w0", 2, false));
        join(&mut r, 0, &req("w1", 2, false));
        r.lose(WorkerId(1));
        r.forget_everywhere(JobId(3));
        let block = BlockId::new("f.b00000").unwrap();
        r.drop_block(WorkerId(0), block.clone());
        r.drop_block(WorkerId(0), block.clone());
        let o = r.reply(WorkerId(0), 1, Vec::new());
        assert_eq!(
            (o.forget_jobs, o.drop_blocks),
            (vec![JobId(3)], vec![block])
        );
        assert!(
            r.reply(WorkerId(1), 1, Vec::new()).forget_jobs.is_empty(),
            "lost: nothing to forget"
        );
        let o = r.reply(WorkerId(0), 2, Vec::new());
        assert!(
            o.forget_jobs.is_empty() && o.drop_blocks.is_empty(),
            "taken once"
        );
    }

    #[test]
    fn a_full_disk_holds_until_the_worker_reports_more_room() {
        let mut r = roster();
        join(&mut r, 0, &req("w0", 2, false));
        r.beat(
            10,
            &Heartbeat {
                disk_free_bytes: Some(500),
                ..hb(0, 2)
            },
        );
        r.disk_full(WorkerId(0), 10, "no space");
        assert!(r.full(WorkerId(0)) && r.holders()[0].full);
        r.beat(
            20,
            &Heartbeat {
                disk_free_bytes: Some(500),
                ..hb(0, 2)
            },
        );
        assert!(r.full(WorkerId(0)), "no more room than when it ran full");
        r.beat(
            30,
            &Heartbeat {
                disk_free_bytes: Some(501),
                ..hb(0, 2)
            },
        );
        assert!(!r.full(WorkerId(0)));
    }

    /// The campaign of 2026-11-29 (seed 2, TLS): a disk-full fault healed
    /// just before a write it had doomed reported its failure, so the free
    /// space recorded was already the healed one; with nothing running
    /// there it never grew, and the worker stayed shut for good.
    #[test]
    fn a_full_disk_that_never_reports_more_room_is_tried_again_after_a_while() {
        let mut r = roster();
        join(&mut r, 0, &req("w0", 2, false));
        let beat = |r: &mut Roster, t: Millis| {
            r.beat(
                t,
                &Heartbeat {
                    disk_free_bytes: Some(108_000_000),
                    ..hb(0, 2)
                },
            );
        };
        beat(&mut r, 10);
        r.disk_full(WorkerId(0), 20, "no space");
        beat(&mut r, 20 + FULL_RETRY_MS - 1);
        assert!(r.full(WorkerId(0)), "held for a while");
        beat(&mut r, 20 + FULL_RETRY_MS);
        assert!(!r.full(WorkerId(0)), "then tried again");
        r.disk_full(WorkerId(0), 20 + FULL_RETRY_MS + 5, "no space");
        beat(&mut r, 20 + FULL_RETRY_MS + 10);
        assert!(r.full(WorkerId(0)), "a new failure shuts it again");
    }

    #[test]
    fn only_idle_out_of_band_workers_are_woken_and_once_until_they_heartbeat() {
        let mut r = roster();
        join(&mut r, 0, &req("w0", 2, true));
        join(&mut r, 0, &req("w1", 2, false));
        join(&mut r, 0, &req("w2", 2, true));
        r.beat(1, &hb(2, 0));
        assert_eq!(r.wake(None), ["http://w0"]);
        assert!(r.wake(None).is_empty(), "asked already");
        r.beat(2, &hb(0, 1));
        assert!(r.wake(Some(WorkerId(0))).is_empty(), "not the one answered");
        assert_eq!(r.wake(None), ["http://w0"]);
    }

    #[test]
    fn storage_sees_data_holders_and_instances_join_with_their_rack() {
        let mut r = roster();
        join(&mut r, 0, &req("w1", 2, false));
        join(&mut r, 0, &req("w2", 2, false));
        let h = r.holders();
        assert_eq!(
            h.iter().map(|h| h.takes_data).collect::<Vec<_>>(),
            [false, false, true]
        );
        let id = r.add(worker(3, "public", Role::Compute));
        assert_eq!((id, r.len()), (WorkerId(3), 4));
        assert_eq!(join(&mut r, 0, &req("w3", 2, false)), 2);
        assert_eq!(r.names(), ["w0", "w1", "w2", "w3"]);
        assert_eq!(r.name(WorkerId(9)), WorkerId(9).to_string());
    }
}
