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
    a_lo: Vec<u32>,
    a_hi: Vec<u32>,
    b: Vec<u64>,
}

impl Params {
    pub fn new(a: &[u64], b: &[u64]) -> Self {
        let k = a.len();
        // Pad to whole blocks; padded slots are computed and dropped.
        let padded = k.div_ceil(BLOCK) * BLOCK;
        let mut a_lo = vec![1u32; padded];
        let mut a_hi = vec![0u32; padded];
        let mut bb = vec![0u64; padded];
        for i in 0..k {
            a_lo[i] = a[i] as u32;
            a_hi[i] = (a[i] >> 32) as u32;
            bb[i] = b[i];
        }
        Params { a_lo, a_hi, b: bb }
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(p: &Params, ids: &[u64], out: &mut [u32]) {
    kernel(p, ids, out)
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
        .map(|(&a, &b)| {
            ids.iter()
                .map(|&x| (a.wrapping_mul(x).wrapping_add(b) >> 32) as u32)
                .min()
                .unwrap_or(u32::MAX)
        })
        .collect()
}

#[cfg(test)]
pub fn portable(p: &Params, ids: &[u64], out: &mut [u32]) {
    kernel_portable(p, ids, out)
}
