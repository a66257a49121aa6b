//! Hidden and deceptive Unicode in a text file: bidirectional controls, tag characters,
//! invisible characters and stray variation selectors.

use crate::rule::{Hit, RuleId};
use crate::text::Lines;

/// What one character is to these rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bidi,
    Tag,
    Invisible,
    /// A variation selector: invisible unless it modifies the character before it.
    Selector,
    /// A zero-width (non-)joiner: ordinary between two non-ASCII characters.
    Joiner,
    Other,
}

fn kind(c: char) -> Kind {
    match c {
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Kind::Bidi,
        '\u{E0000}'..='\u{E007F}' => Kind::Tag,
        '\u{200B}' | '\u{2060}' | '\u{FEFF}' | '\u{180E}' => Kind::Invisible,
        '\u{200C}' | '\u{200D}' => Kind::Joiner,
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => Kind::Selector,
        _ => Kind::Other,
    }
}

/// Whether a variation selector after `base` modifies it: any visible non-ASCII character
/// (emoji, CJK ideographs, the math symbols with standardized variants) and the keycap bases
/// `0-9 # *`. Never after ASCII text, whitespace, or another selector: a run of selectors is
/// the shape of a message encoded in them.
fn takes_selector(base: Option<char>) -> bool {
    match base {
        Some(c) if c.is_ascii() => c.is_ascii_digit() || c == '#' || c == '*',
        Some(c) => !c.is_whitespace() && !c.is_control() && kind(c) == Kind::Other,
        None => false,
    }
}

/// Whether a joiner sits between two non-ASCII visible characters (an emoji sequence, a
/// conjunct in an Indic script, a Persian word).
fn joins(before: Option<char>, after: Option<char>) -> bool {
    let visible = |c: Option<char>| {
        c.is_some_and(|c| !c.is_ascii() && !c.is_whitespace() && kind(c) == Kind::Other)
    };
    visible(before) && visible(after)
}

/// The hits of one text: one for each run of characters of one rule on a line.
pub(crate) fn scan(text: &str, lines: &Lines<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    if text.is_ascii() {
        return hits;
    }
    // The open run: its rule, where it starts and the characters in it.
    let mut run: Option<(RuleId, usize, Vec<char>)> = None;
    let mut prev: Option<char> = None;
    // Inside an emoji tag sequence (U+1F3F4 then tags up to U+E007F): the subdivision flags.
    let mut in_flag = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let rule = match kind(c) {
            Kind::Bidi => Some(RuleId::UnicodeBidiControl),
            Kind::Tag if in_flag || prev == Some('\u{1F3F4}') => {
                in_flag = c != '\u{E007F}';
                None
            }
            Kind::Tag => Some(RuleId::UnicodeTagCharacter),
            Kind::Invisible if c == '\u{FEFF}' && at == 0 => None,
            Kind::Invisible => Some(RuleId::UnicodeInvisible),
            Kind::Joiner if joins(prev, next) => None,
            Kind::Joiner => Some(RuleId::UnicodeInvisible),
            Kind::Selector if takes_selector(prev) => None,
            Kind::Selector => Some(RuleId::UnicodeInvisible),
            Kind::Other => None,
        };
        if kind(c) != Kind::Tag {
            in_flag = false;
        }
        match (&mut run, rule) {
            (Some((open, _, found)), Some(r)) if *open == r => found.push(c),
            (_, rule) => {
                if let Some(done) = run.take() {
                    hits.push(hit(done, lines));
                }
                run = rule.map(|r| (r, at, vec![c]));
            }
        }
        prev = Some(c);
    }
    if let Some(done) = run {
        hits.push(hit(done, lines));
    }
    hits
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
            "tag characters are invisible text that a model reads and a person does not see",
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
        assert_eq!(rules(channel), vec![(RuleId::UnicodeInvisible, 1, 3)]);
    }
}
