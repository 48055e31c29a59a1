//! A tmpfs mounted for a test (root): a small real disk that fills.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for a test, unmounted when dropped.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    pub fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mounting a tmpfs at {}", at.display());
        Tmpfs(at.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
