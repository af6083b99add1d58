//! AVX2 word tokeniser for ASCII text: 32 bytes are classified and lower-cased at once,
//! then tokens are found by scanning the word-byte bitmask with `trailing_zeros` and copied
//! into the joined stream. It produces exactly what the scalar tokeniser produces (a cargo
//! test compares them on random ASCII); the scalar one remains the portable fallback and
//! handles stop words.

#![cfg(target_arch = "x86_64")]

use crate::tokenize::TokenStream;
use std::arch::x86_64::*;

/// Lower-cased bytes (non-word bytes left as they are) and the word-byte bitmask.
#[target_feature(enable = "avx2")]
unsafe fn classify(bytes: &[u8], low: &mut Vec<u8>, mask: &mut Vec<u64>) {
    let n = bytes.len();
    let chunks = n.div_ceil(32);
    low.clear();
    low.resize(chunks * 32 + 32, 0);
    mask.clear();
    mask.resize(chunks.div_ceil(2) + 1, 0);
    let a = _mm256_set1_epi8(b'a' as i8);
    let zero = _mm256_set1_epi8(b'0' as i8);
    let us = _mm256_set1_epi8(b'_' as i8);
    let bit20 = _mm256_set1_epi8(0x20);
    let c25 = _mm256_set1_epi8(25);
    let c9 = _mm256_set1_epi8(9);
    let mut tail = [0u8; 32];
    for c in 0..chunks {
        let off = c * 32;
        let v = if off + 32 <= n {
            _mm256_loadu_si256(bytes.as_ptr().add(off) as *const __m256i)
        } else {
            // Zero bytes are not word bytes, so padding never extends a token.
            tail[..n - off].copy_from_slice(&bytes[off..]);
            _mm256_loadu_si256(tail.as_ptr() as *const __m256i)
        };
        let lower = _mm256_or_si256(v, bit20);
        let ta = _mm256_sub_epi8(lower, a);
        let alpha = _mm256_cmpeq_epi8(_mm256_min_epu8(ta, c25), ta);
        let td = _mm256_sub_epi8(v, zero);
        let digit = _mm256_cmpeq_epi8(_mm256_min_epu8(td, c9), td);
        let word = _mm256_or_si256(_mm256_or_si256(alpha, digit), _mm256_cmpeq_epi8(v, us));
        let out = _mm256_blendv_epi8(v, lower, alpha);
        _mm256_storeu_si256(low.as_mut_ptr().add(off) as *mut __m256i, out);
        let m = _mm256_movemask_epi8(word) as u32 as u64;
        mask[c / 2] |= m << (32 * (c % 2));
    }
}

/// First position >= p whose bit equals `want`, or `limit`.
#[inline(always)]
fn next_bit(mask: &[u64], p: usize, want: bool, limit: usize) -> usize {
    let mut w = p / 64;
    let flip = if want { 0 } else { u64::MAX };
    let mut bits = (mask[w] ^ flip) & (u64::MAX << (p % 64));
    loop {
        if bits != 0 {
            return (w * 64 + bits.trailing_zeros() as usize).min(limit);
        }
        w += 1;
        if w * 64 >= limit {
            return limit;
        }
        bits = mask[w] ^ flip;
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u64>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Tokenise ASCII `bytes` into `out` (no stop words). Caller checks AVX2 support.
#[target_feature(enable = "avx2")]
pub unsafe fn ascii_words(bytes: &[u8], out: &mut TokenStream) {
    SCRATCH.with(|cell| {
        let (low, mask) = &mut *cell.borrow_mut();
        classify(bytes, low, mask);
        let n = bytes.len();
        let mut buf = std::mem::take(&mut out.text).into_bytes();
        buf.clear();
        // Room for every byte plus 32 of slack for the blind 32-byte token copies.
        buf.reserve(n + 64);
        let dst = buf.as_mut_ptr();
        let mut w = 0usize;
        let mut p = 0usize;
        loop {
            let s = next_bit(mask, p, true, n);
            if s >= n {
                break;
            }
            let e = next_bit(mask, s, false, n);
            if w > 0 {
                *dst.add(w) = b' ';
                w += 1;
            }
            let len = e - s;
            // SAFETY: the joined stream is never longer than the input (each separating
            // space stands for a run of at least one non-word byte), so w + len <= n; the
            // blind 32-byte copy reads within `low` (32 bytes of slack past n) and writes
            // below n + 32 < capacity (n + 64).
            if len <= 32 {
                std::ptr::copy_nonoverlapping(low.as_ptr().add(s), dst.add(w), 32);
            } else {
                std::ptr::copy_nonoverlapping(low.as_ptr().add(s), dst.add(w), len);
            }
            out.starts.push(w as u32);
            w += len;
            out.ends.push(w as u32);
            p = e;
        }
        buf.set_len(w);
        out.text = String::from_utf8_unchecked(buf);
    })
}
