//! `masterd --config cluster.toml`: the master daemon alone (the `master`
//! crate: state, scheduler, HTTP API, dashboard), until Ctrl-C or SIGTERM.
//! `master serve` of the command line runs the same daemon, and also takes
//! `--instances` (public instances started in namespaces or containers,
//! which the command line's deployments set up); here they start as local
//! processes, as `[public]` says.

use sched::policy::SchedulerConfig;
use std::net::SocketAddr;
use std::path::PathBuf;

const HELP: &str = "The master daemon of the mini-MapReduce testbed

Usage: masterd [OPTIONS]

Options:
  --config <PATH>       Cluster description [default: cluster.toml]
  --listen <ADDR>       Listen here instead of master.listen
  --scheduler <SPEC>    Scheduler instead of [scheduler]: a name (`hadoop`) or
                        `policy = \"...\", key = value`
  --journal-recover     A job journal damaged before its last line: keep the
                        entries before the damage (the whole file kept beside
                        it) instead of refusing to start
  -h, --help            Print help

Examples:
  masterd --config cluster.toml
  masterd --scheduler delay3 --listen 127.0.0.1:7100
  masterd --journal-recover

Exit status: 0 stopped by Ctrl-C or SIGTERM, 1 could not serve (a port in
use, an unreadable journal), 2 bad input (an option, cluster.toml).";

struct Args {
    config: PathBuf,
    listen: Option<SocketAddr>,
    scheduler: Option<SchedulerConfig>,
    journal_recover: bool,
}

/// The options, or what is wrong with them (the daemon carries no
/// command-line parser crate: the layering test keeps it lean).
fn parse(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args {
        config: PathBuf::from("cluster.toml"),
        listen: None,
        scheduler: None,
        journal_recover: false,
    };
    while let Some(arg) = argv.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| argv.next())
                .ok_or_else(|| format!("{name} needs a value ({what})"))
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(None),
            "--config" => a.config = PathBuf::from(value("a cluster.toml")?),
            "--listen" => {
                let v = value("an address such as 127.0.0.1:7070")?;
                a.listen = Some(v.parse().map_err(|e| format!("--listen {v:?}: {e}"))?);
            }
            "--scheduler" => {
                let v = value("a scheduler such as hadoop or delay3")?;
                a.scheduler = Some(v.parse().map_err(|e| format!("--scheduler {v:?}: {e}"))?);
            }
            "--journal-recover" if inline.is_none() => a.journal_recover = true,
            _ => {
                return Err(format!(
                    "unknown option {arg:?} (masterd --help lists them)"
                ))
            }
        }
    }
    Ok(Some(a))
}

#[tokio::main]
async fn main() {
    master::daemon::init_logging();
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{HELP}");
            return;
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        eprintln!("error: {e:#}");
        // As the command line's exit codes: 2 for bad input (the config),
        // 1 for anything else (a port in use, an unreadable journal).
        let bad_input = e.downcast_ref::<common::config::ConfigError>().is_some();
        std::process::exit(if bad_input { 2 } else { 1 });
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let cfg = common::config::ClusterConfig::load(&args.config)?;
    // External policies (`policy = "external"`) are reached over sockets.
    common::policy_socket::install();
    let mut settings = master::state::MasterSettings::from_config(&cfg);
    settings.journal_recover = args.journal_recover;
    settings.tls = cfg.node_tls(common::tls::MASTER)?;
    if let Some(t) = &settings.tls {
        common::policy_socket::trust(&t.client);
    }
    if let Some(s) = args.scheduler {
        settings.scheduler = s;
    }
    let listen = args.listen.unwrap_or(cfg.master.listen);
    master::daemon::serve_until_stopped(listen, &cfg.cluster.token, settings).await
}
