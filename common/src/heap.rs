//! The process's heap as its allocator counts it: what a leak grows, where
//! the resident size also keeps what the allocator holds free.

/// The allocator's own figures (glibc's `mallinfo2`): bytes handed out and
/// still in use (including blocks mapped on their own), and bytes free in
/// its arenas (what fragmentation keeps resident). None off glibc.
pub fn figures() -> Option<(u64, u64)> {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters, under
        // its arenas' locks; it touches no allocation.
        let m = unsafe { libc::mallinfo2() };
        Some(((m.uordblks + m.hblkhd) as u64, m.fordblks as u64))
    }
    #[cfg(not(target_env = "gnu"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    /// Other tests run beside this one on other threads and allocate and
    /// free in the same counters, so one reading may be off by what they
    /// freed meanwhile: the growth must show in one of a few tries (a
    /// counter that does not see the allocation fails them all).
    #[test]
    #[cfg(target_env = "gnu")]
    fn a_held_allocation_is_in_use_and_counted() {
        let mut seen = Vec::new();
        for _ in 0..8 {
            let (before, _) = super::figures().unwrap();
            let held = std::hint::black_box(vec![7u8; 8 << 20]);
            let (during, _) = super::figures().unwrap();
            drop(held);
            if during >= before + (8 << 20) - 4096 {
                return;
            }
            seen.push((before, during));
        }
        panic!("8 MiB held never showed in the heap in use: {seen:?}");
    }
}
