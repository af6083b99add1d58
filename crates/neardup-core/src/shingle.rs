//! Word and character k-shingles, and their 64-bit ids.
//!
//! A shingle is k consecutive tokens joined by one space. A document with fewer than k
//! tokens (but at least one) gives one shingle of all its tokens; an empty one gives the
//! empty set. Shingles form a set; SimHash may use their counts.

use crate::error::param;
use crate::hash::ShingleHash;
use crate::tokenize::{normalize_stopwords, tokenize, TokenStream, Unit};
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

/// Largest accepted k: far above any useful shingle size, small enough that a typo
/// (k = 50000) is reported instead of silently giving one shingle per document.
pub const MAX_K: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct Shingler {
    k: usize,
    unit: Unit,
    hash: ShingleHash,
    seed: u64,
    stopwords: Option<Arc<HashSet<String>>>,
}

thread_local! {
    // One token buffer per thread: tokenising never allocates in steady state.
    static STREAM: RefCell<TokenStream> = RefCell::new(TokenStream::default());
}

impl Shingler {
    pub fn new(k: usize, unit: Unit, hash: ShingleHash, seed: u64) -> crate::Result<Self> {
        if k == 0 || k > MAX_K {
            return param(format!("k must be between 1 and {MAX_K}, got {k}"));
        }
        Ok(Shingler { k, unit, hash, seed, stopwords: None })
    }

    /// Drop these words (normalised like the text) before shingling.
    pub fn with_stopwords<'a>(mut self, words: impl IntoIterator<Item = &'a str>) -> Self {
        let set = normalize_stopwords(self.unit, words);
        self.stopwords = if set.is_empty() { None } else { Some(Arc::new(set)) };
        self
    }

    pub fn k(&self) -> usize {
        self.k
    }
    pub fn unit(&self) -> Unit {
        self.unit
    }
    pub fn hash_kind(&self) -> ShingleHash {
        self.hash
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn stopwords(&self) -> Option<&HashSet<String>> {
        self.stopwords.as_deref()
    }

    /// Call `f` with the bytes of every shingle occurrence, in order (repeats included).
    pub fn for_each_shingle<F: FnMut(&[u8])>(&self, text: &str, f: F) {
        self.with_tokens(text, |ts| self.for_each_shingle_of(ts, f))
    }

    /// Call `f` with the tokens of `text` (this shingler's unit and stop words), in a buffer
    /// of this thread's: one tokenisation serves several uses of the same text.
    pub fn with_tokens<R>(&self, text: &str, f: impl FnOnce(&TokenStream) -> R) -> R {
        STREAM.with(|cell| {
            let mut ts = cell.borrow_mut();
            tokenize(self.unit, text, self.stopwords.as_deref(), &mut ts);
            f(&ts)
        })
    }

    /// [`Shingler::for_each_shingle`] of tokens already made by [`Shingler::with_tokens`].
    pub fn for_each_shingle_of<F: FnMut(&[u8])>(&self, ts: &TokenStream, mut f: F) {
        let n = ts.len();
        if n == 0 {
            return;
        }
        if n < self.k {
            f(ts.span(0, n));
            return;
        }
        for i in 0..=n - self.k {
            f(ts.span(i, i + self.k));
        }
    }

    /// True when this shingler's tokens are the exact pass's (its unit's tokens, no stop words
    /// dropped): the exact key of a text is then the hash of its token stream
    /// ([`crate::exactkey::key_of`]).
    pub fn tokens_are_exact_keys(&self) -> bool {
        self.stopwords.is_none()
    }

    #[inline]
    pub fn hash_bytes(&self, bytes: &[u8]) -> u64 {
        self.hash.hash(bytes, self.seed)
    }

    /// Ids of every shingle occurrence (unsorted, repeats included): enough for MinHash,
    /// whose minimum ignores order and repeats.
    pub fn hashes_unsorted(&self, text: &str, out: &mut Vec<u64>) {
        out.clear();
        self.for_each_shingle(text, |b| out.push(self.hash_bytes(b)));
    }

    /// Distinct shingle ids, sorted.
    pub fn hashes(&self, text: &str) -> Vec<u64> {
        let mut v = Vec::new();
        self.hashes_unsorted(text, &mut v);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Distinct shingle ids, sorted, with how often each occurs.
    pub fn weighted_hashes(&self, text: &str) -> (Vec<u64>, Vec<u32>) {
        let mut v = Vec::new();
        self.hashes_unsorted(text, &mut v);
        v.sort_unstable();
        let mut ids = Vec::with_capacity(v.len());
        let mut counts: Vec<u32> = Vec::with_capacity(v.len());
        for h in v {
            if ids.last() == Some(&h) {
                *counts.last_mut().unwrap() += 1;
            } else {
                ids.push(h);
                counts.push(1);
            }
        }
        (ids, counts)
    }

    /// Distinct shingles as strings, in first-seen order.
    pub fn shingles(&self, text: &str) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        self.for_each_shingle(text, |b| {
            if seen.insert(b.to_vec()) {
                out.push(String::from_utf8(b.to_vec()).expect("shingles are slices of a str"));
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: &str = "the monsoon session of parliament begins on monday with a debate on the data bill";
    const Y: &str = "the monsoon session of parliament begins on tuesday with a debate on the data bill";

    fn ws3() -> Shingler {
        Shingler::new(3, Unit::Whitespace, ShingleHash::Blake2b, 0).unwrap()
    }

    #[test]
    fn guide_example_counts() {
        let s = ws3();
        let (hx, hy) = (s.hashes(X), s.hashes(Y));
        let shared = crate::measures::intersection_size(&hx, &hy);
        assert_eq!((hx.len(), hy.len(), shared), (13, 13, 10));
        assert!((crate::measures::jaccard(&hx, &hy) - 0.625).abs() < 1e-12);
    }

    #[test]
    fn short_documents_give_one_shingle() {
        let s = Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
        assert_eq!(s.shingles("Heavy rain!"), ["heavy rain"]);
        assert!(s.shingles("  ...  ").is_empty());
        assert!(s.hashes("").is_empty());
    }

    #[test]
    fn shingles_are_a_set() {
        let s = Shingler::new(2, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
        assert_eq!(s.shingles("a b a b a b"), ["a b", "b a"]);
        let (ids, counts) = s.weighted_hashes("a b a b a b");
        assert_eq!(ids.len(), 2);
        assert_eq!(counts.iter().sum::<u32>(), 5);
    }

    #[test]
    fn char_shingles() {
        let s = Shingler::new(3, Unit::Char, ShingleHash::Xxh3, 0).unwrap();
        assert_eq!(s.shingles("Ab  Cd"), ["ab ", "b c", " cd"]);
        assert_eq!(s.shingles("ab"), ["ab"]);
    }

    #[test]
    fn seed_changes_xxh3_ids() {
        let a = Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
        let b = Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 1).unwrap();
        assert_ne!(a.hashes(X), b.hashes(X));
    }

    #[test]
    fn bad_k() {
        assert!(Shingler::new(0, Unit::Word, ShingleHash::Xxh3, 0).is_err());
    }
}
