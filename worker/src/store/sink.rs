//! Where a block writer's bytes go: the page cache, kept there (input a
//! job will read), or streamed through it to the disk and dropped behind
//! (job output, read rarely soon).
//!
//! Dropping behind is HDFS's (`dfs.datanode.drop.cache.behind.writes`):
//! the writer starts the disk's writeback of each [`StreamSink::CHUNK`] as
//! soon as it is written (`sync_file_range`), waits for the one before it
//! and tells the kernel its pages can go (`posix_fadvise(DONTNEED)`). So at
//! most two chunks of a block are dirty at a time, the page cache does not
//! fill with output, and the disk gets a whole chunk's writes at once: deep
//! queues where the device wants them. An earlier version wrote around the
//! page cache with O_DIRECT, 4 MiB at a time, one write in flight; on a
//! virtual disk whose writes are slow one by one that was the job's floor
//! (docs/benchmarks.md, "Output streamed, and what each job used").

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;

/// A writer's sink (see the module's docs).
pub(super) enum Sink {
    Buffered(BufWriter<File>),
    Streamed(StreamSink),
}

impl Sink {
    /// Bytes a writer buffers before handing them to the kernel.
    const BUF: usize = 1 << 20;

    /// Keeps what is written in the page cache.
    pub(super) fn kept(file: File) -> Sink {
        Sink::Buffered(BufWriter::with_capacity(Self::BUF, file))
    }

    /// Streams what is written to the disk, dropping it behind.
    pub(super) fn streamed(file: File) -> Sink {
        Sink::Streamed(StreamSink {
            out: BufWriter::with_capacity(Self::BUF, file),
            written: 0,
            started: 0,
        })
    }

    pub(super) fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Sink::Buffered(w) => w.write_all(data),
            Sink::Streamed(s) => s.write_all(data),
        }
    }

    /// The file with every byte written to it, and whether the caller
    /// should drop its pages once it has synced it.
    pub(super) fn finish(self) -> io::Result<(File, bool)> {
        match self {
            Sink::Buffered(w) => Ok((w.into_inner().map_err(|e| e.into_error())?, false)),
            Sink::Streamed(s) => Ok((s.finish()?, true)),
        }
    }
}

/// Writes streamed to the disk chunk by chunk (see the module's docs).
pub(super) struct StreamSink {
    out: BufWriter<File>,
    /// Bytes handed to the writer.
    written: u64,
    /// Bytes whose writeback has been started: whole chunks.
    started: u64,
}

impl StreamSink {
    /// Bytes started to the disk at once.
    pub(super) const CHUNK: u64 = 8 << 20;

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        if self.written - self.started >= Self::CHUNK {
            // The kernel has to have the chunk's bytes to write them.
            self.out.flush()?;
            while self.written - self.started >= Self::CHUNK {
                self.start_next()?;
            }
        }
        Ok(())
    }

    /// Starts the writeback of the chunk at `started`, then waits for the
    /// one before it and drops its pages.
    fn start_next(&mut self) -> io::Result<()> {
        let file = self.out.get_ref();
        let at = self.started;
        write_back(file, at, Self::CHUNK, false)?;
        if at >= Self::CHUNK {
            write_back(file, at - Self::CHUNK, Self::CHUNK, true)?;
            drop_pages(file, at - Self::CHUNK, Self::CHUNK);
        }
        self.started += Self::CHUNK;
        Ok(())
    }

    fn finish(self) -> io::Result<File> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

/// Starts writing `len` bytes of `file` at `at` back to the disk; with
/// `wait`, waits until they are (earlier writeback of them included).
fn write_back(file: &File, at: u64, len: u64, wait: bool) -> io::Result<()> {
    let flags = if wait {
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER
    } else {
        libc::SYNC_FILE_RANGE_WRITE
    };
    // SAFETY: a plain system call on an open descriptor.
    let r = unsafe { libc::sync_file_range(file.as_raw_fd(), at as i64, len as i64, flags) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    // A file system without it (ENOSYS, EINVAL on some) still gets its
    // bytes to the disk at the commit's sync.
    match e.raw_os_error() {
        Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::ESPIPE) => Ok(()),
        _ => Err(e),
    }
}

/// Tells the kernel the pages of `len` bytes of `file` at `at` (0: to its
/// end) will not be read soon: clean ones go. A hint; a refusal is
/// harmless.
pub(super) fn drop_pages(file: &File, at: u64, len: u64) {
    let _ = nix::fcntl::posix_fadvise(
        file.as_raw_fd(),
        at as i64,
        len as i64,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    );
}
