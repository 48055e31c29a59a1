//! Where a cluster runs, behind one interface: [`Deployment`] (start, the
//! clients' config, stop, down, logs), implemented for local processes
//! ([`Processes`]; workers whose `cluster.toml` entry names an ssh `host`
//! start on that host), network namespaces with tc-shaped links
//! ([`Netns`]) and containers ([`Docker`]). The command line (`master up`,
//! `master experiment --deployment`) builds one with [`Kind::deployment`]
//! and the experiment runner holds it; neither matches on the kind.

use super::{docker, local, netns};
use anyhow::Context;
use common::config::ClusterConfig;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::SystemTime;

/// What a start keeps of the previous cluster of the same config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The block stores and the master's job history (`master up`).
    Everything,
    /// The block stores only: the master starts with no job history (the
    /// experiment runner, between the schedulers of one repetition).
    Stores,
    /// Nothing (`master up --fresh`, a repetition's first run).
    Nothing,
}

/// A start in progress: resolves once every worker has registered.
pub type Starting<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;

/// Where a cluster's master and workers run.
pub trait Deployment {
    /// Its name, as `--deployment` and a results folder's meta.json say it.
    fn name(&self) -> &'static str;

    /// Whether it shapes the links between racks (`rack_link_mbps`).
    fn shapes_racks(&self) -> bool {
        false
    }

    /// Stops the previous cluster of `cfg` (keeping what `keep` says), then
    /// starts the master and every worker with the binaries in `bin`.
    fn start<'a>(&'a self, cfg: &'a ClusterConfig, keep: Keep, bin: &'a Path) -> Starting<'a>;

    /// The config the clients use once it is up: `cfg` itself, or the one
    /// written with the namespaces' or containers' addresses.
    fn config(&self, cfg: &ClusterConfig) -> anyhow::Result<ClusterConfig>;

    /// Stops the nodes of the cluster whose run state is in `run` (a
    /// config's [`local::run_dir`]); the block stores stay for the next
    /// start.
    fn stop(&self, run: &Path) -> anyhow::Result<()>;

    /// Removes everything the cluster of `run` left: its nodes, networks or
    /// namespaces, images, and unless `keep_data` its block stores.
    fn down(&self, run: &Path, keep_data: bool) -> anyhow::Result<()>;

    /// Copies the logs the nodes of `run` wrote since `since` into `dest`
    /// (created when there is one); returns how many files.
    fn logs(&self, run: &Path, dest: &Path, since: SystemTime) -> anyhow::Result<usize>;

    /// One line for people once it is up.
    fn up_line(&self, cfg: &ClusterConfig) -> anyhow::Result<String> {
        let c = self.config(cfg)?;
        Ok(format!(
            "cluster up ({}): master at {}, {} workers; logs in {}",
            self.name(),
            c.master_url(),
            c.worker.len(),
            local::run_dir(cfg).join("logs").display()
        ))
    }
}

/// The deployments `--deployment` names, with their settings.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Processes,
    /// Namespaces under `prefix` on 10.77.`third`.0/24, with a link from
    /// this namespace when `host_link` (the experiment runner reaches the
    /// nodes through it).
    Netns {
        prefix: String,
        third: u8,
        host_link: bool,
    },
    /// Containers of compose project `project` on 10.78.`third`.0/24, from
    /// the static binaries in `bin`.
    Docker {
        project: String,
        third: u8,
        bin: PathBuf,
    },
}

impl Kind {
    /// The kind `master experiment --deployment NAME` names: `processes`,
    /// `netns` (namespaces `mrx-*` on 10.77.1.0/24 with a host link) or
    /// `docker` (a project of this process's own on 10.78.(N+200).0/24, from
    /// the static binaries in `docker_bin`).
    pub fn for_experiments(name: &str, docker_bin: &Path) -> anyhow::Result<Kind> {
        Ok(match name {
            "processes" => Kind::Processes,
            "netns" => Kind::Netns {
                prefix: "mrx-".into(),
                third: 1,
                host_link: true,
            },
            "docker" => Kind::Docker {
                project: format!("mrtbexp{}", std::process::id()),
                third: docker::DEFAULT_SUBNET_THIRD + 200,
                bin: docker_bin.to_owned(),
            },
            other => anyhow::bail!(
                "--deployment {other:?}: not a deployment (processes, netns or docker)"
            ),
        })
    }

    /// The deployment of this kind.
    pub fn deployment(self) -> Box<dyn Deployment> {
        match self {
            Kind::Processes => Box::new(Processes),
            Kind::Netns {
                prefix,
                third,
                host_link,
            } => Box::new(Netns {
                prefix,
                third,
                host_link,
            }),
            Kind::Docker {
                project,
                third,
                bin,
            } => Box::new(Docker {
                project,
                third,
                bin,
            }),
        }
    }
}

/// Removes the master's journal that `cfg` names, if any: the next master
/// starts with no job history.
fn remove_journal(cfg: &ClusterConfig) -> anyhow::Result<()> {
    let journal = cfg.resolve(&cfg.master.journal);
    if journal.exists() {
        std::fs::remove_file(&journal)
            .with_context(|| format!("removing {}", journal.display()))?;
    }
    Ok(())
}

/// Copies the `*.log` files of `run`'s nodes written since `since`.
fn copy_logs(run: &Path, dest: &Path, since: SystemTime) -> anyhow::Result<usize> {
    let Ok(entries) = std::fs::read_dir(run.join("logs")) else {
        return Ok(0);
    };
    let mut n = 0;
    for e in entries {
        let e = e?;
        let path = e.path();
        let fresh = e.metadata()?.modified()? >= since;
        if fresh && path.extension().is_some_and(|x| x == "log") {
            std::fs::create_dir_all(dest)
                .with_context(|| format!("creating {}", dest.display()))?;
            let to = dest.join(path.file_name().expect("a file name"));
            std::fs::copy(&path, &to)
                .with_context(|| format!("copying {} to {}", path.display(), to.display()))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Local processes on loopback, each worker's link emulated; workers with
/// an ssh `host` start there.
#[derive(Clone, Debug)]
pub struct Processes;

impl Deployment for Processes {
    fn name(&self) -> &'static str {
        "processes"
    }

    fn start<'a>(&'a self, cfg: &'a ClusterConfig, keep: Keep, bin: &'a Path) -> Starting<'a> {
        Box::pin(async move {
            let stopped = local::stop_previous(cfg, keep == Keep::Nothing)?;
            local::print_stopped(&stopped);
            if keep == Keep::Stores {
                remove_journal(cfg)?;
            }
            local::start_with(cfg, bin).await
        })
    }

    fn config(&self, cfg: &ClusterConfig) -> anyhow::Result<ClusterConfig> {
        Ok(cfg.clone())
    }

    fn stop(&self, run: &Path) -> anyhow::Result<()> {
        local::down(run).map(|_| ())
    }

    fn down(&self, run: &Path, _keep_data: bool) -> anyhow::Result<()> {
        self.stop(run)
    }

    fn logs(&self, run: &Path, dest: &Path, since: SystemTime) -> anyhow::Result<usize> {
        copy_logs(run, dest, since)
    }
}

/// Every node in its own network namespace, the links shaped by tc (root).
#[derive(Clone, Debug)]
pub struct Netns {
    pub prefix: String,
    pub third: u8,
    pub host_link: bool,
}

impl Deployment for Netns {
    fn name(&self) -> &'static str {
        "netns"
    }

    fn shapes_racks(&self) -> bool {
        true
    }

    fn start<'a>(&'a self, cfg: &'a ClusterConfig, keep: Keep, bin: &'a Path) -> Starting<'a> {
        Box::pin(async move {
            if keep == Keep::Stores {
                // The journal the derived config names.
                if let Ok(d) = ClusterConfig::load(local::netns_config_path(cfg)) {
                    remove_journal(&d)?;
                }
            }
            let mut layout = netns::Layout::plan_in(&self.prefix, cfg, self.third)?;
            if self.host_link {
                layout = layout.with_host_link();
            }
            local::up_netns_layout(cfg, keep == Keep::Nothing, &layout, bin).await
        })
    }

    fn config(&self, cfg: &ClusterConfig) -> anyhow::Result<ClusterConfig> {
        Ok(ClusterConfig::load(local::netns_config_path(cfg))?)
    }

    fn stop(&self, run: &Path) -> anyhow::Result<()> {
        local::down(run).map(|_| ())
    }

    fn down(&self, run: &Path, _keep_data: bool) -> anyhow::Result<()> {
        self.stop(run)
    }

    fn logs(&self, run: &Path, dest: &Path, since: SystemTime) -> anyhow::Result<usize> {
        copy_logs(run, dest, since)
    }

    fn up_line(&self, cfg: &ClusterConfig) -> anyhow::Result<String> {
        let layout = netns::Layout::plan_in(&self.prefix, cfg, self.third)?;
        Ok(format!(
            "cluster up in network namespaces {}*: master at {} in {}, {} workers shaped by tc; \
             config for the CLI: {}; logs in {}",
            self.prefix,
            self.config(cfg)?.master_url(),
            layout.master.ns,
            layout.workers.len(),
            local::netns_config_path(cfg).display(),
            local::run_dir(cfg).join("logs").display()
        ))
    }
}

/// Every node in its own container on a private network, from static
/// binaries; nothing is pulled.
#[derive(Clone, Debug)]
pub struct Docker {
    pub project: String,
    pub third: u8,
    pub bin: PathBuf,
}

impl Deployment for Docker {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn start<'a>(&'a self, cfg: &'a ClusterConfig, keep: Keep, _bin: &'a Path) -> Starting<'a> {
        Box::pin(async move {
            let run = local::run_dir(cfg);
            docker::down_with(&run, keep == Keep::Nothing)?;
            if keep == Keep::Stores {
                // No job history: the master's journal volume goes.
                let _ =
                    docker::docker(&["volume", "rm", &format!("{}_master-state", self.project)]);
            }
            docker::up(cfg, false, &self.project, self.third, &self.bin).await
        })
    }

    fn config(&self, cfg: &ClusterConfig) -> anyhow::Result<ClusterConfig> {
        Ok(ClusterConfig::load(docker::config_path(cfg))?)
    }

    fn stop(&self, run: &Path) -> anyhow::Result<()> {
        docker::down_with(run, false).map(|_| ())
    }

    fn down(&self, run: &Path, keep_data: bool) -> anyhow::Result<()> {
        // Both, whatever the first says: images left behind outlive the run.
        let downed = docker::down_with(run, !keep_data);
        let removed = docker::remove_images(&self.project);
        downed.map(|_| ()).and(removed)
    }

    fn logs(&self, run: &Path, dest: &Path, _since: SystemTime) -> anyhow::Result<usize> {
        let Some(text) = docker::logs(run)? else {
            return Ok(0);
        };
        std::fs::create_dir_all(dest).with_context(|| format!("creating {}", dest.display()))?;
        let to = dest.join("containers.log");
        std::fs::write(&to, text).with_context(|| format!("writing {}", to.display()))?;
        Ok(1)
    }

    fn up_line(&self, cfg: &ClusterConfig) -> anyhow::Result<String> {
        let d = self.config(cfg)?;
        Ok(format!(
            "cluster up in containers (project {}): master at {}, {} workers; CLI: master --config {} ...",
            self.project,
            d.master_url(),
            d.worker.len(),
            docker::config_path(cfg).display()
        ))
    }
}
