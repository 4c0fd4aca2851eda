//! The forwarding benchmark's sender and receiver (`bench/p4rt_write.py`): one frame
//! offered into a switch's port in batches (`sendmmsg`) with at most `window` frames inside
//! the switch at a time (a closed loop: the measure is the switch's capacity, not how much
//! of an unpaced burst its input buffer drops), counted on the output port from a
//! PACKET_MMAP ring. A sender of one system call per frame offers about as much as the
//! switch it measures, so it could not show a ratio of several times.

use crate::rawsock::{RawSock, RxRing};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a run measured.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub sent: u64,
    pub received: u64,
    /// Frames sent per second of sending.
    pub offered_pps: f64,
    /// Frames received per second from the first send to the last receive.
    pub forwarded_pps: f64,
}

/// Offer `count` copies of `frame` into `tx_if`, count frames arriving on `rx_if`; frames
/// lost inside the switch are written off after `stall` without progress (the window reopens).
pub fn run(tx_if: &str, rx_if: &str, frame: &[u8], count: u64, window: u64, stall: Duration) -> io::Result<Measured> {
    let tx = RawSock::open(tx_if, false, Duration::from_millis(50))?;
    let rx = RawSock::open(rx_if, true, Duration::from_millis(20))?;
    let got = Arc::new(AtomicU64::new(0));
    // the sender sleeps here while the window is full (a spinning sender would take a CPU
    // from the switch it measures on a small machine); the counter wakes it
    let wake = Arc::new((Mutex::new(()), Condvar::new()));
    let done = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let last_rx = Arc::new(AtomicU64::new(0)); // ns after t0
    let counter = {
        let (got, done, last_rx, wake) = (Arc::clone(&got), Arc::clone(&done), Arc::clone(&last_rx), Arc::clone(&wake));
        std::thread::spawn(move || {
            let mut ring = RxRing::new(256);
            let mut idle_since = Instant::now();
            loop {
                let n = ring.receive(&rx, true);
                if n > 0 {
                    got.fetch_add(n as u64, Relaxed);
                    last_rx.store(t0.elapsed().as_nanos() as u64, Relaxed);
                    idle_since = Instant::now();
                    let _g = crate::live::lock(&wake.0);
                    wake.1.notify_one();
                } else if done.load(Relaxed) && idle_since.elapsed() >= stall {
                    return; // every frame still in the switch had `stall` to arrive
                }
            }
        })
    };
    let frames = vec![frame.to_vec(); 256];
    let mut sent = 0u64;
    let mut written_off = 0u64;
    let mut progress = (0u64, Instant::now());
    while sent < count {
        let g = got.load(Relaxed);
        if g != progress.0 {
            progress = (g, Instant::now());
        }
        let in_flight = sent.saturating_sub(g + written_off);
        if in_flight >= window {
            if progress.1.elapsed() >= stall {
                written_off = sent - g; // lost inside the switch: reopen the window
                progress.1 = Instant::now();
                continue;
            }
            let guard = crate::live::lock(&wake.0);
            if got.load(Relaxed) == g {
                let _ = wake.1.wait_timeout(guard, Duration::from_millis(10));
            }
            continue;
        }
        let n = (window - in_flight).min(count - sent).min(256) as usize;
        let failed = tx.send_batch(&frames[..n]);
        sent += (n - failed) as u64;
    }
    let send_s = t0.elapsed().as_secs_f64();
    done.store(true, Relaxed);
    let _ = counter.join();
    let received = got.load(Relaxed);
    let span = last_rx.load(Relaxed) as f64 / 1e9;
    Ok(Measured {
        sent,
        received,
        offered_pps: sent as f64 / send_s,
        forwarded_pps: if received > 0 && span > 0.0 { received as f64 / span } else { 0.0 },
    })
}
