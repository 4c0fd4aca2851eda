//! AF_PACKET sockets with batched I/O (`recvmmsg` / `sendmmsg`): one system call moves up
//! to a batch of frames, which is what lets the live ports and the benchmark's sender run
//! at hundreds of thousands of frames per second where one call per frame cannot.
//!
//! Linux strips a received 802.1Q tag into packet metadata (VLAN offload, on by default on
//! veth); it comes back through PACKET_AUXDATA and is put back where it was on the wire.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

const ETH_P_ALL: u16 = 0x0003;
const PACKET_AUXDATA: libc::c_int = 8;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TP_STATUS_VLAN_VALID: u32 = 0x10;
const TP_STATUS_VLAN_TPID_VALID: u32 = 0x40;
/// Largest frame a slot holds (veth MTUs here are 1500; a jumbo frame still fits).
const SLOT: usize = 16384;
const CONTROL: usize = 64; // CMSG_SPACE(sizeof(struct tpacket_auxdata)) is 48

#[repr(C)]
#[derive(Clone, Copy)]
struct TpacketAuxdata {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}

pub struct RawSock {
    fd: OwnedFd,
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn setsockopt<T>(fd: libc::c_int, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: value points at a live T of the size given
    check(unsafe { libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void, size_of::<T>() as u32) })
        .map(|_| ())
}

impl RawSock {
    /// A raw socket bound to `ifname`, receiving every protocol with its VLAN tag data, with
    /// a receive buffer of `rcvbuf` bytes (forced when root) and `timeout` on receives so
    /// that a receiving thread notices a stop.
    pub fn open(ifname: &str, rcvbuf: usize, timeout: Duration) -> io::Result<RawSock> {
        let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
        // SAFETY: plain system calls on a descriptor this function owns
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {ifname}")));
        }
        let raw = check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, ETH_P_ALL.to_be() as i32) })?;
        let sock = RawSock { fd: unsafe { OwnedFd::from_raw_fd(raw) } };
        let fd = sock.fd.as_raw_fd();
        setsockopt(fd, libc::SOL_PACKET, PACKET_AUXDATA, &1i32)?;
        // this host's own frames out of the interface (e.g. what the switch sends on a port
        // it also receives on) are not queued to the socket at all (Linux 4.20+; before,
        // `receive` skips them by packet type)
        let _ = setsockopt(fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32);
        let size = rcvbuf as libc::c_int;
        if setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size).is_err() {
            setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &size)?; // not root: what the system allows
        }
        let tv = libc::timeval { tv_sec: timeout.as_secs() as _, tv_usec: timeout.subsec_micros() as _ };
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)?;
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex as i32;
        check(unsafe {
            libc::bind(fd, &addr as *const libc::sockaddr_ll as *const libc::sockaddr, size_of::<libc::sockaddr_ll>() as u32)
        })?;
        Ok(sock)
    }

    /// Send every frame, as many per system call as the kernel takes; the number of frames
    /// the kernel refused (e.g. ENOBUFS on a full veth: lost on the wire).
    pub fn send_batch(&self, frames: &[Vec<u8>]) -> usize {
        let mut iovs: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                let mut m: libc::mmsghdr = unsafe { zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        let mut done = 0;
        let mut failed = 0;
        while done < msgs.len() {
            // SAFETY: msgs[done..] point at iovecs and frames that outlive the call
            let n = unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs[done..].as_mut_ptr(), (msgs.len() - done) as u32, 0) };
            if n <= 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                failed += 1; // the first frame of the rest was refused: skip it, try the others
                done += 1;
            } else {
                done += n as usize;
            }
        }
        failed
    }
}

/// Receive buffers for one socket: `batch` slots and their message headers, built once and
/// reused across calls (a call that finds one frame, as a spinning receiver's often do,
/// would otherwise rebuild every slot's header). The kernel writes a frame 4 bytes into
/// its slot, so that a stripped VLAN tag goes back in place, without a copy of the frame.
pub struct RxRing {
    bufs: Vec<Vec<u8>>,
    control: Vec<[u8; CONTROL]>,
    addrs: Vec<libc::sockaddr_ll>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    /// (slot, start, end) of each frame the last [`RxRing::receive`] took.
    ready: Vec<(usize, usize, usize)>,
}

/// Room before a received frame for the 802.1Q tag the kernel stripped.
const HEADROOM: usize = 4;

// SAFETY: the raw pointers point into the ring's own heap buffers, which move with it
unsafe impl Send for RxRing {}

impl RxRing {
    pub fn new(batch: usize) -> RxRing {
        let mut ring = RxRing {
            bufs: vec![vec![0u8; SLOT]; batch],
            control: vec![[0u8; CONTROL]; batch],
            addrs: vec![unsafe { zeroed() }; batch],
            iovs: Vec::with_capacity(batch),
            msgs: Vec::with_capacity(batch),
            ready: Vec::with_capacity(batch),
        };
        // the vectors never grow again, so the pointers below stay valid when the ring moves
        for i in 0..batch {
            // SAFETY: HEADROOM < SLOT, within the slot's buffer
            let base = unsafe { ring.bufs[i].as_mut_ptr().add(HEADROOM) };
            ring.iovs.push(libc::iovec { iov_base: base as *mut libc::c_void, iov_len: SLOT - HEADROOM });
        }
        for i in 0..batch {
            let mut m: libc::mmsghdr = unsafe { zeroed() };
            m.msg_hdr.msg_iov = &mut ring.iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_name = &mut ring.addrs[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
            m.msg_hdr.msg_control = ring.control[i].as_mut_ptr() as *mut libc::c_void;
            ring.msgs.push(m);
            ring.reset(i);
        }
        ring
    }

    /// The lengths the kernel overwrote in slot `i` back to the buffers' sizes.
    fn reset(&mut self, i: usize) {
        let m = &mut self.msgs[i];
        m.msg_hdr.msg_namelen = size_of::<libc::sockaddr_ll>() as u32;
        m.msg_hdr.msg_controllen = CONTROL;
        m.msg_hdr.msg_flags = 0;
        m.msg_len = 0;
    }

    /// Take every frame already queued, up to the batch size (`wait`: first wait for one,
    /// up to the socket's timeout; otherwise never sleep), each as it was on the wire (VLAN
    /// tag restored), skipping the frames this host sent out of the interface; the number
    /// taken, which [`RxRing::frames`] then lists.
    pub fn receive(&mut self, sock: &RawSock, wait: bool) -> usize {
        self.ready.clear();
        let n = self.msgs.len();
        // SAFETY: every mmsghdr points into this ring's buffers, alive for the call
        let got = unsafe {
            let flags = if wait { libc::MSG_WAITFORONE } else { libc::MSG_DONTWAIT };
            libc::recvmmsg(sock.fd.as_raw_fd(), self.msgs.as_mut_ptr(), n as u32, flags, std::ptr::null_mut())
        };
        for i in 0..got.max(0) as usize {
            if self.addrs[i].sll_pkttype != libc::PACKET_OUTGOING {
                let len = (self.msgs[i].msg_len as usize).min(SLOT - HEADROOM);
                match vlan_of(&self.msgs[i].msg_hdr) {
                    Some((tpid, tci)) if len >= 12 => {
                        // the MAC addresses 4 bytes forward, the tag after them
                        let buf = &mut self.bufs[i];
                        buf.copy_within(HEADROOM..HEADROOM + 12, 0);
                        buf[12..14].copy_from_slice(&tpid.to_be_bytes());
                        buf[14..16].copy_from_slice(&tci.to_be_bytes());
                        self.ready.push((i, 0, HEADROOM + len));
                    }
                    _ => self.ready.push((i, HEADROOM, HEADROOM + len)),
                }
            }
            self.reset(i);
        }
        self.ready.len()
    }

    /// The frames the last [`RxRing::receive`] took, valid until the next one.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> {
        self.ready.iter().map(|&(i, start, end)| &self.bufs[i][start..end])
    }
}

/// The (TPID, TCI) the kernel stripped from a received frame, from its PACKET_AUXDATA.
fn vlan_of(hdr: &libc::msghdr) -> Option<(u16, u16)> {
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within controllen
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_PACKET
                && (*c).cmsg_type == PACKET_AUXDATA
                && (*c).cmsg_len as usize >= libc::CMSG_LEN(size_of::<TpacketAuxdata>() as u32) as usize
            {
                let aux = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const TpacketAuxdata);
                if aux.tp_status & TP_STATUS_VLAN_VALID != 0 {
                    let tpid = if aux.tp_status & TP_STATUS_VLAN_TPID_VALID != 0 { aux.tp_vlan_tpid } else { 0x8100 };
                    return Some((tpid, aux.tp_vlan_tci));
                }
                return None;
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}
