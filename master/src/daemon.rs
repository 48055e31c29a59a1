//! Running the daemon until it is told to stop: what `masterd` and the
//! command line's `master serve` share.

use crate::state::MasterSettings;

/// Logs to stderr at `RUST_LOG`'s levels (default `info`), coloured on a
/// terminal: what `masterd` and the `master` command line both set up.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(common::stderr_wants_colour())
        .with_writer(std::io::stderr)
        .init();
}
use std::net::SocketAddr;

/// Serves the master at `listen` until Ctrl-C (SIGINT) or SIGTERM, then
/// stops the server and its background tasks.
pub async fn serve_until_stopped(
    listen: SocketAddr,
    token: &str,
    settings: MasterSettings,
) -> anyhow::Result<()> {
    let h = crate::http::start(listen, token, settings).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    tracing::info!("master stopping");
    h.abort();
    Ok(())
}
