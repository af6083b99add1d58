//! The multiply-shift kernel: sig_i = min over x of top32((a_i·x + b_i) mod 2^64).
//!
//! This is the hot loop of the whole library (n ids × k slots). 64-bit lane multiplies
//! are not in AVX2, so the product is split into 32-bit halves that vectorise well:
//! with a = ah·2^32 + al and x = xh·2^32 + xl,
//!   top32((a·x + b) mod 2^64) = top32(al·xl + b) + (ah·xl + al·xh)   (mod 2^32).
//! The same portable loop is compiled three times (baseline, AVX2, AVX-512) and the best
//! one for the running CPU is chosen once at run time.

use std::sync::OnceLock;

/// Slots processed together: their running minima stay in vector registers.
const BLOCK: usize = 32;

#[derive(Debug, Clone)]
pub struct Params {
    a: Vec<u64>,
    a_lo: Vec<u32>,
    a_hi: Vec<u32>,
    b: Vec<u64>,
    // b regrouped per 8 slots as [b0, b2, b4, b6, b1, b3, b5, b7]: the AVX2 kernel adds the
    // even slots' and the odd slots' 64-bit products separately.
    b_eo: Vec<u64>,
}

impl Params {
    pub fn new(a: &[u64], b: &[u64]) -> Self {
        let k = a.len();
        // Pad to whole blocks; padded slots are computed and dropped.
        let padded = k.div_ceil(BLOCK) * BLOCK;
        let mut a_full = vec![1u64; padded];
        a_full[..k].copy_from_slice(a);
        let mut a_lo = vec![1u32; padded];
        let mut a_hi = vec![0u32; padded];
        let mut bb = vec![0u64; padded];
        for i in 0..k {
            a_lo[i] = a[i] as u32;
            a_hi[i] = (a[i] >> 32) as u32;
            bb[i] = b[i];
        }
        let mut b_eo = vec![0u64; padded];
        for g in (0..padded).step_by(8) {
            for j in 0..4 {
                b_eo[g + j] = bb[g + 2 * j];
                b_eo[g + 4 + j] = bb[g + 2 * j + 1];
            }
        }
        Params { a: a_full, a_lo, a_hi, b: bb, b_eo }
    }
}

#[inline(always)]
fn kernel(p: &Params, ids: &[u64], out: &mut [u32]) {
    let k = out.len();
    let mut acc = [u32::MAX; BLOCK];
    for base in (0..p.a_lo.len()).step_by(BLOCK) {
        let a_lo: &[u32; BLOCK] = p.a_lo[base..base + BLOCK].try_into().unwrap();
        let a_hi: &[u32; BLOCK] = p.a_hi[base..base + BLOCK].try_into().unwrap();
        let b: &[u64; BLOCK] = p.b[base..base + BLOCK].try_into().unwrap();
        acc.fill(u32::MAX);
        for &x in ids {
            let xl = x as u32;
            let xh = (x >> 32) as u32;
            for j in 0..BLOCK {
                let t = (a_lo[j] as u64 * xl as u64).wrapping_add(b[j]);
                let cross = a_hi[j].wrapping_mul(xl).wrapping_add(a_lo[j].wrapping_mul(xh));
                let h = ((t >> 32) as u32).wrapping_add(cross);
                acc[j] = acc[j].min(h);
            }
        }
        let end = (base + BLOCK).min(k);
        if base < end {
            out[base..end].copy_from_slice(&acc[..end - base]);
        }
    }
}

fn kernel_portable(p: &Params, ids: &[u64], out: &mut [u32]) {
    kernel(p, ids, out)
}

/// Hand-written AVX2, mixed with scalar multiplies. Per pass over the ids, 32 slots:
/// 16 on the vector unit (8 per register; per id and 8 slots: 2 `vpmuludq` for the
/// 64-bit low products, 2 `vpmulld` for the cross term, 1 `vpminud`) and 16 on the
/// integer multiplier (`imul`, a 64-bit running minimum shifted once at the end).
/// CPUs with one vector multiply pipe (AMD Zen 1 runs 256-bit operations as two halves)
/// keep both multipliers busy this way: measured 1.3-1.7x over AVX2 alone
/// (benchmarks/kernels).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(p: &Params, ids: &[u64], out: &mut [u32]) {
    use std::arch::x86_64::*;
    let k = out.len();
    let padded = p.a_lo.len(); // a multiple of BLOCK = 32
    let mut tmp = [u32::MAX; BLOCK];
    for base in (0..padded).step_by(BLOCK) {
        // SAFETY: base + 32 <= padded, the length of every parameter vector.
        let ld32 = |v: &[u32], o: usize| _mm256_loadu_si256(v.as_ptr().add(o) as *const __m256i);
        let ld64 = |v: &[u64], o: usize| _mm256_loadu_si256(v.as_ptr().add(o) as *const __m256i);
        let a_lo0 = ld32(&p.a_lo, base);
        let a_hi0 = ld32(&p.a_hi, base);
        let a_od0 = _mm256_srli_epi64(a_lo0, 32);
        let be0 = ld64(&p.b_eo, base);
        let bo0 = ld64(&p.b_eo, base + 4);
        let a_lo1 = ld32(&p.a_lo, base + 8);
        let a_hi1 = ld32(&p.a_hi, base + 8);
        let a_od1 = _mm256_srli_epi64(a_lo1, 32);
        let be1 = ld64(&p.b_eo, base + 8);
        let bo1 = ld64(&p.b_eo, base + 12);
        let mut acc0 = _mm256_set1_epi32(-1);
        let mut acc1 = _mm256_set1_epi32(-1);
        let sa: &[u64; 16] = p.a[base + 16..base + 32].try_into().unwrap();
        let sb: &[u64; 16] = p.b[base + 16..base + 32].try_into().unwrap();
        // top32 is monotone in the 64-bit value: keep the 64-bit minimum, shift at the end.
        let mut m = [u64::MAX; 16];
        for &x in ids {
            let xl = _mm256_set1_epi32(x as u32 as i32);
            let xh = _mm256_set1_epi32((x >> 32) as u32 as i32);
            acc0 = step(acc0, a_lo0, a_od0, a_hi0, be0, bo0, xl, xh);
            acc1 = step(acc1, a_lo1, a_od1, a_hi1, be1, bo1, xl, xh);
            for j in 0..16 {
                m[j] = m[j].min(imul(sa[j], x).wrapping_add(sb[j]));
            }
        }
        _mm256_storeu_si256(tmp.as_mut_ptr() as *mut __m256i, acc0);
        _mm256_storeu_si256(tmp.as_mut_ptr().add(8) as *mut __m256i, acc1);
        for j in 0..16 {
            tmp[16 + j] = (m[j] >> 32) as u32;
        }
        let end = (base + BLOCK).min(k);
        out[base..end].copy_from_slice(&tmp[..end - base]);
    }
}

/// A 64-bit multiply kept on the integer unit: through `asm!`, LLVM cannot turn a run of
/// these into vector code that would compete with the SIMD half for the vector multiplier.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn imul(a: u64, x: u64) -> u64 {
    let mut r = a;
    // SAFETY: a register-only multiply with no memory access.
    unsafe { std::arch::asm!("imul {0}, {1}", inout(reg) r, in(reg) x, options(pure, nomem, nostack)) };
    r
}

/// One id against 8 slots: min(acc, top32(al*xl + b) + (ah*xl + al*xh)).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn step(
    acc: std::arch::x86_64::__m256i,
    a_lo: std::arch::x86_64::__m256i,
    a_odd: std::arch::x86_64::__m256i,
    a_hi: std::arch::x86_64::__m256i,
    b_even: std::arch::x86_64::__m256i,
    b_odd: std::arch::x86_64::__m256i,
    xl: std::arch::x86_64::__m256i,
    xh: std::arch::x86_64::__m256i,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // Even slots' full 64-bit products sit in 64-bit lanes; odd slots' come from a_lo >> 32.
    let pe = _mm256_add_epi64(_mm256_mul_epu32(a_lo, xl), b_even);
    let po = _mm256_add_epi64(_mm256_mul_epu32(a_odd, xl), b_odd);
    // High halves back into slot order: even slots from pe >> 32, odd slots in place in po.
    let hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0b1010_1010);
    let cross = _mm256_add_epi32(_mm256_mullo_epi32(a_hi, xl), _mm256_mullo_epi32(a_lo, xh));
    _mm256_min_epu32(acc, _mm256_add_epi32(hi, cross))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw")]
unsafe fn kernel_avx512(p: &Params, ids: &[u64], out: &mut [u32]) {
    kernel(p, ids, out)
}

type KernelFn = fn(&Params, &[u64], &mut [u32]);

fn select() -> (KernelFn, &'static str) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU supports every feature the function is compiled for.
            return (|p, i, o| unsafe { kernel_avx512(p, i, o) }, "avx512");
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above, for AVX2.
            return (|p, i, o| unsafe { kernel_avx2(p, i, o) }, "avx2");
        }
    }
    (kernel_portable, "portable")
}

fn chosen() -> &'static (KernelFn, &'static str) {
    static K: OnceLock<(KernelFn, &'static str)> = OnceLock::new();
    K.get_or_init(select)
}

/// Which kernel this CPU runs: "avx512", "avx2" or "portable".
pub fn kernel_name() -> &'static str {
    chosen().1
}

pub fn signature(p: &Params, ids: &[u64], out: &mut [u32]) {
    (chosen().0)(p, ids, out)
}

/// The plain formula, for tests: top32((a·x + b) mod 2^64).
#[cfg(test)]
pub fn reference(a: &[u64], b: &[u64], ids: &[u64]) -> Vec<u32> {
    a.iter()
        .zip(b)
        .map(|(&a, &b)| ids.iter().map(|&x| (a.wrapping_mul(x).wrapping_add(b) >> 32) as u32).min().unwrap_or(u32::MAX))
        .collect()
}

#[cfg(test)]
pub fn portable(p: &Params, ids: &[u64], out: &mut [u32]) {
    kernel_portable(p, ids, out)
}

/// Scalar 64-bit form (one `imul` per id and slot), kept for measurement: on CPUs whose
/// vector units split 256-bit operations, the integer multiplier may keep up with AVX2.
#[inline(never)]
pub fn signature_scalar(a: &[u64], b: &[u64], ids: &[u64], out: &mut [u32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        let mut m0 = u64::MAX;
        let mut m1 = u64::MAX;
        let mut chunks = ids.chunks_exact(2);
        for c in &mut chunks {
            m0 = m0.min(a.wrapping_mul(c[0]).wrapping_add(b));
            m1 = m1.min(a.wrapping_mul(c[1]).wrapping_add(b));
        }
        for &x in chunks.remainder() {
            m0 = m0.min(a.wrapping_mul(x).wrapping_add(b));
        }
        // top32 is monotone in the full 64-bit value, so min then shift == shift then min.
        *o = (m0.min(m1) >> 32) as u32;
    }
}
