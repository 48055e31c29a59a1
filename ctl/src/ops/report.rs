//! Human-readable job reports for the CLI.

use common::wire::{JobReport, Locality, TaskKind};
use std::fmt::Write;

fn ms(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| format!("{:.3}", v as f64 / 1000.0))
}

fn mb(b: u64) -> String {
    format!("{:.1}", b as f64 / 1e6)
}

/// One line per job.
pub fn jobs_table(jobs: &[JobReport]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:<20} {:<11} {:<12} {:<10} {:>9} {:>6} {:>6} {:>6} {:>10} {:>10}",
        "job",
        "name",
        "workload",
        "input",
        "state",
        "jct_s",
        "tasks",
        "local",
        "remote",
        "local_MB",
        "remote_MB"
    );
    for j in jobs {
        let _ = writeln!(
            s,
            "{:<8} {:<20} {:<11} {:<12} {:<10} {:>9} {:>6} {:>6} {:>6} {:>10} {:>10}",
            j.job.to_string(),
            j.name,
            j.workload.to_string(),
            j.input,
            format!("{:?}", j.state).to_lowercase(),
            ms(j.jct_ms),
            j.tasks,
            j.data_local,
            j.data_remote,
            mb(j.bytes_local),
            mb(j.bytes_remote)
        );
    }
    s
}

/// A job's summary followed by every attempt.
pub fn job_report(j: &JobReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {:?} ({} on {}, scheduler {})",
        j.job, j.name, j.workload, j.input, j.scheduler
    );
    let _ = writeln!(
        s,
        "  state {:?}   submitted at unix {} ms   start +{} s   finish +{} s   JCT {} s",
        j.state,
        j.submit_unix_ms,
        ms(j.start_ms),
        ms(j.finish_ms),
        ms(j.jct_ms)
    );
    if let Some(e) = &j.error {
        let _ = writeln!(s, "  error: {e}");
    }
    if let Some(d) = &j.decided_by {
        let _ = writeln!(
            s,
            "  maps launched by the external policy: {}; by its fallback ({}, offers the policy could not decide): {}",
            d.policy, d.fallback_name, d.fallback
        );
    }
    let pct = if j.tasks_done > 0 {
        100.0 * j.data_local as f64 / j.tasks_done as f64
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "  tasks {}/{} done   data-local {}   data-remote {}   locality {:.1}%   read locally {} MB   over the network {} MB",
        j.tasks_done, j.tasks, j.data_local, j.data_remote, pct, mb(j.bytes_local), mb(j.bytes_remote)
    );
    if j.backups > 0 {
        let _ = writeln!(
            s,
            "  speculation: {} backup attempts, {} finished first",
            j.backups, j.backups_won
        );
    }
    if j.reduces > 0 {
        let _ = writeln!(
            s,
            "  reduces {}/{} done   shuffled {} MB   output file {}{}",
            j.reduces_done,
            j.reduces,
            mb(j.shuffle_bytes),
            j.output.as_deref().unwrap_or("-"),
            j.output_replication
                .map(|n| format!(" ({n} {})", if n == 1 { "replica" } else { "replicas" }))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        s,
        "  {:>5} {:>3} {:<8} {:>4} {:<7} {:<8} {:>9} {:>9} {:>9} {:>10}  result",
        "task", "try", "worker", "slot", "local?", "source", "start_s", "end_s", "secs", "input_MB"
    );
    for a in &j.attempts {
        let _ = writeln!(
            s,
            "  {:>5} {:>3} {:<8} {:>4} {:<7} {:<8} {:>9} {:>9} {:>9} {:>10}  {}",
            a.task,
            a.attempt,
            a.worker,
            a.slot,
            match (a.kind, a.locality) {
                (TaskKind::Reduce, _) => "reduce",
                (_, Locality::DataLocal) => "local",
                (_, Locality::DataRemote) => "remote",
            },
            a.source,
            ms(Some(a.start_ms)),
            ms(Some(a.end_ms)),
            ms(Some(a.end_ms.saturating_sub(a.start_ms))),
            mb(a.input_bytes),
            if a.ok {
                "ok".to_string()
            } else {
                format!("FAILED: {}", a.error.as_deref().unwrap_or(""))
            }
        );
    }
    s
}

/// Runs a decision record fetched with its inputs through the policy again
/// (`lab::recheck`): the same decisions, row for row, or an error naming
/// what is missing or the first row that differs.
pub fn recheck(log: &common::wire::DecisionLog) -> anyhow::Result<lab::recheck::Rechecked> {
    use anyhow::bail;
    if !log.recording {
        bail!("the master kept no decision record (master.decisions = false)");
    }
    if log.dropped > 0 || log.inputs_dropped > 0 {
        bail!(
            "the record is not whole: {} rows and {} inputs were dropped to stay within master.decisions_max",
            log.dropped,
            log.inputs_dropped
        );
    }
    let Some(scheduler) = &log.scheduler else {
        bail!("the record does not say which policy made it (`scheduler` is missing)");
    };
    let Some(reduce_placement) = log.reduce_placement else {
        bail!("the record does not say which reduce placement ran (`reduce_placement` is missing)");
    };
    if log.inputs.is_empty() {
        bail!("the record has no inputs (fetch it with /v1/decisions?inputs=true)");
    }
    lab::recheck::recheck(lab::recheck::Record {
        scheduler,
        seed: log.seed,
        reduce_placement,
        inputs: &log.inputs,
        decisions: &log.decisions,
    })
    .map_err(|e| anyhow::anyhow!("{}", e.explain(|w| log.name(w))))
}

/// Writes a decision record with its inputs as gzipped JSON (aside, then
/// renamed: never a partial file under the real name).
pub fn write_record(path: &std::path::Path, log: &common::wire::DecisionLog) -> anyhow::Result<()> {
    crate::ops::gz::write_json(path, log)
}

/// Reads a decision record written by [`write_record`] (or plain JSON, as
/// `/v1/decisions?inputs=true` gives it); the error names the file.
pub fn read_record(path: &std::path::Path) -> anyhow::Result<common::wire::DecisionLog> {
    crate::ops::gz::read_json(path, "a decision record")
}

/// A decision record as one sentence a row, with a count of launches by
/// locality and rule first.
pub fn decisions(log: &common::wire::DecisionLog) -> String {
    use sched::decision::Kind;
    let mut by_rule: std::collections::BTreeMap<(&str, &str), u32> = Default::default();
    for d in log.decisions.iter().filter(|d| d.kind == Kind::Map) {
        let l = d.locality.map_or("", |l| l.name());
        *by_rule.entry((l, d.rule.name())).or_default() += 1;
    }
    let mut s = String::new();
    let idle = log
        .decisions
        .iter()
        .filter(|d| d.kind == Kind::Idle)
        .count();
    s += &format!(
        "{} rows: {} map launches, {} reduce launches, {idle} declined offers\n",
        log.decisions.len(),
        by_rule.values().sum::<u32>(),
        log.decisions
            .iter()
            .filter(|d| d.kind == Kind::Reduce)
            .count(),
    );
    for ((l, r), n) in &by_rule {
        s += &format!("  {n:>6} {l} by {r}\n");
    }
    for d in &log.decisions {
        s += &d.explain(|w| log.name(w));
        s.push('\n');
    }
    s
}
