//! Turning user text into an FTS5 query that cannot be a syntax error.
//!
//! FTS5's query language gives meaning to `"`, `-`, `:`, `*`, `^`, `+`, parentheses, `AND`,
//! `OR`, `NOT`, `NEAR` and column names. User text is never passed to `MATCH` as it is: each
//! whitespace-separated token becomes one quoted string (`"…"`, an inner `"` doubled), so it is
//! only ever words to find, and the strings are joined by spaces (FTS5's implicit AND: every
//! token must match).

/// At most this many tokens of a query are used; the rest are ignored (a query of 10 KB is
/// still answered, quickly).
pub const MAX_TOKENS: usize = 32;

/// The FTS5 `MATCH` expression for `text`, or `None` when it holds nothing to look for (empty,
/// blanks, or only punctuation): such a search has no results rather than an error.
///
/// Control characters count as blanks; a token with no letter or digit is dropped (the
/// tokenizer would index nothing for it).
///
/// ```
/// use skillcat_registry::fts_query;
/// assert_eq!(fts_query("pdf forms").as_deref(), Some(r#""pdf" "forms""#));
/// assert_eq!(fts_query(r#"say "hi" NEAR(x"#).as_deref(), Some(r#""say" """hi""" "NEAR(x""#));
/// assert_eq!(fts_query("  - : * "), None);
/// ```
pub fn fts_query(text: &str) -> Option<String> {
    let tokens: Vec<String> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .take(MAX_TOKENS)
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!tokens.is_empty()).then(|| tokens.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_quoted() {
        for (input, want) in [
            ("", None),
            ("   \t\n", None),
            ("\"", None),
            ("-", None),
            ("AND OR NOT", Some(r#""AND" "OR" "NOT""#)),
            ("name:pdf", Some(r#""name:pdf""#)),
            ("pdf*", Some(r#""pdf*""#)),
            ("a\0b", Some(r#""a" "b""#)),
            ("\"quoted phrase\"", Some(r#""""quoted" "phrase""""#)),
            ("навык", Some(r#""навык""#)),
        ] {
            assert_eq!(fts_query(input).as_deref(), want, "{input:?}");
        }
    }

    #[test]
    fn long_text_is_capped() {
        let q = fts_query(&"word ".repeat(5000)).unwrap();
        assert_eq!(q.matches("\"word\"").count(), MAX_TOKENS);
    }
}
