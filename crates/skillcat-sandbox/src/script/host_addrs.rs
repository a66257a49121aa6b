//! The host's own addresses, read each time the proxy connects by name.
//!
//! A service bound to `0.0.0.0` or `[::]` answers on every address the host owns, public ones
//! included: a granted name that resolves to one of them reaches that service from the run, as
//! loopback would. No fixed table can know these addresses (they come and go with interfaces,
//! DHCP, cloud elastic addresses), so they are read when needed:
//!
//! ```text
//! every interface address        getifaddrs(3)                    one address each
//! every `local` route (Linux)    rtnetlink RTM_GETROUTE dump of   a prefix each: one per
//!                                the `local` table, IPv4 and IPv6  interface address, and any
//!                                                                 AnyIP range (`ip route add
//!                                                                 local 203.0.113.0/24 dev lo`)
//! ```
//!
//! Netlink, not `/proc/net`: `/proc/net/route` holds only the IPv4 `main` table,
//! `/proc/net/fib_trie` is a text layout for people, and `/proc` may not be mounted; the route
//! dump is the interface `ip route show table local` reads, needs no privilege, and answers in
//! microseconds. The dump asks the kernel to filter (strict checking: table `local`, type
//! `local`); a kernel without strict checking sends every route, and the filter is applied
//! here. Whatever cannot be read is an error, and the proxy refuses the connection (fail
//! closed).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Prefixes of addresses the host owns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostAddrs {
    nets: Vec<(IpAddr, u8)>,
}

impl HostAddrs {
    /// Reads them now: interface addresses and, on Linux, the kernel's local routes.
    pub(crate) fn read() -> io::Result<Self> {
        let mut nets = interface_addresses()?;
        #[cfg(target_os = "linux")]
        for family in [libc::AF_INET, libc::AF_INET6] {
            nets.extend(netlink::local_routes(family as u8)?);
        }
        Ok(HostAddrs { nets })
    }

    /// The host owns `ip`: it lies in one of the prefixes, directly, as an IPv4-mapped IPv6
    /// address, or embedded in a NAT64 or 6to4 address (which a gateway would turn back into
    /// the host's own).
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        let direct = |ip: IpAddr| self.nets.iter().any(|(net, len)| in_prefix(ip, *net, *len));
        if direct(ip) {
            return true;
        }
        match ip {
            IpAddr::V4(_) => false,
            IpAddr::V6(v6) => embedded_v4(v6).is_some_and(|v4| direct(IpAddr::V4(v4))),
        }
    }

    #[cfg(test)]
    fn of(nets: &[(&str, u8)]) -> Self {
        HostAddrs {
            nets: nets.iter().map(|(a, l)| (a.parse().unwrap(), *l)).collect(),
        }
    }
}

/// The IPv4 address an IPv6 address carries where it decides where packets go: mapped
/// (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`), 6to4 (`2002:AABB:CCDD::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    match s {
        [0x0064, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        _ => None,
    }
}

/// `ip` lies in `net/len` (of the same family).
fn in_prefix(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let len = u32::from(len.min(32));
            let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let len = u32::from(len.min(128));
            let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Every IPv4 and IPv6 address of every interface, each as a full-length prefix.
fn interface_addresses() -> io::Result<Vec<(IpAddr, u8)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `head`, freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut at = head;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*at };
        at = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: a non-null ifa_addr points to a sockaddr whose family says its layout.
        match i32::from(unsafe { (*ifa.ifa_addr).sa_family }) {
            libc::AF_INET => {
                // SAFETY: the family is AF_INET, so this is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                out.push((IpAddr::V4(ip), 32));
            }
            libc::AF_INET6 => {
                // SAFETY: the family is AF_INET6, so this is a sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                out.push((IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)), 128));
            }
            _ => {}
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(target_os = "linux")]
mod netlink {
    //! One `RTM_GETROUTE` dump over a `NETLINK_ROUTE` socket: the routes of type `local`.

    use std::io;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// `struct rtmsg` (linux/rtnetlink.h); the libc crate does not define it.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct RtMsg {
        family: u8,
        dst_len: u8,
        src_len: u8,
        tos: u8,
        table: u8,
        protocol: u8,
        scope: u8,
        kind: u8,
        flags: u32,
    }

    #[repr(C)]
    struct Request {
        header: libc::nlmsghdr,
        route: RtMsg,
    }

    const RT_TABLE_LOCAL: u8 = 255;
    const RTN_LOCAL: u8 = 2;
    const RTA_DST: u16 = 1;
    /// `NETLINK_GET_STRICT_CHK` (Linux 4.20): the kernel filters a dump by the request's
    /// header.
    const NETLINK_GET_STRICT_CHK: libc::c_int = 12;
    const HEADER: usize = std::mem::size_of::<libc::nlmsghdr>();
    const ROUTE: usize = std::mem::size_of::<RtMsg>();

    /// The prefixes of `family`'s routes of type `local`.
    pub(super) fn local_routes(family: u8) -> io::Result<Vec<(IpAddr, u8)>> {
        match dump(family, true) {
            Ok(v) => Ok(v),
            // A kernel that will not filter this family's dump: every route, filtered here.
            Err(_) => dump(family, false),
        }
    }

    fn dump(family: u8, strict: bool) -> io::Result<Vec<(IpAddr, u8)>> {
        // SAFETY: plain socket(2); the descriptor is owned at once.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        // A dump of the local table is a few messages; a kernel that never answers must not
        // hold a proxy thread.
        let timeout = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: setsockopt with a valid pointer and length for each option.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
        let strict = strict
            // SAFETY: as above.
            && unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_NETLINK,
                    NETLINK_GET_STRICT_CHK,
                    (&one as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            } == 0;
        let seq = 1u32;
        let request = Request {
            header: libc::nlmsghdr {
                nlmsg_len: (HEADER + ROUTE) as u32,
                nlmsg_type: libc::RTM_GETROUTE,
                nlmsg_flags: (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16,
                nlmsg_seq: seq,
                nlmsg_pid: 0,
            },
            route: RtMsg {
                family,
                dst_len: 0,
                src_len: 0,
                tos: 0,
                table: if strict { RT_TABLE_LOCAL } else { 0 },
                protocol: 0,
                scope: 0,
                kind: if strict { RTN_LOCAL } else { 0 },
                flags: 0,
            },
        };
        // SAFETY: an all-zero sockaddr_nl is the kernel's address (pid 0, no groups).
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: the request and the address are valid for their lengths.
        let sent = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                (&request as *const Request).cast(),
                HEADER + ROUTE,
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is valid for its length.
            let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Err(io::Error::other("the route dump ended without NLMSG_DONE"));
            }
            if parse(&buf[..n as usize], seq, &mut out)? {
                return Ok(out);
            }
        }
    }

    /// Reads one datagram of the dump into `out`; `Ok(true)` at its end.
    pub(super) fn parse(
        mut data: &[u8],
        seq: u32,
        out: &mut Vec<(IpAddr, u8)>,
    ) -> io::Result<bool> {
        let bad = || io::Error::other("a malformed route message");
        while data.len() >= HEADER {
            let len = u32::from_ne_bytes(data[0..4].try_into().map_err(|_| bad())?) as usize;
            let kind = u16::from_ne_bytes(data[4..6].try_into().map_err(|_| bad())?);
            let their_seq = u32::from_ne_bytes(data[8..12].try_into().map_err(|_| bad())?);
            if len < HEADER || len > data.len() {
                return Err(bad());
            }
            let body = &data[HEADER..len];
            if their_seq == seq {
                match i32::from(kind) {
                    libc::NLMSG_DONE => return Ok(true),
                    libc::NLMSG_ERROR => {
                        let code = body
                            .get(0..4)
                            .map(|b| i32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
                            .ok_or_else(bad)?;
                        if code != 0 {
                            return Err(io::Error::from_raw_os_error(-code));
                        }
                    }
                    k if k == i32::from(libc::RTM_NEWROUTE) => route(body, out)?,
                    _ => {}
                }
            }
            let next = (len + 3) & !3;
            data = data.get(next..).unwrap_or(&[]);
        }
        Ok(false)
    }

    /// One `RTM_NEWROUTE`: its destination prefix when its type is `local`.
    fn route(body: &[u8], out: &mut Vec<(IpAddr, u8)>) -> io::Result<()> {
        let bad = || io::Error::other("a malformed route message");
        if body.len() < ROUTE {
            return Err(bad());
        }
        let (family, dst_len, kind) = (body[0], body[1], body[7]);
        if kind != RTN_LOCAL {
            return Ok(());
        }
        let mut dst: Option<IpAddr> = None;
        let mut attrs = &body[ROUTE..];
        while attrs.len() >= 4 {
            let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
            let ty = u16::from_ne_bytes([attrs[2], attrs[3]]);
            if len < 4 || len > attrs.len() {
                return Err(bad());
            }
            let value = &attrs[4..len];
            if ty == RTA_DST {
                dst = match value.len() {
                    4 => Some(IpAddr::V4(Ipv4Addr::from(
                        <[u8; 4]>::try_from(value).map_err(|_| bad())?,
                    ))),
                    16 => Some(IpAddr::V6(Ipv6Addr::from(
                        <[u8; 16]>::try_from(value).map_err(|_| bad())?,
                    ))),
                    _ => return Err(bad()),
                };
            }
            let next = (len + 3) & !3;
            attrs = attrs.get(next..).unwrap_or(&[]);
        }
        // No destination: a local default route; every address of the family is the host's.
        let dst = dst.unwrap_or(if i32::from(family) == libc::AF_INET6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        });
        out.push((dst, dst_len));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_embedded_addresses() {
        let h = HostAddrs::of(&[
            ("203.0.113.7", 32),
            ("198.51.100.0", 24),
            ("2001:db8:1::5", 128),
            ("0.0.0.0", 0),
        ]);
        let no_default = HostAddrs::of(&[
            ("203.0.113.7", 32),
            ("198.51.100.0", 24),
            ("2001:db8:1::5", 128),
        ]);
        for (ip, want) in [
            ("203.0.113.7", true),
            ("203.0.113.8", false),
            ("198.51.100.200", true),
            ("198.51.101.1", false),
            ("2001:db8:1::5", true),
            ("2001:db8:1::6", false),
            // The same IPv4 address spelled as IPv6 that reaches it.
            ("::ffff:203.0.113.7", true),
            ("64:ff9b::cb00:7107", true),
            ("2002:cb00:7107::1", true),
            ("::ffff:203.0.113.9", false),
            ("64:ff9b::cb00:7108", false),
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(no_default.contains(ip), want, "{ip}");
        }
        // A local default route (`ip route add local default dev lo`): every IPv4 address.
        assert!(h.contains("8.8.8.8".parse().unwrap()));
        assert!(!h.contains("2606:4700::1111".parse().unwrap()));
    }

    /// The machine's own addresses are read, and loopback is among them (on every host).
    #[test]
    fn this_hosts_addresses_include_loopback() {
        let h = HostAddrs::read().unwrap();
        assert!(h.contains(IpAddr::V4(Ipv4Addr::LOCALHOST)), "{h:?}");
        assert!(h.contains("127.8.9.10".parse().unwrap()), "{h:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn malformed_route_messages_are_errors() {
        let mut out = Vec::new();
        // A header whose length runs past the datagram.
        let mut m = vec![0u8; 16];
        m[0..4].copy_from_slice(&64u32.to_ne_bytes());
        m[4..6].copy_from_slice(&libc::RTM_NEWROUTE.to_ne_bytes());
        m[8..12].copy_from_slice(&1u32.to_ne_bytes());
        assert!(netlink::parse(&m, 1, &mut out).is_err());
        // A local route whose destination attribute runs past the message.
        let mut m = vec![0u8; 16 + 12 + 8];
        m[0..4].copy_from_slice(&36u32.to_ne_bytes());
        m[4..6].copy_from_slice(&libc::RTM_NEWROUTE.to_ne_bytes());
        m[8..12].copy_from_slice(&1u32.to_ne_bytes());
        m[16] = libc::AF_INET as u8;
        m[17] = 32;
        m[23] = 2;
        m[28..30].copy_from_slice(&9u16.to_ne_bytes());
        m[30..32].copy_from_slice(&1u16.to_ne_bytes());
        assert!(netlink::parse(&m, 1, &mut out).is_err());
        // The same with 4 bytes: one /32, and a message of another sequence is ignored.
        m[28..30].copy_from_slice(&8u16.to_ne_bytes());
        m[32..36].copy_from_slice(&[203, 0, 113, 7]);
        assert!(!netlink::parse(&m, 1, &mut out).unwrap());
        assert_eq!(out, [("203.0.113.7".parse().unwrap(), 32)]);
        assert!(!netlink::parse(&m, 2, &mut out).unwrap());
        assert_eq!(out.len(), 1);
        // An error answer is the kernel's error.
        let mut m = vec![0u8; 20];
        m[0..4].copy_from_slice(&20u32.to_ne_bytes());
        m[4..6].copy_from_slice(&(libc::NLMSG_ERROR as u16).to_ne_bytes());
        m[8..12].copy_from_slice(&1u32.to_ne_bytes());
        m[16..20].copy_from_slice(&(-libc::EINVAL).to_ne_bytes());
        assert_eq!(
            netlink::parse(&m, 1, &mut out).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }
}
