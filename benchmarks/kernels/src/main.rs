//! Microbenchmark of neardup-core's two hot paths against candidate rewrites, on one core.
//!
//!   python benchmarks/kernels/make_texts.py /tmp/texts.txt      # 12,000 synth articles, one a line
//!   cargo run --release --manifest-path benchmarks/kernels/Cargo.toml -- /tmp/texts.txt
//!
//! 1. text -> shingle ids (unit=word, k=5, xxh3): `Shingler::hashes_unsorted` vs a fused
//!    one-pass ASCII tokeniser writing the canonical stream once, then xxh3 per span.
//! 2. ids -> 128-slot multiply-shift signature: `MinHasher::from_ids` vs an explicit AVX2
//!    kernel (8 slots per 32-bit op: even/odd 32x32->64 products blended, cross terms by
//!    vpmulld), 1, 2 or 4 groups of 8 slots per pass over the ids.
//!
//! Every candidate is checked against the current code's output before it is timed.

use neardup_core::hash::ShingleHash;
use neardup_core::minhash::{MinHasher, Scheme};
use neardup_core::shingle::Shingler;
use neardup_core::tokenize::Unit;
use std::time::Instant;

// ------------------------------------------------------------------ fused ASCII tokeniser

/// byte -> lower-cased byte if it is an ASCII `\w` byte ([0-9A-Za-z_]), else 0.
static WORD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_digit() || c.is_ascii_lowercase() || c == b'_' {
            c
        } else if c.is_ascii_uppercase() {
            c + 32
        } else {
            0
        };
        b += 1;
    }
    t
};

#[derive(Default)]
struct Stream {
    text: Vec<u8>,
    starts: Vec<u32>,
    ends: Vec<u32>,
}

/// unit=word on ASCII text (NFKC and `\w` reduce to this): one pass, no per-token pushes of
/// strings, lower-casing folded into the copy.
fn tokenize_ascii(text: &[u8], s: &mut Stream) {
    s.text.clear();
    s.starts.clear();
    s.ends.clear();
    s.text.reserve(text.len() + 1);
    let mut in_tok = false;
    for &b in text {
        let c = WORD[b as usize];
        if c != 0 {
            if !in_tok {
                if !s.starts.is_empty() {
                    s.text.push(b' ');
                }
                s.starts.push(s.text.len() as u32);
                in_tok = true;
            }
            s.text.push(c);
        } else if in_tok {
            s.ends.push(s.text.len() as u32);
            in_tok = false;
        }
    }
    if in_tok {
        s.ends.push(s.text.len() as u32);
    }
}

fn hashes_fast(text: &str, k: usize, seed: u64, s: &mut Stream, out: &mut Vec<u64>) {
    out.clear();
    tokenize_ascii(text.as_bytes(), s);
    let n = s.starts.len();
    if n == 0 {
        return;
    }
    let span = |i: usize, j: usize| &s.text[s.starts[i] as usize..s.ends[j - 1] as usize];
    if n < k {
        out.push(xxhash_rust::xxh3::xxh3_64_with_seed(span(0, n), seed));
        return;
    }
    out.reserve(n - k + 1);
    for i in 0..=n - k {
        out.push(xxhash_rust::xxh3::xxh3_64_with_seed(span(i, i + k), seed));
    }
}

// ------------------------------------------------------------------ AVX2 multiply-shift

struct MsParams {
    k: usize,
    alo: Vec<u32>,   // a_i low halves, padded to a multiple of 8
    ahi: Vec<u32>,   // a_i high halves
    beven: Vec<u64>, // b of slots 0, 2, 4, 6 of each group of 8
    bodd: Vec<u64>,  // b of slots 1, 3, 5, 7
}

impl MsParams {
    fn new(a: &[u64], b: &[u64]) -> Self {
        let k = a.len();
        let padded = k.div_ceil(32) * 32;
        let mut alo = vec![1u32; padded];
        let mut ahi = vec![0u32; padded];
        let mut beven = vec![0u64; padded / 2];
        let mut bodd = vec![0u64; padded / 2];
        for i in 0..k {
            alo[i] = a[i] as u32;
            ahi[i] = (a[i] >> 32) as u32;
            let g = i / 8;
            let j = i % 8;
            if j % 2 == 0 {
                beven[g * 4 + j / 2] = b[i];
            } else {
                bodd[g * 4 + j / 2] = b[i];
            }
        }
        MsParams { k, alo, ahi, beven, bodd }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::MsParams;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn ld(p: *const u32) -> __m256i {
        _mm256_loadu_si256(p as *const __m256i)
    }

    struct Group {
        alo: __m256i,
        alo_odd: __m256i,
        ahi: __m256i,
        be: __m256i,
        bo: __m256i,
    }

    #[inline(always)]
    unsafe fn group(p: &MsParams, g: usize) -> Group {
        let alo = ld(p.alo.as_ptr().add(g * 8));
        Group {
            alo,
            alo_odd: _mm256_srli_epi64(alo, 32),
            ahi: ld(p.ahi.as_ptr().add(g * 8)),
            be: _mm256_loadu_si256(p.beven.as_ptr().add(g * 4) as *const __m256i),
            bo: _mm256_loadu_si256(p.bodd.as_ptr().add(g * 4) as *const __m256i),
        }
    }

    /// top32((a·x + b) mod 2^64) for 8 slots at once.
    #[inline(always)]
    unsafe fn h8(g: &Group, xl: __m256i, xh: __m256i) -> __m256i {
        let pe = _mm256_add_epi64(_mm256_mul_epu32(g.alo, xl), g.be);
        let po = _mm256_add_epi64(_mm256_mul_epu32(g.alo_odd, xl), g.bo);
        let hi = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64(pe, 32), po);
        let cross = _mm256_add_epi32(_mm256_mullo_epi32(g.ahi, xl), _mm256_mullo_epi32(g.alo, xh));
        _mm256_add_epi32(hi, cross)
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn sig_g1(p: &MsParams, ids: &[u64], out: &mut [u32]) {
        let ng = p.alo.len() / 8;
        let mut tmp = vec![0u32; p.alo.len()];
        for gi in 0..ng {
            let g = group(p, gi);
            let mut acc = _mm256_set1_epi32(-1);
            for &x in ids {
                let xl = _mm256_set1_epi32(x as u32 as i32);
                let xh = _mm256_set1_epi32((x >> 32) as u32 as i32);
                acc = _mm256_min_epu32(acc, h8(&g, xl, xh));
            }
            _mm256_storeu_si256(tmp.as_mut_ptr().add(gi * 8) as *mut __m256i, acc);
        }
        out.copy_from_slice(&tmp[..p.k]);
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn sig_g2(p: &MsParams, ids: &[u64], out: &mut [u32]) {
        let ng = p.alo.len() / 8; // a multiple of 4 (padding to 32 slots)
        let mut tmp = [0u32; 1 << 12];
        let tmp: &mut [u32] = if p.alo.len() <= tmp.len() { &mut tmp[..p.alo.len()] } else { unreachable!() };
        let mut gi = 0;
        while gi < ng {
            let g0 = group(p, gi);
            let g1 = group(p, gi + 1);
            let mut a0 = _mm256_set1_epi32(-1);
            let mut a1 = _mm256_set1_epi32(-1);
            for &x in ids {
                let xl = _mm256_set1_epi32(x as u32 as i32);
                let xh = _mm256_set1_epi32((x >> 32) as u32 as i32);
                a0 = _mm256_min_epu32(a0, h8(&g0, xl, xh));
                a1 = _mm256_min_epu32(a1, h8(&g1, xl, xh));
            }
            _mm256_storeu_si256(tmp.as_mut_ptr().add(gi * 8) as *mut __m256i, a0);
            _mm256_storeu_si256(tmp.as_mut_ptr().add(gi * 8 + 8) as *mut __m256i, a1);
            gi += 2;
        }
        out.copy_from_slice(&tmp[..p.k]);
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn sig_g4(p: &MsParams, ids: &[u64], out: &mut [u32]) {
        let ng = p.alo.len() / 8;
        let mut tmp = [0u32; 1 << 12];
        let tmp: &mut [u32] = &mut tmp[..p.alo.len()];
        let mut gi = 0;
        while gi < ng {
            let g0 = group(p, gi);
            let g1 = group(p, gi + 1);
            let g2 = group(p, gi + 2);
            let g3 = group(p, gi + 3);
            let mut a0 = _mm256_set1_epi32(-1);
            let mut a1 = _mm256_set1_epi32(-1);
            let mut a2 = _mm256_set1_epi32(-1);
            let mut a3 = _mm256_set1_epi32(-1);
            for &x in ids {
                let xl = _mm256_set1_epi32(x as u32 as i32);
                let xh = _mm256_set1_epi32((x >> 32) as u32 as i32);
                a0 = _mm256_min_epu32(a0, h8(&g0, xl, xh));
                a1 = _mm256_min_epu32(a1, h8(&g1, xl, xh));
                a2 = _mm256_min_epu32(a2, h8(&g2, xl, xh));
                a3 = _mm256_min_epu32(a3, h8(&g3, xl, xh));
            }
            for (j, a) in [a0, a1, a2, a3].into_iter().enumerate() {
                _mm256_storeu_si256(tmp.as_mut_ptr().add((gi + j) * 8) as *mut __m256i, a);
            }
            gi += 4;
        }
        out.copy_from_slice(&tmp[..p.k]);
    }
}

// ------------------------------------------------------------------ scalar and mixed kernels

/// Plain 64-bit multiplies on the integer pipes, 4 slots per pass over the ids.
fn sig_scalar4(a: &[u64], b: &[u64], ids: &[u64], out: &mut [u32]) {
    let k = a.len();
    let mut i = 0;
    while i + 4 <= k {
        let (a0, a1, a2, a3) = (a[i], a[i + 1], a[i + 2], a[i + 3]);
        let (b0, b1, b2, b3) = (b[i], b[i + 1], b[i + 2], b[i + 3]);
        let (mut m0, mut m1, mut m2, mut m3) = (u32::MAX, u32::MAX, u32::MAX, u32::MAX);
        for &x in ids {
            m0 = m0.min((a0.wrapping_mul(x).wrapping_add(b0) >> 32) as u32);
            m1 = m1.min((a1.wrapping_mul(x).wrapping_add(b1) >> 32) as u32);
            m2 = m2.min((a2.wrapping_mul(x).wrapping_add(b2) >> 32) as u32);
            m3 = m3.min((a3.wrapping_mul(x).wrapping_add(b3) >> 32) as u32);
        }
        out[i..i + 4].copy_from_slice(&[m0, m1, m2, m3]);
        i += 4;
    }
    while i < k {
        out[i] = ids.iter().map(|&x| (a[i].wrapping_mul(x).wrapping_add(b[i]) >> 32) as u32).min().unwrap_or(u32::MAX);
        i += 1;
    }
}

#[cfg(target_arch = "x86_64")]
mod mixed {
    use super::MsParams;
    use std::arch::x86_64::*;

    #[inline(always)]
    fn imul(a: u64, x: u64) -> u64 {
        let mut r = a;
        // SAFETY: a register-only multiply.
        unsafe { std::arch::asm!("imul {0}, {1}", inout(reg) r, in(reg) x, options(pure, nomem, nostack)) };
        r
    }

    /// One pass over the ids feeds both the vector multiplier (8 slots, AVX2) and the
    /// integer multiplier (`scal` slots, plain imul): on a CPU with one vector multiply pipe
    /// (Zen 1) the two run side by side. Slots [0, 8·nv) go to SIMD, the rest to scalar.
    #[target_feature(enable = "avx2")]
    pub unsafe fn sig_mixed(p: &MsParams, a: &[u64], b: &[u64], ids: &[u64], out: &mut [u32]) {
        let k = a.len();
        // passes of 8 SIMD slots + 4 scalar slots: 128 = 8 * 8 + 4 * 16 -> not even; so
        // use 8 SIMD + 8 scalar = 16 slots per pass, 8 passes for 128.
        let per = 16;
        assert!(k % per == 0);
        let mut tmp = [0u32; 8];
        for pass in 0..k / per {
            let base = pass * per;
            let alo = _mm256_loadu_si256(p.alo.as_ptr().add(base) as *const __m256i);
            let alo_odd = _mm256_srli_epi64(alo, 32);
            let ahi = _mm256_loadu_si256(p.ahi.as_ptr().add(base) as *const __m256i);
            let be = _mm256_loadu_si256(p.beven.as_ptr().add(base / 2) as *const __m256i);
            let bo = _mm256_loadu_si256(p.bodd.as_ptr().add(base / 2) as *const __m256i);
            let mut acc = _mm256_set1_epi32(-1);
            let s = base + 8;
            let (a0, a1, a2, a3, a4, a5, a6, a7) =
                (a[s], a[s + 1], a[s + 2], a[s + 3], a[s + 4], a[s + 5], a[s + 6], a[s + 7]);
            let (b0, b1, b2, b3, b4, b5, b6, b7) =
                (b[s], b[s + 1], b[s + 2], b[s + 3], b[s + 4], b[s + 5], b[s + 6], b[s + 7]);
            let mut m = [u32::MAX; 8];
            for &x in ids {
                let xl = _mm256_set1_epi32(x as u32 as i32);
                let xh = _mm256_set1_epi32((x >> 32) as u32 as i32);
                let pe = _mm256_add_epi64(_mm256_mul_epu32(alo, xl), be);
                let po = _mm256_add_epi64(_mm256_mul_epu32(alo_odd, xl), bo);
                let hi = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64(pe, 32), po);
                let cross = _mm256_add_epi32(_mm256_mullo_epi32(ahi, xl), _mm256_mullo_epi32(alo, xh));
                acc = _mm256_min_epu32(acc, _mm256_add_epi32(hi, cross));
                // imul through asm so LLVM cannot turn these into (slow, vector-pipe) SIMD
                m[0] = m[0].min(((imul(a0, x).wrapping_add(b0)) >> 32) as u32);
                m[1] = m[1].min(((imul(a1, x).wrapping_add(b1)) >> 32) as u32);
                m[2] = m[2].min(((imul(a2, x).wrapping_add(b2)) >> 32) as u32);
                m[3] = m[3].min(((imul(a3, x).wrapping_add(b3)) >> 32) as u32);
                m[4] = m[4].min(((imul(a4, x).wrapping_add(b4)) >> 32) as u32);
                m[5] = m[5].min(((imul(a5, x).wrapping_add(b5)) >> 32) as u32);
                m[6] = m[6].min(((imul(a6, x).wrapping_add(b6)) >> 32) as u32);
                m[7] = m[7].min(((imul(a7, x).wrapping_add(b7)) >> 32) as u32);
            }
            _mm256_storeu_si256(tmp.as_mut_ptr() as *mut __m256i, acc);
            out[base..base + 8].copy_from_slice(&tmp);
            out[s..s + 8].copy_from_slice(&m);
        }
    }
    /// Like `sig_mixed` with 16 SIMD slots and 16 scalar slots per pass (4 passes for 128).
    #[target_feature(enable = "avx2")]
    pub unsafe fn sig_mixed32(p: &MsParams, a: &[u64], b: &[u64], ids: &[u64], out: &mut [u32]) {
        let k = a.len();
        let per = 32;
        assert!(k % per == 0);
        let mut tmp = [0u32; 16];
        for pass in 0..k / per {
            let base = pass * per;
            let alo0 = _mm256_loadu_si256(p.alo.as_ptr().add(base) as *const __m256i);
            let alo1 = _mm256_loadu_si256(p.alo.as_ptr().add(base + 8) as *const __m256i);
            let ao0 = _mm256_srli_epi64(alo0, 32);
            let ao1 = _mm256_srli_epi64(alo1, 32);
            let ahi0 = _mm256_loadu_si256(p.ahi.as_ptr().add(base) as *const __m256i);
            let ahi1 = _mm256_loadu_si256(p.ahi.as_ptr().add(base + 8) as *const __m256i);
            let be0 = _mm256_loadu_si256(p.beven.as_ptr().add(base / 2) as *const __m256i);
            let bo0 = _mm256_loadu_si256(p.bodd.as_ptr().add(base / 2) as *const __m256i);
            let be1 = _mm256_loadu_si256(p.beven.as_ptr().add(base / 2 + 4) as *const __m256i);
            let bo1 = _mm256_loadu_si256(p.bodd.as_ptr().add(base / 2 + 4) as *const __m256i);
            let mut acc0 = _mm256_set1_epi32(-1);
            let mut acc1 = _mm256_set1_epi32(-1);
            let s = base + 16;
            let sa = &a[s..s + 16];
            let sb = &b[s..s + 16];
            // top32 is monotone in the 64-bit value: keep the 64-bit minimum, shift once at the end
            let mut m = [u64::MAX; 16];
            for &x in ids {
                let xl = _mm256_set1_epi32(x as u32 as i32);
                let xh = _mm256_set1_epi32((x >> 32) as u32 as i32);
                let pe = _mm256_add_epi64(_mm256_mul_epu32(alo0, xl), be0);
                let po = _mm256_add_epi64(_mm256_mul_epu32(ao0, xl), bo0);
                let hi = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64(pe, 32), po);
                let cross = _mm256_add_epi32(_mm256_mullo_epi32(ahi0, xl), _mm256_mullo_epi32(alo0, xh));
                acc0 = _mm256_min_epu32(acc0, _mm256_add_epi32(hi, cross));
                let pe = _mm256_add_epi64(_mm256_mul_epu32(alo1, xl), be1);
                let po = _mm256_add_epi64(_mm256_mul_epu32(ao1, xl), bo1);
                let hi = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64(pe, 32), po);
                let cross = _mm256_add_epi32(_mm256_mullo_epi32(ahi1, xl), _mm256_mullo_epi32(alo1, xh));
                acc1 = _mm256_min_epu32(acc1, _mm256_add_epi32(hi, cross));
                for j in 0..16 {
                    m[j] = m[j].min(imul(sa[j], x).wrapping_add(sb[j]));
                }
            }
            _mm256_storeu_si256(tmp.as_mut_ptr() as *mut __m256i, acc0);
            _mm256_storeu_si256(tmp.as_mut_ptr().add(8) as *mut __m256i, acc1);
            out[base..base + 16].copy_from_slice(&tmp);
            for j in 0..16 {
                out[s + j] = (m[j] >> 32) as u32;
            }
        }
    }
}

// ------------------------------------------------------------------ harness

fn bench<F: FnMut()>(name: &str, n_docs: usize, reps: usize, mut f: F) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    let us = best / n_docs as f64 * 1e6;
    println!("  {name:<58} {us:>8.2} us/doc");
    us
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: kernel-bench TEXTS.txt (one document a line)");
    let data = std::fs::read_to_string(&path).expect("read texts");
    let texts: Vec<&str> = data.lines().collect();
    let n = texts.len();
    let reps = 5;
    println!(
        "# {n} docs from {path}; one core; best of {reps}; avx2 detected: {}",
        std::arch::is_x86_feature_detected!("avx2")
    );

    let sh = Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
    let mh = MinHasher::multiply_shift(128, 1).unwrap();
    let (a, b) = match mh.scheme() {
        Scheme::MultiplyShift { a, b } => (a.clone(), b.clone()),
        _ => unreachable!(),
    };
    let p = MsParams::new(&a, &b);

    // correctness first
    let mut stream = Stream::default();
    let mut ids_cur = Vec::new();
    let mut ids_new = Vec::new();
    let mut all_ids: Vec<Vec<u64>> = Vec::with_capacity(n);
    for t in &texts {
        sh.hashes_unsorted(t, &mut ids_cur);
        hashes_fast(t, 5, 0, &mut stream, &mut ids_new);
        assert_eq!(ids_cur, ids_new, "fused tokeniser disagrees on {t:?}");
        all_ids.push(ids_cur.clone());
    }
    let mut s_cur = vec![0u32; 128];
    let mut s_new = vec![0u32; 128];
    for ids in &all_ids {
        mh.from_ids(ids, &mut s_cur).unwrap();
        for f in [avx2::sig_g1, avx2::sig_g2, avx2::sig_g4] {
            unsafe { f(&p, ids, &mut s_new) };
            assert_eq!(s_cur, s_new, "AVX2 kernel disagrees");
        }
        sig_scalar4(&a, &b, ids, &mut s_new);
        assert_eq!(s_cur, s_new, "scalar kernel disagrees");
        unsafe { mixed::sig_mixed(&p, &a, &b, ids, &mut s_new) };
        assert_eq!(s_cur, s_new, "mixed kernel disagrees");
        unsafe { mixed::sig_mixed32(&p, &a, &b, ids, &mut s_new) };
        assert_eq!(s_cur, s_new, "mixed32 kernel disagrees");
    }
    println!("# outputs identical to neardup-core's on every document");

    println!("text -> shingle ids (word, k=5, xxh3)");
    let t_cur = bench("neardup-core Shingler::hashes_unsorted", n, reps, || {
        for t in &texts {
            sh.hashes_unsorted(t, &mut ids_cur);
            std::hint::black_box(&ids_cur);
        }
    });
    let t_tok = bench("fused ASCII tokeniser only (no hashing)", n, reps, || {
        for t in &texts {
            tokenize_ascii(t.as_bytes(), &mut stream);
            std::hint::black_box(&stream.text);
        }
    });
    let t_new = bench("fused ASCII tokeniser + xxh3 per span", n, reps, || {
        for t in &texts {
            hashes_fast(t, 5, 0, &mut stream, &mut ids_new);
            std::hint::black_box(&ids_new);
        }
    });
    println!("  -> xxh3 of ~296 spans: {:.2} us/doc; fused path {:.1}x faster", t_new - t_tok, t_cur / t_new);

    println!("ids -> 128-slot multiply-shift signature (candidates interleaved, {reps} rounds, best kept)");
    type K<'a> = Box<dyn FnMut(&[u64], &mut [u32]) + 'a>;
    let mut cands: Vec<(String, K)> = vec![
        (
            format!("neardup-core MinHasher::from_ids ({})", neardup_core::minhash::kernel_name()),
            Box::new(|ids, o| mh.from_ids(ids, o).unwrap()),
        ),
        ("explicit AVX2, 1 group of 8 slots per pass".into(), Box::new(|ids, o| unsafe { avx2::sig_g1(&p, ids, o) })),
        ("explicit AVX2, 2 groups of 8 slots per pass".into(), Box::new(|ids, o| unsafe { avx2::sig_g2(&p, ids, o) })),
        ("explicit AVX2, 4 groups of 8 slots per pass".into(), Box::new(|ids, o| unsafe { avx2::sig_g4(&p, ids, o) })),
        ("scalar imul, 4 slots per pass".into(), Box::new(|ids, o| sig_scalar4(&a, &b, ids, o))),
        (
            "mixed: 8 AVX2 + 8 scalar-imul slots per pass".into(),
            Box::new(|ids, o| unsafe { mixed::sig_mixed(&p, &a, &b, ids, o) }),
        ),
        (
            "mixed: 16 AVX2 + 16 scalar-imul slots per pass".into(),
            Box::new(|ids, o| unsafe { mixed::sig_mixed32(&p, &a, &b, ids, o) }),
        ),
    ];
    let mut best = vec![f64::INFINITY; cands.len()];
    for _ in 0..reps {
        for (ci, (_, f)) in cands.iter_mut().enumerate() {
            let t = Instant::now();
            for ids in &all_ids {
                f(ids, &mut s_new);
                std::hint::black_box(&s_new);
            }
            best[ci] = best[ci].min(t.elapsed().as_secs_f64() / n as f64 * 1e6);
        }
    }
    for ((name, _), us) in cands.iter().zip(&best) {
        println!("  {name:<58} {us:>8.2} us/doc");
    }
    let m_cur = best[0];
    let best_new = best[1..].iter().cloned().fold(f64::INFINITY, f64::min);
    println!("  -> best candidate kernel {:.2}x faster than the current one", m_cur / best_new);
    let mean_ids = all_ids.iter().map(|v| v.len()).sum::<usize>() as f64 / n as f64;
    println!(
        "# end to end, one core: current {:.2} us/doc; with both rewrites {:.2} us/doc ({mean_ids:.0} ids/doc; \
         {:.2} ns per id x slot now, {:.2} with AVX2)",
        t_cur + m_cur,
        t_new + best_new,
        m_cur * 1e3 / (mean_ids * 128.0),
        best_new * 1e3 / (mean_ids * 128.0)
    );
}
