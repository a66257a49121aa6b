//! Mixed-script and confusable words where a reader takes a name at a glance: the skill's
//! `name:` and every other `name:` of its frontmatter (declared scripts, parameters), its file
//! names, and the headings of its Markdown files.
//!
//! Two shapes, judged by Unicode Technical Standard #39 as the registry judges new names
//! ([`skillcat_core::lookalike`]):
//! - a word that mixes scripts (`pаypal` with a Cyrillic `а`), except the mixes UTS #39 calls
//!   highly restrictive (Latin with Han and Kana, `ocr-日本語`);
//! - a word of two or more letters, not ASCII, whose confusable skeleton is ASCII: it passes
//!   for an ASCII word (`ｐａｙ`, `𝐩𝐚𝐲`, or a Cyrillic `ур` among Latin words). A word wholly
//!   in another script that only happens to be made of lookalikes (a Russian `Сор`) is reported
//!   only among Latin words, where it deceives.
//!
//! Words wholly in another script (a Russian or Greek heading) are ordinary text.

use skillcat_core::lookalike::{mixed_scripts, skeleton};
use unicode_normalization::UnicodeNormalization;

use crate::rule::{Hit, RuleId};
use crate::text::Lines;

fn code(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// The ASCII a character passes for, when it passes for some.
fn passes_for(c: char) -> Option<String> {
    let s = skeleton(&c.to_string());
    (s.is_ascii() && !s.is_empty()).then_some(s)
}

/// What is deceptive in one word, if anything: the character offset in the word to point at,
/// and the message. `latin_context`: whether Latin words stand beside it.
fn judge(word: &str, latin_context: bool) -> Option<(usize, String)> {
    if let Some(scripts) = mixed_scripts(word) {
        // Point at the first character that is not of the word's first script: the first
        // non-ASCII one when the word starts in ASCII, else the first ASCII one.
        let first_ascii = word.starts_with(|c: char| c.is_ascii());
        let (i, c) = word
            .chars()
            .enumerate()
            .find(|&(_, c)| c.is_alphabetic() && c.is_ascii() != first_ascii)
            .unwrap_or((0, word.chars().next()?));
        let passes = passes_for(c)
            .filter(|_| !c.is_ascii())
            .map_or(String::new(), |a| format!(", which passes for '{a}'"));
        return Some((
            i,
            format!(
                "the word '{word}' mixes {} letters ({}{passes}): a name that looks like another is how a skill passes for a trusted one; write it in one script",
                scripts.join(" and "),
                code(c)
            ),
        ));
    }
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let as_ascii = skeleton(word);
    let compatibility = word.nfkc().ne(word.chars());
    if letters >= 2 && as_ascii.is_ascii() && (latin_context || compatibility) {
        let c = word.chars().find(|c| !c.is_ascii())?;
        return Some((
            0,
            format!(
                "the word '{word}' is made of letters that pass for the ASCII '{as_ascii}' ({} first): write it in ordinary letters if that is what it means",
                code(c)
            ),
        ));
    }
    None
}

/// The words of a text: runs of letters, digits and marks, with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !(c.is_alphanumeric() || is_mark(c)))
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// Combining marks: part of the word they sit in (`é` written as `e` and U+0301).
fn is_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{0483}'..='\u{0489}')
}

/// The findings of one phrase (a heading, a name) at byte `offset` of a text: one per
/// deceptive word.
fn phrase(text: &str, offset: usize, lines: &Lines<'_>, hits: &mut Vec<Hit>) {
    // A word with an ASCII letter in one script: Latin.
    let latin_context = words(text)
        .any(|(_, w)| w.chars().any(|c| c.is_ascii_alphabetic()) && mixed_scripts(w).is_none());
    for (at, word) in words(text) {
        if word.is_ascii() {
            continue;
        }
        if let Some((i, message)) = judge(word, latin_context) {
            let byte = word.char_indices().nth(i).map_or(0, |(b, _)| b);
            hits.push(Hit::at(
                RuleId::UnicodeConfusable,
                lines.position(offset + at + byte),
                message,
            ));
        }
    }
}

/// The findings in a Markdown text's headings (`#` lines outside fenced code) and, for a
/// skill's document, the values of its frontmatter's `name:` keys.
pub(crate) fn scan_text(text: &str, lines: &Lines<'_>, document: bool) -> Vec<Hit> {
    let mut hits = Vec::new();
    if text.is_ascii() {
        return hits;
    }
    let mut offset = 0;
    let mut in_frontmatter = false;
    let mut fence: Option<&str> = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        let start = offset;
        offset += line.len();
        if document && bare == "---" && (n == 0 || in_frontmatter) {
            in_frontmatter = n == 0;
            continue;
        }
        if in_frontmatter {
            let key = bare.trim_start().trim_start_matches("- ");
            if let Some(value) = key.strip_prefix("name:") {
                let at = start + (bare.len() - value.len());
                phrase(value, at, lines, &mut hits);
            }
            continue;
        }
        let trimmed = bare.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        if let Some(heading) = trimmed.strip_prefix('#') {
            let heading = heading.trim_start_matches('#');
            if heading.is_empty() || heading.starts_with([' ', '\t']) {
                let at = start + (bare.len() - heading.len());
                phrase(heading, at, lines, &mut hits);
            }
        }
    }
    hits
}

/// The findings of a file's path: each deceptive word of its names, as a finding of the whole
/// file (its column is no column of the file's text).
pub(crate) fn scan_path(path: &str) -> Vec<Hit> {
    let mut hits = Vec::new();
    if path.is_ascii() {
        return hits;
    }
    let lines = Lines::new(path);
    phrase(path, 0, &lines, &mut hits);
    for h in &mut hits {
        h.line = None;
        h.column = None;
        h.message = format!("in the file name: {}", h.message);
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(u32, u32, String)> {
        scan_text(text, &Lines::new(text), true)
            .into_iter()
            .map(|h| (h.line.unwrap(), h.column.unwrap(), h.message))
            .collect()
    }

    #[test]
    fn a_mixed_script_name_and_heading() {
        // `pаypal`: Cyrillic а (U+0430) in a Latin word.
        let doc = "---\nname: p\u{430}ypal-helper\ndescription: d\n---\n# Pay with p\u{430}ypal\n";
        let hits = found(doc);
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!((hits[0].0, hits[0].1), (2, 8));
        assert!(
            hits[0]
                .2
                .contains("mixes Latin and Cyrillic letters (U+0430, which passes for 'a')"),
            "{}",
            hits[0].2
        );
        assert_eq!((hits[1].0, hits[1].1), (5, 13));
    }

    #[test]
    fn declared_names_are_names_too() {
        let doc =
            "---\nname: ok\nscripts:\n  - name: d\u{435}ploy\n    path: scripts/x.sh\n---\nbody\n";
        let hits = found(doc);
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!((hits[0].0, hits[0].1), (4, 12));
    }

    #[test]
    fn whole_words_of_lookalikes_among_latin_words() {
        // A Cyrillic `ор` (о, р) in an English heading.
        let hits = found("# Set \u{443}\u{440} the project\n");
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!((hits[0].0, hits[0].1), (1, 7));
        assert!(
            hits[0].2.contains("pass for the ASCII 'yp' (U+0443 first)"),
            "{}",
            hits[0].2
        );
    }

    #[test]
    fn fullwidth_and_mathematical_letters() {
        let hits = found("## \u{FF50}\u{FF41}\u{FF59} now\n");
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert!(
            hits[0]
                .2
                .contains("pass for the ASCII 'pay' (U+FF50 first)"),
            "{}",
            hits[0].2
        );
        assert_eq!(found("# \u{1D429}ay\n").len(), 1);
    }

    #[test]
    fn ordinary_text_in_other_scripts_is_not_reported() {
        for text in [
            // Russian and Greek headings, wholly in their script.
            "# Описание навыка\n",
            "# Περιγραφή\n",
            // A Russian heading whose words are all lookalikes, but with no Latin word beside
            // them, is Russian.
            "# Сор\n",
            // A lone Greek letter among Latin words (`α-helix`), accents, combining marks.
            "# The α helix\n",
            "# Café résumé naïve\n",
            "# Cafe\u{301}\n",
            // Body text and code are not headings.
            "Pay with p\u{430}ypal\n",
            "```\n# p\u{430}ypal\n```\n",
            // A `#` with no space is no heading.
            "#p\u{430}ypal\n",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn file_names() {
        let hits = scan_path("references/p\u{430}ypal.md");
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].line, hits[0].column), (None, None));
        assert!(
            hits[0].message.starts_with("in the file name: the word"),
            "{}",
            hits[0].message
        );
        assert!(scan_path("references/описание.md").is_empty());
    }
}
