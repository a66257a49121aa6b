//! Positions in a text: byte offsets to 1-based lines and character columns.

/// The line starts of a text, to turn byte offsets into lines and columns.
pub(crate) struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// The 1-based line and character column of the byte offset `at`.
    pub(crate) fn position(&self, at: usize) -> (u32, u32) {
        let line = self.starts.partition_point(|&s| s <= at) - 1;
        let column = self.text[self.starts[line]..at].chars().count() + 1;
        (to_u32(line + 1), to_u32(column))
    }
}

/// A count as `u32`, saturating (no text the audit reads has four billion lines).
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
