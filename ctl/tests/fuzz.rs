//! Seeded fuzzing of everything the processes decode from outside: every
//! TOML file format (cluster.toml, experiment specs, simulation sweeps) and
//! the HTTP requests of the master's and the workers' APIs, sent to real
//! servers on loopback. Inputs are random mutations of valid ones (bytes
//! flipped, cut, repeated, numbers replaced by extremes, stray syntax).
//!
//! Properties: a TOML file either loads or gives an error that names the
//! file, never a panic; an HTTP request is answered 2xx or 4xx, never 5xx
//! and never a dropped connection, and the servers keep answering.

use common::config::ClusterConfig;
use common::tomlfile::{self, FileError};
use ctl::experiment::spec::Spec;
use ctl::simulation::sweep::SweepSpec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

mod support;

const TOKEN: &str = "fuzz-token";

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "1e-300",
    "nan",
    "inf",
    "-0.0",
    "0.5",
];

const STRAY: &[&str] = &[
    "\"", "{", "}", "[", "]", "=", ",", "\n", "\0", "\\", "'", "null", "true", "\"x\"", "[[a]]",
    "\u{202e}", "é",
];

/// One to three random edits of `input`.
fn mutate(rng: &mut ChaCha8Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..rng.gen_range(1..=3) {
        let n = v.len().max(1);
        match rng.gen_range(0..6) {
            0 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] = rng.gen();
            }
            1 if !v.is_empty() => {
                let a = rng.gen_range(0..v.len());
                let b = (a + rng.gen_range(1..=16)).min(v.len());
                v.drain(a..b);
            }
            2 if !v.is_empty() => {
                let a = rng.gen_range(0..v.len());
                let b = (a + rng.gen_range(1..=64)).min(v.len());
                let piece = v[a..b].to_vec();
                v.splice(b..b, piece);
            }
            3 => {
                // A number (a run of digits) replaced by an extreme.
                let starts: Vec<usize> = (0..v.len())
                    .filter(|&i| v[i].is_ascii_digit() && (i == 0 || !v[i - 1].is_ascii_digit()))
                    .collect();
                if starts.is_empty() {
                    continue;
                }
                let a = starts[rng.gen_range(0..starts.len())];
                let b = (a..v.len())
                    .find(|&i| !v[i].is_ascii_digit() && v[i] != b'.')
                    .unwrap_or(v.len());
                let x = EXTREMES[rng.gen_range(0..EXTREMES.len())];
                v.splice(a..b, x.bytes());
            }
            4 => {
                let i = rng.gen_range(0..=v.len());
                let s = STRAY[rng.gen_range(0..STRAY.len())];
                v.splice(i..i, s.bytes());
            }
            _ => v.truncate(rng.gen_range(0..n)),
        }
    }
    v
}

/// `load` on mutations of `text`: never a panic, and an error names the file.
fn fuzz_toml<T>(
    rng: &mut ChaCha8Rng,
    path: &Path,
    text: &str,
    rounds: usize,
    load: impl Fn(&str, &Path) -> Result<T, FileError>,
) -> (usize, usize) {
    let (mut ok, mut bad) = (0, 0);
    for _ in 0..rounds {
        let m = mutate(rng, text.as_bytes());
        let Ok(t) = String::from_utf8(m) else {
            continue; // files are read as UTF-8 first; that error is the reader's
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(&t, path)));
        match r {
            Err(_) => panic!("{} panicked on:\n{t}", path.display()),
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(&path.display().to_string()), "{msg}");
                bad += 1;
            }
        }
    }
    (ok, bad)
}

#[test]
fn every_toml_format_survives_mutations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0xf022);
    let cluster = root.join("cluster.toml");
    let text = std::fs::read_to_string(&cluster).unwrap();
    let (ok, bad) = fuzz_toml(&mut rng, &cluster, &text, 3000, |t, p| {
        ClusterConfig::parse(t, p)
    });
    // The mutations reach both sides, each in at least a quarter of the
    // rounds. (The split is near half and half, and moves with the length
    // of the file's comments, where a mutation changes nothing: "most are
    // refused" failed on a reworded comment.)
    let all = ok + bad;
    assert!(
        ok * 4 > all && bad * 4 > all,
        "cluster.toml: {ok} loaded, {bad} refused"
    );
    let mut specs: Vec<PathBuf> = std::fs::read_dir(root.join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    specs.sort();
    assert!(specs.len() > 5);
    for p in &specs {
        let text = std::fs::read_to_string(p).unwrap();
        let sim = p.file_name().unwrap().to_string_lossy().starts_with("sim-");
        let (ok, bad) = if sim {
            fuzz_toml(&mut rng, p, &text, 400, |t, p| {
                tomlfile::parse::<SweepSpec>(t, p)
            })
        } else {
            fuzz_toml(&mut rng, p, &text, 400, Spec::parse)
        };
        eprintln!("{}: {ok} loaded, {bad} refused", p.display());
        assert!(bad > 0, "{}: {ok} loaded, {bad} refused", p.display());
    }
}

/// A request to send: method, URL, headers, body.
type Req = (reqwest::Method, String, Vec<(String, String)>, Vec<u8>);

/// The requests the fuzzer mutates: one of each kind the master and a
/// worker take (`ID` stands for a block id).
fn seed_requests(master: &str, worker: &str) -> Vec<Req> {
    let json = |s: &str| s.as_bytes().to_vec();
    vec![
        (
            reqwest::Method::POST,
            format!("{master}/v1/jobs"),
            vec![],
            json(
                r#"{"workload":"wordcount","input":"f","reduces":2,"output":"o1","group":"g","name":"n","compute":{"min_ms":1,"max_ms":5,"seed":1}}"#,
            ),
        ),
        (
            reqwest::Method::POST,
            format!("{master}/v1/workers/heartbeat"),
            vec![],
            json(
                r#"{"worker":7,"free_slots":2,"running":[{"task":{"job":1,"index":0},"attempt":0}],"results":[],"busy":[{"elapsed_ms":5,"remaining_ms":null}],"disk_free_bytes":100}"#,
            ),
        ),
        (
            reqwest::Method::POST,
            format!("{master}/v1/workers/register"),
            vec![],
            json(
                r#"{"name":"nobody","addr":"http://127.0.0.1:9","slots":2,"protocol":1,"blocks":[{"id":"f.b00000","file":"f","index":0,"file_blocks":2,"len":65536,"digest":"00"}]}"#,
            ),
        ),
        (
            reqwest::Method::PUT,
            format!("{master}/v1/files/f/replication"),
            vec![],
            json(r#"{"replication":2}"#),
        ),
        (
            reqwest::Method::PUT,
            format!("{worker}/blocks/ID"),
            vec![
                (common::wire::BLOCK_DIGEST_HEADER.into(), "0".repeat(64)),
                (common::wire::BLOCK_FILE_HEADER.into(), "g".into()),
                (common::wire::BLOCK_INDEX_HEADER.into(), "0".into()),
                (common::wire::BLOCK_FILE_BLOCKS_HEADER.into(), "1".into()),
            ],
            b"some block bytes".to_vec(),
        ),
        (
            reqwest::Method::GET,
            format!("{worker}/blocks/ID"),
            vec![("range".into(), "bytes=10-20".into())],
            vec![],
        ),
        (
            reqwest::Method::GET,
            format!("{worker}/shuffle/1/0/0/run?lo=00&hi=ff"),
            vec![],
            vec![],
        ),
        (
            reqwest::Method::GET,
            format!("{worker}/shuffle/1/0/0/lines?lo=0a&hi=ff00"),
            vec![],
            vec![],
        ),
        (
            reqwest::Method::GET,
            format!("{worker}/timeline?since_ms=100"),
            vec![],
            vec![],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_never_get_a_server_error() {
    let dir = tempfile::tempdir().unwrap();
    let c = support::start_cluster(dir.path(), TOKEN, 2, &[None, None], 50).await;
    let master = c.client.base().to_owned();
    let worker = format!("http://{}", c.workers[0].addr);
    // A real file to aim at.
    ctl::ops::loader::load(
        &c.client,
        &ctl::ops::loader::LoadSpec {
            name: "f".into(),
            source: ctl::ops::loader::Source::Generate {
                kind: ctl::ops::loader::Generator::Text,
                blocks: 2,
            },
            block_size: 64 << 10,
            replication: 2,
            seed: 1,
            placement: Default::default(),
        },
    )
    .await
    .unwrap();
    let block = common::BlockId::for_file("f", 0).unwrap();
    let odd_ids = [
        block.to_string(),
        "f.b99999".into(),
        "..".into(),
        "%2e%2e".into(),
        "x".repeat(3000),
        "f.b-1".into(),
        "f.b4294967296".into(),
        "%00".into(),
    ];
    let seeds = seed_requests(&master, &worker);
    let http = common::http_client::plain();
    let mut rng = ChaCha8Rng::seed_from_u64(0x4771);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for i in 0..1500 {
        let (method, url, headers, body) = &seeds[rng.gen_range(0..seeds.len())];
        let id = &odd_ids[rng.gen_range(0..odd_ids.len())];
        let url = url.replace("ID", id);
        let mut req = http
            .request(method.clone(), &url)
            .header("authorization", format!("Bearer {TOKEN}"));
        if url.starts_with(&master) {
            req = req.header("content-type", "application/json");
        }
        for (k, v) in headers {
            let v = if rng.gen_bool(0.5) {
                String::from_utf8_lossy(&mutate(&mut rng, v.as_bytes())).into_owned()
            } else {
                v.clone()
            };
            req = req.header(k, v.replace(['\r', '\n', '\0'], ""));
        }
        let body = if body.is_empty() || rng.gen_bool(0.1) {
            body.clone()
        } else {
            mutate(&mut rng, body)
        };
        let Ok(req) = req.body(body.clone()).build() else {
            continue; // not a request a client can send
        };
        let resp = http
            .execute(req)
            .await
            .unwrap_or_else(|e| panic!("request {i} {method} {url}: no answer: {e}"));
        let status = resp.status().as_u16();
        *statuses.entry(status).or_default() += 1;
        assert!(
            status < 500,
            "request {i}: {method} {url} with {:?} got {status}: {}",
            String::from_utf8_lossy(&body),
            resp.text().await.unwrap_or_default()
        );
    }
    // Both servers still answer, and the mutations reached both sides.
    assert!(c.client.cluster().await.is_ok());
    let status = http
        .get(format!("{worker}/status"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success());
    let ok: usize = statuses.range(200..300).map(|(_, n)| n).sum();
    let refused: usize = statuses.range(400..500).map(|(_, n)| n).sum();
    eprintln!("statuses: {statuses:?}");
    assert!(ok > 0 && refused > 0, "{statuses:?}");
}
