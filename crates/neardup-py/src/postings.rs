//! `postings_lookup`: the persistent index's band look-up (see `neardup_core::postings`).

use crate::errors::{detached, param_err};
use neardup_core::postings;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// Every (query index, document) with `keys[p] == queries[i]`, over the sorted posting arrays
/// `keys[j]` / `docs[j]` (one pair per segment; each sorted by key), as two int64 arrays.
#[pyfunction]
pub fn postings_lookup<'py>(
    py: Python<'py>,
    keys: Vec<PyReadonlyArray1<'py, u64>>,
    docs: Vec<PyReadonlyArray1<'py, u32>>,
    queries: PyReadonlyArray1<'py, u64>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(postings_lookup, m)?)?;
    Ok(())
}
