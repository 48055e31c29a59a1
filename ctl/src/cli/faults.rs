//! The fault runs' commands: `master chaos`, `master campaign` and
//! `master soak`, each on a scratch cluster of its own (no cluster.toml).

use super::args::Cmd;
use super::exit::{bad_input, Failed};
use crate::ops::local;
use std::path::Path;

/// Runs `master chaos`, `master campaign` or `master soak`.
pub async fn run(cmd: &Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Chaos {
            seed,
            jobs,
            results,
            work,
        } => chaos(*seed, *jobs, results, work).await,
        Cmd::Campaign {
            seed,
            minutes,
            mean_gap_s,
            arrival_s,
            sample_s,
            quiet_minutes,
            tls,
            processes,
            thread_caches,
            input_blocks,
            block_bytes,
            results,
            work,
        } => {
            let opts = crate::campaign::CampaignOptions {
                results: results.clone(),
                work: work.clone(),
                bin: local::bin_dir()?,
                seed: *seed,
                minutes: *minutes,
                mean_gap_s: *mean_gap_s,
                arrival_s: *arrival_s,
                sample_s: *sample_s,
                quiet_minutes: *quiet_minutes,
                tls: *tls,
                input_blocks: *input_blocks,
                block_bytes: *block_bytes,
                thread_caches: *thread_caches,
                deploy: if *processes {
                    crate::campaign::Deploy::Processes
                } else {
                    crate::campaign::Deploy::Auto
                },
            };
            campaign(&opts).await
        }
        Cmd::Soak {
            minutes,
            seed,
            sample_s,
            arrival_s,
            results,
            work,
        } => {
            let opts = crate::soak::SoakOptions {
                results: results.clone(),
                work: work.clone(),
                bin: local::bin_dir()?,
                seed: *seed,
                minutes: *minutes,
                sample_s: *sample_s,
                arrival_s: *arrival_s,
            };
            soak(&opts).await
        }
        _ => unreachable!("not a fault run"),
    }
}

/// `master chaos`.
pub async fn chaos(seed: u64, jobs: u32, results: &Path, work: &Path) -> anyhow::Result<()> {
    if jobs < 3 {
        return Err(bad_input(format!(
            "--jobs must be at least 3 (one of each workload; got {jobs})"
        )));
    }
    let (dir, figures) = crate::chaos::run(&crate::chaos::ChaosOptions {
        results: results.into(),
        work: work.into(),
        bin: local::bin_dir()?,
        seed,
        jobs,
    })
    .await?;
    println!("{}", serde_json::to_string_pretty(&figures)?);
    println!("results in {}", dir.display());
    let problems = figures.problems();
    if !problems.is_empty() {
        return Err(Failed(format!(
            "the cluster did not survive: {}",
            problems.join("; ")
        ))
        .into());
    }
    Ok(())
}

/// `master campaign`.
pub async fn campaign(opts: &crate::campaign::CampaignOptions) -> anyhow::Result<()> {
    for (name, v) in [
        ("--minutes", opts.minutes),
        ("--mean-gap-s", opts.mean_gap_s),
        ("--arrival-s", opts.arrival_s),
        ("--sample-s", opts.sample_s),
        ("--input-blocks", opts.input_blocks as f64),
        ("--block-bytes", opts.block_bytes as f64),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad_input(format!(
                "{name} must be a positive number (got {v})"
            )));
        }
    }
    if !(opts.quiet_minutes.is_finite() && opts.quiet_minutes >= 0.0) {
        return Err(bad_input(format!(
            "--quiet-minutes must be a number of 0 or more (got {})",
            opts.quiet_minutes
        )));
    }
    // Ctrl-C ends the campaign with its cluster, namespaces and disks
    // removed (the run's guard drops).
    let (dir, figures) = tokio::select! {
        r = crate::campaign::run(opts) => r?,
        _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted; the campaign's cluster was stopped"),
    };
    print!("{}", std::fs::read_to_string(dir.join("summary.md"))?);
    println!("results in {}", dir.display());
    let problems = figures.problems();
    if !problems.is_empty() {
        return Err(Failed(format!("the campaign found: {}", problems.join("; "))).into());
    }
    Ok(())
}

/// `master soak`.
async fn soak(opts: &crate::soak::SoakOptions) -> anyhow::Result<()> {
    if !(opts.minutes > 0.0 && opts.sample_s > 0.0 && opts.arrival_s > 0.0) {
        return Err(bad_input(
            "--minutes, --sample-s and --arrival-s must be > 0",
        ));
    }
    let (dir, figures) = crate::soak::run(opts).await?;
    println!("results in {}", dir.display());
    let problems = figures.problems();
    if !problems.is_empty() {
        return Err(Failed(format!("the soak failed: {}", problems.join("; "))).into());
    }
    Ok(())
}
