//! This repository's documents as one text (real prose: lines from none
//! to kilobytes long, tables, code), for the benches of sort-lines.

/// README, ARCHITECTURE, the guide, the API and every page of
/// docs/experiments (in name order), one after another.
pub fn repo_docs() -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut docs = Vec::new();
    for f in [
        "README.md",
        "ARCHITECTURE.md",
        "docs/guide.md",
        "docs/api.md",
    ] {
        docs.extend(std::fs::read(root.join(f)).unwrap());
    }
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs/experiments"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    for p in pages {
        docs.extend(std::fs::read(p).unwrap());
    }
    docs
}
