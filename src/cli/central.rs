//! `skillcat serve REGISTRY.db --publish --tokens FILE`: the options of a central registry and
//! the router that serves its publishing API beside the read side.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use skillcat::registry::VersionLimits;
use skillcat::registry::store::Store;
use skillcat::serve::{self, ApiOptions, PublishingSourceError, Site};
use skillcat::sign::Keyring;

use super::CliError;

/// The publishing options of `skillcat serve`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// Accept publishes, yanks and audit reads under /api/v1/ (SOURCE must be a registry: a
    /// file or `postgres://…`; --tokens says who may write).
    #[arg(long, requires = "tokens")]
    pub publish: bool,
    /// The token file (`skillcat token create`); re-read when it changes and on SIGHUP.
    #[arg(long, value_name = "FILE", requires = "publish")]
    pub tokens: Option<PathBuf>,
    /// Refuse a publish unless its signature verifies against this keyring (with --publish);
    /// the catalog's pages check each signature against it too, naming its key and scope.
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
    /// The largest upload: bytes, or with a unit (`16MiB`, `512KiB`).
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = parse_size)]
    pub max_upload: u64,
    /// Uploads in flight at once, from reading the body to the version committed or refused;
    /// more wait (bounds the memory uploads take). One token holds at most half of them.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_uploads: u32,
    /// API requests (publish, yank, unyank, audit reads) per token per minute, also the burst;
    /// more are 429.
    #[arg(long, value_name = "N", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    pub writes_per_minute: u32,
    /// The most a version may hold unpacked, all files together (counted as the upload is
    /// unpacked); more is 413.
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = parse_size)]
    pub max_version_size: u64,
    /// The most files a version may hold; more is 413.
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_version_files: u32,
    /// Unpacked bytes a token may publish per minute (the burst: this or --max-version-size,
    /// whichever is larger); more are 429.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub bytes_per_minute: u64,
    /// What a publish the audit finds a high finding in gets: `refuse` (422 audit_findings)
    /// or `warn` (accepted). Either way each version's findings are recorded and served at
    /// /api/v1/skills/NAME/VERSION/findings.
    #[arg(long, value_name = "POLICY", default_value = "refuse", requires = "publish", value_parser = parse_policy)]
    pub audit: skillcat::audit::Policy,
}

fn parse_policy(s: &str) -> Result<skillcat::audit::Policy, skillcat::audit::PolicyError> {
    s.parse()
}

pub(super) use skillcat::units::parse_size;

/// Before the site is built: the SOURCE of `--publish` must be a registry (a file, or a
/// PostgreSQL database), opened read-write once so that it is migrated (the audit log) before
/// anything reads it ([`serve::publishing_store`]): the one store the server reads and writes
/// through. Anything else is refused saying to create a registry file and serve that.
pub(super) async fn prepare(source: &str) -> Result<Arc<dyn Store>, CliError> {
    match serve::publishing_store(source).await {
        Ok(store) => Ok(store),
        Err(PublishingSourceError::NotCreated(path)) => Err(usage!(
            "--publish serves a registry file, and {} does not exist: create it with \
             `skillcat registry init {}`",
            path.display(),
            path.display()
        )),
        Err(e @ PublishingSourceError::NotRegistry { .. }) => Err(usage!(
            "--publish needs a registry file; create one with `skillcat registry init team.db` \
             and serve that (`skillcat serve team.db --publish --tokens FILE`); {e}. \
             Skills go into it with `skillcat registry publish team.db DIR` or, once served, \
             `skillcat publish URL DIR`"
        )),
        Err(PublishingSourceError::Open(e)) => Err(usage!("--publish: {e}")),
    }
}

/// The read side of `site` and the publishing API, as `args` says.
pub(super) fn router(
    store: Arc<dyn Store>,
    args: &PublishArgs,
    site: Site,
    local: &SocketAddr,
    tls: bool,
    statement: Option<Arc<serve::LiveStatement>>,
) -> Result<axum::Router, CliError> {
    let tokens = args.tokens.clone().expect("clap requires --tokens");
    // Read once here for a start-up error that explains itself; the server re-reads it.
    if let Some(path) = &args.keyring
        && let Err(e) = Keyring::load(path)
    {
        return Err(super::keyring::keyring_error(path, &e));
    }
    if !tls && !local.ip().is_loopback() {
        note!(
            "warning: serving the publishing API over plain HTTP on {local}: tokens cross the \
             network unencrypted. Give --tls-cert and --tls-key, put a TLS-terminating proxy in \
             front, or bind to 127.0.0.1"
        );
    }
    let opts = ApiOptions {
        registry: store,
        tokens,
        keyring: args.keyring.clone(),
        max_upload: args.max_upload,
        max_uploads: args.max_uploads as usize,
        writes_per_minute: args.writes_per_minute,
        version_limits: VersionLimits {
            max_bytes: args.max_version_size,
            max_files: args.max_version_files as usize,
        },
        bytes_per_minute: args.bytes_per_minute,
        audit: args.audit,
    };
    serve::publishing_router(Arc::new(RwLock::new(Arc::new(site))), opts, statement)
        .map_err(|e| usage!("{e}"))
}
