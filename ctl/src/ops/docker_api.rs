//! The few calls of the Docker Engine API the master needs to start and
//! stop public instances as containers, over the engine's Unix socket
//! (the container mode mounts it into the master's container, whose image
//! holds no `docker` client). Blocking: the provisioner runs on a blocking
//! thread. Requests are HTTP/1.0, so every answer ends with the connection
//! and is never chunked.

use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// A Docker engine at a Unix socket.
#[derive(Clone, Debug)]
pub struct Engine {
    socket: PathBuf,
}

/// One container to create and start.
#[derive(Clone, Debug)]
pub struct ContainerSpec<'a> {
    pub name: &'a str,
    pub image: &'a str,
    pub cmd: Vec<String>,
    /// `host path:container path[:ro]`.
    pub binds: Vec<String>,
    pub network: &'a str,
    pub ip: std::net::Ipv4Addr,
    pub labels: Vec<(String, String)>,
}

impl Engine {
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Engine {
            socket: socket.into(),
        }
    }

    /// Sends one request; returns the status and the body.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> anyhow::Result<(u16, String)> {
        let mut s = UnixStream::connect(&self.socket).with_context(|| {
            format!(
                "connecting to the Docker engine at {}",
                self.socket.display()
            )
        })?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        s.set_write_timeout(Some(Duration::from_secs(10)))?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut req = format!("{method} {path} HTTP/1.0\r\nHost: docker\r\n");
        if !body.is_empty() {
            req += "Content-Type: application/json\r\n";
        }
        req += &format!("Content-Length: {}\r\n\r\n", body.len());
        s.write_all(req.as_bytes())?;
        s.write_all(body.as_bytes())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)
            .with_context(|| format!("reading the engine's answer to {method} {path}"))?;
        parse_response(&raw).with_context(|| format!("the engine's answer to {method} {path}"))
    }

    /// Creates and starts a container; returns its id. A container of the
    /// same name left by an earlier run is removed first.
    pub fn run(&self, c: &ContainerSpec) -> anyhow::Result<String> {
        self.remove(c.name)?;
        let labels: serde_json::Map<String, serde_json::Value> = c
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let body = serde_json::json!({
            "Image": c.image,
            "Cmd": c.cmd,
            "Env": ["NO_COLOR=1"],
            "Labels": labels,
            // The block cache locks what it holds, past RLIMIT_MEMLOCK.
            "HostConfig": {
                "Binds": c.binds,
                "NetworkMode": c.network,
                "CapAdd": ["IPC_LOCK"],
            },
            "NetworkingConfig": { "EndpointsConfig": { c.network: {
                "IPAMConfig": { "IPv4Address": c.ip.to_string() }
            }}},
        });
        let (status, text) = self.call(
            "POST",
            &format!("/containers/create?name={}", c.name),
            Some(&body),
        )?;
        if status != 201 {
            bail!(
                "creating container {}: {} ({status})",
                c.name,
                message(&text)
            );
        }
        let id = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["Id"].as_str().map(str::to_owned))
            .with_context(|| format!("creating container {}: no Id in {text:?}", c.name))?;
        let (status, text) = self.call("POST", &format!("/containers/{id}/start"), None)?;
        if status != 204 && status != 304 {
            let _ = self.remove(c.name);
            bail!(
                "starting container {}: {} ({status})",
                c.name,
                message(&text)
            );
        }
        Ok(id)
    }

    /// Stops (SIGTERM, then SIGKILL after `grace_s`) and removes a
    /// container; one that does not exist is not an error.
    pub fn stop_and_remove(&self, name: &str, grace_s: u32) -> anyhow::Result<()> {
        let (status, text) = self.call(
            "POST",
            &format!("/containers/{name}/stop?t={grace_s}"),
            None,
        )?;
        if !matches!(status, 204 | 304 | 404) {
            bail!("stopping container {name}: {} ({status})", message(&text));
        }
        self.remove(name)
    }

    /// Removes a container, running or not; absent is fine.
    pub fn remove(&self, name: &str) -> anyhow::Result<()> {
        let (status, text) =
            self.call("DELETE", &format!("/containers/{name}?force=true"), None)?;
        if !matches!(status, 204 | 404) {
            bail!("removing container {name}: {} ({status})", message(&text));
        }
        Ok(())
    }

    /// Whether the engine answers at the socket.
    pub fn ping(&self) -> anyhow::Result<()> {
        let (status, text) = self.call("GET", "/_ping", None)?;
        if status != 200 {
            bail!(
                "the Docker engine at {} answers {status}: {text}",
                self.socket.display()
            );
        }
        Ok(())
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

/// The engine's error text: `{"message": ...}`, else the body as it is.
fn message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned())
}

/// Status and body of a whole HTTP/1.x answer read to its end.
fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, String)> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of headers")?;
    let head = std::str::from_utf8(&raw[..split]).context("headers are not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.split_whitespace();
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        bail!("bad status line {status_line:?}");
    };
    if !version.starts_with("HTTP/1.") {
        bail!("bad status line {status_line:?}");
    }
    let status: u16 = code
        .parse()
        .with_context(|| format!("bad status line {status_line:?}"))?;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
            {
                bail!("a chunked answer to an HTTP/1.0 request");
            }
        }
    }
    let body = String::from_utf8_lossy(&raw[split + 4..]).into_owned();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed_and_errors_named() {
        let (s, b) = parse_response(
            b"HTTP/1.0 201 Created\r\nContent-Type: application/json\r\n\r\n{\"Id\":\"ab\"}",
        )
        .unwrap();
        assert_eq!((s, b.as_str()), (201, "{\"Id\":\"ab\"}"));
        let (s, b) =
            parse_response(b"HTTP/1.1 404 Not Found\r\n\r\n{\"message\":\"No such container: x\"}")
                .unwrap();
        assert_eq!(s, 404);
        assert_eq!(message(&b), "No such container: x");
        assert_eq!(message("plain\n"), "plain");
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello")
                .is_err()
        );
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn a_missing_socket_is_named() {
        let e = Engine::new("/nonexistent/docker.sock").ping().unwrap_err();
        assert!(
            format!("{e:#}").contains("/nonexistent/docker.sock"),
            "{e:#}"
        );
    }
}
