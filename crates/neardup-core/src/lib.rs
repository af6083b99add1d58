//! neardup-core: near-duplicate detection kernels (pure Rust, no Python).
pub mod allpairs;
