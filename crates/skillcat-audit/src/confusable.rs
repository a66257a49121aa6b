//! Mixed-script and confusable words where a reader takes a name at a glance: the skill's
//! `name:` and every other `name:` of its frontmatter (declared scripts, parameters), its file
//! names, and the headings of its Markdown files.
//!
//! Three shapes, each of Latin, Greek and Cyrillic (the scripts whose letters pass for one
//! another):
//! - a word that mixes letters of two of them (`pаypal` with a Cyrillic `а`);
//! - a word of two or more letters, wholly Greek or Cyrillic, every letter of which passes for
//!   a Latin one, among Latin words (`Sеt uр`, a Cyrillic `ор` in an English heading);
//! - a fullwidth or mathematical letter (`ｐａｙ`, `𝐩𝐚𝐲`), which passes for ASCII.
//!
//! Words wholly in another script (a Russian or Greek heading) are ordinary text.

use crate::rule::{Hit, RuleId};
use crate::text::Lines;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Script {
    Latin,
    Greek,
    Cyrillic,
}

impl Script {
    fn name(self) -> &'static str {
        match self {
            Script::Latin => "Latin",
            Script::Greek => "Greek",
            Script::Cyrillic => "Cyrillic",
        }
    }
}

/// The script of a letter, when it is one of the three.
fn script(c: char) -> Option<Script> {
    match c {
        'A'..='Z' | 'a'..='z' => Some(Script::Latin),
        '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}' if c.is_alphabetic() => {
            Some(Script::Latin)
        }
        '\u{0370}'..='\u{03FF}' | '\u{1F00}'..='\u{1FFF}' if c.is_alphabetic() => {
            Some(Script::Greek)
        }
        '\u{0400}'..='\u{052F}' | '\u{1C80}'..='\u{1C8F}' | '\u{A640}'..='\u{A69F}'
            if c.is_alphabetic() =>
        {
            Some(Script::Cyrillic)
        }
        _ => None,
    }
}

/// The Greek and Cyrillic letters that pass for a Latin one, with the letter they pass for.
const LOOKALIKES: &[(char, char)] = &[
    // Cyrillic.
    ('а', 'a'),
    ('в', 'B'),
    ('е', 'e'),
    ('к', 'k'),
    ('м', 'm'),
    ('н', 'H'),
    ('о', 'o'),
    ('р', 'p'),
    ('с', 'c'),
    ('т', 'T'),
    ('у', 'y'),
    ('х', 'x'),
    ('ѕ', 's'),
    ('і', 'i'),
    ('ј', 'j'),
    ('һ', 'h'),
    ('ԁ', 'd'),
    ('ԛ', 'q'),
    ('ԝ', 'w'),
    ('ӏ', 'l'),
    ('А', 'A'),
    ('В', 'B'),
    ('Е', 'E'),
    ('К', 'K'),
    ('М', 'M'),
    ('Н', 'H'),
    ('О', 'O'),
    ('Р', 'P'),
    ('С', 'C'),
    ('Т', 'T'),
    ('У', 'Y'),
    ('Х', 'X'),
    ('Ѕ', 'S'),
    ('І', 'I'),
    ('Ј', 'J'),
    // Greek.
    ('α', 'a'),
    ('ι', 'i'),
    ('κ', 'k'),
    ('ν', 'v'),
    ('ο', 'o'),
    ('ρ', 'p'),
    ('υ', 'u'),
    ('Α', 'A'),
    ('Β', 'B'),
    ('Ε', 'E'),
    ('Ζ', 'Z'),
    ('Η', 'H'),
    ('Ι', 'I'),
    ('Κ', 'K'),
    ('Μ', 'M'),
    ('Ν', 'N'),
    ('Ο', 'O'),
    ('Ρ', 'P'),
    ('Τ', 'T'),
    ('Υ', 'Y'),
    ('Χ', 'X'),
];

fn lookalike(c: char) -> Option<char> {
    LOOKALIKES.iter().find(|&&(l, _)| l == c).map(|&(_, a)| a)
}

/// The ASCII letter or digit a fullwidth form stands for; `None` for a mathematical
/// alphanumeric symbol (U+1D400–U+1D7FF), which passes for one too.
fn compatibility_form(c: char) -> Option<Option<char>> {
    match c {
        '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => {
            Some(char::from_u32(u32::from(c) - 0xFEE0))
        }
        '\u{1D400}'..='\u{1D7FF}' => Some(None),
        _ => None,
    }
}

fn code(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// What is deceptive in one word, if anything: the character offset in the word to point at,
/// and the message. `latin_context`: whether Latin words stand beside it (a whole-script
/// lookalike only deceives among them).
fn judge(word: &str, latin_context: bool) -> Option<(usize, String)> {
    if let Some((i, c)) = word
        .chars()
        .enumerate()
        .find(|&(_, c)| compatibility_form(c).is_some())
    {
        let passes = match compatibility_form(c).flatten() {
            Some(a) => format!("passes for '{a}'"),
            None => "is a mathematical letter that passes for an ordinary one".to_string(),
        };
        return Some((
            i,
            format!(
                "the word '{word}' uses {} which {passes}: write it in ordinary letters",
                code(c)
            ),
        ));
    }
    let scripts: Vec<(usize, char, Script)> = word
        .chars()
        .enumerate()
        .filter_map(|(i, c)| script(c).map(|s| (i, c, s)))
        .collect();
    let mut kinds: Vec<Script> = scripts.iter().map(|&(_, _, s)| s).collect();
    kinds.sort_unstable();
    kinds.dedup();
    if kinds.len() >= 2 {
        // Point at the first letter of a script other than the word's first one.
        let first = scripts[0].2;
        let &(i, c, s) = scripts.iter().find(|&&(_, _, s)| s != first)?;
        let passes = lookalike(c).map_or(String::new(), |a| format!(", which passes for '{a}'"));
        let names: Vec<&str> = kinds.iter().map(|s| s.name()).collect();
        return Some((
            i,
            format!(
                "the word '{word}' mixes {} letters ({} is {}{passes}): a name that looks like another is how a skill passes for a trusted one; write it in one script",
                names.join(" and "),
                code(c),
                s.name()
            ),
        ));
    }
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let foreign = matches!(kinds.as_slice(), [Script::Greek] | [Script::Cyrillic]);
    if latin_context && foreign && letters >= 2 && word.chars().all(|c| lookalike(c).is_some()) {
        let as_latin: String = word.chars().filter_map(lookalike).collect();
        return Some((
            0,
            format!(
                "the word '{word}' is written in {} letters that all pass for Latin ones ('{as_latin}'): write it in Latin letters if that is what it means",
                kinds[0].name()
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
    let latin_context = words(text).any(|(_, w)| {
        w.chars().filter_map(script).all(|s| s == Script::Latin)
            && w.chars().any(|c| script(c).is_some())
    });
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
            hits[0].2.contains(
                "mixes Latin and Cyrillic letters (U+0430 is Cyrillic, which passes for 'a')"
            ),
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
        assert!(hits[0].2.contains("('yp')"), "{}", hits[0].2);
    }

    #[test]
    fn fullwidth_and_mathematical_letters() {
        let hits = found("## \u{FF50}\u{FF41}\u{FF59} now\n");
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert!(
            hits[0].2.contains("U+FF50 which passes for 'p'"),
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
