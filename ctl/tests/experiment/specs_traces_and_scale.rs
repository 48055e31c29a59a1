use super::*;

/// Guo's Fig 9 layouts on a real cluster: co-located, the storage workers
/// are left out; separate, the compute workers hold nothing and every map
/// reads from a storage worker, whose NIC cap the point sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_and_compute_apart_read_every_block_across() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("layout.toml");
    std::fs::write(
        &spec,
        r#"
name = "layout"
seed = 3
timeout_s = 120
schedulers = ["hadoop"]
[cluster]
workers = 4
storage_workers = 2
slots = 2
replication = 2
heartbeat_ms = 50
[data]
files = 1
blocks = 6
block_size = "256KiB"
[jobs]
count = 2
workload = "wordcount"
reduces = 2
arrival_s = [0, 0]
[[points]]
label = "together"
layout = "co-located"
[[points]]
label = "apart"
layout = "separate"
storage_nic_mbps = 40
"#,
    )
    .unwrap();
    let out = run_in(tmp.path(), spec, bin).await.unwrap();
    let mut runs = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let h = runs.headers().unwrap().clone();
    for r in runs.records().map(Result::unwrap) {
        let status = &r[h.iter().position(|x| x == "status").unwrap()];
        assert_eq!(status, "ok", "{r:?}");
    }
    let mut tasks = csv::Reader::from_path(out.join("tasks.csv")).unwrap();
    let th = tasks.headers().unwrap().clone();
    let at = |name: &str| th.iter().position(|x| x == name).unwrap();
    let mut maps = [0, 0];
    for t in tasks.records().map(Result::unwrap) {
        if &t[at("ok")] != "true" {
            continue;
        }
        let apart = &t[at("point")] == "apart";
        let (w, src) = (&t[at("worker")], &t[at("source")]);
        // Tasks only on w1, w2 in both layouts.
        assert!(["w1", "w2"].contains(&w), "{t:?}");
        if &t[at("kind")] == "map" {
            maps[usize::from(apart)] += 1;
            if apart {
                assert!(["w3", "w4"].contains(&src), "{t:?}");
                assert_eq!(&t[at("locality")], "remote", "{t:?}");
            } else {
                assert!(["w1", "w2"].contains(&src), "{t:?}");
            }
        }
    }
    assert_eq!(maps, [12, 12]);
    // The storage workers' NIC cap reached them: nic.csv reports each
    // worker's cap per sample.
    let nic = std::fs::read_to_string(out.join("nic.csv")).unwrap();
    let mut lines = nic.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|x| *x == n).unwrap();
    let mut seen = false;
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if f[col("point")] == "apart" && ["w3", "w4"].contains(&f[col("worker")]) {
            assert_eq!(f[col("cap_mbps")].parse::<f64>().unwrap(), 40.0, "{l}");
            seen = true;
        }
    }
    assert!(seen, "no sample of a storage worker at the separate point");
}

/// Every experiment spec in `experiments/` (the `sim-` sweeps aside) loads,
/// and its schedulers and points resolve: a grid whose policy takes no job
/// order, or a label given twice, fails here rather than an hour into a run.
#[test]
fn every_spec_resolves_its_schedulers_and_points() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut checked = 0;
    let mut grids = 0;
    for e in std::fs::read_dir(root.join("experiments")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".toml") || name.starts_with("sim-") {
            continue;
        }
        let (spec, _) = ctl::experiment::spec::Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
        let s = spec.schedulers().unwrap_or_else(|e| panic!("{name}: {e}"));
        spec.points().unwrap_or_else(|e| panic!("{name}: {e}"));
        grids += usize::from(s.iter().any(|n| n.grid.is_some()));
        checked += 1;
    }
    assert!(checked > 20 && grids >= 2, "{checked} specs, {grids} grids");
}

/// The specs recorded in the committed results (`meta.json`'s `spec_text`)
/// still load and resolve, so `master replot` and `master sim calibrate`
/// keep working on results made before a key was renamed (strict's `fair`,
/// now `order`).
#[test]
fn recorded_specs_in_results_still_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut checked = 0;
    for experiment in std::fs::read_dir(root.join("results")).unwrap() {
        let experiment = experiment.unwrap().path();
        let Ok(stamps) = std::fs::read_dir(&experiment) else {
            continue;
        };
        for stamp in stamps {
            let meta = stamp.unwrap().path().join("meta.json");
            let Ok(text) = std::fs::read_to_string(&meta) else {
                continue;
            };
            let meta_json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let (Some(spec), Some(file)) = (
                meta_json["spec_text"].as_str(),
                meta_json["spec_file"].as_str(),
            ) else {
                continue;
            };
            if Path::new(file)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("sim-"))
            {
                continue;
            }
            // Recorded relative to the checkout (a trace's file is found
            // from the spec's directory).
            let file = root.join(file);
            let s = ctl::experiment::spec::Spec::parse(spec, &file)
                .unwrap_or_else(|e| panic!("{}: {e}", meta.display()));
            s.schedulers()
                .unwrap_or_else(|e| panic!("{}: {e}", meta.display()));
            s.points()
                .unwrap_or_else(|e| panic!("{}: {e}", meta.display()));
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} recorded specs");
}

/// `master replot` rewrites a QoS experiment's summary whole: every
/// committed folder with a QoS section, copied, its summary.md deleted and
/// replotted from runs.csv, jobs.csv and meta.json (and whether it has a
/// failed-runs/ directory), gives back the committed summary.md to the byte
/// (the QoS section was once left out).
#[test]
fn replot_gives_back_a_qos_folders_summary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut checked = 0;
    for experiment in std::fs::read_dir(root.join("results")).unwrap() {
        let Ok(stamps) = std::fs::read_dir(experiment.unwrap().path()) else {
            continue;
        };
        for stamp in stamps {
            let dir = stamp.unwrap().path();
            let Ok(summary) = std::fs::read_to_string(dir.join("summary.md")) else {
                continue;
            };
            if !summary.contains("## QoS and public cloud") {
                continue;
            }
            let tmp = tempfile::tempdir().unwrap();
            let copy = tmp.path().join("results/x/y");
            std::fs::create_dir_all(&copy).unwrap();
            for f in ["meta.json", "runs.csv", "jobs.csv"] {
                std::fs::copy(dir.join(f), copy.join(f))
                    .unwrap_or_else(|e| panic!("{}: {f}: {e}", dir.display()));
            }
            // A folder that keeps failed runs' node logs says so in its
            // summary; the copy keeps the directory (not its logs).
            if dir.join("failed-runs").is_dir() {
                std::fs::create_dir(copy.join("failed-runs")).unwrap();
            }
            ctl::experiment::run::replot(&copy).unwrap();
            let again = std::fs::read_to_string(copy.join("summary.md")).unwrap();
            assert_eq!(again, summary, "{}", dir.display());
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} QoS folders");
}

/// A SWIM hour replayed on real local processes: the first jobs of hour 10
/// at their submit times, every job's maps the blocks of its input path's
/// file, map-only jobs as input-sink and shuffling ones as synthetic jobs
/// with their reduces that move the trace's scaled shuffle bytes, each run
/// keeping its decision record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swim_trace_hour_runs_on_a_real_cluster() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let trace = root.join("traces/swim/FB-2010_samples_24_times_1hr_withInputPaths_0.tsv");
    let spec = tmp.path().join("swim-test.toml");
    std::fs::write(
        &spec,
        format!(
            r#"
name = "swim-test"
seed = 5
timeout_s = 120
schedulers = ["hadoop", {{ label = "delay1", scheduler = "policy = 'delay', threshold_s = 1" }}]
[cluster]
workers = 3
slots = 2
nic_mbps = 200
replication = 2
decisions = true
[data]
block_size = "256KiB"
[jobs]
count = 20
[trace]
file = "{}"
hour = 10
bytes_scale = 2e-6
time_scale = 600
"#,
            trace.display()
        ),
    )
    .unwrap();
    let out = run_in(tmp.path(), spec.clone(), bin).await.unwrap();
    let (parsed, _) = ctl::experiment::spec::Spec::load(&spec).unwrap();
    let point = &parsed.points().unwrap()[0];
    let plan = parsed.trace_plan(point.block_bytes).unwrap().unwrap();
    assert_eq!(plan.jobs.len(), 20);
    let runs: Vec<ctl::experiment::output::RunRecord> =
        ctl::results::read_csv(&out.join("runs.csv")).unwrap();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r.status, "ok", "{r:?}");
        assert_eq!(r.jobs, 20, "{r:?}");
        assert_eq!(
            u64::from(r.data_local + r.data_remote),
            plan.maps(),
            "{r:?}"
        );
    }
    // Per job: as many successful maps as its file's blocks, reduces as the
    // trace's shuffle asked, and no job before its (compressed) submit time.
    let tasks: Vec<ctl::experiment::output::TaskRow> =
        ctl::results::read_csv(&out.join("tasks.csv")).unwrap();
    for (i, j) in plan.jobs.iter().enumerate() {
        let name = format!("j{i}");
        let mine: Vec<_> = tasks
            .iter()
            .filter(|t| t.job_name == name && t.scheduler == "hadoop" && t.ok)
            .collect();
        let maps = mine.iter().filter(|t| t.kind == "map").count();
        let reduces = mine.iter().filter(|t| t.kind == "reduce").count();
        assert_eq!(maps as u32, plan.files[j.file].blocks, "{name}");
        assert_eq!(reduces as u32, j.reduces.unwrap_or(0), "{name}");
        let arrival = mine[0].arrival_s;
        assert!(
            (arrival - j.arrival_ms as f64 / 1000.0).abs() < 0.5,
            "{name}: arrived at {arrival} s, trace says {} ms",
            j.arrival_ms
        );
        assert!(mine.iter().all(|t| t.start_s >= arrival - 1e-3), "{name}");
    }
    // Per job with shuffle: the bytes its reduces fetched are the trace's
    // scaled shuffle bytes, within 10% (and a byte of rounding per map).
    let jobs: Vec<ctl::experiment::qos::JobRow> =
        ctl::results::read_csv(&out.join("jobs.csv")).unwrap();
    let mut shuffling = 0;
    for (i, j) in plan.jobs.iter().enumerate() {
        let name = format!("j{i}");
        for row in jobs.iter().filter(|r| r.job_name == name) {
            assert_eq!(row.state, "succeeded", "{row:?}");
            if j.reduces.is_none() {
                assert_eq!(row.shuffle_bytes, 0, "{row:?}");
                continue;
            }
            assert_eq!(j.workload, workloads::Workload::Synthetic, "{name}");
            let want = j.shuffle_bytes as f64;
            let slack = want / 10.0 + f64::from(plan.files[j.file].blocks);
            assert!(
                (row.shuffle_bytes as f64 - want).abs() <= slack,
                "{name} under {}: shuffled {} bytes, the trace's scaled figure is {want}",
                row.scheduler,
                row.shuffle_bytes
            );
            shuffling += u32::from(want >= 1000.0);
        }
    }
    assert!(shuffling >= 2, "{shuffling} job runs shuffled 1 kB or more");
    // The summary says what was replayed.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("SWIM hour 10"), "{summary}");
    // A CSV and a record with inputs per run; each decides the same again.
    assert_eq!(out.join("decisions").read_dir().unwrap().count(), 4);
    assert_eq!(
        summary.matches("2 of 2 runs decided the same").count(),
        1,
        "{summary}"
    );
}

/// The error against scale on real runs of one small family at 2 and 4
/// workers: the 2-worker calibration predicts both folders, each folder is
/// also fitted on itself, and the figures say so per worker count, fit and
/// model. The smaller cluster must come first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_against_scale_is_calibrated_on_the_smallest_cluster() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for workers in [2u32, 4] {
        let spec = tmp.path().join(format!("fam-{workers}.toml"));
        std::fs::write(
            &spec,
            format!(
                r#"
name = "fam-{workers}"
seed = 5
timeout_s = 120
schedulers = ["hadoop", "policy = 'delay', threshold_s = 0.3"]
[cluster]
workers = {workers}
slots = 2
nic_mbps = 40
replication = 1
heartbeat_ms = 200
[data]
kind = "text"
files = {workers}
blocks = 3
block_size = "256KiB"
placement = "even"
[jobs]
count = {jobs}
workload = "input-sink"
arrival_s = [0, 1]
task_time_s = [0.2, 0.6]
[[points]]
label = "p"
"#,
                jobs = 2 * workers
            ),
        )
        .unwrap();
        dirs.push(run_in(tmp.path(), spec, bin).await.unwrap());
    }
    let results = tmp.path().join("results");
    use ctl::experiment::scale::scale_error;
    let e = scale_error(&[dirs[1].clone(), dirs[0].clone()], &results)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("give the calibrated (smallest) cluster first"),
        "{e}"
    );
    let out = scale_error(&dirs, &results).unwrap();
    assert!(
        out.starts_with(results.join("fam-error")),
        "{}",
        out.display()
    );
    // The larger folder was predicted by the smaller one's models.
    assert!(dirs[1]
        .join("calibration-from-fam-2/predictions.csv")
        .exists());
    let mut rd = csv::Reader::from_path(out.join("error.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    let at = |n: &str| h.iter().position(|x| x == n).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    // 2 sizes x 2 fits x (without, with the host term) x 3 models x 2
    // schedulers, one run each.
    assert_eq!(rows.len(), 2 * 2 * 2 * 3 * 2, "{rows:?}");
    for r in &rows {
        assert!(["2", "4"].contains(&&r[at("workers")]), "{r:?}");
        assert!(
            ["in-sample", "from-2", "in-sample+host", "from-2+host"].contains(&&r[at("fit")]),
            "{r:?}"
        );
        let median: f64 = r[at("per_job_median")].parse().unwrap();
        let p90: f64 = r[at("per_job_p90")].parse().unwrap();
        assert!(median >= 0.0 && p90 >= median, "{r:?}");
        assert_eq!(
            &r[at("jobs")],
            if &r[at("workers")] == "2" { "4" } else { "8" }
        );
    }
    // At the calibrated size, the two fits are one calibration.
    let of = |w: &str, fit: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| &r[at("workers")] == w && &r[at("fit")] == fit)
            .map(|r| r[at("per_job_median")].to_owned())
            .collect()
    };
    assert_eq!(of("2", "in-sample"), of("2", "from-2"));
    assert_eq!(of("2", "in-sample+host"), of("2", "from-2+host"));
    assert!(dirs[1]
        .join("calibration-from-fam-2-host/predictions.csv")
        .exists());
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("## from-2") && summary.contains("## in-sample"),
        "{summary}"
    );
    // Both sizes' host CPU, whatever the load on the machine running the
    // test (a saturated run is left out of the figures, not of this table).
    assert!(
        summary.contains("| 2 | 2 |") && summary.contains("| 4 | 2 |"),
        "{summary}"
    );
    assert!(summary.contains("## from-2+host"), "{summary}");
}
