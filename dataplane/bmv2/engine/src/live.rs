//! Live ports in native threads: the bundled target's data path on veth / NICs.
//!
//! Per live port a receive thread takes frames in batches (from its PACKET_MMAP ring) and
//! runs the ingress pipeline on the whole batch under one engine lock; the packets go into
//! their egress port's strict-priority queues (BMv2's: priority p of n queues, 7 highest, a
//! priority not below n drops as "out of range", a full queue tail-drops); per egress port a drain thread
//! is the link: when it frees, the highest-priority packet queued at that instant goes, and
//! the next choice waits until its bytes would have left at the link rate (None: no wait).
//! Egress runs at departure, into the port's PACKET_MMAP transmit ring (one `send` a batch). So under overload the queues decide which
//! lanes lose, as on BMv2, not the CPU or the kernel's socket buffers.
//!
//! Python keeps only control (start / stop, link rate, status, pipeline swaps). The
//! control plane's writes close the [`Gate`] for the length of a P4Runtime batch, so the
//! data path never runs a packet against half a batch; a packet ingressed by a pipeline
//! that has since been replaced (SetForwardingPipelineConfig) is never egressed by the new
//! one (its header layout belongs to the old program; BMv2 drops in-flight packets too).

use crate::exec::{Engine, Packet};
use crate::lanes::{Lanes, Refused};
use crate::rawsock::{RawSock, RxRing, TxRing};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One pipeline (engine) shared by the control plane and the data path.
pub type Shared = Arc<Mutex<Engine>>;

/// Frames per system call and per engine lock.
pub const BATCH: usize = 256;
const POLL: Duration = Duration::from_millis(100);
/// While frames keep coming, a receive thread polls this long for the next ones before it
/// sleeps in the kernel: a wake-up per batch costs more than the batch's pipeline.
const SPIN: Duration = Duration::from_micros(200);

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Closed while the control plane applies a batch of writes: the data path waits at it
/// before taking the engine, so it sees the tables before or after a batch, never between.
#[derive(Default)]
pub struct Gate {
    closed: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub fn close(&self) {
        *lock(&self.closed) = true;
    }

    pub fn open(&self) {
        *lock(&self.closed) = false;
        self.cv.notify_all();
    }

    /// The engine, once the gate is open. The gate's mutex is held until the engine's is
    /// taken, so a writer that closes the gate afterwards waits for this batch to finish.
    pub fn enter<'a>(&self, engine: &'a Mutex<Engine>) -> MutexGuard<'a, Engine> {
        let mut closed = lock(&self.closed);
        while *closed {
            closed = self.cv.wait(closed).unwrap_or_else(|p| p.into_inner());
        }
        let e = lock(engine);
        drop(closed);
        e
    }
}

struct Queued {
    packet: Packet,
    /// The pipeline that ingressed it, compared with the current one's at departure (a
    /// number rather than a reference count the receiving and the draining thread would
    /// both write per packet).
    generation: u64,
    length: usize,
}

/// One egress port: its priority queues and the condition its drain thread waits on.
struct EgressPort {
    queues: Mutex<Lanes<Queued>>,
    cv: Condvar,
}

#[derive(Default)]
pub struct Counters {
    pub received: AtomicU64,
    pub transmitted: AtomicU64,
    pub drops_queue_full: AtomicU64,
    pub drops_out_of_range: AtomicU64,
    pub send_errors: AtomicU64,
    pub stale_drops: AtomicU64,
}

pub struct Live {
    pub priority_queues: usize,
    pub queue_depth: usize,
    /// Bits per second; 0 = unlimited.
    link_bps: AtomicU64,
    /// The current pipeline and its generation (counts pipeline changes).
    engine: Mutex<(Option<Shared>, u64)>,
    gate: Arc<Gate>,
    socks: HashMap<u64, Arc<RawSock>>,
    /// Per port, the transmit ring its drain thread takes (once).
    tx: Mutex<HashMap<u64, TxRing>>,
    egress: Mutex<HashMap<u64, Arc<EgressPort>>>,
    pub counters: Counters,
    stop: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

impl Live {
    /// Open every `(port, ifname)` (AF_PACKET: needs root). Nothing runs until [`Live::start`].
    pub fn open(
        ports: &[(u64, String)],
        priority_queues: usize,
        queue_depth: usize,
        link_bps: Option<u64>,
        gate: Arc<Gate>,
    ) -> io::Result<Arc<Live>> {
        let mut socks = HashMap::new();
        let mut tx = HashMap::new();
        for (port, ifname) in ports {
            socks.insert(*port, Arc::new(RawSock::open(ifname, true, POLL)?));
            tx.insert(*port, TxRing::open(ifname)?);
        }
        Ok(Arc::new(Live {
            priority_queues,
            queue_depth,
            link_bps: AtomicU64::new(link_bps.unwrap_or(0)),
            engine: Mutex::new((None, 0)),
            gate,
            socks,
            tx: Mutex::new(tx),
            egress: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            stop: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
        }))
    }

    /// The pipeline that ingresses from now on (None: frames are received and dropped).
    pub fn set_engine(&self, engine: Option<Shared>) {
        let mut current = lock(&self.engine);
        let same = match (&current.0, &engine) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            *current = (engine, current.1 + 1);
        }
    }

    pub fn link_bps(&self) -> Option<u64> {
        match self.link_bps.load(Relaxed) {
            0 => None,
            r => Some(r),
        }
    }

    pub fn set_link_bps(&self, rate: Option<u64>) {
        self.link_bps.store(rate.unwrap_or(0), Relaxed);
        for port in lock(&self.egress).values() {
            let _q = lock(&port.queues); // a drain thread between its check and its wait sees the new rate
            port.cv.notify_all();
        }
    }

    /// Packets queued now, per egress port and priority.
    pub fn depths(&self) -> Vec<(u64, Vec<usize>)> {
        let mut out: Vec<(u64, Vec<usize>)> =
            lock(&self.egress).iter().map(|(p, e)| (*p, lock(&e.queues).depths())).collect();
        out.sort();
        out
    }

    pub fn start(self: &Arc<Self>) {
        for (port, sock) in &self.socks {
            let (live, sock, port) = (Arc::clone(self), Arc::clone(sock), *port);
            let h = std::thread::Builder::new()
                .name(format!("rx-port{port}"))
                .spawn(move || live.receive_loop(port, &sock))
                .expect("spawn a receive thread");
            lock(&self.threads).push(h);
        }
    }

    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
        for port in lock(&self.egress).values() {
            let _q = lock(&port.queues);
            port.cv.notify_all();
        }
        let threads: Vec<JoinHandle<()>> = lock(&self.threads).drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }

    fn egress_port(self: &Arc<Self>, port: u64) -> Arc<EgressPort> {
        let mut ports = lock(&self.egress);
        if let Some(p) = ports.get(&port) {
            return Arc::clone(p);
        }
        let p = Arc::new(EgressPort {
            queues: Mutex::new(Lanes::new(self.priority_queues, self.queue_depth)),
            cv: Condvar::new(),
        });
        ports.insert(port, Arc::clone(&p));
        let (live, q) = (Arc::clone(self), Arc::clone(&p));
        let h = std::thread::Builder::new()
            .name(format!("tm-port{port}"))
            .spawn(move || live.drain_loop(port, &q))
            .expect("spawn a drain thread");
        lock(&self.threads).push(h);
        p
    }

    fn receive_loop(self: Arc<Self>, port: u64, sock: &RawSock) {
        let mut ring = RxRing::new(BATCH);
        let mut out: Vec<(u64, u64, Queued)> = Vec::with_capacity(BATCH);
        let mut ports: HashMap<u64, Arc<EgressPort>> = HashMap::new();
        let mut busy_until: Option<Instant> = None;
        while !self.stop.load(Relaxed) {
            let spin = busy_until.is_some_and(|t| Instant::now() < t);
            let n = ring.receive(sock, !spin);
            if n == 0 {
                if spin {
                    std::thread::yield_now();
                } else {
                    busy_until = None;
                }
                continue;
            }
            busy_until = Some(Instant::now() + SPIN);
            self.counters.received.fetch_add(n as u64, Relaxed);
            let (Some(engine), generation) = lock(&self.engine).clone() else { continue };
            let now = now_us();
            {
                let mut e = self.gate.enter(&engine);
                for data in ring.frames(sock) {
                    if let Some(p) = e.ingress_from(data, port, now) {
                        let (egress_port, priority, length) = (e.egress_spec(&p), e.priority(&p), p.data.len());
                        out.push((egress_port, priority, Queued { packet: p, generation, length }));
                    }
                }
            }
            self.enqueue(&mut out, &mut ports);
        }
    }

    /// Queue the batch's packets per egress port (one lock and one wake-up per port).
    fn enqueue(self: &Arc<Self>, out: &mut Vec<(u64, u64, Queued)>, ports: &mut HashMap<u64, Arc<EgressPort>>) {
        while let Some(&(port_no, _, _)) = out.first() {
            let port = ports.entry(port_no).or_insert_with(|| self.egress_port(port_no)).clone();
            let mut queues = lock(&port.queues);
            let mut rest = Vec::new();
            for (p, priority, q) in out.drain(..) {
                if p != port_no {
                    rest.push((p, priority, q));
                    continue;
                }
                match queues.offer(priority, q) {
                    Ok(()) => {}
                    Err(Refused::OutOfRange) => _ = self.counters.drops_out_of_range.fetch_add(1, Relaxed),
                    Err(Refused::Full) => _ = self.counters.drops_queue_full.fetch_add(1, Relaxed),
                }
            }
            drop(queues);
            port.cv.notify_one();
            *out = rest;
        }
    }

    fn drain_loop(self: Arc<Self>, port: u64, eg: &EgressPort) {
        let mut link_free = Instant::now();
        let mut batch: Vec<Queued> = Vec::with_capacity(BATCH);
        // the frames of a batch, deparsed into buffers kept from batch to batch
        let mut frames: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
        let mut sock = lock(&self.tx).remove(&port);
        loop {
            {
                let mut queues = lock(&eg.queues);
                loop {
                    if self.stop.load(Relaxed) {
                        return;
                    }
                    let now = Instant::now();
                    if now < link_free {
                        // the previous frame is still on the wire
                        queues = eg.cv.wait_timeout(queues, link_free - now).unwrap_or_else(|p| p.into_inner()).0;
                        continue;
                    }
                    let rate = self.link_bps.load(Relaxed);
                    queues.depart(&mut link_free, now, rate, BATCH, |q| q.length, &mut batch);
                    if !batch.is_empty() {
                        break;
                    }
                    queues = eg.cv.wait(queues).unwrap_or_else(|p| p.into_inner());
                }
            }
            let n = self.transmit(&mut batch, &mut frames);
            if let Some(sock) = &mut sock {
                let failed = sock.send_batch(&frames[..n]);
                self.counters.send_errors.fetch_add(failed as u64, Relaxed);
            }
        }
    }

    /// Egress + deparser for a batch leaving now, under one engine lock, into the first of
    /// `frames` (grown as needed); how many to send. A packet of a replaced pipeline is
    /// counted as a stale drop, not as transmitted.
    fn transmit(&self, batch: &mut Vec<Queued>, frames: &mut Vec<Vec<u8>>) -> usize {
        let n = batch.len() as u64;
        let (current, generation) = lock(&self.engine).clone();
        let now = now_us();
        let mut stale = 0;
        let mut ready = 0;
        match current {
            Some(engine) => {
                let mut e = self.gate.enter(&engine);
                for q in batch.drain(..) {
                    if q.generation != generation {
                        stale += 1;
                    } else {
                        if frames.len() == ready {
                            frames.push(Vec::new());
                        }
                        ready += e.egress_into(q.packet, now, &mut frames[ready]) as usize;
                    }
                }
            }
            None => {
                stale = n;
                batch.clear();
            }
        }
        self.counters.stale_drops.fetch_add(stale, Relaxed);
        self.counters.transmitted.fetch_add(n - stale, Relaxed);
        ready
    }
}
