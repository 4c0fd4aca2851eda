//! The Python module `slicing_engine` (PyO3): the bundled target's P4Runtime server and
//! traffic manager drive the engine through it. Indices (tables, actions, externs) are
//! resolved from names once; every per-packet and per-entry call takes integers.

use crate::exec::{Engine, Packet};
use crate::ir::MatchKind;
use crate::table::WriteError;
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
        crate::engine(json).map(|e| PyEngine { e }).map_err(|err| PyValueError::new_err(err.to_string()))
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
