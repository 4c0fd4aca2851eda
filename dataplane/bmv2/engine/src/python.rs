//! The Python module `slicing_engine` (PyO3): the bundled target's P4Runtime server and
//! traffic manager drive the engine through it. Indices (tables, actions, externs) are
//! resolved from names once; every per-packet and per-entry call takes integers.

use crate::exec::{Engine, Packet};
use crate::ir::MatchKind;
use crate::p4rt::{split_write, EntryMeta, TableSchema};
use crate::table::WriteError;
use std::collections::HashMap;
use pyo3::exceptions::{PyIndexError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn write_err(e: WriteError) -> PyErr {
    match e {
        WriteError::Exists => PyValueError::new_err("exists: the entry already exists"),
        WriteError::NotFound => PyKeyError::new_err("not found: no such entry"),
        WriteError::Full => PyValueError::new_err("full: the table is full"),
        WriteError::Invalid(m) => PyValueError::new_err(format!("invalid: {m}")),
    }
}

#[pyclass(module = "slicing_engine", name = "Packet")]
pub struct PyPacket {
    inner: Option<Packet>,
    #[pyo3(get)]
    egress_port: u64,
    #[pyo3(get)]
    priority: u64,
    #[pyo3(get)]
    length: usize,
}

#[pymethods]
impl PyPacket {
    /// The frame as it arrived (the traffic manager needs only its length).
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.inner.as_ref().map(|p| p.data.as_slice()).unwrap_or(&[]))
    }
}

#[pyclass(module = "slicing_engine", name = "Engine")]
pub struct PyEngine {
    e: Engine,
    schemas: HashMap<u32, TableSchema>,
}

/// (handle, key, P4Runtime priority, P4Info action id, params, metadata, controller metadata)
type EntryView = (u64, Vec<(u64, u64)>, i64, u32, Vec<u64>, Vec<u8>, u64);

fn kind_of(text: &str) -> PyResult<MatchKind> {
    Ok(match text {
        "exact" => MatchKind::Exact,
        "ternary" => MatchKind::Ternary,
        "lpm" => MatchKind::Lpm,
        "range" => MatchKind::Range,
        other => return Err(PyValueError::new_err(format!("match kind {other}"))),
    })
}

fn check_index<T>(v: &[T], i: usize, what: &str) -> PyResult<()> {
    if i < v.len() {
        Ok(())
    } else {
        Err(PyIndexError::new_err(format!("{what} index {i} out of range")))
    }
}

#[pymethods]
impl PyEngine {
    /// Load p4c's BMv2 JSON; ValueError naming every unsupported construct.
    #[new]
    fn new(json: &str) -> PyResult<Self> {
        crate::engine(json).map(|e| PyEngine { e, schemas: HashMap::new() }).map_err(|err| PyValueError::new_err(err.to_string()))
    }

    /// [(table name, [(key name, match kind, bit width)], [action names])] in engine order.
    #[allow(clippy::type_complexity)]
    fn tables(&self) -> Vec<(String, Vec<(String, String, u32)>, Vec<String>)> {
        self.e
            .ir
            .tables
            .iter()
            .map(|t| {
                let keys = t
                    .keys
                    .iter()
                    .map(|k| {
                        let kind = match k.kind {
                            MatchKind::Exact => "exact",
                            MatchKind::Ternary => "ternary",
                            MatchKind::Lpm => "lpm",
                            MatchKind::Range => "range",
                        };
                        (k.name.clone(), kind.to_string(), k.width)
                    })
                    .collect();
                let acts = t.actions.iter().map(|a| self.e.ir.actions[*a].name.clone()).collect();
                (t.name.clone(), keys, acts)
            })
            .collect()
    }

    fn table_index(&self, name: &str) -> Option<usize> {
        self.e.ir.tables.iter().position(|t| t.name == name)
    }

    /// The engine's action index of `name` among the table's actions.
    fn action_of(&self, table: usize, name: &str) -> PyResult<Option<usize>> {
        check_index(&self.e.ir.tables, table, "table")?;
        Ok(self.e.ir.tables[table].actions.iter().copied().find(|a| self.e.ir.actions[*a].name == name))
    }

    fn action_params(&self, action: usize) -> PyResult<Vec<(String, u32)>> {
        check_index(&self.e.ir.actions, action, "action")?;
        let a = &self.e.ir.actions[action];
        Ok(a.param_names.iter().cloned().zip(a.param_widths.iter().copied()).collect())
    }

    fn action_name(&self, action: usize) -> PyResult<String> {
        check_index(&self.e.ir.actions, action, "action")?;
        Ok(self.e.ir.actions[action].name.clone())
    }

    // ---- entries ----

    fn insert(&mut self, table: usize, key: Vec<(u64, u64)>, priority: i64, action: usize, params: Vec<u64>) -> PyResult<u64> {
        check_index(&self.e.ir.tables, table, "table")?;
        self.e.insert(table, key, priority, action, params).map_err(write_err)
    }

    fn find(&self, table: usize, key: Vec<(u64, u64)>, priority: i64) -> PyResult<Option<u64>> {
        check_index(&self.e.ir.tables, table, "table")?;
        Ok(self.e.tables[table].find(&key, priority))
    }

    fn modify(&mut self, table: usize, handle: u64, action: usize, params: Vec<u64>) -> PyResult<()> {
        check_index(&self.e.ir.tables, table, "table")?;
        self.e.check_action(table, action, &params).map_err(write_err)?;
        self.e.tables[table].modify(handle, action, params).map_err(write_err)
    }

    fn delete(&mut self, table: usize, handle: u64) -> PyResult<()> {
        check_index(&self.e.ir.tables, table, "table")?;
        self.e.tables[table].delete(handle).map_err(write_err)
    }

    fn clear(&mut self, table: usize) -> PyResult<()> {
        check_index(&self.e.ir.tables, table, "table")?;
        self.e.tables[table].clear();
        Ok(())
    }

    fn entry_counter(&self, table: usize, handle: u64) -> PyResult<(u64, u64)> {
        check_index(&self.e.ir.tables, table, "table")?;
        let e = self.e.tables[table].entries.get(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        Ok((e.packets, e.bytes))
    }

    fn set_entry_counter(&mut self, table: usize, handle: u64, packets: u64, bytes: u64) -> PyResult<()> {
        check_index(&self.e.ir.tables, table, "table")?;
        let e = self.e.tables[table].entries.get_mut(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        e.packets = packets;
        e.bytes = bytes;
        Ok(())
    }

    fn set_default(&mut self, table: usize, action: usize, params: Vec<u64>) -> PyResult<()> {
        check_index(&self.e.ir.tables, table, "table")?;
        self.e.set_default(table, action, params).map_err(write_err)
    }

    /// (action, params) the table runs on a miss now.
    fn default(&self, table: usize) -> PyResult<(usize, Vec<u64>)> {
        check_index(&self.e.ir.tables, table, "table")?;
        let t = &self.e.tables[table];
        Ok((t.default_action, t.default_params.clone()))
    }

    /// The program's own default (what a reset of the default entry restores).
    fn initial_default(&self, table: usize) -> PyResult<(usize, Vec<u64>, bool)> {
        check_index(&self.e.ir.tables, table, "table")?;
        let t = &self.e.ir.tables[table];
        Ok((t.default_action, t.default_params.clone(), t.default_const))
    }

    fn entry_count(&self, table: usize) -> PyResult<usize> {
        check_index(&self.e.ir.tables, table, "table")?;
        Ok(self.e.tables[table].entries.len())
    }

    /// Rebuild the lookup index of tables changed since the last commit.
    fn commit(&mut self) {
        self.e.commit();
    }

    // ---- P4Runtime fast path ----

    /// What the write fast path must know of a P4Info table: fields [(id, kind, width)],
    /// actions [(P4Info id, engine action, [(param id, width)], default only)].
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn set_schema(
        &mut self,
        p4_table: u32,
        engine_table: usize,
        fields: Vec<(u32, String, u32)>,
        needs_priority: bool,
        size: usize,
        actions: Vec<(u32, usize, Vec<(u32, u32)>, bool)>, // (P4Info id, ActionSchema...)
    ) -> PyResult<()> {
        check_index(&self.e.ir.tables, engine_table, "table")?;
        let fields = fields.into_iter().map(|(i, k, w)| Ok((i, kind_of(&k)?, w))).collect::<PyResult<Vec<_>>>()?;
        let actions = actions.into_iter().map(|(id, a, ps, d)| (id, (a, ps, d))).collect();
        self.schemas.insert(p4_table, TableSchema { engine_table, fields, needs_priority, size, actions });
        Ok(())
    }

    /// A WriteRequest's (device id, election id, atomicity, [each Update's bytes]).
    fn split_write<'py>(&self, py: Python<'py>, raw: &[u8]) -> PyResult<(u64, u128, u64, Vec<Bound<'py, PyBytes>>)> {
        let w = split_write(raw).ok_or_else(|| PyValueError::new_err("malformed WriteRequest"))?;
        let updates = w.updates.iter().map(|u| PyBytes::new(py, u)).collect();
        Ok((w.device_id, w.election_id, w.atomicity, updates))
    }

    /// Apply an Update (its bytes) if it is a valid table-entry write; False = nothing
    /// changed, the full validator must handle it (and report its error).
    fn fast_update(&mut self, update: &[u8]) -> bool {
        self.e.fast_update(&self.schemas, update)
    }

    /// Apply the WriteRequest ``raw``'s updates from index ``start`` on, in order, as long
    /// as each is a valid table-entry write; the index of the first that is not (the caller
    /// handles it with the full validator, then continues after it), or the update count.
    /// The loop of a batch stays here: one call per batch instead of one per update.
    fn fast_updates(&mut self, raw: &[u8], start: usize) -> PyResult<usize> {
        let w = split_write(raw).ok_or_else(|| PyValueError::new_err("malformed WriteRequest"))?;
        let mut i = start;
        while i < w.updates.len() && self.e.fast_update(&self.schemas, w.updates[i]) {
            i += 1;
        }
        Ok(i)
    }

    #[allow(clippy::too_many_arguments)]
    fn insert_entry(
        &mut self,
        table: usize,
        key: Vec<(u64, u64)>,
        rank: i64,
        action: usize,
        params: Vec<u64>,
        p4_priority: i64,
        p4_action: u32,
        metadata: Vec<u8>,
        controller_metadata: u64,
    ) -> PyResult<u64> {
        check_index(&self.e.ir.tables, table, "table")?;
        let h = self.e.insert(table, key, rank, action, params).map_err(write_err)?;
        self.e.tables[table].entries.get_mut(&h).expect("inserted").meta =
            EntryMeta { p4_priority, p4_action, metadata, controller_metadata };
        Ok(h)
    }

    #[allow(clippy::too_many_arguments)]
    fn modify_entry(
        &mut self,
        table: usize,
        handle: u64,
        action: usize,
        params: Vec<u64>,
        p4_action: u32,
        metadata: Vec<u8>,
        controller_metadata: u64,
    ) -> PyResult<()> {
        check_index(&self.e.ir.tables, table, "table")?;
        self.e.check_action(table, action, &params).map_err(write_err)?;
        let e = self.e.tables[table].entries.get_mut(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        e.action = action;
        e.params = params;
        e.meta.p4_action = p4_action;
        e.meta.metadata = metadata;
        e.meta.controller_metadata = controller_metadata;
        Ok(())
    }

    /// Every entry of a table for read-back, as EntryView tuples.
    fn entries(&self, table: usize) -> PyResult<Vec<EntryView>> {
        check_index(&self.e.ir.tables, table, "table")?;
        let mut out: Vec<EntryView> = self.e.tables[table]
            .entries
            .iter()
            .map(|(h, e)| {
                let m = &e.meta;
                (*h, e.key.clone(), m.p4_priority, m.p4_action, e.params.clone(), m.metadata.clone(), m.controller_metadata)
            })
            .collect();
        out.sort_by_key(|v| v.0); // insertion order, as a read-back lists them
        Ok(out)
    }

    fn entry(&self, table: usize, handle: u64) -> PyResult<EntryView> {
        check_index(&self.e.ir.tables, table, "table")?;
        let e = self.e.tables[table].entries.get(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        let m = &e.meta;
        Ok((handle, e.key.clone(), m.p4_priority, m.p4_action, e.params.clone(), m.metadata.clone(), m.controller_metadata))
    }

    // ---- externs ----

    fn counter_index(&self, name: &str) -> Option<usize> {
        self.e.ir.counters.iter().position(|c| c.name == name)
    }
    fn register_index(&self, name: &str) -> Option<usize> {
        self.e.ir.registers.iter().position(|c| c.name == name)
    }
    fn meter_index(&self, name: &str) -> Option<usize> {
        self.e.ir.meters.iter().position(|c| c.name == name)
    }

    fn counter_cells(&self, c: usize) -> PyResult<Vec<(u64, u64)>> {
        check_index(&self.e.counters, c, "counter")?;
        Ok(self.e.counters[c].clone())
    }

    fn set_counter(&mut self, c: usize, i: usize, packets: u64, bytes: u64) -> PyResult<()> {
        check_index(&self.e.counters, c, "counter")?;
        check_index(&self.e.counters[c], i, "counter cell")?;
        self.e.counters[c][i] = (packets, bytes);
        Ok(())
    }

    fn register_cells(&self, r: usize) -> PyResult<Vec<u64>> {
        check_index(&self.e.registers, r, "register")?;
        Ok(self.e.registers[r].clone())
    }

    fn meter_size(&self, m: usize) -> PyResult<usize> {
        check_index(&self.e.meters, m, "meter")?;
        Ok(self.e.meters[m].len())
    }

    fn meter_config(&self, m: usize, i: usize) -> PyResult<Option<(u64, u64, u64, u64)>> {
        check_index(&self.e.meters, m, "meter")?;
        check_index(&self.e.meters[m], i, "meter cell")?;
        let c = &self.e.meters[m][i];
        Ok(c.configured.then_some((c.cir, c.cburst, c.pir, c.pburst)))
    }

    #[pyo3(signature = (m, i, config))]
    fn set_meter(&mut self, m: usize, i: usize, config: Option<(u64, u64, u64, u64)>) -> PyResult<()> {
        check_index(&self.e.meters, m, "meter")?;
        check_index(&self.e.meters[m], i, "meter cell")?;
        self.e.meters[m][i].configure(config);
        Ok(())
    }

    // ---- packets ----

    /// {header name: byte offset} of every header the parser extracted from this packet
    /// (valid or not since), e.g. to tell which IPv4 checksums the deparser recomputes.
    fn extracted(&self, pkt: &PyPacket) -> PyResult<std::collections::HashMap<String, i64>> {
        let p = pkt.inner.as_ref().ok_or_else(|| PyValueError::new_err("this packet already left egress"))?;
        Ok(self
            .e
            .ir
            .headers
            .iter()
            .zip(&p.extracted_at)
            .filter(|(_, at)| **at >= 0)
            .map(|(h, at)| (h.name.clone(), *at))
            .collect())
    }

    /// Parser + ingress at `now_us` (ingress_global_timestamp); None when dropped.
    fn ingress(&mut self, data: &[u8], port: u64, now_us: u64) -> Option<PyPacket> {
        let pkt = self.e.ingress(data.to_vec(), port, now_us)?;
        Some(PyPacket {
            egress_port: self.e.egress_spec(&pkt),
            priority: self.e.priority(&pkt),
            length: pkt.data.len(),
            inner: Some(pkt),
        })
    }

    /// Egress + deparser; the frame to send, or None when egress dropped it. A packet
    /// goes through egress once.
    fn egress<'py>(&mut self, py: Python<'py>, pkt: &mut PyPacket, now_us: u64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let p = pkt.inner.take().ok_or_else(|| PyValueError::new_err("this packet already left egress"))?;
        Ok(self.e.egress(p, now_us).map(|b| PyBytes::new(py, &b)))
    }
}

#[pymodule]
fn slicing_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_class::<PyPacket>()?;
    Ok(())
}
