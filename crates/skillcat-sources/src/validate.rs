//! Validating everything a list of paths and sources names, into one report per skill root.
//!
//! `skillcat validate PATH…` is this function and an output format: a skill directory is
//! checked as one skill (its path first, before anything is read), any other path or spec is
//! opened as a source ([`open_with`](crate::open_with)) and every root it holds is reported, in
//! the source's order. Nothing is printed here: the reports say what is wrong with each root,
//! in the reference validator's wording, and what could not be read at all is said too.

use std::collections::BTreeSet;
use std::path::PathBuf;

use skillcat_core::document::{
    self, Fault, FaultKind, Skill, TEMPLATE_SCRIPT, TEMPLATE_SCRIPT_PATH, ValidateOptions,
};
use skillcat_core::error::Error;
use skillcat_core::path::join_path;
use skillcat_core::source::{
    self, Detail, DirOptions, DirSource, Discovery, Source, discover_with,
};

use crate::OpenOptions;

/// One thing to validate, as the caller names it.
#[derive(Debug, Clone)]
pub struct Target {
    /// How reports name it (`a/b` for `./a//b/`, a skill directory for its `SKILL.md`).
    pub shown: String,
    /// What is opened.
    pub path: PathBuf,
    /// Whether it is a spec opened as given (a URL, `sqlite:PATH`) rather than a path, which is
    /// looked at first.
    pub spec: bool,
}

/// What is wrong with one skill root (nothing, when it is valid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The root as reports name it: the target's name, joined with the root below it.
    pub path: String,
    /// The skill's name as written, when its document could be read.
    pub name: Option<String>,
    /// Every fault, in the reference validator's wording.
    pub faults: Vec<Fault>,
    /// What an author most likely wants to fix but does not make the skill invalid
    /// ([`FaultKind::is_warning`](skillcat_core::document::FaultKind::is_warning)): `init`'s
    /// template left as it was, a link to a file the skill lacks.
    pub warnings: Vec<Fault>,
}

impl Report {
    fn refused(path: String, fault: Fault) -> Report {
        Report {
            path,
            name: None,
            faults: vec![fault],
            warnings: Vec::new(),
        }
    }
}

/// What [`validate_paths`] found.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    /// One report for each root, target by target, each target's roots in its source's order.
    pub reports: Vec<Report>,
    /// Whether some target could not be read at all (it has a report saying why).
    pub unreadable: bool,
    /// The sources' warnings (a stale cached index, say), in the order the targets were read.
    pub warnings: Vec<String>,
}

impl Validation {
    /// Whether every root is valid and every target was read.
    pub fn is_valid(&self) -> bool {
        !self.unreadable && self.reports.iter().all(|r| r.faults.is_empty())
    }
}

/// `shown/root` for a root of a directory of skills (`root` alone under `.`, `shown` alone for
/// the source's only root `""`).
pub fn join_shown(shown: &str, root: &str) -> String {
    match (shown, root) {
        (s, "") => s.to_string(),
        (".", r) => r.to_string(),
        (s, r) => format!("{}/{r}", s.trim_end_matches('/')),
    }
}

/// Validates every target with `opts`, opening sources with `open`.
///
/// A path that does not exist or cannot be looked at, a source that cannot be opened or read,
/// is reported and makes the validation [`unreadable`](Validation::unreadable); a regular file
/// that is no archive nor registry is "not a directory", as the reference says; a directory
/// with no document and no skill below it is a skill directory missing its document, never an
/// empty success.
pub async fn validate_paths(
    targets: &[Target],
    opts: &ValidateOptions,
    open: &OpenOptions,
) -> Validation {
    let mut out = Validation::default();
    for t in targets {
        validate_one(t, opts, open, &mut out).await;
    }
    out
}

async fn validate_one(
    t: &Target,
    opts: &ValidateOptions,
    open: &OpenOptions,
    out: &mut Validation,
) {
    let shown = &t.shown;
    let meta = if t.spec {
        None
    } else {
        match std::fs::metadata(&t.path) {
            Ok(m) => Some(m),
            Err(e) => {
                out.unreadable = true;
                let fault = if e.kind() == std::io::ErrorKind::NotFound {
                    Fault::missing_path(shown)
                } else {
                    Fault::unreadable(format!("{shown}: {e}"))
                };
                out.reports.push(Report::refused(shown.clone(), fault));
                return;
            }
        }
    };
    let is_file = meta.as_ref().is_some_and(|m| m.is_file());
    if meta.is_some_and(|m| m.is_dir()) && source::has_document_entry(&t.path) {
        // One skill: check the path before reading anything.
        if let Err(fault) = source::check(&t.path) {
            out.reports.push(Report::refused(shown.clone(), fault));
            return;
        }
        let read = match DirSource::open_skill(&t.path, DirOptions::default()) {
            Ok(src) => match read_for_validation(&src, true).await {
                Ok(d) => Ok(reports_of(shown, &src, d, opts).await),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match read {
            Ok(reports) => out.reports.extend(reports),
            Err(e) => {
                out.unreadable = true;
                out.reports
                    .push(Report::refused(shown.clone(), Fault::unreadable(e)));
            }
        }
        return;
    }
    let src = match crate::open_with(&t.path.to_string_lossy(), open) {
        Ok(s) => s,
        Err(Error::UnsupportedSource(_)) if is_file => {
            out.reports.push(Report::refused(
                shown.clone(),
                Fault::not_a_directory(shown),
            ));
            return;
        }
        Err(e) => {
            out.unreadable = true;
            out.reports
                .push(Report::refused(shown.clone(), Fault::unreadable(e)));
            return;
        }
    };
    // What is on this machine is read with its file lists (a sidecar is attached, declared
    // scripts and the body's links are checked); a catalog named by a URL or a spec is
    // validated from its documents alone, as reading its files would fetch every skill.
    match read_for_validation(&*src, !t.spec).await {
        Ok(d) => {
            out.warnings.extend(d.warnings.iter().cloned());
            if d.skills.is_empty() && d.faults.is_empty() {
                // A directory with no document and no skill below it is a skill directory
                // missing its document, as the reference says — not an empty success.
                out.reports
                    .push(Report::refused(shown.clone(), Fault::missing_document()));
            } else {
                let reports = reports_of(shown, &*src, d, opts).await;
                out.reports.extend(reports);
            }
        }
        Err(e) => {
            out.unreadable = true;
            out.reports
                .push(Report::refused(shown.clone(), Fault::unreadable(e)));
        }
    }
}

/// Every root of `src`, with the file lists when `files` (else the documents alone). A root
/// whose files cannot all be listed (a link out of the skill, a dangling one) is read again
/// from its document alone, as validation always read it: its document is still judged, only
/// the checks of its files are skipped.
async fn read_for_validation(
    src: &(impl Source + ?Sized),
    files: bool,
) -> skillcat_core::error::Result<Discovery> {
    if !files {
        return discover_with(src, Detail::Document).await;
    }
    let mut d = discover_with(src, Detail::Files).await?;
    let unlisted = |f: &source::RootFault| f.fault.kind() == FaultKind::Unreadable;
    if !d.faults.iter().any(unlisted) {
        return Ok(d);
    }
    let again: BTreeSet<String> = d
        .faults
        .iter()
        .filter(|f| unlisted(f))
        .map(|f| f.root.clone())
        .collect();
    let plain = discover_with(src, Detail::Document).await?;
    d.faults.retain(|f| !again.contains(&f.root));
    d.skills.extend(
        plain
            .skills
            .into_iter()
            .filter(|s| again.contains(s.root())),
    );
    d.faults
        .extend(plain.faults.into_iter().filter(|f| again.contains(&f.root)));
    Ok(d)
}

/// A report for each root of a discovery, in the source's order: skills and faults interleaved
/// by root.
async fn reports_of(
    shown: &str,
    src: &(impl Source + ?Sized),
    d: Discovery,
    opts: &ValidateOptions,
) -> Vec<Report> {
    let mut items: Vec<(String, Report)> = Vec::new();
    for s in d.skills {
        let warnings = warnings_of(src, &s).await;
        items.push((
            s.root().to_string(),
            Report {
                path: join_shown(shown, s.root()),
                name: s.raw_name().map(str::to_string),
                faults: s.validate(opts),
                warnings,
            },
        ));
    }
    for f in d.faults {
        let report = Report::refused(join_shown(shown, &f.root), f.fault);
        items.push((f.root, report));
    }
    items.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    items.into_iter().map(|(_, r)| r).collect()
}

/// The warnings of a skill ([`document::template_warnings`], and with its file list
/// [`document::link_warnings`]). `init`'s example script is read only when the skill holds a
/// file of its name and size.
async fn warnings_of(src: &(impl Source + ?Sized), s: &Skill) -> Vec<Fault> {
    let example = s
        .files()
        .iter()
        .any(|f| f.path == TEMPLATE_SCRIPT_PATH && f.size == TEMPLATE_SCRIPT.len() as u64);
    let script = match example {
        true => src
            .read(&join_path(s.root(), TEMPLATE_SCRIPT_PATH))
            .await
            .ok(),
        false => None,
    };
    let mut out = document::template_warnings(s.description(), script.as_deref());
    if s.has_files() {
        out.extend(document::link_warnings(s.body(), s.files()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillcat_core::document::FaultKind;

    fn target(path: &std::path::Path, shown: &str) -> Target {
        Target {
            shown: shown.to_string(),
            path: path.to_path_buf(),
            spec: false,
        }
    }

    fn write_skill(dir: &std::path::Path, front: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\n{front}---\nBody\n")).unwrap();
    }

    #[test]
    fn roots_are_named_below_what_was_given() {
        assert_eq!(join_shown("skills", ""), "skills");
        assert_eq!(join_shown(".", "pdf"), "pdf");
        assert_eq!(join_shown("skills/", "team/pdf"), "skills/team/pdf");
    }

    /// Every kind of target in one call: reports in order, one for each root; a missing path
    /// makes the whole unreadable, a stray file and an empty folder are faults.
    #[tokio::test]
    async fn every_target_is_reported_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let one = tmp.path().join("one");
        write_skill(&one, "name: one\ndescription: d\n");
        let many = tmp.path().join("many");
        write_skill(&many.join("b-bad"), "name: Not_Valid\ndescription: d\n");
        write_skill(&many.join("a-good"), "name: a-good\ndescription: d\n");
        std::fs::create_dir_all(many.join("c-broken")).unwrap();
        std::fs::write(many.join("c-broken/SKILL.md"), "no frontmatter\n").unwrap();
        let stray = tmp.path().join("notes.txt");
        std::fs::write(&stray, "hello").unwrap();
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();

        let targets = [
            target(&one, "one"),
            target(&many, "many"),
            target(&stray, "notes.txt"),
            target(&empty, "empty"),
        ];
        let v = validate_paths(
            &targets,
            &ValidateOptions::default(),
            &OpenOptions::default(),
        )
        .await;
        let paths: Vec<&str> = v.reports.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "one",
                "many/a-good",
                "many/b-bad",
                "many/c-broken",
                "notes.txt",
                "empty"
            ]
        );
        assert!(v.reports[0].faults.is_empty() && v.reports[1].faults.is_empty());
        assert_eq!(v.reports[0].name.as_deref(), Some("one"));
        assert!(!v.reports[2].faults.is_empty(), "an invalid name");
        assert_eq!(v.reports[2].name.as_deref(), Some("Not_Valid"));
        assert_eq!(v.reports[3].name, None);
        assert_eq!(v.reports[4].faults[0].kind(), FaultKind::NotADirectory);
        assert_eq!(v.reports[5].faults[0].kind(), FaultKind::MissingDocument);
        assert!(!v.unreadable, "everything was read");
        assert!(!v.is_valid());

        let missing = tmp.path().join("missing");
        let v = validate_paths(
            &[target(&one, "one"), target(&missing, "missing")],
            &ValidateOptions::default(),
            &OpenOptions::default(),
        )
        .await;
        assert!(v.unreadable);
        assert_eq!(v.reports[1].faults[0].kind(), FaultKind::MissingPath);
        assert_eq!(v.reports[1].path, "missing");

        let v = validate_paths(
            &[target(&one, "one")],
            &ValidateOptions::default(),
            &OpenOptions::default(),
        )
        .await;
        assert!(v.is_valid() && v.warnings.is_empty());
    }

    /// The options given are the ones checked with: an extension field is a fault unless
    /// allowed.
    #[tokio::test]
    async fn the_options_are_applied() {
        let tmp = tempfile::tempdir().unwrap();
        let one = tmp.path().join("one");
        write_skill(&one, "name: one\ndescription: d\nx-extra: 1\n");
        let t = [target(&one, "one")];
        let strict = validate_paths(&t, &ValidateOptions::default(), &OpenOptions::default()).await;
        assert!(!strict.is_valid());
        let allowed = validate_paths(
            &t,
            &ValidateOptions::default().allow_field("x-extra"),
            &OpenOptions::default(),
        )
        .await;
        assert!(allowed.is_valid(), "{:?}", allowed.reports);
    }

    /// What validating reads besides the document: the sidecar (a declared script the skill
    /// lacks is a fault), the file list for the body's links (a missing one is a warning, which
    /// leaves the skill valid), in a directory of skills as for one skill.
    #[tokio::test]
    async fn the_sidecar_and_the_body_s_links_are_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let many = tmp.path().join("many");
        let one = many.join("one");
        std::fs::create_dir_all(one.join("agents")).unwrap();
        std::fs::write(
            one.join("SKILL.md"),
            "---\nname: one\ndescription: d\n---\nSee [x](references/x.md).\n",
        )
        .unwrap();
        std::fs::write(
            one.join("agents/skillcat.yaml"),
            "scripts:\n  - name: a\n    path: scripts/a.sh\n",
        )
        .unwrap();
        for t in [target(&one, "one"), target(&many, "many")] {
            let v =
                validate_paths(&[t], &ValidateOptions::default(), &OpenOptions::default()).await;
            let r = &v.reports[0];
            let kinds: Vec<&str> = r.faults.iter().map(|f| f.kind().as_str()).collect();
            assert_eq!(kinds, ["declared-script-missing"], "{r:?}");
            let warned: Vec<&str> = r.warnings.iter().map(|f| f.kind().as_str()).collect();
            assert_eq!(warned, ["link-missing"], "{r:?}");
        }
        std::fs::create_dir_all(one.join("scripts")).unwrap();
        std::fs::write(one.join("scripts/a.sh"), "#!/bin/sh\n").unwrap();
        let v = validate_paths(
            &[target(&one, "one")],
            &ValidateOptions::default(),
            &OpenOptions::default(),
        )
        .await;
        assert!(
            v.is_valid(),
            "a warning leaves the skill valid: {:?}",
            v.reports
        );
        assert_eq!(v.reports[0].warnings.len(), 1);

        // A file that cannot be listed (a dangling link) leaves the document judged as before.
        std::os::unix::fs::symlink("/nonexistent/x", one.join("dangling")).unwrap();
        for t in [target(&one, "one"), target(&many, "many")] {
            let v =
                validate_paths(&[t], &ValidateOptions::default(), &OpenOptions::default()).await;
            assert!(v.is_valid(), "{:?}", v.reports);
        }
    }

    /// A spec is opened as given, never looked at as a path first: a registry spec that
    /// cannot be opened is unreadable, not a missing path.
    #[tokio::test]
    async fn a_spec_is_opened_as_given() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = format!("sqlite:{}", tmp.path().join("nope/x.db").display());
        let t = Target {
            shown: spec.clone(),
            path: PathBuf::from(&spec),
            spec: true,
        };
        let v = validate_paths(&[t], &ValidateOptions::default(), &OpenOptions::default()).await;
        assert!(v.unreadable);
        assert_eq!(v.reports[0].faults[0].kind(), FaultKind::Unreadable);
    }
}
