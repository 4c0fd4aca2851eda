//! The operands of the JSON (fields, headers, stacks, unions, extern arrays), the
//! expressions over them and the action primitives, resolved to the IR's indices through
//! the builder's name maps. Shared by every section that contains code: actions, parser
//! states, checksums, table keys and conditionals.

use super::build::Builder;
use super::{parse_hex, s, short, BinOp, Expr, HRef, Prim, UnOp, R, VARBIT_INPUT};
use serde_json::Value;
use std::collections::HashMap;

/// A hexstr constant: wider than 128 bits (significant digits), a [`Expr::BigConst`].
fn hexstr(text: &str) -> R<Expr> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let digits = body.trim_start_matches("0x").trim_start_matches("0X").trim_start_matches('0');
    if digits.len() <= 32 {
        return Ok(Expr::Const(parse_hex(text)?));
    }
    if digits.len() > crate::big::BITS as usize / 4 - 1 {
        return Err(format!("a constant of {} hex digits", digits.len()));
    }
    let b = crate::big::Big::from_hex(digits).ok_or_else(|| format!("bad hexstr {text:?}"))?;
    Ok(Expr::BigConst(Box::new(if neg { -b } else { b })))
}

impl Builder {
    /// A field of at most 64 bits (one slot); a wider one is refused, naming the place.
    pub(super) fn field(&self, v: &Value) -> R<usize> {
        let slot = self.any_field(v)?;
        match self.wide.get(&slot) {
            Some(w) => Err(format!(
                "field {} is {w} bits wide, used where this engine takes at most 64 (only expressions, \
                 assignments, checksums, hashes and the parser and deparser take wider ones)",
                v.as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("."))
                    .unwrap_or_default()
            )),
            None => Ok(slot),
        }
    }

    /// A fixed field's (first) slot, whatever its width.
    fn any_field(&self, v: &Value) -> R<usize> {
        let pair = v.as_array().filter(|a| a.len() == 2).ok_or_else(|| format!("bad field ref {}", short(v)))?;
        let h = pair[0].as_str().unwrap_or_default().to_string();
        let f = pair[1].as_str().unwrap_or_default().to_string();
        if self.varbit_fields.contains_key(&(h.clone(), f.clone())) {
            return Err(format!("varbit field {h}.{f} used in an expression"));
        }
        self.field_slot.get(&(h.clone(), f.clone())).copied().ok_or_else(|| format!("unknown field {h}.{f}"))
    }

    /// A field as the (slot, width)s its bits are stored in, most significant first: one for
    /// a field of at most 64 bits, its parts for a wider one. Packed in order they are the
    /// field's bits, as BMv2 packs a calculation's inputs.
    pub(super) fn field_parts(&self, v: &Value) -> R<Vec<(usize, u32)>> {
        let slot = self.any_field(v)?;
        Ok(match self.wide.get(&slot) {
            Some(&w) => super::wide_parts(slot, w).collect(),
            None => vec![(slot, self.slot_width[slot])],
        })
    }

    /// A field of any width as a value: a wide one as [`Expr::Wide`].
    fn field_value(&self, v: &Value) -> R<Expr> {
        let f = self.any_field(v)?;
        Ok(if let Some(&w) = self.wide.get(&f) {
            Expr::Wide(f, w)
        } else if self.signed_slots.contains(&f) {
            Expr::SField(f, self.slot_width[f])
        } else {
            Expr::Field(f)
        })
    }

    pub(super) fn header(&self, name: &str) -> R<usize> {
        self.header_index.get(name).copied().ok_or_else(|| format!("unknown header {name}"))
    }

    /// An expression for a place that reads it; one that reads a wide field or constant is
    /// wrapped as a whole in [`Expr::Big`].
    pub(super) fn expr(&self, v: &Value) -> R<Expr> {
        let e = self.expr_raw(v)?;
        Ok(if e.is_wide() && !matches!(e, Expr::Big(_)) { Expr::Big(Box::new(e)) } else { e })
    }

    fn expr_raw(&self, v: &Value) -> R<Expr> {
        let kind = s(v, "type")?;
        let val = &v["value"];
        Ok(match kind {
            "field" => {
                let pair = val.as_array().ok_or("bad field")?;
                if pair.len() == 2 && pair[1].as_str() == Some("$valid$") {
                    Expr::Valid(self.header(pair[0].as_str().unwrap_or_default())?)
                } else {
                    self.field_value(val)?
                }
            }
            "stack_field" => {
                let pair = val.as_array().filter(|a| a.len() == 2).ok_or("bad stack_field")?;
                let stack = self.stack(pair[0].as_str().unwrap_or_default())?;
                let offset = self.offset_in(stack, pair[1].as_str().unwrap_or_default())?;
                self.unsigned_in(stack, offset)?;
                self.narrow_stack(stack)?;
                Expr::LastField { stack, offset }
            }
            "hexstr" => hexstr(val.as_str().ok_or("bad hexstr")?)?,
            "bool" => Expr::Const(val.as_bool().ok_or("bad bool")? as i128),
            "runtime_data" | "local" => Expr::Runtime(val.as_u64().ok_or("bad runtime_data")? as usize),
            "lookahead" => {
                let a = val.as_array().ok_or("bad lookahead")?;
                let offset = a.first().and_then(Value::as_u64).ok_or("bad lookahead")? as u32;
                let width = a.get(1).and_then(Value::as_u64).ok_or("bad lookahead")? as u32;
                if width > 64 {
                    return Err(format!("lookahead of {width} bits (at most 64)"));
                }
                Expr::Lookahead { offset, width }
            }
            "expression" => {
                if val.get("op").is_some() {
                    self.op(val)?
                } else {
                    self.expr_raw(val)?
                }
            }
            other => return Err(format!("expression operand of type {other:?}")),
        })
    }

    fn op(&self, v: &Value) -> R<Expr> {
        let op = s(v, "op")?;
        let left = || -> R<Box<Expr>> { Ok(Box::new(self.expr_raw(&v["left"])?)) };
        let right = || -> R<Box<Expr>> { Ok(Box::new(self.expr_raw(&v["right"])?)) };
        let bin = |b: BinOp| -> R<Expr> { Ok(Expr::Bin(b, left()?, right()?)) };
        Ok(match op {
            "&" => bin(BinOp::And)?,
            "|" => bin(BinOp::Or)?,
            "^" => bin(BinOp::Xor)?,
            "+" => bin(BinOp::Add)?,
            "-" if v["left"].is_null() => Expr::Un(UnOp::Neg, right()?),
            "-" => bin(BinOp::Sub)?,
            "*" => bin(BinOp::Mul)?,
            "<<" => bin(BinOp::Shl)?,
            ">>" => bin(BinOp::Shr)?,
            "==" | "!=" if self.varbit_header(&v["left"]).is_some() || self.varbit_header(&v["right"]).is_some() => {
                match (self.varbit_header(&v["left"]), self.varbit_header(&v["right"])) {
                    (Some(a), Some(b)) => {
                        let eq = Expr::VarbitEq(a?, b?);
                        if op == "==" {
                            eq
                        } else {
                            Expr::Un(UnOp::Not, Box::new(eq))
                        }
                    }
                    _ => return Err("a varbit field compared with a value that is not one".into()),
                }
            }
            "==" => bin(BinOp::Eq)?,
            "!=" => bin(BinOp::Ne)?,
            "<" => bin(BinOp::Lt)?,
            "<=" => bin(BinOp::Le)?,
            ">" => bin(BinOp::Gt)?,
            ">=" => bin(BinOp::Ge)?,
            "and" => bin(BinOp::LAnd)?,
            "or" => bin(BinOp::LOr)?,
            "not" => Expr::Un(UnOp::Not, right()?),
            "~" => Expr::Un(UnOp::BitNot, right()?),
            "b2d" => Expr::Un(UnOp::B2d, right()?),
            "d2b" => Expr::Un(UnOp::D2b, right()?),
            "valid" => match self.href(&v["right"])? {
                HRef::Fixed(h) => Expr::Valid(h),
                HRef::Dyn(stack, index) => Expr::StackValid { stack, index },
                HRef::Cond(..) => return Err("valid() of a conditional header expression".into()),
            },
            "valid_union" => {
                let u = &v["right"];
                if s(u, "type")? != "header_union" {
                    return Err(format!("valid_union() of {}", short(u)));
                }
                let name = u["value"].as_str().unwrap_or_default();
                Expr::UnionValid(*self.union_index.get(name).ok_or_else(|| format!("unknown header union {name}"))?)
            }
            "access_field" => {
                let (stack, index) = self.deref(&v["left"])?;
                let offset = v["right"].as_u64().ok_or("access_field: bad field offset")? as usize;
                if offset >= self.header_slots[self.stacks[stack].headers[0]].len() {
                    return Err(format!("access_field: offset {offset} of a varbit or missing field"));
                }
                self.unsigned_in(stack, offset)?;
                self.narrow_stack(stack)?;
                Expr::StackField { stack, index: Box::new(index), offset }
            }
            "?" => Expr::Cond(Box::new(self.expr_raw(&v["cond"])?), left()?, right()?),
            "usat_cast" => bin(BinOp::USat)?,
            "sat_cast" => bin(BinOp::SatCast)?,
            "two_comp_mod" => bin(BinOp::TwoCompMod)?,
            other => return Err(format!("expression operator {other:?}")),
        })
    }

    /// The header whose varbit field `v` names, None when `v` is not a varbit field.
    pub(super) fn varbit_header(&self, v: &Value) -> Option<R<usize>> {
        if v.get("type").and_then(Value::as_str) != Some("field") {
            return None;
        }
        let pair = v["value"].as_array().filter(|a| a.len() == 2)?;
        let (h, f) = (pair[0].as_str()?.to_string(), pair[1].as_str()?.to_string());
        self.varbit_fields.contains_key(&(h.clone(), f)).then(|| self.header(&h))
    }

    pub(super) fn stack(&self, name: &str) -> R<usize> {
        self.stack_index.get(name).copied().ok_or_else(|| format!("unknown header stack {name}"))
    }

    /// The offset of a fixed field in the elements of a stack.
    fn offset_in(&self, stack: usize, field: &str) -> R<usize> {
        let h0 = self.stacks[stack].headers[0];
        let slot = self.field_slot.get(&(self.stacks[stack].name.clone() + "[0]", field.to_string()));
        slot.and_then(|sl| self.header_slots[h0].iter().position(|x| x == sl))
            .ok_or_else(|| format!("unknown field {field} of stack {}", self.stacks[stack].name))
    }

    /// Stack elements are read by offset, unsigned: a signed field there is refused.
    fn unsigned_in(&self, stack: usize, offset: usize) -> R<()> {
        let h0 = self.stacks[stack].headers[0];
        if self.signed_slots.contains(&self.header_slots[h0][offset]) {
            return Err(format!(
                "a signed (int<N>) field of stack {} read at a run-time index",
                self.stacks[stack].name
            ));
        }
        Ok(())
    }

    /// Stack elements are read by field offset: elements with a wide field (several slots)
    /// are refused there.
    fn narrow_stack(&self, stack: usize) -> R<()> {
        let h0 = self.stacks[stack].headers[0];
        if self.header_slots[h0].iter().any(|sl| self.wide.contains_key(sl)) {
            return Err(format!(
                "a field of stack {} read by offset, whose elements have a field wider than 64 bits",
                self.stacks[stack].name
            ));
        }
        Ok(())
    }

    /// `dereference_header_stack(stack, index)`, under any wrapping of "expression" nodes.
    fn deref(&self, v: &Value) -> R<(usize, Expr)> {
        let mut v = v;
        while s(v, "type")? == "expression" && v["value"].get("op").is_none() {
            v = &v["value"];
        }
        let e = if s(v, "type")? == "expression" { &v["value"] } else { v };
        if e.get("op").and_then(Value::as_str) != Some("dereference_header_stack") {
            return Err(format!("a header expression {}", short(v)));
        }
        if s(&e["left"], "type")? != "header_stack" {
            return Err(format!("dereference of {}", short(&e["left"])));
        }
        let stack = self.stack(e["left"]["value"].as_str().unwrap_or_default())?;
        Ok((stack, self.expr(&e["right"])?))
    }

    /// A header operand: a named header or a stack element at a run-time index.
    fn href(&self, v: &Value) -> R<HRef> {
        match s(v, "type")? {
            "header" => Ok(HRef::Fixed(self.header(v["value"].as_str().unwrap_or_default())?)),
            "expression" => {
                let mut e = v;
                while s(e, "type")? == "expression" && e["value"].get("op").is_none() {
                    e = &e["value"];
                }
                if e["value"].get("op").and_then(Value::as_str) == Some("?") {
                    let c = &e["value"];
                    return Ok(HRef::Cond(
                        Box::new(self.expr(&c["cond"])?),
                        Box::new(self.href(&c["left"])?),
                        Box::new(self.href(&c["right"])?),
                    ));
                }
                let (stack, index) = self.deref(v)?;
                Ok(HRef::Dyn(stack, Box::new(index)))
            }
            other => Err(format!("a header operand of type {other}")),
        }
    }

    fn stack_param(&self, v: &Value) -> R<usize> {
        if s(v, "type")? != "header_stack" && s(v, "type")? != "stack" {
            return Err(format!("expected a header stack, got {}", short(v)));
        }
        self.stack(v["value"].as_str().unwrap_or_default())
    }

    fn union_param(&self, v: &Value) -> R<usize> {
        if s(v, "type")? != "header_union" {
            return Err(format!("expected a header union, got {}", short(v)));
        }
        let name = v["value"].as_str().unwrap_or_default();
        self.union_index.get(name).copied().ok_or_else(|| format!("unknown header union {name}"))
    }

    fn array_ref(&self, v: &Value, kind: &str, index: &HashMap<String, usize>) -> R<usize> {
        if s(v, "type")? != kind {
            return Err(format!("expected a {kind}, got {}", short(v)));
        }
        let name = v["value"].as_str().unwrap_or_default();
        index.get(name).copied().ok_or_else(|| format!("unknown {kind} {name}"))
    }

    /// An expression evaluated over [`crate::big::Big`] whatever it reads (the value of an
    /// assignment to a wide field).
    pub(super) fn big_expr(&self, v: &Value) -> R<Expr> {
        Ok(match self.expr_raw(v)? {
            e @ Expr::Big(_) => e,
            e => Expr::Big(Box::new(e)),
        })
    }

    /// A wide field an assignment writes: (first slot, width), None for any other place.
    pub(super) fn wide_dst(&self, v: &Value) -> Option<(usize, u32)> {
        if v.get("type").and_then(Value::as_str) != Some("field") {
            return None;
        }
        let f = self.any_field(&v["value"]).ok()?;
        self.wide.get(&f).map(|w| (f, *w))
    }

    pub(super) fn dst_field(&self, v: &Value) -> R<usize> {
        if s(v, "type")? != "field" {
            return Err(format!("assignment to {} (only fields)", short(v)));
        }
        self.field(&v["value"])
    }

    pub(super) fn prim(&self, p: &Value) -> R<Prim> {
        let op = s(p, "op")?;
        let a = p["parameters"].as_array().ok_or("primitive without parameters")?;
        let arg = |i: usize| a.get(i).ok_or_else(|| format!("{op}: missing parameter {i}"));
        Ok(match op {
            "assign" => match self.expr_raw(arg(0)?)? {
                Expr::Field(f) | Expr::SField(f, _) => Prim::Assign(f, self.expr(arg(1)?)?),
                Expr::Wide(f, w) => Prim::AssignWide(Box::new((f, w, self.big_expr(arg(1)?)?))),
                Expr::StackField { stack, index, offset } => {
                    Prim::AssignDyn(Box::new((stack, *index, offset, self.expr(arg(1)?)?)))
                }
                _ => return Err(format!("assignment to {} (only fields)", short(arg(0)?))),
            },
            "assign_header" => Prim::AssignHeader(self.href(arg(0)?)?, self.href(arg(1)?)?),
            "assign_union" => Prim::AssignUnion(self.union_param(arg(0)?)?, self.union_param(arg(1)?)?),
            "assign_header_stack" => Prim::AssignStack(self.stack_param(arg(0)?)?, self.stack_param(arg(1)?)?),
            "push" => Prim::Push(self.stack_param(arg(0)?)?, self.expr(arg(1)?)?),
            "pop" => Prim::Pop(self.stack_param(arg(0)?)?, self.expr(arg(1)?)?),
            "exit" => Prim::Exit,
            "modify_field_with_hash_based_offset" => {
                let calc = &arg(2)?["value"];
                let name = calc.as_str().unwrap_or_default();
                let algo = self.calc_algo.get(name).map(String::as_str).unwrap_or_default();
                if algo != "crc16" {
                    return Err(format!("hash algorithm {algo:?} (calculation {name})"));
                }
                let inputs = self.calc.get(name).cloned().ok_or_else(|| format!("unknown calculation {name}"))?;
                if inputs.iter().any(|(_, w)| *w == VARBIT_INPUT) {
                    return Err(format!("calculation {name}: a varbit input to a hash"));
                }
                Prim::HashOffset(Box::new((self.dst_field(arg(0)?)?, self.expr(arg(1)?)?, inputs, self.expr(arg(3)?)?)))
            }
            "assign_VL" => {
                let (d, s) = (self.varbit_header(arg(0)?), self.varbit_header(arg(1)?));
                match (d, s) {
                    (Some(d), Some(s)) => Prim::AssignVl(d?, s?),
                    _ => return Err("assign_VL of fields that are not varbit".into()),
                }
            }
            "count" => Prim::Count(self.array_ref(arg(0)?, "counter_array", &self.counter_index)?, self.expr(arg(1)?)?),
            "execute_meter" => Prim::ExecuteMeter(
                self.array_ref(arg(0)?, "meter_array", &self.meter_index)?,
                self.expr(arg(1)?)?,
                self.dst_field(arg(2)?)?,
            ),
            "mark_to_drop" => Prim::MarkToDrop,
            "register_read" => Prim::RegisterRead(
                self.dst_field(arg(0)?)?,
                self.array_ref(arg(1)?, "register_array", &self.register_index)?,
                self.expr(arg(2)?)?,
            ),
            "register_write" => Prim::RegisterWrite(
                self.array_ref(arg(0)?, "register_array", &self.register_index)?,
                self.expr(arg(1)?)?,
                self.expr(arg(2)?)?,
            ),
            "add_header" => Prim::AddHeader(self.href(arg(0)?)?),
            "remove_header" => Prim::RemoveHeader(self.href(arg(0)?)?),
            other => return Err(format!("primitive {other:?}")),
        })
    }
}
