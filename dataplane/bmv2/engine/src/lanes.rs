//! The live ports' traffic manager, per egress port: strict-priority FIFOs and the link
//! that drains them at a rate on the wall clock (live.rs runs it; kept apart, free of
//! sockets and threads, so that its discipline is tested on synthetic instants).
//!
//! As BMv2's simple_switch: a packet whose standard_metadata.priority is not below the
//! number of queues is dropped ("priority out of range"), priority 7 is the highest, a full
//! queue (`depth` packets, BMv2's default 64) tail-drops. The link is a transmitter: when
//! it frees, the highest-priority packet queued at that instant goes, and the next choice
//! waits until its bytes would have left at the rate (0: it never waits).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A drain thread that waited for a CPU may catch up this long (the link keeps its rate on
/// a loaded machine), but an idle link banks no more than that.
pub const CATCH_UP: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// priority >= the number of queues
    OutOfRange,
    /// the queue holds `depth` packets already
    Full,
}

pub struct Lanes<T> {
    by_priority: Vec<VecDeque<T>>,
    depth: usize,
}

impl<T> Lanes<T> {
    pub fn new(priorities: usize, depth: usize) -> Self {
        Lanes { by_priority: (0..priorities).map(|_| VecDeque::new()).collect(), depth }
    }

    pub fn offer(&mut self, priority: u64, item: T) -> Result<(), Refused> {
        let q = self.by_priority.get_mut(priority as usize).ok_or(Refused::OutOfRange)?;
        if q.len() >= self.depth {
            return Err(Refused::Full);
        }
        q.push_back(item);
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.by_priority.iter().all(|q| q.is_empty())
    }

    /// Packets queued now, per priority.
    pub fn depths(&self) -> Vec<usize> {
        self.by_priority.iter().map(|q| q.len()).collect()
    }

    /// Move into `out` (at most `max` in all) every packet the link starts sending by `now`,
    /// highest priority first each time the link frees; `link_free` is when the link is next
    /// free, `rate_bps` 0 for a link that never waits, `length` a packet's bytes.
    pub fn depart(
        &mut self,
        link_free: &mut Instant,
        now: Instant,
        rate_bps: u64,
        max: usize,
        length: impl Fn(&T) -> usize,
        out: &mut Vec<T>,
    ) {
        *link_free = (*link_free).max(now.checked_sub(CATCH_UP).unwrap_or(now));
        let mut taken = 0;
        while taken < max && *link_free <= now {
            let Some(q) = self.by_priority.iter_mut().rev().find(|q| !q.is_empty()) else { break };
            let f = q.pop_front().expect("non-empty");
            if let Some(ns) = (length(&f) as u64 * 8 * 1_000_000_000).checked_div(rate_bps) {
                *link_free += Duration::from_nanos(ns); // rate 0: the link never waits
            }
            out.push(f);
            taken += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len(_: &(u64, u32)) -> usize {
        1000
    }

    #[test]
    fn overloaded_link_serves_the_highest_priority_first_and_tail_drops() {
        let mut lanes: Lanes<(u64, u32)> = Lanes::new(8, 4);
        let t0 = Instant::now();
        let mut free = t0;
        let mut out = Vec::new();
        lanes.offer(0, (0, 0)).unwrap();
        // 1000-byte frames at 80 kbit/s: 100 ms each; the first goes at once (idle link)
        lanes.depart(&mut free, t0, 80_000, 64, len, &mut out);
        assert_eq!(out, vec![(0, 0)]);
        let mut refused = Vec::new();
        for i in 1..=6 {
            // 6 into a queue of 4: 2 tail-dropped per lane
            for p in [0, 6] {
                if let Err(r) = lanes.offer(p, (p, i)) {
                    refused.push(r);
                }
            }
        }
        assert_eq!(lanes.offer(8, (8, 0)), Err(Refused::OutOfRange), "BMv2: priority out of range");
        assert_eq!(refused, vec![Refused::Full; 4]);
        assert_eq!(lanes.depths(), vec![4, 0, 0, 0, 0, 0, 4, 0]);
        out.clear();
        lanes.depart(&mut free, t0 + Duration::from_millis(50), 80_000, 64, len, &mut out);
        assert!(out.is_empty(), "the first frame is still on the wire");
        // the rate lifted: once the first frame is out, the rest drains at once, still in
        // priority order, FIFO per lane
        lanes.depart(&mut free, t0 + Duration::from_millis(100), 0, 64, len, &mut out);
        let order: Vec<(u64, u32)> = out.clone();
        assert_eq!(order, vec![(6, 1), (6, 2), (6, 3), (6, 4), (0, 1), (0, 2), (0, 3), (0, 4)]);
        assert!(lanes.is_empty());
    }

    #[test]
    fn the_link_rate_paces_departures_and_an_idle_link_banks_at_most_catch_up() {
        let mut lanes: Lanes<(u64, u32)> = Lanes::new(8, 64);
        for i in 0..20 {
            lanes.offer(3, (3, i)).unwrap();
        }
        // 1000-byte frames at 800 kbit/s: 10 ms each
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut free = t0 - Duration::from_secs(1); // idle for a second
        let mut out = Vec::new();
        lanes.depart(&mut free, t0, 800_000, 64, len, &mut out);
        // the link banked CATCH_UP (50 ms) while idle: 5 frames' time, plus the one starting now
        assert_eq!(out.len(), 6);
        assert_eq!(free, t0 + Duration::from_millis(10));
        lanes.depart(&mut free, t0 + Duration::from_millis(35), 800_000, 64, len, &mut out);
        assert_eq!(out.len(), 9, "one frame per 10 ms once the bank is spent");
        lanes.depart(&mut free, t0 + Duration::from_secs(1), 800_000, 4, len, &mut out);
        assert_eq!(out.len(), 13, "at most `max` per call");
    }
}
