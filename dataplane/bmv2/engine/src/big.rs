//! Values of fields wider than 64 bits (issue #30: IPv6 addresses and wider), evaluated
//! apart from the u64 / i128 paths so that programs without such fields pay nothing.
//!
//! BMv2 evaluates every expression over GMP integers of unbounded precision; p4c masks each
//! result to its type's width. [`Big`] is a two's-complement integer of [`BITS`] bits with
//! wrapping arithmetic: its low bits equal GMP's for `+ - * << & | ^ ~` whatever the width,
//! and its comparisons and arithmetic `>>` (GMP's `fdiv_q_2exp`, floor) equal GMP's while
//! values stay within ±2^(BITS-1). Fields are at most [`MAX_FIELD_BITS`] wide, so that the
//! product of two of them, the widest value p4c leaves unmasked, still fits.

use std::cmp::Ordering;

const WORDS: usize = 12;
/// The width of a [`Big`].
pub const BITS: u32 = WORDS as u32 * 64;
/// The widest field this engine executes (a product of two fits in [`BITS`]).
pub const MAX_FIELD_BITS: u32 = BITS / 2;

/// A two's-complement integer of [`BITS`] bits, least significant word first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Big(pub [u64; WORDS]);

impl Big {
    pub const ZERO: Big = Big([0; WORDS]);

    pub fn from_i128(v: i128) -> Big {
        let fill = if v < 0 { u64::MAX } else { 0 };
        let mut w = [fill; WORDS];
        w[0] = v as u64;
        w[1] = (v >> 64) as u64;
        Big(w)
    }

    /// A non-negative value from big-endian hex digits (at most [`BITS`] bits' worth kept).
    pub fn from_hex(digits: &str) -> Option<Big> {
        let mut w = [0u64; WORDS];
        let bytes = digits.as_bytes();
        for (i, chunk) in bytes.rchunks(16).enumerate().take(WORDS) {
            w[i] = u64::from_str_radix(std::str::from_utf8(chunk).ok()?, 16).ok()?;
        }
        Some(Big(w))
    }

    /// The low 128 bits, as the i128 the narrow evaluator works in.
    pub fn low_i128(&self) -> i128 {
        (self.0[0] as u128 | (self.0[1] as u128) << 64) as i128
    }

    pub fn is_neg(&self) -> bool {
        self.0[WORDS - 1] >> 63 == 1
    }

    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    /// The value as a shift or width operand: None when negative or beyond any width here.
    pub fn small(&self) -> Option<u32> {
        if self.is_neg() || self.0[1..].iter().any(|w| *w != 0) || self.0[0] > u32::MAX as u64 {
            None
        } else {
            Some(self.0[0] as u32)
        }
    }

    pub fn add(&self, o: &Big) -> Big {
        let mut r = [0u64; WORDS];
        let mut carry = false;
        for (i, out) in r.iter_mut().enumerate() {
            let (s, c1) = self.0[i].overflowing_add(o.0[i]);
            let (s, c2) = s.overflowing_add(carry as u64);
            *out = s;
            carry = c1 || c2;
        }
        Big(r)
    }

    pub fn not(&self) -> Big {
        Big(self.0.map(|w| !w))
    }

    pub fn neg(&self) -> Big {
        self.not().add(&Big::from_i128(1))
    }

    pub fn sub(&self, o: &Big) -> Big {
        self.add(&o.neg())
    }

    pub fn mul(&self, o: &Big) -> Big {
        let mut r = [0u64; WORDS];
        for i in 0..WORDS {
            let mut carry = 0u128;
            for j in 0..WORDS - i {
                let t = self.0[i] as u128 * o.0[j] as u128 + r[i + j] as u128 + carry;
                r[i + j] = t as u64;
                carry = t >> 64;
            }
        }
        Big(r)
    }

    pub fn bits(&self, o: &Big, f: impl Fn(u64, u64) -> u64) -> Big {
        let mut r = [0u64; WORDS];
        for (i, out) in r.iter_mut().enumerate() {
            *out = f(self.0[i], o.0[i]);
        }
        Big(r)
    }

    /// `self << n`, wrapping.
    pub fn shl(&self, n: u32) -> Big {
        if n >= BITS {
            return Big::ZERO;
        }
        let (words, bits) = ((n / 64) as usize, n % 64);
        let mut r = [0u64; WORDS];
        for (i, out) in r.iter_mut().enumerate().skip(words) {
            let lo = self.0[i - words];
            let below = if bits > 0 && i > words { self.0[i - words - 1] >> (64 - bits) } else { 0 };
            *out = (lo << bits) | below;
        }
        Big(r)
    }

    /// `self >> n`, arithmetic (floor), as GMP shifts a negative number.
    pub fn shr(&self, n: u32) -> Big {
        let fill = if self.is_neg() { u64::MAX } else { 0 };
        if n >= BITS {
            return Big([fill; WORDS]);
        }
        let (words, bits) = ((n / 64) as usize, n % 64);
        let mut r = [fill; WORDS];
        for (i, out) in r.iter_mut().enumerate().take(WORDS - words) {
            let hi = if i + words + 1 < WORDS { self.0[i + words + 1] } else { fill };
            let lo = self.0[i + words];
            *out = if bits == 0 { lo } else { (lo >> bits) | (hi << (64 - bits)) };
        }
        Big(r)
    }

    /// 2^n - 1 (n < BITS).
    pub fn ones(n: u32) -> Big {
        Big::from_i128(1).shl(n).sub(&Big::from_i128(1))
    }

    /// The low `n` bits read as an n-bit two's-complement number.
    pub fn sign_extend(&self, n: u32) -> Big {
        match n {
            0 => Big::ZERO,
            n if n >= BITS => *self,
            n => self.shl(BITS - n).shr(BITS - n),
        }
    }

    pub fn cmp_signed(&self, o: &Big) -> Ordering {
        match (self.is_neg(), o.is_neg()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => self.0.iter().rev().cmp(o.0.iter().rev()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: i128) -> Big {
        Big::from_i128(v)
    }

    #[test]
    fn arithmetic_agrees_with_i128_where_both_hold() {
        let vals = [0i128, 1, -1, 5, -7, 1 << 63, (1 << 64) + 3, -(1 << 100), i64::MAX as i128, 0x1234_5678_9abc];
        for &x in &vals {
            for &y in &vals {
                assert_eq!(b(x).add(&b(y)).low_i128(), x.wrapping_add(y));
                assert_eq!(b(x).sub(&b(y)).low_i128(), x.wrapping_sub(y));
                assert_eq!(b(x).mul(&b(y)).low_i128(), x.wrapping_mul(y));
                assert_eq!(b(x).cmp_signed(&b(y)), x.cmp(&y), "{x} {y}");
                assert_eq!(b(x).bits(&b(y), |p, q| p & q).low_i128(), x & y);
            }
            for n in [0u32, 1, 7, 63, 64, 65, 100, 127] {
                assert_eq!(b(x).shr(n).low_i128(), x >> n, "{x} >> {n}");
                assert_eq!(b(x).shl(n).low_i128(), x.wrapping_shl(n), "{x} << {n}");
            }
        }
    }

    #[test]
    fn values_past_128_bits() {
        // 2^128 - 1 is positive here (an IPv6 address of all ones), unlike in i128
        let all = Big::ones(128);
        assert!(!all.is_neg());
        assert_eq!(all.cmp_signed(&b(0)), Ordering::Greater);
        assert_eq!(all.shr(120).low_i128(), 0xff);
        assert_eq!(all.add(&b(1)), b(1).shl(128));
        assert_eq!(all.add(&b(1)).low_i128(), 0);
        // a 336-bit value survives a product's wrap in its low 336 bits
        let x = Big::ones(336);
        let sq = x.mul(&x);
        assert_eq!(sq.bits(&Big::ones(336), |p, q| p & q), b(1));
        assert_eq!(Big::from_hex("ff").unwrap(), b(255));
        assert_eq!(Big::from_hex(&"f".repeat(84)).unwrap(), Big::ones(336));
        assert_eq!(b(-1).shr(BITS + 5), b(-1));
        assert_eq!(b(0x80).sign_extend(8), b(-128));
        assert_eq!(Big::ones(200).sign_extend(200), b(-1));
        assert_eq!(b(5).small(), Some(5));
        assert_eq!(b(-5).small(), None);
    }
}
