use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_spec_runs_every_scheduler_and_writes_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let bin = built_bins();
    let tmp = tempfile::tempdir().unwrap();
    let spec = root.join("experiments/smoke.toml");
    let out = run_in(tmp.path(), spec.clone(), bin).await.unwrap();
    assert!(out.starts_with(tmp.path().join("results/smoke")));
    let (parsed, _) = ctl::experiment::spec::Spec::load(&spec).unwrap();
    let schedulers = parsed.schedulers().unwrap();

    let tasks_per_run = parsed.jobs.count * parsed.data.blocks.unwrap();
    runs_and_tasks_are_whole(&out, &parsed, &schedulers);
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
    // Per-run timelines: a chart per run, and the workers' samples behind them.
    let points = parsed.points().unwrap();
    for p in &points {
        for s in &schedulers {
            for ext in ["svg", "png"] {
                let file = format!(
                    "{}-{}-r0.{ext}",
                    ctl::experiment::timeline::slug(&p.label),
                    ctl::experiment::timeline::slug(&s.label)
                );
                let f = out.join("timelines").join(&file);
                assert!(
                    std::fs::metadata(&f).map(|m| m.len() > 0).unwrap_or(false),
                    "{}",
                    f.display()
                );
            }
        }
    }
    every_attempt_has_its_decision(&out, &points, &schedulers);
    // Every run's record, its inputs fed through its policy again (the
    // code the simulator runs), makes the same decisions, row for row.
    let mut runs_csv = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rh = runs_csv.headers().unwrap().clone();
    let rechecked = rh.iter().position(|x| x == "rechecked").unwrap();
    let sched_of = rh.iter().position(|x| x == "scheduler").unwrap();
    for r in runs_csv.records().map(Result::unwrap) {
        assert_eq!(&r[rechecked], "same", "{}", &r[sched_of]);
    }
    assert!(summary.contains(&format!(
        "{n} of {n} runs decided the same, row for row",
        n = schedulers.len()
    )));
    let file = format!(
        "{}-{}-r0.record.json.gz",
        ctl::experiment::timeline::slug(&points[0].label),
        ctl::experiment::timeline::slug(&schedulers[1].label)
    );
    let mut log = ctl::ops::report::read_record(&out.join("decisions").join(&file)).unwrap();
    let again = ctl::ops::report::recheck(&log).unwrap();
    assert_eq!(again.decisions, log.decisions.len());
    // A record that says otherwise is caught at its row.
    let row = log
        .decisions
        .iter()
        .position(|d| d.kind == sched::decision::Kind::Map)
        .unwrap();
    log.decisions[row].task = Some(log.decisions[row].task.unwrap() + 1000);
    let e = ctl::ops::report::recheck(&log).unwrap_err().to_string();
    assert!(e.starts_with(&format!("decision row {row} differs")), "{e}");
    let series =
        ctl::experiment::timeline::read_series(&out, parsed.cluster.workers, parsed.cluster.slots)
            .unwrap();
    assert_eq!(series.len(), points.len() * schedulers.len());
    for workers in series.values() {
        assert_eq!(workers.len(), parsed.cluster.workers as usize);
        assert!(workers.iter().all(|w| !w.rates.is_empty()), "{workers:?}");
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
    // Tables and plots can be rewritten from runs.csv and meta.json alone.
    std::fs::remove_file(out.join("summary.md")).unwrap();
    std::fs::remove_dir_all(out.join("plots")).unwrap();
    ctl::experiment::run::replot(&out).unwrap();
    let again = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert_eq!(again, summary);
    assert!(out.join("plots/flowtime.svg").exists());

    calibration_predicts_every_run(&out, schedulers.len(), tasks_per_run);
}

type Spec = ctl::experiment::spec::Spec;
type Named = ctl::experiment::spec::NamedScheduler;

/// runs.csv has one successful row per scheduler with every job done and
/// every task counted; tasks.csv every successful attempt, each run's jobs
/// job-1..job-N (no run inherits another's history).
fn runs_and_tasks_are_whole(out: &Path, parsed: &Spec, schedulers: &[Named]) {
    // runs.csv: one successful row per scheduler, all jobs done, all tasks counted.
    let mut runs = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = runs.records().map(Result::unwrap).collect();
    let h = runs.headers().unwrap().clone();
    let col = |r: &csv::StringRecord, name: &str| -> String {
        r[h.iter().position(|x| x == name).unwrap()].to_owned()
    };
    assert_eq!(rows.len(), schedulers.len());
    let tasks_per_run = parsed.jobs.count * parsed.data.blocks.unwrap();
    for (r, s) in rows.iter().zip(schedulers) {
        assert_eq!(col(r, "scheduler"), s.label);
        assert_eq!(col(r, "status"), "ok", "{r:?}");
        assert_eq!(col(r, "jobs"), parsed.jobs.count.to_string());
        let local: u32 = col(r, "data_local").parse().unwrap();
        let remote: u32 = col(r, "data_remote").parse().unwrap();
        assert_eq!(local + remote, tasks_per_run, "{r:?}");
        let mean: f64 = col(r, "mean_jct_s").parse().unwrap();
        let makespan: f64 = col(r, "makespan_s").parse().unwrap();
        assert!(mean > 0.0 && makespan >= mean, "{r:?}");
        // The host worked during the run (master, workers, the runner).
        let cpu: f64 = col(r, "host_cpu_pct").parse().unwrap();
        assert!(cpu > 0.0 && cpu <= 100.0, "{r:?}");
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
    // Every run's jobs are job-1..job-N: no run inherits another's history
    // (the master's journal starts afresh with each run).
    let mut tasks = csv::Reader::from_path(out.join("tasks.csv")).unwrap();
    let th = tasks.headers().unwrap().clone();
    let (sched_col, job_col) = (
        th.iter().position(|x| x == "scheduler").unwrap(),
        th.iter().position(|x| x == "job").unwrap(),
    );
    let jobs = parsed.jobs.count as usize;
    for s in schedulers {
        let mut ids: Vec<String> = tasks
            .records()
            .map(Result::unwrap)
            .filter(|r| r[sched_col] == s.label)
            .map(|r| r[job_col].to_owned())
            .collect();
        ids.sort();
        ids.dedup();
        let want: Vec<String> = (1..=jobs).map(|i| format!("job-{i}")).collect();
        let mut want_sorted = want.clone();
        want_sorted.sort();
        assert_eq!(ids, want_sorted, "{}", s.label);
        tasks = csv::Reader::from_path(out.join("tasks.csv")).unwrap();
    }
}

/// A decision record's rows (gzipped CSV), its header checked.
fn decision_rows(path: &Path) -> Vec<csv::StringRecord> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = csv::Reader::from_reader(flate2::read::GzDecoder::new(f));
    let h = r.headers().unwrap().clone();
    assert_eq!(h.get(0), Some("t_s"));
    assert_eq!(
        h.iter().skip(1).collect::<Vec<_>>().join(","),
        sched::decision::Decision::CSV_HEADER
    );
    r.records().map(Result::unwrap).collect()
}

/// The decision record of every run: a row for every map attempt in
/// tasks.csv (and for launches a worker refused, which tasks.csv does not
/// hold), each explained by its policy.
fn every_attempt_has_its_decision(
    out: &Path,
    points: &[ctl::experiment::spec::Point],
    schedulers: &[Named],
) {
    let mut tasks = csv::Reader::from_path(out.join("tasks.csv")).unwrap();
    let th = tasks.headers().unwrap().clone();
    let pos = |name: &str| th.iter().position(|x| x == name).unwrap();
    let (sched_col, job_col) = (pos("scheduler"), pos("job"));
    // The decision record of every run: a row for every map attempt in
    // tasks.csv (and for launches a worker refused, which tasks.csv does
    // not hold), each explained by its policy.
    let task_col = th.iter().position(|x| x == "task").unwrap();
    let attempts = |label: &str| -> Vec<(String, String)> {
        csv::Reader::from_path(out.join("tasks.csv"))
            .unwrap()
            .records()
            .map(Result::unwrap)
            .filter(|r| &r[sched_col] == label)
            .map(|r| {
                let job = r[job_col].trim_start_matches("job-").to_owned();
                (job, r[task_col].to_owned())
            })
            .collect()
    };
    let mut declined = 0;
    for p in points {
        for s in schedulers {
            let file = format!(
                "{}-{}-r0.csv.gz",
                ctl::experiment::timeline::slug(&p.label),
                ctl::experiment::timeline::slug(&s.label)
            );
            let rows = decision_rows(&out.join("decisions").join(&file));
            let maps: Vec<_> = rows.iter().filter(|r| &r[2] == "map").collect();
            let tried = attempts(&s.label);
            assert!(maps.len() >= tried.len(), "{file}");
            // Tasks launched n times have n rows at least.
            for t in &tried {
                let n =
                    |v: &mut dyn Iterator<Item = (String, String)>| v.filter(|x| x == t).count();
                let rows_for = n(&mut maps.iter().map(|m| (m[5].to_owned(), m[6].to_owned())));
                assert!(rows_for >= n(&mut tried.iter().cloned()), "{file}: {t:?}");
            }
            // Every declined offer says why too.
            for d in rows.iter().filter(|r| &r[2] == "idle") {
                assert_ne!(&d[11], "unexplained", "{file}: {d:?}");
                declined += 1;
            }
            for m in &maps {
                assert_ne!(&m[11], "unexplained", "{file}: {m:?}");
                let t: f64 = m[0].parse().unwrap();
                assert!((0.0..60.0).contains(&t), "{file}: {m:?}");
            }
        }
    }
    assert!(declined > 0, "the waiting policies declined some offers");
}

/// The simulator calibrated on these runs predicts every run under the
/// three cost models, from tasks.csv gzipped as committed results keep it.
/// Each prediction of calibration folder `d`: (point, scheduler, rep,
/// model, predicted mean JCT to the ns).
fn predicted(d: &Path) -> Vec<(String, String, u32, String, String)> {
    ctl::results::read_csv::<ctl::experiment::calibrate::Prediction>(&d.join("predictions.csv"))
        .unwrap()
        .into_iter()
        .map(|p| {
            (
                p.point,
                p.scheduler,
                p.rep,
                p.model,
                format!("{:.9}", p.predicted_mean_jct_s),
            )
        })
        .collect()
}

/// `cal`'s models (`renamed`: stored under the point name `elsewhere`)
/// given blocks twice the size predict `out` again.
fn another_block_size_scales_the_reads(out: &Path, cal: &Path, renamed: &str) {
    use ctl::experiment::calibrate::{calibrate, Fit, Options};
    // A model of blocks twice this size: its fair-share transfers are
    // charged in proportion to the bytes (a reference size appears in its
    // table), and so is the fixed models' remote extra: reads half the
    // model's size cost no more than before.
    let bytes = regex_free_number(renamed, "\"block_bytes\":");
    assert!(bytes > 0, "the model keeps its block size");
    let doubled = renamed.replace(
        &format!("\"block_bytes\":{bytes}"),
        &format!("\"block_bytes\":{}", 2 * bytes),
    );
    let bigger = stored_models(out, "bigger-exp", &doubled);
    let sized = calibrate(
        out,
        &Options::new(Fit::From(bigger, Some("elsewhere".into()))),
    )
    .unwrap();
    let table = std::fs::read_to_string(sized.join("summary.md")).unwrap();
    assert!(
        table.contains(&format!(" per {:.3} MB", 2.0 * bytes as f64 / 1e6)),
        "{table}"
    );
    assert!(
        table.contains("the fixed models' remote extra (source+reader, reader-only) are scaled by each read's bytes (x 0.500 on the mean)"),
        "the summary says what was scaled: {table}"
    );
    let fixed = |d: &Path| -> Vec<(String, String, u32, f64)> {
        predicted(d)
            .into_iter()
            .filter(|r| r.3 == "source+reader")
            .map(|r| (r.0, r.1, r.2, r.4.parse().unwrap()))
            .collect()
    };
    let (half, whole) = (fixed(&sized), fixed(cal));
    assert_eq!(half.len(), whole.len());
    // A run's placement may change with the cost (a batch policy plans
    // on it), so a run may end a little later; over the runs, cheaper
    // reads cost no more.
    for (h, w) in half.iter().zip(&whole) {
        assert!(
            (&h.0, &h.1, h.2) == (&w.0, &w.1, w.2) && h.3 <= w.3 * 1.05 + 1e-9,
            "{h:?} {w:?}"
        );
    }
    let sum = |v: &[(String, String, u32, f64)]| v.iter().map(|r| r.3).sum::<f64>();
    assert!(sum(&half) <= sum(&whole) + 1e-9, "{half:?} {whole:?}");
}

fn calibration_predicts_every_run(out: &Path, runs: usize, tasks_per_run: u32) {
    // The simulator calibrated on these runs predicts every run under both
    // cost models, from tasks.csv gzipped as committed results keep it.
    let tasks_csv = std::fs::read(out.join("tasks.csv")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(out.join("tasks.csv.gz")).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut gz, &tasks_csv).unwrap();
    gz.finish().unwrap();
    std::fs::remove_file(out.join("tasks.csv")).unwrap();
    use ctl::experiment::calibrate::{calibrate, Fit, Options};
    let cal = calibrate(out, &Options::new(Fit::InSample)).unwrap();
    let preds: Vec<ctl::experiment::calibrate::Prediction> =
        ctl::results::read_csv(&cal.join("predictions.csv")).unwrap();
    assert_eq!(preds.len(), 3 * runs);
    // A folder predicted by another calibration's models (here its own):
    // models.json.gz keeps every fitted term, the overheads too, so the
    // predictions come out the same to the digit.
    let from = calibrate(out, &Options::new(Fit::From(cal.clone(), None))).unwrap();
    assert!(
        from.ends_with("calibration-from-smoke"),
        "{}",
        from.display()
    );
    assert_eq!(
        std::fs::read_to_string(from.join("predictions.csv")).unwrap(),
        std::fs::read_to_string(cal.join("predictions.csv")).unwrap()
    );
    let text = std::fs::read_to_string(from.join("summary.md")).unwrap();
    assert!(text.contains("held out by folder"), "{text}");
    // Every point by one named point's model (another workload's): with
    // the folder's own point named, the same predictions again; a point
    // the calibration lacks is refused by name.
    // The model is stored under another point's name here, as another
    // workload's would be: its predictions still land on this point.
    let point = preds[0].point.clone();
    let mut models = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(cal.join("models.json.gz")).unwrap()),
        &mut models,
    )
    .unwrap();
    let renamed = models.replace(&format!("\"point\":\"{point}\""), "\"point\":\"elsewhere\"");
    assert_ne!(renamed, models, "the stored model names its point");
    let other = stored_models(out, "other-exp", &renamed);
    let named = calibrate(
        out,
        &Options::new(Fit::From(other.clone(), Some("elsewhere".into()))),
    )
    .unwrap();
    assert!(
        named.ends_with("calibration-from-other-exp-elsewhere"),
        "{}",
        named.display()
    );
    let summary = std::fs::read_to_string(named.join("summary.md")).unwrap();
    assert!(summary.contains(&format!("| {point} |")), "{summary}");
    assert_eq!(predicted(&named), predicted(&cal));
    another_block_size_scales_the_reads(out, &cal, &renamed);
    let e = calibrate(
        out,
        &Options::new(Fit::From(cal.clone(), Some("nowhere".into()))),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no model of point nowhere"), "{e}");
    for p in &preds {
        assert!(
            p.predicted_mean_jct_s > 0.0
                && p.predicted_makespan_s >= p.predicted_mean_jct_s
                && p.predicted_remote <= tasks_per_run,
            "{p:?}"
        );
    }
    // The simulated runs keep a decision record too: a map row per
    // simulated map.
    let sim_maps: usize = std::fs::read_dir(cal.join("decisions"))
        .unwrap()
        .map(|e| decision_rows(&e.unwrap().path()))
        .map(|rows| rows.iter().filter(|r| &r[2] == "map").count())
        .sum();
    assert_eq!(sim_maps as u32, 3 * tasks_per_run * runs as u32);
    let predicted_tasks = std::fs::read_to_string(cal.join("predicted-tasks.csv")).unwrap();
    assert_eq!(
        predicted_tasks.lines().count() as u32,
        1 + 3 * tasks_per_run * runs as u32
    );
    let cal_summary = std::fs::read_to_string(cal.join("summary.md")).unwrap();
    assert!(cal_summary.contains("Within 10% of the measured mean JCT"));
    // Every succeeded job of every run is predicted under each of the three
    // models, and the summary spreads their errors.
    let measured: Vec<ctl::experiment::qos::JobRow> =
        ctl::results::read_csv(&out.join("jobs.csv")).unwrap();
    let succeeded = measured.iter().filter(|j| j.state == "succeeded").count();
    assert!(succeeded > 0);
    let text = std::fs::read_to_string(cal.join("predicted-jobs.csv")).unwrap();
    assert_eq!(text.lines().count(), 1 + 3 * succeeded, "{text}");
    assert!(
        cal_summary.contains("## Per-job error") && cal_summary.contains("| source+reader | "),
        "{cal_summary}"
    );
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
    let out = run_in(tmp.path(), spec, &empty).await.unwrap();
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 3, "{runs}");
    assert!(runs.contains("loading the data failed"), "{runs}");
    assert!(runs.contains("cannot start master"), "{runs}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("## Failed runs"), "{summary}");
}

/// A run that started its cluster and then failed (here: it exceeds
/// timeout_s) keeps its nodes' logs with the results, the next run's cluster
/// overwriting them; a run that succeeds keeps none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_keeps_its_nodes_logs() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("slow.toml");
    let points =
        "[[points]]\nlabel = \"slow\"\n[[points]]\nlabel = \"fast\"\nslot_rate_mbs = 100\n";
    std::fs::write(&spec, slow_spec("slow", 5, 2, "256KiB", points)).unwrap();
    let out = run_in(tmp.path(), spec, bin).await.unwrap();
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert!(runs.contains("run exceeded timeout_s = 5"), "{runs}");
    assert!(
        runs.lines()
            .any(|l| l.starts_with("fast,") && l.contains(",ok,")),
        "{runs}"
    );
    let kept: Vec<String> = std::fs::read_dir(out.join("failed-runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(kept, ["slow-hadoop-r0"], "only the failed run's logs");
    let dir = out.join("failed-runs").join("slow-hadoop-r0");
    let master = std::fs::read_to_string(dir.join("master.log")).unwrap();
    assert!(master.contains("master starting"), "{master}");
    let logs = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(logs, 3, "the master's and both workers' logs");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("failed-runs/"), "{summary}");
}

/// Ctrl-C (or SIGTERM) during a run stops that run's cluster, which would
/// otherwise outlive the runner (each run's nodes are detached processes,
/// in the netns mode inside namespaces), marks meta.json interrupted and
/// says so in the error.
#[test]
fn an_interrupted_experiment_stops_its_cluster() {
    let bin = built_bins();
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("long.toml");
    // One map at 10 KB/s over 2 MiB: longer than the test waits.
    let points = "[[points]]\nlabel = \"long\"\n";
    std::fs::write(&spec, slow_spec("long", 600, 1, "2MiB", points)).unwrap();
    let (results, work) = (tmp.path().join("results"), tmp.path().join("work"));
    let mut child = std::process::Command::new(bin.join("master"))
        .arg("experiment")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .arg("--work")
        .arg(&work)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run's cluster is up once its process list names the master and
    // both workers, and the job runs once the master's log says so.
    let list = work.join("long/cluster/run/cluster.json");
    let log = work.join("long/cluster/run/logs/master.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let pids: Vec<u32> = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run's cluster did not start"
        );
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the experiment ended before the run's cluster was up: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let procs: Vec<serde_json::Value> = std::fs::read_to_string(&list)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let submitted = std::fs::read_to_string(&log).is_ok_and(|l| l.contains("job submitted"));
        if procs.len() == 3 && submitted {
            break procs
                .iter()
                .map(|p| p["pid"].as_u64().unwrap() as u32)
                .collect();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("interrupted by SIGINT after 0 of 1 runs: stopped the cluster of the run in progress and removed the scratch space"),
        "{stderr}"
    );
    for &p in &pids {
        let gone = (0..50).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            !alive(p)
        });
        assert!(gone, "process {p} of the interrupted run is still running");
    }
    assert!(!work.join("long").exists(), "the scratch space stays");
    let dir = std::fs::read_dir(results.join("long"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["interrupted"], "SIGINT after 0 of 1 runs", "{meta}");
}

/// A job mix on dedicated map and reduce machines (the shape of EAS Table 1,
/// in miniature): every job succeeds, maps run only on map machines and
/// reduces only on reduce machines, strict-locality policies never read
/// remotely, and the EAS metrics are filled in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_mix_runs_on_dedicated_map_and_reduce_machines() {
    let bin = Path::new(env!("CARGO_BIN_EXE_master")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("mix.toml");
    std::fs::write(
        &spec,
        r#"
name = "mix"
seed = 5
timeout_s = 120
schedulers = [
    { label = "FIFO-BE", scheduler = "fifo-be" },
    { label = "FIFO-S", scheduler = "fifo-s" },
    { label = "EAS", scheduler = "eas" },
]
[cluster]
workers = 5
reduce_workers = 2
slots = 2
replication = 1
heartbeat_ms = 50
decisions = true
[data]
block_size = "256KiB"
[jobs]
count = 4
arrival_s = [0, 0.5]
mix = [
    { workload = "wordcount", count = 3, maps = 1, reduces = 1 },
    { workload = "sort", count = 1, maps = 4, reduces = 2 },
]
[[points]]
label = "r2"
replication = 2
"#,
    )
    .unwrap();
    let out = run_in(tmp.path(), spec.clone(), bin).await.unwrap();
    let mut runs = csv::Reader::from_path(out.join("runs.csv")).unwrap();
    let h = runs.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = runs.records().map(Result::unwrap).collect();
    let col = |r: &csv::StringRecord, name: &str| -> String {
        r[h.iter().position(|x| x == name).unwrap()].to_owned()
    };
    let num = |r: &csv::StringRecord, name: &str| -> f64 { col(r, name).parse().unwrap() };
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert_eq!(col(r, "status"), "ok", "{r:?}");
        // EAS's and strict locality's decisions, on map-only and
        // reduce-only machines, decide the same again from the record.
        assert_eq!(col(r, "rechecked"), "same", "{r:?}");
        assert_eq!(col(r, "jobs"), "4");
        // 3 wordcount maps + 4 sort maps.
        assert_eq!(num(r, "data_local") + num(r, "data_remote"), 7.0, "{r:?}");
        assert!(num(r, "map_throughput_mbs") > 0.0, "{r:?}");
        assert!(num(r, "reduce_throughput_mbs") > 0.0, "{r:?}");
        let lb = num(r, "load_balance");
        assert!(lb.is_finite() && lb >= 0.0, "{r:?}");
        assert!(
            num(r, "total_jct_s") >= 4.0 * num(r, "mean_jct_s") - 1e-6,
            "{r:?}"
        );
        if col(r, "scheduler") != "FIFO-BE" {
            assert_eq!(num(r, "data_remote"), 0.0, "strict locality: {r:?}");
        }
    }
    let mut tasks = csv::Reader::from_path(out.join("tasks.csv")).unwrap();
    let th = tasks.headers().unwrap().clone();
    let at = |name: &str| th.iter().position(|x| x == name).unwrap();
    let (kind, worker, ok) = (at("kind"), at("worker"), at("ok"));
    let mut reduces = 0;
    for t in tasks.records().map(Result::unwrap) {
        if &t[ok] != "true" {
            continue;
        }
        let w = &t[worker];
        match &t[kind] {
            "map" => assert!(["w1", "w2", "w3"].contains(&w), "{t:?}"),
            "reduce" => {
                reduces += 1;
                assert!(["w4", "w5"].contains(&w), "{t:?}")
            }
            k => panic!("unknown kind {k}"),
        }
    }
    // 3 x 1 + 1 x 2 reduces in each of 3 runs.
    assert_eq!(reduces, 15);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("3 x wordcount 1/1"), "{summary}");
    // The calibrated simulator runs the reduce phase too: every job's
    // reduces, on the reduce machines only, after the job's last map.
    use ctl::experiment::calibrate::{calibrate, Fit, Options};
    let cal = calibrate(&out, &Options::new(Fit::InSample)).unwrap();
    // It measured what each workload shuffles: a sort its whole input
    // (records in, the same records out), a wordcount less.
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cal.join("meta.json")).unwrap()).unwrap();
    let ratio = &meta["models"][0]["shuffle_ratio"];
    let sort = ratio["sort"].as_f64().unwrap();
    let words = ratio["wordcount"].as_f64().unwrap();
    assert!((0.95..1.1).contains(&sort), "{ratio}");
    assert!(words > 0.0 && words < sort, "{ratio}");
    // And the mix runs at another size in the simulator, with its reduce
    // machines kept in proportion (2 of 5 -> 4 of 10).
    let (table, sim) = ctl::simulation::trace::run(
        &spec,
        &cal,
        &ctl::simulation::trace::TraceOptions::at(Some(10), None),
    )
    .unwrap();
    assert_eq!(sim.len(), 3, "{table}");
    assert!(sim.iter().all(|r| r.maps == 7), "{table}");
    assert!(
        table.contains("10 workers (6 map + 4 reduce) x 2 slots"),
        "{table}"
    );
    let text = std::fs::read_to_string(cal.join("predicted-tasks.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let h = rd.headers().unwrap().clone();
    let at = |name: &str| h.iter().position(|x| x == name).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    let per_model = rows.len() / 3;
    // 7 maps and 5 reduces a run, 3 runs.
    assert_eq!(per_model, 3 * (7 + 5), "{rows:?}");
    let reduces = rows.iter().filter(|r| &r[at("kind")] == "reduce").count();
    assert_eq!(reduces, 3 * 3 * 5, "every model, run and reduce");
    for r in &rows {
        let on_reduce_machine = ["w4", "w5"].contains(&&r[at("worker")]);
        assert_eq!(on_reduce_machine, &r[at("kind")] == "reduce", "{r:?}");
    }
}

/// The integer after `key` in a JSON text.
fn regex_free_number(text: &str, key: &str) -> u64 {
    let at = text.find(key).map_or(text.len(), |i| i + key.len());
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(0)
}

/// A calibration folder of experiment `name` under `out` holding only
/// `models` as its `models.json.gz`, as another folder's would.
fn stored_models(out: &Path, name: &str, models: &str) -> std::path::PathBuf {
    let dir = out.join(name).join("1/calibration");
    std::fs::create_dir_all(&dir).unwrap();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(dir.join("models.json.gz")).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut gz, models.as_bytes()).unwrap();
    gz.finish().unwrap();
    dir
}
