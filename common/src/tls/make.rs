//! Making the cluster's authority and its nodes' certificates where none
//! are given (`master up` and the container and namespace deployments run
//! [`ensure`] before they start anything).

use super::load::{NodeTls, TlsError};
use super::Files;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::Path;

/// How long a node's certificate lasts (re-made by the next `master up`
/// within its last month).
const NODE_DAYS: i64 = 397;
/// How long the authority lasts.
const CA_DAYS: i64 = 3650;

fn err(msg: impl Into<String>) -> TlsError {
    TlsError(msg.into())
}

fn validity(p: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    // A day back: clocks of the nodes may be behind this one's.
    p.not_before = now - time::Duration::days(1);
    p.not_after = now + time::Duration::days(days);
}

/// Writes `text` to `path` whole (a temporary file renamed over it), with
/// `mode`: a crash leaves the old file or the new one, never half of one.
fn write_whole(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let io = |e: std::io::Error| err(format!("writing {}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|e| err(format!("reading {}: {e}", path.display())))
}

/// Makes a new authority in `files.ca` / `files.ca_key`.
fn make_ca(files: &Files) -> Result<(), TlsError> {
    let key = KeyPair::generate().map_err(|e| err(e.to_string()))?;
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(|e| err(e.to_string()))?;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.distinguished_name
        .push(DnType::CommonName, format!("mrtb cluster CA {}", nonce()));
    p.distinguished_name
        .push(DnType::OrganizationName, "mrtb testbed");
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut p, CA_DAYS);
    let cert = p.self_signed(&key).map_err(|e| err(e.to_string()))?;
    write_whole(&files.ca_key, &key.serialize_pem(), 0o600)?;
    write_whole(&files.ca, &cert.pem(), 0o644)
}

/// 8 hex digits from the clock and the process: two authorities made on
/// one machine get different names.
fn nonce() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let h = crate::hash::splitmix64(t as u64 ^ (u64::from(std::process::id()) << 40));
    format!("{:08x}", h as u32)
}

/// Makes `node`'s key and certificate for `names`, signed by the authority.
fn make_node(files: &Files, node: &str, names: &[String]) -> Result<(), TlsError> {
    let ca_key = KeyPair::from_pem(&read(&files.ca_key)?)
        .map_err(|e| err(format!("{}: {e}", files.ca_key.display())))?;
    let issuer = Issuer::from_ca_cert_pem(&read(&files.ca)?, ca_key)
        .map_err(|e| err(format!("{}: {e}", files.ca.display())))?;
    let key = KeyPair::generate().map_err(|e| err(e.to_string()))?;
    let mut p = CertificateParams::new(names.to_vec())
        .map_err(|e| err(format!("the names {names:?} of {node}: {e}")))?;
    p.distinguished_name.push(DnType::CommonName, node);
    p.use_authority_key_identifier_extension = true;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    validity(&mut p, NODE_DAYS);
    let cert = p.signed_by(&key, &issuer).map_err(|e| err(e.to_string()))?;
    write_whole(&files.key, &key.serialize_pem(), 0o600)?;
    write_whole(&files.cert, &cert.pem(), 0o644)
}

/// Whether `files`' certificate serves `names` for at least another month.
fn fit(files: &Files, names: &[String]) -> Result<(), TlsError> {
    if !files.cert.exists() || !files.key.exists() {
        return Err(err(format!(
            "{} or {} is missing",
            files.cert.display(),
            files.key.display()
        )));
    }
    NodeTls::load(files, names)?;
    let chain = super::load::read_certs(&files.cert)?;
    let (_, parsed) = x509_parser::parse_x509_certificate(&chain[0])
        .map_err(|e| err(format!("{}: {e}", files.cert.display())))?;
    let left = parsed.validity().not_after.timestamp() - crate::unix_ms() as i64 / 1000;
    if left < 30 * 86_400 {
        return Err(err(format!(
            "{} expires within a month",
            files.cert.display()
        )));
    }
    Ok(())
}

/// Makes what is missing in `dir` for `nodes` (each node with the names its
/// certificate must carry): the authority when there is no `ca.pem`, and
/// each node's certificate that is missing, would not verify for its names
/// or expires within a month, when `ca.key` is there to sign it. Returns
/// the files made. Without `ca.key` (certificates the user brought), an
/// unfit one is an error naming it and the reason.
pub fn ensure(dir: &Path, nodes: &[(String, Vec<String>)]) -> Result<Vec<String>, TlsError> {
    std::fs::create_dir_all(dir).map_err(|e| err(format!("creating {}: {e}", dir.display())))?;
    let mut made = Vec::new();
    let any = Files::of(dir, super::MASTER);
    if !any.ca.exists() {
        if any.ca_key.exists() {
            return Err(err(format!(
                "{} is there but {} is not: put the authority's certificate beside its key, \
                 or remove both to have a new authority made",
                any.ca_key.display(),
                any.ca.display()
            )));
        }
        make_ca(&any)?;
        made.push("ca.pem".to_owned());
    }
    for (node, names) in nodes {
        let files = Files::of(dir, node);
        let Err(why) = fit(&files, names) else {
            continue;
        };
        if !files.ca_key.exists() {
            return Err(err(format!(
                "{why}; and {} has no ca.key to make {node}'s certificate with: bring {node}.pem \
                 and {node}.key signed by ca.pem, valid for {}",
                dir.display(),
                names.join(", ")
            )));
        }
        make_node(&files, node, names)?;
        made.push(format!("{node}.pem"));
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ip: &str) -> Vec<String> {
        super::super::names_for(ip.parse().unwrap(), None)
    }

    #[test]
    fn ensure_makes_an_authority_and_certificates_that_verify_and_keeps_fit_ones() {
        let d = tempfile::tempdir().unwrap();
        let nodes = vec![
            ("master".to_owned(), names("10.0.0.1")),
            ("w1".to_owned(), names("10.0.0.2")),
        ];
        let made = ensure(d.path(), &nodes).unwrap();
        assert_eq!(made, ["ca.pem", "master.pem", "w1.pem"]);
        for (n, ns) in &nodes {
            NodeTls::load(&Files::of(d.path(), n), ns).unwrap();
        }
        // Keys are the owner's only.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.path().join("w1.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        // Nothing to do the second time.
        assert!(ensure(d.path(), &nodes).unwrap().is_empty());
        // w1 moved: its certificate no longer names it, so it is made again.
        let moved = vec![("w1".to_owned(), names("10.0.0.9"))];
        let e = NodeTls::load(&Files::of(d.path(), "w1"), &moved[0].1).unwrap_err();
        assert!(e.0.contains("not valid for 10.0.0.9"), "{e}");
        assert_eq!(ensure(d.path(), &moved).unwrap(), ["w1.pem"]);
        NodeTls::load(&Files::of(d.path(), "w1"), &moved[0].1).unwrap();
    }

    #[test]
    fn a_certificate_of_another_authority_is_refused_and_not_made_without_its_key() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let nodes = vec![("w1".to_owned(), names("127.0.0.1"))];
        ensure(a.path(), &nodes).unwrap();
        ensure(b.path(), &nodes).unwrap();
        // w1's certificate from b, checked against a's authority.
        std::fs::copy(b.path().join("w1.pem"), a.path().join("w1.pem")).unwrap();
        std::fs::copy(b.path().join("w1.key"), a.path().join("w1.key")).unwrap();
        let e = NodeTls::load(&Files::of(a.path(), "w1"), &nodes[0].1).unwrap_err();
        assert!(e.0.contains("w1.pem is not valid for localhost"), "{e}");
        // The user's own certificates (no ca.key): an unfit one is an error
        // that names the node, not a certificate made behind their back.
        std::fs::remove_file(a.path().join("ca.key")).unwrap();
        let e = ensure(a.path(), &nodes).unwrap_err();
        assert!(e.0.contains("no ca.key to make w1's certificate"), "{e}");
        // A key without its certificate is refused rather than replaced.
        let c = tempfile::tempdir().unwrap();
        std::fs::copy(b.path().join("ca.key"), c.path().join("ca.key")).unwrap();
        let e = ensure(c.path(), &nodes).unwrap_err();
        assert!(e.0.contains("ca.pem is not"), "{e}");
    }

    #[test]
    fn bad_files_are_named() {
        let d = tempfile::tempdir().unwrap();
        let f = Files::of(d.path(), "w1");
        std::fs::write(&f.ca, "not pem").unwrap();
        std::fs::write(&f.cert, "").unwrap();
        std::fs::write(&f.key, "").unwrap();
        let e = NodeTls::load(&f, &names("127.0.0.1")).unwrap_err();
        assert!(e.0.contains("w1.pem: holds no certificate"), "{e}");
        let e = super::super::load::ClientTls::load(&f.ca).unwrap_err();
        assert!(e.0.contains("ca.pem"), "{e}");
    }
}
