//! `make bench`: the scheduling lab's running times against the issue's
//! targets and the papers' Java timings, measured in this run:
//! - DynDLOff on |S| = 1,000 servers x 100 cores, |T| = 10,000 (DynDL Fig 9d;
//!   paper 4,810 ms; target at most 100 ms);
//! - BAR on 2,000 single-core servers and 12,800 tasks (BAR Fig 9; paper
//!   9.1 s; target at most 200 ms);
//! - MaxCover-BalAssign on the same instance (BAR Fig 9; paper 203 s; no
//!   target);
//! - lsap-sched, 2,000 tasks on 2,000 idle slots (target at most 50 ms);
//! - the whole DynDL Fig 5-8 sweep, `experiments/sim-dyndl-fig{5,6,7,8}.toml`
//!   (target at most 30 s);
//! - one SWIM hour (`experiments/swim-hour.toml`, bytes scaled to ~34,000
//!   maps) on 1,000 servers x 12 slots in `lab::replay` (`master sim
//!   trace`; target: 100,000 tasks in 10 s, so the ratio is per task);
//! - a SWIM day (`experiments/whatif-swim-day-10000.toml`, 1,033,483 maps)
//!   on 10,000 servers x 12 slots, heartbeats every 3 s and every 100 ms
//!   (`whatif-swim-day-10000-100ms.toml`, the specs' default) (target: 30 s
//!   per scheduler), with its events per second (filter "day").
//!
//! The planners are measured with criterion (10 samples each; criterion's
//! own report, then a summary line per planner with the median of the
//! samples' time per run, its ratio to the target and the paper's
//! speed-up). The sweep takes
//! about half a minute, so it is timed once after them. Criterion's usual
//! arguments work: `cargo bench -p ctl --bench lab -- BAR` runs the rows
//! matching BAR only (the sweep runs when the filter is empty or matches "sweep").

use common::bench::record;
use criterion::{Criterion, SamplingMode};
use ctl::simulation::{Algo, Cost, GenParams, Instance, Offline};
use std::path::Path;
use std::time::{Duration, Instant};

struct Case {
    name: &'static str,
    target_ms: Option<f64>,
    paper_ms: Option<f64>,
    inst: Instance,
    run: fn(&Instance),
}

fn cases() -> Vec<Case> {
    // DynDL Fig 9d's largest instance.
    let dyndl = GenParams {
        servers: 1000,
        cores: 100,
        tasks: 10_000,
        replication: 3,
        alpha: 0.0,
        beta: 1000.0,
        cost: Cost::Dyndl { theta: 1.0 },
        idle: None,
        racks: None,
        placement: Default::default(),
    };
    // BAR's running-time experiment at its largest point.
    let bar = GenParams {
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
        racks: None,
        placement: Default::default(),
    };
    // One lsap round: 2000 tasks, 2000 idle slots.
    let lsap = GenParams {
        servers: 2000,
        cores: 1,
        tasks: 2000,
        replication: 3,
        alpha: 0.0,
        beta: 0.0,
        cost: Cost::Dyndl { theta: 1.0 },
        idle: Some(1.0),
        racks: None,
        placement: Default::default(),
    };
    vec![
        Case {
            name: "DynDLOff |S|=1000 x 100 cores, |T|=10000",
            target_ms: Some(100.0),
            paper_ms: Some(4810.0),
            inst: dyndl.generate(1),
            run: |i| {
                std::hint::black_box(Offline::DyndlOff.run(i));
            },
        },
        Case {
            name: "BAR 2000 servers, 12800 tasks",
            target_ms: Some(200.0),
            paper_ms: Some(9100.0),
            inst: bar.generate(1),
            run: |i| {
                std::hint::black_box(Offline::Bar.run(i));
            },
        },
        Case {
            name: "MB 2000 servers, 12800 tasks",
            target_ms: None,
            paper_ms: Some(203_000.0),
            inst: bar.generate(1),
            run: |i| {
                std::hint::black_box(Offline::MaxCover.run(i));
            },
        },
        Case {
            name: "lsap 2000 tasks x 2000 idle slots",
            target_ms: Some(50.0),
            paper_ms: None,
            inst: lsap.generate(1),
            run: |i| {
                let lsap: Algo = "lsap".parse().expect("lsap");
                std::hint::black_box(lsap.run_round(i, 1).expect("lsap round"));
            },
        },
    ]
}

fn line(what: &str, d: Duration, target_ms: Option<f64>, paper_ms: Option<f64>) {
    let ms = d.as_secs_f64() * 1e3;
    let target = target_ms.map_or("no target".to_string(), |t| {
        format!(
            "target {t:.0} ms: {:.2}x of it ({})",
            ms / t,
            if ms <= t { "met" } else { "NOT met" }
        )
    });
    let paper = paper_ms.map_or(String::new(), |p| {
        format!(", paper (Java) {p:.0} ms = {:.0}x ours", p / ms)
    });
    println!("{what:<48} {ms:>10.1} ms  {target}{paper}");
    let slug = what
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
        .to_ascii_lowercase();
    let bound = target_ms.map_or(String::new(), |t| format!("<= {t}"));
    record(
        &format!("lab.{slug}.ms"),
        &format!("{what}: ms"),
        ms,
        "ms",
        &bound,
    );
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let mut summary = Vec::new();
    let mut group = c.benchmark_group("lab");
    // Flat sampling: every sample runs the same number of iterations, so
    // the samples are told apart from the warm-up batches by their size.
    group.sampling_mode(SamplingMode::Flat);
    for case in cases() {
        // (iterations, time per run) of every batch criterion measures.
        let mut batches: Vec<(u64, Duration)> = Vec::new();
        group.bench_function(case.name, |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    (case.run)(&case.inst);
                }
                let d = t.elapsed();
                batches.push((iters, d / iters.max(1) as u32));
                d
            })
        });
        if let Some(&(n, _)) = batches.last() {
            let mut samples: Vec<Duration> = batches
                .iter()
                .filter(|(i, _)| *i == n)
                .map(|(_, d)| *d)
                .collect();
            samples.sort();
            summary.push((case, samples[samples.len() / 2]));
        }
    }
    group.finish();
    c.final_summary();
    println!();
    for (case, d) in &summary {
        line(case.name, *d, case.target_ms, case.paper_ms);
    }
    if filter.is_empty() || "sweep".contains(filter.as_str()) {
        // The DynDL Fig 5-8 sweep, end to end (results in a temp dir).
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("root");
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = Instant::now();
        for f in 5..=8 {
            ctl::simulation::sweep::run(
                &root.join(format!("experiments/sim-dyndl-fig{f}.toml")),
                tmp.path(),
            )
            .expect("sweep");
        }
        line(
            "DynDL Fig 5-8 sweep (4 specs)",
            t.elapsed(),
            Some(30_000.0),
            None,
        );
    }
    if filter.is_empty() || "trace".contains(filter.as_str()) {
        // One SWIM hour on 1,000 servers x 12 slots in the replay, bytes
        // scaled to ~34,000 maps, under each of the spec's five schedulers
        // (one seed): the spec of `make trace` with its trace file's path
        // made absolute.
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("root");
        let tmp = tempfile::tempdir().expect("tempdir");
        let text = std::fs::read_to_string(root.join("experiments/swim-hour.toml")).expect("spec");
        let trace = root.join("traces/swim/FB-2010_samples_24_times_1hr_withInputPaths_0.tsv");
        let text: String = text
            .lines()
            .map(|l| match l.split('=').next().map(str::trim) {
                Some("file") => format!("file = {:?}", trace.display().to_string()),
                Some("bytes_scale") => "bytes_scale = 3e-3".into(),
                Some("repetitions") => "repetitions = 1".into(),
                _ => l.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let spec = tmp.path().join("swim.toml");
        std::fs::write(&spec, text).expect("spec");
        let cal = std::fs::read_dir(root.join("results/swim-hour"))
            .expect("results/swim-hour")
            .map(|e| e.expect("entry").path().join("calibration"))
            .find(|p| p.join("meta.json").exists())
            .expect("a calibrated swim-hour folder");
        let (_, runs) = ctl::simulation::trace::run(
            &spec,
            &cal,
            &ctl::simulation::trace::TraceOptions::at(Some(1000), Some(12)),
        )
        .expect("trace");
        for r in &runs {
            println!(
                "{:<44} {:>6} maps, {:>9.0} ms  (target 10,000 ms for 100,000 tasks: {:.2}x per task)",
                format!("SWIM hour, 1,000 x 12, {}", r.scheduler),
                r.maps,
                r.wall_s * 1e3,
                r.wall_s / 10.0 * 100_000.0 / r.maps as f64,
            );
            let what = format!(
                "SWIM hour in the replay, 1,000 x 12, {} ({} maps)",
                r.scheduler, r.maps
            );
            record(
                &format!("lab.trace.{}.s", r.scheduler),
                &format!("{what}: wall time"),
                r.wall_s,
                "s",
                "",
            );
            record(
                &format!("lab.trace.{}.per_task", r.scheduler),
                &format!("{what}: time per task / the target's (10 s per 100,000 tasks)"),
                r.wall_s / 10.0 * 100_000.0 / r.maps as f64,
                "x",
                "<= 1",
            );
        }
    }
    if filter.is_empty() || "day".contains(filter.as_str()) {
        swim_day("whatif-swim-day-10000", "3 s", "day");
        swim_day("whatif-swim-day-10000-100ms", "100 ms", "day100ms");
    }
}

/// A SWIM day (all 24 hours, bytes x 5e-4: 1,033,483 maps) on 10,000
/// servers x 12 slots, heartbeats every `beat` (`experiments/<spec>.toml`),
/// under hadoop, delay and DynDLOn, as `sim trace` runs it by default (the
/// shuffle and the remote maps' blocks over the links): the wall time of
/// each against the 30 s target, and the events (heartbeats, task ends)
/// per second, recorded as `lab.<id>.<scheduler>`.
fn swim_day(spec: &str, beat: &str, id: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("root");
    let cal = root.join("results/swim-hour-shuffle/20261128-190407/calibration");
    let opts = ctl::simulation::trace::TraceOptions::at(Some(10_000), Some(12));
    let (_, runs) =
        ctl::simulation::trace::run(&root.join(format!("experiments/{spec}.toml")), &cal, &opts)
            .expect("the SWIM day");
    for r in &runs {
        let what = format!(
            "SWIM day in the replay, 10,000 x 12, heartbeat {beat}, over the links, {} ({} maps)",
            r.scheduler, r.maps
        );
        let rate = r.events as f64 / r.wall_s;
        println!(
            "{what}: {:.1} s (target 30 s: {:.2}x), {} events, {:.2} M events/s",
            r.wall_s,
            r.wall_s / 30.0,
            r.events,
            rate / 1e6
        );
        let id = format!("lab.{id}.{}", r.scheduler);
        record(
            &format!("{id}.s"),
            &format!("{what}: wall time / the target's (30 s)"),
            r.wall_s / 30.0,
            "x",
            "<= 1",
        );
        record(
            &format!("{id}.events_per_s"),
            &format!("{what}: events per second ({} events)", r.events),
            rate,
            "events/s",
            "",
        );
    }
}
