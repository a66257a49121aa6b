//! Names that render alike: the confusable skeleton and the mixed-script test of Unicode
//! Technical Standard #39, as the registry and `add` apply them to skill names.
//!
//! Validation accepts any Unicode letters in a name, as the reference does; uniqueness is the
//! registry's: it refuses a new name whose [`skeleton`] is another skill's, or that
//! [`mixed_scripts`] finds mixing scripts, so `pdf-fоrms` (a Cyrillic `о`) cannot stand beside
//! `pdf-forms`.
//!
//! ```
//! use skillcat_core::lookalike::{mixed_scripts, skeleton};
//! assert_eq!(skeleton("pdf-f\u{43e}rms"), skeleton("pdf-forms"));
//! assert_eq!(skeleton("tool-1"), skeleton("tool-l"));
//! assert_ne!(skeleton("pdf-forms"), skeleton("pdf-form"));
//! assert_eq!(mixed_scripts("\u{440}df-forms"), Some(vec!["Cyrillic", "Latin"]));
//! assert_eq!(mixed_scripts("pdf-forms"), None);
//! assert_eq!(mixed_scripts("ocr-\u{65e5}\u{672c}\u{8a9e}"), None); // Latin with Han
//! ```

use unicode_normalization::UnicodeNormalization;
use unicode_security::MixedScript;
use unicode_security::mixed_script::AugmentedScriptSet;

use crate::document::name_key;

/// Written by the build script from unicode-security's table (see `build.rs`).
mod confusables {
    include!(concat!(env!("OUT_DIR"), "/confusables.rs"));
}

/// The key two names that look alike share: the UTS #39 confusable skeleton of the name's
/// [`name_key`] (NFKC, `_` read as `-`) in lower case. `pdf-forms`, `pdf-fоrms` (Cyrillic `о`)
/// and `рdf-forms` (Cyrillic `р`) have one skeleton; so have `tool-l` and `tool-1`, and
/// `modem` and `rnodem`, which render alike in many fonts.
pub fn skeleton(name: &str) -> String {
    uts39_skeleton(&name_key(name).to_lowercase())
}

/// The UTS #39 skeleton of `s`: its NFD, each character replaced by its prototype (a
/// default-ignorable one by nothing), and the NFD of that.
///
/// The prototypes are Unicode's `confusables.txt` as unicode-security maps them, written by
/// the build script into tables of plain numbers and one string (`confusables`). That crate's
/// own table is a slice of slices: 161 KB of addresses the loader writes at every start of a
/// position-independent binary (39 pages copied on write), for a table only a name check
/// reads.
fn uts39_skeleton(s: &str) -> String {
    use confusables::{AT, FROM, TO};
    let mut mapped = String::with_capacity(s.len());
    for c in s.nfd() {
        match FROM.binary_search(&u32::from(c)) {
            Ok(i) => mapped.push_str(&TO[usize::from(AT[i])..usize::from(AT[i + 1])]),
            Err(_) => mapped.push(c),
        }
    }
    mapped.nfd().collect()
}

/// The scripts a name mixes, in the order they first appear, when it mixes them: `None` for a
/// name in one script (characters common to every script, such as digits and `-`, count for
/// none), and for the mixes UTS #39 calls *highly restrictive* — Latin with Han and
/// Hiragana/Katakana, with Han and Bopomofo, or with Han and Hangul (`ocr-日本語`). Any other
/// mix (Latin with Cyrillic or Greek, …) is named.
pub fn mixed_scripts(name: &str) -> Option<Vec<&'static str>> {
    if name.is_single_script() {
        return None;
    }
    let mut without_latin = AugmentedScriptSet::default();
    for c in name.chars() {
        let set = AugmentedScriptSet::for_char(c);
        if !is_latin(&set) {
            without_latin.intersect_with(set);
        }
    }
    if without_latin.hanb || without_latin.jpan || without_latin.kore {
        return None;
    }
    let mut scripts: Vec<&'static str> = Vec::new();
    for c in name.chars() {
        let set = AugmentedScriptSet::for_char(c);
        if set.is_all() {
            continue;
        }
        // A character used by several scripts (a Kana mark, a Devanagari danda) names the
        // first; a character of one script names it.
        if let Some(script) = set.base.iter().next()
            && !scripts.contains(&script.full_name())
        {
            scripts.push(script.full_name());
        }
    }
    Some(scripts)
}

fn is_latin(set: &AugmentedScriptSet) -> bool {
    set.base.iter().any(|s| s.short_name() == "Latn")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skeleton_is_unicode_securitys_for_every_character() {
        // Every character, and strings whose NFD reorders marks across the replacements.
        let mut strings: Vec<String> = (0..=0x10_ffff)
            .filter_map(char::from_u32)
            .map(String::from)
            .collect();
        strings.extend(
            [
                "pdf-f\u{43e}rms",
                "a\u{301}\u{316}",
                "\u{e9}\u{327}x",
                "\u{1e09}\u{323}",
                "m\u{200b}odem",
                "\u{ff50}df\u{2010}forms",
                "\u{fb01}le-\u{2163}",
            ]
            .map(String::from),
        );
        for s in strings {
            let want: String = unicode_security::skeleton(&s).collect();
            assert_eq!(uts39_skeleton(&s), want, "{s:?}");
        }
    }

    #[test]
    fn the_red_teams_look_alikes_share_a_skeleton() {
        let real = skeleton("pdf-forms");
        for fake in [
            "pdf-f\u{43e}rms",
            "\u{440}df-forms",
            "pdf-f\u{3bf}rms",
            "PDF-FORMS",
            "pdf_forms",
            "\u{ff50}df-forms",
        ] {
            assert_eq!(skeleton(fake), real, "{fake:?}");
        }
        assert_ne!(skeleton("pdf-forms-2"), real);
    }

    #[test]
    fn mixes_are_named_and_one_script_is_not() {
        assert_eq!(
            mixed_scripts("pdf-f\u{43e}rms"),
            Some(vec!["Latin", "Cyrillic"])
        );
        assert_eq!(
            mixed_scripts("pdf-f\u{3bf}rms"),
            Some(vec!["Latin", "Greek"])
        );
        for fine in [
            "pdf-forms",
            "\u{444}\u{43e}\u{440}\u{43c}\u{44b}",
            "\u{3bb}\u{3cc}\u{3b3}\u{3bf}\u{3c2}-2",
            "\u{65e5}\u{672c}\u{8a9e}-\u{3072}\u{3089}\u{304c}\u{306a}",
            "ocr-\u{d55c}\u{ad6d}\u{c5b4}",
            "tool-1",
            "",
        ] {
            assert_eq!(mixed_scripts(fine), None, "{fine:?}");
        }
        // Han with Cyrillic is no recommended mix.
        assert!(mixed_scripts("\u{65e5}-\u{444}").is_some());
    }
}
