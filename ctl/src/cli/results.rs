//! `master results index`: the results browser's pages, with the outcome of
//! every claim filed under the folder it was judged on.

use crate::claims::report::{check, Paths};
use crate::results::browse::{write_all, ResultsCmd, Verdicts};
use std::path::Path;

/// Runs `master results ...`.
pub fn run(cmd: &ResultsCmd) -> anyhow::Result<()> {
    let ResultsCmd::Index { results, claims } = cmd;
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
