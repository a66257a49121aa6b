//! The prompt block (tier 1): the skills an agent may activate, rendered for its system prompt,
//! within a character budget.
//!
//! Pure: [`render`] takes names, descriptions and locations and returns text plus a
//! [`BudgetReport`]; reading skills and choosing the budget happen elsewhere (the catalog).
//!
//! # Formats
//!
//! **XML** ([`PromptFormat::Xml`], the default) is byte-identical to the reference validator's
//! `to_prompt`: one tag per line, no indentation, each value on its own line, joined by `\n`
//! with no trailing newline. The name and the description are escaped as Python's `html.escape`
//! does ([`escape_xml`]); the location is written as given. Control characters other than line
//! feed and tab, which the reference writes raw, are written `\u001b` ([`escape_controls`]), so
//! that a skill's text cannot drive the terminal the block is printed on.
//!
//! ```text
//! <available_skills>
//! <skill>
//! <name>
//! pdf-tools
//! </name>
//! <description>
//! Fill &amp; merge PDF forms.
//! </description>
//! <location>
//! /home/me/.agents/skills/pdf-tools/SKILL.md
//! </location>
//! </skill>
//! </available_skills>
//! ```
//!
//! No skills give `<available_skills>\n</available_skills>`.
//!
//! **Markdown** ([`PromptFormat::Markdown`]): a heading line, then one list item per skill.
//! Values are written as given (no Markdown escaping), except that control characters (line
//! breaks, tabs, …) become spaces so that each skill stays on one line. A skill whose
//! description is empty drops the `: ` as well. No skills give the heading alone.
//!
//! ```text
//! ## Available skills
//! - **pdf-tools**: Fill & merge PDF forms. (/home/me/.agents/skills/pdf-tools/SKILL.md)
//! ```
//!
//! **JSON** ([`PromptFormat::Json`]): compact (no spaces, no line breaks), because indentation
//! would spend the budget on whitespace; keys in the order `name`, `description`, `location`.
//! No skills give `{"skills":[]}`.
//!
//! ```text
//! {"skills":[{"name":"pdf-tools","description":"Fill & merge PDF forms.","location":"/home/me/.agents/skills/pdf-tools/SKILL.md"}]}
//! ```
//!
//! In every format the skills keep the order the caller gave (highest precedence first) and are
//! not deduplicated. With [`PromptOptions::omit_when_empty`] a block that would show no skill is
//! the empty string instead, as the client guide asks ("no skills: omit the catalog").
//!
//! # The budget
//!
//! [`PromptOptions::budget`] is the most characters (Unicode scalar values, what
//! `str::chars().count()` counts) the whole text may have, measured on the rendered text:
//! an `&` costs the five characters of `&amp;` in XML, a line break the two of `\n` in JSON.
//! A block that fits is left exactly as it is. Over budget:
//!
//! 1. **A description says something or nothing is shown.** A description is shown whole, or
//!    shortened to at least [`DESCRIPTION_FLOOR`] (100) characters, cut at the end of a word
//!    (the word in progress at the floor is finished when it ends within 24 more characters;
//!    text with no whitespace past the floor, such as a long URL, is cut between characters)
//!    and marked `…`. It is never cut to a few letters: a description of at most 100
//!    characters is never cut at all.
//! 2. **Which skills.** Skills are kept in the order given — highest precedence first (the
//!    command line and a catalog give sources in precedence order and each source's skills by
//!    name) — as long as they fit with every description at its floor; the rest are omitted,
//!    the lowest in precedence (then the last by name) first. They are not listed by name
//!    alone: in every format a skill's entry carries its location and tags (about 90
//!    characters in XML before the name and path), about what the floor of its description
//!    costs, and a name without a description seldom tells a model when to use the skill; so
//!    the room goes to fewer skills that each say what they are for.
//! 3. **Shorten fairly.** What the budget leaves after the skills at their floors goes to the
//!    descriptions as if handed out one character at a time round-robin (as Codex does):
//!    short descriptions are kept whole and long ones give up characters. It is computed, not
//!    simulated: the largest cap `c` such that every description cut to at most `c` rendered
//!    characters (at a word, never below its floor) fits (binary search; the total is
//!    monotone in `c`). The `…` counts in the cap; a cut is between characters of the source
//!    text, so never inside an XML entity or a JSON escape.
//!
//! Guarantees: the text never exceeds the budget; a budget the whole block fits in changes
//! nothing; a larger budget never includes fewer skills, and while the same skills are
//! included it never keeps fewer characters of any description; a shortened description keeps
//! at least [`DESCRIPTION_FLOOR`] characters. A budget smaller than even the empty block (38
//! characters in XML) holds no block: the text is then empty and every skill is reported
//! omitted.
//!
//! The [`BudgetReport`] names every shortened description (characters of the description as
//! given, before escaping, without the `…`) and every omitted skill. Its
//! [`Display`](fmt::Display) is a summary of at most two lines, whatever the number of skills;
//! [`BudgetReport::details`] gives one line per item.
//!
//! ```
//! use skillcat_core::prompt::{render, PromptOptions, PromptSkill};
//!
//! let skills = [
//!     PromptSkill { name: "a", description: "Short.", location: "/s/a/SKILL.md" },
//!     PromptSkill { name: "b", description: &"long ".repeat(40), location: "/s/b/SKILL.md" },
//! ];
//! let opts = PromptOptions { budget: Some(400), ..PromptOptions::default() };
//! let out = render(&skills, &opts);
//! assert!(out.text.chars().count() <= 400);
//! assert!(out.text.contains("\nShort.\n"));
//! let cut = &out.report.shortened[0];
//! assert_eq!(cut.name, "b");
//! assert!(cut.kept_chars >= skillcat_core::prompt::DESCRIPTION_FLOOR && cut.kept_chars < 200);
//! assert!(out.text.contains("long long…"));
//! assert!(out.report.omitted.is_empty());
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

/// One skill as the prompt block shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PromptSkill<'a> {
    /// The skill's name.
    pub name: &'a str,
    /// Its description (tier 1: what the agent decides on).
    pub description: &'a str,
    /// Where its `SKILL.md` is: the resolved absolute path (or URL). Never escaped.
    pub location: &'a str,
}

/// How the block is written; see the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptFormat {
    /// The reference `<available_skills>` XML, byte for byte.
    #[default]
    Xml,
    /// A heading and one list item per skill.
    Markdown,
    /// Compact JSON: `{"skills":[{"name","description","location"}]}`.
    Json,
}

/// What [`render`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptOptions {
    /// The format of the text.
    pub format: PromptFormat,
    /// The most characters (Unicode scalar values) the text may have; `None` for no limit.
    pub budget: Option<usize>,
    /// Give the empty string instead of a block that shows no skill.
    pub omit_when_empty: bool,
}

/// The rendered block and what the budget did to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The block, without a trailing newline.
    pub text: String,
    /// What was shortened or omitted.
    pub report: BudgetReport,
}

/// What the budget did to the block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct BudgetReport {
    /// The budget applied, in characters.
    pub budget: Option<usize>,
    /// How many skills were given.
    pub total: usize,
    /// How many of them the text shows (the first `included` of those given).
    pub included: usize,
    /// The included skills whose description was cut, in list order.
    pub shortened: Vec<Shortened>,
    /// The names of the skills left out, in list order (always the last ones given).
    pub omitted: Vec<String>,
    /// How the skills given were ordered: what the summary calls the ones left out.
    #[serde(skip)]
    pub order: PromptOrder,
}

/// How the skills given to the block were ordered, and so which ones a budget leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptOrder {
    /// Highest precedence first (sources in precedence order, each source's skills by name):
    /// [`render`]'s.
    #[default]
    Precedence,
    /// Most relevant to a message first: [`render_by_relevance`]'s.
    Relevance,
}

/// One description cut to fit the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shortened {
    /// The skill's name.
    pub name: String,
    /// Characters of the description as given (before escaping).
    pub original_chars: usize,
    /// Characters of it kept (before escaping, without the `…`).
    pub kept_chars: usize,
}

impl BudgetReport {
    /// Whether every skill given is shown with its whole description.
    pub fn is_clean(&self) -> bool {
        self.shortened.is_empty() && self.omitted.is_empty()
    }

    /// What the skills left out are, in the summary: the last of the order given.
    fn lowest(&self) -> &'static str {
        match self.order {
            PromptOrder::Precedence => "the lowest in precedence",
            PromptOrder::Relevance => "the least relevant",
        }
    }

    fn budget_phrase(&self) -> String {
        match self.budget {
            Some(b) => format!("the {b}-character budget of the prompt block"),
            None => "the prompt block".to_owned(),
        }
    }
}

impl BudgetReport {
    /// One line per shortened description, then one per omitted skill (nothing when clean):
    /// the full account behind the [summary](fmt::Display).
    pub fn details(&self) -> String {
        let within = self.budget_phrase();
        let shortened = self.shortened.iter().map(|s| {
            format!(
                "description of skill `{}` shortened from {} to {} characters to fit {within}",
                s.name, s.original_chars, s.kept_chars
            )
        });
        let omitted = self
            .omitted
            .iter()
            .map(|name| format!("skill `{name}` omitted: it does not fit {within}"));
        shortened.chain(omitted).collect::<Vec<_>>().join("\n")
    }
}

/// A summary of at most two lines, whatever the number of skills: how many skills were omitted
/// (the first and last of them named) and how many descriptions shortened (the least and most
/// kept); nothing when clean. [`details`](BudgetReport::details) lists every one.
impl fmt::Display for BudgetReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let within = self.budget_phrase();
        let lowest = self.lowest();
        let mut first = true;
        let mut line = |f: &mut fmt::Formatter<'_>, args: fmt::Arguments<'_>| {
            if !std::mem::take(&mut first) {
                f.write_str("\n")?;
            }
            f.write_fmt(args)
        };
        match self.omitted.as_slice() {
            [] => {}
            [one] => line(
                f,
                format_args!(
                    "1 of {} skills omitted to fit {within}: `{one}` ({lowest})",
                    self.total
                ),
            )?,
            [head, .., tail] => line(
                f,
                format_args!(
                    "{} of {} skills omitted to fit {within}, {lowest} first: `{head}` … \
                     `{tail}`",
                    self.omitted.len(),
                    self.total
                ),
            )?,
        }
        let kept = self.shortened.iter().map(|s| s.kept_chars);
        if let (Some(least), Some(most)) = (kept.clone().min(), kept.max()) {
            let range = if least == most {
                format!("{least}")
            } else {
                format!("{least}–{most}")
            };
            line(
                f,
                format_args!(
                    "{} of {} descriptions shown shortened to {range} characters (cut at a word) \
                     to fit {within}",
                    self.shortened.len(),
                    self.included
                ),
            )?;
        }
        Ok(())
    }
}

/// Escapes text as Python's `html.escape` does: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`,
/// `"` → `&quot;`, `'` → `&#x27;`; and control characters other than line feed and tab as
/// [`escape_controls`] writes them (`\u001b`).
///
/// ```
/// assert_eq!(skillcat_core::prompt::escape_xml("a<b & 'c'"), "a&lt;b &amp; &#x27;c&#x27;");
/// ```
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped_xml(&mut out, s);
    out
}

/// Renders the block for `skills` (highest precedence first) as `opts` says.
///
/// See the [module docs](self) for the formats and the budget policy.
pub fn render(skills: &[PromptSkill<'_>], opts: &PromptOptions) -> Rendered {
    let format = opts.format;
    let mut report = BudgetReport {
        budget: opts.budget,
        total: skills.len(),
        included: skills.len(),
        ..BudgetReport::default()
    };
    if skills.is_empty() && opts.omit_when_empty {
        return Rendered {
            text: String::new(),
            report,
        };
    }
    let full = render_block(format, skills);
    let Some(budget) = opts.budget else {
        return Rendered { text: full, report };
    };
    if full.chars().count() <= budget {
        return Rendered { text: full, report };
    }

    // Step 1: the longest prefix of the list that fits with every description at its floor
    // (whole when short, else cut at a word after `DESCRIPTION_FLOOR` characters).
    let frame = char_len(&render_block(format, &[]));
    let sep = format.separator_len();
    let room_limit = budget.saturating_sub(frame) + MAX_CHAR_COST;
    let mut bare_total = frame;
    let mut floor_total = frame;
    let mut costs: Vec<DescCost> = Vec::new();
    if frame <= budget {
        for (i, skill) in skills.iter().enumerate() {
            let bare = PromptSkill {
                description: "",
                ..*skill
            };
            let item =
                char_len(&render_block(format, &[bare])) - frame + if i > 0 { sep } else { 0 };
            let cost = DescCost::new(format, skill.description, room_limit);
            let at_floor = cost.cost_of(cost.floor());
            if floor_total + item + at_floor > budget {
                break;
            }
            bare_total += item;
            floor_total += item + at_floor;
            costs.push(cost);
        }
    }
    let included = costs.len();
    report.included = included;
    report.omitted = skills[included..]
        .iter()
        .map(|s| s.name.to_owned())
        .collect();
    if included == 0 {
        let text = if frame <= budget && !opts.omit_when_empty {
            render_block(format, &[])
        } else {
            String::new()
        };
        return Rendered { text, report };
    }

    // Step 2: share what is left among the descriptions, each kept at its floor at least.
    let kept = &skills[..included];
    let cuts = share(&costs, budget - bare_total);
    let mut descriptions: Vec<Cow<'_, str>> = Vec::with_capacity(included);
    for ((skill, cost), cut) in kept.iter().zip(&costs).zip(&cuts) {
        match *cut {
            Cut::Whole => descriptions.push(Cow::Borrowed(skill.description)),
            Cut::Keep { chars } => {
                let end = skill
                    .description
                    .char_indices()
                    .nth(chars)
                    .map_or(skill.description.len(), |(i, _)| i);
                let mut d = String::with_capacity(end + 3);
                d.push_str(&skill.description[..end]);
                d.push('…');
                descriptions.push(Cow::Owned(d));
                report.shortened.push(Shortened {
                    name: skill.name.to_owned(),
                    original_chars: cost.chars,
                    kept_chars: chars,
                });
            }
        }
    }
    let view: Vec<PromptSkill<'_>> = kept
        .iter()
        .zip(&descriptions)
        .map(|(s, d)| PromptSkill {
            description: d,
            ..*s
        })
        .collect();
    let text = render_block(format, &view);
    debug_assert_eq!(
        char_len(&text),
        bare_total
            + costs
                .iter()
                .zip(&cuts)
                .map(|(c, cut)| c.cost_of(*cut))
                .sum::<usize>()
    );
    debug_assert!(char_len(&text) <= budget);
    Rendered { text, report }
}

/// Renders the block for `skills` put in the order of `ranked`, positions in `skills` of the
/// skills most relevant to a message first (what a matcher ranks, as `skillcat match` does);
/// the skills it does not name follow in their own order. A budget that binds then keeps the
/// most relevant ones, and the report calls the ones left out the least relevant. A position
/// out of range or named twice is ignored.
///
/// ```
/// use skillcat_core::prompt::{render_by_relevance, PromptOptions, PromptSkill};
///
/// let skills = [
///     PromptSkill { name: "a", description: "Notes.", location: "/s/a/SKILL.md" },
///     PromptSkill { name: "b", description: "PDF forms.", location: "/s/b/SKILL.md" },
///     PromptSkill { name: "c", description: "Logs.", location: "/s/c/SKILL.md" },
/// ];
/// let out = render_by_relevance(&skills, &[1], &PromptOptions::default());
/// let b = out.text.find("<name>\nb").unwrap();
/// assert!(b < out.text.find("<name>\na").unwrap());
/// assert!(out.text.find("<name>\na").unwrap() < out.text.find("<name>\nc").unwrap());
/// ```
pub fn render_by_relevance(
    skills: &[PromptSkill<'_>],
    ranked: &[usize],
    opts: &PromptOptions,
) -> Rendered {
    let mut taken = vec![false; skills.len()];
    let mut ordered = Vec::with_capacity(skills.len());
    for &i in ranked {
        if i < skills.len() && !std::mem::replace(&mut taken[i], true) {
            ordered.push(skills[i]);
        }
    }
    ordered.extend(
        skills
            .iter()
            .zip(&taken)
            .filter(|&(_, &t)| !t)
            .map(|(s, _)| *s),
    );
    let mut rendered = render(&ordered, opts);
    rendered.report.order = PromptOrder::Relevance;
    rendered
}

/// The most characters one source character renders as (`&quot;`, `&#x27;`, `\u0001`).
const MAX_CHAR_COST: usize = 6;

/// The fewest characters of a description the block shows when it shortens it (counted before
/// escaping, without the `…`): a description is shown whole, or cut at a word after at least
/// this many characters — never reduced to a few letters. Skills that do not fit even so are
/// omitted, the lowest in precedence first.
pub const DESCRIPTION_FLOOR: usize = 100;

/// How far past [`DESCRIPTION_FLOOR`] a cut may reach to end the word in progress; a longer run
/// without whitespace is cut between characters at the floor.
const WORD_SLACK: usize = 24;

fn char_len(s: &str) -> usize {
    s.chars().count()
}

impl PromptFormat {
    /// Characters a source character costs inside a rendered description.
    fn char_cost(self, c: char) -> usize {
        match self {
            PromptFormat::Xml => match c {
                '&' => 5,
                '<' | '>' => 4,
                '"' | '\'' => 6,
                c if is_escaped_control(c) => 6,
                _ => 1,
            },
            PromptFormat::Markdown => 1,
            // serde_json's escape table: short escapes for these, `\u00XX` for other controls.
            PromptFormat::Json => match c {
                '"' | '\\' | '\u{08}' | '\t' | '\n' | '\u{0C}' | '\r' => 2,
                '\0'..='\u{1F}' => 6,
                _ => 1,
            },
        }
    }

    /// Characters a non-empty description adds beside its own (Markdown's `: `).
    fn description_extra(self) -> usize {
        match self {
            PromptFormat::Markdown => 2,
            PromptFormat::Xml | PromptFormat::Json => 0,
        }
    }

    /// Characters between two skills beyond their own (JSON's `,`).
    fn separator_len(self) -> usize {
        match self {
            PromptFormat::Json => 1,
            PromptFormat::Xml | PromptFormat::Markdown => 0,
        }
    }
}

fn push_escaped_xml(out: &mut String, s: &str) {
    let mut rest = s;
    while let Some(i) =
        rest.find(|c: char| matches!(c, '&' | '<' | '>' | '"' | '\'') || is_escaped_control(c))
    {
        out.push_str(&rest[..i]);
        let c = rest[i..].chars().next().expect("found above");
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => push_control(out, c),
        }
        rest = &rest[i + c.len_utf8()..];
    }
    out.push_str(rest);
}

/// Whether `c` is a control character shown escaped to people: every one (C0, DEL, C1) but
/// line feed and tab. A carriage return or an escape sequence from a skill's text must not
/// move a terminal's cursor, clear its screen or set its title.
fn is_escaped_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `\u001b`: six characters for every control character (all are below U+00A0).
fn push_control(out: &mut String, c: char) {
    use std::fmt::Write;
    let _ = write!(out, "\\u{:04x}", c as u32);
}

/// `s` with its control characters (all but line feed and tab) written `\u001b`, for text
/// shown to people: names, descriptions, locations, messages. Text without any is returned
/// as it is.
///
/// ```
/// use skillcat_core::prompt::escape_controls;
/// assert_eq!(escape_controls("a\u{1b}]0;x\u{7}b\r"), "a\\u001b]0;x\\u0007b\\u000d");
/// assert_eq!(escape_controls("plain\ttext\n"), "plain\ttext\n");
/// ```
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_escaped_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_escaped_control(c) {
            push_control(&mut out, c);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn push_markdown(out: &mut String, s: &str) {
    out.extend(s.chars().map(|c| if c.is_control() { ' ' } else { c }));
}

fn render_block(format: PromptFormat, skills: &[PromptSkill<'_>]) -> String {
    match format {
        PromptFormat::Xml => {
            let mut out = String::from("<available_skills>");
            for s in skills {
                out.push_str("\n<skill>\n<name>\n");
                push_escaped_xml(&mut out, s.name);
                out.push_str("\n</name>\n<description>\n");
                push_escaped_xml(&mut out, s.description);
                out.push_str("\n</description>\n<location>\n");
                out.push_str(&escape_controls(s.location));
                out.push_str("\n</location>\n</skill>");
            }
            out.push_str("\n</available_skills>");
            out
        }
        PromptFormat::Markdown => {
            let mut out = String::from("## Available skills");
            for s in skills {
                out.push_str("\n- **");
                push_markdown(&mut out, s.name);
                out.push_str("**");
                if !s.description.is_empty() {
                    out.push_str(": ");
                    push_markdown(&mut out, s.description);
                }
                out.push_str(" (");
                push_markdown(&mut out, s.location);
                out.push(')');
            }
            out
        }
        PromptFormat::Json => {
            #[derive(Serialize)]
            struct Block<'a> {
                skills: &'a [PromptSkill<'a>],
            }
            serde_json::to_string(&Block { skills })
                .expect("serializing borrowed strings to a String cannot fail")
        }
    }
}

/// How much of a description is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// All of it.
    Whole,
    /// Its first `chars` characters, then `…`.
    Keep { chars: usize },
}

/// The rendered cost of one description's prefixes, and where it may be cut.
struct DescCost {
    /// Source characters.
    chars: usize,
    /// Rendered characters of the whole description.
    full: usize,
    /// `prefix[j]`: rendered characters of the first `j` source characters, for every `j` up to
    /// the floor and every further `j` whose value is at most the limit given to
    /// [`DescCost::new`] (larger ones are never needed).
    prefix: Vec<usize>,
    /// The floor cut: the fewest characters kept ([`DESCRIPTION_FLOOR`], to the end of the
    /// word in progress); `chars` when the description is never cut.
    floor: usize,
    /// Where a longer cut may end, past the floor: each word end (a character followed by
    /// whitespace), or — when nothing past the floor is followed by whitespace (a long URL,
    /// text written without spaces) — every character.
    ends: Vec<usize>,
    /// [`PromptFormat::description_extra`].
    extra: usize,
}

impl DescCost {
    fn new(format: PromptFormat, description: &str, limit: usize) -> Self {
        let text: Vec<char> = description.chars().collect();
        let chars = text.len();
        let is_end = |j: usize| {
            j > 0 && j < chars && text[j].is_whitespace() && !text[j - 1].is_whitespace()
        };
        let floor = if chars <= DESCRIPTION_FLOOR {
            chars
        } else {
            match (DESCRIPTION_FLOOR..chars).find(|&j| is_end(j)) {
                Some(j) if j <= DESCRIPTION_FLOOR + WORD_SLACK => j,
                _ if chars <= DESCRIPTION_FLOOR + WORD_SLACK => chars,
                _ => DESCRIPTION_FLOOR,
            }
        };
        let mut prefix = vec![0];
        let mut full = 0;
        for (j, &c) in text.iter().enumerate() {
            full += format.char_cost(c);
            if j < floor || full <= limit {
                prefix.push(full);
            }
        }
        let stored = prefix.len() - 1;
        let words = (floor + 1..chars).any(&is_end);
        let ends = (floor + 1..=stored.min(chars.saturating_sub(1)))
            .filter(|&j| !words || is_end(j))
            .collect();
        DescCost {
            chars,
            full,
            prefix,
            floor,
            ends,
            extra: format.description_extra(),
        }
    }

    /// The least the description is shown as: whole, or cut at the floor.
    fn floor(&self) -> Cut {
        if self.floor >= self.chars {
            Cut::Whole
        } else {
            Cut::Keep { chars: self.floor }
        }
    }

    /// The cut under a cap of `cap` rendered characters: whole when it fits, else the longest
    /// cut (the mark included) within the cap, never below the floor.
    fn cut_at(&self, cap: usize) -> Cut {
        if self.full <= cap || self.floor >= self.chars {
            return Cut::Whole;
        }
        // With the mark (one character) within the cap.
        let fits = self.ends.partition_point(|&j| self.prefix[j] < cap);
        match fits {
            0 => Cut::Keep { chars: self.floor },
            n => Cut::Keep {
                chars: self.ends[n - 1],
            },
        }
    }

    /// Rendered characters the description adds under `cut`, with the format's extra.
    fn cost_of(&self, cut: Cut) -> usize {
        let own = match cut {
            Cut::Whole => self.full,
            Cut::Keep { chars } => self.prefix[chars] + 1,
        };
        if own > 0 { own + self.extra } else { 0 }
    }

    fn cost_at(&self, cap: usize) -> usize {
        self.cost_of(self.cut_at(cap))
    }
}

/// Shares `room` rendered characters among descriptions that fit at their floors: the largest
/// cap every description may take up to (short ones kept whole, long ones cut at a word), as
/// if handed out one character at a time round-robin.
fn share(costs: &[DescCost], room: usize) -> Vec<Cut> {
    let whole: usize = costs.iter().map(|c| c.cost_of(Cut::Whole)).sum();
    if whole <= room {
        return vec![Cut::Whole; costs.len()];
    }
    let total_at = |cap: usize| costs.iter().map(|c| c.cost_at(cap)).sum::<usize>();
    // The largest cap in [0, hi) that fits: at cap 0 every description is at its floor, which
    // fits (step 1 chose the skills so); at the longest description's length the total is
    // `whole`, too much. Caps beyond `room + MAX_CHAR_COST` would need prefixes `DescCost`
    // does not store, and cannot fit anyway.
    let longest = costs.iter().map(|c| c.full).max().unwrap_or(0);
    let (mut lo, mut hi) = (0, longest.min(room + MAX_CHAR_COST));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if total_at(mid) <= room {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    costs.iter().map(|c| c.cut_at(lo)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill<'a>(name: &'a str, description: &'a str, location: &'a str) -> PromptSkill<'a> {
        PromptSkill {
            name,
            description,
            location,
        }
    }

    fn opts(format: PromptFormat, budget: Option<usize>) -> PromptOptions {
        PromptOptions {
            format,
            budget,
            omit_when_empty: false,
        }
    }

    const FORMATS: [PromptFormat; 3] = [
        PromptFormat::Xml,
        PromptFormat::Markdown,
        PromptFormat::Json,
    ];

    #[test]
    fn xml_zero_skills_matches_reference() {
        let out = render(&[], &PromptOptions::default());
        assert_eq!(out.text, "<available_skills>\n</available_skills>");
        assert!(out.report.is_clean());
        assert_eq!((out.report.total, out.report.included), (0, 0));
    }

    #[test]
    fn xml_one_skill_matches_reference() {
        let out = render(
            &[skill("my-skill", "A test skill", "/root/my-skill/SKILL.md")],
            &PromptOptions::default(),
        );
        assert_eq!(
            out.text,
            "<available_skills>\n<skill>\n<name>\nmy-skill\n</name>\n<description>\nA test skill\n\
             </description>\n<location>\n/root/my-skill/SKILL.md\n</location>\n</skill>\n\
             </available_skills>"
        );
    }

    #[test]
    fn xml_two_skills_match_reference_in_order() {
        let out = render(
            &[
                skill("skill-a", "First skill", "/root/skill-a/SKILL.md"),
                skill("skill-b", "Second skill", "/root/skill-b/SKILL.md"),
            ],
            &PromptOptions::default(),
        );
        assert_eq!(
            out.text,
            "<available_skills>\n<skill>\n<name>\nskill-a\n</name>\n<description>\nFirst skill\n\
             </description>\n<location>\n/root/skill-a/SKILL.md\n</location>\n</skill>\n<skill>\n\
             <name>\nskill-b\n</name>\n<description>\nSecond skill\n</description>\n<location>\n\
             /root/skill-b/SKILL.md\n</location>\n</skill>\n</available_skills>"
        );
    }

    #[test]
    fn xml_escapes_name_and_description_as_html_escape() {
        let out = render(
            &[skill(
                "special-skill",
                r#"Use <foo> & <bar> tags, "quoted" and 'single'"#,
                "/root/special-skill/SKILL.md",
            )],
            &PromptOptions::default(),
        );
        assert_eq!(
            out.text,
            "<available_skills>\n<skill>\n<name>\nspecial-skill\n</name>\n<description>\n\
             Use &lt;foo&gt; &amp; &lt;bar&gt; tags, &quot;quoted&quot; and &#x27;single&#x27;\n\
             </description>\n<location>\n/root/special-skill/SKILL.md\n</location>\n</skill>\n\
             </available_skills>"
        );
        let named = render(&[skill("a&b", "", "/x")], &PromptOptions::default());
        assert!(named.text.contains("\na&amp;b\n"));
    }

    #[test]
    fn escape_xml_replaces_ampersand_first() {
        assert_eq!(escape_xml("&lt;"), "&amp;lt;");
        assert_eq!(escape_xml(r#"<>&"'"#), "&lt;&gt;&amp;&quot;&#x27;");
        assert_eq!(escape_xml("plain ünïcode"), "plain ünïcode");
        assert_eq!(escape_xml(""), "");
    }

    #[test]
    fn xml_location_is_not_escaped() {
        let out = render(
            &[skill("s", "d", "/a&b/<c>/SKILL.md")],
            &PromptOptions::default(),
        );
        assert!(out.text.contains("\n/a&b/<c>/SKILL.md\n"));
    }

    #[test]
    fn markdown_format() {
        let skills = [
            skill("a", "Does\nthings.", "/s/a/SKILL.md"),
            skill("b", "", "/s/b/SKILL.md"),
        ];
        let out = render(&skills, &opts(PromptFormat::Markdown, None));
        assert_eq!(
            out.text,
            "## Available skills\n- **a**: Does things. (/s/a/SKILL.md)\n- **b** (/s/b/SKILL.md)"
        );
        assert_eq!(
            render(&[], &opts(PromptFormat::Markdown, None)).text,
            "## Available skills"
        );
    }

    #[test]
    fn json_format_is_compact_and_ordered() {
        let skills = [
            skill("a", "say \"hi\"\n", "/s/a/SKILL.md"),
            skill("b", "x", "/b"),
        ];
        let out = render(&skills, &opts(PromptFormat::Json, None));
        assert_eq!(
            out.text,
            r#"{"skills":[{"name":"a","description":"say \"hi\"\n","location":"/s/a/SKILL.md"},{"name":"b","description":"x","location":"/b"}]}"#
        );
        let back: serde_json::Value = serde_json::from_str(&out.text).unwrap();
        assert_eq!(back["skills"][0]["description"], "say \"hi\"\n");
        assert_eq!(
            render(&[], &opts(PromptFormat::Json, None)).text,
            r#"{"skills":[]}"#
        );
    }

    #[test]
    fn char_costs_stay_within_max_char_cost() {
        for c in (0u32..0x300).filter_map(char::from_u32) {
            for format in FORMATS {
                assert!(format.char_cost(c) <= MAX_CHAR_COST);
            }
        }
    }

    #[test]
    fn json_char_cost_matches_serde_json() {
        let samples = (0u32..0x300)
            .chain([0x2028, 0x2029, 0xFEFF, 0x1F600])
            .filter_map(char::from_u32);
        for c in samples {
            let s = serde_json::to_string(&c.to_string()).unwrap();
            assert_eq!(
                PromptFormat::Json.char_cost(c),
                s.chars().count() - 2,
                "{c:?}"
            );
        }
    }

    #[test]
    fn omit_when_empty_gives_empty_text_in_every_format() {
        for format in FORMATS {
            let o = PromptOptions {
                format,
                budget: None,
                omit_when_empty: true,
            };
            assert_eq!(render(&[], &o).text, "", "{format:?}");
            let one = render(&[skill("a", "b", "/c")], &o);
            assert!(!one.text.is_empty());
            // All omitted by the budget: the block shows no skill, so it is omitted too.
            let frame = render(&[], &opts(format, None)).text.chars().count();
            let tiny = render(
                &[skill("a", "b", "/c")],
                &PromptOptions {
                    budget: Some(frame + 1),
                    ..o
                },
            );
            assert_eq!(tiny.text, "", "{format:?}");
            assert_eq!(tiny.report.omitted, ["a"]);
        }
    }

    #[test]
    fn budget_large_enough_changes_nothing() {
        let skills = [skill("a", "one & two", "/a"), skill("b", "three", "/b")];
        for format in FORMATS {
            let free = render(&skills, &opts(format, None));
            let n = free.text.chars().count();
            let exact = render(&skills, &opts(format, Some(n)));
            assert_eq!(exact.text, free.text);
            assert!(exact.report.is_clean());
            assert_eq!(exact.report.budget, Some(n));
            assert_eq!(exact.report.to_string(), "");
            let tight = render(&skills, &opts(format, Some(n - 1)));
            assert!(!tight.report.is_clean());
            assert!(tight.text.chars().count() < n);
        }
    }

    /// `n` words of `w`, joined by spaces.
    fn words(w: &str, n: usize) -> String {
        vec![w; n].join(" ")
    }

    /// Characters of the XML block of skill `a` at `/a` with an empty description.
    fn bare_len() -> usize {
        render(&[skill("a", "", "/a")], &PromptOptions::default())
            .text
            .chars()
            .count()
    }

    /// The description between the tags of the first skill of an XML block.
    fn first_description(text: &str) -> &str {
        text.split("<description>\n")
            .nth(1)
            .and_then(|r| r.split("\n</description>").next())
            .unwrap()
    }

    #[test]
    fn budget_shortens_long_description_at_a_word_and_keeps_short_one() {
        let long = words("abcd", 60); // 299 characters
        let skills = [skill("a", "short", "/a"), skill("b", &long, "/b")];
        let full = render(&skills, &opts(PromptFormat::Xml, None)).text;
        let budget = full.chars().count() - 100;
        let out = render(&skills, &opts(PromptFormat::Xml, Some(budget)));
        assert!(out.text.chars().count() <= budget);
        assert!(out.text.contains("\nshort\n"));
        // 199 characters of room: 39 words (194 characters) and the mark.
        assert!(out.text.contains(&format!("\n{}…\n", words("abcd", 39))));
        assert_eq!(
            out.report.shortened,
            [Shortened {
                name: "b".into(),
                original_chars: 299,
                kept_chars: 194
            }]
        );
        assert!(out.report.omitted.is_empty());
        assert_eq!(out.report.included, 2);
    }

    #[test]
    fn equal_descriptions_are_cut_alike() {
        let long = words("yyyy", 50);
        let skills = [skill("a", &long, "/a"), skill("b", &long, "/b")];
        let empty = [skill("a", "", "/a"), skill("b", "", "/b")];
        let base = render(&empty, &PromptOptions::default())
            .text
            .chars()
            .count();
        let out = render(&skills, &opts(PromptFormat::Xml, Some(base + 300)));
        let kept: Vec<usize> = out.report.shortened.iter().map(|s| s.kept_chars).collect();
        // A cap of 150 each: 30 words (149 characters) and the mark.
        assert_eq!(kept, [149, 149]);
        assert!(out.text.chars().count() <= base + 300);
    }

    #[test]
    fn a_description_is_never_cut_below_its_floor() {
        // 130 characters: cut at the floor it keeps 104 (to the end of a word) and the mark.
        let desc = words("word", 26);
        let skills = [skill("a", &desc, "/a")];
        let bare = bare_len();
        let at_floor = render(&skills, &opts(PromptFormat::Xml, Some(bare + 105)));
        assert_eq!(
            first_description(&at_floor.text),
            format!("{}…", words("word", 21))
        );
        assert_eq!(at_floor.report.shortened[0].kept_chars, 104);
        // One character less, and the skill does not fit at all: omitted, not cut to a stub.
        let below = render(&skills, &opts(PromptFormat::Xml, Some(bare + 104)));
        assert_eq!(below.report.omitted, ["a"]);
        assert_eq!(below.text, "<available_skills>\n</available_skills>");
        // A description of at most the floor is never cut.
        let short = "s".repeat(DESCRIPTION_FLOOR);
        let one = [skill("a", &short, "/a")];
        let tight = render(&one, &opts(PromptFormat::Xml, Some(bare + 99)));
        assert_eq!(tight.report.omitted, ["a"]);
        assert!(tight.report.shortened.is_empty());
    }

    #[test]
    fn text_without_spaces_is_cut_between_characters() {
        let url = format!("https://example.com/{}", "x".repeat(300));
        let skills = [skill("a", &url, "/a")];
        let bare = bare_len();
        let out = render(&skills, &opts(PromptFormat::Xml, Some(bare + 151)));
        assert_eq!(out.report.shortened[0].kept_chars, 150);
        assert_eq!(out.text.chars().count(), bare + 151);
        // A word run past the floor that ends within the slack is finished.
        let desc = format!("{} {} tail of it", "a".repeat(95), "b".repeat(20));
        let out = render(
            &[skill("a", &desc, "/a")],
            &opts(PromptFormat::Xml, Some(bare + 117)),
        );
        assert_eq!(out.report.shortened[0].kept_chars, 116);
    }

    #[test]
    fn budget_omits_from_the_end_and_summarises() {
        let skills = [
            skill("first", "one", "/1"),
            skill("second", "two", "/2"),
            skill("third", "three", "/3"),
            skill("fourth", "four", "/4"),
        ];
        let two = render(&skills[..2], &PromptOptions::default()).text;
        let budget = two.chars().count() + 2;
        let out = render(&skills, &opts(PromptFormat::Xml, Some(budget)));
        assert_eq!(out.text, two);
        assert_eq!(out.report.omitted, ["third", "fourth"]);
        assert_eq!((out.report.total, out.report.included), (4, 2));
        assert!(out.report.shortened.is_empty());
        let summary = out.report.to_string();
        assert_eq!(summary.lines().count(), 1, "{summary}");
        assert!(summary.contains("2 of 4 skills omitted"), "{summary}");
        assert!(summary.contains("`third` … `fourth`"), "{summary}");
        assert!(summary.contains(&format!("{budget}-character budget")));
        let details = out.report.details();
        assert_eq!(details.lines().count(), 2);
        assert!(details.contains("skill `third` omitted"));
        assert!(details.contains("skill `fourth` omitted"));
    }

    #[test]
    fn budget_below_empty_block_gives_empty_text() {
        let skills = [skill("a", "b", "/c")];
        for budget in [0, 10, 37] {
            let out = render(&skills, &opts(PromptFormat::Xml, Some(budget)));
            assert_eq!(out.text, "");
            assert_eq!(out.report.omitted, ["a"]);
            assert_eq!(out.report.included, 0);
        }
        let frame = render(&skills, &opts(PromptFormat::Xml, Some(38)));
        assert_eq!(frame.text, "<available_skills>\n</available_skills>");
        assert_eq!(render(&[], &opts(PromptFormat::Xml, Some(5))).text, "");
    }

    #[test]
    fn budget_never_cuts_inside_an_entity() {
        let desc = words("&", 150);
        let skills = [skill("a", &desc, "/a")];
        let bare = bare_len();
        for room in (0..=700).step_by(7) {
            let out = render(&skills, &opts(PromptFormat::Xml, Some(bare + room)));
            assert!(out.text.chars().count() <= bare + room);
            if out.report.included == 0 {
                continue;
            }
            let d = first_description(&out.text);
            let body = d.strip_suffix('…').unwrap_or(d);
            assert!(body.split(' ').all(|w| w == "&amp;"), "room {room}: {d}");
        }
    }

    #[test]
    fn report_counts_source_characters() {
        let d = format!("{} héllo wörld 😀 & more words here", words("ünï", 30));
        let skills = [skill("a", &d, "/a")];
        let bare = bare_len();
        let out = render(&skills, &opts(PromptFormat::Xml, Some(bare + 125)));
        let s = &out.report.shortened[0];
        assert_eq!(s.original_chars, d.chars().count());
        // Counted in characters, not bytes: the 30 words "ünï" (119 characters) and the mark
        // fit the 125 of room; " héllo" would not.
        assert_eq!(s.kept_chars, 119, "{s:?}");
        let shown = first_description(&out.text).strip_suffix('…').unwrap();
        assert_eq!(shown.chars().count(), s.kept_chars);
        assert!(d.starts_with(shown));
        assert!(
            d[shown.len()..].starts_with(' '),
            "cut at a word: {shown:?}"
        );
    }

    #[test]
    fn many_skills_fit_a_codex_sized_budget() {
        let names: Vec<String> = (0..500).map(|i| format!("skill-{i:03}")).collect();
        let descs: Vec<String> = (0..500)
            .map(|i| "Does <things> & more. ".repeat(5 + i % 15))
            .collect();
        let locs: Vec<String> = names.iter().map(|n| format!("/r/{n}/SKILL.md")).collect();
        let skills: Vec<PromptSkill<'_>> = (0..500)
            .map(|i| skill(&names[i], &descs[i], &locs[i]))
            .collect();
        for format in FORMATS {
            for budget in [8_000, 50_000, 200_000] {
                let out = render(&skills, &opts(format, Some(budget)));
                assert!(out.text.chars().count() <= budget);
                let r = &out.report;
                assert_eq!(r.included + r.omitted.len(), 500);
                assert!(r.included > 0);
                assert_eq!(r.omitted.first(), names.get(r.included));
                assert!(out.report.to_string().lines().count() <= 2);
                // Fair: a description cut keeps about as much as any other cut one, give or
                // take a word and an entity; and never less than the floor.
                let kept: Vec<usize> = r.shortened.iter().map(|s| s.kept_chars).collect();
                if let (Some(lo), Some(hi)) = (kept.iter().min(), kept.iter().max()) {
                    assert!(*lo >= DESCRIPTION_FLOOR, "{format:?} {budget}: {lo}");
                    assert!(
                        hi - lo <= 10 + MAX_CHAR_COST,
                        "{format:?} {budget}: {lo}..{hi}"
                    );
                }
            }
        }
    }

    use crate::test_rng::Rng;

    fn random_text(rng: &mut Rng, max: usize) -> String {
        const ALPHABET: [char; 14] = [
            'a', 'b', ' ', '&', '<', '>', '"', '\'', 'é', '😀', '\n', '\\', '\u{1}', '…',
        ];
        let len = rng.below(max + 1);
        (0..len)
            .map(|_| {
                if rng.below(3) == 0 {
                    ALPHABET[rng.below(ALPHABET.len())]
                } else {
                    'z'
                }
            })
            .collect()
    }

    fn no_broken_entity(text: &str) -> bool {
        text.match_indices('&').all(|(i, _)| {
            ["&amp;", "&lt;", "&gt;", "&quot;", "&#x27;"]
                .iter()
                .any(|e| text[i..].starts_with(e))
        })
    }

    #[test]
    fn property_every_budget_fits_and_behaves_monotonically() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..40 {
            let n = rng.below(6);
            let names: Vec<String> = (0..n).map(|i| format!("s{i}-{}", rng.below(100))).collect();
            let descs: Vec<String> = (0..n).map(|_| random_text(&mut rng, 260)).collect();
            let locs: Vec<String> = (0..n).map(|i| format!("/r/{i}/SKILL.md")).collect();
            let skills: Vec<PromptSkill<'_>> = (0..n)
                .map(|i| skill(&names[i], &descs[i], &locs[i]))
                .collect();
            for format in FORMATS {
                let free = render(&skills, &opts(format, None));
                let full_len = free.text.chars().count();
                let mut prev: Option<(usize, usize, Vec<usize>)> = None;
                for budget in 0..=full_len + 3 {
                    let out = render(&skills, &opts(format, Some(budget)));
                    let len = out.text.chars().count();
                    let ctx = format!("round {round} {format:?} budget {budget}");
                    assert!(len <= budget, "{ctx}");
                    let r = &out.report;
                    assert_eq!(r.included + r.omitted.len(), n, "{ctx}");
                    for (name, skill) in r.omitted.iter().zip(&skills[r.included..]) {
                        assert_eq!(name, skill.name, "{ctx}");
                    }
                    if budget >= full_len {
                        assert_eq!(out.text, free.text, "{ctx}");
                        assert!(r.is_clean(), "{ctx}");
                    }
                    if format == PromptFormat::Xml {
                        assert!(no_broken_entity(&out.text), "{ctx}");
                    }
                    if format == PromptFormat::Json && !out.text.is_empty() {
                        let v: serde_json::Value = serde_json::from_str(&out.text).unwrap();
                        let shown = v["skills"].as_array().unwrap();
                        assert_eq!(shown.len(), r.included, "{ctx}");
                        for (j, s) in shown.iter().enumerate() {
                            let d = s["description"].as_str().unwrap();
                            let body = d.strip_suffix('…').unwrap_or(d);
                            assert!(descs[j].starts_with(body), "{ctx}");
                        }
                    }
                    // Kept characters per included skill (whole = all of it).
                    let kept: Vec<usize> = (0..r.included)
                        .map(|i| {
                            r.shortened
                                .iter()
                                .find(|s| s.name == names[i])
                                .map_or(descs[i].chars().count(), |s| s.kept_chars)
                        })
                        .collect();
                    for s in &r.shortened {
                        assert!(s.kept_chars < s.original_chars, "{ctx}");
                        assert!(s.kept_chars >= DESCRIPTION_FLOOR, "{ctx}: {s:?}");
                    }
                    if let Some((_, p_included, p_kept)) = &prev {
                        assert!(r.included >= *p_included, "{ctx}: fewer skills");
                        if r.included == *p_included {
                            for (a, b) in kept.iter().zip(p_kept) {
                                assert!(a >= b, "{ctx}: a description lost characters");
                            }
                        }
                    }
                    prev = Some((len, r.included, kept));
                }
            }
        }
    }
}
