//! A TUN worker's packet I/O ([`PacketIo`]) for the runtime's worker loop:
//! one TUN queue, one [`Pipeline`]. A batch reads until the queue is empty
//! (non-blocking) or [`BATCH`] packets came, translating and writing back
//! each packet as it comes; an idle worker sleeps in `poll` on the queue.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use sixgate_core::{Config, Translator};
use sixgate_dataplane::{Follows, IoCounters, PacketIo, Sleep};
use tun_rs::SyncDevice;

use crate::pipeline::Pipeline;
use crate::vnet::VnetHdr;

/// Most packets handled between two counter publications and stop checks.
pub const BATCH: usize = 64;

/// One worker's TUN queue and pipeline.
pub(crate) struct TunIo {
    pub index: usize,
    pub queue: SyncDevice,
    pub pipeline: Pipeline,
}

/// Write one packet to `queue`, behind its virtio-net header in `vnet` mode.
fn write(queue: &SyncDevice, vnet: bool, h: &VnetHdr, p: &[u8]) -> bool {
    let r = if vnet {
        let hb = h.encode();
        queue.send_vectored(&[IoSlice::new(&hb), IoSlice::new(p)])
    } else {
        queue.send(p)
    };
    r.is_ok()
}

impl Follows for TunIo {
    fn reconfigure(&mut self, cfg: Arc<Config>) -> Result<(), sixgate_core::reconfigure::Refused> {
        self.pipeline.reconfigure(cfg)
    }
    fn translator(&self) -> &Translator {
        self.pipeline.translator()
    }
    fn translator_mut(&mut self) -> &mut Translator {
        self.pipeline.translator_mut()
    }
}

impl PacketIo for TunIo {
    fn batch(&mut self, now_ns: u64) -> Result<bool, String> {
        let vnet = self.pipeline.vnet();
        let queue = &self.queue;
        let mut emit = |h: &VnetHdr, p: &[u8]| write(queue, vnet, h, p);
        for _ in 0..BATCH {
            let r = {
                let (hdr, data) = self.pipeline.rx_buffers();
                if vnet {
                    queue.recv_vectored(&mut [IoSliceMut::new(hdr), IoSliceMut::new(data)])
                } else {
                    queue.recv(data)
                }
            };
            match r {
                Ok(n) => self.pipeline.process(n, now_ns, &mut emit),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.pipeline.io.rx_errors += 1;
                    // EBADFD: the kernel detached the queue from its
                    // device, which is what removing the device does.
                    let why = if e.raw_os_error() == Some(libc::EBADFD) {
                        " (device removed?)"
                    } else {
                        ""
                    };
                    return Err(format!(
                        "worker {}: cannot read from its TUN queue{why}: {e}",
                        self.index
                    ));
                }
            }
        }
        Ok(true)
    }

    fn tick(&mut self, now_ns: u64) {
        let vnet = self.pipeline.vnet();
        let queue = &self.queue;
        self.pipeline.tick(now_ns, &mut |h: &VnetHdr, p: &[u8]| {
            write(queue, vnet, h, p)
        });
    }

    fn io_counters(&self) -> &IoCounters {
        &self.pipeline.io
    }

    fn sleep(&mut self) -> Option<Sleep> {
        Some(Sleep {
            fds: [self.queue.as_raw_fd(), -1, -1],
            timeout_ms: None,
        })
    }

    fn woke(&mut self, revents: [i16; 3]) -> Result<(), String> {
        let r = revents[0];
        if r & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 && r & libc::POLLIN == 0 {
            return Err(format!(
                "worker {}: its TUN queue reports an error (device removed?)",
                self.index
            ));
        }
        Ok(())
    }
}
