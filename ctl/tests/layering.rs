//! The layering ARCHITECTURE.md describes, checked on the sources of every
//! crate of the workspace:
//! - crates depend only on the crates below them (`CRATES`);
//! - within each crate, a top-level module refers (`crate::<module>`) only
//!   to modules below it in that crate's list, so there is no import cycle
//!   between them;
//! - at every level of every crate, sibling modules do not refer to each
//!   other in a cycle (`journal` -> `replication` -> `journal`);
//! - no policy file refers to another policy;
//! - `sched`'s dependency tree holds no async runtime, HTTP or plotting
//!   crate, and the daemon's (`master`) holds no plotting, experiment,
//!   docker or ssh code (those are in `ctl`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's crates, lowest first, and the workspace crates each may
/// depend on.
const CRATES: &[(&str, &[&str])] = &[
    ("workloads", &[]),
    ("base", &[]),
    ("sched", &["base"]),
    ("common", &["base", "sched", "workloads"]),
    // The simulators: used by the tools and the Python package only.
    ("lab", &["base", "sched", "common", "workloads"]),
    ("worker", &["common", "workloads"]),
    ("master", &["common", "sched", "workloads"]),
    ("ctl", &["common", "sched", "lab", "workloads", "master"]),
    // The Python package's native module (`mrtb-python`).
    ("python", &["common", "sched", "lab", "ctl"]),
];

/// Top-level modules of each crate, lowest first.
const WORKLOADS: &[&str] = &[
    "pool",
    "input_sink",
    "run",
    "sort",
    "lines",
    "synthetic",
    "wordcount",
];
const BASE: &[&str] = &[
    "bench", "checksum", "hash", "ids", "tomlfile", "units", "public",
];
const COMMON: &[&str] = &[
    "heap",
    "credentials",
    "tls",
    "placement",
    "config",
    "wire",
    "strategies",
    "http",
    "auth",
    "http_client",
    "bulk_client",
    "policy_socket",
];
const SCHED: &[&str] = &[
    "model",
    "offline",
    "pending",
    "hybrid",
    "decision",
    "speculation",
    "input",
    "view",
    "order",
    "pick",
    "assign",
    "hybrid_plan",
    "policy",
    "reduce",
];
const LAB: &[&str] = &[
    "swim",
    "agreement",
    "sim",
    "compile_time",
    "hybrid_sim",
    "replay",
    "calibration",
    "recheck",
    "algo",
    "timing",
    "trace",
    "scale",
];
const WORKER: &[&str] = &[
    "store",
    "replicas",
    "nic",
    "progress",
    "metrics",
    "slots",
    "timeline",
    "fetch",
    "commit",
    "upload",
    "shuffle",
    "reduce",
    "exec",
    "replicate",
    "background",
    "scrub",
    "http",
    "node",
];
const MASTER: &[&str] = &[
    "access",
    "catalog",
    "metrics",
    "provision",
    "state",
    "dashboard",
    "http",
    "daemon",
];
const CTL: &[&str] = &[
    "ops",
    "results",
    "claims",
    "experiment",
    "simulation",
    "chaos",
    "policy_server",
    "soak",
    "campaign",
    "cli",
];

/// The Python package's native module: all in its lib.rs.
const PYTHON: &[&str] = &[];

fn layers() -> [(&'static str, &'static [&'static str]); 9] {
    [
        ("workloads", WORKLOADS),
        ("base", BASE),
        ("sched", SCHED),
        ("common", COMMON),
        ("lab", LAB),
        ("worker", WORKER),
        ("master", MASTER),
        ("ctl", CTL),
        ("python", PYTHON),
    ]
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ctl/ has a parent")
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
    let mut bad = Vec::new();
    for (krate, layers) in layers() {
        bad.extend(violations(&ws.join(krate).join("src"), layers));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Items of the crate root (not modules of `layers`) that a module of the
/// crate at `src` names through `crate::`: (file, item).
fn root_refs(src: &Path, layers: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        if rel == "lib.rs" || rel.starts_with("bin") {
            continue;
        }
        for r in crate_refs(&code(&f)) {
            if !layers.contains(&r.as_str()) {
                found.push(format!("{rel} uses crate::{r}"));
            }
        }
    }
    found
}

/// The worker's modules are handed what each needs (the store, the NIC,
/// the slots, the executor, the shuffle service...), not one context
/// defined at the crate root: none of them names a root item.
#[test]
fn the_workers_modules_take_handles_not_a_shared_context() {
    let found = root_refs(&workspace().join("worker/src"), WORKER);
    assert!(found.is_empty(), "{found:#?}");
    // The check finds such a use.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "pub struct WorkerCtx;
",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("exec.rs"),
        "use crate::WorkerCtx;
use crate::store::BlockStore;
",
    )
    .unwrap();
    assert_eq!(
        root_refs(dir.path(), &["store", "exec"]),
        ["exec.rs uses crate::WorkerCtx"]
    );
}

/// The module path of a source file under `src` (`state/mod.rs` ->
/// `state`, `state/journal.rs` -> `state::journal`, `lib.rs` -> root);
/// `None` for binaries.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    Some(parts)
}

/// Every path a file's code names through `crate::` or `super::`, as
/// module paths from the crate root.
fn module_refs(own: &[String], text: &str, is_mod_file: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", {
            // `super` of `a/b.rs` is `a`; of `a/b/mod.rs` (module a::b) also `a`.
            let _ = is_mod_file;
            own[..own.len().saturating_sub(1)].to_vec()
        }),
    ] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut p = base.clone();
            p.extend(
                path.split("::")
                    .filter(|s| !s.is_empty() && *s != "super")
                    .map(str::to_owned),
            );
            out.push(p);
        }
    }
    out
}

/// Cycles among sibling modules of the crate at `src`: for a reference from
/// module A to module B, the two children of their deepest common ancestor
/// on the way to each are an edge (a module and its own descendants are not
/// siblings). Returns each cycle found as "x -> y -> x" under its parent.
fn sibling_cycles(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules: BTreeMap<Vec<String>, PathBuf> = BTreeMap::new();
    for f in &files {
        if let Some(m) = module_of(src, f) {
            modules.insert(m, f.clone());
        }
    }
    // parent -> child -> children it refers to
    let mut graph: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (own, f) in &modules {
        let text = code(f);
        for r in module_refs(own, &text, f.ends_with("mod.rs")) {
            // The longest prefix of the reference that is a module.
            let Some(target) = (1..=r.len())
                .rev()
                .map(|n| r[..n].to_vec())
                .find(|p| modules.contains_key(p))
            else {
                continue;
            };
            let common = own.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == own.len() || common == target.len() {
                continue; // ancestor or descendant
            }
            graph
                .entry(own[..common].to_vec())
                .or_default()
                .entry(own[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    let mut cycles = Vec::new();
    for (parent, edges) in &graph {
        for start in edges.keys() {
            // A path from `start` back to itself, depth first.
            let mut stack = vec![(start.clone(), vec![start.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((node, path)) = stack.pop() {
                for next in edges.get(&node).into_iter().flatten() {
                    if next == start {
                        let mut p = path.clone();
                        p.push(next.clone());
                        let at = if parent.is_empty() {
                            "crate root".to_owned()
                        } else {
                            parent.join("::")
                        };
                        cycles.push(format!("{}: under {at}: {}", src.display(), p.join(" -> ")));
                    } else if seen.insert(next.clone()) {
                        let mut p = path.clone();
                        p.push(next.clone());
                        stack.push((next.clone(), p));
                    }
                }
            }
        }
    }
    cycles.sort();
    cycles.dedup();
    cycles
}

#[test]
fn no_modules_refer_to_each_other_in_a_cycle() {
    let ws = workspace();
    let mut bad = Vec::new();
    for (krate, _) in CRATES {
        bad.extend(sibling_cycles(&ws.join(krate).join("src")));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_cycle_check_catches_siblings_that_refer_to_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(dir.path().join("lib.rs"), "pub mod state;\n").unwrap();
    std::fs::write(state.join("mod.rs"), "mod journal;\nmod replication;\n").unwrap();
    std::fs::write(
        state.join("journal.rs"),
        "use super::replication::Kept;\nuse super::Master;\n",
    )
    .unwrap();
    std::fs::write(
        state.join("replication.rs"),
        "fn f() { crate::state::journal::append(); }\n",
    )
    .unwrap();
    let bad = sibling_cycles(dir.path());
    assert_eq!(bad.len(), 2, "{bad:?}"); // once from each side
    assert!(bad[0].contains("under state"), "{bad:?}");
    assert!(
        bad.iter()
            .any(|b| b.ends_with("journal -> replication -> journal")),
        "{bad:?}"
    );
    // One direction alone is no cycle.
    std::fs::write(state.join("replication.rs"), "fn f() {}\n").unwrap();
    assert!(sibling_cycles(dir.path()).is_empty());
}

/// The workspace crates a crate's manifest names under `[dependencies]`.
fn workspace_deps(krate: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(workspace().join(krate).join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|d| d.split("\n[").next())
        .unwrap_or("");
    CRATES
        .iter()
        .map(|(c, _)| c.to_string())
        .filter(|c| {
            deps.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("{c} ")) || l.starts_with(&format!("{c}."))
            })
        })
        .collect()
}

#[test]
fn crates_depend_only_on_the_crates_below_them() {
    let members = std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let mut bad = Vec::new();
    for (krate, allowed) in CRATES {
        assert!(
            members.contains(&format!("\"{krate}\"")),
            "{krate} is not a workspace member"
        );
        for d in workspace_deps(krate) {
            if !allowed.contains(&d.as_str()) {
                bad.push(format!("{krate} depends on {d}"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    // The check reads what it should: ctl names master, master names sched.
    assert!(workspace_deps("ctl").contains(&"master".to_owned()));
    assert!(workspace_deps("master").contains(&"sched".to_owned()));
}

/// The names of the packages in `cargo tree -p <krate>` (normal
/// dependencies, with the features a build of that crate alone has).
fn dependency_tree(krate: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            krate,
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -p {krate}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// What the daemon must not carry: plotting, the results writer's formats,
/// progress bars, the command line parser and the tools crate (docker,
/// ssh, experiments, lab, chaos).
const NOT_IN_THE_DAEMON: &[&str] = &["ctl", "plotters", "indicatif", "csv", "flate2", "clap"];

#[test]
fn the_daemon_holds_no_tools() {
    let tree = dependency_tree("master");
    assert!(tree.contains("axum") && tree.contains("sched"), "{tree:?}");
    let bad: Vec<&&str> = NOT_IN_THE_DAEMON
        .iter()
        .filter(|c| tree.contains(**c))
        .collect();
    assert!(bad.is_empty(), "the master daemon depends on {bad:?}");
    // The same check on the tools crate finds them all but itself.
    let tools = dependency_tree("ctl");
    assert!(
        NOT_IN_THE_DAEMON.iter().all(|c| tools.contains(*c)),
        "{tools:?}"
    );
}

/// The simulators are the tools' (`ctl`, the Python package): neither
/// daemon compiles them, and `sched` does not hold them.
#[test]
fn the_daemons_compile_no_simulator() {
    for daemon in ["master", "worker"] {
        let tree = dependency_tree(daemon);
        assert!(tree.contains("common"), "{daemon}: {tree:?}");
        assert!(!tree.contains("lab"), "{daemon} depends on the simulators");
    }
    assert!(dependency_tree("ctl").contains("lab"));
    let sched = workspace().join("sched/src");
    for module in LAB {
        assert!(
            !sched.join(format!("{module}.rs")).exists(),
            "sched/src/{module}.rs: the simulators are in lab/"
        );
    }
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
        .filter(|n| n != "mod" && !n.ends_with("tests"))
        .collect();
    let mut bad = Vec::new();
    for f in &files {
        let own = f.file_stem().unwrap().to_string_lossy();
        if own == "mod" || own.ends_with("tests") {
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
    // Of the workspace, `base` only: not `common` (config, wire, HTTP).
    assert!(
        deps.lines().any(|l| l.trim_start().starts_with("base")),
        "sched depends on base"
    );
    assert!(
        !deps.lines().any(|l| l.trim_start().starts_with("common")),
        "sched depends on common"
    );
}

#[test]
fn sched_builds_without_a_runtime_http_or_plotting() {
    let tree = dependency_tree("sched");
    for banned in ["tokio", "axum", "hyper", "reqwest", "plotters", "clap"] {
        assert!(!tree.contains(banned), "sched's tree holds {banned}");
    }
}

/// ARCHITECTURE.md's section of a crate's modules (`## `<crate>`...`): the
/// modules its table names (every backticked name of a row's first cell).
fn documented_modules(doc: &str, krate: &str) -> Option<BTreeSet<String>> {
    let start = doc.find(&format!("\n## `{krate}`"))?;
    let section = &doc[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    let names = section[..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| {
            let first = l.split('|').nth(1).unwrap_or("");
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect::<BTreeSet<String>>();
    (!names.is_empty()).then_some(names)
}

/// ARCHITECTURE.md's crate table: each crate's "may use" cell.
fn documented_uses(doc: &str) -> BTreeMap<String, String> {
    let table = doc.split("\n## ").next().unwrap_or("");
    table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.trim_matches('`');
            (cells.len() >= 4 && CRATES.iter().any(|(c, _)| *c == name))
                .then(|| (name.to_owned(), cells[3].to_owned()))
        })
        .collect()
}

/// Every dependency a crate's manifest names under `[dependencies]`.
fn all_deps(krate: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(workspace().join(krate).join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|d| d.split("\n[").next())
        .unwrap_or("");
    deps.lines()
        .filter_map(|l| {
            let name = l.split(['=', '.', ' ']).next()?.trim();
            (!name.is_empty() && !name.starts_with('#')).then(|| name.to_owned())
        })
        .collect()
}

/// The crates kept small on purpose: ARCHITECTURE.md names every one of
/// their dependencies.
const FULLY_DOCUMENTED: &[&str] = &["workloads", "base", "sched", "lab"];

#[test]
fn architecture_md_names_the_crates_their_dependencies_and_modules() {
    let doc = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let uses = documented_uses(&doc);
    let mut bad = Vec::new();
    for (krate, _) in CRATES.iter().filter(|(c, _)| *c != "python") {
        let Some(cell) = uses.get(*krate) else {
            bad.push(format!("the crate table has no row for {krate}"));
            continue;
        };
        let words: BTreeSet<&str> = cell
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .collect();
        for dep in workspace_deps(krate) {
            if !words.contains(dep.as_str()) {
                bad.push(format!("{krate}'s row does not name {dep}, which it uses"));
            }
        }
        for (other, _) in CRATES {
            if words.contains(other) && !workspace_deps(krate).iter().any(|d| d == other) {
                bad.push(format!(
                    "{krate}'s row names {other}, which it does not use"
                ));
            }
        }
        if FULLY_DOCUMENTED.contains(krate) {
            for dep in all_deps(krate) {
                if !words.contains(dep.as_str()) {
                    bad.push(format!("{krate}'s row does not name its dependency {dep}"));
                }
            }
        }
    }
    for (krate, modules) in layers() {
        let Some(documented) = documented_modules(&doc, krate) else {
            continue; // base, common, python: described in prose
        };
        let code: BTreeSet<String> = modules.iter().map(|m| m.to_string()).collect();
        for m in code.difference(&documented) {
            bad.push(format!("{krate}'s module table has no row for {m}"));
        }
        for m in documented.difference(&code) {
            bad.push(format!(
                "{krate}'s module table names {m}, not a module of the crate"
            ));
        }
    }
    let first = doc.split("\n\n").nth(1).unwrap_or("");
    let n = CRATES.len();
    let words = ["", "", "", "", "", "", "", "", "Eight", "Nine", "Ten"];
    assert!(
        first.starts_with(&format!("{} crates", words[n])),
        "ARCHITECTURE.md's first paragraph does not say {n} crates: {first}"
    );
    assert!(bad.is_empty(), "{bad:#?}");
    // The check reads what it should.
    assert!(documented_modules(&doc, "sched")
        .unwrap()
        .contains("pending"));
    assert!(uses["lab"].contains("sched"));
}

/// Files of the master's state that may hold `impl Master`: the top and
/// the files that orchestrate one concern. The parts (`roster`, `storage`,
/// `jobs`, `journal`, `public`, `placement`, `record`, `held`, ...) own
/// their fields and carry no `Master` method.
const MASTER_ORCHESTRATION: &[&str] = &[
    "mod.rs",
    "workers.rs",
    "submit.rs",
    "attempts.rs",
    "commit.rs",
    "reduce.rs",
    "rent.rs",
    "restore.rs",
    "report.rs",
];

/// `(file, what it breaks)` for every non-test file of `state` that holds
/// `impl Master` outside `MASTER_ORCHESTRATION` or touches the scheduler's
/// view, the scheduler, the reduce placer or the record other than through
/// `Placement`.
fn master_state_violations(files: &[(String, String)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, text) in files {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let base = name.rsplit('/').next().unwrap_or(name);
        let top = !name.contains('/') || name.ends_with("journal/mod.rs");
        let orchestrates = top && MASTER_ORCHESTRATION.contains(&base) && name != "journal/mod.rs";
        if code.contains("impl Master {") && !orchestrates {
            bad.push(format!("{name}: impl Master in a part"));
        }
        if name == "placement.rs" {
            continue;
        }
        // A field, not a method of the same name (`self.record(..)`).
        for field in ["self.view", "self.scheduler", "self.reducer", "self.record"] {
            if code.match_indices(field).any(|(i, _)| {
                !code[i + field.len()..]
                    .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '(')
            }) {
                bad.push(format!("{name}: {field} outside placement.rs"));
            }
        }
    }
    bad
}

#[test]
fn the_masters_view_is_written_from_placement_and_its_methods_live_in_orchestration() {
    let dir = workspace().join("master/src/state");
    let mut paths = Vec::new();
    rust_files(&dir, &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == "tests") && !p.ends_with("tests.rs"))
        .map(|p| {
            let rel = p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read_to_string(p).unwrap())
        })
        .collect();
    assert!(files.iter().any(|(n, _)| n == "placement.rs"), "{files:?}");
    let bad = master_state_violations(&files);
    assert!(bad.is_empty(), "{bad:#?}");
    // The check catches both kinds.
    let planted = [
        (
            "public.rs".to_string(),
            "impl Master {\n fn f(&mut self) {}\n}".to_string(),
        ),
        (
            "workers.rs".to_string(),
            "fn g(&mut self) { self.view.set_free(w, 1); }".to_string(),
        ),
        (
            "workers.rs".to_string(),
            "fn h(&self) { self.record.rows(None); }".to_string(),
        ),
    ];
    let caught = master_state_violations(&planted);
    assert_eq!(caught.len(), 3, "{caught:?}");
}
