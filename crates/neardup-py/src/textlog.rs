//! `read_texts`: many texts of the index's text log in one call (see `neardup_core::textlog`).

use crate::errors::{detached, param_err, raise};
use neardup_core::textlog::{self, TextError};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::unix::io::FromRawFd;

/// The texts at `offsets`/`lengths` of the open file descriptor `fd` (owned by the caller, not
/// closed here), each checked against its CRC-32. A bad text raises `InvalidInputError` whose
/// `index` is its position in the request and whose message starts with `truncated`,
/// `checksum`, `utf-8` or `io`.
#[pyfunction]
pub fn read_texts(
    py: Python<'_>,
    fd: i32,
    offsets: PyReadonlyArray1<'_, u64>,
    lengths: PyReadonlyArray1<'_, u32>,
    crcs: PyReadonlyArray1<'_, u32>,
) -> PyResult<Vec<String>> {
    let o = offsets.as_slice().map_err(|_| param_err(py, "offsets must be a contiguous uint64 array"))?;
    let l = lengths.as_slice().map_err(|_| param_err(py, "lengths must be a contiguous uint32 array"))?;
    let c = crcs.as_slice().map_err(|_| param_err(py, "crcs must be a contiguous uint32 array"))?;
    if o.len() != l.len() || l.len() != c.len() {
        return Err(param_err(py, format!("{} offsets, {} lengths and {} checksums", o.len(), l.len(), c.len())));
    }
    if fd < 0 {
        return Err(param_err(py, format!("not a file descriptor: {fd}")));
    }
    // Borrowed: ManuallyDrop keeps the caller's descriptor open when `file` goes out of scope.
    let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    let got = detached(py, || Ok(textlog::read_texts(&file, o, l, c)))?;
    got.map_err(|e| {
        let (i, msg) = match e {
            TextError::Truncated(i) => (i, "truncated".to_owned()),
            TextError::Checksum(i) => (i, "checksum".to_owned()),
            TextError::Utf8(i) => (i, "utf-8".to_owned()),
            TextError::Io(i, m) => (i, format!("io: {m}")),
        };
        raise(py, "InvalidInputError", msg, Some(i))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_texts, m)?)?;
    Ok(())
}
