//! Packing a skill directory (or a directory of skills) into one reproducible archive, each
//! skill signed on the way when a signer is given: `skillcat pack DIR -o OUT [--sign KEY]`.
//!
//! Nothing is written unless everything succeeds: the skills are read, checked, digested and
//! signed first; then the archive is written (through a temporary file renamed into place), then
//! the signatures. A signature an earlier pack left beside the same archive name is kept when
//! it still signs exactly what was packed now (the archive is reproducible: the same files give
//! the same archive), and removed when it does not, so no stale `.minisig` sits beside an archive
//! it does not sign. A signature is made over the manifest of exactly the bytes packed (read
//! once), so it matches the archive even when a file changes on disk meanwhile. How the secret
//! key is unlocked (a password asked on a terminal) is the caller's: it signs each statement.

use std::path::{Path, PathBuf};

use skillcat_core::digest::Manifest;
use skillcat_core::document::{Fault, Skill, ValidateOptions};
use skillcat_core::error::Error;
use skillcat_core::pack::{PackEntry, write_archive};
use skillcat_core::path::{FileEntry, base_name, join_path};
use skillcat_core::source::{self, DirOptions, DirSource, RootFault, Source};

use crate::{SIGNATURE_SUFFIX, SignError, Statement};

/// Where the detached signature of one skill of `spec` lives: `<spec>.minisig` when the source
/// holds one skill, `<spec>.<name>.minisig` when it holds several (a trailing `/` of `spec` is
/// not part of the name). What `pack --sign` and `sign` write, and `verify` and `publish` look
/// for beside a source.
pub fn skill_signature_path(spec: &str, name: &str, single: bool) -> PathBuf {
    let base = spec.trim_end_matches('/');
    if single {
        crate::signature_path(Path::new(base))
    } else {
        PathBuf::from(format!("{base}.{name}{SIGNATURE_SUFFIX}"))
    }
}

/// Signs one statement: its `.minisig` text, or the signer's own error (a key that will not
/// unlock, say).
pub type Signer<'a, E> = &'a mut dyn FnMut(&Statement) -> Result<String, E>;

/// What to pack, and how.
#[derive(Debug, Clone, Copy)]
pub struct PackRequest<'a> {
    /// A skill directory or a directory of skills.
    pub dir: &'a Path,
    /// The archive to write (`.tar.gz`, `.tgz` or `.zip`).
    pub output: &'a Path,
    /// Pack skills that fail validation (and, unsigned, roots whose document cannot be read).
    pub force: bool,
}

/// What packing says as it goes, for people: the caller shows each as it comes.
#[derive(Debug)]
pub enum PackNote<'a> {
    /// A root whose document cannot be read, packed as it is all the same (`force`, unsigned).
    Anyway(&'a RootFault),
    /// A root whose document cannot be read, refused; `unsignable` when `force` was asked but
    /// a signature was too, which such a root never gets.
    Refused {
        /// The root and why it is not a skill.
        fault: &'a RootFault,
        /// Whether only the signing stopped it.
        unsignable: bool,
    },
    /// A skill that fails validation: packed all the same (`force`), or refused.
    Invalid {
        /// The skill.
        skill: &'a Skill,
        /// Its faults.
        faults: &'a [Fault],
        /// Whether it is packed all the same.
        packed: bool,
    },
}

/// One root packed.
#[derive(Debug, Clone)]
pub struct PackedRoot {
    /// The root in the directory (`""` for a lone skill).
    pub root: String,
    /// The manifest of the bytes packed for it (its name is empty for a root refused with
    /// `force`, whose document could not be read).
    pub manifest: Manifest,
    /// Where its signature was written, when it was signed.
    pub signature: Option<PathBuf>,
}

/// What [`pack_dir`] wrote: every root, in the archive's order.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The roots packed.
    pub roots: Vec<PackedRoot>,
    /// Signatures an earlier pack left beside the archive that still sign what was packed now
    /// (kept as they were).
    pub kept_signatures: Vec<PathBuf>,
    /// Signatures an earlier pack left beside the archive that do not sign what was packed now
    /// (another version, other content, or a file a reader of this archive no longer looks
    /// for): removed.
    pub removed_signatures: Vec<PathBuf>,
}

/// Why nothing was written. `E` is the signer's own error, passed through.
#[derive(Debug, thiserror::Error)]
pub enum PackError<E> {
    /// The directory could not be opened or read.
    #[error("{0}")]
    Open(Error),
    /// The files of a root packed as it is could not be listed.
    #[error("{location}: {error}")]
    Files {
        /// The root, for people.
        location: String,
        /// What failed.
        error: Error,
    },
    /// Some roots were refused (each was noted).
    #[error("nothing written; fix the skills above{}", if *force { "" } else { " or pass --force" })]
    Refused {
        /// Whether `force` was asked.
        force: bool,
    },
    /// The directory holds no skill.
    #[error("{}: no skill to pack", dir.display())]
    Empty {
        /// The directory.
        dir: PathBuf,
    },
    /// The archive would be written inside a skill it packs (and be packed into the next one).
    #[error("{} would be inside the skill {}; write the archive elsewhere", output.display(), skill.display())]
    InsideSkill {
        /// The archive.
        output: PathBuf,
        /// The skill's directory.
        skill: PathBuf,
    },
    /// Two roots would have the same folder in the archive.
    #[error("two skills would both be packed as '{prefix}/' ({first} and {second})")]
    SameFolder {
        /// The folder.
        prefix: String,
        /// One root.
        first: String,
        /// The other.
        second: String,
    },
    /// A file could not be read.
    #[error("{0}")]
    Read(Error),
    /// A skill's statement could not be made (a name or version a statement cannot hold).
    #[error("{0}")]
    Statement(SignError),
    /// The signer refused.
    #[error(transparent)]
    Sign(E),
    /// The archive could not be written.
    #[error("{0}")]
    Write(Error),
    /// A signature could not be written (the archive and the signatures before it are removed).
    #[error("cannot write {}: {error}", path.display())]
    WriteSignature {
        /// The signature file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The archive was written, but a signature an earlier pack left beside it, which does not
    /// sign it, could not be removed.
    #[error(
        "the archive is written, but the old signature {} beside it does not sign it and could \
         not be removed ({error}); remove it by hand",
        path.display()
    )]
    RemoveStaleSignature {
        /// The old signature file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

/// One root to pack: where it is in the source, its folder in the archive, and what to call it.
struct PackRoot<'a> {
    root: &'a str,
    prefix: String,
    /// The skill, when its document could be read (a root refused with `force` has none).
    skill: Option<&'a Skill>,
    files: Vec<FileEntry>,
}

/// Packs `request.dir` into `request.output`, each skill signed by `sign` when it is given (its
/// statement in, the `.minisig` text out), the signatures written beside the archive
/// ([`skill_signature_path`]). Every root is noted through `note` as it is judged: a skill that
/// fails validation, a root that is not a readable skill. Inside the archive, a lone skill's
/// files are at the root; several skills each have the folder named after their directory.
pub async fn pack_dir<E>(
    request: PackRequest<'_>,
    sign: Option<Signer<'_, E>>,
    note: impl FnMut(PackNote<'_>),
) -> Result<Packed, PackError<E>> {
    pack_dir_validating(request, &ValidateOptions::default(), sign, note).await
}

/// [`pack_dir`], a skill valid as `validate` says (the extension fields a configuration
/// admits, say).
pub async fn pack_dir_validating<E>(
    request: PackRequest<'_>,
    validate: &ValidateOptions,
    mut sign: Option<Signer<'_, E>>,
    mut note: impl FnMut(PackNote<'_>),
) -> Result<Packed, PackError<E>> {
    let PackRequest { dir, output, force } = request;
    let src = DirSource::open(dir, DirOptions::default()).map_err(PackError::Open)?;
    let found = source::discover(&src).await.map_err(PackError::Open)?;
    let mut roots = judge_roots(&src, &found, validate, force, sign.is_some(), &mut note).await?;
    if roots.is_empty() {
        return Err(PackError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    check_outside(dir, output, &roots)?;
    roots.sort_by(|a, b| a.prefix.as_bytes().cmp(b.prefix.as_bytes()));
    if let Some(w) = roots.windows(2).find(|w| w[0].prefix == w[1].prefix) {
        return Err(PackError::SameFolder {
            prefix: w[0].prefix.clone(),
            first: w[0].root.to_string(),
            second: w[1].root.to_string(),
        });
    }
    // A reader of the archive sees as many roots as are packed here, and so looks for the
    // signature files named as below.
    let out_spec = output.to_string_lossy().to_string();
    let one_root = roots.len() == 1;
    let mut entries = Vec::new();
    let mut packed = Vec::with_capacity(roots.len());
    let mut signatures = Vec::new();
    for r in &roots {
        let first = entries.len();
        for f in &r.files {
            let bytes = src
                .read(&join_path(r.root, &f.path))
                .await
                .map_err(PackError::Read)?;
            entries.push(PackEntry {
                path: join_path(&r.prefix, &f.path),
                bytes,
                executable: f.executable,
            });
        }
        let (name, version) = match r.skill {
            Some(s) => (s.name(), s.version().unwrap_or("").to_string()),
            None => (base_name(r.root).to_string(), String::new()),
        };
        let strip = if r.prefix.is_empty() {
            0
        } else {
            r.prefix.len() + 1
        };
        let manifest = Manifest::build(
            &name,
            &version,
            entries[first..]
                .iter()
                .map(|e| (&e.path[strip..], &e.bytes[..], e.executable)),
        );
        let mut signature = None;
        if let Some(sign) = sign.as_mut() {
            let statement = Statement::from_manifest(&manifest).map_err(PackError::Statement)?;
            let text = sign(&statement).map_err(PackError::Sign)?;
            let path = skill_signature_path(&out_spec, &manifest.name, one_root);
            signatures.push((path.clone(), text));
            signature = Some(path);
        }
        packed.push(PackedRoot {
            root: r.root.to_string(),
            manifest,
            signature,
        });
    }
    write_archive(&entries, output).map_err(PackError::Write)?;
    write_signatures(output, &signatures)?;
    let (kept_signatures, removed_signatures) =
        settle_old_signatures(&out_spec, &packed, &signatures)?;
    Ok(Packed {
        roots: packed,
        kept_signatures,
        removed_signatures,
    })
}

/// Judges every root found: a root whose document cannot be read is packed as it is only with
/// `force` (and never when `signing`), a skill that fails validation only with `force`; each is
/// noted. The roots to pack, or `Refused` when any was refused.
async fn judge_roots<'a, E>(
    src: &DirSource,
    found: &'a source::Discovery,
    validate: &ValidateOptions,
    force: bool,
    signing: bool,
    note: &mut impl FnMut(PackNote<'_>),
) -> Result<Vec<PackRoot<'a>>, PackError<E>> {
    let single = src.is_single_skill();
    let prefix_of = |root: &str| {
        if single {
            String::new()
        } else {
            base_name(root).to_string()
        }
    };
    let mut refused = false;
    let mut roots = Vec::new();
    // A root whose document cannot be read is packed as it is only with `force`, and never signed.
    for f in &found.faults {
        if force && !signing {
            note(PackNote::Anyway(f));
            let files = src.files(&f.root).await.map_err(|error| PackError::Files {
                location: f.location.clone(),
                error,
            })?;
            roots.push(PackRoot {
                root: &f.root,
                prefix: prefix_of(&f.root),
                skill: None,
                files,
            });
        } else {
            note(PackNote::Refused {
                fault: f,
                unsignable: force,
            });
            refused = true;
        }
    }
    for s in &found.skills {
        let faults = s.validate(validate);
        if !faults.is_empty() {
            note(PackNote::Invalid {
                skill: s,
                faults: &faults,
                packed: force,
            });
            refused |= !force;
        }
        roots.push(PackRoot {
            root: s.root(),
            prefix: prefix_of(s.root()),
            skill: Some(s),
            files: s.files().to_vec(),
        });
    }
    if refused {
        return Err(PackError::Refused { force });
    }
    Ok(roots)
}

/// An archive written inside a skill would be packed into the next archive of it (and change
/// its digest): refused, rather than leave a file out silently.
fn check_outside<E>(dir: &Path, output: &Path, roots: &[PackRoot<'_>]) -> Result<(), PackError<E>> {
    let out_dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Ok(out_dir) = std::fs::canonicalize(out_dir) {
        for r in roots {
            let root_dir =
                std::fs::canonicalize(dir.join(r.root)).unwrap_or_else(|_| dir.join(r.root));
            if out_dir.starts_with(&root_dir) {
                return Err(PackError::InsideSkill {
                    output: output.to_path_buf(),
                    skill: root_dir,
                });
            }
        }
    }
    Ok(())
}

/// Writes each signature beside the archive; on a failure, the archive and the signatures
/// written before are removed: no archive is left whose signatures are half written.
fn write_signatures<E>(
    output: &Path,
    signatures: &[(PathBuf, String)],
) -> Result<(), PackError<E>> {
    for (i, (path, text)) in signatures.iter().enumerate() {
        if let Err(error) = std::fs::write(path, text) {
            // Leave no archive whose signatures are half written.
            let _ = std::fs::remove_file(output);
            for (p, _) in &signatures[..i] {
                let _ = std::fs::remove_file(p);
            }
            return Err(PackError::WriteSignature {
                path: path.clone(),
                error,
            });
        }
    }
    Ok(())
}

/// The signatures an earlier pack may have left beside the archive `out_spec` (its
/// `OUT.minisig`, and each packed skill's `OUT.NAME.minisig`), other than those just written:
/// each one that still signs exactly the statement of what was packed now, where a reader of the
/// archive looks for it, is kept; each other skillcat signature is removed. A file that is not a
/// skillcat signature is left alone.
fn settle_old_signatures<E>(
    out_spec: &str,
    packed: &[PackedRoot],
    written: &[(PathBuf, String)],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), PackError<E>> {
    let one_root = packed.len() == 1;
    // Where a reader of this archive looks for each skill's signature, and what it must sign.
    let mut expected: Vec<(PathBuf, Option<Statement>)> = packed
        .iter()
        .filter(|r| !r.manifest.name.is_empty())
        .map(|r| {
            (
                skill_signature_path(out_spec, &r.manifest.name, one_root),
                Statement::from_manifest(&r.manifest).ok(),
            )
        })
        .collect();
    // A one-skill archive's name, which nothing reads beside an archive of several.
    if !one_root {
        expected.push((skill_signature_path(out_spec, "", true), None));
    }
    let (mut kept, mut removed) = (Vec::new(), Vec::new());
    for (path, statement) in expected {
        if written.iter().any(|(p, _)| *p == path) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(claimed) = Statement::claimed_by(&text) else {
            continue;
        };
        if statement.as_ref() == Some(&claimed) {
            kept.push(path);
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => removed.push(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(PackError::RemoveStaleSignature { path, error }),
        }
    }
    Ok((kept, removed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillcat_core::source::ArchiveSource;

    fn write_skill(dir: &Path, front: &str) {
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\n{front}---\nBody\n")).unwrap();
        std::fs::write(dir.join("scripts/run.sh"), "echo hi\n").unwrap();
    }

    type NoSigner = Option<Signer<'static, String>>;

    #[test]
    fn signatures_are_named_after_the_source_and_the_skill() {
        assert_eq!(
            skill_signature_path("out.tar.gz", "pdf", true),
            PathBuf::from("out.tar.gz.minisig")
        );
        assert_eq!(
            skill_signature_path("skills/", "pdf", false),
            PathBuf::from("skills.pdf.minisig")
        );
    }

    /// Several skills: each under its folder, signed with a signature that verifies against
    /// the archive as it is read back; the signer sees each statement.
    #[tokio::test]
    async fn every_skill_is_packed_and_signed_over_the_bytes_packed() {
        let tmp = tempfile::tempdir().unwrap();
        let skills = tmp.path().join("skills");
        write_skill(
            &skills.join("alpha"),
            "name: alpha\ndescription: d\nmetadata:\n  version: \"1.0.0\"\n",
        );
        write_skill(&skills.join("beta"), "name: beta\ndescription: d\n");
        let out = tmp.path().join("out.tar.gz");
        let (public, secret) = crate::generate_keypair(None).unwrap();
        let mut seen = Vec::new();
        let mut signer = |st: &Statement| -> Result<String, String> {
            seen.push(st.name.clone());
            crate::sign(st, &secret, None).map_err(|e| e.to_string())
        };
        let mut notes = 0;
        let packed = pack_dir(
            PackRequest {
                dir: &skills,
                output: &out,
                force: false,
            },
            Some(&mut signer),
            |_| notes += 1,
        )
        .await
        .unwrap();
        assert_eq!(notes, 0);
        assert_eq!(seen, ["alpha", "beta"]);
        let names: Vec<&str> = packed
            .roots
            .iter()
            .map(|r| r.manifest.name.as_str())
            .collect();
        assert_eq!(names, ["alpha", "beta"]);

        let archive = ArchiveSource::open(&out, Default::default()).unwrap();
        assert_eq!(archive.list().await.unwrap(), ["alpha", "beta"]);
        let ring = crate::Keyring::from_toml_str(&format!(
            "[[key]]\npublic_key = \"{}\"\nscopes = [\"*\"]\n",
            crate::public_key_base64(&public).unwrap()
        ))
        .unwrap();
        for r in &packed.roots {
            let sig_path = r.signature.as_ref().unwrap();
            assert_eq!(
                *sig_path,
                skill_signature_path(&out.to_string_lossy(), &r.manifest.name, false)
            );
            let text = std::fs::read_to_string(sig_path).unwrap();
            let held = source::SourceExt::manifest(
                &archive,
                &r.manifest.name,
                &r.manifest.name,
                &r.manifest.version,
            )
            .await
            .unwrap();
            assert_eq!(held.digest, r.manifest.digest);
            crate::verify(&held, &text, &ring, &r.manifest.name).unwrap();
        }
    }

    /// An invalid skill is refused (noted) and nothing is written; with `force` it is packed,
    /// noted as packed anyway.
    #[tokio::test]
    async fn an_invalid_skill_is_refused_unless_forced() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("bad");
        write_skill(&skill, "name: Not_Valid\ndescription: d\n");
        let out = tmp.path().join("bad.zip");
        let request = PackRequest {
            dir: &skill,
            output: &out,
            force: false,
        };
        let mut packed_flags = Vec::new();
        let err = pack_dir(request, NoSigner::None, |n| {
            if let PackNote::Invalid { packed, faults, .. } = n {
                assert!(!faults.is_empty());
                packed_flags.push(packed);
            }
        })
        .await
        .unwrap_err();
        assert!(matches!(err, PackError::Refused { force: false }), "{err}");
        assert_eq!(
            err.to_string(),
            "nothing written; fix the skills above or pass --force"
        );
        assert!(!out.exists());
        let packed = pack_dir(
            PackRequest {
                force: true,
                ..request
            },
            NoSigner::None,
            |n| {
                if let PackNote::Invalid { packed, .. } = n {
                    packed_flags.push(packed);
                }
            },
        )
        .await
        .unwrap();
        assert_eq!(packed_flags, [false, true]);
        assert_eq!(packed.roots.len(), 1);
        assert!(packed.roots[0].signature.is_none());
        assert_eq!(
            ArchiveSource::open(&out, Default::default())
                .unwrap()
                .list()
                .await
                .unwrap(),
            [""]
        );
    }

    /// A signer's refusal stops everything before anything is written, and passes through.
    #[tokio::test]
    async fn a_signer_refusal_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("alpha");
        write_skill(&skill, "name: alpha\ndescription: d\n");
        let out = tmp.path().join("alpha.tgz");
        let mut signer = |_: &Statement| -> Result<String, String> { Err("no key".into()) };
        let err = pack_dir(
            PackRequest {
                dir: &skill,
                output: &out,
                force: false,
            },
            Some(&mut signer),
            |_| {},
        )
        .await
        .unwrap_err();
        assert!(matches!(&err, PackError::Sign(e) if e == "no key"), "{err}");
        assert!(!out.exists());
        assert!(!crate::signature_path(&out).exists());
    }

    /// Packing over an archive: its old signature is kept while it still signs what is packed
    /// (the same files give the same archive), removed once the skill changed.
    #[tokio::test]
    async fn an_old_signature_beside_the_archive_is_kept_or_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("alpha");
        write_skill(
            &skill,
            "name: alpha\ndescription: d\nmetadata:\n  version: \"1.0.0\"\n",
        );
        let out = tmp.path().join("alpha.tar.gz");
        let sig = crate::signature_path(&out);
        let (_, secret) = crate::generate_keypair(None).unwrap();
        let mut signer = |st: &Statement| -> Result<String, String> {
            crate::sign(st, &secret, None).map_err(|e| e.to_string())
        };
        let request = PackRequest {
            dir: &skill,
            output: &out,
            force: false,
        };
        pack_dir(request, Some(&mut signer), |_| {}).await.unwrap();
        assert!(sig.exists());
        // The same files again, unsigned: the signature still signs the archive.
        let packed = pack_dir(request, NoSigner::None, |_| {}).await.unwrap();
        assert_eq!(packed.kept_signatures, std::slice::from_ref(&sig));
        assert!(packed.removed_signatures.is_empty());
        assert!(sig.exists());
        // A new version: the old signature no longer signs the archive, and goes.
        write_skill(
            &skill,
            "name: alpha\ndescription: d\nmetadata:\n  version: \"1.1.0\"\n",
        );
        let packed = pack_dir(request, NoSigner::None, |_| {}).await.unwrap();
        assert!(packed.kept_signatures.is_empty());
        assert_eq!(packed.removed_signatures, std::slice::from_ref(&sig));
        assert!(!sig.exists());
        // A file of that name that is not a signature is left alone.
        std::fs::write(&sig, "notes\n").unwrap();
        let packed = pack_dir(request, NoSigner::None, |_| {}).await.unwrap();
        assert!(packed.removed_signatures.is_empty());
        assert!(sig.exists());
    }

    /// The archive may not land inside a skill it packs; an empty directory is no skill.
    #[tokio::test]
    async fn an_archive_inside_the_skill_or_nothing_to_pack_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("alpha");
        write_skill(&skill, "name: alpha\ndescription: d\n");
        let inside = skill.join("scripts/alpha.tar.gz");
        let err = pack_dir(
            PackRequest {
                dir: &skill,
                output: &inside,
                force: false,
            },
            NoSigner::None,
            |_| {},
        )
        .await
        .unwrap_err();
        assert!(matches!(err, PackError::InsideSkill { .. }), "{err}");
        assert!(!inside.exists());

        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let err = pack_dir(
            PackRequest {
                dir: &empty,
                output: &tmp.path().join("e.zip"),
                force: false,
            },
            NoSigner::None,
            |_| {},
        )
        .await
        .unwrap_err();
        assert!(matches!(err, PackError::Empty { .. }), "{err}");
    }
}
