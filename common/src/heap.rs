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
    #[test]
    #[cfg(target_env = "gnu")]
    fn a_held_allocation_is_in_use_and_counted() {
        let (before, _) = super::figures().unwrap();
        let held = vec![7u8; 8 << 20];
        let (during, _) = super::figures().unwrap();
        assert!(during >= before + (8 << 20) - 4096, "{before} -> {during}");
        drop(held);
    }
}
