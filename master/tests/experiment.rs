//! The experiment runner end to end on `experiments/smoke.toml`: real local
//! processes for every run, then the result files checked against what the
//! spec asked for.

use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_spec_runs_every_scheduler_and_writes_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    assert!(
        bin.join("worker").exists(),
        "{} is missing: build the binaries first (`cargo build --bins`; make test does)",
        bin.join("worker").display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let spec = root.join("experiments/smoke.toml");
    let out = master::experiment::run::run(&master::experiment::run::Options {
        spec: spec.clone(),
        results: tmp.path().join("results"),
        work: tmp.path().join("work"),
        keep_data: false,
        bin: bin.to_owned(),
    })
    .await
    .unwrap();
    assert!(out.starts_with(tmp.path().join("results/smoke")));
    let (parsed, _) = master::experiment::spec::Spec::load(&spec).unwrap();
    let schedulers = parsed.schedulers().unwrap();

    // runs.csv: one successful row per scheduler, all jobs done, all tasks counted.
    let mut runs = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = runs.records().map(Result::unwrap).collect();
    let h = runs.headers().unwrap().clone();
    let col = |r: &csv::StringRecord, name: &str| -> String {
        r[h.iter().position(|x| x == name).unwrap()].to_owned()
    };
    assert_eq!(rows.len(), schedulers.len());
    let tasks_per_run = parsed.jobs.count * parsed.data.blocks;
    for (r, s) in rows.iter().zip(&schedulers) {
        assert_eq!(col(r, "scheduler"), s.label);
        assert_eq!(col(r, "status"), "ok", "{r:?}");
        assert_eq!(col(r, "jobs"), parsed.jobs.count.to_string());
        let local: u32 = col(r, "data_local").parse().unwrap();
        let remote: u32 = col(r, "data_remote").parse().unwrap();
        assert_eq!(local + remote, tasks_per_run, "{r:?}");
        let mean: f64 = col(r, "mean_jct_s").parse().unwrap();
        let makespan: f64 = col(r, "makespan_s").parse().unwrap();
        assert!(mean > 0.0 && makespan >= mean, "{r:?}");
    }
    // tasks.csv: every successful attempt of every run.
    let mut tasks = csv::Reader::from_path(out.join("tasks.csv")).unwrap();
    let th = tasks.headers().unwrap().clone();
    let ok_col = th.iter().position(|x| x == "ok").unwrap();
    let ok = tasks
        .records()
        .map(Result::unwrap)
        .filter(|r| &r[ok_col] == "true")
        .count();
    assert_eq!(ok as u32, tasks_per_run * schedulers.len() as u32);
    // summary, plots and metadata.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for s in &schedulers {
        assert!(summary.contains(&format!("| {} |", s.label)), "{summary}");
    }
    for m in ["mean_jct", "slowdown", "remote_tasks", "makespan"] {
        for ext in ["svg", "png"] {
            let p = out.join("plots").join(format!("{m}.{ext}"));
            assert!(
                std::fs::metadata(&p).map(|m| m.len() > 0).unwrap_or(false),
                "{}",
                p.display()
            );
        }
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["experiment"], "smoke");
    assert_eq!(meta["seeds"], serde_json::json!([parsed.seed]));
    assert_eq!(meta["runs"], schedulers.len());
    assert!(meta["git_commit"].as_str().unwrap().len() >= 7, "{meta}");
    assert!(meta["spec_text"]
        .as_str()
        .unwrap()
        .contains("name = \"smoke\""));
    // The scratch space is gone.
    assert!(!tmp.path().join("work/smoke").exists());
}

/// A run whose cluster cannot start is recorded as failed; the rest go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_is_recorded_and_the_others_still_run() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("bad.toml");
    std::fs::write(
        &spec,
        r#"
name = "bad"
schedulers = ["hadoop", "lsap"]
timeout_s = 30
[cluster]
workers = 2
slots = 1
replication = 1
heartbeat_ms = 50
[data]
files = 1
blocks = 2
block_size = "64KiB"
[jobs]
count = 1
"#,
    )
    .unwrap();
    // No worker binary here: every cluster start fails with a clear error.
    let empty = tmp.path().join("nobin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = master::experiment::run::run(&master::experiment::run::Options {
        spec,
        results: tmp.path().join("results"),
        work: tmp.path().join("work"),
        keep_data: false,
        bin: empty,
    })
    .await
    .unwrap();
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 3, "{runs}");
    assert!(runs.contains("loading the data failed"), "{runs}");
    assert!(runs.contains("cannot start master"), "{runs}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("## Failed runs"), "{summary}");
}
