//! Bindings of `neardup_core::allpairs`: exact self-join, batch pair verification and SimHash
//! block tables. Private API (`neardup._core._allpairs_*`); the pipeline wraps them in Python.
//! A panic inside (rayon workers included) becomes `neardup.errors.InternalError`.
use neardup_core::allpairs::{self, Csr, Measure};
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::convert::{NpArray1, NpArray2};
use crate::errors::detached_catching;

/// `f` on the core's pool of `threads` workers: built once per size and kept (this built a
/// pool, starting its threads, on every call: every verification of the index's adds).
fn in_pool<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    neardup_core::batch::with_threads(threads, f).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn offsets_usize(offsets: &[i64]) -> PyResult<Vec<usize>> {
    offsets.iter().map(|&o| usize::try_from(o).map_err(|_| PyValueError::new_err("negative offset"))).collect()
}

fn measure_of(name: &str) -> PyResult<Measure> {
    match name {
        "jaccard" => Ok(Measure::Jaccard),
        "containment" => Ok(Measure::Containment),
        other => Err(PyValueError::new_err(format!("unknown measure {other:?} (expected 'jaccard' or 'containment')"))),
    }
}

/// verify_pairs(data, offsets, pairs, measure, threads=None) -> float64 array (m,)
#[pyfunction]
#[pyo3(signature = (data, offsets, pairs, measure="jaccard", threads=None))]
fn _allpairs_verify<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u64>,
    offsets: PyReadonlyArray1<'py, i64>,
    pairs: PyReadonlyArray2<'py, u32>,
    measure: &str,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let threads = crate::convert::threads(py, threads)?;
    let measure = measure_of(measure)?;
    let shape = pairs.shape().to_vec();
    if shape.len() != 2 || (shape[1] != 2 && shape[0] != 0) {
        return Err(PyValueError::new_err("pairs must have shape (m, 2)"));
    }
    let data = data.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let offs = offsets_usize(offsets.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?)?;
    let flat = pairs.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let pairs: Vec<[u32; 2]> = flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
    let sets = Csr::new(data, &offs).map_err(PyValueError::new_err)?;
    let out = detached_catching(py, || in_pool(threads, || allpairs::verify_pairs(sets, &pairs, measure)))??
        .map_err(PyValueError::new_err)?;
    Ok(out.into_pyarray(py))
}

/// self_join(data, offsets, threshold, threads=None) -> (pairs uint32 (m, 2), jaccard float64 (m,))
#[pyfunction]
#[pyo3(signature = (data, offsets, threshold, threads=None))]
fn _allpairs_self_join<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u64>,
    offsets: PyReadonlyArray1<'py, i64>,
    threshold: f64,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<(NpArray2<'py, u32>, NpArray1<'py, f64>)> {
    let threads = crate::convert::threads(py, threads)?;
    let data = data.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let offs = offsets_usize(offsets.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?)?;
    let sets = Csr::new(data, &offs).map_err(PyValueError::new_err)?;
    let found = detached_catching(py, || in_pool(threads, || allpairs::self_join(sets, threshold)))??
        .map_err(PyValueError::new_err)?;
    let m = found.len();
    let mut flat = Vec::with_capacity(2 * m);
    let mut sims = Vec::with_capacity(m);
    for (a, b, s) in found {
        flat.push(a);
        flat.push(b);
        sims.push(s);
    }
    let pairs = PyArray1::from_vec(py, flat).reshape([m, 2])?;
    Ok((pairs, sims.into_pyarray(py)))
}

/// hamming_pairs(fps, max_distance, threads=None) -> (pairs uint32 (m, 2), distance uint32 (m,))
#[pyfunction]
#[pyo3(signature = (fps, max_distance, threads=None))]
fn _allpairs_hamming<'py>(
    py: Python<'py>,
    fps: PyReadonlyArray1<'py, u64>,
    max_distance: u32,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<(NpArray2<'py, u32>, NpArray1<'py, u32>)> {
    let threads = crate::convert::threads(py, threads)?;
    let fps = fps.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let found = detached_catching(py, || in_pool(threads, || allpairs::hamming_candidates(fps, max_distance)))??
        .map_err(PyValueError::new_err)?;
    let m = found.len();
    let mut flat = Vec::with_capacity(2 * m);
    let mut dists = Vec::with_capacity(m);
    for (a, b, d) in found {
        flat.push(a);
        flat.push(b);
        dists.push(d);
    }
    let pairs = PyArray1::from_vec(py, flat).reshape([m, 2])?;
    Ok((pairs, dists.into_pyarray(py)))
}

/// Adds the functions above to the `_core` module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_allpairs_verify, m)?)?;
    m.add_function(wrap_pyfunction!(_allpairs_self_join, m)?)?;
    m.add_function(wrap_pyfunction!(_allpairs_hamming, m)?)?;
    register_exact(m)
}

/// exact_keys(texts: list[str], threads=None, unit="word") -> (keys uint64 (n,), ntokens uint64 (n,))
#[pyfunction]
#[pyo3(signature = (texts, threads=None, unit="word"))]
fn _exact_keys<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    threads: Option<&Bound<'_, PyAny>>,
    unit: &str,
) -> PyResult<(NpArray1<'py, u64>, NpArray1<'py, u64>)> {
    let threads = crate::convert::threads(py, threads)?;
    let unit = neardup_core::tokenize::Unit::parse(unit).map_err(|e| crate::errors::to_py(py, e))?;
    let owned = crate::convert::Texts::extract(texts)?; // borrowed UTF-8, no copy
    let strs = owned.strs()?;
    let n = strs.len();
    let mut keys = vec![0u64; n];
    let mut ntok = vec![0u64; n];
    detached_catching(py, || {
        in_pool(threads, || neardup_core::exactkey::exact_keys_in(&strs, unit, &mut keys, &mut ntok))
    })??;
    Ok((keys.into_pyarray(py), ntok.into_pyarray(py)))
}

/// Adds the exact-pass kernel to the `_core` module.
pub fn register_exact(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_exact_keys, m)?)
}
