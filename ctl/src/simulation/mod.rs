//! The simulators' command-line side, which reads and writes files: instance
//! files (JSON), sweeps of the papers' simulations ([`sweep`]), hybrid-cloud
//! specs in the simulator ([`hybrid`]), and a spec's trace hour or jobs at
//! any scale with a calibrated model ([`trace`]). The simulators, the
//! timing harness and the trace simulator are the `lab` crate's; the
//! policies and planners are `sched`'s.

pub mod hybrid;
pub mod sweep;
pub mod trace;

pub use lab::algo::{Algo, LabError, Planned};
pub use lab::timing::{timed_run, Measure, Timed};
pub use sched::model::{Cost, Eval, GenParams, Instance};
pub use sched::offline::Offline;

use anyhow::Context;
use std::path::Path;

/// Reads and validates an instance file.
pub fn read_instance(path: &Path) -> anyhow::Result<Instance> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Instance::from_json(&text).with_context(|| format!("{}", path.display()))
}

/// Writes an instance as JSON, atomically (temp file, then rename).
pub fn write_instance(inst: &Instance, path: &Path) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, inst.to_json()).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_files_round_trip_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("i.json");
        let inst = GenParams {
            servers: 4,
            cores: 2,
            tasks: 5,
            replication: 2,
            alpha: 0.0,
            beta: 3.0,
            cost: Cost::Dyndl { theta: 0.5 },
            idle: None,
            racks: Some(2),
            placement: sched::model::gen::Placement::RackAware,
        }
        .generate(1);
        write_instance(&inst, &f).unwrap();
        assert_eq!(read_instance(&f).unwrap(), inst);
        assert!(!dir.path().join("i.json.tmp").exists());
        let mut bad = inst.clone();
        bad.replicas[2] = vec![1, 9];
        write_instance(&bad, &f).unwrap();
        let e = format!("{:#}", read_instance(&f).unwrap_err());
        assert!(
            e.contains("i.json") && e.contains("replicas[2]") && e.contains("server 9"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            read_instance(&dir.path().join("none.json")).unwrap_err()
        );
        assert!(e.contains("none.json"), "{e}");
    }
}
