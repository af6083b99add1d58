//! Tokenisers. Each one appends tokens to a canonical stream: tokens joined by one space,
//! with the byte offset where each token starts. A k-shingle is then a plain slice of
//! that stream, so shingles are hashed without building a string per shingle.

use crate::normalize::{is_py_space, lower, nfkc_lower};
use regex::Regex;
use std::collections::HashSet;
use std::sync::OnceLock;

/// How text becomes tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// NFKC + lower-case; tokens are maximal runs of Unicode `\w` (UTS #18).
    Word,
    /// Lower-case; tokens are separated by whitespace (the guide's `text.lower().split()`).
    Whitespace,
    /// NFKC + lower-case, whitespace runs folded to one space; tokens are characters.
    Char,
}

impl Unit {
    pub fn parse(name: &str) -> crate::Result<Unit> {
        match name {
            "word" => Ok(Unit::Word),
            "whitespace" => Ok(Unit::Whitespace),
            "char" => Ok(Unit::Char),
            other => {
                crate::error::param(format!("unknown unit {other:?}: expected \"word\", \"whitespace\" or \"char\""))
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Word => "word",
            Unit::Whitespace => "whitespace",
            Unit::Char => "char",
        }
    }
}

/// Tokens of one document: `text` holds them joined by one space (for `Char`, the folded
/// text itself), `starts[i]..ends[i]` is token i.
#[derive(Debug, Default, Clone)]
pub struct TokenStream {
    pub text: String,
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
}

impl TokenStream {
    pub fn clear(&mut self) {
        self.text.clear();
        self.starts.clear();
        self.ends.clear();
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    fn push_word(&mut self, token: &str) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.starts.push(self.text.len() as u32);
        self.text.push_str(token);
        self.ends.push(self.text.len() as u32);
    }

    /// Bytes of tokens `i..j` joined by single spaces.
    #[inline]
    pub fn span(&self, i: usize, j: usize) -> &[u8] {
        &self.text.as_bytes()[self.starts[i] as usize..self.ends[j - 1] as usize]
    }
}

fn word_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\w+").expect("static regex"))
}

/// For each ASCII byte: its lower-case form if it is a word byte (`[0-9A-Za-z_]`, which is
/// exactly `\w` on ASCII), else 0.
const ASCII_WORD: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'_' {
            t[b] = c.to_ascii_lowercase();
        }
        b += 1;
    }
    t
};

/// Word tokens of ASCII text: NFKC is the identity on ASCII, so this is lower-casing and
/// splitting on non-word bytes in a single pass, writing the joined stream directly.
fn ascii_words(bytes: &[u8], stopwords: Option<&HashSet<String>>, out: &mut TokenStream) {
    let mut buf = std::mem::take(&mut out.text).into_bytes();
    buf.clear();
    buf.resize(bytes.len() + 1, 0);
    let mut w = 0usize; // bytes written
    let mut start = 0usize;
    let mut in_tok = false;
    for &b in bytes {
        let c = ASCII_WORD[(b & 0x7f) as usize];
        if c != 0 {
            if !in_tok {
                if w > 0 {
                    buf[w] = b' ';
                    w += 1;
                }
                start = w;
                in_tok = true;
            }
            buf[w] = c;
            w += 1;
        } else if in_tok {
            in_tok = false;
            w = end_token(&buf, start, w, stopwords, out);
        }
    }
    if in_tok {
        w = end_token(&buf, start, w, stopwords, out);
    }
    buf.truncate(w);
    // Only ASCII bytes were written.
    out.text = String::from_utf8(buf).expect("ASCII is UTF-8");
}

/// Close the token `start..w`: record it, or drop it (and its separator) if it is a stop
/// word. Returns the new write position.
#[inline]
fn end_token(buf: &[u8], start: usize, w: usize, stopwords: Option<&HashSet<String>>, out: &mut TokenStream) -> usize {
    if let Some(sw) = stopwords {
        let tok = std::str::from_utf8(&buf[start..w]).expect("ASCII is UTF-8");
        if sw.contains(tok) {
            return start.saturating_sub(1); // also remove the separating space
        }
    }
    out.starts.push(start as u32);
    out.ends.push(w as u32);
    w
}

/// Fill `out` with the tokens of `text`. `stopwords` (already normalised the same way)
/// are dropped before shingling.
pub fn tokenize(unit: Unit, text: &str, stopwords: Option<&HashSet<String>>, out: &mut TokenStream) {
    out.clear();
    let keep = |t: &str| stopwords.is_none_or(|s| !s.contains(t));
    match unit {
        Unit::Word => {
            // ASCII text (the common case) is lower-cased and split in one pass.
            if text.is_ascii() {
                #[cfg(target_arch = "x86_64")]
                if stopwords.is_none() && std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is present.
                    unsafe { crate::tokenize_simd::ascii_words(text.as_bytes(), out) };
                    return;
                }
                ascii_words(text.as_bytes(), stopwords, out);
                return;
            }
            let norm = nfkc_lower(text);
            for m in word_regex().find_iter(&norm) {
                if keep(m.as_str()) {
                    out.push_word(m.as_str());
                }
            }
        }
        Unit::Whitespace => {
            let norm = lower(text);
            for tok in norm.split(is_py_space).filter(|t| !t.is_empty()) {
                if keep(tok) {
                    out.push_word(tok);
                }
            }
        }
        Unit::Char => {
            let norm = nfkc_lower(text);
            let mut pending_space = false;
            for c in norm.chars() {
                if is_py_space(c) {
                    pending_space = !out.text.is_empty();
                    continue;
                }
                if pending_space {
                    push_char(out, ' ');
                    pending_space = false;
                }
                push_char(out, c);
            }
        }
    }
}

fn push_char(out: &mut TokenStream, c: char) {
    out.starts.push(out.text.len() as u32);
    out.text.push(c);
    out.ends.push(out.text.len() as u32);
}

/// Normalise a stop-word list the way `unit` normalises text, so that lookups match.
pub fn normalize_stopwords<'a>(unit: Unit, words: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let mut set = HashSet::new();
    let mut ts = TokenStream::default();
    for w in words {
        tokenize(unit, w, None, &mut ts);
        for i in 0..ts.len() {
            set.insert(std::str::from_utf8(ts.span(i, i + 1)).expect("utf8").to_owned());
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(unit: Unit, text: &str) -> Vec<String> {
        let mut ts = TokenStream::default();
        tokenize(unit, text, None, &mut ts);
        (0..ts.len()).map(|i| String::from_utf8(ts.span(i, i + 1).to_vec()).unwrap()).collect()
    }

    #[test]
    fn words_split_on_punctuation() {
        assert_eq!(toks(Unit::Word, "Also read: the FULL forecast!"), ["also", "read", "the", "full", "forecast"]);
        assert_eq!(toks(Unit::Word, "snake_case 55 kmph"), ["snake_case", "55", "kmph"]);
    }

    #[test]
    fn indic_words_stay_whole() {
        // Hindi: vowel signs (Mc/Mn) and virama (Mn) are \w, so words are not split.
        assert_eq!(toks(Unit::Word, "भारी बारिश की संभावना"), ["भारी", "बारिश", "की", "संभावना"]);
        // Kannada.
        assert_eq!(toks(Unit::Word, "ಕರಾವಳಿ ಕರ್ನಾಟಕ"), ["ಕರಾವಳಿ", "ಕರ್ನಾಟಕ"]);
    }

    #[test]
    fn whitespace_keeps_punctuation() {
        assert_eq!(toks(Unit::Whitespace, "  Rain,  is\tLIKELY\n"), ["rain,", "is", "likely"]);
    }

    #[test]
    fn chars_fold_spaces() {
        let mut ts = TokenStream::default();
        tokenize(Unit::Char, "  Ab \n\t c ", None, &mut ts);
        assert_eq!(ts.text, "ab c");
        assert_eq!(ts.len(), 4);
    }

    #[test]
    fn simd_and_scalar_ascii_tokenisers_agree() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut rng = crate::hash::SplitMix64(9);
            let alphabet = b"aZ_09 \t\n.,-'!Qz";
            for len in (0..300).chain([1000, 4096, 10_000]) {
                let text: String =
                    (0..len).map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize] as char).collect();
                let (mut a, mut b) = (TokenStream::default(), TokenStream::default());
                ascii_words(text.as_bytes(), None, &mut a);
                unsafe { crate::tokenize_simd::ascii_words(text.as_bytes(), &mut b) };
                assert_eq!((a.text, a.starts, a.ends), (b.text, b.starts, b.ends), "{text:?}");
            }
            // Long tokens (over the 32-byte blind copy) and tokens across chunk edges.
            let long = format!("{} x {}", "A".repeat(70), "b".repeat(33));
            let (mut a, mut b) = (TokenStream::default(), TokenStream::default());
            ascii_words(long.as_bytes(), None, &mut a);
            unsafe { crate::tokenize_simd::ascii_words(long.as_bytes(), &mut b) };
            assert_eq!(a.text, b.text);
        }
    }

    #[test]
    fn stopwords_dropped() {
        let sw = normalize_stopwords(Unit::Word, ["The", "of"]);
        let mut ts = TokenStream::default();
        tokenize(Unit::Word, "The end of the day", Some(&sw), &mut ts);
        assert_eq!(ts.text, "end day");
    }
}
