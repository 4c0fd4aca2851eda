//! The executable form of a BMv2 JSON program: names resolved to indices once, at load,
//! so that running a packet touches only vectors. Everything the interpreter cannot run
//! is refused here (or earlier, in `lib::check`) with the place named.

mod build;
mod parser;
mod pipelines;
mod resolve;

pub use build::build;

use serde_json::Value;

/// An expression as p4c emits it. Values are evaluated as i128 with wrapping arithmetic:
/// p4c masks every bit<N> result explicitly (`& 0xff..`), so this equals BMv2's bignum
/// arithmetic for all widths up to 64 bits, the widest field this engine stores.
#[derive(Debug, Clone)]
pub enum Expr {
    Const(i128),
    Field(usize),
    /// A signed (`int<N>`) field of N bits: stored as its two's-complement bits, read
    /// sign-extended, as BMv2's `Field::sync_value` does.
    SField(usize, u32),
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
    /// The expression compiled for the place that reads it (`code::program`, after load).
    Code(Box<[crate::code::Op]>),
    /// A field wider than 64 bits: (its first slot, width). Its value lives in
    /// [`wide_parts`] slots, the most significant first; read only inside [`Expr::Big`].
    Wide(usize, u32),
    /// A constant wider than 128 bits (only inside [`Expr::Big`]).
    BigConst(Box<crate::big::Big>),
    /// An expression that reads a wide field or constant, evaluated over [`crate::big::Big`]
    /// as a whole (its value to a narrow place: the low 128 bits). The load-time passes
    /// (`simplify`, `code`, `flat`) leave it as it is, so programs without wide fields
    /// never meet it.
    Big(Box<Expr>),
}

/// The slots of a field of `width` > 64 bits from `first`: (slot, bits), the most
/// significant part first, every part but the first 64 bits wide (so part k is word
/// `n - 1 - k` of the value).
pub fn wide_parts(first: usize, width: u32) -> impl Iterator<Item = (usize, u32)> {
    let n = width.div_ceil(64) as usize;
    (0..n).map(move |k| (first + k, if k == 0 { width - 64 * (n as u32 - 1) } else { 64 }))
}

impl Expr {
    /// Whether evaluating this needs [`crate::big::Big`]: it reads a wide field or constant.
    pub fn is_wide(&self) -> bool {
        match self {
            Expr::Wide(..) | Expr::BigConst(_) | Expr::Big(_) => true,
            Expr::Un(_, x) => x.is_wide(),
            Expr::Bin(_, a, b) => a.is_wide() || b.is_wide(),
            Expr::Cond(c, a, b) => c.is_wide() || a.is_wide() || b.is_wide(),
            Expr::StackField { index, .. } | Expr::StackValid { index, .. } => index.is_wide(),
            _ => false,
        }
    }
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
    /// two_comp_mod(x, width): x wrapped into int<width>'s range (BMv2's Data::two_comp_mod).
    TwoCompMod,
    /// sat_cast(x, width): x clamped to int<width>'s range (p4c's `|+|` / `|-|` on int<N>).
    SatCast,
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
    /// The fixed fields in runs of whole bytes of at most 64 bits, each read from the packet
    /// and written by the deparser as one word; empty when the fields do not fall into such
    /// runs (then field by field).
    pub chunks: Vec<Chunk>,
    /// Per field (in `fields` order) when there are chunks: where it sits in its chunk's
    /// word.
    pub placed: Vec<Placed>,
}

/// A field in its chunk's word, the chunk's first byte the word's highest: the field is
/// `(word >> shift) & mask`.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    pub slot: u32,
    pub shift: u32,
    pub mask: u64,
}

/// A run of a header's fields: `fields[first..first + n]`, `bytes` bytes at byte `at` of the
/// header.
#[derive(Debug, Clone, Copy)]
pub struct Chunk {
    pub first: usize,
    pub n: usize,
    pub at: usize,
    pub bytes: usize,
}

/// Cut `fields` (slot, width) into [`Chunk`]s, each as long as 64 bits and a byte boundary
/// allow; none when some run of fields has no byte boundary within 64 bits.
pub fn chunks(fields: &[(usize, u32)]) -> Vec<Chunk> {
    let mut out = Vec::new();
    let (mut i, mut at) = (0, 0);
    while i < fields.len() {
        let (mut bits, mut cut) = (0, None);
        for (j, &(_, w)) in fields.iter().enumerate().skip(i) {
            if bits + w > 64 {
                break;
            }
            bits += w;
            if bits.is_multiple_of(8) {
                cut = Some((j + 1, bits as usize / 8));
            }
        }
        let Some((end, bytes)) = cut else { return Vec::new() };
        out.push(Chunk { first: i, n: end - i, at, bytes });
        (i, at) = (end, at + bytes);
    }
    out
}

/// The [`Placed`] of each field of `chunks` (none without chunks).
pub fn placed(fields: &[(usize, u32)], chunks: &[Chunk]) -> Vec<Placed> {
    let mut out = Vec::new();
    for c in chunks {
        let mut used = 0;
        for &(slot, w) in &fields[c.first..c.first + c.n] {
            // a field of no bits reads 0 whatever its shift: one within range
            let shift = if w == 0 { 0 } else { 64 - used - w };
            out.push(Placed { slot: slot as u32, shift, mask: crate::table::full(w) });
            used += w;
        }
    }
    out
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
    /// Extract into member headers (one per element) of a stack of header unions, at its
    /// next index (the `StackIr` of that number); StackOutOfBounds when it is full.
    ExtractUnionStack(usize, Box<[usize]>),
    /// A field wider than 64 bits set (first slot, width, value as [`Expr::Big`]).
    SetWide(Box<(usize, u32, Expr)>),
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
    /// A field wider than 64 bits assigned: (first slot, width, value as [`Expr::Big`]),
    /// boxed as the hash is.
    AssignWide(Box<(usize, u32, Expr)>),
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
    /// An indirect table's action profile (index of [`Ir::profiles`]): its entries name a
    /// member or a group of the profile instead of an action (`profiles.rs`).
    pub profile: Option<usize>,
    /// Where a miss goes that runs no action (BMv2's default_default_entry of an indirect
    /// table without a default entry): `__MISS__`, else `base_default_next`.
    pub miss_next: Option<Node>,
    /// The table's direct meter, executed on a hit before the action (`profiles.rs`).
    pub direct_meter: Option<DirectMeterIr>,
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
            profile: None,
            miss_next: None,
            direct_meter: None,
            entries: vec![],
        }
    }
}

/// An action profile (the JSON's `action_profiles`), with a selector when it is an
/// action_selector: the fields hashed (packed as BMv2's BufBuilder packs them) and how.
#[derive(Debug, Clone)]
pub struct ProfileIr {
    pub name: String,
    pub max_size: usize,
    pub selector: Option<(SelectorAlgo, Vec<(usize, u32)>)>,
    /// The engine actions a member may run: those of the (first) table the profile
    /// implements, as p4c gives each table its own copy of an action.
    pub actions: Vec<usize>,
}

/// The selector hashes this engine computes as BMv2 does (src/bm_sim/calculations.cpp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorAlgo {
    /// CRC-16/ARC.
    Crc16,
    /// CRC-32 (ISO-HDLC, zlib's).
    Crc32,
    /// The first (at most 8) bytes as a big-endian number.
    Identity,
}

/// A table's direct meter: counts bytes or packets; its colour goes to field `target`.
#[derive(Debug, Clone)]
pub struct DirectMeterIr {
    pub name: String,
    pub bytes: bool,
    pub target: usize,
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
    pub profiles: Vec<ProfileIr>,
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

/// An optional JSON array as a slice: p4c leaves out the sections a program has none of.
fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::chunks;

    fn layout(widths: &[u32]) -> Vec<(usize, usize, usize, usize)> {
        let fields: Vec<(usize, u32)> = widths.iter().enumerate().map(|(i, w)| (i, *w)).collect();
        chunks(&fields).iter().map(|c| (c.first, c.n, c.at, c.bytes)).collect()
    }

    #[test]
    fn fields_fall_into_runs_of_whole_bytes_up_to_64_bits() {
        // IPv4: version .. frag_offset, ttl .. src_addr, dst_addr
        assert_eq!(
            layout(&[4, 4, 6, 2, 16, 16, 3, 13, 8, 8, 16, 32, 32]),
            [(0, 8, 0, 8), (8, 4, 8, 8), (12, 1, 16, 4)]
        );
        assert_eq!(layout(&[48, 48, 16]), [(0, 1, 0, 6), (1, 2, 6, 8)]);
        assert_eq!(layout(&[64, 0, 8]), [(0, 2, 0, 8), (2, 1, 8, 1)]);
        // no byte boundary within 64 bits: field by field
        assert_eq!(layout(&[4, 62, 2]), []);
        assert_eq!(layout(&[]), []);
    }
}
