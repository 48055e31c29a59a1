//! `make bench`: what an external policy costs. The shipped SWIM hour
//! (`experiments/swim-hour.toml`, its calibration) simulated on 30 workers
//! x 2 slots, seed by seed, under the built-in `delay` (threshold 1.5 s,
//! oldest task) and under the reference external policy that makes the
//! same launches (`master policy-server`, here on a thread of this
//! process) reached over a Unix socket and over loopback TCP, and under
//! the Python example (`python/examples/delay.py`, run by python3) on a
//! Unix socket. Printed, side
//! by side from this run: each one's simulation time, the offers the
//! external policy was sent, the time an offer costs more than the
//! built-in's decision (the round trip: the view as JSON, the socket, the
//! server's parse and decision, the reply's parse and checks), the offers
//! per second and the simulation's time against the built-in's. (Offers
//! with no pending map are not sent: nothing could launch.)

use sched::policy::SchedulerConfig;
use std::path::Path;

fn main() {
    common::policy_socket::install();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cal = ctl::simulation::trace::shipped_swim_calibration(&root).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let unix = ctl::policy_server::spawn(
        &format!("unix:{}", dir.path().join("p.sock").display()),
        1.5,
    )
    .unwrap();
    let tcp = ctl::policy_server::spawn("tcp:127.0.0.1:0", 1.5).unwrap();
    let py_sock = dir.path().join("py.sock");
    let mut python = std::process::Command::new("python3")
        .arg(root.join("python/examples/delay.py"))
        .args(["--listen", &format!("unix:{}", py_sock.display())])
        .env("DELAY_THRESHOLD_S", "1.5")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("python3 runs python/examples/delay.py");
    let t0 = std::time::Instant::now();
    while !py_sock.exists() {
        assert!(
            t0.elapsed().as_secs() < 20,
            "the Python policy did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let py = format!("unix:{}", py_sock.display());
    let built_in: SchedulerConfig = "policy = \"delay\", threshold_s = 1.5, pick = \"oldest\""
        .parse()
        .unwrap();
    let ext = |a: &str| -> SchedulerConfig {
        format!("policy = \"external\", address = \"{a}\", timeout_ms = 5000")
            .parse()
            .unwrap()
    };
    let configs = [
        ("built-in", built_in),
        ("unix socket", ext(&unix)),
        ("loopback TCP", ext(&tcp)),
        ("a Unix socket, in Python", ext(&py)),
    ];
    let opts = ctl::simulation::trace::TraceOptions {
        schedulers: configs.iter().map(|c| c.1.clone()).collect(),
        ..ctl::simulation::trace::TraceOptions::at(Some(30), None)
    };
    let (_, runs) =
        ctl::simulation::trace::run(&root.join("experiments/swim-hour.toml"), &cal, &opts)
            .expect("the SWIM hour simulates");
    let _ = python.kill();
    let _ = python.wait();
    let total = |label: &str| -> (f64, u64, usize) {
        let mine: Vec<_> = runs.iter().filter(|r| r.scheduler == label).collect();
        (
            mine.iter().map(|r| r.wall_s).sum(),
            mine.iter()
                .flat_map(|r| &r.counters)
                .filter(|c| c.0 == "calls")
                .map(|c| c.1)
                .sum(),
            mine.len(),
        )
    };
    let (base_s, _, seeds) = total(&configs[0].1.label());
    println!(
        "external policy: SWIM hour on 30 workers x 2 slots, {seeds} seeds; built-in {}: {base_s:.3} s",
        configs[0].1.label()
    );
    for (name, c) in &configs[1..] {
        let (s, calls, _) = total(&c.label());
        let per_offer_us = (s - base_s) / calls.max(1) as f64 * 1e6;
        println!(
            "external policy over {name}: {s:.3} s for {calls} offers with a pending map: \
             {per_offer_us:.1} us more per offer than the built-in's decision, {:.0} offers/s; \
             the simulation takes {:.1}x the built-in's time",
            calls as f64 / s,
            s / base_s
        );
        let what = format!("external policy over {name}, SWIM hour on 30 workers x 2 slots");
        common::bench::record(
            &format!("external.{name}.us_per_offer"),
            &format!("{what}: us more per offer than the built-in"),
            per_offer_us,
            "us",
            "",
        );
        common::bench::record(
            &format!("external.{name}.slowdown"),
            &format!("{what}: simulation time / the built-in's"),
            s / base_s,
            "x",
            "",
        );
    }
}
