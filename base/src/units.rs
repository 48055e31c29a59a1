//! The limits and unit conversions that `cluster.toml`'s sections share
//! (the worker layout in `config` and the public instance types in
//! `public` both check against them).

/// Most slots a worker may have.
pub const MAX_SLOTS: u32 = 1024;
/// Rates (`nic_mbps` in Mbit/s, `slot_rate_mbs` in MB/s) must lie in
/// this range: below it a task or a transfer would last for days.
pub const MIN_RATE: f64 = 0.01;
pub const MAX_RATE: f64 = 1e6;

/// Mbit/s (10^6 bits) to bytes per second.
pub fn mbps_to_bytes(mbps: f64) -> f64 {
    mbps * 1e6 / 8.0
}
