//! Values of fields wider than 64 bits (issue #30: IPv6 addresses and wider), evaluated
//! apart from the u64 / i128 paths so that programs without such fields pay nothing.
//!
//! BMv2 evaluates every expression over GMP integers of unbounded precision; p4c masks each
//! result to its type's width. [`Big`] is a two's-complement integer of [`BITS`] bits with
//! wrapping arithmetic: its low bits equal GMP's for `+ - * << & | ^ ~` whatever the width,
//! and its comparisons and arithmetic `>>` (GMP's `fdiv_q_2exp`, floor) equal GMP's while
//! values stay within ±2^(BITS-1). Fields are at most [`MAX_FIELD_BITS`] wide, so that the
//! product of two of them, the widest value p4c computes before masking it to its type's
//! width, is exact in its low [`BITS`] bits (two unsigned 384-bit maxima multiply to
//! 2^768 - 2^385 + 1, which reads as negative: only the mask that follows reads it).
//!
//! The arithmetic is the `bnum` crate's (a signed integer of [`BITS`] bits whose overflow
//! mode is "wrap" in every build profile); this module only adds what P4 needs on top of
//! it: shifts by any amount (not taken modulo the width, as Rust's and bnum's `<<` are), the
//! conversion to and from the u64 slots that hold a wide field, and sign extension.

use bnum::cast::CastFrom;
use bnum::{Int, OverflowMode, Uint};
use std::ops::{Add, BitAnd, BitOr, BitXor, Mul, Neg, Not, Sub};

/// The u64 slots of a [`Big`].
const WORDS: usize = 12;
/// The width of a [`Big`].
pub const BITS: u32 = WORDS as u32 * 64;
/// The widest field this engine executes (a product of two is exact in [`BITS`] bits).
pub const MAX_FIELD_BITS: u32 = BITS / 2;

const BYTES: usize = BITS as usize / 8;
const WRAP: u8 = OverflowMode::Wrap as u8;
type I768 = Int<BYTES, 0, WRAP>;
type U768 = Uint<BYTES, 0, WRAP>;

/// A two's-complement integer of [`BITS`] bits. `+ - * & | ^ ! -x` wrap, and the order is
/// the signed one; shifts are [`Big::shl`] and [`Big::shr`].
///
/// Aligned as the u64 words it is read and written in: bnum keeps bytes (alignment 1), and a
/// `Result<Big, _>` then puts the value at an odd offset, which made the wide paths of
/// tests/p4/wide_signed.p4 a third slower again.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[repr(align(8))]
pub struct Big(I768);

impl Big {
    pub const ZERO: Big = Big(I768::from_bytes([0; BYTES]));

    pub fn from_i128(v: i128) -> Big {
        Big(I768::cast_from(v))
    }

    /// A non-negative value from big-endian hex digits (at most [`BITS`] bits' worth kept:
    /// digits before the last `BITS / 4` are ignored). None when a kept one is no hex digit.
    pub fn from_hex(digits: &str) -> Option<Big> {
        let kept = &digits.as_bytes()[digits.len().saturating_sub(BITS as usize / 4)..];
        if kept.is_empty() {
            return Some(Big::ZERO);
        }
        // bnum would also take a leading '+'
        if !kept.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        // parsed unsigned: BITS / 4 digits of which the first is 8 or more are a negative Big
        Some(Big(U768::from_ascii_radix(kept, 16).ok()?.cast_signed()))
    }

    /// Its u64 word `i` (0 the least significant).
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.0.as_bytes()[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    }

    /// Its u64 word `i` set (0 the least significant): in place, as a wide field's slots
    /// are read.
    #[inline]
    pub fn set_word(&mut self, i: usize, w: u64) {
        self.0.as_bytes_mut()[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }

    /// The low 128 bits, as the i128 the narrow evaluator works in.
    pub fn low_i128(&self) -> i128 {
        i128::cast_from(self.0)
    }

    pub fn is_neg(&self) -> bool {
        self.0.is_negative()
    }

    pub fn is_zero(&self) -> bool {
        self.0.is_zero()
    }

    /// The value as a shift or width operand: None when negative or beyond any width here.
    pub fn small(&self) -> Option<u32> {
        u32::try_from(self.0).ok()
    }

    /// `self << n`, wrapping: 0 once `n >= BITS`.
    pub fn shl(&self, n: u32) -> Big {
        Big(self.0.unbounded_shl(n))
    }

    /// `self >> n`, arithmetic (floor), as GMP shifts a negative number: the sign once
    /// `n >= BITS`.
    pub fn shr(&self, n: u32) -> Big {
        Big(self.0.unbounded_shr(n))
    }

    /// 2^n - 1 (n < BITS; -1, all ones, from n = BITS on).
    pub fn ones(n: u32) -> Big {
        Big::from_i128(1).shl(n) - Big::from_i128(1)
    }

    /// The low `n` bits read as an n-bit two's-complement number.
    pub fn sign_extend(&self, n: u32) -> Big {
        match n {
            0 => Big::ZERO,
            n if n >= BITS => *self,
            n => self.shl(BITS - n).shr(BITS - n),
        }
    }
}

/// The operators of [`Big`], each bnum's wrapping one.
macro_rules! big_ops {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl $trait for Big {
            type Output = Big;
            #[inline]
            fn $method(self, o: Big) -> Big {
                Big(self.0.$op(o.0))
            }
        }
    )*};
}

big_ops! {
    Add add wrapping_add;
    Sub sub wrapping_sub;
    Mul mul wrapping_mul;
    BitAnd bitand bitand;
    BitOr bitor bitor;
    BitXor bitxor bitxor;
}

impl Not for Big {
    type Output = Big;
    #[inline]
    fn not(self) -> Big {
        Big(!self.0)
    }
}

impl Neg for Big {
    type Output = Big;
    #[inline]
    fn neg(self) -> Big {
        Big(self.0.wrapping_neg())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    fn b(v: i128) -> Big {
        Big::from_i128(v)
    }

    /// Each operator against i128's where both hold: the low 128 bits of `+ - * << & | ^ !
    /// -x` always, the order and `>>` of values that fit.
    fn agrees(x: i128, y: i128) {
        let (bx, by) = (b(x), b(y));
        assert_eq!((bx + by).low_i128(), x.wrapping_add(y), "{x} + {y}");
        assert_eq!((bx - by).low_i128(), x.wrapping_sub(y), "{x} - {y}");
        assert_eq!((bx * by).low_i128(), x.wrapping_mul(y), "{x} * {y}");
        assert_eq!(bx.cmp(&by), x.cmp(&y), "{x} cmp {y}");
        assert_eq!(bx == by, x == y);
        assert_eq!((bx & by).low_i128(), x & y);
        assert_eq!((bx | by).low_i128(), x | y);
        assert_eq!((bx ^ by).low_i128(), x ^ y);
        // bitwise results of two i128 are i128 whole: the high words are the sign's
        assert_eq!(bx & by, b(x & y));
        assert_eq!(bx | by, b(x | y));
        assert_eq!(bx ^ by, b(x ^ y));
        assert_eq!((!bx).low_i128(), !x);
        assert_eq!(!bx, b(!x));
        assert_eq!((-bx).low_i128(), x.wrapping_neg());
        assert_eq!(bx.is_neg(), x < 0);
        assert_eq!(bx.is_zero(), x == 0);
        assert_eq!(bx.small(), u32::try_from(x).ok());
        // a sum, difference or product of two i128 is exact here: it equals i128's where
        // that holds, and has the sign i128's overflow lost where it does not
        match x.checked_add(y) {
            Some(s) => assert_eq!(bx + by, b(s)),
            None => assert_eq!((bx + by).is_neg(), x < 0, "{x} + {y}"),
        }
        match x.checked_sub(y) {
            Some(d) => assert_eq!(bx - by, b(d)),
            None => assert_eq!((bx - by).is_neg(), x < 0, "{x} - {y}"),
        }
        if let Some(p) = x.checked_mul(y) {
            assert_eq!(bx * by, b(p));
        }
        for n in [0u32, 1, 7, 31, 63, 64, 65, 100, 126, 127] {
            assert_eq!(bx.shr(n).low_i128(), x >> n, "{x} >> {n}");
            assert_eq!(bx.shr(n), b(x >> n), "{x} >> {n}");
            assert_eq!(bx.shl(n).low_i128(), x.wrapping_shl(n), "{x} << {n}");
            let m = n + 1;
            if m < 128 {
                let s = (x << (128 - m)) >> (128 - m);
                assert_eq!(bx.sign_extend(m), b(s), "{x} sign-extended from {m} bits");
            }
        }
        for n in [128u32, 200, BITS - 1, BITS, BITS + 1, u32::MAX] {
            assert_eq!(bx.shr(n), b(x >> 127), "{x} >> {n}");
        }
        assert_eq!(bx.shl(BITS), Big::ZERO);
        assert_eq!(bx.shl(u32::MAX), Big::ZERO);
        assert_eq!(from_words(words(bx)), bx);
    }

    #[test]
    fn arithmetic_agrees_with_i128_where_both_hold() {
        let vals = [0i128, 1, -1, 5, -7, 1 << 63, (1 << 64) + 3, -(1 << 100), i64::MAX as i128, 0x1234_5678_9abc];
        for &x in &vals {
            for &y in &vals {
                agrees(x, y);
            }
        }
    }

    fn words(v: Big) -> [u64; WORDS] {
        std::array::from_fn(|i| v.word(i))
    }

    fn from_words(words: [u64; WORDS]) -> Big {
        let mut v = Big::ZERO;
        for (i, w) in words.into_iter().enumerate() {
            v.set_word(i, w);
        }
        v
    }

    /// xorshift128+: random operands without a dependency; a fixed seed, so a failure repeats.
    struct Rng(u64, u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let (mut s1, s0) = (self.0, self.1);
            self.0 = s0;
            s1 ^= s1 << 23;
            self.1 = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
            self.1.wrapping_add(s0)
        }

        /// A random i128 of a random width (small values, the edges and all 128 bits alike).
        fn i128(&mut self) -> i128 {
            let v = ((self.next() as u128) << 64 | self.next() as u128) as i128;
            match self.next() % 8 {
                0 => v >> (self.next() % 128), // any width, sign kept
                1 => (v >> 120) as i8 as i128, // tiny
                2 => [0, 1, -1, i128::MAX, i128::MIN][(self.next() % 5) as usize],
                3 => v as i64 as i128, // 64 bits
                _ => v,
            }
        }
    }

    #[test]
    fn random_operands_agree_with_i128() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15, 0xd1b5_4a32_d192_ed03);
        for _ in 0..20_000 {
            let (x, y) = (r.i128(), r.i128());
            agrees(x, y);
            // a shift of any amount, and the value from its hex digits
            let n = (r.next() % 140) as u32;
            assert_eq!(b(x).shl(n).low_i128(), if n < 128 { x << n } else { 0 }, "{x} << {n}");
            assert_eq!(b(x).shr(n).low_i128(), x >> n.min(127), "{x} >> {n}");
            if x >= 0 {
                assert_eq!(Big::from_hex(&format!("{x:x}")), Some(b(x)));
            }
            // a product of two i128 fits in 256 bits: the wide value is exact, as GMP's
            let (hi, lo) = wide_mul(x, y);
            let p = b(x) * b(y);
            assert_eq!(p.low_i128(), lo as i128);
            assert_eq!(p.shr(128).low_i128(), hi, "{x} * {y}");
            assert_eq!(p.shr(255), b(if (x < 0) != (y < 0) && x != 0 && y != 0 { -1 } else { 0 }));
        }
    }

    /// `x * y` as (its high 128 bits, signed; its low 128 bits): u64 halves, u128 products.
    fn wide_mul(x: i128, y: i128) -> (i128, u128) {
        let neg = (x < 0) != (y < 0) && x != 0 && y != 0;
        let (ux, uy) = (x.unsigned_abs(), y.unsigned_abs());
        let (a1, a0, b1, b0) = (ux >> 64, ux & u64::MAX as u128, uy >> 64, uy & u64::MAX as u128);
        let (mid, c1) = (a0 * b1).overflowing_add(a1 * b0);
        let (lo, c2) = (a0 * b0).overflowing_add(mid << 64);
        let hi = a1 * b1 + (mid >> 64) + ((c1 as u128) << 64) + c2 as u128;
        if neg {
            // the two's complement of the 256-bit (hi, lo)
            let (lo, c) = (!lo).overflowing_add(1);
            ((!hi).wrapping_add(c as u128) as i128, lo)
        } else {
            (hi as i128, lo)
        }
    }

    #[test]
    fn values_past_128_bits() {
        // 2^128 - 1 is positive here (an IPv6 address of all ones), unlike in i128
        let all = Big::ones(128);
        assert!(!all.is_neg());
        assert_eq!(all.cmp(&b(0)), Ordering::Greater);
        assert_eq!(all.shr(120).low_i128(), 0xff);
        assert_eq!(all + b(1), b(1).shl(128));
        assert_eq!((all + b(1)).low_i128(), 0);
        // a 336-bit value survives a product's wrap in its low 336 bits
        let x = Big::ones(336);
        let sq = x * x;
        assert_eq!(sq & Big::ones(336), b(1));
        assert_eq!(Big::from_hex("ff").unwrap(), b(255));
        assert_eq!(Big::from_hex(&"f".repeat(84)).unwrap(), Big::ones(336));
        assert_eq!(b(-1).shr(BITS + 5), b(-1));
        assert_eq!(b(0x80).sign_extend(8), b(-128));
        assert_eq!(Big::ones(200).sign_extend(200), b(-1));
        assert_eq!(b(5).small(), Some(5));
        assert_eq!(b(-5).small(), None);
    }

    #[test]
    fn the_edges_of_the_width() {
        // the widest field's largest value squared, 2^768 - 2^385 + 1, needs 768 bits: its
        // low bits are GMP's, but it reads as negative (as it did before bnum)
        let max = Big::ones(MAX_FIELD_BITS);
        assert_eq!(max * max, b(1) - b(1).shl(MAX_FIELD_BITS + 1));
        assert!((max * max).is_neg());
        let below = Big::ones(MAX_FIELD_BITS - 1);
        assert_eq!(below * below, b(1).shl(2 * MAX_FIELD_BITS - 2) - b(1).shl(MAX_FIELD_BITS) + b(1));
        assert!(!(below * below).is_neg());
        // the top bit is the sign; a shift into it wraps as GMP's low bits do
        assert!(b(1).shl(BITS - 1).is_neg());
        assert_eq!(b(1).shl(BITS - 1).shr(BITS - 1), b(-1));
        assert_eq!(b(1).shl(BITS - 1) + b(1).shl(BITS - 1), Big::ZERO);
        assert_eq!(Big::ones(BITS), b(-1));
        assert_eq!(Big::ones(BITS - 1), !b(1).shl(BITS - 1));
        assert!(Big::ones(BITS - 1) > b(1).shl(BITS - 2));
        assert!(b(1).shl(BITS - 1) < b(i128::MIN));
        assert_eq!(-b(1).shl(BITS - 1), b(1).shl(BITS - 1));
        // words: least significant first, the sign in the top bit of the last
        let mut w = [0u64; WORDS];
        w[0] = 1;
        w[WORDS - 1] = 1 << 63;
        assert_eq!(from_words(w), b(1).shl(BITS - 1) + b(1));
        let mut minus_two = [u64::MAX; WORDS];
        minus_two[0] = u64::MAX - 1;
        assert_eq!(words(b(-2)), minus_two);
        assert_eq!(b(1).shl(130).word(2), 4);
        // hex: at most BITS / 4 digits kept; a first one of 8 or more makes a negative Big
        assert_eq!(Big::from_hex(&"f".repeat(BITS as usize / 4)), Some(b(-1)));
        assert_eq!(Big::from_hex(&format!("zz{}", "0".repeat(BITS as usize / 4 - 2) + "12")), Some(b(0x12)));
        assert_eq!(Big::from_hex(&("1".to_string() + &"0".repeat(33))), Some(b(1).shl(132)));
        assert_eq!(Big::from_hex(""), Some(Big::ZERO));
        assert_eq!(Big::from_hex("12g4"), None);
        assert_eq!(Big::from_hex("+123"), None);
        assert_eq!(Big::from_hex("-123"), None);
        // small: a shift or width operand
        assert_eq!(b(u32::MAX as i128).small(), Some(u32::MAX));
        assert_eq!(b(u32::MAX as i128 + 1).small(), None);
        assert_eq!(b(1).shl(200).small(), None);
        // sign extension of and past the width
        assert_eq!(b(-1).sign_extend(0), Big::ZERO);
        assert_eq!(b(1).shl(BITS - 1).sign_extend(BITS), b(1).shl(BITS - 1));
        assert_eq!(b(1).shl(BITS - 2).sign_extend(BITS - 1), b(-1).shl(BITS - 2));
        assert_eq!(Big::ones(300).sign_extend(301), Big::ones(300));
    }
}
