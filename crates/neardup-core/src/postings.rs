//! Look-ups in sorted posting arrays: the persistent index's query step.
//!
//! An index keeps, per LSH band, postings as two parallel arrays sorted by key (`keys` u64,
//! `docs` u32), in several immutable segments. A day's add asks, for 200,000 query keys per
//! band, which documents hold each key. Sorting the queries once and walking every segment's
//! keys forward (a merge with galloping skips) costs O(q log q + hits + q log(n/q)) per
//! segment, where one binary search per query from the start (what `numpy.searchsorted`
//! does) touches ~log n cache lines each.

use rayon::prelude::*;

/// The first position `>= from` at which `keys[pos] >= q` (keys sorted), by galloping from
/// `from`: cheap when the answer is near, as it is for sorted queries.
fn gallop(keys: &[u64], from: usize, q: u64) -> usize {
    let n = keys.len();
    if from >= n || keys[from] >= q {
        return from;
    }
    // keys[lo] < q; find hi with keys[hi] >= q (or n)
    let mut lo = from;
    let mut step = 1usize;
    let mut hi = from + 1;
    while hi < n && keys[hi] < q {
        lo = hi;
        step *= 2;
        hi = lo + step;
    }
    let hi = hi.min(n);
    // keys[lo] < q <= keys[hi] (or hi == n): binary search in (lo, hi]
    lo + 1 + keys[lo + 1..hi].partition_point(|&k| k < q)
}

/// Every `(query index, document)` with `keys[p] == queries[query index]`, over one sorted
/// posting array, given `order`: the query indices sorted by their key.
pub fn lookup_one(keys: &[u64], docs: &[u32], queries: &[u64], order: &[u32], qi: &mut Vec<u32>, out: &mut Vec<u32>) {
    debug_assert_eq!(keys.len(), docs.len());
    let mut pos = 0usize;
    let mut i = 0usize;
    while i < order.len() && pos < keys.len() {
        let q = queries[order[i] as usize];
        pos = gallop(keys, pos, q);
        // the run of equal queries
        let mut j = i + 1;
        while j < order.len() && queries[order[j] as usize] == q {
            j += 1;
        }
        if pos < keys.len() && keys[pos] == q {
            let mut end = pos + 1;
            while end < keys.len() && keys[end] == q {
                end += 1;
            }
            for &o in &order[i..j] {
                for &d in &docs[pos..end] {
                    qi.push(o);
                    out.push(d);
                }
            }
            pos = end;
        }
        i = j;
    }
}

/// The query indices sorted by key (ties by index, so results are deterministic).
pub fn query_order(queries: &[u64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..queries.len() as u32).collect();
    order.par_sort_unstable_by_key(|&i| (queries[i as usize], i));
    order
}

/// Every `(query index, document)` with a matching key, over several sorted posting arrays
/// (the segments of one band), in array order. The arrays are walked in parallel (on the
/// current rayon pool); the result does not depend on the number of threads.
pub fn lookup(arrays: &[(&[u64], &[u32])], queries: &[u64]) -> (Vec<u32>, Vec<u32>) {
    let order = query_order(queries);
    let parts: Vec<(Vec<u32>, Vec<u32>)> = arrays
        .par_iter()
        .map(|(k, d)| {
            let (mut qi, mut docs) = (Vec::new(), Vec::new());
            lookup_one(k, d, queries, &order, &mut qi, &mut docs);
            (qi, docs)
        })
        .collect();
    let total: usize = parts.iter().map(|p| p.0.len()).sum();
    let (mut qi, mut docs) = (Vec::with_capacity(total), Vec::with_capacity(total));
    for (q, d) in parts {
        qi.extend_from_slice(&q);
        docs.extend_from_slice(&d);
    }
    (qi, docs)
}

/// The first position with `keys[pos] >= q` (keys sorted). Keys are 64-bit hashes, spread
/// evenly over their range, so the position is first guessed from the value (interpolation: a
/// few probes, where a binary search over a million keys makes ~20, each a cache miss), then
/// found by binary search in the small range left; after [`MAX_PROBES`] guesses (keys far from
/// even) the binary search takes whatever range remains, so the worst case stays logarithmic.
fn lower_bound(keys: &[u64], q: u64) -> usize {
    let (mut lo, mut hi) = (0usize, keys.len()); // the answer is in [lo, hi]
    for _ in 0..MAX_PROBES {
        if hi - lo <= 32 {
            break;
        }
        let (a, b) = (keys[lo], keys[hi - 1]);
        if q <= a {
            return lo;
        }
        if q > b {
            return hi;
        }
        // a < q <= b: guess where q falls between them (u128: no overflow)
        let span = (b - a) as u128;
        let off = ((q - a) as u128 * (hi - 1 - lo) as u128 / span.max(1)) as usize;
        let m = (lo + off).clamp(lo + 1, hi - 1);
        if keys[m] < q {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    lo + keys[lo..hi].partition_point(|&x| x < q)
}

/// Interpolation guesses before [`lower_bound`] falls back to a binary search.
const MAX_PROBES: usize = 6;

/// The same as [`lookup`] for a few queries (a service's single article): one search per query
/// and array ([`lower_bound`]), no sort and no threads, in the same order (arrays, then
/// queries, then documents as stored).
pub fn lookup_few(arrays: &[(&[u64], &[u32])], queries: &[u64]) -> (Vec<u32>, Vec<u32>) {
    let (mut qi, mut docs) = (Vec::new(), Vec::new());
    for (k, d) in arrays {
        for (i, &q) in queries.iter().enumerate() {
            let mut p = lower_bound(k, q);
            while p < k.len() && k[p] == q {
                qi.push(i as u32);
                docs.push(d[p]);
                p += 1;
            }
        }
    }
    (qi, docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(arrays: &[(&[u64], &[u32])], queries: &[u64]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (k, d) in arrays {
            for (qi, q) in queries.iter().enumerate() {
                for (p, key) in k.iter().enumerate() {
                    if key == q {
                        out.push((qi as u32, d[p]));
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn lower_bound_is_partition_point() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        // even keys, clustered keys (far from even: the fallback), duplicates, edges
        for round in 0..200 {
            let n = (next() % 5000) as usize;
            let mut k: Vec<u64> = match round % 4 {
                0 => (0..n).map(|_| next()).collect(),
                1 => (0..n).map(|_| next() % 1000).collect(),
                2 => (0..n).map(|i| if i % 3 == 0 { u64::MAX - next() % 50 } else { next() % 50 }).collect(),
                _ => (0..n).map(|i| (i as u64 / 7) << 40).collect(),
            };
            k.sort_unstable();
            let mut qs: Vec<u64> = (0..50).map(|_| next()).collect();
            qs.extend(k.iter().step_by(97).copied());
            qs.extend([0, 1, u64::MAX, u64::MAX - 1]);
            for q in qs {
                assert_eq!(lower_bound(&k, q), k.partition_point(|&x| x < q), "round {round} q {q}");
            }
        }
    }

    #[test]
    fn matches_a_scan() {
        // a small xorshift, so the test needs no crate
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for round in 0..50 {
            let n = (next() % 300) as usize;
            let m = (next() % 200) as usize;
            let span = 1 + next() % (if round % 2 == 0 { 40 } else { 1 << 40 });
            let mut a: Vec<(u64, u32)> = (0..n).map(|i| (next() % span, i as u32)).collect();
            a.sort_unstable();
            let (k1, d1): (Vec<u64>, Vec<u32>) = a.into_iter().unzip();
            let mut b: Vec<(u64, u32)> = (0..n / 2).map(|i| (next() % span, 1000 + i as u32)).collect();
            b.sort_unstable();
            let (k2, d2): (Vec<u64>, Vec<u32>) = b.into_iter().unzip();
            let q: Vec<u64> = (0..m).map(|_| next() % span).collect();
            let arrays = [(&k1[..], &d1[..]), (&[][..], &[][..]), (&k2[..], &d2[..])];
            let (qi, d) = lookup(&arrays, &q);
            let mut got: Vec<(u32, u32)> = qi.into_iter().zip(d).collect();
            got.sort_unstable();
            assert_eq!(got, naive(&arrays, &q), "round {round}");
            let (qi, d) = lookup_few(&arrays, &q[..q.len().min(4)]);
            let mut few: Vec<(u32, u32)> = qi.into_iter().zip(d).collect();
            few.sort_unstable();
            assert_eq!(few, naive(&arrays, &q[..q.len().min(4)]), "round {round} (few)");
        }
    }

    #[test]
    fn gallop_finds_the_lower_bound() {
        let keys = [1u64, 3, 3, 5, 8, 13, 21];
        for from in 0..keys.len() {
            for q in 0..25u64 {
                let want = from + keys[from..].partition_point(|&k| k < q);
                assert_eq!(gallop(&keys, from, q), want, "from {from} q {q}");
            }
        }
    }
}
