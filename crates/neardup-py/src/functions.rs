//! Module-level functions: SimHash, exact measures, LSH arithmetic, graphs.

use crate::convert::{int_arg, one, utf8, Texts};
use crate::errors::{detached, param_err, raise, to_py};
use crate::shingler::PyShingler;
use neardup_core::{batch, lsh, measures, simhash, unionfind};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

fn sorted_ids<'a>(py: Python<'_>, a: &'a PyReadonlyArray1<'_, u64>, name: &str) -> PyResult<&'a [u64]> {
    let s = a.as_slice().map_err(|_| param_err(py, format!("{name} must be a contiguous uint64 array")))?;
    if !measures::is_sorted_distinct(s) {
        return Err(raise(
            py,
            "InvalidInputError",
            format!("{name} must be sorted and distinct (as Shingler.hashes returns)"),
            None,
        ));
    }
    Ok(s)
}

#[pyfunction]
pub fn jaccard(py: Python<'_>, a: PyReadonlyArray1<'_, u64>, b: PyReadonlyArray1<'_, u64>) -> PyResult<f64> {
    Ok(measures::jaccard(sorted_ids(py, &a, "h1")?, sorted_ids(py, &b, "h2")?))
}

#[pyfunction]
pub fn containment(py: Python<'_>, a: PyReadonlyArray1<'_, u64>, b: PyReadonlyArray1<'_, u64>) -> PyResult<f64> {
    Ok(measures::containment(sorted_ids(py, &a, "h1")?, sorted_ids(py, &b, "h2")?))
}

#[pyfunction]
pub fn estimate_jaccard_rows<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, u32>,
    b: PyReadonlyArray2<'py, u32>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (aa, bb) = (a.as_array(), b.as_array());
    if aa.shape() != bb.shape() {
        return Err(param_err(py, format!("signature shapes differ: {:?} vs {:?}", aa.shape(), bb.shape())));
    }
    let out: Vec<f64> = aa
        .outer_iter()
        .zip(bb.outer_iter())
        .map(|(x, y)| {
            let n = x.len();
            if n == 0 {
                0.0
            } else {
                x.iter().zip(y.iter()).filter(|(p, q)| p == q).count() as f64 / n as f64
            }
        })
        .collect();
    Ok(PyArray1::from_vec(py, out))
}

#[pyfunction]
pub fn simhash_fingerprint(py: Python<'_>, shingler: &PyShingler, text: &Bound<'_, PyAny>) -> PyResult<u64> {
    let s = one(text, None)?;
    let t = utf8(&s, None)?;
    detached(py, || Ok(simhash::fingerprint(&shingler.inner, t)))
}

#[pyfunction]
#[pyo3(signature = (shingler, texts, threads=None))]
pub fn simhash_fingerprints<'py>(
    py: Python<'py>,
    shingler: &PyShingler,
    texts: &Bound<'py, PyAny>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let owned = Texts::extract(texts)?;
    let strs = owned.strs()?;
    let t = crate::convert::threads(py, threads)?;
    let mut out = vec![0u64; strs.len()];
    detached(py, || batch::with_threads(t, || batch::fingerprints(&shingler.inner, &strs, &mut out)))?;
    Ok(PyArray1::from_vec(py, out))
}

/// Fingerprints of an Arrow string array passed as its (int64 offsets, uint8 data).
#[pyfunction]
#[pyo3(signature = (shingler, offsets, data, threads=None))]
pub fn simhash_fingerprints_arrow<'py>(
    py: Python<'py>,
    shingler: &PyShingler,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let strs = crate::convert::arrow_texts(py, &offsets, &data)?;
    let t = crate::convert::threads(py, threads)?;
    let mut out = vec![0u64; strs.len()];
    detached(py, || batch::with_threads(t, || batch::fingerprints(&shingler.inner, &strs, &mut out)))?;
    Ok(PyArray1::from_vec(py, out))
}

#[pyfunction]
pub fn simhash_from_weighted(
    py: Python<'_>,
    ids: PyReadonlyArray1<'_, u64>,
    weights: PyReadonlyArray1<'_, u32>,
) -> PyResult<u64> {
    let (i, w) = (ids.as_array(), weights.as_array());
    if i.len() != w.len() {
        return Err(param_err(py, format!("ids ({}) and weights ({}) differ in length", i.len(), w.len())));
    }
    let (i, w): (Vec<u64>, Vec<u32>) = (i.iter().copied().collect(), w.iter().copied().collect());
    Ok(simhash::fingerprint_weighted(&i, &w))
}

#[pyfunction]
pub fn candidate_probability(s: f64, b: u32, r: u32) -> f64 {
    lsh::candidate_probability(s, b, r)
}

#[pyfunction]
pub fn optimal_params(
    py: Python<'_>,
    threshold: f64,
    num_perm: u32,
    fp_weight: f64,
    fn_weight: f64,
) -> PyResult<(u32, u32)> {
    detached(py, || lsh::optimal_params(threshold, num_perm, fp_weight, fn_weight))
}

#[pyfunction]
pub fn params_for_recall(py: Python<'_>, threshold: f64, num_perm: u32, recall: f64) -> PyResult<(u32, u32)> {
    detached(py, || lsh::params_for_recall(threshold, num_perm, recall))
}

/// The areas' arguments: a threshold in [0, 1] and positive b and r (the integrator gives no
/// meaning to others; NaN and infinities hung it before it stopped on them).
fn area_args(py: Python<'_>, threshold: f64, b: u32, r: u32) -> PyResult<()> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(param_err(py, format!("threshold must be in [0, 1], got {threshold}")));
    }
    if b == 0 || r == 0 {
        return Err(param_err(py, format!("bands ({b}) and rows ({r}) must be positive")));
    }
    Ok(())
}

#[pyfunction]
pub fn false_positive_area(py: Python<'_>, threshold: f64, b: u32, r: u32) -> PyResult<f64> {
    area_args(py, threshold, b, r)?;
    Ok(lsh::false_positive_area(threshold, b, r))
}

#[pyfunction]
pub fn false_negative_area(py: Python<'_>, threshold: f64, b: u32, r: u32) -> PyResult<f64> {
    area_args(py, threshold, b, r)?;
    Ok(lsh::false_negative_area(threshold, b, r))
}

#[pyfunction]
#[pyo3(signature = (signatures, b, r, threads=None))]
pub fn band_keys<'py>(
    py: Python<'py>,
    signatures: PyReadonlyArray2<'py, u32>,
    b: usize,
    r: usize,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let arr = signatures.as_array();
    let (n, k) = (arr.shape()[0], arr.shape()[1]);
    lsh::check_bands(k, b, r).map_err(|e| to_py(py, e))?;
    let owned;
    let sigs: &[u32] = match signatures.as_slice() {
        Ok(s) => s,
        Err(_) => {
            owned = arr.iter().copied().collect::<Vec<u32>>();
            &owned
        }
    };
    let t = crate::convert::threads(py, threads)?;
    let mut out = vec![0u64; n * b];
    detached(py, || batch::with_threads(t, || batch::band_keys(sigs, k, b, r, &mut out)))?;
    Ok(Array2::from_shape_vec((n, b), out).expect("n * b keys").into_pyarray(py))
}

fn pairs_matrix<'py>(py: Python<'py>, pairs: Vec<(u32, u32)>) -> Bound<'py, PyArray2<u32>> {
    let m = pairs.len();
    let flat: Vec<u32> = pairs.into_iter().flat_map(|(a, b)| [a, b]).collect();
    Array2::from_shape_vec((m, 2), flat).expect("m * 2").into_pyarray(py)
}

#[pyfunction]
pub fn candidate_pairs<'py>(py: Python<'py>, keys: PyReadonlyArray2<'py, u64>) -> PyResult<Bound<'py, PyArray2<u32>>> {
    let (flat, n, b) = crate::convert::key_rows(py, &keys)?;
    let pairs = detached(py, || Ok(lsh::candidate_pairs(&flat, n, b)))?;
    Ok(pairs_matrix(py, pairs))
}

/// An (m, 2) pair array over `n` nodes as pairs: its shape and `n` checked (the graph
/// functions' one conversion).
fn graph_pairs(py: Python<'_>, n: usize, pairs: &PyReadonlyArray2<'_, u32>) -> PyResult<Vec<(u32, u32)>> {
    let arr = pairs.as_array();
    if arr.shape()[1] != 2 && arr.shape()[0] != 0 {
        return Err(param_err(py, format!("pairs must have shape (m, 2), got {:?}", arr.shape())));
    }
    if n > u32::MAX as usize {
        return Err(param_err(py, "at most 2^32 - 1 nodes"));
    }
    Ok(arr.outer_iter().map(|row| (row[0], row[1])).collect())
}

#[pyfunction]
pub fn connected_components<'py>(
    py: Python<'py>,
    n: usize,
    pairs: PyReadonlyArray2<'py, u32>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let pairs = graph_pairs(py, n, &pairs)?;
    let labels = detached(py, || unionfind::connected_components(n, &pairs))?;
    Ok(PyArray1::from_vec(py, labels))
}

#[pyfunction]
pub fn _spanning_forest<'py>(
    py: Python<'py>,
    n: usize,
    pairs: PyReadonlyArray2<'py, u32>,
    fixed: usize,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let pairs = graph_pairs(py, n, &pairs)?;
    let mask = detached(py, || unionfind::spanning_forest(n, &pairs, fixed))?;
    Ok(PyArray1::from_vec(py, mask))
}

#[pyclass(module = "neardup._core", name = "UnionFind")]
pub struct PyUnionFind {
    inner: unionfind::UnionFind,
}

impl PyUnionFind {
    /// A node number: an int (or a NumPy integer) in 0..len. A bool, a float or a string is
    /// InvalidParameterError, as the rest of the API's integer arguments (`neardup._ints`); an
    /// int outside the range, however large, InvalidInputError naming it.
    fn check(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<u32> {
        let v = int_arg(py, x, "a node")?;
        match v {
            Some(v) if v >= 0 && (v as u64) < self.inner.len() as u64 => Ok(v as u32),
            _ => Err(raise(py, "InvalidInputError", format!("node {x} is outside 0..{}", self.inner.len()), None)),
        }
    }
}

/// `x` as an i64 (None: an int past 64 bits); a bool or a non-integer is InvalidParameterError.
fn no_memory(n: usize) -> PyErr {
    pyo3::exceptions::PyMemoryError::new_err(format!("no memory for a union-find of {n} nodes (8 bytes each)"))
}

/// A size argument of UnionFind (new, grow): an integer in 0..2^32.
fn size_arg(py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<usize> {
    match int_arg(py, n, "n")? {
        Some(v) if (0..=u32::MAX as i64).contains(&v) => Ok(v as usize),
        _ => Err(param_err(py, format!("n must be in 0..2^32, got {n}"))),
    }
}

#[pymethods]
impl PyUnionFind {
    #[new]
    fn new(py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<Self> {
        let n = size_arg(py, n)?;
        let inner = unionfind::UnionFind::try_new(n).map_err(|_| no_memory(n))?;
        Ok(PyUnionFind { inner })
    }
    fn __len__(&self) -> usize {
        self.inner.len()
    }
    fn find(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<u32> {
        let x = self.check(py, x)?;
        Ok(self.inner.find(x))
    }
    fn union(&mut self, py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (a, b) = (self.check(py, a)?, self.check(py, b)?);
        Ok(self.inner.union(a, b))
    }
    fn grow(&mut self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = size_arg(py, n)?;
        self.inner.try_grow(n).map_err(|_| no_memory(n))
    }
    fn labels<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        PyArray1::from_vec(py, self.inner.labels())
    }
}

/// Which multiply-shift kernel the running CPU uses ("avx512", "avx2" or "portable").
#[pyfunction]
pub fn simd_kernel() -> &'static str {
    neardup_core::minhash::kernel_name()
}

/// Test hook: panic inside the core (optionally on a rayon worker) to prove that a panic
/// surfaces as `neardup.errors.InternalError` and the interpreter lives on.
#[pyfunction]
#[pyo3(signature = (in_worker=false))]
pub fn _panic_for_tests(py: Python<'_>, in_worker: bool) -> PyResult<()> {
    detached(py, || {
        if in_worker {
            batch::with_threads(Some(2), || {
                use rayon::prelude::*;
                (0..4).into_par_iter().for_each(|i| {
                    if i == 3 {
                        panic!("deliberate test panic in a worker")
                    }
                });
            })
        } else {
            panic!("deliberate test panic")
        }
    })
}
