//! TLS between every node, on by one setting (`[tls] enabled = true` in
//! cluster.toml): the master's API, the workers' block and shuffle servers
//! and every client of them speak HTTPS, and each side trusts only the
//! cluster's own certificate authority.
//!
//! The files live in one folder (`[tls] dir`, default `run/tls` beside
//! cluster.toml), PEM-encoded:
//! - `ca.pem`: the authority every node and client trusts (required);
//! - `ca.key`: its key, only where certificates are made (`master up`
//!   makes the authority and every missing or unfit node certificate with
//!   it; a user who brings their own leaves it out);
//! - `<node>.pem` and `<node>.key`: a node's certificate chain and key,
//!   `master` for the master and the worker's name for a worker. A node's
//!   certificate must name the addresses others reach it at (its listen IP,
//!   its `host`): each node checks its own at start-up against `ca.pem`, so
//!   a certificate that would be refused by its peers stops it with the
//!   reason instead.
//!
//! This part (the section and the names a node's certificate must carry)
//! is plain data; loading the files into rustls configurations is behind
//! the `tls` feature ([`load`]), making them behind `tls-gen` ([`make`]).
//! It sits below `config`: a cluster's nodes and their names, and its TLS
//! read or made, are `ClusterConfig`'s methods (`tls_nodes`, `node_tls`,
//! `client_tls`, `make_tls`).

#[cfg(feature = "tls")]
pub mod load;
#[cfg(feature = "tls-gen")]
pub mod make;

use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// `[tls]` of cluster.toml.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// HTTPS between every node; false: plain HTTP (said at start-up).
    #[serde(default)]
    pub enabled: bool,
    /// The folder of `ca.pem`, `ca.key` and the nodes' `<node>.pem` /
    /// `<node>.key`, relative to cluster.toml's folder.
    #[serde(default = "default_dir")]
    pub dir: PathBuf,
}

fn default_dir() -> PathBuf {
    PathBuf::from("run/tls")
}

impl Default for TlsSection {
    fn default() -> Self {
        TlsSection {
            enabled: false,
            dir: default_dir(),
        }
    }
}

impl TlsSection {
    /// Whether the section is the default (left out when written).
    pub fn is_default(&self) -> bool {
        *self == TlsSection::default()
    }
}

/// The name of the master's certificate files (`master.pem`, `master.key`).
pub const MASTER: &str = "master";
/// The certificate every public instance serves with (`instances.pem`):
/// they share `[public] listen`'s address, one port each.
pub const INSTANCES: &str = "instances";

/// Where one node's files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Files {
    pub ca: PathBuf,
    pub ca_key: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Files {
    /// The files of `node` (`master` or a worker's name) in `dir`.
    pub fn of(dir: &Path, node: &str) -> Files {
        Files {
            ca: dir.join("ca.pem"),
            ca_key: dir.join("ca.key"),
            cert: dir.join(format!("{node}.pem")),
            key: dir.join(format!("{node}.key")),
        }
    }
}

/// The names a node's certificate must carry: the address others reach it
/// at (`listen`'s IP unless it is unspecified, the `host` it runs on), and
/// `localhost` and 127.0.0.1 for clients on its own machine.
pub fn names_for(listen: IpAddr, host: Option<&str>) -> Vec<String> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let mut add = |n: String| {
        if !names.contains(&n) {
            names.push(n);
        }
    };
    if !listen.is_unspecified() {
        add(listen.to_string());
    }
    if let Some(h) = host {
        add(h.to_owned());
    }
    names
}

/// The URL scheme of a cluster: `https` with TLS on, else `http`.
pub fn scheme(enabled: bool) -> &'static str {
    if enabled {
        "https"
    } else {
        "http"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_names_are_its_address_and_the_loopback_ones() {
        let n = names_for("10.1.2.3".parse().unwrap(), Some("node-3.lab"));
        assert_eq!(n, ["localhost", "127.0.0.1", "10.1.2.3", "node-3.lab"]);
        // An unspecified listen address names nothing; loopback once.
        assert_eq!(
            names_for("0.0.0.0".parse().unwrap(), None),
            ["localhost", "127.0.0.1"]
        );
        assert_eq!(
            names_for("127.0.0.1".parse().unwrap(), None),
            ["localhost", "127.0.0.1"]
        );
    }

    #[test]
    fn the_section_defaults_to_off_in_run_tls() {
        let s: TlsSection = toml::from_str("").unwrap();
        assert!(!s.enabled && s.is_default());
        assert_eq!(s.dir, Path::new("run/tls"));
        let e = toml::from_str::<TlsSection>("enable = true").unwrap_err();
        assert!(e.to_string().contains("enable"), "{e}");
        assert_eq!(scheme(true), "https");
        assert_eq!(Files::of(Path::new("d"), "w1").key, Path::new("d/w1.key"));
    }
}
