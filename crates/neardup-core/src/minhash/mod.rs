//! MinHash signatures: 32-bit values, one per slot, under three schemes.
//!
//! * `MultiplyShift` (default): h_i(x) = top 32 bits of (a_i·x + b_i) mod 2^64, a_i odd.
//! * `Affine32`: datasketch 2.0.0's default, bit for bit (sha1_hash32, fmix32, a·h + b mod 2^32).
//! * `Oph`: one-permutation hashing with optimal densification, O(n + k) per set.
//!
//! The signature of the empty set is all `u32::MAX` in every scheme.

mod affine32;
mod multiply_shift;
mod oph;

use crate::error::param;
use crate::hash::{sha1_hash32, SplitMix64};
use crate::shingle::Shingler;
use crate::tokenize::TokenStream;
use std::cell::RefCell;

pub use multiply_shift::{kernel_name, signature_scalar};

/// Largest accepted num_perm (a signature row of 256 KiB).
pub const MAX_NUM_PERM: usize = 1 << 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    MultiplyShift { a: Vec<u64>, b: Vec<u64> },
    Affine32 { a: Vec<u32>, b: Vec<u32> },
    Oph { num_perm: usize, seed: u64 },
}

impl Scheme {
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::MultiplyShift { .. } => "multiply-shift",
            Scheme::Affine32 { .. } => "datasketch-affine32",
            Scheme::Oph { .. } => "oph",
        }
    }
}

fn check_num_perm(n: usize) -> crate::Result<()> {
    if n == 0 || n > MAX_NUM_PERM {
        return param(format!("num_perm must be between 1 and {MAX_NUM_PERM}, got {n}"));
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub struct MinHasher {
    scheme: Scheme,
    // Multiply-shift parameters split into 32-bit halves for the SIMD kernel.
    ms: Option<multiply_shift::Params>,
    // OPH: first-probe table for fast densification of small sets (shared by clones).
    oph_first: Option<std::sync::Arc<oph::FirstProbe>>,
}

thread_local! {
    static IDS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl MinHasher {
    /// Multiply-shift with parameters drawn from SplitMix64(seed): a odd, b any.
    pub fn multiply_shift(num_perm: usize, seed: u64) -> crate::Result<Self> {
        check_num_perm(num_perm)?;
        let mut rng = SplitMix64(seed);
        let mut a = Vec::with_capacity(num_perm);
        let mut b = Vec::with_capacity(num_perm);
        for _ in 0..num_perm {
            a.push(rng.next_u64() | 1);
            b.push(rng.next_u64());
        }
        Self::multiply_shift_from_params(a, b)
    }

    /// Multiply-shift with explicit parameters (e.g. the guide's NumPy draws).
    pub fn multiply_shift_from_params(a: Vec<u64>, b: Vec<u64>) -> crate::Result<Self> {
        check_num_perm(a.len())?;
        if a.len() != b.len() {
            return param(format!("a and b must have the same length, got {} and {}", a.len(), b.len()));
        }
        if let Some(i) = a.iter().position(|x| x % 2 == 0) {
            return param(format!("every a must be odd; a[{i}] = {} is even", a[i]));
        }
        let ms = Some(multiply_shift::Params::new(&a, &b));
        Ok(MinHasher { scheme: Scheme::MultiplyShift { a, b }, ms, oph_first: None })
    }

    /// datasketch's affine32 permutations, given the (a, b) its RandomState draws.
    pub fn affine32_from_params(a: Vec<u32>, b: Vec<u32>) -> crate::Result<Self> {
        check_num_perm(a.len())?;
        if a.len() != b.len() {
            return param(format!("a and b must have the same length, got {} and {}", a.len(), b.len()));
        }
        Ok(MinHasher { scheme: Scheme::Affine32 { a, b }, ms: None, oph_first: None })
    }

    pub fn oph(num_perm: usize, seed: u64) -> crate::Result<Self> {
        check_num_perm(num_perm)?;
        let oph_first =
            (num_perm <= oph::FIRST_PROBE_MAX_K).then(|| std::sync::Arc::new(oph::FirstProbe::new(seed, num_perm)));
        Ok(MinHasher { scheme: Scheme::Oph { num_perm, seed }, ms: None, oph_first })
    }

    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    pub fn num_perm(&self) -> usize {
        match &self.scheme {
            Scheme::MultiplyShift { a, .. } => a.len(),
            Scheme::Affine32 { a, .. } => a.len(),
            Scheme::Oph { num_perm, .. } => *num_perm,
        }
    }

    /// Signature of a set of input ids (order and repeats do not matter). For `Affine32`
    /// the ids are datasketch's 32-bit input hashes and must be below 2^32.
    pub fn from_ids(&self, ids: &[u64], out: &mut [u32]) -> crate::Result<()> {
        assert_eq!(out.len(), self.num_perm(), "output row has the wrong length");
        match &self.scheme {
            Scheme::MultiplyShift { .. } => multiply_shift::signature(self.ms.as_ref().expect("params"), ids, out),
            Scheme::Affine32 { a, b } => {
                if let Some(i) = ids.iter().position(|&x| x > u32::MAX as u64) {
                    return Err(crate::Error::InvalidInput {
                        index: Some(i),
                        message: format!(
                            "datasketch-affine32 takes 32-bit input hashes; hash {i} is {} (>= 2^32)",
                            ids[i]
                        ),
                    });
                }
                let ids32: Vec<u32> = ids.iter().map(|&x| x as u32).collect();
                affine32::signature(a, b, &ids32, out)
            }
            Scheme::Oph { seed, .. } => oph::signature(*seed, ids, out, self.oph_first.as_deref()),
        }
        Ok(())
    }

    /// Signature of byte tokens hashed by this scheme's input hash: sha1_hash32 for
    /// `Affine32` (as datasketch's default `hashfunc`), the shingler's hash otherwise.
    pub fn from_tokens<'a>(&self, shingler: &Shingler, tokens: impl Iterator<Item = &'a [u8]>, out: &mut [u32]) {
        IDS.with(|cell| {
            let mut ids = cell.borrow_mut();
            ids.clear();
            match &self.scheme {
                Scheme::Affine32 { .. } => ids.extend(tokens.map(|t| sha1_hash32(t) as u64)),
                _ => ids.extend(tokens.map(|t| shingler.hash_bytes(t))),
            }
            self.from_ids(&ids, out).expect("ids are in range by construction");
        })
    }

    /// Text to signature through `shingler`.
    pub fn from_text(&self, shingler: &Shingler, text: &str, out: &mut [u32]) {
        shingler.with_tokens(text, |ts| self.sign_stream(shingler, ts, out))
    }

    /// [`MinHasher::from_text`] plus the text's exact key and token count in the shingler's
    /// unit ([`crate::exactkey::exact_key_in`]), from one tokenisation when the shingler's
    /// tokens are the exact pass's (no stop words dropped; otherwise the key tokenises on its own).
    pub fn from_text_keyed(&self, shingler: &Shingler, text: &str, out: &mut [u32]) -> (u64, u64) {
        if !shingler.tokens_are_exact_keys() {
            self.from_text(shingler, text, out);
            return crate::exactkey::exact_key_in(text, shingler.unit());
        }
        shingler.with_tokens(text, |ts| {
            self.sign_stream(shingler, ts, out);
            crate::exactkey::key_of(ts)
        })
    }

    fn sign_stream(&self, shingler: &Shingler, ts: &TokenStream, out: &mut [u32]) {
        IDS.with(|cell| {
            let mut ids = cell.borrow_mut();
            ids.clear();
            match &self.scheme {
                Scheme::Affine32 { .. } => shingler.for_each_shingle_of(ts, |b| ids.push(sha1_hash32(b) as u64)),
                _ => shingler.for_each_shingle_of(ts, |b| ids.push(shingler.hash_bytes(b))),
            }
            self.from_ids(&ids, out).expect("ids are in range by construction");
        })
    }
}

#[cfg(test)]
mod tests;
