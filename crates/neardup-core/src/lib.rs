//! neardup-core: near-duplicate detection kernels (pure Rust, no Python).
//!
//! text → [`tokenize`] → [`shingle`] ids → [`minhash`] signatures or [`simhash`]
//! fingerprints → [`lsh`] band keys → candidates → [`measures`] exact check →
//! [`unionfind`] clusters. [`batch`] runs the per-document kernels over many documents
//! on a rayon pool; results never depend on the number of threads.

pub mod batch;
pub mod buckets; // large LSH buckets: per-bucket union-find, spanning edges only
pub mod error;
pub mod hash;
pub mod lsh;
pub mod measures;
pub mod minhash;
pub mod normalize;
pub mod postings;
pub mod shingle;
pub mod simhash;
pub mod stopwords;
pub mod tables;
pub mod textlog;
pub mod tokenize;
mod tokenize_simd;
pub mod unionfind;
// Pipeline kernels (exact self-join, pair verification, SimHash tables, exact-pass keys).
pub mod allpairs;
pub mod exactkey;

pub use error::{Error, Result};
