//! `skillcat publish URL PATH...` and `skillcat yank URL NAME@VERSION`: the client of a central
//! registry (`skillcat serve REGISTRY.db --publish`).
//!
//! The token comes from `--token-file FILE`, else `SKILLCAT_TOKEN`, else the one `skillcat login
//! URL` kept for the registry: never from the command line, where other users could read it in
//! the process list. It is sent only over https, or over plain http to a loopback address, unless
//! `--allow-insecure` says otherwise.
//!
//! Before anything is sent, every skill is packed and its signature (`--sig`, the one its source
//! keeps, or the `.minisig` beside it) is checked to name exactly what is published — a
//! signature made for another version or other content is refused here, naming the file and how
//! to sign again. `--dry-run` stops there and says what would be sent.

use std::io::Write;
use std::path::PathBuf;

use skillcat::central::{self, CentralError, Registry, TOKEN_ENV, Token, TokenFrom};
use skillcat::client::{self, ClientError};
use skillcat::ops::publish::{self as ops, SignatureError, SignatureFrom};
use skillcat::serve::SiteOptions;

use super::{CliError, CliResult, ExitStatus, Globals};

/// How to reach the registry: shared by `publish` and `yank`.
#[derive(Debug, clap::Args)]
pub struct Remote {
    /// A file holding the token (as `skillcat token create` printed it) [default: $SKILLCAT_TOKEN].
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Send the token over plain http to a host that is not loopback.
    #[arg(long)]
    allow_insecure: bool,
}

/// `skillcat publish` arguments.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The registry's address (`https://skills.example.com/`).
    url: String,
    /// Skill directories, directories of skills, or archives (each skill needs a version:
    /// `metadata.version`).
    #[arg(required = true)]
    paths: Vec<String>,
    /// The detached signature of the one skill published [default: the .minisig beside it,
    /// as `skillcat sign` and `pack --sign` write it].
    #[arg(long, value_name = "FILE")]
    sig: Option<PathBuf>,
    /// Pack and check everything as a publish does, print what would be sent (name@version,
    /// archive digest and size, signer), and send nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    remote: Remote,
}

/// `skillcat yank` arguments.
#[derive(Debug, clap::Args)]
pub struct YankArgs {
    /// The registry's address.
    url: String,
    /// The version to yank.
    #[arg(value_name = "NAME@VERSION")]
    spec: String,
    /// Unyank instead.
    #[arg(long)]
    undo: bool,
    #[command(flatten)]
    remote: Remote,
}

/// What the command line says for an error of the central registry's client: the library's
/// sentence, with the flags that would help where one would.
pub(super) fn said(e: CentralError) -> CliError {
    match e {
        CentralError::CredentialsInUrl { given } => usage!(
            "{given}: put the token in --token-file, ${TOKEN_ENV} or `skillcat login`, not in the URL"
        ),
        CentralError::Insecure { host } => usage!(
            "refusing to send a token over plain http to {host}: use https://, or \
             --allow-insecure if the network is trusted"
        ),
        CentralError::Client(e @ ClientError::Build(_)) => usage!("{e}"),
        CentralError::Client(e) => usage!("cannot use the CA certificates of --cacert: {e}"),
        e @ CentralError::CredentialsWrite { .. } => failed!("{e}"),
        e => usage!("{e}"),
    }
}

impl Remote {
    /// The registry's URL, checked, and refused when a token would cross the network in clear.
    fn target(&self, url: &str) -> Result<central::Url, CliError> {
        central::target(url, self.allow_insecure).map_err(said)
    }

    /// The token for `base`: `--token-file`, else `$SKILLCAT_TOKEN`, else the one `skillcat
    /// login` kept for it; `None` when there is none.
    fn token(&self, base: &central::Url) -> Result<Option<Token>, CliError> {
        if let Some(p) = &self.token_file {
            return Token::from_file(p).map(Some).map_err(said);
        }
        if let Ok(t) = std::env::var(TOKEN_ENV) {
            return Token::new(&t, TokenFrom::Env).map(Some).map_err(said);
        }
        Token::kept(&super::login::credentials()?, base).map_err(said)
    }

    /// Checks the URL and the transport, reads the token; errors are printed.
    fn connect(&self, url: &str, g: &Globals) -> Result<Registry, CliError> {
        let base = self.target(url)?;
        let token = self.token(&base)?.ok_or_else(|| {
            usage!(
                "no token: pass --token-file FILE, set ${TOKEN_ENV}, or keep one for this \
                 registry with `skillcat login {}`",
                central::registry_key(&base)
            )
        })?;
        let policy = client::Policy {
            timeout: g.open.timeout,
            ca_certificates: g.open.ca_certificates.clone(),
            ..client::Policy::default()
        };
        Registry::new(base, token, &policy).map_err(said)
    }
}

/// An error of a request, with what to do when the registry refused a token `skillcat login`
/// kept (revoked, or made for another registry).
fn explain(registry: &Registry, e: &CentralError) -> String {
    match (&registry.token().from, e) {
        (TokenFrom::Login(_), CentralError::Refused { status, .. }) if status.as_u16() == 401 => {
            format!(
                "{e} (the token used is the one `skillcat login` kept for this registry: keep a \
                 current one with `skillcat login URL`, or give --token-file)"
            )
        }
        // A certificate that does not verify is said as every command says it.
        (_, CentralError::Request(cause)) => match super::error::advice(cause.kind()) {
            Some(advice) => format!("{e}{advice}"),
            None => e.to_string(),
        },
        _ => e.to_string(),
    }
}

fn escape(s: &str) -> String {
    super::shown(s).into_owned()
}

/// A signature refused, as the command line says it: the library's sentence and, for one that
/// names something else, how to sign again.
fn refusal(e: &SignatureError) -> String {
    let SignatureError::Mismatch {
        from, path, name, ..
    } = e
    else {
        return e.to_string();
    };
    let resign = match from {
        SignatureFrom::Given(file) => {
            format!(
                "skillcat sign {path} {name} --key KEY -o {}",
                file.display()
            )
        }
        SignatureFrom::Kept => format!(
            "skillcat sign {path} {name} --key KEY -o {name}.minisig, then publish with --sig \
             {name}.minisig"
        ),
        SignatureFrom::Beside => format!("skillcat sign {path} {name} --key KEY"),
    };
    format!("{e}. Sign it again: {resign}")
}

/// What a published skill must be: valid as the configuration says (`[scripts]
/// extension_fields`), as `validate` judges it.
fn site_options(g: &Globals) -> Result<SiteOptions, CliError> {
    Ok(SiteOptions {
        validate: g.validate_options().map_err(super::context_error)?,
        ..SiteOptions::default()
    })
}

/// `skillcat publish URL PATH... [--sig FILE] [--token-file FILE] [--dry-run]`
pub async fn publish(a: PublishArgs, g: &Globals) -> CliResult {
    let client = if a.dry_run {
        a.remote.target(&a.url)?;
        None
    } else {
        Some(a.remote.connect(&a.url, g)?)
    };
    let given_sig = match &a.sig {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(text) => Some((p.clone(), text)),
            Err(e) => {
                return Err(usage!("cannot read the signature {}: {e}", p.display()));
            }
        },
        None => None,
    };
    // Every path is read and packed, and every signature checked, before anything is sent.
    let mut read = Vec::new();
    let mut code = ExitStatus::Success;
    for path in &a.paths {
        let o = super::read::open_and_discover(path, g).await?;
        let found = ops::read(path, &*o.src, &o.found, &site_options(g)?)
            .await
            .map_err(|e| usage!("{e}"))?;
        // As `validate` says them: the skill is invalid, and every fault.
        for i in &found.invalid {
            err!(
                "Error: {} is invalid, so it is not published:",
                escape(&i.location)
            );
            for f in &i.faults {
                err!("  - {} [{}]", escape(f.message()), f.kind());
            }
        }
        for p in &found.problems {
            note!("warning: {}", escape(&p.to_string()));
        }
        if !found.invalid.is_empty() || !found.problems.is_empty() {
            code = ExitStatus::Faults;
        }
        read.extend(found.skills);
    }
    let (planned, refused) = match ops::plan(&a.paths, read, given_sig.as_ref()) {
        Ok(p) => p,
        Err(e @ ops::PlanError::NoSkill(_)) => return Err(failed!("{e}")),
        Err(ops::PlanError::SignatureForMany(n)) => {
            return Err(usage!(
                "--sig is the signature of one skill; the paths hold {n}"
            ));
        }
        Err(e) => return Err(usage!("{e}")),
    };
    if !refused.is_empty() {
        for e in &refused {
            err!("Error: {}", escape(&refusal(e)));
        }
        return Err(failed!(
            "nothing was sent: fix the signatures above (or move the stale .minisig away to \
             publish unsigned)"
        ));
    }
    let Some(client) = client else {
        return dry_run(&a, &planned, code);
    };
    for p in planned {
        let s = &p.skill;
        let version = &p.version;
        let sig = p.signature.map(|s| s.text);
        match client
            .publish(&s.name, version, s.archive.clone(), sig.as_deref())
            .await
        {
            Ok(p) => {
                out!(
                    "{}@{}  {} (skill digest)  {}",
                    s.name,
                    version,
                    p.digest,
                    if p.unchanged {
                        "already published"
                    } else {
                        "published"
                    }
                );
            }
            Err(e) => {
                err!(
                    "Error: {}@{version}: {}",
                    s.name,
                    escape(&explain(&client, &e))
                );
                code = ExitStatus::Faults;
            }
        }
    }
    Ok(code)
}

/// `publish --dry-run`: what would be sent, each skill as checked; nothing is sent.
fn dry_run(a: &PublishArgs, planned: &[ops::Planned], code: ExitStatus) -> CliResult {
    for p in planned {
        let s = &p.skill;
        out!(
            "Would publish {}@{} from {} to {}",
            s.name,
            p.version,
            escape(&p.from),
            a.url
        );
        out!(
            "  archive       {}  {} bytes (.tar.gz)",
            s.archive_digest,
            s.archive.len()
        );
        out!("  skill digest  {}", s.manifest.digest);
        match &p.signature {
            Some(ops::Signature { key_id, origin, .. }) => out!(
                "  signed by     key {key_id} ({}; it names this version and content, and the \
                 registry checks the key against its keyring)",
                escape(origin)
            ),
            None => out!(
                "  signed by     nobody (no signature: a registry run with --keyring refuses it)"
            ),
        }
    }
    let base = a.remote.target(&a.url)?;
    match a.remote.token(&base) {
        Ok(Some(t)) => out!("Token: {}", t.from),
        Ok(None) => note!(
            "warning: no token: the publish itself needs --token-file FILE, ${TOKEN_ENV}, or \
             one kept with `skillcat login {}`",
            central::registry_key(&base)
        ),
        Err(e) => note!("warning: {}", e.to_string().trim_start_matches("Error: ")),
    }
    out!("Nothing sent (--dry-run).");
    Ok(code)
}

/// `skillcat yank URL NAME@VERSION [--undo]`
pub async fn yank(a: YankArgs, g: &Globals) -> CliResult {
    let Some((name, version)) = ops::yank_target(&a.spec) else {
        return Err(usage!("{:?} is not NAME@VERSION", a.spec));
    };
    let client = a.remote.connect(&a.url, g)?;
    match client.yank(name, version, a.undo).await {
        Ok(changed) => {
            match (a.undo, changed) {
                (false, true) => out!("Yanked {name}@{version}"),
                (false, false) => out!("{name}@{version} was already yanked"),
                (true, true) => out!("Unyanked {name}@{version}"),
                (true, false) => out!("{name}@{version} was not yanked"),
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(failed!(
            "{name}@{version}: {}",
            escape(&explain(&client, &e))
        )),
    }
}
