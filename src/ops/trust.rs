//! `skillcat sign` and `verify`: what a signature of a skill will say and where it goes; each
//! skill of a source checked against a keyring, as rows the command prints or reports as JSON.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::digest::Manifest;
use crate::document::{Skill, name_key};
use crate::sign::source_signatures::{
    FoundSignature, at_version, digests, manifest_of, verify_skill,
};
use crate::sign::{self, Keyring, SignError, Statement, skill_signature_path};
use crate::source::oci::Reference;
use crate::source::{Discovery, RootFault, Source, SourceExt};

/// How the version a signature names compares with the skill's own `metadata.version`.
#[derive(Debug, PartialEq, Eq)]
pub enum VersionNote {
    /// The same, or the skill's own.
    Same,
    /// The skill has none, and none was given: the signature names no version.
    Missing,
    /// The version given replaces the skill's own (`was`).
    Replaced {
        /// The skill's own version.
        was: String,
    },
}

/// What [`to_sign`] prepared.
#[derive(Debug)]
pub struct ToSign {
    /// The skill's manifest, at the version the signature names.
    pub manifest: Manifest,
    /// How that version came about.
    pub note: VersionNote,
    /// Where the signature goes unless told: beside the source.
    pub path: PathBuf,
}

/// The manifest a signature of `skill` (of the source `spec`, opened as `src`) will vouch for,
/// at `version` when given, and the file beside the source it is written to by default
/// (`SPEC.minisig` for a source of one skill, `SPEC.NAME.minisig` for several).
pub async fn to_sign(
    spec: &str,
    src: &dyn Source,
    skill: &Skill,
    version: Option<&str>,
) -> crate::Result<ToSign> {
    let many = src.list().await.map(|r| r.len() > 1).unwrap_or(false);
    let (mut manifest, _) = manifest_of(src, skill).await?;
    let note = match (version, manifest.version.is_empty()) {
        (None, true) => VersionNote::Missing,
        (Some(v), false) if v != manifest.version => VersionNote::Replaced {
            was: std::mem::replace(&mut manifest.version, v.to_string()),
        },
        (Some(v), true) => {
            manifest.version = v.to_string();
            VersionNote::Same
        }
        _ => VersionNote::Same,
    };
    let path = skill_signature_path(spec, &manifest.name, !many);
    Ok(ToSign {
        manifest,
        note,
        path,
    })
}

/// One skill (or unreadable root) of a verify, as `--format json` reports it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum VerifyRow {
    /// A root that is not a readable skill: nothing to verify.
    Unreadable {
        /// The root.
        root: String,
        /// Always false.
        verified: bool,
        /// Why it could not be read.
        error: String,
    },
    /// A signature verified.
    Verified {
        /// `NAME@VERSION` (or `NAME`), for people.
        #[serde(skip)]
        shown: String,
        /// The skill's name.
        name: String,
        /// Its version (empty when it has none).
        version: String,
        /// Its digest.
        digest: String,
        /// Always true.
        verified: bool,
        /// The key that signed it.
        key_id: String,
    },
    /// No signature verified.
    Failed {
        /// The skill's name.
        name: String,
        /// Always false.
        verified: bool,
        /// Why.
        error: String,
    },
}

impl VerifyRow {
    /// Whether it verified.
    pub fn verified(&self) -> bool {
        matches!(self, VerifyRow::Verified { .. })
    }
}

/// Why a skill pushed to an OCI registry could not be given a statement to sign.
#[derive(Debug, thiserror::Error)]
pub enum PushStatementError {
    /// The skill has no `metadata.version`, and the target names no tag to stand for it.
    #[error("{0}: the skill has no metadata.version, so name a tag")]
    NoVersion(String),
    /// Its files could not be read.
    #[error(transparent)]
    Read(#[from] crate::Error),
    /// Its manifest makes no statement.
    #[error(transparent)]
    Statement(#[from] crate::sign::SignError),
}

/// The statement a signature of `skill` pushed to `target` vouches for: its manifest at the
/// version it is pushed as (its `metadata.version`, else the tag).
pub async fn push_statement(
    src: &dyn Source,
    skill: &Skill,
    target: &Reference,
) -> Result<Statement, PushStatementError> {
    let Some(version) = crate::push::version_of(skill, target) else {
        return Err(PushStatementError::NoVersion(target.to_string()));
    };
    let (root, files, name) = (skill.root(), skill.files(), skill.name());
    let m = SourceExt::manifest_of(src, root, files, &name, &version).await?;
    Ok(Statement::from_manifest(&m)?)
}

/// A signature file given to verify with that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the signature {}: {io}", .path.display())]
pub struct SignatureFileError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub io: std::io::Error,
}

/// The signature in the file `path`, to verify a skill with instead of the one it keeps.
pub fn read_signature(path: &Path) -> Result<FoundSignature, SignatureFileError> {
    let text = std::fs::read_to_string(path).map_err(|io| SignatureFileError {
        path: path.to_path_buf(),
        io,
    })?;
    Ok(FoundSignature {
        origin: path.display().to_string(),
        text,
    })
}

/// Why a verify was not attempted.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The name asked for is not in the source.
    #[error("no skill named '{0}'")]
    NoSuchSkill(String),
    /// A signature was given, but the skills it could be for are not one.
    #[error("one signature given; the source holds {0} skills")]
    SignatureForMany(usize),
}

/// Verifies the skills of `found` (only `name`'s, when given) against `ring`: with `given`,
/// that signature; else the one the source keeps or the file beside it (`SPEC.minisig` for a
/// source of one skill, `SPEC.NAME.minisig` for several). The roots that are not readable
/// skills come first, as failed rows.
pub async fn verify(
    spec: &str,
    src: &dyn Source,
    found: &Discovery,
    name: Option<&str>,
    ring: &Keyring,
    given: Option<&FoundSignature>,
) -> Result<Vec<VerifyRow>, VerifyError> {
    let key = name.map(name_key);
    let skills: Vec<&Skill> = found
        .skills
        .iter()
        .filter(|s| key.as_ref().is_none_or(|k| *k == name_key(&s.name())))
        .collect();
    let mut rows: Vec<VerifyRow> = found
        .faults
        .iter()
        .map(|f| VerifyRow::Unreadable {
            root: f.root.clone(),
            verified: false,
            error: f.fault.message().to_string(),
        })
        .collect();
    if let (Some(w), true) = (name, skills.is_empty() && found.faults.is_empty()) {
        return Err(VerifyError::NoSuchSkill(w.to_string()));
    }
    let single = found.skills.len() == 1 && found.faults.is_empty();
    if given.is_some() && skills.len() + found.faults.len() != 1 {
        return Err(VerifyError::SignatureForMany(
            skills.len() + found.faults.len(),
        ));
    }
    for skill in skills {
        rows.push(
            match verify_skill(spec, src, skill, ring, given, single).await {
                Ok((m, v)) => VerifyRow::Verified {
                    shown: at_version(&m),
                    name: m.name,
                    version: m.version,
                    digest: m.digest,
                    verified: true,
                    key_id: v.key_id,
                },
                Err(e) => VerifyRow::Failed {
                    name: skill.name(),
                    verified: false,
                    error: e.to_string(),
                },
            },
        );
    }
    Ok(rows)
}

/// A file `sign` could not write.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {io}", .path.display())]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub io: std::io::Error,
}

/// Writes `signature` to `path`, then, when given, the statement it signs to its file.
pub fn write_signature(
    path: &Path,
    signature: &str,
    statement: Option<(&Path, &Statement)>,
) -> Result<(), WriteError> {
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|io| WriteError {
            path: path.to_path_buf(),
            io,
        })
    };
    write(path, signature)?;
    match statement {
        Some((p, statement)) => write(p, &statement.to_text()),
        None => Ok(()),
    }
}

/// A secret key that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the secret key {path}: {io}")]
pub struct SecretKeyError {
    /// The key file as given.
    pub path: String,
    /// Why.
    pub io: std::io::Error,
}

/// Why [`SecretKey::sign`] made no signature.
#[derive(Debug, thiserror::Error)]
pub enum SignWithError<E> {
    /// The password was needed, and asking for it failed.
    #[error("{0}")]
    Password(E),
    /// Signing failed (a wrong password among others).
    #[error(transparent)]
    Sign(#[from] SignError),
}

/// A secret key, and its password once one was needed: a pack of many skills asks for it once.
#[derive(Debug)]
pub struct SecretKey {
    text: String,
    password: Option<String>,
}

impl SecretKey {
    /// Reads the key file at `path` (nothing is asked yet: a key may have no password).
    pub fn load(path: &str) -> Result<SecretKey, SecretKeyError> {
        let text = std::fs::read_to_string(path).map_err(|io| SecretKeyError {
            path: path.to_string(),
            io,
        })?;
        Ok(SecretKey {
            text,
            password: None,
        })
    }

    /// Signs `statement`; `ask` gives the password the first time the key turns out to need
    /// one, and it is kept for the next signature.
    pub fn sign<E>(
        &mut self,
        statement: &Statement,
        ask: impl FnOnce() -> Result<String, E>,
    ) -> Result<String, SignWithError<E>> {
        match sign::sign(statement, &self.text, self.password.as_deref()) {
            Err(SignError::PasswordRequired) if self.password.is_none() => {
                let password = self
                    .password
                    .insert(ask().map_err(SignWithError::Password)?);
                Ok(sign::sign(statement, &self.text, Some(password))?)
            }
            r => Ok(r?),
        }
    }
}

/// Why `pack` will not start.
#[derive(Debug, thiserror::Error)]
pub enum PackCheckError {
    /// What to pack is not a directory.
    #[error("{0}: pack reads a skill directory or a directory of skills")]
    NotDirectory(String),
    /// The output's directory is missing.
    #[error("cannot write {}: the directory {} does not exist", .output.display(), .dir.display())]
    NoOutputDirectory {
        /// The output.
        output: PathBuf,
        /// Its missing directory.
        dir: PathBuf,
    },
    /// The output names no archive format.
    #[error("{}: the output must end in .tar.gz, .tgz or .zip", .0.display())]
    Format(PathBuf),
}

/// The checks made before anything is packed (or a key read): `dir` is a directory, the
/// output's directory exists and its name says an archive format.
pub fn check_pack(dir: &str, output: &Path) -> Result<(), PackCheckError> {
    if !Path::new(dir).is_dir() {
        return Err(PackCheckError::NotDirectory(dir.to_string()));
    }
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(PackCheckError::NoOutputDirectory {
            output: output.to_path_buf(),
            dir: parent.to_path_buf(),
        });
    }
    if crate::pack::PackFormat::for_path(output).is_none() {
        return Err(PackCheckError::Format(output.to_path_buf()));
    }
    Ok(())
}

/// Something `digest` met that it could not give a digest of, or that is not a skill.
#[derive(Debug)]
pub enum DigestProblem<'a> {
    /// A root that is not a skill (its files still have a digest).
    NotSkill(&'a RootFault),
    /// A root whose files could not be read.
    Unreadable {
        /// Where the root is, for people.
        location: String,
        /// Why.
        error: crate::Error,
    },
}

/// What [`digest`] found: the manifests, and the problems in the order they were met.
#[derive(Debug, Default)]
pub struct Digested<'a> {
    /// Each root's manifest.
    pub manifests: Vec<Manifest>,
    /// What went wrong on the way.
    pub problems: Vec<DigestProblem<'a>>,
}

/// The manifest of every skill of `found` (of `name`'s only, when given), then of each root that
/// is not a skill: what `skillcat digest` prints, with what it reports as faults.
pub async fn digest<'a>(
    src: &dyn Source,
    found: &'a Discovery,
    name: Option<&str>,
) -> Digested<'a> {
    let mut out = Digested::default();
    for d in digests(src, found, name).await {
        out.problems.extend(d.fault.map(DigestProblem::NotSkill));
        match d.manifest {
            Ok(m) => out.manifests.push(m),
            Err(error) => out.problems.push(DigestProblem::Unreadable {
                location: d.location,
                error,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{DirOptions, DirSource, discover};

    #[tokio::test]
    async fn a_version_given_replaces_the_skills_own_and_its_lack_is_noted() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, meta) in [("one", "metadata:\n  version: \"1.0.0\"\n"), ("two", "")] {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            let md = format!("---\nname: {name}\ndescription: d\n{meta}---\n");
            std::fs::write(dir.join("SKILL.md"), md).unwrap();
        }
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = discover(&src).await.unwrap();
        let spec = tmp.path().display().to_string();
        let one = found.find("one").unwrap();
        let same = to_sign(&spec, &src, one, None).await.unwrap();
        assert_eq!(same.note, VersionNote::Same);
        assert_eq!(same.manifest.version, "1.0.0");
        assert_eq!(same.path, skill_signature_path(&spec, "one", false));
        let replaced = to_sign(&spec, &src, one, Some("2.0.0")).await.unwrap();
        assert_eq!(replaced.manifest.version, "2.0.0");
        let was = "1.0.0".to_string();
        assert_eq!(replaced.note, VersionNote::Replaced { was });
        let two = found.find("two").unwrap();
        let missing = to_sign(&spec, &src, two, None).await.unwrap();
        assert_eq!(missing.note, VersionNote::Missing);
        let given = to_sign(&spec, &src, two, Some("0.1.0")).await.unwrap();
        assert_eq!(
            (given.note, given.manifest.version.as_str()),
            (VersionNote::Same, "0.1.0")
        );
    }

    #[tokio::test]
    async fn an_unsigned_skill_fails_and_a_missing_name_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("one");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: one\ndescription: d\n---\n",
        )
        .unwrap();
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = discover(&src).await.unwrap();
        let ring = Keyring::default();
        let spec = tmp.path().display().to_string();
        let rows = verify(&spec, &src, &found, None, &ring, None)
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].verified());
        let json = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(json["name"], "one");
        assert_eq!(json["verified"], false);
        assert!(matches!(
            verify(&spec, &src, &found, Some("two"), &ring, None).await,
            Err(VerifyError::NoSuchSkill(n)) if n == "two"
        ));
    }
    /// A source of the skill `one` (version 1.0.0) and a root that is not a skill.
    async fn one_and_a_broken_root() -> (tempfile::TempDir, DirSource, Discovery) {
        let tmp = tempfile::tempdir().unwrap();
        for (name, md) in [
            (
                "one",
                "---\nname: one\ndescription: d\nmetadata:\n  version: \"1.0.0\"\n---\n",
            ),
            ("broken", "no frontmatter here\n"),
        ] {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("SKILL.md"), md).unwrap();
        }
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = discover(&src).await.unwrap();
        (tmp, src, found)
    }

    #[tokio::test]
    async fn a_digest_lists_roots_that_are_not_skills_as_problems_unless_a_name_is_given() {
        let (_tmp, src, found) = one_and_a_broken_root().await;
        assert_eq!(found.faults.len(), 1, "{:?}", found.faults);
        let all = digest(&src, &found, None).await;
        assert_eq!(all.manifests.len(), 2);
        assert_eq!(all.manifests[0].name, "one");
        assert!(matches!(
            all.problems.as_slice(),
            [DigestProblem::NotSkill(f)] if f.root == found.faults[0].root
        ));
        let one = digest(&src, &found, Some("one")).await;
        assert_eq!(one.manifests.len(), 1);
        assert!(one.problems.is_empty());
        let none = digest(&src, &found, Some("two")).await;
        assert!(none.manifests.is_empty() && none.problems.is_empty());
    }

    #[tokio::test]
    async fn a_secret_key_asks_its_password_once_and_a_wrong_one_fails() {
        let (tmp, src, found) = one_and_a_broken_root().await;
        let spec = tmp.path().display().to_string();
        let one = found.find("one").unwrap();
        let m = to_sign(&spec, &src, one, None).await.unwrap().manifest;
        let statement = Statement::from_manifest(&m).unwrap();
        let base = tmp.path().join("k").display().to_string();
        let files = sign::KeyFiles::new(&base);
        files.generate(Some("pw")).unwrap();
        let secret = files.secret.display().to_string();
        let ring_text = std::fs::read_to_string(&files.public).unwrap();
        let mut key = SecretKey::load(&secret).unwrap();
        let mut asked = 0;
        let sig = key
            .sign(&statement, || {
                asked += 1;
                Ok::<_, String>("pw".to_string())
            })
            .unwrap();
        // The password is kept: the second signature asks nothing.
        let again = key.sign(&statement, || Err("asked twice".to_string()));
        assert_eq!(asked, 1);
        assert!(again.is_ok(), "{again:?}");
        let mut ring = Keyring::new();
        let entry = sign::KeyEntry::new(&ring_text, vec!["*".to_string()]).unwrap();
        ring.add(entry).unwrap();
        sign::verify(&m, &sig, &ring, "one").unwrap();
        let mut fresh = SecretKey::load(&secret).unwrap();
        assert!(matches!(
            fresh.sign(&statement, || Err("no terminal")),
            Err(SignWithError::Password("no terminal"))
        ));
        let mut wrong = SecretKey::load(&secret).unwrap();
        assert!(matches!(
            wrong.sign(&statement, || Ok::<_, String>("nope".to_string())),
            Err(SignWithError::Sign(_))
        ));
        let sig_path = tmp.path().join("one.minisig");
        std::fs::write(&sig_path, &sig).unwrap();
        let found_sig = read_signature(&sig_path).unwrap();
        assert_eq!(
            (found_sig.text, found_sig.origin),
            (sig, sig_path.display().to_string())
        );
        let no_sig = read_signature(&tmp.path().join("none.minisig")).unwrap_err();
        assert!(no_sig.to_string().starts_with("cannot read the signature "));
        let (sig_out, st_out) = (tmp.path().join("w.minisig"), tmp.path().join("w.txt"));
        write_signature(&sig_out, "SIG", Some((&st_out, &statement))).unwrap();
        assert_eq!(std::fs::read_to_string(&sig_out).unwrap(), "SIG");
        assert_eq!(
            std::fs::read_to_string(&st_out).unwrap(),
            statement.to_text()
        );
        let nowhere = tmp.path().join("no/w.minisig");
        let e = write_signature(&nowhere, "SIG", None).unwrap_err();
        assert_eq!(e.path, nowhere);
        let missing = tmp.path().join("missing.key").display().to_string();
        let e = SecretKey::load(&missing).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot read the secret key {missing}: "))
        );
    }

    #[test]
    fn pack_checks_its_directory_the_output_directory_and_the_format_in_that_order() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().display().to_string();
        let missing = tmp.path().join("missing").display().to_string();
        let out = tmp.path().join("out.tar.gz");
        let nowhere = tmp.path().join("no/out.zip");
        assert!(matches!(
            check_pack(&missing, &nowhere),
            Err(PackCheckError::NotDirectory(d)) if d == missing
        ));
        assert!(matches!(
            check_pack(&dir, &tmp.path().join("no/out.txt")),
            Err(PackCheckError::NoOutputDirectory { dir, .. }) if dir == tmp.path().join("no")
        ));
        assert!(matches!(
            check_pack(&dir, &tmp.path().join("out.txt")),
            Err(PackCheckError::Format(_))
        ));
        check_pack(&dir, &out).unwrap();
        check_pack(&dir, Path::new("relative.zip")).unwrap();
    }
}
