//! `master`: the master of the testbed and its command line. Everything is
//! in the library ([`master::cli`]); this installs logging and runs it.

use clap::Parser;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(common::stderr_wants_colour())
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = master::cli::run(master::cli::Cli::parse()).await {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
