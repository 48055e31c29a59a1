//! The `masterd` binary: started as a real process on loopback with a
//! cluster.toml of its own, it serves the API (with the token, and not
//! without it), keeps its journal where the config says, and stops cleanly
//! on SIGTERM; a bad config is refused with exit status 2 and the key named.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn config(port: u16) -> String {
    format!(
        r#"
[cluster]
token = "secret-t"
replication = 1
[master]
listen = "127.0.0.1:{port}"
[workers]
slots = 1
[[worker]]
name = "w1"
listen = "127.0.0.1:{w}"
"#,
        w = free_port()
    )
}

/// The status line of GET `path` (with the token when given).
fn get(port: u16, path: &str, token: Option<&str>) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out.lines().next().unwrap_or_default().to_string())
}

/// Killed if a test fails before it stopped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn masterd_serves_the_api_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    std::fs::write(dir.path().join("cluster.toml"), config(port)).unwrap();
    let mut d = Daemon(
        Command::new(env!("CARGO_BIN_EXE_masterd"))
            .arg("--config")
            .arg(dir.path().join("cluster.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let status = loop {
        match get(port, "/v1/workers", Some("secret-t")) {
            Ok(s) if !s.is_empty() => break s,
            _ if start.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            r => panic!("masterd did not answer on port {port}: {r:?}"),
        }
    };
    assert!(status.contains(" 200 "), "{status}");
    let refused = get(port, "/v1/workers", None).unwrap();
    assert!(refused.contains(" 401 "), "without the token: {refused}");
    assert!(
        dir.path().join("run/master/journal.jsonl").is_file(),
        "the journal beside cluster.toml, as master.journal's default says"
    );
    let pid = nix::unistd::Pid::from_raw(d.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let start = Instant::now();
    let exit = loop {
        if let Some(s) = d.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "masterd still runs 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "after SIGTERM: {exit}");
}

#[test]
fn masterd_refuses_a_bad_config_with_status_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = config(free_port()).replace("replication = 1", "replication = \"two\"");
    std::fs::write(dir.path().join("cluster.toml"), bad).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_masterd"))
        .arg("--config")
        .arg(dir.path().join("cluster.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cluster.replication"), "{err}");
}

#[test]
fn masterd_names_a_bad_option_and_prints_its_help() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_masterd"))
            .args(args)
            .output()
            .unwrap()
    };
    for (args, needle) in [
        (&["--frobnicate"][..], "unknown option \"--frobnicate\""),
        (&["--listen", "nowhere"][..], "--listen \"nowhere\""),
        (
            &["--scheduler=no-such-policy"][..],
            "--scheduler \"no-such-policy\"",
        ),
        (&["--config"][..], "--config needs a value"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let help = run(&["--help"]);
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Usage: masterd") && text.contains("--journal-recover"),
        "{text}"
    );
}
