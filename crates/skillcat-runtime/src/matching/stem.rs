//! The Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980), written from the
//! published description of the algorithm.
//!
//! It folds the usual English inflections and derivations onto one stem ("connected",
//! "connecting", "connection" → "connect"), so a message and a description that use different
//! forms of a word still meet. Stems are not words ("happy" → "happi"); both sides of a match go
//! through the same function, so that does not matter.
//!
//! Only lowercase ASCII letters are stemmed: a word with any other character (a digit, an accent,
//! another script) is returned unchanged, as is a word of one or two letters.

/// The stem of a lowercase word (see the [module docs](crate::matching)).
pub fn stem(word: &str) -> String {
    let mut buf = Vec::new();
    stem_into(word, &mut buf).to_string()
}

/// [`stem`] without allocating: the stem is `word` itself or is written into `buf`.
pub(crate) fn stem_into<'a>(word: &'a str, buf: &'a mut Vec<u8>) -> &'a str {
    if word.len() <= 2 || !word.bytes().all(|b| b.is_ascii_lowercase()) || INVARIANT.contains(&word)
    {
        return word;
    }
    buf.clear();
    buf.extend_from_slice(word.as_bytes());
    let mut w = Word(buf);
    w.step1ab();
    w.step1c();
    w.step2();
    w.step3();
    w.step4();
    w.step5();
    // Only ASCII letters were ever written.
    std::str::from_utf8(w.0).unwrap_or(word)
}

/// Words the suffix rules would damage, left as they are (the invariant words of Porter's later
/// English stemmer): "news" is not the plural of "new".
const INVARIANT: &[&str] = &["andes", "atlas", "bias", "cosmos", "howe", "news", "sky"];

/// A word being stemmed, as lowercase ASCII bytes.
struct Word<'a>(&'a mut Vec<u8>);

impl Word<'_> {
    /// Whether the letter at `i` is a consonant: not a vowel, and `y` only after a vowel (or
    /// first).
    fn cons(&self, i: usize) -> bool {
        match self.0[i] {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The measure m of the first `len` letters: the number of vowel-consonant sequences in
    /// `[C](VC){m}[V]`.
    fn measure(&self, len: usize) -> usize {
        let mut i = 0;
        while i < len && self.cons(i) {
            i += 1;
        }
        let mut m = 0;
        loop {
            while i < len && !self.cons(i) {
                i += 1;
            }
            if i >= len {
                return m;
            }
            while i < len && self.cons(i) {
                i += 1;
            }
            m += 1;
        }
    }

    /// Whether the first `len` letters contain a vowel.
    fn has_vowel(&self, len: usize) -> bool {
        (0..len).any(|i| !self.cons(i))
    }

    /// Whether the first `len` letters end in a double consonant.
    fn double_cons(&self, len: usize) -> bool {
        len >= 2 && self.0[len - 1] == self.0[len - 2] && self.cons(len - 1)
    }

    /// Whether the first `len` letters end consonant-vowel-consonant, the last not `w`, `x`, `y`
    /// (`hop`, not `snow`).
    fn cvc(&self, len: usize) -> bool {
        len >= 3
            && self.cons(len - 3)
            && !self.cons(len - 2)
            && self.cons(len - 1)
            && !matches!(self.0[len - 1], b'w' | b'x' | b'y')
    }

    fn ends(&self, suffix: &str) -> bool {
        self.0.ends_with(suffix.as_bytes())
    }

    /// Length of the stem left when `suffix` is removed.
    fn stem_len(&self, suffix: &str) -> usize {
        self.0.len() - suffix.len()
    }

    fn replace(&mut self, suffix: &str, with: &str) {
        let keep = self.stem_len(suffix);
        self.0.truncate(keep);
        self.0.extend_from_slice(with.as_bytes());
    }

    /// Plurals and `-ed`/`-ing`.
    fn step1ab(&mut self) {
        if self.ends("sses") || self.ends("ies") {
            self.0.truncate(self.0.len() - 2);
        } else if !self.ends("ss") && self.ends("s") {
            self.0.pop();
        }
        if self.ends("eed") {
            if self.measure(self.stem_len("eed")) > 0 {
                self.0.pop();
            }
            return;
        }
        let removed = ["ed", "ing"]
            .into_iter()
            .find(|s| self.ends(s) && self.has_vowel(self.stem_len(s)));
        let Some(suffix) = removed else { return };
        self.replace(suffix, "");
        let len = self.0.len();
        if self.ends("at") || self.ends("bl") || self.ends("iz") {
            self.0.push(b'e');
        } else if self.double_cons(len) && !matches!(self.0[len - 1], b'l' | b's' | b'z') {
            self.0.pop();
        } else if self.measure(len) == 1 && self.cvc(len) {
            self.0.push(b'e');
        }
    }

    /// A final `y` after a vowel-bearing stem becomes `i`.
    fn step1c(&mut self) {
        if self.ends("y") && self.has_vowel(self.0.len() - 1) {
            let last = self.0.len() - 1;
            self.0[last] = b'i';
        }
    }

    /// Replaces the first (longest listed) suffix of `table` that ends the word, when the stem
    /// left has a measure above `min_measure`. A matching suffix whose stem is too short stops
    /// the step: shorter suffixes are not tried.
    fn map(&mut self, table: &[(&str, &str)], min_measure: usize) {
        if let Some((suffix, with)) = table.iter().find(|(s, _)| self.ends(s))
            && self.measure(self.stem_len(suffix)) > min_measure
        {
            self.replace(suffix, with);
        }
    }

    fn step2(&mut self) {
        const TABLE: &[(&str, &str)] = &[
            ("ational", "ate"),
            ("tional", "tion"),
            ("enci", "ence"),
            ("anci", "ance"),
            ("izer", "ize"),
            ("abli", "able"),
            ("alli", "al"),
            ("entli", "ent"),
            ("eli", "e"),
            ("ousli", "ous"),
            ("ization", "ize"),
            ("ation", "ate"),
            ("ator", "ate"),
            ("alism", "al"),
            ("iveness", "ive"),
            ("fulness", "ful"),
            ("ousness", "ous"),
            ("aliti", "al"),
            ("iviti", "ive"),
            ("biliti", "ble"),
        ];
        self.map(TABLE, 0);
    }

    fn step3(&mut self) {
        const TABLE: &[(&str, &str)] = &[
            ("icate", "ic"),
            ("ative", ""),
            ("alize", "al"),
            ("iciti", "ic"),
            ("ical", "ic"),
            ("ful", ""),
            ("ness", ""),
        ];
        self.map(TABLE, 0);
    }

    /// Derivational suffixes, on stems of measure above 1; `-ion` only after `s` or `t`.
    fn step4(&mut self) {
        // Longest first, so `-ement` is seen before `-ment` and `-ent`.
        const SUFFIXES: &[&str] = &[
            "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti",
            "ous", "ive", "ize", "ion", "al", "er", "ic", "ou",
        ];
        let Some(suffix) = SUFFIXES.iter().find(|s| self.ends(s)) else {
            return;
        };
        let len = self.stem_len(suffix);
        if self.measure(len) <= 1 {
            return;
        }
        if *suffix == "ion" && !(len > 0 && matches!(self.0[len - 1], b's' | b't')) {
            return;
        }
        self.0.truncate(len);
    }

    /// A final `e`, and a final double `l`.
    fn step5(&mut self) {
        if self.ends("e") {
            let len = self.0.len() - 1;
            let m = self.measure(len);
            if m > 1 || (m == 1 && !self.cvc(len)) {
                self.0.pop();
            }
        }
        let len = self.0.len();
        if self.0.last() == Some(&b'l') && self.double_cons(len) && self.measure(len) > 1 {
            self.0.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn examples_from_the_paper() {
        for (word, want) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("digitizer", "digit"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
            ("generalizations", "gener"),
        ] {
            assert_eq!(stem(word), want, "{word}");
        }
    }

    #[test]
    fn forms_of_one_word_meet() {
        for group in [
            ["connect", "connected", "connecting"],
            ["clean", "cleaning", "cleaned"],
            ["export", "exports", "exporting"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| *s == stems[0]),
                "{group:?} → {stems:?}"
            );
        }
    }

    #[test]
    fn other_words_are_left_alone() {
        for word in ["d20", "café", "日本語", "ab", "x", "", "covid19"] {
            assert_eq!(stem(word), word);
        }
    }
}
