//! Positions in a text: byte offsets to 1-based lines and character columns.

/// The line starts of a text, to turn byte offsets into lines and columns: found on the first
/// [`position`](Lines::position) asked (most files have no finding, and need none).
pub(crate) struct Lines<'a> {
    text: &'a str,
    starts: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Lines {
            text,
            starts: std::cell::OnceCell::new(),
        }
    }

    /// The 1-based line and character column of the byte offset `at`.
    pub(crate) fn position(&self, at: usize) -> (u32, u32) {
        let starts = self.starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(self.text.match_indices('\n').map(|(i, _)| i + 1));
            starts
        });
        let line = starts.partition_point(|&s| s <= at) - 1;
        let column = self.text[starts[line]..at].chars().count() + 1;
        (to_u32(line + 1), to_u32(column))
    }
}

/// `s` safe on one line of a terminal or a log: control characters (line feeds and tabs too),
/// and every character the audit classes as hidden by its Unicode properties (bidirectional
/// controls and marks, tags, variation selectors, joiners, default-ignorable and format
/// characters, line and paragraph separators) written `\u001b` (or `\u{e0041}` past U+FFFF),
/// so that a report of hidden text does not hide anything itself.
pub fn line_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let hidden = crate::chars::is_hidden;
    if !s.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        let n = u32::from(c);
        if !hidden(c) {
            out.push(c);
        } else if n <= 0xFFFF {
            out.push_str(&format!("\\u{n:04x}"));
        } else {
            out.push_str(&format!("\\u{{{n:x}}}"));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A count as `u32`, saturating (no text the audit reads has four billion lines).
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_and_line_breaks_are_escaped() {
        assert_eq!(line_safe("a\nb\u{1b}[2J"), "a\\u000ab\\u001b[2J");
        assert_eq!(line_safe("x\u{202E}y\u{E0041}"), "x\\u202ey\\u{e0041}");
        assert_eq!(line_safe("plain é"), "plain é");
    }

    #[test]
    fn lines_and_character_columns() {
        let l = Lines::new("ab\né x\n\nz");
        assert_eq!(l.position(0), (1, 1));
        assert_eq!(l.position(1), (1, 2));
        assert_eq!(l.position(3), (2, 1));
        // `é` is two bytes, one character.
        assert_eq!(l.position(6), (2, 3));
        assert_eq!(l.position(8), (3, 1));
        assert_eq!(l.position(9), (4, 1));
    }
}
