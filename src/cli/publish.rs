//! `skillcat publish URL PATH...` and `skillcat yank URL NAME@VERSION`: the client of a central
//! registry (`skillcat serve REGISTRY.db --publish`).
//!
//! The token comes from `--token-file FILE`, else `SKILLCAT_TOKEN`: never from the command line,
//! where other users could read it in the process list. It is sent only over https, or over
//! plain http to a loopback address, unless `--allow-insecure` says otherwise.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::Value;
use skillcat::client::{self, reqwest};

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
    token: String,
    http: reqwest::Client,
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Remote {
    /// Checks the URL and the transport, reads the token; errors are printed.
    fn connect(&self, url: &str, g: &Globals) -> Result<Client, CliError> {
        let mut base = reqwest::Url::parse(url).map_err(|e| usage!("{url:?} is not a URL: {e}"))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(usage!(
                "{url}: the registry is reached over http:// or https://"
            ));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(usage!(
                "{url}: put the token in --token-file or ${TOKEN_ENV}, not in the URL"
            ));
        }
        if base.scheme() == "http" && !is_loopback(&base) && !self.allow_insecure {
            return Err(usage!(
                "refusing to send a token over plain http to {}: use https://, or \
                 --allow-insecure if the network is trusted",
                base.host_str().unwrap_or("?")
            ));
        }
        let token = match &self.token_file {
            Some(p) => std::fs::read_to_string(p)
                .map_err(|e| usage!("cannot read the token file {}: {e}", p.display()))?,
            None => std::env::var(TOKEN_ENV)
                .map_err(|_| usage!("no token: pass --token-file FILE or set ${TOKEN_ENV}"))?,
        };
        let token = token.trim().to_string();
        if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(usage!(
                "the token is empty or has spaces in it (one line, as `token create` printed it)"
            ));
        }
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
        let mut req = self.http.request(method, url).bearer_auth(&self.token);
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
        let resp = req.send().await.map_err(|e| with_causes(&e))?;
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
}

/// An error and each of its causes, `: `-separated (a cause that repeats the one before it is
/// said once).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

fn escape(s: &str) -> String {
    skillcat::prompt::escape_controls(s).into_owned()
}

/// `skillcat publish URL PATH... [--sig FILE] [--token-file FILE]`
pub async fn publish(a: PublishArgs, g: &Globals) -> CliResult {
    let client = a.remote.connect(&a.url, g)?;
    let given_sig = match a.sig.as_ref().map(std::fs::read_to_string).transpose() {
        Ok(s) => s,
        Err(e) => {
            return Err(usage!("cannot read the signature: {e}"));
        }
    };
    // Every path is read and packed before anything is sent.
    let mut skills = Vec::new();
    let mut code = ExitStatus::Success;
    for path in &a.paths {
        match super::remote::build_site(path, g).await {
            Ok((site, problems)) => {
                if problems > 0 {
                    code = ExitStatus::Faults;
                }
                skills.extend(site.skills().iter().cloned());
            }
            Err(e) => return Err(e),
        }
    }
    if skills.is_empty() {
        return Err(failed!("no valid skill in {}", a.paths.join(", ")));
    }
    if given_sig.is_some() && skills.len() != 1 {
        return Err(usage!(
            "--sig is the signature of one skill; the paths hold {}",
            skills.len()
        ));
    }
    let unversioned: Vec<&str> = skills
        .iter()
        .filter(|s| s.version.is_none())
        .map(|s| s.name.as_str())
        .collect();
    if !unversioned.is_empty() {
        return Err(usage!(
            "no version for {}: set metadata.version in the SKILL.md frontmatter",
            unversioned.join(", ")
        ));
    }
    for s in skills {
        let version = s.version.clone().unwrap_or_default();
        let sig = given_sig.clone().or(s.signature.clone());
        let path = format!("skills/{}/{}", s.name, version);
        match client
            .send(reqwest::Method::PUT, &path, Some((s.archive.clone(), sig)))
            .await
        {
            Ok(j) => {
                let outcome = j["outcome"].as_str().unwrap_or("published");
                let digest = j["digest"].as_str().unwrap_or("");
                out!(
                    "{}@{}  {digest}  {}",
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
                err!("Error: {}@{version}: {}", s.name, escape(&e));
                code = ExitStatus::Faults;
            }
        }
    }
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
        Err(e) => Err(failed!("{name}@{version}: {}", escape(&e))),
    }
}
