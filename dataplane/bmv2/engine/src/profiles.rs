//! Action profiles, action selectors and direct meters, as simple_switch runs them
//! (behavioral-model 9674187f: src/bm_sim/action_profile.cpp, match_tables.cpp,
//! include/bm/bm_sim/handle_mgr.h, ras.h).
//!
//! - A profile holds members (an action and its data) by BMv2 member handle, and with a
//!   selector, groups of member handles. Handles are BMv2's: the lowest free one is taken
//!   (HandleMgr::get_handle), so that a controller above (PI's weighted copies of members)
//!   sees the same handles, and groups choose the same members, as on simple_switch.
//! - An indirect table's entry names a member or a group (its action is [`INDIRECT`], its
//!   parameters `[kind, handle]`). A group chooses its member by the selector's hash
//!   (of the packed selector fields, as unsigned int: calculations.cpp's crc16, crc32 or
//!   identity, ActionProfile::choose_from_group) modulo the group's size, the
//!   member at that position of the group's members in handle order (a flat_set:
//!   GroupMgr::get_from_hash, RandAccessUIntSet::get_nth). A member or group still
//!   referenced (by a group, by an entry) cannot be deleted (MBR_STILL_USED /
//!   GRP_STILL_USED).
//! - A miss of an indirect table runs no action and goes to `__MISS__` or
//!   `base_default_next` (MatchTableIndirect::lookup with no default member set).
//! - A direct meter runs on a hit only, before the action, its colour written into the
//!   meter's `result_target` (MatchTableAbstract::apply_action). Its cell is the entry's
//!   BMv2 index (the lowest free one at insert), which BMv2 neither resets at insert nor at
//!   delete: an entry inserted where a deleted one was keeps that one's configuration.

use crate::exec::{Engine, MeterCell, Packet};
use crate::ir::{Ir, NextIr, Node, ProfileIr, SelectorAlgo, TableIr};
use crate::table::{full, Entry, KeyMap, WriteError};
use std::collections::BTreeSet;

/// The action of an indirect table's entry; its parameters are `[kind, handle]`.
pub const INDIRECT: usize = usize::MAX;
/// `kind`: the entry names a member, or a group.
pub const MEMBER: u64 = 0;
pub const GROUP: u64 = 1;

/// Each profile's actions: its table's (p4c gives every table its own copy of an action).
/// A profile shared by tables is refused: BMv2 keeps one copy of each action per profile
/// by name (the last table's, P4Objects::add_action_to_act_prof) and looks its next node up
/// among the other table's copies (MatchTableAbstract::get_next_node: `next_nodes.at`),
/// which throws unless the table branches on hit / miss.
pub fn bind(mut profiles: Vec<ProfileIr>, tables: &mut [TableIr]) -> Result<Vec<ProfileIr>, String> {
    let mut bound: Vec<Option<&str>> = vec![None; profiles.len()];
    for t in tables.iter() {
        if let Some(p) = t.profile {
            if let Some(first) = bound[p] {
                return Err(format!("action profile {} shared by tables {first} and {}", profiles[p].name, t.name));
            }
            bound[p] = Some(&t.name);
            profiles[p].actions = t.actions.clone();
        }
    }
    Ok(profiles)
}

#[derive(Debug, Default)]
pub struct ProfileState {
    /// Members by BMv2 handle: (action, parameters); None = a free handle.
    members: Vec<Option<(usize, Vec<u64>)>>,
    /// References to each member (groups holding it, entries naming it).
    member_refs: Vec<u32>,
    /// Groups by BMv2 handle: their member handles, in handle order.
    groups: Vec<Option<BTreeSet<u32>>>,
    group_refs: Vec<u32>,
    /// Deleted members and groups as BMv2 still holds them until their handle is taken
    /// again (action_entries, GroupMgr's GroupInfo are not cleared): an entry that names one
    /// (its reference count was released early, see `modify_indirect`) runs what they held.
    dead_members: KeyMap<u32, (usize, Vec<u64>)>,
    dead_groups: KeyMap<u32, BTreeSet<u32>>,
}

/// BMv2's HandleMgr::get_handle: the lowest free handle.
fn take<T>(slots: &mut Vec<Option<T>>, refs: &mut Vec<u32>, v: T) -> u32 {
    let h = slots.iter().position(Option::is_none).unwrap_or(slots.len());
    if h == slots.len() {
        slots.push(None);
        refs.push(0);
    }
    slots[h] = Some(v);
    refs[h] = 0;
    h as u32
}

/// A table's direct meter cells, by the entries' BMv2 indices.
#[derive(Debug)]
pub struct DirectMeters {
    cells: Vec<MeterCell>,
    /// Engine entry handle -> BMv2 entry index (the cell).
    index: KeyMap<u64, usize>,
    used: Vec<bool>,
}

#[derive(Debug)]
pub struct State {
    pub profiles: Vec<ProfileState>,
    /// Per table: its direct meter's cells.
    pub meters: Vec<Option<DirectMeters>>,
    /// Per table: applied by [`Engine::apply_table_ext`] (indirect, or with a direct meter).
    pub slow: Vec<bool>,
}

impl State {
    pub fn new(ir: &Ir) -> Self {
        State {
            profiles: ir.profiles.iter().map(|_| ProfileState::default()).collect(),
            meters: ir
                .tables
                .iter()
                .map(|t| {
                    t.direct_meter.as_ref().map(|_| DirectMeters {
                        cells: vec![MeterCell::default(); t.max_size],
                        index: KeyMap::default(),
                        used: vec![false; t.max_size],
                    })
                })
                .collect(),
            slow: ir.tables.iter().map(|t| t.profile.is_some() || t.direct_meter.is_some()).collect(),
        }
    }
}

/// BMv2's hash of the fields packed big-endian (the last byte zero-padded: BufBuilder),
/// as the selector's `unsigned int` (hash_t) takes it.
fn selector_hash(pkt: &Packet, algo: SelectorAlgo, inputs: &[(usize, u32)]) -> u32 {
    let mut bytes = Vec::with_capacity(16);
    let (mut acc, mut nbits) = (0u128, 0u32);
    for &(slot, width) in inputs {
        acc = (acc << width) | (pkt.fields[slot] & full(width)) as u128;
        nbits += width;
        while nbits >= 8 {
            nbits -= 8;
            bytes.push((acc >> nbits) as u8);
        }
        acc &= (1u128 << nbits) - 1;
    }
    if nbits > 0 {
        bytes.push((acc << (8 - nbits)) as u8);
    }
    hash(algo, &bytes)
}

fn hash(algo: SelectorAlgo, bytes: &[u8]) -> u32 {
    match algo {
        SelectorAlgo::Crc16 => {
            let mut crc: u16 = 0;
            for b in bytes {
                crc ^= *b as u16;
                for _ in 0..8 {
                    crc = if crc & 1 != 0 { (crc >> 1) ^ 0xa001 } else { crc >> 1 };
                }
            }
            crc as u32
        }
        SelectorAlgo::Crc32 => {
            let mut crc: u32 = 0xffff_ffff;
            for b in bytes {
                crc ^= *b as u32;
                for _ in 0..8 {
                    crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
                }
            }
            !crc
        }
        // a 64-bit value cut to the selector's 32 bits
        SelectorAlgo::Identity => bytes.iter().take(8).fold(0u64, |acc, b| (acc << 8) | *b as u64) as u32,
    }
}

fn invalid(m: String) -> WriteError {
    WriteError::Invalid(m)
}

impl Engine {
    // ---- data plane ------------------------------------------------------------------

    /// A table with an action profile or a direct meter, applied as BMv2 does (see the
    /// module's comment); the other tables take exec.rs's path. Never inlined: it would
    /// widen exec.rs's per-table path, which every other table takes.
    #[inline(never)]
    pub(crate) fn apply_table_ext(&mut self, t: usize, pkt: &mut Packet) -> Option<Node> {
        let nkeys = self.ir.tables[t].keys.len();
        let mut values = [0u64; 32];
        for (i, k) in self.ir.tables[t].keys.iter().enumerate() {
            values[i] = self.value(&k.src, pkt, &[]) as u64;
        }
        // a table keyed by selector fields only has no key here: simple_switch_grpc adds no
        // entry to it (the target refuses), so every packet misses
        let found = if nkeys == 0 { None } else { self.tables[t].lookup(&self.ir.tables[t], &values[..nkeys]) };
        let ir = &self.ir.tables[t];
        let run = match found {
            Some(h) => {
                let e = self.tables[t].entries.get_mut(&h).expect("indexed entry exists");
                if ir.direct_counter {
                    e.packets += 1;
                    e.bytes += pkt.ingress_length;
                }
                let (action, params) = (e.action, e.params.clone());
                if let (Some(dm), Some(cells)) = (&ir.direct_meter, &mut self.ext.meters[t]) {
                    let now = pkt.fields[self.ir.std.ingress_global_timestamp] as i64;
                    let size = if dm.bytes { pkt.ingress_length } else { 1 };
                    let color = cells.index.get(&h).map(|&i| cells.cells[i].execute(size, now)).unwrap_or(0);
                    pkt.fields[dm.target] = color & full(self.ir.slot_width[dm.target]);
                }
                if action == INDIRECT {
                    let p = &self.ext.profiles[ir.profile.expect("an indirect table")];
                    let mut mbr = params[1] as usize;
                    if params[0] == GROUP {
                        let empty = BTreeSet::new();
                        let group = p.groups[mbr].as_ref().or(p.dead_groups.get(&(mbr as u32))).unwrap_or(&empty);
                        let selector = self.ir.profiles[ir.profile.expect("indirect")].selector.as_ref();
                        // an empty group: BMv2 runs no action (and its next node is undefined)
                        mbr = match (group.len(), selector) {
                            (0, _) => usize::MAX,
                            (n, Some((algo, inputs))) => {
                                let h = selector_hash(pkt, *algo, inputs) as usize;
                                *group.iter().nth(h % n).expect("n > 0") as usize
                            }
                            (_, None) => *group.iter().next().expect("not empty") as usize,
                        };
                    }
                    p.members.get(mbr).and_then(|m| m.clone()).or_else(|| p.dead_members.get(&(mbr as u32)).cloned())
                } else {
                    Some((action, params))
                }
            }
            None if ir.profile.is_some() => None,
            None => Some((self.tables[t].default_action, self.tables[t].default_params.clone())),
        };
        let action = run.as_ref().map(|(a, _)| *a);
        if let Some((a, params)) = run {
            self.run_action(a, &params, pkt);
        }
        let ir = &self.ir.tables[t];
        match (&ir.next, action) {
            (NextIr::HitMiss(h, m), _) => {
                if found.is_some() {
                    *h
                } else {
                    *m
                }
            }
            (NextIr::ByAction(by), Some(a)) => by.iter().find(|(x, _)| *x == a).and_then(|(_, n)| *n),
            (NextIr::ByAction(_), None) => ir.miss_next,
        }
    }

    // ---- entries ---------------------------------------------------------------------

    /// An entry was inserted: its direct meter cell is the lowest free BMv2 index.
    pub(crate) fn entry_added(&mut self, t: usize, h: u64) {
        if let Some(m) = &mut self.ext.meters[t] {
            if let Some(i) = m.used.iter().position(|u| !u) {
                m.used[i] = true;
                m.index.insert(h, i);
            }
        }
    }

    /// An indirect table's entry naming member or group `handle` of its profile, as
    /// MatchTableIndirect(WS)::add_entry(_ws) adds it: an empty group refused (EMPTY_GRP);
    /// the reference counted before the add, and kept when the add fails (a full table, a
    /// table without key fields, which takes no entry here as there).
    pub fn insert_indirect(
        &mut self,
        t: usize,
        key: Vec<(u64, u64)>,
        priority: i64,
        kind: u64,
        handle: u32,
    ) -> Result<u64, WriteError> {
        self.check_ref(t, kind, handle)?;
        self.check_takes(t, kind)?;
        self.check_not_empty(t, kind, handle)?;
        self.reference(t, kind, handle, true);
        if self.ir.tables[t].keys.is_empty() {
            return Err(invalid(format!("{} has no match key: it takes no entry", self.ir.tables[t].name)));
        }
        let entry = Entry {
            key,
            priority,
            action: INDIRECT,
            params: vec![kind, handle as u64],
            packets: 0,
            bytes: 0,
            meta: Default::default(),
        };
        let h = self.tables[t].insert(&self.ir.tables[t], entry)?;
        self.entry_added(t, h);
        Ok(h)
    }

    /// An indirect entry now names member or group `handle`, as modify_entry(_ws) does it:
    /// the old reference released first, even when the new one is then refused (an empty
    /// group) and the entry keeps naming the old one.
    pub fn modify_indirect(&mut self, t: usize, h: u64, kind: u64, handle: u32) -> Result<(), WriteError> {
        self.check_ref(t, kind, handle)?;
        self.check_takes(t, kind)?;
        let e = self.tables[t].entries.get(&h).ok_or(WriteError::NotFound)?;
        let old = (e.params[0], e.params[1] as u32);
        self.reference(t, old.0, old.1, false);
        self.check_not_empty(t, kind, handle)?;
        self.reference(t, kind, handle, true);
        self.tables[t].entries.get_mut(&h).expect("checked").params = vec![kind, handle as u64];
        Ok(())
    }

    /// A group only in the table of a selector (BMv2's `_ws` calls on another table fail
    /// before they count anything).
    fn check_takes(&self, t: usize, kind: u64) -> Result<(), WriteError> {
        if kind == GROUP && self.ir.profiles[self.profile_of(t)?].selector.is_none() {
            return Err(invalid(format!("{} has no selector: its entries name members", self.ir.tables[t].name)));
        }
        Ok(())
    }

    fn check_not_empty(&self, t: usize, kind: u64, handle: u32) -> Result<(), WriteError> {
        let p = &self.ext.profiles[self.profile_of(t)?];
        if kind == GROUP && p.groups[handle as usize].as_ref().is_some_and(BTreeSet::is_empty) {
            return Err(invalid(format!("group {handle} is empty")));
        }
        Ok(())
    }

    /// Delete an entry of any table (references and direct meter index released).
    pub fn delete_entry(&mut self, t: usize, h: u64) -> Result<(), WriteError> {
        let e = self.tables[t].entries.get(&h).ok_or(WriteError::NotFound)?;
        if e.action == INDIRECT {
            let (kind, handle) = (e.params[0], e.params[1] as u32);
            self.reference(t, kind, handle, false);
        }
        if let Some(m) = &mut self.ext.meters[t] {
            if let Some(i) = m.index.remove(&h) {
                m.used[i] = false; // the cell keeps its configuration, as BMv2's does
            }
        }
        self.tables[t].delete(h)
    }

    fn profile_of(&self, t: usize) -> Result<usize, WriteError> {
        self.ir.tables[t].profile.ok_or_else(|| invalid(format!("{} is not an indirect table", self.ir.tables[t].name)))
    }

    fn check_ref(&self, t: usize, kind: u64, handle: u32) -> Result<(), WriteError> {
        let p = &self.ext.profiles[self.profile_of(t)?];
        let ok = match kind {
            MEMBER => p.members.get(handle as usize).is_some_and(Option::is_some),
            GROUP => p.groups.get(handle as usize).is_some_and(Option::is_some),
            _ => false,
        };
        ok.then_some(()).ok_or_else(|| invalid(format!("no member / group handle {handle}")))
    }

    /// BMv2's IndirectIndexRefCount: an unsigned int that wraps (a count released twice
    /// leaves its member or group undeletable, as there).
    fn reference(&mut self, t: usize, kind: u64, handle: u32, up: bool) {
        let Some(p) = self.ir.tables[t].profile else { return };
        let p = &mut self.ext.profiles[p];
        let refs = if kind == GROUP { &mut p.group_refs } else { &mut p.member_refs };
        if let Some(r) = refs.get_mut(handle as usize) {
            *r = if up { r.wrapping_add(1) } else { r.wrapping_sub(1) };
        }
    }

    // ---- direct meters ---------------------------------------------------------------

    fn direct_cell(&mut self, t: usize, h: u64) -> Result<&mut MeterCell, WriteError> {
        if !self.tables[t].entries.contains_key(&h) {
            return Err(WriteError::NotFound);
        }
        let name = &self.ir.tables[t].name;
        let m = self.ext.meters[t].as_mut().ok_or_else(|| invalid(format!("{name} has no direct meter")))?;
        let i = *m.index.get(&h).ok_or(WriteError::NotFound)?;
        Ok(&mut m.cells[i])
    }

    /// An entry's direct meter rates (cir, cburst, pir, pburst); None: not configured.
    pub fn direct_meter(&mut self, t: usize, h: u64) -> Result<Option<(u64, u64, u64, u64)>, WriteError> {
        let c = self.direct_cell(t, h)?;
        Ok(c.configured.then_some((c.cir, c.cburst, c.pir, c.pburst)))
    }

    pub fn set_direct_meter(&mut self, t: usize, h: u64, cfg: Option<(u64, u64, u64, u64)>) -> Result<(), WriteError> {
        self.direct_cell(t, h)?.configure(cfg);
        Ok(())
    }

    // ---- members and groups ----------------------------------------------------------

    fn check_member_action(&self, p: usize, action: usize, params: &[u64]) -> Result<(), WriteError> {
        let prof = &self.ir.profiles[p];
        if !prof.actions.contains(&action) {
            return Err(invalid(format!("action {action} is not an action of {}", prof.name)));
        }
        let a = &self.ir.actions[action];
        if a.param_widths.len() != params.len() {
            return Err(invalid(format!("{} takes {} parameters", a.name, a.param_widths.len())));
        }
        if a.param_widths.iter().zip(params).any(|(w, v)| v & !full(*w) != 0) {
            return Err(invalid(format!("{}: a parameter wider than its field", a.name)));
        }
        Ok(())
    }

    /// A new member (BMv2's add_member): its handle.
    pub fn member_add(&mut self, p: usize, action: usize, params: Vec<u64>) -> Result<u32, WriteError> {
        self.check_member_action(p, action, &params)?;
        let s = &mut self.ext.profiles[p];
        let h = take(&mut s.members, &mut s.member_refs, (action, params));
        s.dead_members.remove(&h);
        Ok(h)
    }

    pub fn member_modify(&mut self, p: usize, h: u32, action: usize, params: Vec<u64>) -> Result<(), WriteError> {
        self.check_member_action(p, action, &params)?;
        let m =
            self.ext.profiles[p].members.get_mut(h as usize).and_then(Option::as_mut).ok_or(WriteError::NotFound)?;
        *m = (action, params);
        Ok(())
    }

    pub fn member_delete(&mut self, p: usize, h: u32) -> Result<(), WriteError> {
        let s = &mut self.ext.profiles[p];
        if !s.members.get(h as usize).is_some_and(Option::is_some) {
            return Err(WriteError::NotFound);
        }
        if s.member_refs[h as usize] > 0 {
            return Err(invalid(format!("member {h} is still used")));
        }
        let dead = s.members[h as usize].take().expect("checked");
        s.dead_members.insert(h, dead);
        Ok(())
    }

    /// A new group (BMv2's create_group), also in a profile without a selector (BMv2 makes
    /// it; no entry of its table can name it).
    pub fn group_create(&mut self, p: usize) -> Result<u32, WriteError> {
        let s = &mut self.ext.profiles[p];
        let g = take(&mut s.groups, &mut s.group_refs, BTreeSet::new());
        s.dead_groups.remove(&g);
        Ok(g)
    }

    /// Delete a group no entry names; its members' references go with it.
    pub fn group_delete(&mut self, p: usize, g: u32) -> Result<(), WriteError> {
        let s = &mut self.ext.profiles[p];
        if !s.groups.get(g as usize).is_some_and(Option::is_some) {
            return Err(WriteError::NotFound);
        }
        if s.group_refs[g as usize] > 0 {
            return Err(invalid(format!("group {g} is still used")));
        }
        let dead = s.groups[g as usize].take().expect("checked");
        for m in &dead {
            s.member_refs[*m as usize] = s.member_refs[*m as usize].wrapping_sub(1);
        }
        s.dead_groups.insert(g, dead);
        Ok(())
    }

    /// Add (`add`) or remove member `m` to / from group `g`; Exists / NotFound when it is /
    /// is not there already.
    pub fn group_member(&mut self, p: usize, g: u32, m: u32, add: bool) -> Result<(), WriteError> {
        let s = &mut self.ext.profiles[p];
        if !s.members.get(m as usize).is_some_and(Option::is_some) {
            return Err(invalid(format!("no member handle {m}")));
        }
        let group = s.groups.get_mut(g as usize).and_then(Option::as_mut).ok_or(WriteError::NotFound)?;
        if add {
            if !group.insert(m) {
                return Err(WriteError::Exists);
            }
            s.member_refs[m as usize] = s.member_refs[m as usize].wrapping_add(1);
        } else {
            if !group.remove(&m) {
                return Err(WriteError::NotFound);
            }
            s.member_refs[m as usize] = s.member_refs[m as usize].wrapping_sub(1);
        }
        Ok(())
    }

    /// Every member (handle, action, parameters), in handle order.
    pub fn members(&self, p: usize) -> Vec<(u32, usize, Vec<u64>)> {
        let s = &self.ext.profiles[p];
        s.members.iter().enumerate().filter_map(|(h, m)| m.as_ref().map(|(a, ps)| (h as u32, *a, ps.clone()))).collect()
    }

    /// Every group (handle, member handles), in handle order.
    pub fn groups(&self, p: usize) -> Vec<(u32, Vec<u32>)> {
        let s = &self.ext.profiles[p];
        s.groups
            .iter()
            .enumerate()
            .filter_map(|(h, g)| g.as_ref().map(|g| (h as u32, g.iter().copied().collect())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_the_lowest_free_ones() {
        let mut slots: Vec<Option<u8>> = Vec::new();
        let mut refs = Vec::new();
        assert_eq!(
            [take(&mut slots, &mut refs, 0), take(&mut slots, &mut refs, 1), take(&mut slots, &mut refs, 2)],
            [0, 1, 2]
        );
        slots[1] = None;
        slots[0] = None;
        assert_eq!(take(&mut slots, &mut refs, 3), 0);
        assert_eq!(take(&mut slots, &mut refs, 4), 1);
        assert_eq!(take(&mut slots, &mut refs, 5), 3);
    }

    #[test]
    fn hashes_are_the_catalogue_check_values() {
        // the "123456789" check values of CRC-16/ARC and CRC-32/ISO-HDLC
        assert_eq!(hash(SelectorAlgo::Crc16, b"123456789"), 0xbb3d);
        assert_eq!(hash(SelectorAlgo::Crc32, b"123456789"), 0xcbf4_3926);
        assert_eq!(hash(SelectorAlgo::Identity, &[1, 2, 3]), 0x01_02_03);
        assert_eq!(hash(SelectorAlgo::Identity, &[9, 9, 9, 9, 1, 2, 3, 4, 5]), 0x0102_0304);
    }
}
