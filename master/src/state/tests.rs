//! The master's rules, driven by fake workers (no HTTP, no clock).

use super::*;
use common::wire::{
    AttemptProgress, BlockInfo, Heartbeat, Launch, LaunchTask, Locality, LostOutput,
    RegisterRequest, ReplicaSource, TaskOutcome, TaskResult,
};

use common::wire::{JobState, JobSubmit};

use common::AttemptId;

use sched::Millis;

use workloads::{MapSummary, Workload};

pub(crate) fn settings(workers: u32, slots: u32) -> MasterSettings {
    MasterSettings {
        credentials: Default::default(),
        config_path: None,
        journal: None,
        journal_recover: false,
        public_types: Vec::new(),
        public: Default::default(),
        slot_rate_mbs: None,
        provision: None,
        record_decisions: false,
        decisions_max: 1_000_000,
        retained_jobs: 10_000,
        speculation: Default::default(),
        tls: None,
        heartbeat_ms: 100,
        worker_timeout_ms: 1000,
        max_task_attempts: 2,
        task_timeout_ms: 0,
        scheduler: SchedulerConfig::hadoop(),
        reduce_placement: ReducePlacement::Policy,
        seed: 5,
        replication: 2,
        workers: (0..workers)
            .map(|i| WorkerSettings {
                index: i,
                name: format!("w{i}"),
                listen: "127.0.0.1:0".parse().unwrap(),
                slots,
                nic_bytes_per_sec: None,
                slot_rate_bytes: None,
                disk_bytes_per_sec: None,
                role: common::config::Role::Both,
                rack: common::config::DEFAULT_RACK.into(),
            })
            .collect(),
    }
}

fn block(file: &str, index: u32, n: u32) -> BlockInfo {
    crate::catalog::reported_block(file, index, n, 1000)
}

/// Registers `w0..w(workers-1)` of `m` at time 0, `slots` each; worker w
/// holds `held(w)`.
fn register_all(m: &mut Master, workers: u32, slots: u32, held: impl Fn(u32) -> Vec<BlockInfo>) {
    register_all_with(m, workers, slots, held, |_| false);
}

/// [`register_all`], worker w heartbeating out of band if `oob(w)`.
fn register_all_with(
    m: &mut Master,
    workers: u32,
    slots: u32,
    held: impl Fn(u32) -> Vec<BlockInfo>,
    oob: impl Fn(u32) -> bool,
) {
    for w in 0..workers {
        m.register(
            0,
            RegisterRequest {
                name: format!("w{w}"),
                addr: format!("http://w{w}"),
                slots,
                protocol: common::wire::PROTOCOL,
                blocks: held(w),
                out_of_band_heartbeat: oob(w),
                running: Vec::new(),
                map_outputs: Vec::new(),
            },
        )
        .unwrap();
    }
}

/// Registers `w0..wn`; block i of file "f" (n blocks) lives on worker i % workers.
fn cluster(workers: u32, slots: u32, blocks: u32) -> Master {
    cluster_with(settings(workers, slots), workers, slots, blocks)
}

/// [`cluster`] with these settings.
fn cluster_with(s: MasterSettings, workers: u32, slots: u32, blocks: u32) -> Master {
    let mut m = Master::new(s);
    register_all(&mut m, workers, slots, |w| {
        (0..blocks)
            .filter(|b| b % workers == w)
            .map(|b| block("f", b, blocks))
            .collect()
    });
    m
}

fn hb(w: u32, free: u32, running: Vec<AttemptId>, results: Vec<TaskResult>) -> Heartbeat {
    Heartbeat {
        busy: Vec::new(),
        worker: WorkerId(w),
        free_slots: free,
        running,
        blocks: None,
        results,
        disk_free_bytes: None,
        progress: Vec::new(),
        nic_rx_bytes: 0,
        nic_tx_bytes: 0,
        incarnation: 0,
        copies_failed: Vec::new(),
    }
}

/// A map launch's source and input length.
fn map_of(l: &Launch) -> (&ReplicaSource, u64) {
    match &l.task {
        LaunchTask::Map { source, len, .. } => (source, *len),
        LaunchTask::Reduce(_) => panic!("expected a map launch: {l:?}"),
    }
}

fn ok(l: &Launch, slot: u32) -> TaskResult {
    let (source, len) = map_of(l);
    let remote = !matches!(source, ReplicaSource::Local);
    TaskResult {
        attempt: l.attempt,
        slot,
        outcome: TaskOutcome::Succeeded {
            summary: MapSummary {
                input_bytes: len,
                records: 1,
                output_bytes: len,
                sample: Vec::new(),
            },
        },
        started_unix_ms: 1_000_010,
        finished_unix_ms: 1_000_050,
        local_bytes: if remote { 0 } else { len },
        remote_bytes: if remote { len } else { 0 },
    }
}

fn failed(l: &Launch) -> TaskResult {
    TaskResult {
        outcome: TaskOutcome::Failed {
            error: "disk on fire".into(),
        },
        ..ok(l, 0)
    }
}

fn submit(m: &mut Master) -> JobId {
    submit_at(m, 0)
}

/// An input-sink job over file "f", submitted at `now`.
fn submit_at(m: &mut Master, now: Millis) -> JobId {
    m.submit(now, 1_000_000, JobSubmit::new(Workload::InputSink, "f"))
        .unwrap()
}

/// A reduce launch's inputs as (map, worker, attempt).
fn reduce_inputs(l: &Launch) -> Vec<(u32, WorkerId, u32)> {
    let LaunchTask::Reduce(r) = &l.task else {
        panic!("expected a reduce launch: {l:?}")
    };
    r.inputs
        .iter()
        .map(|i| (i.map, i.worker, i.attempt))
        .collect()
}

fn reduced(l: &Launch) -> TaskResult {
    TaskResult {
        outcome: TaskOutcome::Reduced {
            summary: workloads::ReduceSummary::default(),
        },
        ..ok_any(l)
    }
}

/// A result with no outcome of interest yet (the caller sets it).
fn ok_any(l: &Launch) -> TaskResult {
    TaskResult {
        attempt: l.attempt,
        slot: 0,
        outcome: TaskOutcome::Rejected {
            reason: String::new(),
        },
        started_unix_ms: 1_000_010,
        finished_unix_ms: 1_000_050,
        local_bytes: 0,
        remote_bytes: 0,
    }
}

fn wordcount(m: &mut Master, reduces: u32) -> JobId {
    let mut job = JobSubmit::new(Workload::Wordcount, "f");
    job.reduces = Some(reduces);
    m.submit(0, 1_000_000, job).unwrap()
}

/// Heartbeats every worker in turn, reporting each map launch as done at
/// the worker's next heartbeat (starting with `owed`), until a round
/// launches nothing and nothing is owed; returns the reduce launches seen,
/// with the worker each went to.
fn drive_maps(
    m: &mut Master,
    workers: u32,
    now: u64,
    owed: Vec<(u32, Launch)>,
) -> Vec<(u32, Launch)> {
    let mut owed = owed;
    let mut reduces = Vec::new();
    for _ in 0..20 {
        let mut launched = false;
        for w in 0..workers {
            let results: Vec<TaskResult> = owed
                .iter()
                .filter(|(ow, _)| *ow == w)
                .map(|(_, l)| ok(l, 0))
                .collect();
            owed.retain(|(ow, _)| *ow != w);
            // Reduces keep running (the caller ends them).
            let running: Vec<AttemptId> = reduces
                .iter()
                .filter(|(rw, _)| *rw == w)
                .map(|(_, l): &(u32, Launch)| l.attempt)
                .collect();
            for l in m.heartbeat(now, hb(w, 2, running, results)).launches {
                launched = true;
                match l.task {
                    LaunchTask::Map { .. } => owed.push((w, l)),
                    LaunchTask::Reduce(_) => reduces.push((w, l)),
                }
            }
        }
        if !launched && owed.is_empty() {
            return reduces;
        }
    }
    panic!("maps never settled: {owed:?}");
}

/// Registers worker `w` of `m` (2 slots, blocks of "f" as `cluster` puts
/// them) saying it runs `running` and keeps `outputs`.
fn reregister(
    m: &mut Master,
    w: u32,
    blocks: u32,
    running: Vec<AttemptId>,
    outputs: Vec<AttemptId>,
) {
    m.register(
        0,
        RegisterRequest {
            name: format!("w{w}"),
            addr: format!("http://w{w}"),
            slots: 2,
            protocol: common::wire::PROTOCOL,
            blocks: (0..blocks)
                .filter(|b| b % 2 == w)
                .map(|b| block("f", b, blocks))
                .collect(),
            out_of_band_heartbeat: false,
            running,
            map_outputs: outputs,
        },
    )
    .unwrap();
}

/// Launches every map of the jobs of `m` (2 workers x 2 slots): per worker,
/// its launches.
fn launch_all(m: &mut Master, now: Millis) -> Vec<(u32, Launch)> {
    let mut launches = Vec::new();
    for w in 0..2 {
        for l in m.heartbeat(now, hb(w, 2, vec![], vec![])).launches {
            launches.push((w, l));
        }
    }
    launches
}

/// A heartbeat of worker `w` that reports `a` running with `units` of
/// progress (a map of 1000 bytes is done at 2000 units).
fn hb_progress(w: u32, free: u32, a: AttemptId, units: u64, results: Vec<TaskResult>) -> Heartbeat {
    let mut h = hb(w, free, vec![a], results);
    h.progress = vec![AttemptProgress {
        attempt: a,
        units,
        slot: 0,
        done_ppm: None,
    }];
    h
}

/// A heartbeat of worker `w` that reports `a` running with `ppm`
/// millionths of its work done, as a worker's reduce says.
fn hb_done(w: u32, free: u32, a: AttemptId, ppm: u32, results: Vec<TaskResult>) -> Heartbeat {
    let mut h = hb(w, free, vec![a], results);
    h.progress = vec![AttemptProgress {
        attempt: a,
        units: u64::from(ppm) + 1,
        slot: 0,
        done_ppm: Some(ppm),
    }];
    h
}

mod commits;
mod launches_and_failures;
mod reruns_replicas_and_restarts;
mod timeouts_and_stragglers;
