//! Match tables: entries by handle, and a lookup index. Exact / ternary / LPM keys use
//! tuple-space search: one hash map per distinct mask vector, groups visited by falling best
//! priority, kept up to date by each insert and delete (a rebuild per batch made a push of n
//! entries in batches of b cost n^2 / b); only the groups' order is settled lazily. A table
//! with a range key is scanned in priority order, rebuilt lazily after writes.

use crate::ir::{KeyIr, MatchKind, TableIr};
use std::collections::{BTreeMap, HashMap};
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
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
}

pub type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// What an entry holds beyond its match: the controller's view (P4Runtime), for read-back.
/// Here, not in ``p4rt``: the table stores it and ``p4rt`` builds it (no module cycle).
#[derive(Debug, Clone, Default)]
pub struct EntryMeta {
    pub p4_priority: i64,
    pub p4_action: u32,
    pub metadata: Vec<u8>,
    pub controller_metadata: u64,
}

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
    pub meta: EntryMeta,
}

#[derive(Debug, Default)]
struct Group {
    masks: Vec<u64>,
    best: i64,
    map: KeyMap<Vec<u64>, (i64, u64)>, // masked key -> (priority, handle) of the winner
    /// Entries of the same masked key that do not win (they differ by priority only): the
    /// next winner when the winner goes. Rare, so kept apart from ``map``.
    losers: KeyMap<Vec<u64>, Vec<(i64, u64)>>,
    /// Priority -> how many entries of the group hold it: ``best`` after a delete.
    priorities: BTreeMap<i64, usize>,
}

#[derive(Debug, Default)]
struct Index {
    groups: Vec<Group>,
    /// Mask vector -> position in ``groups`` (valid while ``reorder`` is false or until the
    /// next sort: new groups are appended, so positions hold until then).
    by_masks: KeyMap<Vec<u64>, usize>,
    /// ``groups`` is not sorted by falling ``best`` (an insert or delete changed one).
    reorder: bool,
    /// Range tables: handles by falling priority.
    scan: Vec<u64>,
}

/// ``buf`` filled from ``it`` (a key's masks or values: the loader refuses over 32 key fields),
/// as a slice: the index is searched without allocating a vector per write.
fn fill(buf: &mut [u64; 32], it: impl Iterator<Item = u64>) -> &[u64] {
    let mut n = 0;
    for (slot, v) in buf.iter_mut().zip(it) {
        *slot = v;
        n += 1;
    }
    &buf[..n]
}

/// ``a`` wins over ``b``: the higher priority, the older entry (lower handle) on a tie.
fn wins(a: (i64, u64), b: (i64, u64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

impl Index {
    fn add(&mut self, e: &Entry, h: u64) {
        let mut masks = [0u64; 32];
        let masks = fill(&mut masks, e.key.iter().map(|(_, m)| *m));
        let gi = match self.by_masks.get(masks) {
            Some(&gi) => gi,
            None => {
                self.groups.push(Group { masks: masks.to_vec(), best: i64::MIN, ..Default::default() });
                self.by_masks.insert(masks.to_vec(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[gi];
        let values: Vec<u64> = e.key.iter().map(|(v, _)| *v).collect();
        let cand = (e.priority, h);
        match g.map.get_mut(&values) {
            None => {
                g.map.insert(values, cand);
            }
            Some(cur) => {
                let loser = if wins(cand, *cur) { std::mem::replace(cur, cand) } else { cand };
                g.losers.entry(values).or_default().push(loser);
            }
        }
        *g.priorities.entry(e.priority).or_insert(0) += 1;
        if e.priority > g.best {
            g.best = e.priority;
            self.reorder = true;
        }
    }

    fn remove(&mut self, e: &Entry, h: u64) {
        let (mut masks, mut values) = ([0u64; 32], [0u64; 32]);
        let masks = fill(&mut masks, e.key.iter().map(|(_, m)| *m));
        let Some(&gi) = self.by_masks.get(masks) else { return };
        let g = &mut self.groups[gi];
        let values = fill(&mut values, e.key.iter().map(|(v, _)| *v));
        let mut next = None;
        if let Some(others) = g.losers.get_mut(values) {
            if let Some(i) = others.iter().position(|x| x.1 == h) {
                others.swap_remove(i); // a loser goes: the winner stays
            } else {
                // the winner goes: the best of the others takes its place
                let i = (0..others.len()).reduce(|a, b| if wins(others[b], others[a]) { b } else { a });
                next = i.map(|i| others.swap_remove(i));
            }
            if others.is_empty() {
                g.losers.remove(values);
            }
            match next {
                Some(n) => {
                    g.map.insert(values.to_vec(), n);
                }
                None if g.map.get(values).is_some_and(|w| w.1 == h) => {
                    g.map.remove(values);
                }
                None => {}
            }
        } else if g.map.get(values).is_some_and(|w| w.1 == h) {
            g.map.remove(values);
        }
        if let Some(n) = g.priorities.get_mut(&e.priority) {
            *n -= 1;
            if *n == 0 {
                g.priorities.remove(&e.priority);
                let best = g.priorities.keys().next_back().copied().unwrap_or(i64::MIN);
                if best != g.best {
                    g.best = best;
                    self.reorder = true;
                }
            }
        }
    }

    /// The handle of the entry that key values hit, the groups searched in their order.
    fn search(&self, values: &[u64]) -> Option<u64> {
        let mut best: Option<(i64, u64)> = None;
        let mut buf = [0u64; 32];
        for g in &self.groups {
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

    /// Groups by falling best priority (lookup stops at the first group below its best
    /// hit); empty groups dropped. The groups are few: this is cheap next to a rebuild.
    fn settle(&mut self) {
        if !self.reorder {
            return;
        }
        self.groups.retain(|g| !g.map.is_empty());
        self.groups.sort_by_key(|g| std::cmp::Reverse(g.best));
        self.by_masks = self.groups.iter().enumerate().map(|(i, g)| (g.masks.clone(), i)).collect();
        self.reorder = false;
    }
}

/// A table of exact keys only that fit 128 bits: the entry each packed key hits, kept with
/// every write, so that a lookup is one probe of an integer (not a search of the groups'
/// maps by a vector). An exact write changes what its own key hits and nothing else.
#[derive(Debug)]
struct Exact {
    /// (width, mask) of each key field, the first in the highest bits.
    fields: Vec<(u32, u64)>,
    hits: KeyMap<u128, u64>,
}

impl Exact {
    fn new(keys: &[KeyIr]) -> Option<Exact> {
        let exact = !keys.is_empty() && keys.iter().all(|k| k.kind == MatchKind::Exact);
        let fits = keys.iter().map(|k| k.width).sum::<u32>() <= 128;
        let fields = keys.iter().map(|k| (k.width, full(k.width))).collect();
        (exact && fits).then_some(Exact { fields, hits: KeyMap::default() })
    }

    #[inline]
    fn pack(&self, values: &[u64]) -> u128 {
        let mut key = 0u128;
        for (&(w, m), v) in self.fields.iter().zip(values) {
            // a 128-bit field is alone (the widths fit 128 bits): nothing to shift out
            key = key.checked_shl(w).unwrap_or(0) | (v & m) as u128;
        }
        key
    }
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
    exact: Option<Exact>,
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
            exact: Exact::new(&t.keys),
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
            if k.width > 64 {
                // keys are u64 here: such a table runs (it misses), but takes no entries
                return Err(WriteError::Invalid(format!(
                    "{}: a key field of {} bits (this target takes no entries on fields wider than 64 bits)",
                    k.name, k.width
                )));
            }
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
        if self.has_range {
            self.dirty = true;
        } else {
            self.index.add(&entry, h);
            self.sync_exact(&entry.key);
        }
        self.entries.insert(h, entry);
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
        if self.has_range {
            self.dirty = true;
        } else {
            self.index.remove(&e, handle);
            self.sync_exact(&e.key);
        }
        self.by_key.remove(&(e.key, e.priority));
        Ok(())
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.by_key.clear();
        self.dirty = true;
    }

    /// What the key of an entry just written hits now, into [`Exact::hits`] (a dirty index
    /// is rebuilt, and the hits with it, before the next lookup).
    fn sync_exact(&mut self, key: &[(u64, u64)]) {
        let Some(x) = self.exact.as_mut().filter(|_| !self.dirty) else { return };
        let mut values = [0u64; 32];
        let values = fill(&mut values, key.iter().map(|(v, _)| *v));
        let packed = x.pack(values);
        match self.index.search(values) {
            Some(h) => x.hits.insert(packed, h),
            None => x.hits.remove(&packed),
        };
    }

    /// The index from scratch: a range table's scan order, or (after ``clear``) empty groups.
    fn rebuild(&mut self, t: &TableIr) {
        let mut index = Index::default();
        if self.has_range {
            let mut hs: Vec<(i64, u64)> = self.entries.iter().map(|(h, e)| (e.priority, *h)).collect();
            // highest priority first; the older entry wins a tie
            hs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            index.scan = hs.into_iter().map(|(_, h)| h).collect();
        } else {
            for (h, e) in &self.entries {
                index.add(e, *h); // in any order: ``wins`` breaks ties by age
            }
            index.settle();
        }
        let _ = t;
        self.index = index;
        self.dirty = false;
        if let Some(x) = &mut self.exact {
            x.hits.clear();
            for e in self.entries.values() {
                let values: Vec<u64> = e.key.iter().map(|(v, _)| *v).collect();
                if let Some(h) = self.index.search(&values) {
                    x.hits.insert(x.pack(&values), h);
                }
            }
        }
    }

    pub fn commit(&mut self, t: &TableIr) {
        if self.dirty {
            self.rebuild(t);
        }
        self.index.settle();
    }

    /// The handle of the entry a packet with these key values hits.
    pub fn lookup(&mut self, t: &TableIr, values: &[u64]) -> Option<u64> {
        // per packet: the call only when there is something to settle
        if self.dirty || self.index.reorder {
            self.commit(t);
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
        if let Some(x) = &self.exact {
            return x.hits.get(&x.pack(values)).copied();
        }
        self.index.search(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Expr, KeyIr};

    fn ir(first: MatchKind) -> TableIr {
        let key = |name: &str, kind| KeyIr { name: name.into(), kind, src: Expr::Const(0), width: 4 };
        TableIr::for_test(vec![key("a", first), key("b", MatchKind::Exact)], 0)
    }

    /// The incrementally kept index answers every lookup as a scan of all entries does
    /// (highest priority, then oldest), through random inserts and deletes that collide on
    /// keys, priorities and masks, and a clear halfway; lookups interleave with the writes,
    /// as packets do. The same of an exact table (its one-probe hits).
    #[test]
    fn incremental_index_matches_a_scan() {
        for (first, masks) in [(MatchKind::Ternary, &[0u64, 0xc, 0xf][..]), (MatchKind::Exact, &[0xf][..])] {
            index_matches_a_scan(ir(first), masks);
        }
    }

    fn index_matches_a_scan(t: TableIr, masks: &[u64]) {
        let mut s = TableState::new(&t);
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut live: Vec<u64> = Vec::new();
        for step in 0..20_000 {
            if step == 10_000 {
                s.clear();
                live.clear();
            }
            let r = next();
            if live.is_empty() || !r.is_multiple_of(3) {
                let m = masks[(r >> 8) as usize % masks.len()];
                let key = vec![((r >> 16) & m, m), ((r >> 24) & 3, 0xf)];
                let e = Entry {
                    key,
                    priority: ((r >> 32) % 4) as i64,
                    action: 0,
                    params: vec![],
                    packets: 0,
                    bytes: 0,
                    meta: Default::default(),
                };
                if let Ok(h) = s.insert(&t, e) {
                    live.push(h);
                }
            } else {
                let h = live.swap_remove((r >> 8) as usize % live.len());
                s.delete(h).expect("live");
            }
            if step % 7 == 0 {
                for a in 0..16u64 {
                    for b in 0..4u64 {
                        let want = s
                            .entries
                            .iter()
                            .filter(|(_, e)| a & e.key[0].1 == e.key[0].0 && b == e.key[1].0)
                            .map(|(h, e)| (e.priority, *h))
                            .reduce(|x, y| if wins(y, x) { y } else { x })
                            .map(|(_, h)| h);
                        assert_eq!(s.lookup(&t, &[a, b]), want, "step {step} key {a} {b}");
                    }
                }
            }
        }
        s.clear();
        assert_eq!(s.lookup(&t, &[0, 0]), None);
    }
}
