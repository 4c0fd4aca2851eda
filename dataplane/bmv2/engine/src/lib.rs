//! The packet engine of the bundled P4Runtime target (issue #13, item 2): it loads the BMv2
//! JSON that p4c emits, refuses at load time, with the place named, every construct outside
//! the set it executes, and runs packets through the program as simple_switch does
//! (`exec`). `ir` resolves names to indices once; `code` compiles expressions to stack code
//! and `flat` lays the parser and the controls out as steps, both at load, for the
//! per-packet loop; `table` holds match tables; `profiles` runs action profiles, selectors
//! and direct meters as BMv2 does; `python` is the PyO3 module the target imports (cargo
//! feature "python").

pub mod big;
pub mod code;
pub mod exec;
pub mod flat;
pub mod ir;
pub mod lanes;
pub mod live;
pub mod loadgen;
pub mod p4rt;
pub mod profiles;
#[cfg(feature = "python")]
mod python;
pub mod rawsock;
pub mod simplify;
pub mod table;

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt;

/// Action primitives the engine will execute (v1model, as p4c's BMv2 backend emits them).
pub const PRIMITIVES: &[&str] = &[
    "assign",
    "count",
    "execute_meter",
    "mark_to_drop",
    "register_read",
    "register_write",
    "add_header",
    "remove_header",
    "assign_header",
    "assign_union",
    "assign_header_stack",
    "push",
    "pop",
    "exit",
    "assign_VL",
    "modify_field_with_hash_based_offset",
];
/// Parser operations.
pub const PARSER_OPS: &[&str] = &["set", "extract", "extract_VL", "verify", "primitive", "advance"];
/// Parser transition kinds.
pub const TRANSITIONS: &[&str] = &["hexstr", "default"];
/// Table match kinds.
pub const MATCH_KINDS: &[&str] = &["exact", "ternary", "lpm", "range", "valid"];
/// Expression operators.
pub const EXPR_OPS: &[&str] = &[
    "&",
    "|",
    "^",
    "~",
    "+",
    "-",
    "*",
    "<<",
    ">>",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "and",
    "or",
    "not",
    "b2d",
    "d2b",
    "valid",
    "?",
    "valid_union",
    "dereference_header_stack",
    "access_field",
    "usat_cast",
    "sat_cast",
    "two_comp_mod",
];
/// Calculation algorithms: csum16 (verify / update checksum), crc16 (hash).
pub const CHECKSUM_ALGOS: &[&str] = &["csum16", "crc16"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Every unsupported construct, each as "where: what".
    pub unsupported: Vec<String>,
    pub detail: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.unsupported.is_empty() {
            write!(f, "not a BMv2 JSON program: {}", self.detail)
        } else {
            write!(f, "the program uses constructs this engine does not execute: {}", self.unsupported.join("; "))
        }
    }
}

impl std::error::Error for LoadError {}

#[derive(Debug, Deserialize)]
pub struct HeaderType {
    pub name: String,
    pub id: u32,
    /// [field name, bit width, signed]; a varbit field is [name, "*"].
    pub fields: Vec<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
pub struct Header {
    pub name: String,
    pub id: u32,
    pub header_type: String,
    pub metadata: bool,
}

#[derive(Debug, Deserialize)]
pub struct ParserOp {
    pub op: String,
    pub parameters: Vec<Value>,
}

#[derive(Debug, Deserialize)]
pub struct Transition {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: Option<String>,
    pub mask: Option<String>,
    pub next_state: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ParseState {
    pub name: String,
    pub id: u32,
    pub parser_ops: Vec<ParserOp>,
    pub transitions: Vec<Transition>,
    pub transition_key: Vec<Value>,
}

#[derive(Debug, Deserialize)]
pub struct Parser {
    pub name: String,
    pub init_state: String,
    pub parse_states: Vec<ParseState>,
}

#[derive(Debug, Deserialize)]
pub struct Primitive {
    pub op: String,
    pub parameters: Vec<Value>,
}

#[derive(Debug, Deserialize)]
pub struct Action {
    pub name: String,
    pub id: u32,
    pub runtime_data: Vec<Value>,
    pub primitives: Vec<Primitive>,
}

#[derive(Debug, Deserialize)]
pub struct KeyField {
    pub match_type: String,
    /// p4c leaves the keys of the hidden tables of `switch` statements unnamed.
    #[serde(default)]
    pub name: String,
    pub target: Value,
}

#[derive(Debug, Deserialize)]
pub struct Table {
    pub name: String,
    pub id: u32,
    #[serde(rename = "type")]
    pub kind: String,
    pub key: Vec<KeyField>,
    pub max_size: u32,
    pub action_ids: Vec<u32>,
    pub with_counters: bool,
}

#[derive(Debug, Deserialize)]
pub struct Pipeline {
    pub name: String,
    pub init_table: Option<String>,
    pub tables: Vec<Table>,
    pub conditionals: Vec<Value>,
    #[serde(default)]
    pub action_profiles: Vec<Value>,
}

#[derive(Debug, Deserialize)]
pub struct Calculation {
    pub name: String,
    pub algo: String,
}

#[derive(Debug, Deserialize)]
pub struct Program {
    pub header_types: Vec<HeaderType>,
    pub headers: Vec<Header>,
    pub header_stacks: Vec<Value>,
    pub header_unions: Vec<Value>,
    pub parsers: Vec<Parser>,
    pub parse_vsets: Vec<Value>,
    pub actions: Vec<Action>,
    pub pipelines: Vec<Pipeline>,
    pub calculations: Vec<Calculation>,
    pub extern_instances: Vec<Value>,
    pub learn_lists: Vec<Value>,
}

fn expression_ops(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if m.get("type").and_then(Value::as_str) == Some("expression") {
                if let Some(op) = m.get("value").and_then(|e| e.get("op")).and_then(Value::as_str) {
                    out.insert(op.to_string());
                }
            }
            m.values().for_each(|x| expression_ops(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| expression_ops(x, out)),
        _ => {}
    }
}

fn not_in(bad: &mut Vec<String>, set: &[&str], what: &str, place: String) {
    if !set.contains(&what) {
        bad.push(format!("{place}: {what}"));
    }
}

fn check(program: &Program, raw: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    for p in &program.parsers {
        for s in &p.parse_states {
            for op in &s.parser_ops {
                not_in(&mut bad, PARSER_OPS, &op.op, format!("parser {} state {} op", p.name, s.name));
            }
            for t in &s.transitions {
                not_in(&mut bad, TRANSITIONS, &t.kind, format!("parser {} state {} transition", p.name, s.name));
            }
        }
    }
    for a in &program.actions {
        for prim in &a.primitives {
            not_in(&mut bad, PRIMITIVES, &prim.op, format!("action {} primitive", a.name));
        }
    }
    for pl in &program.pipelines {
        for t in &pl.tables {
            not_in(&mut bad, &["simple", "indirect", "indirect_ws"], &t.kind, format!("table {} type", t.name));
            for k in &t.key {
                not_in(&mut bad, MATCH_KINDS, &k.match_type, format!("table {} key {} match kind", t.name, k.name));
            }
        }
    }
    for c in &program.calculations {
        not_in(&mut bad, CHECKSUM_ALGOS, &c.algo, format!("calculation {} algorithm", c.name));
    }
    for (what, list) in [
        ("parse value sets", &program.parse_vsets),
        ("extern instances", &program.extern_instances),
        ("learn lists (digests)", &program.learn_lists),
    ] {
        if !list.is_empty() {
            bad.push(format!("program: {what} ({})", list.len()));
        }
    }
    let mut ops = BTreeSet::new();
    expression_ops(raw, &mut ops);
    for op in ops {
        not_in(&mut bad, EXPR_OPS, &op, "expression operator".to_string());
    }
    bad
}

/// Load a program and build the engine that runs it (all tables empty, externs zero).
pub fn engine(json: &str) -> Result<exec::Engine, LoadError> {
    load(json)?;
    let raw: Value =
        serde_json::from_str(json).map_err(|e| LoadError { unsupported: vec![], detail: e.to_string() })?;
    let mut ir = ir::build(&raw).map_err(|e| LoadError { unsupported: vec![e], detail: String::new() })?;
    simplify::program(&mut ir);
    code::program(&mut ir);
    let mut e = exec::Engine::new(ir);
    e.install_const_entries().map_err(|err| LoadError { unsupported: vec![err], detail: String::new() })?;
    Ok(e)
}

/// Parse a BMv2 JSON program and check that this engine supports every construct in it.
pub fn load(json: &str) -> Result<Program, LoadError> {
    let raw: Value =
        serde_json::from_str(json).map_err(|e| LoadError { unsupported: vec![], detail: e.to_string() })?;
    let program: Program =
        serde_json::from_value(raw.clone()).map_err(|e| LoadError { unsupported: vec![], detail: e.to_string() })?;
    let unsupported = check(&program, &raw);
    if unsupported.is_empty() {
        Ok(program)
    } else {
        Err(LoadError { unsupported, detail: String::new() })
    }
}

/// The tests' random cases: xorshift64 from a fixed seed, so a failing case replays.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLICING: &str = include_str!("../../compiled/slicing.json");

    #[test]
    fn loads_what_p4c_compiles_from_slicing_p4() {
        let p = load(SLICING).expect("slicing.json loads");
        assert_eq!(p.parsers.len(), 1);
        let names: Vec<&str> = p.pipelines.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["ingress", "egress"]);
        let classifier = p.pipelines[0]
            .tables
            .iter()
            .find(|t| t.name == "SlicingIngress.classifier.classifier")
            .expect("classifier table");
        assert!(classifier.with_counters);
        assert_eq!(classifier.max_size, 4096);
    }

    #[test]
    fn refuses_unsupported_constructs_naming_each() {
        let mut v: Value = serde_json::from_str(SLICING).unwrap();
        v["actions"][1]["primitives"][0]["op"] = Value::from("clone_ingress_pkt_to_egress");
        v["pipelines"][0]["tables"][0]["key"][0]["match_type"] = Value::from("optional");
        v["learn_lists"] = serde_json::json!([{"id": 1}]);
        let err = load(&v.to_string()).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.unsupported.len(), 3, "{text}");
        assert!(text.contains("primitive: clone_ingress_pkt_to_egress"), "{text}");
        assert!(text.contains("match kind: optional"), "{text}");
        assert!(text.contains("learn lists"), "{text}");
    }

    #[test]
    fn refuses_what_is_not_a_bmv2_program() {
        let err = load("{\"parsers\": 3}").unwrap_err();
        assert!(err.unsupported.is_empty());
        assert!(err.to_string().starts_with("not a BMv2 JSON program"));
    }
}
