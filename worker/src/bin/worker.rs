//! `worker --config cluster.toml --name w1`: runs one worker of the cluster.

use clap::Parser;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "A worker of the mini-MapReduce testbed")]
struct Args {
    /// Cluster description.
    #[arg(long, default_value = "cluster.toml")]
    config: PathBuf,
    /// This worker's name in cluster.toml's [[worker]] list (or, with
    /// --instance-type, the name the master gave the instance).
    #[arg(long)]
    name: String,
    /// Run as a public instance of this [[public_type]] (the master starts
    /// these): boots for the type's `start_s`, then registers.
    #[arg(long)]
    instance_type: Option<String>,
    /// The instance listens on `[public] listen`'s port plus this.
    #[arg(long, default_value_t = 0, requires = "instance_type")]
    port_offset: u32,
    /// Listen here instead of the address in cluster.toml.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Base URL the other nodes reach this worker at (default: http://<listen>).
    #[arg(long)]
    advertise: Option<String>,
    /// Master URL instead of http://<master.listen> from cluster.toml.
    #[arg(long)]
    master: Option<String>,
    /// Turn the emulated NIC off (the netns mode shapes the real link instead).
    #[arg(long)]
    no_nic_emulation: bool,
}

fn main() -> anyhow::Result<()> {
    // Before the runtime's threads exist.
    worker::node::tune_allocator();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // A core pool of blocking threads, started now and kept, instead of
        // threads made and ended as tasks come and go.
        .thread_keep_alive(worker::node::BLOCKING_KEEP_ALIVE)
        .build()?;
    worker::node::prestart_blocking_pool(&rt);
    rt.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(common::stderr_wants_colour())
        .init();
    let args = Args::parse();
    let cfg = common::config::ClusterConfig::load(&args.config)?;
    let mut opts = match &args.instance_type {
        Some(ty) => {
            let opts = worker::WorkerOptions::for_instance(&cfg, &args.name, ty, args.port_offset)?;
            // An instance starts empty, after its boot time.
            match std::fs::remove_dir_all(&opts.data_dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => anyhow::bail!("cannot clear {}: {e}", opts.data_dir.display()),
            }
            let boot = cfg.public_type(ty).map_or(0.0, |t| t.start_s);
            tracing::info!(instance = %args.name, r#type = %ty, boot_s = boot, "instance booting");
            tokio::time::sleep(std::time::Duration::from_secs_f64(boot)).await;
            opts
        }
        None => worker::WorkerOptions::from_config(&cfg, &args.name)?,
    };
    if let Some(l) = args.listen {
        opts.listen = l;
    }
    if let Some(a) = args.advertise {
        opts.advertise = Some(a);
    }
    if let Some(m) = args.master {
        opts.master_url = m;
    }
    if args.no_nic_emulation {
        opts.nic_bytes_per_sec = None;
    }
    let handle = worker::start(opts).await?;
    tokio::signal::ctrl_c().await?;
    tracing::info!(worker = %handle.name, "shutting down");
    handle.abort();
    Ok(())
}
