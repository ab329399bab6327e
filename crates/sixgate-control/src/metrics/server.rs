//! The HTTP side: axum on a TCP listener, on a thread with its own
//! single-threaded tokio runtime, so a slow scraper never touches the workers.

use std::net::SocketAddr;
use std::thread::JoinHandle;

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::sync::oneshot;

use super::{Collect, render};

/// The running endpoint. Dropping it without [`MetricsServer::stop`] leaves the
/// thread serving until the process exits.
pub struct MetricsServer {
    local: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Bind `addr` (an error comes back here, naming it) and serve `GET /metrics`
    /// from `collect` on a new thread. Other paths get 404.
    pub fn spawn(addr: SocketAddr, collect: Collect) -> Result<MetricsServer, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("metrics: cannot start a runtime: {e}"))?;
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(addr))
            .map_err(|e| format!("[metrics] listen = \"{addr}\": cannot bind: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("metrics: {addr}: {e}"))?;
        let app = Router::new()
            .route("/metrics", get(scrape))
            .with_state(collect);
        let (tx, rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                let served = rt.block_on(
                    axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .into_future(),
                );
                if let Err(e) = served {
                    tracing::error!("metrics: the endpoint stopped: {e}");
                }
            })
            .map_err(|e| format!("metrics: cannot start its thread: {e}"))?;
        Ok(MetricsServer {
            local,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The address it listens on (the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stop serving and wait for the thread.
    pub fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn scrape(State(collect): State<Collect>) -> impl IntoResponse {
    // Collection only copies atomics; rendering is a few hundred lines of text.
    let body = render(&collect());
    ([(CONTENT_TYPE, super::CONTENT_TYPE)], body)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;

    use super::*;
    use crate::metrics::Scrape;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_metrics_and_404_elsewhere() {
        let collect: Collect = Arc::new(|| Scrape {
            mode: "siit".into(),
            workers: vec![sixgate_dataplane::Snapshot::default()],
            ..Scrape::default()
        });
        let srv = MetricsServer::spawn("127.0.0.1:0".parse().unwrap(), collect).unwrap();
        let a = srv.local_addr();
        let ok = get(a, "/metrics");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("application/openmetrics-text"), "{ok}");
        assert!(ok.contains("sixgate_build_info{"), "{ok}");
        assert!(ok.trim_end().ends_with("# EOF"), "{ok}");
        let nf = get(a, "/");
        assert!(nf.starts_with("HTTP/1.1 404"), "{nf}");
        // A second server on the same port is refused with the address named.
        let e = MetricsServer::spawn(a, Arc::new(Scrape::default))
            .err()
            .unwrap();
        assert!(
            e.contains(&a.to_string()) && e.contains("cannot bind"),
            "{e}"
        );
        srv.stop();
    }
}
