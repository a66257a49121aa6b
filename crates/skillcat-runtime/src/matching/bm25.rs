//! The lexical ranker: field-weighted BM25 (BM25F) over an inverted index built once.
//!
//! ```text
//! terms   HashMap<term, id>                         "csv" → 17
//! offsets [u32; terms + 1]                          postings of term t: offsets[t]..offsets[t + 1]
//! postings [(skill: u32, impact: f32)]              sorted by skill within a term
//! ```
//!
//! A skill's fields are its name, its description, the headings of its body, the rest of its
//! body and its tools, plus the character grams of its name and description and the synonym
//! concepts of its name, description and headings (see [`tokenize`](super::tokenize)). For a
//! term t and skill d,
//!
//! ```text
//! tf~(t, d)  = Σ_field  weight_f · tf_f(t, d) / (1 − b + b · len_f(d) / avg_len_f)
//! impact     = idf(t)^e · tf~ / (k1 + tf~)        idf(t) = ln(1 + (N − n_t + 0.5) / (n_t + 0.5))
//! score(q,d) = Σ_{t ∈ terms(q), distinct} qtf~(t) · impact(t, d)
//! qtf~(t)    = (k3 + 1) · qtf(t) / (k3 + qtf(t))       qtf(t): times t occurs in the message
//! ```
//!
//! with `n_t` the number of skills holding t in any field, `e` the IDF exponent and `k3` the
//! saturation of a term repeated in the message (Robertson's query-term weight). Everything but the sum is computed at
//! build time, so a query looks up its terms, adds their postings into one score per skill and
//! keeps the best k with a heap of size k.

use std::collections::HashMap;

use super::tokenize::{concept_term, for_each_gram, for_each_term};
use super::{Hit, SkillDoc, top_k};

pub use skillcat_config::matcher::Bm25Params;

/// Fields, in the order of the per-field arrays below.
const FIELDS: usize = 7;
const NAME: usize = 0;
const DESCRIPTION: usize = 1;
const HEADINGS: usize = 2;
const BODY: usize = 3;
const TOOLS: usize = 4;
const GRAMS: usize = 5;
const CONCEPTS: usize = 6;

#[derive(Debug, Clone, Copy)]
struct Posting {
    skill: u32,
    impact: f32,
}

/// A BM25F index over a list of skills, built once (see the [module docs](crate::matching)).
#[derive(Debug, Clone)]
pub struct Bm25Index {
    terms: HashMap<Box<str>, u32>,
    offsets: Vec<u32>,
    postings: Vec<Posting>,
    len: usize,
    params: Bm25Params,
}

/// Per-field raw counts of one term in one skill, while building.
#[derive(Debug, Clone, Copy)]
struct RawPosting {
    skill: u32,
    /// Occurrences per field, saturating at 255: BM25 saturates long before (at k1 = 1.2, the
    /// 255th occurrence adds under 0.1% to a term's weight), and one byte a field keeps a
    /// posting at 12 bytes, the builder's memory on a large catalog.
    tf: [u8; FIELDS],
}

impl Bm25Index {
    /// Indexes `docs` with the default parameters. Hits name skills by their position in `docs`.
    pub fn build(docs: &[SkillDoc<'_>]) -> Bm25Index {
        Self::build_with(docs, Bm25Params::default())
    }

    /// Indexes `docs` with `params`.
    ///
    /// # Panics
    ///
    /// With more than `u32::MAX` skills or distinct terms.
    pub fn build_with(docs: &[SkillDoc<'_>], params: Bm25Params) -> Bm25Index {
        let mut builder = IndexBuilder::new(params);
        for doc in docs {
            builder.add(doc);
        }
        builder.finish()
    }

    /// The number of skills indexed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no skill is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The parameters the index was built with.
    pub fn params(&self) -> &Bm25Params {
        &self.params
    }

    /// The number of distinct terms (words, wholes and grams) and of postings: the size of the
    /// index.
    pub fn stats(&self) -> (usize, usize) {
        (self.terms.len(), self.postings.len())
    }

    /// The best `k` skills for `message`, best first; only skills that share a term with it.
    /// Allocates one score per skill (use [`scores_into`](Bm25Index::scores_into) to reuse a buffer).
    /// Equal scores keep the order of the skills given to [`build`](Bm25Index::build).
    pub fn search(&self, message: &str, k: usize) -> Vec<Hit> {
        let mut scores = vec![0f32; self.len];
        self.scores_into(message, &mut scores);
        top_k(
            scores
                .iter()
                .enumerate()
                .filter(|(_, s)| **s > 0.0)
                .map(|(i, s)| (i, *s)),
            k,
        )
    }

    /// Adds the score of `message` for every skill into `scores` (one slot per skill).
    ///
    /// # Panics
    ///
    /// When `scores` is shorter than [`len`](Bm25Index::len).
    pub fn scores_into(&self, message: &str, scores: &mut [f32]) {
        assert!(scores.len() >= self.len, "one score slot per skill");
        let mut ids: Vec<u32> = Vec::new();
        let mut look = |t: &str| {
            if let Some(&id) = self.terms.get(t) {
                ids.push(id);
            }
        };
        // One pass over the words: each word, then its synonym concept when it has one.
        let mut concept = String::new();
        for_each_term(message, |t| {
            look(t);
            if let Some(c) = concept_term(t, &mut concept) {
                look(c);
            }
        });
        for_each_gram(message, &mut look);
        ids.sort_unstable();
        let k3 = self.params.query_k3.max(0.0);
        for run in ids.chunk_by(|a, b| a == b) {
            let id = run[0] as usize;
            // (k3 + 1) · qtf / (k3 + qtf): 1 for one occurrence, whatever k3.
            let qtf = run.len() as f32;
            let weight = (k3 + 1.0) * qtf / (k3 + qtf);
            let (from, to) = (self.offsets[id], self.offsets[id + 1]);
            for p in &self.postings[from as usize..to as usize] {
                scores[p.skill as usize] += weight * p.impact;
            }
        }
    }
}

/// Calls `each(heading, text)` for every line of a Markdown body: `heading` for an ATX heading
/// (`#` to `######` then a space or the end; the text is what follows the marks), outside fenced
/// code blocks (`` ``` `` or `~~~`). Setext headings (underlined) read as text.
fn for_each_line(body: &str, mut each: impl FnMut(bool, &str)) {
    let mut fence: Option<(u8, usize)> = None;
    for line in body.lines() {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let marker = trimmed.bytes().next().filter(|c| *c == b'`' || *c == b'~');
        if let Some(c) = marker
            && indent < 4
        {
            let run = trimmed.bytes().take_while(|b| *b == c).count();
            if run >= 3 {
                match fence {
                    None => fence = Some((c, run)),
                    Some((open, len))
                        if open == c && run >= len && trimmed[run..].trim().is_empty() =>
                    {
                        fence = None
                    }
                    Some(_) => {}
                }
                each(false, line);
                continue;
            }
        }
        if fence.is_none() && indent < 4 && trimmed.starts_with('#') {
            let marks = trimmed.bytes().take_while(|b| *b == b'#').count();
            let rest = &trimmed[marks..];
            if marks <= 6 && (rest.is_empty() || rest.starts_with([' ', '\t'])) {
                each(true, rest);
                continue;
            }
        }
        each(false, line);
    }
}

/// Builds a [`Bm25Index`] one skill at a time, so that a large catalog need not hold every body in
/// memory at once: add each skill, then [`finish`](IndexBuilder::finish).
#[derive(Debug)]
pub struct IndexBuilder {
    params: Bm25Params,
    terms: HashMap<Box<str>, u32>,
    raw: Vec<Vec<RawPosting>>,
    lengths: Vec<[u32; FIELDS]>,
}

impl IndexBuilder {
    /// An empty builder.
    pub fn new(params: Bm25Params) -> Self {
        IndexBuilder {
            params,
            terms: HashMap::new(),
            raw: Vec::new(),
            lengths: Vec::new(),
        }
    }

    /// Adds one skill; returns its index in hits.
    ///
    /// # Panics
    ///
    /// With more than `u32::MAX` skills or distinct terms.
    pub fn add(&mut self, doc: &SkillDoc<'_>) -> usize {
        let skill = u32::try_from(self.lengths.len()).expect("fewer than 2^32 skills");
        let mut len = [0u32; FIELDS];
        let (terms, raw) = (&mut self.terms, &mut self.raw);
        let mut add = |field: usize, term: &str| {
            len[field] += 1;
            let id = match terms.get(term) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(raw.len()).expect("fewer than 2^32 terms");
                    terms.insert(term.into(), id);
                    raw.push(Vec::new());
                    id
                }
            };
            let list = &mut raw[id as usize];
            match list.last_mut() {
                Some(p) if p.skill == skill => p.tf[field] = p.tf[field].saturating_add(1),
                _ => {
                    let mut tf = [0; FIELDS];
                    tf[field] = 1;
                    list.push(RawPosting { skill, tf });
                }
            }
        };
        // Each text is tokenised once: a word of the name, the description or a heading also
        // gives its synonym concept, in the same pass.
        let mut concept = String::new();
        let mut words = |field: usize, text: &str, concepts: bool| {
            for_each_term(text, |t| {
                add(field, t);
                if concepts && let Some(c) = concept_term(t, &mut concept) {
                    add(CONCEPTS, c);
                }
            });
        };
        words(NAME, &doc.name, true);
        words(DESCRIPTION, &doc.description, true);
        for_each_line(&doc.body, |heading, line| {
            words(if heading { HEADINGS } else { BODY }, line, heading);
        });
        words(TOOLS, &doc.tools, false);
        for_each_gram(&doc.name, |g| add(GRAMS, g));
        for_each_gram(&doc.description, |g| add(GRAMS, g));

        self.lengths.push(len);
        skill as usize
    }

    /// The number of skills added.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no skill was added.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Computes every posting's impact (see the [module docs](crate::matching)) and freezes the index.
    pub fn finish(self) -> Bm25Index {
        let IndexBuilder {
            params,
            mut terms,
            raw,
            lengths,
        } = self;
        let n = lengths.len() as u32;
        let mut avg = [0f64; FIELDS];
        for len in &lengths {
            for (a, l) in avg.iter_mut().zip(len) {
                *a += f64::from(*l);
            }
        }
        for a in &mut avg {
            *a /= f64::from(n.max(1));
        }
        let weights = [
            params.name_weight,
            params.description_weight,
            params.heading_weight,
            params.body_weight,
            params.tools_weight,
            params.gram_weight,
            params.concept_weight,
        ];
        let b = f64::from(params.b);
        let k1 = f64::from(params.k1);
        let exponent = f64::from(params.idf_exponent);
        // 1 / (1 − b + b · len / avg) for every skill and field.
        let inv_norm: Vec<[f64; FIELDS]> = lengths
            .iter()
            .map(|len| {
                let mut out = [1.0; FIELDS];
                for f in 0..FIELDS {
                    if avg[f] > 0.0 {
                        out[f] = 1.0 / (1.0 - b + b * f64::from(len[f]) / avg[f]);
                    }
                }
                out
            })
            .collect();

        let total: usize = raw.iter().map(Vec::len).sum();
        let mut offsets = Vec::with_capacity(raw.len() + 1);
        let mut postings = Vec::with_capacity(total);
        offsets.push(0);
        for list in raw {
            let df = list.len() as f64;
            let idf = (1.0 + (f64::from(n) - df + 0.5) / (df + 0.5))
                .ln()
                .powf(exponent);
            for p in &list {
                let norm = &inv_norm[p.skill as usize];
                let tf: f64 = (0..FIELDS)
                    .map(|f| f64::from(weights[f]) * f64::from(p.tf[f]) * norm[f])
                    .sum();
                let impact = idf * tf / (k1 + tf);
                postings.push(Posting {
                    skill: p.skill,
                    impact: impact as f32,
                });
            }
            offsets.push(u32::try_from(postings.len()).expect("fewer than 2^32 postings"));
        }
        terms.shrink_to_fit();
        Bm25Index {
            terms,
            offsets,
            postings,
            len: lengths.len(),
            params,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Vec<SkillDoc<'static>> {
        vec![
            SkillDoc::new(
                "csv-cleaner",
                "Profile and clean CSV exports: blank and duplicate rows, stray whitespace.",
                "Run the profiler first, then write a cleaned copy.",
            ),
            SkillDoc::new(
                "pdf-forms",
                "Inspect the fillable fields of a PDF form and prepare the values to fill it.",
                "Read the fields with the script; never guess a field name.",
            ),
            SkillDoc::new(
                "log-search",
                "Search application and server logs for errors and spikes.",
                "Start from the newest log file. Clean output helps.",
            ),
        ]
    }

    fn names(index: &Bm25Index, docs: &[SkillDoc<'_>], message: &str) -> Vec<String> {
        index
            .search(message, 10)
            .iter()
            .map(|h| docs[h.index].name.to_string())
            .collect()
    }

    #[test]
    fn the_obvious_skill_comes_first() {
        let docs = docs();
        let index = Bm25Index::build(&docs);
        for (message, want) in [
            ("please clean up this csv export", "csv-cleaner"),
            ("which fields does this PDF form have?", "pdf-forms"),
            (
                "why are there so many errors in the server logs",
                "log-search",
            ),
            ("run csv_cleaner", "csv-cleaner"),
        ] {
            assert_eq!(names(&index, &docs, message)[0], want, "{message:?}");
        }
    }

    #[test]
    fn nothing_shared_nothing_returned() {
        let docs = docs();
        let index = Bm25Index::build(&docs);
        assert!(index.search("zzz qqq", 5).is_empty());
        assert!(index.search("", 5).is_empty());
        assert!(index.search("the of and", 5).is_empty());
        assert!(index.search("csv", 0).is_empty());
        assert!(Bm25Index::build(&[]).search("csv", 3).is_empty());
    }

    #[test]
    fn the_name_outweighs_the_body() {
        // "clean" is in csv-cleaner's name and in log-search's body.
        let docs = docs();
        let index = Bm25Index::build(&docs);
        let hits = index.search("clean", 3);
        assert_eq!(docs[hits[0].index].name, "csv-cleaner");
        assert!(hits.iter().all(|h| h.score > 0.0));
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn a_repeated_word_counts_more_but_saturates() {
        let docs = docs();
        let once = Bm25Index::build(&docs);
        let one = once.search("pdf", 1)[0];
        let two = once.search("pdf PDF", 1)[0];
        let many = once.search(&"pdf ".repeat(50), 1)[0];
        assert_eq!((one.index, two.index), (1, 1));
        // k3 = 1: (k3 + 1) · 2 / (k3 + 2) = 4/3 times once; fifty times stays under twice.
        assert!(
            (two.score / one.score - 4.0 / 3.0).abs() < 1e-4,
            "{one:?} {two:?}"
        );
        assert!(many.score < 2.0 * one.score && many.score > two.score);
        let flat = Bm25Index::build_with(
            &docs,
            Bm25Params {
                query_k3: 0.0,
                ..Bm25Params::default()
            },
        );
        assert_eq!(flat.search("pdf", 1), flat.search("pdf pdf PDF", 1));
    }

    #[test]
    fn the_idf_exponent_favours_the_rarer_word() {
        // "errors" is in one skill, "clean" in two (name of one, body of another).
        let docs = docs();
        let plain = Bm25Index::build_with(
            &docs,
            Bm25Params {
                idf_exponent: 1.0,
                ..Bm25Params::default()
            },
        );
        let sharp = Bm25Index::build(&docs);
        let ratio = |i: &Bm25Index| {
            let rare = i.search("errors", 1)[0].score;
            let common = i
                .search("clean", 3)
                .iter()
                .map(|h| h.score)
                .fold(0f32, f32::max);
            rare / common
        };
        assert!(
            ratio(&sharp) > ratio(&plain),
            "{} {}",
            ratio(&sharp),
            ratio(&plain)
        );
    }

    #[test]
    fn ties_keep_catalog_order() {
        let twins = vec![
            SkillDoc::new("alpha", "deploy the service", ""),
            SkillDoc::new("gamma", "deploy the service", ""),
        ];
        let index = Bm25Index::build(&twins);
        let hits = index.search("deploy", 2);
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(hits[0].score, hits[1].score);
    }

    fn lines(body: &str) -> Vec<(bool, String)> {
        let mut out = Vec::new();
        for_each_line(body, |heading, text| {
            out.push((heading, text.trim().to_string()))
        });
        out
    }

    #[test]
    fn headings_are_atx_lines_outside_fences() {
        let body = "# Clean CSV\ntext\n##No space is text\n####### seven is text\n\
                    ```sh\n# a shell comment\n```\n   ### indented three\n    # code block\n\
                    ~~~~\n# in tilde fence\n~~~\nstill fenced\n~~~~\n## After\n#\n";
        let got = lines(body);
        let headings: Vec<&str> = got
            .iter()
            .filter(|(h, _)| *h)
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(headings, ["Clean CSV", "indented three", "After", ""]);
        // Every line is given once, heading or not: nothing of the body is lost.
        assert_eq!(got.len(), body.lines().count());
    }

    #[test]
    fn headings_weigh_more_than_the_rest_of_the_body() {
        let docs = vec![
            SkillDoc::new(
                "a",
                "Reports.",
                "Mentions invoices once in passing, among other words.",
            ),
            SkillDoc::new(
                "b",
                "Reports.",
                "## Invoices\nOther words here, as many as in a.",
            ),
        ];
        let index = Bm25Index::build(&docs);
        assert_eq!(index.search("invoices", 2)[0].index, 1);
        let flat = Bm25Index::build_with(
            &docs,
            Bm25Params {
                heading_weight: 0.0,
                ..Bm25Params::default()
            },
        );
        // Without the heading field, b's heading counts as nothing at all.
        assert_eq!(flat.search("invoices", 2).len(), 1);
        assert_eq!(flat.search("invoices", 2)[0].index, 0);
    }

    #[test]
    fn tools_and_their_parameters_are_matched() {
        let docs = vec![
            SkillDoc::new("weather", "Forecasts.", ""),
            SkillDoc::new("geo", "Places.", "")
                .with_tools("run_geo_lookup\nFind a place.\ncity: The city to look up\n"),
        ];
        let index = Bm25Index::build(&docs);
        let hits = index.search("which city is it", 2);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].index, 1);
        let off = Bm25Index::build_with(
            &docs,
            Bm25Params {
                tools_weight: 0.0,
                ..Bm25Params::default()
            },
        );
        assert!(off.search("which city is it", 2).is_empty());
    }

    #[test]
    fn synonyms_meet_through_their_concept_below_a_shared_word() {
        let docs = vec![
            SkillDoc::new("cinema-guide", "Showtimes for films nearby.", ""),
            SkillDoc::new("weather", "Forecasts by city.", ""),
        ];
        let index = Bm25Index::build(&docs);
        let by_synonym = index.search("a good movie tonight", 2);
        assert_eq!(by_synonym.len(), 1);
        assert_eq!(by_synonym[0].index, 0);
        // The shared word itself scores higher than its synonym.
        assert!(index.search("a good film tonight", 1)[0].score > by_synonym[0].score);
        let off = Bm25Index::build_with(
            &docs,
            Bm25Params {
                concept_weight: 0.0,
                ..Bm25Params::default()
            },
        );
        assert!(off.search("a good movie tonight", 2).is_empty());
    }

    #[test]
    fn british_and_irregular_forms_meet_their_base() {
        let docs = vec![
            SkillDoc::new("palette", "Pick a color scheme and organize swatches.", ""),
            SkillDoc::new("kids", "Games for a child.", ""),
        ];
        let index = Bm25Index::build(&docs);
        assert_eq!(index.search("colour", 1)[0].index, 0);
        assert_eq!(index.search("organising my swatches", 1)[0].index, 0);
        assert_eq!(index.search("for my children", 1)[0].index, 1);
    }
}
