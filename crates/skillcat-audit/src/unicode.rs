//! Hidden and deceptive Unicode in a text file, by Unicode property rather than by list.
//!
//! Every character is classed from the Unicode Character Database (the `icu_properties`
//! crate's compiled copy; [`crate::chars`]): `Bidi_Control`, the tag block,
//! `Variation_Selector`, `Default_Ignorable_Code_Point`, general category `Cf`, `Zl`, `Zp`.
//! What is invisible is reported unless Unicode itself defines the sequence it stands in:
//!
//! - an RGI emoji tag sequence (U+1F3F4, the tags of `gbeng`, `gbsct` or `gbwls`, U+E007F): the
//!   only three in `emoji-sequences.txt`; any other run of tags, after U+1F3F4 or not, is
//!   smuggled text;
//! - a standardized variation sequence: VS15/VS16 after a character with the `Emoji` property
//!   (emoji and text presentation), U+FE00–U+FE02 after the CJK unified ideographs that have a
//!   CJK compatibility variant (from the `unicode-normalization` crate's copy of
//!   `StandardizedVariants.txt`), and the small tables below; one selector per base, never a
//!   run;
//! - a zero-width joiner inside an emoji ZWJ sequence, and a joiner or non-joiner where it
//!   changes how two letters of one script are drawn (beside a virama; between letters that
//!   join cursively);
//! - a byte-order mark at the very start of a file.
//!
//! The same classing serves [`escape_hidden`]: what would be reported is what a terminal is
//! shown escaped.

use icu_properties::props::{Emoji, EmojiModifier, ExtendedPictographic, Script};
use icu_properties::{CodePointMapData, CodePointSetData};

use crate::chars::{Kind, kind};
use crate::rule::{Hit, RuleId};
use crate::text::Lines;

/// The RGI emoji tag sequences: U+1F3F4, these tags spelled in U+E0020–U+E007E, U+E007F.
/// Source: Unicode emoji data `emoji-sequences.txt` (UTS #51), `RGI_Emoji_Tag_Sequence`, the
/// same three since Emoji 5.0 and through 16.0.
const RGI_TAG_SEQUENCES: &[&str] = &["gbeng", "gbsct", "gbwls"];

/// How many characters after `text[at..]`'s U+1F3F4 make an RGI tag sequence with it (the tags
/// and the cancel tag), or 0.
fn rgi_flag_tags(rest: &str) -> usize {
    for spec in RGI_TAG_SEQUENCES {
        let mut chars = rest.chars();
        let spelled = spec
            .chars()
            .all(|s| chars.next() == char::from_u32(0xE0000 + u32::from(s)));
        if spelled && chars.next() == Some('\u{E007F}') {
            return spec.len() + 1;
        }
    }
    0
}

/// Standardized variation sequences other than the emoji and CJK compatibility ones: (first
/// base, last base, first selector, last selector). Source: `StandardizedVariants.txt`
/// (Unicode 16.0), by hand and by range: the bases of each script's sequences lie in these
/// ranges and use these selectors; a base of a range that has no sequence of its own is
/// accepted too (the file lists, for Mongolian and Myanmar, most letters of the block).
const STANDARDIZED: &[(u32, u32, u32, u32)] = &[
    // DIGIT ZERO, short diagonal stroke form.
    (0x0030, 0x0030, 0xFE00, 0xFE00),
    // Mathematical operators with serifs, strokes, slants: FE00 only.
    (0x2205, 0x2205, 0xFE00, 0xFE00),
    (0x2229, 0x222A, 0xFE00, 0xFE00),
    (0x2268, 0x2273, 0xFE00, 0xFE00),
    (0x228A, 0x228B, 0xFE00, 0xFE00),
    (0x2293, 0x2297, 0xFE00, 0xFE00),
    (0x229C, 0x229C, 0xFE00, 0xFE00),
    (0x22DA, 0x22DB, 0xFE00, 0xFE00),
    (0x22EF, 0x22EF, 0xFE00, 0xFE00),
    (0x2A3C, 0x2A3D, 0xFE00, 0xFE00),
    (0x2A9D, 0x2A9E, 0xFE00, 0xFE00),
    (0x2AAC, 0x2AAD, 0xFE00, 0xFE00),
    (0x2ACB, 0x2ACC, 0xFE00, 0xFE00),
    // Mongolian letters with the free variation selectors FVS1–FVS4.
    (0x1820, 0x18AA, 0x180B, 0x180D),
    (0x1820, 0x18AA, 0x180F, 0x180F),
    // Myanmar (and its extensions): dotted forms.
    (0x1000, 0x109F, 0xFE00, 0xFE00),
    (0xA9E0, 0xA9FF, 0xFE00, 0xFE00),
    (0xAA60, 0xAA7F, 0xFE00, 0xFE00),
    // Phags-pa reversed and shaped forms.
    (0xA840, 0xA877, 0xFE00, 0xFE01),
    // Manichaean letters.
    (0x10AC0, 0x10AF6, 0xFE00, 0xFE00),
];

/// The CJK unified ideographs that have a compatibility variant, with its selector: every CJK
/// compatibility ideograph's standardized variation sequence, computed once.
fn cjk_variants() -> &'static std::collections::BTreeSet<(char, char)> {
    use unicode_normalization::char::decompose_cjk_compat_variants;
    static SET: std::sync::OnceLock<std::collections::BTreeSet<(char, char)>> =
        std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut set = std::collections::BTreeSet::new();
        for c in (0xF900..=0xFAFF).chain(0x2F800..=0x2FA1F) {
            let Some(c) = char::from_u32(c) else { continue };
            let mut parts = Vec::new();
            decompose_cjk_compat_variants(c, |p| parts.push(p));
            if let [base, vs] = parts[..]
                && ('\u{FE00}'..='\u{FE0F}').contains(&vs)
            {
                set.insert((base, vs));
            }
        }
        set
    })
}

/// Whether `base` then `vs` is a standardized variation sequence.
fn standardized(base: char, vs: char) -> bool {
    if matches!(vs, '\u{FE0E}' | '\u{FE0F}') {
        return CodePointSetData::new::<Emoji>().contains(base);
    }
    let (b, v) = (u32::from(base), u32::from(vs));
    STANDARDIZED
        .iter()
        .any(|&(b0, b1, v0, v1)| (b0..=b1).contains(&b) && (v0..=v1).contains(&v))
        || cjk_variants().contains(&(base, vs))
}

/// Whether a zero-width joiner at this place joins an emoji ZWJ sequence: after an emoji (or
/// its modifier, or its VS16), before an emoji.
fn joins_emoji(before: Option<char>, after: Option<char>) -> bool {
    let pictographic = |c: char| {
        CodePointSetData::new::<ExtendedPictographic>().contains(c)
            || CodePointSetData::new::<EmojiModifier>().contains(c)
    };
    before.is_some_and(|c| c == '\u{FE0F}' || pictographic(c))
        && after.is_some_and(|c| pictographic(c) || CodePointSetData::new::<Emoji>().contains(c))
}

/// Whether a joiner (`zwnj` false) or a non-joiner sits where it changes what is drawn, between
/// two letters of one script: in a script of conjuncts, beside a virama (a Devanagari half
/// form, the eyelash ra: `Indic_Syllabic_Category` Virama or Invisible_Stacker); in a script
/// that joins cursively (`Joining_Type`, Arabic, Syriac, Mongolian, …), a non-joiner between
/// two letters that would join (the one before joins on its left, the one after on its right)
/// and a joiner beside one that joins. `base` is the last character before that is not a
/// transparent mark (a vowel sign sits between a letter and its joiner). Anywhere else (Latin,
/// Cyrillic, Han, …) it changes nothing drawn and only carries bits.
fn shapes(before: Option<char>, base: Option<char>, after: Option<char>, zwnj: bool) -> bool {
    use icu_properties::props::{IndicSyllabicCategory as Insc, JoiningType as Jt};
    let (Some(before), Some(base), Some(after)) = (before, base, after) else {
        return false;
    };
    let scripts = CodePointMapData::<Script>::new();
    if before.is_ascii() || scripts.get(base) != scripts.get(after) {
        return false;
    }
    let insc = CodePointMapData::<Insc>::new();
    let virama = |c: char| matches!(insc.get(c), Insc::Virama | Insc::InvisibleStacker);
    if virama(before) || virama(after) {
        return true;
    }
    let jt = CodePointMapData::<Jt>::new();
    let joins_left = matches!(
        jt.get(base),
        Jt::DualJoining | Jt::LeftJoining | Jt::JoinCausing
    );
    let joins_right = matches!(
        jt.get(after),
        Jt::DualJoining | Jt::RightJoining | Jt::JoinCausing
    );
    if zwnj {
        joins_left && joins_right
    } else {
        joins_left || joins_right
    }
}

/// Each reported character: its byte offset, itself and its rule, in order.
fn reported(text: &str) -> Vec<(usize, char, RuleId)> {
    let mut out = Vec::new();
    if text.is_ascii() {
        return out;
    }
    let mut prev: Option<char> = None;
    // The last character before that is not a transparent mark: what a joiner joins.
    let mut base: Option<char> = None;
    // Characters still to pass as part of an RGI tag sequence.
    let mut flag_left = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let k = kind(c);
        let rule = match k {
            Kind::Tag if flag_left > 0 => {
                flag_left -= 1;
                None
            }
            Kind::Tag => Some(RuleId::UnicodeTagCharacter),
            Kind::Bidi => Some(RuleId::UnicodeBidiControl),
            Kind::Invisible if c == '\u{FEFF}' && at == 0 => None,
            Kind::Invisible | Kind::BidiMark => Some(RuleId::UnicodeInvisible),
            Kind::Joiner if c == '\u{200D}' && joins_emoji(prev, next) => None,
            Kind::Joiner if shapes(prev, base, next, c == '\u{200C}') => None,
            Kind::Joiner => Some(RuleId::UnicodeInvisible),
            // The base is the character before, itself visible: a selector after a selector
            // (a run) has none.
            Kind::Selector
                if prev.is_some_and(|p| kind(p) == Kind::Other && standardized(p, c)) =>
            {
                None
            }
            Kind::Selector => Some(RuleId::UnicodeInvisible),
            Kind::Other => None,
        };
        if c == '\u{1F3F4}' {
            flag_left = rgi_flag_tags(&text[at + c.len_utf8()..]);
        } else if k != Kind::Tag {
            flag_left = 0;
        }
        if let Some(rule) = rule {
            out.push((at, c, rule));
        }
        // A selector that made a sequence is part of its base: a joiner after it sees the
        // emoji's VS16.
        prev = Some(c);
        if CodePointMapData::<icu_properties::props::JoiningType>::new().get(c)
            != icu_properties::props::JoiningType::Transparent
        {
            base = Some(c);
        }
    }
    out
}

/// The hits of one text: one for each run of adjacent characters of one rule.
pub(crate) fn scan(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    // The open run: its rule, where it starts, where it ends and the characters in it.
    let mut run: Option<(RuleId, usize, usize, Vec<char>)> = None;
    for (at, c, rule) in reported(text) {
        match &mut run {
            Some((open, _, end, found)) if *open == rule && *end == at => {
                found.push(c);
                *end = at + c.len_utf8();
            }
            _ => {
                if let Some((r, start, _, found)) = run.take() {
                    hits.push(hit((r, start, found), lines));
                }
                run = Some((rule, at, at + c.len_utf8(), vec![c]));
            }
        }
    }
    if let Some((r, start, _, found)) = run {
        hits.push(hit((r, start, found), lines));
    }
    hits
}

/// Text from a skill or a store as it is shown to a person (a terminal, a warning, a hint):
/// control characters written `\u001b` (none can drive the terminal) and every character the
/// rules above class as hidden written `\u{202e}`, so that what a person reads is what a model
/// reads. JSON and pipes take the text exact; this is for people only.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match skillcat_core::prompt::escape_controls(text) {
        std::borrow::Cow::Borrowed(t) => escape_hidden(t),
        std::borrow::Cow::Owned(t) => std::borrow::Cow::Owned(escape_hidden(&t).into_owned()),
    }
}

/// `text` with every character the rules above would report written `\u{202e}` (so an
/// allowed emoji, flag or joined word is shown as it is, and nothing hidden is), and every
/// other control character but line feed, tab and the carriage return of a CRLF written
/// `\u{1b}`: the text of a skill as a terminal may be shown it.
pub fn escape_hidden(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = reported(text);
    let bytes = text.as_bytes();
    let control = |at: usize, c: char| {
        c.is_control()
            && c != '\n'
            && c != '\t'
            && !(c == '\r' && bytes.get(at + 1) == Some(&b'\n'))
    };
    if hidden.is_empty() && !text.char_indices().any(|(at, c)| control(at, c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16 * hidden.len());
    let mut hidden = hidden.into_iter().peekable();
    for (at, c) in text.char_indices() {
        let is_hidden = hidden.next_if(|&(h, _, _)| h == at).is_some();
        if is_hidden || control(at, c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn hit((rule, at, found): (RuleId, usize, Vec<char>), lines: &Lines<'_>) -> Hit {
    let mut names: Vec<String> = found
        .iter()
        .map(|c| format!("U+{:04X}", *c as u32))
        .collect();
    names.dedup();
    let shown = if names.len() > 4 {
        format!("{} …", names[..4].join(" "))
    } else {
        names.join(" ")
    };
    let count = found.len();
    let (one, many, why) = match rule {
        RuleId::UnicodeBidiControl => (
            "bidirectional control",
            "bidirectional controls",
            "bidirectional controls reorder what is displayed, so the text read differs from the text shown (Trojan Source)",
        ),
        RuleId::UnicodeTagCharacter => (
            "Unicode tag character",
            "Unicode tag characters",
            "tag characters are invisible text that a model reads and a person does not see; only the flags of England, Scotland and Wales are tag sequences",
        ),
        _ if found.iter().all(|&c| kind(c) == Kind::Selector) => (
            "variation selector",
            "variation selectors",
            "a variation selector that makes no standardized sequence with the character before it changes nothing shown and can carry hidden bytes",
        ),
        _ => (
            "invisible character",
            "invisible characters",
            "invisible characters hide or split text unseen",
        ),
    };
    let decoded = (rule == RuleId::UnicodeTagCharacter)
        .then(|| decode_tags(&found))
        .filter(|s| !s.is_empty())
        .map(|s| format!(" (as ASCII: {s:?})"))
        .unwrap_or_default();
    let noun = if count == 1 { one } else { many };
    Hit::at(
        rule,
        lines.position(at),
        format!(
            "{count} {noun} {shown}{decoded}: {why}; remove {} unless the text needs {}",
            if count == 1 { "it" } else { "them" },
            if count == 1 { "it" } else { "them" }
        ),
    )
}

/// What a run of tag characters spells, shown (escaped) so a reviewer sees the smuggled text;
/// at most 80 characters.
fn decode_tags(found: &[char]) -> String {
    found
        .iter()
        .filter_map(|&c| char::from_u32(c as u32 - 0xE0000))
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(80)
        .collect()
}

#[cfg(test)]
#[path = "unicode_hostile.rs"]
mod hostile;

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<(RuleId, u32, u32)> {
        scan(text, &Lines::new(text))
            .into_iter()
            .map(|h| (h.rule, h.line.unwrap(), h.column.unwrap()))
            .collect()
    }

    #[test]
    fn bidi_controls_are_high_with_their_position() {
        let text = "ok\nlet x = \"\u{202E}\u{2066}abc\u{2069}\";";
        assert_eq!(
            rules(text),
            vec![
                (RuleId::UnicodeBidiControl, 2, 10),
                (RuleId::UnicodeBidiControl, 2, 15)
            ]
        );
        let h = &scan(text, &Lines::new(text))[0];
        assert!(
            h.message.contains("2 bidirectional controls"),
            "{}",
            h.message
        );
        assert!(h.message.contains("U+202E U+2066"), "{}", h.message);
        assert!(!h.message.contains('\u{202E}'));
        assert!(rules("plain text, «quotes», العربية").is_empty());
    }

    #[test]
    fn tag_characters_are_found_and_spelled_but_flags_are_not() {
        let smuggled: String = "hi"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        let text = format!("Note:{smuggled}");
        let hits = scan(&text, &Lines::new(&text));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].rule, RuleId::UnicodeTagCharacter);
        assert_eq!(hits[0].column, Some(6));
        assert!(hits[0].message.contains("\"hi\""), "{}", hits[0].message);
        // The flag of England: U+1F3F4, tags "gbeng", cancel tag.
        let flag = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F} flag";
        assert!(rules(flag).is_empty());
        // A tag after the flag's cancel tag is not part of it.
        assert_eq!(rules(&format!("{flag}\u{E0061}")).len(), 1);
    }

    #[test]
    fn invisible_characters_but_not_a_leading_bom_nor_joined_emoji() {
        assert_eq!(
            rules("pass\u{200B}word"),
            vec![(RuleId::UnicodeInvisible, 1, 5)]
        );
        assert_eq!(
            rules("a\u{2060}b\u{180E}"),
            vec![
                (RuleId::UnicodeInvisible, 1, 2),
                (RuleId::UnicodeInvisible, 1, 4)
            ]
        );
        assert!(rules("\u{FEFF}# Title").is_empty());
        assert_eq!(rules("x\u{FEFF}"), vec![(RuleId::UnicodeInvisible, 1, 2)]);
        // Family emoji (ZWJ sequence) and a Persian ZWNJ are ordinary.
        assert!(rules("\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}").is_empty());
        assert!(rules("می\u{200C}خواهم").is_empty());
        assert_eq!(
            rules("ab\u{200D}cd"),
            vec![(RuleId::UnicodeInvisible, 1, 3)]
        );
    }

    #[test]
    fn variation_selectors_only_where_nothing_takes_them() {
        // Emoji presentation of a heart, a keycap: ordinary.
        assert!(rules("\u{2764}\u{FE0F} 1\u{FE0F}\u{20E3}").is_empty());
        // After ASCII text, or a run of them after an emoji (a hidden message): reported.
        assert_eq!(rules("a\u{FE0F}"), vec![(RuleId::UnicodeInvisible, 1, 2)]);
        let channel = "\u{1F600}\u{E0100}\u{E0101}\u{E0102}";
        assert_eq!(rules(channel), vec![(RuleId::UnicodeInvisible, 1, 2)]);
    }

    #[test]
    fn text_shown_to_people_drives_no_terminal_and_hides_nothing() {
        let hostile = "ok\x1b]0;title\x07 a\u{202E}b\u{200B}c";
        let out = shown(hostile);
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
        assert!(
            !out.contains('\u{202E}') && !out.contains('\u{200B}'),
            "{out:?}"
        );
        assert!(
            out.contains("\\u{202e}") && out.contains("\\u{200b}"),
            "{out:?}"
        );
        // Plain text is lent back, not copied.
        assert!(matches!(
            shown("plain, café 🙂"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
