//! The public cloud of a hybrid cluster (MROSA, Mao et al.): the instance
//! types a scheduler may rent, their prices, and how the master runs the
//! instances it starts. Read from cluster.toml's `[public]` and
//! `[[public_type]]`; absent = a private cluster only.
//!
//! An instance is a worker the master starts on demand (a local process
//! with its own emulated NIC at the type's rate and its slots paced at the
//! type's relative speed). It registers once its start-up time has passed,
//! holds no replica (every block it reads crosses its link), runs maps, and
//! is stopped once it has been idle for `idle_stop_s`. It is billed by the
//! second from the master's request until it stops, and by the byte.

use crate::tomlfile::KeyError;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// How the master runs public instances.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicSection {
    /// An instance that has run no task for this many seconds, and holds no
    /// map output a running job still needs, is stopped (billing ends).
    #[serde(default = "defaults::idle_stop_s")]
    pub idle_stop_s: f64,
    /// At most this many instances at once; a request beyond it is refused
    /// (the scheduler sees the cap and plans within it).
    #[serde(default = "defaults::max_instances")]
    pub max_instances: u32,
    /// Instances listen on this address's IP, at its port and the ones above
    /// (one per instance alive at once).
    #[serde(default = "defaults::listen")]
    pub listen: SocketAddr,
}

impl Default for PublicSection {
    fn default() -> Self {
        PublicSection {
            idle_stop_s: defaults::idle_stop_s(),
            max_instances: defaults::max_instances(),
            listen: defaults::listen(),
        }
    }
}

/// One rentable instance type (a row of MROSA's Table IV).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublicType {
    /// Letters, digits, '-', '_' or '.'; instances are named `<name>-<n>`.
    pub name: String,
    /// Free text: who rents it out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Task slots (its cores).
    pub slots: u32,
    /// Compute speed relative to a private worker's slot: its slots are paced
    /// at `workers.slot_rate_mbs` x speed (needs `slot_rate_mbs`, unless 1).
    #[serde(default = "defaults::one")]
    pub speed: f64,
    /// Its link to the private cluster, Mbit/s per direction: every block it
    /// reads and every map output fetched from it crosses it.
    pub nic_mbps: f64,
    /// Seconds from the master's request until it can register (boot).
    pub start_s: f64,
    /// Price per second of its life, from the request until it stops.
    pub price_per_s: f64,
    /// Price per GB (10^9 bytes) of data stored on it (every byte it receives).
    #[serde(default)]
    pub storage_per_gb: f64,
    /// Price per GB it receives.
    #[serde(default)]
    pub transfer_in_per_gb: f64,
    /// Price per GB it sends.
    #[serde(default)]
    pub transfer_out_per_gb: f64,
}

impl PublicType {
    /// Per-byte data price: storage + transfer in + transfer out (a map's
    /// input is received and stored; its output is sent back).
    pub fn data_price_per_byte(&self) -> f64 {
        (self.storage_per_gb + self.transfer_in_per_gb + self.transfer_out_per_gb) / 1e9
    }

    /// Link rate in bytes per second.
    pub fn nic_bytes_per_sec(&self) -> f64 {
        crate::units::mbps_to_bytes(self.nic_mbps)
    }

    /// Checks the values; the error names `public_type[i].<key>`.
    pub fn check(&self, i: usize, paced: bool) -> Result<(), KeyError> {
        let key = |k: &str| format!("public_type[{i}].{k}");
        if crate::ids::validate_file_name(&self.name).is_err() {
            return Err(KeyError::new(
                key("name"),
                format!(
                    "{:?} must be 1-100 ASCII letters, digits, '-', '_' or '.'",
                    self.name
                ),
            ));
        }
        if !(1..=crate::units::MAX_SLOTS).contains(&self.slots) {
            return Err(KeyError::new(
                key("slots"),
                format!(
                    "must be 1..={} (got {})",
                    crate::units::MAX_SLOTS,
                    self.slots
                ),
            ));
        }
        let positive = |k: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(KeyError::new(key(k), format!("must be > 0 (got {v})")))
            }
        };
        let nonneg = |k: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(KeyError::new(key(k), format!("must be >= 0 (got {v})")))
            }
        };
        positive("speed", self.speed)?;
        if !(crate::units::MIN_RATE..=crate::units::MAX_RATE).contains(&self.nic_mbps) {
            return Err(KeyError::new(
                key("nic_mbps"),
                format!(
                    "must be in [{}, {}] Mbit/s (got {})",
                    crate::units::MIN_RATE,
                    crate::units::MAX_RATE,
                    self.nic_mbps
                ),
            ));
        }
        nonneg("start_s", self.start_s)?;
        if self.start_s > 3600.0 {
            return Err(KeyError::new(
                key("start_s"),
                format!("must be at most 3600 s (got {})", self.start_s),
            ));
        }
        nonneg("price_per_s", self.price_per_s)?;
        nonneg("storage_per_gb", self.storage_per_gb)?;
        nonneg("transfer_in_per_gb", self.transfer_in_per_gb)?;
        nonneg("transfer_out_per_gb", self.transfer_out_per_gb)?;
        if self.speed != 1.0 && !paced {
            return Err(KeyError::new(
                key("speed"),
                "a speed other than 1 needs workers.slot_rate_mbs (the pacing it scales)",
            ));
        }
        Ok(())
    }
}

/// Checks `[public]` and the types together.
pub fn check(
    section: Option<&PublicSection>,
    types: &[PublicType],
    paced: bool,
) -> Result<(), KeyError> {
    if let Some(s) = section {
        if !(s.idle_stop_s.is_finite() && s.idle_stop_s >= 0.0) {
            return Err(KeyError::new(
                "public.idle_stop_s",
                format!("must be >= 0 seconds (got {})", s.idle_stop_s),
            ));
        }
        if s.max_instances == 0 || s.max_instances > 1000 {
            return Err(KeyError::new(
                "public.max_instances",
                format!("must be 1..=1000 (got {})", s.max_instances),
            ));
        }
        if u32::from(s.listen.port()) + s.max_instances > 65536 || s.listen.port() == 0 {
            return Err(KeyError::new(
                "public.listen",
                format!(
                    "port {} + max_instances {} must stay within 1..=65535",
                    s.listen.port(),
                    s.max_instances
                ),
            ));
        }
        if types.is_empty() {
            return Err(KeyError::new(
                "public_type",
                "[public] needs at least one [[public_type]]",
            ));
        }
    }
    let mut names = std::collections::HashSet::new();
    for (i, t) in types.iter().enumerate() {
        t.check(i, paced)?;
        if !names.insert(t.name.as_str()) {
            return Err(KeyError::new(
                format!("public_type[{i}].name"),
                format!("{:?} names two types", t.name),
            ));
        }
    }
    Ok(())
}

/// A job's public-cloud bill, as its report shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PublicCost {
    /// Instances that ran its tasks or were started for it.
    pub instances: Vec<String>,
    /// Instance time: its share of each instance's life (by slot-seconds of
    /// its tasks there; an instance's unused life is paid by the job that
    /// asked for it).
    pub compute: f64,
    /// Bytes its tasks received on instances, at the storage price.
    pub storage: f64,
    /// Bytes its tasks received (input) and sent (map output) at the
    /// transfer prices.
    pub transfer: f64,
}

impl PublicCost {
    pub fn total(&self) -> f64 {
        self.compute + self.storage + self.transfer
    }
}

mod defaults {
    use std::net::SocketAddr;
    pub fn idle_stop_s() -> f64 {
        10.0
    }
    pub fn max_instances() -> u32 {
        16
    }
    pub fn listen() -> SocketAddr {
        "127.0.0.1:7301".parse().expect("a valid address")
    }
    pub fn one() -> f64 {
        1.0
    }
}
