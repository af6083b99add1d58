//! Exact set measures on sorted, distinct 64-bit shingle ids, and the signature estimate.

/// |a ∩ b| for sorted, distinct slices (a linear merge).
pub fn intersection_size(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        n += (x == y) as usize;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    n
}

/// Jaccard similarity |a ∩ b| / |a ∪ b|; 0.0 when both are empty.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let inter = intersection_size(a, b);
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Containment of `a` in `b`: |a ∩ b| / |a| (Broder); 0.0 when `a` is empty.
pub fn containment(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() {
        0.0
    } else {
        intersection_size(a, b) as f64 / a.len() as f64
    }
}

/// Shared shingles over the smaller set's: finds a story pasted into a longer page.
pub fn containment_min(a: &[u64], b: &[u64]) -> f64 {
    let m = a.len().min(b.len());
    if m == 0 {
        0.0
    } else {
        intersection_size(a, b) as f64 / m as f64
    }
}

/// True when a slice is strictly increasing (sorted and distinct).
pub fn is_sorted_distinct(a: &[u64]) -> bool {
    a.windows(2).all(|w| w[0] < w[1])
}

/// Share of positions where two signatures agree: the MinHash estimate of Jaccard.
pub fn estimate_jaccard(a: &[u32], b: &[u32]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    let eq = a.iter().zip(b).filter(|(x, y)| x == y).count();
    eq as f64 / a.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures() {
        let a = [1, 3, 5, 7];
        let b = [3, 4, 5];
        assert_eq!(intersection_size(&a, &b), 2);
        assert!((jaccard(&a, &b) - 2.0 / 5.0).abs() < 1e-12);
        assert!((containment(&b, &a) - 2.0 / 3.0).abs() < 1e-12);
        assert!((containment_min(&a, &b) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(jaccard(&[], &[]), 0.0);
        assert!(is_sorted_distinct(&a) && !is_sorted_distinct(&[2, 2]));
    }
}
