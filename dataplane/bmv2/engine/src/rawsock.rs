//! AF_PACKET sockets for the live ports and the benchmark's sender: frames are received
//! through a PACKET_MMAP ring (TPACKET_V2) shared with the kernel, read in place without a
//! system call while frames keep coming, and sent in batches (the live ports through a
//! PACKET_MMAP transmit ring, [`TxRing`]; the benchmark's sender with `sendmmsg`), so that one
//! port moves hundreds of thousands of frames per second where a call per frame cannot.
//!
//! Linux strips a received 802.1Q tag into packet metadata (VLAN offload, on by default on
//! veth); the ring's frame header carries it and it is put back where it was on the wire.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const ETH_P_ALL: u16 = 0x0003;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_LOSS: libc::c_int = 14;
const PACKET_TX_RING: libc::c_int = 13;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_RESERVE: libc::c_int = 12;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_VLAN_VALID: u32 = 0x10;
const TP_STATUS_VLAN_TPID_VALID: u32 = 0x40;
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
/// Bytes of a transmit ring: several batches of the drain thread in flight (a frame's slot
/// frees when the kernel has freed its buffer, which on veth is after the peer took it).
const TX_RING_BYTES: usize = 2 << 20;
/// Bytes of a receive ring: as much as the socket buffer the live ports had before the
/// ring (8 MB, thousands of small frames), so that a burst is queued by the switch's
/// traffic manager, not lost in the kernel.
const RING_BYTES: usize = 8 << 20;
/// Room before a received frame for the 802.1Q tag the kernel stripped (PACKET_RESERVE).
const HEADROOM: usize = 4;
/// struct tpacket2_hdr, then (TPACKET_ALIGN'ed) the struct sockaddr_ll of the frame.
const HDR2: usize = 32;

#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

/// The receive ring mapped from the kernel: `frames` frames of `frame_size` bytes.
struct Mapping {
    base: *mut u8,
    bytes: usize,
    frame_size: usize,
    frames: usize,
}

pub struct RawSock {
    fd: OwnedFd,
    ring: Option<Mapping>,
    timeout: Duration,
}

// SAFETY: the mapping is only read by one RxRing at a time (one receiving thread per
// socket) and only written by the kernel; sending never touches it
unsafe impl Send for RawSock {}
unsafe impl Sync for RawSock {}

impl Drop for RawSock {
    fn drop(&mut self) {
        if let Some(m) = &self.ring {
            // SAFETY: the region mmap returned, unmapped once
            unsafe { libc::munmap(m.base as *mut libc::c_void, m.bytes) };
        }
    }
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
    /// A raw socket bound to `ifname`, receiving every protocol, with a receive ring when
    /// `ring` (a socket that only sends has none), waiting at most `timeout` for frames so
    /// that a receiving thread notices a stop.
    pub fn open(ifname: &str, ring: bool, timeout: Duration) -> io::Result<RawSock> {
        let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
        // SAFETY: plain system calls on a descriptor this function owns
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {ifname}")));
        }
        let raw = check(unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, ETH_P_ALL.to_be() as i32)
        })?;
        let mut sock = RawSock { fd: unsafe { OwnedFd::from_raw_fd(raw) }, ring: None, timeout };
        let fd = sock.fd.as_raw_fd();
        // this host's own frames out of the interface (e.g. what the switch sends on a port
        // it also receives on) are not queued to the socket at all (Linux 4.20+; before,
        // `receive` skips them by packet type)
        let _ = setsockopt(fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32);
        if ring {
            sock.ring = Some(map_ring(fd, ifname, PACKET_RX_RING, RING_BYTES)?);
            // before bind: no frame lands outside it
        }
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex as i32;
        check(unsafe {
            libc::bind(
                fd,
                &addr as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            )
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
            let n = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), msgs[done..].as_mut_ptr(), (msgs.len() - done) as u32, 0)
            };
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

/// A TPACKET_V2 ring on `fd` (`kind`: PACKET_RX_RING or PACKET_TX_RING) of about
/// `ring_bytes`, frames sized for the interface's MTU.
fn map_ring(fd: libc::c_int, ifname: &str, kind: libc::c_int, ring_bytes: usize) -> io::Result<Mapping> {
    let mtu: usize = std::fs::read_to_string(format!("/sys/class/net/{ifname}/mtu"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1500);
    // header, address, reserve, Ethernet + VLAN header and the MTU, in a power of two
    let frame_size = (HDR2 + 32 + HEADROOM + 18 + mtu).next_power_of_two().max(2048);
    let block_size = frame_size.max(1 << 16);
    let frames = (ring_bytes / frame_size).max(block_size / frame_size);
    let block_nr = frames * frame_size / block_size;
    setsockopt(fd, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V2)?;
    if kind == PACKET_RX_RING {
        setsockopt(fd, libc::SOL_PACKET, PACKET_RESERVE, &(HEADROOM as u32))?;
    }
    let req = TpacketReq {
        tp_block_size: block_size as u32,
        tp_block_nr: block_nr as u32,
        tp_frame_size: frame_size as u32,
        tp_frame_nr: frames as u32,
    };
    setsockopt(fd, libc::SOL_PACKET, kind, &req)?;
    let bytes = block_size * block_nr;
    // SAFETY: maps the ring the kernel just allocated for this socket
    let base =
        unsafe { libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Mapping { base: base as *mut u8, bytes, frame_size, frames })
}

/// One reader of a socket's receive ring: where it is in the ring, the frames it took last
/// (handed back to the kernel at the next [`RxRing::receive`]) and up to how many it takes
/// at a time.
pub struct RxRing {
    head: usize,
    batch: usize,
    taken: Vec<usize>,
    /// (offset in the ring, length) of each frame the last receive took.
    ready: Vec<(usize, usize)>,
}

impl RxRing {
    pub fn new(batch: usize) -> RxRing {
        RxRing { head: 0, batch, taken: Vec::with_capacity(batch), ready: Vec::with_capacity(batch) }
    }

    fn status(m: &Mapping, frame: usize) -> &AtomicU32 {
        // SAFETY: tp_status is the first, aligned u32 of a frame inside the mapping; the
        // kernel and this reader hand the frame over through it
        unsafe { &*(m.base.add(frame * m.frame_size) as *const AtomicU32) }
    }

    /// Take every frame already in the ring, up to the batch size (`wait`: first wait for
    /// one, up to the socket's timeout; otherwise never sleep), each as it was on the wire
    /// (VLAN tag restored), skipping the frames this host sent out of the interface; the
    /// number taken, which [`RxRing::frames`] then lists. The frames of the call before go
    /// back to the kernel first.
    pub fn receive(&mut self, sock: &RawSock, wait: bool) -> usize {
        let m = sock.ring.as_ref().expect("a socket opened with a receive ring");
        for &f in &self.taken {
            Self::status(m, f).store(TP_STATUS_KERNEL, Ordering::Release);
        }
        self.taken.clear();
        self.ready.clear();
        if wait && Self::status(m, self.head).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
            let mut pfd = libc::pollfd { fd: sock.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd, alive for the call
            unsafe { libc::poll(&mut pfd, 1, sock.timeout.as_millis() as libc::c_int) };
        }
        while self.taken.len() < self.batch {
            let f = self.head;
            let status = Self::status(m, f).load(Ordering::Acquire);
            if status & TP_STATUS_USER == 0 {
                break;
            }
            self.taken.push(f);
            self.head = (f + 1) % m.frames;
            let at = f * m.frame_size;
            // SAFETY: the frame belongs to this reader until its status is handed back; its
            // header, address and data lie within the frame, as the kernel laid them out
            unsafe {
                let hdr = &*(m.base.add(at) as *const Tpacket2Hdr);
                let sll = &*(m.base.add(at + HDR2) as *const libc::sockaddr_ll);
                if sll.sll_pkttype == libc::PACKET_OUTGOING {
                    continue;
                }
                let (mac, len) = (at + hdr.tp_mac as usize, hdr.tp_snaplen as usize);
                if status & TP_STATUS_VLAN_VALID != 0 && len >= 12 {
                    // the MAC addresses 4 bytes back (into the reserve), the tag after them
                    let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 { hdr.tp_vlan_tpid } else { 0x8100 };
                    let tci = hdr.tp_vlan_tci;
                    std::ptr::copy(m.base.add(mac), m.base.add(mac - HEADROOM), 12);
                    let [a, b] = tpid.to_be_bytes();
                    let [c, d] = tci.to_be_bytes();
                    std::ptr::copy_nonoverlapping([a, b, c, d].as_ptr(), m.base.add(mac + 12 - HEADROOM), 4);
                    self.ready.push((mac - HEADROOM, len + HEADROOM));
                } else {
                    self.ready.push((mac, len));
                }
            }
        }
        self.ready.len()
    }

    /// The frames the last [`RxRing::receive`] took, valid until the next one.
    pub fn frames<'a>(&'a self, sock: &'a RawSock) -> impl Iterator<Item = &'a [u8]> + 'a {
        let m = sock.ring.as_ref().expect("a socket opened with a receive ring");
        // SAFETY: each (offset, length) lies in a frame this reader holds until its next receive
        self.ready.iter().map(move |&(at, len)| unsafe { std::slice::from_raw_parts(m.base.add(at), len) })
    }
}

/// A socket that only sends, through a PACKET_MMAP transmit ring (TPACKET_V2): frames are
/// written into the ring shared with the kernel and one `send` hands the whole batch over,
/// instead of a message and an iovec per frame copied in by `sendmmsg`. Bound with protocol
/// 0, it receives nothing.
pub struct TxRing {
    fd: OwnedFd,
    ring: Mapping,
    head: usize,
}

// SAFETY: the mapping is written by the one thread that owns the TxRing (and the kernel)
unsafe impl Send for TxRing {}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: the region mmap returned, unmapped once
        unsafe { libc::munmap(self.ring.base as *mut libc::c_void, self.ring.bytes) };
    }
}

impl TxRing {
    pub fn open(ifname: &str) -> io::Result<TxRing> {
        let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
        // SAFETY: plain system calls on a descriptor this function owns
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {ifname}")));
        }
        let raw = check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // a frame the kernel cannot send (malformed, device down) is skipped, not retried
        // forever at the head of the ring
        setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_LOSS, &1i32)?;
        let ring = map_ring(fd.as_raw_fd(), ifname, PACKET_TX_RING, TX_RING_BYTES)?;
        let tx = TxRing { fd, ring, head: 0 };
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = 0;
        addr.sll_ifindex = ifindex as i32;
        check(unsafe {
            libc::bind(
                tx.fd.as_raw_fd(),
                &addr as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            )
        })?;
        Ok(tx)
    }

    fn status(&self, frame: usize) -> &AtomicU32 {
        // SAFETY: tp_status is the first, aligned u32 of a frame inside the mapping
        unsafe { &*(self.ring.base.add(frame * self.ring.frame_size) as *const AtomicU32) }
    }

    /// Hand every frame queued in the ring to the kernel, without waiting for them to leave.
    fn flush(&self) {
        // SAFETY: a send with no data: the kernel takes the ring's SEND_REQUEST frames
        unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
    }

    /// Send every frame (one system call per batch, more only when the ring is full); the
    /// number of frames not sent (larger than a ring frame, or the ring stayed full).
    pub fn send_batch(&mut self, frames: &[Vec<u8>]) -> usize {
        let room = self.ring.frame_size - HDR2;
        let mut failed = 0;
        let mut queued = 0;
        for f in frames {
            if f.len() > room {
                failed += 1;
                continue;
            }
            if self.status(self.head).load(Ordering::Acquire) != TP_STATUS_AVAILABLE {
                // the ring is full of frames the kernel has not freed yet: send what is
                // queued and wait for the head's slot (POLLOUT), at most 100 ms
                if queued > 0 {
                    self.flush();
                    queued = 0;
                }
                let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                // SAFETY: one pollfd, alive for the call
                unsafe { libc::poll(&mut pfd, 1, 100) };
                if self.status(self.head).load(Ordering::Acquire) != TP_STATUS_AVAILABLE {
                    failed += 1;
                    continue;
                }
            }
            let at = self.head * self.ring.frame_size;
            // SAFETY: the slot is AVAILABLE, so it belongs to this writer until its status
            // says SEND_REQUEST; the data fits after the header (checked above)
            unsafe {
                let hdr = &mut *(self.ring.base.add(at) as *mut Tpacket2Hdr);
                hdr.tp_len = f.len() as u32;
                std::ptr::copy_nonoverlapping(f.as_ptr(), self.ring.base.add(at + HDR2), f.len());
            }
            self.status(self.head).store(TP_STATUS_SEND_REQUEST, Ordering::Release);
            self.head = (self.head + 1) % self.ring.frames;
            queued += 1;
        }
        if queued > 0 {
            self.flush();
        }
        failed
    }
}
