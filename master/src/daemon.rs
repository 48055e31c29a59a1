//! Running the daemon until it is told to stop: what `masterd` and the
//! command line's `master serve` share.

use crate::state::MasterSettings;
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
