//! The experiment runner: `master experiment experiments/<name>.toml` (or
//! `make experiment EXP=<name>`) runs every scheduler x parameter point x
//! repetition of a spec on a fresh local cluster with identical data,
//! placement, arrivals and background load, and writes CSV, a summary, plots
//! and metadata under `results/<name>/<timestamp>/`.

pub mod agreement;
pub mod calibrate;
pub mod grid;
pub mod output;
pub mod paired;
pub mod plots;
pub mod qos;
pub mod run;
pub mod scale;
pub mod spec;
pub mod timeline;
