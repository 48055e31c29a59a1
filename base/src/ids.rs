//! Identifiers. Block ids are user-visible strings that also become file
//! names on workers, so they are validated strictly; the rest are numbers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest accepted block id, in bytes. Keeps file names well under the
/// 255-byte limit of common file systems once suffixes are added.
pub const MAX_BLOCK_ID_LEN: usize = 128;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdError {
    #[error("block id is empty")]
    Empty,
    #[error("block id is {len} bytes long; at most {MAX_BLOCK_ID_LEN} are allowed")]
    TooLong { len: usize },
    #[error(
        "block id {id:?} contains {bad:?}; allowed are ASCII letters, digits, '-', '_' and '.' (not leading)"
    )]
    BadChar { id: String, bad: char },
    #[error("block id {id:?} must not start with '.'")]
    LeadingDot { id: String },
}

/// Name of one block: `[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}`. Never contains a
/// path separator or starts with a dot, so `../x` cannot escape a block store.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(value_type = String, example = "demo.b00002")]
#[serde(try_from = "String", into = "String")]
pub struct BlockId(String);

impl BlockId {
    pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
        let s = s.into();
        if s.is_empty() {
            return Err(IdError::Empty);
        }
        if s.len() > MAX_BLOCK_ID_LEN {
            return Err(IdError::TooLong { len: s.len() });
        }
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(IdError::BadChar { id: s, bad });
        }
        if s.starts_with('.') {
            return Err(IdError::LeadingDot { id: s });
        }
        Ok(BlockId(s))
    }

    /// The block id of block `index` of file `file`: `<file>.b<index:05>`.
    pub fn for_file(file: &str, index: u32) -> Result<Self, IdError> {
        Self::new(format!("{file}.b{index:05}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for BlockId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, IdError> {
        BlockId::new(s)
    }
}
impl From<BlockId> for String {
    fn from(b: BlockId) -> String {
        b.0
    }
}
impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl fmt::Debug for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A file name in the master's catalog. Same alphabet as block ids, because
/// block ids are derived from it.
pub fn validate_file_name(name: &str) -> Result<(), IdError> {
    // "<name>.b00000" must still be a valid block id.
    BlockId::for_file(name, 0).map(|_| ())
}

macro_rules! numeric_id {
    ($name:ident, $prefix:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            Serialize,
            Deserialize,
            Debug,
            utoipa::ToSchema,
        )]
        #[serde(transparent)]
        pub struct $name(pub u32);
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

numeric_id!(
    WorkerId,
    "w#",
    "A worker's index in `cluster.toml`'s `[[worker]]` list: stable across restarts."
);
numeric_id!(
    JobId,
    "job-",
    "A job, numbered by the master in submission order from 1."
);

/// One task of one job.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    Debug,
    utoipa::ToSchema,
)]
pub struct TaskRef {
    pub job: JobId,
    pub index: u32,
}
impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/t{}", self.job, self.index)
    }
}

/// One attempt at running a task. A task that is retried gets a new attempt
/// number; results of any other attempt than the current one are ignored
/// (fencing), so a slow or partitioned worker cannot overwrite a retry.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    Debug,
    utoipa::ToSchema,
)]
pub struct AttemptId {
    pub task: TaskRef,
    pub attempt: u32,
}
impl fmt::Display for AttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/a{}", self.task, self.attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids_are_validated() {
        assert!(BlockId::new("demo.b00001").is_ok());
        assert_eq!(BlockId::new(""), Err(IdError::Empty));
        assert!(matches!(
            BlockId::new("../x"),
            Err(IdError::BadChar { bad: '/', .. })
        ));
        assert!(matches!(
            BlockId::new(".hidden"),
            Err(IdError::LeadingDot { .. })
        ));
        assert_eq!(
            BlockId::new("a".repeat(129)),
            Err(IdError::TooLong { len: 129 })
        );
        assert!(BlockId::new("a".repeat(128)).is_ok());
        assert!(BlockId::new("a b").is_err());
    }

    #[test]
    fn block_id_deserialisation_validates() {
        let ok: Result<BlockId, _> = serde_json::from_str("\"x.b00000\"");
        assert!(ok.is_ok());
        let bad: Result<BlockId, _> = serde_json::from_str("\"../etc/passwd\"");
        assert!(bad.is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any string: accepted exactly when it follows the rule, and
        /// refused with an error that names what is wrong.
        #[test]
        fn any_string_is_a_block_id_exactly_when_it_follows_the_rule(s in "\\PC{0,6}|[A-Za-z0-9._-]{0,140}|.{0,3}") {
            let ok = !s.is_empty()
                && s.len() <= MAX_BLOCK_ID_LEN
                && !s.starts_with('.')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            match BlockId::new(s.clone()) {
                Ok(b) => {
                    proptest::prop_assert!(ok, "{:?} accepted", s);
                    proptest::prop_assert_eq!(b.as_str(), s.as_str());
                    // A file name is valid when its first block's id is.
                    proptest::prop_assert_eq!(
                        validate_file_name(&s).is_ok(),
                        s.len() + 7 <= MAX_BLOCK_ID_LEN
                    );
                }
                Err(e) => {
                    proptest::prop_assert!(!ok, "{:?} refused: {}", s, e);
                    let msg = e.to_string();
                    let named = match &e {
                        IdError::Empty => msg.contains("empty"),
                        IdError::TooLong { len } => msg.contains(&len.to_string()),
                        IdError::BadChar { bad, .. } => msg.contains(&format!("{bad:?}")),
                        IdError::LeadingDot { id } => msg.contains(&format!("{id:?}")),
                    };
                    proptest::prop_assert!(named, "{:?}: {}", s, msg);
                    proptest::prop_assert!(validate_file_name(&s).is_err());
                }
            }
        }
    }
}
