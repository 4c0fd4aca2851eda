//! Running packets through the program as simple_switch does (v1model): parser, verify
//! checksums, ingress; the caller's traffic manager; egress, update checksums, deparser.
//! The header vector (PHV) travels with the packet from ingress to egress, as in BMv2.

use crate::big::{Big, BITS as BIG_BITS};
use crate::code::{self, Op};
use crate::flat::{Flat, PState, PStep, Step};
use crate::ir::{BinOp, Expr, HRef, Ir, Node, ParserOp, Prim, UnOp};
use crate::table::{full, Entry, TableState, WriteError};

/// BMv2's drop port: egress_spec set to it (mark_to_drop) drops the packet.
pub const DROP_PORT: u64 = 511;

#[derive(Debug, Clone)]
pub struct MeterCell {
    pub cir: u64,
    pub cburst: u64,
    pub pir: u64,
    pub pburst: u64,
    pub configured: bool,
    tc: f64,
    tp: f64,
    last_us: i64,
}

impl Default for MeterCell {
    fn default() -> Self {
        MeterCell { cir: 0, cburst: 0, pir: 0, pburst: 0, configured: false, tc: 0.0, tp: 0.0, last_us: -1 }
    }
}

impl MeterCell {
    pub fn configure(&mut self, cfg: Option<(u64, u64, u64, u64)>) {
        *self = MeterCell::default();
        if let Some((cir, cburst, pir, pburst)) = cfg {
            *self = MeterCell { cir, cburst, pir, pburst, configured: true, ..MeterCell::default() };
        }
    }

    /// A colour-blind trTCM (RFC 2698) as BMv2's meters: 0 GREEN, 1 YELLOW, 2 RED;
    /// unconfigured = GREEN.
    pub(crate) fn execute(&mut self, size: u64, now_us: i64) -> u64 {
        if !self.configured {
            return 0;
        }
        if self.last_us < 0 {
            self.tc = self.cburst as f64;
            self.tp = self.pburst as f64;
        } else {
            let dt = (now_us - self.last_us).max(0) as f64 / 1e6;
            self.tc = (self.cburst as f64).min(self.tc + self.cir as f64 * dt);
            self.tp = (self.pburst as f64).min(self.tp + self.pir as f64 * dt);
        }
        self.last_us = now_us;
        let size = size as f64;
        if self.tp < size {
            return 2;
        }
        if self.tc < size {
            self.tp -= size;
            return 1;
        }
        self.tp -= size;
        self.tc -= size;
        0
    }
}

/// A packet between the stages, boxed: it moves through the pipeline, the queues and the
/// engine's spares by pointer, not as a 200-byte struct copied at every hand-over.
pub type Packet = Box<PacketData>;

/// A packet's header vector and the bytes not yet parsed.
#[derive(Debug, Clone)]
pub struct PacketData {
    pub fields: Vec<u64>,
    pub valid: Vec<bool>,
    pub varbits: Vec<Vec<u8>>,
    pub data: Vec<u8>,
    /// Offset of the payload (what the parser did not extract) in `data`.
    pub payload: usize,
    pub ingress_length: u64,
    /// When the packet entered the traffic manager, on the clock ingress ran on (us): its
    /// ingress instant, which is when ingress hands it to the queues (live.rs stamps a
    /// whole batch with one clock read). Egress turns it into enq_timestamp and
    /// deq_timedelta.
    pub enq_us: u64,
    /// Byte offset at which the parser extracted each header (-1: not extracted).
    pub extracted_at: Vec<i64>,
    /// Each header stack's next index.
    pub next: Vec<usize>,
    /// An `exit` ran: the current control ends before its next table or condition.
    pub exit: bool,
}

pub struct Engine {
    pub ir: Ir,
    pub tables: Vec<TableState>,
    pub counters: Vec<Vec<(u64, u64)>>,
    pub registers: Vec<Vec<u64>>,
    pub meters: Vec<Vec<MeterCell>>,
    /// Action profiles' members and groups, direct meters' cells (profiles.rs).
    pub ext: crate::profiles::State,
    /// A new packet's validity bits: metadata headers valid, the others not.
    valid_init: Vec<bool>,
    /// Packets done with (dropped, or deparsed by egress), reused by the next ingress: a
    /// packet's header vector and frame buffer were five allocations, freed on the live
    /// path by another thread than the one that allocated them (slow in glibc's malloc).
    spare: Vec<Packet>,
    /// The controls as flat steps (`flat`), rebuilt when a keyless table's default changes;
    /// None while a control runs.
    flat: Option<Box<Flat>>,
    /// Per checksum (`ir.checksums`), its inputs in runs of whole 16-bit words, if they fall
    /// into such runs.
    csum_runs: Vec<Option<CsumRuns>>,
    /// The parser's states as steps (`flat::parser`).
    pstates: Vec<PState>,
    /// Per checksum, the tests of its condition (`flat::cond_tests`; none: always).
    csum_tests: Vec<Vec<Step>>,
}

/// A checksum's inputs cut into runs of whole 16-bit words of at most 64 bits: each run
/// packed into one word and its 16-bit halves added at once, not bit by bit through a u128
/// as [`Engine::csum16_of`] must when they do not fall into such runs.
#[derive(Debug, Clone)]
struct CsumRuns {
    /// (slot, shift, mask) of each input: its place in its run's word.
    fields: Vec<(usize, u32, u64)>,
    /// Where each run ends in `fields`.
    ends: Vec<usize>,
}

impl CsumRuns {
    fn new(inputs: &[(usize, u32)]) -> Option<CsumRuns> {
        let mut ends = Vec::new();
        let mut i = 0;
        while i < inputs.len() {
            let (mut bits, mut cut) = (0u32, None);
            for (j, &(_, w)) in inputs.iter().enumerate().skip(i) {
                if w == crate::ir::VARBIT_INPUT || bits + w > 64 {
                    break;
                }
                bits += w;
                if bits % 16 == 0 {
                    cut = Some(j + 1);
                }
            }
            i = cut?;
            ends.push(i);
        }
        let mut fields = Vec::new();
        let mut start = 0;
        for &end in &ends {
            let mut left: u32 = inputs[start..end].iter().map(|&(_, w)| w).sum();
            for &(slot, w) in &inputs[start..end] {
                left -= w;
                // an input of no bits adds 0 whatever its shift: one within range
                fields.push((slot, if w == 0 { 0 } else { left }, full(w)));
            }
            start = end;
        }
        Some(CsumRuns { fields, ends })
    }

    /// csum16 of the packed inputs.
    fn sum(&self, fields: &[u64]) -> u64 {
        let (mut sum, mut start) = (0u64, 0);
        for &end in &self.ends {
            let mut v = 0u64;
            for &(slot, shift, m) in &self.fields[start..end] {
                v |= (fields[slot] & m) << shift;
            }
            sum += (v & 0xffff) + (v >> 16 & 0xffff) + (v >> 32 & 0xffff) + (v >> 48);
            start = end;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !sum & 0xffff
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: controls walked as a node graph (`run_control`), the reference of `run_flat`.
    static WALK_GRAPH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Packets [`Engine::spare`] keeps at most (a live port's batch is 256).
const SPARE: usize = 1024;

struct ParseError(u32);

/// Action data this long or shorter is copied on the stack in `apply_table`.
const INLINE_PARAMS: usize = 16;

pub(crate) fn read_bits(data: &[u8], bit_off: usize, width: u32) -> u64 {
    // width <= 64 and the caller checked the bytes exist
    let first = bit_off / 8;
    if width > 0 {
        if let Some(window) = data.get(first..first + 16) {
            // 16 bytes from the field's first byte hold it at any bit offset (7 + 64 bits)
            let v = u128::from_be_bytes(window.try_into().expect("16 bytes"));
            return ((v << (bit_off % 8)) >> (128 - width)) as u64;
        }
    }
    let last = (bit_off + width as usize).div_ceil(8);
    let mut acc: u128 = 0;
    for b in &data[first..last] {
        acc = (acc << 8) | *b as u128;
    }
    let tail = last * 8 - (bit_off + width as usize);
    ((acc >> tail) as u64) & full(width)
}

struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    nbits: u32,
}

impl BitWriter<'_> {
    fn push(&mut self, value: u64, width: u32) {
        self.acc = (self.acc << width) | (value & full(width)) as u128;
        self.nbits += width;
        let whole = self.nbits / 8; // whole bytes to write, at most 8 (7 + 64 bits)
        if whole > 0 {
            self.nbits -= whole * 8;
            let bytes = (self.acc >> self.nbits).to_be_bytes();
            self.out.extend_from_slice(&bytes[16 - whole as usize..]);
            self.acc &= (1u128 << self.nbits) - 1;
        }
    }
}

struct Ctx<'p> {
    pkt: &'p mut Packet,
    cursor: usize,
}

impl Engine {
    pub fn new(ir: Ir) -> Self {
        let tables = ir.tables.iter().map(TableState::new).collect();
        let counters = ir.counters.iter().map(|c| vec![(0, 0); c.size]).collect();
        let registers = ir.registers.iter().map(|r| vec![0; r.size]).collect();
        let meters = ir.meters.iter().map(|m| vec![MeterCell::default(); m.size]).collect();
        let valid_init = ir.headers.iter().map(|h| h.metadata).collect();
        let ext = crate::profiles::State::new(&ir);
        let csum_runs = ir.checksums.iter().map(|c| CsumRuns::new(&c.inputs)).collect();
        let mut e = Engine {
            ir,
            tables,
            counters,
            registers,
            meters,
            ext,
            valid_init,
            spare: Vec::new(),
            flat: None,
            csum_runs,
            pstates: Vec::new(),
            csum_tests: Vec::new(),
        };
        e.csum_tests =
            e.ir.checksums.iter().map(|c| c.cond.as_ref().map(crate::flat::cond_tests).unwrap_or_default()).collect();
        e.pstates = crate::flat::parser(&e.ir);
        e.flat = Some(Box::new(crate::flat::build(&e.ir, &e.tables)));
        e
    }

    // ---- control plane ---------------------------------------------------------------

    pub fn check_action(&self, table: usize, action: usize, params: &[u64]) -> Result<(), WriteError> {
        let t = &self.ir.tables[table];
        if !t.actions.contains(&action) {
            return Err(WriteError::Invalid(format!("action {action} is not an action of {}", t.name)));
        }
        let a = &self.ir.actions[action];
        if a.param_widths.len() != params.len() {
            return Err(WriteError::Invalid(format!("{} takes {} parameters", a.name, a.param_widths.len())));
        }
        for (w, p) in a.param_widths.iter().zip(params) {
            if p & !full(*w) != 0 {
                return Err(WriteError::Invalid(format!("{}: parameter wider than {w} bits", a.name)));
            }
        }
        Ok(())
    }

    pub fn insert(
        &mut self,
        table: usize,
        key: Vec<(u64, u64)>,
        priority: i64,
        action: usize,
        params: Vec<u64>,
    ) -> Result<u64, WriteError> {
        self.check_action(table, action, &params)?;
        let entry = Entry { key, priority, action, params, packets: 0, bytes: 0, meta: Default::default() };
        let h = self.tables[table].insert(&self.ir.tables[table], entry)?;
        self.entry_added(table, h);
        Ok(h)
    }

    pub fn set_default(&mut self, table: usize, action: usize, params: Vec<u64>) -> Result<(), WriteError> {
        self.check_action(table, action, &params)?;
        let t = &mut self.tables[table];
        t.default_action = action;
        t.default_params = params;
        if t.keyless() {
            // its action is laid out in the flat controls
            self.flat = Some(Box::new(crate::flat::build(&self.ir, &self.tables)));
        }
        Ok(())
    }

    /// The program's `const entries` into their tables (at load).
    pub fn install_const_entries(&mut self) -> Result<(), String> {
        for t in 0..self.ir.tables.len() {
            let entries = std::mem::take(&mut self.ir.tables[t].entries);
            for (n, (key, prio, action, params)) in entries.iter().enumerate() {
                self.insert(t, key.clone(), *prio, *action, params.clone())
                    .map_err(|e| format!("table {}: const entry {n}: {e:?}", self.ir.tables[t].name))?;
            }
            self.ir.tables[t].entries = entries;
        }
        self.commit();
        Ok(())
    }

    pub fn commit(&mut self) {
        for (t, ir) in self.tables.iter_mut().zip(&self.ir.tables) {
            t.commit(ir);
        }
    }

    // ---- data plane ------------------------------------------------------------------

    /// Parser + ingress. None: dropped in ingress (egress_spec = 511).
    pub fn ingress(&mut self, data: Vec<u8>, port: u64, now_us: u64) -> Option<Packet> {
        let mut pkt = self.fresh();
        pkt.data = data;
        self.run_ingress(pkt, port, now_us)
    }

    /// [`Engine::ingress`] of a frame copied into a reused buffer (no allocation per packet
    /// once the engine has spare packets).
    pub fn ingress_from(&mut self, frame: &[u8], port: u64, now_us: u64) -> Option<Packet> {
        let mut pkt = self.fresh();
        pkt.data.clear();
        pkt.data.extend_from_slice(frame);
        self.run_ingress(pkt, port, now_us)
    }

    /// A packet with a blank header vector: a spare one reset, or a new one.
    pub(crate) fn fresh(&mut self) -> Packet {
        match self.spare.pop() {
            Some(mut p) => {
                p.fields.fill(0);
                p.valid.copy_from_slice(&self.valid_init);
                p.varbits.iter_mut().for_each(Vec::clear);
                p.extracted_at.fill(-1);
                p.next.fill(0);
                p.exit = false;
                p.payload = 0;
                p
            }
            None => Box::new(PacketData {
                fields: vec![0; self.ir.slot_width.len()],
                valid: self.valid_init.clone(),
                varbits: vec![Vec::new(); self.ir.headers.len()],
                extracted_at: vec![-1; self.ir.headers.len()],
                next: vec![0; self.ir.stacks.len()],
                exit: false,
                data: Vec::new(),
                payload: 0,
                ingress_length: 0,
                enq_us: 0,
            }),
        }
    }

    /// Keep a packet's buffers for a later ingress.
    pub fn recycle(&mut self, pkt: Packet) {
        if self.spare.len() < SPARE {
            self.spare.push(pkt);
        }
    }

    fn run_ingress(&mut self, mut pkt: Packet, port: u64, now_us: u64) -> Option<Packet> {
        pkt.ingress_length = pkt.data.len() as u64;
        let std = self.ir.std;
        pkt.fields[std.ingress_port] = port & full(self.ir.slot_width[std.ingress_port]);
        pkt.fields[std.packet_length] = pkt.ingress_length;
        pkt.fields[std.ingress_global_timestamp] = now_us & full(48);
        pkt.enq_us = now_us;
        let mut ctx = Ctx { pkt: &mut pkt, cursor: 0 };
        let err = match self.parse(&mut ctx) {
            Ok(()) => 0,
            Err(ParseError(code)) => code,
        };
        pkt.payload = ctx.cursor;
        pkt.fields[std.parser_error] = err as u64;
        if let Some(ce) = std.checksum_error {
            if self.checksums_fail(&pkt) {
                pkt.fields[ce] = 1;
            }
        }
        self.run_flat(true, &mut pkt);
        if pkt.fields[std.egress_spec] == DROP_PORT {
            self.recycle(pkt);
            return None;
        }
        Some(pkt)
    }

    /// Egress + checksums + deparser. None: dropped in egress.
    pub fn egress(&mut self, pkt: Packet, now_us: u64) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(pkt.data.len() + 8);
        self.egress_into(pkt, now_us, &mut out).then_some(out)
    }

    /// [`Engine::egress`] deparsing into `out` (cleared first; the caller reuses it); false:
    /// dropped in egress. The packet's buffers are kept for a later ingress.
    pub fn egress_into(&mut self, mut pkt: Packet, now_us: u64, out: &mut Vec<u8>) -> bool {
        let std = self.ir.std;
        pkt.fields[std.egress_port] = pkt.fields[std.egress_spec];
        pkt.fields[std.egress_spec] = 0;
        if let Some(ts) = std.egress_global_timestamp {
            pkt.fields[ts] = now_us & full(48);
        }
        // BMv2's: 32-bit microseconds, the sojourn from enqueue to dequeue (`now_us`).
        if let Some(f) = std.enq_timestamp {
            pkt.fields[f] = pkt.enq_us & full(32);
        }
        if let Some(f) = std.deq_timedelta {
            pkt.fields[f] = now_us.saturating_sub(pkt.enq_us) & full(32);
        }
        self.run_flat(false, &mut pkt);
        let sent = pkt.fields[std.egress_spec] != DROP_PORT;
        if sent {
            self.update_checksums(&mut pkt);
            out.clear();
            self.deparse(&pkt, out);
        }
        self.recycle(pkt);
        sent
    }

    /// `frame` through ingress and egress `n` times, deparsed into one reused buffer as the
    /// live path does: (thread CPU ns, wall ns) per packet, and how many egress sent. The
    /// clock advances 1 µs a packet (the packet's sojourn: `sojourn_us`). The loop is here,
    /// not in the caller: a Python call per packet would time Python.
    pub fn time_loop(&mut self, frame: &[u8], port: u64, n: u64, sojourn_us: u64) -> (f64, f64, u64) {
        let mut out = Vec::with_capacity(frame.len() + 64);
        let mut sent = 0;
        let (t0, c0) = (std::time::Instant::now(), thread_cpu_s());
        for i in 0..n {
            if let Some(p) = self.ingress_from(frame, port, i) {
                sent += self.egress_into(p, i + sojourn_us, &mut out) as u64;
            }
        }
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), thread_cpu_s() - c0);
        let per = |s: f64| s / n.max(1) as f64 * 1e9;
        (per(cpu), per(wall), sent)
    }

    pub fn egress_spec(&self, pkt: &Packet) -> u64 {
        pkt.fields[self.ir.std.egress_spec]
    }

    pub fn priority(&self, pkt: &Packet) -> u64 {
        self.ir.std.priority.map(|p| pkt.fields[p]).unwrap_or(0)
    }

    fn parse(&mut self, ctx: &mut Ctx) -> Result<(), ParseError> {
        let mut state = Some(self.ir.init_state);
        let mut steps = 0;
        while let Some(si) = state {
            steps += 1;
            if steps > 1000 {
                return Err(ParseError(0)); // cannot happen in an acyclic program; a loop ends here
            }
            let st = &self.ir.states[si];
            let plan = &self.pstates[si];
            for step in &plan.steps {
                let fields = &mut ctx.pkt.fields;
                match step {
                    PStep::Extract(h) => self.extract_fixed(ctx, *h as usize)?,
                    PStep::SetK { dst, k } => fields[*dst as usize] = *k,
                    PStep::Mov { dst, src, mask } => fields[*dst as usize] = fields[*src as usize] & mask,
                    PStep::SetFK { dst, f, op, k, mask } => {
                        fields[*dst as usize] = code::bin(*op, fields[*f as usize], *k) & mask
                    }
                    PStep::SetCode { dst, mask, code } => {
                        let v = self.run_code(code, ctx.pkt, &[], ctx.cursor)?;
                        ctx.pkt.fields[*dst as usize] = v as u64 & mask;
                    }
                    PStep::SetSmall { dst, mask, s } => fields[*dst as usize] = s.eval(fields) & mask,
                    PStep::SetAll { dst, mask, all } => {
                        fields[*dst as usize] = all.iter().all(|s| s.eval(fields) != 0) as u64 & mask
                    }
                    PStep::Lookahead { dst, offset, width, mask } => {
                        let bit = ctx.cursor * 8 + *offset as usize;
                        if bit + *width as usize > ctx.pkt.data.len() * 8 {
                            return Err(ParseError(self.ir.error_packet_too_short));
                        }
                        ctx.pkt.fields[*dst as usize] = read_bits(&ctx.pkt.data, bit, *width) & mask;
                    }
                    PStep::VerifyF { f, err } => {
                        if fields[*f as usize] == 0 {
                            return Err(ParseError(*err));
                        }
                    }
                    PStep::Op(i) => self.parser_op(ctx, &st.ops[*i as usize])?,
                }
            }
            if st.transitions.is_empty() {
                return Ok(());
            }
            let mut key: u128 = 0;
            match &plan.key {
                Some(fs) => {
                    for &(f, bits, mask) in fs.iter() {
                        key = (key << bits) | (ctx.pkt.fields[f as usize] & mask) as u128;
                    }
                }
                None => {
                    for (e, nbytes) in &st.key {
                        let v = self.eval(e, ctx.pkt, &[], ctx.cursor)? as u128;
                        let bits = nbytes * 8;
                        key = if bits >= 128 { v } else { (key << bits) | (v & ((1u128 << bits) - 1)) };
                    }
                }
            }
            let mut next = None;
            let mut matched = false;
            for t in &st.transitions {
                if t.default || key & t.mask == t.value {
                    next = t.next;
                    matched = true;
                    break;
                }
            }
            if !matched {
                return Err(ParseError(self.ir.error_no_match));
            }
            state = next;
        }
        Ok(())
    }

    /// A parser operation the steps (`flat::parser`) leave to the general path.
    fn parser_op(&self, ctx: &mut Ctx, op: &ParserOp) -> Result<(), ParseError> {
        match op {
            ParserOp::Set(dst, e) => {
                let v = self.eval(e, ctx.pkt, &[], ctx.cursor)?;
                ctx.pkt.fields[*dst] = v as u64 & full(self.ir.slot_width[*dst]);
            }
            ParserOp::Extract(h) => self.extract(ctx, *h, None)?,
            ParserOp::ExtractStack(st) => {
                let n = ctx.pkt.next[*st];
                let h = *self.ir.stacks[*st].headers.get(n).ok_or(ParseError(self.ir.error_stack_out_of_bounds))?;
                self.extract(ctx, h, None)?;
                ctx.pkt.next[*st] = n + 1;
            }
            ParserOp::ExtractStackVl(st, e) => {
                let n = ctx.pkt.next[*st];
                let h = *self.ir.stacks[*st].headers.get(n).ok_or(ParseError(self.ir.error_stack_out_of_bounds))?;
                let bits = self.eval(e, ctx.pkt, &[], ctx.cursor)?;
                self.extract(ctx, h, Some(bits as u64 & 0xffff_ffff))?;
                ctx.pkt.next[*st] = n + 1;
            }
            ParserOp::Advance(e) => {
                // BMv2: not whole bytes is ParserInvalidArgument, past the end PacketTooShort
                let bits = self.eval(e, ctx.pkt, &[], ctx.cursor)?;
                if bits % 8 != 0 || bits < 0 {
                    return Err(ParseError(self.ir.error_parser_invalid_argument));
                }
                let bytes = usize::try_from(bits / 8).unwrap_or(usize::MAX);
                if ctx.pkt.data.len() - ctx.cursor < bytes {
                    return Err(ParseError(self.ir.error_packet_too_short));
                }
                ctx.cursor += bytes;
            }
            ParserOp::Prim(p) => self.phv_prim(p, &[], ctx.pkt),
            ParserOp::ExtractUnionStack(st, members) => {
                let n = ctx.pkt.next[*st];
                let h = *members.get(n).ok_or(ParseError(self.ir.error_stack_out_of_bounds))?;
                self.extract(ctx, h, None)?;
                ctx.pkt.next[*st] = n + 1;
            }
            ParserOp::SetWide(a) => {
                let (first, width, e) = &**a;
                let v = self.eval_big(e, ctx.pkt, &[], ctx.cursor)?;
                self.assign_wide(ctx.pkt, *first, *width, &v);
            }
            ParserOp::ExtractVl(h, e) => {
                let bits = self.eval(e, ctx.pkt, &[], ctx.cursor)?;
                self.extract(ctx, *h, Some(bits as u64 & 0xffff_ffff))?
            }
            ParserOp::Verify(cond, err) => {
                if self.eval(cond, ctx.pkt, &[], ctx.cursor)? == 0 {
                    let code = self.eval(err, ctx.pkt, &[], ctx.cursor)?;
                    return Err(ParseError(code as u32));
                }
            }
        }
        Ok(())
    }

    fn extract(&self, ctx: &mut Ctx, h: usize, vl_bits: Option<u64>) -> Result<(), ParseError> {
        let hdr = &self.ir.headers[h];
        let fixed = (hdr.fixed_bits / 8) as usize;
        let mut var = 0usize;
        if let Some(bits) = vl_bits {
            // BMv2's extract_VL: a length that is not whole bytes is the program's bad
            // argument (ParserInvalidArgument); then a packet too short for it
            // (PacketTooShort) comes before a length beyond the header's maximum
            // (HeaderTooShort)
            if bits % 8 != 0 {
                return Err(ParseError(self.ir.error_parser_invalid_argument));
            }
            var = (bits / 8) as usize;
        }
        let start = ctx.cursor;
        if start + fixed + var > ctx.pkt.data.len() {
            return Err(ParseError(self.ir.error_packet_too_short));
        }
        if vl_bits.is_some() && var as u64 > hdr.varbit_max_bytes.unwrap_or(0) as u64 {
            return Err(ParseError(self.ir.error_header_too_short));
        }
        Self::read_fields(hdr, ctx.pkt, start);
        if vl_bits.is_some() {
            // into the buffer the header had (no allocation once it is large enough)
            let from = start + fixed;
            let PacketData { varbits, data, .. } = &mut **ctx.pkt;
            varbits[h].clear();
            varbits[h].extend_from_slice(&data[from..from + var]);
        }
        self.mark_valid(ctx.pkt, h);
        ctx.pkt.extracted_at[h] = start as i64;
        ctx.cursor = start + fixed + var;
        Ok(())
    }

    /// [`Engine::extract`] of a header without a varbit field, inlined into the parser's
    /// steps (most headers are such).
    #[inline(always)]
    fn extract_fixed(&self, ctx: &mut Ctx, h: usize) -> Result<(), ParseError> {
        let hdr = &self.ir.headers[h];
        if hdr.varbit_max_bytes.is_some() {
            return self.extract(ctx, h, None);
        }
        let start = ctx.cursor;
        let fixed = (hdr.fixed_bits / 8) as usize;
        if start + fixed > ctx.pkt.data.len() {
            return Err(ParseError(self.ir.error_packet_too_short));
        }
        Self::read_fields(hdr, ctx.pkt, start);
        self.mark_valid(ctx.pkt, h);
        ctx.pkt.extracted_at[h] = start as i64;
        ctx.cursor = start + fixed;
        Ok(())
    }

    /// A header's fixed fields from the packet's bytes at `start` (known to hold them).
    #[inline(always)]
    fn read_fields(hdr: &crate::ir::HeaderIr, pkt: &mut PacketData, start: usize) {
        let data = &pkt.data;
        if hdr.chunks.is_empty() {
            let mut off = start * 8;
            for &(slot, w) in &hdr.fields {
                pkt.fields[slot] = read_bits(data, off, w);
                off += w as usize;
            }
        }
        for c in &hdr.chunks {
            let at = start + c.at;
            let word = match data.get(at..at + 8) {
                Some(w) => u64::from_be_bytes(w.try_into().expect("8 bytes")),
                None => {
                    // the header's last bytes end the packet: the word padded with zeros
                    let mut b = [0u8; 8];
                    b[..c.bytes].copy_from_slice(&data[at..at + c.bytes]);
                    u64::from_be_bytes(b)
                }
            };
            for p in &hdr.placed[c.first..c.first + c.n] {
                pkt.fields[p.slot as usize] = (word >> p.shift) & p.mask;
            }
        }
    }

    /// The leaves most operands are, here without a call; the rest in [`Engine::eval_tree`].
    #[inline(always)]
    fn eval(&self, e: &Expr, pkt: &Packet, params: &[u64], cursor: usize) -> Result<i128, ParseError> {
        match e {
            Expr::Const(c) => Ok(*c),
            Expr::Field(f) => Ok(pkt.fields[*f] as i128),
            Expr::Valid(h) => Ok(pkt.valid[*h] as i128),
            Expr::Runtime(i) => Ok(params.get(*i).copied().unwrap_or(0) as i128),
            Expr::Code(c) => self.run_code(c, pkt, params, cursor),
            _ => self.eval_tree(e, pkt, params, cursor),
        }
    }

    #[inline(always)]
    fn run_code(&self, c: &[Op], pkt: &Packet, params: &[u64], cursor: usize) -> Result<i128, ParseError> {
        if let Some(v) = code::single(c, &pkt.fields, &pkt.valid, params) {
            return Ok(v as i128);
        }
        match code::run(c, &pkt.fields, &pkt.valid, params, &pkt.data, cursor) {
            Ok(v) => Ok(v as i128),
            Err(code::Short) => Err(ParseError(self.ir.error_packet_too_short)),
        }
    }

    fn eval_tree(&self, e: &Expr, pkt: &Packet, params: &[u64], cursor: usize) -> Result<i128, ParseError> {
        Ok(match e {
            Expr::Code(c) => self.run_code(c, pkt, params, cursor)?,
            Expr::Const(c) => *c,
            Expr::Field(f) => pkt.fields[*f] as i128,
            Expr::SField(f, w) => sign_extend(pkt.fields[*f], *w),
            Expr::Valid(h) => pkt.valid[*h] as i128,
            Expr::Runtime(i) => params.get(*i).copied().unwrap_or(0) as i128,
            Expr::Lookahead { offset, width } => {
                let bit = cursor * 8 + *offset as usize;
                if bit + *width as usize > pkt.data.len() * 8 {
                    return Err(ParseError(self.ir.error_packet_too_short));
                }
                read_bits(&pkt.data, bit, *width) as i128
            }
            Expr::Un(op, x) => un_op(*op, self.eval(x, pkt, params, cursor)?),
            Expr::Bin(BinOp::LAnd, a, b) => {
                (self.eval(a, pkt, params, cursor)? != 0 && self.eval(b, pkt, params, cursor)? != 0) as i128
            }
            Expr::Bin(BinOp::LOr, a, b) => {
                (self.eval(a, pkt, params, cursor)? != 0 || self.eval(b, pkt, params, cursor)? != 0) as i128
            }
            Expr::Bin(op, a, b) => bin_op(*op, self.eval(a, pkt, params, cursor)?, self.eval(b, pkt, params, cursor)?),
            Expr::Cond(c, a, b) => {
                if self.eval(c, pkt, params, cursor)? != 0 {
                    self.eval(a, pkt, params, cursor)?
                } else {
                    self.eval(b, pkt, params, cursor)?
                }
            }
            Expr::StackField { stack, index, offset } => {
                let i = self.eval(index, pkt, params, cursor)?;
                // BMv2 aborts on an index out of range; here it reads 0
                match self.element(*stack, i) {
                    Some(h) => pkt.fields[self.ir.headers[h].fields[*offset].0] as i128,
                    None => 0,
                }
            }
            Expr::StackValid { stack, index } => {
                let i = self.eval(index, pkt, params, cursor)?;
                self.element(*stack, i).is_some_and(|h| pkt.valid[h]) as i128
            }
            Expr::LastField { stack, offset } => {
                // `last` of an empty stack: the parser's StackOutOfBounds
                let n = pkt.next[*stack];
                let h = match n.checked_sub(1) {
                    Some(i) => self.ir.stacks[*stack].headers[i],
                    None => return Err(ParseError(self.ir.error_stack_out_of_bounds)),
                };
                pkt.fields[self.ir.headers[h].fields[*offset].0] as i128
            }
            Expr::UnionValid(u) => self.ir.unions[*u].iter().any(|h| pkt.valid[*h]) as i128,
            Expr::Big(_) | Expr::Wide(..) | Expr::BigConst(_) => self.eval_big(e, pkt, params, cursor)?.low_i128(),
            Expr::VarbitEq(a, b) => {
                let value = |h: usize| {
                    let v = &pkt.varbits[h];
                    &v[v.iter().position(|x| *x != 0).unwrap_or(v.len())..]
                };
                (value(*a) == value(*b)) as i128
            }
        })
    }

    /// An expression over [`Big`]: what reads a field wider than 64 bits (never on the paths
    /// of a program without one). The leaves of at most 64 bits are the narrow evaluator's.
    fn eval_big(&self, e: &Expr, pkt: &Packet, params: &[u64], cursor: usize) -> Result<Big, ParseError> {
        let big = |x: &Expr| self.eval_big(x, pkt, params, cursor);
        Ok(match e {
            Expr::Big(x) => big(x)?,
            Expr::BigConst(b) => **b,
            Expr::Wide(first, width) => {
                let mut v = Big::ZERO;
                let parts: Vec<(usize, u32)> = crate::ir::wide_parts(*first, *width).collect();
                for (k, (slot, _)) in parts.iter().enumerate() {
                    v.set_word(parts.len() - 1 - k, pkt.fields[*slot]);
                }
                v
            }
            Expr::Un(op, x) => {
                let x = big(x)?;
                match op {
                    UnOp::D2b => Big::from_i128(!x.is_zero() as i128),
                    UnOp::Not => Big::from_i128(x.is_zero() as i128),
                    UnOp::BitNot => !x,
                    UnOp::Neg => -x,
                    UnOp::B2d => x,
                }
            }
            Expr::Bin(BinOp::LAnd, a, b) => Big::from_i128((!big(a)?.is_zero() && !big(b)?.is_zero()) as i128),
            Expr::Bin(BinOp::LOr, a, b) => Big::from_i128((!big(a)?.is_zero() || !big(b)?.is_zero()) as i128),
            Expr::Bin(op, a, b) => big_bin(*op, &big(a)?, &big(b)?),
            Expr::Cond(c, a, b) => {
                if !big(c)?.is_zero() {
                    big(a)?
                } else {
                    big(b)?
                }
            }
            leaf => Big::from_i128(self.eval_tree(leaf, pkt, params, cursor)?),
        })
    }

    /// A wide field assigned: its parts from the value's low bits (BMv2 masks to the width).
    fn assign_wide(&self, pkt: &mut Packet, first: usize, width: u32, v: &Big) {
        let parts: Vec<(usize, u32)> = crate::ir::wide_parts(first, width).collect();
        for (k, (slot, w)) in parts.iter().enumerate() {
            pkt.fields[*slot] = v.word(parts.len() - 1 - k) & full(*w);
        }
    }

    #[cfg(test)]
    pub(crate) fn eval_for_test(&self, e: &Expr, pkt: &Packet, params: &[u64]) -> i128 {
        self.eval_tree(e, pkt, params, 0).unwrap_or_else(|_| panic!("no lookahead here"))
    }

    /// The header of `stack[i]`, None out of range.
    fn element(&self, stack: usize, i: i128) -> Option<usize> {
        usize::try_from(i).ok().and_then(|i| self.ir.stacks[stack].headers.get(i)).copied()
    }

    fn resolve(&self, r: &HRef, pkt: &Packet, params: &[u64]) -> Option<usize> {
        match r {
            HRef::Fixed(h) => Some(*h),
            HRef::Dyn(stack, index) => self.element(*stack, self.value(index, pkt, params)),
            HRef::Cond(c, a, b) => self.resolve(if self.value(c, pkt, params) != 0 { a } else { b }, pkt, params),
        }
    }

    /// A header made valid: the other members of its union, if any, become invalid.
    #[inline]
    fn mark_valid(&self, pkt: &mut Packet, h: usize) {
        pkt.valid[h] = true;
        if let Some(u) = self.ir.union_of[h] {
            for &m in &self.ir.unions[u] {
                if m != h {
                    pkt.valid[m] = false;
                }
            }
        }
    }

    /// BMv2's assign_header: an invalid source makes the destination invalid; a valid one
    /// is copied with its validity.
    fn assign_header(&self, pkt: &mut Packet, dst: usize, src: usize) {
        if !pkt.valid[src] {
            pkt.valid[dst] = false;
            return;
        }
        self.mark_valid(pkt, dst);
        if dst == src {
            return;
        }
        let (d, s) = (&self.ir.headers[dst].fields, &self.ir.headers[src].fields);
        for (&(ds, _), &(ss, _)) in d.iter().zip(s) {
            pkt.fields[ds] = pkt.fields[ss];
        }
        let v = pkt.varbits[src].clone();
        pkt.varbits[dst] = v;
    }

    /// Header::swap_values: validity, fields and a varbit exchanged.
    fn swap_headers(&self, pkt: &mut Packet, a: usize, b: usize) {
        pkt.valid.swap(a, b);
        for (&(x, _), &(y, _)) in self.ir.headers[a].fields.iter().zip(&self.ir.headers[b].fields) {
            pkt.fields.swap(x, y);
        }
        pkt.varbits.swap(a, b);
    }

    /// setValid: an invalid header becomes valid with its fields zeroed.
    #[inline]
    fn add_header(&self, pkt: &mut Packet, h: usize) {
        if !pkt.valid[h] {
            for &(slot, _) in &self.ir.headers[h].fields {
                pkt.fields[slot] = 0;
            }
            pkt.varbits[h].clear();
            self.mark_valid(pkt, h);
        }
    }

    /// The primitives that touch only the header vector (also run in parser states).
    fn phv_prim(&self, prim: &Prim, params: &[u64], pkt: &mut Packet) {
        match prim {
            Prim::Assign(dst, e) => {
                let v = self.value(e, pkt, params);
                pkt.fields[*dst] = v as u64 & full(self.ir.slot_width[*dst]);
            }
            Prim::AssignWide(a) => {
                let (first, width, e) = &**a;
                // outside the parser nothing can fail (no lookahead there), as in `value`
                let v = self.eval_big(e, pkt, params, pkt.payload).unwrap_or(Big::ZERO);
                self.assign_wide(pkt, *first, *width, &v);
            }
            Prim::AssignDyn(a) => {
                let (stack, index, offset, e) = &**a;
                let i = self.value(index, pkt, params);
                let v = self.value(e, pkt, params);
                if let Some(h) = self.element(*stack, i) {
                    let slot = self.ir.headers[h].fields[*offset].0;
                    pkt.fields[slot] = v as u64 & full(self.ir.slot_width[slot]);
                }
            }
            Prim::AddHeader(r) => {
                if let Some(h) = self.resolve(r, pkt, params) {
                    self.add_header(pkt, h);
                }
            }
            Prim::RemoveHeader(r) => {
                if let Some(h) = self.resolve(r, pkt, params) {
                    pkt.valid[h] = false;
                }
            }
            Prim::AssignHeader(d, s) => {
                if let (Some(d), Some(s)) = (self.resolve(d, pkt, params), self.resolve(s, pkt, params)) {
                    self.assign_header(pkt, d, s);
                }
            }
            Prim::AssignUnion(d, s) => {
                for (&dh, &sh) in self.ir.unions[*d].iter().zip(&self.ir.unions[*s]) {
                    self.assign_header(pkt, dh, sh);
                }
            }
            Prim::AssignStack(d, s) => {
                pkt.next[*d] = pkt.next[*s];
                for (&dh, &sh) in self.ir.stacks[*d].headers.iter().zip(&self.ir.stacks[*s].headers) {
                    self.assign_header(pkt, dh, sh);
                }
            }
            Prim::Push(st, n) => {
                // StackP4_16::push_front: elements move up by n, the first n become invalid
                let n = usize::try_from(self.value(n, pkt, params)).unwrap_or(0);
                let hs = &self.ir.stacks[*st].headers;
                let size = hs.len();
                if n > 0 {
                    pkt.next[*st] = size.min(pkt.next[*st] + n);
                    for i in (n.min(size)..size).rev() {
                        self.swap_headers(pkt, hs[i], hs[i - n]);
                    }
                    for &h in &hs[..n.min(size)] {
                        pkt.valid[h] = false;
                    }
                }
            }
            Prim::Pop(st, n) => {
                // StackP4_16::pop_front: elements move down by n, the last n become invalid
                let n = usize::try_from(self.value(n, pkt, params)).unwrap_or(0);
                let hs = &self.ir.stacks[*st].headers;
                let size = hs.len();
                if n > 0 {
                    pkt.next[*st] -= pkt.next[*st].min(n);
                    let keep = size.saturating_sub(n);
                    for i in 0..keep {
                        self.swap_headers(pkt, hs[i], hs[i + n]);
                    }
                    for &h in &hs[keep..] {
                        pkt.valid[h] = false;
                    }
                }
            }
            Prim::Exit => pkt.exit = true,
            Prim::AssignVl(d, s) => {
                if d != s {
                    let v = pkt.varbits[*s].clone();
                    pkt.varbits[*d] = v;
                }
            }
            // externs and drop: run by run_action (refused in parser states at load)
            Prim::Count(..)
            | Prim::ExecuteMeter(..)
            | Prim::MarkToDrop
            | Prim::RegisterRead(..)
            | Prim::RegisterWrite(..)
            | Prim::HashOffset(..) => {}
        }
    }

    #[inline]
    pub(crate) fn value(&self, e: &Expr, pkt: &Packet, params: &[u64]) -> i128 {
        // Outside the parser nothing can fail (no lookahead there).
        self.eval(e, pkt, params, pkt.payload).unwrap_or(0)
    }

    /// The node graph walked (what `run_flat` does by steps): the reference its tests
    /// compare with.
    #[cfg(test)]
    fn run_control(&mut self, init: Option<Node>, pkt: &mut Packet) {
        let mut node = init;
        while let Some(n) = node {
            if pkt.exit {
                break;
            }
            node = match n {
                Node::Cond(c) => {
                    let cond = &self.ir.conds[c];
                    if self.value(&cond.expr, pkt, &[]) != 0 {
                        cond.t
                    } else {
                        cond.f
                    }
                }
                Node::Table(t) => self.apply_table(t, pkt),
            };
        }
        pkt.exit = false;
    }

    fn apply_table(&mut self, t: usize, pkt: &mut Packet) -> Option<Node> {
        if self.ext.slow[t] {
            return self.apply_table_ext(t, pkt); // indirect or with a direct meter: profiles.rs
        }
        // The action data is copied out of the table (run_action mutably borrows the engine
        // for counters, meters and registers) onto the stack: a heap copy per table per
        // packet cost more than the action.
        let mut inline = [0u64; INLINE_PARAMS];
        let heap: Vec<u64>;
        let (action, hit, src) = if self.tables[t].keyless() {
            let ts = &self.tables[t];
            (ts.default_action, false, &ts.default_params)
        } else {
            let mut values = [0u64; 32];
            let nkeys = self.ir.tables[t].keys.len();
            for (i, k) in self.ir.tables[t].keys.iter().enumerate() {
                values[i] = match k.src {
                    Expr::Field(f) => pkt.fields[f],
                    ref e => self.value(e, pkt, &[]) as u64,
                };
            }
            let ir_table = &self.ir.tables[t];
            let ts = &mut self.tables[t];
            match ts.lookup(ir_table, &values[..nkeys]) {
                Some(h) => {
                    let e = ts.entries.get_mut(&h).expect("indexed entry exists");
                    if ir_table.direct_counter {
                        e.packets += 1;
                        e.bytes += pkt.ingress_length;
                    }
                    (e.action, true, &e.params)
                }
                None => (ts.default_action, false, &ts.default_params),
            }
        };
        let params: &[u64] = if src.len() <= INLINE_PARAMS {
            inline[..src.len()].copy_from_slice(src);
            &inline[..src.len()]
        } else {
            heap = src.clone();
            &heap
        };
        self.run_action(action, params, pkt);
        match &self.ir.tables[t].next {
            crate::ir::NextIr::ByAction(by) => by.iter().find(|(a, _)| *a == action).and_then(|(_, n)| *n),
            crate::ir::NextIr::HitMiss(h, m) => {
                if hit {
                    *h
                } else {
                    *m
                }
            }
        }
    }

    /// A control's steps (`flat`): as [`Engine::run_control`] walks its node graph.
    fn run_flat(&mut self, ingress: bool, pkt: &mut Packet) {
        // taken out of the engine while it runs (the steps call methods that mutate it): a
        // pointer moved, not the lists; put back at the end, made anew should a panic have
        // lost it
        #[cfg(test)]
        if WALK_GRAPH.with(std::cell::Cell::get) {
            let init = if ingress { self.ir.ingress_init } else { self.ir.egress_init };
            return self.run_control(init, pkt);
        }
        let flat = match self.flat.take() {
            Some(flat) => flat,
            None => Box::new(crate::flat::build(&self.ir, &self.tables)),
        };
        let mut pc = if ingress { flat.ingress } else { flat.egress } as usize;
        if pkt.exit {
            pc = 0;
        }
        loop {
            match &flat.steps[pc] {
                Step::End => break,
                Step::SetK { dst, k } => pkt.fields[*dst as usize] = *k,
                Step::Mov { dst, src, mask } => pkt.fields[*dst as usize] = pkt.fields[*src as usize] & mask,
                Step::SetFK { dst, f, op, k, mask } => {
                    pkt.fields[*dst as usize] = code::bin(*op, pkt.fields[*f as usize], *k) & mask
                }
                Step::SetCode { dst, mask, code } => {
                    pkt.fields[*dst as usize] = self.run_code(code, pkt, &[], pkt.payload).unwrap_or(0) as u64 & mask
                }
                Step::SetSmall { dst, mask, s } => pkt.fields[*dst as usize] = s.eval(&pkt.fields) & mask,
                Step::SetPick { dst, mask, p } => pkt.fields[*dst as usize] = p.eval(&pkt.fields) & mask,
                Step::Set { dst, mask, e } => pkt.fields[*dst as usize] = self.value(e, pkt, &[]) as u64 & mask,
                Step::CountF { c, f } => {
                    let len = pkt.ingress_length;
                    if let Some(cell) = usize::try_from(pkt.fields[*f as usize])
                        .ok()
                        .and_then(|i| self.counters[*c as usize].get_mut(i))
                    {
                        cell.0 += 1;
                        cell.1 += len;
                    }
                }
                Step::Count { c, e } => {
                    let i = self.value(e, pkt, &[]);
                    let len = pkt.ingress_length;
                    if let Some(cell) = usize::try_from(i).ok().and_then(|i| self.counters[*c as usize].get_mut(i)) {
                        cell.0 += 1;
                        cell.1 += len;
                    }
                }
                Step::Prims { action, from, to, params } => {
                    self.run_prims(*action as usize, *from as usize..*to as usize, params, pkt)
                }
                Step::RegRead { dst, r, i, mask } => {
                    let v = self.registers[*r as usize].get(pkt.fields[*i as usize] as usize).copied().unwrap_or(0);
                    pkt.fields[*dst as usize] = v & mask;
                }
                Step::RegWrite { r, i, v, mask } => {
                    let v = pkt.fields[*v as usize] & mask;
                    if let Some(cell) = self.registers[*r as usize].get_mut(pkt.fields[*i as usize] as usize) {
                        *cell = v;
                    }
                }
                Step::AddHeader(h) => self.add_header(pkt, *h as usize),
                Step::RemoveHeader(h) => pkt.valid[*h as usize] = false,
                Step::ExitIf => {
                    if pkt.exit {
                        break;
                    }
                }
                Step::IfValid { h, to } => {
                    if !pkt.valid[*h as usize] {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::IfEqK { f, k, to } => {
                    if pkt.fields[*f as usize] != *k {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::IfNeK { f, k, to } => {
                    if pkt.fields[*f as usize] == *k {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::IfFK { f, op, k, to } => {
                    if code::bin(*op, pkt.fields[*f as usize], *k) == 0 {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::IfCode { code, to } => {
                    if self.run_code(code, pkt, &[], pkt.payload).unwrap_or(0) == 0 {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::IfSmall { s, to } => {
                    if s.eval(&pkt.fields) == 0 {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::If { e, to } => {
                    if self.value(e, pkt, &[]) == 0 {
                        pc = *to as usize;
                        continue;
                    }
                }
                Step::Goto(to) => {
                    pc = *to as usize;
                    continue;
                }
                Step::Table(t) => {
                    let next = self.apply_table(*t as usize, pkt);
                    if pkt.exit {
                        break;
                    }
                    pc = flat.pc_of(next);
                    continue;
                }
            }
            pc += 1;
        }
        pkt.exit = false;
        self.flat = Some(flat);
    }

    pub(crate) fn run_action(&mut self, action: usize, params: &[u64], pkt: &mut Packet) {
        let n = self.ir.actions[action].prims.len();
        self.run_prims(action, 0..n, params, pkt);
    }

    /// Primitives `range` of an action.
    fn run_prims(&mut self, action: usize, range: std::ops::Range<usize>, params: &[u64], pkt: &mut Packet) {
        for prim in &self.ir.actions[action].prims[range] {
            match prim {
                Prim::Assign(dst, e) => {
                    let v = self.value(e, pkt, params);
                    pkt.fields[*dst] = v as u64 & full(self.ir.slot_width[*dst]);
                }
                Prim::Count(c, idx) => {
                    let i = self.value(idx, pkt, params);
                    let len = pkt.ingress_length;
                    if let Some(cell) = usize::try_from(i).ok().and_then(|i| self.counters[*c].get_mut(i)) {
                        cell.0 += 1;
                        cell.1 += len;
                    }
                }
                Prim::ExecuteMeter(m, idx, dst) => {
                    let i = self.value(idx, pkt, params);
                    let now = pkt.fields[self.ir.std.ingress_global_timestamp] as i64;
                    let size = if self.ir.meters[*m].bytes { pkt.ingress_length } else { 1 };
                    let dst = *dst;
                    let color = usize::try_from(i)
                        .ok()
                        .and_then(|i| self.meters[*m].get_mut(i))
                        .map(|cell| cell.execute(size, now))
                        .unwrap_or(0);
                    pkt.fields[dst] = color & full(self.ir.slot_width[dst]);
                }
                Prim::MarkToDrop => {
                    pkt.fields[self.ir.std.egress_spec] = DROP_PORT;
                    if let Some(m) = self.ir.std.mcast_grp {
                        pkt.fields[m] = 0;
                    }
                }
                Prim::RegisterRead(dst, r, idx) => {
                    let i = self.value(idx, pkt, params);
                    let v = usize::try_from(i).ok().and_then(|i| self.registers[*r].get(i)).copied().unwrap_or(0);
                    pkt.fields[*dst] = v & full(self.ir.slot_width[*dst]);
                }
                Prim::RegisterWrite(r, idx, e) => {
                    let i = self.value(idx, pkt, params);
                    let v = self.value(e, pkt, params) as u64 & full(self.ir.registers[*r].width);
                    if let Some(cell) = usize::try_from(i).ok().and_then(|i| self.registers[*r].get_mut(i)) {
                        *cell = v;
                    }
                }
                Prim::HashOffset(h) => {
                    let (dst, base, inputs, size) = &**h;
                    // BMv2's BufBuilder: the fields' bits packed, the last byte zero-padded
                    let mut bytes = Vec::new();
                    let mut w = BitWriter { out: &mut bytes, acc: 0, nbits: 0 };
                    for &(slot, width) in inputs {
                        w.push(pkt.fields[slot], width);
                    }
                    if w.nbits > 0 {
                        let pad = 8 - w.nbits;
                        w.push(0, pad);
                    }
                    let hash = crc16(&bytes) as i128;
                    let size = self.value(size, pkt, params);
                    let v = self.value(base, pkt, params) + if size > 0 { hash % size } else { 0 };
                    pkt.fields[*dst] = v as u64 & full(self.ir.slot_width[*dst]);
                }
                // the fixed-header forms inline: slicing.p4's VLAN push and pop
                Prim::AddHeader(HRef::Fixed(h)) => self.add_header(pkt, *h),
                Prim::RemoveHeader(HRef::Fixed(h)) => pkt.valid[*h] = false,
                p => self.phv_prim(p, params, pkt),
            }
        }
    }

    /// The ones' complement sum (csum16) of `inputs` packed big-endian and padded to a byte,
    /// summed as the bits are packed (no buffer).
    fn csum16_of(&self, pkt: &Packet, inputs: &[(usize, u32)]) -> u64 {
        let (mut acc, mut nbits, mut sum) = (0u128, 0u32, 0u64);
        for &(slot, width) in inputs {
            acc = (acc << width) | (pkt.fields[slot] & full(width)) as u128; // < 16 + 64 bits
            nbits += width;
            while nbits >= 16 {
                nbits -= 16;
                sum += ((acc >> nbits) & 0xffff) as u64;
            }
            acc &= (1u128 << nbits) - 1;
        }
        if nbits % 8 != 0 {
            acc <<= 8 - nbits % 8;
            nbits += 8 - nbits % 8;
        }
        match nbits {
            16 => sum += acc as u64 & 0xffff,
            8 => sum += (acc as u64 & 0xff) << 8, // an odd byte is a word's high half
            _ => {}
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !sum & 0xffff
    }

    /// csum16 of inputs that include a varbit field: the bytes packed into a buffer first.
    fn csum16_with_varbits(&self, pkt: &Packet, inputs: &[(usize, u32)]) -> u64 {
        let mut bytes = Vec::new();
        let mut w = BitWriter { out: &mut bytes, acc: 0, nbits: 0 };
        for &(x, width) in inputs {
            if width == crate::ir::VARBIT_INPUT {
                for b in &pkt.varbits[x] {
                    w.push(*b as u64, 8);
                }
            } else {
                w.push(pkt.fields[x], width);
            }
        }
        if w.nbits > 0 {
            let pad = 8 - w.nbits;
            w.push(0, pad);
        }
        let mut sum: u64 = 0;
        for c in bytes.chunks(2) {
            sum += (c[0] as u64) << 8 | c.get(1).copied().unwrap_or(0) as u64;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !sum & 0xffff
    }

    /// The sum of checksum `i` (`c`).
    fn checksum_of(&self, i: usize, c: &crate::ir::ChecksumIr, pkt: &Packet) -> u64 {
        if let Some(runs) = &self.csum_runs[i] {
            runs.sum(&pkt.fields)
        } else if c.has_varbit {
            self.csum16_with_varbits(pkt, &c.inputs)
        } else {
            self.csum16_of(pkt, &c.inputs)
        }
    }

    /// Checksum `i`'s condition holds (every test of it).
    fn checksum_applies(&self, i: usize, pkt: &Packet) -> bool {
        self.csum_tests[i].iter().all(|t| match t {
            Step::IfValid { h, .. } => pkt.valid[*h as usize],
            Step::IfEqK { f, k, .. } => pkt.fields[*f as usize] == *k,
            Step::IfNeK { f, k, .. } => pkt.fields[*f as usize] != *k,
            Step::IfFK { f, op, k, .. } => code::bin(*op, pkt.fields[*f as usize], *k) != 0,
            Step::IfSmall { s, .. } => s.eval(&pkt.fields) != 0,
            Step::IfCode { code, .. } => self.run_code(code, pkt, &[], pkt.payload).unwrap_or(0) != 0,
            Step::If { e, .. } => self.value(e, pkt, &[]) != 0,
            s => unreachable!("a condition's test: {s:?}"),
        })
    }

    fn checksums_fail(&self, pkt: &Packet) -> bool {
        let mut bad = false;
        for (i, c) in self.ir.checksums.iter().enumerate().filter(|(_, c)| c.verify) {
            if self.checksum_applies(i, pkt) {
                let sum = self.checksum_of(i, c, pkt) & full(c.target_width);
                bad |= sum != pkt.fields[c.target];
            }
        }
        bad
    }

    fn update_checksums(&self, pkt: &mut Packet) {
        for (i, c) in self.ir.checksums.iter().enumerate().filter(|(_, c)| c.update) {
            if self.checksum_applies(i, pkt) {
                pkt.fields[c.target] = self.checksum_of(i, c, pkt) & full(c.target_width);
            }
        }
    }

    fn deparse(&self, pkt: &Packet, out: &mut Vec<u8>) {
        for &h in &self.ir.deparse_order {
            if !pkt.valid[h] {
                continue;
            }
            let hdr = &self.ir.headers[h];
            if hdr.chunks.is_empty() {
                let mut w = BitWriter { out, acc: 0, nbits: 0 };
                for &(slot, width) in &hdr.fields {
                    w.push(pkt.fields[slot], width);
                }
            }
            for c in &hdr.chunks {
                let mut acc = 0u64;
                for p in &hdr.placed[c.first..c.first + c.n] {
                    acc |= (pkt.fields[p.slot as usize] & p.mask) << p.shift;
                }
                // all 8 bytes stored and the tail cut: a store of fixed length, not a call to
                // copy c.bytes
                let len = out.len() + c.bytes;
                out.extend_from_slice(&acc.to_be_bytes());
                out.truncate(len);
            }
            out.extend_from_slice(&pkt.varbits[h]);
        }
        out.extend_from_slice(&pkt.data[pkt.payload..]);
    }
}

/// The calling thread's CPU time, s: on a machine shared with other work the wall clock
/// measures the load as much as the engine.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a plain system call writing the timespec given
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// BMv2's crc16: CRC-16/ARC (polynomial 0x8005 reflected, initial 0, no final xor).
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for b in bytes {
        crc ^= *b as u16;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xa001 } else { crc >> 1 };
        }
    }
    crc
}

/// A unary operator on a value (the engine's arithmetic, shared with load-time folding).
#[inline]
pub(crate) fn un_op(op: UnOp, v: i128) -> i128 {
    match op {
        UnOp::D2b => (v != 0) as i128,
        UnOp::Not => (v == 0) as i128,
        UnOp::BitNot => !v,
        UnOp::Neg => v.wrapping_neg(),
        UnOp::B2d => v,
    }
}

/// A binary operator on two values; `LAnd` / `LOr` here on values already computed (the
/// evaluator short-circuits them itself: a lookahead past the end must not fail the parser).
#[inline]
pub(crate) fn bin_op(op: BinOp, x: i128, y: i128) -> i128 {
    match op {
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Shl => {
            if (0..128).contains(&y) {
                x.wrapping_shl(y as u32)
            } else {
                0
            }
        }
        BinOp::Shr => {
            if (0..128).contains(&y) {
                x >> y
            } else if x < 0 {
                -1
            } else {
                0
            }
        }
        BinOp::Eq => (x == y) as i128,
        BinOp::Ne => (x != y) as i128,
        BinOp::Lt => (x < y) as i128,
        BinOp::Le => (x <= y) as i128,
        BinOp::Gt => (x > y) as i128,
        BinOp::Ge => (x >= y) as i128,
        BinOp::LAnd => (x != 0 && y != 0) as i128,
        BinOp::LOr => (x != 0 || y != 0) as i128,
        BinOp::USat => {
            let max = if (0..127).contains(&y) { (1i128 << y) - 1 } else { i128::MAX };
            x.clamp(0, max)
        }
        BinOp::SatCast => {
            // int<y>: -2^(y-1) ..= 2^(y-1) - 1 (int<0> cannot be declared: 0 here)
            let half = if (1..=127).contains(&y) { 1i128 << (y - 1) } else { return if y <= 0 { 0 } else { x } };
            x.clamp(-half, half - 1)
        }
        BinOp::TwoCompMod => match y {
            // x's low y bits read as a y-bit two's-complement number (i128 keeps 128 of them)
            1..=127 => {
                let shift = 128 - y as u32;
                (x << shift) >> shift
            }
            y if y >= 128 => x,
            _ => 0,
        },
    }
}

/// A binary operator over [`Big`] with BMv2's (GMP's) semantics; `LAnd` / `LOr` on values
/// already computed.
fn big_bin(op: BinOp, x: &Big, y: &Big) -> Big {
    let b = |v: bool| Big::from_i128(v as i128);
    let (x, y) = (*x, *y);
    match op {
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        // a shift by a negative amount is an assertion in BMv2; by more than the width here
        // is 0 (or the sign), as GMP's
        BinOp::Shl => y.small().map_or(Big::ZERO, |n| x.shl(n)),
        BinOp::Shr => y.small().map_or_else(|| x.shr(u32::MAX), |n| x.shr(n)),
        BinOp::Eq => b(x == y),
        BinOp::Ne => b(x != y),
        BinOp::Lt => b(x < y),
        BinOp::Le => b(x <= y),
        BinOp::Gt => b(x > y),
        BinOp::Ge => b(x >= y),
        BinOp::LAnd => b(!x.is_zero() && !y.is_zero()),
        BinOp::LOr => b(!x.is_zero() || !y.is_zero()),
        BinOp::USat => match y.small() {
            Some(w) if w < BIG_BITS - 1 => {
                let max = Big::ones(w);
                if x.is_neg() {
                    Big::ZERO
                } else {
                    x.min(max)
                }
            }
            _ => x,
        },
        BinOp::SatCast => match y.small() {
            Some(0) => Big::ZERO,
            Some(w) if w < BIG_BITS => {
                let max = Big::ones(w - 1);
                x.clamp(!max, max)
            }
            _ => x,
        },
        BinOp::TwoCompMod => match y.small() {
            Some(w) => x.sign_extend(w),
            None => x,
        },
    }
}

/// A signed field's stored bits read as the N-bit two's-complement number they are.
#[inline]
pub(crate) fn sign_extend(bits: u64, width: u32) -> i128 {
    let shift = 128 - width.clamp(1, 64);
    ((bits as i128) << shift) >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csum16(bytes: &[u8]) -> u64 {
        let mut sum: u64 = 0;
        for c in bytes.chunks(2) {
            let w = if c.len() == 2 { (c[0] as u64) << 8 | c[1] as u64 } else { (c[0] as u64) << 8 };
            sum += w;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !sum & 0xffff
    }

    const SLICING: &str = include_str!("../../compiled/slicing.json");

    fn table(e: &Engine, name: &str) -> usize {
        e.ir.tables.iter().position(|t| t.name == name).expect(name)
    }
    fn action(e: &Engine, t: usize, name: &str) -> usize {
        *e.ir.tables[t].actions.iter().find(|a| e.ir.actions[**a].name == name).expect(name)
    }
    fn counter<'a>(e: &'a Engine, name: &str) -> &'a Vec<(u64, u64)> {
        &e.counters[e.ir.counters.iter().position(|c| c.name == name).expect(name)]
    }

    fn ipv4_udp(tos: u8, dport: u16, bad_checksum: bool) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let mut ip = vec![0x45, tos, 0, 36, 0, 1, 0, 0, 64, 17, 0, 0, 10, 1, 0, 5, 10, 9, 0, 1];
        let sum = csum16(&ip);
        ip[10] = (sum >> 8) as u8 ^ if bad_checksum { 0xff } else { 0 };
        ip[11] = sum as u8;
        f.extend(ip);
        f.extend([0x9c, 0x40, (dport >> 8) as u8, dport as u8, 0, 16, 0, 0]);
        f.extend([0u8; 8]);
        f
    }

    /// Access port 1 (tenant 1, VID 100) forwarding to port 2, which tags.
    fn access_setup() -> Engine {
        let mut e = crate::engine(SLICING).expect("slicing.json");
        let pt = table(&e, "SlicingIngress.tenant.port_tenant");
        let a = action(&e, pt, "SlicingIngress.tenant.set_access_tenant");
        e.insert(pt, vec![(1, 511)], 0, a, vec![1, 100]).unwrap();
        let fw = table(&e, "SlicingIngress.fwd.tenant_forward");
        let a = action(&e, fw, "SlicingIngress.fwd.forward");
        e.insert(fw, vec![(1, 255), (1, 511)], 0, a, vec![2]).unwrap();
        let ev = table(&e, "SlicingEgress.vlan_tag.egress_vlan");
        let a = action(&e, ev, "SlicingEgress.vlan_tag.push_tenant_vlan");
        e.insert(ev, vec![(2, 511)], 0, a, vec![]).unwrap();
        e
    }

    #[test]
    fn checksum_summed_while_packing_equals_csum16_of_the_packed_bytes() {
        let mut e = access_setup();
        let mut pkt = e.fresh();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for widths in [
            &[16u32, 16, 8][..],
            &[3, 13, 8, 7],
            &[48, 48, 16, 4, 4, 8, 9],
            &[1],
            &[64, 64, 5],
            &[8, 8, 8],
            // in runs of whole 16-bit words: IPv4's header less its checksum, and others
            &[4, 4, 6, 2, 16, 16, 3, 13, 8, 8, 32, 32],
            &[64, 16, 0, 48, 8, 8],
            &[0, 32, 3, 13],
        ] {
            for _ in 0..50 {
                let inputs: Vec<(usize, u32)> = widths.iter().enumerate().map(|(i, w)| (i, *w)).collect();
                for (slot, _) in &inputs {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    pkt.fields[*slot] = seed; // wider than the width: packing masks it
                }
                let mut bytes = Vec::new();
                let mut w = BitWriter { out: &mut bytes, acc: 0, nbits: 0 };
                for &(slot, width) in &inputs {
                    w.push(pkt.fields[slot], width);
                }
                if w.nbits > 0 {
                    let pad = 8 - w.nbits;
                    w.push(0, pad);
                }
                assert_eq!(e.csum16_of(&pkt, &inputs), csum16(&bytes), "widths {widths:?}");
                if let Some(runs) = CsumRuns::new(&inputs) {
                    assert_eq!(runs.sum(&pkt.fields), csum16(&bytes), "widths {widths:?} in runs");
                }
            }
        }
    }

    #[test]
    fn bits_read_through_the_16_byte_window_equal_bits_read_byte_by_byte() {
        let data: Vec<u8> = (0..40u32).map(|i| (i.wrapping_mul(151) ^ 0x5a) as u8).collect();
        for off in 0..80 {
            for width in 0..=64u32 {
                // cut right after the field: too short for the window, read byte by byte
                let short = &data[..(off + width as usize).div_ceil(8)];
                assert_eq!(read_bits(&data, off, width), read_bits(short, off, width), "offset {off} width {width}");
            }
        }
        assert_eq!(read_bits(&[0xab, 0xcd], 4, 8), 0xbc);
    }

    #[test]
    fn signed_fields_read_sign_extended_at_edge_widths() {
        assert_eq!(sign_extend(0x8, 4), -8);
        assert_eq!(sign_extend(0x7, 4), 7);
        assert_eq!(sign_extend(1, 1), -1);
        assert_eq!(sign_extend(0, 1), 0);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
        assert_eq!(sign_extend(1 << 63, 64), i64::MIN as i128);
        assert_eq!(sign_extend((1 << 63) - 1, 64), i64::MAX as i128);
    }

    #[test]
    fn two_comp_mod_and_sat_cast_as_bmv2_data() {
        let m = |x: i128, w: i128| bin_op(BinOp::TwoCompMod, x, w);
        // BMv2's own example: two_comp_mod(-129, 8) = 127
        assert_eq!(m(-129, 8), 127);
        assert_eq!(m(128, 8), -128);
        assert_eq!(m(255, 8), -1);
        assert_eq!(m(-128, 8), -128);
        assert_eq!(m(5, 8), 5);
        assert_eq!(m(1, 1), -1);
        assert_eq!(m(1 << 63, 64), i64::MIN as i128);
        assert_eq!(m(-1, 64), -1);
        assert_eq!(m((1 << 64) + 3, 64), 3);
        let s = |x: i128, w: i128| bin_op(BinOp::SatCast, x, w);
        assert_eq!(s(200, 8), 127);
        assert_eq!(s(-200, 8), -128);
        assert_eq!(s(-128, 8), -128);
        assert_eq!(s(127, 8), 127);
        assert_eq!(s(1, 1), 0);
        assert_eq!(s(-5, 1), -1);
        assert_eq!(s(1 << 70, 64), i64::MAX as i128);
        assert_eq!(s(-(1 << 70), 64), i64::MIN as i128);
        // stored: the low bits of the two's complement, as Field::export_bytes
        assert_eq!(s(-200, 8) as u64 & full(8), 0x80);
    }

    #[test]
    fn primitives_and_expressions_stay_small() {
        // the per-packet loops walk these in place: a wide variant widens every one (80 and
        // 32 bytes before stacks, unions and hashes came)
        assert!(std::mem::size_of::<crate::ir::Prim>() <= 80, "{}", std::mem::size_of::<crate::ir::Prim>());
        assert!(std::mem::size_of::<Expr>() <= 32, "{}", std::mem::size_of::<Expr>());
    }

    #[test]
    fn reused_packets_start_blank() {
        let mut e = access_setup();
        let frame = ipv4_udp(0, 5000, false);
        let pkt = e.ingress(frame.clone(), 1, 10).unwrap();
        let first = e.egress(pkt, 11).unwrap();
        // a dropped packet (unknown port) and a forwarded one leave their buffers behind
        assert!(e.ingress_from(&frame, 9, 10).is_none());
        for _ in 0..3 {
            let mut out = vec![0xee; 7];
            // a truncated frame (malformed) parses fewer headers into the reused vector
            if let Some(pkt) = e.ingress_from(&frame[..frame.len() - 8], 1, 10) {
                e.egress_into(pkt, 11, &mut out);
            }
            let pkt = e.ingress_from(&frame, 1, 10).unwrap();
            assert!(e.egress_into(pkt, 11, &mut out));
            assert_eq!(out, first);
        }
    }

    #[test]
    fn forwards_tags_and_recomputes_the_ipv4_checksum() {
        let mut e = access_setup();
        let frame = ipv4_udp(0, 5000, true);
        let pkt = e.ingress(frame.clone(), 1, 10).expect("forwarded");
        assert_eq!(e.egress_spec(&pkt), 2);
        let out = e.egress(pkt, 11).expect("not dropped in egress");
        assert_eq!(out.len(), frame.len() + 4);
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x00, 100]);
        assert_eq!(csum16(&out[18..38]), 0, "a valid IPv4 header sums to zero");
        assert_eq!(&out[38..], &frame[34..]);
        assert_eq!(counter(&e, "SlicingEgress.vlan_tag.lane_tx")[0], (1, frame.len() as u64));
    }

    #[test]
    fn classifier_highest_priority_wins_and_sets_the_lane() {
        let mut e = access_setup();
        let cl = table(&e, "SlicingIngress.classifier.classifier");
        let set_slice = action(&e, cl, "SlicingIngress.classifier.set_slice");
        let mut key = vec![(1u64, 255u64)];
        key.extend(std::iter::repeat_n((0, 0), 10));
        let broad = key.clone();
        key[7] = (5000, 0xffff); // dst_port
        e.insert(cl, broad, 10, set_slice, vec![3, 2]).unwrap();
        e.insert(cl, key, 20, set_slice, vec![4, 5]).unwrap();
        let pkt = e.ingress(ipv4_udp(0, 5000, false), 1, 10).unwrap();
        assert_eq!(e.priority(&pkt), 5);
        let pkt = e.ingress(ipv4_udp(0, 6000, false), 1, 10).unwrap();
        assert_eq!(e.priority(&pkt), 2);
        assert_eq!(counter(&e, "SlicingIngress.classifier.slice_rx")[4].0, 1);
        assert_eq!(counter(&e, "SlicingIngress.classifier.slice_rx")[3].0, 1);
        let hits: Vec<u64> = e.tables[cl].entries.values().map(|x| x.packets).collect();
        assert_eq!(hits.iter().sum::<u64>(), 2, "direct counter per entry");
    }

    #[test]
    fn truncated_frames_are_malformed_and_unknown_ports_dropped() {
        let mut e = access_setup();
        let frame = ipv4_udp(0, 5000, false);
        for n in 14..frame.len() {
            let _ = e.ingress(frame[..n].to_vec(), 1, 10);
        }
        // 14..33: the IPv4 header is cut (PacketTooShort); 34..49: total length beyond the frame
        assert_eq!(counter(&e, "SlicingIngress.classifier.malformed")[0].0, (frame.len() - 14) as u64);
        assert_eq!(counter(&e, "SlicingIngress.classifier.slice_rx")[0].0, (frame.len() - 14) as u64);
        assert!(e.ingress(frame, 9, 10).is_none());
        assert_eq!(counter(&e, "SlicingIngress.tenant.tenant_drops")[0].0, 1);
    }

    #[test]
    fn lpm_and_range_tables_match_as_p4runtime_defines() {
        use crate::ir::{Expr, KeyIr, MatchKind, TableIr};
        use crate::table::{Entry, TableState};
        let mk = |kind| TableIr::for_test(vec![KeyIr { name: "k".into(), kind, src: Expr::Field(0), width: 16 }], 2);
        let entry = |key, priority| Entry {
            key: vec![key],
            priority,
            action: 0,
            params: vec![],
            packets: 0,
            bytes: 0,
            meta: Default::default(),
        };
        let lpm = mk(MatchKind::Lpm);
        let mut t = TableState::new(&lpm);
        let short = t.insert(&lpm, entry((0x0a00, 0xff00), 8)).unwrap();
        let long = t.insert(&lpm, entry((0x0a10, 0xfff0), 12)).unwrap();
        assert_eq!(t.lookup(&lpm, &[0x0a15]), Some(long));
        assert_eq!(t.lookup(&lpm, &[0x0a25]), Some(short));
        assert_eq!(t.lookup(&lpm, &[0x0b00]), None);
        assert_eq!(t.insert(&lpm, entry((1, 0xffff), 16)), Err(crate::table::WriteError::Full));
        let range = mk(MatchKind::Range);
        let mut t = TableState::new(&range);
        let wide = t.insert(&range, entry((5000, 5030), 1)).unwrap();
        let narrow = t.insert(&range, entry((5010, 5012), 2)).unwrap();
        assert_eq!(t.lookup(&range, &[5011]), Some(narrow));
        assert_eq!(t.lookup(&range, &[5030]), Some(wide));
        assert_eq!(t.lookup(&range, &[5031]), None);
        assert!(t.insert(&range, entry((7, 6), 3)).is_err());
    }
}

#[cfg(test)]
mod speed {
    //! Not assertions on speed (bench/p4_engine_cost.py measures): ns/packet for a profile
    //! run, `cargo test --release speed -- --nocapture --ignored`.

    use super::Engine;

    fn table(e: &Engine, name: &str) -> usize {
        e.ir.tables.iter().position(|t| t.name == name).expect(name)
    }

    fn entry(e: &mut Engine, t: &str, key: Vec<(u64, u64)>, priority: i64, action: &str, params: Vec<u64>) {
        let t = table(e, t);
        let a = *e.ir.tables[t].actions.iter().find(|a| e.ir.actions[**a].name.ends_with(action)).expect(action);
        e.insert(t, key, priority, a, params).unwrap();
    }

    /// Access port 1 (tenant 1) forwarding to port 2.
    fn access() -> Engine {
        let mut e = crate::engine(include_str!("../../compiled/slicing.json")).unwrap();
        entry(&mut e, "SlicingIngress.tenant.port_tenant", vec![(1, 511)], 0, "set_access_tenant", vec![1, 100]);
        entry(&mut e, "SlicingIngress.fwd.tenant_forward", vec![(1, 255), (1, 511)], 0, "fwd.forward", vec![2]);
        e
    }

    fn run(e: &mut Engine, frame: &[u8], sojourn_us: u64) {
        let n = 200_000;
        let (cpu, wall, sent) = e.time_loop(frame, 1, n, sojourn_us);
        assert_eq!(sent, n);
        println!("{cpu:.0} ns/packet CPU, {wall:.0} ns/packet wall, {:.0} packets/s", 1e9 / wall);
    }

    /// 200 B of plain UDP, no classifier entry.
    #[test]
    #[ignore]
    fn packets_per_second() {
        let mut e = access();
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 186];
        f.extend([0, 1, 0, 0, 64, 17, 0, 0, 10, 1, 0, 5, 10, 9, 0, 1, 0x9c, 0x40, 0x13, 0x88, 0, 166, 0, 0]);
        f.resize(200, 0);
        run(&mut e, &f, 0);
    }

    /// 200 B of GTP-in-VXLAN (TEID 100) hitting a classifier entry into a slice with a
    /// virtual queue, tagged on the way out: the bench's prioritised frame.
    #[test]
    #[ignore]
    fn gtp_in_vxlan_hit() {
        let mut e = access();
        entry(
            &mut e,
            "SlicingIngress.vqueue.slice_qos",
            vec![(1, 255)],
            0,
            "queue_manage",
            vec![819, 5_000_000, 1_000_000],
        );
        entry(&mut e, "SlicingEgress.vlan_tag.egress_vlan", vec![(2, 511)], 0, "push_tenant_vlan", vec![]);
        let mut key = vec![(1, 255), (0, 0), (0, 0), (1, 1), (100, 0xffff_ffff)];
        key.resize(11, (0, 0));
        entry(&mut e, "SlicingIngress.classifier.classifier", key, 10, "set_slice", vec![1, 3]);
        e.commit();
        let hex = "0200000000020200000000010800450000ba000100004011661c0a0a00010a0a0002c3e912b500a62996080000000003e9\
                   00020000000102020000000101080045000088000100004011663a0a1400010a140002086808680074bd1030ff006400\
                   00006445000064000100004011661e0a2d00010a3c00019c40138800503b1b";
        let mut f: Vec<u8> =
            (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
        f.resize(200, 0);
        run(&mut e, &f, 3);
    }
}

#[cfg(test)]
mod flat_steps {
    //! The flat controls (`flat`) against the node graph they are laid out from.

    use super::{Engine, WALK_GRAPH};

    fn entry(e: &mut Engine, t: &str, key: Vec<(u64, u64)>, priority: i64, action: &str, params: Vec<u64>) {
        let t = e.ir.tables.iter().position(|x| x.name == t).expect(t);
        let a = *e.ir.tables[t].actions.iter().find(|a| e.ir.actions[**a].name.ends_with(action)).expect(action);
        e.insert(t, key, priority, a, params).unwrap();
    }

    /// slicing.p4 with a tenant on access port 1, a VLAN trunk on port 2, a slice with a
    /// virtual queue and a classifier entry by TEID.
    fn slicing() -> Engine {
        let mut e = crate::engine(include_str!("../../compiled/slicing.json")).unwrap();
        entry(&mut e, "SlicingIngress.tenant.port_tenant", vec![(1, 511)], 0, "set_access_tenant", vec![1, 100]);
        entry(
            &mut e,
            "SlicingIngress.tenant.vlan_tenant",
            vec![(2, 511), (1, 1), (100, 4095)],
            0,
            "set_vlan_tenant",
            vec![1],
        );
        entry(&mut e, "SlicingIngress.fwd.tenant_forward", vec![(1, 255), (1, 511)], 0, "fwd.forward", vec![2]);
        entry(&mut e, "SlicingIngress.fwd.tenant_forward", vec![(1, 255), (2, 511)], 0, "fwd.forward", vec![1]);
        entry(&mut e, "SlicingIngress.vqueue.slice_qos", vec![(1, 255)], 0, "queue_manage", vec![819, 50, 10]);
        entry(&mut e, "SlicingEgress.vlan_tag.egress_vlan", vec![(2, 511)], 0, "push_tenant_vlan", vec![]);
        entry(&mut e, "SlicingEgress.vlan_tag.egress_vlan", vec![(1, 511)], 0, "pop_vlan", vec![]);
        let mut key = vec![(1, 255), (0, 0), (0, 0), (1, 1), (100, 0xffff_ffff)];
        key.resize(11, (0, 0));
        entry(&mut e, "SlicingIngress.classifier.classifier", key, 10, "set_slice", vec![1, 3]);
        e.commit();
        e
    }

    /// Frames mutated at random in their first 120 bytes (where the headers are), each run
    /// through both engines on both ports: the same frames out, the same counters and
    /// registers.
    #[test]
    fn flat_steps_do_what_the_node_graph_does() {
        let (mut flat, mut graph) = (slicing(), slicing());
        let hex = "0200000000020200000000010800450000ba000100004011661c0a0a00010a0a0002c3e912b500a62996080000000003e9\
                   00020000000102020000000101080045000088000100004011663a0a1400010a140002086808680074bd1030ff006400\
                   00006445000064000100004011661e0a2d00010a3c00019c40138800503b1b";
        let mut gtp: Vec<u8> =
            (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
        gtp.resize(200, 0);
        let mut plain = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0, 100, 0x08, 0x00, 0x45, 1, 0, 186];
        plain.extend([0, 1, 0, 0, 64, 17, 0, 0, 10, 1, 0, 5, 10, 9, 0, 1, 0x9c, 0x40, 0x13, 0x88, 0, 166, 0, 0]);
        plain.resize(200, 0);
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let (mut out_f, mut out_g) = (Vec::new(), Vec::new());
        for i in 0..20_000u64 {
            let mut f = if i % 2 == 0 { gtp.clone() } else { plain.clone() };
            for _ in 0..next() % 4 {
                let at = (next() % 120) as usize;
                f[at] ^= 1 << (next() % 8);
            }
            if next().is_multiple_of(8) {
                f.truncate((next() % 200) as usize);
            }
            let port = 1 + next() % 3;
            let now = i * 7 + next() % 5000;
            let sojourn = [0, 1, 70_000, next() % (1 << 32)][(next() % 4) as usize];
            let a = flat.ingress_from(&f, port, now).map(|p| flat.egress_into(p, now + sojourn, &mut out_f));
            WALK_GRAPH.with(|w| w.set(true));
            let b = graph.ingress_from(&f, port, now).map(|p| graph.egress_into(p, now + sojourn, &mut out_g));
            WALK_GRAPH.with(|w| w.set(false));
            assert_eq!(a, b, "frame {i}");
            if a == Some(true) {
                assert_eq!(out_f, out_g, "frame {i}");
            }
        }
        assert_eq!(flat.counters, graph.counters);
        assert_eq!(flat.registers, graph.registers);
        let hits = |e: &Engine| {
            e.tables.iter().map(|t| t.entries.values().map(|x| x.packets).sum::<u64>()).collect::<Vec<_>>()
        };
        assert_eq!(hits(&flat), hits(&graph));
        assert!(flat.counters.iter().flatten().filter(|c| c.0 > 0).count() > 30, "the frames reach many counters");
    }
}
