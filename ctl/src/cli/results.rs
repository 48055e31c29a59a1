//! `master results index` and `serve`: the results browser's pages, with
//! the outcome of every claim filed under the folder it was judged on, and
//! an HTTP server over them.

use crate::claims::report::{check, Paths};
use crate::results::browse::{write_all, ResultsCmd, Verdicts};
use anyhow::Context;
use std::net::SocketAddr;
use std::path::Path;

/// Runs `master results ...`.
pub async fn run(cmd: &ResultsCmd) -> anyhow::Result<()> {
    match cmd {
        ResultsCmd::Index { results, claims } => index(results, claims),
        ResultsCmd::Serve {
            results,
            claims,
            listen,
        } => {
            index(results, claims)?;
            serve(results, *listen).await
        }
    }
}

/// Serves the results tree (its pages and every file of its folders) at
/// `listen` until the process is stopped.
async fn serve(results: &Path, listen: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| {
            format!("cannot listen on {listen} (`--listen` takes another address or port 0)")
        })?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "{addr} is not a loopback address: anyone who reaches it reads every results folder"
        );
    }
    let files = tower_http::services::ServeDir::new(results).append_index_html_on_directories(true);
    let app = axum::Router::new().fallback_service(files);
    println!("serving {} at http://{addr}/", results.display());
    axum::serve(listener, app).await?;
    Ok(())
}

/// Writes the pages (`master results index`).
fn index(results: &Path, claims: &Path) -> anyhow::Result<()> {
    let verdicts = if claims.is_dir() {
        verdicts(claims, results)?
    } else {
        eprintln!(
            "{}: no claims directory; the pages show no claims",
            claims.display()
        );
        Verdicts::new()
    };
    let written = write_all(results, &verdicts)?;
    println!(
        "wrote {} and {} folder pages",
        results.join("index.html").display(),
        written.len() - 1
    );
    Ok(())
}

/// Judges every claim as `master claims check` does (its quotes are not
/// read here) and files each outcome under the folder it was judged on.
fn verdicts(claims: &Path, results: &Path) -> anyhow::Result<Verdicts> {
    let paths = Paths {
        claims: claims.into(),
        results: results.into(),
        // No papers' texts: the quotes are `master claims check`'s to check.
        papers: results.join(".no-papers"),
        experiments: Default::default(),
        page: Default::default(),
    };
    let mut out = Verdicts::new();
    for (file, judged) in &check(&paths)?.papers {
        for (claim, r) in file.claims.iter().zip(judged) {
            if let Some(folder) = &r.folder {
                out.entry(folder.clone()).or_default().push((
                    file.paper.clone(),
                    claim.id.clone(),
                    r.outcome.word().to_owned(),
                ));
            }
        }
    }
    Ok(out)
}
