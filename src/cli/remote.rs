//! Remote commands: serve, export, fetch.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use skillcat::ops::remote::{Fetch, FetchError};
use skillcat::registry::store::Store;
use skillcat::serve::{self, IndexSigningError, ServeLimits, Site, SiteRequest};
use skillcat::source::http::{FetchStatus, HttpOptions, cache_info, clean_cache};

use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// `skillcat serve` arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Any source: a skill directory, a directory of skills, an archive, a registry, a URL.
    pub source: String,
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "HOST:PORT")]
    pub addr: SocketAddr,
    /// Log one line per request on stderr: the global `-v`/`--verbose`.
    #[arg(skip)]
    pub verbose: bool,
    /// Time a client has to send a request head (from connecting, or from the first byte of a
    /// later request): `10s`, `500ms`, `2m`.
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = parse_duration)]
    pub header_timeout: Duration,
    /// Time an idle keep-alive connection is kept waiting for its next request.
    #[arg(long, default_value = "15s", value_name = "TIME", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Time from a request's head to the last byte of its answer.
    #[arg(long, default_value = "60s", value_name = "TIME", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Connections open at once; more are answered 503 and closed.
    #[arg(long, default_value_t = 1024, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections open at once from one client address.
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_address: u32,
    /// On SIGTERM or Ctrl-C, how long the answers in flight are given before the rest are cut.
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// Serve HTTPS with this PEM certificate chain (the server's certificate first).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The address people reach this catalog at, shown in its pages' install commands
    /// [default: http://ADDR/, the address listened on].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Publish a signed index statement (`.well-known/agent-skills/index.json.minisig`) for
    /// the host of --url, signed with this minisign secret key (SKILLCAT_PASSWORD for an
    /// encrypted one) when asked for, and again before it expires.
    #[arg(long, value_name = "KEY")]
    pub sign_index: Option<PathBuf>,
    /// How long each signed index statement holds.
    #[arg(long, value_name = "TIME", default_value = "168h", value_parser = parse_age, requires = "sign_index")]
    pub index_expires: Duration,
    /// The publishing API (`--publish`).
    #[command(flatten)]
    pub publish: super::central::PublishArgs,
}

pub use skillcat::units::{parse_age, parse_duration};

/// `skillcat export` arguments.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Any source.
    pub source: String,
    /// The folder to write (created when missing; must be empty unless --force).
    pub dir: PathBuf,
    /// Write into a folder that is not empty (files are replaced, nothing is deleted).
    #[arg(long)]
    pub force: bool,
    /// The address the exported site will be served at, shown in its pages' install commands
    /// (without it they say `URL`).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Check each signature shown on the pages against this keyring (its key and scope).
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
    /// Sign an index statement with this minisign secret key (SKILLCAT_PASSWORD for an
    /// encrypted one): `.well-known/agent-skills/index.json.minisig`, the index's digest, a
    /// version that only grows and an expiry, for the host of --url.
    #[arg(long, value_name = "KEY", requires = "url")]
    pub sign_index: Option<PathBuf>,
    /// How long the signed index statement holds: export again before then.
    #[arg(long, value_name = "TIME", default_value = "168h", value_parser = parse_age, requires = "sign_index")]
    pub index_expires: Duration,
    /// Write a Claude Code plugin marketplace of this name instead of a site: one plugin per
    /// skill (`claude plugin marketplace add DIR`, then `claude plugin install SKILL@NAME`).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["url", "keyring", "sign_index"])]
    pub marketplace: Option<String>,
    /// The marketplace's owner (default: its name).
    #[arg(long, value_name = "NAME", requires = "marketplace")]
    pub owner: Option<String>,
    /// What Claude Code shows of the marketplace (default: how many skills, and whose).
    #[arg(long, value_name = "TEXT", requires = "marketplace")]
    pub description: Option<String>,
}

/// `skillcat fetch` arguments.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// A site root (`https://host/`) or an index URL (`…/index.json`).
    pub url: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `skillcat search` arguments.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// The address of a catalog served by `skillcat serve` (`https://skills.example.com/`).
    pub url: String,
    /// What to look for: words of a task, a file format, a tool.
    pub query: String,
    /// Results to show (1 to 100).
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub limit: u16,
    /// Which page of results (from 1).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub page: u16,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `skillcat search URL QUERY [--limit N] [--page N] [--format json]`: the catalog's own
/// ranking (a registry's full-text search, else the matcher). Exit 0 with results, 1 with
/// none.
pub async fn search(a: SearchArgs, g: &Globals) -> CliResult {
    let policy = skillcat::client::Policy {
        timeout: Some(g.open.timeout.unwrap_or(Duration::from_secs(60))),
        ca_certificates: g.open.ca_certificates.clone(),
        ..skillcat::client::Policy::default()
    };
    let found = skillcat::search::search(
        &a.url,
        &a.query,
        usize::from(a.page),
        usize::from(a.limit),
        &policy,
    )
    .await
    .map_err(|e| match e {
        skillcat::Error::Certificate { .. } => failed!(cause = e),
        _ => usage!(cause = e),
    })?;
    let safe = |t: &str| super::shown(t).into_owned();
    match a.format {
        Format::Json => out!(
            "{}",
            serde_json::to_string_pretty(&found).unwrap_or_default()
        ),
        Format::Text => {
            for r in &found.results {
                out!(
                    "{}  {}  {}  {}",
                    safe(&r.name),
                    safe(r.version.as_deref().unwrap_or("-")),
                    safe(r.trust_word()),
                    safe(&r.description)
                );
            }
            let first = (usize::from(a.page) - 1) * usize::from(a.limit);
            if found.results.is_empty() {
                err!("no skill matches {:?} ({} in all)", a.query, found.total);
            } else {
                err!(
                    "{}–{} of {} (skillcat add {} NAME installs one)",
                    first + 1,
                    first + found.results.len(),
                    found.total,
                    safe(&a.url)
                );
            }
        }
    }
    Ok(ExitStatus::faults_if(found.results.is_empty()))
}

/// `skillcat cache` subcommands (the folder: the global `--cache DIR`, else the default).
#[derive(Debug, clap::Subcommand)]
pub enum CacheCommand {
    /// Where the cache is and what it holds: index records, blobs, bytes, what `clean` removes.
    #[command(
        after_help = "Examples:\n  skillcat cache info\n  skillcat cache info --cache .skillcat-cache --format json"
    )]
    Info {
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Remove blobs no cached index refers to, left-over temp files and older cache layouts;
    /// waits for other skillcat processes using the cache to finish.
    #[command(
        after_help = "Examples:\n  skillcat cache clean\n  skillcat cache clean --all --cache .skillcat-cache"
    )]
    Clean {
        /// Remove everything: every index record and blob (the next run fetches afresh).
        #[arg(long)]
        all: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
}

/// How the catalog's pages are made: the address shown in install commands, the keyring
/// signatures are checked against (read here, so a bad file is said before anything is
/// served).
struct WebArgs<'a> {
    url: Option<String>,
    keyring: Option<&'a Path>,
}

/// Opens and reads a source and builds its site ([`serve::build_site`]: what an embedder gets
/// too); the skills left out are reported as warnings. A registry `store` when given (the one
/// `serve` reads and writes through, or a database's) is read from it, its change feed
/// position taken before it is read, so that the follower misses nothing written meanwhile.
async fn build_site_of(
    arg: &str,
    store: Option<Arc<dyn Store>>,
    web: WebArgs<'_>,
    g: &Globals,
) -> Result<(Site, usize), CliError> {
    let (src, found, seq) = match &store {
        Some(store) => {
            // Unknown (the feed not answering) is caught up with later: the follower starts
            // where the store first tells it.
            let seq = store.head().await.ok();
            let src = skillcat::source::RegistrySource::new(store.clone());
            let found = skillcat::source::discover_with(&src, skillcat::source::Detail::Files)
                .await
                .map_err(|e| failed!("{}: {e}", store.display()))?;
            super::read::print_warnings(&found);
            let src: Arc<dyn skillcat::source::Source> = Arc::new(src);
            (src, found, seq)
        }
        None => {
            // A registry file served as it is: its position, for the indexes' ETags.
            let seq = registry_head(arg).await;
            let o = super::read::open_and_discover(arg, g).await?;
            (o.src, o.found, seq)
        }
    };
    let keyring = match web.keyring {
        Some(path) => Some(Arc::new(
            skillcat::sign::Keyring::load(path)
                .map_err(|e| super::keyring::keyring_error(path, &e))?,
        )),
        None => None,
    };
    let request = SiteRequest {
        base_url: web.url,
        keyring,
        registry: store,
    };
    let (mut site, problems) = serve::build_site(arg, &*src, &found, request)
        .await
        .map_err(|e| usage!("{e}"))?;
    if let Some(seq) = seq {
        site.set_seq(seq);
    }
    for p in &problems {
        note!(
            "warning: {}",
            skillcat::prompt::escape_controls(&p.to_string())
        );
    }
    Ok((site, problems.len()))
}

/// The change feed position of the registry file `arg` names, read before the site is (any
/// failure is the source's to say when it is opened).
async fn registry_head(arg: &str) -> Option<i64> {
    if !skillcat::sign::source_signatures::is_registry_spec(arg) {
        return None;
    }
    let location = skillcat::registry::store::Location::parse(arg);
    let store = skillcat::registry::store::open_read_only(&location)
        .await
        .ok()?;
    store.head().await.ok()
}

fn skills_word(n: usize) -> &'static str {
    if n == 1 { "skill" } else { "skills" }
}

/// `skillcat serve SOURCE [--addr HOST:PORT] [--verbose] [limits…]`
pub async fn serve(a: ServeArgs, g: &Globals) -> CliResult {
    let store = if a.publish.publish {
        Some(super::central::prepare(&a.source).await?)
    } else if skillcat::registry::store::is_postgres_url(&a.source) {
        let location = skillcat::registry::store::Location::parse(&a.source);
        let opened = skillcat::registry::store::open_read_only(&location).await;
        Some(opened.map_err(|e| failed!("{e}"))?)
    } else {
        None
    };
    let tls = super::tls_config(a.tls_cert.as_deref(), a.tls_key.as_deref())?;
    let listener = match tokio::net::TcpListener::bind(a.addr).await {
        Ok(l) => l,
        Err(e) => {
            return Err(usage!("cannot listen on {}: {e}", a.addr));
        }
    };
    let local = listener.local_addr().unwrap_or(a.addr);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let web = WebArgs {
        url: Some(
            a.url
                .clone()
                .unwrap_or_else(|| format!("{scheme}://{local}/")),
        ),
        keyring: a.publish.keyring.as_deref(),
    };
    let statement = match &a.sign_index {
        Some(key) => Some(Arc::new(serve::LiveStatement::new(index_signing(
            key,
            web.url.as_deref(),
            a.index_expires,
        )?))),
        None => None,
    };
    let (site, _) = build_site_of(&a.source, store.clone(), web, g).await?;
    let mut limits = ServeLimits {
        header_timeout: a.header_timeout,
        idle_timeout: a.idle_timeout,
        request_timeout: a.request_timeout,
        max_connections: a.max_connections as usize,
        max_connections_per_address: a.max_connections_per_address as usize,
        drain_timeout: a.drain_timeout,
    };
    if let Some(said) = limits.fit_open_files() {
        note!("warning: {said}");
    }
    let n = site.skills().len();
    let app = if a.publish.publish {
        let app = super::central::router(
            store.expect("opened for --publish"),
            &a.publish,
            site,
            &local,
            tls.is_some(),
            statement,
        )?;
        out!(
            "Serving {n} {}, publishing at /api/v1/, on {scheme}://{local}/",
            skills_word(n)
        );
        serve::with_layers(app, a.verbose)
    } else {
        out!("Serving {n} {} on {scheme}://{local}/", skills_word(n));
        // A registry follows what is written to it meanwhile (by replicas, by `registry
        // publish`); its site was built at the position it starts following from.
        let followed = match store {
            Some(store) => Some(store),
            None if site.seq().is_some() => {
                let location = skillcat::registry::store::Location::parse(&a.source);
                skillcat::registry::store::open_read_only(&location)
                    .await
                    .ok()
            }
            None => None,
        };
        match followed {
            Some(store) => serve::following_router(site, store, a.verbose, statement),
            None => serve::signed_router(Arc::new(site), a.verbose, statement),
        }
    };
    let shutdown = serve::shutdown_signal();
    let served = match tls {
        #[cfg(feature = "tls")]
        Some(config) => serve::run_app_tls(app, listener, limits, config, shutdown).await,
        _ => serve::run_app(app, listener, limits, shutdown).await,
    };
    match served {
        Ok(()) => {
            err!("Stopped.");
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(failed!("{e}")),
    }
}

/// `skillcat export SOURCE DIR [--force]`
pub async fn export(a: ExportArgs, g: &Globals) -> CliResult {
    if let Some(name) = &a.marketplace {
        return export_marketplace(&a, name, g).await;
    }
    let web = WebArgs {
        url: a.url.clone(),
        keyring: a.keyring.as_deref(),
    };
    let signing = match &a.sign_index {
        Some(key) => Some(index_signing(key, a.url.as_deref(), a.index_expires)?),
        None => None,
    };
    // A database is read through its store, as `serve` reads it (it is no path).
    let store = if skillcat::registry::store::is_postgres_url(&a.source) {
        let location = skillcat::registry::store::Location::parse(&a.source);
        let opened = skillcat::registry::store::open_read_only(&location).await;
        Some(opened.map_err(|e| failed!("{e}"))?)
    } else {
        None
    };
    let (site, problems) = build_site_of(&a.source, store, web, g).await?;
    let n = site.skills().len();
    let (dir, force) = (a.dir.clone(), a.force);
    let done = off_runtime(move || serve::export_signed(&site, &dir, force, signing.as_ref()));
    let done = done.await?;
    out!(
        "Exported {n} {} ({} files, {} bytes) to {}",
        skills_word(n),
        done.files,
        done.bytes,
        a.dir.display()
    );
    Ok(ExitStatus::faults_if(problems > 0))
}

/// `skillcat export SOURCE DIR --marketplace NAME [--owner NAME]`.
async fn export_marketplace(a: &ExportArgs, name: &str, g: &Globals) -> CliResult {
    use skillcat::source::marketplace;
    let o = super::read::open_and_discover(&a.source, g).await?;
    let opts = marketplace::ExportOptions {
        name: name.to_string(),
        owner: a.owner.clone(),
        description: a.description.clone(),
        force: a.force,
    };
    let done = marketplace::export(&*o.src, &o.found, &a.dir, &opts)
        .await
        .map_err(|e| usage!("{e}"))?;
    out!(
        "Exported {} {} as the marketplace {name} ({} files, {} bytes) to {}",
        done.plugins,
        if done.plugins == 1 {
            "plugin"
        } else {
            "plugins"
        },
        done.files,
        done.bytes,
        a.dir.display()
    );
    Ok(ExitStatus::faults_if(!o.found.faults.is_empty()))
}

/// How `--sign-index KEY` signs: the catalog is the host (and port) of `--url`.
fn index_signing(
    key: &Path,
    url: Option<&str>,
    valid_for: Duration,
) -> Result<serve::IndexSigning, CliError> {
    let url = url.ok_or_else(|| usage!("--sign-index needs --url (the catalog it names)"))?;
    let password = std::env::var(super::trust::PASSWORD_ENV).ok();
    serve::IndexSigning::from_key_file(url, key, password, valid_for).map_err(|e| match e {
        IndexSigningError::NotUrl(_) => usage!("--url {e}"),
        IndexSigningError::NoTime => usage!("--index-expires must be more than 0"),
        e => usage!("{e}"),
    })
}

/// What an index entry's digest is the digest of: its archive, or its lone SKILL.md.
fn artifact_word(kind: &str) -> &'static str {
    match kind {
        "skill-md" => "SKILL.md",
        _ => "archive",
    }
}

/// `skillcat fetch URL` (with the global `--cache DIR` and `--offline`)
pub async fn fetch(a: FetchArgs, g: &Globals) -> CliResult {
    let said = |e| match e {
        FetchError::Url(e) => usage!("{e}"),
        FetchError::Index(e) => super::read::discover_error(e),
    };
    let fetch = Fetch::open(&a.url, HttpOptions::from(&g.open))
        .await
        .map_err(said)?;
    let bar = super::progress_bar(
        fetch.total(),
        0,
        "{bar:30} {pos}/{len} skills  {msg}  {elapsed}",
    );
    let fetched = fetch
        .run(|bytes| {
            bar.inc(1);
            bar.set_message(indicatif::HumanBytes(bytes).to_string());
        })
        .await;
    bar.finish_and_clear();
    for w in fetch.warnings() {
        note!("warning: {}", super::shown(&w));
    }
    let f = fetched.map_err(said)?;
    match a.format {
        Format::Text => {
            let mut out = std::io::stdout().lock();
            for s in &f.skills {
                // Which digest: the artifact's (what the index promises and the cache keys),
                // else the skill's (a v0.1 entry's files have no one artifact).
                let digest = match (&s.digest, &s.skill_digest) {
                    (Some(d), _) => format!("{d} ({})", artifact_word(s.kind)),
                    (None, Some(d)) => format!("{d} (skill)"),
                    (None, None) => "-".to_string(),
                };
                let _ = writeln!(
                    out,
                    "{}  {}  {digest}  {}",
                    super::shown(&s.name),
                    super::shown(s.version.as_deref().unwrap_or("-")),
                    s.status.word()
                );
            }
            let _ = writeln!(out, "{f}");
        }
        Format::Json => out!("{}", serde_json::to_string_pretty(&f).expect("json")),
    }
    for s in &f.skills {
        if let Some(m) = &s.message {
            err!("Error: {}: {}", super::shown(&s.name), super::shown(m));
        }
    }
    let missing = f.count(FetchStatus::NotCached) + f.count(FetchStatus::Failed);
    Ok(ExitStatus::faults_if(missing > 0))
}

/// `skillcat cache info|clean` (with the global `--cache DIR`)
pub async fn cache(cmd: CacheCommand, g: &Globals) -> CliResult {
    let Some(dir) = g
        .open
        .cache_dir
        .clone()
        .or_else(|| g.open.user_cache_dir.clone())
    else {
        return Err(usage!(
            "no cache directory (set --cache, XDG_CACHE_HOME or HOME)"
        ));
    };
    match cmd {
        CacheCommand::Info { format } => {
            let info = off_runtime(move || cache_info(&dir)).await?;
            match format {
                Format::Text => out!("{info}"),
                Format::Json => out!("{}", serde_json::to_string_pretty(&info).expect("json")),
            }
            Ok(ExitStatus::Success)
        }
        CacheCommand::Clean { all, format } => {
            let shown = dir.display().to_string();
            let waiting =
                move || err!("waiting for other skillcat processes using {shown} to finish…");
            let r = off_runtime(move || clean_cache(&dir, all, waiting)).await?;
            match format {
                Format::Text => out!("{r}"),
                Format::Json => out!("{}", serde_json::to_string_pretty(&r).expect("json")),
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// Runs blocking work (the cache's, an export's) off the async runtime; a failure is printed and becomes exit 2.
async fn off_runtime<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, CliError>
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(usage!("{e}")),
        Err(e) => Err(usage!("{e}")),
    }
}
