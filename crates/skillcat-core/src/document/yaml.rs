//! Strict YAML reader for SKILL.md frontmatter (StrictYAML-style).
//!
//! A small builder over [`saphyr_parser`] events. It keeps every scalar as the
//! text it was written as (after YAML quoting, escapes, folding and chomping),
//! builds block and flow collections into [`Value::List`] and [`Value::Map`], and
//! refuses everything that makes YAML surprising:
//!
//! - anchors (`&a`), aliases (`*a`) and tags (`!!str`, `!foo`);
//! - merge keys (plain `<<`), duplicate keys, empty keys and keys that are lists
//!   or maps;
//! - more than one document;
//! - nesting deeper than [`MAX_DEPTH`] collections and input over
//!   [`MAX_INPUT_BYTES`].
//!
//! Syntax errors keep the parser's own message and position. Every position is
//! 1-based (line and column, columns counted in characters) and relative to the
//! text handed to [`parse`].
//!
//! The builder is iterative: it keeps an explicit stack of open collections,
//! bounded by [`MAX_DEPTH`], so no input can exhaust the call stack.

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Span, Tag};

use super::{Map, Value};

/// The largest text [`parse`] reads, in bytes (256 KiB).
pub(crate) const MAX_INPUT_BYTES: usize = 256 * 1024;

/// The deepest nesting of lists and maps [`parse`] accepts (a top-level map is depth 1).
pub(crate) const MAX_DEPTH: usize = 32;

/// The longest excerpt of a key or token quoted in an error message, in characters.
const MAX_SHOWN_CHARS: usize = 60;

/// A YAML error with its 1-based position inside the text handed to [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    /// 1-based line in the text handed to [`parse`].
    pub line: usize,
    /// 1-based column (in characters) in the text handed to [`parse`].
    pub col: usize,
    /// What is wrong, without the position (e.g. `duplicate key 'name'`).
    pub message: String,
}

impl YamlError {
    /// An error at a parser marker (whose line is 1-based and column 0-based).
    fn at(mark: Marker, message: impl Into<String>) -> Self {
        Self {
            line: mark.line().max(1),
            col: mark.col().saturating_add(1),
            message: message.into(),
        }
    }

    /// An error about the text as a whole, reported at its start.
    fn at_start(message: impl Into<String>) -> Self {
        Self {
            line: 1,
            col: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.col, self.message
        )
    }
}

impl std::error::Error for YamlError {}

/// Parses one YAML document; `Ok(None)` when it holds no node (empty or comments only).
pub(crate) fn parse(src: &str) -> Result<Option<Value>, YamlError> {
    check_size(src)?;
    // The common shapes of frontmatter are read by a direct scanner, several
    // times faster than the event parser; it declines everything else.
    guarded(|| match parse_fast(src) {
        Some(value) => Ok(Some(value)),
        None => build(src),
    })
}

/// [`parse`] without the fast path: always the saphyr-parser event builder.
#[cfg(any(test, feature = "fuzz-hooks"))]
fn parse_with_saphyr(src: &str) -> Result<Option<Value>, YamlError> {
    check_size(src)?;
    guarded(|| build(src))
}

/// Refuses a text over [`MAX_INPUT_BYTES`].
fn check_size(src: &str) -> Result<(), YamlError> {
    if src.len() > MAX_INPUT_BYTES {
        return Err(YamlError::at_start(format!(
            "frontmatter is too large ({} bytes; the limit is 256 KiB, {MAX_INPUT_BYTES} bytes)",
            src.len()
        )));
    }
    Ok(())
}

/// Runs a reader, turning a panic into an error.
///
/// Defence in depth: the readers never panic, and saphyr-parser has not panicked
/// under fuzzing, but a panic inside the third-party parser on hostile input must
/// become an error, not take the catalog down. (Fuzzers install a panic hook that
/// aborts first, so this does not hide parser bugs from them.)
fn guarded(
    read: impl FnOnce() -> Result<Option<Value>, YamlError>,
) -> Result<Option<Value>, YamlError> {
    match catch_unwind(AssertUnwindSafe(read)) {
        Ok(result) => result,
        Err(_) => Err(YamlError::at_start("internal error in the YAML parser")),
    }
}

/// What the fast path and the saphyr path each make of `src`, for the fuzz target
/// that checks the fast path never reads a text differently from the saphyr path.
#[cfg(feature = "fuzz-hooks")]
pub(crate) fn both_paths(src: &str) -> (Option<Value>, Result<Option<Value>, String>) {
    (
        parse_fast(src),
        parse_with_saphyr(src).map_err(|e| e.to_string()),
    )
}

// ---- the fast path ------------------------------------------------------------
//
// `parse_fast` reads a conservative subset of block YAML directly, line by line,
// and declines (returns `None`) on anything outside it, leaving that text to the
// saphyr path. Whatever it accepts, the saphyr path reads to the same value (the
// tests and the `yaml_fast` fuzz target check this). The subset:
//
// - a block mapping at column 0, one entry a line, keys `[A-Za-z0-9_][A-Za-z0-9_-]*`
//   (at most FAST_MAX_KEY bytes) followed by `:` and a space or the end of the
//   line; no duplicate keys, at most FAST_MAX_ENTRIES entries a map; empty lines
//   only between top-level entries;
// - values on the key's line: a one-line plain scalar (not starting with an
//   indicator, holding no `: ` and no ` #`, not ending in `:`), a one-line
//   double-quoted scalar without `\`, a one-line single-quoted scalar, or
//   nothing (the empty text, when no indented line follows);
// - block scalars `|`, `|-`, `>`, `>-` whose lines are all indented by the same
//   amount, with no blank line in or after them;
// - under a top-level key with nothing after its `:`, one nested block mapping
//   (of the same scalars) or block sequence of one-line scalars, indented by the
//   same amount throughout.
//
// Anywhere: no control character but `\n` (so no tab and no CR), no BOM. Inside
// a scalar, `#`, `&`, `*`, `!`, `[`, `{` and `%` are text (a plain scalar may not
// start with one, and ` #` is refused: it opens a comment); so is `<<`, which
// means a merge only as a key, and keys here are words.

/// The most entries the fast path reads into one map (bounds its duplicate scan).
const FAST_MAX_ENTRIES: usize = 64;

/// The longest key the fast path reads, in bytes (an implicit key may not run
/// past 1024 characters in YAML; this stays well inside that).
const FAST_MAX_KEY: usize = 128;

/// The lines of the text, without their `\n`, with one line of lookahead.
type Lines<'a> = std::iter::Peekable<std::str::SplitTerminator<'a, char>>;

/// Reads `src` when it lies in the fast path's subset; `None` when it does not.
fn parse_fast(src: &str) -> Option<Value> {
    if src.len() > MAX_INPUT_BYTES || !fast_clean(src) {
        return None;
    }
    let mut lines: Lines<'_> = src.split_terminator('\n').peekable();
    let mut map = Map::new();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let (key, rest) = fast_key_line(line)?;
        if map.len() == FAST_MAX_ENTRIES || map.contains_key(key) {
            return None;
        }
        let value = if !rest.is_empty() {
            Value::Text(fast_value(rest, 0, &mut lines)?)
        } else if lines.peek().is_some_and(|next| next.starts_with(' ')) {
            fast_nested(&mut lines)?
        } else {
            Value::Text(String::new())
        };
        map.push_unchecked(key.to_owned(), value);
    }
    if map.is_empty() {
        return None;
    }
    Some(Value::Map(map))
}

/// Whether the text holds no control character but `\n`, and no BOM.
fn fast_clean(src: &str) -> bool {
    let bytes = src.as_bytes();
    let control = |b: u8| ((b < 0x20) & (b != b'\n')) | (b == 0x7f);
    // 0xEF starts a BOM, and other characters from U+F000 on: only then look closer.
    if !fast_any(bytes, |b| control(b) | (b == 0xef)) {
        return true;
    }
    !fast_any(bytes, control) && !src.contains('\u{feff}')
}

/// Whether any byte is a `hit`. Branch-free over fixed-size chunks, so that it vectorises.
#[inline(always)]
fn fast_any(bytes: &[u8], hit: impl Fn(u8) -> bool + Copy) -> bool {
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        if chunk.iter().fold(0u8, |found, &b| found | u8::from(hit(b))) != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| hit(b))
}

/// Whether any two neighbouring bytes are a `hit`; [`fast_any`] over pairs.
#[inline(always)]
fn fast_any_pair(bytes: &[u8], hit: impl Fn(u8, u8) -> bool + Copy) -> bool {
    let Some(last) = bytes.len().checked_sub(1) else {
        return false;
    };
    let (firsts, seconds) = (&bytes[..last], &bytes[1..]);
    let mut chunks = firsts.chunks_exact(32).zip(seconds.chunks_exact(32));
    for (a, b) in &mut chunks {
        let found = a
            .iter()
            .zip(b)
            .fold(0u8, |found, (&x, &y)| found | u8::from(hit(x, y)));
        if found != 0 {
            return true;
        }
    }
    let done = last - last % 32;
    firsts[done..]
        .iter()
        .zip(&seconds[done..])
        .any(|(&x, &y)| hit(x, y))
}

/// The number of spaces a line starts with.
fn fast_indent(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// A `key:` line (starting at the key): the key and what follows the `:`, blanks trimmed.
fn fast_key_line(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    let len = bytes
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        .count();
    if len == 0 || len > FAST_MAX_KEY || bytes[0] == b'-' || bytes.get(len) != Some(&b':') {
        return None;
    }
    let rest = &line[len + 1..];
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((&line[..len], rest.trim_matches(' ')))
}

/// The text of a value written on its key's line (`rest`, trimmed and not empty),
/// reading a block scalar's lines from `lines`; `parent` is the key's indentation.
fn fast_value(rest: &str, parent: usize, lines: &mut Lines<'_>) -> Option<String> {
    match rest {
        "|" => fast_block(lines, parent, true, false),
        "|-" => fast_block(lines, parent, true, true),
        ">" => fast_block(lines, parent, false, false),
        ">-" => fast_block(lines, parent, false, true),
        _ => fast_inline(rest),
    }
}

/// A one-line scalar (`rest`, trimmed and not empty): plain, double- or single-quoted.
fn fast_inline(rest: &str) -> Option<String> {
    let first = *rest.as_bytes().first()?;
    match first {
        b'"' => {
            let inner = rest[1..].strip_suffix('"')?;
            if fast_any(inner.as_bytes(), |b| (b == b'"') | (b == b'\\')) {
                return None;
            }
            Some(inner.to_owned())
        }
        b'\'' => {
            let inner = rest[1..].strip_suffix('\'')?;
            if !inner.contains('\'') {
                return Some(inner.to_owned());
            }
            // Every quote inside must be one of a doubled pair, read left to right.
            let mut out = String::with_capacity(inner.len());
            for (i, piece) in inner.split("''").enumerate() {
                if piece.contains('\'') {
                    return None;
                }
                if i > 0 {
                    out.push('\'');
                }
                out.push_str(piece);
            }
            Some(out)
        }
        b'-' | b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!'
        | b'|' | b'>' | b'%' | b'@' | b'`' => None,
        _ => {
            // `: ` would end the scalar (or be a syntax error), ` #` opens a comment.
            let ends = fast_any_pair(rest.as_bytes(), |a, b| {
                ((a == b':') & (b == b' ')) | ((a == b' ') & (b == b'#'))
            });
            if ends || rest.ends_with(':') {
                return None;
            }
            Some(rest.to_owned())
        }
    }
}

/// The lines of a block scalar whose header was on the key's line (indented by
/// `parent`): literal lines joined by `\n`, folded ones by a space; clipped (one
/// final `\n`) unless `strip`.
fn fast_block(lines: &mut Lines<'_>, parent: usize, literal: bool, strip: bool) -> Option<String> {
    let first = *lines.peek()?;
    let indent = fast_indent(first);
    if indent <= parent {
        return None;
    }
    let mut out = String::with_capacity(first.len() + 1);
    let mut count = 0usize;
    while let Some(&line) = lines.peek() {
        let ind = fast_indent(line);
        if ind == line.len() || ind > indent {
            // A blank line (inside or after the scalar) or a more indented one.
            return None;
        }
        if ind < indent {
            break;
        }
        if count > 0 {
            out.push(if literal { '\n' } else { ' ' });
        }
        out.push_str(&line[indent..]);
        count += 1;
        lines.next();
    }
    if !strip {
        out.push('\n');
    }
    Some(out)
}

/// The block mapping or sequence under a top-level key, starting at the next
/// line (indented).
fn fast_nested(lines: &mut Lines<'_>) -> Option<Value> {
    let first = *lines.peek()?;
    let indent = fast_indent(first);
    if indent == 0 || indent == first.len() {
        return None;
    }
    if first[indent..].starts_with('-') {
        let mut items = Vec::new();
        while let Some(&line) = lines.peek() {
            let ind = fast_indent(line);
            if ind == 0 {
                break;
            }
            if ind != indent {
                return None;
            }
            let rest = line[ind..].strip_prefix("- ")?.trim_matches(' ');
            if rest.is_empty() {
                return None;
            }
            items.push(Value::Text(fast_inline(rest)?));
            lines.next();
        }
        return Some(Value::List(items));
    }
    let mut map = Map::new();
    while let Some(&line) = lines.peek() {
        let ind = fast_indent(line);
        if ind == 0 {
            break;
        }
        if ind != indent {
            return None;
        }
        lines.next();
        let (key, rest) = fast_key_line(&line[ind..])?;
        if map.len() == FAST_MAX_ENTRIES || map.contains_key(key) {
            return None;
        }
        let value = if !rest.is_empty() {
            fast_value(rest, indent, lines)?
        } else {
            // Nothing after the `:`: the empty text, unless a nested node follows
            // (more indented, or a sequence at the same indentation).
            if let Some(&next) = lines.peek() {
                let ind = fast_indent(next);
                if ind > indent || (ind == indent && next[ind..].starts_with('-')) {
                    return None;
                }
            }
            String::new()
        };
        map.push_unchecked(key.to_owned(), Value::Text(value));
    }
    Some(Value::Map(map))
}

/// Runs the parser over `src` and builds the single document it holds.
fn build(src: &str) -> Result<Option<Value>, YamlError> {
    let mut builder = Builder::new(src);
    let mut parser = Parser::new_from_str(src);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| scan_error(src, &e))?;
        if builder.on_event(event, span)? {
            break;
        }
    }
    builder.finish()
}

/// One collection being built.
enum Frame {
    /// A block or flow sequence and the items read so far.
    List(Vec<Value>),
    /// A block or flow mapping.
    Map {
        /// Entries read so far.
        map: Map,
        /// Keys read so far, for constant-time duplicate detection.
        seen: HashSet<String>,
        /// A key whose value has not been read yet.
        key: Option<String>,
    },
}

/// The strict builder: turns parser events into one [`Value`].
struct Builder<'a> {
    /// The text being parsed (to quote what was written in error messages).
    src: &'a str,
    /// Open collections, innermost last; never longer than [`MAX_DEPTH`].
    stack: Vec<Frame>,
    /// The document's node once it is complete.
    root: Option<Value>,
    /// Documents started so far.
    documents: usize,
}

impl<'a> Builder<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            src,
            stack: Vec::new(),
            root: None,
            documents: 0,
        }
    }

    /// Handles one event; `Ok(true)` once the stream has ended.
    fn on_event(&mut self, event: Event<'_>, span: Span) -> Result<bool, YamlError> {
        match event {
            Event::StreamEnd => return Ok(true),
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::DocumentStart(_) => {
                if self.documents > 0 {
                    return Err(YamlError::at(
                        span.start,
                        "more than one YAML document (the frontmatter must be a single document)",
                    ));
                }
                self.documents += 1;
            }
            Event::Alias(_) => {
                let written = written_at(self.src, span.start);
                return Err(YamlError::at(
                    span.start,
                    format!("aliases are not allowed (found '{}')", shown(&written)),
                ));
            }
            Event::Scalar(text, style, anchor, tag) => {
                self.check_node(anchor, tag.as_deref(), span)?;
                self.on_scalar(text.into_owned(), style, span)?;
            }
            Event::SequenceStart(anchor, tag) => {
                self.check_node(anchor, tag.as_deref(), span)?;
                self.open(Frame::List(Vec::new()), "a list", span)?;
            }
            Event::MappingStart(anchor, tag) => {
                self.check_node(anchor, tag.as_deref(), span)?;
                let frame = Frame::Map {
                    map: Map::new(),
                    seen: HashSet::new(),
                    key: None,
                };
                self.open(frame, "a map", span)?;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match self.stack.pop() {
                    Some(Frame::List(items)) => Value::List(items),
                    Some(Frame::Map { map, key, .. }) => {
                        if key.is_some() {
                            // The parser always pairs keys with values; never seen in practice.
                            return Err(YamlError::at(span.start, "mapping key without a value"));
                        }
                        Value::Map(map)
                    }
                    None => {
                        return Err(YamlError::at(
                            span.start,
                            "end of a collection that was never started",
                        ));
                    }
                };
                self.attach(value, span)?;
            }
        }
        Ok(false)
    }

    /// The document's node, once the stream has been read.
    fn finish(self) -> Result<Option<Value>, YamlError> {
        if !self.stack.is_empty() {
            return Err(YamlError::at_start("unexpected end of the YAML text"));
        }
        Ok(self.root)
    }

    /// Whether the next node is the key of the innermost (map) collection.
    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    /// Refuses anchors and tags on a node.
    fn check_node(&self, anchor: usize, tag: Option<&Tag>, span: Span) -> Result<(), YamlError> {
        if anchor == 0 && tag.is_none() {
            return Ok(());
        }
        // The node's span starts at its first property (anchor or tag), so the
        // text there says which of the two comes first.
        let written = written_at(self.src, span.start);
        if anchor != 0 && (tag.is_none() || written.starts_with('&')) {
            return Err(YamlError::at(
                span.start,
                format!("anchors are not allowed (found '{}')", shown(&written)),
            ));
        }
        let tag_text = if written.starts_with('!') {
            written
        } else {
            tag.map(render_tag).unwrap_or_default()
        };
        Err(YamlError::at(
            span.start,
            format!(
                "tags are not allowed (found '{}'); every value is read as text",
                shown(&tag_text)
            ),
        ))
    }

    /// Handles a scalar: a map key or a value.
    fn on_scalar(&mut self, text: String, style: ScalarStyle, span: Span) -> Result<(), YamlError> {
        if let Some(Frame::Map { seen, key, .. }) = self.stack.last_mut()
            && key.is_none()
        {
            if style == ScalarStyle::Plain {
                if text.is_empty() {
                    return Err(YamlError::at(span.start, "mapping key is empty"));
                }
                if text == "<<" {
                    return Err(YamlError::at(
                        span.start,
                        "merge keys ('<<') are not allowed",
                    ));
                }
            }
            if seen.contains(&text) {
                return Err(YamlError::at(
                    span.start,
                    format!("duplicate key '{}'", shown(&text)),
                ));
            }
            seen.insert(text.clone());
            *key = Some(text);
            return Ok(());
        }
        if self.stack.is_empty() && text.is_empty() && style == ScalarStyle::Plain {
            // An empty plain scalar at the top is the parser's stand-in for "no
            // node" (e.g. a lone `---` or `...`): the document holds nothing.
            return Ok(());
        }
        self.attach(Value::Text(text), span)
    }

    /// Opens a list or map, refusing it as a key or beyond the depth cap.
    fn open(&mut self, frame: Frame, what: &str, span: Span) -> Result<(), YamlError> {
        if self.expecting_key() {
            return Err(YamlError::at(
                span.start,
                format!("a mapping key must be text, not {what}"),
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(YamlError::at(
                span.start,
                format!("lists and maps are nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// Adds a finished value to the innermost collection, or makes it the document's node.
    fn attach(&mut self, value: Value, span: Span) -> Result<(), YamlError> {
        match self.stack.last_mut() {
            None => {
                if self.root.is_some() {
                    return Err(YamlError::at(
                        span.start,
                        "more than one YAML document (the frontmatter must be a single document)",
                    ));
                }
                self.root = Some(value);
            }
            Some(Frame::List(items)) => items.push(value),
            Some(Frame::Map { map, key, .. }) => match key.take() {
                // Duplicates were refused when the key was read (`seen`).
                Some(k) => map.push_unchecked(k, value),
                // Collections in key position are refused when they open and
                // scalars become keys in `on_scalar`, so this is unreachable.
                None => return Err(YamlError::at(span.start, "a mapping key must be text")),
            },
        }
        Ok(())
    }
}

/// A parser error, with the parser's own message and position. The one
/// exception: an alias always names an anchor the parser does not know (anchors
/// are refused before any alias can refer to one), which reads better as a refusal.
fn scan_error(src: &str, e: &ScanError) -> YamlError {
    let mark = *e.marker();
    if e.info() == "while parsing node, found unknown anchor" {
        let written = written_at(src, mark);
        return YamlError::at(
            mark,
            format!("aliases are not allowed (found '{}')", shown(&written)),
        );
    }
    YamlError::at(mark, e.info())
}

/// The token written at a marker: up to the next blank or flow indicator (a
/// verbatim tag `!<…>` up to its closing `>`).
fn written_at(src: &str, mark: Marker) -> String {
    let rest = src.chars().skip(mark.index());
    let mut out = String::new();
    let mut verbatim = false;
    for (i, c) in rest.enumerate() {
        if i > MAX_SHOWN_CHARS {
            break;
        }
        if verbatim {
            out.push(c);
            if c == '>' {
                break;
            }
            continue;
        }
        if c.is_whitespace() || matches!(c, ',' | '[' | ']' | '{' | '}') {
            break;
        }
        out.push(c);
        verbatim = out == "!<";
    }
    out
}

/// A tag as it would be written, for when the source text is not at hand.
fn render_tag(tag: &Tag) -> String {
    match tag.handle.as_str() {
        "tag:yaml.org,2002:" => format!("!!{}", tag.suffix),
        "!" => format!("!{}", tag.suffix),
        "" => tag.suffix.clone(),
        handle => format!("!<{handle}{}>", tag.suffix),
    }
}

/// Text quoted in a message: control characters escaped, long text shortened.
fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_SHOWN_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses text that must hold a node.
    fn ok(src: &str) -> Value {
        match parse(src) {
            Ok(Some(v)) => v,
            Ok(None) => panic!("no node in {src:?}"),
            Err(e) => panic!("unexpected error for {src:?}: {e}"),
        }
    }

    /// Parses text that must be refused.
    fn err(src: &str) -> YamlError {
        match parse(src) {
            Ok(v) => panic!("expected an error for {src:?}, got {v:?}"),
            Err(e) => e,
        }
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn list(items: &[&str]) -> Value {
        Value::List(items.iter().map(|s| text(s)).collect())
    }

    /// The value under `key` of a top-level map.
    fn get(src: &str, key: &str) -> Value {
        let v = ok(src);
        let map = v.as_map().unwrap_or_else(|| panic!("not a map: {v:?}"));
        map.get(key)
            .unwrap_or_else(|| panic!("no key {key:?} in {v:?}"))
            .clone()
    }

    fn str_of(src: &str, key: &str) -> String {
        match get(src, key) {
            Value::Text(s) => s,
            other => panic!("not text: {other:?}"),
        }
    }

    // ---- scalars are text ---------------------------------------------------

    #[test]
    fn scalars_stay_text_as_written() {
        for (written, want) in [
            ("1.10", "1.10"),
            ("1.0", "1.0"),
            ("123", "123"),
            ("007", "007"),
            ("0x1F", "0x1F"),
            ("1e3", "1e3"),
            ("-.inf", "-.inf"),
            (".nan", ".nan"),
            ("true", "true"),
            ("False", "False"),
            ("yes", "yes"),
            ("no", "no"),
            ("on", "on"),
            ("null", "null"),
            ("Null", "Null"),
            ("~", "~"),
            ("2024-01-01", "2024-01-01"),
        ] {
            assert_eq!(str_of(&format!("v: {written}\n"), "v"), want, "{written}");
        }
    }

    #[test]
    fn empty_value_is_empty_text() {
        let v = ok("name:\ndescription: x\n");
        let m = v.as_map().unwrap();
        assert_eq!(m.get("name"), Some(&text("")));
        assert_eq!(m.get("description"), Some(&text("x")));
        assert_eq!(str_of("name:", "name"), "");
        assert_eq!(str_of("name:   # only a comment\n", "name"), "");
    }

    #[test]
    fn plain_multiline_scalar_folds() {
        assert_eq!(
            str_of(
                "description: first line\n  second line\n\n  third\n",
                "description"
            ),
            "first line second line\nthird"
        );
    }

    #[test]
    fn plain_scalar_keeps_inner_punctuation() {
        assert_eq!(str_of("v: a:b, c-d # e\n", "v"), "a:b, c-d");
        assert_eq!(str_of("v: before---after\n", "v"), "before---after");
        assert_eq!(str_of("v: http://x.test/a#b\n", "v"), "http://x.test/a#b");
    }

    #[test]
    fn quoted_strings_with_escapes() {
        assert_eq!(
            str_of(r#"v: "a\tb\n\"c\" \\ \u00e9 \x41""#, "v"),
            "a\tb\n\"c\" \\ é A"
        );
        assert_eq!(
            str_of("v: 'it''s \\n not an escape'", "v"),
            "it's \\n not an escape"
        );
        assert_eq!(str_of("v: \"\"", "v"), "");
        assert_eq!(str_of("v: ''", "v"), "");
        assert_eq!(str_of("v: \"1.10\"", "v"), "1.10");
        assert_eq!(str_of("v: \"line\n  folded\"", "v"), "line folded");
    }

    #[test]
    fn bad_escape_is_a_syntax_error() {
        let e = err(r#"v: "\q""#);
        assert_eq!(e.line, 1);
        assert!(!e.message.is_empty());
    }

    #[test]
    fn triple_dash_inside_quoted_value() {
        assert_eq!(
            str_of("description: \"a --- b\"\n", "description"),
            "a --- b"
        );
        assert_eq!(str_of("description: '---'\n", "description"), "---");
        assert_eq!(
            str_of("description: \"x\n  ---\n  y\"\n", "description"),
            "x --- y"
        );
    }

    #[test]
    fn unicode_text_and_keys() {
        let v = ok("name: café\ndescription: 日本語のスキル 🚀\nclé: ü\n");
        let m = v.as_map().unwrap();
        assert_eq!(m.get("name"), Some(&text("café")));
        assert_eq!(m.get("description"), Some(&text("日本語のスキル 🚀")));
        assert_eq!(m.get("clé"), Some(&text("ü")));
    }

    #[test]
    fn comments_are_ignored() {
        let v = ok("# leading\nname: x # trailing\n# between\nlist:\n  - a # c\n  # c\n  - b\n");
        let m = v.as_map().unwrap();
        assert_eq!(m.get("name"), Some(&text("x")));
        assert_eq!(m.get("list"), Some(&list(&["a", "b"])));
        assert_eq!(m.len(), 2);
    }

    // ---- block scalars ------------------------------------------------------

    #[test]
    fn block_scalars_keep_yaml_chomping() {
        let cases = [
            ("v: |\n  line one\n  line two\n", "line one\nline two\n"),
            ("v: >\n  line one\n  line two\n", "line one line two\n"),
            ("v: |-\n  line one\n  line two\n", "line one\nline two"),
            ("v: >-\n  line one\n  line two\n", "line one line two"),
            (
                "v: |+\n  line one\n  line two\n\n\n",
                "line one\nline two\n\n\n",
            ),
            ("v: >+\n  a\n\n", "a\n\n"),
            ("v: |\n  a\n\n  b\n", "a\n\nb\n"),
            ("v: >\n  a\n\n  b\n", "a\nb\n"),
            ("v: >\n  a\n    indented\n  b\n", "a\n  indented\nb\n"),
            ("v: |2\n    two extra\n", "  two extra\n"),
            (
                "v: |\n  keep: colons # and hashes\n",
                "keep: colons # and hashes\n",
            ),
            ("v: |\n  ---\n  inside\n", "---\ninside\n"),
        ];
        for (src, want) in cases {
            assert_eq!(str_of(src, "v"), want, "{src:?}");
        }
    }

    #[test]
    fn block_scalar_followed_by_key() {
        let v = ok("description: >\n  Folded\n  text.\nname: x\n");
        let m = v.as_map().unwrap();
        assert_eq!(m.get("description"), Some(&text("Folded text.\n")));
        assert_eq!(m.get("name"), Some(&text("x")));
    }

    #[test]
    fn top_level_block_scalar() {
        assert_eq!(
            ok(">\n  line one\n  line two\n"),
            text("line one line two\n")
        );
    }

    // ---- collections ----------------------------------------------------------

    #[test]
    fn block_sequences_and_maps() {
        let v = ok("allowed-tools:\n  - Bash\n  - Read\nother:\n- x\n- y\n");
        let m = v.as_map().unwrap();
        assert_eq!(m.get("allowed-tools"), Some(&list(&["Bash", "Read"])));
        assert_eq!(m.get("other"), Some(&list(&["x", "y"])));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["allowed-tools", "other"]);
    }

    #[test]
    fn nested_maps_metadata() {
        let v = ok(
            "name: pdf\nmetadata:\n  author: Ann\n  version: 1.10\n  deep:\n    deeper:\n      - a\n      - k: v\n",
        );
        let meta = v
            .as_map()
            .unwrap()
            .get("metadata")
            .unwrap()
            .as_map()
            .unwrap();
        assert_eq!(meta.get("author"), Some(&text("Ann")));
        assert_eq!(meta.get("version"), Some(&text("1.10")));
        let deeper = meta
            .get("deep")
            .and_then(Value::as_map)
            .and_then(|m| m.get("deeper"))
            .and_then(Value::as_list)
            .unwrap();
        assert_eq!(deeper[0], text("a"));
        assert_eq!(deeper[1].as_map().unwrap().get("k"), Some(&text("v")));
    }

    #[test]
    fn map_keeps_document_order() {
        let v = ok("z: 1\na: 2\nm: 3\n");
        assert_eq!(
            v.as_map().unwrap().keys().collect::<Vec<_>>(),
            ["z", "a", "m"]
        );
    }

    #[test]
    fn flow_collections() {
        assert_eq!(
            get("tools: [a, b, 'c d', \"e\"]", "tools"),
            list(&["a", "b", "c d", "e"])
        );
        assert_eq!(get("tools: []", "tools"), Value::List(vec![]));
        assert_eq!(
            get("tools: [1.10, true, null]", "tools"),
            list(&["1.10", "true", "null"])
        );
        let m = get("meta: {a: b, c: [d, e], f: {g: 1}}", "meta");
        let m = m.as_map().unwrap();
        assert_eq!(m.get("a"), Some(&text("b")));
        assert_eq!(m.get("c"), Some(&list(&["d", "e"])));
        assert_eq!(
            m.get("f").unwrap().as_map().unwrap().get("g"),
            Some(&text("1"))
        );
        assert_eq!(get("meta: {}", "meta"), Value::Map(Map::new()));
        // A key without a value in a flow map is the empty text.
        let m = get("meta: {a, b: c}", "meta");
        assert_eq!(m.as_map().unwrap().get("a"), Some(&text("")));
        // A single pair in a flow sequence is a one-entry map.
        let l = get("l: [a: b]", "l");
        assert_eq!(
            l.as_list().unwrap()[0].as_map().unwrap().get("a"),
            Some(&text("b"))
        );
        // Multi-line flow collections.
        assert_eq!(get("tools: [\n  a,\n  b,\n]\n", "tools"), list(&["a", "b"]));
    }

    #[test]
    fn top_level_shapes() {
        assert_eq!(ok("- a\n- b\n"), list(&["a", "b"]));
        assert_eq!(ok("[a, b]"), list(&["a", "b"]));
        assert_eq!(ok("just text"), text("just text"));
        assert_eq!(ok("1.10"), text("1.10"));
        assert_eq!(ok("\"\""), text(""));
        assert!(matches!(ok("{a: b}"), Value::Map(_)));
    }

    #[test]
    fn no_node_is_none() {
        for src in [
            "",
            "\n",
            "   \n\n",
            "# only a comment\n",
            "# a\n\n# b\n",
            "---\n",
            "---\n# c\n...\n",
        ] {
            assert_eq!(parse(src), Ok(None), "{src:?}");
        }
    }

    #[test]
    fn explicit_document_markers_around_one_document() {
        assert_eq!(str_of("---\nname: x\n", "name"), "x");
        assert_eq!(str_of("name: x\n...\n", "name"), "x");
        assert_eq!(
            str_of("---\nname: x\n...\n# trailing comment\n", "name"),
            "x"
        );
    }

    #[test]
    fn quoted_keys_are_text() {
        let v = ok("\"name\": x\n'a b': y\n\"1.10\": z\n\"\": empty\n");
        let m = v.as_map().unwrap();
        assert_eq!(m.get("name"), Some(&text("x")));
        assert_eq!(m.get("a b"), Some(&text("y")));
        assert_eq!(m.get("1.10"), Some(&text("z")));
        assert_eq!(m.get(""), Some(&text("empty")));
        // Quoted `<<` is plain text, not a merge key.
        assert_eq!(str_of("\"<<\": x\n", "<<"), "x");
    }

    #[test]
    fn crlf_free_input_with_tabs_in_values() {
        // The caller turns CRLF into LF; tabs inside values are ordinary text.
        assert_eq!(str_of("v: a\tb\n", "v"), "a\tb");
    }

    // ---- refusals -------------------------------------------------------------

    #[test]
    fn duplicate_key_on_line_3() {
        let e = err("name: a\ndescription: d\nname: b\n");
        assert_eq!((e.line, e.col), (3, 1));
        assert_eq!(e.message, "duplicate key 'name'");
        assert_eq!(e.to_string(), "line 3, column 1: duplicate key 'name'");
    }

    #[test]
    fn duplicate_keys_in_nested_and_flow_maps() {
        let e = err("metadata:\n  a: 1\n  b: 2\n  a: 3\n");
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (4, 3, "duplicate key 'a'")
        );
        let e = err("m: {a: 1, a: 2}");
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (1, 11, "duplicate key 'a'")
        );
        // Written differently, the same text is the same key.
        let e = err("name: a\n\"name\": b\n");
        assert_eq!((e.line, e.message.as_str()), (2, "duplicate key 'name'"));
        // The same key in different maps is fine.
        ok("a: {x: 1}\nb: {x: 2}\n");
    }

    #[test]
    fn duplicate_key_position_counts_characters() {
        let e = err("é: 1\n  \nm:\n  ü: 1\n  ü: 2\n");
        assert_eq!((e.line, e.col), (5, 3));
        assert_eq!(e.message, "duplicate key 'ü'");
    }

    #[test]
    fn anchors_are_refused() {
        let e = err("a: &x 1\n");
        assert_eq!((e.line, e.col), (1, 4));
        assert_eq!(e.message, "anchors are not allowed (found '&x')");
        let e = err("a: &list\n  - x\n");
        assert_eq!((e.line, e.col), (1, 4));
        assert!(e.message.starts_with("anchors are not allowed"), "{e}");
        let e = err("a:\n  b: [1, &y 2]\n");
        assert_eq!((e.line, e.col), (2, 10));
        let e = err("&top\nk: v\n");
        assert!(e.message.starts_with("anchors are not allowed"), "{e}");
    }

    #[test]
    fn aliases_are_refused() {
        // The anchor is refused first.
        let e = err("a: &x 1\nb: *x\n");
        assert_eq!(
            (e.line, e.message.as_str()),
            (1, "anchors are not allowed (found '&x')")
        );
        // An alias alone (its anchor never defined) is refused as an alias.
        let e = err("a: 1\nb: *x\n");
        assert_eq!((e.line, e.col), (2, 4));
        assert_eq!(e.message, "aliases are not allowed (found '*x')");
        let e = err("[*a, b]");
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (1, 2, "aliases are not allowed (found '*a')")
        );
    }

    #[test]
    fn tags_are_refused() {
        for (src, shown_tag, col) in [
            ("v: !!str 1\n", "!!str", 4),
            ("v: !!int 1\n", "!!int", 4),
            ("v: !foo x\n", "!foo", 4),
            ("v: ! x\n", "!", 4),
            (
                "v: !<tag:yaml.org,2002:str> x\n",
                "!<tag:yaml.org,2002:str>",
                4,
            ),
            ("v: !!map\n  a: b\n", "!!map", 4),
            ("v: !!seq [a]\n", "!!seq", 4),
            ("!!str k: v\n", "!!str", 1),
            ("!!map\na: b\n", "!!map", 1),
        ] {
            let e = err(src);
            assert_eq!((e.line, e.col), (1, col), "{src:?}: {e}");
            assert_eq!(
                e.message,
                format!("tags are not allowed (found '{shown_tag}'); every value is read as text"),
                "{src:?}"
            );
        }
        // A tag whose handle a %TAG directive declares.
        let e = err("%TAG !e! tag:example.com,2000:\n---\nv: !e!x y\n");
        assert_eq!((e.line, e.col), (3, 4));
        assert!(
            e.message.starts_with("tags are not allowed (found '!e!x')"),
            "{e}"
        );
        // Tag and anchor together: whichever comes first is named.
        assert!(
            err("v: !!str &a x\n")
                .message
                .starts_with("tags are not allowed")
        );
        assert!(
            err("v: &a !!str x\n")
                .message
                .starts_with("anchors are not allowed")
        );
    }

    #[test]
    fn merge_keys_are_refused() {
        let e = err("base: {a: 1}\nderived:\n  <<: {b: 2}\n");
        assert_eq!((e.line, e.col), (3, 3));
        assert_eq!(e.message, "merge keys ('<<') are not allowed");
        assert_eq!(err("{<<: x}").message, "merge keys ('<<') are not allowed");
    }

    #[test]
    fn more_than_one_document_is_refused() {
        let e = err("a: b\n---\nc: d\n");
        assert_eq!((e.line, e.col), (2, 1));
        assert!(e.message.starts_with("more than one YAML document"), "{e}");
        assert!(
            err("---\na: b\n---\n")
                .message
                .starts_with("more than one YAML document")
        );
        assert!(
            err("a: b\n...\n---\nc: d\n")
                .message
                .starts_with("more than one YAML document")
        );
        assert!(
            err("a: b\n...\nc: d\n")
                .message
                .starts_with("more than one YAML document")
        );
    }

    #[test]
    fn collection_keys_are_refused() {
        let e = err("? [a, b]\n: c\n");
        assert_eq!((e.line, e.col), (1, 3));
        assert_eq!(e.message, "a mapping key must be text, not a list");
        let e = err("? {a: b}\n: c\n");
        assert_eq!(e.message, "a mapping key must be text, not a map");
        let e = err("m: {[a]: b}");
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (1, 5, "a mapping key must be text, not a list")
        );
        let e = err("? - a\n: b\n");
        assert_eq!(e.message, "a mapping key must be text, not a list");
    }

    #[test]
    fn empty_keys_are_refused() {
        let e = err("a: 1\n: x\n");
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (2, 1, "mapping key is empty")
        );
        assert_eq!(err("{: x}").message, "mapping key is empty");
    }

    #[test]
    fn depth_cap() {
        // 32 nested flow lists are fine, 33 are not.
        let ok_src = format!("{}x{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let mut v = ok(&ok_src);
        for _ in 0..MAX_DEPTH {
            v = v.as_list().unwrap()[0].clone();
        }
        assert_eq!(v, text("x"));
        let deep = format!(
            "{}x{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let e = err(&deep);
        assert_eq!((e.line, e.col), (1, MAX_DEPTH + 1));
        assert_eq!(e.message, "lists and maps are nested deeper than 32 levels");
        // Block maps count the same way (the top-level map is depth 1).
        let mut block = String::new();
        for i in 0..MAX_DEPTH {
            block.push_str(&" ".repeat(i));
            block.push_str(&format!("k{i}:\n"));
        }
        block.push_str(&" ".repeat(MAX_DEPTH));
        block.push_str("last: x\n");
        let e = err(&block);
        assert_eq!(e.line, MAX_DEPTH + 1);
        assert!(e.message.contains("nested deeper than 32"), "{e}");
        // Unclosed, absurdly deep input stops early, long before its end (the
        // scanner reads ahead and has its own limit of 255 open flow collections).
        let e = err(&"[".repeat(100_000));
        assert_eq!(e.line, 1);
        assert!(e.col <= 256, "{e}");
    }

    #[test]
    fn input_size_cap() {
        let big = format!("v: {}\n", "a".repeat(MAX_INPUT_BYTES));
        let e = err(&big);
        assert_eq!((e.line, e.col), (1, 1));
        assert!(e.message.contains("too large"), "{e}");
        assert!(e.message.contains("256 KiB"), "{e}");
        // Just under the cap is read.
        let fits = format!("v: {}", "a".repeat(MAX_INPUT_BYTES - 3));
        assert_eq!(str_of(&fits, "v").len(), MAX_INPUT_BYTES - 3);
    }

    // ---- syntax errors keep the parser's text and position ---------------------

    #[test]
    fn colon_in_plain_value_is_a_syntax_error() {
        let e = err("name: x\ndescription: Use when: x\n");
        assert_eq!(e.line, 2);
        assert_eq!(e.col, 22);
        assert!(
            e.message.starts_with("mapping values are not allowed"),
            "{e}"
        );
        // Quoting fixes it.
        assert_eq!(
            str_of("description: \"Use when: x\"\n", "description"),
            "Use when: x"
        );
    }

    #[test]
    fn other_syntax_errors() {
        for src in [
            "a: [b, c\n",
            "a: {b: c\n",
            "a: \"unterminated\n",
            "a: 'unterminated\n",
            "a:\n  - b\n c: d\n",
            "key: value\n  bad indent: x\n",
            "a: b\n- c\n",
            "]",
            "a: @b\n",
            "a: `b\n",
            "a:\n\t- b\n",
        ] {
            let e = err(src);
            assert!(e.line >= 1 && e.col >= 1, "{src:?}: {e}");
            assert!(!e.message.is_empty(), "{src:?}");
        }
    }

    #[test]
    fn display_format() {
        let e = YamlError {
            line: 3,
            col: 1,
            message: "duplicate key 'name'".into(),
        };
        assert_eq!(e.to_string(), "line 3, column 1: duplicate key 'name'");
        assert_eq!(
            format!("Invalid YAML in frontmatter: {e}"),
            "Invalid YAML in frontmatter: line 3, column 1: duplicate key 'name'"
        );
    }

    #[test]
    fn long_and_control_keys_are_shown_safely() {
        let key = "k".repeat(200);
        let e = err(&format!("{key}: 1\n{key}: 2\n"));
        assert!(e.message.chars().count() < 100, "{}", e.message);
        assert!(e.message.ends_with("…'"), "{}", e.message);
        let e = err("\"a\\nb\": 1\n\"a\\nb\": 2\n");
        assert_eq!(e.message, "duplicate key 'a\\nb'");
    }

    // ---- robustness -------------------------------------------------------------

    /// A small deterministic generator of YAML-ish noise: every input must give a
    /// value or an error, never a panic, and never take long.
    #[test]
    fn never_panics_on_noise() {
        const PIECES: &[&str] = &[
            "a",
            "b",
            ":",
            ": ",
            " ",
            "  ",
            "\n",
            "\n  ",
            "- ",
            "-",
            "[",
            "]",
            "{",
            "}",
            ",",
            "?",
            "? ",
            "&a ",
            "*a",
            "!",
            "!!str ",
            "'",
            "\"",
            "\\",
            "|",
            ">",
            "|-",
            ">+",
            "|2",
            "#",
            " #c",
            "---",
            "...",
            "\t",
            "%YAML 1.2\n",
            "%TAG ! x\n",
            "é",
            "\u{feff}",
            "\r",
            "@",
            "<<",
            "\\x",
            "\\u00",
            "~",
            "\n- ",
            "\n? ",
            "\n: ",
            "\0",
            "\u{85}",
            "\u{2028}",
        ];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let n = (next() % 30) as usize;
            let mut src = String::new();
            for _ in 0..n {
                src.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
            match parse(&src) {
                Ok(_) => {}
                Err(e) => assert!(e.line >= 1 && e.col >= 1, "{src:?}: {e}"),
            }
        }
    }

    #[test]
    fn large_inputs_stay_fast() {
        use std::time::{Duration, Instant};
        let mut many_items = String::from("l:\n");
        while many_items.len() < MAX_INPUT_BYTES - 8 {
            many_items.push_str("- x\n");
        }
        let flow_items = format!("[{}x]", "x,".repeat((MAX_INPUT_BYTES - 8) / 2));
        let long_line = format!("v: {}", "word ".repeat((MAX_INPUT_BYTES - 8) / 5));
        let long_quoted = format!("v: \"{}\"", "\\t".repeat((MAX_INPUT_BYTES - 8) / 2));
        let nested_dashes = "- ".repeat(MAX_INPUT_BYTES / 2 - 1);
        let braces = "{a: ".repeat(MAX_INPUT_BYTES / 4 - 1);
        let brackets = "[".repeat(MAX_INPUT_BYTES);
        for src in [
            many_items,
            flow_items,
            long_line,
            long_quoted,
            nested_dashes,
            braces,
            brackets,
        ] {
            assert!(src.len() <= MAX_INPUT_BYTES);
            let start = Instant::now();
            let _ = parse(&src);
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "slow on {:?}…",
                &src[..10]
            );
        }
    }

    #[test]
    fn many_keys_are_read() {
        // `Map::insert` scans the entries it holds, so a map's cost grows with the
        // square of its size; this stays at a size that is quick in debug builds.
        let mut src = String::new();
        for i in 0..5_000 {
            src.push_str(&format!("k{i}: v{i}\n"));
        }
        let v = ok(&src);
        let m = v.as_map().unwrap();
        assert_eq!(m.len(), 5_000);
        assert_eq!(m.get("k4999"), Some(&text("v4999")));
        let e = err(&format!("{src}k17: again\n"));
        assert_eq!((e.line, e.col), (5_001, 1));
        assert_eq!(e.message, "duplicate key 'k17'");
    }
}

/// The benchmark corpus generator, reused to produce realistic frontmatter.
#[cfg(test)]
#[path = "../../../../benches/support/corpus.rs"]
mod corpus;

/// The fast path against the saphyr path: whatever the fast path reads, the saphyr
/// path reads to the same value, over realistic, generated and mutated texts.
#[cfg(test)]
mod fast_path_tests {
    use super::*;
    use std::path::Path;

    /// Counts from a differential run.
    #[derive(Debug, Default)]
    struct Tally {
        /// Texts checked.
        inputs: usize,
        /// Texts the fast path read.
        fast: usize,
        /// Texts the saphyr path read to a node.
        saphyr_read: usize,
    }

    impl Tally {
        /// Checks one text; `true` when the fast path read it.
        fn check(&mut self, src: &str) -> bool {
            self.inputs += 1;
            let slow = parse_with_saphyr(src);
            if matches!(slow, Ok(Some(_))) {
                self.saphyr_read += 1;
            }
            let Some(fast) = parse_fast(src) else {
                return false;
            };
            assert_eq!(
                slow,
                Ok(Some(fast)),
                "the fast path reads {src:?} differently"
            );
            // `parse` must give the same answer as well.
            assert_eq!(parse(src), slow, "{src:?}");
            self.fast += 1;
            true
        }
    }

    use crate::test_rng::Rng;

    /// Whether a line is a frontmatter fence (`---` and blanks).
    fn is_fence(line: &str) -> bool {
        line.strip_prefix("---")
            .is_some_and(|rest| rest.bytes().all(|b| b == b' ' || b == b'\t'))
    }

    /// The YAML text between the fences of a SKILL.md, as `parse_document` hands it over.
    fn frontmatter_of(text: &str) -> Option<String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let text = text.replace("\r\n", "\n");
        let mut lines = text.split_inclusive('\n');
        if !is_fence(lines.next()?.trim_end_matches('\n')) {
            return None;
        }
        let mut yaml = String::new();
        for line in lines {
            if is_fence(line.strip_suffix('\n').unwrap_or(line)) {
                return Some(yaml);
            }
            yaml.push_str(line);
        }
        None
    }

    /// Frontmatters of the benchmark corpus (the shape of real skills).
    fn corpus_frontmatters() -> Vec<String> {
        let mut out = Vec::new();
        for (n, seed) in [(2000, 42), (1000, 7)] {
            let dir = tempfile::tempdir().unwrap();
            corpus::generate(dir.path(), n, seed).unwrap();
            for entry in std::fs::read_dir(dir.path()).unwrap() {
                let text = std::fs::read_to_string(entry.unwrap().path().join("SKILL.md")).unwrap();
                out.push(frontmatter_of(&text).expect("corpus skills have frontmatter"));
            }
        }
        out
    }

    /// Every SKILL.md under `dir`, recursively.
    fn skill_files(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                skill_files(&path, out);
            } else if path.file_name().is_some_and(|n| n == "SKILL.md")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push(text);
            }
        }
    }

    /// The texts of the conformance vectors (every string under a `text` key).
    fn vector_texts(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(obj) => {
                for (k, v) in obj {
                    match v {
                        serde_json::Value::String(s) if k == "text" => out.push(s.clone()),
                        _ => vector_texts(v, out),
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for v in items {
                    vector_texts(v, out);
                }
            }
            _ => {}
        }
    }

    /// Pieces of the generated documents: `(usual, odd)`; an odd one is picked one time in ten.
    type Pool = (&'static [&'static str], &'static [&'static str]);

    const KEYS: Pool = (
        &[
            "name",
            "name",
            "description",
            "license",
            "metadata",
            "allowed-tools",
            "a",
            "b-c",
            "x_1",
            "K9",
            "7",
            "_k",
        ],
        &[
            "-k", "é", "<<", "\"q\"", "'q'", "? k", "1.10", "k k", "a:b", "---", "...", "",
        ],
    );

    const SEPARATORS: Pool = (&[": ", ":  ", ": "], &[":", " : ", ":\t", ": \t"]);

    const PLAIN: Pool = (
        &[
            "x",
            "a b",
            "Extract PDF forms and review pull requests. Use when the user mentions CSV exports.",
            "1.10",
            "true",
            "~",
            "null",
            "a:b",
            "a#b",
            "Bash(git log:*) Read",
            "Q&A! R&D *.pdf [x] {y} 50%",
            "café",
            "日本語のスキル 🚀",
            "a'b",
            "a\"b",
            "http://x.test/a#b",
            "...",
            "---",
            "a - b",
            "a,b",
            "a\\b",
            "\u{85}x",
            "a\u{a0}b",
            "x\u{2028}y",
            "a  b  ",
            "a'",
            "<<",
        ],
        &[
            "a: b", "a #b", "x:", "x :", "-x", "- x", "-", "?x", ":x", "[x]", "{x}", "50%", "`x`",
            "@x", "*x", "&x", "!x", ",a", "|a", ">a", "%a", "a\tb", "#x", "'", "\"",
        ],
    );

    const DOUBLE: Pool = (
        &[
            "\"\"",
            "\"a b\"",
            "\"1.2.0\"",
            "\"a: b\"",
            "\"it's\"",
            "\"a #b\"",
            "\"#x\"",
            "\" lead\"",
            "\"trail \"",
            "\"é & *x !y\"",
            "\"---\"",
        ],
        &[
            "\"a\\tb\"",
            "\"a\\\"b\"",
            "\"unterminated",
            "\"a\" b",
            "\"a\"b\"",
            "\"a\" # c",
        ],
    );

    const SINGLE: Pool = (
        &[
            "''", "'a b'", "'it''s'", "''''", "'a\\nb'", "'a: b'", "'#x'", "'a''''b'", "' pad '",
        ],
        &["'a'b'", "'unterminated", "'''", "'x' y"],
    );

    const HEADERS: Pool = (
        &["|", "|-", ">", ">-", "|  ", ">- "],
        &["|+", ">2", "| #c", "|-1", ">+"],
    );

    const LINES: Pool = (
        &[
            "line one",
            "keep: colons # and hashes",
            "- not a list",
            "---",
            "...",
            "#x",
            "trailing  ",
            "'q'",
            "\"q\"",
            "é",
            "k: v",
        ],
        &["a\tb", "  more", ""],
    );

    const LIST_MARKS: Pool = (&["- ", "-  "], &["-", "? ", "-\t"]);

    const AFTER: Pool = (&["", " ", "   "], &[" # c", "\t"]);

    /// A piece from a pool: usually a usual one.
    fn piece(rng: &mut Rng, pool: Pool) -> &'static str {
        if rng.one_in(10) {
            rng.pick(pool.1)
        } else {
            rng.pick(pool.0)
        }
    }

    /// One scalar written on a key's line.
    fn scalar(rng: &mut Rng) -> String {
        match rng.below(4) {
            0 | 1 => piece(rng, PLAIN).to_string(),
            2 => piece(rng, DOUBLE).to_string(),
            _ => piece(rng, SINGLE).to_string(),
        }
    }

    /// An indentation: mostly `usual`, sometimes off by one or two.
    fn indent(rng: &mut Rng, usual: usize) -> String {
        let n = match rng.below(30) {
            0 => usual + 1,
            1 => usual.saturating_sub(1),
            2 => usual + 2,
            _ => usual,
        };
        " ".repeat(n)
    }

    /// The lines of a block scalar's content.
    fn block_lines(rng: &mut Rng, out: &mut String, usual: usize) {
        for _ in 0..1 + rng.below(3) {
            if rng.one_in(20) {
                out.push('\n');
            }
            out.push_str(&indent(rng, usual));
            out.push_str(piece(rng, LINES));
            out.push('\n');
        }
    }

    /// A YAML-ish document shaped like frontmatter, inside and just outside the fast subset.
    fn generated(rng: &mut Rng) -> String {
        let mut out = String::new();
        for _ in 0..1 + rng.below(6) {
            if rng.one_in(8) {
                out.push('\n');
            }
            out.push_str(piece(rng, KEYS));
            out.push_str(piece(rng, SEPARATORS));
            match rng.below(7) {
                0 | 1 => out.push_str(&scalar(rng)),
                2 => {
                    out.push_str(piece(rng, HEADERS));
                    out.push('\n');
                    let usual = 1 + rng.below(4);
                    block_lines(rng, &mut out, usual);
                    continue;
                }
                3 => {
                    // A nested map.
                    let usual = 1 + rng.below(4);
                    for _ in 0..1 + rng.below(3) {
                        out.push('\n');
                        out.push_str(&indent(rng, usual));
                        out.push_str(piece(rng, KEYS));
                        out.push_str(piece(rng, SEPARATORS));
                        match rng.below(5) {
                            0 => {}
                            1 => {
                                out.push_str(piece(rng, HEADERS));
                                out.push('\n');
                                let deeper = usual + 1 + rng.below(3);
                                block_lines(rng, &mut out, deeper);
                                out.pop();
                            }
                            _ => out.push_str(&scalar(rng)),
                        }
                    }
                }
                4 => {
                    // A nested list.
                    let usual = rng.below(4);
                    for _ in 0..1 + rng.below(3) {
                        out.push('\n');
                        out.push_str(&indent(rng, usual));
                        out.push_str(piece(rng, LIST_MARKS));
                        out.push_str(&scalar(rng));
                    }
                }
                5 => {}
                _ => {
                    out.push_str(&scalar(rng));
                    out.push_str(piece(rng, AFTER));
                }
            }
            out.push('\n');
        }
        if rng.one_in(6) {
            out.pop();
        }
        out
    }

    const NOISE: &[&str] = &[
        ":", "#", " ", "'", "\"", "\n", "-", "|", ">", "a", "\t", "\\", "&", "*", "!", "[", "{",
        ",", "?", "é", "  ", ": ", " #", "\n  ", "\n- ", "\n\n", "\u{feff}", "\r", "\0", "%", "@",
        "`", ".", "~", "x: y\n", "''", "---\n", "...\n", "<<", "  - ", "\u{85}",
    ];

    /// The nearest char boundary at or before `at`.
    fn boundary(s: &str, mut at: usize) -> usize {
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    /// `src` with one to four random insertions, deletions or replacements.
    fn mutated(rng: &mut Rng, src: &str) -> String {
        let mut s = src.to_string();
        for _ in 0..1 + rng.below(4) {
            let at = boundary(&s, rng.below(s.len() + 1));
            let end = s[at..].chars().next().map_or(at, |c| at + c.len_utf8());
            match rng.below(3) {
                0 => s.insert_str(at, rng.pick(NOISE)),
                1 => s.replace_range(at..end, ""),
                _ => s.replace_range(at..end, rng.pick(NOISE)),
            }
        }
        s
    }

    #[test]
    fn fast_path_agrees_with_saphyr() {
        let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // `YAML_FAST_ROUNDS=n` multiplies the generated and mutated texts, for a longer run.
        let rounds: usize = std::env::var("YAML_FAST_ROUNDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);

        // Realistic frontmatter: the benchmark corpus.
        let corpus = corpus_frontmatters();
        let mut corpus_tally = Tally::default();
        for src in &corpus {
            corpus_tally.check(src);
        }

        // The repository's skills and the conformance catalog.
        let mut files = Vec::new();
        skill_files(&root.join("fixtures"), &mut files);
        let fixtures: Vec<String> = files.iter().filter_map(|t| frontmatter_of(t)).collect();
        let mut fixture_tally = Tally::default();
        for src in &fixtures {
            fixture_tally.check(src);
        }

        // The conformance vectors: the frontmatter of each SKILL.md text, else the text.
        let json =
            std::fs::read_to_string(root.join("fixtures/conformance/skills-ref-vectors.json"))
                .unwrap();
        let mut texts = Vec::new();
        vector_texts(&serde_json::from_str(&json).unwrap(), &mut texts);
        let vectors: Vec<String> = texts
            .iter()
            .map(|t| frontmatter_of(t).unwrap_or_else(|| t.clone()))
            .collect();
        let mut vector_tally = Tally::default();
        for src in &vectors {
            vector_tally.check(src);
        }

        // Generated documents inside and around the subset.
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut generated_tally = Tally::default();
        let mut generated_docs = Vec::new();
        for _ in 0..30_000 * rounds {
            let src = generated(&mut rng);
            generated_tally.check(&src);
            if generated_docs.len() < 2_000 {
                generated_docs.push(src);
            }
        }

        // Random mutations of all of the above.
        let mut mutated_tally = Tally::default();
        for i in 0..30_000 * rounds {
            let base = match i % 4 {
                0 => &corpus[rng.below(corpus.len())],
                1 => &fixtures[rng.below(fixtures.len())],
                2 => &vectors[rng.below(vectors.len())],
                _ => &generated_docs[rng.below(generated_docs.len())],
            };
            mutated_tally.check(&mutated(&mut rng, base));
        }

        for (what, tally) in [
            ("corpus", &corpus_tally),
            ("fixtures", &fixture_tally),
            ("vectors", &vector_tally),
            ("generated", &generated_tally),
            ("mutated", &mutated_tally),
        ] {
            println!(
                "{what}: {} texts, {} read by the fast path, {} read by saphyr",
                tally.inputs, tally.fast, tally.saphyr_read
            );
        }
        // Realistic frontmatter takes the fast path.
        assert_eq!(corpus_tally.inputs, 3_000);
        assert!(
            corpus_tally.fast * 100 >= corpus_tally.inputs * 95,
            "{corpus_tally:?}"
        );
        // The other runs exercise the fast path, not only its refusals.
        for tally in [
            &fixture_tally,
            &vector_tally,
            &generated_tally,
            &mutated_tally,
        ] {
            assert!(tally.fast * 10 >= tally.inputs, "{tally:?}");
        }
    }

    fn map(entries: &[(&str, Value)]) -> Value {
        let mut m = Map::new();
        for (k, v) in entries {
            assert!(m.insert((*k).to_string(), v.clone()));
        }
        Value::Map(m)
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    #[test]
    fn fast_path_reads_the_common_shapes() {
        let src = "name: pdf-forms\n\
                   description: >-\n  Fill PDF forms.\n  Use when asked.\n\
                   license: 'MIT''s'\n\
                   note: \"Bash(git log:*) #1\"\n\
                   empty:\n\
                   \n\
                   metadata:\n  author: docs-team\n  version: \"0.4.1\"\n  notes: |\n    a\n    b\n\
                   allowed-tools:\n  - Read\n  - 'Bash(x)'\n";
        let want = map(&[
            ("name", text("pdf-forms")),
            ("description", text("Fill PDF forms. Use when asked.")),
            ("license", text("MIT's")),
            ("note", text("Bash(git log:*) #1")),
            ("empty", text("")),
            (
                "metadata",
                map(&[
                    ("author", text("docs-team")),
                    ("version", text("0.4.1")),
                    ("notes", text("a\nb\n")),
                ]),
            ),
            (
                "allowed-tools",
                Value::List(vec![text("Read"), text("Bash(x)")]),
            ),
        ]);
        assert_eq!(parse_fast(src), Some(want.clone()));
        assert_eq!(parse_with_saphyr(src), Ok(Some(want)));
    }

    #[test]
    fn fast_path_declines_the_rest() {
        for src in [
            "",
            "\n",
            "# comment\nname: x\n",
            "name: x # comment\n",
            "name: a\nname: b\n",
            "name: a: b\n",
            "name: \"a\\tb\"\n",
            "name: first\n  second\n",
            "name: x\n---\n",
            "---\nname: x\n",
            "name: &a x\n",
            "name: [a, b]\n",
            "name: |+\n  a\n",
            "name: |\n  a\n\n  b\n",
            "name: |\n  a\n    b\n",
            "name: |\n  a\n\nnext: x\n",
            "m:\n  a:\n    b: c\n",
            "m:\n  a:\n  - b\n",
            "m:\n- a\n",
            "m:\n  a: b\n\n  c: d\n",
            "m:\n  - a\n   - b\n",
            "\"name\": x\n",
            "name:\tx\n",
            "name: x\r\n",
            "\u{feff}name: x\n",
            "- a\n",
            "just text\n",
        ] {
            assert_eq!(parse_fast(src), None, "{src:?}");
        }
        let long_key = format!("{}: x\n", "k".repeat(FAST_MAX_KEY + 1));
        assert_eq!(parse_fast(&long_key), None);
    }

    /// The chunked byte scans see what they look for at every offset, chunk edges included.
    #[test]
    fn fast_path_scans_every_position() {
        for len in 1..100 {
            let word = "x".repeat(len);
            for at in 1..len {
                let (head, tail) = word.split_at(at);
                for (src, refused) in [
                    (format!("v: {head}: {tail}\n"), true),
                    (format!("v: {head} #{tail}\n"), true),
                    (format!("v: {head}#{tail}\n"), false),
                    (format!("v: \"{head}\\{tail}\"\n"), true),
                    (format!("v: \"{head}\"{tail}\"\n"), true),
                    (format!("v: \"{head}'{tail}\"\n"), false),
                    (format!("v: {head}\t{tail}\n"), true),
                    (format!("v: {head}\0{tail}\n"), true),
                    (format!("v: {head}\u{feff}{tail}\n"), true),
                    (format!("v: {head}\u{ff0c}{tail}\n"), false),
                ] {
                    assert_eq!(parse_fast(&src).is_none(), refused, "{src:?}");
                    Tally::default().check(&src);
                }
            }
        }
    }
}
