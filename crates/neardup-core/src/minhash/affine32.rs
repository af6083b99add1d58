//! datasketch 2.0.0's "affine32" scheme: hv = fmix32(sha1_hash32(token)), then
//! sig_i = min over tokens of (a_i·hv + b_i) mod 2^32. 32-bit lanes vectorise directly;
//! the loop is compiled for AVX2 too (32-bit `vpmulld` is not in the x86-64 baseline).

use crate::hash::fmix32;

#[inline(always)]
fn kernel(a: &[u32], b: &[u32], ids: &[u32], out: &mut [u32]) {
    out.fill(u32::MAX);
    for &x in ids {
        let h = fmix32(x);
        for ((o, &ai), &bi) in out.iter_mut().zip(a).zip(b) {
            *o = (*o).min(ai.wrapping_mul(h).wrapping_add(bi));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(a: &[u32], b: &[u32], ids: &[u32], out: &mut [u32]) {
    kernel(a, b, ids, out)
}

pub fn signature(a: &[u32], b: &[u32], ids: &[u32], out: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2.
            return unsafe { kernel_avx2(a, b, ids, out) };
        }
    }
    kernel(a, b, ids, out)
}
