//! Publishing into the database: a [`Draft`] checks a loaded skill and its paths, takes the bytes
//! read and becomes a [`Prepared`] (hashed, signature verified; no database);
//! [`Registry::commit`] writes it in one `BEGIN IMMEDIATE` transaction (blocking, brief).
//! Reading a skill from a source is a layer above: [`crate::publish`].

use std::collections::HashMap;

use bytes::Bytes;
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use super::{Actor, AuditAction, Registry, RegistryError, Result, audit, order, query};
use crate::digest::{self, Manifest};
use crate::document::{Skill, ValidateOptions};
use crate::feed::ChangeAction;
use crate::path::FileEntry;
use crate::path::{check_canonical, fold_key};
use crate::sign::{self, Keyring, SignError, Statement};
use crate::store::VersionRecord;
use skillcat_core::lookalike;

/// What one version may hold, counted on the files it lists and again on the bytes read: a
/// version over either is [`RegistryError::TooLarge`] and nothing is written. The defaults are
/// what clients accept (SEP-2640 hosts take 512 files and 16 MiB per skill).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionLimits {
    /// Most bytes of file contents, all files together (default 16 MiB).
    pub max_bytes: u64,
    /// Most files (default 512).
    pub max_files: usize,
}

impl VersionLimits {
    /// The default size limit: 16 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 16 << 20;
    /// The default file-count limit: 512.
    pub const DEFAULT_MAX_FILES: usize = 512;

    fn size_limit(&self) -> String {
        let mib = self.max_bytes >> 20;
        if mib > 0 && mib << 20 == self.max_bytes {
            format!("{} bytes ({mib} MiB)", self.max_bytes)
        } else {
            format!("{} bytes", self.max_bytes)
        }
    }

    /// Refuses `files` files.
    fn check_files(&self, name: &str, version: &str, files: usize) -> Result<()> {
        if files > self.max_files {
            return Err(RegistryError::TooLarge {
                name: name.to_string(),
                version: version.to_string(),
                found: format!("{files} files"),
                limit: format!("{} files", self.max_files),
            });
        }
        Ok(())
    }

    /// Refuses `bytes` bytes (`at_least`: the count stopped once past the limit).
    pub(crate) fn check_bytes(
        &self,
        name: &str,
        version: &str,
        bytes: u64,
        at_least: bool,
    ) -> Result<()> {
        if bytes > self.max_bytes {
            return Err(RegistryError::TooLarge {
                name: name.to_string(),
                version: version.to_string(),
                found: format!("{}{bytes} bytes", if at_least { "at least " } else { "" }),
                limit: self.size_limit(),
            });
        }
        Ok(())
    }
}

impl Default for VersionLimits {
    fn default() -> Self {
        VersionLimits {
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_files: Self::DEFAULT_MAX_FILES,
        }
    }
}

/// How to publish.
#[derive(Debug, Clone, Default)]
pub struct PublishOptions<'a> {
    /// The version to publish as; by default the skill's `metadata.version`. Either must be
    /// semver.
    pub version: Option<String>,
    /// The detached signature (`.minisig` text) of the skill's statement, stored with the
    /// version.
    pub signature: Option<String>,
    /// When given, the skill must carry a signature that verifies against this keyring.
    pub keyring: Option<&'a Keyring>,
    /// Validation settings (extension fields allowed, limits).
    pub validate: ValidateOptions,
    /// What one version may hold.
    pub limits: VersionLimits,
}

/// What a publish did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A new version was written.
    Published,
    /// The same content was already published under this version: nothing was written
    /// (except a signature by a key not recorded yet, see [`Published::signature_added`]).
    Unchanged,
}

/// The result of a publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Published {
    /// The skill's name.
    pub name: String,
    /// The version.
    pub version: String,
    /// The skill digest.
    pub digest: String,
    /// Written, or already there.
    pub outcome: Outcome,
    /// How many files the version has.
    pub files: usize,
    /// How many of their contents were new to the registry (the rest were deduplicated).
    pub new_blobs: usize,
    /// The key whose signature came with this publish.
    pub signed_by: Option<String>,
    /// Whether that signature was stored by this publish.
    pub signature_added: bool,
    /// Whether the version is now the skill's `latest`.
    pub latest: bool,
}

pub(crate) struct PreparedFile {
    pub(crate) path: String,
    pub(crate) fold: String,
    pub(crate) sha256: [u8; 32],
    pub(crate) bytes: Bytes,
    pub(crate) executable: bool,
}

pub(crate) struct PreparedSignature {
    pub(crate) key_id: String,
    pub(crate) text: String,
}

/// A skill read, validated, hashed and (when asked) verified: ready to [`commit`](Registry::commit).
pub struct Prepared {
    pub(crate) location: String,
    pub(crate) semver: semver::Version,
    pub(crate) manifest: Manifest,
    pub(crate) manifest_json: String,
    pub(crate) digest: [u8; 32],
    pub(crate) description: String,
    pub(crate) body: String,
    pub(crate) files: Vec<PreparedFile>,
    pub(crate) signature: Option<PreparedSignature>,
    /// The audit's findings as a JSON array, recorded with a new version when set.
    pub(crate) findings: Option<String>,
    /// When it was published, for a version copied from another registry (else now).
    pub(crate) published_at: Option<i64>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("name", &self.manifest.name)
            .field("version", &self.manifest.version)
            .field("digest", &self.manifest.digest)
            .field("files", &self.files.len())
            .finish()
    }
}

impl Prepared {
    /// The signature to store with it, `(key id, text)`.
    pub(crate) fn signature_text(&self) -> Option<(String, String)> {
        self.signature
            .as_ref()
            .map(|s| (s.key_id.clone(), s.text.clone()))
    }

    /// The audit findings recorded with it (JSON), if any.
    pub(crate) fn findings_json(&self) -> Option<&str> {
        self.findings.as_deref()
    }

    /// A version another registry holds, as [`Store::import`](crate::store::Store::import)
    /// writes it: nothing taken on trust. Its paths must be canonical and distinct when folded,
    /// the manifest rebuilt from its bytes must be the one it lists (and its digest the listed
    /// one), and every signature must be well formed and name this very statement. Returns the
    /// prepared version (with the first signature) and the others.
    pub(crate) fn from_record(record: &VersionRecord) -> Result<(Prepared, Vec<(String, String)>)> {
        let name = record.info.name.clone();
        let semver = order::parse_version(&name, &record.info.version)?;
        let version = semver.to_string();
        if version != record.info.version || record.manifest.version != version {
            return Err(RegistryError::BadSpec {
                spec: format!("{name}@{}", record.info.version),
                reason: "the copied version is not spelled as its manifest and semver spell it"
                    .into(),
            });
        }
        let mut folds: HashMap<String, &str> = HashMap::new();
        let mut files = Vec::with_capacity(record.files.len());
        for (entry, bytes) in &record.files {
            let bad = |reason: String| RegistryError::BadPath {
                name: name.clone(),
                path: entry.path.clone(),
                reason,
            };
            check_canonical(&entry.path).map_err(|rule| bad(rule.to_string()))?;
            let fold = fold_key(&entry.path);
            if let Some(other) = folds.insert(fold.clone(), &entry.path) {
                return Err(bad(format!(
                    "it names the same file as {other:?} on a case-insensitive file system"
                )));
            }
            files.push(PreparedFile {
                path: entry.path.clone(),
                fold,
                sha256: digest::sha256(bytes),
                bytes: bytes.clone(),
                executable: entry.executable,
            });
        }
        let manifest = Manifest::build(
            &name,
            &version,
            files
                .iter()
                .map(|f| (f.path.as_str(), &f.bytes[..], f.executable)),
        );
        if manifest != record.manifest || manifest.digest != record.info.digest {
            return Err(RegistryError::Corrupt {
                path: record.info.name.clone(),
                what: format!("{name}@{version}: the copied files"),
                expected: record.info.digest.clone(),
                actual: manifest.digest,
            });
        }
        let digest =
            digest::parse_digest(&manifest.digest).expect("Manifest::build writes sha256:<hex>");
        let mut signatures = Vec::with_capacity(record.signatures.len());
        for sig in &record.signatures {
            let key_id = check_unverified(&manifest, &sig.text).map_err(|source| {
                RegistryError::BadSignature {
                    name: name.clone(),
                    version: version.clone(),
                    source: Box::new(source),
                }
            })?;
            signatures.push((key_id, sig.text.clone()));
        }
        let mut rest = signatures.into_iter();
        let signature = rest
            .next()
            .map(|(key_id, text)| PreparedSignature { key_id, text });
        Ok((
            Prepared {
                location: format!("{name}@{version}"),
                semver,
                manifest_json: String::from_utf8(manifest.to_canonical_json())
                    .expect("JSON is UTF-8"),
                manifest,
                digest,
                description: record.info.description.clone(),
                body: record.body.clone(),
                files,
                signature,
                findings: record.findings.clone(),
                published_at: Some(record.info.published_at),
            },
            rest.collect(),
        ))
    }

    /// Records what an audit found in the skill (a JSON array of findings, as the
    /// `skillcat-audit` crate writes them) with the version, when the commit writes a new one;
    /// [`Registry::findings`] reads it back. Refused when it is not a JSON array.
    pub fn with_findings(mut self, findings_json: String) -> Result<Prepared> {
        match serde_json::from_str::<serde_json::Value>(&findings_json) {
            Ok(serde_json::Value::Array(_)) => {
                self.findings = Some(findings_json);
                Ok(self)
            }
            _ => Err(RegistryError::BadMetadata {
                name: self.manifest.name.clone(),
                reason: "the audit's findings must be a JSON array".into(),
            }),
        }
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The version it will be published as.
    pub fn version(&self) -> &str {
        &self.manifest.version
    }

    /// Its manifest, computed from the bytes read.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Where the skill was read from.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The bytes of its files, all together (what the version holds unpacked).
    pub fn bytes(&self) -> u64 {
        self.files
            .iter()
            .fold(0u64, |n, f| n.saturating_add(f.bytes.len() as u64))
    }

    /// The key id of the signature that comes with it.
    pub fn signed_by(&self) -> Option<&str> {
        self.signature.as_ref().map(|s| s.key_id.as_str())
    }
}

/// A skill checked and ready to have its files read: [`Draft::new`] validates it, settles its
/// version and checks every path; [`Draft::finish`] hashes the bytes read and verifies the
/// signature. Reading the bytes is the caller's part, so the registry never depends on where a
/// skill comes from ([`crate::prepare::prepare`] reads them from any source).
#[derive(Debug)]
pub struct Draft {
    location: String,
    name: String,
    version: String,
    semver: semver::Version,
    description: String,
    body: String,
    files: Vec<(String, String, bool)>,
    limits: VersionLimits,
}

impl Draft {
    /// Checks a loaded skill and its file list: it must validate (else
    /// [`RegistryError::InvalidSkill`] with every fault), have a semver version (given, or
    /// `metadata.version`), and paths that are canonical and distinct on a case-insensitive
    /// file system.
    pub fn new(skill: &Skill, files: &[FileEntry], opts: &PublishOptions<'_>) -> Result<Draft> {
        let faults = skill.validate(&opts.validate);
        if !faults.is_empty() {
            return Err(RegistryError::InvalidSkill {
                location: skill.location().to_string(),
                faults,
            });
        }
        let name = skill.name();
        let version_text = match (&opts.version, skill.version()) {
            (Some(v), _) => v.clone(),
            (None, Some(v)) if !v.is_empty() => v.to_string(),
            (None, _) => return Err(RegistryError::MissingVersion { name }),
        };
        let semver = order::parse_version(&name, &version_text)?;
        let version = semver.to_string();
        check_metadata(&name, skill.description())?;
        // The sizes a source lists are claims: checked here to refuse early, and again on the
        // bytes read (`finish`).
        opts.limits.check_files(&name, &version, files.len())?;
        let listed = files.iter().fold(0u64, |n, f| n.saturating_add(f.size));
        opts.limits.check_bytes(&name, &version, listed, false)?;
        let mut checked = Vec::with_capacity(files.len());
        let mut folds: HashMap<String, String> = HashMap::new();
        for entry in files {
            let bad = |reason: String| RegistryError::BadPath {
                name: name.clone(),
                path: entry.path.clone(),
                reason,
            };
            check_canonical(&entry.path).map_err(|rule| bad(rule.to_string()))?;
            let fold = fold_key(&entry.path);
            if let Some(other) = folds.insert(fold.clone(), entry.path.clone()) {
                return Err(bad(format!(
                    "it names the same file as {other:?} on a case-insensitive file system"
                )));
            }
            checked.push((entry.path.clone(), fold, entry.executable));
        }
        Ok(Draft {
            location: skill.location().to_string(),
            version,
            semver,
            name,
            description: skill.description().to_string(),
            body: skill.body().to_string(),
            files: checked,
            limits: opts.limits,
        })
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version it will be published as.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What the version may hold (from the options it was made with): a reader stops once
    /// the bytes read pass [`VersionLimits::max_bytes`].
    pub fn limits(&self) -> VersionLimits {
        self.limits
    }

    /// The paths (relative to the skill root) whose bytes [`finish`](Self::finish) takes, in
    /// this order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(path, _, _)| path.as_str())
    }

    /// Where the skill was read from.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Takes the bytes of every file of [`paths`](Self::paths), in order; builds the manifest
    /// from them and checks the signature: with a keyring it must verify against the statement
    /// recomputed from these bytes; without one it is checked for form and for naming this very
    /// statement.
    ///
    /// # Panics
    ///
    /// When `contents` does not hold exactly one entry per path.
    pub fn finish(self, contents: Vec<Bytes>, opts: &PublishOptions<'_>) -> Result<Prepared> {
        assert_eq!(
            contents.len(),
            self.files.len(),
            "Draft::finish takes one content per path"
        );
        let total = contents
            .iter()
            .fold(0u64, |n, b| n.saturating_add(b.len() as u64));
        self.limits
            .check_bytes(&self.name, &self.version, total, false)?;
        let Draft {
            location,
            name,
            version,
            semver,
            description,
            body,
            files,
            limits: _,
        } = self;
        let mut files: Vec<PreparedFile> = files
            .into_iter()
            .zip(contents)
            .map(|((path, fold, executable), bytes)| PreparedFile {
                path,
                fold,
                sha256: [0; 32],
                bytes,
                executable,
            })
            .collect();
        // The manifest hashes every file once; the blob addresses are taken from it.
        let manifest = Manifest::build(
            &name,
            &version,
            files
                .iter()
                .map(|f| (f.path.as_str(), &f.bytes[..], f.executable)),
        );
        let hashes: HashMap<&str, &str> = manifest
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.digest.as_str()))
            .collect();
        for f in &mut files {
            let hash = hashes
                .get(f.path.as_str())
                .and_then(|d| digest::parse_digest(d));
            f.sha256 = hash.expect("Manifest::build lists every file as sha256:<hex>");
        }
        let digest =
            digest::parse_digest(&manifest.digest).expect("Manifest::build writes sha256:<hex>");
        let bad_signature = |source: SignError| RegistryError::BadSignature {
            name: name.clone(),
            version: version.clone(),
            source: Box::new(source),
        };
        let signature = match (&opts.signature, opts.keyring) {
            (None, Some(_)) => return Err(RegistryError::Unsigned { name, version }),
            (None, None) => None,
            (Some(text), Some(keyring)) => {
                let verified =
                    sign::verify(&manifest, text, keyring, &name).map_err(bad_signature)?;
                Some(PreparedSignature {
                    key_id: verified.key_id,
                    text: text.clone(),
                })
            }
            (Some(text), None) => {
                let key_id = check_unverified(&manifest, text).map_err(bad_signature)?;
                Some(PreparedSignature {
                    key_id,
                    text: text.clone(),
                })
            }
        };
        Ok(Prepared {
            location,
            semver,
            manifest_json: String::from_utf8(manifest.to_canonical_json()).expect("JSON is UTF-8"),
            manifest,
            digest,
            description,
            body,
            files,
            signature,
            findings: None,
            published_at: None,
        })
    }
}

/// What the schema would refuse in the text a version carries, refused here first so that it
/// is a refusal with a reason, not a failed write: a name of 1 to 64 characters (the `skill`
/// table's `CHECK`; the validator counts the same way, this holds whatever it is told), no NUL
/// in the name or description.
fn check_metadata(name: &str, description: &str) -> Result<()> {
    let bad = |reason: String| RegistryError::BadMetadata {
        name: name.chars().take(64).collect(),
        reason,
    };
    let chars = name.chars().count();
    if !(1..=64).contains(&chars) {
        return Err(bad(format!(
            "the name is {chars} characters long; a registry keeps names of 1 to 64"
        )));
    }
    if name.contains('\0') || description.contains('\0') {
        return Err(bad("the name or description holds a NUL character".into()));
    }
    Ok(())
}

/// Without a keyring a signature cannot be authenticated, but it can be checked for form and
/// for naming the statement recomputed here (so a signature of another version or of other
/// content is refused, not stored to fail every later verification). Returns its key id.
fn check_unverified(manifest: &Manifest, text: &str) -> std::result::Result<String, SignError> {
    let bad = |reason: String| SignError::MalformedSignature { reason };
    let sig = minisign::SignatureBox::from_string(text).map_err(|e| bad(e.to_string()))?;
    let mut id = [0u8; 8];
    let keynum = sig.keynum();
    if keynum.len() != 8 {
        return Err(bad("the key id is not 8 bytes".into()));
    }
    id.copy_from_slice(keynum);
    let key_id = format!("{:016X}", u64::from_le_bytes(id));
    if !sig.is_prehashed() {
        return Err(SignError::LegacySignature { key_id });
    }
    let comment = sig.trusted_comment().map_err(|e| bad(e.to_string()))?;
    let expected = Statement::from_manifest(manifest)?;
    let claimed = Statement::from_trusted_comment(&comment)?;
    if claimed != expected {
        let mut differences = Vec::new();
        for (field, want, got) in [
            ("name", &expected.name, &claimed.name),
            ("version", &expected.version, &claimed.version),
            ("digest", &expected.digest, &claimed.digest),
            ("manifest", &expected.manifest, &claimed.manifest),
        ] {
            if want != got {
                differences.push(format!("{field}: publishing {want:?}, signed {got:?}"));
            }
        }
        return Err(SignError::TrustedCommentMismatch {
            expected: expected.to_trusted_comment(),
            actual: comment,
            differences: differences.join("; "),
        });
    }
    Ok(key_id)
}

impl Registry {
    /// Writes a prepared skill in one `BEGIN IMMEDIATE` transaction: blobs (deduplicated by
    /// sha256), the version, its files and signature, the `latest` tag and the search row.
    ///
    /// The same content under an existing `name@version` changes nothing
    /// ([`Outcome::Unchanged`]; a signature by a key not yet recorded is added); other content
    /// is [`RegistryError::Immutable`]. A name new to the registry is refused when it looks
    /// like one held ([`RegistryError::LookAlike`]: the same confusable skeleton, one indexed
    /// lookup) or mixes scripts ([`RegistryError::MixedScripts`]); a name already held takes
    /// new versions as before.
    pub fn commit(&mut self, p: &Prepared) -> Result<Published> {
        self.commit_as(p, None)
    }

    /// [`commit`](Self::commit) on behalf of `actor`: a write (a new version, or a signature
    /// added to the same content) also appends its row to the audit log, in the same
    /// transaction. A publish that writes nothing records nothing.
    pub fn commit_as(&mut self, p: &Prepared, actor: Option<&Actor>) -> Result<Published> {
        let (tx, sql) = self.begin_write()?;
        let sql = &sql;
        let (published, wrote) = write_version(&tx, p, actor, &sql)?;
        if wrote {
            tx.commit().map_err(sql)?;
            self.checkpoint();
        }
        // Otherwise the transaction is dropped: rolled back, nothing written.
        Ok(published)
    }

    /// Commits several prepared versions in one `BEGIN IMMEDIATE` transaction, each within a
    /// savepoint of its own, so that each is still all or nothing: one refused (or failing)
    /// is rolled back alone and the others are written, as if each had been
    /// [`commit`](Self::commit)ted in turn (a later one sees an earlier one). One durable
    /// commit (and one WAL checkpoint) for them all is what makes a publish of thousands of
    /// skills take seconds, not minutes.
    ///
    /// Should the transaction itself fail (a full disk rolls it back, or its commit fails),
    /// nothing of it is kept and every version is committed again on its own, so that each
    /// gets its own outcome. Returns one result per version, in order.
    pub fn commit_many(&mut self, prepared: &[Prepared]) -> Vec<Result<Published>> {
        self.commit_many_as(prepared, None)
    }

    /// [`commit_many`](Self::commit_many) on behalf of `actor` (each write audited).
    pub fn commit_many_as(
        &mut self,
        prepared: &[Prepared],
        actor: Option<&Actor>,
    ) -> Vec<Result<Published>> {
        if self.read_only || prepared.len() < 2 {
            return prepared.iter().map(|p| self.commit_as(p, actor)).collect();
        }
        match self.try_commit_many(prepared, actor) {
            Some(results) => results,
            None => prepared.iter().map(|p| self.commit_as(p, actor)).collect(),
        }
    }

    /// [`commit_many`](Self::commit_many) in one transaction; `None` when the transaction
    /// failed as a whole (nothing of it was kept).
    fn try_commit_many(
        &mut self,
        prepared: &[Prepared],
        actor: Option<&Actor>,
    ) -> Option<Vec<Result<Published>>> {
        let shown = &self.shown;
        let sql = |source: rusqlite::Error| RegistryError::Sqlite {
            path: shown.clone(),
            source,
        };
        let mut tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ok()?;
        let mut results = Vec::with_capacity(prepared.len());
        for p in prepared {
            let savepoint = tx.savepoint().ok()?;
            match write_version(&savepoint, p, actor, &sql) {
                Ok((published, _)) => {
                    savepoint.commit().ok()?;
                    results.push(Ok(published));
                }
                // SQLite rolls the whole transaction back on some errors (a full disk, an I/O
                // error): the versions before this one are gone too.
                Err(_) if savepoint.is_autocommit() => return None,
                // Dropping the savepoint rolls this version back alone.
                Err(e) => results.push(Err(e)),
            }
        }
        tx.commit().ok()?;
        self.checkpoint();
        Some(results)
    }

    /// After a publish: copies the WAL into the database and truncates it
    /// (`wal_checkpoint(TRUNCATE)`, waiting up to the busy timeout for readers of older
    /// snapshots), so that the WAL never holds much more than the write in progress, however
    /// many connections stay open. Best effort: the version is committed already; a checkpoint
    /// kept from finishing (a reader that outlasts the busy timeout) is done by the next write.
    fn checkpoint(&self) {
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
}

/// Writes `p` in the transaction (or savepoint) `tx`: the version, or nothing when the same
/// content is published already (a signature by a key not recorded yet is added). Returns what
/// the publish did and whether anything was written (else the caller need not commit).
fn write_version(
    tx: &rusqlite::Connection,
    p: &Prepared,
    actor: Option<&Actor>,
    sql: SqlError<'_>,
) -> Result<(Published, bool)> {
    let name = p.name().to_string();
    let version = p.version().to_string();
    let mut published = Published {
        name: name.clone(),
        version: version.clone(),
        digest: p.manifest.digest.clone(),
        outcome: Outcome::Published,
        files: p.files.len(),
        new_blobs: 0,
        signed_by: p.signed_by().map(str::to_string),
        signature_added: false,
        latest: false,
    };

    let skill_id = skill_id(tx, &name, sql)?;
    let existing: Vec<(i64, String)> = {
        let mut stmt = tx
            .prepare_cached("SELECT id, version FROM version WHERE skill_id = ?1")
            .map_err(sql)?;
        stmt.query_map([skill_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(sql)?
    };
    if let Some((id, _)) = existing.iter().find(|(_, v)| *v == version) {
        check_same(tx, p, *id, sql)?;
        published.outcome = Outcome::Unchanged;
        if let Some(sig) = &p.signature {
            let n = tx
                .execute(
                    "INSERT INTO signature (version_id, key_id, signature) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (version_id, key_id) DO NOTHING",
                    params![id, sig.key_id, sig.text],
                )
                .map_err(sql)?;
            published.signature_added = n > 0;
        }
        published.latest = is_latest(tx, skill_id, *id).map_err(sql)?;
        if published.signature_added {
            // The version's statement gained a signature: readers must learn of it.
            crate::feed::append(tx, &name, &version, ChangeAction::Publish).map_err(sql)?;
            if let Some(actor) = actor {
                let action = AuditAction::Signature;
                audit::record(tx, actor, action, &name, &version, &p.digest).map_err(sql)?;
            }
        }
        let wrote = published.signature_added;
        return Ok((published, wrote));
    }
    if let Some(twin) = order::same_precedence(&p.semver, existing.iter().map(|(_, v)| v.as_str()))
    {
        return Err(RegistryError::VersionConflict {
            name,
            version,
            existing: twin.to_string(),
        });
    }

    let (blob_ids, new_blobs) = store_blobs(tx, p, sql)?;
    published.new_blobs = new_blobs;
    let version_id = insert_version(tx, p, skill_id, &blob_ids, sql)?;
    published.signature_added = p.signature.is_some();
    query::refresh_latest(tx, skill_id).map_err(sql)?;
    published.latest = is_latest(tx, skill_id, version_id).map_err(sql)?;
    crate::feed::append(tx, &name, &version, ChangeAction::Publish).map_err(sql)?;
    if let Some(actor) = actor {
        let action = AuditAction::Publish;
        audit::record(tx, actor, action, &name, &version, &p.digest).map_err(sql)?;
    }
    Ok((published, true))
}

/// Maps a database error to the registry's, naming its file.
pub(crate) type SqlError<'a> = &'a dyn Fn(rusqlite::Error) -> RegistryError;

/// The id of the skill `name`, added when it is new: refused when it looks like one held or
/// mixes scripts, before anything is written (the transaction is dropped, so rolled back).
pub(crate) fn skill_id(tx: &rusqlite::Connection, name: &str, sql: SqlError<'_>) -> Result<i64> {
    // Statements cached: a publish of many skills runs them once per version.
    let held: Option<i64> = tx
        .prepare_cached("SELECT id FROM skill WHERE name = ?1")
        .and_then(|mut s| s.query_row([name], |r| r.get(0)))
        .optional()
        .map_err(sql)?;
    Ok(match held {
        Some(id) => id,
        None => {
            // A new name: refused when it looks like one held or mixes scripts, before
            // anything is written (the transaction is dropped, so rolled back).
            let skeleton = lookalike::skeleton(name);
            let existing: Option<String> = tx
                .prepare_cached("SELECT name FROM skill WHERE skeleton = ?1 ORDER BY id LIMIT 1")
                .and_then(|mut s| s.query_row([&skeleton], |r| r.get(0)))
                .optional()
                .map_err(sql)?;
            if let Some(existing) = existing {
                return Err(RegistryError::LookAlike {
                    name: name.to_string(),
                    existing,
                });
            }
            if let Some(scripts) = lookalike::mixed_scripts(name) {
                return Err(RegistryError::MixedScripts {
                    name: name.to_string(),
                    scripts,
                });
            }
            tx.prepare_cached("INSERT INTO skill (name, skeleton) VALUES (?1, ?2) RETURNING id")
                .and_then(|mut s| s.query_row([name, &skeleton], |r| r.get(0)))
                .map_err(sql)?
        }
    })
}

/// A version published again must be the same: the same files (its digest) and the same
/// manifest (executable bits).
pub(crate) fn check_same(
    tx: &rusqlite::Connection,
    p: &Prepared,
    id: i64,
    sql: SqlError<'_>,
) -> Result<()> {
    let (stored_digest, stored_manifest): (Vec<u8>, String) = tx
        .query_row(
            "SELECT v.skill_digest, x.manifest FROM version v \
             JOIN version_text x ON x.version_id = v.id WHERE v.id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql)?;
    if stored_digest[..] != p.digest[..] {
        return Err(RegistryError::Immutable {
            name: p.name().to_string(),
            version: p.version().to_string(),
            what: format!(
                "published sha256:{}, this is {}",
                crate::digest::to_hex(&stored_digest),
                p.manifest.digest
            ),
        });
    }
    if stored_manifest != p.manifest_json {
        return Err(RegistryError::Immutable {
            name: p.name().to_string(),
            version: p.version().to_string(),
            what: "same files, but the manifest differs (executable bits)".into(),
        });
    }
    Ok(())
}

/// Each file's blob id, a blob stored only when no version holds the same bytes; how many
/// were new.
pub(crate) fn store_blobs(
    tx: &rusqlite::Connection,
    p: &Prepared,
    sql: SqlError<'_>,
) -> Result<(Vec<i64>, usize)> {
    let mut blob_ids = Vec::with_capacity(p.files.len());
    let mut new_blobs = 0;
    {
        let mut find = tx
            .prepare_cached("SELECT id FROM blob WHERE sha256 = ?1")
            .map_err(sql)?;
        // A new blob is inserted as a zeroblob and its bytes streamed in by incremental
        // blob I/O: binding them would have SQLite copy them twice (the bound value and
        // the record), so a version's write would hold three times its size.
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO blob (sha256, size, content) VALUES (?1, ?2, zeroblob(?2)) \
                 RETURNING id",
            )
            .map_err(sql)?;
        for f in &p.files {
            let id: Option<i64> = find
                .query_row([&f.sha256[..]], |r| r.get(0))
                .optional()
                .map_err(sql)?;
            let id = match id {
                Some(id) => id,
                None => {
                    let id: i64 = insert
                        .query_row(params![&f.sha256[..], f.bytes.len() as i64], |r| r.get(0))
                        .map_err(sql)?;
                    if !f.bytes.is_empty() {
                        let mut blob = tx
                            .blob_open(rusqlite::MAIN_DB, "blob", "content", id, false)
                            .map_err(sql)?;
                        blob.write_at(&f.bytes, 0).map_err(sql)?;
                    }
                    new_blobs += 1;
                    id
                }
            };
            blob_ids.push(id);
        }
    }
    Ok((blob_ids, new_blobs))
}

/// Inserts the version, its text, its files, its signature and its findings; its id.
pub(crate) fn insert_version(
    tx: &rusqlite::Connection,
    p: &Prepared,
    skill_id: i64,
    blob_ids: &[i64],
    sql: SqlError<'_>,
) -> Result<i64> {
    let now = p.published_at.unwrap_or_else(crate::feed::now);
    let version_id: i64 = tx
        .prepare_cached(
            "INSERT INTO version (skill_id, version, skill_digest, published_at, description) \
             VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
        )
        .and_then(|mut s| {
            s.query_row(
                params![skill_id, p.version(), &p.digest[..], now, p.description],
                |r| r.get(0),
            )
        })
        .map_err(sql)?;
    tx.prepare_cached("INSERT INTO version_text (version_id, manifest, body) VALUES (?1, ?2, ?3)")
        .and_then(|mut s| s.execute(params![version_id, p.manifest_json, p.body]))
        .map_err(sql)?;
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO file (version_id, path, path_fold, blob_id, executable) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(sql)?;
        for (f, blob_id) in p.files.iter().zip(blob_ids) {
            insert
                .execute(params![version_id, f.path, f.fold, blob_id, f.executable])
                .map_err(sql)?;
        }
    }
    if let Some(sig) = &p.signature {
        tx.execute(
            "INSERT INTO signature (version_id, key_id, signature) VALUES (?1, ?2, ?3)",
            params![version_id, sig.key_id, sig.text],
        )
        .map_err(sql)?;
    }
    if let Some(findings) = &p.findings {
        tx.execute(
            "INSERT INTO version_findings (version_id, findings) VALUES (?1, ?2)",
            params![version_id, findings],
        )
        .map_err(sql)?;
    }
    Ok(version_id)
}

fn is_latest(
    conn: &rusqlite::Connection,
    skill_id: i64,
    version_id: i64,
) -> rusqlite::Result<bool> {
    let latest: Option<i64> = conn
        .prepare_cached("SELECT version_id FROM tag WHERE skill_id = ?1 AND tag = ?2")?
        .query_row(params![skill_id, query::LATEST], |r| r.get(0))
        .optional()?;
    Ok(latest == Some(version_id))
}
