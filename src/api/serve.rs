//! The HTTP server loop (SEC-07): at most `MAX_CONNECTIONS` connections at once (one more is
//! closed as soon as it is accepted), request headers of at most `MAX_HEADER_BYTES` that must
//! arrive within `HEADER_TIMEOUT` (a client that stalls is disconnected), and bodies within
//! `access::BODY_TIMEOUT`. On shutdown it stops accepting, lets requests in flight finish for
//! up to `DRAIN_TIMEOUT`, and closes idle connections.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub const MAX_CONNECTIONS: usize = 64;
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `shutdown` completes.
pub async fn serve(listener: TcpListener, app: Router, shutdown: impl Future<Output = ()>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout())
        .max_header_size(MAX_HEADER_BYTES);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of descriptors and the like: wait a moment rather than spin.
                tracing::warn!(%err, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!("connection refused: {MAX_CONNECTIONS} already open");
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(%err, "connection ended with an error");
            }
            drop(slot);
        });
    }
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still running after {DRAIN_TIMEOUT:?}: stopping anyway");
    }
}

fn header_timeout() -> Duration {
    test_timeout().unwrap_or(HEADER_TIMEOUT)
}

/// `FILEWATCHD_TEST_HTTP_TIMEOUT_MS` shortens the header and body timeouts for the tests
/// (`crate::test_knobs`).
pub fn test_timeout() -> Option<Duration> {
    crate::test_knobs::get().http_timeout
}
