//! Text to index terms: the one tokeniser the index and every message go through.
//!
//! ```text
//! "Clean up my CSV-exports, it's urgent"
//!   NFKC + Unicode lowercase       "clean up my csv-exports, it's urgent"
//!   chunks (letters, digits, marks joined by - or _)
//!                                  clean · up · my · csv-exports · it · s · urgent
//!   words:  parts, stop words out, Porter stem     clean · csv · export · urgent
//!   wholes: a joined chunk, kept whole ("_" → "-")  csv-exports
//!   grams:  4-grams of each unstemmed word         ^cle clea lean ean$ ^csv csv$ ^exp …
//! ```
//!
//! Wholes let a message that names a skill (`deploy_checker`, `csv-cleaner`) match its name
//! exactly, on top of matching its parts. Grams are a small second chance for word forms the
//! stemmer does not fold and for names written solid (`keywordexplorer` shares grams with
//! "keyword"); they live in their own term space and are weighted low by the index.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use super::stem::stem_into;

/// Length of the character n-grams (boundaries `^` and `$` included).
pub const GRAM: usize = 4;

/// Marks a gram term, so grams never meet word terms (words hold no `#`).
const GRAM_PREFIX: char = '#';

/// One chunk of text: its parts in order (lowercase, unstemmed).
fn chunks(text: &str, mut each: impl FnMut(&[&str])) {
    let folded = fold(text);
    let mut parts: Vec<&str> = Vec::new();
    for chunk in folded.split(|c: char| !is_word_char(c) && c != '-' && c != '_') {
        parts.clear();
        parts.extend(chunk.split(['-', '_']).filter(|p| !p.is_empty()));
        if !parts.is_empty() {
            each(&parts);
        }
    }
}

/// NFKC, then Unicode lowercase (full mappings: `İ`, `ẞ` lowercase to more than one char).
pub fn fold(text: &str) -> String {
    // ASCII is its own NFKC form.
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.nfkc() {
        out.extend(c.to_lowercase());
    }
    out
}

/// Letters, digits and combining marks make words; everything else separates them (an
/// apostrophe too: "it's" is "it" and "s", both stop words).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            get_general_category(c),
            GeneralCategory::NonspacingMark
                | GeneralCategory::SpacingMark
                | GeneralCategory::EnclosingMark
        )
}

/// Calls `each` with every word term of `text`, in order: each part that is not a stop word,
/// stemmed, after the whole of a joined chunk (its parts joined with `-`).
pub fn for_each_term(text: &str, mut each: impl FnMut(&str)) {
    let mut whole = String::new();
    let mut buf = Vec::new();
    chunks(text, |parts| {
        if parts.len() > 1 {
            whole.clear();
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    whole.push('-');
                }
                whole.push_str(part);
            }
            each(&whole);
        }
        for part in parts {
            if !is_stop_word(part) {
                each(stem_into(part, &mut buf));
            }
        }
    });
}

/// The word terms of `text` (see [`for_each_term`]).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |t| out.push(t.to_string()));
    out
}

/// Calls `each` with the character [`GRAM`]-grams of each part of `text` that is not a stop
/// word, taken from the unstemmed word with `^` before and `$` after it (a word of up to two
/// characters is one gram). Grams start with `#`, which no word term holds.
pub fn for_each_gram(text: &str, mut each: impl FnMut(&str)) {
    let mut word: Vec<char> = Vec::new();
    let mut gram = String::new();
    chunks(text, |parts| {
        for part in parts.iter().filter(|p| !is_stop_word(p)) {
            word.clear();
            word.push('^');
            word.extend(part.chars());
            word.push('$');
            for window in word.windows(GRAM.min(word.len())) {
                gram.clear();
                gram.push(GRAM_PREFIX);
                gram.extend(window);
                each(&gram);
            }
        }
    });
}

/// The grams of `text` (see [`for_each_gram`]).
pub fn grams(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_gram(text, |g| out.push(g.to_string()));
    out
}

/// Whether a lowercase word is a stop word: English function words, and the words a request is
/// phrased with ("please", "need", "help", "tell") rather than what it is about.
pub fn is_stop_word(word: &str) -> bool {
    static SET: LazyLock<HashSet<&'static str, BuildHasherDefault<Fnv>>> =
        LazyLock::new(|| STOP_WORDS.iter().copied().collect());
    word.len() <= LONGEST_STOP_WORD && SET.contains(word)
}

const LONGEST_STOP_WORD: usize = 12;

/// FNV-1a: fast for short keys. Safe here because the set is fixed: input only looks words up,
/// it can never lengthen a probe chain.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h;
    }
}

/// The stop words, sorted and unique (a test checks).
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "able", "about", "above", "across", "after", "afterwards", "again", "against", "all",
    "almost", "alone", "along", "already", "also", "although", "always", "am", "among", "amongst",
    "an", "and", "another", "any", "anybody", "anyhow", "anyone", "anything", "anyway", "anywhere",
    "are", "around", "as", "assist", "assistance", "at", "be", "became", "because", "become",
    "becomes", "been", "before", "being", "below", "beside", "besides", "between", "beyond", "both",
    "but", "by", "can", "cannot", "cant", "could", "couldn", "couldnt", "d", "did", "didn", "didnt",
    "do", "does", "doesn", "doesnt", "doing", "don", "done", "dont", "down", "during", "each",
    "either", "else", "elsewhere", "enough", "etc", "even", "ever", "every", "everybody",
    "everyone", "everything", "everywhere", "except", "few", "for", "former", "formerly", "from",
    "further", "furthermore", "get", "getting", "give", "got", "had", "hadn", "hadnt", "has",
    "hasn", "hasnt", "have", "haven", "havent", "having", "he", "hello", "help", "helping", "helps",
    "hence", "her", "here", "hers", "herself", "hey", "hi", "him", "himself", "his", "how",
    "however", "i", "id", "ie", "if", "im", "in", "indeed", "instead", "into", "is", "isn", "isnt",
    "it", "its", "itself", "ive", "just", "know", "least", "less", "let", "like", "ll", "m", "many",
    "may", "maybe", "me", "meanwhile", "might", "mine", "more", "moreover", "most", "mostly",
    "much", "must", "my", "myself", "namely", "need", "needed", "needs", "neither", "never",
    "nevertheless", "no", "nobody", "none", "nor", "not", "nothing", "now", "nowhere", "o", "of",
    "off", "often", "ok", "okay", "on", "once", "one", "only", "onto", "or", "other", "others",
    "otherwise", "our", "ours", "ourselves", "out", "over", "own", "per", "perhaps", "please",
    "quite", "rather", "re", "really", "s", "same", "several", "shall", "she", "should", "shouldn",
    "shouldnt", "since", "so", "some", "somebody", "somehow", "someone", "something", "sometime",
    "sometimes", "somewhat", "somewhere", "still", "such", "sure", "t", "tell", "than", "thank",
    "thanks", "that", "thats", "the", "their", "theirs", "them", "themselves", "then", "there",
    "thereby", "therefore", "these", "they", "this", "those", "though", "through", "throughout",
    "thus", "to", "together", "too", "toward", "towards", "under", "until", "up", "upon", "us",
    "ve", "very", "via", "want", "wanted", "wants", "was", "wasn", "wasnt", "we", "well", "were",
    "weren", "werent", "what", "whatever", "when", "whenever", "where", "whereas", "wherever",
    "whether", "which", "while", "who", "whoever", "whole", "whom", "whose", "why", "will", "with",
    "within", "without", "won", "wont", "would", "wouldn", "wouldnt", "y", "yet", "you", "your",
    "youre", "yours", "yourself", "yourselves",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_and_unique() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| *w == fold(w)));
        assert!(
            STOP_WORDS
                .iter()
                .all(|w| w.len() <= LONGEST_STOP_WORD && is_stop_word(w))
        );
        assert!(!is_stop_word("csv") && !is_stop_word("") && !is_stop_word("somebodyelse"));
    }

    #[test]
    fn terms_table() {
        for (text, want) in [
            (
                "Clean up my CSV-exports, it's urgent",
                &["clean", "csv-exports", "csv", "export", "urgent"][..],
            ),
            ("deploy_checker", &["deploy-checker", "deploi", "checker"]),
            ("--csv--cleaner--", &["csv-cleaner", "csv", "cleaner"]),
            ("The PDF forms", &["pdf", "form"]),
            ("ＰＤＦ　Ｆｏｒｍｓ", &["pdf", "form"]),
            ("Größe ÉTÉ", &["größe", "été"]),
            ("İstanbul", &["i̇stanbul"]),
            ("d20 4.8173", &["d20", "4", "8173"]),
            ("naïve café", &["naïve", "café"]),
            ("日本語のテキスト", &["日本語のテキスト"]),
            ("what is it?", &[]),
            ("", &[]),
        ] {
            assert_eq!(terms(text), want, "{text:?}");
        }
    }

    #[test]
    fn a_name_and_its_spellings_meet() {
        let name = terms("csv-cleaner");
        for message in ["use csv_cleaner", "CSV-Cleaner please", "csv cleaner"] {
            let m = terms(message);
            assert!(
                name.iter().filter(|t| m.contains(t)).count() >= 2,
                "{message:?} → {m:?}"
            );
        }
        assert!(terms("run csv_cleaner").contains(&"csv-cleaner".to_string()));
    }

    #[test]
    fn marks_stay_inside_words() {
        // Devanagari vowel signs are spacing marks: the word is not cut at them.
        assert_eq!(terms("हिन्दी"), ["हिन्दी"]);
    }

    #[test]
    fn grams_table() {
        assert_eq!(grams("CSV"), ["#^csv", "#csv$"]);
        assert_eq!(grams("ab"), ["#^ab$"]);
        assert_eq!(grams("the x"), ["#^x$"]);
        assert_eq!(grams("café"), ["#^caf", "#café", "#afé$"]);
        assert!(grams("keywordexplorer").contains(&"#^key".to_string()));
    }
}
