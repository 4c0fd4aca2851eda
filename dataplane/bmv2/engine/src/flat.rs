//! The ingress and egress controls as one flat list of steps, run by `Engine::run_flat`
//! instead of walking the node graph (issue #30 item 4). p4c turns most of a control's
//! statements into keyless tables (`tbl_*`) whose one action runs by default, and `if`s
//! into conditionals: walking them cost a table apply (action data copied, the next node
//! searched by action) and a primitive dispatch and an expression dispatch per statement.
//! Here a keyless table's action is laid out in place, its action data folded into its
//! expressions; the common primitives (stores of a constant, of a field, of an expression,
//! counts) are steps of their own with the slot's mask precomputed; conditions are jumps.
//! Tables with keys are applied as before (`Engine::apply_table`), the node they name next
//! found through `table_pc`.
//!
//! A keyless table's action is the table's default at the time of the build: the engine
//! rebuilds the list when a keyless table's default changes (`Engine::set_default`).

use crate::code::{self, Op};
use crate::ir::{BinOp, Expr, Ir, NextIr, Node, ParserOp, Prim};
use crate::table::{full, TableState};

#[derive(Debug, Clone)]
pub enum Step {
    /// The end of the control (step 0; every `None` of the node graph jumps here).
    End,
    /// `fields[dst] = k` (k already within the slot's width).
    SetK {
        dst: u32,
        k: u64,
    },
    /// `fields[dst] = fields[src] & mask`.
    Mov {
        dst: u32,
        src: u32,
        mask: u64,
    },
    /// `fields[dst] = (fields[f] op k) & mask`: the commonest expression without the
    /// evaluator's call.
    SetFK {
        dst: u32,
        f: u32,
        op: BinOp,
        k: u64,
        mask: u64,
    },
    /// `fields[dst] = code & mask`.
    SetCode {
        dst: u32,
        mask: u64,
        code: Box<[Op]>,
    },
    SetSmall {
        dst: u32,
        mask: u64,
        s: Small,
    },
    SetPick {
        dst: u32,
        mask: u64,
        p: Box<Pick>,
    },
    /// `fields[dst] = e & mask`.
    Set {
        dst: u32,
        mask: u64,
        e: Expr,
    },
    /// `counters[c][fields[f]] += (1 packet, the packet's bytes)`.
    CountF {
        c: u32,
        f: u32,
    },
    /// `counters[c][e] += (1 packet, the packet's bytes)`.
    Count {
        c: u32,
        e: Expr,
    },
    /// Primitives `from..to` of an action, run as `Engine::run_action` runs them, with the
    /// action data they had.
    Prims {
        action: u32,
        from: u32,
        to: u32,
        params: Box<[u64]>,
    },
    /// `fields[dst] = registers[r][fields[i]] & mask` (0 out of range).
    RegRead {
        dst: u32,
        r: u32,
        i: u32,
        mask: u64,
    },
    /// `registers[r][fields[i]] = fields[v] & mask` (nothing out of range).
    RegWrite {
        r: u32,
        i: u32,
        v: u32,
        mask: u64,
    },
    /// setValid / setInvalid of a fixed header.
    AddHeader(u32),
    RemoveHeader(u32),
    /// An `exit` ran in the action just done: the control ends.
    ExitIf,
    /// Header `h` valid: go on; else jump.
    IfValid {
        h: u32,
        to: u32,
    },
    /// `fields[f] == k` / `fields[f] != k`: go on; else jump (IfFK's commonest operators
    /// without its second dispatch, on the operator).
    IfEqK {
        f: u32,
        k: u64,
        to: u32,
    },
    IfNeK {
        f: u32,
        k: u64,
        to: u32,
    },
    /// `fields[f] op k != 0`: go on; else jump.
    IfFK {
        f: u32,
        op: BinOp,
        k: u64,
        to: u32,
    },
    /// `code != 0`: go on; else jump.
    IfCode {
        code: Box<[Op]>,
        to: u32,
    },
    IfSmall {
        s: Small,
        to: u32,
    },
    /// `e != 0`: go on; else jump.
    If {
        e: Expr,
        to: u32,
    },
    Goto(u32),
    /// A table with keys: applied, then on at the node it names.
    Table(u32),
}

#[derive(Debug, Clone, Default)]
pub struct Flat {
    pub steps: Vec<Step>,
    pub ingress: u32,
    pub egress: u32,
    /// Where each table's and each conditional's steps start (0: not reachable).
    pub table_pc: Vec<u32>,
    pub cond_pc: Vec<u32>,
}

impl Flat {
    /// The step at which `node` starts (`End` for None).
    #[inline]
    pub fn pc_of(&self, node: Option<Node>) -> usize {
        match node {
            None => 0,
            Some(Node::Table(t)) => self.table_pc[t] as usize,
            Some(Node::Cond(c)) => self.cond_pc[c] as usize,
        }
    }
}

/// A field through operators on constants or fields, left to right:
/// `((fields[f] op1 x1) op2 x2) ...`: code of that shape without the stack machine's call.
#[derive(Debug, Clone)]
pub struct Chain {
    f: u32,
    /// (operator, the operand is a field, the constant or the field's slot).
    ops: Box<[(BinOp, bool, u64)]>,
}

impl Chain {
    fn of(ops: &[Op]) -> Option<Chain> {
        let (first, rest) = ops.split_first()?;
        let (f, mut v) = match *first {
            Op::Field(f) => (f, Vec::new()),
            op => {
                let (o, f, k) = code::as_fk(&op)?;
                (f, vec![(o, false, k)])
            }
        };
        v.extend(operators(rest)?);
        Some(Chain { f, ops: v.into() })
    }

    #[inline(always)]
    fn eval(&self, fields: &[u64]) -> u64 {
        let mut v = fields[self.f as usize];
        for &(op, is_field, x) in self.ops.iter() {
            v = code::bin(op, v, if is_field { fields[x as usize] } else { x });
        }
        v
    }
}

/// Instructions that each apply an operator with a constant or a field to the value.
fn operators(ops: &[Op]) -> Option<Vec<(BinOp, bool, u64)>> {
    ops.iter()
        .map(|op| match (code::as_k(op), code::as_f(op)) {
            (Some((o, k)), _) => Some((o, false, k)),
            (_, Some((o, f))) => Some((o, true, f as u64)),
            _ => None,
        })
        .collect()
}

/// Code of a shape evaluated without the stack machine: a chain, or two chains, an
/// operator and operators after it (`x, y, Bin(op), AndK(m)`: `(x op y) & m`).
#[derive(Debug, Clone)]
pub enum Small {
    Chain(Chain),
    Bin(BinOp, Chain, Chain, Box<[(BinOp, bool, u64)]>),
}

impl Small {
    pub fn of(ops: &[Op]) -> Option<Small> {
        if let Some(c) = Chain::of(ops) {
            return Some(Small::Chain(c));
        }
        let at = ops.iter().rposition(|o| matches!(o, Op::Bin(_)))?;
        let (Op::Bin(op), body, tail) = (ops[at], &ops[..at], &ops[at + 1..]) else { return None };
        // the second chain starts at the last load of a field
        let i = body.iter().rposition(|o| matches!(o, Op::Field(_)) || code::as_fk(o).is_some())?;
        Some(Small::Bin(op, Chain::of(&body[..i])?, Chain::of(&body[i..])?, operators(tail)?.into()))
    }

    #[inline(always)]
    pub fn eval(&self, fields: &[u64]) -> u64 {
        match self {
            Small::Chain(c) => c.eval(fields),
            Small::Bin(op, a, b, tail) => {
                let mut v = code::bin(*op, a.eval(fields), b.eval(fields));
                for &(op, is_field, x) in tail.iter() {
                    v = code::bin(op, v, if is_field { fields[x as usize] } else { x });
                }
                v
            }
        }
    }
}

/// `c ? t : f` of small code (slicing.p4's telemetry: `sojourn > largest ? sojourn -
/// largest : 0`), compiled as `c, Jz(f), t, Jmp(end), f`.
#[derive(Debug, Clone)]
pub struct Pick {
    c: Small,
    t: Arm,
    f: Arm,
}

/// A value `Pick` chooses: small code or a constant (not a shape of `Small`: another
/// variant there costs every other use of it).
#[derive(Debug, Clone)]
enum Arm {
    K(u64),
    S(Small),
}

impl Arm {
    fn of(ops: &[Op]) -> Option<Arm> {
        match ops {
            [Op::Const(k)] => Some(Arm::K(*k)),
            _ => Small::of(ops).map(Arm::S),
        }
    }

    #[inline(always)]
    fn eval(&self, fields: &[u64]) -> u64 {
        match self {
            Arm::K(k) => *k,
            Arm::S(s) => s.eval(fields),
        }
    }
}

impl Pick {
    fn of(ops: &[Op]) -> Option<Pick> {
        let j = ops.iter().position(|o| matches!(o, Op::Jz(_)))?;
        let Op::Jz(f) = ops[j] else { return None };
        let f = f as usize;
        if f < j + 2 || f > ops.len() || !matches!(ops[f - 1], Op::Jmp(end) if end as usize == ops.len()) {
            return None;
        }
        Some(Pick { c: Small::of(&ops[..j])?, t: Arm::of(&ops[j + 1..f - 1])?, f: Arm::of(&ops[f..])? })
    }

    #[inline(always)]
    pub fn eval(&self, fields: &[u64]) -> u64 {
        if self.c.eval(fields) != 0 {
            self.t.eval(fields)
        } else {
            self.f.eval(fields)
        }
    }
}

/// A parser state's operation, the common ones as their own steps (as a control's).
#[derive(Debug, Clone)]
pub enum PStep {
    Extract(u32),
    SetK {
        dst: u32,
        k: u64,
    },
    Mov {
        dst: u32,
        src: u32,
        mask: u64,
    },
    SetFK {
        dst: u32,
        f: u32,
        op: BinOp,
        k: u64,
        mask: u64,
    },
    SetCode {
        dst: u32,
        mask: u64,
        code: Box<[Op]>,
    },
    SetSmall {
        dst: u32,
        mask: u64,
        s: Small,
    },
    /// `fields[dst] = (a && b && ...) & mask` of small operands (slicing.p4's IPv4 length
    /// checks: `ihl * 4 <= total_len && offset + total_len <= packet_length`).
    SetAll {
        dst: u32,
        mask: u64,
        all: Box<[Small]>,
    },
    /// `fields[dst] = lookahead(offset, width) & mask` (PacketTooShort past the end).
    Lookahead {
        dst: u32,
        offset: u32,
        width: u32,
        mask: u64,
    },
    /// `verify(fields[f] != 0, err)`.
    VerifyF {
        f: u32,
        err: u32,
    },
    /// The state's operation `i`, run as the parser runs any.
    Op(u32),
}

/// A parser state's steps, and its select key when that is fields only: (slot, bits, mask)
/// of each, the first in the key's highest bits.
#[derive(Debug, Clone, Default)]
pub struct PState {
    pub steps: Vec<PStep>,
    pub key: Option<Box<[(u32, u32, u64)]>>,
}

/// The parser's states as steps (`ir.states` order).
pub fn parser(ir: &Ir) -> Vec<PState> {
    ir.states
        .iter()
        .map(|st| {
            let steps = st
                .ops
                .iter()
                .enumerate()
                .map(|(i, op)| match op {
                    ParserOp::Extract(h) => PStep::Extract(*h as u32),
                    ParserOp::Set(dst, e) => {
                        let mask = full(ir.slot_width[*dst]);
                        let dst = *dst as u32;
                        match e {
                            Expr::Const(c) => PStep::SetK { dst, k: *c as u64 & mask },
                            Expr::Field(src) => PStep::Mov { dst, src: *src as u32, mask },
                            Expr::Code(ops) => match **ops {
                                [Op::Lookahead { offset, width }] => PStep::Lookahead { dst, offset, width, mask },
                                [op] if code::as_fk(&op).is_some() => {
                                    let (op, f, k) = code::as_fk(&op).expect("fused");
                                    PStep::SetFK { dst, f, op, k, mask }
                                }
                                _ => match (Small::of(ops), all_small(ops)) {
                                    (Some(s), _) => PStep::SetSmall { dst, mask, s },
                                    (None, Some(all)) => PStep::SetAll { dst, mask, all },
                                    (None, None) => PStep::SetCode { dst, mask, code: ops.clone() },
                                },
                            },
                            _ => PStep::Op(i as u32),
                        }
                    }
                    ParserOp::Verify(Expr::Field(f), Expr::Const(err)) => {
                        PStep::VerifyF { f: *f as u32, err: *err as u32 }
                    }
                    _ => PStep::Op(i as u32),
                })
                .collect();
            let key = st
                .key
                .iter()
                .map(|(e, nbytes)| match e {
                    Expr::Field(f) if nbytes * 8 < 128 => Some((*f as u32, nbytes * 8, full(nbytes * 8))),
                    _ => None,
                })
                .collect();
            PState { steps, key }
        })
        .collect()
}

/// Whether `e` reads action data.
fn reads_params(e: &Expr) -> bool {
    match e {
        Expr::Runtime(_) => true,
        Expr::Code(ops) => ops.iter().any(|o| matches!(o, Op::Param(_))),
        Expr::Un(_, x) => reads_params(x),
        Expr::Bin(_, a, b) => reads_params(a) || reads_params(b),
        Expr::Cond(c, a, b) => reads_params(c) || reads_params(a) || reads_params(b),
        Expr::StackField { index, .. } | Expr::StackValid { index, .. } => reads_params(index),
        Expr::Big(x) => reads_params(x),
        Expr::Wide(..) | Expr::BigConst(_) => false,
        Expr::Const(_)
        | Expr::Field(_)
        | Expr::SField(..)
        | Expr::Valid(_)
        | Expr::Lookahead { .. }
        | Expr::LastField { .. }
        | Expr::UnionValid(_)
        | Expr::VarbitEq(..) => false,
    }
}

/// `e` with the action data `params` in place of its reads of them (as the evaluator reads
/// them: a missing one is 0); None when it reads them where this does not substitute.
fn with_params(e: &Expr, params: &[u64]) -> Option<Expr> {
    let p = |i: usize| params.get(i).copied().unwrap_or(0);
    match e {
        Expr::Runtime(i) => Some(Expr::Const(p(*i) as i128)),
        Expr::Code(ops) => Some(Expr::Code(
            ops.iter().map(|o| if let Op::Param(i) = o { Op::Const(p(*i as usize)) } else { *o }).collect(),
        )),
        _ if !reads_params(e) => Some(e.clone()),
        _ => None,
    }
}

/// Code `ops[a..b]` (a whole expression; its jumps absolute) cut into the operands of its
/// top-level `&&`s, each rebased to run on its own: `x && y` compiles to `x, AndJ(b), y,
/// Truth` with no jump out of `x` or `y`.
fn split(ops: &[Op], a: usize, b: usize, out: &mut Vec<Vec<Op>>) {
    let within = |from: usize, to: usize| {
        ops[from..to].iter().all(|o| match o {
            Op::AndJ(t) | Op::OrJ(t) | Op::Jz(t) | Op::Jmp(t) => (from..=to).contains(&(*t as usize)),
            _ => true,
        })
    };
    if b - a >= 3 && matches!(ops[b - 1], Op::Truth) {
        if let Some(i) = (a..b).find(|&i| matches!(ops[i], Op::AndJ(t) if t as usize == b)) {
            if within(a, i) && within(i + 1, b - 1) {
                split(ops, a, i, out);
                split(ops, i + 1, b - 1, out);
                return;
            }
        }
    }
    let rebase = |o: &Op| match *o {
        Op::AndJ(t) => Op::AndJ(t - a as u32),
        Op::OrJ(t) => Op::OrJ(t - a as u32),
        Op::Jz(t) => Op::Jz(t - a as u32),
        Op::Jmp(t) => Op::Jmp(t - a as u32),
        o => o,
    };
    let mut leaf: Vec<Op> = ops[a..b].iter().map(rebase).collect();
    // a test reads `!= 0`: a final truth value is the same test (a jump to it ends the code)
    if leaf.len() > 1 && matches!(leaf.last(), Some(Op::Truth)) {
        leaf.pop();
    }
    out.push(leaf);
}

/// The tests of a condition, one per operand of its top-level `&&`s: it holds when all do.
pub fn cond_tests(e: &Expr) -> Vec<Step> {
    match e {
        Expr::Code(ops) => conjuncts(ops).into_iter().map(test).collect(),
        Expr::Valid(h) => vec![Step::IfValid { h: *h as u32, to: 0 }],
        e => vec![Step::If { e: e.clone(), to: 0 }],
    }
}

/// Code of an `&&` (its value 1 when every operand is non-zero, else 0) whose operands are
/// all small code, as those.
fn all_small(ops: &[Op]) -> Option<Box<[Small]>> {
    let parts = conjuncts(ops);
    if parts.len() < 2 {
        return None;
    }
    parts.iter().map(|p| Small::of(p)).collect()
}

fn conjuncts(ops: &[Op]) -> Vec<Vec<Op>> {
    let mut out = Vec::new();
    split(ops, 0, ops.len(), &mut out);
    out
}

/// The step that tests one operand of a condition (its jump patched later).
fn test(ops: Vec<Op>) -> Step {
    match ops[..] {
        [Op::Valid(h)] => Step::IfValid { h, to: 0 },
        [Op::Field(f)] => Step::IfNeK { f, k: 0, to: 0 },
        [op] if code::as_fk(&op).is_some() => match code::as_fk(&op).expect("fused") {
            (BinOp::Eq, f, k) => Step::IfEqK { f, k, to: 0 },
            (BinOp::Ne, f, k) => Step::IfNeK { f, k, to: 0 },
            (op, f, k) => Step::IfFK { f, op, k, to: 0 },
        },
        _ => match Small::of(&ops) {
            Some(s) => Step::IfSmall { s, to: 0 },
            None => Step::IfCode { code: ops.into(), to: 0 },
        },
    }
}

struct Builder<'a> {
    ir: &'a Ir,
    tables: &'a [TableState],
    steps: Vec<Step>,
    /// Jumps to nodes, patched once every node has its place: (step, target node).
    fixups: Vec<(usize, Option<Node>)>,
    table_pc: Vec<u32>,
    cond_pc: Vec<u32>,
}

impl Builder<'_> {
    fn placed(&self, n: Node) -> bool {
        match n {
            Node::Table(t) => self.table_pc[t] != 0,
            Node::Cond(c) => self.cond_pc[c] != 0,
        }
    }

    /// A jump to `n`, unless `n` is laid out next (`follow`).
    fn goto(&mut self, n: Option<Node>, follow: Option<Node>) {
        if n.is_some() && n == follow {
            return;
        }
        self.fixups.push((self.steps.len(), n));
        self.steps.push(Step::Goto(0));
    }

    /// The steps of an action run with `params` (a keyless table's default).
    fn action(&mut self, action: usize, params: &[u64]) {
        let prims = &self.ir.actions[action].prims;
        let mut i = 0;
        while i < prims.len() {
            if let Some(step) = self.prim(&prims[i], params) {
                self.steps.push(step);
                i += 1;
                continue;
            }
            let from = i;
            while i < prims.len() && self.prim(&prims[i], params).is_none() {
                i += 1;
            }
            self.steps.push(Step::Prims {
                action: action as u32,
                from: from as u32,
                to: i as u32,
                params: params.into(),
            });
        }
        if prims.iter().any(|p| matches!(p, Prim::Exit)) {
            self.steps.push(Step::ExitIf);
        }
    }

    /// The step of its own a primitive has, if any.
    fn prim(&self, p: &Prim, params: &[u64]) -> Option<Step> {
        match p {
            Prim::Assign(dst, e) => {
                let mask = full(self.ir.slot_width[*dst]);
                let dst = *dst as u32;
                Some(match with_params(e, params)? {
                    Expr::Const(c) => Step::SetK { dst, k: c as u64 & mask },
                    Expr::Field(src) => Step::Mov { dst, src: src as u32, mask },
                    Expr::Code(ops) => match *ops {
                        [op] if code::as_fk(&op).is_some() => {
                            let (op, f, k) = code::as_fk(&op)?;
                            Step::SetFK { dst, f, op, k, mask }
                        }
                        _ => match (Small::of(&ops), Pick::of(&ops)) {
                            (Some(s), _) => Step::SetSmall { dst, mask, s },
                            (None, Some(p)) => Step::SetPick { dst, mask, p: Box::new(p) },
                            (None, None) => Step::SetCode { dst, mask, code: ops },
                        },
                    },
                    e => Step::Set { dst, mask, e },
                })
            }
            Prim::RegisterRead(dst, r, Expr::Field(i)) => Some(Step::RegRead {
                dst: *dst as u32,
                r: *r as u32,
                i: *i as u32,
                mask: full(self.ir.slot_width[*dst]),
            }),
            Prim::RegisterWrite(r, Expr::Field(i), Expr::Field(v)) => Some(Step::RegWrite {
                r: *r as u32,
                i: *i as u32,
                v: *v as u32,
                mask: full(self.ir.registers[*r].width),
            }),
            Prim::AddHeader(crate::ir::HRef::Fixed(h)) => Some(Step::AddHeader(*h as u32)),
            Prim::RemoveHeader(crate::ir::HRef::Fixed(h)) => Some(Step::RemoveHeader(*h as u32)),
            Prim::Count(c, e) => Some(match with_params(e, params)? {
                Expr::Field(f) => Step::CountF { c: *c as u32, f: f as u32 },
                e => Step::Count { c: *c as u32, e },
            }),
            _ => None,
        }
    }

    /// Lay out `first` and what follows it, depth first: a node's first successor right
    /// after it, so that most edges need no jump.
    fn control(&mut self, first: Option<Node>) {
        let mut todo = vec![first];
        while let Some(n) = todo.pop() {
            let Some(n) = n else { continue };
            if self.placed(n) {
                continue;
            }
            let at = self.steps.len() as u32;
            // successors, the one to lay out next first
            let next: Vec<Option<Node>> = match n {
                Node::Cond(c) => {
                    self.cond_pc[c] = at;
                    let cond = &self.ir.conds[c];
                    let (t, f) = (cond.t, cond.f);
                    // `a && b && ...`: a test per operand, each jumping to `f` (a condition
                    // in a control has no effect beyond its value: the tests may stop early)
                    let tests = cond_tests(&cond.expr);
                    for step in tests {
                        self.fixups.push((self.steps.len(), f));
                        self.steps.push(step);
                    }
                    let follow = t.filter(|x| !self.placed(*x));
                    self.goto(t, follow);
                    vec![t, f]
                }
                Node::Table(t) => {
                    self.table_pc[t] = at;
                    let ts = &self.tables[t];
                    // an indirect table or one with a direct meter runs through profiles.rs
                    let plain = self.ir.tables[t].profile.is_none() && self.ir.tables[t].direct_meter.is_none();
                    if ts.keyless() && plain {
                        let (action, params) = (ts.default_action, ts.default_params.clone());
                        self.action(action, &params);
                        // a keyless table never hits
                        let after = match &self.ir.tables[t].next {
                            NextIr::ByAction(by) => by.iter().find(|(a, _)| *a == action).and_then(|(_, n)| *n),
                            NextIr::HitMiss(_, miss) => *miss,
                        };
                        let follow = after.filter(|x| !self.placed(*x));
                        self.goto(after, follow);
                        vec![after]
                    } else {
                        self.steps.push(Step::Table(t as u32));
                        match &self.ir.tables[t].next {
                            NextIr::ByAction(by) => by.iter().map(|(_, n)| *n).collect(),
                            NextIr::HitMiss(h, m) => vec![*h, *m],
                        }
                    }
                }
            };
            // the first successor popped first: laid out right after this node's steps
            todo.extend(next.into_iter().rev());
        }
    }
}

/// The controls of `ir` with the tables' current default actions.
pub fn build(ir: &Ir, tables: &[TableState]) -> Flat {
    let mut b = Builder {
        ir,
        tables,
        steps: vec![Step::End],
        fixups: Vec::new(),
        table_pc: vec![0; ir.tables.len()],
        cond_pc: vec![0; ir.conds.len()],
    };
    let ingress = b.steps.len() as u32;
    b.control(ir.ingress_init);
    b.steps.push(Step::End);
    let egress = b.steps.len() as u32;
    b.control(ir.egress_init);
    b.steps.push(Step::End);
    let (table_pc, cond_pc) = (b.table_pc, b.cond_pc);
    let mut flat = Flat { steps: b.steps, ingress, egress, table_pc, cond_pc };
    for (at, n) in b.fixups {
        let pc = flat.pc_of(n) as u32;
        match &mut flat.steps[at] {
            Step::Goto(to)
            | Step::IfValid { to, .. }
            | Step::IfEqK { to, .. }
            | Step::IfNeK { to, .. }
            | Step::IfFK { to, .. }
            | Step::IfCode { to, .. }
            | Step::IfSmall { to, .. }
            | Step::If { to, .. } => *to = pc,
            s => unreachable!("a jump fixed up at {s:?}"),
        }
    }
    // an empty control starts at its End
    if ir.ingress_init.is_none() {
        flat.ingress = 0;
    }
    if ir.egress_init.is_none() {
        flat.egress = 0;
    }
    flat
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{compile, run, Want};

    /// Random conditions of `&&`, `||`, `?:`, comparisons and negations over fields: the
    /// operands `conjuncts` cuts them into are all true exactly when the whole is.
    #[test]
    fn conjuncts_are_true_together_exactly_when_the_condition_is() {
        let widths = [1u32, 4, 8, 16, 32, 64];
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        fn gen(next: &mut impl FnMut() -> u64, depth: u32) -> Expr {
            let r = next();
            let leaf = |r: u64| -> Expr {
                let f = Box::new(Expr::Field((r >> 8) as usize % 6));
                let ops = [BinOp::Eq, BinOp::Ne, BinOp::Lt, BinOp::Gt];
                Expr::Bin(ops[(r >> 16) as usize % 4], f, Box::new(Expr::Const(((r >> 24) % 4) as i128)))
            };
            if depth == 0 || r.is_multiple_of(4) {
                return leaf(r);
            }
            let mut sub = || Box::new(gen(next, depth - 1));
            match (r >> 4) % 5 {
                0 | 1 => Expr::Bin(BinOp::LAnd, sub(), sub()),
                2 => Expr::Bin(BinOp::LOr, sub(), sub()),
                3 => Expr::Cond(sub(), sub(), sub()),
                _ => Expr::Un(crate::ir::UnOp::Not, sub()),
            }
        }
        let (mut split_some, mut total) = (0, 0);
        for _ in 0..5000 {
            let tree = gen(&mut next, 4);
            let Some(Expr::Code(ops)) = compile(&tree, Want::Exact, &widths) else { continue };
            let parts = conjuncts(&ops);
            total += 1;
            split_some += (parts.len() > 1) as usize;
            for _ in 0..16 {
                let fields: Vec<u64> = widths.iter().map(|w| (next() % 4) & crate::table::full(*w)).collect();
                let whole = run(&ops, &fields, &[], &[], &[], 0).ok().unwrap() != 0;
                let each = parts.iter().all(|p| run(p, &fields, &[], &[], &[], 0).ok().unwrap() != 0);
                assert_eq!(whole, each, "{ops:?} -> {parts:?}");
                if let Some(all) = all_small(&ops) {
                    let v = all.iter().all(|s| s.eval(&fields) != 0) as u64;
                    assert_eq!(v, run(&ops, &fields, &[], &[], &[], 0).ok().unwrap(), "{ops:?}");
                }
                for p in parts.iter().filter_map(|p| Some((p, Small::of(p)?))) {
                    assert_eq!(p.1.eval(&fields), run(p.0, &fields, &[], &[], &[], 0).ok().unwrap(), "{p:?}");
                }
            }
        }
        assert!(split_some * 4 > total, "{split_some} of {total} split");
    }

    /// `c ? t : f` of fields and constants: where code has the shape `Pick` evaluates, it
    /// computes what the stack machine does.
    #[test]
    fn picks_compute_what_the_code_does() {
        let widths = [1u32, 8, 16, 32, 48, 64];
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        const OPS: [BinOp; 6] = [BinOp::Add, BinOp::Sub, BinOp::And, BinOp::Shr, BinOp::Gt, BinOp::Eq];
        let leaf = |r: u64| -> Expr {
            let y = if r.is_multiple_of(2) {
                Expr::Field((r >> 16) as usize % 6)
            } else {
                Expr::Const((r >> 16) as i128 % 8)
            };
            match r % 3 {
                0 => Expr::Const((r >> 8) as i128 % 8),
                _ => Expr::Bin(OPS[(r >> 4) as usize % 6], Box::new(Expr::Field((r >> 8) as usize % 6)), Box::new(y)),
            }
        };
        let (mut picks, mut total) = (0, 0);
        for _ in 0..5000 {
            let tree = Expr::Cond(Box::new(leaf(next())), Box::new(leaf(next())), Box::new(leaf(next())));
            let want = if next().is_multiple_of(2) { Want::Exact } else { Want::Mod };
            let Some(Expr::Code(ops)) = compile(&tree, want, &widths) else { continue };
            total += 1;
            let Some(p) = Pick::of(&ops) else { continue };
            picks += 1;
            for _ in 0..8 {
                let fields: Vec<u64> = widths
                    .iter()
                    .map(|w| [0, 1, u64::MAX, next()][(next() % 4) as usize] & crate::table::full(*w))
                    .collect();
                assert_eq!(p.eval(&fields), run(&ops, &fields, &[], &[], &[], 0).ok().unwrap(), "{ops:?}");
            }
        }
        assert!(picks * 2 > total, "{picks} of {total} picks");
    }

    /// Arithmetic of fields and constants: where code has a shape `Small` evaluates, it
    /// computes what the stack machine does.
    #[test]
    fn small_shapes_compute_what_the_code_does() {
        let widths = [1u32, 8, 16, 32, 48, 64];
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        const OPS: [BinOp; 12] = [
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Shl,
            BinOp::Shr,
            BinOp::Eq,
            BinOp::Lt,
            BinOp::Ge,
            BinOp::USat,
        ];
        let (mut small, mut total) = (0, 0);
        for _ in 0..20_000 {
            let operand = |next: &mut dyn FnMut() -> u64| -> Box<Expr> {
                let r = next();
                Box::new(if r.is_multiple_of(3) {
                    Expr::Const((next() >> (r % 64)) as i128)
                } else {
                    Expr::Field((r >> 8) as usize % 6)
                })
            };
            let chain = |next: &mut dyn FnMut() -> u64| -> Expr {
                let mut e = Expr::Field((next() >> 8) as usize % 6);
                for _ in 0..next() % 3 {
                    e = Expr::Bin(OPS[(next() >> 4) as usize % 12], Box::new(e), operand(next));
                }
                e
            };
            let tree = if next().is_multiple_of(2) {
                chain(&mut next)
            } else {
                let (a, b) = (chain(&mut next), chain(&mut next));
                let mut e = Expr::Bin(OPS[(next() >> 4) as usize % 12], Box::new(a), Box::new(b));
                // operators after the two chains' (p4c's masks)
                for _ in 0..next() % 3 {
                    e = Expr::Bin(OPS[(next() >> 4) as usize % 12], Box::new(e), operand(&mut next));
                }
                e
            };
            let want = if next().is_multiple_of(2) { Want::Exact } else { Want::Mod };
            let Some(Expr::Code(ops)) = compile(&tree, want, &widths) else { continue };
            total += 1;
            let Some(s) = Small::of(&ops) else { continue };
            small += 1;
            for _ in 0..8 {
                let fields: Vec<u64> = widths
                    .iter()
                    .map(|w| [0, 1, u64::MAX, next()][(next() % 4) as usize] & crate::table::full(*w))
                    .collect();
                assert_eq!(s.eval(&fields), run(&ops, &fields, &[], &[], &[], 0).ok().unwrap(), "{ops:?}");
            }
        }
        assert!(small * 2 > total, "{small} of {total} small");
    }
}
