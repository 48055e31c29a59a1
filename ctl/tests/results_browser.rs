//! The results browser in a real browser: `master results index` writes the
//! pages of a results tree made here, then headless Chromium opens them from
//! disk (`file://`, no server) and the test reads what a person would see:
//! the folders listed, a folder's runs filtered by scheduler, two schedulers
//! of a point drawn side by side with their paired difference, and no
//! script error. Screenshots are kept as `target/tmp/results-*.png`. And
//! `master results serve` on loopback: the same pages and the folders' files
//! over HTTP, nothing outside the tree.

mod browser;
mod skip;
use browser::{chromium, open, screenshot, start_browser, Cdp};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// results/<spec>/<stamp>/ with three seeds of schedulers A and B at one
/// point (B slower by about a second), their jobs, a plot and a timeline.
fn folder(root: &Path, spec: &str, stamp: &str) {
    let d = root.join(spec).join(stamp);
    std::fs::create_dir_all(d.join("plots")).unwrap();
    std::fs::create_dir_all(d.join("timelines")).unwrap();
    std::fs::write(
        d.join("meta.json"),
        r#"{"git_commit": "0123456789abcdef", "git_dirty": false, "command": "master experiment t.toml"}"#,
    )
    .unwrap();
    let mut runs = String::from(
        "point,scheduler,rep,seed,status,mean_jct_s,makespan_s,locality_pct,host_cpu_pct\n",
    );
    let mut jobs = String::from("point,scheduler,rep,job,state,jct_s\n");
    for (rep, seed) in [(0, 11), (1, 12), (2, 13)] {
        for (s, base) in [("A", 2.0), ("B", 3.0)] {
            let m = base + 0.1 * rep as f64;
            runs += &format!(
                "p,{s},{rep},{seed},ok,{m},{},{},7\n",
                m * 2.0,
                if s == "A" { 100 } else { 60 }
            );
            for j in 0..4 {
                jobs += &format!("p,{s},{rep},job-{j},succeeded,{}\n", m + 0.25 * j as f64);
            }
        }
    }
    std::fs::write(d.join("runs.csv"), runs).unwrap();
    std::fs::write(d.join("jobs.csv"), jobs).unwrap();
    std::fs::write(
        d.join("summary.md"),
        "# t\n\n| point | A |\n|---|---|\n| p | 2.1 |\n",
    )
    .unwrap();
    std::fs::write(
        d.join("plots/mean_jct.svg"),
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#,
    )
    .unwrap();
    std::fs::write(
        d.join("timelines/p-A-r0.svg"),
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#,
    )
    .unwrap();
}

/// Opens `url` in a new tab that records every script error in
/// `window.__errors` from its first line on.
async fn open_watched(b: &browser::Browser, url: &str) -> Cdp {
    let mut cdp = open(b, "about:blank").await;
    cdp.call("Page.enable", json!({})).await;
    cdp.call(
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": "window.__errors = []; addEventListener('error', e => __errors.push(String(e.message)));" }),
    )
    .await;
    cdp.call("Page.navigate", json!({ "url": url })).await;
    cdp
}

/// Evaluates `expr` (a JSON string) until it parses and `ready` holds.
async fn wait_for(cdp: &mut Cdp, expr: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = cdp.eval(expr).await;
        if let Some(parsed) = v
            .as_str()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
        {
            if ready(&parsed) {
                return parsed;
            }
        }
        assert!(Instant::now() < deadline, "the page never showed it: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_results_pages_list_filter_and_compare_in_a_browser() {
    let Some(bin) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the results browser test: install chromium (.ci/run does)"
        );
        skip::skipped("no chromium on PATH (package chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    folder(&results, "spec-a", "20260101-120000");
    folder(&results, "spec-b", "20260102-120000");
    let out = Command::new(env!("CARGO_BIN_EXE_master"))
        .args(["results", "index", "--results"])
        .arg(&results)
        .arg("--claims")
        .arg(dir.path().join("no-claims"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("and 2 folder pages"));

    let b = start_browser(&bin);
    let index = format!("file://{}", results.join("index.html").display());
    let mut cdp = open_watched(&b, &index).await;
    let seen = wait_for(
        &mut cdp,
        "JSON.stringify({ folders: [...document.querySelectorAll('#folders tbody tr')].map(tr => tr.dataset.spec), cpu: document.querySelector('#folders tbody td:nth-child(7)')?.textContent, errors: window.__errors })",
        |v| v["folders"].as_array().is_some_and(|a| a.len() == 2),
    )
    .await;
    assert_eq!(seen["folders"], json!(["spec-a", "spec-b"]));
    assert_eq!(seen["cpu"], json!("7-7%"));
    assert_eq!(seen["errors"], json!([]));
    screenshot(&mut cdp, "results-index.png").await;

    let page = format!(
        "file://{}",
        results.join("spec-a/20260101-120000/index.html").display()
    );
    let mut cdp = open_watched(&b, &page).await;
    const FOLDER: &str = "JSON.stringify({ runs: Number(document.getElementById('runs').dataset.rows), jobs: Number(document.getElementById('jobs').dataset.rows), series: Number(document.getElementById('sb-cdf')?.dataset.series), points: Number(document.getElementById('sb-cdf')?.dataset.points), paired: document.getElementById('sb-paired')?.textContent, loc: document.getElementById('sb-loc')?.textContent, plots: document.querySelectorAll('img').length, errors: window.__errors })";
    let seen = wait_for(&mut cdp, FOLDER, |v| v["series"] == json!(2)).await;
    assert_eq!(seen["runs"], json!(6), "{seen}");
    assert_eq!(seen["jobs"], json!(24));
    assert_eq!(
        seen["points"],
        json!(24),
        "every job of A and B at the point"
    );
    let paired = seen["paired"].as_str().unwrap();
    assert!(
        paired.contains("A minus B, paired over 3 seeds: -1.00 s")
            && !paired.contains("no difference"),
        "{paired}"
    );
    assert_eq!(seen["loc"], json!("locality: A 100.0%, B 60.0%"));
    assert_eq!(seen["plots"], json!(1));
    assert_eq!(seen["errors"], json!([]));
    screenshot(&mut cdp, "results-side-by-side.png").await;

    // A filter shows one scheduler's runs and jobs.
    cdp.eval("const s = document.getElementById('f-sched'); s.value = 'B'; s.dispatchEvent(new Event('change'));")
        .await;
    let seen = wait_for(&mut cdp, FOLDER, |v| v["runs"] == json!(3)).await;
    assert_eq!(seen["jobs"], json!(12));
    assert_eq!(seen["errors"], json!([]));
    screenshot(&mut cdp, "results-folder.png").await;
}

/// Kills the server when the test ends, however it ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_serve_writes_the_pages_and_serves_the_tree_over_http() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    folder(&results, "spec-a", "20260101-120000");
    std::fs::write(dir.path().join("secret.txt"), "outside the results tree").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_master"))
        .args(["results", "serve", "--listen", "127.0.0.1:0", "--results"])
        .arg(&results)
        .arg("--claims")
        .arg(dir.path().join("no-claims"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut lines = std::io::BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .unwrap();
        if let Some(at) = line
            .split(" at ")
            .nth(1)
            .filter(|_| line.starts_with("serving "))
        {
            break at.trim_end_matches('/').to_owned();
        }
    };
    let get = |path: &str| {
        let url = format!("{url}{path}");
        async move {
            let r = common::http_client::plain().get(&url).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, body) = get("/").await;
    assert_eq!(status, 200);
    assert!(body.contains("spec-a"), "the index lists the folder");
    let (status, body) = get("/spec-a/20260101-120000/").await;
    assert_eq!(status, 200);
    assert!(body.contains("20260101-120000"), "a folder's page");
    let (status, body) = get("/spec-a/20260101-120000/runs.csv").await;
    assert_eq!(status, 200);
    assert!(body.starts_with("point,scheduler,rep"), "{body}");
    let (status, body) = get("/%2e%2e/secret.txt").await;
    assert_ne!(status, 200, "a path out of the tree is refused: {body}");
    assert!(!body.contains("outside the results tree"));
    assert_eq!(get("/spec-a/none.csv").await.0, 404);
    drop(server);
}
