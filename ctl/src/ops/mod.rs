//! Operating a cluster from outside the master: [`client`] is the typed API
//! client (used by the CLI, the loader, the experiment runner and the
//! tests); [`deploy`] is where a cluster runs, one `Deployment` trait over
//! the modes below; [`loader`] generates or splits files into replicated blocks;
//! [`local`] starts and stops a cluster of local processes; [`netns`] does
//! the same in Linux network namespaces with shaped links; [`docker`] in
//! containers ([`docker_api`] talks to the engine's socket); [`instances`]
//! starts public instances as namespace hosts or containers; [`remote`]
//! starts workers on other machines over ssh; [`report`] formats job
//! reports for people; [`files`] reads files back (`master
//! get`) and deletes them; [`verify`] holds the coreutils references
//! outputs are checked against; [`gz`] writes and reads gzipped JSON files
//! (a decision record with its inputs, a calibration's models).

pub mod client;
pub mod deploy;
pub mod docker;
pub mod docker_api;
pub mod files;
pub mod gz;
pub mod instances;
pub mod loader;
pub mod local;
pub mod netns;
pub mod remote;
pub mod report;
pub mod verify;

/// Runs `cmd` (stdin closed) and returns its stdout; a failure to start or a
/// non-zero exit is an error that names `what` and carries its stderr.
pub(crate) fn stdout_of(mut cmd: std::process::Command, what: &str) -> anyhow::Result<String> {
    use anyhow::Context;
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `program args...` through [`stdout_of`], in `cwd` if given.
pub(crate) fn run_command(
    program: &str,
    args: &[&str],
    cwd: Option<&std::path::Path>,
) -> anyhow::Result<String> {
    let mut c = std::process::Command::new(program);
    c.args(args);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    stdout_of(c, &format!("`{program} {}`", args.join(" ")))
}

/// Public instances alive at once: `public.max_instances`, or 0 without
/// `[[public_type]]`.
pub fn max_instances(cfg: &common::config::ClusterConfig) -> u32 {
    if cfg.public_type.is_empty() {
        0
    } else {
        cfg.public_section().max_instances
    }
}

/// The instances a deployment on a /24 (`mode`, `subnet` for the message)
/// must give addresses to after its `workers` (which start at .10):
/// `public.max_instances` with `[[public_type]]`, else 0; refused when they
/// do not fit.
pub fn reserve_instances(
    cfg: &common::config::ClusterConfig,
    mode: &str,
    subnet: &str,
) -> anyhow::Result<u32> {
    let n = cfg.worker.len();
    let instances = max_instances(cfg);
    if 10 + n + instances as usize > 254 {
        anyhow::bail!(
            "the {mode} mode gives every worker and public instance an address in {subnet}.10-254: \
             {n} workers and public.max_instances = {instances} need {}",
            n + instances as usize
        );
    }
    Ok(instances)
}
