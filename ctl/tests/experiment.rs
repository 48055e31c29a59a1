//! The experiment runner end to end on `experiments/smoke.toml`: real local
//! processes for every run, then the result files checked against what the
//! spec asked for.

use std::path::{Path, PathBuf};

/// Runs `spec` with the binaries in `bin`, results and scratch space under
/// `dir`.
async fn run_in(dir: &Path, spec: PathBuf, bin: &Path) -> anyhow::Result<PathBuf> {
    ctl::experiment::run::run(&ctl::experiment::run::Options {
        spec,
        results: dir.join("results"),
        work: dir.join("work"),
        keep_data: false,
        bin: bin.to_owned(),
        deployment: ctl::ops::deploy::Kind::Processes.deployment(),
    })
    .await
}

/// The folder of the built `master` and `worker` binaries the runs start.
fn built_bins() -> &'static Path {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "{} is missing: build the binaries first (`cargo build --bins`; make test does)",
        bin.join("worker").display()
    );
    bin
}

/// A spec of one hadoop job on 2 workers of 1 slot that process 10 KB/s:
/// `blocks` blocks of `block_size`, ended after `timeout_s`, at `points`.
fn slow_spec(name: &str, timeout_s: u32, blocks: u32, block_size: &str, points: &str) -> String {
    format!(
        r#"
name = "{name}"
schedulers = ["hadoop"]
timeout_s = {timeout_s}
[cluster]
workers = 2
slots = 1
replication = 1
heartbeat_ms = 50
slot_rate_mbs = 0.01
[data]
files = 1
blocks = {blocks}
block_size = "{block_size}"
[jobs]
count = 1
{points}"#
    )
}

#[path = "experiment/runner.rs"]
mod runner;
#[path = "experiment/specs_traces_and_scale.rs"]
mod specs_traces_and_scale;
