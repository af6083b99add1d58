use super::*;
use crate::hash::{ShingleHash, SplitMix64};
use crate::measures::jaccard;
use crate::tokenize::Unit;

fn random_ids(rng: &mut SplitMix64, n: usize) -> Vec<u64> {
    (0..n).map(|_| rng.next_u64()).collect()
}

#[test]
fn multiply_shift_kernel_matches_formula() {
    let mut rng = SplitMix64(42);
    for &k in &[1usize, 7, 32, 100, 128, 256] {
        let mh = MinHasher::multiply_shift(k, 9).unwrap();
        let Scheme::MultiplyShift { a, b } = mh.scheme().clone() else { unreachable!() };
        for n in [0usize, 1, 5, 300] {
            let ids = random_ids(&mut rng, n);
            let mut got = vec![0u32; k];
            mh.from_ids(&ids, &mut got).unwrap();
            assert_eq!(got, multiply_shift::reference(&a, &b, &ids), "k={k} n={n}");
            let mut port = vec![0u32; k];
            multiply_shift::portable(mh.ms.as_ref().unwrap(), &ids, &mut port);
            assert_eq!(port, got);
        }
    }
}

#[test]
fn even_a_rejected() {
    assert!(MinHasher::multiply_shift_from_params(vec![2], vec![0]).is_err());
    assert!(MinHasher::multiply_shift_from_params(vec![1, 3], vec![0]).is_err());
    assert!(MinHasher::multiply_shift(0, 1).is_err());
}

#[test]
fn affine32_rejects_wide_ids() {
    let mh = MinHasher::affine32_from_params(vec![1, 3], vec![0, 0]).unwrap();
    let mut out = [0u32; 2];
    let err = mh.from_ids(&[1, 1 << 40], &mut out).unwrap_err();
    assert!(matches!(err, crate::Error::InvalidInput { index: Some(1), .. }));
}

#[test]
fn empty_set_is_all_max() {
    for mh in [
        MinHasher::multiply_shift(64, 1).unwrap(),
        MinHasher::oph(64, 1).unwrap(),
        MinHasher::affine32_from_params(vec![1; 64], vec![0; 64]).unwrap(),
    ] {
        let mut out = vec![0u32; 64];
        mh.from_ids(&[], &mut out).unwrap();
        assert!(out.iter().all(|&v| v == u32::MAX), "{}", mh.scheme().name());
    }
}

#[test]
fn order_and_repeats_do_not_matter() {
    let mut rng = SplitMix64(3);
    let ids = random_ids(&mut rng, 200);
    let mut shuffled: Vec<u64> = ids.iter().rev().copied().collect();
    shuffled.extend_from_slice(&ids[..50]);
    for mh in [MinHasher::multiply_shift(128, 1).unwrap(), MinHasher::oph(128, 1).unwrap()] {
        let (mut s1, mut s2) = (vec![0u32; 128], vec![0u32; 128]);
        mh.from_ids(&ids, &mut s1).unwrap();
        mh.from_ids(&shuffled, &mut s2).unwrap();
        assert_eq!(s1, s2);
    }
}

/// Mean and standard deviation of the estimate over many seeds for one pair of sets.
fn estimate_stats(make: impl Fn(u64) -> MinHasher, a: &[u64], b: &[u64]) -> (f64, f64) {
    let trials = 400;
    let mut ests = Vec::with_capacity(trials);
    for seed in 0..trials as u64 {
        let mh = make(seed);
        let k = mh.num_perm();
        let (mut sa, mut sb) = (vec![0u32; k], vec![0u32; k]);
        mh.from_ids(a, &mut sa).unwrap();
        mh.from_ids(b, &mut sb).unwrap();
        ests.push(crate::measures::estimate_jaccard(&sa, &sb));
    }
    let mean = ests.iter().sum::<f64>() / trials as f64;
    let var = ests.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (trials - 1) as f64;
    (mean, var.sqrt())
}

fn pair_with_jaccard(n: usize, shared: usize) -> (Vec<u64>, Vec<u64>) {
    let mut rng = SplitMix64(77);
    let common = random_ids(&mut rng, shared);
    let mut a = common.clone();
    a.extend(random_ids(&mut rng, n - shared));
    let mut b = common;
    b.extend(random_ids(&mut rng, n - shared));
    a.sort_unstable();
    b.sort_unstable();
    (a, b)
}

#[test]
fn estimators_unbiased_with_binomial_spread() {
    // |A| = |B| = 150 sharing 90: J = 90 / 210.
    let (a, b) = pair_with_jaccard(150, 90);
    let j = jaccard(&a, &b);
    let k = 128.0;
    let ideal_sd = (j * (1.0 - j) / k).sqrt();
    for (name, make) in [
        ("multiply-shift", Box::new(|s| MinHasher::multiply_shift(128, s).unwrap()) as Box<dyn Fn(u64) -> MinHasher>),
        ("oph", Box::new(|s| MinHasher::oph(128, s).unwrap())),
    ] {
        let (mean, sd) = estimate_stats(make, &a, &b);
        let se_of_mean = sd / (400f64).sqrt();
        assert!((mean - j).abs() < 3.0 * se_of_mean + 1e-9, "{name}: mean {mean} vs J {j}");
        // Within 10% of the classic-MinHash standard error (plus sampling slack of the sd).
        assert!(sd < ideal_sd * 1.10 + 0.004, "{name}: sd {sd} vs ideal {ideal_sd}");
    }
}

#[test]
fn text_path_equals_hash_path() {
    let sh = Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
    let mh = MinHasher::multiply_shift(128, 1).unwrap();
    let text = "Heavy rain is likely over coastal Karnataka and Goa for the next three days, the weather office said.";
    let mut s1 = vec![0u32; 128];
    mh.from_text(&sh, text, &mut s1);
    let mut s2 = vec![0u32; 128];
    mh.from_ids(&sh.hashes(text), &mut s2).unwrap();
    assert_eq!(s1, s2);
}
