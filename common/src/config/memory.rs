//! The memory a worker takes for itself, each a number of MB or `"auto"`
//! ([`MbOrAuto`]): `workers.pretouch_mb`, task buffers faulted in at start,
//! and `workers.block_cache_mb`, blocks kept mapped and locked; and the
//! memory `"auto"` is sized from ([`available_memory`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A worker's memory setting: a number of MB or `"auto"` (the default),
/// which each setting sizes by its own rule ([`MbOrAuto::pretouch_bytes`],
/// [`MbOrAuto::block_cache_bytes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MbOrAuto {
    #[default]
    Auto,
    /// This many MB (10^6 bytes); 0 = none.
    Mb(u64),
}

/// What `"auto"` pretouch faults in at most: the pool's default limit of free
/// buffers (`workloads::pool::DEFAULT_LIMIT`, which `common` cannot name;
/// the worker's tests check the two agree). A worker past a large job
/// keeps that much anyway until it sits idle, so the first job and a job
/// after a pause find what the jobs between them do.
pub const AUTO_CAP_BYTES: u64 = 1 << 30;

/// `"auto"` takes at most the available memory divided by this and by the
/// number of workers sharing the machine, so the tasks' own memory, the
/// page cache and the other processes keep the rest. Pretouch and the
/// block cache each take such a share at most.
pub const AUTO_SHARE: u64 = 4;

/// `"auto"` pretouch rounds down to whole buffers of this size (the pool
/// faults in 64 MiB buffers, `workloads::pool::PRETOUCH_PIECE`); less than
/// one is none.
pub const AUTO_PIECE_BYTES: u64 = 64 << 20;

impl MbOrAuto {
    /// The bytes `workers.pretouch_mb` faults in for one of `co_hosted`
    /// workers on a machine with `available` bytes of memory free
    /// ([`available_memory`]): `Auto` is [`AUTO_CAP_BYTES`] within
    /// [`AUTO_SHARE`] of the workers' memory, in whole buffers, and nothing
    /// without a known figure.
    pub fn pretouch_bytes(self, available: Option<u64>, co_hosted: usize) -> u64 {
        match self {
            MbOrAuto::Mb(mb) => mb.saturating_mul(1_000_000),
            MbOrAuto::Auto => {
                let bytes = auto_share(available, co_hosted).min(AUTO_CAP_BYTES);
                bytes - bytes % AUTO_PIECE_BYTES
            }
        }
    }

    /// The bytes of blocks `workers.block_cache_mb` keeps mapped and
    /// locked for one of `co_hosted` workers: `Auto` is [`AUTO_SHARE`] of
    /// the workers' memory, in whole MiB, and nothing without a known
    /// figure.
    pub fn block_cache_bytes(self, available: Option<u64>, co_hosted: usize) -> u64 {
        match self {
            MbOrAuto::Mb(mb) => mb.saturating_mul(1_000_000),
            MbOrAuto::Auto => {
                let bytes = auto_share(available, co_hosted);
                bytes - bytes % (1 << 20)
            }
        }
    }
}

/// One worker's share of the memory `available` to the `co_hosted`
/// workers of a machine.
fn auto_share(available: Option<u64>, co_hosted: usize) -> u64 {
    available.map_or(0, |avail| avail / AUTO_SHARE / (co_hosted.max(1) as u64))
}

impl Serialize for MbOrAuto {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MbOrAuto::Auto => s.serialize_str("auto"),
            MbOrAuto::Mb(mb) => s.serialize_u64(*mb),
        }
    }
}

impl<'de> Deserialize<'de> for MbOrAuto {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = MbOrAuto;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of MB (0 = none) or \"auto\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MbOrAuto, E> {
                Ok(MbOrAuto::Mb(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<MbOrAuto, E> {
                u64::try_from(v)
                    .map(MbOrAuto::Mb)
                    .map_err(|_| E::custom(format!("{v} MB is negative; give 0 for none")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MbOrAuto, E> {
                if v == "auto" {
                    Ok(MbOrAuto::Auto)
                } else {
                    Err(E::custom(format!(
                        "{v:?} is neither a number of MB nor \"auto\""
                    )))
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl super::ClusterConfig {
    /// How many workers run on the machine of the worker `name`: the
    /// `[[worker]]`s with its `host` (those without one share the local
    /// machine). A name not configured is a public instance, started on
    /// the local machine beside at most `public.max_instances` others.
    pub fn workers_sharing_machine(&self, name: &str) -> usize {
        let entry = self.worker.iter().find(|w| w.name == name);
        let host = entry.and_then(|w| w.host.as_deref());
        let configured = self
            .worker
            .iter()
            .filter(|w| w.host.as_deref() == host)
            .count();
        match entry {
            Some(_) => configured,
            None => configured + self.public_section().max_instances as usize,
        }
        .max(1)
    }

    /// The bytes `workers.pretouch_mb` faults in for the worker `name`,
    /// with `available` bytes of memory free on its machine.
    pub fn pretouch_bytes(&self, name: &str, available: Option<u64>) -> u64 {
        self.workers
            .pretouch_mb
            .pretouch_bytes(available, self.workers_sharing_machine(name))
    }

    /// The bytes of blocks `workers.block_cache_mb` keeps mapped and
    /// locked on the worker `name`, with `available` bytes free on its
    /// machine.
    pub fn block_cache_bytes(&self, name: &str, available: Option<u64>) -> u64 {
        self.workers
            .block_cache_mb
            .block_cache_bytes(available, self.workers_sharing_machine(name))
    }
}

/// The memory this process can be given without swapping: /proc/meminfo's
/// `MemAvailable`, and no more than its cgroup's room (`memory.max` less
/// `memory.current`, cgroup v2) when it has a limit, as in a container.
/// `None` if the kernel says neither.
pub fn available_memory() -> Option<u64> {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_available(&t));
    let cgroup = cgroup_dir().and_then(|d| {
        let max = std::fs::read_to_string(d.join("memory.max")).ok()?;
        let current = std::fs::read_to_string(d.join("memory.current")).ok()?;
        cgroup_room(&max, &current)
    });
    match (machine, cgroup) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}

/// `MemAvailable` in bytes from /proc/meminfo's text.
fn meminfo_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The room left under a cgroup v2 limit; `None` without one ("max").
fn cgroup_room(max: &str, current: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// This process's cgroup v2 directory (`0::<path>` in /proc/self/cgroup).
fn cgroup_dir() -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    #[test]
    fn auto_is_the_pools_free_limit_within_a_share_of_the_workers_memory() {
        // A 24 GiB machine with four workers: each gets the cap.
        assert_eq!(MbOrAuto::Auto.pretouch_bytes(Some(22 * GIB), 4), GIB);
        // 2 GiB free for four: 128 MiB each, whole 64 MiB buffers.
        assert_eq!(MbOrAuto::Auto.pretouch_bytes(Some(2 * GIB), 4), 128 * MIB);
        assert_eq!(
            MbOrAuto::Auto.pretouch_bytes(Some(2 * GIB + 300 * MIB), 4),
            128 * MIB
        );
        // Less than one buffer's worth: none.
        assert_eq!(MbOrAuto::Auto.pretouch_bytes(Some(GIB), 8), 0);
        // Unknown memory: none; no workers counted is one.
        assert_eq!(MbOrAuto::Auto.pretouch_bytes(None, 1), 0);
        assert_eq!(MbOrAuto::Auto.pretouch_bytes(Some(8 * GIB), 0), GIB);
        // A number is taken as it is, in MB.
        assert_eq!(
            MbOrAuto::Mb(1100).pretouch_bytes(Some(GIB), 64),
            1_100_000_000
        );
        assert_eq!(MbOrAuto::Mb(0).pretouch_bytes(Some(64 * GIB), 1), 0);
    }

    #[test]
    fn the_auto_block_cache_is_a_share_of_the_workers_memory_without_a_cap() {
        // 24 GiB free for two workers: 3 GiB each; for four, 1.5 GiB.
        assert_eq!(MbOrAuto::Auto.block_cache_bytes(Some(24 * GIB), 2), 3 * GIB);
        assert_eq!(
            MbOrAuto::Auto.block_cache_bytes(Some(24 * GIB), 4),
            1536 * MIB
        );
        // Whole MiB; unknown memory: none.
        assert_eq!(
            MbOrAuto::Auto.block_cache_bytes(Some(4 * GIB + 1000), 1),
            GIB
        );
        assert_eq!(MbOrAuto::Auto.block_cache_bytes(None, 1), 0);
        assert_eq!(
            MbOrAuto::Mb(300).block_cache_bytes(Some(GIB), 8),
            300_000_000
        );
        assert_eq!(MbOrAuto::Mb(0).block_cache_bytes(Some(GIB), 1), 0);
    }

    #[test]
    fn available_memory_is_the_smaller_of_the_machines_and_the_cgroups() {
        let info = "MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_available(info), Some(20_000_000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 5 kB\n"), None);
        assert_eq!(cgroup_room("max\n", "1000\n"), None);
        assert_eq!(cgroup_room("4294967296\n", "1073741824\n"), Some(3 << 30));
        assert_eq!(cgroup_room("100\n", "200\n"), Some(0));
        // On this machine: some figure, and no more than /proc/meminfo's.
        let avail = available_memory().expect("a Linux machine says its memory");
        let info = std::fs::read_to_string("/proc/meminfo").unwrap();
        assert!(avail <= meminfo_available(&info).unwrap() + (256 << 20));
    }

    #[test]
    fn it_is_read_as_a_number_of_mb_or_auto_and_nothing_else() {
        #[derive(Deserialize, Serialize)]
        struct T {
            p: MbOrAuto,
        }
        let p = |s: &str| toml::from_str::<T>(s).map(|t| t.p);
        assert_eq!(p("p = 1100").unwrap(), MbOrAuto::Mb(1100));
        assert_eq!(p("p = \"auto\"").unwrap(), MbOrAuto::Auto);
        let err = p("p = \"lots\"").unwrap_err().to_string();
        assert!(
            err.contains("\"lots\" is neither a number of MB nor \"auto\""),
            "{err}"
        );
        let err = p("p = -5").unwrap_err().to_string();
        assert!(err.contains("-5 MB is negative"), "{err}");
        assert!(p("p = 1.5").is_err());
        for v in [MbOrAuto::Auto, MbOrAuto::Mb(150)] {
            let text = toml::to_string(&T { p: v }).unwrap();
            assert_eq!(p(&text).unwrap(), v, "{text}");
        }
    }
}
