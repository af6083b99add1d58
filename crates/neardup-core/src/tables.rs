//! Compact per-document tables for jobs over millions of documents.
//!
//! A Python dict of 10 million string ids costs over a gigabyte; these tables hold the same
//! facts in a few dozen bytes per document:
//!
//! * [`IdTable`]: every document id once, in arrival order (one byte buffer plus offsets),
//!   with a 64-bit-hash index for the duplicate-id check. Lookups compare the stored bytes,
//!   so two ids whose hashes collide are still told apart (exact, not probabilistic).
//! * [`FirstSeen`]: for the exact pass, the first document seen with each 64-bit key.

use std::collections::HashMap;
use xxhash_rust::xxh3::xxh3_64;

/// Document ids in arrival order, with an exact duplicate check.
#[derive(Default)]
pub struct IdTable {
    bytes: Vec<u8>,
    offsets: Vec<u64>,
    /// hash -> first index with that hash
    index: HashMap<u64, u32>,
    /// ids whose hash was already taken by a different id (rare): exact map
    collided: HashMap<Box<str>, u32>,
}

impl IdTable {
    pub fn new() -> Self {
        IdTable { offsets: vec![0], ..Default::default() }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id at `i`.
    pub fn get(&self, i: usize) -> &str {
        let (s, e) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        // Only whole `&str`s are ever pushed, so every slice is valid UTF-8.
        std::str::from_utf8(&self.bytes[s..e]).expect("ids are stored as UTF-8")
    }

    /// Insert `id` as the next index, or return the index it already has (and insert nothing).
    pub fn insert(&mut self, id: &str) -> Result<u32, u32> {
        let h = xxh3_64(id.as_bytes());
        let next = self.len() as u32;
        match self.index.get(&h) {
            None => {
                self.index.insert(h, next);
            }
            Some(&j) if self.get(j as usize) == id => return Err(j),
            Some(_) => match self.collided.get(id) {
                Some(&j) => return Err(j),
                None => {
                    self.collided.insert(id.into(), next);
                }
            },
        }
        self.bytes.extend_from_slice(id.as_bytes());
        self.offsets.push(self.bytes.len() as u64);
        Ok(next)
    }

    /// Bytes held (buffers and index, approximately).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + 8 * self.offsets.capacity()
            + 16 * self.index.capacity()
            + self.collided.keys().map(|k| k.len() + 24).sum::<usize>()
    }
}

/// The first document seen with each key (the exact pass's "which copy came first").
#[derive(Default)]
pub struct FirstSeen {
    first: HashMap<u64, u32>,
}

impl FirstSeen {
    pub fn new() -> Self {
        Self::default()
    }

    /// The first document with `key`: `doc` itself when the key is new.
    pub fn first(&mut self, key: u64, doc: u32) -> u32 {
        *self.first.entry(key).or_insert(doc)
    }

    pub fn len(&self) -> usize {
        self.first.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    pub fn heap_bytes(&self) -> usize {
        16 * self.first.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_order_and_duplicates_found() {
        let mut t = IdTable::new();
        assert_eq!(t.insert("a"), Ok(0));
        assert_eq!(t.insert("bb"), Ok(1));
        assert_eq!(t.insert("a"), Err(0));
        assert_eq!(t.insert(""), Ok(2));
        assert_eq!(t.insert("é"), Ok(3));
        assert_eq!((t.get(0), t.get(1), t.get(2), t.get(3)), ("a", "bb", "", "é"));
        assert_eq!(t.len(), 4);
        for i in 0..100_000 {
            assert_eq!(t.insert(&format!("id-{i}")), Ok(4 + i));
        }
        assert_eq!(t.insert("id-777"), Err(781));
    }

    #[test]
    fn hash_collisions_are_told_apart() {
        // Force a collision: the second id is registered under the first's hash slot.
        let mut t = IdTable::new();
        assert_eq!(t.insert("x"), Ok(0));
        let h = xxh3_64(b"y");
        t.index.insert(h, 0); // pretend "y" hashes like "x"
        assert_eq!(t.insert("y"), Ok(1));
        assert_eq!(t.insert("y"), Err(1));
        assert_eq!(t.insert("x"), Err(0));
    }

    #[test]
    fn first_seen() {
        let mut f = FirstSeen::new();
        assert_eq!(f.first(7, 0), 0);
        assert_eq!(f.first(9, 1), 1);
        assert_eq!(f.first(7, 2), 0);
        assert_eq!(f.len(), 2);
    }
}
