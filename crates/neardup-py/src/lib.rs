//! `neardup._core`: a thin PyO3 layer over neardup-core. Conversion, GIL release and error
//! mapping live here; every algorithm lives in the core crate.

mod allpairs; // pipeline kernels: exact self-join, pair verification, SimHash tables, exact keys
mod buckets; // large LSH buckets: kept whole, verified by a per-bucket union-find
mod convert;
mod errors;
mod functions;
mod minhash;
mod postings; // the persistent index's band look-up
mod shingler;
mod tables; // compact per-document tables for large jobs
mod textlog; // the persistent index's text log, read in bulk

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // this process's threads are real; a process forked from it later is told apart (batch.rs)
    neardup_core::batch::note_process();
    m.add_class::<shingler::PyShingler>()?;
    m.add_class::<minhash::PyMinHasher>()?;
    m.add_class::<functions::PyUnionFind>()?;
    m.add_function(wrap_pyfunction!(functions::jaccard, m)?)?;
    m.add_function(wrap_pyfunction!(functions::containment, m)?)?;
    m.add_function(wrap_pyfunction!(functions::estimate_jaccard_rows, m)?)?;
    m.add_function(wrap_pyfunction!(functions::simhash_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(functions::simhash_fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(functions::simhash_fingerprints_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(functions::simhash_from_weighted, m)?)?;
    m.add_function(wrap_pyfunction!(functions::candidate_probability, m)?)?;
    m.add_function(wrap_pyfunction!(functions::optimal_params, m)?)?;
    m.add_function(wrap_pyfunction!(functions::params_for_recall, m)?)?;
    m.add_function(wrap_pyfunction!(functions::false_positive_area, m)?)?;
    m.add_function(wrap_pyfunction!(functions::false_negative_area, m)?)?;
    m.add_function(wrap_pyfunction!(functions::band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(functions::candidate_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(functions::connected_components, m)?)?;
    m.add_function(wrap_pyfunction!(functions::_spanning_forest, m)?)?;
    m.add_function(wrap_pyfunction!(functions::simd_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(functions::_panic_for_tests, m)?)?;
    m.add("ENGLISH_STOPWORDS", neardup_core::stopwords::ENGLISH.to_vec())?;
    allpairs::register(m)?;
    buckets::register(m)?;
    tables::register(m)?;
    postings::register(m)?;
    textlog::register(m)?;
    Ok(())
}
