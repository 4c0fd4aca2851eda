//! The Python module `slicing_engine` (PyO3): the bundled target's P4Runtime server and
//! traffic manager drive the engine through it. Indices (tables, actions, externs) are
//! resolved from names once; every per-packet and per-entry call takes integers.

use crate::exec::{Engine, Packet};
use crate::ir::MatchKind;
use crate::live::{lock, Gate, Live, Shared};
use crate::p4rt::{split_write, TableSchema};
use crate::table::{Entry, EntryMeta, WriteError};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

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
    e: Shared,
    schemas: HashMap<u32, TableSchema>,
}

/// (handle, key, P4Runtime priority, P4Info action id, params, metadata, controller metadata)
type EntryView = (u64, Vec<(u64, u64)>, i64, u32, Vec<u64>, Vec<u8>, u64);

fn entry_view(handle: u64, e: &Entry) -> EntryView {
    let m = &e.meta;
    (handle, e.key.clone(), m.p4_priority, m.p4_action, e.params.clone(), m.metadata.clone(), m.controller_metadata)
}

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

impl PyEngine {
    /// The engine, locked for one call (the live data path's threads share it).
    fn g(&self) -> MutexGuard<'_, Engine> {
        lock(&self.e)
    }
}

#[pymethods]
impl PyEngine {
    /// Load p4c's BMv2 JSON; ValueError naming every unsupported construct.
    #[new]
    fn new(json: &str) -> PyResult<Self> {
        crate::engine(json)
            .map(|e| PyEngine { e: Arc::new(Mutex::new(e)), schemas: HashMap::new() })
            .map_err(|err| PyValueError::new_err(err.to_string()))
    }

    /// [(table name, [(key name, match kind, bit width)], [action names])] in engine order.
    #[allow(clippy::type_complexity)]
    fn tables(&self) -> Vec<(String, Vec<(String, String, u32)>, Vec<String>)> {
        let e = self.g();
        e.ir.tables
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
                let acts = t.actions.iter().map(|a| e.ir.actions[*a].name.clone()).collect();
                (t.name.clone(), keys, acts)
            })
            .collect()
    }

    fn table_index(&self, name: &str) -> Option<usize> {
        let e = self.g();
        e.ir.tables.iter().position(|t| t.name == name)
    }

    /// The engine's action index of `name` among the table's actions.
    fn action_of(&self, table: usize, name: &str) -> PyResult<Option<usize>> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        Ok(e.ir.tables[table].actions.iter().copied().find(|a| e.ir.actions[*a].name == name))
    }

    fn action_params(&self, action: usize) -> PyResult<Vec<(String, u32)>> {
        let e = self.g();
        check_index(&e.ir.actions, action, "action")?;
        let a = &e.ir.actions[action];
        Ok(a.param_names.iter().cloned().zip(a.param_widths.iter().copied()).collect())
    }

    fn action_name(&self, action: usize) -> PyResult<String> {
        let e = self.g();
        check_index(&e.ir.actions, action, "action")?;
        Ok(e.ir.actions[action].name.clone())
    }

    // ---- entries ----

    fn insert(
        &self,
        table: usize,
        key: Vec<(u64, u64)>,
        priority: i64,
        action: usize,
        params: Vec<u64>,
    ) -> PyResult<u64> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.insert(table, key, priority, action, params).map_err(write_err)
    }

    fn find(&self, table: usize, key: Vec<(u64, u64)>, priority: i64) -> PyResult<Option<u64>> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        Ok(e.tables[table].find(&key, priority))
    }

    fn modify(&self, table: usize, handle: u64, action: usize, params: Vec<u64>) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.check_action(table, action, &params).map_err(write_err)?;
        e.tables[table].modify(handle, action, params).map_err(write_err)
    }

    fn delete(&self, table: usize, handle: u64) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.delete_entry(table, handle).map_err(write_err)
    }

    fn clear(&self, table: usize) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.tables[table].clear();
        Ok(())
    }

    fn entry_counter(&self, table: usize, handle: u64) -> PyResult<(u64, u64)> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let e = e.tables[table].entries.get(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        Ok((e.packets, e.bytes))
    }

    fn set_entry_counter(&self, table: usize, handle: u64, packets: u64, bytes: u64) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let e = e.tables[table].entries.get_mut(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        e.packets = packets;
        e.bytes = bytes;
        Ok(())
    }

    fn set_default(&self, table: usize, action: usize, params: Vec<u64>) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.set_default(table, action, params).map_err(write_err)
    }

    /// (action, params) the table runs on a miss now.
    fn default(&self, table: usize) -> PyResult<(usize, Vec<u64>)> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let t = &e.tables[table];
        Ok((t.default_action, t.default_params.clone()))
    }

    /// The program's own default (what a reset of the default entry restores).
    fn initial_default(&self, table: usize) -> PyResult<(usize, Vec<u64>, bool)> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let t = &e.ir.tables[table];
        Ok((t.default_action, t.default_params.clone(), t.default_const))
    }

    fn entry_count(&self, table: usize) -> PyResult<usize> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        Ok(e.tables[table].entries.len())
    }

    /// Rebuild the lookup index of tables changed since the last commit.
    fn commit(&self) {
        let mut e = self.g();
        e.commit();
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
        check_index(&self.g().ir.tables, engine_table, "table")?;
        let fields = fields.into_iter().map(|(i, k, w)| Ok((i, kind_of(&k)?, w))).collect::<PyResult<Vec<_>>>()?;
        let actions = actions.into_iter().map(|(id, a, ps, d)| (id, (a, ps, d))).collect();
        self.schemas.insert(p4_table, TableSchema { engine_table, fields, needs_priority, size, actions });
        Ok(())
    }

    /// A WriteRequest's (device id, election id, atomicity, number of updates): no Python
    /// object per update (``write_update`` gives the bytes of one the fast path defers).
    fn split_write(&self, raw: &[u8]) -> PyResult<(u64, u128, u64, usize)> {
        let w = split_write(raw).ok_or_else(|| PyValueError::new_err("malformed WriteRequest"))?;
        Ok((w.device_id, w.election_id, w.atomicity, w.updates.len()))
    }

    /// The serialized Update at ``index`` of the WriteRequest ``raw``.
    fn write_update<'py>(&self, py: Python<'py>, raw: &[u8], index: usize) -> PyResult<Bound<'py, PyBytes>> {
        let w = split_write(raw).ok_or_else(|| PyValueError::new_err("malformed WriteRequest"))?;
        let u = w.updates.get(index).ok_or_else(|| PyValueError::new_err("no such update"))?;
        Ok(PyBytes::new(py, u))
    }

    /// Apply an Update (its bytes) if it is a valid table-entry write; False = nothing
    /// changed, the full validator must handle it (and report its error).
    fn fast_update(&self, update: &[u8]) -> bool {
        let mut e = self.g();
        e.fast_update(&self.schemas, update)
    }

    /// Apply the WriteRequest ``raw``'s updates from index ``start`` on, in order, as long
    /// as each is a valid table-entry write; the index of the first that is not (the caller
    /// handles it with the full validator, then continues after it), or the update count.
    /// The loop of a batch stays here: one call per batch instead of one per update.
    fn fast_updates(&self, raw: &[u8], start: usize) -> PyResult<usize> {
        let mut e = self.g();
        let w = split_write(raw).ok_or_else(|| PyValueError::new_err("malformed WriteRequest"))?;
        let mut i = start;
        while i < w.updates.len() && e.fast_update(&self.schemas, w.updates[i]) {
            i += 1;
        }
        Ok(i)
    }

    #[allow(clippy::too_many_arguments)]
    fn insert_entry(
        &self,
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
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let h = e.insert(table, key, rank, action, params).map_err(write_err)?;
        e.tables[table].entries.get_mut(&h).expect("inserted").meta =
            EntryMeta { p4_priority, p4_action, metadata, controller_metadata };
        Ok(h)
    }

    #[allow(clippy::too_many_arguments)]
    fn modify_entry(
        &self,
        table: usize,
        handle: u64,
        action: usize,
        params: Vec<u64>,
        p4_action: u32,
        metadata: Vec<u8>,
        controller_metadata: u64,
    ) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.check_action(table, action, &params).map_err(write_err)?;
        let e = e.tables[table].entries.get_mut(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        e.action = action;
        e.params = params;
        e.meta.p4_action = p4_action;
        e.meta.metadata = metadata;
        e.meta.controller_metadata = controller_metadata;
        Ok(())
    }

    /// Every entry of a table for read-back, as EntryView tuples.
    fn entries(&self, table: usize) -> PyResult<Vec<EntryView>> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let mut out: Vec<EntryView> = e.tables[table].entries.iter().map(|(h, e)| entry_view(*h, e)).collect();
        out.sort_by_key(|v| v.0); // insertion order, as a read-back lists them
        Ok(out)
    }

    fn entry(&self, table: usize, handle: u64) -> PyResult<EntryView> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let e = e.tables[table].entries.get(&handle).ok_or_else(|| write_err(WriteError::NotFound))?;
        Ok(entry_view(handle, e))
    }

    // ---- action profiles, selectors, direct meters (profiles.rs) ----

    fn profile_index(&self, name: &str) -> Option<usize> {
        let e = self.g();
        e.ir.profiles.iter().position(|p| p.name == name)
    }

    /// The action profile of an indirect table (None: a table with actions of its own).
    fn table_profile(&self, table: usize) -> PyResult<Option<usize>> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        Ok(e.ir.tables[table].profile)
    }

    fn has_direct_meter(&self, table: usize) -> PyResult<bool> {
        let e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        Ok(e.ir.tables[table].direct_meter.is_some())
    }

    fn member_add(&self, p: usize, action: usize, params: Vec<u64>) -> PyResult<u32> {
        let mut e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        e.member_add(p, action, params).map_err(write_err)
    }

    fn member_modify(&self, p: usize, h: u32, action: usize, params: Vec<u64>) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        e.member_modify(p, h, action, params).map_err(write_err)
    }

    fn member_delete(&self, p: usize, h: u32) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        e.member_delete(p, h).map_err(write_err)
    }

    fn group_create(&self, p: usize) -> PyResult<u32> {
        let mut e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        e.group_create(p).map_err(write_err)
    }

    fn group_delete(&self, p: usize, g: u32) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        e.group_delete(p, g).map_err(write_err)
    }

    fn group_member(&self, p: usize, g: u32, m: u32, add: bool) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        e.group_member(p, g, m, add).map_err(write_err)
    }

    /// [(member handle, engine action, params)] in handle order.
    fn members(&self, p: usize) -> PyResult<Vec<(u32, usize, Vec<u64>)>> {
        let e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        Ok(e.members(p))
    }

    /// [(group handle, [member handle])] in handle order.
    fn groups(&self, p: usize) -> PyResult<Vec<(u32, Vec<u32>)>> {
        let e = self.g();
        check_index(&e.ir.profiles, p, "profile")?;
        Ok(e.groups(p))
    }

    /// An indirect table's entry naming a member (kind 0) or group (kind 1) by handle;
    /// ``p4_ref`` is the controller's member / group id, kept for read-back.
    #[allow(clippy::too_many_arguments)]
    fn insert_indirect(
        &self,
        table: usize,
        key: Vec<(u64, u64)>,
        rank: i64,
        kind: u64,
        handle: u32,
        p4_priority: i64,
        p4_ref: u32,
        metadata: Vec<u8>,
        controller_metadata: u64,
    ) -> PyResult<u64> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        let h = e.insert_indirect(table, key, rank, kind, handle).map_err(write_err)?;
        e.tables[table].entries.get_mut(&h).expect("inserted").meta =
            EntryMeta { p4_priority, p4_action: p4_ref, metadata, controller_metadata };
        Ok(h)
    }

    #[allow(clippy::too_many_arguments)]
    fn modify_indirect(
        &self,
        table: usize,
        h: u64,
        kind: u64,
        handle: u32,
        p4_ref: u32,
        metadata: Vec<u8>,
        controller_metadata: u64,
    ) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.modify_indirect(table, h, kind, handle).map_err(write_err)?;
        let m = &mut e.tables[table].entries.get_mut(&h).expect("modified").meta;
        m.p4_action = p4_ref;
        m.metadata = metadata;
        m.controller_metadata = controller_metadata;
        Ok(())
    }

    fn direct_meter(&self, table: usize, h: u64) -> PyResult<Option<(u64, u64, u64, u64)>> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.direct_meter(table, h).map_err(write_err)
    }

    #[pyo3(signature = (table, h, config))]
    fn set_direct_meter(&self, table: usize, h: u64, config: Option<(u64, u64, u64, u64)>) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.ir.tables, table, "table")?;
        e.set_direct_meter(table, h, config).map_err(write_err)
    }

    // ---- externs ----

    fn counter_index(&self, name: &str) -> Option<usize> {
        let e = self.g();
        e.ir.counters.iter().position(|c| c.name == name)
    }
    fn register_index(&self, name: &str) -> Option<usize> {
        let e = self.g();
        e.ir.registers.iter().position(|c| c.name == name)
    }
    fn meter_index(&self, name: &str) -> Option<usize> {
        let e = self.g();
        e.ir.meters.iter().position(|c| c.name == name)
    }

    fn counter_cells(&self, c: usize) -> PyResult<Vec<(u64, u64)>> {
        let e = self.g();
        check_index(&e.counters, c, "counter")?;
        Ok(e.counters[c].clone())
    }

    /// One cell and the array's size: a P4Runtime read of one index of a large array
    /// (the delay histogram's 65 536 cells) copies that cell, not the array.
    fn counter_cell(&self, c: usize, i: usize) -> PyResult<(u64, u64)> {
        let e = self.g();
        check_index(&e.counters, c, "counter")?;
        check_index(&e.counters[c], i, "counter cell")?;
        Ok(e.counters[c][i])
    }

    fn counter_size(&self, c: usize) -> PyResult<usize> {
        let e = self.g();
        check_index(&e.counters, c, "counter")?;
        Ok(e.counters[c].len())
    }

    fn set_counter(&self, c: usize, i: usize, packets: u64, bytes: u64) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.counters, c, "counter")?;
        check_index(&e.counters[c], i, "counter cell")?;
        e.counters[c][i] = (packets, bytes);
        Ok(())
    }

    fn register_cells(&self, r: usize) -> PyResult<Vec<u64>> {
        let e = self.g();
        check_index(&e.registers, r, "register")?;
        Ok(e.registers[r].clone())
    }

    fn meter_size(&self, m: usize) -> PyResult<usize> {
        let e = self.g();
        check_index(&e.meters, m, "meter")?;
        Ok(e.meters[m].len())
    }

    fn meter_config(&self, m: usize, i: usize) -> PyResult<Option<(u64, u64, u64, u64)>> {
        let e = self.g();
        check_index(&e.meters, m, "meter")?;
        check_index(&e.meters[m], i, "meter cell")?;
        let c = &e.meters[m][i];
        Ok(c.configured.then_some((c.cir, c.cburst, c.pir, c.pburst)))
    }

    #[pyo3(signature = (m, i, config))]
    fn set_meter(&self, m: usize, i: usize, config: Option<(u64, u64, u64, u64)>) -> PyResult<()> {
        let mut e = self.g();
        check_index(&e.meters, m, "meter")?;
        check_index(&e.meters[m], i, "meter cell")?;
        e.meters[m][i].configure(config);
        Ok(())
    }

    // ---- packets ----

    /// {header name: byte offset} of every header the parser extracted from this packet
    /// (valid or not since), e.g. to tell which IPv4 checksums the deparser recomputes.
    fn extracted(&self, pkt: &PyPacket) -> PyResult<std::collections::HashMap<String, i64>> {
        let p = pkt.inner.as_ref().ok_or_else(|| PyValueError::new_err("this packet already left egress"))?;
        let e = self.g();
        Ok(e.ir
            .headers
            .iter()
            .zip(&p.extracted_at)
            .filter(|(_, at)| **at >= 0)
            .map(|(h, at)| (h.name.clone(), *at))
            .collect())
    }

    /// Parser + ingress at `now_us` (ingress_global_timestamp); None when dropped.
    fn ingress(&self, data: &[u8], port: u64, now_us: u64) -> Option<PyPacket> {
        let mut e = self.g();
        let pkt = e.ingress(data.to_vec(), port, now_us)?;
        Some(PyPacket {
            egress_port: e.egress_spec(&pkt),
            priority: e.priority(&pkt),
            length: pkt.data.len(),
            inner: Some(pkt),
        })
    }

    /// `frame` through ingress and egress `n` times in Rust, the clock 1 µs a packet and each
    /// packet `sojourn_us` in the queue: (thread CPU ns, wall ns) per packet and how many
    /// egress sent (bench/p4_engine_cost.py). The GIL is released for the loop.
    #[pyo3(signature = (frame, port, n, sojourn_us = 0))]
    fn time_loop(&self, py: Python<'_>, frame: &[u8], port: u64, n: u64, sojourn_us: u64) -> (f64, f64, u64) {
        py.allow_threads(|| self.g().time_loop(frame, port, n, sojourn_us))
    }

    /// Egress + deparser; the frame to send, or None when egress dropped it. A packet
    /// goes through egress once.
    fn egress<'py>(&self, py: Python<'py>, pkt: &mut PyPacket, now_us: u64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let mut e = self.g();
        let p = pkt.inner.take().ok_or_else(|| PyValueError::new_err("this packet already left egress"))?;
        Ok(e.egress(p, now_us).map(|b| PyBytes::new(py, &b)))
    }
}

/// The gate the control plane closes for the length of a batch of writes (see live.rs).
#[pyclass(module = "slicing_engine", name = "Gate", frozen)]
pub struct PyGate {
    gate: Arc<Gate>,
}

#[pymethods]
impl PyGate {
    #[new]
    fn new() -> Self {
        PyGate { gate: Arc::new(Gate::default()) }
    }

    fn close(&self, py: Python<'_>) {
        py.allow_threads(|| self.gate.close());
    }

    fn open(&self) {
        self.gate.open();
    }
}

/// Live ports run by native threads (live.rs); Python keeps the control.
#[pyclass(module = "slicing_engine", name = "Live", frozen)]
pub struct PyLive {
    live: Arc<Live>,
}

#[pymethods]
impl PyLive {
    /// Open the AF_PACKET sockets of `ports` [(port, ifname)] (root); OSError naming the
    /// interface otherwise.
    #[new]
    #[pyo3(signature = (ports, priority_queues, queue_depth, link_bps, gate))]
    fn new(
        ports: Vec<(u64, String)>,
        priority_queues: usize,
        queue_depth: usize,
        link_bps: Option<u64>,
        gate: &PyGate,
    ) -> PyResult<Self> {
        if !(1..=8).contains(&priority_queues) {
            return Err(PyValueError::new_err("priority_queues must be 1..8 (standard_metadata.priority is 3 bits)"));
        }
        for (port, ifname) in &ports {
            if ifname.is_empty() {
                return Err(PyValueError::new_err(format!("port {port}: empty interface name")));
            }
        }
        Live::open(&ports, priority_queues, queue_depth, link_bps, Arc::clone(&gate.gate))
            .map(|live| PyLive { live })
            .map_err(|e| PyOSError::new_err(format!("live ports {ports:?}: {e}")))
    }

    /// The pipeline that ingresses from now on; packets of the one before are dropped at
    /// departure.
    #[pyo3(signature = (engine))]
    fn set_engine(&self, engine: Option<&PyEngine>) {
        self.live.set_engine(engine.map(|e| Arc::clone(&e.e)));
    }

    fn start(&self) {
        self.live.start();
    }

    fn stop(&self, py: Python<'_>) {
        py.allow_threads(|| self.live.stop());
    }

    #[getter]
    fn link_bps(&self) -> Option<u64> {
        self.live.link_bps()
    }

    #[pyo3(signature = (rate))]
    fn set_link_bps(&self, rate: Option<u64>) {
        self.live.set_link_bps(rate);
    }

    /// Counters and queue depths: {name: n} and [(egress port, [depth per priority])].
    #[allow(clippy::type_complexity)]
    fn status(&self) -> (HashMap<&'static str, u64>, Vec<(u64, Vec<usize>)>) {
        let c = &self.live.counters;
        let counters = HashMap::from([
            ("received", c.received.load(std::sync::atomic::Ordering::Relaxed)),
            ("transmitted", c.transmitted.load(std::sync::atomic::Ordering::Relaxed)),
            ("drops_queue_full", c.drops_queue_full.load(std::sync::atomic::Ordering::Relaxed)),
            ("drops_out_of_range", c.drops_out_of_range.load(std::sync::atomic::Ordering::Relaxed)),
            ("send_errors", c.send_errors.load(std::sync::atomic::Ordering::Relaxed)),
            ("stale_drops", c.stale_drops.load(std::sync::atomic::Ordering::Relaxed)),
        ]);
        (counters, self.live.depths())
    }
}

/// The forwarding benchmark's batched closed-loop sender and receiver (loadgen.rs):
/// (sent, received, offered pps, forwarded pps).
#[pyfunction]
#[pyo3(signature = (tx_if, rx_if, frame, count, window, stall_s=0.5))]
fn offer_closed_loop(
    py: Python<'_>,
    tx_if: &str,
    rx_if: &str,
    frame: &[u8],
    count: u64,
    window: u64,
    stall_s: f64,
) -> PyResult<(u64, u64, f64, f64)> {
    let frame = frame.to_vec();
    let m = py
        .allow_threads(|| {
            crate::loadgen::run(tx_if, rx_if, &frame, count, window.max(1), Duration::from_secs_f64(stall_s))
        })
        .map_err(|e| PyOSError::new_err(format!("offer {tx_if} -> {rx_if}: {e}")))?;
    Ok((m.sent, m.received, m.offered_pps, m.forwarded_pps))
}

#[pymodule]
fn slicing_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_class::<PyPacket>()?;
    m.add_class::<PyGate>()?;
    m.add_class::<PyLive>()?;
    m.add_function(wrap_pyfunction!(offer_closed_loop, m)?)?;
    Ok(())
}
