//! `read_texts`: many texts of the index's text log in one call (see `neardup_core::textlog`).

use crate::convert::{NpArray1, Texts};
use crate::errors::{detached, param_err, raise};
use neardup_core::textlog::{self, TextError};
use numpy::{PyArray1, PyReadonlyArray1};
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

/// Write `texts` back to back into the open descriptor `fd` from `offset` on (no fsync; the
/// caller's) and return (lengths uint32, CRC-32s uint32). An I/O error raises OSError.
#[pyfunction]
pub fn write_texts<'py>(
    py: Python<'py>,
    fd: i32,
    offset: u64,
    texts: &Bound<'py, PyAny>,
) -> PyResult<(NpArray1<'py, u32>, NpArray1<'py, u32>)> {
    if fd < 0 {
        return Err(param_err(py, format!("not a file descriptor: {fd}")));
    }
    let owned = Texts::extract(texts)?;
    let strs = owned.strs()?;
    let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    let got = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            neardup_core::batch::in_this_process(|| textlog::write_texts(&file, offset, &strs))
        }))
    });
    match got {
        Ok(Ok((l, c))) => Ok((PyArray1::from_vec(py, l), PyArray1::from_vec(py, c))),
        Ok(Err(e)) => Err(os_error(e)),
        Err(_) => Err(raise(
            py,
            "InternalError",
            "internal error in neardup's Rust core while writing texts".to_owned(),
            None,
        )),
    }
}

/// OSError(errno, message), as Python's own I/O raises it: PyO3's conversion of an io::Error
/// keeps only the message, and a full disk (errno 28) was then not told from other errors (the
/// CLI's "the disk is full", exit 5, became exit 4).
fn os_error(e: std::io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(code) => {
            let msg = std::io::Error::from_raw_os_error(code).to_string();
            let msg = msg.split(" (os error").next().unwrap_or(&msg).to_owned();
            pyo3::exceptions::PyOSError::new_err((code, msg))
        }
        None => pyo3::exceptions::PyOSError::new_err(e.to_string()),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_texts, m)?)?;
    m.add_function(wrap_pyfunction!(write_texts, m)?)?;
    Ok(())
}
