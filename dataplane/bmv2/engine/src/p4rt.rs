//! The P4Runtime write fast path: table-entry updates decoded from protobuf wire format and
//! validated against the controller's P4Info (as the target's Python validator and PI do),
//! then applied to the engine's tables. Whatever is not a plain, valid INSERT / MODIFY /
//! DELETE of a table entry is *deferred*: the caller handles it with the full validator,
//! which alone produces error codes, so the codes cannot differ between the two paths.

use crate::exec::Engine;
use crate::ir::MatchKind;
use crate::table::{full, EntryMeta};
use std::collections::HashMap;

/// A P4Info action of a table: (engine action, [(param id, bit width)] in P4Info order,
/// default-only).
pub type ActionSchema = (usize, Vec<(u32, u32)>, bool);

/// P4Info facts the validator needs about one table (given by the caller from the P4Info).
#[derive(Debug, Clone)]
pub struct TableSchema {
    pub engine_table: usize,
    /// (P4Info field id, match kind, bit width) in P4Info order = the engine's key order.
    pub fields: Vec<(u32, MatchKind, u32)>,
    pub needs_priority: bool,
    pub size: usize,
    /// P4Info action id -> (engine action, [(param id, bit width)] in P4Info order, default-only).
    pub actions: HashMap<u32, ActionSchema>,
}

// ---- protobuf wire format --------------------------------------------------------------

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

enum Val<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// The next (field number, value); None at the end; Err on malformed input or a wire
    /// type this reader does not take (fixed32/64 do not occur in what it decodes).
    fn next(&mut self) -> Result<Option<(u32, Val<'a>)>, ()> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let tag = self.varint().ok_or(())?;
        let field = (tag >> 3) as u32;
        match tag & 7 {
            0 => Ok(Some((field, Val::Int(self.varint().ok_or(())?)))),
            2 => {
                let n = self.varint().ok_or(())? as usize;
                let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len()).ok_or(())?;
                let b = &self.buf[self.pos..end];
                self.pos = end;
                Ok(Some((field, Val::Bytes(b))))
            }
            _ => Err(()),
        }
    }
}

/// WriteRequest header fields and each update's bytes.
pub struct WriteRequest<'a> {
    pub device_id: u64,
    pub election_id: u128,
    pub atomicity: u64,
    pub updates: Vec<&'a [u8]>,
}

pub fn split_write(buf: &[u8]) -> Option<WriteRequest<'_>> {
    let mut r = Reader::new(buf);
    let mut w = WriteRequest { device_id: 0, election_id: 0, atomicity: 0, updates: Vec::new() };
    while let Some((f, v)) = r.next().ok()? {
        match (f, v) {
            (1, Val::Int(x)) => w.device_id = x,
            (3, Val::Bytes(b)) => {
                let mut e = Reader::new(b);
                while let Some((f, v)) = e.next().ok()? {
                    match (f, v) {
                        (1, Val::Int(x)) => w.election_id |= (x as u128) << 64,
                        (2, Val::Int(x)) => w.election_id |= x as u128,
                        _ => return None,
                    }
                }
            }
            (4, Val::Bytes(b)) => w.updates.push(b),
            (5, Val::Int(x)) => w.atomicity = x,
            (2, Val::Int(_)) | (6, Val::Bytes(_)) => {} // role id / role: one role here
            _ => return None,
        }
    }
    Some(w)
}

fn bytes_value(b: &[u8], width: u32) -> Option<u64> {
    // PI: non-empty, leading zero bytes allowed, the value must fit the width
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &x in b {
        if v >> 56 != 0 {
            return None;
        }
        v = (v << 8) | x as u64;
    }
    (v & !full(width) == 0).then_some(v)
}

/// Most fields or parameters a fast-path update may carry (more: the full path takes it).
const MAX_FIELDS: usize = 16;

/// One update as decoded, on the stack: the fast path allocates only what the table keeps.
struct Decoded<'a> {
    kind: u64,
    table_id: u32,
    matches: [(u32, u32, u64, u64); MAX_FIELDS], // (field id, oneof number, a, b)
    n_matches: usize,
    priority: i64,
    action_id: u32,
    params: [(u32, u64); MAX_FIELDS],
    n_params: usize,
    metadata: &'a [u8],
    controller_metadata: u64,
    has_action: bool,
}

impl Decoded<'_> {
    fn matches(&self) -> &[(u32, u32, u64, u64)] {
        &self.matches[..self.n_matches]
    }

    fn params(&self) -> &[(u32, u64)] {
        &self.params[..self.n_params]
    }
}

fn decode_update(buf: &[u8]) -> Option<Decoded<'_>> {
    let mut r = Reader::new(buf);
    let mut kind = 0;
    let mut entity = None;
    while let Some((f, v)) = r.next().ok()? {
        match (f, v) {
            (1, Val::Int(x)) => kind = x,
            (2, Val::Bytes(b)) => entity = Some(b),
            _ => return None,
        }
    }
    let mut e = Reader::new(entity?);
    let mut te = None;
    while let Some((f, v)) = e.next().ok()? {
        match (f, v) {
            (2, Val::Bytes(b)) if te.is_none() => te = Some(b),
            _ => return None, // another entity kind: the full path
        }
    }
    let mut d = Decoded {
        kind,
        table_id: 0,
        matches: [(0, 0, 0, 0); MAX_FIELDS],
        n_matches: 0,
        priority: 0,
        action_id: 0,
        params: [(0, 0); MAX_FIELDS],
        n_params: 0,
        metadata: &[],
        controller_metadata: 0,
        has_action: false,
    };
    let mut t = Reader::new(te?);
    while let Some((f, v)) = t.next().ok()? {
        match (f, v) {
            (1, Val::Int(x)) => d.table_id = x as u32,
            (2, Val::Bytes(b)) => {
                let mut m = Reader::new(b);
                let (mut fid, mut which, mut a, mut bb) = (0u32, 0u32, None, None);
                while let Some((f, v)) = m.next().ok()? {
                    match (f, v) {
                        (1, Val::Int(x)) => fid = x as u32,
                        (2 | 3 | 4 | 6, Val::Bytes(inner)) if which == 0 => {
                            which = f;
                            let mut k = Reader::new(inner);
                            while let Some((g, w)) = k.next().ok()? {
                                match (g, w) {
                                    (1, Val::Bytes(x)) => a = Some(x),
                                    (2, Val::Bytes(x)) => bb = Some(Err(x)),
                                    (2, Val::Int(x)) => bb = Some(Ok(x)),
                                    _ => return None,
                                }
                            }
                        }
                        _ => return None,
                    }
                }
                // widths are checked against the schema by the caller; keep raw forms here
                let a = a?;
                let av = if a.len() <= 8 && !a.is_empty() { bytes_value(a, 64)? } else { return None };
                let bv = match bb {
                    None => 0,
                    Some(Ok(x)) => x,
                    Some(Err(x)) if x.len() <= 8 && !x.is_empty() => bytes_value(x, 64)?,
                    Some(Err(_)) => return None,
                };
                if which == 0 || d.n_matches == MAX_FIELDS {
                    return None;
                }
                d.matches[d.n_matches] = (fid, which, av, bv);
                d.n_matches += 1;
            }
            (3, Val::Bytes(b)) => {
                let mut ta = Reader::new(b);
                while let Some((f, v)) = ta.next().ok()? {
                    match (f, v) {
                        (1, Val::Bytes(ab)) => {
                            d.has_action = true;
                            let mut ar = Reader::new(ab);
                            while let Some((f, v)) = ar.next().ok()? {
                                match (f, v) {
                                    (1, Val::Int(x)) => d.action_id = x as u32,
                                    (4, Val::Bytes(pb)) => {
                                        let mut pr = Reader::new(pb);
                                        let (mut pid, mut val) = (0u32, None);
                                        while let Some((f, v)) = pr.next().ok()? {
                                            match (f, v) {
                                                (2, Val::Int(x)) => pid = x as u32,
                                                (3, Val::Bytes(x)) => val = Some(x),
                                                _ => return None,
                                            }
                                        }
                                        let val = val?;
                                        if val.is_empty() || val.len() > 8 {
                                            return None;
                                        }
                                        if d.n_params == MAX_FIELDS {
                                            return None;
                                        }
                                        d.params[d.n_params] = (pid, bytes_value(val, 64)?);
                                        d.n_params += 1;
                                    }
                                    _ => return None,
                                }
                            }
                        }
                        _ => return None, // action profiles: the full path
                    }
                }
            }
            (4, Val::Int(x)) => d.priority = x as i32 as i64,
            (5, Val::Int(x)) => d.controller_metadata = x,
            (11, Val::Bytes(b)) => d.metadata = b,
            _ => return None, // default entries, counters, meters, timeouts: the full path
        }
    }
    Some(d)
}

/// Key (P4Info order) of a decoded entry, or None when anything is off.
fn key_of(s: &TableSchema, d: &Decoded) -> Option<Vec<(u64, u64)>> {
    if s.fields.len() > MAX_FIELDS {
        return None;
    }
    let mut key: [Option<(u64, u64)>; MAX_FIELDS] = [None; MAX_FIELDS];
    for &(fid, which, a, b) in d.matches() {
        let i = s.fields.iter().position(|f| f.0 == fid)?;
        if key[i].is_some() {
            return None;
        }
        let (_, kind, width) = s.fields[i];
        let f = full(width);
        let pair = match (kind, which) {
            (MatchKind::Exact, 2) => (a, f),
            (MatchKind::Ternary, 3) => {
                if b == 0 || a & !b != 0 || b & !f != 0 {
                    return None;
                }
                (a, b)
            }
            (MatchKind::Lpm, 4) => {
                if b == 0 || b > width as u64 {
                    return None;
                }
                let mask = f ^ (full(width - b as u32));
                if a & !mask != 0 {
                    return None;
                }
                (a, mask)
            }
            (MatchKind::Range, 6) => {
                if a > b || b & !f != 0 || (a, b) == (0, f) {
                    return None;
                }
                (a, b)
            }
            _ => return None,
        };
        if pair.0 & !f != 0 {
            return None;
        }
        key[i] = Some(pair);
    }
    s.fields
        .iter()
        .zip(key.iter().copied())
        .map(|((_, kind, width), k)| match (k, kind) {
            (Some(p), _) => Some(p),
            (None, MatchKind::Exact) => None,
            (None, MatchKind::Range) => Some((0, full(*width))),
            (None, _) => Some((0, 0)),
        })
        .collect()
}

impl Engine {
    /// Apply one Update if it is a valid table-entry INSERT / MODIFY / DELETE; false =
    /// nothing was changed and the caller's full path must handle it.
    pub fn fast_update(&mut self, schemas: &HashMap<u32, TableSchema>, buf: &[u8]) -> bool {
        let Some(d) = decode_update(buf) else { return false };
        let Some(s) = schemas.get(&d.table_id) else { return false };
        let Some(key) = key_of(s, &d) else { return false };
        if s.needs_priority != (d.priority > 0) || d.priority < 0 {
            return false;
        }
        let lpm = s.fields.iter().position(|f| f.1 == MatchKind::Lpm);
        let rank = match (s.needs_priority, lpm) {
            (false, Some(i)) => key[i].1.count_ones() as i64,
            _ => d.priority,
        };
        let t = s.engine_table;
        if self.ext.slow[t] {
            return false; // indirect entries and direct meters: the full path (profiles.rs)
        }
        let found = self.tables[t].find(&key, rank);
        if d.kind == 3 {
            // DELETE: the action (if any) is ignored, as PI does
            return match found {
                Some(h) => self.tables[t].delete(h).is_ok(),
                None => false,
            };
        }
        if !d.has_action {
            return false;
        }
        let Some((action, params_spec, default_only)) = s.actions.get(&d.action_id) else { return false };
        if *default_only || d.n_params != params_spec.len() {
            return false;
        }
        let mut params = Vec::with_capacity(params_spec.len());
        for &(pid, width) in params_spec {
            let mut it = d.params().iter().filter(|p| p.0 == pid);
            let (Some(&(_, v)), None) = (it.next(), it.next()) else { return false };
            if v & !full(width) != 0 {
                return false;
            }
            params.push(v);
        }
        let meta = EntryMeta {
            p4_priority: d.priority,
            p4_action: d.action_id,
            metadata: d.metadata.to_vec(),
            controller_metadata: d.controller_metadata,
        };
        match (d.kind, found) {
            (1, None) => {
                if s.size != 0 && self.tables[t].entries.len() >= s.size {
                    return false;
                }
                match self.insert(t, key, rank, *action, params) {
                    Ok(h) => {
                        self.tables[t].entries.get_mut(&h).expect("inserted").meta = meta;
                        true
                    }
                    Err(_) => false,
                }
            }
            (2, Some(h)) => {
                if self.check_action(t, *action, &params).is_err() {
                    return false;
                }
                let e = self.tables[t].entries.get_mut(&h).expect("found");
                e.action = *action;
                e.params = params;
                e.meta = meta;
                true
            }
            _ => false,
        }
    }
}
