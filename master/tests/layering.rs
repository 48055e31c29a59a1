//! The layering ARCHITECTURE.md describes, checked on the sources: within
//! `sched` and `master`, a top-level module refers (`crate::<module>`) only
//! to modules below it in its crate's list, so there is no import cycle
//! between them; no policy file refers to another policy; and `sched`
//! declares no dependency on an async runtime, HTTP or plotting crate.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level modules of each crate, lowest first.
const SCHED: &[&str] = &[
    "model",
    "offline",
    "pending",
    "hybrid",
    "view",
    "order",
    "pick",
    "assign",
    "hybrid_plan",
    "policy",
    "reduce",
    "sim",
    "hybrid_sim",
    "replay",
    "algo",
];
const MASTER: &[&str] = &[
    "server",
    "ops",
    "results",
    "experiment",
    "lab",
    "chaos",
    "cli",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("master/ has a parent")
        .to_owned()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its comment lines.
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::<name>` in `text`.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `mycrate::`
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// Violations of `layers` in the crate at `src`: (file, module it refers to).
fn violations(src: &Path, layers: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs");
        if matches!(module, "lib" | "bin" | "main") {
            continue;
        }
        let own = layers
            .iter()
            .position(|m| *m == module)
            .unwrap_or_else(|| panic!("{}: module {module} is not in the layer list", f.display()));
        for r in crate_refs(&code(&f)) {
            if let Some(theirs) = layers.iter().position(|m| *m == r) {
                if theirs > own {
                    bad.push(format!("{} uses crate::{r} (a layer above)", f.display()));
                }
            }
        }
    }
    bad
}

#[test]
fn modules_only_use_the_layers_below_them() {
    let ws = workspace();
    let mut bad = violations(&ws.join("sched/src"), SCHED);
    bad.extend(violations(&ws.join("master/src"), MASTER));
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_layer_check_catches_an_upward_reference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("low.rs"), "use crate::high::X;\n").unwrap();
    std::fs::write(dir.path().join("high.rs"), "use crate::low::Y;\n").unwrap();
    let bad = violations(dir.path(), &["low", "high"]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("low.rs uses crate::high"), "{bad:?}");
}

#[test]
fn no_policy_refers_to_another() {
    let dir = workspace().join("sched/src/policy");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let policies: Vec<String> = files
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "mod" && n != "tests")
        .collect();
    let mut bad = Vec::new();
    for f in &files {
        let own = f.file_stem().unwrap().to_string_lossy();
        if own == "mod" || own == "tests" {
            continue;
        }
        let text = code(f);
        for p in policies.iter().filter(|p| **p != own) {
            for pat in [format!("super::{p}"), format!("policy::{p}")] {
                if text.contains(&pat) {
                    bad.push(format!("{} uses {pat}", f.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn sched_depends_on_no_runtime_http_or_plotting_crate() {
    let manifest = std::fs::read_to_string(workspace().join("sched/Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|d| d.split("\n[").next())
        .expect("sched/Cargo.toml has [dependencies]");
    for banned in ["tokio", "axum", "hyper", "reqwest", "plotters", "clap"] {
        assert!(
            !deps.lines().any(|l| l.trim_start().starts_with(banned)),
            "sched depends on {banned}"
        );
    }
    // `common` without its HTTP features.
    let common = deps
        .lines()
        .find(|l| l.trim_start().starts_with("common"))
        .expect("sched depends on common");
    assert!(!common.contains("features"), "{common}");
}
