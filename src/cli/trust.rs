//! Distribution commands: digest, pack, keygen, sign, verify.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use skillcat::digest::Manifest;
use skillcat::document::Skill;
use skillcat::path::base_name;
use skillcat::sign::pack_signed::{PackError, PackNote, PackRequest};
use skillcat::sign::{self, Keyring, SignError, Statement};
use skillcat::source::{Detail, RootRecord, Source, SourceExt, SourceSpec};

use super::read::{Opened, open_maybe_for, print_fault};
use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// The environment variable a secret key's password may come from (for scripts and CI).
pub const PASSWORD_ENV: &str = "SKILLCAT_PASSWORD";

/// The manifest of a skill, recomputed from its bytes, under the version its source keeps it as
/// (a registry's published version, an index entry's), else its `metadata.version`; and what
/// the source keeps about it.
async fn manifest_of(src: &dyn Source, skill: &Skill) -> skillcat::Result<(Manifest, RootRecord)> {
    let record = src.record(skill.root()).await?;
    let version = record.version.as_deref().or(skill.version()).unwrap_or("");
    let m = if skill.has_files() {
        src.manifest_of(skill.root(), skill.files(), &skill.name(), version)
            .await?
    } else {
        src.manifest(skill.root(), &skill.name(), version).await?
    };
    Ok((m, record))
}

/// `name@version`, or the name alone when the skill has no version.
fn at_version(m: &Manifest) -> String {
    if m.version.is_empty() {
        m.name.clone()
    } else {
        format!("{}@{}", m.name, m.version)
    }
}

/// `skillcat digest SOURCE [NAME]`
pub async fn digest(arg: &str, wanted: Option<&str>, format: Format, g: &Globals) -> CliResult {
    let opened = open_maybe_for(arg, wanted, Detail::Files, g).await;
    let (Opened { src, found, .. }, name) = opened?;
    let key = name.map(skillcat::document::name_key);
    let mut manifests = Vec::new();
    let mut failed = false;
    for skill in &found.skills {
        if key
            .as_ref()
            .is_some_and(|k| *k != skillcat::document::name_key(&skill.name()))
        {
            continue;
        }
        match manifest_of(&*src, skill).await {
            Ok((m, _)) => manifests.push(m),
            Err(e) => {
                err!("Error: {}: {e}", skill.location());
                failed = true;
            }
        }
    }
    if name.is_none() {
        // A root that is not a skill still has files, and so a digest; say what is wrong with it,
        // and exit 1 as every command does when it reports a fault.
        for f in &found.faults {
            print_fault(f);
            failed = true;
            match src.manifest(&f.root, base_name(&f.root), "").await {
                Ok(m) => manifests.push(m),
                Err(e) => {
                    err!("Error: {}: {e}", f.location);
                    failed = true;
                }
            }
        }
    }
    if let (Some(w), true) = (wanted, manifests.is_empty() && !failed) {
        for f in &found.faults {
            print_fault(f);
        }
        return Err(failed!("no skill named '{w}' in {arg}"));
    }
    match format {
        Format::Text => {
            for m in &manifests {
                out!("{}  {}", m.digest, m.name);
            }
        }
        Format::Json => {
            let v: Vec<_> = manifests
                .iter()
                .map(|m| serde_json::to_value(m).expect("manifest"))
                .collect();
            out!("{}", serde_json::to_string_pretty(&v).expect("json"));
        }
    }
    Ok(ExitStatus::faults_if(failed))
}

fn read_secret_key(path: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| usage!("cannot read the secret key {path}: {e}"))
}

/// A password from [`PASSWORD_ENV`], else asked on the terminal.
fn password(prompt: &str, confirm: bool) -> Result<String, CliError> {
    if let Ok(p) = std::env::var(PASSWORD_ENV) {
        return Ok(p);
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(usage!(
            "a password is needed: set {PASSWORD_ENV} or run on a terminal"
        ));
    }
    let first =
        rpassword::prompt_password(prompt).map_err(|e| usage!("cannot read the password: {e}"))?;
    if confirm {
        let again = rpassword::prompt_password("Password (again): ")
            .map_err(|e| usage!("cannot read the password: {e}"))?;
        if again != first {
            return Err(usage!("the passwords differ"));
        }
    }
    Ok(first)
}

/// A secret key, and its password once one was needed: a pack of many skills asks for it once.
/// Refuses a skill that fails validation, its faults listed, unless `force` (then the faults
/// are listed and the work goes on). `words`: the action's gerund, verb and participle
/// (`("Signing", "sign", "signed")`).
pub(super) fn refuse_invalid(
    skill: &Skill,
    force: bool,
    (gerund, verb, participle): (&str, &str, &str),
    g: &Globals,
) -> Result<(), CliError> {
    // Valid as the configuration says (`[scripts] extension_fields`), as `validate` judges it.
    let opts = g.validate_options().map_err(super::context_error)?;
    let faults = skill.validate(&opts);
    if faults.is_empty() {
        return Ok(());
    }
    if force {
        err!("{gerund} anyway (--force) {}:", skill.location());
    } else {
        err!("Refusing to {verb} {}:", skill.location());
    }
    for f in &faults {
        err!("  - {} [{}]", f.message(), f.kind());
        if let Some(hint) = super::read::hint_lines(f) {
            err!("{}", hint.trim_end());
        }
    }
    if force {
        return Ok(());
    }
    Err(failed!(
        "nothing {participle}; fix the skill or pass --force"
    ))
}

pub(super) struct Signer {
    secret: String,
    password: Option<String>,
}

impl Signer {
    pub(super) fn load(path: &str) -> Result<Signer, CliError> {
        Ok(Signer {
            secret: read_secret_key(path)?,
            password: None,
        })
    }

    /// Signs with a key that may or may not be password-protected.
    pub(super) fn sign(&mut self, statement: &Statement) -> Result<String, CliError> {
        match sign::sign(statement, &self.secret, self.password.as_deref()) {
            Err(SignError::PasswordRequired) if self.password.is_none() => {
                self.password = Some(password("Password for the secret key: ", false)?);
                self.sign(statement)
            }
            Err(e) => Err(failed!("{e}")),
            Ok(sig) => Ok(sig),
        }
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| failed!("cannot write {}: {e}", path.display()))
}

/// `skillcat pack DIR -o OUT [--sign KEY] [--force]`: [`sign::pack_dir`], each root it judges
/// said on stderr as it goes, what it wrote on stdout. The key is read (and its password asked)
/// before anything is packed.
pub async fn pack(
    dir: &str,
    output: &Path,
    sign_key: Option<&str>,
    force: bool,
    g: &Globals,
) -> CliResult {
    let path = Path::new(dir);
    if !path.is_dir() {
        return Err(usage!(
            "{dir}: pack reads a skill directory or a directory of skills"
        ));
    }
    super::output_dir_exists(output)?;
    if skillcat::pack::PackFormat::for_path(output).is_none() {
        return Err(usage!(
            "{}: the output must end in .tar.gz, .tgz or .zip",
            output.display()
        ));
    }
    let mut signer = sign_key.map(Signer::load).transpose()?;
    let mut sign_with = signer.as_mut().map(|s| move |st: &Statement| s.sign(st));
    let sign = sign_with
        .as_mut()
        .map(|f| f as sign::pack_signed::Signer<'_, CliError>);
    let request = PackRequest {
        dir: path,
        output,
        force,
    };
    let validate = g.validate_options().map_err(super::context_error)?;
    let packed = sign::pack_dir_validating(request, &validate, sign, print_pack_note)
        .await
        .map_err(|e| match e {
            PackError::Sign(e) => e,
            e @ (PackError::Open(_) | PackError::InsideSkill { .. }) => usage!("{e}"),
            e => failed!("{e}"),
        })?;
    out!(
        "Packed {} skill(s) into {}",
        packed.roots.len(),
        output.display()
    );
    for r in &packed.roots {
        let m = &r.manifest;
        out!(
            "{}  {}",
            m.digest,
            if m.name.is_empty() { &r.root } else { &m.name }
        );
        if let Some(sig_path) = &r.signature {
            out!("signed {} → {}", at_version(m), sig_path.display());
        }
    }
    for p in &packed.kept_signatures {
        err!(
            "Kept {}: it still signs what was packed (the same files make the same archive)",
            p.display()
        );
    }
    for p in &packed.removed_signatures {
        err!(
            "Removed {}: it signed what {} held before, not what it holds now (sign again: \
             skillcat pack {dir} -o {} --sign KEY)",
            p.display(),
            output.display(),
            output.display()
        );
    }
    Ok(ExitStatus::Success)
}

/// What `pack` says of a root it judges, on stderr.
fn print_pack_note(note: PackNote<'_>) {
    match note {
        PackNote::Anyway(f) => err!(
            "Packing anyway (--force) {}: {} [{}]",
            f.location,
            f.fault.message(),
            f.fault.kind()
        ),
        PackNote::Refused { fault, unsignable } => {
            print_fault(fault);
            if unsignable {
                err!(
                    "Error: {}: not a readable skill, so it cannot be signed",
                    fault.location
                );
            }
        }
        PackNote::Invalid {
            skill,
            faults,
            packed,
        } => {
            err!(
                "{} {}:",
                if packed {
                    "Packing anyway (--force)"
                } else {
                    "Refusing to pack"
                },
                skill.location()
            );
            for f in faults {
                err!("  - {}", f.message());
                if let Some(hint) = super::read::hint_lines(f) {
                    err!("{}", hint.trim_end());
                }
            }
        }
    }
}

/// `skillcat keygen -o KEYBASE [--unencrypted]`
pub fn keygen(base: &str, unencrypted: bool, force: bool) -> CliResult {
    let pub_path = PathBuf::from(format!("{base}.pub"));
    let key_path = PathBuf::from(format!("{base}.key"));
    super::output_dir_exists(&key_path)?;
    for p in [&pub_path, &key_path] {
        if p.exists() && !force {
            return Err(usage!(
                "{} exists; pass --force to overwrite it",
                p.display()
            ));
        }
    }
    let pw = if unencrypted {
        None
    } else {
        match password("Password for the new key: ", true) {
            Ok(p) => Some(p),
            Err(e) => return Err(e),
        }
    };
    let (public, secret) = match sign::generate_keypair(pw.as_deref()) {
        Ok(k) => k,
        Err(e) => {
            return Err(failed!("{e}"));
        }
    };
    // The secret key is readable by its owner only.
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let written = opts.open(&key_path).and_then(|mut f| {
        // `mode` applies only to a file created here: an existing one (--force) may be
        // readable by others, so restrict it before the secret goes in.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(secret.as_bytes())
    });
    if let Err(e) = written {
        return Err(failed!("cannot write {}: {e}", key_path.display()));
    }
    write_file(&pub_path, &public)?;
    let id = sign::key_id_of_public_key(&public).unwrap_or_default();
    out!(
        "Key {id}: secret key {}, public key {}",
        key_path.display(),
        pub_path.display()
    );
    Ok(ExitStatus::Success)
}

/// What `skillcat sign` is asked to do.
pub struct SignArgs<'a> {
    /// The source.
    pub source: &'a str,
    /// The skill: `NAME` or `NAME@VERSION`.
    pub name: &'a str,
    /// The secret key file.
    pub key: &'a str,
    /// Where to write the signature (default: beside the source).
    pub output: Option<&'a Path>,
    /// Where to write the statement too.
    pub statement: Option<&'a Path>,
    /// Sign a skill that fails validation.
    pub force: bool,
    /// The version to sign it as (for a skill without `metadata.version`, published with
    /// `registry publish --version`).
    pub version: Option<&'a str>,
}

/// `skillcat sign SOURCE NAME --key KEY [-o SIG] [--version V] [--force]`
///
/// A skill that fails validation is refused as `pack` refuses it (with `--force`, signed with a
/// warning): a signature vouches for what a skill is, and a broken one is not worth vouching for.
pub async fn sign_cmd(a: SignArgs<'_>, g: &Globals) -> CliResult {
    let (src, skill) = super::read::find_skill(a.source, a.name, g).await?;
    refuse_invalid(&skill, a.force, ("Signing", "sign", "signed"), g)?;
    let many = src.list().await.map(|r| r.len() > 1).unwrap_or(false);
    let mut m = match manifest_of(&*src, &skill).await {
        Ok((m, _)) => m,
        Err(e) => {
            return Err(failed!("{e}"));
        }
    };
    match (a.version, m.version.is_empty()) {
        (Some(v), true) => m.version = v.to_string(),
        (Some(v), false) if v != m.version => {
            note!(
                "warning: signing {} as version {v}, though it is {} (metadata.version): only a \
                 publish as {v} (`registry publish … --version {v}`) matches this signature",
                m.name,
                m.version
            );
            m.version = v.to_string();
        }
        (Some(_), false) => {}
        (None, true) => note!(
            "warning: {} has no version: the signature names none, and a registry refuses it \
             for any version it publishes. Set metadata.version in its SKILL.md and sign again, \
             or sign with --version V to publish it with `registry publish … --version V`",
            m.name
        ),
        (None, false) => {}
    }
    let path = a
        .output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| sign::skill_signature_path(a.source, &m.name, !many));
    for p in std::iter::once(path.as_path()).chain(a.statement) {
        super::output_dir_exists(p)?;
    }
    let statement = match Statement::from_manifest(&m) {
        Ok(s) => s,
        Err(e) => {
            return Err(failed!("{e}"));
        }
    };
    let sig = Signer::load(a.key).and_then(|mut s| s.sign(&statement))?;
    write_file(&path, &sig)?;
    if let Some(p) = a.statement
        && let Err(e) = write_file(p, &statement.to_text())
    {
        return Err(e);
    }
    out!(
        "Signed {} ({}) → {}",
        at_version(&m),
        m.digest,
        path.display()
    );
    Ok(ExitStatus::Success)
}

/// A signature of one skill and where it was found, for messages.
pub(super) struct Found {
    /// Where: `the registry …`, `the index …`, or the file.
    pub(super) origin: String,
    /// The `.minisig` text.
    pub(super) text: String,
}

/// The file beside a source that `pack --sign` and `sign` write for one of its skills
/// ([`signature_path`]), read when it exists. A spec that is not a path (a URL, `sqlite:`, a git repository) has no file beside it.
pub(super) fn beside_signature(
    spec: &str,
    name: &str,
    single: bool,
) -> Result<Option<Found>, String> {
    if !SourceSpec::is_path_spelling(spec) || is_registry_spec(spec) {
        return Ok(None);
    }
    let path = sign::skill_signature_path(spec, name, single);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(Found {
            origin: path.display().to_string(),
            text,
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read the signature {}: {e}", path.display())),
    }
}

/// Every signature of one skill, wherever its source keeps it: those the source holds with it
/// (a registry's stored ones, an HTTP index entry's `skillcat.signature`, which a cached index
/// keeps offline), then the file beside the source.
pub(super) fn signatures_of(
    spec: &str,
    src: &dyn Source,
    skill: &Skill,
    record: &RootRecord,
    single: bool,
) -> Result<Vec<Found>, String> {
    let kept_by = src.location(skill.root());
    let mut found: Vec<Found> = record
        .signatures
        .iter()
        .map(|text| Found {
            origin: format!("kept by the source for {kept_by}"),
            text: text.clone(),
        })
        .collect();
    found.extend(beside_signature(spec, &skill.name(), single)?);
    Ok(found)
}

/// Loads the keyring to check signatures against: `--keyring FILE`, else the `keyring` of the
/// configuration, else the default one (`skillcat trust add` writes there). Errors are printed,
/// saying what a keyring is when the file is something else (a public key, say).
pub(super) fn load_keyring(given: Option<&Path>, g: &Globals) -> Result<Keyring, CliError> {
    g.required_keyring(given)
        .map(|(_, ring)| ring)
        .map_err(super::context_error)
}

/// `skillcat verify SOURCE [NAME] [--keyring FILE] [--sig FILE]`
pub async fn verify(
    arg: &str,
    wanted: Option<&str>,
    keyring: Option<&Path>,
    sig: Option<&Path>,
    format: Format,
    g: &Globals,
) -> CliResult {
    let ring = load_keyring(keyring, g)?;
    let given = match sig.map(|p| (p, std::fs::read_to_string(p))) {
        None => None,
        Some((p, Ok(text))) => Some(Found {
            origin: p.display().to_string(),
            text,
        }),
        Some((p, Err(e))) => {
            return Err(usage!("cannot read the signature {}: {e}", p.display()));
        }
    };
    let opened = open_maybe_for(arg, wanted, Detail::Files, g).await;
    let (Opened { src, found, .. }, name) = opened?;
    let key = name.map(skillcat::document::name_key);
    let skills: Vec<&Skill> = found
        .skills
        .iter()
        .filter(|s| {
            key.as_ref()
                .is_none_or(|k| *k == skillcat::document::name_key(&s.name()))
        })
        .collect();
    let mut results = Vec::new();
    for f in &found.faults {
        print_fault(f);
        results.push(json!({"root": f.root, "verified": false, "error": f.fault.message()}));
    }
    if let (Some(w), true) = (wanted, skills.is_empty() && found.faults.is_empty()) {
        return Err(failed!("no skill named '{w}' in {arg}"));
    }
    // The file beside a source of one skill is SOURCE.minisig; of several, SOURCE.NAME.minisig.
    let single = found.skills.len() == 1 && found.faults.is_empty();
    if given.is_some() && skills.len() + found.faults.len() != 1 {
        return Err(usage!(
            "--sig names one signature; {arg} holds {} skills (name one)",
            skills.len() + found.faults.len()
        ));
    }
    for skill in skills {
        let name = skill.name();
        let outcome = async {
            // The manifest is recomputed from the bytes held here; nothing claimed is trusted.
            let (m, record) = manifest_of(&*src, skill).await.map_err(|e| e.to_string())?;
            let candidates = match &given {
                Some(g) => vec![Found {
                    origin: g.origin.clone(),
                    text: g.text.clone(),
                }],
                None => signatures_of(arg, &*src, skill, &record, single)?,
            };
            if candidates.is_empty() {
                return Err(no_signature(arg, &at_version(&m), single));
            }
            let mut failures = Vec::new();
            for c in &candidates {
                match sign::verify(&m, &c.text, &ring, &name) {
                    Ok(v) => return Ok((m, v)),
                    Err(e) => failures.push(format!("{e} (signature {})", c.origin)),
                }
            }
            Err(failures.join("; "))
        }
        .await;
        match outcome {
            Ok((m, v)) => {
                if format == Format::Text {
                    out!(
                        "Verified {} ({}) signed by key {}",
                        at_version(&m),
                        m.digest,
                        v.key_id
                    );
                }
                results.push(json!({"name": m.name, "version": m.version, "digest": m.digest, "verified": true, "key_id": v.key_id}));
            }
            Err(e) => {
                if format == Format::Text {
                    err!("Verification failed for {name}: {e}");
                }
                results.push(json!({"name": name, "verified": false, "error": e}));
            }
        }
    }
    if format == Format::Json {
        out!("{}", serde_json::to_string_pretty(&results).expect("json"));
    }
    Ok(ExitStatus::faults_if(
        results.is_empty() || results.iter().any(|r| r["verified"] != true),
    ))
}

/// Whether a SOURCE is a registry file (`x.db`, `sqlite:x.db`): it keeps its signatures inside,
/// with the versions they sign; none is looked for beside it.
fn is_registry_spec(spec: &str) -> bool {
    SourceSpec::parse(spec).is_ok_and(|s| s.kind == skillcat::source::SourceKind::Registry)
}

/// Why a skill (`NAME@VERSION` when it has one) has no signature to check: where one was
/// looked for.
fn no_signature(spec: &str, skill: &str, single: bool) -> String {
    let name = skill.split_once('@').map_or(skill, |(n, _)| n);
    if is_registry_spec(spec) {
        return format!(
            "no signature: the registry {spec} keeps no signature for {skill}; a registry keeps \
             the signatures published with a version (`skillcat registry publish {spec} DIR \
             --sig FILE`, or `skillcat publish URL DIR` with the .minisig beside the skill); \
             --sig FILE checks another"
        );
    }
    if !SourceSpec::is_path_spelling(spec) {
        format!("no signature: {spec} keeps none for {name}")
    } else {
        format!(
            "no signature: the source keeps none for {name}, and there is no {} beside it \
             (skillcat sign and pack --sign write it; --sig FILE names another)",
            sign::skill_signature_path(spec, name, single).display()
        )
    }
}
