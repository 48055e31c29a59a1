//! Credentials per role on a real cluster (issue 64, item 2): every route
//! of the master and of a worker tried with no credential, an unknown one,
//! the administrator's and each role's (the table is printed), and a
//! rotation of the worker and client secrets without restarting anything.

#[path = "support/mod.rs"]
mod support;

use common::config::Role as Placement;
use common::credentials::CredentialsSection;
use std::time::Duration;

const ADMIN: &str = "admin-secret";

fn section(worker: &[&str], client: &[&str], read: &[&str]) -> CredentialsSection {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
    CredentialsSection {
        worker: v(worker),
        client: v(client),
        read: v(read),
    }
}

/// The credentials tried, by column: (label, secret).
const CALLERS: [(&str, Option<&str>); 6] = [
    ("none", None),
    ("unknown", Some("nobody")),
    ("admin", Some(ADMIN)),
    ("worker", Some("w-1")),
    ("client", Some("c-1")),
    ("read", Some("r-1")),
];

/// A route and the roles that may call it (besides the administrator),
/// written here apart from the servers' rule tables.
struct Case {
    server: &'static str,
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    allowed: &'static [&'static str],
}

const READERS: &[&str] = &["client", "read"];

const CASES: &[Case] = &[
    Case {
        server: "master",
        method: "POST",
        path: "/v1/workers/register",
        body: Some("{}"),
        allowed: &["worker"],
    },
    Case {
        server: "master",
        method: "POST",
        path: "/v1/workers/heartbeat",
        body: Some("{}"),
        allowed: &["worker"],
    },
    Case {
        server: "master",
        method: "POST",
        path: "/v1/workers/commit",
        body: Some("{}"),
        allowed: &["worker"],
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/workers",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/files",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/files/none",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "DELETE",
        path: "/v1/files/none",
        body: None,
        allowed: &["client"],
    },
    Case {
        server: "master",
        method: "PUT",
        path: "/v1/files/none/replication",
        body: Some("{\"replication\": 1}"),
        allowed: &["client"],
    },
    Case {
        server: "master",
        method: "POST",
        path: "/v1/jobs",
        body: Some("{\"workload\": \"input-sink\", \"input\": \"none\"}"),
        allowed: &["client"],
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/jobs",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/jobs/999",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/decisions",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/cluster",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/metrics",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/whoami",
        body: None,
        allowed: &["worker", "client", "read"],
    },
    Case {
        server: "master",
        method: "GET",
        path: "/v1/nowhere",
        body: None,
        allowed: &["worker", "client", "read"],
    },
    Case {
        server: "worker",
        method: "GET",
        path: "/blocks",
        body: None,
        allowed: &["worker", "client"],
    },
    Case {
        server: "worker",
        method: "GET",
        path: "/blocks/none_0",
        body: None,
        allowed: &["worker", "client"],
    },
    Case {
        server: "worker",
        method: "PUT",
        path: "/blocks/none_0",
        body: Some(""),
        allowed: &["worker", "client"],
    },
    Case {
        server: "worker",
        method: "DELETE",
        path: "/blocks/none_0",
        body: None,
        allowed: &["client"],
    },
    Case {
        server: "worker",
        method: "POST",
        path: "/v1/heartbeat-now",
        body: None,
        allowed: &["worker"],
    },
    Case {
        server: "worker",
        method: "GET",
        path: "/status",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "worker",
        method: "GET",
        path: "/metrics",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "worker",
        method: "GET",
        path: "/timeline",
        body: None,
        allowed: READERS,
    },
    Case {
        server: "worker",
        method: "GET",
        path: "/shuffle/1/0/0/0",
        body: None,
        allowed: &["worker"],
    },
];

async fn call(http: &reqwest::Client, base: &str, c: &Case, secret: Option<&str>) -> (u16, String) {
    let method: reqwest::Method = c.method.parse().unwrap();
    let mut req = http.request(method, format!("{base}{}", c.path));
    if let Some(s) = secret {
        req = req.bearer_auth(s);
    }
    if let Some(b) = c.body {
        req = req.header("content-type", "application/json").body(b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_each_credential_by_its_role() {
    let dir = tempfile::tempdir().unwrap();
    let creds = section(&["w-1"], &["c-1"], &["r-1"]);
    let (m, w) = (creds.clone(), creds.clone());
    let cl = support::start_cluster_tuned(
        dir.path(),
        ADMIN,
        1,
        &[None],
        &[Placement::Both],
        50,
        move |s| s.credentials = m,
        move |o| o.credentials = w.clone(),
    )
    .await;
    let http = common::http_client::plain();
    let worker_url = cl.workers[0].url();
    let mut table = vec![format!(
        "| route | {} |",
        CALLERS.iter().map(|c| c.0).collect::<Vec<_>>().join(" | ")
    )];
    table.push(format!("|---|{}", "---|".repeat(CALLERS.len())));
    let mut wrong = Vec::new();
    for c in CASES {
        let base = if c.server == "master" {
            cl.client.base().to_string()
        } else {
            worker_url.clone()
        };
        let mut row = vec![format!("{} {} {}", c.server, c.method, c.path)];
        for (label, secret) in CALLERS {
            let (status, text) = call(&http, &base, c, secret).await;
            let refused_role = status == 403 && text.contains("credential has the");
            let ok = match label {
                "none" | "unknown" => status == 401,
                "admin" => status != 401 && !refused_role,
                role if c.allowed.contains(&role) => status != 401 && !refused_role,
                _ => refused_role,
            };
            if !ok {
                wrong.push(format!(
                    "{} {} {} as {label}: {status} {text}",
                    c.server, c.method, c.path
                ));
            }
            row.push(status.to_string());
        }
        table.push(format!("| {} |", row.join(" | ")));
    }
    println!("{}", table.join("\n"));
    assert!(
        wrong.is_empty(),
        "answers against the roles:\n{}",
        wrong.join("\n")
    );
    // Each credential is told its role (the dashboard refuses a link with
    // more than a read one).
    for (secret, role) in [
        (ADMIN, "admin"),
        ("w-1", "worker"),
        ("c-1", "client"),
        ("r-1", "read"),
    ] {
        let url = format!("{}/v1/whoami", cl.client.base());
        let r = http.get(&url).bearer_auth(secret).send().await.unwrap();
        let who: serde_json::Value = r.json().await.unwrap();
        assert_eq!(who["role"], role, "{secret}");
    }
    // A refusal names the role the credential has and the one needed.
    let submit = CASES
        .iter()
        .find(|c| c.method == "POST" && c.path == "/v1/jobs")
        .unwrap();
    let (_, text) = call(&http, cl.client.base(), submit, Some("r-1")).await;
    assert!(
        text.contains("read role") && text.contains("submit a job") && text.contains("client role"),
        "{text}"
    );
}

fn write_config(path: &std::path::Path, master_port: u16, creds: &CredentialsSection) {
    let list = |v: &[String]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "[cluster]\ntoken = \"{ADMIN}\"\nreplication = 1\n\n[master]\nlisten = \"127.0.0.1:{master_port}\"\n\n\
         [[worker]]\nname = \"w0\"\nlisten = \"127.0.0.1:0\"\n\n\
         [credentials]\nworker = [{}]\nclient = [{}]\nread = [{}]\n",
        list(&creds.worker),
        list(&creds.client),
        list(&creds.read)
    );
    // Written whole and renamed, as an operator's editor would: a reader
    // never sees half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn status(http: &reqwest::Client, url: &str, secret: &str) -> u16 {
    http.get(url)
        .bearer_auth(secret)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Waits until `url` answers `want` with `secret` (the servers re-read the
/// file every second).
async fn until(http: &reqwest::Client, url: &str, secret: &str, want: u16) {
    for _ in 0..100 {
        if status(http, url, secret).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} with {secret} never answered {want}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_rotate_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.toml");
    let first = section(&["w-1"], &["c-1"], &["r-1"]);
    write_config(&path, 1, &first);
    let (p1, p2) = (path.clone(), path.clone());
    let (m, w) = (first.clone(), first.clone());
    // The worker knows the administrator's secret only as its hash, so it
    // can reach the master with nothing but a worker secret.
    let admin_hash = format!(
        "sha256:{}",
        hex::encode(common::checksum::sha256(ADMIN.as_bytes()))
    );
    let cl = support::start_cluster_tuned(
        dir.path(),
        ADMIN,
        1,
        &[None],
        &[Placement::Both],
        50,
        move |s| {
            s.credentials = m;
            s.config_path = Some(p1);
            s.worker_timeout_ms = 1500;
        },
        move |o| {
            o.credentials = w.clone();
            o.config_path = Some(p2.clone());
            o.token = admin_hash.clone();
        },
    )
    .await;
    let http = common::http_client::plain();
    let jobs = format!("{}/v1/jobs", cl.client.base());
    let beat = format!("{}/v1/workers/heartbeat", cl.client.base());
    // 1. The new secrets first, the old ones still accepted.
    write_config(
        &path,
        1,
        &section(&["w-2", "w-1"], &["c-2", "c-1"], &["r-1"]),
    );
    until(&http, &jobs, "c-2", 200).await;
    assert_eq!(
        status(&http, &jobs, "c-1").await,
        200,
        "the old client secret in its grace period"
    );
    // 2. The old ones dropped: refused, and the worker, now sending w-2,
    // stays alive and runs a job.
    write_config(&path, 1, &section(&["w-2"], &["c-2"], &["r-1"]));
    until(&http, &jobs, "c-1", 401).await;
    let old = http
        .post(&beat)
        .bearer_auth("w-1")
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status().as_u16(), 401);
    tokio::time::sleep(Duration::from_millis(3000)).await; // two worker timeouts
    let c2 = ctl::ops::client::MasterClient::new(cl.client.base().to_string(), "c-2");
    assert_eq!(
        c2.cluster().await.unwrap().workers_alive,
        1,
        "the worker heartbeats with its new secret"
    );
    ctl::ops::loader::load(
        &c2,
        &ctl::ops::loader::LoadSpec {
            name: "rot".into(),
            source: ctl::ops::loader::Source::Generate {
                kind: ctl::ops::loader::Generator::Text,
                blocks: 2,
            },
            block_size: 1 << 16,
            replication: 1,
            seed: 1,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let id = c2
        .submit(&common::wire::JobSubmit::new(
            workloads::Workload::InputSink,
            "rot",
        ))
        .await
        .unwrap();
    let r = c2.wait_job(id).await.unwrap();
    assert_eq!(r.state, common::wire::JobState::Succeeded, "{r:?}");
}

/// Every route either server describes has a rule (a new route cannot
/// slip past the roles), but the public ones: the API description and the
/// dashboard's page.
#[test]
fn every_described_route_has_a_rule() {
    let public = [
        "/v1/openapi.json",
        "/",
        "/ui",
        "/ui/app.js",
        "/ui/style.css",
    ];
    for (server, doc, rules) in [
        (
            "master",
            master::http::openapi_json(),
            master::access::RULES,
        ),
        ("worker", worker::http::openapi_json(), worker::http::RULES),
    ] {
        let doc: serde_json::Value = serde_json::from_str(doc).unwrap();
        let mut described = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in ["get", "put", "post", "delete", "patch"] {
                if item.get(method).is_none() || public.contains(&path.as_str()) {
                    continue;
                }
                described += 1;
                assert!(
                    rules
                        .iter()
                        .any(|r| r.path == path && r.method.eq_ignore_ascii_case(method)),
                    "{server}: {method} {path} has no rule"
                );
            }
        }
        assert!(described >= 10, "{server}: {described} routes described");
    }
}
