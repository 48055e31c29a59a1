//! One way to read every TOML file the testbed takes (`cluster.toml`,
//! experiment specs, sweep specs): read the file, parse it strictly
//! (unknown keys are refused by each type's `deny_unknown_fields`), then
//! validate what the types cannot say. Every error names the file, the key
//! path (`points[3].block_size`, `scheduler.threshold_s`) and the problem.

use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// A TOML file format: a type serde parses, plus the checks serde cannot do.
pub trait TomlFile: DeserializeOwned {
    /// Checks the parsed value; the error names the key path.
    fn validate(&self) -> Result<(), KeyError>;

    /// Called once parsed, before [`TomlFile::validate`], with the path it
    /// was read from (to resolve relative paths, say).
    fn located(&mut self, _path: &Path) {}
}

/// A problem with one key, before the file is known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key `{key}`: {problem}")]
pub struct KeyError {
    /// Dotted key path, with indices: `points[3].block_size`.
    pub key: String,
    pub problem: String,
}

impl KeyError {
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> KeyError {
        KeyError {
            key: key.into(),
            problem: problem.into(),
        }
    }

    /// The same error, under `prefix` (`points[3]` + `beta`).
    pub fn under(self, prefix: &str) -> KeyError {
        let key = if self.key.is_empty() {
            prefix.to_owned()
        } else if prefix.is_empty() {
            self.key
        } else {
            format!("{prefix}.{}", self.key)
        };
        KeyError { key, ..self }
    }

    pub fn in_file(self, path: &Path) -> FileError {
        FileError::Invalid {
            path: path.to_owned(),
            key: self.key,
            problem: self.problem,
        }
    }
}

/// Why a TOML file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// (The I/O error is in the message, not a `source`: shown once.)
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Bad syntax, a wrong type, an unknown or missing key; `key` is empty
    /// when the problem is not inside a key (a syntax error).
    #[error("{path}: {}{problem}", key_prefix(key))]
    Parse {
        path: PathBuf,
        key: String,
        problem: String,
    },
    /// Parsed, but a value is not allowed.
    #[error("{path}: key `{key}`: {problem}")]
    Invalid {
        path: PathBuf,
        key: String,
        problem: String,
    },
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("key `{key}`: ")
    }
}

impl FileError {
    /// The key path the error is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            FileError::Read { .. } => None,
            FileError::Parse { key, .. } | FileError::Invalid { key, .. } => {
                Some(key).filter(|k| !k.is_empty()).map(String::as_str)
            }
        }
    }
}

/// Reads, parses and validates `path`; returns the value and the text
/// (recorded beside results).
pub fn load<T: TomlFile>(path: &Path) -> Result<(T, String), FileError> {
    let text = std::fs::read_to_string(path).map_err(|error| FileError::Read {
        path: path.to_owned(),
        error,
    })?;
    let value = parse(&text, path)?;
    Ok((value, text))
}

/// Parses and validates `text` as if read from `path`.
pub fn parse<T: TomlFile>(text: &str, path: &Path) -> Result<T, FileError> {
    let mut value: T = parse_only(text, path)?;
    value.located(path);
    value.validate().map_err(|e| e.in_file(path))?;
    Ok(value)
}

/// Parses `text` strictly, without [`TomlFile::validate`]: for values
/// whose checks need more than the file (say, a parameter point resolved
/// against its spec's base).
pub fn parse_only<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, FileError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        FileError::Parse {
            path: path.to_owned(),
            key,
            problem: e.into_inner().to_string().trim().to_owned(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Spec {
        name: String,
        #[serde(default)]
        points: Vec<Point>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Point {
        size: u32,
    }

    impl TomlFile for Spec {
        fn validate(&self) -> Result<(), KeyError> {
            for (i, p) in self.points.iter().enumerate() {
                if p.size == 0 {
                    return Err(
                        KeyError::new("size", "must be at least 1").under(&format!("points[{i}]"))
                    );
                }
            }
            Ok(())
        }
    }

    fn err(text: &str) -> FileError {
        parse::<Spec>(text, Path::new("s.toml")).unwrap_err()
    }

    #[test]
    fn errors_name_the_file_the_key_path_and_the_problem() {
        let e = err("name = \"x\"\n[[points]]\nsize = 1\n[[points]]\nsize = \"big\"\n");
        assert_eq!(e.key(), Some("points[1].size"));
        let m = e.to_string();
        assert!(m.starts_with("s.toml: key `points[1].size`: "), "{m}");
        assert!(m.contains("invalid type"), "{m}");

        let e = err("name = \"x\"\n[[points]]\nsize = 1\nbogus = 2\n");
        let m = e.to_string();
        assert!(m.contains("points[0]") && m.contains("bogus"), "{m}");

        let e = err("name = \"x\"\n[[points]]\nsize = 0\n");
        assert!(matches!(e, FileError::Invalid { .. }));
        assert_eq!(
            e.to_string(),
            "s.toml: key `points[0].size`: must be at least 1"
        );

        let e = err("name = ");
        assert!(matches!(e, FileError::Parse { .. }), "{e}");
        assert!(e.to_string().starts_with("s.toml: "), "{e}");

        let e = err("points = []\n");
        assert!(e.to_string().contains("missing field `name`"), "{e}");
    }

    #[test]
    fn load_reads_and_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.toml");
        let e = load::<Spec>(&f).unwrap_err();
        assert!(matches!(e, FileError::Read { .. }));
        assert!(e.to_string().contains("s.toml"), "{e}");
        std::fs::write(&f, "name = \"ok\"\n").unwrap();
        let (s, text): (Spec, String) = load(&f).unwrap();
        assert_eq!((s.name.as_str(), text.as_str()), ("ok", "name = \"ok\"\n"));
    }
}
