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
use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::Value;
use skillcat::client::{self, reqwest};
use skillcat::serve::{Site, SiteOptions, SiteSkill};
use skillcat::sign::{self, Statement};

use super::{CliError, CliResult, ExitStatus, Globals};

/// The environment variable holding a token when no `--token-file` is given.
const TOKEN_ENV: &str = "SKILLCAT_TOKEN";

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

/// A client ready to talk to one registry: its API base, token and HTTP client.
struct Client {
    api: reqwest::Url,
    token: Token,
    http: reqwest::Client,
}

/// A token, and where it came from (for what is said when the registry refuses it).
struct Token {
    secret: String,
    from: TokenFrom,
}

/// Where a token came from, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenFrom {
    /// `--token-file FILE`.
    File(PathBuf),
    /// `$SKILLCAT_TOKEN`.
    Env,
    /// Kept by `skillcat login URL`, in this file.
    Login(PathBuf),
}

impl std::fmt::Display for TokenFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFrom::File(p) => write!(f, "--token-file {}", p.display()),
            TokenFrom::Env => write!(f, "${TOKEN_ENV}"),
            TokenFrom::Login(p) => write!(f, "kept by `skillcat login` in {}", p.display()),
        }
    }
}

/// A token as read (a file's text, a line of stdin), trimmed; refused when it is empty or has
/// blanks or control characters in it. Never printed.
pub(super) fn checked_token(text: &str) -> Result<String, CliError> {
    let token = text.trim();
    if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(usage!(
            "the token is empty or has spaces in it (one line, as `token create` printed it)"
        ));
    }
    Ok(token.to_string())
}

/// Whether `url`'s host is this machine (`localhost`, 127.0.0.0/8, `[::1]`).
pub(super) fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A registry's address as given on the command line: http or https, no user or password in it.
pub(super) fn registry_url(url: &str) -> Result<reqwest::Url, CliError> {
    let base = reqwest::Url::parse(url).map_err(|e| usage!("{url:?} is not a URL: {e}"))?;
    if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
        return Err(usage!(
            "{url}: the registry is reached over http:// or https://"
        ));
    }
    if !base.username().is_empty() || base.password().is_some() {
        return Err(usage!(
            "{url}: put the token in --token-file, ${TOKEN_ENV} or `skillcat login`, not in the URL"
        ));
    }
    Ok(base)
}

impl Remote {
    /// The registry's URL, checked, and refused when a token would cross the network in clear.
    fn target(&self, url: &str) -> Result<reqwest::Url, CliError> {
        let base = registry_url(url)?;
        if base.scheme() == "http" && !is_loopback(&base) && !self.allow_insecure {
            return Err(usage!(
                "refusing to send a token over plain http to {}: use https://, or \
                 --allow-insecure if the network is trusted",
                base.host_str().unwrap_or("?")
            ));
        }
        Ok(base)
    }

    /// The token for `base`: `--token-file`, else `$SKILLCAT_TOKEN`, else the one `skillcat
    /// login` kept for it; `None` when there is none.
    fn token(&self, base: &reqwest::Url) -> Result<Option<Token>, CliError> {
        let (text, from) = match &self.token_file {
            Some(p) => (
                std::fs::read_to_string(p)
                    .map_err(|e| usage!("cannot read the token file {}: {e}", p.display()))?,
                TokenFrom::File(p.clone()),
            ),
            None => match std::env::var(TOKEN_ENV) {
                Ok(t) => (t, TokenFrom::Env),
                Err(_) => match super::login::kept_token(base)? {
                    Some((t, file)) => (t, TokenFrom::Login(file)),
                    None => return Ok(None),
                },
            },
        };
        Ok(Some(Token {
            secret: checked_token(&text)?,
            from,
        }))
    }

    /// Checks the URL and the transport, reads the token; errors are printed.
    fn connect(&self, url: &str, g: &Globals) -> Result<Client, CliError> {
        let mut base = self.target(url)?;
        let token = self.token(&base)?.ok_or_else(|| {
            usage!(
                "no token: pass --token-file FILE, set ${TOKEN_ENV}, or keep one for this \
                 registry with `skillcat login {}`",
                super::login::registry_key(&base)
            )
        })?;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let api = base.join("api/v1/").expect("a relative path joins");
        let timeout = g
            .open
            .timeout
            .unwrap_or(std::time::Duration::from_secs(120));
        // A redirect could carry the token elsewhere: the API never redirects.
        let policy = client::Policy {
            timeout: Some(timeout),
            read_timeout: None,
            redirects: client::Redirects::Never,
            ca_certificates: g.open.ca_certificates.clone(),
            ..client::Policy::default()
        };
        let http = client::build(&policy).map_err(|e| match e {
            client::ClientError::Build(_) => usage!("{e}"),
            _ => usage!("cannot use the CA certificates of --cacert: {e}"),
        })?;
        Ok(Client { api, token, http })
    }
}

impl Client {
    /// Sends one API request; `Ok` holds a 2xx answer's JSON, `Err` the line to print.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<(bytes::Bytes, Option<String>)>,
    ) -> Result<Value, String> {
        let url = self.api.join(path).map_err(|e| e.to_string())?;
        let mut req = self
            .http
            .request(method, url)
            .bearer_auth(&self.token.secret);
        if let Some((bytes, sig)) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/gzip")
                .body(bytes);
            if let Some(sig) = sig {
                use base64::Engine;
                let encoded = base64::engine::general_purpose::STANDARD.encode(sig);
                req = req.header("skillcat-signature", encoded);
            }
        }
        // reqwest's errors name the URL, never the headers: the token stays out of them. Their
        // causes say what failed (a certificate not trusted, a refused connection).
        let resp = req.send().await.map_err(|e| {
            // A certificate that does not verify is said as every command says it.
            match client::certificate_failure(&e) {
                Some(reason) => skillcat::Error::Certificate {
                    location: client::redact(&self.api),
                    reason,
                }
                .to_string(),
                None => skillcat::client::with_causes(&e),
            }
        })?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| e.to_string())?;
        let json: Option<Value> = serde_json::from_str(&text).ok();
        if status.is_success() {
            return json.ok_or_else(|| format!("the registry answered {status} without JSON"));
        }
        let detail = json
            .as_ref()
            .and_then(|j| j["errors"][0]["detail"].as_str())
            .map_or_else(|| text.trim().chars().take(200).collect(), str::to_string);
        Err(format!("{status}: {detail}"))
    }

    /// An error line of [`send`](Self::send), with what to do when the registry refused a token
    /// `skillcat login` kept (revoked, or made for another registry).
    fn explain(&self, e: &str) -> String {
        match &self.token.from {
            TokenFrom::Login(_) if e.starts_with("401") => format!(
                "{e} (the token used is the one `skillcat login` kept for this registry: keep a \
                 current one with `skillcat login URL`, or give --token-file)"
            ),
            _ => e.to_string(),
        }
    }
}

fn escape(s: &str) -> String {
    super::shown(s).into_owned()
}

/// One skill to publish: packed, its version known, its signature checked.
struct Planned {
    /// Where it was read from, for people: the PATH given for a source of one skill, else the
    /// skill's location in it.
    from: String,
    skill: SiteSkill,
    version: String,
    /// The signature sent with it, the key it names and where it was found.
    signature: Option<(String, String, String)>,
}

/// The signature a skill of `path` is published with: `--sig`, else the one its source keeps
/// (a registry's, an index's), else the `.minisig` beside it (as `sign` and `pack --sign` write
/// it). Each is checked to name exactly what is published; one made for another version or other
/// content is refused, naming the file and how to sign again. Returns the text, the key id the
/// signature names and where it was found.
fn signature_for(
    path: &str,
    single: bool,
    s: &SiteSkill,
    version: &str,
    given: Option<&(PathBuf, String)>,
) -> Result<Option<(String, String, String)>, String> {
    let at = format!("{}@{version}", s.name);
    let (text, origin, resign) = if let Some((file, text)) = given {
        let origin = file.display().to_string();
        let resign = format!("skillcat sign {path} {} --key KEY -o {origin}", s.name);
        (text.clone(), origin, resign)
    } else if let Some(text) = &s.signature {
        let origin = format!("the signature {path} keeps for {}", s.name);
        let resign = format!(
            "skillcat sign {path} {} --key KEY -o {}.minisig, then publish with --sig {}.minisig",
            s.name, s.name, s.name
        );
        (text.clone(), origin, resign)
    } else {
        match super::trust::beside_signature(path, &s.name, single)? {
            Some(found) => {
                let resign = format!("skillcat sign {path} {} --key KEY", s.name);
                (found.text, found.origin, resign)
            }
            None => return Ok(None),
        }
    };
    let claim = sign::claim(&text)
        .map_err(|e| format!("{at}: the signature {origin} cannot be used: {e}"))?;
    let mut manifest = s.manifest.clone();
    manifest.version = version.to_string();
    let expected = Statement::from_manifest(&manifest).map_err(|e| format!("{at}: {e}"))?;
    let signed = &claim.statement;
    if *signed == expected {
        return Ok(Some((text, claim.key_id, origin)));
    }
    let what = if signed.name != expected.name {
        format!("is a signature of {}, not of {}", signed.name, s.name)
    } else if signed.version != expected.version {
        let made_for = if signed.version.is_empty() {
            "no version".to_string()
        } else {
            format!("version {}", signed.version)
        };
        format!("was made for {made_for}, not {version} (the version published now)")
    } else {
        "was made for other content: the skill's files changed since it was signed".to_string()
    };
    Err(format!(
        "{at}: the signature {origin} {what}. Sign it again: {resign}"
    ))
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
        // As `pack --sign` names the signatures: SOURCE.minisig for a source of one skill.
        let single = o.found.skills.len() + o.found.faults.len() == 1;
        let (site, problems) = Site::from_discovery(&*o.src, &o.found, &site_options(g)?)
            .await
            .map_err(|e| usage!("{e}"))?;
        for p in &problems {
            note!("warning: {}", escape(&p.to_string()));
        }
        if !problems.is_empty() {
            code = ExitStatus::Faults;
        }
        read.extend(
            site.skills()
                .iter()
                .map(|s| (path.as_str(), single, s.clone())),
        );
    }
    if read.is_empty() {
        return Err(failed!("no valid skill in {}", a.paths.join(", ")));
    }
    if given_sig.is_some() && read.len() != 1 {
        return Err(usage!(
            "--sig is the signature of one skill; the paths hold {}",
            read.len()
        ));
    }
    let unversioned: Vec<&str> = read
        .iter()
        .filter(|(_, _, s)| s.version.is_none())
        .map(|(_, _, s)| s.name.as_str())
        .collect();
    if !unversioned.is_empty() {
        return Err(usage!(
            "no version for {}: set metadata.version in the SKILL.md frontmatter",
            unversioned.join(", ")
        ));
    }
    let mut planned = Vec::new();
    let mut refused = Vec::new();
    for (path, single, s) in read {
        let version = s.version.clone().unwrap_or_default();
        match signature_for(path, single, &s, &version, given_sig.as_ref()) {
            Ok(signature) => planned.push(Planned {
                from: if single {
                    path.to_string()
                } else {
                    s.location.clone()
                },
                skill: s,
                version,
                signature,
            }),
            Err(e) => refused.push(e),
        }
    }
    if !refused.is_empty() {
        for e in &refused {
            err!("Error: {}", escape(e));
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
        let sig = p.signature.map(|(text, _, _)| text);
        let path = format!("skills/{}/{}", s.name, version);
        match client
            .send(reqwest::Method::PUT, &path, Some((s.archive.clone(), sig)))
            .await
        {
            Ok(j) => {
                let outcome = j["outcome"].as_str().unwrap_or("published");
                let digest = j["digest"].as_str().unwrap_or("");
                out!(
                    "{}@{}  {digest} (skill digest)  {}",
                    s.name,
                    version,
                    if outcome == "unchanged" {
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
                    escape(&client.explain(&e))
                );
                code = ExitStatus::Faults;
            }
        }
    }
    Ok(code)
}

/// `publish --dry-run`: what would be sent, each skill as checked; nothing is sent.
fn dry_run(a: &PublishArgs, planned: &[Planned], code: ExitStatus) -> CliResult {
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
            Some((_, key, origin)) => out!(
                "  signed by     key {key} ({}; it names this version and content, and the \
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
            super::login::registry_key(&base)
        ),
        Err(e) => note!("warning: {}", e.to_string().trim_start_matches("Error: ")),
    }
    out!("Nothing sent (--dry-run).");
    Ok(code)
}

/// `skillcat yank URL NAME@VERSION [--undo]`
pub async fn yank(a: YankArgs, g: &Globals) -> CliResult {
    let Some((name, version)) = a.spec.split_once('@').filter(|(n, v)| {
        !n.is_empty() && !v.is_empty() && !format!("{n}{v}").contains(['/', '?', '#', '%'])
    }) else {
        return Err(usage!("{:?} is not NAME@VERSION", a.spec));
    };
    let client = a.remote.connect(&a.url, g)?;
    let (method, action) = if a.undo {
        (reqwest::Method::PUT, "unyank")
    } else {
        (reqwest::Method::DELETE, "yank")
    };
    match client
        .send(method, &format!("skills/{name}/{version}/{action}"), None)
        .await
    {
        Ok(j) => {
            let changed = j["changed"].as_bool().unwrap_or(true);
            match (a.undo, changed) {
                (false, true) => out!("Yanked {name}@{version}"),
                (false, false) => out!("{name}@{version} was already yanked"),
                (true, true) => out!("Unyanked {name}@{version}"),
                (true, false) => out!("{name}@{version} was not yanked"),
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(failed!("{name}@{version}: {}", escape(&client.explain(&e)))),
    }
}
