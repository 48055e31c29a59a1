//! `Nic`: the worker's emulated network interface. Every transfer of the
//! worker draws on it: serving a block on `tx`, fetching on `rx`.
//!
//! Each direction is a `Link` that hands out transmission time in arrival
//! order: a stream asking to move `n` bytes reserves the interval
//! `[max(now, busy_until), +n/rate)` and sleeps until its end. Streams that
//! ask in small pieces (`PIECE` bytes) therefore interleave, so `k` concurrent
//! streams each get about `rate / k`, and an idle link lets one stream use
//! all of it (work-conserving). Reservations are made in virtual time, so
//! timer jitter does not accumulate. In the Linux netns mode this emulation is
//! off and the kernel's qdisc does the same job.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Size of the pieces streams pace themselves in; small enough that
/// concurrent streams interleave finely, large enough to keep overhead low.
pub const PIECE: usize = 64 * 1024;

/// How far behind real time a link's schedule may be and still continue
/// from it: bounds the catch-up burst to `SLACK * rate` bytes.
const SLACK: Duration = Duration::from_millis(5);

#[derive(Debug)]
pub struct Link {
    /// Bytes per second as `f64` bits; 0 = unlimited. An emulated link's
    /// rate may change while it runs (`PUT /v1/emulation`: a disk or NIC
    /// slowed for a fault campaign); a reservation already made keeps the
    /// rate it was made at.
    rate: AtomicU64,
    busy_until: Mutex<Option<Instant>>,
    bytes: AtomicU64,
}

impl Link {
    pub fn new(rate: Option<f64>) -> Self {
        Link {
            rate: AtomicU64::new(rate.map_or(0, f64::to_bits)),
            busy_until: Mutex::new(None),
            bytes: AtomicU64::new(0),
        }
    }

    pub fn rate(&self) -> Option<f64> {
        match self.rate.load(Ordering::Relaxed) {
            0 => None,
            bits => Some(f64::from_bits(bits)),
        }
    }

    /// Sets an emulated link's rate (bytes per second, positive and
    /// finite); refused for a link that was started unlimited, which
    /// nothing paces.
    pub fn set_rate(&self, rate: f64) -> Result<(), String> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("a rate must be positive and finite, not {rate}"));
        }
        if self.rate().is_none() {
            return Err(
                "this link is not emulated (the worker started without a rate for it)".into(),
            );
        }
        self.rate.store(rate.to_bits(), Ordering::Relaxed);
        Ok(())
    }

    /// Total bytes moved through this link.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Moves `n` bytes in [`PIECE`]-sized reservations, so other streams
    /// interleave with a large transfer.
    pub async fn acquire_all(&self, n: u64) {
        let mut left = n;
        while left > 0 {
            let k = left.min(PIECE as u64);
            self.acquire(k as usize).await;
            left -= k;
        }
    }

    /// Waits until `n` bytes may pass, given everyone else's reservations.
    pub async fn acquire(&self, n: usize) {
        let Some(rate) = self.rate() else {
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            return;
        };
        let end = {
            let mut busy = self.busy_until.lock().unwrap();
            let now = Instant::now();
            // A reservation that ended less than SLACK ago still sets the
            // start: timers fire up to a millisecond late, and without this a
            // lone stream would lose that time on every piece.
            let start = match *busy {
                Some(b) if b + SLACK > now => b,
                _ => now,
            };
            let end = start + Duration::from_secs_f64(n as f64 / rate);
            *busy = Some(end);
            end
        };
        tokio::time::sleep_until(end).await;
        // Counted once its transmission time is over, so sampled counters
        // show the rate the link gave, not the reservations ahead of it.
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Transmit and receive links of one worker.
#[derive(Debug)]
pub struct Nic {
    pub tx: Link,
    pub rx: Link,
}

impl Nic {
    /// A full-duplex NIC of `rate` bytes/s per direction (`None` = unlimited).
    pub fn new(rate: Option<f64>) -> Self {
        Nic {
            tx: Link::new(rate),
            rx: Link::new(rate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Moves `total` bytes through `link` in pieces; returns when it finished.
    async fn stream(link: Arc<Link>, total: usize) -> Duration {
        let t0 = Instant::now();
        let mut left = total;
        while left > 0 {
            let n = left.min(PIECE);
            link.acquire(n).await;
            left -= n;
        }
        t0.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn one_stream_gets_the_full_rate() {
        let link = Arc::new(Link::new(Some(10e6)));
        let d = stream(link.clone(), 10_000_000).await;
        assert!((d.as_secs_f64() - 1.0).abs() < 0.01, "{d:?}");
        assert_eq!(link.bytes(), 10_000_000);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_streams_share_fairly() {
        for k in [2usize, 4] {
            let link = Arc::new(Link::new(Some(10e6)));
            let handles: Vec<_> = (0..k)
                .map(|_| tokio::spawn(stream(link.clone(), 5_000_000)))
                .collect();
            let mut times = Vec::new();
            for h in handles {
                times.push(h.await.unwrap().as_secs_f64());
            }
            // k streams of 5 MB on 10 MB/s: all finish together at k * 0.5 s,
            // i.e. each got rate / k.
            for t in &times {
                assert!((t - k as f64 * 0.5).abs() < 0.02, "k={k}: {times:?}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_stream_gets_its_share_from_then_on() {
        let link = Arc::new(Link::new(Some(10e6)));
        let a = tokio::spawn(stream(link.clone(), 10_000_000));
        tokio::time::sleep(Duration::from_millis(500)).await;
        // A alone for 0.5 s (5 MB), then both at 5 MB/s: B's 2.5 MB take 0.5 s.
        let b = stream(link.clone(), 2_500_000).await;
        assert!((b.as_secs_f64() - 0.5).abs() < 0.03, "{b:?}");
        let a = a.await.unwrap();
        assert!((a.as_secs_f64() - 1.25).abs() < 0.03, "{a:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slowed_link_paces_at_its_new_rate_and_an_unlimited_one_refuses() {
        let link = Arc::new(Link::new(Some(10e6)));
        assert!(link.set_rate(0.0).is_err() && link.set_rate(f64::NAN).is_err());
        link.set_rate(2e6).unwrap();
        assert_eq!(link.rate(), Some(2e6));
        let d = stream(link.clone(), 2_000_000).await;
        assert!((d.as_secs_f64() - 1.0).abs() < 0.01, "{d:?}");
        let open = Link::new(None);
        assert!(open.set_rate(1e6).unwrap_err().contains("not emulated"));
        assert_eq!(open.rate(), None);
    }

    #[tokio::test]
    async fn unlimited_never_waits() {
        let link = Link::new(None);
        let t0 = std::time::Instant::now();
        for _ in 0..1000 {
            link.acquire(PIECE).await;
        }
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert_eq!(link.bytes(), 1000 * PIECE as u64);
    }
}
