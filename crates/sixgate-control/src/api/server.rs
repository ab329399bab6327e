//! The API server: axum over a Unix socket, on its own thread with its own
//! (single-threaded) tokio runtime, so the gateway's threads stay as they are.
//! Calls that wait for the workers (changes, table chunks) run on tokio's
//! blocking pool. SIGHUP reloads, like `POST /v1/reload`.
//!
//! Access: the socket is mode 0600 and every connection's peer is checked with
//! `SO_PEERCRED`: anyone but root gets 403.

use std::io;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sixgate_config::Loaded;
use sixgate_dataplane::Live;
use sixgate_dataplane::live::{Query as Table, Rows};

use super::types::*;
use crate::ReloadStatus;
use crate::running_config::{Rejected, Running, check_reload};

/// Slab positions one chunk request covers.
const CHUNK_SPAN: u32 = 4096;
/// Bytes of rows gathered before they are sent on.
const FLUSH_BYTES: usize = 64 * 1024;

/// What the daemon hands the API.
pub struct Daemon {
    /// The running gateway.
    pub live: Arc<Live>,
    /// The file `reload` reads.
    pub config_file: PathBuf,
    /// The TUN device.
    pub device: String,
    /// Reload outcomes (the metrics read them too).
    pub reload: Arc<ReloadStatus>,
    /// The configuration the daemon started from (before `prepare`).
    pub running: Running,
    /// What the daemon does to a loaded file before running it (a CLAT whose
    /// PLAT prefix was discovered keeps it).
    pub prepare: Box<dyn Fn(&mut Loaded) + Send + Sync>,
}

struct AppState {
    d: Daemon,
    started: Instant,
    /// One change at a time; holds the running configuration.
    running: Mutex<Running>,
}

type Shared = Arc<AppState>;

/// The API socket, bound (before the daemon drops privileges). Dropped without
/// being served (the gateway failed to start), it removes its file.
pub struct Bound {
    listener: Option<std::os::unix::net::UnixListener>,
    path: PathBuf,
}

impl Drop for Bound {
    fn drop(&mut self) {
        if self.listener.is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Create `path`'s directory, remove a stale socket, refuse if a daemon answers
/// on it, bind, and make it mode 0600.
pub fn bind(path: &Path) -> Result<Bound, String> {
    let say = |what: &str, e: io::Error| format!("API socket {}: {what}: {e}", path.display());
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).map_err(|e| say("cannot create its directory", e))?;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(format!(
                "API socket {}: another daemon answers on it; stop it first or set \
                 [daemon] socket to another path",
                path.display()
            ));
        }
        std::fs::remove_file(path).map_err(|e| say("cannot remove the stale socket", e))?;
    }
    let listener =
        std::os::unix::net::UnixListener::bind(path).map_err(|e| say("cannot bind", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| say("cannot set its mode", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| say("cannot make it non-blocking", e))?;
    Ok(Bound {
        listener: Some(listener),
        path: path.to_owned(),
    })
}

/// The running API thread.
pub struct ServerThread {
    handle: Option<std::thread::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    path: PathBuf,
}

impl ServerThread {
    /// Stop serving and remove the socket file (when we still may).
    pub fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Serve the API on `bound` from a thread of its own.
pub fn spawn(mut bound: Bound, d: Daemon) -> Result<ServerThread, String> {
    let running = Mutex::new(d.running.clone());
    let state = Arc::new(AppState {
        d,
        started: Instant::now(),
        running,
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("API: cannot start its runtime: {e}"))?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let path = bound.path.clone();
    let listener = {
        let _g = rt.enter();
        let std = bound.listener.take().ok_or("API socket: already served")?;
        tokio::net::UnixListener::from_std(std)
            .map_err(|e| format!("API socket {}: {e}", path.display()))?
    };
    let handle = std::thread::Builder::new()
        .name("sixgate-api".into())
        .spawn(move || {
            rt.block_on(async move {
                let hup = state.clone();
                tokio::spawn(async move { reload_on_sighup(hup).await });
                let app = router(state).into_make_service_with_connect_info::<Peer>();
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stop_rx.await;
                    })
                    .await;
                if let Err(e) = served {
                    tracing::error!("API: {e}");
                }
            });
        })
        .map_err(|e| format!("API: cannot start its thread: {e}"))?;
    Ok(ServerThread {
        handle: Some(handle),
        stop: Some(stop_tx),
        path,
    })
}

async fn reload_on_sighup(state: Shared) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hup = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot catch SIGHUP ({e}); reload with `sixgate reload`");
            return;
        }
    };
    while hup.recv().await.is_some() {
        tracing::info!("SIGHUP: reloading the configuration");
        let s = state.clone();
        let _ = tokio::task::spawn_blocking(move || reload(&s)).await;
    }
}

/// The peer's user id (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug)]
struct Peer(Option<u32>);

impl Connected<axum::serve::IncomingStream<'_, tokio::net::UnixListener>> for Peer {
    fn connect_info(s: axum::serve::IncomingStream<'_, tokio::net::UnixListener>) -> Self {
        Peer(s.io().peer_cred().ok().map(|c| c.uid()))
    }
}

async fn root_only(ConnectInfo(peer): ConnectInfo<Peer>, req: Request, next: Next) -> Response {
    match peer.0 {
        Some(0) => next.run(req).await,
        Some(uid) => fail(
            StatusCode::FORBIDDEN,
            format!("uid {uid} may not use the sixgate API: root only"),
        ),
        None => fail(
            StatusCode::FORBIDDEN,
            "cannot tell who is connecting (SO_PEERCRED): refused".into(),
        ),
    }
}

fn router(state: Shared) -> Router {
    Router::new()
        .route("/v1/status", get(status))
        .route("/v1/stats", get(stats))
        .route("/v1/counters", get(counters))
        .route("/v1/bib", get(|s, u| table(s, u, Table::Bib)))
        .route(
            "/v1/subscribers",
            get(|s, u| table(s, u, Table::Subscribers)),
        )
        .route("/v1/sessions", get(|s, u| table(s, u, Table::Sessions)))
        .route("/v1/pool4", get(pool4))
        .route("/v1/sync", get(sync))
        .route("/v1/sync/drain", post(sync_drain))
        .route("/v1/eam", get(eam))
        .route("/v1/config", get(running_config))
        .route(
            "/v1/eam/add",
            post(|s, u, b| change(s, u, b, Running::eam_add)),
        )
        .route(
            "/v1/eam/remove",
            post(|s, u, b| change(s, u, b, Running::eam_remove)),
        )
        .route(
            "/v1/pool4/add",
            post(|s, u, b| change(s, u, b, Running::pool4_add)),
        )
        .route(
            "/v1/pool4/remove",
            post(|s, u, b| change(s, u, b, Running::pool4_remove)),
        )
        .route(
            "/v1/bib/add",
            post(|s, u, b| change(s, u, b, Running::bib_add)),
        )
        .route(
            "/v1/bib/remove",
            post(|s, u, b| change(s, u, b, Running::bib_remove)),
        )
        .route("/v1/sessions/flush", post(flush))
        .route("/v1/config/save", post(save))
        .route("/v1/reload", post(reload_route))
        .fallback(|uri: Uri| async move {
            fail(StatusCode::NOT_FOUND, format!("no such API route: {uri}"))
        })
        .method_not_allowed_fallback(|m: axum::http::Method, uri: Uri| async move {
            fail(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{uri} does not take {m} (queries are GET, changes are POST)"),
            )
        })
        .layer(axum::middleware::from_fn(root_only))
        .with_state(state)
}

/// An error answer.
fn fail(code: StatusCode, error: String) -> Response {
    (code, axum::Json(ApiError { error })).into_response()
}

fn json<T: serde::Serialize>(v: &T) -> Response {
    axum::Json(v).into_response()
}

/// The query string as `T`; the error (for a 400) names the bad field.
fn query<T: DeserializeOwned>(uri: &Uri) -> Result<T, String> {
    Query::<T>::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| e.body_text())
}

/// The JSON body as `T`; the error (for a 400) names the bad field.
fn body<T: DeserializeOwned>(b: &[u8]) -> Result<T, String> {
    serde_json::from_slice(b).map_err(|e| format!("bad request body: {e}"))
}

fn bad_request(e: String) -> Response {
    fail(StatusCode::BAD_REQUEST, e)
}

async fn status(State(s): State<Shared>) -> Response {
    let r = s.d.reload.read();
    let mode = s
        .running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .loaded
        .mode;
    json(&Status {
        version: env!("CARGO_PKG_VERSION").into(),
        mode: mode.as_str().into(),
        uptime_s: s.started.elapsed().as_secs(),
        workers: s.d.live.workers(),
        device: s.d.device.clone(),
        config_file: s.d.config_file.display().to_string(),
        reload: ReloadInfo {
            succeeded: r.succeeded,
            failed: r.failed,
            last_ok: r.last_ok,
            last_unix_s: r.last_unix_s,
            last_error: r.last_error,
        },
        fastpath: match (s.d.live.fast_path_active(), s.d.live.fast_path_off()) {
            (Some(true), _) => "translating".into(),
            (_, Some(why)) => format!("off: {why}"),
            _ => "not asked for ([daemon] fastpath = \"off\")".into(),
        },
    })
}

/// Every counter of a snapshot, by name, in a fixed order.
pub fn stat_values(s: &sixgate_dataplane::Snapshot) -> Vec<(&'static str, u64)> {
    let (c, io) = (&s.core, &s.io);
    let mut v = vec![
        ("rx_packets", io.rx_packets),
        ("rx_bytes", io.rx_bytes),
        ("tx_packets", io.tx_packets),
        ("tx_bytes", io.tx_bytes),
        ("translated_6to4", c.translated_6to4),
        ("translated_4to6", c.translated_4to6),
        ("bytes_6to4", c.bytes_6to4),
        ("bytes_4to6", c.bytes_4to6),
        ("hairpinned", c.hairpinned),
        ("fragments_out", c.fragments_out),
        ("icmp_generated", c.icmp_generated),
        ("icmp_rate_limited", c.icmp_rate_limited),
        ("dropped", c.total_drops()),
        ("rx_errors", io.rx_errors),
        ("tx_errors", io.tx_errors),
        ("rx_truncated", io.rx_truncated),
        ("gso_in", io.gso_in),
        ("gso_whole", io.gso_whole),
        ("gso_split", io.gso_split),
        ("csum_sw", io.csum_sw),
        ("offload_dropped", io.offload_dropped),
    ];
    if let Some(n) = &s.nat64 {
        v.extend([
            ("sessions_tcp", n.sessions.tcp),
            ("sessions_udp", n.sessions.udp),
            ("sessions_icmp", n.sessions.icmp),
            ("bib_tcp", n.bib.tcp),
            ("bib_udp", n.bib.udp),
            ("bib_icmp", n.bib.icmp),
            ("pool4_ports_in_use", n.ports_in_use.total()),
            ("pool4_ports_owned", n.ports_owned.total()),
            ("subscribers", n.subscribers),
            ("port_blocks", n.port_blocks),
            ("held_syns", n.held_syns),
            ("events_lost", n.events_lost),
            ("sessions_flushed", n.sessions_flushed),
            ("bib_conflicts", n.bib_conflicts),
            ("bib_conflicts_refused", n.bib_conflicts_refused),
        ]);
    }
    v
}

async fn stats(State(s): State<Shared>) -> Response {
    let per: Vec<Vec<(&str, u64)>> =
        s.d.live
            .worker_snapshots()
            .iter()
            .map(stat_values)
            .collect();
    let snap = s.d.live.snapshot();
    let total = stat_values(&snap);
    let mut counters: Vec<StatRow> = total
        .iter()
        .enumerate()
        .map(|(i, (name, t))| StatRow {
            name: (*name).into(),
            total: *t,
            workers: per.iter().map(|w| w.get(i).map_or(0, |x| x.1)).collect(),
        })
        .collect();
    if let Some(f) = s.d.live.fast_path() {
        counters.extend(fast_path_rows(&f, &snap));
    }
    json(&Stats {
        counters,
        fastpath_off: s.d.live.fast_path_off(),
    })
}

/// The in-kernel fast path's rows (docs/fastpath.md, "Counters"): per CPU,
/// not per worker, so totals only; its verdicts, how its translations left
/// (bpf/forward.h), then what was translated, fast and slow path (`slow`,
/// the workers) together.
fn fast_path_rows(
    f: &sixgate_dataplane::FastPathCounters,
    slow: &sixgate_dataplane::Snapshot,
) -> Vec<StatRow> {
    let [v6to4, v4to6] = f.with_slow(slow);
    [
        ("fastpath_received", f.received),
        ("fastpath_translated_6to4", f.translated_6to4),
        ("fastpath_translated_4to6", f.translated_4to6),
        ("fastpath_passed", f.passed),
        ("fastpath_aborted", f.aborted),
        ("fastpath_nat64_installed", f.nat64_sessions.installed),
        ("fastpath_nat64_removed", f.nat64_sessions.removed),
        ("fastpath_nat64_refreshed", f.nat64_sessions.refreshed),
        ("fastpath_nat64_map_full", f.nat64_sessions.map_full),
        ("fastpath_nat64_map_errors", f.nat64_sessions.map_errors),
        ("fastpath_redirected", f.redirected),
        ("fastpath_redirected_neigh", f.redirected_neigh),
        ("fastpath_to_kernel", f.to_kernel),
        ("fastpath_route_kept", f.route_kept),
        ("fastpath_route_asked", f.route_asked),
        ("translated_fast_and_slow_6to4", v6to4),
        ("translated_fast_and_slow_4to6", v4to6),
    ]
    .map(|(name, total)| StatRow {
        name: name.into(),
        total,
        workers: Vec::new(),
    })
    .into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CountersQuery {
    all: Option<bool>,
}

async fn counters(State(s): State<Shared>, uri: Uri) -> Response {
    let q: CountersQuery = match query(&uri) {
        Ok(q) => q,
        Err(e) => return bad_request(e),
    };
    let all = q.all.unwrap_or(false);
    let snap = s.d.live.snapshot();
    let drops = sixgate_core::DropReason::ALL
        .iter()
        .map(|r| CounterRow {
            reason: r.as_str().into(),
            count: snap.core.drops(*r),
        })
        .filter(|r| all || r.count != 0)
        .collect();
    json(&Counters { drops })
}

/// A parsed [`TableFilter`].
struct Filter {
    address: Option<IpAddr>,
    port: Option<u16>,
    proto: Option<String>,
}

impl Filter {
    fn parse(f: TableFilter) -> Result<Filter, String> {
        let address = match f.address {
            Some(a) => Some(
                a.parse()
                    .map_err(|_| format!("address: {a:?} is not an IPv4 or IPv6 address"))?,
            ),
            None => None,
        };
        if let Some(p) = &f.protocol
            && !matches!(p.as_str(), "tcp" | "udp" | "icmp")
        {
            return Err(format!(
                "protocol: {p:?} is not one of \"tcp\", \"udp\", \"icmp\""
            ));
        }
        Ok(Filter {
            address,
            port: f.port,
            proto: f.protocol,
        })
    }

    fn keeps(&self, proto: &str, addrs: &[IpAddr], ports: &[u16]) -> bool {
        self.proto.as_deref().is_none_or(|p| p == proto)
            && self.address.is_none_or(|a| addrs.contains(&a))
            && self.port.is_none_or(|p| ports.contains(&p))
    }

    /// A subscriber: `address` one of its hosts or a block's address, `port`
    /// in one of its blocks, `protocol` one of its blocks'.
    fn keeps_subscriber(&self, x: &sixgate_core::nat64::SubscriberView) -> bool {
        let ours = |a: IpAddr| match a {
            IpAddr::V6(a) => {
                sixgate_core::nat64::steering::subscriber_prefix(u128::from(a), x.prefix_len)
                    == u128::from(x.prefix)
            }
            IpAddr::V4(a) => x.blocks.iter().any(|b| b.v4 == a),
        };
        self.address.is_none_or(ours)
            && self
                .port
                .is_none_or(|p| x.blocks.iter().any(|b| (b.first..=b.last).contains(&p)))
            && self
                .proto
                .as_deref()
                .is_none_or(|p| x.blocks.iter().any(|b| b.proto.as_str() == p))
    }
}

/// A channel of body chunks as a stream.
struct Chunks(tokio::sync::mpsc::Receiver<Result<Bytes, io::Error>>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, io::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// `GET /v1/bib`, `GET /v1/sessions`: one JSON object per line, streamed as
/// the workers hand over their tables chunk by chunk.
async fn table(State(s): State<Shared>, uri: Uri, which: Table) -> Response {
    let f = match query::<TableFilter>(&uri).and_then(Filter::parse) {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    if !has_tables(&s) {
        return fail(
            StatusCode::CONFLICT,
            "no BIB or sessions: the translator is not in nat64 or mapt-ce mode".into(),
        );
    }
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::task::spawn_blocking(move || stream_table(&s, which, &f, &tx));
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .body(Body::from_stream(Chunks(rx)))
        .unwrap_or_else(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// NAT64's tables, or a MAP-T CE's NAPT44 (the same tables).
fn has_tables(s: &AppState) -> bool {
    let cfg = s.d.live.config();
    cfg.nat64.is_some() || cfg.mapt.as_ref().is_some_and(|m| m.ce().is_some())
}

/// `ADDR[/LEN]` of `bits` bits as (address, length); the error names `field`.
fn prefix<A: std::str::FromStr>(field: &str, text: &str, bits: u8) -> Result<(A, u8), String> {
    let bad = || format!("{field}: {text:?} is not an address or ADDR/LEN");
    let (a, len) = match text.split_once('/') {
        Some((a, l)) => (a, l.parse::<u8>().map_err(|_| bad())?),
        None => (text, bits),
    };
    if len > bits {
        return Err(bad());
    }
    Ok((a.parse().map_err(|_| bad())?, len))
}

impl FlushRequest {
    fn filter(&self) -> Result<sixgate_core::nat64::FlushFilter, String> {
        use sixgate_core::nat64::Proto;
        let proto = match self.protocol.as_deref() {
            None => None,
            Some("tcp") => Some(Proto::Tcp),
            Some("udp") => Some(Proto::Udp),
            Some("icmp") => Some(Proto::Icmp),
            Some(p) => {
                return Err(format!(
                    "protocol: {p:?} is not one of \"tcp\", \"udp\", \"icmp\""
                ));
            }
        };
        let ipv6 = match &self.ipv6 {
            Some(t) => {
                let (a, len) = prefix::<std::net::Ipv6Addr>("ipv6", t, 128)?;
                Some((u128::from(a), len))
            }
            None => None,
        };
        let ipv4 = match &self.ipv4 {
            Some(t) => Some(prefix("ipv4", t, 32)?),
            None => None,
        };
        Ok(sixgate_core::nat64::FlushFilter { proto, ipv6, ipv4 })
    }
}

/// `POST /v1/sessions/flush`: every worker removes the sessions the request
/// names and their dynamic BIB entries, a chunk at a time between its batches.
async fn flush(State(s): State<Shared>, b: Bytes) -> Response {
    // An empty body is an unfiltered flush.
    let req: FlushRequest = if b.iter().all(u8::is_ascii_whitespace) {
        FlushRequest::default()
    } else {
        match body(&b) {
            Ok(r) => r,
            Err(e) => return bad_request(e),
        }
    };
    let filter = match req.filter() {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    if !has_tables(&s) {
        return fail(
            StatusCode::CONFLICT,
            "no sessions to flush: the translator is not in nat64 or mapt-ce mode".into(),
        );
    }
    let what = String::from_utf8_lossy(&b).into_owned();
    match tokio::task::spawn_blocking(move || s.d.live.flush(&filter)).await {
        Ok(Ok(f)) => {
            tracing::info!(
                "sessions flushed: {} sessions, {} BIB entries ({what})",
                f.sessions,
                f.bib
            );
            json(&FlushDone {
                sessions: f.sessions,
                bib: f.bib,
            })
        }
        Ok(Err(e)) => {
            tracing::warn!("session flush ({what}) stopped: {e}");
            fail(StatusCode::INTERNAL_SERVER_ERROR, e)
        }
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn stream_table(
    s: &AppState,
    which: Table,
    f: &Filter,
    tx: &tokio::sync::mpsc::Sender<Result<Bytes, io::Error>>,
) {
    let pool6 = s.d.live.config().map.pool6;
    let mut buf = Vec::with_capacity(FLUSH_BYTES + 1024);
    let send = |buf: &mut Vec<u8>| {
        tx.blocking_send(Ok(Bytes::from(std::mem::take(buf))))
            .is_ok()
    };
    for w in 0..s.d.live.workers() {
        let mut cursor = Some(0);
        while let Some(from) = cursor {
            let chunk = match s.d.live.chunk(w, which, from, CHUNK_SPAN) {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.blocking_send(Err(io::Error::other(e)));
                    return;
                }
            };
            cursor = chunk.next;
            match chunk.rows {
                Rows::Bib(rows) => {
                    for b in rows {
                        let addrs = [IpAddr::V6(b.v6), IpAddr::V4(b.v4)];
                        if !f.keeps(b.proto.as_str(), &addrs, &[b.port6, b.port4]) {
                            continue;
                        }
                        let row = BibRow {
                            worker: w,
                            proto: b.proto.as_str().into(),
                            ipv6: b.v6.to_string(),
                            port6: b.port6,
                            ipv4: b.v4.to_string(),
                            port4: b.port4,
                            is_static: b.is_static,
                        };
                        let _ = serde_json::to_writer(&mut buf, &row);
                        buf.push(b'\n');
                    }
                }
                Rows::Flushed(_) => {}
                Rows::Subscribers(rows) => {
                    for x in rows {
                        if !f.keeps_subscriber(&x) {
                            continue;
                        }
                        let row = SubscriberRow {
                            worker: w,
                            subscriber: format!("{}/{}", x.prefix, x.prefix_len),
                            sessions: x.sessions,
                            ports: x.ports,
                            blocks: x
                                .blocks
                                .iter()
                                .map(|b| BlockRow {
                                    proto: b.proto.as_str().into(),
                                    ipv4: b.v4.to_string(),
                                    first: b.first,
                                    last: b.last,
                                    used: b.used,
                                })
                                .collect(),
                        };
                        let _ = serde_json::to_writer(&mut buf, &row);
                        buf.push(b'\n');
                    }
                }
                Rows::Sessions(rows) => {
                    for x in rows {
                        let b = x.bib;
                        let remote6 = pool6.map(|p| p.embed(x.remote4));
                        let mut addrs = vec![IpAddr::V6(b.v6), IpAddr::V4(b.v4), x.remote4.into()];
                        addrs.extend(remote6.map(IpAddr::V6));
                        if !f.keeps(b.proto.as_str(), &addrs, &[b.port6, b.port4, x.rport]) {
                            continue;
                        }
                        let row = SessionRow {
                            worker: w,
                            proto: b.proto.as_str().into(),
                            ipv6: b.v6.to_string(),
                            port6: b.port6,
                            ipv4: b.v4.to_string(),
                            port4: b.port4,
                            remote4: x.remote4.to_string(),
                            remote6: remote6.map_or_else(|| "-".into(), |a| a.to_string()),
                            rport: x.rport,
                            state: x.tcp_state.map_or("-", |t| t.as_str()).into(),
                            expires_s: x.expires_in_ms / 1000,
                        };
                        let _ = serde_json::to_writer(&mut buf, &row);
                        buf.push(b'\n');
                    }
                }
            }
            if buf.len() >= FLUSH_BYTES && !send(&mut buf) {
                return; // the client went away
            }
        }
    }
    if !buf.is_empty() {
        send(&mut buf);
    }
}

/// `GET /v1/sync`: NAT64 state sync (docs/ha.md); 409 when it is off.
async fn sync(State(s): State<Shared>) -> Response {
    let Some(r) = s.d.live.sync_report() else {
        return fail(
            StatusCode::CONFLICT,
            "no sync: [sync] is not configured (or not running yet)".into(),
        );
    };
    json(&sync_state(&r))
}

/// `POST /v1/sync/drain` (docs/ha.md, "Planned drain"): the sync thread
/// withdraws the routes, stops allocating and tells the peers; the answer
/// is the state as last published, and `GET /v1/sync` shows the progress
/// (`state` becomes `draining`, then `drained`). 409 without sync.
async fn sync_drain(State(s): State<Shared>, _body: Bytes) -> Response {
    if let Err(e) = s.d.live.request_sync_drain() {
        return fail(StatusCode::CONFLICT, e);
    }
    tracing::warn!("sync drain asked through the API");
    // The sync thread takes it within a millisecond and publishes the new
    // state at once: answer with that state, not the one from before.
    let live = s.d.live.clone();
    let report = tokio::task::spawn_blocking(move || {
        let t0 = std::time::Instant::now();
        loop {
            let r = live.sync_report();
            let moved = r.as_ref().is_none_or(|r| {
                matches!(
                    r.state,
                    sixgate_dataplane::sync_node::NodeState::Draining
                        | sixgate_dataplane::sync_node::NodeState::Drained
                )
            });
            if moved || t0.elapsed() > std::time::Duration::from_millis(500) {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    })
    .await;
    match report {
        Ok(Some(r)) => json(&sync_state(&r)),
        Ok(None) => fail(StatusCode::CONFLICT, "no sync".into()),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// The API's view of a sync report.
pub fn sync_state(r: &sixgate_dataplane::sync_thread::SyncReport) -> SyncState {
    let [exported, export_lost, imported, import_refused, swept] = r.workers;
    SyncState {
        node_id: r.node_id,
        state: r.state.as_str().to_owned(),
        announce_table: r.announce.as_ref().map(|(t, _)| *t),
        announce_routes: r.announce.as_ref().map_or(Vec::new(), |(_, v)| v.clone()),
        announcing: r.announcing,
        peers: r
            .peers
            .iter()
            .map(|(id, addr, st)| {
                let c = &st.counters;
                SyncPeerRow {
                    node_id: *id,
                    address: addr.to_string(),
                    up: st.up,
                    synced: st.synced,
                    next_seq: st.next_seq,
                    expected: st.expected,
                    unacked: st.unacked as u64,
                    snapshot_running: st.snapshot_running,
                    drain_acked: st.drain_acked,
                    drained: st.peer_drained,
                    records_in: c.records_in,
                    records_out: c.records_out,
                    datagrams_in: c.datagrams_in,
                    datagrams_out: c.datagrams_out,
                    resent: c.resent,
                    resyncs_started: c.resync_started,
                    resyncs_requested: c.resync_requested,
                    snapshots_received: c.snapshots_received,
                    queue_full: c.queue_full,
                    dropped: c.dropped(),
                    drops: sixgate_sync::Drop::ALL
                        .iter()
                        .map(|&d| (d.name().to_owned(), c.dropped_by(d)))
                        .collect(),
                }
            })
            .collect(),
        exported,
        export_lost,
        imported,
        import_refused,
        swept,
        unknown_peer: r.link.unknown_peer,
        import_full: r.link.import_full,
        not_imported: r.link.not_imported,
        send_errors: r.link.send_errors,
    }
}

async fn pool4(State(s): State<Shared>) -> Response {
    let cfg = s.d.live.config();
    let Some(n) = &cfg.nat64 else {
        return fail(
            StatusCode::CONFLICT,
            "no pool4: the translator is not in nat64 mode".into(),
        );
    };
    let range = |r: sixgate_core::nat64::PortRange| format!("{}-{}", r.first, r.last);
    let pool4 = n
        .pool4
        .iter()
        .map(|p| Pool4Row {
            prefix: format!(
                "{}/{}",
                std::net::Ipv4Addr::from(p.first_addr()),
                p.prefix_len
            ),
            tcp: Some(range(p.tcp)),
            udp: Some(range(p.udp)),
            icmp: Some(range(p.icmp)),
        })
        .collect();
    json(&Pool4 { pool4 })
}

async fn eam(State(s): State<Shared>) -> Response {
    let cfg = s.d.live.config();
    let eam = cfg
        .map
        .eam
        .entries()
        .iter()
        .map(|e| EamRow {
            ipv4: format!("{}/{}", e.v4_addr(), e.v4_len),
            ipv6: format!("{}/{}", e.v6_addr(), e.v6_len),
        })
        .collect();
    json(&Eam { eam })
}

async fn running_config(State(s): State<Shared>, uri: Uri) -> Response {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Q {}
    if let Err(e) = query::<Q>(&uri) {
        return bad_request(e);
    }
    let toml = s.running.lock().unwrap_or_else(|p| p.into_inner()).render();
    json(&RunningConfig { toml })
}

/// `POST /v1/{eam,pool4,bib}/{add,remove}`: edit the running configuration,
/// run it, keep it.
async fn change<T: DeserializeOwned + Send + 'static>(
    State(s): State<Shared>,
    uri: Uri,
    b: Bytes,
    edit: fn(&Running, &T) -> Result<Running, Rejected>,
) -> Response {
    let req: T = match body(&b) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let what = format!("{} {}", uri.path(), String::from_utf8_lossy(&b));
    let r = tokio::task::spawn_blocking(move || {
        let mut cur = s.running.lock().unwrap_or_else(|p| p.into_inner());
        let next = edit(&cur, &req).map_err(|e| {
            let code = match e {
                Rejected::BadField(_) => StatusCode::BAD_REQUEST,
                Rejected::Conflict(_) => StatusCode::CONFLICT,
                Rejected::NotFound(_) => StatusCode::NOT_FOUND,
            };
            (code, e.to_string())
        })?;
        let warnings = run(&s, &next).map_err(|e| (StatusCode::CONFLICT, e))?;
        *cur = next;
        Ok::<_, (StatusCode, String)>(warnings)
    })
    .await;
    match r {
        Ok(Ok(warnings)) => {
            tracing::info!("runtime change applied: {what}");
            json(&Done {
                done: "applied".into(),
                warnings,
            })
        }
        Ok(Err((code, e))) => {
            tracing::warn!("runtime change refused: {what}: {e}");
            fail(code, e)
        }
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Hand `next` to the gateway.
fn run(s: &AppState, next: &Running) -> Result<Vec<String>, String> {
    let mut loaded = next.loaded.clone();
    (s.d.prepare)(&mut loaded);
    s.d.live.apply(loaded.config)
}

/// Re-read the configuration file and run it; a bad file or a change that
/// cannot be made leaves the running configuration as it was.
fn reload(s: &AppState) -> Result<Vec<String>, String> {
    let path = &s.d.config_file;
    let outcome: Result<Vec<String>, String> = (|| {
        let text = std::fs::read_to_string(path).map_err(|e| cannot_read(path, &e))?;
        let next = Running::parse(&text, &path.display().to_string())?;
        let mut cur = s.running.lock().unwrap_or_else(|p| p.into_inner());
        check_reload(&cur.loaded, &next.loaded)?;
        let undone = cur.undone_by(&next);
        let mut warnings = run(s, &next)?;
        // Said, not silent: the file wins over what was changed at runtime.
        if !undone.is_empty() {
            warnings.push(format!(
                "undid runtime changes that {} does not make: {} (`sixgate config save` \
                 writes runtime changes to the file before a reload)",
                path.display(),
                undone.join(", ")
            ));
        }
        *cur = next;
        Ok(warnings)
    })();
    match &outcome {
        Ok(w) => {
            s.d.reload.record_success();
            tracing::info!(file = %path.display(), "configuration reloaded");
            for x in w {
                tracing::warn!("reload: {x}");
            }
        }
        Err(e) => {
            s.d.reload.record_failure(e);
            tracing::error!("reload refused: {e}; the running configuration is unchanged");
        }
    }
    // Every refusal leaves the running configuration as it was: said once,
    // here, for the log and for `sixgate reload` alike.
    outcome.map_err(|e| format!("{e}; the running configuration is unchanged"))
}

/// A file the daemon cannot read, and, when it runs as `[daemon] user`,
/// what would let it (docs/packaging.md, "Reload").
fn cannot_read(path: &Path, e: &io::Error) -> String {
    let mut m = format!("{}: cannot read: {e}", path.display());
    if e.kind() == io::ErrorKind::PermissionDenied {
        // SAFETY: geteuid and getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if uid != 0 {
            m.push_str(&format!(
                " (the daemon runs as uid {uid} gid {gid} after [daemon] user, and re-reads \
                 the file as that user: make it readable by that group, e.g. \
                 `chgrp {gid} {0} && chmod 0640 {0}`)",
                path.display()
            ));
        }
    }
    m
}

async fn reload_route(State(s): State<Shared>, _body: Bytes) -> Response {
    match tokio::task::spawn_blocking(move || reload(&s)).await {
        Ok(Ok(warnings)) => json(&Done {
            done: "reloaded".into(),
            warnings,
        }),
        Ok(Err(e)) => fail(StatusCode::CONFLICT, e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn save(State(s): State<Shared>, b: Bytes) -> Response {
    let req: SaveRequest = match body(&b) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    if !req.path.starts_with('/') {
        return fail(
            StatusCode::BAD_REQUEST,
            format!("path: {:?} is not an absolute path", req.path),
        );
    }
    let text = s.running.lock().unwrap_or_else(|p| p.into_inner()).render();
    match write_atomically(Path::new(&req.path), &text) {
        Ok(()) => json(&Done {
            done: format!("saved to {}", req.path),
            warnings: Vec::new(),
        }),
        Err(e) => fail(StatusCode::CONFLICT, format!("path: {}: {e}", req.path)),
    }
}

/// Write through a temporary file and a rename: a reader sees the old file or
/// the new one, never half of one.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    /// docs/fastpath.md, "Counters": the fast path's verdicts, how its
    /// translations left, then its translations and the workers' together,
    /// per direction.
    #[test]
    fn fast_path_rows_add_the_workers_translations() {
        let f = sixgate_dataplane::FastPathCounters {
            received: 10,
            translated_6to4: 4,
            translated_4to6: 3,
            passed: 3,
            aborted: 0,
            nat64_sessions: sixgate_dataplane::FastPathSessions {
                installed: 2,
                ..Default::default()
            },
            redirected: 5,
            redirected_neigh: 1,
            to_kernel: 1,
            route_kept: 6,
            route_asked: 1,
        };
        let mut slow = sixgate_dataplane::Snapshot::default();
        slow.core.translated_6to4 = 2;
        slow.core.translated_4to6 = 5;
        let rows: Vec<(String, u64)> = fast_path_rows(&f, &slow)
            .into_iter()
            .map(|r| (r.name, r.total))
            .collect();
        let row = |n: &str| rows.iter().find(|r| r.0 == n).map(|r| r.1);
        assert_eq!(row("fastpath_received"), Some(10));
        assert_eq!(row("fastpath_nat64_installed"), Some(2));
        assert_eq!(row("fastpath_redirected"), Some(5));
        assert_eq!(row("fastpath_redirected_neigh"), Some(1));
        assert_eq!(row("fastpath_to_kernel"), Some(1));
        assert_eq!(row("fastpath_route_kept"), Some(6));
        assert_eq!(row("fastpath_route_asked"), Some(1));
        assert_eq!(row("translated_fast_and_slow_6to4"), Some(6));
        assert_eq!(row("translated_fast_and_slow_4to6"), Some(8));
    }

    /// docs/control.md, `GET /v1/stats`: `fastpath_off` only when the fast
    /// path asked for does not run, so older clients and JSON readers see
    /// the same object as before otherwise.
    #[test]
    fn stats_fastpath_off_only_when_off() {
        let on = Stats {
            counters: Vec::new(),
            fastpath_off: None,
        };
        assert_eq!(serde_json::to_string(&on).unwrap(), r#"{"counters":[]}"#);
        let off = Stats {
            fastpath_off: Some("fastpath = \"tc\": this kernel lacks …".into()),
            ..on
        };
        let text = serde_json::to_string(&off).unwrap();
        assert!(
            text.contains(r#""fastpath_off":"fastpath = \"tc\""#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Stats>(&text).unwrap(), off);
        let old: Stats = serde_json::from_str(r#"{"counters":[]}"#).unwrap();
        assert_eq!(old.fastpath_off, None);
    }

    #[test]
    fn table_filters_parse_and_name_the_bad_field() {
        let f: TableFilter = query(&uri(
            "/v1/sessions?address=2001:db8::5&port=80&protocol=tcp",
        ))
        .unwrap();
        let f = Filter::parse(f).unwrap();
        let v6: IpAddr = "2001:db8::5".parse().unwrap();
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(f.keeps("tcp", &[v6, v4], &[80, 61001]));
        assert!(!f.keeps("udp", &[v6, v4], &[80, 61001]));
        assert!(!f.keeps("tcp", &[v4], &[80]));
        assert!(!f.keeps("tcp", &[v6], &[81]));
        let e = query::<TableFilter>(&uri("/v1/bib?adress=1.2.3.4")).unwrap_err();
        assert!(e.contains("adress"), "{e}");
        let e = query::<TableFilter>(&uri("/v1/bib?port=http")).unwrap_err();
        assert!(e.contains("port"), "{e}");
        let e = Filter::parse(TableFilter {
            address: Some("1.2.3".into()),
            ..TableFilter::default()
        })
        .err()
        .unwrap();
        assert!(e.starts_with("address:"), "{e}");
        let e = Filter::parse(TableFilter {
            protocol: Some("sctp".into()),
            ..TableFilter::default()
        })
        .err()
        .unwrap();
        assert!(e.starts_with("protocol:"), "{e}");
    }

    #[test]
    fn flush_filters_parse_and_name_the_bad_field() {
        let f: FlushRequest =
            body(br#"{"protocol":"udp","ipv6":"2001:db8:1::/48","ipv4":"192.0.2.1"}"#).unwrap();
        let f = f.filter().unwrap();
        assert_eq!(f.proto, Some(sixgate_core::nat64::Proto::Udp));
        assert_eq!(
            f.ipv6,
            Some((
                u128::from("2001:db8:1::".parse::<std::net::Ipv6Addr>().unwrap()),
                48
            ))
        );
        assert_eq!(f.ipv4, Some(("192.0.2.1".parse().unwrap(), 32)));
        let all = FlushRequest::default().filter().unwrap();
        assert_eq!(all, sixgate_core::nat64::FlushFilter::default());
        for (req, field) in [
            (r#"{"protocol":"sctp"}"#, "protocol:"),
            (r#"{"ipv6":"2001:db8::/129"}"#, "ipv6:"),
            (r#"{"ipv4":"192.0.2"}"#, "ipv4:"),
        ] {
            let e = body::<FlushRequest>(req.as_bytes())
                .unwrap()
                .filter()
                .unwrap_err();
            assert!(e.starts_with(field), "{e}");
        }
        let e = body::<FlushRequest>(br#"{"proto":"tcp"}"#).unwrap_err();
        assert!(e.contains("unknown field `proto`"), "{e}");
    }

    #[test]
    fn request_bodies_name_the_missing_or_unknown_field() {
        let e = body::<EamRow>(br#"{"ipv4":"10.0.0.0/24"}"#).unwrap_err();
        assert!(e.contains("missing field `ipv6`"), "{e}");
        let e = body::<EamRow>(br#"{"ipv4":"a","ipv6":"b","ipv7":"c"}"#).unwrap_err();
        assert!(e.contains("unknown field `ipv7`"), "{e}");
        let e = body::<StaticBibRow>(br#"{"proto":"tcp","ipv4":"192.0.2.1","port4":70000}"#)
            .unwrap_err();
        assert!(e.contains("70000"), "{e}");
        let ok: Pool4Row = body(br#"{"prefix":"192.0.2.0/30","tcp":"1024-65535"}"#).unwrap();
        assert_eq!(ok.tcp.as_deref(), Some("1024-65535"));
    }
}
