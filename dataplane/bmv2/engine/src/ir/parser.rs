//! The parser: its states' operations, select keys and transitions.

use super::build::Builder;
use super::{arr, parse_hex, s, short, Expr, ParserOp, Prim, StateIr, Transition, R};
use serde_json::Value;
use std::collections::HashMap;

impl Builder {
    /// The program's one parser: its states and the index of the initial one.
    pub(super) fn parser(&self, raw: &Value) -> R<(Vec<StateIr>, usize)> {
        let parser = arr(raw, "parsers").first().ok_or("no parser")?;
        if arr(raw, "parsers").len() != 1 {
            return Err("more than one parser".into());
        }
        let pstates = arr(parser, "parse_states");
        let state_index: HashMap<&str, usize> =
            pstates.iter().enumerate().map(|(i, st)| (st["name"].as_str().unwrap_or_default(), i)).collect();
        let states = pstates.iter().map(|st| self.parse_state(st, &state_index)).collect::<R<Vec<_>>>()?;
        let init_state = *state_index.get(s(parser, "init_state")?).ok_or("parser: unknown init_state")?;
        Ok((states, init_state))
    }

    fn parse_state(&self, st: &Value, state_index: &HashMap<&str, usize>) -> R<StateIr> {
        let name = s(st, "name")?.to_string();
        let ctx = |e: String| format!("parser state {name}: {e}");
        let ops = arr(st, "parser_ops").iter().map(|op| self.parser_op(op, &ctx)).collect::<R<Vec<_>>>()?;
        let (key, key_bytes) = self.select_key(st, &ctx)?;
        let transitions = arr(st, "transitions")
            .iter()
            .map(|t| transition(t, key_bytes, state_index, &ctx))
            .collect::<R<Vec<_>>>()?;
        Ok(StateIr { name, ops, key, transitions })
    }

    fn parser_op(&self, op: &Value, ctx: &impl Fn(String) -> String) -> R<ParserOp> {
        let p = arr(op, "parameters");
        Ok(match s(op, "op")? {
            "set" => match self.wide_dst(&p[0]) {
                Some((f, w)) => ParserOp::SetWide(Box::new((f, w, self.big_expr(&p[1]).map_err(ctx)?))),
                None => ParserOp::Set(self.dst_field(&p[0]).map_err(ctx)?, self.expr(&p[1]).map_err(ctx)?),
            },
            "extract" if s(&p[0], "type")? == "stack" => {
                let st = self.stack(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                if self.headers[self.stacks[st].headers[0]].varbit_max_bytes.is_some() {
                    return Err(ctx("fixed extract of a varbit header".into()));
                }
                ParserOp::ExtractStack(st)
            }
            "primitive" => {
                let prim = self.prim(p.first().ok_or_else(|| ctx("primitive without a body".into()))?).map_err(ctx)?;
                match prim {
                    Prim::Assign(..)
                    | Prim::AssignVl(..)
                    | Prim::AssignDyn(..)
                    | Prim::AddHeader(_)
                    | Prim::RemoveHeader(_)
                    | Prim::AssignHeader(..)
                    | Prim::AssignUnion(..)
                    | Prim::AssignStack(..)
                    | Prim::Push(..)
                    | Prim::Pop(..) => ParserOp::Prim(Box::new(prim)),
                    other => return Err(ctx(format!("primitive {other:?} in a parser state"))),
                }
            }
            "extract" if s(&p[0], "type")? == "union_stack" => {
                // BMv2's ParserOpExtractUnionStack: member `m` of the union at the next index
                let v =
                    p[0]["value"].as_array().filter(|a| a.len() == 2).ok_or_else(|| ctx("bad union_stack".into()))?;
                let (us, m) = (v[0].as_str().unwrap_or_default(), v[1].as_str().unwrap_or_default());
                let (st, elems) =
                    self.union_stacks.get(us).ok_or_else(|| ctx(format!("unknown header union stack {us}")))?;
                let hs =
                    elems.iter().map(|u| self.header(&format!("{u}.{m}"))).collect::<R<Vec<usize>>>().map_err(ctx)?;
                if hs.iter().any(|h| self.headers[*h].varbit_max_bytes.is_some()) {
                    return Err(ctx("fixed extract of a varbit header".into()));
                }
                ParserOp::ExtractUnionStack(*st, hs.into_boxed_slice())
            }
            "extract" => {
                if s(&p[0], "type")? != "regular" {
                    return Err(ctx(format!("extract into {}", short(&p[0]))));
                }
                let h = self.header(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                if self.headers[h].varbit_max_bytes.is_some() {
                    return Err(ctx("fixed extract of a varbit header".into()));
                }
                ParserOp::Extract(h)
            }
            "extract_VL" if s(&p[0], "type")? == "stack" => {
                let st = self.stack(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                if self.headers[self.stacks[st].headers[0]].varbit_max_bytes.is_none() {
                    return Err(ctx("extract_VL of a header without a varbit field".into()));
                }
                ParserOp::ExtractStackVl(st, self.expr(&p[1]).map_err(ctx)?)
            }
            "advance" => ParserOp::Advance(self.expr(&p[0]).map_err(ctx)?),
            "extract_VL" => {
                if s(&p[0], "type")? != "regular" {
                    return Err(ctx(format!("extract_VL into {}", short(&p[0]))));
                }
                let h = self.header(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                ParserOp::ExtractVl(h, self.expr(&p[1]).map_err(ctx)?)
            }
            "verify" => ParserOp::Verify(self.expr(&p[0]).map_err(ctx)?, self.expr(&p[1]).map_err(ctx)?),
            other => return Err(ctx(format!("op {other}"))),
        })
    }

    /// The select key's parts with their widths in whole bytes, and the bytes of all.
    fn select_key(&self, st: &Value, ctx: &impl Fn(String) -> String) -> R<(Vec<(Expr, u32)>, u32)> {
        let mut key = Vec::new();
        let mut key_bytes = 0;
        for k in arr(st, "transition_key") {
            let mut e = self.expr(k).map_err(ctx)?;
            // BMv2 selects on a field's bytes: a signed one's two's-complement bits
            if let Expr::SField(f, _) = e {
                e = Expr::Field(f);
            }
            let width = match &e {
                Expr::Field(f) => self.slot_width[*f],
                Expr::Lookahead { width, .. } => *width,
                Expr::Valid(_) => 1,
                Expr::Big(inner) => match **inner {
                    Expr::Wide(_, w) => w,
                    _ => return Err(ctx(format!("transition key {}", short(k)))),
                },
                Expr::LastField { stack, offset } => {
                    self.slot_width[self.header_slots[self.stacks[*stack].headers[0]][*offset]]
                }
                _ => return Err(ctx(format!("transition key {}", short(k)))),
            };
            let nbytes = width.div_ceil(8);
            key_bytes += nbytes;
            key.push((e, nbytes));
        }
        // the key is matched as one u128
        if key_bytes > 16 {
            return Err(ctx(format!("a {key_bytes}-byte select key (at most 16)")));
        }
        Ok((key, key_bytes))
    }
}

fn transition(
    t: &Value,
    key_bytes: u32,
    state_index: &HashMap<&str, usize>,
    ctx: &impl Fn(String) -> String,
) -> R<Transition> {
    let next = match t.get("next_state").and_then(Value::as_str) {
        None => None,
        Some(n) => Some(*state_index.get(n).ok_or_else(|| ctx(format!("unknown state {n}")))?),
    };
    let kind = s(t, "type")?;
    let full: u128 = if key_bytes >= 16 { u128::MAX } else { (1u128 << (key_bytes * 8)) - 1 };
    Ok(match kind {
        "default" => Transition { value: 0, mask: 0, default: true, next },
        "hexstr" => {
            let value = parse_hex(s(t, "value")?)? as u128;
            let mask = match t.get("mask").and_then(Value::as_str) {
                Some(m) => parse_hex(m)? as u128,
                None => full,
            };
            Transition { value: value & mask, mask, default: false, next }
        }
        other => return Err(ctx(format!("transition type {other}"))),
    })
}
