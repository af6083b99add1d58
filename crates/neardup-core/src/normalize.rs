//! Text normalisation: one definition, used by every tokeniser.
//!
//! `nfkc_lower` is Unicode NFKC followed by full lower-casing (Rust's `str::to_lowercase`,
//! which like Python's `str.lower` applies the SpecialCasing mappings and final sigma).
//! ASCII text, by far the common case, skips the Unicode tables entirely.

use std::borrow::Cow;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// NFKC, then lower-case.
pub fn nfkc_lower(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return ascii_lower(text);
    }
    let nfkc: Cow<'_, str> = match is_nfkc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        _ => Cow::Owned(text.nfkc().collect()),
    };
    Cow::Owned(nfkc.to_lowercase())
}

/// Lower-case only (the guide's `text.lower()`), without NFKC.
pub fn lower(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        ascii_lower(text)
    } else {
        Cow::Owned(text.to_lowercase())
    }
}

fn ascii_lower(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// Python's `str.isspace` for one character: Unicode White_Space plus the four ASCII
/// separators U+001C..U+001F, which `str.split()` also splits on.
#[inline]
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_fast_path_borrows() {
        assert!(matches!(nfkc_lower("already lower"), Cow::Borrowed(_)));
        assert_eq!(nfkc_lower("Heavy RAIN"), "heavy rain");
    }

    #[test]
    fn nfkc_folds_compatibility_forms() {
        // Full-width letters and the "ﬁ" ligature fold to plain ASCII.
        assert_eq!(nfkc_lower("ＨＥＬＬＯ ﬁne"), "hello fine");
        // Final sigma, as Python's str.lower gives it.
        assert_eq!(nfkc_lower("ΟΔΟΣ"), "οδος");
    }

    #[test]
    fn python_whitespace() {
        assert!(is_py_space('\u{1f}'));
        assert!(is_py_space('\u{3000}'));
        assert!(!is_py_space('\u{200b}'));
    }
}
