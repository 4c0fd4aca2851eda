//! Expressions compiled at load into flat stack code over u64 ([`Expr::Code`]): one loop over
//! a slice instead of a recursive walk of boxed nodes over i128, with the common operand
//! shapes (an operator on a constant or a field) folded into one instruction.
//!
//! The tree's meaning is i128 arithmetic (ir::Expr). u64 code computes the same only where
//! the place that reads the value allows it, so each expression is compiled for what its
//! place needs ([`Want`]): `Exact` (the value itself, which must then lie in 0 .. 2^64:
//! comparisons, conditions, indices) or `Mod` (the value modulo 2^64: stores into fields of at
//! most 64 bits, table keys), and each operator asks of its operands what its result needs
//! (`x - y` is exact modulo 2^64 from operands modulo 2^64, `x < y` needs both exact, `x & m`
//! is exact when one side is). An expression that cannot be proved so stays a tree.

use crate::ir::{BinOp, Expr, Ir, ParserOp, Prim, UnOp};
use crate::simplify::bits;

/// What the place that reads an expression's value needs of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// The value itself, known to lie in 0 .. 2^64.
    Exact,
    /// The value modulo 2^64.
    Mod,
}

/// The instructions, each operator on a constant or a field an instruction of its own
/// (`AddK`, `EqF`, ...): one dispatch per instruction, not a second one on the operator. The
/// macro writes the enum, the constructors of the folded forms and the evaluator.
macro_rules! instructions {
    ($($op:ident: $k:ident, $f:ident, $fk:ident;)*) => {
        #[derive(Debug, Clone, Copy)]
        pub enum Op {
            Const(u64),
            Field(u32),
            Valid(u32),
            Param(u32),
            Lookahead { offset: u32, width: u32 },
            /// y = pop, x = pop, push x op y.
            Bin(BinOp),
            $(
                /// x = pop, push x op the constant.
                $k(u64),
                /// x = pop, push x op the field.
                $f(u32),
                /// push the field op the constant: the commonest expression (`meta.x == 1`,
                /// `x >> 4`) in one instruction instead of two.
                $fk(u32, u64),
            )*
            /// The operators without folded forms, on a constant or a field.
            BinK(BinOp, u64),
            BinF(BinOp, u32),
            /// Logical not; `x != 0`; bitwise not; negation.
            Not,
            Truth,
            BitNot,
            Neg,
            /// `a && b`: x = pop; x == 0: push 0 and jump (b is not evaluated, as in the tree).
            AndJ(u32),
            /// `a || b`: x = pop; x != 0: push 1 and jump.
            OrJ(u32),
            /// x = pop; x == 0: jump.
            Jz(u32),
            Jmp(u32),
        }

        fn with_k(op: BinOp, k: u64) -> Op {
            match op {
                $(BinOp::$op => Op::$k(k),)*
                _ => Op::BinK(op, k),
            }
        }

        fn with_f(op: BinOp, f: u32) -> Op {
            match op {
                $(BinOp::$op => Op::$f(f),)*
                _ => Op::BinF(op, f),
            }
        }

        /// The fused `field op constant`; None for the operators without folded forms.
        fn with_fk(op: BinOp, f: u32, k: u64) -> Option<Op> {
            match op {
                $(BinOp::$op => Some(Op::$fk(f, k)),)*
                _ => None,
            }
        }

        /// Code of one instruction that needs no stack (most, once fused: `meta.x == 1`), run
        /// where it is read: [`run`]'s call and stack set-up cost more than the instruction.
        /// None: run the code with [`run`].
        #[inline(always)]
        pub fn single(code: &[Op], fields: &[u64], valid: &[bool], params: &[u64]) -> Option<u64> {
            let [op] = code else { return None };
            Some(match *op {
                Op::Const(k) => k,
                Op::Field(f) => fields[f as usize],
                Op::Valid(h) => valid[h as usize] as u64,
                Op::Param(i) => params.get(i as usize).copied().unwrap_or(0),
                $(Op::$fk(f, k) => bin(BinOp::$op, fields[f as usize], k),)*
                _ => return None,
            })
        }

        /// The fused instruction's operator, field and constant.
        pub fn as_fk(op: &Op) -> Option<(BinOp, u32, u64)> {
            match *op {
                $(Op::$fk(f, k) => Some((BinOp::$op, f, k)),)*
                _ => None,
            }
        }

        /// The operator and constant of an instruction on a constant.
        pub fn as_k(op: &Op) -> Option<(BinOp, u64)> {
            match *op {
                $(Op::$k(k) => Some((BinOp::$op, k)),)*
                Op::BinK(o, k) => Some((o, k)),
                _ => None,
            }
        }

        /// The operator and field of an instruction on a field.
        pub fn as_f(op: &Op) -> Option<(BinOp, u32)> {
            match *op {
                $(Op::$f(f) => Some((BinOp::$op, f)),)*
                Op::BinF(o, f) => Some((o, f)),
                _ => None,
            }
        }

        /// Run code against a packet's header vector, the action's parameters and (parser) the
        /// bytes after `cursor`.
        #[inline]
        pub fn run(
            code: &[Op],
            fields: &[u64],
            valid: &[bool],
            params: &[u64],
            data: &[u8],
            cursor: usize,
        ) -> Result<u64, Short> {
            // the top of the stack in a register, the values below it in `st`
            let mut top = 0u64;
            let mut st = [0u64; DEPTH];
            let mut sp = 0usize;
            let mut pc = 0usize;
            macro_rules! push {
                ($v:expr) => {{
                    let v = $v;
                    st[sp] = top;
                    sp += 1;
                    top = v;
                }};
            }
            macro_rules! pop {
                () => {{
                    sp -= 1;
                    top = st[sp];
                }};
            }
            while let Some(op) = code.get(pc) {
                pc += 1;
                match *op {
                    Op::Const(k) => push!(k),
                    Op::Field(f) => push!(fields[f as usize]),
                    Op::Valid(h) => push!(valid[h as usize] as u64),
                    Op::Param(i) => push!(params.get(i as usize).copied().unwrap_or(0)),
                    Op::Lookahead { offset, width } => {
                        let bit = cursor * 8 + offset as usize;
                        if bit + width as usize > data.len() * 8 {
                            return Err(Short);
                        }
                        push!(crate::exec::read_bits(data, bit, width))
                    }
                    Op::Bin(o) => {
                        sp -= 1;
                        top = bin(o, st[sp], top);
                    }
                    $(
                        Op::$k(k) => top = bin(BinOp::$op, top, k),
                        Op::$f(f) => top = bin(BinOp::$op, top, fields[f as usize]),
                        Op::$fk(f, k) => push!(bin(BinOp::$op, fields[f as usize], k)),
                    )*
                    Op::BinK(o, k) => top = bin(o, top, k),
                    Op::BinF(o, f) => top = bin(o, top, fields[f as usize]),
                    Op::Not => top = (top == 0) as u64,
                    Op::Truth => top = (top != 0) as u64,
                    Op::BitNot => top = !top,
                    Op::Neg => top = top.wrapping_neg(),
                    Op::AndJ(to) => {
                        if top == 0 {
                            pc = to as usize;
                        } else {
                            pop!();
                        }
                    }
                    Op::OrJ(to) => {
                        if top != 0 {
                            top = 1;
                            pc = to as usize;
                        } else {
                            pop!();
                        }
                    }
                    Op::Jz(to) => {
                        let c = top;
                        pop!();
                        if c == 0 {
                            pc = to as usize;
                        }
                    }
                    Op::Jmp(to) => pc = to as usize,
                }
            }
            Ok(top)
        }
    };
}

instructions! {
    And: AndK, AndF, FAndK;
    Or: OrK, OrF, FOrK;
    Xor: XorK, XorF, FXorK;
    Add: AddK, AddF, FAddK;
    Sub: SubK, SubF, FSubK;
    Mul: MulK, MulF, FMulK;
    Shl: ShlK, ShlF, FShlK;
    Shr: ShrK, ShrF, FShrK;
    Eq: EqK, EqF, FEqK;
    Ne: NeK, NeF, FNeK;
    Lt: LtK, LtF, FLtK;
    Le: LeK, LeF, FLeK;
    Gt: GtK, GtF, FGtK;
    Ge: GeK, GeF, FGeK;
}

/// The deepest stack code may use (the evaluator's stack lives in registers / on the stack).
pub const DEPTH: usize = 12;

/// A lookahead past the end of the packet (the parser's PacketTooShort).
pub struct Short;

struct Compiler<'w> {
    ops: Vec<Op>,
    widths: &'w [u32],
    depth: usize,
    max: usize,
}

impl Compiler<'_> {
    fn push(&mut self, op: Op, delta: isize) -> Option<()> {
        self.ops.push(op);
        self.depth = self.depth.checked_add_signed(delta)?;
        self.max = self.max.max(self.depth);
        (self.max <= DEPTH).then_some(())
    }

    /// An operand folded into the instruction: a constant (as `want` allows) or a field.
    fn operand(&self, e: &Expr, want: Want) -> Option<Operand> {
        match e {
            Expr::Const(c) if want == Want::Mod || (0..=u64::MAX as i128).contains(c) => Some(Operand::K(*c as u64)),
            Expr::Field(f) => Some(Operand::F(*f as u32)),
            _ => None,
        }
    }

    fn bin(&mut self, op: BinOp, a: &Expr, b: &Expr, wa: Want, wb: Want) -> Option<()> {
        if let (Expr::Field(f), Some(Operand::K(k))) = (a, self.operand(b, wb)) {
            if let Some(fused) = with_fk(op, *f as u32, k) {
                return self.push(fused, 1);
            }
        }
        self.expr(a, wa)?;
        match self.operand(b, wb) {
            Some(Operand::K(k)) => self.push(with_k(op, k), 0),
            Some(Operand::F(f)) => self.push(with_f(op, f), 0),
            None => {
                self.expr(b, wb)?;
                self.push(Op::Bin(op), -1)
            }
        }
    }

    /// `e` below its value's bound of 64 bits (an exact sum or product cannot wrap).
    fn fits(&self, e: &Expr) -> bool {
        bits(e, self.widths).is_some_and(|b| b <= 64)
    }

    fn expr(&mut self, e: &Expr, want: Want) -> Option<()> {
        use Want::{Exact, Mod};
        match e {
            Expr::Const(_) => match self.operand(e, want)? {
                Operand::K(k) => self.push(Op::Const(k), 1),
                Operand::F(_) => None,
            },
            Expr::Field(f) => self.push(Op::Field(*f as u32), 1),
            Expr::Valid(h) => self.push(Op::Valid(*h as u32), 1),
            Expr::Runtime(i) => self.push(Op::Param(*i as u32), 1),
            Expr::Lookahead { offset, width } => self.push(Op::Lookahead { offset: *offset, width: *width }, 1),
            Expr::Un(UnOp::B2d, x) => self.expr(x, want),
            Expr::Un(UnOp::Not, x) => {
                self.expr(x, Exact)?;
                self.push(Op::Not, 0)
            }
            Expr::Un(UnOp::D2b, x) => {
                self.expr(x, Exact)?;
                self.push(Op::Truth, 0)
            }
            // negative in i128: only their low 64 bits are u64's
            Expr::Un(UnOp::BitNot, x) if want == Mod => {
                self.expr(x, Mod)?;
                self.push(Op::BitNot, 0)
            }
            Expr::Un(UnOp::Neg, x) if want == Mod => {
                self.expr(x, Mod)?;
                self.push(Op::Neg, 0)
            }
            Expr::Bin(BinOp::LAnd | BinOp::LOr, a, b) => {
                let and = matches!(e, Expr::Bin(BinOp::LAnd, ..));
                self.expr(a, Exact)?;
                let at = self.ops.len();
                self.push(if and { Op::AndJ(0) } else { Op::OrJ(0) }, -1)?;
                self.expr(b, Exact)?;
                self.push(Op::Truth, 0)?;
                let end = self.ops.len() as u32;
                self.ops[at] = if and { Op::AndJ(end) } else { Op::OrJ(end) };
                Some(())
            }
            Expr::Bin(op, a, b) => match (op, want) {
                // x & m lies within m when m does, whatever x is
                (BinOp::And, Exact) => {
                    let (len, depth, max) = (self.ops.len(), self.depth, self.max);
                    if self.bin(*op, a, b, Mod, Exact).is_some() {
                        return Some(());
                    }
                    self.ops.truncate(len);
                    (self.depth, self.max) = (depth, max);
                    self.bin(*op, a, b, Exact, Mod)
                }
                (BinOp::And | BinOp::Or | BinOp::Xor, w) => self.bin(*op, a, b, w, w),
                (BinOp::Add | BinOp::Mul, Exact) if self.fits(e) => self.bin(*op, a, b, Exact, Exact),
                (BinOp::Add | BinOp::Mul | BinOp::Sub, Mod) => self.bin(*op, a, b, Mod, Mod),
                (BinOp::Shl, Exact) if self.fits(e) => self.bin(*op, a, b, Exact, Exact),
                (BinOp::Shl, Mod) => self.bin(*op, a, b, Mod, Exact),
                (
                    BinOp::Shr | BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::USat,
                    _,
                ) => self.bin(*op, a, b, Exact, Exact),
                _ => None,
            },
            Expr::Cond(c, a, b) => {
                self.expr(c, Exact)?;
                let jz = self.ops.len();
                self.push(Op::Jz(0), -1)?;
                self.expr(a, want)?;
                let jmp = self.ops.len();
                self.push(Op::Jmp(0), -1)?; // the else branch pushes the one value again
                self.ops[jz] = Op::Jz(self.ops.len() as u32);
                self.expr(b, want)?;
                self.ops[jmp] = Op::Jmp(self.ops.len() as u32);
                Some(())
            }
            _ => None,
        }
    }
}

enum Operand {
    K(u64),
    F(u32),
}

/// `e` as code for a place that needs `want` of it; None: it stays a tree (a leaf, which the
/// evaluator reads without code, or an expression this cannot prove or express).
pub fn compile(e: &Expr, want: Want, widths: &[u32]) -> Option<Expr> {
    if matches!(e, Expr::Const(_) | Expr::Field(_) | Expr::Valid(_) | Expr::Runtime(_) | Expr::Code(_)) {
        return None;
    }
    let mut c = Compiler { ops: Vec::new(), widths, depth: 0, max: 0 };
    c.expr(e, want)?;
    Some(Expr::Code(c.ops.into_boxed_slice()))
}

#[inline(always)]
pub fn bin(op: BinOp, x: u64, y: u64) -> u64 {
    match op {
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Shl => {
            if y < 64 {
                x << y
            } else {
                0
            }
        }
        BinOp::Shr => {
            if y < 64 {
                x >> y
            } else {
                0
            }
        }
        BinOp::Eq => (x == y) as u64,
        BinOp::Ne => (x != y) as u64,
        BinOp::Lt => (x < y) as u64,
        BinOp::Le => (x <= y) as u64,
        BinOp::Gt => (x > y) as u64,
        BinOp::Ge => (x >= y) as u64,
        BinOp::LAnd => (x != 0 && y != 0) as u64,
        BinOp::LOr => (x != 0 || y != 0) as u64,
        BinOp::USat => x.min(if y < 64 { (1 << y) - 1 } else { u64::MAX }),
        // signed values: `Compiler::expr` leaves these operators to the i128 tree
        BinOp::TwoCompMod | BinOp::SatCast => unreachable!("signed operators are not compiled"),
    }
}

/// Compile every expression of the program whose place is known, in place.
pub fn program(ir: &mut Ir) {
    let widths = ir.slot_width.clone();
    let c = |e: &mut Expr, want: Want| {
        if let Some(code) = compile(e, want, &widths) {
            *e = code;
        }
    };
    let prim = |p: &mut Prim| match p {
        // a store keeps the low bits of its slot (at most 64)
        Prim::Assign(_, e) => c(e, Want::Mod),
        // an index outside 0 .. 2^64 is out of every array
        Prim::Count(_, e) | Prim::ExecuteMeter(_, e, _) | Prim::RegisterRead(_, _, e) => c(e, Want::Exact),
        Prim::RegisterWrite(_, i, e) => {
            c(i, Want::Exact);
            c(e, Want::Mod)
        }
        Prim::AssignDyn(a) => {
            c(&mut a.1, Want::Exact);
            c(&mut a.3, Want::Mod)
        }
        Prim::Push(_, e) | Prim::Pop(_, e) => c(e, Want::Exact),
        _ => {}
    };
    for st in &mut ir.states {
        for op in &mut st.ops {
            match op {
                ParserOp::Set(_, e) | ParserOp::ExtractVl(_, e) | ParserOp::ExtractStackVl(_, e) => c(e, Want::Mod),
                ParserOp::Advance(e) => c(e, Want::Exact),
                ParserOp::Verify(cond, err) => {
                    c(cond, Want::Exact);
                    c(err, Want::Mod)
                }
                ParserOp::Prim(p) => prim(p),
                ParserOp::Extract(_)
                | ParserOp::ExtractStack(_)
                | ParserOp::ExtractUnionStack(..)
                | ParserOp::SetWide(_) => {}
            }
        }
    }
    for a in &mut ir.actions {
        a.prims.iter_mut().for_each(prim);
    }
    for t in &mut ir.tables {
        for k in &mut t.keys {
            c(&mut k.src, Want::Mod);
        }
    }
    for cond in &mut ir.conds {
        c(&mut cond.expr, Want::Exact);
    }
    for ck in &mut ir.checksums {
        if let Some(e) = &mut ck.cond {
            c(e, Want::Exact);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random trees of every operator over fields of several widths, parameters and constants
    /// (small, near 2^64, beyond it, negative): wherever one compiles, its code computes what
    /// the tree interpreter does (i128), exactly or modulo 2^64 as asked.
    #[test]
    fn code_computes_what_the_tree_does() {
        let widths = [1u32, 4, 8, 16, 32, 48, 64, 64];
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        const BINS: [BinOp; 17] = [
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Shl,
            BinOp::Shr,
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
            BinOp::LAnd,
            BinOp::LOr,
            BinOp::USat,
        ];
        const UNS: [UnOp; 5] = [UnOp::Not, UnOp::BitNot, UnOp::Neg, UnOp::B2d, UnOp::D2b];
        fn gen(next: &mut impl FnMut() -> u64, depth: u32) -> Expr {
            let r = next();
            if depth == 0 || r.is_multiple_of(5) {
                return match (r >> 8) % 7 {
                    0 | 1 => Expr::Field((r >> 16) as usize % 8),
                    2 => Expr::Valid((r >> 16) as usize % 2),
                    3 => Expr::Runtime((r >> 16) as usize % 3),
                    4 => Expr::Const(((r >> 16) % 70) as i128),
                    5 => Expr::Const(
                        [0xff, 0xffff_ffff, u64::MAX as i128, 1 << 64, -1, (1 << 70) + 3][(r >> 16) as usize % 6],
                    ),
                    _ => Expr::Const((next() >> (next() % 64)) as i128),
                };
            }
            match (r >> 8) % 6 {
                0 => Expr::Un(UNS[(r >> 16) as usize % 5], Box::new(gen(next, depth - 1))),
                1 => Expr::Cond(
                    Box::new(gen(next, depth - 1)),
                    Box::new(gen(next, depth - 1)),
                    Box::new(gen(next, depth - 1)),
                ),
                _ => Expr::Bin(
                    BINS[(r >> 16) as usize % 17],
                    Box::new(gen(next, depth - 1)),
                    Box::new(gen(next, depth - 1)),
                ),
            }
        }
        let mut e = crate::engine(include_str!("../../compiled/slicing.json")).unwrap();
        let mut pkt = e.fresh();
        let (mut compiled, mut total) = (0, 0);
        for _ in 0..40_000 {
            let depth = 1 + (next() % 4) as u32;
            let tree = gen(&mut next, depth);
            let want = if next().is_multiple_of(2) { Want::Exact } else { Want::Mod };
            total += 1;
            let Some(Expr::Code(code)) = compile(&tree, want, &widths) else { continue };
            compiled += 1;
            for _ in 0..8 {
                for (f, w) in widths.iter().enumerate() {
                    let v = [0, 1, u64::MAX, next()][(next() % 4) as usize];
                    pkt.fields[f] = v & crate::table::full(*w);
                }
                pkt.valid[0] = next().is_multiple_of(2);
                pkt.valid[1] = next().is_multiple_of(2);
                let params = [next(), next() % 8, 0];
                let want_v = e.eval_for_test(&tree, &pkt, &params);
                let got = run(&code, &pkt.fields, &pkt.valid, &params, &[], 0).ok().unwrap();
                match want {
                    Want::Exact => assert_eq!(got as i128, want_v, "{tree:?} -> {code:?}"),
                    Want::Mod => assert_eq!(got, want_v as u64, "{tree:?} -> {code:?}"),
                }
            }
        }
        assert!(compiled * 3 > total, "{compiled} of {total} compiled");
    }
}
