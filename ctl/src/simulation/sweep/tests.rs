use super::*;
use crate::simulation::Offline;
use common::tomlfile;

const SPEC: &str = r#"
name = "t"
instances = 2
ratio_to = "DynDLOff"
algorithms = ["hadoop", { label = "DynDLOff", algo = "dyndl-off" }, "bar"]
[base]
servers = 6
cores = 2
tasks = 20
replication = 2
beta = 5
cost = { model = "dyndl", theta = 1 }
[[points]]
label = "b5"
[[points]]
label = "b50"
beta = 50
"#;

fn parse(t: &str) -> Result<SweepSpec, String> {
    tomlfile::parse(t, Path::new("t.toml")).map_err(|e| e.to_string())
}

#[test]
fn a_sweep_runs_and_writes_results() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = run(&spec, &dir.path().join("results")).unwrap();
    let mut r = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<SweepRow> = r.deserialize().map(Result::unwrap).collect();
    // 2 points x 2 instances x 3 algorithms.
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r.makespan > 0.0 && r.tasks == 20));
    // Every algorithm saw the same instance: its generated makespan
    // under DynDLOff matches a direct run.
    let inst = GenParams {
        beta: 50.0,
        ..toml::from_str::<SweepSpec>(SPEC).unwrap().base
    }
    .generate(1);
    let direct = inst.evaluate(&Offline::DyndlOff.run(&inst)).makespan;
    let row = rows
        .iter()
        .find(|r| r.point == "b50" && r.seed == 1 && r.algorithm == "DynDLOff")
        .unwrap();
    assert!(
        (row.makespan - direct).abs() < 1e-9,
        "{} vs {direct}",
        row.makespan
    );
    let s = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        s.contains("## b50") && s.contains("makespan / DynDLOff"),
        "{s}"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["seeds"], serde_json::json!([0, 1]));
    assert_eq!(meta["runs"], 12);
}

#[test]
fn bad_specs_name_the_key() {
    for (from, to, key) in [
        ("instances = 2", "instances = 0", "instances"),
        ("ratio_to = \"DynDLOff\"", "ratio_to = \"X\"", "ratio_to"),
        ("beta = 50", "q = 2", "points[1]"),
        ("replication = 2", "replication = 7", "base.replication"),
        ("\"bar\"]", "\"nope\"]", "algorithms[2]"),
        ("label = \"b50\"", "label = \"b5\"", "points[1].label"),
        ("beta = 5\n", "beta = 5\ngamma = 1\n", "gamma"),
        ("beta = 50", "beta = -1", "points[1].beta"),
        ("tasks = 20", "tasks = \"many\"", "base.tasks"),
        (
            "instances = 2",
            "instances = 2\ntime_limit_s = 0",
            "time_limit_s",
        ),
        (
            "instances = 2",
            "instances = 2\ngroups = { a = 1 }",
            "groups",
        ),
        (
            "instances = 2",
            "instances = 2\nmode = \"fair-round\"\ngroups = { a = 1 }",
            "online policies only",
        ),
        ("beta = 5\n", "beta = 5\nracks = 7\n", "base.racks"),
        (
            "beta = 5\n",
            "beta = 5\nplacement = \"rack-aware\"\n",
            "base.placement",
        ),
        ("beta = 50", "racks = 0", "points[1].racks"),
        (
            "algo = \"dyndl-off\" }",
            "algo = \"dyndl-off\", driver = \"compile-time:wake\" }",
            "algorithms[1].driver`: DynDLOff: a driver applies to online policies only",
        ),
        (
            "\"hadoop\",",
            "{ label = \"H\", algo = \"hadoop\", driver = \"compile-time:after=-1\" },",
            "algorithms[0].driver`: after=-1: H must be",
        ),
        (
            "\"hadoop\",",
            "{ label = \"H\", algo = \"hadoop\", drive = \"events\" },",
            "unknown field `drive`, expected one of `label`, `algo`, `driver`",
        ),
        ("\"hadoop\",", "7,", "an algorithm's name, or a table"),
        (
            "instances = 2",
            "instances = 2\nmode = \"round\"",
            "online policies only",
        ),
    ] {
        let t = SPEC.replacen(from, to, 1);
        assert_ne!(t, SPEC, "{from}");
        let e = parse(&t).unwrap_err();
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn a_driver_is_run_and_labelled_and_only_in_makespan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    let text = SPEC.replacen(
        "\"bar\"]",
        "\"bar\", { label = \"H-ct\", algo = \"hadoop\", driver = \"compile-time:set-aside\" }]",
        1,
    );
    std::fs::write(&spec, &text).unwrap();
    let out = run(&spec, &dir.path().join("results")).unwrap();
    let mut r = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<SweepRow> = r.deserialize().map(Result::unwrap).collect();
    let ct: Vec<&SweepRow> = rows.iter().filter(|r| r.algorithm == "H-ct").collect();
    assert_eq!(ct.len(), 4);
    // The compile-time scheme has no simulated run: its makespan is
    // the static one alone.
    assert!(ct
        .iter()
        .all(|r| r.makespan > 0.0 && r.sim_makespan.is_nan()));
    let ev = rows.iter().find(|r| r.algorithm == "hadoop").unwrap();
    assert!(ev.sim_makespan > 0.0, "{ev:?}");
    // Unlabelled, the driver shows in the label.
    let spec2: SweepSpec =
        toml::from_str(&text.replacen("label = \"H-ct\", ", "label = \"x\", ", 1)).unwrap();
    assert!(spec2.algorithms().is_ok());
    let a: Algo = "hadoop".parse().unwrap();
    let a = a.with_driver("compile-time:wake".parse().unwrap()).unwrap();
    assert_eq!(a.label(), "hadoop [compile-time:wake]");
    // Not in a round.
    let t = text
        .replacen("instances = 2", "instances = 2\nmode = \"round\"", 1)
        .replacen("\"bar\", ", "", 1)
        .replacen("{ label = \"DynDLOff\", algo = \"dyndl-off\" }, ", "", 1);
    let e = parse(&t).unwrap_err();
    assert!(
        e.contains("H-ct: a driver is for mode = \"makespan\" only"),
        "{e}"
    );
}

#[test]
fn phases_spread_and_the_time_limit_reach_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    // A limit MaxCover-BalAssign cannot meet: it is stopped before its
    // first iteration, and only its row is over the limit.
    let text = SPEC
        .replacen("instances = 2", "instances = 2\ntime_limit_s = 1e-9", 1)
        .replacen("\"bar\"]", "\"bar\", \"mb\"]", 1);
    std::fs::write(&spec, text).unwrap();
    let out = run(&spec, &dir.path().join("results")).unwrap();
    let mut r = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<SweepRow> = r.deserialize().map(Result::unwrap).collect();
    for r in &rows {
        // Every run here is over 1 ns; the ones that cannot be stopped
        // midway finished and are over the limit all the same.
        assert!(r.over_limit && r.makespan.is_nan(), "{r:?}");
    }
    let bar = rows.iter().find(|r| r.algorithm == "BAR").unwrap();
    assert!(bar.phases.starts_with("balance="), "{}", bar.phases);
    let s = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(s.contains("over the limit (2 of 2)"), "{s}");
    assert!(s.contains("Time limit per run: 0.000000001 s"), "{s}");

    // Without a limit: phases per planner, spreads in the cells.
    std::fs::write(&spec, SPEC).unwrap();
    let out = run(&spec, &dir.path().join("results2")).unwrap();
    let s = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let row = |a: &str| {
        s.lines()
            .find(|l| l.starts_with(&format!("| {a} |")))
            .unwrap()
            .to_owned()
    };
    assert!(row("DynDLOff").contains("phase I ") && row("DynDLOff").contains("phase II "));
    assert!(row("BAR").contains("balance ") && row("BAR").contains("reduce "));
    // Two instances of different loads: the makespan cell shows a range.
    assert!(row("BAR").split('|').nth(2).unwrap().contains('-'), "{s}");
    let m = means(
        &csv::Reader::from_path(out.join("runs.csv"))
            .unwrap()
            .deserialize()
            .map(Result::unwrap)
            .collect::<Vec<SweepRow>>(),
    );
    let b = m[&("b50".to_owned(), "BAR".to_owned())].makespan.unwrap();
    assert!(b.min <= b.mean && b.mean <= b.max && b.min < b.max, "{b:?}");
}

#[test]
fn a_fair_round_sweep_reports_unfairness() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(
        &spec,
        r#"
name = "f"
instances = 3
mode = "fair-round"
groups = { g1 = 1, g2 = 2, g3 = 4 }
algorithms = ["lsap", { label = "fair", algo = "policy = 'lsap-fair', alpha = 5, beta = 1000" }]
[base]
servers = 30
cores = 1
tasks = 40
replication = 1
beta = 10
idle = 0.5
cost = { model = "dyndl", theta = 0 }
"#,
    )
    .unwrap();
    let out = run(&spec, &dir.path().join("results")).unwrap();
    let mut r = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<SweepRow> = r.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .all(|r| r.unfairness.is_finite() && r.remote <= 15.0 && !r.over_limit));
    let s = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(s.contains("| unfairness |"), "{s}");
    assert!(s.contains("idle slots / tasks = 0.375"), "{s}");
    assert!(s.contains("g1 0.143, g2 0.286, g3 0.571"), "{s}");
}

#[test]
fn a_sweep_on_racks_reports_rack_locality() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(
        &spec,
        r#"
name = "r"
instances = 3
mode = "waves"
algorithms = ["hadoop"]
[base]
servers = 40
cores = 2
tasks = 10
replication = 3
beta = 10
idle = 0.05
racks = 4
placement = "rack-aware"
cost = { model = "dyndl", theta = 0 }
[[points]]
label = "racks"
[[points]]
label = "one"
racks = 1
"#,
    )
    .unwrap();
    // One rack and rack-aware placement do not go together.
    let e = format!("{:#}", run(&spec, &dir.path().join("results")).unwrap_err());
    assert!(e.contains("points[1]") && e.contains("placement"), "{e}");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replace("racks = 1", "racks = 2")).unwrap();
    let out = run(&spec, &dir.path().join("results")).unwrap();
    let mut r = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<SweepRow> = r.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.rack_locality_pct >= r.locality_pct));
    assert!(rows.iter().any(|r| r.rack_locality_pct > r.locality_pct));
    let s = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(s.contains("| node- or rack-local % |"), "{s}");
    assert!(s.contains("4 racks (rack-aware placement)"), "{s}");
}

#[test]
fn every_shipped_spec_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".toml") {
            continue;
        }
        // sim-* specs are the lab's sweeps.
        if name.starts_with("sim-") {
            SweepSpec::load(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
            continue;
        }
        let (s, _) = crate::experiment::spec::Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.points().unwrap().is_empty());
        n += 1;
    }
    assert!(n >= 14, "{n} specs in {}", dir.display());
}
