//! What each character is to the rules of hidden text, by its Unicode properties (the
//! `icu_properties` crate's compiled copy of the Unicode Character Database): the one
//! classing that the `unicode` rules, the phrase rules and [`line_safe`](crate::line_safe)
//! share. Which sequences make a hidden character ordinary is the `unicode` module's.

use icu_properties::props::{
    BidiControl, DefaultIgnorableCodePoint, GeneralCategory, PrependedConcatenationMark,
    VariationSelector,
};
use icu_properties::{CodePointMapData, CodePointSetData};

/// What one character is to these rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An embedding, override or isolate (Trojan Source).
    Bidi,
    /// A bidirectional mark (LRM, RLM, ALM): invisible, reorders neutral characters only.
    BidiMark,
    /// A tag character (U+E0000–U+E007F).
    Tag,
    /// A variation selector: invisible unless it makes a standardized sequence with its base.
    Selector,
    /// A zero-width (non-)joiner: ordinary where it shapes.
    Joiner,
    /// Any other default-ignorable or format character, a line or paragraph separator.
    Invisible,
    /// Anything else: drawn, or a control (the printers escape those).
    Other,
}

/// The class of `c`, from its Unicode properties.
pub(crate) fn kind(c: char) -> Kind {
    // Control characters are the printers' business (escaped on every terminal): in a text
    // file they are rare and shown by any editor, and in a binary one they are its bytes.
    if c.is_ascii() || c.is_control() {
        return Kind::Other;
    }
    match c {
        '\u{E0000}'..='\u{E007F}' => return Kind::Tag,
        '\u{200C}' | '\u{200D}' => return Kind::Joiner,
        '\u{061C}' | '\u{200E}' | '\u{200F}' => return Kind::BidiMark,
        _ => {}
    }
    if CodePointSetData::new::<BidiControl>().contains(c) {
        return Kind::Bidi;
    }
    if CodePointSetData::new::<VariationSelector>().contains(c) {
        return Kind::Selector;
    }
    let gc = CodePointMapData::<GeneralCategory>::new().get(c);
    let invisible = CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || matches!(
            gc,
            GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator
        )
        // Format characters, but not the prepended marks that are drawn (U+0600 ARABIC
        // NUMBER SIGN, …).
        || (gc == GeneralCategory::Format
            && !CodePointSetData::new::<PrependedConcatenationMark>().contains(c));
    if invisible {
        Kind::Invisible
    } else {
        Kind::Other
    }
}

/// Whether `c` is never shown raw on one line of a terminal or a log, wherever it stands: a
/// control, a bidirectional control or mark, a tag, a variation selector, a joiner, any other
/// default-ignorable or format character, a line or paragraph separator.
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control() || kind(c) != Kind::Other
}

/// Text without the characters Unicode says to ignore in display (`Default_Ignorable_Code_Point`,
/// tags, selectors, joiners, format characters; not line feeds): what the phrase rules read, so
/// that U+034F inside `ig͏nore` hides no word. Each kept character with its byte offset in the
/// original text.
pub(crate) fn visible_chars(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    text.char_indices().filter(|&(_, c)| kind(c) == Kind::Other)
}
