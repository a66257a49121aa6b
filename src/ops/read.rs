//! The read side (`validate`, `properties`, `prompt`, `list`, `show`, `read`): a SOURCE
//! argument opened and read, a skill found in it, a source or the configured catalog listed, a
//! skill's properties and files read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Serialize, Serializer};

use crate::Error;
use crate::catalog::{Diagnostic, Entry, Snapshot};
use crate::document::{Fault, FaultKind, Skill, ValidateOptions};
use crate::source::validate::{Report, Target, join_shown};
use crate::source::{
    self, Detail, DirOptions, DirSource, Discovery, NamedError, OpenOptions, RootFault, SkillRef,
    Source, SourceExt, SourceKind, SourceSpec,
};

/// A path argument spelled the way the reference (Python's `pathlib`) prints it: repeated `/`
/// collapsed, `.` parts and a trailing `/` dropped (`./a//b/` → `a/b`, `` → `.`); `..` is kept.
pub fn display_path(arg: &str) -> String {
    let parts: Vec<&str> = arg
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = parts.join("/");
    if arg.starts_with('/') {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// A path argument naming a `SKILL.md` (any case) stands for its directory, as in the
/// reference. Returns the path as printed (see [`display_path`]) and as opened.
pub fn skill_dir_of(arg: &str) -> (String, PathBuf) {
    // URLs, `sqlite:`, `oci://`, `git+` and `github:` specs are not file paths: keep them
    // exactly as given.
    if !SourceSpec::is_path_spelling(arg) {
        return (arg.to_string(), PathBuf::from(arg));
    }
    let shown = display_path(arg);
    let is_doc = Path::new(&shown)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case("skill.md"));
    if is_doc && Path::new(&shown).is_file() {
        let parent = match shown.rsplit_once('/') {
            None => ".".to_string(),
            Some(("", _)) => "/".to_string(),
            Some((dir, _)) => dir.to_string(),
        };
        let path = PathBuf::from(&parent);
        return (parent, path);
    }
    let path = PathBuf::from(&shown);
    (shown, path)
}

/// What `validate` checks of each argument: its path as shown and opened, or a spec as given.
pub fn targets(args: &[String]) -> Vec<Target> {
    args.iter()
        .map(|arg| {
            let (shown, path) = skill_dir_of(arg);
            Target {
                shown,
                path,
                // A spec (a URL, `sqlite:`, a git repository) is opened as given; a path is
                // looked at first.
                spec: !SourceSpec::is_path_spelling(arg),
            }
        })
        .collect()
}

/// A validation report as `validate --format json` gives it.
#[derive(Debug, Serialize)]
pub struct ReportRow<'a> {
    /// The root as shown.
    pub path: &'a str,
    /// The skill's name, when it has one.
    pub name: Option<&'a str>,
    /// Whether it breaks no rule.
    pub valid: bool,
    /// The rules it breaks.
    pub faults: &'a [Fault],
    /// What it most likely wants fixed without breaking a rule (left out when nothing).
    #[serde(skip_serializing_if = "<[Fault]>::is_empty")]
    pub warnings: &'a [Fault],
}

/// The rows of `validate`'s reports.
pub fn report_rows(reports: &[Report]) -> Vec<ReportRow<'_>> {
    reports
        .iter()
        .map(|r| ReportRow {
            path: &r.path,
            name: r.name.as_deref(),
            valid: r.faults.is_empty(),
            faults: &r.faults,
            warnings: &r.warnings,
        })
        .collect()
}

/// A source named by an argument, read.
pub struct Opened {
    /// The argument as printed.
    pub shown: String,
    /// Whether the argument is one skill directory (the reference's single-skill commands).
    pub single: bool,
    /// The source.
    pub src: Arc<dyn Source>,
    /// What was read of it (its warnings included, for the caller to show).
    pub found: Discovery,
}

/// Why an argument could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A regular file that is no archive, no registry and no SKILL.md.
    #[error("{} (nor an archive, a registry or a SKILL.md)", Fault::not_a_directory(.shown).message())]
    NotASkill {
        /// The argument as printed.
        shown: String,
    },
    /// Nothing at that path.
    #[error("Path does not exist: {shown}")]
    Missing {
        /// The argument as printed.
        shown: String,
    },
    /// The source could not be opened.
    #[error("{0}")]
    Open(#[source] Error),
    /// The source could not be read.
    #[error("{0}")]
    Discover(#[source] Error),
    /// The skill named is held at another version only, by a source that keeps one.
    #[error(
        "{wanted}: {shown} holds {name} {} only: a directory, an archive or an index keeps one \
         version of each skill (a registry, x.db, keeps many). Name the skill alone: {name}",
        held_words(.held)
    )]
    OtherVersion {
        /// The skill as named (`NAME@VERSION`).
        wanted: String,
        /// The argument as printed.
        shown: String,
        /// The name alone.
        name: String,
        /// The version held, if the skill has one.
        held: Option<String>,
        /// The source's warnings.
        warnings: Vec<String>,
    },
    /// The source has no skill by that name (at that version).
    #[error("{0}")]
    NotFound(#[source] Error),
    /// The skill named could not be looked up or loaded.
    #[error("{0}")]
    Lookup(#[source] Error),
}

fn held_words(held: &Option<String>) -> String {
    match held {
        Some(v) => format!("at version {v}"),
        None => "without a metadata.version".to_string(),
    }
}

/// A SOURCE argument, opened but not read yet.
struct OpenedArg {
    shown: String,
    is_dir: bool,
    single: bool,
    src: Arc<dyn Source>,
}

/// Opens what an argument names: a skill directory (or its SKILL.md) as one skill, anything
/// else through [`source::open_with`]. A regular file that is no archive nor registry is
/// [`OpenError::NotASkill`].
fn open_arg(arg: &str, opts: &OpenOptions) -> Result<OpenedArg, OpenError> {
    let (shown, path) = skill_dir_of(arg);
    let is_dir = path.is_dir();
    let single = is_dir && source::has_document_entry(&path);
    let result = if single {
        DirSource::open_skill(&path, DirOptions::default()).map(|s| Arc::new(s) as Arc<dyn Source>)
    } else {
        source::open_with(&path.to_string_lossy(), opts)
    };
    let src = result.map_err(|e| match e {
        Error::UnsupportedSource(_) if path.is_file() => OpenError::NotASkill {
            shown: shown.clone(),
        },
        Error::NotFound(_) => OpenError::Missing {
            shown: shown.clone(),
        },
        e => OpenError::Open(e),
    })?;
    Ok(OpenedArg {
        shown,
        is_dir,
        single,
        src,
    })
}

/// What was read of a source opened: a directory with nothing in it is one skill directory
/// missing its document (as `validate` says), never an empty success.
fn finish(opened: OpenedArg, mut found: Discovery) -> Opened {
    let OpenedArg {
        shown,
        is_dir,
        single,
        src,
    } = opened;
    let empty_dir = is_dir && found.skills.is_empty() && found.faults.is_empty();
    if empty_dir {
        found.faults.push(RootFault {
            root: String::new(),
            location: src.location(""),
            fault: Fault::missing_document(),
        });
    }
    Opened {
        shown,
        single: single || empty_dir,
        src,
        found,
    }
}

/// Opens and reads what an argument names, as much of each skill as `detail` says.
pub async fn open(arg: &str, detail: Detail, opts: &OpenOptions) -> Result<Opened, OpenError> {
    let opened = open_arg(arg, opts)?;
    let found = source::discover_with(&*opened.src, detail)
        .await
        .map_err(OpenError::Discover)?;
    Ok(finish(opened, found))
}

/// Opens what `arg` names for the skill `wanted` (`NAME` or `NAME@VERSION`), read as
/// [`source::discover_named`] reads it: with a version, that version alone from a source that
/// keeps versions, else the whole source when it holds the skill at that version; without, the
/// whole source as [`open`] reads it. Returns the opened source and the name alone.
pub async fn open_named<'a>(
    arg: &str,
    wanted: &'a str,
    detail: Detail,
    opts: &OpenOptions,
) -> Result<(Opened, &'a str), OpenError> {
    let want = SkillRef::parse(wanted);
    let opened = open_arg(arg, opts)?;
    match source::discover_named(&*opened.src, want, detail).await {
        Ok(found) => Ok((finish(opened, found), want.name)),
        Err(NamedError::OtherVersion { found, held }) => Err(OpenError::OtherVersion {
            wanted: wanted.to_string(),
            shown: opened.shown,
            name: want.name.to_string(),
            held,
            warnings: found.warnings,
        }),
        Err(NamedError::Lookup(e)) if e.is_not_found() => Err(OpenError::NotFound(e)),
        Err(NamedError::Lookup(e) | NamedError::Load(e)) => Err(OpenError::Lookup(e)),
        Err(NamedError::Discover(e)) => Err(OpenError::Discover(e)),
    }
}

/// Why a discovery has no skill by a name.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// No skill by that name (the message lists the names there are).
    #[error("{0}")]
    NoSuchSkill(String),
    /// A root by that name could not be read.
    #[error("skill '{name}' in {shown} could not be read")]
    Unreadable {
        /// The name asked for.
        name: String,
        /// The source as printed.
        shown: String,
        /// Why each root by that name could not be read.
        faults: Vec<RootFault>,
    },
}

/// The skill `name` of a discovery of the source shown as `shown`.
pub fn find_in(shown: &str, d: &Discovery, name: &str) -> Result<Skill, FindError> {
    if let Some(s) = d.find(name) {
        return Ok(s.clone());
    }
    // A root by that name that could not be read: say why, rather than "no such skill".
    let want = crate::document::name_key(name);
    let broken: Vec<RootFault> = d
        .faults
        .iter()
        .filter(|f| {
            crate::document::name_key(crate::path::base_name(&f.root)) == want
                || (f.root.is_empty() && d.faults.len() == 1)
        })
        .cloned()
        .collect();
    if broken.is_empty() {
        let names: Vec<String> = d.skills.iter().map(Skill::name).collect();
        Err(FindError::NoSuchSkill(source::no_such_skill(
            name, shown, names, 0,
        )))
    } else {
        Err(FindError::Unreadable {
            name: name.to_string(),
            shown: shown.to_string(),
            faults: broken,
        })
    }
}

/// Why a skill's file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path is not inside the skill.
    #[error(
        "'{path}' is not a file inside skill '{skill}': {why} (absolute paths, '..' and URLs \
         are refused)"
    )]
    Outside {
        /// The path asked for.
        path: String,
        /// The skill's name.
        skill: String,
        /// Why.
        why: String,
    },
    /// The skill has no such file.
    #[error("skill '{skill}' has no file '{path}'")]
    NoFile {
        /// The skill's name.
        skill: String,
        /// The path, normalised.
        path: String,
    },
    /// The source could not read it.
    #[error("{0}")]
    Read(#[source] Error),
}

/// The bytes of the file `path` (relative to the skill; `./` and an inner `..` that stays
/// inside are normalised) of a skill of `src`, read with its file list.
pub async fn read_file(
    src: &dyn Source,
    skill: &Skill,
    path: &str,
) -> Result<bytes::Bytes, ReadError> {
    let rel = skill.resolve(path).map_err(|why| ReadError::Outside {
        path: path.to_string(),
        skill: skill.name(),
        why: why.to_string(),
    })?;
    if !skill.files().iter().any(|f| f.path == rel.as_str()) {
        return Err(ReadError::NoFile {
            skill: skill.name(),
            path: rel.to_string(),
        });
    }
    src.read(&crate::path::join_path(skill.root(), &rel))
        .await
        .map_err(ReadError::Read)
}

/// A skill of a source, listed.
#[derive(Debug, Serialize)]
pub struct Listed {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Where it is.
    pub location: String,
    /// Its root in the source.
    pub root: String,
    /// The digest of its files; `None` when they could not be hashed.
    pub digest: Option<String>,
    /// Whether it breaks no validation rule.
    pub valid: bool,
    /// The rules it breaks.
    pub faults: Vec<Fault>,
    /// The marketplace plugins that offer it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
    /// Why its files could not be hashed.
    #[serde(skip)]
    pub digest_error: Option<Error>,
}

/// A source listed: its skills, and the roots that are not skills.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// The skills, in the source's order.
    pub skills: Vec<Listed>,
    /// The roots that could not be read.
    #[serde(serialize_with = "root_faults")]
    pub faults: Vec<RootFault>,
}

impl Listing {
    /// Whether anything is wrong: a root, a skill's rule or a digest.
    pub fn any_fault(&self) -> bool {
        !self.faults.is_empty()
            || self
                .skills
                .iter()
                .any(|s| !s.valid || s.digest_error.is_some())
    }
}

fn root_faults<S: Serializer>(faults: &[RootFault], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Row<'a> {
        root: &'a str,
        location: &'a str,
        kind: &'a str,
        message: &'a str,
    }
    s.collect_seq(faults.iter().map(|f| Row {
        root: &f.root,
        location: &f.location,
        kind: f.fault.kind().as_str(),
        message: f.fault.message(),
    }))
}

/// Lists an opened source (`arg` as given): each skill validated and digested from the file
/// list read with it, and the marketplace plugins that offer it (a directory or a repository
/// only: a registry's record would cost a query per skill for nothing). With `name`, that
/// skill alone, or why there is none; other roots' faults are not its business.
pub async fn list(arg: &str, opened: Opened, name: Option<&str>) -> Result<Listing, FindError> {
    let Opened {
        shown,
        src,
        found: mut d,
        ..
    } = opened;
    if let Some(name) = name {
        d.skills = vec![find_in(&shown, &d, name)?];
        d.faults.clear();
    }
    let opts = ValidateOptions::default();
    let marketplace_kind =
        SourceSpec::parse(arg).is_ok_and(|s| matches!(s.kind, SourceKind::Local | SourceKind::Git));
    let mut skills = Vec::new();
    for s in &d.skills {
        let faults = s.validate(&opts);
        let name = s.name();
        // The file list was read with the skill: hash those files, without listing them again.
        let (digest, digest_error) = match src
            .manifest_of(s.root(), s.files(), &name, s.version().unwrap_or(""))
            .await
        {
            Ok(m) => (Some(m.digest), None),
            Err(e) => (None, Some(e)),
        };
        let plugins = match marketplace_kind {
            true => src
                .record(s.root())
                .await
                .map(|r| r.plugins)
                .unwrap_or_default(),
            false => Vec::new(),
        };
        skills.push(Listed {
            name,
            description: s.description().to_string(),
            location: s.location().to_string(),
            root: s.root().to_string(),
            digest,
            valid: faults.is_empty(),
            faults,
            plugins,
            digest_error,
        });
    }
    Ok(Listing {
        skills,
        faults: d.faults,
    })
}

/// A skill of the configured catalog, listed.
#[derive(Debug, Serialize)]
pub struct CatalogListed {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Where it is.
    pub location: String,
    /// Its root in its source.
    pub root: String,
    /// The digest of its files; `None` when they could not be hashed.
    pub digest: Option<String>,
    /// Its source's name.
    pub source: String,
    /// `core-trusted`, `trusted` or `untrusted`.
    pub trust: &'static str,
    /// Whether its scripts may run.
    pub scripts_allowed: bool,
    /// Why its files could not be hashed.
    #[serde(skip)]
    pub digest_error: Option<Error>,
}

/// The configured catalog listed: every skill with its source and trust, and the diagnostics.
#[derive(Debug, Serialize)]
pub struct CatalogListing {
    /// The skills offered, in precedence order.
    pub skills: Vec<CatalogListed>,
    /// The catalog's diagnostics, shadowed names included.
    #[serde(serialize_with = "diagnostics")]
    pub diagnostics: Vec<Diagnostic>,
}

fn diagnostics<S: Serializer>(diagnostics: &[Diagnostic], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Row<'a> {
        source: &'a str,
        root: &'a str,
        location: &'a str,
        kind: &'a str,
        fault: Option<&'a str>,
        message: &'a str,
    }
    s.collect_seq(diagnostics.iter().map(|d| Row {
        source: &d.source,
        root: &d.root,
        location: &d.location,
        kind: d.kind.as_str(),
        fault: d.kind.fault().map(|f| f.as_str()),
        message: &d.message,
    }))
}

/// How far a catalog entry is trusted, as `list` words it.
pub fn trust(e: &Entry) -> &'static str {
    match (e.is_core_trusted(), e.is_trusted()) {
        (true, _) => "core-trusted",
        (false, true) => "trusted",
        (false, false) => "untrusted",
    }
}

/// Lists a catalog's snapshot: each skill digested from the file list read with it.
pub async fn list_catalog(snapshot: &Snapshot) -> CatalogListing {
    let mut skills = Vec::new();
    for e in snapshot.entries() {
        let s = e.skill();
        let (digest, digest_error) = match e
            .source()
            .manifest_of(s.root(), s.files(), e.name(), s.version().unwrap_or(""))
            .await
        {
            Ok(m) => (Some(m.digest), None),
            Err(err) => (None, Some(err)),
        };
        skills.push(CatalogListed {
            name: e.name().to_string(),
            description: s.description().to_string(),
            location: e.location().to_string(),
            root: e.root().to_string(),
            digest,
            source: e.source_name().to_string(),
            trust: trust(e),
            scripts_allowed: e.scripts_allowed(),
            digest_error,
        });
    }
    CatalogListing {
        skills,
        diagnostics: snapshot.diagnostics().to_vec(),
    }
}

/// The reference's wording for a root refused by `properties` and `prompt`.
pub fn refusal_message(location: &str, fault: &Fault) -> String {
    if fault.kind() == FaultKind::MissingDocument {
        format!("SKILL.md not found in {location}")
    } else {
        fault.message().to_string()
    }
}

/// Why a skill's properties could not be given.
#[derive(Debug, thiserror::Error)]
pub enum PropertiesError {
    /// Nothing at that path.
    #[error("Path does not exist: {shown}")]
    Missing {
        /// The argument as printed.
        shown: String,
    },
    /// The path could not be looked at.
    #[error("{shown}: {source}")]
    Unreadable {
        /// The argument as printed.
        shown: String,
        /// Why.
        source: std::io::Error,
    },
    /// A regular file that is not a SKILL.md nor a source.
    #[error("Not a directory: {shown}")]
    NotADirectory {
        /// The argument as printed.
        shown: String,
    },
    /// The source holds more than one skill.
    #[error("{shown} holds {count} skills; name one skill directory")]
    Many {
        /// The argument as printed.
        shown: String,
        /// How many.
        count: usize,
    },
    /// The skill is refused (its document missing or broken).
    #[error("{0}")]
    Refused(String),
    /// The skill's frontmatter lacks what properties need.
    #[error("{}", .0.message())]
    Invalid(Fault),
}

/// Checks an argument of `properties` before it is opened: a path must exist, and a regular
/// file is an archive or a registry (of one skill, which reads like that skill's directory).
pub fn properties_arg(arg: &str, opts: &OpenOptions) -> Result<(), PropertiesError> {
    if !SourceSpec::is_path_spelling(arg) {
        return Ok(());
    }
    let (shown, path) = skill_dir_of(arg);
    match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(PropertiesError::Missing { shown })
        }
        Err(source) => Err(PropertiesError::Unreadable { shown, source }),
        Ok(m)
            if !m.is_dir()
                && matches!(
                    source::open_with(&shown, opts),
                    Err(Error::UnsupportedSource(_))
                ) =>
        {
            // Not a skill directory (as `validate` says).
            Err(PropertiesError::NotADirectory { shown })
        }
        Ok(_) => Ok(()),
    }
}

/// The properties (the reference's JSON) of the one skill of a source opened.
pub fn properties(o: &Opened) -> Result<serde_json::Value, PropertiesError> {
    let shown = &o.shown;
    let count = o.found.skills.len() + o.found.faults.len();
    if count > 1 {
        return Err(PropertiesError::Many {
            shown: shown.clone(),
            count,
        });
    }
    if let Some(f) = o.found.faults.first() {
        let location = join_shown(shown, &f.root);
        return Err(PropertiesError::Refused(refusal_message(
            &location, &f.fault,
        )));
    }
    let Some(skill) = o.found.skills.first() else {
        return Err(PropertiesError::Refused(format!(
            "SKILL.md not found in {shown}"
        )));
    };
    skill.properties().map_err(PropertiesError::Invalid)
}

/// Something `prompt` leaves out or offers all the same.
#[derive(Debug, Clone)]
pub enum PromptIssue {
    /// A root that is not a skill; `single` when the argument is one skill directory.
    Refused {
        /// Whether the argument is one skill directory.
        single: bool,
        /// The argument as printed.
        shown: String,
        /// The root's location.
        location: String,
        /// Why.
        fault: Fault,
    },
    /// A skill without a name or a description, left out.
    Unusable {
        /// Whether the argument is one skill directory.
        single: bool,
        /// The skill's location.
        location: String,
        /// Why.
        fault: Fault,
    },
    /// A skill offered though it breaks validation rules.
    Invalid {
        /// The skill's location.
        location: String,
        /// The rules it breaks.
        faults: Vec<Fault>,
    },
}

/// What `prompt` offers of the sources given, and what it says of them.
#[derive(Debug, Clone, Default)]
pub struct PromptEntries {
    /// In the order of the sources, then of their skills.
    pub issues: Vec<PromptIssue>,
    /// (precedence, name, description, location), sorted.
    entries: Vec<(usize, String, String, String)>,
}

impl PromptEntries {
    /// The skills to render, in precedence order then by name (the order a budget cuts from
    /// the end).
    pub fn skills(&self) -> Vec<crate::prompt::PromptSkill<'_>> {
        self.entries
            .iter()
            .map(|(_, n, d, l)| crate::prompt::PromptSkill {
                name: n,
                description: d,
                location: l,
            })
            .collect()
    }
}

/// The skills of sources opened, in the order given, for a prompt: a root that cannot be read,
/// or a skill without a name or a description, is left out; a skill that parses and has both
/// is offered even when it breaks a validation rule (as the catalog and the reference's
/// `to-prompt` offer it).
pub fn prompt_entries(found: &[Opened]) -> PromptEntries {
    let opts = ValidateOptions::default();
    let mut p = PromptEntries::default();
    for (i, o) in found.iter().enumerate() {
        for f in &o.found.faults {
            p.issues.push(PromptIssue::Refused {
                single: o.single,
                shown: o.shown.clone(),
                location: f.location.clone(),
                fault: f.fault.clone(),
            });
        }
        for s in &o.found.skills {
            if let Err(fault) = s.properties() {
                p.issues.push(PromptIssue::Unusable {
                    single: o.single,
                    location: s.location().to_string(),
                    fault,
                });
                continue;
            }
            let faults = s.validate(&opts);
            if !faults.is_empty() {
                p.issues.push(PromptIssue::Invalid {
                    location: s.location().to_string(),
                    faults,
                });
            }
            p.entries.push((
                i,
                s.raw_name().unwrap_or_default().to_string(),
                s.description().to_string(),
                s.location().to_string(),
            ));
        }
    }
    p.entries.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
    });
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, name: &str, description: &str) {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let text = format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n");
        std::fs::write(d.join("SKILL.md"), text).unwrap();
    }

    fn arg(p: &Path) -> String {
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn paths_are_shown_as_the_reference_prints_them() {
        assert_eq!(display_path("./a//b/"), "a/b");
        assert_eq!(display_path(""), ".");
        assert_eq!(display_path("/x/./y/"), "/x/y");
        assert_eq!(display_path("../a"), "../a");
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "alpha", "Does alpha.");
        let doc = tmp.path().join("alpha/SKILL.md");
        let (shown, path) = skill_dir_of(&arg(&doc));
        assert_eq!(shown, arg(&tmp.path().join("alpha")));
        assert_eq!(path, tmp.path().join("alpha"));
        assert_eq!(skill_dir_of("https://h/x//y/").0, "https://h/x//y/");
        let t = targets(&["./a//b/".to_string(), "https://h/i".to_string()]);
        assert_eq!((t[0].shown.as_str(), t[0].spec), ("a/b", false));
        assert!(t[1].spec);
    }

    #[tokio::test]
    async fn arguments_open_as_a_skill_a_source_or_a_refusal() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = OpenOptions::default();
        skill(tmp.path(), "alpha", "Does alpha.");
        skill(tmp.path(), "beta", "Does beta.");
        let one = open(&arg(&tmp.path().join("alpha")), Detail::Files, &opts)
            .await
            .unwrap();
        assert!(one.single);
        assert_eq!(one.found.skills.len(), 1);
        let many = open(&arg(tmp.path()), Detail::Files, &opts).await.unwrap();
        assert!(!many.single);
        assert_eq!(many.found.skills.len(), 2);

        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let o = open(&arg(&empty), Detail::Files, &opts).await.unwrap();
        assert!(
            o.single,
            "an empty directory is one skill missing its document"
        );
        assert_eq!(o.found.faults[0].fault.kind(), FaultKind::MissingDocument);

        let file = tmp.path().join("notes.txt");
        std::fs::write(&file, "hello").unwrap();
        let e = open(&arg(&file), Detail::Files, &opts).await.err().unwrap();
        assert!(matches!(e, OpenError::NotASkill { .. }), "{e:?}");
        assert!(
            e.to_string()
                .ends_with("(nor an archive, a registry or a SKILL.md)")
        );
        let gone = arg(&tmp.path().join("gone"));
        let e = open(&gone, Detail::Files, &opts).await.err().unwrap();
        assert_eq!(e.to_string(), format!("Path does not exist: {gone}"));

        let (o, name) = open_named(&arg(tmp.path()), "beta", Detail::Files, &opts)
            .await
            .unwrap();
        assert_eq!((name, o.found.skills.len()), ("beta", 2));
        let e = open_named(&arg(tmp.path()), "beta@2.0", Detail::Files, &opts)
            .await
            .err()
            .unwrap();
        assert!(matches!(e, OpenError::OtherVersion { .. }), "{e:?}");
        assert!(e.to_string().contains("without a metadata.version"), "{e}");
    }

    #[tokio::test]
    async fn a_skill_is_found_or_said_missing_or_unreadable() {
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "alpha", "Does alpha.");
        std::fs::create_dir(tmp.path().join("broken")).unwrap();
        std::fs::write(tmp.path().join("broken/SKILL.md"), "no frontmatter").unwrap();
        let o = open(&arg(tmp.path()), Detail::Files, &OpenOptions::default())
            .await
            .unwrap();
        assert_eq!(find_in("src", &o.found, "alpha").unwrap().name(), "alpha");
        let e = find_in("src", &o.found, "gamma").unwrap_err();
        assert!(
            matches!(&e, FindError::NoSuchSkill(m) if m.contains("alpha")),
            "{e:?}"
        );
        let e = find_in("src", &o.found, "broken").unwrap_err();
        assert_eq!(e.to_string(), "skill 'broken' in src could not be read");
        assert!(matches!(e, FindError::Unreadable { faults, .. } if faults.len() == 1));
    }

    #[tokio::test]
    async fn a_listing_has_digests_faults_and_the_json_of_the_command() {
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "alpha", "Does alpha.");
        // Named unlike its directory: listed, but invalid.
        skill(tmp.path(), "beta", "Does beta.");
        let beta = tmp.path().join("beta/SKILL.md");
        std::fs::write(&beta, "---\nname: other\ndescription: B.\n---\n").unwrap();
        let opts = OpenOptions::default();
        let o = open(&arg(tmp.path()), Detail::Files, &opts).await.unwrap();
        let listing = list(&arg(tmp.path()), o, None).await.unwrap();
        assert_eq!(listing.skills.len(), 2);
        assert!(listing.skills.iter().all(|s| s.digest.is_some()));
        assert!(listing.skills[0].valid && !listing.skills[1].valid);
        assert!(listing.any_fault());
        let json = serde_json::to_value(&listing).unwrap();
        let keys: Vec<&String> = json["skills"][0].as_object().unwrap().keys().collect();
        let want = [
            "name",
            "description",
            "location",
            "root",
            "digest",
            "valid",
            "faults",
        ];
        assert_eq!(keys, want);
        assert_eq!(json["faults"], serde_json::json!([]));

        let o = open(&arg(tmp.path()), Detail::Files, &opts).await.unwrap();
        let one = list(&arg(tmp.path()), o, Some("alpha")).await.unwrap();
        assert_eq!(one.skills.len(), 1);
        assert!(!one.any_fault());
    }

    #[tokio::test]
    async fn properties_need_one_skill() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = OpenOptions::default();
        skill(tmp.path(), "alpha", "Does alpha.");
        skill(tmp.path(), "beta", "Does beta.");
        let o = open(&arg(tmp.path()), Detail::Frontmatter, &opts)
            .await
            .unwrap();
        let e = properties(&o).unwrap_err();
        assert!(matches!(e, PropertiesError::Many { count: 2, .. }), "{e:?}");
        let o = open(&arg(&tmp.path().join("alpha")), Detail::Frontmatter, &opts)
            .await
            .unwrap();
        assert_eq!(properties(&o).unwrap()["name"], "alpha");
        let gone = arg(&tmp.path().join("gone"));
        let e = properties_arg(&gone, &opts).unwrap_err();
        assert!(matches!(e, PropertiesError::Missing { .. }), "{e:?}");
        let file = tmp.path().join("notes.txt");
        std::fs::write(&file, "hello").unwrap();
        let e = properties_arg(&arg(&file), &opts).unwrap_err();
        assert!(matches!(e, PropertiesError::NotADirectory { .. }), "{e:?}");
    }

    #[tokio::test]
    async fn a_prompt_offers_the_usable_in_precedence_then_name_order() {
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        skill(first.path(), "zeta", "Does zeta.");
        skill(first.path(), "alpha", "Does alpha.");
        skill(second.path(), "beta", "Does beta.");
        // No description: left out.
        std::fs::create_dir(second.path().join("nodesc")).unwrap();
        std::fs::write(
            second.path().join("nodesc/SKILL.md"),
            "---\nname: nodesc\n---\n",
        )
        .unwrap();
        let opts = OpenOptions::default();
        let mut found = Vec::new();
        for p in [first.path(), second.path()] {
            found.push(open(&arg(p), Detail::Frontmatter, &opts).await.unwrap());
        }
        let p = prompt_entries(&found);
        let names: Vec<&str> = p.skills().iter().map(|s| s.name).collect();
        assert_eq!(names, ["alpha", "zeta", "beta"]);
        assert!(matches!(
            &p.issues[..],
            [PromptIssue::Unusable { single: false, .. }]
        ));
    }

    #[tokio::test]
    async fn only_the_files_of_a_skill_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "alpha", "Does alpha.");
        std::fs::write(tmp.path().join("alpha/notes.md"), "notes").unwrap();
        let o = open(&arg(tmp.path()), Detail::Files, &OpenOptions::default())
            .await
            .unwrap();
        let s = find_in("src", &o.found, "alpha").unwrap();
        let bytes = read_file(&*o.src, &s, "./notes.md").await.unwrap();
        assert_eq!(&bytes[..], b"notes");
        let e = read_file(&*o.src, &s, "../beta/SKILL.md")
            .await
            .unwrap_err();
        assert!(matches!(e, ReadError::Outside { .. }), "{e:?}");
        let e = read_file(&*o.src, &s, "missing.md").await.unwrap_err();
        assert_eq!(e.to_string(), "skill 'alpha' has no file 'missing.md'");
    }
}
