//! `IdTable` and `FirstSeen`: the batch job's compact per-document tables (see
//! `neardup_core::tables`), so that 10 million documents do not need 10 million Python
//! objects.

use crate::errors::{param_err, raise};
use neardup_core::tables;
use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyList;

#[pyclass(module = "neardup._core", name = "IdTable")]
pub struct PyIdTable {
    inner: tables::IdTable,
}

#[pymethods]
impl PyIdTable {
    #[new]
    fn new() -> Self {
        PyIdTable { inner: tables::IdTable::new() }
    }
    fn __len__(&self) -> usize {
        self.inner.len()
    }
    /// Append `id` and return -1, or return the index it already has (nothing appended).
    fn insert(&mut self, id: &str) -> i64 {
        match self.inner.insert(id) {
            Ok(_) => -1,
            Err(j) => j as i64,
        }
    }
    fn get(&self, py: Python<'_>, i: i64) -> PyResult<String> {
        if i < 0 || i as usize >= self.inner.len() {
            return Err(raise(py, "InvalidInputError", format!("index {i} is outside 0..{}", self.inner.len()), None));
        }
        Ok(self.inner.get(i as usize).to_owned())
    }
    /// The ids at `indices` (int64), as a list of str.
    fn take<'py>(&self, py: Python<'py>, indices: PyReadonlyArray1<'py, i64>) -> PyResult<Bound<'py, PyList>> {
        let idx = indices.as_slice().map_err(|_| param_err(py, "indices must be a contiguous int64 array"))?;
        let n = self.inner.len();
        if let Some(bad) = idx.iter().find(|&&i| i < 0 || i as usize >= n) {
            return Err(raise(py, "InvalidInputError", format!("index {bad} is outside 0..{n}"), None));
        }
        PyList::new(py, idx.iter().map(|&i| self.inner.get(i as usize)))
    }
    fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes()
    }
}

#[pyclass(module = "neardup._core", name = "FirstSeen")]
pub struct PyFirstSeen {
    inner: tables::FirstSeen,
}

#[pymethods]
impl PyFirstSeen {
    #[new]
    fn new() -> Self {
        PyFirstSeen { inner: tables::FirstSeen::new() }
    }
    fn __len__(&self) -> usize {
        self.inner.len()
    }
    /// For each (key, doc): the first document seen with that key (`doc` itself when new).
    fn first<'py>(
        &mut self,
        py: Python<'py>,
        keys: PyReadonlyArray1<'py, u64>,
        docs: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        if keys.len() != docs.len() {
            return Err(param_err(py, format!("{} keys but {} docs", keys.len(), docs.len())));
        }
        let (k, d) = (keys.as_slice(), docs.as_slice());
        let (k, d) = match (k, d) {
            (Ok(k), Ok(d)) => (k, d),
            _ => return Err(param_err(py, "keys and docs must be contiguous arrays")),
        };
        if let Some(bad) = d.iter().find(|&&x| x < 0 || x > u32::MAX as i64) {
            return Err(raise(py, "InvalidInputError", format!("document {bad} is outside 0..2^32"), None));
        }
        let out: Vec<i64> = k.iter().zip(d).map(|(&key, &doc)| self.inner.first(key, doc as u32) as i64).collect();
        Ok(PyArray1::from_vec(py, out))
    }
    fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyIdTable>()?;
    m.add_class::<PyFirstSeen>()?;
    Ok(())
}
