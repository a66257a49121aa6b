//! Turning user text into an FTS5 query that cannot be a syntax error, and whose cost is capped.
//!
//! FTS5's query language gives meaning to `"`, `-`, `:`, `*`, `^`, `+`, parentheses, `AND`,
//! `OR`, `NOT`, `NEAR` and column names. User text is never passed to `MATCH` as it is: it is
//! split into terms on the tokenizer's own separators (`unicode61`: anything that is not a
//! letter or a digit), so only letters and digits ever reach FTS5, each whitespace-separated
//! token becomes one quoted phrase of its terms (`pdf-forms` finds the two words side by side,
//! as the tokenizer indexed them), and the phrases are joined by spaces (FTS5's implicit AND).
//!
//! **The cost is capped by what is sent**, since FTS5 matches a phrase inside one step of
//! SQLite's virtual machine, where no progress handler runs: at most [`MAX_TERMS`] terms a
//! query and [`MAX_PHRASE_TERMS`] a phrase (a longer token is cut into phrases of that many),
//! and a phrase already asked for is not asked again. A hyphen-joined token of 250 repeated
//! words was one phrase of 250 terms: against 1 MB bodies it ran for 40 s.

/// At most this many terms of a query are used; the rest are ignored (a query of 10 KB is
/// still answered, quickly).
pub const MAX_TERMS: usize = 16;

/// At most this many terms in one phrase; a token of more is cut into several phrases.
pub const MAX_PHRASE_TERMS: usize = 4;

/// The FTS5 `MATCH` expression for `text`, or `None` when it holds nothing to look for (empty,
/// blanks, or only punctuation): such a search has no results rather than an error.
///
/// Control characters count as blanks; every character that is not a letter or a digit
/// separates terms, as it does for the tokenizer.
///
/// ```
/// use skillcat_registry::fts_query;
/// assert_eq!(fts_query("pdf forms").as_deref(), Some(r#""pdf" "forms""#));
/// assert_eq!(fts_query("pdf-forms").as_deref(), Some(r#""pdf forms""#));
/// assert_eq!(fts_query(r#"say "hi" NEAR(x"#).as_deref(), Some(r#""say" "hi" "NEAR x""#));
/// assert_eq!(fts_query("  - : * "), None);
/// ```
pub fn fts_query(text: &str) -> Option<String> {
    let mut phrases: Vec<String> = Vec::new();
    let mut terms = 0;
    'tokens: for token in text.split(|c: char| c.is_whitespace() || c.is_control()) {
        let words: Vec<&str> = token
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        for chunk in words.chunks(MAX_PHRASE_TERMS) {
            let room = MAX_TERMS - terms;
            if room == 0 {
                break 'tokens;
            }
            let chunk = &chunk[..chunk.len().min(room)];
            let phrase = format!("\"{}\"", chunk.join(" "));
            if !phrases.contains(&phrase) {
                terms += chunk.len();
                phrases.push(phrase);
            }
        }
    }
    (!phrases.is_empty()).then(|| phrases.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile query text: only letters and digits reach FTS5, in phrases of at most
    /// [`MAX_PHRASE_TERMS`] terms and [`MAX_TERMS`] in all (issue 49, finding 4, and the next
    /// red team's variants).
    #[test]
    fn hostile_text_is_split_on_the_tokenizer_separators_and_capped() {
        let many = |w: &str, n: usize, sep: &str| vec![w; n].join(sep);
        for (input, want) in [
            ("", None),
            ("   \t\n", None),
            ("\"", None),
            ("-", None),
            ("AND OR NOT", Some(r#""AND" "OR" "NOT""#.to_string())),
            ("name:pdf", Some(r#""name pdf""#.into())),
            ("pdf*", Some(r#""pdf""#.into())),
            ("a\0b", Some(r#""a" "b""#.into())),
            ("\"quoted phrase\"", Some(r#""quoted" "phrase""#.into())),
            ("навык", Some(r#""навык""#.into())),
            ("NEAR(a b, 2)", Some(r#""NEAR a" "b" "2""#.into())),
            ("x^y+z", Some(r#""x y z""#.into())),
            ("pdf-forms pdf-forms", Some(r#""pdf forms""#.into())),
            // The issue's query: a token of 250 repeated words is two short phrases.
            (
                &many("word", 250, "-"),
                Some(r#""word word word word" "word word""#.into()),
            ),
            (
                &many("word", 32, "-"),
                Some(r#""word word word word""#.into()),
            ),
            (&many("a", 32, " "), Some(r#""a""#.into())),
        ] {
            assert_eq!(fts_query(input), want, "{input:?}");
        }
        let long: Vec<String> = (0..300).map(|i| format!("w{i}")).collect();
        for q in [
            long.join("-"),
            long.join(" "),
            long.join("_"),
            long.join("\u{2028}"),
        ] {
            let expr = fts_query(&q).unwrap();
            let phrases: Vec<&str> = expr.split("\" \"").collect();
            let terms: usize = phrases.iter().map(|p| p.split(' ').count()).sum();
            assert_eq!(terms, MAX_TERMS, "{expr}");
            assert!(
                phrases
                    .iter()
                    .all(|p| p.split(' ').count() <= MAX_PHRASE_TERMS)
            );
            assert!(
                expr.chars()
                    .all(|c| c.is_alphanumeric() || c == ' ' || c == '"')
            );
        }
    }

    #[test]
    fn long_text_is_capped() {
        let q = fts_query(&(0..5000).map(|i| format!("w{i} ")).collect::<String>()).unwrap();
        assert_eq!(q.matches(' ').count() + 1, MAX_TERMS);
    }
}
