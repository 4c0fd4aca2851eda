//! Load-time simplification of the program's expressions, so that the per-packet evaluator
//! walks fewer nodes. p4c's BMv2 JSON wraps most values in casts that do nothing at run
//! time here: `x & 0xffffffff` on a 4-bit field (the engine keeps every field masked to its
//! width), `d2b(valid(h))`, `b2d(a == b)`. A rewrite happens only where the value cannot
//! change: each rule rests on a bound on the operand (0 <= v < 2^bits), see [`bits`].

use crate::exec::{bin_op, un_op};
use crate::ir::{BinOp, Expr, Ir, ParserOp, Prim, UnOp};

/// Simplify every expression of the program in place.
pub fn program(ir: &mut Ir) {
    let widths = ir.slot_width.clone();
    let s = |e: &mut Expr| *e = expr(std::mem::replace(e, Expr::Const(0)), &widths);
    // an assignment masks to its destination's width itself
    let set = |dst: usize, e: &mut Expr| {
        s(e);
        *e = into(std::mem::replace(e, Expr::Const(0)), widths[dst]);
    };
    let prim = |p: &mut Prim| match p {
        Prim::Assign(dst, e) => set(*dst, e),
        Prim::Count(_, e) | Prim::ExecuteMeter(_, e, _) | Prim::RegisterRead(_, _, e) => s(e),
        Prim::RegisterWrite(_, i, e) => {
            s(i);
            s(e)
        }
        Prim::AssignDyn(a) => {
            s(&mut a.1);
            s(&mut a.3)
        }
        Prim::Push(_, e) | Prim::Pop(_, e) => s(e),
        Prim::HashOffset(h) => {
            s(&mut h.1);
            s(&mut h.3)
        }
        Prim::AddHeader(_)
        | Prim::RemoveHeader(_)
        | Prim::AssignHeader(..)
        | Prim::AssignUnion(..)
        | Prim::AssignStack(..)
        | Prim::Exit
        | Prim::AssignVl(..)
        | Prim::MarkToDrop => {}
        // evaluated over Big as a whole: the i128 rules do not hold there
        Prim::AssignWide(_) => {}
    };
    for st in &mut ir.states {
        for op in &mut st.ops {
            match op {
                ParserOp::Set(dst, e) => set(*dst, e),
                ParserOp::ExtractVl(_, e) | ParserOp::ExtractStackVl(_, e) | ParserOp::Advance(e) => s(e),
                ParserOp::Verify(c, e) => {
                    s(c);
                    s(e)
                }
                ParserOp::Prim(p) => prim(p),
                ParserOp::Extract(_)
                | ParserOp::ExtractStack(_)
                | ParserOp::ExtractUnionStack(..)
                | ParserOp::SetWide(_) => {}
            }
        }
        for (e, _) in &mut st.key {
            s(e);
        }
    }
    for a in &mut ir.actions {
        for p in &mut a.prims {
            prim(p);
        }
    }
    for t in &mut ir.tables {
        for k in &mut t.keys {
            s(&mut k.src);
        }
    }
    for c in &mut ir.conds {
        s(&mut c.expr);
    }
    for c in &mut ir.checksums {
        if let Some(e) = &mut c.cond {
            s(e);
        }
    }
}

/// Bits that bound the value: `Some(b)` when it is always in 0 .. 2^b (None: unknown, or
/// possibly negative). Fields are stored masked to their slot's width by every write.
pub fn bits(e: &Expr, widths: &[u32]) -> Option<u32> {
    const MAX: u32 = 126; // sums and products stay clear of i128's sign bit
    let cap = |b: u32| (b <= MAX).then_some(b);
    match e {
        Expr::Const(c) => (*c >= 0).then(|| 128 - c.leading_zeros()),
        Expr::Field(f) => widths.get(*f).copied(),
        Expr::Valid(_) => Some(1),
        Expr::Lookahead { width, .. } => Some(*width),
        Expr::Runtime(_) | Expr::StackField { .. } | Expr::LastField { .. } | Expr::Code(_) => None,
        // sign-extended: may be negative
        Expr::SField(..) => None,
        Expr::Wide(..) | Expr::BigConst(_) | Expr::Big(_) => None,
        Expr::StackValid { .. } | Expr::UnionValid(_) | Expr::VarbitEq(..) => Some(1),
        Expr::Un(UnOp::D2b | UnOp::Not, _) => Some(1),
        Expr::Un(UnOp::B2d, x) => bits(x, widths),
        Expr::Un(UnOp::BitNot | UnOp::Neg, _) => None,
        Expr::Bin(op, a, b) => {
            let (x, y) = (bits(a, widths), bits(b, widths));
            match op {
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::LAnd | BinOp::LOr => {
                    Some(1)
                }
                // a & b is within b when b >= 0, whatever a is (two's complement)
                BinOp::And => match (x, y) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                },
                BinOp::Or | BinOp::Xor => Some(x?.max(y?)),
                BinOp::Add => cap(x?.max(y?) + 1),
                BinOp::Mul => cap(x? + y?),
                BinOp::Shl => match &**b {
                    Expr::Const(k) if (0..=MAX as i128).contains(k) => cap(x? + *k as u32),
                    _ => None,
                },
                BinOp::Shr => match &**b {
                    Expr::Const(k) if *k >= 0 => Some(x?.saturating_sub((*k).min(128) as u32)),
                    _ => None,
                },
                BinOp::Sub | BinOp::TwoCompMod | BinOp::SatCast => None,
                BinOp::USat => match &**b {
                    Expr::Const(k) if (0..=MAX as i128).contains(k) => Some(*k as u32),
                    _ => None,
                },
            }
        }
        Expr::Cond(_, a, b) => Some(bits(a, widths)?.max(bits(b, widths)?)),
    }
}

fn ones(b: u32) -> i128 {
    if b >= 127 {
        i128::MAX
    } else {
        (1i128 << b) - 1
    }
}

/// `e` as stored into a slot of `width` bits (the store keeps the low `width` bits): an
/// outer mask that keeps at least those bits goes.
pub fn into(e: Expr, width: u32) -> Expr {
    match e {
        Expr::Bin(BinOp::And, a, b) if width <= 64 => match (*a, *b) {
            (x, Expr::Const(m)) | (Expr::Const(m), x) if m & ones(width) == ones(width) => x,
            (a, b) => Expr::Bin(BinOp::And, Box::new(a), Box::new(b)),
        },
        e => e,
    }
}

/// One expression, children first.
pub fn expr(e: Expr, widths: &[u32]) -> Expr {
    match e {
        Expr::Un(op, x) => {
            let x = expr(*x, widths);
            match (op, x) {
                (_, Expr::Const(c)) => Expr::Const(un_op(op, c)),
                (UnOp::B2d, x) => x, // the identity at run time
                (UnOp::D2b, x) if bits(&x, widths).is_some_and(|b| b <= 1) => x,
                (op, x) => Expr::Un(op, Box::new(x)),
            }
        }
        Expr::Bin(op, a, b) => {
            let (a, b) = (expr(*a, widths), expr(*b, widths));
            match (op, a, b) {
                (op, Expr::Const(x), Expr::Const(y)) => Expr::Const(bin_op(op, x, y)),
                // masking a value already within the mask
                (BinOp::And, x, Expr::Const(m)) | (BinOp::And, Expr::Const(m), x)
                    if bits(&x, widths).is_some_and(|b| m >= 0 && m & ones(b) == ones(b)) =>
                {
                    x
                }
                (op, a, b) => Expr::Bin(op, Box::new(a), Box::new(b)),
            }
        }
        Expr::Cond(c, a, b) => {
            let (c, a, b) = (expr(*c, widths), expr(*a, widths), expr(*b, widths));
            match c {
                Expr::Const(v) => {
                    if v != 0 {
                        a
                    } else {
                        b
                    }
                }
                c => Expr::Cond(Box::new(c), Box::new(a), Box::new(b)),
            }
        }
        leaf => leaf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(i: usize) -> Box<Expr> {
        Box::new(Expr::Field(i))
    }
    fn k(c: i128) -> Box<Expr> {
        Box::new(Expr::Const(c))
    }
    fn show(e: &Expr) -> String {
        format!("{e:?}")
    }

    const W: &[u32] = &[4, 32, 1, 64];

    #[test]
    fn drops_masks_a_value_already_fits_and_keeps_those_that_cut() {
        let widen = Expr::Bin(BinOp::And, f(0), k(0xffff_ffff));
        assert_eq!(show(&expr(widen, W)), "Field(0)");
        let cut = Expr::Bin(BinOp::And, f(1), k(0xff));
        assert_eq!(show(&expr(cut.clone(), W)), show(&cut));
        // a 32-bit field plus 4 can carry into bit 32: the mask wraps it and stays
        let wrap = Expr::Bin(BinOp::And, Box::new(Expr::Bin(BinOp::Add, f(1), k(4))), k(0xffff_ffff));
        assert_eq!(show(&expr(wrap.clone(), W)), show(&wrap));
        // a negative operand (subtraction) keeps its mask
        let neg = Expr::Bin(BinOp::And, Box::new(Expr::Bin(BinOp::Sub, f(0), k(5))), k(0xffff_ffff));
        assert_eq!(show(&expr(neg.clone(), W)), show(&neg));
        // a parameter's width is not trusted
        let param = Expr::Bin(BinOp::And, Box::new(Expr::Runtime(0)), k(1));
        assert_eq!(show(&expr(param.clone(), W)), show(&param));
    }

    #[test]
    fn an_assignment_keeps_the_mask_that_cuts_below_its_width() {
        let wrap = || Expr::Bin(BinOp::And, Box::new(Expr::Bin(BinOp::Add, f(1), k(4))), k(0xffff_ffff));
        assert_eq!(show(&into(wrap(), 32)), "Bin(Add, Field(1), Const(4))");
        assert_eq!(show(&into(wrap(), 33)), show(&wrap()), "a 33-bit slot would see the carry");
    }

    #[test]
    fn drops_casts_between_bool_and_bit_and_folds_constants() {
        let e = Expr::Un(UnOp::D2b, Box::new(Expr::Valid(3)));
        assert_eq!(show(&expr(e, W)), "Valid(3)");
        let e = Expr::Un(UnOp::B2d, Box::new(Expr::Bin(BinOp::Eq, f(0), k(4))));
        assert_eq!(show(&expr(e, W)), "Bin(Eq, Field(0), Const(4))");
        let e = Expr::Un(UnOp::D2b, f(2));
        assert_eq!(show(&expr(e, W)), "Field(2)");
        let kept = Expr::Un(UnOp::D2b, f(0)); // 4 bits: d2b turns 5 into 1
        assert_eq!(show(&expr(kept.clone(), W)), show(&kept));
        let e = Expr::Bin(BinOp::Shl, Box::new(Expr::Bin(BinOp::Add, k(3), k(4))), k(2));
        assert_eq!(show(&expr(e, W)), "Const(28)");
    }
}
