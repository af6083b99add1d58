//! Bindings of the large-bucket kernels: LSH candidates with large buckets kept whole
//! (`neardup_core::lsh::candidate_pairs_capped`) and their per-bucket union-find verification
//! (`neardup_core::buckets`). Private API (`neardup._core._lsh_*`, `_bucket_*`); the pipeline
//! (`neardup.pipeline.buckets`) wraps them. A panic inside is caught and raised as
//! `neardup.InternalError`.
use crate::errors::{detached, param_err};
use neardup_core::allpairs::{intersection_size, similarity, Csr, Measure};
use neardup_core::buckets::{spanning_edges, Buckets, Spanning};
use neardup_core::{lsh, measures, Error};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

fn usizes(py: Python<'_>, a: &[i64], name: &str) -> PyResult<Vec<usize>> {
    a.iter().map(|&o| usize::try_from(o).map_err(|_| param_err(py, format!("{name}: negative offset")))).collect()
}

fn slice<'a, T: numpy::Element>(py: Python<'_>, a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| param_err(py, format!("{name} must be a contiguous array")))
}

type Triple<'py> = (Bound<'py, PyArray2<u32>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u32>>);

/// (pairs uint32 (m, 2), bucket offsets int64 (k + 1,), bucket members uint32): the candidate
/// pairs of buckets of at most `max_bucket` rows, and the larger buckets whole.
#[pyfunction]
fn _lsh_candidates_capped<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray2<'py, u64>,
    max_bucket: usize,
) -> PyResult<Triple<'py>> {
    let (flat, n, b) = crate::convert::key_rows(py, &keys)?;
    let c = detached(py, || Ok(lsh::candidate_pairs_capped(&flat, n, b, max_bucket)))?;
    let m = c.pairs.len();
    let pairs: Vec<u32> = c.pairs.into_iter().flat_map(|(x, y)| [x, y]).collect();
    let offsets: Vec<i64> = c.offsets.into_iter().map(|o| o as i64).collect();
    Ok((PyArray1::from_vec(py, pairs).reshape([m, 2])?, offsets.into_pyarray(py), c.members.into_pyarray(py)))
}

type Found<'py> = (Bound<'py, PyArray2<u32>>, Bound<'py, PyArray1<f64>>, u64);

fn found<'py>(py: Python<'py>, s: Spanning) -> PyResult<Found<'py>> {
    let m = s.edges.len();
    let mut flat = Vec::with_capacity(2 * m);
    let mut sims = Vec::with_capacity(m);
    for (x, j, v) in s.edges {
        flat.push(x);
        flat.push(j);
        sims.push(v);
    }
    Ok((PyArray1::from_vec(py, flat).reshape([m, 2])?, sims.into_pyarray(py), s.checks))
}

/// (edges uint32 (e, 2), similarities float64 (e,), checks): per-bucket union-find over
/// documents 0..len(seed) whose shingle sets are CSR (`data`, `set_offsets`), exact measure.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _bucket_spanning_exact<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    members: PyReadonlyArray1<'py, u32>,
    seed: PyReadonlyArray1<'py, u32>,
    data: PyReadonlyArray1<'py, u64>,
    set_offsets: PyReadonlyArray1<'py, i64>,
    measure: &str,
    threshold: f64,
) -> PyResult<Found<'py>> {
    let measure = match measure {
        "jaccard" => Measure::Jaccard,
        "containment" => Measure::Containment,
        other => return Err(param_err(py, format!("unknown measure {other:?}"))),
    };
    let offs = usizes(py, slice(py, &offsets, "offsets")?, "offsets")?;
    let soffs = usizes(py, slice(py, &set_offsets, "set_offsets")?, "set_offsets")?;
    let (members, seed, data) = (slice(py, &members, "members")?, slice(py, &seed, "seed")?, slice(py, &data, "data")?);
    let sets = Csr::new(data, &soffs).map_err(|e| param_err(py, e))?;
    if sets.len() != seed.len() {
        return Err(param_err(py, format!("{} sets for {} documents", sets.len(), seed.len())));
    }
    let b = Buckets { offsets: &offs, members };
    let s = detached(py, || {
        spanning_edges(seed.len(), &b, seed, threshold, |x, j| {
            let (p, q) = (sets.get(x as usize), sets.get(j as usize));
            similarity(measure, p.len(), q.len(), intersection_size(p, q))
        })
        .map_err(Error::InvalidParameter)
    })?;
    found(py, s)
}

/// As `_bucket_spanning_exact`, with the MinHash estimate of signature rows `sigs` (n, p).
#[pyfunction]
fn _bucket_spanning_estimate<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    members: PyReadonlyArray1<'py, u32>,
    seed: PyReadonlyArray1<'py, u32>,
    sigs: PyReadonlyArray2<'py, u32>,
    threshold: f64,
) -> PyResult<Found<'py>> {
    let offs = usizes(py, slice(py, &offsets, "offsets")?, "offsets")?;
    let (members, seed) = (slice(py, &members, "members")?, slice(py, &seed, "seed")?);
    let (n, p) = (sigs.shape()[0], sigs.shape()[1]);
    if n != seed.len() {
        return Err(param_err(py, format!("{n} signatures for {} documents", seed.len())));
    }
    let rows = sigs.as_slice().map_err(|_| param_err(py, "sigs must be a contiguous (n, p) array"))?;
    let b = Buckets { offsets: &offs, members };
    let s = detached(py, || {
        spanning_edges(n, &b, seed, threshold, |x, j| {
            let (x, j) = (x as usize, j as usize);
            measures::estimate_jaccard(&rows[x * p..(x + 1) * p], &rows[j * p..(j + 1) * p])
        })
        .map_err(Error::InvalidParameter)
    })?;
    found(py, s)
}

/// Adds the functions above to the `_core` module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_lsh_candidates_capped, m)?)?;
    m.add_function(wrap_pyfunction!(_bucket_spanning_exact, m)?)?;
    m.add_function(wrap_pyfunction!(_bucket_spanning_estimate, m)?)
}
