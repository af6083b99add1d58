//! Batch forms of the per-document kernels, run on a rayon pool.
//!
//! Each document's output depends only on that document, and rows are written to fixed
//! positions, so results are identical for any number of threads.

use crate::minhash::MinHasher;
use crate::shingle::Shingler;
use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The most worker threads a batch call may ask for (a million were asked for and started).
pub const MAX_THREADS: usize = 1024;
/// Pools kept for reuse; a call with yet another size builds a pool of its own and drops it
/// (a loop over threads=1..100 left 5,000 threads alive).
const MAX_POOLS: usize = 8;

/// The process that first ran parallel work (the one that loaded the library): a process
/// forked from it has none of its threads, rayon's global pool's included.
static FIRST_PID: OnceLock<u32> = OnceLock::new();

/// Note this process as the one whose rayon threads are real (called when the library loads,
/// before any parallel work: a child forked later knows it is one).
pub fn note_process() {
    FIRST_PID.get_or_init(std::process::id);
}

/// Run `f` where rayon can run its parallel parts: here, in the process that loaded the
/// library; in a process forked from it (Python's multiprocessing on Linux), on a pool of the
/// child's own. A fork copies only the forking thread: rayon's global pool and the pools of
/// `with_threads` have no threads in the child, and every parallel call there waited forever.
pub fn in_this_process<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let me = std::process::id();
    if *FIRST_PID.get_or_init(|| me) == me {
        return f();
    }
    static CHILD: ProcessPool = ProcessPool::new();
    CHILD.get(|| ThreadPoolBuilder::new().build().expect("a forked process's thread pool")).install(f)
}

/// A thread pool of this process: built on first use, and again in a process forked from the
/// one that built it (whose threads the child does not have).
pub struct ProcessPool(Mutex<Option<(u32, Arc<ThreadPool>)>>);

impl ProcessPool {
    pub const fn new() -> Self {
        ProcessPool(Mutex::new(None))
    }

    pub fn get(&self, build: impl FnOnce() -> ThreadPool) -> Arc<ThreadPool> {
        let me = std::process::id();
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match held.as_ref() {
            Some((pid, p)) if *pid == me => p.clone(),
            _ => {
                let p = Arc::new(build());
                // (a pool a parent of this process built is the parent's: left, never dropped,
                // as its threads are not here to be told to stop)
                if let Some(old) = held.replace((me, p.clone())) {
                    std::mem::forget(old);
                }
                p
            }
        }
    }
}

impl Default for ProcessPool {
    fn default() -> Self {
        Self::new()
    }
}

/// Run `f` on a pool of `threads` workers (None: rayon's global pool, one per core).
/// Pools are built once per size and reused: building one costs more than a small batch.
pub fn with_threads<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> crate::Result<R> {
    match threads {
        None => Ok(in_this_process(f)),
        Some(0) => crate::error::param("threads must be at least 1 (or None for all cores)"),
        Some(t) if t > MAX_THREADS => crate::error::param(format!("threads must be at most {MAX_THREADS}, got {t}")),
        Some(t) => {
            // the pools of the process that built them (a forked child starts its own)
            // (that process's id, its pools by size)
            type Pools = (u32, HashMap<usize, Arc<ThreadPool>>);
            static POOLS: OnceLock<Mutex<Pools>> = OnceLock::new();
            let me = std::process::id();
            let pool = {
                let mut held =
                    POOLS.get_or_init(|| Mutex::new((me, HashMap::new()))).lock().unwrap_or_else(|e| e.into_inner());
                if held.0 != me {
                    std::mem::forget(std::mem::take(&mut held.1));
                    held.0 = me;
                }
                let pools = &mut held.1;
                match pools.get(&t) {
                    Some(p) => p.clone(),
                    None => {
                        let p =
                            Arc::new(ThreadPoolBuilder::new().num_threads(t).build().map_err(|e| {
                                crate::Error::InvalidParameter(format!("cannot start {t} threads: {e}"))
                            })?);
                        if pools.len() < MAX_POOLS {
                            pools.insert(t, p.clone());
                        }
                        p
                    }
                }
            };
            Ok(pool.install(f))
        }
    }
}

/// Signatures of many texts into a row-major n x num_perm buffer.
pub fn signatures<S: AsRef<str> + Sync>(mh: &MinHasher, shingler: &Shingler, texts: &[S], out: &mut [u32]) {
    let k = mh.num_perm();
    assert_eq!(out.len(), texts.len() * k);
    out.par_chunks_mut(k)
        .zip(texts.par_iter())
        .with_min_len(8)
        .for_each(|(row, t)| mh.from_text(shingler, t.as_ref(), row));
}

/// Signatures of many texts plus each one's exact key and token count (as
/// [`crate::exactkey::exact_keys_in`] in the shingler's unit), each text tokenised once
/// ([`MinHasher::from_text_keyed`]).
pub fn signatures_keyed<S: AsRef<str> + Sync>(
    mh: &MinHasher,
    shingler: &Shingler,
    texts: &[S],
    out: &mut [u32],
    keys: &mut [u64],
    ntokens: &mut [u64],
) {
    let k = mh.num_perm();
    assert_eq!(out.len(), texts.len() * k);
    assert_eq!(keys.len(), texts.len());
    assert_eq!(ntokens.len(), texts.len());
    out.par_chunks_mut(k)
        .zip(keys.par_iter_mut().zip(ntokens.par_iter_mut()))
        .zip(texts.par_iter())
        .with_min_len(8)
        .for_each(|((row, (key, n)), t)| (*key, *n) = mh.from_text_keyed(shingler, t.as_ref(), row));
}

/// SimHash fingerprints of many texts.
pub fn fingerprints<S: AsRef<str> + Sync>(shingler: &Shingler, texts: &[S], out: &mut [u64]) {
    assert_eq!(out.len(), texts.len());
    out.par_iter_mut()
        .zip(texts.par_iter())
        .with_min_len(8)
        .for_each(|(o, t)| *o = crate::simhash::fingerprint(shingler, t.as_ref()));
}

/// Sorted distinct shingle ids of many texts.
pub fn hashes<S: AsRef<str> + Sync>(shingler: &Shingler, texts: &[S]) -> Vec<Vec<u64>> {
    texts.par_iter().with_min_len(8).map(|t| shingler.hashes(t.as_ref())).collect()
}

/// Band keys of a row-major n x num_perm signature matrix into an n x b matrix.
pub fn band_keys(sigs: &[u32], num_perm: usize, b: usize, r: usize, out: &mut [u64]) {
    let n = sigs.len() / num_perm;
    assert_eq!(out.len(), n * b);
    out.par_chunks_mut(b)
        .zip(sigs.par_chunks(num_perm))
        .with_min_len(64)
        .for_each(|(keys, sig)| crate::lsh::band_keys(sig, b, r, keys));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::ShingleHash;
    use crate::tokenize::Unit;

    #[test]
    fn thread_count_invariance() {
        let sh = Shingler::new(3, Unit::Word, ShingleHash::Xxh3, 0).unwrap();
        let mh = MinHasher::multiply_shift(64, 5).unwrap();
        let texts: Vec<String> =
            (0..200).map(|i| format!("doc {i} about rain {} and more words here", i % 7)).collect();
        let mut one = vec![0u32; 200 * 64];
        with_threads(Some(1), || signatures(&mh, &sh, &texts, &mut one)).unwrap();
        let mut two = vec![0u32; 200 * 64];
        with_threads(Some(2), || signatures(&mh, &sh, &texts, &mut two)).unwrap();
        assert_eq!(one, two);
        assert!(with_threads(Some(0), || ()).is_err());
    }

    #[test]
    fn keyed_signatures_are_the_separate_passes() {
        // ASCII and not, blank, no tokens, fewer tokens than k; every unit, with and without
        // stop words (those tokenise again for the key), every scheme
        let texts: Vec<String> = [
            "Heavy rain is likely over coastal Karnataka.",
            "  heavy   RAIN is likely -- over coastal karnataka ",
            "Ünïcödé Straße ﬁnance: café au lait, ＦＵＬＬ width",
            "",
            "!! ...",
            "two words",
            "snake_case AND CamelCase 55kmph -- x__y the of a",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain((0..300).map(|i| format!("doc {i} about rain {} and more words here", i % 7)))
        .collect();
        let n = texts.len();
        let shinglers = [
            Shingler::new(3, Unit::Word, ShingleHash::Xxh3, 0).unwrap(),
            Shingler::new(5, Unit::Word, ShingleHash::Xxh3, 0).unwrap().with_stopwords(["the", "of", "a"]),
            Shingler::new(4, Unit::Char, ShingleHash::Xxh3, 0).unwrap(),
            Shingler::new(2, Unit::Whitespace, ShingleHash::Xxh3, 0).unwrap(),
        ];
        let hashers = [MinHasher::oph(128, 1).unwrap(), MinHasher::multiply_shift(64, 5).unwrap()];
        for sh in &shinglers {
            let (mut want_k, mut want_n) = (vec![0u64; n], vec![0u64; n]);
            crate::exactkey::exact_keys_in(&texts, sh.unit(), &mut want_k, &mut want_n);
            for mh in &hashers {
                let p = mh.num_perm();
                let mut want = vec![0u32; n * p];
                signatures(mh, sh, &texts, &mut want);
                let (mut got, mut k, mut c) = (vec![0u32; n * p], vec![0u64; n], vec![0u64; n]);
                with_threads(Some(2), || signatures_keyed(mh, sh, &texts, &mut got, &mut k, &mut c)).unwrap();
                assert_eq!(got, want);
                assert_eq!(k, want_k);
                assert_eq!(c, want_n);
            }
        }
    }
}
