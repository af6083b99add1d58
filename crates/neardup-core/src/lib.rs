//! neardup-core: near-duplicate detection kernels (pure Rust, no Python).
