//! A worker thread: one TUN queue, one CPU, one [`Pipeline`]. Reads until the
//! queue is empty (non-blocking), translating and writing back each packet as it
//! comes, then publishes its counters and sleeps in `poll` on the queue and the
//! stop pipe. In stateful NAT64 mode the sleep is at most 100 ms and the
//! translator's timers run at least that often, busy or idle
//! ([`Pipeline::tick`]); what they log goes to `tracing` (target
//! `sixgate::nat64`) when `event_log` is on.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tun_rs::SyncDevice;

use crate::control::worker_thread;
use crate::live::Follower;
use crate::pipeline::{Pipeline, TICK_NS};
use crate::stats::WorkerStats;
use crate::vnet::VnetHdr;

/// Most packets handled between two counter publications and stop checks.
pub const BATCH: usize = 64;

/// Longest sleep in nat64 mode: the timers' period.
const TICK_MS: i32 = (TICK_NS / 1_000_000) as i32;

/// Everything one worker owns or shares.
pub(crate) struct Worker {
    pub index: usize,
    pub cpu: Option<usize>,
    pub queue: SyncDevice,
    pub pipeline: Pipeline,
    pub stats: Arc<WorkerStats>,
    /// Set by the main thread to stop.
    pub stop: Arc<AtomicBool>,
    /// Read end of the stop pipe: hangs up when the main thread closes the write end.
    pub stop_fd: Arc<OwnedFd>,
    /// Tells the main thread that this worker failed.
    pub wake: UnixStream,
    /// Why a worker failed (first failure wins).
    pub failure: Arc<Mutex<Option<String>>>,
    /// Log NAT64 events (`[nat64] event_log`).
    pub event_log: bool,
    /// New configurations and questions from the control plane.
    pub follower: Follower,
}

impl Worker {
    /// The thread body.
    pub fn run(mut self) -> Result<(), String> {
        worker_thread::pin(self.index, self.cpu);
        let result = self.run_loop();
        self.stats
            .publish(self.pipeline.counters(), &self.pipeline.io);
        worker_thread::finish(result, &self.failure, &mut self.wake)
    }

    fn run_loop(&mut self) -> Result<(), String> {
        let start = Instant::now();
        let vnet = self.pipeline.vnet();
        let queue = &self.queue;
        let mut emit = |h: &VnetHdr, p: &[u8]| {
            let r = if vnet {
                let hb = h.encode();
                queue.send_vectored(&[IoSlice::new(&hb), IoSlice::new(p)])
            } else {
                queue.send(p)
            };
            r.is_ok()
        };
        let nat64 = self.pipeline.nat64();
        let mut next_tick = 0u64;
        loop {
            let now_ns = start.elapsed().as_nanos() as u64;
            if nat64 && now_ns >= next_tick {
                self.pipeline.tick(now_ns, &mut emit);
                let index = self.index;
                let log = self.event_log;
                self.pipeline.drain_events(|e| {
                    if log {
                        crate::events::log(index, e);
                    }
                });
                if let Some(s) = self.pipeline.nat64_stats() {
                    self.stats.publish_nat64(s);
                }
                next_tick = now_ns + TICK_NS;
            }
            if self.follower.changed() {
                self.follower.follow(&mut self.pipeline, now_ns);
            }
            let mut dry = false;
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
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        dry = true;
                        break;
                    }
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
            self.stats
                .publish(self.pipeline.counters(), &self.pipeline.io);
            if self.stop.load(Relaxed) {
                return Ok(());
            }
            if dry && self.wait_readable(if nat64 { TICK_MS } else { -1 })? {
                return Ok(());
            }
        }
    }

    /// Sleep until the queue has a packet, the control plane has something, or
    /// `timeout_ms` ran out (false), or the stop pipe hangs up (true).
    fn wait_readable(&self, timeout_ms: i32) -> Result<bool, String> {
        let mut fds = [
            libc::pollfd {
                fd: self.queue.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.stop_fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.follower.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // SAFETY: fds is a valid array of three pollfd.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
            if r >= 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(format!("worker {}: poll failed: {e}", self.index));
            }
        }
        if fds[1].revents != 0 {
            return Ok(true);
        }
        if fds[2].revents != 0 {
            self.follower.drain_wake();
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
            && fds[0].revents & libc::POLLIN == 0
        {
            return Err(format!(
                "worker {}: its TUN queue reports an error (device removed?)",
                self.index
            ));
        }
        Ok(false)
    }
}
