//! Which local user a connection to the API comes from, before it has said anything: the
//! uid that owns the peer's end of the loopback TCP connection. TCP has no `SO_PEERCRED`;
//! the kernel tells it by the connection's address pair (`sock_diag` over netlink, the
//! answer `ss -e` shows: one exact lookup, answered while the request is sent, so it never
//! waits). Only the uid is read; a lookup that finds nothing (the peer already closed) says
//! so, and the caller treats that connection as a stranger's.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;

use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType};

/// `SOCK_DIAG_BY_FAMILY`, the request and answer type of `sock_diag`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_HEADER: usize = 16;
/// `inet_diag_req_v2`: family, protocol, ext, pad, states, then the socket id (48 bytes).
const REQUEST_LEN: usize = NLMSG_HEADER + 8 + 48;
/// Where `idiag_uid` lies in an answer: after the header, four bytes of family, state,
/// timer and retransmits, the socket id, and `expires`, `rqueue`, `wqueue`.
const UID_OFFSET: usize = NLMSG_HEADER + 4 + 48 + 12;

/// A netlink socket asking the kernel who owns the other end of a connection.
pub struct PeerLookup {
    fd: OwnedFd,
    seq: u32,
}

impl PeerLookup {
    /// Fails where the kernel has no `sock_diag` (or a sandbox forbids netlink).
    pub fn open() -> io::Result<PeerLookup> {
        let fd = rustix::net::socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            rustix::net::SocketFlags::CLOEXEC,
            Some(netlink::SOCK_DIAG),
        )?;
        Ok(PeerLookup { fd, seq: 0 })
    }

    /// The uid owning the socket at `peer` connected to `local` (this end), if the kernel
    /// finds it.
    pub fn uid(&mut self, peer: SocketAddr, local: SocketAddr) -> io::Result<Option<u32>> {
        self.seq = self.seq.wrapping_add(1);
        let request = diag_request(self.seq, peer, local);
        rustix::net::sendto(
            &self.fd,
            &request,
            SendFlags::empty(),
            &SocketAddrNetlink::new(0, 0),
        )?;
        let mut answer = [0u8; 1024];
        loop {
            // The kernel answers an exact lookup before `sendto` returns: nothing to wait for.
            let (len, _) = rustix::net::recv(&self.fd, &mut answer[..], RecvFlags::DONTWAIT)?;
            match read_answer(&answer[..len], self.seq) {
                Answer::Stale => continue,
                Answer::Uid(uid) => return Ok(Some(uid)),
                Answer::NotFound => return Ok(None),
                Answer::Error(errno) => return Err(io::Error::from_raw_os_error(errno)),
            }
        }
    }
}

/// The uid owning the server end of a connection to the loopback `url` (`http://IP:PORT`, as
/// `daemon.json` names the daemon): a client's check that it talks to its own user's daemon.
/// `None` when it cannot tell: no server answers there, the URL is not a loopback address,
/// or the kernel has no `sock_diag`.
pub fn listener_uid(url: &str) -> io::Result<Option<u32>> {
    let authority = url.strip_prefix("http://").unwrap_or(url);
    let authority = authority.split('/').next().unwrap_or(authority);
    let Ok(server) = authority.parse::<SocketAddr>() else {
        return Ok(None);
    };
    if !server.ip().is_loopback() {
        return Ok(None);
    }
    let Ok(stream) = std::net::TcpStream::connect_timeout(&server, std::time::Duration::from_secs(1)) else {
        return Ok(None);
    };
    let Ok(mut lookup) = PeerLookup::open() else {
        return Ok(None);
    };
    // The server's socket is the one whose own address is the server's and whose remote
    // address is this end.
    lookup.uid(stream.peer_addr()?, stream.local_addr()?)
}

/// The exact-lookup request for the TCP socket whose own address is `peer` and whose remote
/// one is `local`.
fn diag_request(seq: u32, peer: SocketAddr, local: SocketAddr) -> Vec<u8> {
    let mut msg = Vec::with_capacity(REQUEST_LEN);
    msg.extend_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    msg.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    let family = match peer.ip() {
        IpAddr::V4(_) => libc::AF_INET as u8,
        IpAddr::V6(_) => libc::AF_INET6 as u8,
    };
    msg.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, 0, 0]);
    msg.extend_from_slice(&u32::MAX.to_ne_bytes()); // every state
    msg.extend_from_slice(&peer.port().to_be_bytes());
    msg.extend_from_slice(&local.port().to_be_bytes());
    msg.extend_from_slice(&address_bytes(peer.ip()));
    msg.extend_from_slice(&address_bytes(local.ip()));
    msg.extend_from_slice(&0u32.to_ne_bytes()); // any interface
    msg.extend_from_slice(&[0xff; 8]); // INET_DIAG_NOCOOKIE
    msg
}

/// An address as `idiag_src` / `idiag_dst` hold it: 16 bytes, an IPv4 one in the first four.
fn address_bytes(ip: IpAddr) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => bytes[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => bytes = v6.octets(),
    }
    bytes
}

#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// An answer to an earlier request (one whose reader gave up).
    Stale,
    Uid(u32),
    NotFound,
    Error(i32),
}

fn read_answer(msg: &[u8], seq: u32) -> Answer {
    let word = |at: usize| -> Option<u32> {
        let bytes = msg.get(at..at + 4)?;
        Some(u32::from_ne_bytes(bytes.try_into().ok()?))
    };
    let kind = msg.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    if word(8) != Some(seq) {
        return Answer::Stale;
    }
    match (kind, word(UID_OFFSET), word(NLMSG_HEADER)) {
        (Some(SOCK_DIAG_BY_FAMILY), Some(uid), _) => Answer::Uid(uid),
        (Some(NLMSG_ERROR), _, Some(code)) => match -(code as i32) {
            libc::ENOENT => Answer::NotFound,
            errno => Answer::Error(errno),
        },
        _ => Answer::Error(libc::EPROTO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    /// The uid of a connection this process made to itself is this process's.
    #[test]
    fn finds_the_uid_of_a_local_connection() {
        let Ok(mut lookup) = PeerLookup::open() else {
            eprintln!("skipped: no sock_diag netlink here");
            return;
        };
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, peer) = listener.accept().expect("accept");
        let local = server.local_addr().expect("local");
        assert_eq!(peer, client.local_addr().expect("client addr"));
        let uid = lookup.uid(peer, local).expect("lookup");
        assert_eq!(uid, Some(rustix::process::geteuid().as_raw()));
        drop(client);
    }

    #[test]
    fn a_connection_nobody_has_is_not_found() {
        let Ok(mut lookup) = PeerLookup::open() else {
            eprintln!("skipped: no sock_diag netlink here");
            return;
        };
        let nowhere: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let also: SocketAddr = "127.0.0.1:2".parse().expect("addr");
        assert_eq!(lookup.uid(nowhere, also).expect("lookup"), None);
    }
}
