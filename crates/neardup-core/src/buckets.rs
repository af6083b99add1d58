//! Large LSH buckets without their pairs.
//!
//! The answer of a dedup run is defined as the connected components of the candidate pairs
//! that pass verification. A bucket of m documents has m(m-1)/2 candidate pairs (5e9 for
//! 100,000 copies of a short text), but its part of the answer only needs the components.
//! [`spanning_edges`] verifies each member only against earlier members it is not already
//! connected to, one member of each other component at a time, and keeps only the edges
//! that join two components: m - 1 checks for a bucket of copies.
//!
//! Why the components are exactly those of all the bucket's passing pairs: every emitted
//! edge passed verification, so the emitted graph is a subgraph of the passing-pairs graph;
//! and every passing pair (x, j) was either checked — then x and j are connected afterwards
//! (by this edge, or they already were) — or skipped, which happens only when x and j were
//! already connected through emitted or earlier verified edges. So each passing pair lies
//! inside one component of the emitted graph plus the seed connections, which are
//! themselves verified edges: the two graphs have the same components.

use crate::unionfind::UnionFind;
use std::collections::HashMap;

/// Buckets in CSR form: bucket `k` is `members[offsets[k]..offsets[k + 1]]`, ascending.
pub struct Buckets<'a> {
    pub offsets: &'a [usize],
    pub members: &'a [u32],
}

/// What [`spanning_edges`] found: the edges `(x, j, similarity)` (x before j) that joined
/// two components, and the number of similarities computed.
#[derive(Debug, Default)]
pub struct Spanning {
    pub edges: Vec<(u32, u32, f64)>,
    pub checks: u64,
}

/// Per-bucket union-find verification over `n` local documents (indices in input order).
///
/// `seed[i]`: a component label of document i from edges already verified elsewhere
/// (documents with equal labels start connected); `sim(x, j)`: their similarity; an edge
/// passes at `sim >= threshold`. The union-find is shared by all buckets, so a document
/// already connected to a member through another bucket is not checked again.
pub fn spanning_edges<F: FnMut(u32, u32) -> f64>(
    n: usize,
    buckets: &Buckets<'_>,
    seed: &[u32],
    threshold: f64,
    mut sim: F,
) -> Result<Spanning, String> {
    if seed.len() != n {
        return Err(format!("seed has {} labels for {} documents", seed.len(), n));
    }
    let (offs, members) = (buckets.offsets, buckets.members);
    if offs.is_empty() || offs[0] != 0 || *offs.last().unwrap() != members.len() || offs.windows(2).any(|w| w[0] > w[1])
    {
        return Err("bucket offsets must rise from 0 to len(members)".into());
    }
    if let Some(&bad) = members.iter().find(|&&m| m as usize >= n) {
        return Err(format!("member {bad} is out of range for {n} documents"));
    }
    let mut uf = UnionFind::new(n);
    let mut first_of: HashMap<u32, u32> = HashMap::new();
    for (i, &label) in seed.iter().enumerate() {
        let f = *first_of.entry(label).or_insert(i as u32);
        uf.union(f, i as u32);
    }
    drop(first_of);
    let mut out = Spanning::default();
    // this bucket's earlier members, by the root of their component
    let mut comp: HashMap<u32, Vec<u32>> = HashMap::new();
    for k in 0..offs.len() - 1 {
        comp.clear();
        for &j in &members[offs[k]..offs[k + 1]] {
            let roots: Vec<u32> = comp.keys().copied().collect();
            for c in roots {
                if uf.find(c) == uf.find(j) {
                    continue; // merged into j's component earlier in this loop, or seeded so
                }
                let Some(list) = comp.get(&c) else { continue };
                // one passing member joins the whole component: the rest need no check
                let mut joined = None;
                for &x in list {
                    out.checks += 1;
                    let s = sim(x, j);
                    if s >= threshold {
                        joined = Some((x, s));
                        break;
                    }
                }
                if let Some((x, s)) = joined {
                    let rj = uf.find(j);
                    uf.union(x, j);
                    out.edges.push((x, j, s));
                    merge(&mut comp, c, rj, uf.find(j));
                }
            }
            let r = uf.find(j);
            // j's own entry: earlier members of its component (seeded or joined) and j
            comp.entry(r).or_default().push(j);
        }
    }
    Ok(out)
}

/// The lists of components `a` and `b` (now one, rooted at `root`) under `root`, the smaller
/// appended to the larger.
fn merge(comp: &mut HashMap<u32, Vec<u32>>, a: u32, b: u32, root: u32) {
    let mut x = comp.remove(&a).unwrap_or_default();
    let mut y = if a != b { comp.remove(&b).unwrap_or_default() } else { Vec::new() };
    if x.len() < y.len() {
        std::mem::swap(&mut x, &mut y);
    }
    x.extend(y);
    comp.insert(root, x);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn components(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
        crate::unionfind::connected_components(n, edges).unwrap()
    }

    #[test]
    fn copies_cost_one_check_each() {
        let members: Vec<u32> = (0..1000).collect();
        let offsets = [0, 1000];
        let seed: Vec<u32> = (0..1000).collect();
        let b = Buckets { offsets: &offsets, members: &members };
        let s = spanning_edges(1000, &b, &seed, 0.8, |_, _| 1.0).unwrap();
        assert_eq!(s.edges.len(), 999);
        assert_eq!(s.checks, 999);
    }

    #[test]
    fn same_components_as_all_pairs() {
        // a deterministic pseudo-random similarity over a few buckets, overlapping
        let n = 60usize;
        let simf = |x: u32, j: u32| {
            let h = (x as u64 * 0x9E37_79B9 + j as u64 * 0x85EB_CA6B) ^ ((x as u64) << 7);
            (h % 100) as f64 / 100.0
        };
        let members: Vec<u32> = (0..40).chain(20..60).chain((0..60).step_by(3)).collect();
        let offsets = [0, 40, 80, members.len()];
        let seed: Vec<u32> = (0..n as u32).map(|i| if i == 5 || i == 50 { 5 } else { i }).collect();
        let b = Buckets { offsets: &offsets, members: &members };
        for t in [0.3, 0.6, 0.9, 0.97] {
            let s = spanning_edges(n, &b, &seed, t, simf).unwrap();
            let mut all = vec![(5u32, 50u32)];
            for k in 0..3 {
                let m = &members[offsets[k]..offsets[k + 1]];
                for (p, &x) in m.iter().enumerate() {
                    for &j in &m[p + 1..] {
                        if simf(x, j) >= t {
                            all.push((x, j));
                        }
                    }
                }
            }
            let mut span: Vec<(u32, u32)> = s.edges.iter().map(|e| (e.0, e.1)).collect();
            span.push((5, 50));
            assert_eq!(components(n, &span), components(n, &all), "threshold {t}");
            assert!(s.edges.iter().all(|e| e.0 < e.1 && simf(e.0, e.1) == e.2 && e.2 >= t));
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let b = Buckets { offsets: &[0, 2], members: &[0, 7] };
        assert!(spanning_edges(3, &b, &[0, 1, 2], 0.5, |_, _| 1.0).is_err());
        let b = Buckets { offsets: &[0, 3], members: &[0, 1] };
        assert!(spanning_edges(3, &b, &[0, 1, 2], 0.5, |_, _| 1.0).is_err());
        let b = Buckets { offsets: &[0, 2], members: &[0, 1] };
        assert!(spanning_edges(3, &b, &[0, 1], 0.5, |_, _| 1.0).is_err());
    }
}
