//! Keys of the exact pass: a 64-bit hash of a document's normalised tokens, in the unit its
//! shingles are made of.
//!
//! Two texts get the same key when they have the same tokens in the same order: with word
//! units (NFKC, lower-case, runs of Unicode `\w`, as [`crate::tokenize::Unit::Word`] defines
//! them) copies that differ only in case, spacing and punctuation; with whitespace or
//! character units, what those units keep (punctuation included). The same tokens make the
//! same shingles, so an exact copy's similarity is 1 under the run's own measure. A text
//! without any token gets the token count 0 (its key means nothing and must not be grouped).
use crate::tokenize::{tokenize, TokenStream, Unit};
use rayon::prelude::*;
use std::cell::RefCell;

/// Seed of the key hash (distinct from shingle hashing, so keys never look like shingle ids).
pub const KEY_SEED: u64 = 0x6e65_6172_6475_7021;

thread_local! {
    static STREAM: RefCell<TokenStream> = RefCell::new(TokenStream::default());
}

thread_local! {
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// ASCII fast path: for ASCII text, NFKC is the identity and `\w` is `[0-9A-Za-z_]`, so the
/// tokens joined by one space are built in one pass over the bytes (no token stream).
fn ascii_key(bytes: &[u8]) -> (u64, u64) {
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        // Branch-free: every byte is written (its lower-case form, or a space for a non-word
        // byte) and the write position only advances for a word byte or for the first
        // non-word byte after a word, so runs of separators become one space. The output is
        // never longer than the input (plus one byte of slack for the last write).
        if buf.len() < bytes.len() + 1 {
            buf.resize(bytes.len() + 1, 0);
        }
        let out = &mut buf[..];
        let (mut j, mut n, mut prev) = (0usize, 0u64, 0usize);
        for &b in bytes {
            let c = WORD[b as usize];
            let w = (c != 0) as usize;
            out[j] = c | (((w ^ 1) as u8) * b' ');
            n += (w & (prev ^ 1)) as u64;
            j += w | prev;
            prev = w;
        }
        if j > 0 && prev == 0 {
            j -= 1; // a trailing space
        }
        (xxhash_rust::xxh3::xxh3_64_with_seed(&out[..j], KEY_SEED), n)
    })
}

/// ASCII byte -> its lower-case form if it is a word byte (`[0-9A-Za-z_]`), else 0.
static WORD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 128 {
        let b = i as u8;
        if b.is_ascii_alphanumeric() || b == b'_' {
            t[i] = b.to_ascii_lowercase();
        }
        i += 1;
    }
    t
};

/// (key, number of tokens) of one text.
pub fn exact_key(text: &str) -> (u64, u64) {
    if text.is_ascii() {
        return ascii_key(text.as_bytes());
    }
    STREAM.with(|cell| {
        let mut ts = cell.borrow_mut();
        tokenize(Unit::Word, text, None, &mut ts);
        let n = ts.len() as u64;
        (xxhash_rust::xxh3::xxh3_64_with_seed(ts.text.as_bytes(), KEY_SEED), n)
    })
}

/// (key, number of tokens) of a text from its word tokens (no stop words dropped): what
/// [`exact_key`] gives for that text, without tokenising it again.
pub fn key_of(ts: &TokenStream) -> (u64, u64) {
    (xxhash_rust::xxh3::xxh3_64_with_seed(ts.text.as_bytes(), KEY_SEED), ts.len() as u64)
}

/// (key, number of tokens) of one text in `unit`'s tokens: [`exact_key`] for words.
pub fn exact_key_in(text: &str, unit: Unit) -> (u64, u64) {
    if unit == Unit::Word {
        return exact_key(text);
    }
    STREAM.with(|cell| {
        let mut ts = cell.borrow_mut();
        tokenize(unit, text, None, &mut ts);
        key_of(&ts)
    })
}

/// Keys and token counts of many texts (word tokens), in parallel (same answer for any thread
/// count).
pub fn exact_keys<S: AsRef<str> + Sync>(texts: &[S], keys: &mut [u64], ntokens: &mut [u64]) {
    exact_keys_in(texts, Unit::Word, keys, ntokens)
}

/// [`exact_keys`] in `unit`'s tokens.
pub fn exact_keys_in<S: AsRef<str> + Sync>(texts: &[S], unit: Unit, keys: &mut [u64], ntokens: &mut [u64]) {
    keys.par_iter_mut().zip(ntokens.par_iter_mut()).zip(texts.par_iter()).with_min_len(64).for_each(|((k, n), t)| {
        let (kk, nn) = exact_key_in(t.as_ref(), unit);
        *k = kk;
        *n = nn;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_spacing_punctuation_do_not_matter() {
        let a = exact_key("Heavy rain is likely over coastal Karnataka.");
        let b = exact_key("  heavy   RAIN is likely -- over coastal karnataka ");
        let c = exact_key("heavy rain is likely over coastal goa");
        assert_eq!(a, b);
        assert_ne!(a.0, c.0);
        assert_eq!(a.1, 7);
        assert_eq!(exact_key("... !!").1, 0);
    }

    #[test]
    fn whitespace_and_char_keys_keep_what_their_units_keep() {
        // "Rain," and "rain" are the same word but not the same whitespace token or characters
        let (a, b) = ("Heavy rain, likely", "heavy  RAIN likely");
        assert_eq!(exact_key_in(a, Unit::Word), exact_key_in(b, Unit::Word));
        assert_ne!(exact_key_in(a, Unit::Whitespace).0, exact_key_in(b, Unit::Whitespace).0);
        assert_ne!(exact_key_in(a, Unit::Char).0, exact_key_in(b, Unit::Char).0);
        // case and spacing still do not matter to them
        assert_eq!(exact_key_in("Rain,  likely", Unit::Whitespace), exact_key_in("rain, LIKELY ", Unit::Whitespace));
        assert_eq!(exact_key_in("Rain,  likely", Unit::Char), exact_key_in(" rain, LIKELY", Unit::Char));
        assert_eq!(exact_key_in("ab c", Unit::Char).1, 4); // a, b, space, c
        assert_eq!(exact_key_in("   ", Unit::Whitespace).1, 0);
    }

    #[test]
    fn ascii_fast_path_equals_tokeniser() {
        let texts = [
            "Heavy rain is likely over coastal Karnataka.",
            "  snake_case AND CamelCase 55kmph -- x__y  ",
            "",
            "!!",
            "a",
            "tab\tnew\nline\r\nend",
            "   ",
            "x",
            " x ",
            "..a..b..",
            "trailing space ",
        ];
        for t in texts {
            let mut ts = TokenStream::default();
            tokenize(Unit::Word, t, None, &mut ts);
            let want = (xxhash_rust::xxh3::xxh3_64_with_seed(ts.text.as_bytes(), KEY_SEED), ts.len() as u64);
            assert_eq!(ascii_key(t.as_bytes()), want, "{t:?}");
        }
    }

    #[test]
    fn batch_matches_single() {
        let texts = vec!["a b c"; 1000];
        let mut k = vec![0; 1000];
        let mut n = vec![0; 1000];
        exact_keys(&texts, &mut k, &mut n);
        assert!(k.iter().all(|&x| x == exact_key("a b c").0));
        assert!(n.iter().all(|&x| x == 3));
    }
}
