//! `neardup._core.Shingler`.

use crate::convert::{one, utf8, NpArray1, Texts};
use crate::errors::{detached, param_err, to_py};
use neardup_core::batch;
use neardup_core::hash::ShingleHash;
use neardup_core::shingle::Shingler;
use neardup_core::tokenize::Unit;
use numpy::{PyArray1, ToPyArray};
use pyo3::prelude::*;
use pyo3::types::PyList;

#[pyclass(module = "neardup._core", name = "Shingler", frozen)]
pub struct PyShingler {
    pub inner: Shingler,
}

#[pymethods]
impl PyShingler {
    #[new]
    #[pyo3(signature = (k=5, unit="word", hash="xxh3", seed=0, stopwords=None))]
    fn new(
        py: Python<'_>,
        k: i64,
        unit: &str,
        hash: &str,
        seed: u64,
        stopwords: Option<Vec<String>>,
    ) -> PyResult<Self> {
        if k < 1 {
            return Err(param_err(py, format!("k must be a positive integer, got {k}")));
        }
        let unit = Unit::parse(unit).map_err(|e| to_py(py, e))?;
        let hash = ShingleHash::parse(hash).map_err(|e| to_py(py, e))?;
        let mut inner = Shingler::new(k as usize, unit, hash, seed).map_err(|e| to_py(py, e))?;
        if let Some(words) = stopwords {
            inner = inner.with_stopwords(words.iter().map(String::as_str));
        }
        Ok(PyShingler { inner })
    }

    #[getter]
    fn k(&self) -> usize {
        self.inner.k()
    }
    #[getter]
    fn unit(&self) -> &'static str {
        self.inner.unit().name()
    }
    #[getter]
    fn hash(&self) -> &'static str {
        self.inner.hash_kind().name()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed()
    }
    #[getter]
    fn stopwords(&self) -> Option<Vec<String>> {
        self.inner.stopwords().map(|s| {
            let mut v: Vec<String> = s.iter().cloned().collect();
            v.sort();
            v
        })
    }

    /// Distinct shingles of `text`, in first-seen order.
    fn shingles(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let s = one(text, None)?;
        let t = utf8(&s, None)?;
        detached(py, || Ok(self.inner.shingles(t)))
    }

    /// Distinct shingle ids of `text`, sorted (uint64).
    fn hashes<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let s = one(text, None)?;
        let t = utf8(&s, None)?;
        let v = detached(py, || Ok(self.inner.hashes(t)))?;
        Ok(PyArray1::from_vec(py, v))
    }

    /// Distinct shingle ids (sorted, uint64) and their counts (uint32).
    fn weighted_hashes<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<(NpArray1<'py, u64>, NpArray1<'py, u32>)> {
        let s = one(text, None)?;
        let t = utf8(&s, None)?;
        let (ids, counts) = detached(py, || Ok(self.inner.weighted_hashes(t)))?;
        Ok((PyArray1::from_vec(py, ids), PyArray1::from_vec(py, counts)))
    }

    /// `hashes` for every text of a batch, on `threads` threads.
    #[pyo3(signature = (texts, threads=None))]
    fn hashes_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let owned = Texts::extract(texts)?;
        let strs = owned.strs()?;
        let t = crate::convert::threads(py, threads)?;
        let rows = detached(py, || batch::with_threads(t, || batch::hashes(&self.inner, &strs)))?;
        PyList::new(py, rows.iter().map(|r| r.to_pyarray(py)))
    }
}
