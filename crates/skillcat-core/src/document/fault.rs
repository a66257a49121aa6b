//! Faults: what is wrong with a skill, with a stable kind and the reference's wording.

use std::fmt;

/// The stable tag of a [`Fault`]. Programs match on it; it is never reworded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FaultKind {
    /// The path given does not exist.
    MissingPath,
    /// The path given is a file, not a directory.
    NotADirectory,
    /// The directory holds no `SKILL.md` (nor `skill.md`) regular file.
    MissingDocument,
    /// The document does not open with a `---` line.
    MissingFrontmatter,
    /// No closing `---` line.
    UnclosedFrontmatter,
    /// The frontmatter is not valid (strict) YAML.
    BadYaml,
    /// The frontmatter is not a mapping.
    NotAMapping,
    /// The document is not UTF-8.
    NotUtf8,
    /// The document is larger than the limit for documents.
    DocumentTooLarge,
    /// The document or its directory could not be read.
    Unreadable,
    /// Keys outside the spec (and the caller's allowed extensions).
    UnexpectedFields,
    /// No `name`.
    MissingName,
    /// `name` is empty, blank or not text.
    NameEmpty,
    /// `name` is longer than the limit.
    NameTooLong,
    /// `name` is not lowercase.
    NameNotLowercase,
    /// `name` starts or ends with `-`.
    NameEdgeHyphen,
    /// `name` contains `--`.
    NameDoubleHyphen,
    /// `name` has a character that is not a letter, a number or `-`.
    NameBadCharacter,
    /// `name` differs from the directory's name.
    NameMismatch,
    /// No `description`.
    MissingDescription,
    /// `description` is empty, blank or not text.
    DescriptionEmpty,
    /// `description` is longer than the limit.
    DescriptionTooLong,
    /// `compatibility` is not text.
    CompatibilityNotText,
    /// `compatibility` is longer than the limit.
    CompatibilityTooLong,
    /// `skillcat.network` (or a top-level `network`) is neither `true`, `false` nor a list of
    /// valid host patterns (skillcat's own check; the reference validator does not read it).
    NetworkInvalid,
    /// The sidecar `agents/skillcat.yaml` is not a declaration: not UTF-8, not YAML, not a
    /// mapping, too large, or a key it does not know.
    SidecarInvalid,
    /// A declaration is given both in `SKILL.md` and in `agents/skillcat.yaml`.
    DeclaredTwice,
    /// A script the `scripts:` declaration names is not a file of the skill.
    DeclaredScriptMissing,
    /// A warning: the skill is still what `skillcat init` wrote (its placeholder description,
    /// its example script).
    InitTemplate,
    /// A warning: a relative link in the body names a file the skill does not hold.
    LinkMissing,
}

impl FaultKind {
    /// The kebab-case tag (`missing-document`, `name-too-long`, …).
    pub fn as_str(self) -> &'static str {
        use FaultKind::*;
        match self {
            MissingPath => "missing-path",
            NotADirectory => "not-a-directory",
            MissingDocument => "missing-document",
            MissingFrontmatter => "missing-frontmatter",
            UnclosedFrontmatter => "unclosed-frontmatter",
            BadYaml => "bad-yaml",
            NotAMapping => "not-a-mapping",
            NotUtf8 => "not-utf8",
            DocumentTooLarge => "document-too-large",
            Unreadable => "unreadable",
            UnexpectedFields => "unexpected-fields",
            MissingName => "missing-name",
            NameEmpty => "name-empty",
            NameTooLong => "name-too-long",
            NameNotLowercase => "name-not-lowercase",
            NameEdgeHyphen => "name-edge-hyphen",
            NameDoubleHyphen => "name-double-hyphen",
            NameBadCharacter => "name-bad-character",
            NameMismatch => "name-mismatch",
            MissingDescription => "missing-description",
            DescriptionEmpty => "description-empty",
            DescriptionTooLong => "description-too-long",
            CompatibilityNotText => "compatibility-not-text",
            CompatibilityTooLong => "compatibility-too-long",
            NetworkInvalid => "network-invalid",
            SidecarInvalid => "sidecar-invalid",
            DeclaredTwice => "declared-twice",
            DeclaredScriptMissing => "declared-script-missing",
            InitTemplate => "init-template",
            LinkMissing => "link-missing",
        }
    }

    /// Whether this kind is a warning: something an author most likely wants to fix, which
    /// never makes a skill invalid (nor changes an exit code).
    pub fn is_warning(self) -> bool {
        matches!(self, FaultKind::InitTemplate | FaultKind::LinkMissing)
    }

    /// Whether this fault means the text is not a skill document at all (the reader refused it),
    /// as opposed to a document whose fields break a rule.
    pub fn is_refusal(self) -> bool {
        use FaultKind::*;
        matches!(
            self,
            MissingPath
                | NotADirectory
                | MissingDocument
                | MissingFrontmatter
                | UnclosedFrontmatter
                | BadYaml
                | NotAMapping
                | NotUtf8
                | DocumentTooLarge
                | Unreadable
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with a skill: a stable [`kind`](Fault::kind) and a [`message`](Fault::message)
/// worded as the reference validator words it, and sometimes a [`hint`](Fault::hint) of
/// skillcat's own on how to fix it (kept apart, so the message stays the reference's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    kind: FaultKind,
    message: String,
    hint: Option<String>,
}

impl Fault {
    /// A fault of `kind` with `message`.
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Self {
        Fault {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    /// The same fault with a hint on how to fix it.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// How to fix it, when skillcat knows more than the reference's message says (lines
    /// separated by `\n`); never part of [`message`](Fault::message).
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The stable tag.
    pub fn kind(&self) -> FaultKind {
        self.kind
    }

    /// The sentence for people.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `Path does not exist: {path}`.
    pub fn missing_path(path: &str) -> Self {
        Self::new(
            FaultKind::MissingPath,
            format!("Path does not exist: {path}"),
        )
    }

    /// `Not a directory: {path}`.
    pub fn not_a_directory(path: &str) -> Self {
        Self::new(FaultKind::NotADirectory, format!("Not a directory: {path}"))
    }

    /// `Missing required file: SKILL.md`.
    pub fn missing_document() -> Self {
        Self::new(
            FaultKind::MissingDocument,
            "Missing required file: SKILL.md",
        )
    }

    /// The document is larger than `limit` bytes.
    pub fn document_too_large(size: u64, limit: u64) -> Self {
        Self::new(
            FaultKind::DocumentTooLarge,
            format!("SKILL.md is too large ({size} bytes; the limit is {limit} bytes)"),
        )
    }

    /// The skill could not be read.
    pub fn unreadable(detail: impl fmt::Display) -> Self {
        Self::new(
            FaultKind::Unreadable,
            format!("Could not read skill: {detail}"),
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl serde::Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Fault", 2 + usize::from(self.hint.is_some()))?;
        st.serialize_field("kind", self.kind.as_str())?;
        st.serialize_field("message", &self.message)?;
        if let Some(hint) = &self.hint {
            st.serialize_field("hint", hint)?;
        }
        st.end()
    }
}
