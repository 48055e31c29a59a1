//! `master`: the testbed's command line (`master serve` runs the daemon of the
//! `master` crate). Everything is in the `ctl` library ([`ctl::cli`]); this
//! installs logging and runs it.

use clap::Parser;

#[tokio::main]
async fn main() {
    master::daemon::init_logging();
    if let Err(e) = ctl::cli::run(ctl::cli::Cli::parse()).await {
        eprintln!("error: {e:#}");
        std::process::exit(ctl::cli::exit::code(&e));
    }
}
