//! Text to index terms: the one tokeniser the index and every message go through.
//!
//! ```text
//! "Clean up my CSV-exports, it's urgent"
//!   NFKC                           (full-width letters and digits become ASCII, ligatures split)
//!   chunks (letters, digits, marks joined by - or _)
//!                                  Clean · up · my · CSV-exports · it · s · urgent
//!   words:  parts lowercased, stop words out, base form, stem   clean · csv · export · urgent
//!   wholes: a joined chunk, kept whole ("_" → "-")              csv-exports
//!   sub-words: a part split where case or letter/digit change  SEOTool → seotool · seo · tool
//!   CJK:    runs of Han, kana or Hangul → character bigrams    数据清洗 → 数据 · 据清 · 清洗
//!   grams:  4-grams of each unstemmed word                      ^cle clea lean ean$ ^csv csv$ …
//! ```
//!
//! A word's base form comes first when it is an irregular form or a British spelling
//! (`children` → `child`, `colour` → `color`, `organising` → `organizing`), and
//! [`for_each_concept`] gives the synonym-group terms of a text (see the lexicon's tables).
//!
//! Wholes let a message that names a skill (`deploy_checker`, `csv-cleaner`) match its name
//! exactly, on top of matching its parts. Sub-words do the same for names written in camel case
//! or glued to a number (`GitHub`, `AI2sql`): the word is kept whole and its pieces are added.
//! Grams are a small second chance for word forms the stemmer does not fold and for names written
//! solid (`keywordexplorer` shares grams with "keyword"); they live in their own term space and
//! are weighted low by the index.
//!
//! Chinese and Japanese are written without spaces, so a run of CJK characters is not a word:
//! it is cut into overlapping pairs of characters (a lone character stays as it is), which lets
//! "清洗数据" in a message meet "数据清洗" in a description through 清洗 and 数据 without a
//! dictionary. Pairs are not stemmed, stopped or grammed.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use super::lexicon::{base_form, concept};
use super::stem::stem_into;

/// Length of the character n-grams (boundaries `^` and `$` included).
pub const GRAM: usize = 4;

/// Marks a gram term, so grams never meet word terms (words hold no `#`).
const GRAM_PREFIX: char = '#';

/// NFKC without case folding (ASCII is its own NFKC form).
fn normalize(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().collect())
    }
}

/// Calls `each` with the parts of every chunk of `text`, in order (NFKC, case kept).
fn chunks(text: &str, mut each: impl FnMut(&[&str])) {
    let text = normalize(text);
    let mut parts: Vec<&str> = Vec::new();
    for chunk in text.split(|c: char| !is_word_char(c) && c != '-' && c != '_') {
        parts.clear();
        parts.extend(chunk.split(['-', '_']).filter(|p| !p.is_empty()));
        if !parts.is_empty() {
            each(&parts);
        }
    }
}

/// NFKC, then Unicode lowercase (full mappings: `İ`, `ẞ` lowercase to more than one char).
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    fold_into(&normalize(text), &mut out);
    out
}

/// Lowercase of text already in NFKC, into `out` (cleared first).
fn fold_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
    } else {
        for c in text.chars() {
            out.extend(c.to_lowercase());
        }
    }
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

/// Whether `c` belongs to a script written without spaces between words that the tokeniser
/// cuts into character pairs: Han (CJK ideographs), Hiragana, Katakana, and Hangul (whose words
/// carry their particles: 파일을 meets 파일).
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{1100}'..='\u{11FF}'       // Hangul Jamo
        | '\u{2E80}'..='\u{2FDF}'     // CJK radicals, Kangxi radicals
        | '\u{3005}'..='\u{3007}'     // 々 〆 〇
        | '\u{3040}'..='\u{30FF}'     // Hiragana, Katakana
        | '\u{3130}'..='\u{318F}'     // Hangul compatibility Jamo
        | '\u{31F0}'..='\u{31FF}'     // Katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}'     // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'     // CJK unified ideographs
        | '\u{A960}'..='\u{A97F}'     // Hangul Jamo extended A
        | '\u{AC00}'..='\u{D7FF}'     // Hangul syllables, Jamo extended B
        | '\u{F900}'..='\u{FAFF}'     // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FFDC}'     // half-width Katakana and Hangul
        | '\u{20000}'..='\u{3134F}'   // CJK extensions B to G
    )
}

/// Splits `part` into runs of CJK and of other characters: `f(run, is_cjk)`.
fn script_runs(part: &str, mut f: impl FnMut(&str, bool)) {
    let mut start = 0;
    let mut current: Option<bool> = None;
    for (i, c) in part.char_indices() {
        let cjk = is_cjk(c);
        match current {
            Some(was) if was != cjk => {
                f(&part[start..i], was);
                start = i;
            }
            _ => {}
        }
        current = Some(cjk);
    }
    if let Some(was) = current {
        f(&part[start..], was);
    }
}

/// Calls `each` with the pairs of consecutive characters of a CJK run (a run of one character:
/// that character).
fn for_each_pair(run: &str, pair: &mut String, mut each: impl FnMut(&str)) {
    let mut chars = run.chars();
    let Some(mut prev) = chars.next() else {
        return;
    };
    let mut paired = false;
    for c in chars {
        pair.clear();
        pair.push(prev);
        pair.push(c);
        each(pair);
        prev = c;
        paired = true;
    }
    if !paired {
        each(run);
    }
}

/// Calls `each` with the pieces of a word split where the case or the kind of character
/// changes: lower to upper (`csvCleaner` → csv, Cleaner), letter to digit and back (`AI2sql`
/// → AI, 2, sql), and before the last capital of a run followed by lowercase (`SEOTool` → SEO,
/// Tool; but `PDFs` stays whole). Nothing is called for a word that does not split.
pub fn for_each_sub_word(word: &str, mut each: impl FnMut(&str)) {
    let mut chars = word.char_indices().peekable();
    let mut prev: Option<char> = None;
    let mut start = 0;
    let mut split = false;
    while let Some((i, cur)) = chars.next() {
        if let Some(p) = prev {
            let mut ahead = chars.clone();
            let next = ahead.next().map(|(_, c)| c);
            let plural = next == Some('s') && ahead.next().is_none();
            let cut = (p.is_lowercase() && cur.is_uppercase())
                || (p.is_alphabetic() && cur.is_numeric())
                || (p.is_numeric() && cur.is_alphabetic())
                || (p.is_uppercase()
                    && cur.is_uppercase()
                    && next.is_some_and(char::is_lowercase)
                    && !plural);
            if cut {
                each(&word[start..i]);
                start = i;
                split = true;
            }
        }
        prev = Some(cur);
    }
    if split {
        each(&word[start..]);
    }
}

/// Reusable buffers of the term walk.
#[derive(Default)]
struct Scratch {
    lower: String,
    piece: String,
    stem: Vec<u8>,
}

/// The terms of one word without CJK characters (case kept): the word lowercased and stemmed
/// unless a stop word, then its sub-words the same way.
fn word_terms(word: &str, s: &mut Scratch, each: &mut impl FnMut(&str)) {
    fold_into(word, &mut s.lower);
    stem_word(&s.lower, &mut s.stem, each);
    let (piece, stem) = (&mut s.piece, &mut s.stem);
    for_each_sub_word(word, |sub| {
        fold_into(sub, piece);
        stem_word(piece, stem, each);
    });
}

/// The stem of a lowercase word unless it is a stop word, after its base form (an irregular
/// form or a British spelling, from the tokeniser's lexicon).
fn stem_word(lower: &str, stem: &mut Vec<u8>, each: &mut impl FnMut(&str)) {
    if is_stop_word(lower) {
        return;
    }
    match base_form(lower) {
        Some(base) if !is_stop_word(&base) => each(stem_into(&base, stem)),
        Some(_) => {}
        None => each(stem_into(lower, stem)),
    }
}

/// Calls `each` with the concept term of every word of `text` that belongs to a synonym group
/// (the 113 groups of `docs/matching.md`): `~` and the group's number, a term space of its own.
pub fn for_each_concept(text: &str, mut each: impl FnMut(&str)) {
    let mut term = String::new();
    for_each_term(text, |t| {
        if let Some(c) = concept_term(t, &mut term) {
            each(c);
        }
    });
}

/// The concept term of one word term of [`for_each_term`], written into `buf`, when the word
/// belongs to a synonym group.
pub fn concept_term<'b>(term: &str, buf: &'b mut String) -> Option<&'b str> {
    let id = concept(term)?;
    buf.clear();
    buf.push(CONCEPT_PREFIX);
    buf.push_str(itoa(id, &mut [0; 5]));
    Some(buf)
}

/// Marks a concept term (words hold no `~`).
const CONCEPT_PREFIX: char = '~';

/// The decimal digits of `n`, without allocating.
fn itoa(mut n: u16, buf: &mut [u8; 5]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[at..]).expect("ASCII digits")
}

/// Calls `each` with every word term of `text`, in order: the whole of a joined chunk (its
/// parts lowercased and joined with `-`), then for each part its stemmed word unless a stop word
/// and its sub-words; CJK runs give character pairs instead.
pub fn for_each_term(text: &str, mut each: impl FnMut(&str)) {
    let mut whole = String::new();
    let mut s = Scratch::default();
    chunks(text, |parts| {
        if parts.len() > 1 {
            whole.clear();
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    whole.push('-');
                }
                fold_into(part, &mut s.lower);
                whole.push_str(&s.lower);
            }
            each(&whole);
        }
        for part in parts {
            if part.is_ascii() || !part.chars().any(is_cjk) {
                word_terms(part, &mut s, &mut each);
                continue;
            }
            script_runs(part, |run, cjk| {
                if cjk {
                    for_each_pair(run, &mut s.piece, &mut each);
                } else {
                    word_terms(run, &mut s, &mut each);
                }
            });
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
/// word, taken from the unstemmed lowercase word with `^` before and `$` after it (a word of up
/// to two characters is one gram). CJK runs have no grams (their pairs are already character
/// grams). Grams start with `#`, which no word term holds.
pub fn for_each_gram(text: &str, mut each: impl FnMut(&str)) {
    let mut lower = String::new();
    let mut word: Vec<char> = Vec::new();
    let mut gram = String::new();
    let mut grams_of = |run: &str| {
        fold_into(run, &mut lower);
        if is_stop_word(&lower) {
            return;
        }
        word.clear();
        word.push('^');
        word.extend(lower.chars());
        word.push('$');
        for window in word.windows(GRAM.min(word.len())) {
            gram.clear();
            gram.push(GRAM_PREFIX);
            gram.extend(window);
            each(&gram);
        }
    };
    chunks(text, |parts| {
        for part in parts {
            if part.is_ascii() || !part.chars().any(is_cjk) {
                grams_of(part);
            } else {
                script_runs(part, |run, cjk| {
                    if !cjk {
                        grams_of(run);
                    }
                });
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

/// Whether a lowercase word is a stop word: English function words, the words a request is
/// phrased with ("please", "need", "help", "tell", "provide", "detailed", "specific") rather
/// than what it is about, and the generic verbs of a tool's description ("use", "allow",
/// "offer").
pub fn is_stop_word(word: &str) -> bool {
    static SET: LazyLock<HashSet<&'static str, BuildHasherDefault<Fnv>>> =
        LazyLock::new(|| STOP_WORDS.iter().copied().collect());
    word.len() <= LONGEST_STOP_WORD && SET.contains(word)
}

const LONGEST_STOP_WORD: usize = 13;

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
    "allow", "allows", "almost", "alone", "along", "already", "also", "although", "always", "am",
    "among", "amongst", "an", "and", "another", "any", "anybody", "anyhow", "anyone", "anything",
    "anyway", "anywhere", "are", "around", "as", "assist", "assistance", "at", "be", "became",
    "because", "become", "becomes", "been", "before", "being", "below", "beside", "besides",
    "between", "beyond", "both", "but", "by", "can", "cannot", "cant", "comprehensive", "could",
    "couldn", "couldnt", "d", "detail", "detailed", "details", "did", "didn", "didnt", "do", "does",
    "doesn", "doesnt", "doing", "don", "done", "dont", "down", "during", "each", "either", "else",
    "elsewhere", "enable", "enables", "enough", "etc", "even", "ever", "every", "everybody",
    "everyone", "everything", "everywhere", "except", "few", "for", "former", "formerly", "from",
    "further", "furthermore", "get", "getting", "give", "got", "had", "hadn", "hadnt", "has",
    "hasn", "hasnt", "have", "haven", "havent", "having", "he", "hello", "help", "helping", "helps",
    "hence", "her", "here", "hers", "herself", "hey", "hi", "him", "himself", "his", "how",
    "however", "i", "id", "ie", "if", "im", "in", "include", "includes", "including", "indeed",
    "info", "information", "instead", "into", "is", "isn", "isnt", "it", "its", "itself", "ive",
    "just", "know", "least", "less", "let", "like", "ll", "look", "looking", "m", "many", "may",
    "maybe", "me", "meanwhile", "might", "mine", "more", "moreover", "most", "mostly", "much",
    "must", "my", "myself", "namely", "need", "needed", "needs", "neither", "never", "nevertheless",
    "no", "nobody", "none", "nor", "not", "nothing", "now", "nowhere", "o", "of", "off", "offer",
    "offers", "often", "ok", "okay", "on", "once", "one", "only", "onto", "or", "other", "others",
    "otherwise", "our", "ours", "ourselves", "out", "over", "own", "particular", "particularly",
    "per", "perhaps", "please", "provide", "provided", "provides", "providing", "quite", "rather",
    "re", "really", "regarding", "related", "s", "same", "several", "shall", "she", "should",
    "shouldn", "shouldnt", "since", "so", "some", "somebody", "somehow", "someone", "something",
    "sometime", "sometimes", "somewhat", "somewhere", "specific", "specifically", "still", "such",
    "sure", "t", "tell", "than", "thank", "thanks", "that", "thats", "the", "their", "theirs",
    "them", "themselves", "then", "there", "thereby", "therefore", "these", "they", "this", "those",
    "though", "through", "throughout", "thus", "to", "together", "too", "toward", "towards",
    "under", "until", "up", "upon", "us", "use", "used", "using", "various", "ve", "very", "via",
    "want", "wanted", "wants", "was", "wasn", "wasnt", "we", "well", "were", "weren", "werent",
    "what", "whatever", "when", "whenever", "where", "whereas", "wherever", "whether", "which",
    "while", "who", "whoever", "whole", "whom", "whose", "why", "will", "with", "within", "without",
    "won", "wont", "would", "wouldn", "wouldnt", "y", "yet", "you", "your", "youre", "yours",
    "yourself", "yourselves",
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
            ("d20 4.8173", &["d20", "20", "4", "8173"]),
            ("naïve café", &["naïve", "café"]),
            (
                "日本語のテキスト",
                &["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"],
            ),
            ("SEOTool", &["seotool", "seo", "tool"]),
            ("csv文件", &["csv", "文件"]),
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
    fn sub_words_table() {
        let split = |w: &str| {
            let mut out = Vec::new();
            for_each_sub_word(w, |s| out.push(s.to_string()));
            out
        };
        for (word, want) in [
            ("csvCleaner", &["csv", "Cleaner"][..]),
            ("SEOTool", &["SEO", "Tool"]),
            ("NASATool", &["NASA", "Tool"]),
            ("AI2sql", &["AI", "2", "sql"]),
            ("GitHub", &["Git", "Hub"]),
            ("AIApp", &["AI", "App"]),
            ("PDFs", &[]),
            ("URLs", &[]),
            ("csv", &[]),
            ("CSV", &[]),
            ("Csv", &[]),
            ("", &[]),
            ("ÉtéHiver", &["Été", "Hiver"]),
        ] {
            assert_eq!(split(word), want, "{word:?}");
        }
        // The whole word is kept as well as its pieces, so a message writing it solid still
        // meets it.
        assert_eq!(terms("GitHub"), ["github", "git", "hub"]);
        assert_eq!(terms("iPhone"), ["iphon", "phone"]);
    }

    #[test]
    fn cjk_runs_become_pairs() {
        assert_eq!(terms("数据清洗"), ["数据", "据清", "清洗"]);
        assert_eq!(terms("表"), ["表"]);
        assert_eq!(terms("파일을"), ["파일", "일을"]);
        // Mixed with Latin inside one chunk: each run on its own terms.
        assert_eq!(terms("PDF表单"), ["pdf", "表单"]);
        // Full-width punctuation separates.
        assert_eq!(terms("清洗、数据"), ["清洗", "数据"]);
        assert!(grams("数据清洗").is_empty());
        assert_eq!(grams("PDF表单"), ["#^pdf", "#pdf$"]);
        assert!(is_cjk('漢') && is_cjk('か') && is_cjk('カ') && is_cjk('한'));
        assert!(!is_cjk('a') && !is_cjk('é') && !is_cjk('、'));
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
