//! Exact set-similarity kernels for the dedup pipeline and its evaluation.
//!
//! * [`self_join`]: the exact similarity self-join (AllPairs with prefix and size filtering,
//!   Bayardo, Ma and Srikant 2007): every pair of sets with Jaccard >= `threshold`, exactly,
//!   never sampled. This is the ground truth of `neardup eval`.
//! * [`verify_pairs`]: exact Jaccard or containment for a batch of candidate pairs.
//! * [`hamming_candidates`]: SimHash block-permuted tables (Manku, Jain and Das Sarma 2007):
//!   every pair of 64-bit fingerprints within Hamming distance `max_distance`.
//!
//! Sets come in CSR form: set `i` is `data[offsets[i]..offsets[i + 1]]`, sorted and distinct
//! (as `Shingler.hashes` returns them). Results never depend on the number of threads.

use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hasher for the u32 keys of the prefix index (no DoS concern here).
#[derive(Default)]
struct MulHasher(u64);
impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64 ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_right(29);
    }
}

/// How two sets are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// |a ∩ b| / |a ∪ b| (0.0 when both are empty).
    Jaccard,
    /// |a ∩ b| / min(|a|, |b|): the share of the smaller document found in the larger one
    /// (0.0 when either is empty).
    Containment,
}

/// A read-only view of many sorted, distinct sets in CSR form.
#[derive(Clone, Copy, Debug)]
pub struct Csr<'a, T> {
    pub data: &'a [T],
    pub offsets: &'a [usize],
}

impl<'a, T> Csr<'a, T> {
    /// Checks that offsets are non-decreasing, start at 0 and end at `data.len()`.
    pub fn new(data: &'a [T], offsets: &'a [usize]) -> Result<Self, String> {
        if offsets.is_empty() {
            return Err("offsets must have at least one element (0)".into());
        }
        if offsets[0] != 0 || *offsets.last().unwrap() != data.len() {
            return Err(format!("offsets must start at 0 and end at len(data) = {}", data.len()));
        }
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err("offsets must be non-decreasing".into());
        }
        Ok(Csr { data, offsets })
    }
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn get(&self, i: usize) -> &'a [T] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }
}

pub use crate::measures::intersection_size;

/// The similarity of two set sizes with `inter` shared items.
#[inline]
pub fn similarity(measure: Measure, len_a: usize, len_b: usize, inter: usize) -> f64 {
    match measure {
        Measure::Jaccard => crate::measures::jaccard_from_sizes(len_a, len_b, inter),
        Measure::Containment => crate::measures::containment_min_from_sizes(len_a, len_b, inter),
    }
}

/// Exact similarity of each pair `(i, j)` of sets in `sets`.
pub fn verify_pairs(sets: Csr<'_, u64>, pairs: &[[u32; 2]], measure: Measure) -> Result<Vec<f64>, String> {
    let n = sets.len();
    if let Some(bad) = pairs.iter().find(|p| p[0] as usize >= n || p[1] as usize >= n) {
        return Err(format!("pair ({}, {}) is out of range for {} sets", bad[0], bad[1], n));
    }
    Ok(pairs
        .par_iter()
        .with_min_len(256)
        .map(|p| {
            let (a, b) = (sets.get(p[0] as usize), sets.get(p[1] as usize));
            similarity(measure, a.len(), b.len(), intersection_size(a, b))
        })
        .collect())
}

/// Smallest integer >= x, robust to x being a hair above an integer through rounding.
#[inline]
fn ceil_tol(x: f64) -> usize {
    let c = (x - 1e-9).ceil();
    if c < 0.0 {
        0
    } else {
        c as usize
    }
}

/// Every pair `(i, j)`, `i < j`, of sets with Jaccard >= `threshold`, with its Jaccard, sorted
/// by `(i, j)`. Exact: the same answer as comparing all pairs. Empty sets match nothing.
///
/// AllPairs: items are renamed by rising document frequency; sets are taken in order of size;
/// each set indexes its prefix of `|x| - ceil(t |x|) + 1` rarest items, and probes the index
/// with the same prefix against smaller (earlier) sets only, skipping those under `t |x|` items.
/// A pair with J >= t shares at least `ceil(t max(|x|, |y|))` items, so (prefix-filtering
/// lemma) it shares an item in those prefixes; every candidate is then verified in full.
pub fn self_join(sets: Csr<'_, u64>, threshold: f64) -> Result<Vec<(u32, u32, f64)>, String> {
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(format!("threshold must be in (0, 1], got {threshold}"));
    }
    let n = sets.len();
    if n > u32::MAX as usize {
        return Err("too many sets".into());
    }
    // 1. Rename items to ranks by rising document frequency (ties by value: deterministic).
    //    One sort of all item positions by value; no hash map, no binary searches.
    let data = sets.data;
    let total = data.len();
    if total > u32::MAX as usize {
        return Err("too many items in all sets (more than 2^32)".into());
    }
    let mut pos: Vec<(u64, u32)> = data.iter().enumerate().map(|(p, &h)| (h, p as u32)).collect();
    pos.par_sort_unstable();
    let mut item: Vec<u32> = vec![0; total]; // per position: distinct-value id, then its rank
    let mut cnt: Vec<u32> = Vec::new();
    let mut value: Vec<u64> = Vec::new();
    for &(h, p) in &pos {
        if value.last() != Some(&h) {
            value.push(h);
            cnt.push(0);
        }
        *cnt.last_mut().unwrap() += 1;
        item[p as usize] = (value.len() - 1) as u32;
    }
    drop(pos);
    let mut by_df: Vec<u32> = (0..value.len() as u32).collect();
    by_df.par_sort_unstable_by_key(|&k| (cnt[k as usize], value[k as usize]));
    drop(cnt);
    drop(value);
    let mut rank_of = vec![0u32; by_df.len()];
    for (r, &k) in by_df.iter().enumerate() {
        rank_of[k as usize] = r as u32;
    }
    drop(by_df);
    item.par_iter_mut().for_each(|u| *u = rank_of[*u as usize]);
    drop(rank_of);
    let ranked: Vec<Vec<u32>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut v: Vec<u32> = item[sets.offsets[i]..sets.offsets[i + 1]].to_vec();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    drop(item);
    // 2. Order sets by size (then index); position in that order = processing order.
    let mut order: Vec<u32> = (0..n as u32).filter(|&i| !ranked[i as usize].is_empty()).collect();
    order.sort_by_key(|&i| (ranked[i as usize].len(), i));
    let mut pos = vec![u32::MAX; n];
    for (p, &i) in order.iter().enumerate() {
        pos[i as usize] = p as u32;
    }
    let prefix_len = |len: usize| len - ceil_tol(threshold * len as f64).min(len) + 1;
    // 3. Inverted index over prefixes: item rank -> positions (rising).
    let mut index: HashMap<u32, Vec<u32>, BuildHasherDefault<MulHasher>> = HashMap::default();
    for (p, &i) in order.iter().enumerate() {
        let x = &ranked[i as usize];
        for &tok in &x[..prefix_len(x.len()).min(x.len())] {
            index.entry(tok).or_default().push(p as u32);
        }
    }
    // 4. Probe: each set against earlier (not larger) sets, in parallel.
    let mut out: Vec<(u32, u32, f64)> = (0..order.len())
        .into_par_iter()
        .with_min_len((n / 32).max(64))
        .map_init(
            || (vec![0u32; order.len()], Vec::<u32>::new()),
            |(seen, touched), p| {
                let x = &ranked[order[p] as usize];
                let min_len = ceil_tol(threshold * x.len() as f64);
                for &tok in &x[..prefix_len(x.len()).min(x.len())] {
                    if let Some(list) = index.get(&tok) {
                        for &q in list {
                            if q as usize >= p {
                                break;
                            }
                            if seen[q as usize] == 0 {
                                let y = &ranked[order[q as usize] as usize];
                                if y.len() < min_len {
                                    continue;
                                }
                                touched.push(q);
                            }
                            seen[q as usize] += 1;
                        }
                    }
                }
                let mut found = Vec::new();
                for &q in touched.iter() {
                    seen[q as usize] = 0;
                    let y = &ranked[order[q as usize] as usize];
                    let inter = intersection_size(x, y);
                    let j = similarity(Measure::Jaccard, x.len(), y.len(), inter);
                    if j >= threshold {
                        let (a, b) = (order[p], order[q as usize]);
                        found.push((a.min(b), a.max(b), j));
                    }
                }
                touched.clear();
                found
            },
        )
        .flatten()
        .collect();
    out.par_sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    Ok(out)
}

/// Every pair `(i, j)`, `i < j`, of 64-bit fingerprints within Hamming distance `max_distance`,
/// with the distance, sorted by `(i, j)`. Exact.
///
/// Block-permuted tables: the 64 bits are cut into `max_distance + 1` blocks; two fingerprints
/// within `max_distance` bits agree exactly on at least one block (pigeonhole), so each block is
/// one table keyed on its bits. Pairs sharing a block key are checked with a popcount. A pair is
/// reported once, by the first block it agrees on.
pub fn hamming_candidates(fps: &[u64], max_distance: u32) -> Result<Vec<(u32, u32, u32)>, String> {
    if max_distance > 31 {
        return Err(format!("max_distance must be in 0..=31, got {max_distance}"));
    }
    let n = fps.len();
    if n > u32::MAX as usize {
        return Err("too many fingerprints".into());
    }
    let nblocks = max_distance as usize + 1;
    // Block boundaries: as even as possible.
    let bounds: Vec<(u32, u32)> = (0..nblocks)
        .map(|b| {
            let lo = (64 * b / nblocks) as u32;
            let hi = (64 * (b + 1) / nblocks) as u32;
            (lo, hi)
        })
        .collect();
    let mask = |lo: u32, hi: u32| -> u64 {
        let w = hi - lo;
        if w >= 64 {
            u64::MAX
        } else {
            ((1u64 << w) - 1) << lo
        }
    };
    let masks: Vec<u64> = bounds.iter().map(|&(lo, hi)| mask(lo, hi)).collect();
    let mut out: Vec<(u32, u32, u32)> = (0..nblocks)
        .into_par_iter()
        .flat_map_iter(|b| {
            let m = masks[b];
            let mut keyed: Vec<(u64, u32)> = fps.iter().enumerate().map(|(i, &f)| (f & m, i as u32)).collect();
            keyed.sort_unstable();
            let mut found = Vec::new();
            let mut start = 0;
            while start < keyed.len() {
                let mut end = start + 1;
                while end < keyed.len() && keyed[end].0 == keyed[start].0 {
                    end += 1;
                }
                for x in start..end {
                    for y in (x + 1)..end {
                        let (i, j) = (keyed[x].1.min(keyed[y].1), keyed[x].1.max(keyed[y].1));
                        let (fi, fj) = (fps[i as usize], fps[j as usize]);
                        let d = (fi ^ fj).count_ones();
                        // Report only under the first block on which the pair agrees.
                        let first = masks.iter().position(|&mm| fi & mm == fj & mm).unwrap();
                        if d <= max_distance && first == b {
                            found.push((i, j, d));
                        }
                    }
                }
                start = end;
            }
            found
        })
        .collect();
    out.par_sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(sets: &[Vec<u64>]) -> (Vec<u64>, Vec<usize>) {
        let mut data = Vec::new();
        let mut offs = vec![0];
        for s in sets {
            let mut s = s.clone();
            s.sort_unstable();
            s.dedup();
            data.extend(s);
            offs.push(data.len());
        }
        (data, offs)
    }

    fn brute(sets: &[Vec<u64>], t: f64) -> Vec<(u32, u32, f64)> {
        let (data, offs) = csr(sets);
        let c = Csr::new(&data, &offs).unwrap();
        let mut out = Vec::new();
        for i in 0..c.len() {
            for j in (i + 1)..c.len() {
                let (a, b) = (c.get(i), c.get(j));
                let s = similarity(Measure::Jaccard, a.len(), b.len(), intersection_size(a, b));
                if s >= t && !a.is_empty() && !b.is_empty() {
                    out.push((i as u32, j as u32, s));
                }
            }
        }
        out
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    #[test]
    fn intersection_counts() {
        assert_eq!(intersection_size(&[1u64, 3, 5, 7], &[3, 4, 5]), 2);
        assert_eq!(intersection_size::<u64>(&[], &[3, 4, 5]), 0);
        let big: Vec<u64> = (0..1000).collect();
        assert_eq!(intersection_size(&[5u64, 500, 2000], &big), 2);
    }

    #[test]
    fn self_join_matches_brute_force() {
        let mut rng = Lcg(7);
        for t in [0.3, 0.5, 0.8, 0.9, 1.0] {
            // Families of sets that share a base, plus noise, on a small vocabulary.
            let mut sets: Vec<Vec<u64>> = Vec::new();
            for _ in 0..30 {
                let base: Vec<u64> = (0..(5 + rng.next() % 30)).map(|_| rng.next() % 200).collect();
                for _ in 0..(1 + rng.next() % 4) {
                    let mut s = base.clone();
                    for _ in 0..(rng.next() % 4) {
                        s.push(rng.next() % 200);
                    }
                    if rng.next() % 2 == 0 && s.len() > 1 {
                        s.remove((rng.next() as usize) % s.len());
                    }
                    sets.push(s);
                }
            }
            sets.push(vec![]);
            sets.push(vec![]);
            let (data, offs) = csr(&sets);
            let got = self_join(Csr::new(&data, &offs).unwrap(), t).unwrap();
            assert_eq!(got, brute(&sets, t), "threshold {t}");
        }
    }

    #[test]
    fn verify_pairs_measures() {
        let sets = vec![vec![1u64, 2, 3, 4], vec![1, 2, 3, 4, 5, 6, 7, 8], vec![]];
        let (data, offs) = csr(&sets);
        let c = Csr::new(&data, &offs).unwrap();
        let j = verify_pairs(c, &[[0, 1], [0, 2], [2, 2]], Measure::Jaccard).unwrap();
        assert_eq!(j, vec![0.5, 0.0, 0.0]);
        let k = verify_pairs(c, &[[0, 1]], Measure::Containment).unwrap();
        assert_eq!(k, vec![1.0]);
        assert!(verify_pairs(c, &[[0, 3]], Measure::Jaccard).is_err());
    }

    #[test]
    fn hamming_matches_brute_force() {
        let mut rng = Lcg(11);
        let mut fps: Vec<u64> = Vec::new();
        for _ in 0..200 {
            let base = rng.next() << 32 | rng.next();
            fps.push(base);
            for _ in 0..3 {
                let mut f = base;
                for _ in 0..(rng.next() % 6) {
                    f ^= 1 << (rng.next() % 64);
                }
                fps.push(f);
            }
        }
        fps.push(fps[0]);
        for d in [0u32, 1, 3, 5] {
            let got = hamming_candidates(&fps, d).unwrap();
            let mut want = Vec::new();
            for i in 0..fps.len() {
                for j in (i + 1)..fps.len() {
                    let x = (fps[i] ^ fps[j]).count_ones();
                    if x <= d {
                        want.push((i as u32, j as u32, x));
                    }
                }
            }
            assert_eq!(got, want, "distance {d}");
        }
    }
}
