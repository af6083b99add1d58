//! 64-bit SimHash (Charikar): each feature's 64-bit id votes +weight on the bits that are 1
//! and -weight on the bits that are 0; a positive total gives a 1 bit.

use crate::shingle::Shingler;

/// Each nibble value expanded to four 16-bit lanes holding its bits (lane j = bit j).
const EXPAND4: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut n = 0;
    while n < 16 {
        let mut j = 0;
        while j < 4 {
            if (n >> j) & 1 == 1 {
                t[n] |= 1u64 << (16 * j);
            }
            j += 1;
        }
        n += 1;
    }
    t
};

/// Largest weight summed into the packed 16-bit counters before they are flushed.
const LANE_MAX: u64 = u16::MAX as u64;

/// Fingerprint of weighted features (ids with weights).
///
/// Bit i is 1 when the weight of features with bit i set exceeds the weight of those
/// with it clear (the guide's ±weight vote, total > 0). The set-bit weights are summed in
/// 16-bit lanes packed four to a u64 — one multiply spreads a feature's weight over four
/// bits — and flushed to 64-bit totals before any lane can overflow, so the result is exact.
pub fn fingerprint_weighted(ids: &[u64], weights: &[u32]) -> u64 {
    let mut ones = [0u64; 64];
    let mut packed = [0u64; 16];
    let mut pending = 0u64;
    let mut total = 0u64;
    let flush = |packed: &mut [u64; 16], ones: &mut [u64; 64]| {
        for (q, p) in packed.iter_mut().enumerate() {
            for j in 0..4 {
                ones[4 * q + j] += (*p >> (16 * j)) & 0xFFFF;
            }
            *p = 0;
        }
    };
    for (&h, &w) in ids.iter().zip(weights) {
        let w = w as u64;
        total += w;
        if w > LANE_MAX {
            for (bit, o) in ones.iter_mut().enumerate() {
                *o += w * ((h >> bit) & 1);
            }
            continue;
        }
        if pending + w > LANE_MAX {
            flush(&mut packed, &mut ones);
            pending = 0;
        }
        pending += w;
        for (q, p) in packed.iter_mut().enumerate() {
            *p += EXPAND4[((h >> (4 * q)) & 15) as usize] * w;
        }
    }
    flush(&mut packed, &mut ones);
    ones.iter().enumerate().fold(0u64, |fp, (bit, &o)| fp | (((2 * o > total) as u64) << bit))
}

/// The plain ±weight vote, for tests.
#[cfg(test)]
fn fingerprint_reference(ids: &[u64], weights: &[u32]) -> u64 {
    let mut totals = [0i64; 64];
    for (&h, &w) in ids.iter().zip(weights) {
        for (bit, t) in totals.iter_mut().enumerate() {
            *t += if (h >> bit) & 1 == 1 { w as i64 } else { -(w as i64) };
        }
    }
    totals.iter().enumerate().fold(0u64, |fp, (bit, &t)| fp | (((t > 0) as u64) << bit))
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
    fn packed_counters_equal_plain_vote() {
        let mut rng = crate::hash::SplitMix64(5);
        for n in [1usize, 3, 300, 5000] {
            let ids: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            for wmax in [1u64, 7, 70_000, 1 << 31] {
                let ws: Vec<u32> = (0..n).map(|_| (rng.next_u64() % wmax + 1) as u32).collect();
                assert_eq!(fingerprint_weighted(&ids, &ws), fingerprint_reference(&ids, &ws), "n={n} wmax={wmax}");
            }
        }
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(fingerprint_weighted(&[], &[]), 0);
    }
}
