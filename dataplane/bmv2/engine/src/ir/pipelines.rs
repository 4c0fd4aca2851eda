//! The ingress and egress pipelines: their tables (keys, next nodes, default and const
//! entries) and conditionals, linked into one control graph each.

use super::build::Builder;
use super::{arr, parse_hex, s, ActionIr, BinOp, CondIr, ConstEntry, Expr, KeyIr, MatchKind, NextIr, Node, TableIr, R};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The tables and conditionals of both pipelines, and where each pipeline starts.
pub(super) struct Controls {
    pub(super) tables: Vec<TableIr>,
    pub(super) conds: Vec<CondIr>,
    pub(super) ingress_init: Option<Node>,
    pub(super) egress_init: Option<Node>,
}

/// A pipeline's tables and conditionals by the names its `next` references use; the
/// indices are global, as the engine keeps both pipelines' nodes in one list each.
struct Nodes<'a> {
    pipeline: &'a str,
    by_name: HashMap<&'a str, Node>,
}

impl<'a> Nodes<'a> {
    fn new(pipeline: &'a str, tables: &'a [Value], conds: &'a [Value], first_table: usize, first_cond: usize) -> Self {
        let mut by_name = HashMap::new();
        for (i, t) in tables.iter().enumerate() {
            by_name.insert(t["name"].as_str().unwrap_or_default(), Node::Table(first_table + i));
        }
        for (i, c) in conds.iter().enumerate() {
            by_name.insert(c["name"].as_str().unwrap_or_default(), Node::Cond(first_cond + i));
        }
        Nodes { pipeline, by_name }
    }

    /// The node a reference names; JSON null ends the control.
    fn get(&self, v: &Value) -> R<Option<Node>> {
        match v.as_str() {
            None => Ok(None),
            Some(n) => self
                .by_name
                .get(n)
                .copied()
                .map(Some)
                .ok_or_else(|| format!("pipeline {}: unknown node {n}", self.pipeline)),
        }
    }
}

impl Builder {
    pub(super) fn pipelines(
        &self,
        raw: &Value,
        actions: &[ActionIr],
        direct_counters: &HashSet<String>,
    ) -> R<Controls> {
        let mut tables = Vec::new();
        let mut conds = Vec::new();
        let mut inits = Vec::new();
        for pl in arr(raw, "pipelines") {
            let ptables = arr(pl, "tables");
            let pconds = arr(pl, "conditionals");
            let nodes = Nodes::new(s(pl, "name")?, ptables, pconds, tables.len(), conds.len());
            inits.push(nodes.get(&pl["init_table"])?);
            for t in ptables {
                tables.push(self.table(t, &nodes, actions, direct_counters)?);
            }
            for c in pconds {
                conds.push(CondIr {
                    expr: self.expr(&c["expression"]).map_err(|e| format!("conditional {}: {e}", c["name"]))?,
                    t: nodes.get(&c["true_next"])?,
                    f: nodes.get(&c["false_next"])?,
                });
            }
        }
        let names: Vec<&str> = arr(raw, "pipelines").iter().map(|p| p["name"].as_str().unwrap_or_default()).collect();
        if names != ["ingress", "egress"] {
            return Err(format!("pipelines {names:?} (v1model has ingress and egress)"));
        }
        Ok(Controls { tables, conds, ingress_init: inits[0], egress_init: inits[1] })
    }

    fn table(&self, t: &Value, nodes: &Nodes, actions: &[ActionIr], direct_counters: &HashSet<String>) -> R<TableIr> {
        let name = s(t, "name")?.to_string();
        let ctx = |e: String| format!("table {name}: {e}");
        if !arr(t, "direct_meters").is_empty() {
            return Err(ctx("a list of direct meters".into()));
        }
        let direct_meter = match t.get("direct_meters").and_then(Value::as_str) {
            None => None,
            Some(m) => match self.direct_meters.get(&name) {
                Some(d) if d.name == m => Some(d.clone()),
                _ => return Err(ctx(format!("direct meter {m} is not bound to this table"))),
            },
        };
        let profile = match s(t, "type")? {
            "simple" => None,
            "indirect" | "indirect_ws" => {
                let p = s(t, "action_profile").map_err(ctx)?;
                Some(*self.profile_index.get(p).ok_or_else(|| ctx(format!("unknown action profile {p}")))?)
            }
            other => return Err(ctx(format!("table type {other}"))),
        };
        let keys = arr(t, "key").iter().map(|k| self.table_key(k, &ctx)).collect::<R<Vec<_>>>()?;
        if keys.len() > 32 {
            return Err(ctx("more than 32 key fields".into()));
        }
        if keys.iter().filter(|k| k.kind == MatchKind::Lpm).count() > 1 {
            return Err(ctx("more than one LPM field".into()));
        }
        let mut acts = Vec::new();
        for id in arr(t, "action_ids") {
            let id = action_id(id);
            acts.push(*self.action_index.get(&id).ok_or_else(|| ctx(format!("unknown action id {id}")))?);
        }
        let next = next_nodes(t, &acts, nodes, &ctx)?;
        let next_tables = &t["next_tables"];
        let miss_next = match next_tables.get("__MISS__") {
            Some(m) => nodes.get(m).map_err(ctx)?,
            None => nodes.get(&t["base_default_next"]).map_err(ctx)?,
        };
        let de = &t["default_entry"];
        let (default_action, default_params, default_const) = if de.is_object() {
            let id = action_id(&de["action_id"]);
            let a = *self.action_index.get(&id).ok_or_else(|| ctx(format!("default action id {id}")))?;
            (a, action_data(de).map_err(ctx)?, de["action_const"].as_bool().unwrap_or(false))
        } else {
            // No default entry: BMv2 runs nothing on a miss; NoAction stands for that.
            let a = acts.first().copied().ok_or_else(|| ctx("no actions".into()))?;
            (a, vec![0; actions[a].param_widths.len()], false)
        };
        let prioritised = keys.iter().any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Range));
        let entries = arr(t, "entries")
            .iter()
            .enumerate()
            .map(|(n, e)| self.const_entry(n, e, &keys, prioritised, &|m: String| ctx(format!("const entry {n}: {m}"))))
            .collect::<R<Vec<_>>>()?;
        Ok(TableIr {
            entries,
            direct_counter: direct_counters.contains(&name),
            profile,
            miss_next,
            direct_meter,
            name,
            keys,
            max_size: t["max_size"].as_u64().unwrap_or(0) as usize,
            actions: acts,
            next,
            default_action,
            default_params,
            default_const,
        })
    }

    fn table_key(&self, k: &Value, ctx: &impl Fn(String) -> String) -> R<KeyIr> {
        let kind = match s(k, "match_type")? {
            "exact" | "valid" => MatchKind::Exact,
            "ternary" => MatchKind::Ternary,
            "lpm" => MatchKind::Lpm,
            "range" => MatchKind::Range,
            other => return Err(ctx(format!("match kind {other}"))),
        };
        let target = &k["target"];
        let mut src = if target.as_array().and_then(|a| a.get(1)).and_then(Value::as_str) == Some("$valid$") {
            Expr::Valid(self.header(target[0].as_str().unwrap_or_default()).map_err(ctx)?)
        } else if let Some((_, w)) = self.wide_dst(&serde_json::json!({"type": "field", "value": target})) {
            // The engine's keys are u64: a table on a wider field takes no entries (`check_key`
            // refuses them), so every lookup misses whatever the key; its value is not read.
            if k.get("mask").is_some_and(|m| !m.is_null()) {
                return Err(ctx(format!("a masked key field of {w} bits")));
            }
            let name = s(k, "name").unwrap_or_default().to_string();
            return Ok(KeyIr { name, kind, src: Expr::Const(0), width: w });
        } else {
            Expr::Field(self.field(target).map_err(ctx)?)
        };
        let width = match src {
            Expr::Field(f) => self.slot_width[f],
            _ => 1,
        };
        // A masked key field (`f & m : exact`): BMv2 matches on the field's masked value.
        if let Some(m) = k.get("mask").and_then(Value::as_str) {
            src = Expr::Bin(BinOp::And, Box::new(src), Box::new(Expr::Const(parse_hex(m).map_err(ctx)?)));
        }
        Ok(KeyIr { name: s(k, "name").unwrap_or_default().to_string(), kind, src, width })
    }

    /// The `n`th of the program's `const entries` of a table, as the engine's table stores it.
    fn const_entry(
        &self,
        n: usize,
        e: &Value,
        keys: &[KeyIr],
        prioritised: bool,
        ctx: &impl Fn(String) -> String,
    ) -> R<ConstEntry> {
        let mk = arr(e, "match_key");
        if mk.len() != keys.len() {
            return Err(ctx(format!("{} key fields for {} keys", mk.len(), keys.len())));
        }
        let mut key = Vec::new();
        let mut plen = 0;
        for (k, m) in keys.iter().zip(mk) {
            let ones = crate::table::full(k.width);
            let part = match k.kind {
                MatchKind::Exact => (hex_u64(m, "key").map_err(ctx)?, ones),
                MatchKind::Ternary => {
                    let mask = hex_u64(m, "mask").map_err(ctx)?;
                    (hex_u64(m, "key").map_err(ctx)? & mask, mask)
                }
                MatchKind::Lpm => {
                    let p = m["prefix_length"].as_u64().ok_or_else(|| ctx("lpm without prefix_length".into()))? as u32;
                    plen = p as i64;
                    let mask = if p == 0 { 0 } else { ones & !(crate::table::full(k.width - p.min(k.width))) };
                    (hex_u64(m, "key").map_err(ctx)? & mask, mask)
                }
                MatchKind::Range => (hex_u64(m, "start").map_err(ctx)?, hex_u64(m, "end").map_err(ctx)?),
            };
            key.push(part);
        }
        // BMv2's priority: the smaller number wins; the engine's: the larger. An LPM
        // table without ternary or range fields ranks by prefix length.
        let prio = if prioritised { (1i64 << 24) - e["priority"].as_i64().unwrap_or(n as i64 + 1) } else { plen };
        let ae = &e["action_entry"];
        let id = action_id(&ae["action_id"]);
        let a = *self.action_index.get(&id).ok_or_else(|| ctx(format!("unknown action id {id}")))?;
        Ok((key, prio, a, action_data(ae).map_err(ctx)?))
    }
}

/// Where the control goes after a table: by hit or miss when the program says so,
/// else by the action that ran.
fn next_nodes(t: &Value, acts: &[usize], nodes: &Nodes, ctx: &impl Fn(String) -> String) -> R<NextIr> {
    let next_tables = t["next_tables"].as_object().ok_or_else(|| ctx("no next_tables".into()))?;
    if next_tables.contains_key("__HIT__") || next_tables.contains_key("__MISS__") {
        return Ok(NextIr::HitMiss(
            nodes.get(next_tables.get("__HIT__").unwrap_or(&Value::Null)).map_err(ctx)?,
            nodes.get(next_tables.get("__MISS__").unwrap_or(&Value::Null)).map_err(ctx)?,
        ));
    }
    let names = arr(t, "actions");
    let mut by = Vec::new();
    for (i, a) in acts.iter().enumerate() {
        let aname = names.get(i).and_then(Value::as_str).unwrap_or_default();
        let n = match next_tables.get(aname) {
            Some(v) => nodes.get(v).map_err(ctx)?,
            None => nodes.get(&t["base_default_next"]).map_err(ctx)?,
        };
        by.push((*a, n));
    }
    Ok(NextIr::ByAction(by))
}

/// An action id of the JSON; a missing one reads as u32::MAX, an id p4c gives no action.
fn action_id(v: &Value) -> u32 {
    v.as_u64().unwrap_or(u64::MAX) as u32
}

/// The parameters of a default or const entry's action.
fn action_data(entry: &Value) -> R<Vec<u64>> {
    arr(entry, "action_data").iter().map(|d| parse_hex(d.as_str().unwrap_or("0")).map(|v| v as u64)).collect()
}

/// A const entry's key part, which must fit the engine's 64-bit fields.
fn hex_u64(v: &Value, k: &str) -> R<u64> {
    let x = parse_hex(s(v, k)?)?;
    u64::try_from(x).map_err(|_| format!("{k} {x} out of range"))
}
