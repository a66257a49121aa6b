//! Distribution commands: digest, pack, keygen, sign, verify.

use std::io::Write;
use std::path::Path;

use skillcat::document::Skill;
use skillcat::ops::trust::{
    self as ops, DigestProblem, SecretKey, SignWithError, ToSign, VerifyError, VerifyRow,
    VersionNote,
};
use skillcat::sign::pack_signed::{PackError, PackNote, PackRequest};
use skillcat::sign::source_signatures::at_version;
use skillcat::sign::{self, Keyring, Statement};
use skillcat::source::Detail;

use super::read::{Opened, open_maybe_for, print_fault};
use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// The environment variable a secret key's password may come from (for scripts and CI).
pub const PASSWORD_ENV: &str = "SKILLCAT_PASSWORD";

/// `skillcat digest SOURCE [NAME]`
pub async fn digest(arg: &str, wanted: Option<&str>, format: Format, g: &Globals) -> CliResult {
    let opened = open_maybe_for(arg, wanted, Detail::Files, g).await;
    let (Opened { src, found, .. }, name) = opened?;
    // A root that is not a skill still has files, and so a digest; say what is wrong with it,
    // and exit 1 as every command does when it reports a fault.
    let ops::Digested {
        manifests,
        problems,
    } = ops::digest(&*src, &found, name).await;
    for p in &problems {
        match p {
            DigestProblem::NotSkill(f) => print_fault(f),
            DigestProblem::Unreadable { location, error } => err!("Error: {location}: {error}"),
        }
    }
    let failed = !problems.is_empty();
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

/// The secret key at `path`, read (its password asked only when a signature needs it).
pub(super) fn load_key(path: &str) -> Result<SecretKey, CliError> {
    SecretKey::load(path).map_err(|e| usage!("{e}"))
}

/// Signs with a key that may or may not be password-protected.
pub(super) fn sign_with(key: &mut SecretKey, statement: &Statement) -> Result<String, CliError> {
    key.sign(statement, || {
        password("Password for the secret key: ", false)
    })
    .map_err(|e| match e {
        SignWithError::Password(e) => e,
        SignWithError::Sign(e) => failed!("{e}"),
    })
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
    ops::check_pack(dir, output).map_err(|e| usage!("{e}"))?;
    let mut key = sign_key.map(load_key).transpose()?;
    let mut sign_one = key.as_mut().map(|k| move |st: &Statement| sign_with(k, st));
    let sign = sign_one
        .as_mut()
        .map(|f| f as sign::pack_signed::Signer<'_, CliError>);
    let request = PackRequest {
        dir: Path::new(dir),
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

/// `skillcat keygen -o KEYBASE [--unencrypted]`: [`sign::KeyFiles`], the password asked once
/// the files are known to be free.
pub fn keygen(base: &str, unencrypted: bool, force: bool) -> CliResult {
    let files = sign::KeyFiles::new(base);
    super::output_dir_exists(&files.secret)?;
    files
        .check_free(force)
        .map_err(|e| usage!("{e}; pass --force to overwrite it"))?;
    let pw = if unencrypted {
        None
    } else {
        Some(password("Password for the new key: ", true)?)
    };
    let id = files.generate(pw.as_deref()).map_err(|e| failed!("{e}"))?;
    out!(
        "Key {id}: secret key {}, public key {}",
        files.secret.display(),
        files.public.display()
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
    let ToSign {
        manifest: m,
        note,
        path,
    } = ops::to_sign(a.source, &*src, &skill, a.version)
        .await
        .map_err(|e| failed!("{e}"))?;
    match note {
        VersionNote::Replaced { was } => note!(
            "warning: signing {} as version {v}, though it is {was} (metadata.version): only a \
             publish as {v} (`registry publish … --version {v}`) matches this signature",
            m.name,
            v = m.version,
        ),
        VersionNote::Missing => note!(
            "warning: {} has no version: the signature names none, and a registry refuses it \
             for any version it publishes. Set metadata.version in its SKILL.md and sign again, \
             or sign with --version V to publish it with `registry publish … --version V`",
            m.name
        ),
        VersionNote::Same => {}
    }
    let path = a.output.map(Path::to_path_buf).unwrap_or(path);
    for p in std::iter::once(path.as_path()).chain(a.statement) {
        super::output_dir_exists(p)?;
    }
    let statement = match Statement::from_manifest(&m) {
        Ok(s) => s,
        Err(e) => {
            return Err(failed!("{e}"));
        }
    };
    let sig = load_key(a.key).and_then(|mut k| sign_with(&mut k, &statement))?;
    let statement_file = a.statement.map(|p| (p, &statement));
    ops::write_signature(&path, &sig, statement_file).map_err(|e| failed!("{e}"))?;
    out!(
        "Signed {} ({}) → {}",
        at_version(&m),
        m.digest,
        path.display()
    );
    Ok(ExitStatus::Success)
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
    let given = sig
        .map(ops::read_signature)
        .transpose()
        .map_err(|e| usage!("{e}"))?;
    let opened = open_maybe_for(arg, wanted, Detail::Files, g).await;
    let (Opened { src, found, .. }, name) = opened?;
    for f in &found.faults {
        print_fault(f);
    }
    let rows = ops::verify(arg, &*src, &found, name, &ring, given.as_ref())
        .await
        .map_err(|e| match e {
            VerifyError::NoSuchSkill(_) => {
                failed!("no skill named '{}' in {arg}", wanted.unwrap_or_default())
            }
            VerifyError::SignatureForMany(n) => {
                usage!("--sig names one signature; {arg} holds {n} skills (name one)")
            }
        })?;
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(&rows).expect("json")),
        Format::Text => {
            for r in &rows {
                match r {
                    VerifyRow::Verified {
                        shown,
                        digest,
                        key_id,
                        ..
                    } => {
                        out!("Verified {shown} ({digest}) signed by key {key_id}")
                    }
                    VerifyRow::Failed { name, error, .. } => {
                        err!("Verification failed for {name}: {error}")
                    }
                    VerifyRow::Unreadable { .. } => {}
                }
            }
        }
    }
    Ok(ExitStatus::faults_if(
        rows.is_empty() || rows.iter().any(|r| !r.verified()),
    ))
}
