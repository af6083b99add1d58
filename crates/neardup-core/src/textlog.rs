//! Reading many texts from the index's append-only text log: each is `(offset, length,
//! CRC-32)` in one file. The index's verification reads tens of thousands per add; one call
//! (parallel positioned reads, checksums and UTF-8 checks) instead of a Python loop of
//! `os.pread` + `zlib.crc32` + `decode` each.

use rayon::prelude::*;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Why a text could not be read: which one (its position in the request) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextError {
    Io(usize, String),
    Truncated(usize),
    Checksum(usize),
    Utf8(usize),
}

/// The texts at `(offsets[i], lengths[i])` of `file`, each checked against `crcs[i]` (the
/// CRC-32 of zlib / IEEE 802.3) and decoded as UTF-8. The first failure (lowest index) is
/// returned when any text fails.
pub fn read_texts(file: &File, offsets: &[u64], lengths: &[u32], crcs: &[u32]) -> Result<Vec<String>, TextError> {
    assert!(offsets.len() == lengths.len() && lengths.len() == crcs.len(), "parallel arrays of different lengths");
    io_pool().install(|| read_all(file, offsets, lengths, crcs))
}

/// Reads wait on the disk, not the CPU: when the texts are not in the page cache (a day's add
/// reads ~35,000 scattered texts of a 3 GB log), a pool of many threads keeps many reads in
/// flight, where one thread per core waits on one read each (measured here: 2.4 s for those
/// reads on 2 threads, cold).
const IO_THREADS: usize = 16;

fn io_pool() -> std::sync::Arc<rayon::ThreadPool> {
    static POOL: crate::batch::ProcessPool = crate::batch::ProcessPool::new();
    POOL.get(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(IO_THREADS)
            .thread_name(|i| format!("neardup-io-{i}"))
            .build()
            .expect("a thread pool for reads")
    })
}

fn read_all(file: &File, offsets: &[u64], lengths: &[u32], crcs: &[u32]) -> Result<Vec<String>, TextError> {
    // A text said to end past the file's end is truncated, said before its buffer is allocated:
    // a damaged length (up to 4 GiB) allocated in full first, and a refused allocation ended
    // the process. (The log only grows while it is read; a shorter file is a cut one.)
    if offsets.is_empty() {
        return Ok(Vec::new());
    }
    let file_len = match file.metadata() {
        Ok(m) => m.len(),
        Err(e) => return Err(TextError::Io(0, e.to_string())),
    };
    let out: Vec<Result<String, TextError>> = (0..offsets.len())
        .into_par_iter()
        .with_min_len(8)
        .map(|i| {
            if offsets[i].checked_add(lengths[i] as u64).is_none_or(|end| end > file_len) {
                return Err(TextError::Truncated(i));
            }
            let mut buf: Vec<u8> = Vec::new();
            if buf.try_reserve_exact(lengths[i] as usize).is_err() {
                return Err(TextError::Io(i, format!("no memory for a text of {} bytes", lengths[i])));
            }
            buf.resize(lengths[i] as usize, 0);
            let mut got = 0usize;
            while got < buf.len() {
                match file.read_at(&mut buf[got..], offsets[i] + got as u64) {
                    Ok(0) => return Err(TextError::Truncated(i)),
                    Ok(k) => got += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(TextError::Io(i, e.to_string())),
                }
            }
            if crc32fast::hash(&buf) != crcs[i] {
                return Err(TextError::Checksum(i));
            }
            String::from_utf8(buf).map_err(|_| TextError::Utf8(i))
        })
        .collect();
    out.into_iter().collect()
}

/// Write `texts` (UTF-8) back to back into `file` from `offset` on (positioned writes; no
/// fsync) and return each one's length and CRC-32: the text log's side of an add.
pub fn write_texts<S: AsRef<str> + Sync>(
    file: &File,
    offset: u64,
    texts: &[S],
) -> std::io::Result<(Vec<u32>, Vec<u32>)> {
    let crcs: Vec<u32> = texts.par_iter().map(|t| crc32fast::hash(t.as_ref().as_bytes())).collect();
    let mut lens = Vec::with_capacity(texts.len());
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 22);
    let mut at = offset;
    for t in texts {
        let b = t.as_ref().as_bytes();
        if b.len() > u32::MAX as usize {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "a text of 4 GiB or more"));
        }
        lens.push(b.len() as u32);
        buf.extend_from_slice(b);
        if buf.len() >= 1 << 22 {
            file.write_all_at(&buf, at)?;
            at += buf.len() as u64;
            buf.clear();
        }
    }
    file.write_all_at(&buf, at)?;
    Ok((lens, crcs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_checks_and_reports_the_first_bad_text() {
        let path = std::env::temp_dir().join(format!("neardup-textlog-{}.dat", std::process::id()));
        let texts = ["first text", "", "drei — ünïcode", "last"];
        let mut f = File::create(&path).unwrap();
        let (mut offs, mut lens, mut crcs) = (vec![], vec![], vec![]);
        let mut at = 0u64;
        for t in texts {
            f.write_all(t.as_bytes()).unwrap();
            offs.push(at);
            lens.push(t.len() as u32);
            crcs.push(crc32fast::hash(t.as_bytes()));
            at += t.len() as u64;
        }
        drop(f);
        let f = File::open(&path).unwrap();
        assert_eq!(read_texts(&f, &offs, &lens, &crcs).unwrap(), texts.to_vec());
        // zlib's CRC-32 of b"first text", as Python's zlib.crc32 gives it
        assert_eq!(crcs[0], 0xB7FB_6FED);
        let mut bad = crcs.clone();
        bad[2] ^= 1;
        bad[3] ^= 1;
        assert_eq!(read_texts(&f, &offs, &lens, &bad), Err(TextError::Checksum(2)));
        let mut long = lens.clone();
        long[3] += 5;
        assert_eq!(read_texts(&f, &offs, &long, &crcs), Err(TextError::Truncated(3)));
        // a damaged length of ~4 GiB or an offset near 2^64: truncated, said without allocating
        // the buffer first (an allocation refused ended the process)
        let mut huge = lens.clone();
        huge[1] = u32::MAX;
        assert_eq!(read_texts(&f, &offs, &huge, &crcs), Err(TextError::Truncated(1)));
        let mut far = offs.clone();
        far[0] = u64::MAX - 2;
        assert_eq!(read_texts(&f, &far, &lens, &crcs), Err(TextError::Truncated(0)));
        assert_eq!(read_texts(&f, &[], &[], &[]), Ok(vec![]));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn written_texts_read_back() {
        let path = std::env::temp_dir().join(format!("neardup-textlog-w-{}.dat", std::process::id()));
        let f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        let big = "x".repeat(5 << 20); // crosses the 4 MiB write buffer
        let texts = ["garbage before".to_owned(), "ä text".to_owned(), big, String::new(), "end".to_owned()];
        let (l0, _) = write_texts(&f, 0, &texts[..1]).unwrap();
        let (lens, crcs) = write_texts(&f, 3, &texts[1..]).unwrap(); // overwrites from byte 3
        let mut offs = vec![3u64];
        for l in &lens[..lens.len() - 1] {
            offs.push(offs.last().unwrap() + *l as u64);
        }
        assert_eq!(read_texts(&f, &offs, &lens, &crcs).unwrap(), texts[1..].to_vec());
        assert_eq!(l0, vec![14]);
        std::fs::remove_file(&path).unwrap();
    }
}
