//! Who may call what: the cluster's credentials by role (the servers'
//! middleware is `common::auth`).
//!
//! Every request carries `Authorization: Bearer <secret>`. The secret of
//! `cluster.token` may do everything (the cluster's administrator); the
//! `[credentials]` of cluster.toml add one secret per role, each refused
//! outside its role with 403 and the reason:
//!
//! | role | may |
//! |---|---|
//! | `worker` | register and heartbeat with the master; serve and fetch blocks and map outputs; wake workers (the master sends it) |
//! | `client` | submit, read and delete jobs and files (the master's API), read and write blocks (loading, `master cat`), read workers' status |
//! | `read` | read-only: the dashboard, metrics, reports, workers' status |
//!
//! A role's secrets are a list: the first plaintext one is what nodes of
//! that role send, every one is accepted, so a rotation lists the new secret
//! first and the old one after it until every node has the new one (the
//! grace period), then drops the old. An entry `sha256:<hex>` accepts the
//! secret whose SHA-256 that is, so a node's file need not hold the other
//! roles' secrets in the clear. Servers re-read the section when their
//! cluster.toml changes ([`Credentials::replace`]), so rotating needs no
//! restart.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::{Arc, RwLock};

/// A credential's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Worker,
    Client,
    Read,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Worker, Role::Client, Role::Read];

    pub fn name(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Client => "client",
            Role::Read => "read",
        }
    }
}

/// `[credentials]` of cluster.toml: each role's accepted secrets, the one
/// nodes of the role send first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsSection {
    /// Workers' (and the master's calls to workers): register, heartbeat,
    /// blocks and map outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker: Vec<String>,
    /// Users' tools: jobs and files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client: Vec<String>,
    /// Read-only: the dashboard, metrics and reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
}

impl CredentialsSection {
    pub fn is_empty(&self) -> bool {
        self.worker.is_empty() && self.client.is_empty() && self.read.is_empty()
    }

    pub fn of(&self, role: Role) -> &[String] {
        match role {
            Role::Worker => &self.worker,
            Role::Client => &self.client,
            Role::Read => &self.read,
        }
    }

    /// The secret nodes of `role` send: the first plaintext entry.
    pub fn sending(&self, role: Role) -> Option<&str> {
        self.of(role)
            .iter()
            .map(String::as_str)
            .find(|s| !s.starts_with(HASHED))
    }

    /// What is wrong with the section (key, problem), if anything: an
    /// empty secret, a malformed hash, a secret listed for two roles or
    /// equal to the administrator's.
    pub fn problem(&self, admin: &str) -> Option<(String, String)> {
        let mut seen: Vec<(String, Role)> = Vec::new();
        for role in Role::ALL {
            for (i, s) in self.of(role).iter().enumerate() {
                let key = format!("credentials.{}[{i}]", role.name());
                if s.trim().is_empty() {
                    return Some((key, "must not be empty".into()));
                }
                if let Some(hex) = s.strip_prefix(HASHED) {
                    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Some((key, "a hashed entry is `sha256:` and 64 hex digits".into()));
                    }
                }
                let digest = digest_of(s);
                if digest == digest_of(admin) {
                    return Some((key, "is cluster.token, which already has every role".into()));
                }
                if let Some((_, other)) = seen.iter().find(|(d, _)| *d == digest) {
                    return Some((
                        key,
                        format!(
                            "is also a {} credential: one secret, one role",
                            other.name()
                        ),
                    ));
                }
                seen.push((digest, role));
            }
        }
        None
    }
}

const HASHED: &str = "sha256:";

/// The lowercase hex SHA-256 an entry stands for (a `sha256:` entry's own).
fn digest_of(entry: &str) -> String {
    match entry.strip_prefix(HASHED) {
        Some(hex) => hex.to_ascii_lowercase(),
        None => hex::encode(Sha256::digest(entry.as_bytes())),
    }
}

#[derive(Debug, Default)]
struct Table {
    /// SHA-256 of the administrator's secret (every role).
    admin: Option<String>,
    /// The administrator's secret before a change of `cluster.token`, and
    /// until when it is still accepted (its grace period).
    previous_admin: Option<(String, std::time::Instant)>,
    /// SHA-256 of each role secret.
    roles: Vec<(String, Role)>,
}

/// The secrets a server accepts and each one's role; cloned handles share
/// one table, which [`Credentials::replace`] swaps whole (a rotation).
#[derive(Clone, Debug, Default)]
pub struct Credentials(Arc<RwLock<Table>>);

/// Who a request's secret is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Admin,
    Role(Role),
}

impl Credentials {
    /// `admin` may do everything, and each role of `section` its part.
    pub fn new(admin: &str, section: &CredentialsSection) -> Self {
        let c = Credentials::default();
        c.replace(admin, section);
        c
    }

    /// Accepts from now on `admin` and `section`'s secrets instead of the
    /// ones before (requests already admitted are not affected).
    pub fn replace(&self, admin: &str, section: &CredentialsSection) {
        self.rotate(admin, section, std::time::Duration::ZERO);
    }

    /// As [`Credentials::replace`], but a changed administrator's secret
    /// leaves the old one accepted for `grace` more (the nodes that still
    /// send it have that long to read the new one).
    pub fn rotate(&self, admin: &str, section: &CredentialsSection, grace: std::time::Duration) {
        let mut table = self.0.write().expect("credentials lock");
        let before = (table.admin.take(), table.previous_admin.take());
        let admin = (!admin.is_empty()).then(|| digest_of(admin));
        let now = std::time::Instant::now();
        let previous_admin = match before {
            (Some(old), _) if Some(&old) != admin.as_ref() && !grace.is_zero() => {
                Some((old, now + grace))
            }
            (_, kept) => kept.filter(|(d, until)| *until > now && Some(d) != admin.as_ref()),
        };
        let mut t = Table {
            admin,
            previous_admin,
            roles: Vec::new(),
        };
        for role in Role::ALL {
            for s in section.of(role) {
                t.roles.push((digest_of(s), role));
            }
        }
        *table = t;
    }

    /// Who `secret` is, if anyone (compared in constant time per entry).
    pub fn caller(&self, secret: &str) -> Option<Caller> {
        let d = hex::encode(Sha256::digest(secret.as_bytes()));
        let t = self.0.read().expect("credentials lock");
        let mut found = None;
        if t.admin
            .as_deref()
            .is_some_and(|a| eq(a.as_bytes(), d.as_bytes()))
        {
            found = Some(Caller::Admin);
        }
        if let Some((old, until)) = &t.previous_admin {
            if eq(old.as_bytes(), d.as_bytes()) && std::time::Instant::now() < *until {
                found = Some(Caller::Admin);
            }
        }
        for (h, role) in &t.roles {
            if eq(h.as_bytes(), d.as_bytes()) && found.is_none() {
                found = Some(Caller::Role(*role));
            }
        }
        found
    }
}

impl From<&str> for Credentials {
    /// The administrator's secret alone (one shared token, as before roles).
    fn from(admin: &str) -> Self {
        Credentials::new(admin, &CredentialsSection::default())
    }
}

/// The secret a node sends, shared by its clients and replaced on a
/// rotation ([`Secret::set`]).
#[derive(Clone, Debug)]
pub struct Secret(Arc<RwLock<Arc<str>>>);

impl Secret {
    pub fn new(secret: &str) -> Self {
        Secret(Arc::new(RwLock::new(secret.into())))
    }

    /// The secret now.
    pub fn get(&self) -> Arc<str> {
        self.0.read().expect("secret lock").clone()
    }

    pub fn set(&self, secret: &str) {
        *self.0.write().expect("secret lock") = secret.into();
    }
}

fn eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> CredentialsSection {
        CredentialsSection {
            worker: vec!["w-new".into(), "w-old".into()],
            client: vec![format!("sha256:{}", hex::encode(Sha256::digest(b"c")))],
            read: vec!["r".into()],
        }
    }

    #[test]
    fn each_secret_is_its_role_and_hashed_entries_match_their_secret() {
        let c = Credentials::new("admin", &section());
        assert_eq!(c.caller("admin"), Some(Caller::Admin));
        assert_eq!(c.caller("w-new"), Some(Caller::Role(Role::Worker)));
        assert_eq!(c.caller("w-old"), Some(Caller::Role(Role::Worker)));
        assert_eq!(c.caller("c"), Some(Caller::Role(Role::Client)));
        assert_eq!(c.caller("r"), Some(Caller::Role(Role::Read)));
        assert_eq!(c.caller("x"), None);
        assert_eq!(section().sending(Role::Worker), Some("w-new"));
        assert_eq!(
            section().sending(Role::Client),
            None,
            "a hashed entry is never sent"
        );
    }

    #[test]
    fn a_rotation_drops_the_old_secret() {
        let c = Credentials::new("admin", &section());
        let mut s = section();
        s.worker = vec!["w-new".into()];
        c.replace("admin", &s);
        assert_eq!(c.caller("w-old"), None);
        assert_eq!(c.caller("w-new"), Some(Caller::Role(Role::Worker)));
    }

    #[test]
    fn bad_sections_are_named() {
        let mut s = section();
        s.read.push("w-old".into());
        let (key, why) = s.problem("admin").unwrap();
        assert_eq!(key, "credentials.read[1]");
        assert!(why.contains("also a worker credential"), "{why}");
        let mut s = section();
        s.client = vec!["admin".into()];
        assert!(s.problem("admin").unwrap().1.contains("cluster.token"));
        let mut s = section();
        s.read = vec!["sha256:zz".into()];
        assert!(s.problem("admin").unwrap().1.contains("64 hex digits"));
        let mut s = section();
        s.worker = vec![" ".into()];
        assert_eq!(s.problem("admin").unwrap().0, "credentials.worker[0]");
        assert_eq!(section().problem("admin"), None);
    }

    #[test]
    fn a_changed_administrator_secret_keeps_the_old_one_for_its_grace_only() {
        use std::time::Duration;
        let c = Credentials::new("admin-1", &CredentialsSection::default());
        // Rotated with a grace: both are the administrator for now.
        c.rotate("admin-2", &section(), Duration::from_secs(3600));
        assert_eq!(c.caller("admin-2"), Some(Caller::Admin));
        assert_eq!(c.caller("admin-1"), Some(Caller::Admin));
        assert_eq!(c.caller("w-new"), Some(Caller::Role(Role::Worker)));
        // Another re-read (a role's secrets changed) keeps the grace.
        c.rotate(
            "admin-2",
            &CredentialsSection::default(),
            Duration::from_secs(3600),
        );
        assert_eq!(c.caller("admin-1"), Some(Caller::Admin));
        assert_eq!(c.caller("w-new"), None);
        // Back to the old one: only it, and the one it replaced for the grace.
        c.rotate(
            "admin-1",
            &CredentialsSection::default(),
            Duration::from_secs(3600),
        );
        assert_eq!(c.caller("admin-1"), Some(Caller::Admin));
        assert_eq!(c.caller("admin-2"), Some(Caller::Admin));
        // A grace that is over, and a replace (no grace): the old is refused.
        c.rotate(
            "admin-3",
            &CredentialsSection::default(),
            Duration::from_nanos(1),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(c.caller("admin-1"), None);
        assert_eq!(c.caller("admin-3"), Some(Caller::Admin));
        c.replace("admin-4", &CredentialsSection::default());
        assert_eq!(c.caller("admin-3"), None);
    }
}
