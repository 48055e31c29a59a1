//! The dashboard in a real browser: a local cluster runs a wordcount, then
//! headless Chromium (Debian's package; `.ci/run` installs it) opens the
//! master's page with a read credential in the URL fragment (a link with
//! the administrator's token is refused), and the test reads what
//! a person would see through the DevTools protocol: the workers listed,
//! the job shown as succeeded, its timeline drawn with one bar per attempt.
//! A screenshot is kept as `target/tmp/dashboard.png`.

mod browser;
mod skip;
use browser::{chromium, open, screenshot, start_browser, Browser, Cdp};
use common::wire::{JobState, JobSubmit};
use ctl::ops::loader::{self, Generator, LoadSpec, Source};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use workloads::Workload;

mod support;

const TOKEN: &str = "dash-token";
/// The read role's secret: what a dashboard link may carry.
const READ: &str = "dash-read";

/// What the page shows ([`SEEN`]); None while it is still loading.
async fn seen(cdp: &mut Cdp) -> Option<Value> {
    let v = cdp.eval(SEEN).await;
    serde_json::from_str(v.as_str()?).ok()
}

/// What the page shows, read from its DOM.
const SEEN: &str = r#"JSON.stringify({
  workers: [...document.querySelectorAll('#workers tbody tr')].map(tr => ({
    name: tr.dataset.worker, state: tr.children[1].textContent })),
  jobs: [...document.querySelectorAll('#jobs tbody tr[data-job]')].map(tr => ({
    id: Number(tr.dataset.job), state: tr.querySelector('.state').textContent })),
  jobShown: !document.getElementById('job').hidden,
  bars: Number(document.getElementById('gantt').dataset.bars),
  counters: Object.fromEntries([...document.querySelectorAll('#counters td')].map(td => [td.dataset.counter, td.textContent])),
  conn: document.getElementById('conn').textContent,
  login: !document.getElementById('login').hidden,
  why: document.getElementById('login-why').textContent,
  hash: location.hash,
})"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_workers_jobs_and_the_timeline_in_a_browser() {
    let Some(bin) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the dashboard test: install chromium (.ci/run does)"
        );
        skip::skipped("no chromium on PATH (package chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nic = Some(common::config::mbps_to_bytes(400.0));
    // The master keeps the decision record: the timeline says on hover why
    // each attempt went where it did.
    let c = support::start_cluster_tuned(
        dir.path(),
        TOKEN,
        2,
        &[nic, nic, nic],
        &[common::config::Role::Both; 3],
        50,
        |m| {
            m.record_decisions = true;
            m.credentials.read = vec![READ.into()];
        },
        |_| {},
    )
    .await;
    loader::load(
        &c.client,
        &LoadSpec {
            name: "text".into(),
            source: Source::Generate {
                kind: Generator::Text,
                blocks: 9,
            },
            block_size: 100_000,
            replication: 1,
            seed: 4,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let mut job = JobSubmit::new(Workload::Wordcount, "text");
    job.reduces = Some(2);
    job.output = Some("counts".into());
    let id = c.client.submit(&job).await.unwrap();
    let report = c.client.wait_job(id).await.unwrap();
    assert_eq!(report.state, JobState::Succeeded);
    let bars = report.attempts.len();
    assert_eq!(bars, 9 + 2, "no attempt failed: {report:?}");

    let browser = start_browser(&bin);
    let base = c.client.base().to_owned();

    logins_are_guarded(&browser, &base).await;

    // With the read credential in the fragment, and the job selected.
    let url = format!("{base}/#token={READ}&job=job-{}", id.0);
    let mut cdp = open(&browser, &url).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = loop {
        let seen = seen(&mut cdp).await.unwrap_or_default();
        let ready = seen["workers"].as_array().is_some_and(|w| w.len() == 3)
            && seen["jobShown"] == json!(true)
            && seen["bars"].as_u64() == Some(bars as u64);
        if ready {
            break seen;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed it all: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let names: Vec<&str> = seen["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            assert_eq!(w["state"], json!("alive"), "{seen}");
            w["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, ["w0", "w1", "w2"]);
    let row = seen["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == json!(id.0))
        .unwrap_or_else(|| panic!("the job is listed: {seen}"));
    assert_eq!(row["state"], json!("succeeded"));
    assert_eq!(seen["conn"], json!("live"));
    assert_eq!(
        seen["counters"]["data-local maps (DATA_LOCAL_MAPS)"],
        json!(report.data_local.to_string())
    );
    // The output is written at the cluster's factor, 2, and the page names it.
    assert_eq!(report.output_replication, Some(2));
    assert_eq!(seen["counters"]["output"], json!("counts (2 replicas)"));
    // The page took the token out of the address bar.
    assert!(!seen["hash"].as_str().unwrap().contains("token"), "{seen}");

    // The bars are really painted: the canvas has the three colours.
    let painted = cdp
        .eval(
            r#"(() => { const c = document.getElementById('gantt');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && !(d[i] > 200 && d[i+1] > 200 && d[i+2] > 200)) n++;
                return n; })()"#,
        )
        .await;
    assert!(painted.as_u64().unwrap() > 1000, "{painted}");

    tips_give_each_bar_its_reason(&mut cdp, bars).await;

    screenshot(&mut cdp, "dashboard.png").await;

    running_attempts_are_drawn(&c, &browser, &base).await;
}

/// Without a token the page shows the login form and nothing else; a link
/// with the administrator's token is refused and taken out of the address.
async fn logins_are_guarded(browser: &Browser, base: &str) {
    // Without a token: the login form, nothing else.
    let mut anon = open(browser, &format!("{base}/")).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = seen(&mut anon).await.unwrap_or_default();
        if seen["login"] == json!(true) {
            assert!(seen["workers"].as_array().unwrap().is_empty(), "{seen}");
            break;
        }
        assert!(Instant::now() < deadline, "no login form: {seen}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A link with the administrator's token: refused, and out of the page.
    let mut admin = open(browser, &format!("{base}/#token={TOKEN}")).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = seen(&mut admin).await.unwrap_or_default();
        if seen["why"]
            .as_str()
            .is_some_and(|w| w.contains("admin role"))
        {
            assert_eq!(seen["login"], json!(true), "{seen}");
            assert!(seen["workers"].as_array().unwrap().is_empty(), "{seen}");
            assert!(!seen["hash"].as_str().unwrap().contains("token"), "{seen}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "an admin link was not refused: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A job that runs a while: its running attempts are drawn as they run,
/// in their slots' rows, and the counters move; then the page at scale.
async fn running_attempts_are_drawn(c: &support::LocalCluster, browser: &Browser, base: &str) {
    let mut slow = JobSubmit::new(Workload::InputSink, "text");
    slow.compute = Some(common::wire::TaskCompute {
        min_ms: 4000,
        max_ms: 4000,
        seed: 2,
    });
    let slow_id = c.client.submit(&slow).await.unwrap();
    let mut live = open(
        browser,
        &format!("{base}/#token={READ}&job=job-{}", slow_id.0),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let running = live
            .eval("Number(document.getElementById('gantt').dataset.running || 0)")
            .await;
        let state = c.client.job(slow_id, None).await.unwrap().state;
        if running.as_u64().unwrap_or(0) >= 3 && state == JobState::Running {
            break;
        }
        assert!(
            Instant::now() < deadline && !state.is_done(),
            "no running attempt drawn ({running}, {state:?})"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    screenshot(&mut live, "dashboard-running.png").await;
    assert_eq!(
        c.client.wait_job(slow_id).await.unwrap().state,
        JobState::Succeeded
    );
    renders_at_scale(&mut live).await;
}

/// Hovering over each of the `bars` bars: the tip names the attempt and
/// the decision record's reason for it (every map of this job went by a
/// rule of hadoop's: data-local, rack-local or no-wait; reduces by the
/// reduce placement).
async fn tips_give_each_bar_its_reason(cdp: &mut Cdp, bars: usize) {
    let tips = cdp
        .eval(
            r#"(() => { const c = document.getElementById('gantt');
                const r = c.getBoundingClientRect();
                return JSON.stringify(bars.map(b => {
                  c.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + (b.x0 + b.x1) / 2,
                    clientY: r.top + (b.y0 + b.y1) / 2, bubbles: true }));
                  return document.getElementById('tip').textContent;
                })); })()"#,
        )
        .await;
    let tips: Vec<String> = serde_json::from_str(tips.as_str().unwrap()).unwrap();
    assert_eq!(tips.len(), bars, "{tips:?}");
    for t in &tips {
        let why = t
            .lines()
            .find_map(|l| l.strip_prefix("why: "))
            .unwrap_or_else(|| panic!("no reason in the tip: {t:?}"));
        let rule = why.split([' ', ',']).next().unwrap();
        if t.contains(" map,") {
            assert!(
                ["data-local", "rack-local", "no-wait"].contains(&rule),
                "{t:?}"
            );
            assert!(why.contains("in fifo order"), "{t:?}");
            assert!(t.contains("input on "), "{t:?}");
        } else {
            assert_eq!(rule, "reduce-placement", "{t:?}");
        }
    }
}

/// At scale: the page's own code renders a state of 100 workers and 1,000
/// jobs and draws a timeline of 10,000 attempts (the time it took is
/// printed, not judged).
async fn renders_at_scale(live: &mut Cdp) {
    let scale = live
        .eval(
            r#"(() => {
              const workers = [...Array(100)].map((_, i) => ({ id: i, role: "both", name: "w" + i,
                addr: "", slots: 4, free_slots: 1, alive: true, blocks: 50, running: 3, background: 0,
                nic_rx_bytes: 1e9, nic_tx_bytes: 1e9, nic_rx_rate: 2e7, nic_tx_rate: 1e7, nic_cap: 5e7 }));
              const job = (n, attempts) => ({ job: n, name: "j" + n, workload: "sort", input: "x", group: "default",
                scheduler: "hadoop", state: "running", submit_unix_ms: Date.now() - 60000, tasks: 10000,
                tasks_done: 9000, reduces: 40, reduces_done: 0, shuffle_bytes: 0, data_local: 8000,
                data_remote: 1000, bytes_local: 0, bytes_remote: 0, attempts, running: [] });
              const state = { unix_ms: Date.now(), cluster: { scheduler: "hadoop", reduce_placement: "spread",
                workers_configured: 100, workers_alive: 100, slots_alive: 400, pending_tasks: 1000,
                maps_rerun: 0, blocks_copied: 0 }, scheduler: { policy: "hadoop" }, workers,
                jobs: [...Array(1000)].map((_, i) => job(1000 - i, [])) };
              const attempts = [...Array(10000)].map((_, i) => ({ task: i, kind: i % 50 ? "map" : "reduce",
                attempt: 0, worker: "w" + (i % 100), slot: (i >> 7) % 4, locality: i % 7 ? "data-local" : "data-remote",
                source: "w" + ((i + 1) % 100), block: "x.b" + i, start_ms: (i >> 9) * 3000, end_ms: (i >> 9) * 3000 + 2500,
                input_bytes: 8e6, local_bytes: 8e6, remote_bytes: 0, ok: i % 97 != 0 }));
              const t0 = performance.now();
              render(state);
              const t1 = performance.now();
              drawGantt(job(1, attempts));
              const t2 = performance.now();
              return JSON.stringify({ render_ms: t1 - t0, gantt_ms: t2 - t1,
                rows: document.querySelectorAll('#workers tbody tr').length,
                jobs: document.querySelectorAll('#jobs tbody tr').length,
                bars: Number(document.getElementById('gantt').dataset.bars) });
            })()"#,
        )
        .await;
    let scale: Value = serde_json::from_str(scale.as_str().expect("the page ran it")).unwrap();
    eprintln!("dashboard at scale: {scale}");
    assert_eq!(scale["rows"], json!(100));
    assert_eq!(
        scale["jobs"],
        json!(501),
        "500 rows and a line for the older ones"
    );
    assert_eq!(scale["bars"], json!(10000));
}
