//! `neardup._core.MinHasher`: the three MinHash schemes behind one class.

use crate::convert::{arrow_texts, one, utf8, NpArray1, NpArray2, Texts};
use crate::errors::{detached, param_err, raise, to_py};
use crate::shingler::PyShingler;
use neardup_core::batch;
use neardup_core::minhash::{MinHasher, Scheme};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(module = "neardup._core", name = "MinHasher", frozen)]
pub struct PyMinHasher {
    inner: MinHasher,
}

fn slice_or_copy<T: numpy::Element + Copy>(a: &PyReadonlyArray1<'_, T>) -> Vec<T> {
    match a.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => a.as_array().iter().copied().collect(),
    }
}

impl PyMinHasher {
    fn sig_buffer(&self, n: usize) -> Vec<u32> {
        vec![0u32; n * self.inner.num_perm()]
    }

    fn matrix<'py>(&self, py: Python<'py>, n: usize, v: Vec<u32>) -> Bound<'py, PyArray2<u32>> {
        Array2::from_shape_vec((n, self.inner.num_perm()), v).expect("buffer has n * num_perm values").into_pyarray(py)
    }

    /// Signatures, exact keys and token counts of `strs` (a list's or an Arrow array's texts),
    /// each text tokenised once, on `threads` threads with the GIL released.
    #[allow(clippy::type_complexity)]
    fn keyed<'py, S: AsRef<str> + Sync>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        strs: &[S],
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(NpArray2<'py, u32>, NpArray1<'py, u64>, NpArray1<'py, u64>)> {
        let t = crate::convert::threads(py, threads)?;
        let n = strs.len();
        let (mut out, mut keys, mut ntok) = (self.sig_buffer(n), vec![0u64; n], vec![0u64; n]);
        detached(py, || {
            batch::with_threads(t, || {
                batch::signatures_keyed(&self.inner, &shingler.inner, strs, &mut out, &mut keys, &mut ntok)
            })
        })?;
        Ok((self.matrix(py, n, out), keys.into_pyarray(py), ntok.into_pyarray(py)))
    }
}

#[pymethods]
impl PyMinHasher {
    #[staticmethod]
    fn multiply_shift(py: Python<'_>, num_perm: i64, seed: u64) -> PyResult<Self> {
        let n = positive(py, num_perm)?;
        MinHasher::multiply_shift(n, seed).map(|inner| PyMinHasher { inner }).map_err(|e| to_py(py, e))
    }

    #[staticmethod]
    fn multiply_shift_from_params(
        py: Python<'_>,
        a: PyReadonlyArray1<'_, u64>,
        b: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<Self> {
        MinHasher::multiply_shift_from_params(slice_or_copy(&a), slice_or_copy(&b))
            .map(|inner| PyMinHasher { inner })
            .map_err(|e| to_py(py, e))
    }

    #[staticmethod]
    fn affine32(py: Python<'_>, a: PyReadonlyArray1<'_, u32>, b: PyReadonlyArray1<'_, u32>) -> PyResult<Self> {
        MinHasher::affine32_from_params(slice_or_copy(&a), slice_or_copy(&b))
            .map(|inner| PyMinHasher { inner })
            .map_err(|e| to_py(py, e))
    }

    #[staticmethod]
    fn oph(py: Python<'_>, num_perm: i64, seed: u64) -> PyResult<Self> {
        let n = positive(py, num_perm)?;
        MinHasher::oph(n, seed).map(|inner| PyMinHasher { inner }).map_err(|e| to_py(py, e))
    }

    #[getter]
    fn num_perm(&self) -> usize {
        self.inner.num_perm()
    }

    #[getter]
    fn scheme(&self) -> &'static str {
        self.inner.scheme().name()
    }

    /// (a, b) as NumPy arrays, or None for schemes without them.
    fn params<'py>(&self, py: Python<'py>) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        match self.inner.scheme() {
            Scheme::MultiplyShift { a, b } => {
                Some((PyArray1::from_slice(py, a).into_any(), PyArray1::from_slice(py, b).into_any()))
            }
            Scheme::Affine32 { a, b } => {
                Some((PyArray1::from_slice(py, a).into_any(), PyArray1::from_slice(py, b).into_any()))
            }
            Scheme::Oph { .. } => None,
        }
    }

    fn signature<'py>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let s = one(text, None)?;
        let t = utf8(&s, None)?;
        let mut out = self.sig_buffer(1);
        detached(py, || {
            self.inner.from_text(&shingler.inner, t, &mut out);
            Ok(())
        })?;
        Ok(PyArray1::from_vec(py, out))
    }

    #[pyo3(signature = (shingler, texts, threads=None))]
    fn signatures<'py>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        texts: &Bound<'py, PyAny>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let owned = Texts::extract(texts)?;
        let strs = owned.strs()?;
        let t = crate::convert::threads(py, threads)?;
        let mut out = self.sig_buffer(strs.len());
        detached(py, || batch::with_threads(t, || batch::signatures(&self.inner, &shingler.inner, &strs, &mut out)))?;
        Ok(self.matrix(py, strs.len(), out))
    }

    /// Signatures plus each text's exact key and token count (as ``_exact_keys``), each text
    /// tokenised once: (n x num_perm uint32, keys uint64 (n,), ntokens uint64 (n,)).
    #[pyo3(signature = (shingler, texts, threads=None))]
    fn signatures_keyed<'py>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        texts: &Bound<'py, PyAny>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(NpArray2<'py, u32>, NpArray1<'py, u64>, NpArray1<'py, u64>)> {
        let owned = Texts::extract(texts)?;
        self.keyed(py, shingler, &owned.strs()?, threads)
    }

    /// Signatures of an Arrow string array passed as its (int64 offsets, uint8 data).
    #[pyo3(signature = (shingler, offsets, data, threads=None))]
    fn signatures_arrow<'py>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        offsets: PyReadonlyArray1<'py, i64>,
        data: PyReadonlyArray1<'py, u8>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let strs = arrow_texts(py, &offsets, &data)?;
        let t = crate::convert::threads(py, threads)?;
        let mut out = self.sig_buffer(strs.len());
        detached(py, || batch::with_threads(t, || batch::signatures(&self.inner, &shingler.inner, &strs, &mut out)))?;
        Ok(self.matrix(py, strs.len(), out))
    }

    /// ``signatures_keyed`` of an Arrow string array passed as its (int64 offsets, uint8 data):
    /// the texts read in place, each tokenised once.
    #[pyo3(signature = (shingler, offsets, data, threads=None))]
    fn signatures_keyed_arrow<'py>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        offsets: PyReadonlyArray1<'py, i64>,
        data: PyReadonlyArray1<'py, u8>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(NpArray2<'py, u32>, NpArray1<'py, u64>, NpArray1<'py, u64>)> {
        let strs = arrow_texts(py, &offsets, &data)?;
        self.keyed(py, shingler, &strs, threads)
    }

    /// Signature of a set of 64-bit ids (32-bit for datasketch-affine32).
    #[allow(clippy::wrong_self_convention)] // the Python method MinHasher.from_ids, as neardup-core names it
    fn from_ids<'py>(&self, py: Python<'py>, ids: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let ids = slice_or_copy(&ids);
        let mut out = self.sig_buffer(1);
        detached(py, || self.inner.from_ids(&ids, &mut out))?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Signature of byte tokens, hashed by the scheme's input hash.
    #[allow(clippy::wrong_self_convention)] // the Python method MinHasher.from_tokens, as neardup-core names it
    fn from_tokens<'py>(
        &self,
        py: Python<'py>,
        shingler: &PyShingler,
        tokens: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let mut owners: Vec<Bound<'py, PyBytes>> = Vec::new();
        for (i, item) in tokens.try_iter()?.enumerate() {
            let item = item?;
            match item.cast::<PyBytes>() {
                Ok(b) => owners.push(b.clone()),
                Err(_) => {
                    let tn = item.get_type().name()?.to_string();
                    return Err(raise(py, "InputTypeError", format!("token {i}: expected bytes, got {tn}"), Some(i)));
                }
            }
        }
        let slices: Vec<&[u8]> = owners.iter().map(|b| b.as_bytes()).collect();
        let mut out = self.sig_buffer(1);
        detached(py, || {
            self.inner.from_tokens(&shingler.inner, slices.iter().copied(), &mut out);
            Ok(())
        })?;
        Ok(PyArray1::from_vec(py, out))
    }
}

fn positive(py: Python<'_>, n: i64) -> PyResult<usize> {
    if n < 1 {
        return Err(param_err(py, format!("num_perm must be a positive integer, got {n}")));
    }
    Ok(n as usize)
}
