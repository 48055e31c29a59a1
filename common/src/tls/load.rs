//! The TLS files read into rustls configurations: what a server presents
//! ([`NodeTls`]) and what a client trusts ([`ClientTls`]). Every error names
//! the file and what is wrong with it.

use super::Files;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::Path;
use std::sync::Arc;

/// Why a node's or a client's TLS could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TLS: {0}")]
pub struct TlsError(pub String);

fn err(msg: impl Into<String>) -> TlsError {
    TlsError(msg.into())
}

/// The cryptography every configuration uses (aws-lc-rs), also installed as
/// the process's default so that a plain-HTTP client can be built. aws-lc
/// rather than ring: its AES-GCM uses the CPU's wide vector units (VAES with
/// AVX-512 where present), and rustls over it spent about 0.2 s of CPU per GB
/// sent and received against ring's 0.3 (docs/benchmarks.md, "What TLS
/// costs"), which is what TLS adds to a sort that keeps every core busy.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    aes_128_first(&mut p);
    // Already installed (by this or anything else): fine.
    let _ = p.clone().install_default();
    Arc::new(p)
}

/// Puts `p`'s AES-128-GCM suites (TLS 1.3's and 1.2's) first, the others
/// after in their order. Every node and client orders them so: as safe for
/// a cluster's links and cheaper per byte than AES-256, which matters where
/// blocks and shuffle data cross at the NIC's rate.
pub fn aes_128_first(p: &mut rustls::crypto::CryptoProvider) {
    p.cipher_suites.sort_by_key(|s| {
        s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
            && s.suite() != rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    });
}

/// The certificates of a PEM file, in order (a chain: the node's first).
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(format!("{}: {e}", path.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            err(format!(
                "{}: not a PEM certificate file: {e}",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(err(format!(
            "{}: holds no certificate (a PEM file with a CERTIFICATE block is expected)",
            path.display()
        )));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| err(format!("{}: no private key read: {e}", path.display())))
}

fn roots(ca: &Path) -> Result<Arc<rustls::RootCertStore>, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for c in read_certs(ca)? {
        store
            .add(c)
            .map_err(|e| err(format!("{}: not a usable authority: {e}", ca.display())))?;
    }
    Ok(Arc::new(store))
}

/// What a client trusts: the cluster's authority only (no system roots).
#[derive(Clone, Debug)]
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
}

impl ClientTls {
    /// Trusts the authorities in `ca` (a PEM file).
    pub fn load(ca: &Path) -> Result<ClientTls, TlsError> {
        let mut config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| err(e.to_string()))?
            .with_root_certificates(roots(ca)?)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// A client that trusts no authority: plain HTTP only.
    pub fn trusting_nothing() -> ClientTls {
        static NONE: std::sync::OnceLock<ClientTls> = std::sync::OnceLock::new();
        NONE.get_or_init(|| {
            let config = rustls::ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .expect("aws-lc-rs supports the default versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            ClientTls {
                config: Arc::new(config),
            }
        })
        .clone()
    }

    /// The rustls configuration (for reqwest's preconfigured TLS).
    pub fn config(&self) -> rustls::ClientConfig {
        (*self.config).clone()
    }
}

/// What a node serves with (its certificate and key) and what it trusts
/// as a client of the others (the cluster's authority).
#[derive(Clone, Debug)]
pub struct NodeTls {
    pub server: Arc<rustls::ServerConfig>,
    pub client: ClientTls,
    /// 16 hex digits of a SHA-256 of the authority's certificate: the
    /// cluster's name under TLS (the master's journal records it).
    pub authority: String,
}

impl NodeTls {
    /// Reads `files` and checks that the node's certificate verifies
    /// against the authority for every name in `names` now, as its peers
    /// will check it: a certificate they would refuse is refused here.
    pub fn load(files: &Files, names: &[String]) -> Result<NodeTls, TlsError> {
        let chain = read_certs(&files.cert)?;
        let key = read_key(&files.key)?;
        check_chain(&files.ca, &files.cert, &chain, names)?;
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| err(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| {
                err(format!(
                    "{} with {}: {e}",
                    files.cert.display(),
                    files.key.display()
                ))
            })?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        let ca = read_certs(&files.ca)?;
        let digest = crate::checksum::sha256(ca[0].as_ref());
        Ok(NodeTls {
            server: Arc::new(server),
            client: ClientTls::load(&files.ca)?,
            authority: digest[..8].iter().map(|b| format!("{b:02x}")).collect(),
        })
    }
}

/// Verifies `chain` (read from `cert`) against the authorities of `ca`
/// for each of `names`, as a peer's client would.
pub fn check_chain(
    ca: &Path,
    cert: &Path,
    chain: &[CertificateDer<'static>],
    names: &[String],
) -> Result<(), TlsError> {
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots(ca)?, provider())
            .build()
            .map_err(|e| err(format!("{}: {e}", ca.display())))?;
    let (leaf, rest) = chain
        .split_first()
        .ok_or_else(|| err(format!("{}: holds no certificate", cert.display())))?;
    for name in names {
        let server = ServerName::try_from(name.as_str())
            .map_err(|e| err(format!("{name:?} is not a host name or IP address: {e}")))?;
        verifier
            .verify_server_cert(leaf, rest, &server, &[], UnixTime::now())
            .map_err(|e| {
                err(format!(
                    "{} is not valid for {name} under {}: {e}",
                    cert.display(),
                    ca.display()
                ))
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_offers_aes_128_gcm_first_and_keeps_the_other_suites() {
        use rustls::CipherSuite::*;
        let before = rustls::crypto::aws_lc_rs::default_provider();
        let p = provider();
        let names = |p: &rustls::crypto::CryptoProvider| -> Vec<_> {
            p.cipher_suites.iter().map(|s| s.suite()).collect()
        };
        let got = names(&p);
        let aes128 = [
            TLS13_AES_128_GCM_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ];
        assert_eq!(got[..2], aes128, "{got:?}");
        // The same suites, only reordered.
        let mut a = got.clone();
        let mut b = names(&before);
        a.sort_by_key(|s| u16::from(*s));
        b.sort_by_key(|s| u16::from(*s));
        assert_eq!(a, b);
    }
}
