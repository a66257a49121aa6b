//! One context per run, built once and lent to every operation: the process's environment
//! (working, home, cache, configuration and runtime directories, read here and nowhere else),
//! the configuration with its trust state, the keyring, how remote sources are reached and
//! the output settings.
//!
//! Every command of the `skillcat` binary gets the same [`Context`], so that they agree: the
//! keyring `verify` reads is the one `add`, `install` and `update` check signatures against,
//! and `[scripts] extension_fields` reaches every command that validates a skill. The
//! configuration and the keyring are read when first asked for, once: a command that needs
//! neither never fails on them.
//!
//! ```
//! use skillcat::context::{Context, Env};
//!
//! let env = Env {
//!     cwd: Some("/work/proj".into()),
//!     home: Some("/home/me".into()),
//!     ..Env::default()
//! };
//! assert_eq!(
//!     env.default_keyring().unwrap(),
//!     std::path::Path::new("/home/me/.config/skillcat/keyring.toml")
//! );
//! assert_eq!(
//!     env.cache_dir().unwrap(),
//!     std::path::Path::new("/home/me/.cache/skillcat")
//! );
//! let ctx = Context::new(env);
//! assert!(ctx.config_file.is_none());
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::config::{Config, ConfigError, Environment};
use crate::sign::{Keyring, SignError};
use crate::source::OpenOptions;

/// The file name of the default keyring, beside the user's configuration file (the sign
/// crate's, which `trust add` writes).
pub use crate::sign::KEYRING_FILE_NAME as KEYRING_FILE;

/// The process's environment, as far as skillcat reads it: read once, by
/// [`Env::from_process`], and handed down as values (no other function of the library reads
/// `$HOME` or an XDG variable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// The working directory (`None`: it could not be read; see
    /// [`cwd_error`](Self::cwd_error)).
    pub cwd: Option<PathBuf>,
    /// Why the working directory could not be read.
    pub cwd_error: Option<String>,
    /// `$HOME` (blank: `None`).
    pub home: Option<PathBuf>,
    /// `$XDG_CACHE_HOME`, when absolute.
    pub xdg_cache_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, when absolute.
    pub xdg_config_home: Option<PathBuf>,
    /// `$XDG_RUNTIME_DIR`, when set.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`, when absolute (where Claude Code keeps its skills).
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`, when absolute (where Codex keeps its skills).
    pub codex_home: Option<PathBuf>,
    /// `$DOCKER_CONFIG`, when set (where OCI registry credentials are).
    pub docker_config: Option<PathBuf>,
}

impl Env {
    /// This process's working directory and variables: the one place they are read.
    pub fn from_process() -> Env {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let abs = |k: &str| var(k).filter(|p| p.is_absolute());
        let (cwd, cwd_error) = match std::env::current_dir() {
            Ok(d) => (Some(d), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Env {
            cwd,
            cwd_error,
            home: var("HOME"),
            xdg_cache_home: abs("XDG_CACHE_HOME"),
            xdg_config_home: abs("XDG_CONFIG_HOME"),
            xdg_runtime_dir: var("XDG_RUNTIME_DIR"),
            claude_config_dir: abs("CLAUDE_CONFIG_DIR"),
            codex_home: abs("CODEX_HOME"),
            docker_config: var("DOCKER_CONFIG"),
        }
    }

    /// The working directory, or why it could not be read.
    pub fn cwd(&self) -> Result<&Path, ContextError> {
        self.cwd.as_deref().ok_or_else(|| {
            ContextError::WorkingDirectory(self.cwd_error.clone().unwrap_or_default())
        })
    }

    /// The working and home directories a configuration is read against.
    pub fn environment(&self) -> Result<Environment, ContextError> {
        Ok(Environment {
            cwd: self.cwd()?.to_path_buf(),
            home: self.home.clone(),
        })
    }

    /// The home directory when it is absolute (what `~` and the user's files need).
    fn absolute_home(&self) -> Option<&Path> {
        self.home.as_deref().filter(|h| h.is_absolute())
    }

    /// The user's configuration directory: `~/.config/skillcat`.
    pub fn user_config_dir(&self) -> Option<PathBuf> {
        self.absolute_home().map(|h| h.join(".config/skillcat"))
    }

    /// The keyring `skillcat trust add` writes when told no other:
    /// `~/.config/skillcat/keyring.toml`.
    pub fn default_keyring(&self) -> Option<PathBuf> {
        self.user_config_dir().map(|d| d.join(KEYRING_FILE))
    }

    /// Where `skillcat login` keeps publish tokens: `~/.config/skillcat/credentials.toml`
    /// (`None` without an absolute home). Like the configuration, it needs a working directory.
    pub fn credentials_file(&self) -> Result<Option<PathBuf>, ContextError> {
        self.cwd()?;
        let file = crate::central::credentials::CREDENTIALS_FILE;
        Ok(self.user_config_dir().map(|d| d.join(file)))
    }

    /// The cache of remote sources: `$XDG_CACHE_HOME/skillcat`, else `~/.cache/skillcat`.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        self.xdg_cache_home
            .clone()
            .or_else(|| self.absolute_home().map(|h| h.join(".cache")))
            .map(|d| d.join("skillcat"))
    }

    /// Docker's credentials file, which OCI registries are logged in with:
    /// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
    pub fn docker_config_file(&self) -> Option<PathBuf> {
        match &self.docker_config {
            Some(dir) => Some(dir.join("config.json")),
            None => self.home.as_ref().map(|h| h.join(".docker/config.json")),
        }
    }

    /// The directories the sandbox keeps its workspaces in and protects.
    pub fn user_dirs(&self) -> crate::script::UserDirs {
        crate::script::UserDirs {
            home: self.home.clone(),
            runtime_dir: self.xdg_runtime_dir.clone(),
            cache_home: self.xdg_cache_home.clone(),
        }
    }

    /// What the agents' folders depend on.
    pub fn agents(&self) -> crate::install::AgentEnv {
        crate::install::AgentEnv {
            home: self.absolute_home().map(Path::to_path_buf),
            claude_config_dir: self.claude_config_dir.clone(),
            codex_home: self.codex_home.clone(),
            xdg_config_home: self.xdg_config_home.clone(),
        }
    }
}

/// What the remote options of a command line (or an embedder) name: files are named here and
/// read by [`Context::with_remote`].
#[derive(Debug, Clone, Default)]
pub struct RemoteSettings {
    /// The cache directory of remote sources (else the user's, [`Env::cache_dir`]).
    pub cache: Option<PathBuf>,
    /// Only what is cached; never the network.
    pub offline: bool,
    /// The most entries of a remote index read.
    pub max_index_entries: Option<usize>,
    /// Plain HTTP to an OCI registry that is not on this machine.
    pub allow_insecure: bool,
    /// The longest a cached index is used without asking its server again.
    pub max_index_age: Option<std::time::Duration>,
    /// A keyring whose keys must sign a remote index (`index.json.minisig`).
    pub index_keyring: Option<PathBuf>,
    /// The deadline of one request, retries included.
    pub timeout: Option<std::time::Duration>,
    /// PEM files of certificate authorities trusted besides the system's.
    pub ca_files: Vec<PathBuf>,
    /// How often a slow request is named while it is waited for (`None`: never).
    pub slow_notice: Option<std::time::Duration>,
}

/// A file the remote settings name that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteSettingsError {
    /// A CA certificate file that cannot be read.
    #[error("cannot read the CA certificate {}: {source}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An index keyring that cannot be read.
    #[error("cannot read the index keyring {}: {source}", path.display())]
    IndexKeyring {
        /// The file.
        path: PathBuf,
        /// Why.
        source: SignError,
    },
}

/// Why the context could not give what was asked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ContextError {
    /// The working directory could not be read.
    WorkingDirectory(String),
    /// The configuration could not be read.
    Config(Arc<ConfigError>),
    /// No home directory to hold the user's file `what` (a keyring, the configuration).
    NoHome {
        /// The file wanted.
        what: &'static str,
    },
    /// No keyring: none named, none configured, and no default one.
    NoKeyring {
        /// Where the default keyring would be.
        default: PathBuf,
    },
    /// The configuration's `[scripts]` interpreters are not acceptable.
    Scripts(Arc<crate::script::ScriptError>),
    /// The keyring could not be read.
    Keyring {
        /// Its file.
        path: PathBuf,
        /// Why.
        source: Arc<SignError>,
    },
}

impl std::fmt::Display for ContextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContextError::WorkingDirectory(e) => {
                write!(f, "cannot read the working directory: {e}")
            }
            ContextError::Config(e) => write!(f, "{e}"),
            ContextError::NoHome { what } => write!(f, "no home directory ($HOME) for {what}"),
            ContextError::NoKeyring { default } => write!(
                f,
                "no keyring: none is named, none is set in the configuration, and {} does not exist",
                default.display()
            ),
            ContextError::Scripts(e) => write!(f, "[scripts]: {e}"),
            ContextError::Keyring { source, .. } => write!(f, "{source}"),
        }
    }
}

impl std::error::Error for ContextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ContextError::Config(e) => Some(&**e),
            ContextError::Scripts(e) => Some(&**e),
            ContextError::Keyring { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// What an install asks for besides the configuration (the command line's `--keyring`,
/// `--require-signature`, `--allow-findings`, `--force`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstallRequest {
    /// The keyring named (else the configured one, else the default one when it exists).
    pub keyring: Option<PathBuf>,
    /// Refuse a skill no key of the keyring signed (also `[install] require_signatures`).
    pub require_signature: bool,
    /// Warn of a high audit finding instead of refusing (also `[install] audit = "warn"`).
    pub allow_findings: bool,
    /// Install skills that fail validation, and replace modified or unmanaged folders.
    pub force: bool,
}

/// Where a keyring comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyringPath {
    /// The file.
    pub path: PathBuf,
    /// Whether it is the default one (neither named nor configured): it may not exist yet.
    pub default: bool,
}

/// Everything a command runs with, built once (see the module docs).
#[derive(Debug, Default)]
pub struct Context {
    /// The process's environment.
    pub env: Env,
    /// The configuration file named (`--config`): else `./skillcat.toml`, the user's, the
    /// defaults.
    pub config_file: Option<PathBuf>,
    /// How sources are opened (cache directory, offline, timeout, index bound, …).
    pub open: OpenOptions,
    /// Print results and errors only.
    pub quiet: bool,
    /// Say more where there is more to say.
    pub verbose: bool,
    config: OnceLock<Result<Arc<Config>, ContextError>>,
}

impl Context {
    /// A context of `env`, with the default options and the configuration found there.
    pub fn new(env: Env) -> Context {
        Context {
            env,
            ..Context::default()
        }
    }

    /// This context opening sources as `remote` says: its CA files and index keyring read now
    /// (a file that cannot be read is an error here, not at the first request), the user's
    /// cache directory and Docker credentials file from [`Env`].
    pub fn with_remote(mut self, remote: &RemoteSettings) -> Result<Context, RemoteSettingsError> {
        let mut ca_certificates = Vec::with_capacity(remote.ca_files.len());
        for path in &remote.ca_files {
            ca_certificates.push(std::fs::read(path).map_err(|source| {
                RemoteSettingsError::CaFile {
                    path: path.clone(),
                    source,
                }
            })?);
        }
        let index_verifier = match &remote.index_keyring {
            Some(path) => Some(crate::source::index_verifier(Keyring::load(path).map_err(
                |source| RemoteSettingsError::IndexKeyring {
                    path: path.clone(),
                    source,
                },
            )?)),
            None => None,
        };
        self.open = OpenOptions {
            cache_dir: remote.cache.clone(),
            user_cache_dir: self.env.cache_dir(),
            docker_config: self.env.docker_config_file(),
            offline: remote.offline,
            timeout: remote.timeout,
            max_index_entries: remote.max_index_entries,
            slow_notice: remote.slow_notice,
            allow_insecure: remote.allow_insecure,
            ca_certificates,
            git_timeout: None,
            revalidate: false,
            max_index_age: remote.max_index_age,
            index_verifier,
        };
        Ok(self)
    }

    /// The configuration: the file named, else `./skillcat.toml` (narrowed until trusted),
    /// else the user's, else the defaults ([`Config::discover`]). Read on the first call; the
    /// same value, or the same error, after.
    pub fn config(&self) -> Result<Arc<Config>, ContextError> {
        self.config
            .get_or_init(|| {
                let env = self.env.environment()?;
                Config::discover(self.config_file.as_deref(), &env)
                    .map(Arc::new)
                    .map_err(|e| ContextError::Config(Arc::new(e)))
            })
            .clone()
    }

    /// The keyring file: `given`, else the configuration's `keyring`, else the default one
    /// (`~/.config/skillcat/keyring.toml`, where `skillcat trust add` writes).
    pub fn keyring_path(&self, given: Option<&Path>) -> Result<KeyringPath, ContextError> {
        if let Some(p) = given {
            return Ok(KeyringPath {
                path: p.to_path_buf(),
                default: false,
            });
        }
        if let Some(p) = &self.config()?.keyring {
            return Ok(KeyringPath {
                path: p.clone(),
                default: false,
            });
        }
        self.env
            .default_keyring()
            .map(|path| KeyringPath {
                path,
                default: true,
            })
            .ok_or(ContextError::NoHome {
                what: "the default keyring",
            })
    }

    /// The keyring signatures are checked against ([`keyring_path`](Self::keyring_path)), and
    /// its file; `Ok(None)` when none is named or configured and the default one does not
    /// exist (or there is no home directory to hold it).
    pub fn keyring(
        &self,
        given: Option<&Path>,
    ) -> Result<Option<(PathBuf, Keyring)>, ContextError> {
        let at = match self.keyring_path(given) {
            Ok(at) => at,
            Err(ContextError::NoHome { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        if at.default && !at.path.exists() {
            return Ok(None);
        }
        self.load_keyring(at.path).map(Some)
    }

    /// [`keyring`](Self::keyring), required: no keyring is an error naming the default one.
    pub fn required_keyring(
        &self,
        given: Option<&Path>,
    ) -> Result<(PathBuf, Keyring), ContextError> {
        let at = self.keyring_path(given)?;
        if at.default && !at.path.exists() {
            return Err(ContextError::NoKeyring { default: at.path });
        }
        self.load_keyring(at.path)
    }

    fn load_keyring(&self, path: PathBuf) -> Result<(PathBuf, Keyring), ContextError> {
        match Keyring::load(&path) {
            Ok(k) => Ok((path, k)),
            Err(e) => Err(ContextError::Keyring {
                path,
                source: Arc::new(e),
            }),
        }
    }

    /// What counts as a valid skill: the configuration's options (`[scripts]
    /// extension_fields`), for every command that validates a skill before acting on it.
    pub fn validate_options(&self) -> Result<crate::document::ValidateOptions, ContextError> {
        Ok(self.config()?.validate_options())
    }

    /// How `add`, `install` and `update` run in `scope`: the keyring `verify` reads, the
    /// configuration's `[install]` (signatures, audit policy), `[scripts]` (what the audit counts
    /// as a tool, what validates) and cache, and `request` on top.
    pub fn install_options(
        &self,
        scope: crate::install::Scope,
        request: &InstallRequest,
    ) -> Result<crate::install::Options, ContextError> {
        let config = self.config()?;
        let keyring = self.keyring(request.keyring.as_deref())?;
        let mut opts = crate::install::Options::new(scope);
        opts.open = self.catalog_options(&config).open;
        opts.keyring = keyring.map(|(_, ring)| ring);
        opts.require_signature = request.require_signature || config.install.require_signatures;
        opts.audit = if request.allow_findings {
            crate::audit::Policy::Warn
        } else {
            config.install.audit
        };
        opts.audit_options.interpreters = crate::runtime::interpreters(&config.scripts)
            .map_err(|e| ContextError::Scripts(Arc::new(e)))?;
        opts.force = request.force;
        opts.validate = config.validate_options();
        if let Some(t) = self.open.timeout {
            opts.git_timeout = t;
        }
        Ok(opts)
    }

    /// The configured catalog: the configuration's sources in their order, opened as
    /// [`catalog_options`](Self::catalog_options) says, each skill read as far as `detail`.
    pub fn catalog(
        &self,
        detail: crate::source::Detail,
    ) -> Result<crate::catalog::Catalog, ContextError> {
        use crate::catalog::{Catalog, CatalogOptions, CatalogSource};
        let config = self.config()?;
        let options = CatalogOptions {
            detail,
            ..self.catalog_options(&config)
        };
        let sources = config.sources.iter().map(CatalogSource::from).collect();
        Ok(Catalog::with_options(sources, options))
    }

    /// This context for an operation that changes a project (`add`, `install`, `update`):
    /// every index it resolves against is asked for again, whatever a cache header said.
    pub fn changing_project(mut self) -> Context {
        self.open.revalidate = true;
        self
    }

    /// How a catalog built from `config` opens its sources: the given cache directory (else the
    /// configuration's `cache_dir`), the given index age (else its `max_index_age`) and the
    /// rest of [`open`](Self::open), and the configuration's validation options.
    pub fn catalog_options(&self, config: &Config) -> crate::catalog::CatalogOptions {
        crate::catalog::CatalogOptions {
            open: OpenOptions {
                cache_dir: self
                    .open
                    .cache_dir
                    .clone()
                    .or_else(|| config.cache_dir.clone()),
                max_index_age: self
                    .open
                    .max_index_age
                    .or(config.max_index_age.map(std::time::Duration::from_secs)),
                ..self.open.clone()
            },
            validate: config.validate_options(),
            detail: crate::source::Detail::default(),
        }
    }

    /// How `push` reaches an OCI registry: as sources are opened (timeouts, limits, CA files,
    /// plain HTTP when allowed, the Docker credentials file), asking for push rights.
    pub fn push_client_options(&self) -> crate::source::oci::client::ClientOptions {
        crate::source::oci::client::ClientOptions {
            http: crate::source::http::HttpOptions::from(&self.open),
            allow_insecure: self.open.allow_insecure,
            push: true,
            docker_config: self.open.docker_config.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: Option<&str>, xdg_cache_home: Option<&str>, docker: Option<&str>) -> Env {
        Env {
            cwd: None,
            cwd_error: None,
            home: home.map(PathBuf::from),
            xdg_cache_home: xdg_cache_home.map(PathBuf::from),
            xdg_config_home: None,
            xdg_runtime_dir: None,
            claude_config_dir: None,
            codex_home: None,
            docker_config: docker.map(PathBuf::from),
        }
    }

    #[test]
    fn credentials_live_beside_the_users_configuration_and_need_a_working_directory() {
        let mut e = env(Some("/home/u"), None, None);
        assert!(e.credentials_file().is_err());
        e.cwd = Some(PathBuf::from("/work"));
        let file = PathBuf::from("/home/u/.config/skillcat/credentials.toml");
        assert_eq!(e.credentials_file().unwrap(), Some(file));
        e.home = Some(PathBuf::from("relative"));
        assert_eq!(e.credentials_file().unwrap(), None);
    }

    #[test]
    fn the_cache_follows_xdg_then_home() {
        let both = env(Some("/home/u"), Some("/var/cache/u"), None);
        assert_eq!(
            both.cache_dir(),
            Some(PathBuf::from("/var/cache/u/skillcat"))
        );
        let home = env(Some("/home/u"), None, None);
        assert_eq!(
            home.cache_dir(),
            Some(PathBuf::from("/home/u/.cache/skillcat"))
        );
        assert_eq!(env(None, None, None).cache_dir(), None);
    }

    #[test]
    fn dockers_credentials_follow_docker_config_then_home() {
        let set = env(Some("/home/u"), None, Some("/etc/docker-u"));
        assert_eq!(
            set.docker_config_file(),
            Some(PathBuf::from("/etc/docker-u/config.json"))
        );
        let home = env(Some("/home/u"), None, None);
        assert_eq!(
            home.docker_config_file(),
            Some(PathBuf::from("/home/u/.docker/config.json"))
        );
        assert_eq!(env(None, None, None).docker_config_file(), None);
    }

    #[test]
    fn remote_settings_read_their_files_once_and_say_which_cannot_be_read() {
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("ca.pem");
        std::fs::write(&pem, b"-----BEGIN CERTIFICATE-----\n").unwrap();
        let ctx = Context::new(env(Some("/home/u"), None, None))
            .with_remote(&RemoteSettings {
                ca_files: vec![pem.clone()],
                offline: true,
                ..RemoteSettings::default()
            })
            .unwrap();
        assert_eq!(
            ctx.open.ca_certificates,
            [b"-----BEGIN CERTIFICATE-----\n".to_vec()]
        );
        assert!(ctx.open.offline);
        assert_eq!(
            ctx.open.user_cache_dir,
            Some(PathBuf::from("/home/u/.cache/skillcat"))
        );

        let missing = dir.path().join("gone.pem");
        let e = Context::new(env(None, None, None))
            .with_remote(&RemoteSettings {
                ca_files: vec![pem, missing.clone()],
                ..RemoteSettings::default()
            })
            .unwrap_err();
        assert!(matches!(&e, RemoteSettingsError::CaFile { path, .. } if *path == missing));
        assert!(
            e.to_string().starts_with("cannot read the CA certificate"),
            "{e}"
        );

        let e = Context::new(env(None, None, None))
            .with_remote(&RemoteSettings {
                index_keyring: Some(dir.path().join("no-keyring.toml")),
                ..RemoteSettings::default()
            })
            .unwrap_err();
        assert!(matches!(e, RemoteSettingsError::IndexKeyring { .. }), "{e}");
    }
}
