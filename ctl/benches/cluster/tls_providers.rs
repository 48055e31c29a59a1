//! Section 10e: what rustls itself costs per byte under the cryptography
//! provider the nodes run on (aws-lc-rs, `common::tls::load::provider`)
//! against ring, the one they ran on before, side by side in one run: a
//! server and a client connection in this process, joined by a buffer (no
//! socket, no cluster), the server sending 1 GiB in 256 KiB writes and the
//! client reading it all, both on one thread. CPU seconds per GB moved (one
//! seal and one open of every byte, and rustls's copies around them) is the
//! least a TLS sort pays per byte its workers send one another.

use common::bench::record;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::Connection;
use std::io::{Read, Write};
use std::sync::Arc;

const TOTAL: usize = 1 << 30;
const WRITE: usize = 256 << 10;

/// A connected server and client over `provider`, AES-128-GCM first as the
/// nodes order it (the handshake done through the buffer).
fn pair(mut provider: CryptoProvider) -> (Connection, Connection) {
    common::tls::load::aes_128_first(&mut provider);
    let provider = Arc::new(provider);
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert = CertificateDer::from(made.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let mut s = Connection::Server(rustls::ServerConnection::new(Arc::new(server)).unwrap());
    let mut c = Connection::Client(rustls::ClientConnection::new(Arc::new(client), name).unwrap());
    let (mut wire, mut sink) = (Vec::new(), vec![0u8; WRITE]);
    while c.is_handshaking() || s.is_handshaking() {
        move_records(&mut c, &mut s, &mut wire, &mut sink);
        move_records(&mut s, &mut c, &mut wire, &mut sink);
    }
    assert_eq!(
        s.negotiated_cipher_suite().map(|x| x.suite()),
        Some(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
    );
    s.set_buffer_limit(None);
    (s, c)
}

/// Everything `from` has to send, read by `to`: the plaintext bytes `to`
/// yields (read into `sink`).
fn move_records(
    from: &mut Connection,
    to: &mut Connection,
    wire: &mut Vec<u8>,
    sink: &mut [u8],
) -> usize {
    wire.clear();
    while from.wants_write() {
        from.write_tls(wire).unwrap();
    }
    let (mut rest, mut got) = (&wire[..], 0);
    while !rest.is_empty() {
        to.read_tls(&mut rest).unwrap();
        to.process_new_packets().unwrap();
        loop {
            match to.reader().read(sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
    }
    got
}

/// CPU seconds per GB that 1 GiB sent and received through `provider`'s
/// rustls costs, on this thread.
fn cpu_per_gb(provider: CryptoProvider) -> f64 {
    let (mut s, mut c) = pair(provider);
    let (chunk, mut sink, mut wire) = (vec![0x5au8; WRITE], vec![0u8; WRITE], Vec::new());
    let start = thread_cpu_s();
    let (mut sent, mut got) = (0, 0);
    while sent < TOTAL {
        s.writer().write_all(&chunk).unwrap();
        sent += chunk.len();
        got += move_records(&mut s, &mut c, &mut wire, &mut sink);
    }
    assert_eq!(got, TOTAL);
    (thread_cpu_s() - start) / (TOTAL as f64 / 1e9)
}

/// This thread's CPU seconds so far.
fn thread_cpu_s() -> f64 {
    // SAFETY: clock_gettime only writes the struct it is handed.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the thread CPU clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// aws-lc-rs against ring, three passes each in turn; the least CPU of each
/// (the pass least disturbed by anything else on the machine).
pub fn tls_provider_bench() {
    let (mut aws, mut ring) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        aws = aws.min(cpu_per_gb(rustls::crypto::aws_lc_rs::default_provider()));
        ring = ring.min(cpu_per_gb(rustls::crypto::ring::default_provider()));
    }
    println!(
        "10e. rustls, 1 GiB sent and received in one process (AES-128-GCM): aws-lc-rs {aws:.3} s of CPU per GB, \
         ring {ring:.3} s; aws-lc-rs / ring {:.2}",
        aws / ring
    );
    let what = "rustls, 1 GiB sent and received through a buffer on one thread, AES-128-GCM: CPU seconds per GB";
    record(
        "tls.provider.aws_lc_s_per_gb",
        &format!("{what}, aws-lc-rs (the nodes' provider)"),
        aws,
        "s",
        "",
    );
    record(
        "tls.provider.ring_s_per_gb",
        &format!("{what}, ring"),
        ring,
        "s",
        "",
    );
    record(
        "tls.provider.ratio",
        &format!("{what}: aws-lc-rs / ring"),
        aws / ring,
        "x",
        "<= 1",
    );
}
