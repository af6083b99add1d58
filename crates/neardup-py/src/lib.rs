//! neardup-core: near-duplicate detection kernels (pure Rust, no Python).
use pyo3::prelude::*;

mod allpairs;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    allpairs::register(m)?;
    Ok(())
}
