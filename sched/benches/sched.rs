//! `make bench`: the cost of one free-slot decision of each scheduler with
//! 10,000 pending tasks over 100 jobs and 1,000 workers (target: at most
//! 10 us for the online policies). Each decision offers one worker one free
//! slot; the launched task is then put back and its slot freed, so every
//! decision sees the same amount of pending work. lsap and lsap-fair are
//! batch policies that look at every idle slot and pending task at once;
//! they are measured the same way for reference (not held to 10 us).
//! `SCHED_ONLY=<policy as listed>` runs one of them (for profiling).

use base::{JobId, TaskRef, WorkerId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched::{build, offer, ClusterView, PendingTask};
use std::time::Instant;

const WORKERS: u32 = 1_000;
const JOBS: u32 = 100;
const TASKS_PER_JOB: u32 = 100;
const TARGET_US: f64 = 10.0;

fn view(seed: u64) -> ClusterView {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v = ClusterView::new();
    for w in 0..WORKERS {
        v.upsert_worker(WorkerId(w), 2);
        v.set_free(WorkerId(w), 0);
    }
    for j in 0..JOBS {
        let tasks = (0..TASKS_PER_JOB)
            .map(|i| {
                let mut reps: Vec<WorkerId> = Vec::new();
                while reps.len() < 3 {
                    let r = WorkerId(rng.gen_range(0..WORKERS));
                    if !reps.contains(&r) {
                        reps.push(r);
                    }
                }
                PendingTask {
                    task: TaskRef {
                        job: JobId(j + 1),
                        index: i,
                    },
                    len: 64 << 20,
                    replicas: reps,
                }
            })
            .collect();
        v.add_job(JobId(j + 1), 0, &format!("g{}", j % 4), tasks);
    }
    v
}

fn main() {
    println!(
        "scheduler decision cost: {} pending tasks over {JOBS} jobs, {WORKERS} workers, one free slot per decision",
        JOBS * TASKS_PER_JOB
    );
    let only = std::env::var("SCHED_ONLY").ok();
    let policies = [
        ("hadoop", true),
        ("delay3", true),
        ("dyndl-on", true),
        ("policy = 'rand', randomness = 0.5", true),
        ("policy = 'fair', delay_s = 3", true),
        ("lsap", false),
        ("lsap-fair", false),
    ];
    for (p, online) in policies {
        if only.as_deref().is_some_and(|o| o != p) {
            continue;
        }
        let cfg: sched::policy::SchedulerConfig = p.parse().unwrap();
        let decisions: u64 = if online { 200_000 } else { 2_000 };
        let (per, launched) = measure(&cfg, decisions, false);
        let cfg_label = cfg.label();
        let what = format!(
            "one free-slot decision, {} pending tasks, {JOBS} jobs, {WORKERS} workers: {cfg_label}",
            JOBS * TASKS_PER_JOB
        );
        let bound = if online {
            format!("<= {TARGET_US}")
        } else {
            String::new()
        };
        base::bench::record(
            &format!("sched.{cfg_label}.us"),
            &format!("{what}, us"),
            per,
            "us",
            &bound,
        );
        if online {
            println!(
                "   {cfg_label:<34} {per:>8.2} us per decision ({launched} launches), ratio to target {:.2} (target <= 1.00)",
                per / TARGET_US
            );
        } else {
            println!(
                "   {cfg_label:<34} {per:>8.2} us per decision ({launched} launches), batch policy, reference only"
            );
        }
    }
    // The decision record on and off, side by side: rounds alternate so
    // both see the same machine; medians of the rounds.
    println!(
        "decision record: cost per decision with the record kept (rows drained every 1,000 decisions, as the master does at each heartbeat) against without, median of 5 alternating rounds of 40,000 decisions"
    );
    for (p, online) in policies {
        if !online || only.as_deref().is_some_and(|o| o != p) {
            continue;
        }
        let cfg: sched::policy::SchedulerConfig = p.parse().unwrap();
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            off.push(measure(&cfg, 40_000, false).0);
            on.push(measure(&cfg, 40_000, true).0);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (off, on) = (median(&mut off), median(&mut on));
        println!(
            "   {:<34} off {off:>7.2} us, on {on:>7.2} us, ratio on/off {:.2}",
            cfg.label(),
            on / off
        );
        base::bench::record(
            &format!("sched.{}.record_ratio", cfg.label()),
            &format!(
                "decision record kept / not, {}, median of 5 rounds",
                cfg.label()
            ),
            on / off,
            "x",
            "",
        );
    }
}

/// Mean cost of `decisions` one-slot offers of `cfg` (us) and the launches
/// they made, with the decision record kept or not.
fn measure(cfg: &sched::policy::SchedulerConfig, decisions: u64, record: bool) -> (f64, u64) {
    let mut s = build(cfg, 1);
    let mut v = view(9);
    v.record_decisions(record);
    let replicas: std::collections::HashMap<TaskRef, Vec<WorkerId>> = v
        .jobs()
        .flat_map(|j| j.pending().map(|p| (p.task, p.replicas.clone())))
        .collect();
    let mut launched = 0u64;
    let mut spent = std::time::Duration::ZERO;
    let mut now = 0u64;
    let mut rows = 0usize;
    for d in 0..decisions {
        let w = WorkerId((d % WORKERS as u64) as u32);
        v.set_free(w, 1);
        now += 1;
        let t = Instant::now();
        let a = offer(s.as_mut(), now, w, &mut v);
        if record && d % 1_000 == 999 {
            rows += v.take_decisions().len();
        }
        spent += t.elapsed();
        for x in a {
            launched += 1;
            v.task_ended(x.task.job, x.worker, !x.is_local());
            v.set_free(x.worker, 0);
            v.requeue(PendingTask {
                task: x.task,
                len: x.len,
                replicas: replicas[&x.task].clone(),
            });
        }
        v.set_free(w, 0);
    }
    rows += v.take_decisions().len();
    assert!(
        !record || rows as u64 >= launched,
        "{rows} rows, {launched} launches"
    );
    (spent.as_secs_f64() * 1e6 / decisions as f64, launched)
}
