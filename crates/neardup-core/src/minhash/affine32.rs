//! datasketch 2.0.0's "affine32" scheme: hv = fmix32(sha1_hash32(token)), then
//! sig_i = min over tokens of (a_i·hv + b_i) mod 2^32. 32-bit lanes vectorise directly.

use crate::hash::fmix32;

pub fn signature(a: &[u32], b: &[u32], ids: impl Iterator<Item = u32>, out: &mut [u32]) {
    out.fill(u32::MAX);
    for x in ids {
        let h = fmix32(x);
        for ((o, &ai), &bi) in out.iter_mut().zip(a).zip(b) {
            *o = (*o).min(ai.wrapping_mul(h).wrapping_add(bi));
        }
    }
}
