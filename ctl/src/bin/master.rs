//! `master`: the testbed's command line (`master serve` runs the daemon of the
//! `master` crate). Everything is in the `ctl` library ([`ctl::cli`]); this
//! installs logging and runs it.

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
    if let Err(e) = ctl::cli::run(ctl::cli::Cli::parse()).await {
        eprintln!("error: {e:#}");
        std::process::exit(ctl::cli::exit::code(&e));
    }
}
