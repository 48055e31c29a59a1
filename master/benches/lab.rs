//! `make bench`: the scheduling lab's running times against the issue's
//! targets and the papers' Java timings, measured in this run:
//! - DynDLOff on |S| = 1,000 servers x 100 cores, |T| = 10,000 (DynDL Fig 9d;
//!   paper 4,810 ms; target at most 100 ms);
//! - BAR on 2,000 single-core servers and 12,800 tasks (BAR Fig 9; paper
//!   9.1 s; target at most 200 ms);
//! - lsap-sched, 2,000 tasks on 2,000 idle slots (target at most 50 ms);
//! - the whole DynDL Fig 5-8 sweep, `experiments/sim-dyndl-fig{5,6,7,8}.toml`
//!   (target at most 30 s).
//!
//! Each planner is timed 5 times on the same seeded instance; the median is
//! printed with its ratio to the target and the paper's speed-up.

use master::lab::{Algo, Cost, GenParams, Offline};
use std::path::Path;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn line(what: &str, d: Duration, target_ms: f64, paper_ms: Option<f64>) {
    let ms = d.as_secs_f64() * 1e3;
    let paper = paper_ms.map_or(String::new(), |p| {
        format!(", paper (Java) {p:.0} ms = {:.0}x ours", p / ms)
    });
    println!(
        "{what:<48} {ms:>10.1} ms  target {target_ms:.0} ms: {:.2}x of it ({}){paper}",
        ms / target_ms,
        if ms <= target_ms { "met" } else { "NOT met" }
    );
}

fn main() {
    // DynDLOff, DynDL Fig 9d's largest instance.
    let p = GenParams {
        servers: 1000,
        cores: 100,
        tasks: 10_000,
        replication: 3,
        alpha: 0.0,
        beta: 1000.0,
        cost: Cost::Dyndl { theta: 1.0 },
        idle: None,
    };
    let inst = p.generate(1);
    let times: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(Offline::DyndlOff.run(&inst));
            t.elapsed()
        })
        .collect();
    line(
        "DynDLOff |S|=1000 x 100 cores, |T|=10000",
        median(times),
        100.0,
        Some(4810.0),
    );

    // BAR, BAR's running-time experiment at its largest point.
    let p = GenParams {
        servers: 2000,
        cores: 1,
        tasks: 12_800,
        replication: 3,
        alpha: 0.0,
        beta: 40.0,
        cost: Cost::Bar {
            c_loc: 20.0,
            q: 10.0,
        },
        idle: None,
    };
    let inst = p.generate(1);
    let times: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(Offline::Bar.run(&inst));
            t.elapsed()
        })
        .collect();
    line(
        "BAR 2000 servers, 12800 tasks",
        median(times),
        200.0,
        Some(9100.0),
    );

    // lsap-sched: 2000 tasks, 2000 idle slots, one round.
    let p = GenParams {
        servers: 2000,
        cores: 1,
        tasks: 2000,
        replication: 3,
        alpha: 0.0,
        beta: 0.0,
        cost: Cost::Dyndl { theta: 1.0 },
        idle: Some(1.0),
    };
    let inst = p.generate(1);
    let lsap: Algo = "lsap".parse().expect("lsap");
    let times: Vec<Duration> = (0..5)
        .map(|_| lsap.run_round(&inst, 1).expect("lsap round").1)
        .collect();
    line(
        "lsap 2000 tasks x 2000 idle slots",
        median(times),
        50.0,
        None,
    );

    // The DynDL Fig 5-8 sweep, end to end (results in a temp dir).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("root");
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = Instant::now();
    for f in 5..=8 {
        master::lab::sweep::run(
            &root.join(format!("experiments/sim-dyndl-fig{f}.toml")),
            tmp.path(),
        )
        .expect("sweep");
    }
    line("DynDL Fig 5-8 sweep (4 specs)", t.elapsed(), 30_000.0, None);
}
