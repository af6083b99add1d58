//! Per-stage timings of the kernels on synthetic 300-word documents (no external harness:
//! `cargo bench -p neardup-core`). Prints microseconds per document for each stage.

use neardup_core::hash::{ShingleHash, SplitMix64};
use neardup_core::minhash::MinHasher;
use neardup_core::shingle::Shingler;
use neardup_core::tokenize::{tokenize, TokenStream, Unit};
use std::hint::black_box;
use std::time::Instant;

fn corpus(n: usize, words: usize) -> Vec<String> {
    let mut rng = SplitMix64(1);
    (0..n)
        .map(|_| {
            (0..words)
                .map(|_| {
                    // Zipf-like: small indices far more often.
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    format!("w{}", (20000f64.powf(u)) as u32)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn time<F: FnMut()>(label: &str, n: usize, mut f: F) {
    f(); // warm up
    let reps = 3;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("{label:<40} {:>8.2} us/doc", best / n as f64 * 1e6);
}

fn main() {
    // `cargo bench -p neardup-core -- 20000` sets the number of documents.
    let n = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5000);
    let docs = corpus(n, 300);
    let sh = Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
    let mut ts = TokenStream::default();
    time("tokenize (word)", n, || {
        for d in &docs {
            tokenize(Unit::Word, d, None, &mut ts);
            black_box(ts.len());
        }
    });
    let mut ids = Vec::new();
    time("tokenize + xxh3 shingle ids", n, || {
        for d in &docs {
            sh.hashes_unsorted(d, &mut ids);
            black_box(ids.len());
        }
    });
    time("... + sort + dedup", n, || {
        for d in &docs {
            black_box(sh.hashes(d).len());
        }
    });
    let all_ids: Vec<Vec<u64>> = docs.iter().map(|d| sh.hashes(d)).collect();
    let mut out = vec![0u32; 128];
    println!("multiply-shift kernel: {}", neardup_core::minhash::kernel_name());
    for (name, mh) in [
        ("multiply-shift", MinHasher::multiply_shift(128, 1).unwrap()),
        ("oph", MinHasher::oph(128, 1).unwrap()),
        ("affine32 (ids as 32-bit)", MinHasher::affine32_from_params(vec![3; 128], vec![1; 128]).unwrap()),
    ] {
        let ids32: Vec<Vec<u64>> = all_ids.iter().map(|v| v.iter().map(|x| x & 0xFFFF_FFFF).collect()).collect();
        time(&format!("ids -> signature {name}"), n, || {
            for v in &ids32 {
                mh.from_ids(v, &mut out).unwrap();
                black_box(&out);
            }
        });
        time(&format!("text -> signature {name}"), n, || {
            for d in &docs {
                mh.from_text(&sh, d, &mut out);
                black_box(&out);
            }
        });
    }
    {
        let mh = MinHasher::multiply_shift(128, 1).unwrap();
        let neardup_core::minhash::Scheme::MultiplyShift { a, b } = mh.scheme().clone() else { unreachable!() };
        time("ids -> signature multiply-shift (scalar)", n, || {
            for v in &all_ids {
                neardup_core::minhash::signature_scalar(&a, &b, v, &mut out);
                black_box(&out);
            }
        });
    }
    time("text -> simhash", n, || {
        for d in &docs {
            black_box(neardup_core::simhash::fingerprint(&sh, d));
        }
    });
}
