//! Starts and stops the master's public instances. The master's state
//! decides (`Provision` orders); a [`Launcher`] carries them out on a
//! blocking thread. Which launcher depends on the deployment:
//! - local processes ([`ProcessLauncher`], here): `worker --instance-type T
//!   --port-offset K`, logging to `<run>/logs/<name>.log`, dying with the
//!   master (SIGTERM on the parent's death), its link emulated;
//! - network-namespace hosts and containers: `ctl::ops::instances`, which
//!   the CLI hands in through [`Provisioning::custom`] (this layer does not
//!   know how a deployment is built).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// What the master's state orders and the HTTP layer carries out here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provision {
    /// Start worker `name` as an instance of `instance_type` on `[public]
    /// listen`'s port + `port_offset`.
    Start {
        name: String,
        instance_type: String,
        port_offset: u32,
    },
    Stop {
        name: String,
    },
}

/// What starts and stops instances in one deployment.
pub trait Launcher: Send {
    /// Starts instance `name` of type `ty` on port offset `port_offset`;
    /// returns a line saying where (logged).
    fn start(&mut self, name: &str, ty: &str, port_offset: u32) -> anyhow::Result<String>;
    /// Starts several at once (a decision round may ask for many); one
    /// result per order, in order. By default one after another.
    fn start_all(&mut self, orders: &[(String, String, u32)]) -> Vec<anyhow::Result<String>> {
        orders
            .iter()
            .map(|(name, ty, k)| self.start(name, ty, *k))
            .collect()
    }
    /// Stops instance `name` (nothing if unknown) and frees what it held.
    fn stop(&mut self, name: &str);
    /// The instances it runs, by name.
    fn running(&self) -> Vec<String>;
    /// Stops every instance (the master is stopping).
    fn stop_all(&mut self) {
        for name in self.running() {
            self.stop(&name);
        }
    }
    /// Forgets instances that ended on their own.
    fn reap(&mut self) {}
}

type Factory = dyn Fn() -> anyhow::Result<Box<dyn Launcher>> + Send + Sync;

/// How the master makes its launcher when it starts.
#[derive(Clone)]
pub struct Provisioning {
    what: String,
    make: Arc<Factory>,
}

impl std::fmt::Debug for Provisioning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Provisioning({})", self.what)
    }
}

impl Provisioning {
    /// Instances as local processes.
    pub fn processes(settings: ProvisionSettings) -> Self {
        Provisioning {
            what: "processes".into(),
            make: Arc::new(move || Ok(Box::new(ProcessLauncher::new(settings.clone())) as _)),
        }
    }

    /// Instances started by `make`'s launcher, described as `what`.
    pub fn custom(
        what: impl Into<String>,
        make: impl Fn() -> anyhow::Result<Box<dyn Launcher>> + Send + Sync + 'static,
    ) -> Self {
        Provisioning {
            what: what.into(),
            make: Arc::new(make),
        }
    }

    pub fn describe(&self) -> &str {
        &self.what
    }

    pub fn launcher(&self) -> anyhow::Result<Provisioner> {
        Ok(Provisioner {
            launcher: (self.make)()?,
        })
    }
}

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

    /// The instance's `worker` command, its output to its log file, set to
    /// receive SIGTERM when the master dies.
    pub fn worker_command(
        &self,
        name: &str,
        ty: &str,
        port_offset: u32,
    ) -> anyhow::Result<Command> {
        std::fs::create_dir_all(&self.log_dir)?;
        let log_path = self.log_dir.join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", log_path.display()))?;
        let mut cmd = Command::new(self.bin_dir.join("worker"));
        cmd.arg("--config")
            .arg(&self.config)
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
        Ok(cmd)
    }
}

/// Carries out the master's orders with one launcher.
pub struct Provisioner {
    launcher: Box<dyn Launcher>,
}

impl Provisioner {
    /// Carries out the orders; a failure is logged (the master gives up on
    /// an instance that does not register).
    pub fn apply(&mut self, orders: Vec<Provision>) {
        let mut starts = Vec::new();
        for o in orders {
            match o {
                Provision::Start {
                    name,
                    instance_type,
                    port_offset,
                } => starts.push((name, instance_type, port_offset)),
                Provision::Stop { name } => {
                    self.start_all(std::mem::take(&mut starts));
                    self.launcher.stop(&name)
                }
            }
        }
        self.start_all(starts);
        self.launcher.reap();
    }

    fn start_all(&mut self, starts: Vec<(String, String, u32)>) {
        if starts.is_empty() {
            return;
        }
        let results = self.launcher.start_all(&starts);
        for ((name, _, _), r) in starts.iter().zip(results) {
            match r {
                Ok(at) => tracing::info!(instance = %name, %at, "instance started"),
                Err(e) => {
                    tracing::error!(instance = %name, error = %format!("{e:#}"), "cannot start instance")
                }
            }
        }
    }

    pub fn stop_all(&mut self) {
        self.launcher.stop_all();
    }
}

impl Drop for Provisioner {
    fn drop(&mut self) {
        self.launcher.stop_all();
    }
}

/// Instances as local processes, their links emulated by the worker.
pub struct ProcessLauncher {
    settings: ProvisionSettings,
    children: BTreeMap<String, Child>,
}

impl ProcessLauncher {
    pub fn new(settings: ProvisionSettings) -> Self {
        ProcessLauncher {
            settings,
            children: BTreeMap::new(),
        }
    }
}

impl Launcher for ProcessLauncher {
    fn start(&mut self, name: &str, ty: &str, port_offset: u32) -> anyhow::Result<String> {
        let child = self
            .settings
            .worker_command(name, ty, port_offset)?
            .spawn()?;
        let at = format!("process {}", child.id());
        self.children.insert(name.to_owned(), child);
        Ok(at)
    }

    fn stop(&mut self, name: &str) {
        if let Some(mut c) = self.children.remove(name) {
            stop_child(&mut c);
        }
    }

    fn running(&self) -> Vec<String> {
        self.children.keys().cloned().collect()
    }

    fn reap(&mut self) {
        self.children
            .retain(|_, c| !matches!(c.try_wait(), Ok(Some(_))));
    }
}

/// SIGTERM, up to 2 s to exit, then SIGKILL; reaped.
pub fn stop_child(c: &mut Child) {
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
