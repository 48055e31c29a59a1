//! The transport of external policies (`sched::policy::external`): one
//! connection to `unix:<path>` or `tcp:<host>:<port>`, kept open, each
//! request a line of JSON answered by a line of JSON. Blocking, with a
//! deadline per call: the scheduler's `offer` is synchronous, and the
//! deadline (`timeout_ms`) bounds how long its caller waits. After a
//! timeout or a broken connection the connection is dropped (a late reply
//! must not be read as the next one's) and the next call connects again.
//! [`install`] makes this the process's connector. `tls:<host>:<port>` is
//! the TCP form over TLS: the policy's certificate must verify for `host`
//! against the authority given to [`trust`] (the cluster's `ca.pem`).

use sched::policy::external::{parse_address, Address, CallError, Connect, PolicyCall};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// The longest reply line read (a launch list is small; a policy that
/// never ends its line must not fill the master's memory).
pub const MAX_REPLY_BYTES: usize = 16 << 20;

/// Opens sockets (see the module documentation).
pub struct SocketConnector;

/// Makes [`SocketConnector`] this process's connector (false if one was
/// installed before).
pub fn install() -> bool {
    sched::policy::external::install_connector(Box::new(SocketConnector))
}

#[cfg(feature = "tls")]
static TRUSTED: std::sync::OnceLock<std::sync::Arc<rustls::ClientConfig>> =
    std::sync::OnceLock::new();

/// The authority `tls:` policy addresses are checked against (the
/// cluster's, set once at start-up; false if one was set before).
#[cfg(feature = "tls")]
pub fn trust(tls: &crate::tls::load::ClientTls) -> bool {
    TRUSTED.set(std::sync::Arc::new(tls.config())).is_ok()
}

#[cfg(feature = "tls")]
type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;
#[cfg(not(feature = "tls"))]
type TlsStream = TcpStream;

/// A TCP connection to `hp`, the first of its addresses that answers.
fn tcp(hp: &str, timeout: Duration) -> std::io::Result<TcpStream> {
    let mut last = None;
    for sa in hp.to_socket_addrs()? {
        match TcpStream::connect_timeout(&sa, timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(ErrorKind::NotFound, format!("{hp} resolves to nothing"))
    }))
}

/// `tls:<hp>`: TCP, then TLS trusting [`trust`]'s authority for the host.
#[cfg(feature = "tls")]
fn tls(hp: &str, timeout: Duration) -> std::io::Result<TlsStream> {
    let other = |m: String| std::io::Error::other(m);
    let config = TRUSTED.get().cloned().ok_or_else(|| {
        other(format!(
            "tls:{hp}: this process trusts no authority ([tls] enabled = true in cluster.toml)"
        ))
    })?;
    let host = hp.rsplit_once(':').map_or(hp, |(h, _)| h);
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| other(format!("tls:{hp}: {e}")))?;
    let conn =
        rustls::ClientConnection::new(config, name).map_err(|e| other(format!("tls:{hp}: {e}")))?;
    let mut s = rustls::StreamOwned::new(conn, tcp(hp, timeout)?);
    // The handshake now, within the timeout: a certificate refused is
    // said as such, not as a broken first request.
    s.sock.set_read_timeout(Some(timeout))?;
    s.sock.set_write_timeout(Some(timeout))?;
    while s.conn.is_handshaking() {
        s.conn
            .complete_io(&mut s.sock)
            .map_err(|e| other(format!("TLS handshake with {hp}: {e}")))?;
    }
    Ok(s)
}

#[cfg(not(feature = "tls"))]
fn tls(hp: &str, _timeout: Duration) -> std::io::Result<TlsStream> {
    Err(std::io::Error::new(
        ErrorKind::Unsupported,
        format!("tls:{hp}: built without TLS"),
    ))
}

impl Connect for SocketConnector {
    fn connect(&self, address: &str, timeout_ms: u64) -> Box<dyn PolicyCall> {
        Box::new(SocketCall {
            name: address.to_owned(),
            address: parse_address(address),
            timeout: Duration::from_millis(timeout_ms.max(1)),
            conn: None,
            buf: Vec::new(),
        })
    }
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(Box<TlsStream>),
}

impl Stream {
    fn open(a: &Address, timeout: Duration) -> std::io::Result<Stream> {
        match a {
            Address::InProcess(n) => Err(std::io::Error::new(
                ErrorKind::Unsupported,
                format!("inproc:{n} is a policy inside another process (the Python package's simulator); this one has none"),
            )),
            Address::Unix(p) => UnixStream::connect(p).map(Stream::Unix),
            Address::Tcp(hp) => tcp(hp, timeout).map(Stream::Tcp),
            Address::Tls(hp) => tls(hp, timeout).map(|s| Stream::Tls(Box::new(s))),
        }
    }

    fn set_timeouts(&self, t: Duration) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            Stream::Tls(s) => {
                let sock = tcp_of(s);
                sock.set_read_timeout(Some(t))?;
                sock.set_write_timeout(Some(t))
            }
        }
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.write_all(b),
            Stream::Tcp(s) => s.write_all(b),
            Stream::Tls(s) => s.write_all(b).and_then(|()| s.flush()),
        }
    }

    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(b),
            Stream::Tcp(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
        }
    }
}

#[cfg(feature = "tls")]
fn tcp_of(s: &TlsStream) -> &TcpStream {
    &s.sock
}

#[cfg(not(feature = "tls"))]
fn tcp_of(s: &TlsStream) -> &TcpStream {
    s
}

struct SocketCall {
    name: String,
    address: Result<Address, String>,
    timeout: Duration,
    conn: Option<Stream>,
    /// Bytes read past the last reply's newline (a policy writes one reply
    /// per request, so normally none).
    buf: Vec<u8>,
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl SocketCall {
    fn exchange(&mut self, request: &str, deadline: Instant) -> Result<String, CallError> {
        let timeout_ms = self.timeout.as_millis() as u64;
        let left = |d: Instant| d.saturating_duration_since(Instant::now());
        let io = |e: std::io::Error, what: &str| {
            if timed_out(&e) {
                CallError::Timeout(timeout_ms)
            } else {
                CallError::Unreachable(format!("{what}: {e}"))
            }
        };
        if self.conn.is_none() {
            let address = self
                .address
                .as_ref()
                .map_err(|e| CallError::Unreachable(e.clone()))?;
            let s = Stream::open(address, self.timeout)
                .map_err(|e| io(e, &format!("connecting to {}", self.name)))?;
            self.buf.clear();
            self.conn = Some(s);
        }
        let conn = self.conn.as_mut().expect("connected above");
        conn.set_timeouts(left(deadline).max(Duration::from_millis(1)))
            .map_err(|e| io(e, "setting timeouts"))?;
        let mut line = Vec::with_capacity(request.len() + 1);
        line.extend_from_slice(request.as_bytes());
        line.push(b'\n');
        conn.write_all(&line).map_err(|e| io(e, "sending"))?;
        let mut chunk = [0u8; 64 << 10];
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let rest = self.buf.split_off(end + 1);
                let mut reply = std::mem::replace(&mut self.buf, rest);
                reply.pop();
                return String::from_utf8(reply)
                    .map_err(|_| CallError::Unreachable("the reply is not UTF-8".into()));
            }
            if self.buf.len() > MAX_REPLY_BYTES {
                return Err(CallError::Unreachable(format!(
                    "the reply line is longer than {MAX_REPLY_BYTES} bytes"
                )));
            }
            let l = left(deadline);
            if l.is_zero() {
                return Err(CallError::Timeout(timeout_ms));
            }
            conn.set_timeouts(l)
                .map_err(|e| io(e, "setting timeouts"))?;
            match conn.read(&mut chunk) {
                Ok(0) => {
                    return Err(CallError::Unreachable(
                        "the policy closed the connection".into(),
                    ))
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e, "reading the reply")),
            }
        }
    }
}

impl PolicyCall for SocketCall {
    fn call(&mut self, request: &str) -> Result<String, CallError> {
        let deadline = Instant::now() + self.timeout;
        let r = self.exchange(request, deadline);
        if r.is_err() {
            // The stream may hold half a reply, or a late one: start over.
            self.conn = None;
            self.buf.clear();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::os::unix::net::UnixListener;

    /// A policy on a Unix socket answering each line with `answer(line)`
    /// after `delay`, for `n` connections.
    fn serve(
        path: &std::path::Path,
        n: usize,
        delay: Duration,
        answer: fn(&str) -> String,
    ) -> std::thread::JoinHandle<()> {
        let l = UnixListener::bind(path).unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().take(n) {
                let s = s.unwrap();
                let mut w = s.try_clone().unwrap();
                for line in BufReader::new(s).lines() {
                    let Ok(line) = line else { break };
                    std::thread::sleep(delay);
                    if w.write_all(format!("{}\n", answer(&line)).as_bytes())
                        .is_err()
                    {
                        break;
                    }
                }
            }
        })
    }

    #[test]
    fn a_call_is_a_line_out_and_a_line_back_on_one_connection() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.sock");
        let t = serve(&p, 1, Duration::ZERO, |l| format!("echo {l}"));
        let mut c = SocketConnector.connect(&format!("unix:{}", p.display()), 1_000);
        for i in 0..3 {
            assert_eq!(
                c.call(&format!("req {i}")).unwrap(),
                format!("echo req {i}")
            );
        }
        drop(c);
        t.join().unwrap();
    }

    #[test]
    fn a_slow_policy_times_out_and_the_next_call_starts_a_new_connection() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.sock");
        let _t = serve(&p, 2, Duration::from_millis(300), |l| l.to_owned());
        let mut c = SocketConnector.connect(&format!("unix:{}", p.display()), 50);
        let t0 = Instant::now();
        assert_eq!(c.call("a"), Err(CallError::Timeout(50)));
        assert!(
            t0.elapsed() < Duration::from_millis(250),
            "{:?}",
            t0.elapsed()
        );
        // Not "a": the late reply went with the old connection.
        let mut c2 = SocketConnector.connect(&format!("unix:{}", p.display()), 2_000);
        assert_eq!(c2.call("b").unwrap(), "b");
    }

    #[test]
    fn nothing_listening_is_unreachable_and_a_closed_connection_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("none.sock");
        let mut c = SocketConnector.connect(&format!("unix:{}", p.display()), 100);
        match c.call("x") {
            Err(CallError::Unreachable(e)) => assert!(e.contains("connecting"), "{e}"),
            other => panic!("{other:?}"),
        }
        let mut c = SocketConnector.connect("tcp:127.0.0.1:1", 100);
        assert!(matches!(c.call("x"), Err(CallError::Unreachable(_))));
        let mut c = SocketConnector.connect("nonsense", 100);
        match c.call("x") {
            Err(CallError::Unreachable(e)) => assert!(e.contains("neither unix:"), "{e}"),
            other => panic!("{other:?}"),
        }
        // A policy that closes without answering.
        let p = dir.path().join("closer.sock");
        let l = UnixListener::bind(&p).unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&s).read_line(&mut line).unwrap();
        });
        let mut c = SocketConnector.connect(&format!("unix:{}", p.display()), 1_000);
        match c.call("x") {
            Err(CallError::Unreachable(e)) => assert!(e.contains("closed the connection"), "{e}"),
            other => panic!("{other:?}"),
        }
        t.join().unwrap();
    }

    #[test]
    fn tcp_on_loopback_works_the_same() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            for line in BufReader::new(s).lines() {
                let Ok(line) = line else { break };
                w.write_all(format!("{}!\n", line).as_bytes()).unwrap();
            }
        });
        let mut c = SocketConnector.connect(&format!("tcp:127.0.0.1:{port}"), 1_000);
        assert_eq!(c.call("hi").unwrap(), "hi!");
        assert_eq!(c.call("again").unwrap(), "again!");
        drop(c);
        t.join().unwrap();
    }
}
