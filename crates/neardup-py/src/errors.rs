//! Core errors and Rust panics, mapped onto the exception tree of `neardup.errors`.
//!
//! The classes live in Python (they use multiple inheritance: `InvalidInputError` is both
//! a `NeardupError` and a `ValueError`), and are looked up when an error is raised.

use neardup_core::Error;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("neardup.errors")?.getattr(name)
}

/// Build a `neardup.errors.<name>(message, index)` exception.
pub fn raise(py: Python<'_>, name: &str, message: String, index: Option<usize>) -> PyErr {
    let built = class(py, name).and_then(|cls| {
        let exc = if name == "InvalidParameterError" || name == "InternalError" {
            cls.call1((message.clone(),))?
        } else {
            cls.call1((message.clone(), index))?
        };
        Ok(PyErr::from_value(exc))
    });
    built.unwrap_or_else(|e| e)
}

pub fn to_py(py: Python<'_>, err: Error) -> PyErr {
    match err {
        Error::InvalidParameter(m) => raise(py, "InvalidParameterError", m, None),
        Error::InvalidInput { index, message } => raise(py, "InvalidInputError", message, index),
        Error::OutOfMemory(m) => pyo3::exceptions::PyMemoryError::new_err(m),
    }
}

pub fn param_err(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "InvalidParameterError", message.into(), None)
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Run `f` with the GIL released; a panic anywhere inside (rayon workers included, which
/// re-raise in the caller) becomes `neardup.errors.InternalError` instead of unwinding
/// into the interpreter.
pub fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(|| neardup_core::batch::in_this_process(f)))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(py, e)),
        Err(payload) => Err(raise(
            py,
            "InternalError",
            format!("internal error in neardup's Rust core: {}", panic_message(payload)),
            None,
        )),
    }
}

/// Run `f` with the GIL released, turning a panic into `neardup.errors.InternalError` (for
/// kernels whose errors are not `neardup_core::Error`s).
pub fn detached_catching<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(|| neardup_core::batch::in_this_process(f)))) {
        Ok(v) => Ok(v),
        Err(payload) => Err(raise(
            py,
            "InternalError",
            format!("internal error in neardup's Rust core: {}", panic_message(payload)),
            None,
        )),
    }
}
