//! LSH banding arithmetic and band keys.
//!
//! A pair with Jaccard s shares one band of r rows with probability s^r and becomes a
//! candidate in b bands with probability 1 - (1 - s^r)^b: the S-curve.

use crate::error::param;

/// Probability that a pair with Jaccard `s` becomes a candidate under b bands of r rows.
pub fn candidate_probability(s: f64, b: u32, r: u32) -> f64 {
    1.0 - (1.0 - s.powi(r as i32)).powi(b as i32)
}

/// Adaptive Simpson quadrature, accurate to ~1e-12 on these smooth integrands.
fn integrate(f: &dyn Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    fn simpson(f: &dyn Fn(f64) -> f64, a: f64, fa: f64, b: f64, fb: f64) -> (f64, f64, f64) {
        let m = 0.5 * (a + b);
        let fm = f(m);
        (m, fm, (b - a) / 6.0 * (fa + 4.0 * fm + fb))
    }
    #[allow(clippy::too_many_arguments)]
    fn rec(
        f: &dyn Fn(f64) -> f64,
        a: f64,
        fa: f64,
        b: f64,
        fb: f64,
        m: f64,
        fm: f64,
        whole: f64,
        eps: f64,
        depth: u32,
    ) -> f64 {
        let (lm, flm, left) = simpson(f, a, fa, m, fm);
        let (rm, frm, right) = simpson(f, m, fm, b, fb);
        let delta = left + right - whole;
        // (a NaN delta passes no comparison: without its own test a NaN curve recursed 2^50 times)
        if depth == 0 || delta.is_nan() || delta.abs() <= 15.0 * eps {
            return left + right + delta / 15.0;
        }
        rec(f, a, fa, m, fm, lm, flm, left, eps / 2.0, depth - 1)
            + rec(f, m, fm, b, fb, rm, frm, right, eps / 2.0, depth - 1)
    }
    if !(a.is_finite() && b.is_finite()) {
        return f64::NAN; // (an infinite interval halves for ever: no area to give)
    }
    if b <= a {
        return 0.0;
    }
    let (fa, fb) = (f(a), f(b));
    let (m, fm, whole) = simpson(f, a, fa, b, fb);
    rec(f, a, fa, b, fb, m, fm, whole, 1e-13, 50)
}

/// Area under the S-curve below the threshold: datasketch's false-positive measure.
pub fn false_positive_area(threshold: f64, b: u32, r: u32) -> f64 {
    integrate(&|s| candidate_probability(s, b, r), 0.0, threshold)
}

/// Area above the S-curve beyond the threshold: datasketch's false-negative measure.
pub fn false_negative_area(threshold: f64, b: u32, r: u32) -> f64 {
    integrate(&|s| 1.0 - candidate_probability(s, b, r), threshold, 1.0)
}

fn check_threshold(threshold: f64) -> crate::Result<()> {
    if !(threshold.is_finite() && threshold > 0.0 && threshold <= 1.0) {
        return param(format!("threshold must be in (0, 1], got {threshold}"));
    }
    Ok(())
}

/// The largest signature the optimisers search (as the MinHash schemes' own limit): their
/// search grows as num_perm * ln(num_perm), and a billion never returned.
pub const MAX_NUM_PERM: u32 = 1 << 16;

fn check_num_perm(num_perm: u32) -> crate::Result<()> {
    if num_perm == 0 || num_perm > MAX_NUM_PERM {
        return param(format!("num_perm must be in 1..={MAX_NUM_PERM}, got {num_perm}"));
    }
    Ok(())
}

/// datasketch's optimiser: the (b, r), b·r <= num_perm, minimising
/// fp_weight·FP area + fn_weight·FN area (first minimum in b-then-r order, as datasketch).
pub fn optimal_params(threshold: f64, num_perm: u32, fp_weight: f64, fn_weight: f64) -> crate::Result<(u32, u32)> {
    check_threshold(threshold)?;
    check_num_perm(num_perm)?;
    if !(fp_weight >= 0.0 && fn_weight >= 0.0 && fp_weight + fn_weight > 0.0 && (fp_weight + fn_weight).is_finite()) {
        return param(format!("weights must be non-negative with a positive sum, got ({fp_weight}, {fn_weight})"));
    }
    let mut best = (f64::INFINITY, (0, 0));
    for b in 1..=num_perm {
        for r in 1..=num_perm / b {
            let err =
                fp_weight * false_positive_area(threshold, b, r) + fn_weight * false_negative_area(threshold, b, r);
            if err < best.0 {
                best = (err, (b, r));
            }
        }
    }
    Ok(best.1)
}

/// The (b, r) with the fewest expected false candidates (smallest area under the curve
/// below the threshold, i.e. expected candidates per pair under a uniform prior on s < t)
/// among those that find a pair at the threshold with probability >= `recall`. Ties go to
/// fewer slots (b·r).
pub fn params_for_recall(threshold: f64, num_perm: u32, recall: f64) -> crate::Result<(u32, u32)> {
    check_threshold(threshold)?;
    check_num_perm(num_perm)?;
    if !(recall > 0.0 && recall < 1.0) {
        return param(format!("recall must be in (0, 1), got {recall}"));
    }
    let mut best: Option<(f64, u32, (u32, u32))> = None;
    let mut closest = (0.0f64, (1u32, 1u32));
    for r in 1..=num_perm {
        // For each r, the fewest bands that reach the recall is the cheapest choice.
        let max_b = num_perm / r;
        let Some(b) = (1..=max_b).find(|&b| candidate_probability(threshold, b, r) >= recall) else {
            let p = candidate_probability(threshold, max_b, r);
            if p > closest.0 {
                closest = (p, (max_b, r));
            }
            continue;
        };
        let fp = false_positive_area(threshold, b, r);
        let better = match best {
            None => true,
            Some((bfp, slots, _)) => fp < bfp - 1e-15 || ((fp - bfp).abs() <= 1e-15 && b * r < slots),
        };
        if better {
            best = Some((fp, b * r, (b, r)));
        }
    }
    match best {
        Some((_, _, br)) => Ok(br),
        None => param(format!(
            "no (bands, rows) with bands*rows <= {num_perm} finds a pair at threshold {threshold} \
             with probability >= {recall}; the best is {:?} with {:.3}: raise num_perm or lower recall",
            closest.1, closest.0
        )),
    }
}

/// One 64-bit key per band: XXH3 of the band's r values (little-endian), seeded by the band
/// index so equal values in different bands never share a bucket by accident.
pub fn band_keys(sig: &[u32], b: usize, r: usize, out: &mut [u64]) {
    debug_assert!(b * r <= sig.len() && out.len() == b);
    let mut buf = [0u8; 4 * 64];
    for (band, key) in out.iter_mut().enumerate() {
        let vals = &sig[band * r..(band + 1) * r];
        *key = if r <= 64 {
            for (i, v) in vals.iter().enumerate() {
                buf[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
            xxhash_rust::xxh3::xxh3_64_with_seed(&buf[..4 * r], band as u64)
        } else {
            let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            xxhash_rust::xxh3::xxh3_64_with_seed(&bytes, band as u64)
        };
    }
}

/// Check (b, r) against a signature length.
pub fn check_bands(num_perm: usize, b: usize, r: usize) -> crate::Result<()> {
    // (checked: b * r wrapped past usize to a small number and passed, then the key matrix's
    // allocation aborted the process)
    if b == 0 || r == 0 || b.checked_mul(r).is_none_or(|br| br > num_perm) {
        return param(format!("bands ({b}) x rows ({r}) must be positive and at most num_perm ({num_perm})"));
    }
    Ok(())
}

/// Candidate pairs (i < j) of rows that share a key in at least one band column of a
/// row-major n x b key matrix; each pair once, sorted.
///
/// Buckets are found by sorting each band's (key, row) column — no hash map, memory
/// 16 bytes per row per band in flight — and bands run in parallel on the current rayon
/// pool. Within a bucket rows are ascending, so every pair comes out as (smaller, larger).
pub fn candidate_pairs(keys: &[u64], n: usize, b: usize) -> Vec<(u32, u32)> {
    candidate_pairs_capped(keys, n, b, usize::MAX).pairs
}

/// The candidates of a key matrix when buckets of more than `max_bucket` rows are not listed
/// pair by pair: their pairs are left out and each such bucket is returned as its rows
/// (ascending; a bucket with the same rows in several bands once), for
/// [`crate::buckets::spanning_edges`].
pub struct CappedCandidates {
    pub pairs: Vec<(u32, u32)>,
    /// CSR: bucket k is `members[offsets[k]..offsets[k + 1]]`.
    pub offsets: Vec<usize>,
    pub members: Vec<u32>,
}

pub fn candidate_pairs_capped(keys: &[u64], n: usize, b: usize, max_bucket: usize) -> CappedCandidates {
    use rayon::prelude::*;
    assert_eq!(keys.len(), n * b, "keys must be n x b");
    let max_bucket = max_bucket.max(2);
    // a band's pairs, and its buckets of more than max_bucket rows
    type BandCandidates = (Vec<(u32, u32)>, Vec<Vec<u32>>);
    let per_band: Vec<BandCandidates> = (0..b)
        .into_par_iter()
        .map(|band| {
            let mut col: Vec<(u64, u32)> = (0..n).map(|i| (keys[i * b + band], i as u32)).collect();
            col.sort_unstable();
            let mut pairs = Vec::new();
            let mut large = Vec::new();
            let mut s = 0;
            while s < n {
                let mut e = s + 1;
                while e < n && col[e].0 == col[s].0 {
                    e += 1;
                }
                if e - s > max_bucket {
                    large.push(col[s..e].iter().map(|c| c.1).collect());
                } else {
                    for x in s..e {
                        for y in x + 1..e {
                            pairs.push((col[x].1, col[y].1));
                        }
                    }
                }
                s = e;
            }
            (pairs, large)
        })
        .collect();
    let mut all = Vec::with_capacity(per_band.iter().map(|p| p.0.len()).sum());
    let mut large: Vec<Vec<u32>> = Vec::new();
    for (p, l) in per_band {
        all.extend(p);
        large.extend(l);
    }
    all.par_sort_unstable();
    all.dedup();
    large.sort_unstable();
    large.dedup();
    let mut offsets = Vec::with_capacity(large.len() + 1);
    offsets.push(0);
    let mut members = Vec::with_capacity(large.iter().map(|l| l.len()).sum());
    for l in large {
        members.extend(l);
        offsets.push(members.len());
    }
    CappedCandidates { pairs: all, offsets, members }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_times_rows_past_usize_refused() {
        // 2^32 x 2^32 wrapped to 0 and passed; the key matrix's allocation then aborted
        assert!(check_bands(128, 1 << 32, 1 << 32).is_err());
        assert!(check_bands(128, usize::MAX, 2).is_err());
        assert!(check_bands(128, 16, 8).is_ok());
        assert!(check_bands(128, 16, 9).is_err());
    }

    #[test]
    fn areas_end_on_nan_and_infinity() {
        // these recursed 2^50 times (never returned)
        assert!(false_positive_area(f64::NAN, 4, 4).is_nan());
        assert!(false_positive_area(f64::INFINITY, 4, 4).is_nan());
        assert!(false_negative_area(f64::NEG_INFINITY, 4, 4).is_nan());
        assert!((false_positive_area(0.5, 4, 4) - false_positive_area(0.5, 4, 4)).abs() == 0.0);
        assert!(params_for_recall(0.5, 1_000_000_000, 0.9).is_err());
        assert!(optimal_params(0.5, MAX_NUM_PERM + 1, 0.5, 0.5).is_err());
    }

    #[test]
    fn guide_curve_rows() {
        let r = |s, b, r| (candidate_probability(s, b, r) * 1000.0).round() / 1000.0;
        assert_eq!(r(0.8, 16, 8), 0.947);
        assert_eq!(r(0.8, 9, 13), 0.399);
        // MMDS: 20 bands of 5 rows.
        assert!((candidate_probability(0.8, 20, 5) - 0.99965).abs() < 1e-5);
        assert!((candidate_probability(0.3, 20, 5) - 0.0474).abs() < 1e-4);
    }

    #[test]
    fn datasketch_choices() {
        assert_eq!(optimal_params(0.8, 128, 0.5, 0.5).unwrap(), (9, 13));
        assert_eq!(optimal_params(0.8, 128, 0.3, 0.7).unwrap(), (11, 11));
    }

    #[test]
    fn recall_targeted() {
        let (b, r) = params_for_recall(0.8, 128, 0.95).unwrap();
        assert!(candidate_probability(0.8, b, r) >= 0.95 && b * r <= 128);
        // Threshold 1: only identical signatures need to match.
        assert_eq!(params_for_recall(1.0, 128, 0.95).unwrap(), (1, 128));
        assert!(params_for_recall(0.8, 1, 0.95).is_err());
        assert!(params_for_recall(0.0, 128, 0.95).is_err());
    }

    #[test]
    fn pairs_from_keys() {
        // 4 rows, 2 bands: rows 0 and 2 share band 0; rows 2 and 3 share band 1.
        let keys = [1, 10, 2, 20, 1, 30, 3, 30];
        assert_eq!(candidate_pairs(&keys, 4, 2), [(0, 2), (2, 3)]);
    }

    #[test]
    fn large_buckets_are_returned_whole() {
        // band 0: rows 0..5 share a key (a bucket of 5), band 1: rows 1 and 3 share one
        let keys = [7, 1, 7, 2, 7, 3, 7, 2, 7, 5];
        let c = candidate_pairs_capped(&keys, 5, 2, 4);
        assert_eq!(c.pairs, [(1, 3)]);
        assert_eq!((c.offsets, c.members), (vec![0, 5], vec![0, 1, 2, 3, 4]));
        let all = candidate_pairs_capped(&keys, 5, 2, 5);
        assert_eq!(all.pairs.len(), 10);
        assert!(all.members.is_empty() && all.offsets == [0]);
    }
}
