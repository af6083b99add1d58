//! `postings_lookup`: the persistent index's band look-up (see `neardup_core::postings`).

use crate::convert::NpArray1;
use crate::errors::{detached, param_err, raise};
use neardup_core::postings;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Every (query index, document) with `keys[p] == queries[i]`, over the sorted posting arrays
/// `keys[j]` / `docs[j]` (one pair per segment; each sorted by key), as two int64 arrays.
#[pyfunction]
pub fn postings_lookup<'py>(
    py: Python<'py>,
    keys: Vec<PyReadonlyArray1<'py, u64>>,
    docs: Vec<PyReadonlyArray1<'py, u32>>,
    queries: PyReadonlyArray1<'py, u64>,
) -> PyResult<(NpArray1<'py, i64>, NpArray1<'py, i64>)> {
    if keys.len() != docs.len() {
        return Err(param_err(py, format!("{} key arrays but {} document arrays", keys.len(), docs.len())));
    }
    let q = queries.as_slice().map_err(|_| param_err(py, "queries must be a contiguous uint64 array"))?;
    if q.len() > u32::MAX as usize {
        return Err(param_err(py, "at most 2^32 - 1 queries"));
    }
    let mut arrays: Vec<(&[u64], &[u32])> = Vec::with_capacity(keys.len());
    for (j, (k, d)) in keys.iter().zip(docs.iter()).enumerate() {
        let k = k.as_slice().map_err(|_| param_err(py, format!("keys[{j}] must be a contiguous uint64 array")))?;
        let d = d.as_slice().map_err(|_| param_err(py, format!("docs[{j}] must be a contiguous uint32 array")))?;
        if k.len() != d.len() {
            return Err(param_err(py, format!("keys[{j}] has {} entries but docs[{j}] has {}", k.len(), d.len())));
        }
        arrays.push((k, d));
    }
    // Sortedness is not re-checked here (a linear pass over every segment would cost more than
    // a service query's look-up): segments are written sorted and their CRC is checked on load.
    let (qi, d) = detached(py, || {
        let (qi, d) = postings::lookup(&arrays, q);
        Ok((qi.into_iter().map(i64::from).collect::<Vec<i64>>(), d.into_iter().map(i64::from).collect::<Vec<i64>>()))
    })?;
    Ok((PyArray1::from_vec(py, qi), PyArray1::from_vec(py, d)))
}

/// The posting arrays of one band over every segment, held for the look-ups of a few queries
/// (a service's single articles): passing 2 x segments arrays to every call cost more than
/// the binary searches themselves.
#[pyclass(frozen, module = "neardup._core")]
pub struct PostingArrays {
    keys: Vec<Py<PyArray1<u64>>>,
    docs: Vec<Py<PyArray1<u32>>>,
}

#[pymethods]
impl PostingArrays {
    #[new]
    fn new(py: Python<'_>, keys: Vec<Bound<'_, PyArray1<u64>>>, docs: Vec<Bound<'_, PyArray1<u32>>>) -> PyResult<Self> {
        if keys.len() != docs.len() {
            return Err(param_err(py, format!("{} key arrays but {} document arrays", keys.len(), docs.len())));
        }
        for (j, (k, d)) in keys.iter().zip(docs.iter()).enumerate() {
            let (k, d) = (k.readonly(), d.readonly());
            let k = k.as_slice().map_err(|_| param_err(py, format!("keys[{j}] must be a contiguous uint64 array")))?;
            let d = d.as_slice().map_err(|_| param_err(py, format!("docs[{j}] must be a contiguous uint32 array")))?;
            if k.len() != d.len() {
                return Err(param_err(py, format!("keys[{j}] has {} entries but docs[{j}] has {}", k.len(), d.len())));
            }
        }
        Ok(Self {
            keys: keys.into_iter().map(Bound::unbind).collect(),
            docs: docs.into_iter().map(Bound::unbind).collect(),
        })
    }

    /// Every (query index, document) with a matching key, in the order of `postings_lookup`'s
    /// scalar path: arrays, then queries, then documents as stored. The GIL is kept: the
    /// searches take microseconds, less than releasing and taking it back.
    fn few<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(NpArray1<'py, i64>, NpArray1<'py, i64>)> {
        let q = queries.as_slice().map_err(|_| param_err(py, "queries must be a contiguous uint64 array"))?;
        let (qi, d) = self.search(py, q)?;
        Ok((
            PyArray1::from_vec(py, qi.into_iter().map(i64::from).collect()),
            PyArray1::from_vec(py, d.into_iter().map(i64::from).collect()),
        ))
    }

    fn __len__(&self) -> usize {
        self.keys.len()
    }
}

impl PostingArrays {
    /// `postings::lookup_few` over these arrays: (query index, document) of every match.
    fn search(&self, py: Python<'_>, q: &[u64]) -> PyResult<(Vec<u32>, Vec<u32>)> {
        let views: Vec<_> = self.keys.iter().zip(&self.docs).map(|(k, d)| (k.bind(py), d.bind(py))).collect();
        let mut arrays: Vec<(&[u64], &[u32])> = Vec::with_capacity(views.len());
        for (k, d) in &views {
            // SAFETY: read without numpy's borrow tracking (acquiring it for 2 x segments arrays
            // was most of a call's time). The arrays are a segment's postings: made once when
            // the file is loaded (read-only views of its bytes) and never written afterwards;
            // they were checked contiguous at construction, and this object keeps them alive.
            let (ks, ds) = unsafe { (k.as_slice().unwrap_or(&[]), d.as_slice().unwrap_or(&[])) };
            arrays.push((ks, ds));
        }
        catch_unwind(AssertUnwindSafe(|| postings::lookup_few(&arrays, q))).map_err(|_| {
            raise(py, "InternalError", "internal error in neardup's Rust core: posting look-up".into(), None)
        })
    }
}

/// `PostingArrays.few` for every band at once (a single article's candidate look-up: one call
/// instead of one per band): `handles[j]` answers row j of `queries` (bands x queries). Every
/// (row, query index, document) with a matching key, rows in order, each as `few` gives it.
#[pyfunction]
pub fn lookup_bands<'py>(
    py: Python<'py>,
    handles: Vec<Bound<'py, PostingArrays>>,
    queries: PyReadonlyArray2<'py, u64>,
) -> PyResult<(NpArray1<'py, i64>, NpArray1<'py, i64>, NpArray1<'py, i64>)> {
    let q = queries.as_array();
    if q.shape()[0] != handles.len() {
        return Err(param_err(py, format!("{} rows of queries but {} posting handles", q.shape()[0], handles.len())));
    }
    let (mut rows, mut qis, mut docs) = (Vec::new(), Vec::new(), Vec::new());
    for (j, h) in handles.iter().enumerate() {
        let row: Vec<u64> = q.row(j).to_vec();
        let (qi, d) = h.get().search(py, &row)?;
        rows.extend(std::iter::repeat_n(j as i64, qi.len()));
        qis.extend(qi.into_iter().map(i64::from));
        docs.extend(d.into_iter().map(i64::from));
    }
    Ok((PyArray1::from_vec(py, rows), PyArray1::from_vec(py, qis), PyArray1::from_vec(py, docs)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PostingArrays>()?;
    m.add_function(wrap_pyfunction!(postings_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(lookup_bands, m)?)?;
    Ok(())
}
