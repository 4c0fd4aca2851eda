//! The executable form of a BMv2 JSON program: names resolved to indices once, at load,
//! so that running a packet touches only vectors. Everything the interpreter cannot run
//! is refused here (or earlier, in `lib::check`) with the place named.

use serde_json::Value;
use std::collections::HashMap;

/// An expression as p4c emits it. Values are evaluated as i128 with wrapping arithmetic:
/// p4c masks every bit<N> result explicitly (`& 0xff..`), so this equals BMv2's bignum
/// arithmetic for all widths up to 64 bits, the widest field this engine stores.
#[derive(Debug, Clone)]
pub enum Expr {
    Const(i128),
    Field(usize),
    Valid(usize),
    Runtime(usize),
    Lookahead {
        offset: u32,
        width: u32,
    },
    Un(UnOp, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `stack[index].field` with a run-time index (dereference_header_stack + access_field):
    /// the field at `offset` of the element's header type.
    StackField {
        stack: usize,
        index: Box<Expr>,
        offset: usize,
    },
    /// `stack[index].isValid()` with a run-time index.
    StackValid {
        stack: usize,
        index: Box<Expr>,
    },
    /// `stack.last.field` (the element below the stack's next index).
    LastField {
        stack: usize,
        offset: usize,
    },
    /// `union.isValid()`: any member valid.
    UnionValid(usize),
    /// `a.v == b.v` of two headers' varbit fields (values compared, as BMv2's Data).
    VarbitEq(usize, usize),
}

/// A header a primitive names: a fixed one, or a stack element chosen at run time.
#[derive(Debug, Clone)]
pub enum HRef {
    Fixed(usize),
    Dyn(usize, Box<Expr>),
    /// `cond ? a : b` of headers.
    Cond(Box<Expr>, Box<HRef>, Box<HRef>),
}

#[derive(Debug, Clone, Copy)]
pub enum UnOp {
    Not,
    BitNot,
    Neg,
    B2d,
    D2b,
}

#[derive(Debug, Clone, Copy)]
pub enum BinOp {
    And,
    Or,
    Xor,
    Add,
    Sub,
    Mul,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LAnd,
    LOr,
    /// usat_cast(x, width): x clamped to 0 ..= 2^width - 1 (p4c's `|+|` / `|-|` on bit<N>).
    USat,
}

#[derive(Debug, Clone)]
pub struct HeaderIr {
    pub name: String,
    pub metadata: bool,
    /// Fixed-width fields in order: (slot, width in bits).
    pub fields: Vec<(usize, u32)>,
    /// Bits of the fixed fields.
    pub fixed_bits: u32,
    /// A trailing varbit field: its maximum length in bytes.
    pub varbit_max_bytes: Option<u32>,
}

#[derive(Debug, Clone)]
pub enum ParserOp {
    Set(usize, Expr),
    Extract(usize),
    ExtractVl(usize, Expr),
    /// Extract into a stack's next element (StackOutOfBounds when it is full).
    ExtractStack(usize),
    ExtractStackVl(usize, Expr),
    /// advance(bits): skip bits of the packet (whole bytes).
    Advance(Expr),
    Verify(Expr, Expr),
    /// An action primitive inside a parser state (header copies, setValid / setInvalid),
    /// boxed: the parser walks its ops in place.
    Prim(Box<Prim>),
}

#[derive(Debug, Clone)]
pub struct Transition {
    pub value: u128,
    pub mask: u128,
    pub default: bool,
    pub next: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct StateIr {
    pub name: String,
    pub ops: Vec<ParserOp>,
    /// Key parts and their widths in whole bytes, as BMv2 concatenates them.
    pub key: Vec<(Expr, u32)>,
    pub transitions: Vec<Transition>,
}

#[derive(Debug, Clone)]
pub enum Prim {
    Assign(usize, Expr),
    Count(usize, Expr),
    ExecuteMeter(usize, Expr, usize),
    MarkToDrop,
    RegisterRead(usize, usize, Expr),
    RegisterWrite(usize, Expr, Expr),
    AddHeader(HRef),
    RemoveHeader(HRef),
    /// `stack[index].field = value` with a run-time index.
    AssignDyn(Box<(usize, Expr, usize, Expr)>),
    /// A header copy: the source's validity and, when valid, its fields.
    AssignHeader(HRef, HRef),
    /// A union copy, member by member.
    AssignUnion(usize, usize),
    /// A stack copy: next index and every element.
    AssignStack(usize, usize),
    /// push_front / pop_front of P4-16 (BMv2's StackP4_16).
    Push(usize, Expr),
    Pop(usize, Expr),
    /// The packet leaves the current control after this action.
    Exit,
    /// A varbit field copied (destination header, source header).
    AssignVl(usize, usize),
    /// dst = base + crc16(inputs) % size (v1model's hash with HashAlgorithm.crc16), boxed:
    /// a large variant would widen every primitive the per-packet loop walks.
    HashOffset(Box<HashIr>),
}

/// A hash primitive: (destination slot, base, input (slot, width)s, size).
pub type HashIr = (usize, Expr, Vec<(usize, u32)>, Expr);

/// A const entry: (key as the engine's table stores it, priority, action, parameters).
pub type ConstEntry = (Vec<(u64, u64)>, i64, usize, Vec<u64>);

#[derive(Debug, Clone)]
pub struct StackIr {
    pub name: String,
    /// Element headers, index order.
    pub headers: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct ActionIr {
    pub name: String,
    pub json_id: u32,
    pub param_widths: Vec<u32>,
    pub param_names: Vec<String>,
    pub prims: Vec<Prim>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Ternary,
    Lpm,
    Range,
}

#[derive(Debug, Clone)]
pub struct KeyIr {
    pub name: String,
    pub kind: MatchKind,
    pub src: Expr,
    pub width: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Table(usize),
    Cond(usize),
}

#[derive(Debug, Clone)]
pub enum NextIr {
    /// Next node per action index (global), None = end of the control. A short list
    /// scanned per packet: a table has a few actions, and hashing cost more than the scan.
    ByAction(Vec<(usize, Option<Node>)>),
    HitMiss(Option<Node>, Option<Node>),
}

#[derive(Debug, Clone)]
pub struct TableIr {
    pub name: String,
    pub keys: Vec<KeyIr>,
    pub max_size: usize,
    /// Global action indices the table may run, in JSON order.
    pub actions: Vec<usize>,
    pub next: NextIr,
    pub default_action: usize,
    pub default_params: Vec<u64>,
    pub default_const: bool,
    pub direct_counter: bool,
    /// The program's `const entries`: (key as the engine's table stores it, priority
    /// (larger wins), action, parameters), installed when the engine is built.
    pub entries: Vec<ConstEntry>,
}

#[cfg(test)]
impl TableIr {
    /// A table "t" matching on `keys`, running action 0 on a hit and by default: what the
    /// engine's table tests need around the match kinds they exercise.
    pub(crate) fn for_test(keys: Vec<KeyIr>, max_size: usize) -> TableIr {
        TableIr {
            name: "t".into(),
            keys,
            max_size,
            actions: vec![0],
            next: NextIr::HitMiss(None, None),
            default_action: 0,
            default_params: vec![],
            default_const: false,
            direct_counter: false,
            entries: vec![],
        }
    }
}

#[derive(Debug, Clone)]
pub struct CondIr {
    pub expr: Expr,
    pub t: Option<Node>,
    pub f: Option<Node>,
}

#[derive(Debug, Clone)]
pub struct ArrayIr {
    pub name: String,
    pub size: usize,
    pub width: u32,
    /// Meters: counts bytes (true) or packets.
    pub bytes: bool,
}

#[derive(Debug, Clone)]
pub struct ChecksumIr {
    pub target: usize,
    pub target_width: u32,
    pub cond: Option<Expr>,
    /// (slot, width) of each input field, packed in order.
    pub inputs: Vec<(usize, u32)>,
    /// An input is a varbit field ((header, [`VARBIT_INPUT`])): summed through a buffer.
    pub has_varbit: bool,
    pub verify: bool,
    pub update: bool,
}

/// The width that marks a checksum input as a header's varbit field.
pub const VARBIT_INPUT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
pub struct StdSlots {
    pub ingress_port: usize,
    pub egress_spec: usize,
    pub egress_port: usize,
    pub packet_length: usize,
    pub ingress_global_timestamp: usize,
    pub egress_global_timestamp: Option<usize>,
    /// Set at egress from the packet's enqueue instant (BMv2: the traffic manager's).
    pub enq_timestamp: Option<usize>,
    pub deq_timedelta: Option<usize>,
    pub parser_error: usize,
    pub checksum_error: Option<usize>,
    pub priority: Option<usize>,
    pub mcast_grp: Option<usize>,
    pub instance_type: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct Ir {
    pub headers: Vec<HeaderIr>,
    pub stacks: Vec<StackIr>,
    /// Member headers of each header union.
    pub unions: Vec<Vec<usize>>,
    /// The union each header belongs to, if any.
    pub union_of: Vec<Option<usize>>,
    pub slot_width: Vec<u32>,
    pub std: StdSlots,
    pub states: Vec<StateIr>,
    pub init_state: usize,
    pub deparse_order: Vec<usize>,
    pub actions: Vec<ActionIr>,
    pub tables: Vec<TableIr>,
    pub conds: Vec<CondIr>,
    pub ingress_init: Option<Node>,
    pub egress_init: Option<Node>,
    pub counters: Vec<ArrayIr>,
    pub registers: Vec<ArrayIr>,
    pub meters: Vec<ArrayIr>,
    pub checksums: Vec<ChecksumIr>,
    pub error_packet_too_short: u32,
    pub error_no_match: u32,
    pub error_header_too_short: u32,
    pub error_parser_invalid_argument: u32,
    pub error_stack_out_of_bounds: u32,
}

type R<T> = Result<T, String>;

fn s<'a>(v: &'a Value, k: &str) -> R<&'a str> {
    v.get(k).and_then(Value::as_str).ok_or_else(|| format!("missing string {k:?} in {}", short(v)))
}

fn short(v: &Value) -> String {
    let t = v.to_string();
    if t.len() > 160 {
        format!("{}…", &t[..160])
    } else {
        t
    }
}

pub fn parse_hex(text: &str) -> R<i128> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let digits = body.trim_start_matches("0x").trim_start_matches("0X");
    // Wider than 128 bits: keep the low bits (only masks of wide fields could be that wide,
    // and those are refused where a field is wider than 64).
    let start = digits.len().saturating_sub(32);
    let v = u128::from_str_radix(&digits[start..], 16).map_err(|e| format!("bad hexstr {text:?}: {e}"))? as i128;
    Ok(if neg { v.wrapping_neg() } else { v })
}

struct Builder<'a> {
    raw: &'a Value,
    header_index: HashMap<String, usize>,
    field_slot: HashMap<(String, String), usize>,
    varbit_fields: HashMap<(String, String), ()>,
    action_index: HashMap<u32, usize>,
    counter_index: HashMap<String, usize>,
    register_index: HashMap<String, usize>,
    meter_index: HashMap<String, usize>,
    stack_index: HashMap<String, usize>,
    union_index: HashMap<String, usize>,
    stacks: Vec<StackIr>,
    /// Slots of each header's fixed fields, for field offsets into stack elements.
    header_slots: Vec<Vec<usize>>,
    calc: HashMap<String, Vec<(usize, u32)>>,
    calc_algo: HashMap<String, String>,
}

impl<'a> Builder<'a> {
    fn field(&self, v: &Value) -> R<usize> {
        let pair = v.as_array().filter(|a| a.len() == 2).ok_or_else(|| format!("bad field ref {}", short(v)))?;
        let h = pair[0].as_str().unwrap_or_default().to_string();
        let f = pair[1].as_str().unwrap_or_default().to_string();
        if self.varbit_fields.contains_key(&(h.clone(), f.clone())) {
            return Err(format!("varbit field {h}.{f} used in an expression"));
        }
        self.field_slot.get(&(h.clone(), f.clone())).copied().ok_or_else(|| format!("unknown field {h}.{f}"))
    }

    fn header(&self, name: &str) -> R<usize> {
        self.header_index.get(name).copied().ok_or_else(|| format!("unknown header {name}"))
    }

    fn expr(&self, v: &Value) -> R<Expr> {
        let kind = s(v, "type")?;
        let val = &v["value"];
        Ok(match kind {
            "field" => {
                let pair = val.as_array().ok_or("bad field")?;
                if pair.len() == 2 && pair[1].as_str() == Some("$valid$") {
                    Expr::Valid(self.header(pair[0].as_str().unwrap_or_default())?)
                } else {
                    Expr::Field(self.field(val)?)
                }
            }
            "stack_field" => {
                let pair = val.as_array().filter(|a| a.len() == 2).ok_or("bad stack_field")?;
                let stack = self.stack(pair[0].as_str().unwrap_or_default())?;
                let offset = self.offset_in(stack, pair[1].as_str().unwrap_or_default())?;
                Expr::LastField { stack, offset }
            }
            "hexstr" => Expr::Const(parse_hex(val.as_str().ok_or("bad hexstr")?)?),
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
                    self.expr(val)?
                }
            }
            other => return Err(format!("expression operand of type {other:?}")),
        })
    }

    fn op(&self, v: &Value) -> R<Expr> {
        let op = s(v, "op")?;
        let left = || -> R<Box<Expr>> { Ok(Box::new(self.expr(&v["left"])?)) };
        let right = || -> R<Box<Expr>> { Ok(Box::new(self.expr(&v["right"])?)) };
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
                Expr::StackField { stack, index: Box::new(index), offset }
            }
            "?" => Expr::Cond(Box::new(self.expr(&v["cond"])?), left()?, right()?),
            "usat_cast" => bin(BinOp::USat)?,
            other => return Err(format!("expression operator {other:?}")),
        })
    }

    /// The header whose varbit field `v` names, None when `v` is not a varbit field.
    fn varbit_header(&self, v: &Value) -> Option<R<usize>> {
        if v.get("type").and_then(Value::as_str) != Some("field") {
            return None;
        }
        let pair = v["value"].as_array().filter(|a| a.len() == 2)?;
        let (h, f) = (pair[0].as_str()?.to_string(), pair[1].as_str()?.to_string());
        self.varbit_fields.contains_key(&(h.clone(), f)).then(|| self.header(&h))
    }

    fn stack(&self, name: &str) -> R<usize> {
        self.stack_index.get(name).copied().ok_or_else(|| format!("unknown header stack {name}"))
    }

    /// The offset of a fixed field in the elements of a stack.
    fn offset_in(&self, stack: usize, field: &str) -> R<usize> {
        let h0 = self.stacks[stack].headers[0];
        let slot = self.field_slot.get(&(self.stacks[stack].name.clone() + "[0]", field.to_string()));
        slot.and_then(|sl| self.header_slots[h0].iter().position(|x| x == sl))
            .ok_or_else(|| format!("unknown field {field} of stack {}", self.stacks[stack].name))
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

    fn dst_field(&self, v: &Value) -> R<usize> {
        if s(v, "type")? != "field" {
            return Err(format!("assignment to {} (only fields)", short(v)));
        }
        self.field(&v["value"])
    }

    fn prim(&self, p: &Value) -> R<Prim> {
        let op = s(p, "op")?;
        let a = p["parameters"].as_array().ok_or("primitive without parameters")?;
        let arg = |i: usize| a.get(i).ok_or_else(|| format!("{op}: missing parameter {i}"));
        Ok(match op {
            "assign" => match self.expr(arg(0)?)? {
                Expr::Field(f) => Prim::Assign(f, self.expr(arg(1)?)?),
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

fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// Build the executable program. `raw` has passed `lib::check`.
pub fn build(raw: &Value) -> R<Ir> {
    // ---- headers and field slots ----
    let mut types: HashMap<String, &Value> = HashMap::new();
    for t in arr(raw, "header_types") {
        types.insert(s(t, "name")?.to_string(), t);
    }
    let mut b = Builder {
        raw,
        header_index: HashMap::new(),
        field_slot: HashMap::new(),
        varbit_fields: HashMap::new(),
        action_index: HashMap::new(),
        counter_index: HashMap::new(),
        register_index: HashMap::new(),
        meter_index: HashMap::new(),
        stack_index: HashMap::new(),
        union_index: HashMap::new(),
        stacks: Vec::new(),
        header_slots: Vec::new(),
        calc: HashMap::new(),
        calc_algo: HashMap::new(),
    };
    let mut headers = Vec::new();
    let mut slot_width = Vec::new();
    for h in arr(raw, "headers") {
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
                b.varbit_fields.insert((name.clone(), fname), ());
                continue;
            }
            let w = f[1].as_u64().ok_or_else(|| format!("header type {tname}: bad width"))? as u32;
            if w > 64 {
                return Err(format!("field {name}.{fname} is {w} bits wide (this engine stores at most 64)"));
            }
            if f.get(2).and_then(Value::as_bool) == Some(true) {
                return Err(format!("field {name}.{fname} is signed (int<N>)"));
            }
            let slot = slot_width.len();
            slot_width.push(w);
            b.field_slot.insert((name.clone(), fname), slot);
            fields.push((slot, w));
            fixed_bits += w;
        }
        let metadata = h.get("metadata").and_then(Value::as_bool).unwrap_or(false);
        if !metadata && fixed_bits % 8 != 0 {
            return Err(format!("header {name}: {fixed_bits} bits is not a whole number of bytes"));
        }
        b.header_index.insert(name.clone(), headers.len());
        b.header_slots.push(fields.iter().map(|(slot, _)| *slot).collect());
        headers.push(HeaderIr { name, metadata, fields, fixed_bits, varbit_max_bytes });
    }
    // ---- header stacks and unions ----
    let by_id: HashMap<u64, usize> = arr(raw, "headers")
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.get("id").and_then(Value::as_u64).map(|id| (id, i)))
        .collect();
    let members = |v: &Value, what: &str| -> R<Vec<usize>> {
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
    };
    for st in arr(raw, "header_stacks") {
        let name = s(st, "name")?.to_string();
        let hs = members(st, "header stack")?;
        b.stack_index.insert(name.clone(), b.stacks.len());
        b.stacks.push(StackIr { name, headers: hs });
    }
    let mut unions = Vec::new();
    let mut union_of = vec![None; headers.len()];
    for u in arr(raw, "header_unions") {
        let hs = members(u, "header union")?;
        for &h in &hs {
            union_of[h] = Some(unions.len());
        }
        b.union_index.insert(s(u, "name")?.to_string(), unions.len());
        unions.push(hs);
    }
    if let Some(us) = arr(raw, "header_union_stacks").first() {
        return Err(format!("header union stack {} (stacks of header unions)", s(us, "name")?));
    }
    let slot = |h: &str, f: &str| b.field_slot.get(&(h.to_string(), f.to_string())).copied();
    let need = |h: &str, f: &str| slot(h, f).ok_or_else(|| format!("v1model field {h}.{f} missing"));
    let std = StdSlots {
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
    };

    // ---- externs ----
    let mut counters = Vec::new();
    let mut direct_of_table: HashMap<String, usize> = HashMap::new();
    for c in arr(raw, "counter_arrays") {
        let name = s(c, "name")?.to_string();
        let direct = c.get("is_direct").and_then(Value::as_bool).unwrap_or(false);
        if direct {
            let t = s(c, "binding")?.to_string();
            direct_of_table.insert(t, counters.len());
        }
        let size = c.get("size").and_then(Value::as_u64).unwrap_or(0) as usize;
        b.counter_index.insert(name.clone(), counters.len());
        counters.push(ArrayIr { name, size, width: 64, bytes: true });
    }
    let mut registers = Vec::new();
    for r in arr(raw, "register_arrays") {
        let name = s(r, "name")?.to_string();
        let width = r.get("bitwidth").and_then(Value::as_u64).unwrap_or(0) as u32;
        if width > 64 {
            return Err(format!("register {name} is {width} bits wide (at most 64)"));
        }
        b.register_index.insert(name.clone(), registers.len());
        registers.push(ArrayIr { name, size: r["size"].as_u64().unwrap_or(0) as usize, width, bytes: false });
    }
    let mut meters = Vec::new();
    for m in arr(raw, "meter_arrays") {
        let name = s(m, "name")?.to_string();
        if m.get("is_direct").and_then(Value::as_bool) == Some(true) {
            return Err(format!("meter {name}: direct meters"));
        }
        if m.get("rate_count").and_then(Value::as_u64) != Some(2) {
            return Err(format!("meter {name}: only two-rate (trTCM) meters"));
        }
        let bytes = match s(m, "type")? {
            "bytes" => true,
            "packets" => false,
            other => return Err(format!("meter {name}: type {other}")),
        };
        b.meter_index.insert(name.clone(), meters.len());
        meters.push(ArrayIr { name, size: m["size"].as_u64().unwrap_or(0) as usize, width: 2, bytes });
    }

    // ---- checksums ----
    for c in arr(raw, "calculations") {
        let mut inputs = Vec::new();
        for i in arr(c, "input") {
            if s(i, "type")? != "field" {
                return Err(format!("calculation {}: input {}", s(c, "name")?, short(i)));
            }
            match b.varbit_header(i) {
                // a varbit field: its header, marked by the width VARBIT_INPUT
                Some(h) => inputs.push((h?, VARBIT_INPUT)),
                None => {
                    let f = b.field(&i["value"])?;
                    inputs.push((f, slot_width[f]));
                }
            }
        }
        b.calc.insert(s(c, "name")?.to_string(), inputs);
        b.calc_algo.insert(s(c, "name")?.to_string(), s(c, "algo")?.to_string());
    }
    let mut checksums = Vec::new();
    for c in arr(raw, "checksums") {
        let name = s(c, "name")?;
        if s(c, "type")? != "generic" && s(c, "type")? != "ipv4" {
            return Err(format!("checksum {name}: type {}", s(c, "type")?));
        }
        let target = b.field(&c["target"])?;
        let algo = b.calc_algo.get(s(c, "calculation")?).map(String::as_str).unwrap_or_default();
        if algo != "csum16" {
            return Err(format!("checksum {name}: algorithm {algo}"));
        }
        let inputs = b.calc.get(s(c, "calculation")?).cloned().ok_or("checksum: unknown calculation")?;
        let cond = match c.get("if_cond") {
            None | Some(Value::Null) => None,
            Some(e) => Some(b.expr(e)?),
        };
        checksums.push(ChecksumIr {
            has_varbit: inputs.iter().any(|(_, w)| *w == VARBIT_INPUT),
            target,
            target_width: slot_width[target],
            cond,
            inputs,
            verify: c.get("verify").and_then(Value::as_bool).unwrap_or(true),
            update: c.get("update").and_then(Value::as_bool).unwrap_or(true),
        });
    }

    // ---- actions ----
    let mut actions = Vec::new();
    for a in arr(raw, "actions") {
        let name = s(a, "name")?.to_string();
        let mut prims = Vec::new();
        for p in arr(a, "primitives") {
            prims.push(b.prim(p).map_err(|e| format!("action {name}: {e}"))?);
        }
        let rd = arr(a, "runtime_data");
        let param_widths = rd.iter().map(|r| r["bitwidth"].as_u64().unwrap_or(0) as u32).collect::<Vec<_>>();
        if let Some(w) = param_widths.iter().find(|w| **w > 64) {
            return Err(format!("action {name}: a {w}-bit parameter (at most 64)"));
        }
        let param_names = rd.iter().map(|r| r["name"].as_str().unwrap_or_default().to_string()).collect();
        let json_id = a["id"].as_u64().unwrap_or(0) as u32;
        b.action_index.insert(json_id, actions.len());
        actions.push(ActionIr { name, json_id, param_widths, param_names, prims });
    }

    // ---- parser ----
    let parser = arr(raw, "parsers").first().ok_or("no parser")?;
    if arr(raw, "parsers").len() != 1 {
        return Err("more than one parser".into());
    }
    let pstates = arr(parser, "parse_states");
    let state_index: HashMap<&str, usize> =
        pstates.iter().enumerate().map(|(i, st)| (st["name"].as_str().unwrap_or_default(), i)).collect();
    let mut states = Vec::new();
    for st in pstates {
        let sname = s(st, "name")?.to_string();
        let ctx = |e: String| format!("parser state {sname}: {e}");
        let mut ops = Vec::new();
        for op in arr(st, "parser_ops") {
            let p = arr(op, "parameters");
            let o = match s(op, "op")? {
                "set" => ParserOp::Set(b.dst_field(&p[0]).map_err(ctx)?, b.expr(&p[1]).map_err(ctx)?),
                "extract" if s(&p[0], "type")? == "stack" => {
                    let st = b.stack(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                    if headers[b.stacks[st].headers[0]].varbit_max_bytes.is_some() {
                        return Err(ctx("fixed extract of a varbit header".into()));
                    }
                    ParserOp::ExtractStack(st)
                }
                "primitive" => {
                    let prim = b.prim(p.first().ok_or_else(|| ctx("primitive without a body".into()))?).map_err(ctx)?;
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
                "extract" => {
                    if s(&p[0], "type")? != "regular" {
                        return Err(ctx(format!("extract into {}", short(&p[0]))));
                    }
                    let h = b.header(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                    if headers[h].varbit_max_bytes.is_some() {
                        return Err(ctx("fixed extract of a varbit header".into()));
                    }
                    ParserOp::Extract(h)
                }
                "extract_VL" if s(&p[0], "type")? == "stack" => {
                    let st = b.stack(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                    if headers[b.stacks[st].headers[0]].varbit_max_bytes.is_none() {
                        return Err(ctx("extract_VL of a header without a varbit field".into()));
                    }
                    ParserOp::ExtractStackVl(st, b.expr(&p[1]).map_err(ctx)?)
                }
                "advance" => ParserOp::Advance(b.expr(&p[0]).map_err(ctx)?),
                "extract_VL" => {
                    if s(&p[0], "type")? != "regular" {
                        return Err(ctx(format!("extract_VL into {}", short(&p[0]))));
                    }
                    let h = b.header(p[0]["value"].as_str().unwrap_or_default()).map_err(ctx)?;
                    ParserOp::ExtractVl(h, b.expr(&p[1]).map_err(ctx)?)
                }
                "verify" => ParserOp::Verify(b.expr(&p[0]).map_err(ctx)?, b.expr(&p[1]).map_err(ctx)?),
                other => return Err(ctx(format!("op {other}"))),
            };
            ops.push(o);
        }
        let mut key = Vec::new();
        let mut key_bytes = 0;
        for k in arr(st, "transition_key") {
            let e = b.expr(k).map_err(ctx)?;
            let width = match &e {
                Expr::Field(f) => slot_width[*f],
                Expr::Lookahead { width, .. } => *width,
                Expr::Valid(_) => 1,
                Expr::LastField { stack, offset } => slot_width[b.header_slots[b.stacks[*stack].headers[0]][*offset]],
                _ => return Err(ctx(format!("transition key {}", short(k)))),
            };
            let nbytes = width.div_ceil(8);
            key_bytes += nbytes;
            key.push((e, nbytes));
        }
        if key_bytes > 16 {
            return Err(ctx(format!("a {key_bytes}-byte select key (at most 16)")));
        }
        let mut transitions = Vec::new();
        for t in arr(st, "transitions") {
            let next = match t.get("next_state").and_then(Value::as_str) {
                None => None,
                Some(n) => Some(*state_index.get(n).ok_or_else(|| ctx(format!("unknown state {n}")))?),
            };
            let kind = s(t, "type")?;
            let full: u128 = if key_bytes >= 16 { u128::MAX } else { (1u128 << (key_bytes * 8)) - 1 };
            let tr = match kind {
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
            };
            transitions.push(tr);
        }
        states.push(StateIr { name: sname, ops, key, transitions });
    }
    let init_state = *state_index.get(s(parser, "init_state")?).ok_or("parser: unknown init_state")?;

    let deparser = arr(raw, "deparsers").first().ok_or("no deparser")?;
    if !arr(deparser, "primitives").is_empty() {
        return Err("deparser primitives".into());
    }
    let deparse_order =
        arr(deparser, "order").iter().map(|h| b.header(h.as_str().unwrap_or_default())).collect::<R<Vec<_>>>()?;

    // ---- pipelines ----
    let mut tables = Vec::new();
    let mut conds = Vec::new();
    let mut inits = Vec::new();
    for pl in arr(raw, "pipelines") {
        let pname = s(pl, "name")?;
        let ptables = arr(pl, "tables");
        let pconds = arr(pl, "conditionals");
        let mut nodes: HashMap<&str, Node> = HashMap::new();
        for (i, t) in ptables.iter().enumerate() {
            nodes.insert(t["name"].as_str().unwrap_or_default(), Node::Table(tables.len() + i));
        }
        for (i, c) in pconds.iter().enumerate() {
            nodes.insert(c["name"].as_str().unwrap_or_default(), Node::Cond(conds.len() + i));
        }
        let node = |v: &Value| -> R<Option<Node>> {
            match v.as_str() {
                None => Ok(None),
                Some(n) => nodes.get(n).copied().map(Some).ok_or_else(|| format!("pipeline {pname}: unknown node {n}")),
            }
        };
        inits.push(node(&pl["init_table"])?);
        for t in ptables {
            let tname = s(t, "name")?.to_string();
            let ctx = |e: String| format!("table {tname}: {e}");
            if !arr(t, "direct_meters").is_empty()
                || t.get("direct_meters").is_some_and(|v| !v.is_null() && !v.is_array())
            {
                return Err(ctx("direct meters".into()));
            }
            let mut keys = Vec::new();
            for k in arr(t, "key") {
                let kind = match s(k, "match_type")? {
                    "exact" | "valid" => MatchKind::Exact,
                    "ternary" => MatchKind::Ternary,
                    "lpm" => MatchKind::Lpm,
                    "range" => MatchKind::Range,
                    other => return Err(ctx(format!("match kind {other}"))),
                };
                let target = &k["target"];
                let mut src = if target.as_array().and_then(|a| a.get(1)).and_then(Value::as_str) == Some("$valid$") {
                    Expr::Valid(b.header(target[0].as_str().unwrap_or_default()).map_err(ctx)?)
                } else {
                    Expr::Field(b.field(target).map_err(ctx)?)
                };
                let width = match src {
                    Expr::Field(f) => slot_width[f],
                    _ => 1,
                };
                // A masked key field (`f & m : exact`): BMv2 matches on the field's masked value.
                if let Some(m) = k.get("mask").and_then(Value::as_str) {
                    src = Expr::Bin(BinOp::And, Box::new(src), Box::new(Expr::Const(parse_hex(m).map_err(ctx)?)));
                }
                keys.push(KeyIr { name: s(k, "name").unwrap_or_default().to_string(), kind, src, width });
            }
            if keys.len() > 32 {
                return Err(ctx("more than 32 key fields".into()));
            }
            if keys.iter().filter(|k| k.kind == MatchKind::Lpm).count() > 1 {
                return Err(ctx("more than one LPM field".into()));
            }
            let action_ids = arr(t, "action_ids");
            let mut acts = Vec::new();
            for id in action_ids {
                let id = id.as_u64().unwrap_or(u64::MAX) as u32;
                acts.push(*b.action_index.get(&id).ok_or_else(|| ctx(format!("unknown action id {id}")))?);
            }
            let next_tables = t["next_tables"].as_object().ok_or_else(|| ctx("no next_tables".into()))?;
            let next = if next_tables.contains_key("__HIT__") || next_tables.contains_key("__MISS__") {
                NextIr::HitMiss(
                    node(next_tables.get("__HIT__").unwrap_or(&Value::Null)).map_err(ctx)?,
                    node(next_tables.get("__MISS__").unwrap_or(&Value::Null)).map_err(ctx)?,
                )
            } else {
                let names = arr(t, "actions");
                let mut by = Vec::new();
                for (i, a) in acts.iter().enumerate() {
                    let aname = names.get(i).and_then(Value::as_str).unwrap_or_default();
                    let n = match next_tables.get(aname) {
                        Some(v) => node(v).map_err(ctx)?,
                        None => node(&t["base_default_next"]).map_err(ctx)?,
                    };
                    by.push((*a, n));
                }
                NextIr::ByAction(by)
            };
            let de = &t["default_entry"];
            let (default_action, default_params, default_const) = if de.is_object() {
                let id = de["action_id"].as_u64().unwrap_or(u64::MAX) as u32;
                let a = *b.action_index.get(&id).ok_or_else(|| ctx(format!("default action id {id}")))?;
                let params = arr(de, "action_data")
                    .iter()
                    .map(|d| parse_hex(d.as_str().unwrap_or("0")).map(|v| v as u64))
                    .collect::<R<Vec<_>>>()
                    .map_err(ctx)?;
                (a, params, de["action_const"].as_bool().unwrap_or(false))
            } else {
                // No default entry: BMv2 runs nothing on a miss; NoAction stands for that.
                let a = acts.first().copied().ok_or_else(|| ctx("no actions".into()))?;
                (a, vec![0; actions[a].param_widths.len()], false)
            };
            let mut entries = Vec::new();
            let prioritised = keys.iter().any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Range));
            for (n, e) in arr(t, "entries").iter().enumerate() {
                let ectx = |m: String| ctx(format!("const entry {n}: {m}"));
                let mk = arr(e, "match_key");
                if mk.len() != keys.len() {
                    return Err(ectx(format!("{} key fields for {} keys", mk.len(), keys.len())));
                }
                let hex = |v: &Value, k: &str| -> R<u64> {
                    let x = parse_hex(s(v, k)?)?;
                    u64::try_from(x).map_err(|_| format!("{k} {x} out of range"))
                };
                let mut key = Vec::new();
                let mut plen = 0;
                for (k, m) in keys.iter().zip(mk) {
                    let ones = crate::table::full(k.width);
                    let part = match k.kind {
                        MatchKind::Exact => (hex(m, "key").map_err(ectx)?, ones),
                        MatchKind::Ternary => {
                            let mask = hex(m, "mask").map_err(ectx)?;
                            (hex(m, "key").map_err(ectx)? & mask, mask)
                        }
                        MatchKind::Lpm => {
                            let p =
                                m["prefix_length"].as_u64().ok_or_else(|| ectx("lpm without prefix_length".into()))?
                                    as u32;
                            plen = p as i64;
                            let mask = if p == 0 { 0 } else { ones & !(crate::table::full(k.width - p.min(k.width))) };
                            (hex(m, "key").map_err(ectx)? & mask, mask)
                        }
                        MatchKind::Range => (hex(m, "start").map_err(ectx)?, hex(m, "end").map_err(ectx)?),
                    };
                    key.push(part);
                }
                // BMv2's priority: the smaller number wins; the engine's: the larger. An LPM
                // table without ternary or range fields ranks by prefix length.
                let prio =
                    if prioritised { (1i64 << 24) - e["priority"].as_i64().unwrap_or(n as i64 + 1) } else { plen };
                let ae = &e["action_entry"];
                let id = ae["action_id"].as_u64().unwrap_or(u64::MAX) as u32;
                let a = *b.action_index.get(&id).ok_or_else(|| ectx(format!("unknown action id {id}")))?;
                let params = arr(ae, "action_data")
                    .iter()
                    .map(|d| parse_hex(d.as_str().unwrap_or("0")).map(|v| v as u64))
                    .collect::<R<Vec<_>>>()
                    .map_err(ectx)?;
                entries.push((key, prio, a, params));
            }
            tables.push(TableIr {
                entries,
                direct_counter: direct_of_table.contains_key(&tname),
                name: tname,
                keys,
                max_size: t["max_size"].as_u64().unwrap_or(0) as usize,
                actions: acts,
                next,
                default_action,
                default_params,
                default_const,
            });
        }
        for c in pconds {
            conds.push(CondIr {
                expr: b.expr(&c["expression"]).map_err(|e| format!("conditional {}: {e}", c["name"]))?,
                t: node(&c["true_next"])?,
                f: node(&c["false_next"])?,
            });
        }
    }
    let names: Vec<&str> = arr(raw, "pipelines").iter().map(|p| p["name"].as_str().unwrap_or_default()).collect();
    if names != ["ingress", "egress"] {
        return Err(format!("pipelines {names:?} (v1model has ingress and egress)"));
    }
    let error = |n: &str| -> u32 {
        arr(raw, "errors").iter().find(|e| e[0].as_str() == Some(n)).and_then(|e| e[1].as_u64()).unwrap_or(0) as u32
    };
    let _ = b.raw;
    Ok(Ir {
        headers,
        stacks: b.stacks,
        unions,
        union_of,
        slot_width,
        std,
        states,
        init_state,
        deparse_order,
        actions,
        tables,
        conds,
        ingress_init: inits[0],
        egress_init: inits[1],
        counters,
        registers,
        meters,
        checksums,
        error_packet_too_short: error("PacketTooShort"),
        error_no_match: error("NoMatch"),
        error_header_too_short: error("HeaderTooShort"),
        error_parser_invalid_argument: error("ParserInvalidArgument"),
        error_stack_out_of_bounds: error("StackOutOfBounds"),
    })
}
