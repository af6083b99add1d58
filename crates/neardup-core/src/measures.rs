//! Exact set measures on sorted, distinct 64-bit shingle ids, and the signature estimate.

/// |a ∩ b| for sorted, distinct slices: a linear merge, or galloping search when one
/// set is far larger (a story pasted into a long page).
pub fn intersection_size<T: Ord + Copy>(a: &[T], b: &[T]) -> usize {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return 0;
    }
    // Galloping when the sizes are very uneven (a story pasted into a long page).
    if large.len() > 16 * small.len() {
        let mut count = 0;
        let mut lo = 0;
        for x in small {
            match large[lo..].binary_search(x) {
                Ok(p) => {
                    count += 1;
                    lo += p + 1;
                }
                Err(p) => lo += p,
            }
            if lo >= large.len() {
                break;
            }
        }
        return count;
    }
    let (mut i, mut j, mut count) = (0, 0, 0);
    while i < small.len() && j < large.len() {
        let (x, y) = (small[i], large[j]);
        if x == y {
            count += 1;
            i += 1;
            j += 1;
        } else if x < y {
            i += 1;
        } else {
            j += 1;
        }
    }
    count
}

/// Jaccard from set sizes and the intersection size; 0.0 when both are empty.
#[inline]
pub fn jaccard_from_sizes(len_a: usize, len_b: usize, inter: usize) -> f64 {
    let union = len_a + len_b - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Shared items over the smaller set's size; 0.0 when either is empty.
#[inline]
pub fn containment_min_from_sizes(len_a: usize, len_b: usize, inter: usize) -> f64 {
    let m = len_a.min(len_b);
    if m == 0 {
        0.0
    } else {
        inter as f64 / m as f64
    }
}

/// Jaccard similarity |a ∩ b| / |a ∪ b|; 0.0 when both are empty.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    jaccard_from_sizes(a.len(), b.len(), intersection_size(a, b))
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
    containment_min_from_sizes(a.len(), b.len(), intersection_size(a, b))
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
