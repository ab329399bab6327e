//! The listeners: for every `listen` address a UDP socket and a TCP listener on
//! the same port, feeding one shared [`Handler`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sixgate_config::Dns64Settings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::JoinSet;

use crate::resolve::{Handler, Step, Transport};
use crate::stats::Stats;

/// A TCP client idle this long between queries is dropped (RFC 7766 §6.2.3
/// suggests seconds, not minutes).
const TCP_IDLE: Duration = Duration::from_secs(10);

/// Most TCP connections served at once, over all listeners.
const MAX_TCP_CONNECTIONS: usize = 1024;

/// A running DNS64 server.
pub struct Server {
    handler: Arc<Handler>,
    local: Vec<SocketAddr>,
    tasks: JoinSet<()>,
}

impl Server {
    /// Bind every `listen` address (UDP, then TCP on the port UDP got, so port 0
    /// works for tests) and start serving on the current tokio runtime.
    pub async fn start(settings: &Dns64Settings) -> std::io::Result<Server> {
        let stats = Arc::new(Stats::default());
        let handler = Arc::new(Handler::new(settings, stats));
        let mut tasks = JoinSet::new();
        let mut local = Vec::new();
        let tcp_slots = Arc::new(tokio::sync::Semaphore::new(MAX_TCP_CONNECTIONS));
        // One UDP socket per CPU on each address (SO_REUSEPORT: the kernel
        // spreads clients over them), so receiving is not one task's job.
        let sockets = std::thread::available_parallelism().map_or(1, |n| n.get());
        for addr in &settings.listen {
            let first = reuseport_udp(*addr).map_err(|e| named(e, "UDP", addr))?;
            let bound = first.local_addr()?;
            let mut udp = vec![first];
            for _ in 1..sockets {
                udp.push(reuseport_udp(bound).map_err(|e| named(e, "UDP", &bound))?);
            }
            let tcp = tcp_listener(bound).map_err(|e| named(e, "TCP", &bound))?;
            local.push(bound);
            for u in udp {
                tasks.spawn(serve_udp(Arc::new(u), handler.clone()));
            }
            tasks.spawn(serve_tcp(tcp, handler.clone(), tcp_slots.clone()));
        }
        Ok(Server {
            handler,
            local,
            tasks,
        })
    }

    /// The addresses it listens on (with the ports actually bound).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local
    }

    /// The counters.
    pub fn stats(&self) -> &Arc<Stats> {
        self.handler.stats()
    }

    /// Stop listening.
    pub fn shutdown(mut self) {
        self.tasks.abort_all();
    }
}

/// A non-blocking UDP socket bound to `addr` with SO_REUSEPORT.
fn reuseport_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        // "[::]:53" serves IPv6 only; IPv4 wants its own "0.0.0.0:53".
        s.set_only_v6(true)?;
    }
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    UdpSocket::from_std(s.into())
}

/// A TCP listener on `addr`, IPv6 only as the UDP sockets are: a dual-stack
/// "[::]:53" would take IPv4 port 53 too and collide with "127.0.0.1:53".
fn tcp_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    // As TcpListener::bind: a restart may bind while old connections linger.
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    TcpListener::from_std(s.into())
}

fn named(e: std::io::Error, what: &str, addr: &SocketAddr) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot listen on {what} {addr}: {e}"))
}

async fn serve_udp(sock: Arc<UdpSocket>, handler: Arc<Handler>) {
    let mut buf = vec![0u8; 65_535];
    loop {
        let Ok((n, peer)) = sock.recv_from(&mut buf).await else {
            continue;
        };
        // Cache hits and bad input are answered here, without a task.
        let pending = match handler.begin(&buf[..n], peer.ip(), Transport::Udp) {
            Step::Done(Some(reply)) => {
                let _ = sock.send_to(&reply, peer).await;
                continue;
            }
            Step::Done(None) => continue,
            Step::Resolve(pending) => pending,
        };
        let (sock, handler) = (sock.clone(), handler.clone());
        // One task per miss: a slow upstream must not hold up the others.
        tokio::spawn(async move {
            if let Some(reply) = handler.resolve(pending, Transport::Udp).await {
                let _ = sock.send_to(&reply, peer).await;
            }
        });
    }
}

async fn serve_tcp(
    listener: TcpListener,
    handler: Arc<Handler>,
    slots: Arc<tokio::sync::Semaphore>,
) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue; // full: the stream is dropped, closing it
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            let _ = serve_tcp_client(stream, peer, &handler).await;
            drop(slot);
        });
    }
}

/// RFC 1035 §4.2.2 / RFC 7766 §8: two-byte length, then the message; many
/// queries per connection, answered in order.
async fn serve_tcp_client(
    mut s: TcpStream,
    peer: SocketAddr,
    handler: &Handler,
) -> std::io::Result<()> {
    loop {
        let len = match tokio::time::timeout(TCP_IDLE, s.read_u16()).await {
            Ok(Ok(l)) => usize::from(l),
            _ => return Ok(()),
        };
        let mut query = vec![0u8; len];
        tokio::time::timeout(TCP_IDLE, s.read_exact(&mut query))
            .await
            .map_err(|_| std::io::ErrorKind::TimedOut)??;
        let Some(reply) = handler.handle(&query, peer.ip(), Transport::Tcp).await else {
            // Unanswerable: the stream is out of step, close it.
            return Ok(());
        };
        let mut framed = Vec::with_capacity(reply.len() + 2);
        framed.extend_from_slice(&(reply.len() as u16).to_be_bytes());
        framed.extend_from_slice(&reply);
        s.write_all(&framed).await?;
    }
}

/// A DNS64 server on a thread of its own (with its own runtime), for a process
/// that has other work, such as the gateway of `sixgate run`.
pub struct ServerThread {
    local: Vec<SocketAddr>,
    stats: Arc<Stats>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<crate::StatsSnapshot>>,
}

impl ServerThread {
    /// Bind every `listen` address (errors come back here) and serve on a new
    /// thread until [`ServerThread::stop`].
    pub fn spawn(settings: &Dns64Settings) -> std::io::Result<ServerThread> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("dns64")
            .enable_all()
            .build()?;
        let server = rt.block_on(Server::start(settings))?;
        let local = server.local_addrs().to_vec();
        let stats = server.stats().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("dns64".into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = rx.await;
                    let snapshot = server.stats().snapshot();
                    server.shutdown();
                    snapshot
                })
            })?;
        Ok(ServerThread {
            local,
            stats,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The addresses it listens on.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local
    }

    /// The live counters (for the metrics endpoint).
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Stop serving; the final counters.
    pub fn stop(mut self) -> crate::StatsSnapshot {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// Serve `settings` on a runtime of our own until SIGINT or SIGTERM, then
/// return the counters. `on_ready` gets the bound addresses once listening.
pub fn serve_until_signal(
    settings: &Dns64Settings,
    on_ready: impl FnOnce(&[SocketAddr]),
) -> std::io::Result<crate::StatsSnapshot> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let server = Server::start(settings).await?;
        on_ready(server.local_addrs());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        let snapshot = server.stats().snapshot();
        server.shutdown();
        Ok(snapshot)
    })
}
