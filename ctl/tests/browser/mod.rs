//! A headless Chromium for the tests that read pages as a person sees
//! them (the dashboard, the results browser): started on a DevTools port of
//! loopback, driven over the DevTools protocol, killed when dropped.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// The first Chromium on PATH.
pub fn chromium() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(str::to_owned)
}

/// A headless browser, killed when dropped.
pub struct Browser {
    child: Child,
    pub ws_url: String,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_browser(bin: &str) -> Browser {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "--window-size=1400,1100",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if let Some(i) = line.find("ws://") {
                let _ = tx.send(line[i..].trim().to_owned());
            }
        }
    });
    let ws_url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("chromium printed its DevTools address");
    Browser {
        child,
        ws_url,
        _profile: profile,
    }
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A DevTools protocol connection: numbered calls, answers matched by id.
pub struct Cdp {
    pub ws: Ws,
    pub next: u64,
    pub session: Option<String>,
}

impl Cdp {
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).await.unwrap();
        loop {
            let m = tokio::time::timeout(Duration::from_secs(30), self.ws.next())
                .await
                .expect("DevTools answers")
                .unwrap()
                .unwrap();
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// Evaluates `expr` in the page; its value (JSON).
    pub async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expr, "returnByValue": true }),
            )
            .await;
        r["result"]["value"].clone()
    }
}

/// Opens `url` in a new tab of `b`.
pub async fn open(b: &Browser, url: &str) -> Cdp {
    let (ws, _) = tokio_tungstenite::connect_async(&b.ws_url).await.unwrap();
    let mut cdp = Cdp {
        ws,
        next: 0,
        session: None,
    };
    let target = cdp.call("Target.createTarget", json!({ "url": url })).await;
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        )
        .await;
    cdp.session = Some(attached["sessionId"].as_str().unwrap().to_owned());
    cdp
}

/// Saves the page as `target/tmp/<name>` (a test artefact).
pub async fn screenshot(cdp: &mut Cdp, name: &str) {
    let shot = cdp
        .call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        )
        .await;
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, &png).unwrap();
    eprintln!("screenshot: {}", path.display());
}
