//! Match tables: entries by handle, and a lookup index rebuilt lazily after writes (a
//! batch of writes costs one rebuild). Exact / ternary / LPM keys use tuple-space search:
//! one hash map per distinct mask vector, groups visited by falling best priority; a
//! table with a range key is scanned in priority order.

use crate::ir::{KeyIr, MatchKind, TableIr};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher for the tables' integer keys (handles, key vectors): std's
/// SipHash costs more than the rest of a lookup or of an index rebuild. The keys come from
/// the controller and from packets of the test bench; flooding resistance is not a goal.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_ne_bytes(c.try_into().expect("8 bytes")));
        }
        for b in chunks.remainder() {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
}

pub type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

#[derive(Debug, Clone)]
pub struct Entry {
    /// Per key field: (value, mask) for exact / ternary / LPM, (low, high) for range.
    pub key: Vec<(u64, u64)>,
    pub priority: i64,
    pub action: usize,
    pub params: Vec<u64>,
    pub packets: u64,
    pub bytes: u64,
    /// The controller's view (P4Runtime priority, action id, metadata) for read-back.
    pub meta: crate::p4rt::EntryMeta,
}

#[derive(Debug, Default)]
struct Group {
    masks: Vec<u64>,
    best: i64,
    map: KeyMap<Vec<u64>, (i64, u64)>, // masked key -> (priority, handle) of the winner
}

#[derive(Debug, Default)]
struct Index {
    groups: Vec<Group>,
    /// Range tables: handles by falling priority.
    scan: Vec<u64>,
}

#[derive(Debug)]
pub struct TableState {
    pub entries: KeyMap<u64, Entry>,
    /// Slot (key, priority) -> handle: duplicate detection as P4Runtime defines it.
    pub by_key: KeyMap<(Vec<(u64, u64)>, i64), u64>,
    pub default_action: usize,
    pub default_params: Vec<u64>,
    next_handle: u64,
    index: Index,
    dirty: bool,
    has_range: bool,
    keyless: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum WriteError {
    Exists,
    NotFound,
    Full,
    Invalid(String),
}

pub fn full(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl TableState {
    pub fn new(t: &TableIr) -> Self {
        TableState {
            entries: KeyMap::default(),
            by_key: KeyMap::default(),
            default_action: t.default_action,
            default_params: t.default_params.clone(),
            next_handle: 1,
            index: Index::default(),
            dirty: false,
            has_range: t.keys.iter().any(|k| k.kind == MatchKind::Range),
            keyless: t.keys.is_empty(),
        }
    }

    pub fn keyless(&self) -> bool {
        self.keyless
    }

    /// Check a key against the table's fields (widths, masks), normalising what P4Runtime
    /// leaves out: a missing ternary field is (0, 0), an exact one is refused by the caller.
    pub fn check_key(keys: &[KeyIr], key: &[(u64, u64)]) -> Result<(), WriteError> {
        if key.len() != keys.len() {
            return Err(WriteError::Invalid(format!("{} key fields, the table has {}", key.len(), keys.len())));
        }
        for (k, (v, m)) in keys.iter().zip(key) {
            let f = full(k.width);
            match k.kind {
                MatchKind::Range => {
                    if v > m || *m > f {
                        return Err(WriteError::Invalid(format!("{}: bad range {v}..{m}", k.name)));
                    }
                }
                _ => {
                    if v & !f != 0 || m & !f != 0 {
                        return Err(WriteError::Invalid(format!("{}: value wider than {} bits", k.name, k.width)));
                    }
                    if v & !m != 0 {
                        return Err(WriteError::Invalid(format!("{}: value has bits outside the mask", k.name)));
                    }
                    if k.kind == MatchKind::Exact && *m != f {
                        return Err(WriteError::Invalid(format!("{}: an exact field takes no mask", k.name)));
                    }
                }
            }
        }
        Ok(())
    }

    pub fn insert(&mut self, t: &TableIr, entry: Entry) -> Result<u64, WriteError> {
        Self::check_key(&t.keys, &entry.key)?;
        let slot = (entry.key.clone(), entry.priority);
        if self.by_key.contains_key(&slot) {
            return Err(WriteError::Exists);
        }
        if t.max_size != 0 && self.entries.len() >= t.max_size {
            return Err(WriteError::Full);
        }
        let h = self.next_handle;
        self.next_handle += 1;
        self.by_key.insert(slot, h);
        self.entries.insert(h, entry);
        self.dirty = true;
        Ok(h)
    }

    pub fn find(&self, key: &[(u64, u64)], priority: i64) -> Option<u64> {
        self.by_key.get(&(key.to_vec(), priority)).copied()
    }

    pub fn modify(&mut self, handle: u64, action: usize, params: Vec<u64>) -> Result<(), WriteError> {
        let e = self.entries.get_mut(&handle).ok_or(WriteError::NotFound)?;
        e.action = action;
        e.params = params;
        Ok(())
    }

    pub fn delete(&mut self, handle: u64) -> Result<(), WriteError> {
        let e = self.entries.remove(&handle).ok_or(WriteError::NotFound)?;
        self.by_key.remove(&(e.key, e.priority));
        self.dirty = true;
        Ok(())
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.by_key.clear();
        self.dirty = true;
    }

    fn rebuild(&mut self, t: &TableIr) {
        let mut index = Index::default();
        if self.has_range {
            let mut hs: Vec<(i64, u64)> = self.entries.iter().map(|(h, e)| (e.priority, *h)).collect();
            // highest priority first; the older entry wins a tie
            hs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            index.scan = hs.into_iter().map(|(_, h)| h).collect();
        } else {
            let mut by_masks: KeyMap<Vec<u64>, usize> = KeyMap::default();
            let mut masks: Vec<u64> = Vec::new();
            for (h, e) in &self.entries {
                masks.clear();
                masks.extend(e.key.iter().map(|(_, m)| *m));
                let gi = match by_masks.get(&masks) {
                    Some(&gi) => gi,
                    None => {
                        index.groups.push(Group { masks: masks.clone(), best: i64::MIN, map: KeyMap::default() });
                        by_masks.insert(masks.clone(), index.groups.len() - 1);
                        index.groups.len() - 1
                    }
                };
                let g = &mut index.groups[gi];
                let values: Vec<u64> = e.key.iter().map(|(v, _)| *v).collect();
                let cand = (e.priority, *h);
                g.map
                    .entry(values)
                    .and_modify(|cur| {
                        if cand.0 > cur.0 || (cand.0 == cur.0 && cand.1 < cur.1) {
                            *cur = cand;
                        }
                    })
                    .or_insert(cand);
                g.best = g.best.max(e.priority);
            }
            index.groups.sort_by_key(|g| std::cmp::Reverse(g.best));
        }
        let _ = t;
        self.index = index;
        self.dirty = false;
    }

    pub fn commit(&mut self, t: &TableIr) {
        if self.dirty {
            self.rebuild(t);
        }
    }

    /// The handle of the entry a packet with these key values hits.
    pub fn lookup(&mut self, t: &TableIr, values: &[u64]) -> Option<u64> {
        if self.dirty {
            self.rebuild(t);
        }
        if self.has_range {
            'entries: for h in &self.index.scan {
                let e = &self.entries[h];
                for ((k, (a, b)), v) in t.keys.iter().zip(&e.key).zip(values) {
                    let ok = if k.kind == MatchKind::Range { *a <= *v && *v <= *b } else { v & b == *a };
                    if !ok {
                        continue 'entries;
                    }
                }
                return Some(*h);
            }
            return None;
        }
        let mut best: Option<(i64, u64)> = None;
        let mut buf = [0u64; 32];
        for g in &self.index.groups {
            if let Some((p, _)) = best {
                if g.best < p {
                    break;
                }
            }
            for (i, m) in g.masks.iter().enumerate() {
                buf[i] = values[i] & m;
            }
            if let Some(&(p, h)) = g.map.get(&buf[..g.masks.len()]) {
                match best {
                    Some((bp, bh)) if bp > p || (bp == p && bh < h) => {}
                    _ => best = Some((p, h)),
                }
            }
        }
        best.map(|(_, h)| h)
    }
}
