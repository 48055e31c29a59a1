//! Where a block writer's bytes go: the page cache, kept there (input a
//! job will read), or to the disk without staying in it (job output, read
//! rarely soon).
//!
//! Output goes around the page cache where the file system allows
//! ([`DirectSink`]: O_DIRECT from two aligned buffers, a thread writing one
//! while the caller fills the other), so its bytes are copied once, into a
//! buffer the sink reuses, and the disk always has a write. Elsewhere it
//! is dropped behind as HDFS does (`dfs.datanode.drop.cache.behind.writes`;
//! [`StreamSink`]): the writer starts the disk's writeback of each
//! [`StreamSink::CHUNK`] as soon as it is written (`sync_file_range`),
//! waits for the one before it and tells the kernel its pages can go
//! (`posix_fadvise(DONTNEED)`). A first O_DIRECT version wrote one 4 MiB
//! buffer at a time from the caller's thread, which waited for each: on a
//! virtual disk whose writes are slow one by one that was the job's floor.
//! Streaming removed the wait but copied every byte into fresh pages of
//! the cache; on two cores at two replicas that copy was the reduce's
//! largest CPU cost (docs/benchmarks.md, "Output around the page cache
//! again, two buffers deep").
//!
//! Where job output is not synced at its close (`workers.sync_output =
//! false`, the default), the same sink may hold up to
//! [`DirectSink::DEFERRED`] buffers with its thread instead of two, and
//! its block is committed with writes still in flight: the store's
//! writeback thread waits for them and syncs the block after its task has
//! ended (`super::writeback`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;

/// A writer's sink (see the module's docs).
pub(super) enum Sink {
    Buffered(BufWriter<File>),
    Streamed(StreamSink),
    Direct(DirectSink),
}

/// A sink whose last byte has been handed over.
pub(super) enum Finished {
    /// Every byte is in the file, to be synced before the block is
    /// visible (`drop`: its pages then go).
    Written { file: File, drop: bool },
    /// Writes still in flight ([`DirectSink::complete`] waits for them).
    InFlight(DirectSink),
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

    /// Writes around the page cache ([`DirectSink`]) where the file
    /// system allows, else streams. `defer`: the sink keeps up to
    /// [`DirectSink::DEFERRED`] buffers in flight and finishes without
    /// waiting for them.
    pub(super) fn direct(file: File, path: &std::path::Path, defer: bool) -> Sink {
        match DirectSink::create(path, defer) {
            Some(d) => Sink::Direct(d),
            None => Sink::streamed(file),
        }
    }

    pub(super) fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Sink::Buffered(w) => w.write_all(data),
            Sink::Streamed(s) => s.write_all(data),
            Sink::Direct(d) => d.write_all(data),
        }
    }

    /// Hands over the last bytes: the file with every byte in it, or the
    /// sink with writes in flight (a deferring [`DirectSink`]).
    pub(super) fn finish(self) -> io::Result<Finished> {
        let written = |file, drop| Finished::Written { file, drop };
        match self {
            Sink::Buffered(w) => Ok(written(w.into_inner().map_err(|e| e.into_error())?, false)),
            Sink::Streamed(s) => Ok(written(s.finish()?, true)),
            Sink::Direct(mut d) if d.defer => {
                d.hand_over_tail()?;
                Ok(Finished::InFlight(d))
            }
            Sink::Direct(d) => Ok(written(d.complete()?, false)),
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
    // bytes to the disk at the commit's sync, or by the kernel's own
    // writeback.
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

/// O_DIRECT writes, around the page cache, from aligned buffers a thread of
/// the sink's own writes while the caller fills the next: the caller's
/// only cost per byte is one copy into a buffer it reuses (no page of the
/// cache to allocate, charge and free), and the disk always has a write.
pub(super) struct DirectSink {
    /// The buffer being filled.
    buf: Option<Aligned>,
    /// Bytes handed to the sink.
    len: u64,
    /// Buffers free to fill (the writer's gives them back).
    free: Vec<Aligned>,
    /// Buffers with the writer thread, and the channel back. Dropped
    /// unfinished (the block abandoned), the sink closes `out`: the thread
    /// ends with its queue, and nothing waits for it.
    out: Option<std::sync::mpsc::SyncSender<(Aligned, u64)>>,
    back: std::sync::mpsc::Receiver<io::Result<Aligned>>,
    with_writer: usize,
    writer: Option<std::thread::JoinHandle<()>>,
    file: File,
    /// Buffers it may have with its thread: [`DirectSink::BUFFERS`], or
    /// [`DirectSink::DEFERRED`] where it finishes without waiting.
    most: usize,
    defer: bool,
}

/// A buffer of up to [`DirectSink::BUF`] bytes starting at an
/// [`DirectSink::ALIGN`] boundary: `raw[off..]`, filled as far as `raw`'s
/// length (its heap block, with room for `off + BUF`, never moves). It is
/// taken from the worker's buffer pool and goes back to it when dropped, so
/// a block's output does not fault in 16 MiB of fresh pages each time (on
/// this testbed's VMs new memory costs about four times memory reused:
/// `workloads::pool`).
struct Aligned {
    raw: Vec<u8>,
    off: usize,
}

impl Aligned {
    fn new() -> Aligned {
        let mut raw = workloads::pool::take(DirectSink::BUF + DirectSink::ALIGN);
        let off = raw.as_ptr().align_offset(DirectSink::ALIGN);
        // Within the room `take` gave; only the bytes before the boundary
        // are written here, the rest as the caller fills them.
        raw.resize(off, 0);
        Aligned { raw, off }
    }

    fn filled(&self) -> usize {
        self.raw.len() - self.off
    }

    /// Appends `data`; the caller keeps within `BUF`.
    fn push(&mut self, data: &[u8]) {
        debug_assert!(self.filled() + data.len() <= DirectSink::BUF);
        self.raw.extend_from_slice(data);
    }

    /// Zeroes from the end of what was filled up to `n` bytes.
    fn pad_to(&mut self, n: usize) {
        self.raw.resize(self.off + n, 0);
    }

    fn bytes(&self) -> &[u8] {
        &self.raw[self.off..]
    }

    fn clear(&mut self) {
        self.raw.truncate(self.off);
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        workloads::pool::give(std::mem::take(&mut self.raw));
    }
}

impl DirectSink {
    /// Disk writes are aligned to this (the largest common logical block).
    const ALIGN: usize = 4096;
    /// Bytes a write hands the disk at once.
    pub(super) const BUF: usize = 8 << 20;
    /// Buffers a sink fills and writes in turn.
    const BUFFERS: usize = 2;
    /// Buffers a deferring sink may have in flight (256 MiB): on a disk
    /// slower than the task, its output waits in them (buffers of the
    /// worker's pool, faulted in already) rather than the task for the disk.
    pub(super) const DEFERRED: usize = 32;

    /// A sink writing `path` with O_DIRECT; None where the file system
    /// refuses it (tmpfs): the caller streams through the page cache.
    pub(super) fn create(path: &std::path::Path, defer: bool) -> Option<DirectSink> {
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()?;
        let theirs = file.try_clone().ok()?;
        let most = if defer { Self::DEFERRED } else { Self::BUFFERS };
        let (out, todo) = std::sync::mpsc::sync_channel::<(Aligned, u64)>(most);
        let (done, back) = std::sync::mpsc::channel();
        let writer = std::thread::Builder::new()
            .name("block-writer".into())
            .spawn(move || {
                for (mut buf, at) in todo {
                    let r = theirs.write_all_at(buf.bytes(), at).map(|()| {
                        buf.clear();
                        buf
                    });
                    if done.send(r).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(DirectSink {
            buf: Some(Aligned::new()),
            len: 0,
            free: (1..Self::BUFFERS).map(|_| Aligned::new()).collect(),
            out: Some(out),
            back,
            with_writer: 0,
            writer: Some(writer),
            file,
            most,
            defer,
        })
    }

    pub(super) fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let buf = self.buf.as_mut().ok_or_else(failed)?;
            let n = (Self::BUF - buf.filled()).min(data.len());
            buf.push(&data[..n]);
            data = &data[n..];
            if buf.filled() == Self::BUF {
                self.hand_over(Self::BUF)?;
            }
        }
        Ok(())
    }

    /// Hands the buffer (its `len` bytes filled, padded to a multiple of
    /// `ALIGN`) to the writer thread and takes a free buffer, waiting for
    /// one if need be.
    fn hand_over(&mut self, len: usize) -> io::Result<()> {
        self.send(len)?;
        // Buffers the thread is done with come back first; a new one only
        // while fewer than `most` are out.
        while let Ok(r) = self.back.try_recv() {
            self.with_writer -= 1;
            self.free.push(r?);
        }
        let next = match self.free.pop() {
            Some(b) => b,
            None if self.with_writer + 1 < self.most => Aligned::new(),
            None => self.take_back()?,
        };
        self.buf = Some(next);
        Ok(())
    }

    /// Sends the buffer being filled (`len` bytes, padded) to the thread.
    fn send(&mut self, len: usize) -> io::Result<()> {
        let buf = self.buf.take().ok_or_else(failed)?;
        let at = self.len;
        self.len += len as u64;
        let gone = || io::Error::other("the block's writer thread stopped");
        let out = self.out.as_ref().ok_or_else(gone)?;
        out.send((buf, at)).map_err(|_| gone())?;
        self.with_writer += 1;
        Ok(())
    }

    /// A buffer the writer thread is done with, or its write's error.
    fn take_back(&mut self) -> io::Result<Aligned> {
        let Ok(r) = self.back.recv() else {
            // Nothing more will come back.
            self.with_writer = 0;
            return Err(io::Error::other("the block's writer thread stopped"));
        };
        self.with_writer -= 1;
        r
    }

    /// Hands the tail (padded to the alignment) to the thread; no buffer
    /// is taken after it.
    fn hand_over_tail(&mut self) -> io::Result<()> {
        let buf = self.buf.as_mut().ok_or_else(failed)?;
        let len = buf.filled();
        if len > 0 {
            buf.pad_to(len.next_multiple_of(Self::ALIGN));
            self.send(len)?;
        }
        self.buf = None;
        self.free.clear();
        Ok(())
    }

    /// Bytes handed to the sink.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Writes the tail (padded to the alignment, the file then cut back to
    /// its length), if not yet handed over, and waits for every write.
    pub(super) fn complete(mut self) -> io::Result<File> {
        if self.buf.is_some() {
            self.hand_over_tail()?;
        }
        self.out = None;
        let mut first_error = None;
        while self.with_writer > 0 {
            if let Err(e) = self.take_back() {
                first_error.get_or_insert(e);
            }
        }
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        self.file.set_len(self.len)?;
        Ok(self.file)
    }
}

/// A sink used after one of its writes failed (that error was returned).
fn failed() -> io::Error {
    io::Error::other("the block's earlier write failed")
}
