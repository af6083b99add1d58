//! 64-bit SimHash (Charikar): each feature's 64-bit id votes +weight on the bits that are 1
//! and -weight on the bits that are 0; a positive total gives a 1 bit.

use crate::shingle::Shingler;

/// Fingerprint of weighted features (ids with weights).
pub fn fingerprint_weighted(ids: &[u64], weights: &[u32]) -> u64 {
    let mut totals = [0i64; 64];
    for (&h, &w) in ids.iter().zip(weights) {
        let w = w as i64;
        for (bit, t) in totals.iter_mut().enumerate() {
            // Branch-free: +w when the bit is set, -w when clear.
            let set = ((h >> bit) & 1) as i64;
            *t += (2 * set - 1) * w;
        }
    }
    totals
        .iter()
        .enumerate()
        .fold(0u64, |fp, (bit, &t)| fp | (((t > 0) as u64) << bit))
}

/// Fingerprint of a text: its shingles weighted by how often they occur.
pub fn fingerprint(shingler: &Shingler, text: &str) -> u64 {
    let (ids, counts) = shingler.weighted_hashes(text);
    fingerprint_weighted(&ids, &counts)
}

/// Number of differing bits.
#[inline]
pub fn hamming(x: u64, y: u64) -> u32 {
    (x ^ y).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::ShingleHash;
    use crate::tokenize::Unit;

    #[test]
    fn guide_example() {
        let s = Shingler::new(3, Unit::Whitespace, ShingleHash::Blake2b, 0).unwrap();
        let x = "the monsoon session of parliament begins on monday with a debate on the data bill";
        let y = "the monsoon session of parliament begins on tuesday with a debate on the data bill";
        let z = "the city corporation has started a drive to clear blocked drains before the monsoon";
        let (fx, fy, fz) = (fingerprint(&s, x), fingerprint(&s, y), fingerprint(&s, z));
        assert_eq!(format!("{fx:016x}"), "0ddcdfbea0832796");
        assert_eq!((hamming(fx, fy), hamming(fx, fz)), (11, 33));
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(fingerprint_weighted(&[], &[]), 0);
    }
}
