//! What `master` exits with, so scripts can tell a failed job from a typo
//! and from a master that is away (`master --help` and docs/guide.md list
//! them; `ctl/tests/cli.rs` runs each):
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | a job, run or check the command waited for failed (`submit --wait`, `report --wait`, `chaos`, `soak`) |
//! | 2 | bad input: the command line, a configuration or spec file, or a request the master refused as such (4xx: no such job or file, a bad field, a wrong token) |
//! | 3 | the master could not be reached (after `--retry-s`) |
//! | 4 | anything else (an I/O error, the master's 5xx) |

use common::http_client::HttpError;
use common::tomlfile::FileError;

pub const FAILED: i32 = 1;
pub const BAD_INPUT: i32 = 2;
pub const UNREACHABLE: i32 = 3;
pub const ERROR: i32 = 4;

/// The exit codes as `master --help` prints them.
pub const HELP: &str = "Exit codes: 0 done; 1 a job, run or check the command waited for failed; \
2 bad input (command line, config or spec file, or a request the master refused as such: \
no such job or file, a bad field, a wrong token); 3 the master could not be reached \
(after --retry-s); 4 anything else.";

/// A job, run or check that the command waited for failed (exit 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

/// The command's input is wrong (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// `Err(BadInput(msg))` as an `anyhow::Error`.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    BadInput(msg.into()).into()
}

/// The exit code for a command that ended with `e`: the first cause in
/// its chain that says.
pub fn code(e: &anyhow::Error) -> i32 {
    for cause in e.chain() {
        if cause.is::<Failed>() {
            return FAILED;
        }
        if cause.is::<BadInput>() || cause.is::<FileError>() || cause.is::<clap::Error>() {
            return BAD_INPUT;
        }
        if let Some(h) = cause.downcast_ref::<HttpError>() {
            return if (400..500).contains(&h.status) {
                BAD_INPUT
            } else {
                ERROR
            };
        }
        if let Some(r) = cause.downcast_ref::<reqwest::Error>() {
            if r.is_connect() || r.is_timeout() || r.is_request() {
                return UNREACHABLE;
            }
        }
    }
    ERROR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_error_has_its_code() {
        let wrapped = |e: anyhow::Error| e.context("while doing something");
        assert_eq!(code(&wrapped(Failed("job-3 failed".into()).into())), FAILED);
        assert_eq!(code(&wrapped(bad_input("--tick must be > 0"))), BAD_INPUT);
        let http = |status| HttpError {
            what: "GET /v1/jobs/job-9".into(),
            status,
            message: "no such job".into(),
        };
        assert_eq!(code(&wrapped(http(404).into())), BAD_INPUT);
        assert_eq!(code(&wrapped(http(507).into())), ERROR);
        assert_eq!(code(&wrapped(anyhow::anyhow!("disk on fire"))), ERROR);
    }
}
