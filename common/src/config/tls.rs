//! A cluster's TLS as its config names it: its nodes and the names each
//! one's certificate must carry, and its files read or made
//! (`common::tls` does the reading and making).

use super::ClusterConfig;
use std::path::PathBuf;

impl ClusterConfig {
    /// Every node with the names its certificate must carry: the master,
    /// the workers in order, and the public instances' shared one.
    pub fn tls_nodes(&self) -> Vec<(String, Vec<String>)> {
        use crate::tls::{names_for, INSTANCES, MASTER};
        let mut out = vec![(MASTER.to_owned(), names_for(self.master.listen.ip(), None))];
        for w in &self.worker {
            out.push((w.name.clone(), names_for(w.listen.ip(), w.host.as_deref())));
        }
        if let Some(p) = &self.public {
            out.push((INSTANCES.to_owned(), names_for(p.listen.ip(), None)));
        }
        out
    }

    /// The folder of the TLS files, resolved.
    pub fn tls_dir(&self) -> PathBuf {
        self.resolve(&self.tls.dir)
    }

    /// The TLS of node `node` (`master`, a worker's name or `instances`),
    /// its certificate checked for the names [`Self::tls_nodes`] gives it;
    /// `None` with TLS off.
    #[cfg(feature = "tls")]
    pub fn node_tls(
        &self,
        node: &str,
    ) -> Result<Option<crate::tls::load::NodeTls>, crate::tls::load::TlsError> {
        if !self.tls.enabled {
            return Ok(None);
        }
        let names = self
            .tls_nodes()
            .into_iter()
            .find(|(n, _)| n == node)
            .map(|(_, names)| names)
            .ok_or_else(|| {
                crate::tls::load::TlsError(format!("no node {node:?} in {}", self.path.display()))
            })?;
        let files = crate::tls::Files::of(&self.tls_dir(), node);
        crate::tls::load::NodeTls::load(&files, &names).map(Some)
    }

    /// What a client of this cluster trusts (its `ca.pem`); `None` with
    /// TLS off.
    #[cfg(feature = "tls")]
    pub fn client_tls(
        &self,
    ) -> Result<Option<crate::tls::load::ClientTls>, crate::tls::load::TlsError> {
        if !self.tls.enabled {
            return Ok(None);
        }
        let ca = crate::tls::Files::of(&self.tls_dir(), crate::tls::MASTER).ca;
        crate::tls::load::ClientTls::load(&ca).map(Some)
    }

    /// Makes the TLS files this cluster lacks in its `[tls] dir`
    /// (`common::tls::make::ensure`); the files made, none with TLS off.
    #[cfg(feature = "tls-gen")]
    pub fn make_tls(&self) -> Result<Vec<String>, crate::tls::load::TlsError> {
        if !self.tls.enabled {
            return Ok(Vec::new());
        }
        crate::tls::make::ensure(&self.tls_dir(), &self.tls_nodes())
    }
}
