//! Hash functions: shingle hashes (xxh3, blake2b as in the guide), datasketch's
//! `sha1_hash32`, and the integer mixers the schemes use.

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use sha1::{Digest, Sha1};

/// How a shingle's bytes become a 64-bit id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShingleHash {
    /// 64-bit XXH3 with a seed: fast, well mixed.
    Xxh3,
    /// BLAKE2b with an 8-byte digest, read little-endian: the guide's `shingle_ids`.
    Blake2b,
}

impl ShingleHash {
    pub fn parse(name: &str) -> crate::Result<ShingleHash> {
        match name {
            "xxh3" => Ok(ShingleHash::Xxh3),
            "blake2b" => Ok(ShingleHash::Blake2b),
            other => crate::error::param(format!("unknown hash {other:?}: expected \"xxh3\" or \"blake2b\"")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ShingleHash::Xxh3 => "xxh3",
            ShingleHash::Blake2b => "blake2b",
        }
    }

    #[inline]
    pub fn hash(self, bytes: &[u8], seed: u64) -> u64 {
        match self {
            ShingleHash::Xxh3 => xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed),
            ShingleHash::Blake2b => blake2b64(bytes),
        }
    }
}

/// `int.from_bytes(hashlib.blake2b(bytes, digest_size=8).digest(), "little")`.
pub fn blake2b64(bytes: &[u8]) -> u64 {
    let mut h = Blake2bVar::new(8).expect("8 is a valid BLAKE2b digest size");
    h.update(bytes);
    let mut out = [0u8; 8];
    h.finalize_variable(&mut out).expect("buffer has the digest size");
    u64::from_le_bytes(out)
}

/// datasketch's `sha1_hash32`: the first 4 bytes of SHA-1, little-endian.
pub fn sha1_hash32(bytes: &[u8]) -> u32 {
    let d = Sha1::digest(bytes);
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// MurmurHash3's 32-bit finaliser (datasketch's `_fmix` at width 32).
#[inline(always)]
pub fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// MurmurHash3's 64-bit finaliser: a bijection with full avalanche.
#[inline(always)]
pub fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// SplitMix64: the generator behind neardup's own parameter draws (documented, portable,
/// no dependency on any library's random stream).
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_hash32_matches_datasketch() {
        // SHA-1("hello") = aaf4c61d...: first four bytes little-endian.
        assert_eq!(sha1_hash32(b"hello"), u32::from_le_bytes([0xaa, 0xf4, 0xc6, 0x1d]));
    }

    #[test]
    fn blake2b64_known_value() {
        // BLAKE2b-64 of the empty string: e4a6a0577479b2b4 (digest bytes), read little-endian.
        assert_eq!(blake2b64(b""), u64::from_le_bytes([0xe4, 0xa6, 0xa0, 0x57, 0x74, 0x79, 0xb2, 0xb4]));
    }

    #[test]
    fn fmix32_is_a_bijection_on_samples() {
        let mut seen = std::collections::HashSet::new();
        for x in 0..10_000u32 {
            assert!(seen.insert(fmix32(x)));
        }
    }
}
