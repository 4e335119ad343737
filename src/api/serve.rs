//! The HTTP server loop: connections are admitted by who makes them (`slots`: the
//! owner's up to `slots::OWNER_CONNECTIONS`, other local users' a few in a pool of their
//! own, told apart by `peer`; one more is closed as soon as it is accepted), request headers
//! of at most `MAX_HEADER_BYTES` that must arrive within `HEADER_TIMEOUT` (a client that
//! stalls is disconnected), and bodies within `access::BODY_TIMEOUT`. On shutdown it stops
//! accepting, lets requests in flight finish for up to `DRAIN_TIMEOUT`, and closes idle
//! connections.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};

use super::slots::{OWNER_CONNECTIONS, Peer, Slots};
use crate::platform::PeerLookup;

/// A browser's whole cookie jar for this host fits: cookies are shared by every port of
/// 127.0.0.1, and a page on another port that sets many large ones (Chromium keeps up to 180
/// of 4 KiB per host) must not lock the review page out with 431 answers (docs/security.md).
pub const MAX_HEADER_BYTES: usize = 1 << 20;
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `shutdown` completes.
pub async fn serve(listener: TcpListener, app: Router, shutdown: impl Future<Output = ()>) {
    let slots = Slots::default();
    let mut peers = Peers::open();
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout())
        .max_header_size(MAX_HEADER_BYTES)
        .max_buf_size(MAX_HEADER_BYTES + 64 * 1024);
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
        let peer = peers.of(&stream);
        let Some(slot) = slots.admit(peer) else {
            refused(peer);
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

/// Tells the owner's connections from other users'; where the kernel cannot say (no
/// `sock_diag`), every connection is the owner's, as if there were one pool.
struct Peers {
    lookup: Option<PeerLookup>,
    owner: u32,
}

impl Peers {
    fn open() -> Peers {
        let lookup = PeerLookup::open()
            .inspect_err(|err| {
                tracing::warn!(%err, "cannot tell which user a connection comes from: one pool for all")
            })
            .ok();
        Peers {
            lookup,
            owner: crate::platform::ext::euid(),
        }
    }

    fn of(&mut self, stream: &TcpStream) -> Peer {
        let Some(lookup) = &mut self.lookup else {
            return Peer::Owner;
        };
        let (Ok(peer), Ok(local)) = (stream.peer_addr(), stream.local_addr()) else {
            return Peer::Other(None);
        };
        match lookup.uid(peer, local) {
            Ok(uid) => Peer::of(uid, self.owner),
            Err(err) => {
                tracing::debug!(%err, "cannot tell which user a connection comes from");
                Peer::Other(None)
            }
        }
    }
}

/// A connection over its pool's cap: the owner's is worth a warning, another user's (who may
/// open thousands) only a debug line.
fn refused(peer: Peer) {
    match peer {
        Peer::Owner => tracing::warn!("connection refused: {OWNER_CONNECTIONS} already open"),
        Peer::Other(uid) => tracing::debug!(?uid, "connection from another user refused: their pool is full"),
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
