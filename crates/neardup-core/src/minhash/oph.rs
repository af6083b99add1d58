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

#[inline(always)]
fn probe(key: u64, i: usize, attempt: u64, kk: u64) -> usize {
    bin_of(fmix64(key ^ ((i as u64) << 32 | attempt).wrapping_mul(SEED_MIX)), kk)
}

/// Largest k for which [`FirstProbe`] is built (a k x k table of u32: 1 MiB at 512).
pub const FIRST_PROBE_MAX_K: usize = 512;

/// For every (empty bin i, bin j): the first attempt at which i's probe sequence reaches j.
///
/// The probe sequences depend only on (seed, k), so this is computed once per hasher. With
/// it, a document that filled only f bins finds each empty bin's donor as the filled bin of
/// smallest first attempt — O(f) per empty bin instead of ~k/f probes — which removes the
/// O(k^2 / f) cliff of tiny sets (one shingle: ~16,000 probes at k = 128). The donor is the
/// same bin the probing finds, so signatures are identical either way (tested).
#[derive(Debug)]
pub struct FirstProbe {
    k: usize,
    cap: u64,
    first: Vec<u32>,
}

impl FirstProbe {
    pub fn new(seed: u64, k: usize) -> Self {
        let key = fmix64(seed ^ SEED_MIX);
        let kk = k as u64;
        // 32 k attempts cover the coupon collector's k ln k with a wide margin; a bin not
        // reached by then keeps u32::MAX and the signature falls back to probing beyond.
        let cap = 32 * kk;
        let mut first = vec![u32::MAX; k * k];
        for i in 0..k {
            let row = &mut first[i * k..(i + 1) * k];
            let mut seen = 0;
            let mut attempt = 1;
            while seen < k && attempt <= cap {
                let j = probe(key, i, attempt, kk);
                if row[j] == u32::MAX {
                    row[j] = attempt as u32;
                    seen += 1;
                }
                attempt += 1;
            }
        }
        FirstProbe { k, cap, first }
    }
}

pub fn signature(seed: u64, ids: &[u64], out: &mut [u32], table: Option<&FirstProbe>) {
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
    let full: Vec<usize> = (0..k).filter(|&j| filled[j]).collect();
    let table = table.filter(|t| t.k == k && full.len() * full.len() <= k);
    let mut borrowed = Vec::new();
    for i in 0..k {
        if filled[i] {
            continue;
        }
        let mut attempt: u64 = 1;
        if let Some(t) = table {
            // the filled bin that i's sequence reaches first
            let row = &t.first[i * k..(i + 1) * k];
            let (j, at) = full.iter().map(|&j| (j, row[j])).min_by_key(|&(_, at)| at).expect("a filled bin");
            if at != u32::MAX {
                borrowed.push((i, out[j]));
                continue;
            }
            attempt = t.cap + 1; // none within the table: probe on from where it stops
        }
        loop {
            let j = probe(key, i, attempt, kk);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_probe_table_gives_the_probing_signature() {
        let mut rng = 0x1234_5678_u64;
        for &k in &[1usize, 2, 7, 64, 128, 256] {
            for seed in [0u64, 1, 99] {
                let t = FirstProbe::new(seed, k);
                for n in [1usize, 2, 3, 5, 9, 16, 40] {
                    let ids: Vec<u64> = (0..n)
                        .map(|_| {
                            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                            rng
                        })
                        .collect();
                    let (mut a, mut b) = (vec![0u32; k], vec![0u32; k]);
                    signature(seed, &ids, &mut a, None);
                    signature(seed, &ids, &mut b, Some(&t));
                    assert_eq!(a, b, "k={k} seed={seed} n={n}");
                }
            }
        }
    }

    #[test]
    fn beyond_the_table_falls_back_to_probing() {
        // a table with a tiny cap: most rows stop early, so the fallback path is exercised
        let k = 128;
        let mut t = FirstProbe::new(5, k);
        t.cap = 3;
        for row in t.first.chunks_mut(k) {
            for v in row.iter_mut() {
                if *v > 3 {
                    *v = u32::MAX;
                }
            }
        }
        let ids = [42u64];
        let (mut a, mut b) = (vec![0u32; k], vec![0u32; k]);
        signature(5, &ids, &mut a, None);
        signature(5, &ids, &mut b, Some(&t));
        assert_eq!(a, b);
    }
}
