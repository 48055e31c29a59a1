//! A map's block read: by the remote model, through the source's disk
//! ([`ReplayCluster::disk`]) and, under the shuffle over the network
//! ([`ReplayCluster::shuffle_net`]), across the links.

use super::*;

impl Replay<'_> {
    /// `task`'s block read from worker `src` to `tw` at `t`, by the remote
    /// model and (with [`ReplayCluster::disk`]) the source's disk: the
    /// task's end when its start fixes it, None while a shared read is in
    /// flight (its `len` runs after it).
    pub(super) fn start_read(
        &mut self,
        task: TaskRef,
        (tw, src): (usize, usize),
        t: u64,
        mut len: u64,
        bytes: u64,
    ) -> Option<u64> {
        let disk_bpms = self.cluster.disk_bpms(src);
        let on_disk = disk_bpms > 0.0 && bytes > 0;
        let mut net_bpms = 0.0;
        let read = |left, then_ms, floor, how| Transfer {
            job: task.job,
            index: task.index,
            worker: tw as u32,
            source: src as u32,
            start: t,
            left,
            then_ms,
            floor,
            how,
            fetch: false,
            copy_of: None,
            only_load: false,
        };
        if tw != src {
            match self.remote {
                RemoteModel::Static(cost) => {
                    len += cost.extra_ms(self.remote_out[src] - 1, self.remote_in[tw] - 1, bytes);
                    // Without the disk, the map ends no sooner than its
                    // block has crossed.
                    let holds = (!on_disk).then_some(t + len);
                    if self.block_on_links(task, (tw, src), t, bytes, holds) && holds.is_some() {
                        return None;
                    }
                }
                RemoteModel::FairShare {
                    transfer_ms,
                    ref_bytes,
                } => {
                    let alone = if ref_bytes > 0 && bytes > 0 {
                        transfer_ms * bytes as f64 / ref_bytes as f64
                    } else {
                        transfer_ms
                    };
                    if !on_disk {
                        let how = match self.block_on_links(task, (tw, src), t, bytes, None) {
                            true => Flow::NetLoaded,
                            false => Flow::Net,
                        };
                        self.flows.push(read(alone.max(0.0), len, 0, how));
                        return None;
                    }
                    if alone > 0.0 {
                        net_bpms = bytes as f64 / alone;
                    }
                }
            }
        }
        if !on_disk {
            return Some(t + len);
        }
        let floor = t + self.cluster.paced_ms(bytes);
        let how = Flow::Disk {
            disk_bpms,
            net_bpms,
        };
        self.flows.push(read(bytes as f64, len, floor, how));
        None
    }

    /// Under the shuffle over the network ([`ReplayCluster::shuffle_net`]),
    /// a data-remote map's `bytes` from `src` to `tw` cross the two links
    /// at their rate from its start `t`, shared with the shuffle's parts,
    /// the output copies and the other blocks on them, as on the real
    /// cluster (whose workers' NICs carry all of these). The map's own
    /// length stays its remote model's, the transfer only loading the
    /// links ([`Transfer::only_load`]), unless `holds`: the map's end by
    /// its remote model, and then the map ends at the later of that and
    /// the block's arrival (a map cannot end before its input has
    /// crossed; where the links keep up nothing changes, and where they
    /// do not, the blocks' bytes no longer outlive the maps that read
    /// them and pile up on the links). Whether it was pushed.
    pub(super) fn block_on_links(
        &mut self,
        task: TaskRef,
        (tw, src): (usize, usize),
        t: u64,
        bytes: u64,
        holds: Option<u64>,
    ) -> bool {
        let Some(net) = self.cluster.shuffle_net else {
            return false;
        };
        if bytes == 0 || net.link_bpms <= 0.0 {
            return false;
        }
        self.flows.push(Transfer {
            job: task.job,
            index: task.index,
            worker: tw as u32,
            source: src as u32,
            start: t,
            left: bytes as f64 / net.link_bpms,
            then_ms: 0,
            floor: holds.unwrap_or(0),
            how: Flow::Net,
            fetch: false,
            copy_of: None,
            only_load: holds.is_none(),
        });
        true
    }
}
