//! Python inputs to Rust slices, without copying text where that can be avoided.

use crate::errors::{param_err, raise};
use numpy::{PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A 1-D NumPy array returned to Python (short for the signatures that return tuples of arrays).
pub type NpArray1<'py, T> = Bound<'py, PyArray1<T>>;
/// A 2-D NumPy array handed to Python.
pub type NpArray2<'py, T> = Bound<'py, PyArray2<T>>;

/// Strings of a batch, borrowed from the Python objects that `_owners` keeps alive.
/// `str` objects are immutable and hold their UTF-8 form for their lifetime, so the
/// borrowed slices stay valid while the GIL is released.
pub struct Texts<'py> {
    _owners: Vec<Bound<'py, PyString>>,
}

impl<'py> Texts<'py> {
    pub fn extract(texts: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = texts.py();
        if texts.is_instance_of::<PyString>() || texts.is_instance_of::<PyBytes>() {
            return Err(raise(
                py,
                "InputTypeError",
                format!("expected a list of str, got a single {}: wrap it in a list", texts.get_type().name()?),
                None,
            ));
        }
        let iter = texts.try_iter().map_err(|_| {
            let tn = texts.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            raise(py, "InputTypeError", format!("expected a list of str, got {tn}"), None)
        })?;
        let mut owners = Vec::with_capacity(texts.len().unwrap_or(0));
        for (i, item) in iter.enumerate() {
            let item = item?;
            owners.push(one(&item, Some(i))?);
        }
        Ok(Texts { _owners: owners })
    }

    pub fn strs(&self) -> PyResult<Vec<&str>> {
        self._owners.iter().enumerate().map(|(i, s)| utf8(s, Some(i))).collect()
    }
}

/// One `str` argument (item `index` of a batch, when it is one).
pub fn one<'py>(item: &Bound<'py, PyAny>, index: Option<usize>) -> PyResult<Bound<'py, PyString>> {
    match item.cast::<PyString>() {
        Ok(s) => Ok(s.clone()),
        Err(_) => {
            let py = item.py();
            let tn = item.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            let at = index.map(|i| format!("item {i}: ")).unwrap_or_default();
            Err(raise(py, "InputTypeError", format!("{at}expected str, got {tn}"), index))
        }
    }
}

/// The UTF-8 of a str; a lone surrogate (not encodable) is reported with its index.
pub fn utf8<'a>(s: &'a Bound<'_, PyString>, index: Option<usize>) -> PyResult<&'a str> {
    let py = s.py();
    let text = s.to_str().map_err(|e| {
        let at = index.map(|i| format!("item {i}: ")).unwrap_or_default();
        raise(py, "InvalidInputError", format!("{at}text is not valid Unicode (it holds a lone surrogate): {e}"), index)
    })?;
    if text.len() > u32::MAX as usize {
        let at = index.map(|i| format!("item {i}: ")).unwrap_or_default();
        return Err(raise(py, "InvalidInputError", format!("{at}text is larger than 4 GiB"), index));
    }
    Ok(text)
}

/// `threads=None` means all cores; anything else must be a positive count.
pub fn threads(py: Python<'_>, threads: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    // (any Python object: the rule of the API's other integers, one error class for every bad
    // value; an i64 parameter raised OverflowError, TypeError or took True as 1)
    let Some(x) = threads.filter(|x| !x.is_none()) else { return Ok(None) };
    match int_arg(py, x, "threads")? {
        Some(t) if t >= 1 && t as usize <= neardup_core::batch::MAX_THREADS => Ok(Some(t as usize)),
        _ => Err(param_err(
            py,
            format!("threads must be an integer in 1..={} or None, got {x}", neardup_core::batch::MAX_THREADS),
        )),
    }
}

/// An integer argument: Some(value) in i64, None for an integer beyond i64 (the caller's range
/// check refuses it), InvalidParameterError for a bool (numpy's too) or a non-integer.
pub fn int_arg(py: Python<'_>, x: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<i64>> {
    let is_bool = x.is_instance_of::<pyo3::types::PyBool>()
        || x.get_type().name().map(|n| n == "bool_" || n == "bool").unwrap_or(false);
    if is_bool {
        return Err(param_err(py, format!("{what} must be an integer, got a bool")));
    }
    match x.extract::<i64>() {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) => Ok(None),
        Err(_) => {
            let t = x.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            Err(param_err(py, format!("{what} must be an integer, got {t}")))
        }
    }
}

/// Strings of an Arrow string array given as its (int64 offsets, uint8 data) buffers as
/// NumPy views: zero-copy. Offsets are validated before any slice is taken.
pub fn arrow_texts<'a>(
    py: Python<'_>,
    offsets: &PyReadonlyArray1<'_, i64>,
    data: &'a PyReadonlyArray1<'_, u8>,
) -> PyResult<Vec<&'a str>> {
    let offsets = offsets.as_slice().map_err(|e| param_err(py, format!("offsets: {e}")))?;
    let data = data.as_slice().map_err(|e| param_err(py, format!("data: {e}")))?;
    arrow_strs(py, offsets, data)
}

fn arrow_strs<'a>(py: Python<'_>, offsets: &[i64], data: &'a [u8]) -> PyResult<Vec<&'a str>> {
    let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
    for i in 0..offsets.len().saturating_sub(1) {
        let (s, e) = (offsets[i], offsets[i + 1]);
        if s < 0 || e < s || e as usize > data.len() {
            return Err(raise(
                py,
                "InvalidInputError",
                format!("item {i}: Arrow offsets {s}..{e} fall outside the {}-byte data buffer", data.len()),
                Some(i),
            ));
        }
        let t = std::str::from_utf8(&data[s as usize..e as usize])
            .map_err(|err| raise(py, "InvalidInputError", format!("item {i}: not valid UTF-8: {err}"), Some(i)))?;
        out.push(t);
    }
    Ok(out)
}

/// An (n, b) uint64 key matrix as one row-major slice: borrowed when the array is contiguous (the
/// keys of a large job may be a memory map), copied otherwise; with (n, b). At most 2^32 - 1 rows.
pub fn key_rows<'a>(
    py: Python<'_>,
    keys: &'a numpy::PyReadonlyArray2<'_, u64>,
) -> PyResult<(std::borrow::Cow<'a, [u64]>, usize, usize)> {
    let arr = keys.as_array();
    let (n, b) = (arr.shape()[0], arr.shape()[1]);
    if n > u32::MAX as usize {
        return Err(param_err(py, "at most 2^32 - 1 rows"));
    }
    let flat = match keys.as_slice() {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => std::borrow::Cow::Owned(arr.iter().copied().collect()),
    };
    Ok((flat, n, b))
}
