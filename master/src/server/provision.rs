//! Starts and stops the master's public instances as local worker
//! processes (`worker --instance-type T --port-offset K`), each logging to
//! `<run>/logs/<name>.log`. A child dies with the master (SIGTERM on the
//! parent's death) and is stopped when the provisioner is dropped.
//!
//! Instances as network-namespace hosts or containers are not done: a
//! cluster with `[[public_type]]` runs them as processes on this machine.

use crate::server::state::public::Provision;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// Where the instances' binary, configuration and logs are.
#[derive(Clone, Debug)]
pub struct ProvisionSettings {
    /// cluster.toml, as the instances read it.
    pub config: PathBuf,
    /// The directory of the `worker` binary.
    pub bin_dir: PathBuf,
    pub log_dir: PathBuf,
}

impl ProvisionSettings {
    /// The `worker` binary next to this one, cluster.toml as loaded, logs
    /// in `<run>/logs`; None when this binary's directory is unknown.
    pub fn from_config(cfg: &common::config::ClusterConfig) -> Option<Self> {
        let exe = std::env::current_exe().ok()?;
        Some(ProvisionSettings {
            config: std::path::absolute(&cfg.path).unwrap_or_else(|_| cfg.path.clone()),
            bin_dir: exe.parent()?.to_owned(),
            log_dir: cfg.run_dir().join("logs"),
        })
    }
}

pub struct Provisioner {
    settings: ProvisionSettings,
    children: BTreeMap<String, Child>,
}

impl Provisioner {
    pub fn new(settings: ProvisionSettings) -> Self {
        Provisioner {
            settings,
            children: BTreeMap::new(),
        }
    }

    /// Carries out the master's orders; a failure is logged (the master
    /// gives up on an instance that does not register).
    pub fn apply(&mut self, orders: Vec<Provision>) {
        for o in orders {
            match o {
                Provision::Start {
                    name,
                    instance_type,
                    port_offset,
                } => match self.start(&name, &instance_type, port_offset) {
                    Ok(child) => {
                        tracing::info!(instance = %name, pid = child.id(), "instance process started");
                        self.children.insert(name, child);
                    }
                    Err(e) => {
                        tracing::error!(instance = %name, error = %e, "cannot start instance")
                    }
                },
                Provision::Stop { name } => {
                    if let Some(mut c) = self.children.remove(&name) {
                        stop(&mut c);
                    }
                }
            }
        }
        // Reap the ones that ended on their own.
        self.children
            .retain(|_, c| !matches!(c.try_wait(), Ok(Some(_))));
    }

    fn start(&self, name: &str, ty: &str, port_offset: u32) -> anyhow::Result<Child> {
        std::fs::create_dir_all(&self.settings.log_dir)?;
        let log_path = self.settings.log_dir.join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", log_path.display()))?;
        let mut cmd = Command::new(self.settings.bin_dir.join("worker"));
        cmd.arg("--config")
            .arg(&self.settings.config)
            .args(["--name", name, "--instance-type", ty])
            .arg("--port-offset")
            .arg(port_offset.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe; nothing else
        // runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                    .map_err(std::io::Error::from)
            });
        }
        Ok(cmd.spawn()?)
    }

    /// Stops every instance process.
    pub fn stop_all(&mut self) {
        for (_, mut c) in std::mem::take(&mut self.children) {
            stop(&mut c);
        }
    }
}

impl Drop for Provisioner {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// SIGTERM, up to 2 s to exit, then SIGKILL; reaped.
fn stop(c: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(c.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        if matches!(c.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = c.kill();
    let _ = c.wait();
}
