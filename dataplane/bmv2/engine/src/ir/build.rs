//! `build`: the JSON's sections in the order that later ones can resolve the names of
//! earlier ones (actions name calculations and externs, tables name actions). The first
//! refusal found ends the build, so the order also decides which one a program is told.

use super::{
    arr, s, short, ActionIr, ArrayIr, ChecksumIr, DirectMeterIr, HeaderIr, Ir, ProfileIr, SelectorAlgo, StackIr,
    StdSlots, R, VARBIT_INPUT,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Build the executable program. `raw` has passed `lib::check`.
pub fn build(raw: &Value) -> R<Ir> {
    let mut b = Builder::default();
    b.lay_out_headers(raw)?;
    let unions = b.stacks_and_unions(raw)?;
    let union_of = union_of(&unions, b.headers.len());
    let std = b.std_slots()?;
    let (counters, direct_counters) = b.counters(raw)?;
    let registers = b.registers(raw)?;
    let meters = b.meters(raw)?;
    b.calculations(raw)?;
    let checksums = b.checksums(raw)?;
    let actions = b.actions(raw)?;
    let (states, init_state) = b.parser(raw)?;
    let deparse_order = b.deparser(raw)?;
    let profiles = b.profiles(raw)?;
    let mut controls = b.pipelines(raw, &actions, &direct_counters)?;
    let profiles = crate::profiles::bind(profiles, &mut controls.tables)?;
    Ok(Ir {
        headers: b.headers,
        stacks: b.stacks,
        unions,
        union_of,
        slot_width: b.slot_width,
        std,
        states,
        init_state,
        deparse_order,
        actions,
        tables: controls.tables,
        conds: controls.conds,
        ingress_init: controls.ingress_init,
        egress_init: controls.egress_init,
        counters,
        registers,
        meters,
        profiles,
        checksums,
        error_packet_too_short: error_code(raw, "PacketTooShort"),
        error_no_match: error_code(raw, "NoMatch"),
        error_header_too_short: error_code(raw, "HeaderTooShort"),
        error_parser_invalid_argument: error_code(raw, "ParserInvalidArgument"),
        error_stack_out_of_bounds: error_code(raw, "StackOutOfBounds"),
    })
}

/// What the sections built so far tell the later ones: names to indices, and the header
/// layout every field reference and width is looked up in.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) headers: Vec<HeaderIr>,
    /// The width of each fixed field's slot.
    pub(super) slot_width: Vec<u32>,
    pub(super) header_index: HashMap<String, usize>,
    pub(super) field_slot: HashMap<(String, String), usize>,
    pub(super) varbit_fields: HashMap<(String, String), ()>,
    pub(super) action_index: HashMap<u32, usize>,
    pub(super) counter_index: HashMap<String, usize>,
    pub(super) register_index: HashMap<String, usize>,
    pub(super) meter_index: HashMap<String, usize>,
    /// Direct meters by the table they are bound to.
    pub(super) direct_meters: HashMap<String, DirectMeterIr>,
    /// Action profiles by name (index of `Ir::profiles`).
    pub(super) profile_index: HashMap<String, usize>,
    pub(super) stack_index: HashMap<String, usize>,
    pub(super) union_index: HashMap<String, usize>,
    pub(super) stacks: Vec<StackIr>,
    /// Slots of each header's fixed fields, for field offsets into stack elements.
    pub(super) header_slots: Vec<Vec<usize>>,
    pub(super) calc: HashMap<String, Vec<(usize, u32)>>,
    pub(super) calc_algo: HashMap<String, String>,
    /// The slots of signed (`int<N>`) fields: expressions read them sign-extended.
    pub(super) signed_slots: HashSet<usize>,
    /// Fields wider than 64 bits: first slot -> width (see [`super::wide_parts`]).
    pub(super) wide: HashMap<usize, u32>,
    /// Stacks of header unions: name -> (index of their next-index `StackIr`, element
    /// unions' names in index order).
    pub(super) union_stacks: HashMap<String, (usize, Vec<String>)>,
}

impl Builder {
    /// Every header instance with a slot for each of its fixed fields.
    fn lay_out_headers(&mut self, raw: &Value) -> R<()> {
        let mut types: HashMap<String, &Value> = HashMap::new();
        for t in arr(raw, "header_types") {
            types.insert(s(t, "name")?.to_string(), t);
        }
        for h in arr(raw, "headers") {
            let header = self.lay_out_header(h, &types)?;
            self.header_index.insert(header.name.clone(), self.headers.len());
            self.header_slots.push(header.fields.iter().map(|(slot, _)| *slot).collect());
            self.headers.push(header);
        }
        Ok(())
    }

    fn lay_out_header(&mut self, h: &Value, types: &HashMap<String, &Value>) -> R<HeaderIr> {
        let name = s(h, "name")?.to_string();
        let tname = s(h, "header_type")?;
        let t = types.get(tname).ok_or_else(|| format!("header {name}: unknown type {tname}"))?;
        let mut fields = Vec::new();
        let mut fixed_bits = 0;
        let mut varbit_max_bytes = None;
        let tfields = arr(t, "fields");
        for (i, f) in tfields.iter().enumerate() {
            let fname = f[0].as_str().unwrap_or_default().to_string();
            if f[1].as_str() == Some("*") {
                if i + 1 != tfields.len() {
                    return Err(format!("header type {tname}: a varbit field that is not the last"));
                }
                let max = t.get("max_length").and_then(Value::as_u64).ok_or("varbit without max_length")?;
                varbit_max_bytes = Some(max as u32 - fixed_bits / 8);
                self.varbit_fields.insert((name.clone(), fname), ());
                continue;
            }
            let w = f[1].as_u64().ok_or_else(|| format!("header type {tname}: bad width"))? as u32;
            if w > 64 {
                if w > crate::big::MAX_FIELD_BITS {
                    let most = crate::big::MAX_FIELD_BITS;
                    return Err(format!("field {name}.{fname} is {w} bits wide (this engine stores at most {most})"));
                }
                if f.get(2).and_then(Value::as_bool) == Some(true) {
                    return Err(format!("field {name}.{fname} is signed (int<N>) and {w} bits wide (at most 64)"));
                }
                // stored as 64-bit parts in consecutive slots, most significant first: the
                // parser, deparser, header copies and checksums see fields of at most 64 bits
                let first = self.slot_width.len();
                for (slot, pw) in super::wide_parts(first, w) {
                    self.slot_width.push(pw);
                    fields.push((slot, pw));
                }
                self.wide.insert(first, w);
                self.field_slot.insert((name.clone(), fname), first);
                fixed_bits += w;
                continue;
            }
            if f.get(3).and_then(Value::as_bool) == Some(true) {
                return Err(format!("field {name}.{fname} is saturating"));
            }
            let slot = self.slot_width.len();
            if f.get(2).and_then(Value::as_bool) == Some(true) {
                if w == 0 {
                    return Err(format!("field {name}.{fname} is int<0>"));
                }
                self.signed_slots.insert(slot);
            }
            self.slot_width.push(w);
            self.field_slot.insert((name.clone(), fname), slot);
            fields.push((slot, w));
            fixed_bits += w;
        }
        let metadata = h.get("metadata").and_then(Value::as_bool).unwrap_or(false);
        if !metadata && fixed_bits % 8 != 0 {
            return Err(format!("header {name}: {fixed_bits} bits is not a whole number of bytes"));
        }
        let chunks = if metadata { Vec::new() } else { super::chunks(&fields) };
        let placed = super::placed(&fields, &chunks);
        Ok(HeaderIr { name, metadata, fields, fixed_bits, varbit_max_bytes, chunks, placed })
    }

    /// The header stacks (into the builder) and the member headers of each header union.
    fn stacks_and_unions(&mut self, raw: &Value) -> R<Vec<Vec<usize>>> {
        let by_id: HashMap<u64, usize> = arr(raw, "headers")
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.get("id").and_then(Value::as_u64).map(|id| (id, i)))
            .collect();
        for st in arr(raw, "header_stacks") {
            let name = s(st, "name")?.to_string();
            let hs = members(st, "header stack", &by_id)?;
            self.stack_index.insert(name.clone(), self.stacks.len());
            self.stacks.push(StackIr { name, headers: hs });
        }
        let mut unions = Vec::new();
        let mut union_names = HashMap::new();
        for u in arr(raw, "header_unions") {
            let hs = members(u, "header union", &by_id)?;
            self.union_index.insert(s(u, "name")?.to_string(), unions.len());
            if let Some(id) = u.get("id").and_then(Value::as_u64) {
                union_names.insert(id, s(u, "name")?.to_string());
            }
            unions.push(hs);
        }
        // A stack of header unions: its elements are ordinary unions (`u[0]`, `u[1]`, whose
        // members are headers `u[0].a` ...), which everything names directly; what is its
        // own is the next index, kept as a stack's (a `StackIr` without headers). Only the
        // parser's extract into it is executed: its name is no stack's, so every other use
        // (push / pop, copies, `last`, run-time indices) stays refused by name.
        for us in arr(raw, "header_union_stacks") {
            let name = s(us, "name")?.to_string();
            let ids =
                us.get("header_union_ids").and_then(Value::as_array).ok_or("header union stack without unions")?;
            let elems = ids
                .iter()
                .map(|id| id.as_u64().and_then(|id| union_names.get(&id).cloned()))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| format!("header union stack {name}: unknown header union"))?;
            self.union_stacks.insert(name.clone(), (self.stacks.len(), elems));
            self.stacks.push(StackIr { name, headers: Vec::new() });
        }
        Ok(unions)
    }

    /// The v1model standard_metadata fields the engine reads or writes itself.
    fn std_slots(&self) -> R<StdSlots> {
        let slot = |h: &str, f: &str| self.field_slot.get(&(h.to_string(), f.to_string())).copied();
        let need = |h: &str, f: &str| slot(h, f).ok_or_else(|| format!("v1model field {h}.{f} missing"));
        Ok(StdSlots {
            ingress_port: need("standard_metadata", "ingress_port")?,
            egress_spec: need("standard_metadata", "egress_spec")?,
            egress_port: need("standard_metadata", "egress_port")?,
            packet_length: need("standard_metadata", "packet_length")?,
            ingress_global_timestamp: need("standard_metadata", "ingress_global_timestamp")?,
            egress_global_timestamp: slot("standard_metadata", "egress_global_timestamp"),
            enq_timestamp: slot("standard_metadata", "enq_timestamp"),
            deq_timedelta: slot("standard_metadata", "deq_timedelta"),
            parser_error: need("standard_metadata", "parser_error")?,
            checksum_error: slot("standard_metadata", "checksum_error"),
            priority: slot("standard_metadata", "priority"),
            mcast_grp: slot("standard_metadata", "mcast_grp"),
            instance_type: slot("standard_metadata", "instance_type"),
        })
    }

    /// The counter arrays, and the tables that own a direct counter.
    fn counters(&mut self, raw: &Value) -> R<(Vec<ArrayIr>, HashSet<String>)> {
        let mut counters = Vec::new();
        let mut direct_counters = HashSet::new();
        for c in arr(raw, "counter_arrays") {
            let name = s(c, "name")?.to_string();
            let direct = c.get("is_direct").and_then(Value::as_bool).unwrap_or(false);
            if direct {
                direct_counters.insert(s(c, "binding")?.to_string());
            }
            let size = c.get("size").and_then(Value::as_u64).unwrap_or(0) as usize;
            self.counter_index.insert(name.clone(), counters.len());
            counters.push(ArrayIr { name, size, width: 64, bytes: true });
        }
        Ok((counters, direct_counters))
    }

    fn registers(&mut self, raw: &Value) -> R<Vec<ArrayIr>> {
        let mut registers = Vec::new();
        for r in arr(raw, "register_arrays") {
            let name = s(r, "name")?.to_string();
            let width = r.get("bitwidth").and_then(Value::as_u64).unwrap_or(0) as u32;
            if width > 64 {
                return Err(format!("register {name} is {width} bits wide (at most 64)"));
            }
            self.register_index.insert(name.clone(), registers.len());
            registers.push(ArrayIr { name, size: r["size"].as_u64().unwrap_or(0) as usize, width, bytes: false });
        }
        Ok(registers)
    }

    fn meters(&mut self, raw: &Value) -> R<Vec<ArrayIr>> {
        let mut meters = Vec::new();
        for m in arr(raw, "meter_arrays") {
            let name = s(m, "name")?.to_string();
            if m.get("rate_count").and_then(Value::as_u64) != Some(2) {
                return Err(format!("meter {name}: only two-rate (trTCM) meters"));
            }
            let bytes = match s(m, "type")? {
                "bytes" => true,
                "packets" => false,
                other => return Err(format!("meter {name}: type {other}")),
            };
            if m.get("is_direct").and_then(Value::as_bool) == Some(true) {
                // BMv2 runs it on a table hit, not by execute_meter: the table's, not an array
                let table = s(m, "binding").map_err(|e| format!("direct meter {name}: {e}"))?.to_string();
                let target = self.field(&m["result_target"]).map_err(|e| format!("direct meter {name}: {e}"))?;
                self.direct_meters.insert(table, DirectMeterIr { name, bytes, target });
                continue;
            }
            self.meter_index.insert(name.clone(), meters.len());
            meters.push(ArrayIr { name, size: m["size"].as_u64().unwrap_or(0) as usize, width: 2, bytes });
        }
        Ok(meters)
    }

    /// The action profiles of both pipelines; a selector's hash must be one this engine
    /// computes as BMv2 does.
    fn profiles(&mut self, raw: &Value) -> R<Vec<ProfileIr>> {
        let mut out = Vec::new();
        for pl in arr(raw, "pipelines") {
            for ap in arr(pl, "action_profiles") {
                let name = s(ap, "name")?.to_string();
                let selector = match ap.get("selector") {
                    None | Some(Value::Null) => None,
                    Some(sel) => {
                        let algo = match s(sel, "algo")? {
                            "crc16" => SelectorAlgo::Crc16,
                            "crc32" => SelectorAlgo::Crc32,
                            "identity" => SelectorAlgo::Identity,
                            other => {
                                let known = "crc16, crc32, identity";
                                return Err(format!("action selector {name}: hash algorithm {other} (only {known})"));
                            }
                        };
                        let mut inputs = Vec::new();
                        for i in arr(sel, "input") {
                            if s(i, "type")? != "field" {
                                return Err(format!("action selector {name}: selector input {}", short(i)));
                            }
                            let f = self.field(&i["value"]).map_err(|e| format!("action selector {name}: {e}"))?;
                            inputs.push((f, self.slot_width[f]));
                        }
                        Some((algo, inputs))
                    }
                };
                let max_size = ap.get("max_size").and_then(Value::as_u64).unwrap_or(0) as usize;
                self.profile_index.insert(name.clone(), out.len());
                out.push(ProfileIr { name, max_size, selector, actions: Vec::new() });
            }
        }
        Ok(out)
    }

    /// The inputs and algorithm of each calculation, by name, for the checksums and hash
    /// primitives that name it.
    fn calculations(&mut self, raw: &Value) -> R<()> {
        for c in arr(raw, "calculations") {
            let mut inputs = Vec::new();
            for i in arr(c, "input") {
                if s(i, "type")? != "field" {
                    return Err(format!("calculation {}: input {}", s(c, "name")?, short(i)));
                }
                match self.varbit_header(i) {
                    // a varbit field: its header, marked by the width VARBIT_INPUT
                    Some(h) => inputs.push((h?, VARBIT_INPUT)),
                    None => inputs.extend(self.field_parts(&i["value"])?),
                }
            }
            self.calc.insert(s(c, "name")?.to_string(), inputs);
            self.calc_algo.insert(s(c, "name")?.to_string(), s(c, "algo")?.to_string());
        }
        Ok(())
    }

    fn checksums(&self, raw: &Value) -> R<Vec<ChecksumIr>> {
        let mut checksums = Vec::new();
        for c in arr(raw, "checksums") {
            let name = s(c, "name")?;
            if s(c, "type")? != "generic" && s(c, "type")? != "ipv4" {
                return Err(format!("checksum {name}: type {}", s(c, "type")?));
            }
            let target = self.field(&c["target"])?;
            let algo = self.calc_algo.get(s(c, "calculation")?).map(String::as_str).unwrap_or_default();
            if algo != "csum16" {
                return Err(format!("checksum {name}: algorithm {algo}"));
            }
            let inputs = self.calc.get(s(c, "calculation")?).cloned().ok_or("checksum: unknown calculation")?;
            let cond = match c.get("if_cond") {
                None | Some(Value::Null) => None,
                Some(e) => Some(self.expr(e)?),
            };
            checksums.push(ChecksumIr {
                has_varbit: inputs.iter().any(|(_, w)| *w == VARBIT_INPUT),
                target,
                target_width: self.slot_width[target],
                cond,
                inputs,
                verify: c.get("verify").and_then(Value::as_bool).unwrap_or(true),
                update: c.get("update").and_then(Value::as_bool).unwrap_or(true),
            });
        }
        Ok(checksums)
    }

    fn actions(&mut self, raw: &Value) -> R<Vec<ActionIr>> {
        let mut actions = Vec::new();
        for a in arr(raw, "actions") {
            let name = s(a, "name")?.to_string();
            let mut prims = Vec::new();
            for p in arr(a, "primitives") {
                prims.push(self.prim(p).map_err(|e| format!("action {name}: {e}"))?);
            }
            let rd = arr(a, "runtime_data");
            let param_widths = rd.iter().map(|r| r["bitwidth"].as_u64().unwrap_or(0) as u32).collect::<Vec<_>>();
            if let Some(w) = param_widths.iter().find(|w| **w > 64) {
                return Err(format!("action {name}: a {w}-bit parameter (at most 64)"));
            }
            let param_names = rd.iter().map(|r| r["name"].as_str().unwrap_or_default().to_string()).collect();
            let json_id = a["id"].as_u64().unwrap_or(0) as u32;
            self.action_index.insert(json_id, actions.len());
            actions.push(ActionIr { name, json_id, param_widths, param_names, prims });
        }
        Ok(actions)
    }

    /// The headers the deparser emits, in order.
    fn deparser(&self, raw: &Value) -> R<Vec<usize>> {
        let deparser = arr(raw, "deparsers").first().ok_or("no deparser")?;
        if !arr(deparser, "primitives").is_empty() {
            return Err("deparser primitives".into());
        }
        arr(deparser, "order").iter().map(|h| self.header(h.as_str().unwrap_or_default())).collect()
    }
}

/// The headers a stack or union is made of, as indices of `headers`.
fn members(v: &Value, what: &str, by_id: &HashMap<u64, usize>) -> R<Vec<usize>> {
    let name = s(v, "name")?;
    let ids = arr(v, "header_ids");
    if ids.is_empty() {
        return Err(format!("{what} {name} without elements"));
    }
    ids.iter()
        .map(|id| {
            id.as_u64()
                .and_then(|id| by_id.get(&id).copied())
                .ok_or_else(|| format!("{what} {name}: unknown header id {id}"))
        })
        .collect()
}

/// The union each header belongs to, if any.
fn union_of(unions: &[Vec<usize>], headers: usize) -> Vec<Option<usize>> {
    let mut union_of = vec![None; headers];
    for (u, members) in unions.iter().enumerate() {
        for &h in members {
            union_of[h] = Some(u);
        }
    }
    union_of
}

/// The value p4c gave a parser error; 0 (NoError) for one the program does not declare.
fn error_code(raw: &Value, name: &str) -> u32 {
    arr(raw, "errors").iter().find(|e| e[0].as_str() == Some(name)).and_then(|e| e[1].as_u64()).unwrap_or(0) as u32
}
