//! One-permutation hashing with optimal densification (Shrivastava, ICML 2017).
//!
//! Each id is hashed once: the high bits pick one of k bins, the low 32 bits are its value,
//! and each bin keeps its minimum value — O(n) for the set. Bins left empty (common when
//! n is not much larger than k) then borrow the value of a bin chosen by a 2-universal
//! sequence of probes that depends only on (seed, bin, attempt), the same for every
//! document — O(k) expected. Two documents agree in a slot with probability exactly J,
//! so the estimator is unbiased; its variance is close to classic MinHash's.

use crate::hash::fmix64;

const SEED_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline(always)]
fn bin_of(h: u64, k: u64) -> usize {
    // Lemire's multiply-shift range reduction on the high 32 bits: unbiased enough
    // (k <= 2^16) and needs no division.
    (((h >> 32) * k) >> 32) as usize
}

pub fn signature(seed: u64, ids: &[u64], out: &mut [u32]) {
    let k = out.len();
    out.fill(u32::MAX);
    if ids.is_empty() {
        return;
    }
    let key = fmix64(seed ^ SEED_MIX);
    // filled[i]: bin i received an id. A bin's minimum can legitimately be u32::MAX,
    // so emptiness is tracked apart from the values.
    let mut filled = vec![false; k];
    let kk = k as u64;
    for &x in ids {
        let h = fmix64(x ^ key);
        let bin = bin_of(h, kk);
        let v = h as u32;
        filled[bin] = true;
        if v < out[bin] {
            out[bin] = v;
        }
    }
    // Optimal densification: empty bin i probes bins g(i, 1), g(i, 2), ... until one is
    // filled. Only original (not borrowed) values are copied, as the analysis requires.
    let mut borrowed = Vec::new();
    for i in 0..k {
        if filled[i] {
            continue;
        }
        let mut attempt: u64 = 1;
        loop {
            let probe = fmix64(key ^ ((i as u64) << 32 | attempt).wrapping_mul(SEED_MIX));
            let j = bin_of(probe, kk);
            if filled[j] {
                borrowed.push((i, out[j]));
                break;
            }
            attempt += 1;
        }
    }
    for (i, v) in borrowed {
        out[i] = v;
    }
}
