//! Every kind of skill source, opened from one [`SourceSpec`].
//!
//! The core holds the directory and archive sources and the one parser of SOURCE spellings
//! ([`SourceSpec`]); the registry, HTTP and OCI sources live in the crates above it, and git
//! sources here ([`git`]). This crate knows them all and opens the one a spec names, and
//! validates what a list of paths and sources names ([`validate_paths`]: one report per skill
//! root, whatever holds it):
//!
//! ```text
//! "x.tar.gz" ─ SourceSpec::parse ─▶ SourceSpec { kind, path | url, git_ref, subpath, pin }
//!                                        └─ open_with(&spec, &opts) ─▶ Arc<dyn Source>
//!                                                                        └─ id() → the pin
//! ```

pub mod git;
pub mod marketplace;
pub mod validate;

use std::borrow::Cow;
use std::sync::Arc;

pub use validate::validate_paths;

// The layers below, under the names this crate's code uses.
pub(crate) use skillcat_core::{error, path};
pub(crate) use skillcat_sign as sign;

/// The core's source module, as the code names it.
pub(crate) mod source {
    pub(crate) use skillcat_core::source::*;
}

use skillcat_core::archive::ArchiveLimits;
use skillcat_core::error::{Error, Result};
use skillcat_core::source::{ArchiveSource, DirOptions, DirSource, Source, SourceKind, SourceSpec};
use skillcat_registry::RegistrySource;
use skillcat_remote::options::RemoteOptions;
use skillcat_remote::{http, oci};

pub use skillcat_remote::options::{IndexCheck, IndexVerifier};

pub use git::{GitError, GitSource};
pub use marketplace::MarketplaceSource;

/// What [`open`] and [`open_with`] take: a parsed [`SourceSpec`], or a spelling, parsed with
/// [`SourceSpec::parse`] (paths as typed).
pub trait ToSpec {
    /// The spec this names.
    fn to_spec(&self) -> Result<Cow<'_, SourceSpec>>;
}

impl ToSpec for SourceSpec {
    fn to_spec(&self) -> Result<Cow<'_, SourceSpec>> {
        Ok(Cow::Borrowed(self))
    }
}

impl ToSpec for str {
    fn to_spec(&self) -> Result<Cow<'_, SourceSpec>> {
        SourceSpec::parse(self).map(Cow::Owned)
    }
}

impl ToSpec for String {
    fn to_spec(&self) -> Result<Cow<'_, SourceSpec>> {
        self.as_str().to_spec()
    }
}

impl ToSpec for Cow<'_, str> {
    fn to_spec(&self) -> Result<Cow<'_, SourceSpec>> {
        (**self).to_spec()
    }
}

/// How a source that needs more than a path (a remote one, a git one) is opened: what the
/// remote sources read ([`RemoteOptions`], composed by [`remote`](Self::remote)) and git's
/// own. Nothing here is read from the environment: the command line's context fills the
/// user's directories in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Where an HTTP or OCI source keeps its cache (default: [`user_cache_dir`](Self::user_cache_dir)).
    pub cache_dir: Option<std::path::PathBuf>,
    /// The user's cache directory (`$XDG_CACHE_HOME/skillcat`, else `~/.cache/skillcat`), used
    /// when `cache_dir` is not set; `None`: nothing is cached on disk.
    pub user_cache_dir: Option<std::path::PathBuf>,
    /// Serve only what is cached; never touch the network.
    pub offline: bool,
    /// The deadline of one remote request, retries included (`None`: the source's default).
    pub timeout: Option<std::time::Duration>,
    /// Say on stderr, this often, what a remote request is still waiting for (`None`: never).
    pub slow_notice: Option<std::time::Duration>,
    /// The most entries of a remote index that are read (`None`: the source's default, 10,000);
    /// the rest are counted and said in a warning.
    pub max_index_entries: Option<usize>,
    /// Speak plain HTTP to an OCI registry that is not on this machine (a loopback registry is
    /// always reached over plain HTTP).
    pub allow_insecure: bool,
    /// PEM certificates a remote source trusts as roots beside the platform's.
    pub ca_certificates: Vec<Vec<u8>>,
    /// The longest one `git` command of a git source may take (`None`: 300 seconds).
    pub git_timeout: Option<std::time::Duration>,
    /// Ask the server again for every mutable document (an index) whatever its `max-age`
    /// says (a conditional request): set by the commands that change a project, which must
    /// not resolve against a view a cache header froze.
    pub revalidate: bool,
    /// The longest a cached index is used without asking the server, whatever its `max-age`
    /// says (`None`: the source's default, 1 hour).
    pub max_index_age: Option<std::time::Duration>,
    /// When set, a remote index is used only with a signed statement that this checks (a
    /// keyring's: [`index_verifier`]): not tampered, not expired, not rolled back.
    pub index_verifier: Option<IndexVerifier>,
    /// The Docker configuration (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`)
    /// an OCI registry's credentials are looked up in; `None`: none is read.
    pub docker_config: Option<std::path::PathBuf>,
}

impl OpenOptions {
    /// What the remote sources are opened with.
    pub fn remote(&self) -> RemoteOptions {
        RemoteOptions {
            cache_dir: self
                .cache_dir
                .clone()
                .or_else(|| self.user_cache_dir.clone()),
            offline: self.offline,
            timeout: self.timeout,
            slow_notice: self.slow_notice,
            max_index_entries: self.max_index_entries,
            allow_insecure: self.allow_insecure,
            ca_certificates: self.ca_certificates.clone(),
            revalidate: self.revalidate,
            max_index_age: self.max_index_age,
            index_verifier: self.index_verifier.clone(),
            docker_config: self.docker_config.clone(),
        }
    }
}

impl From<&OpenOptions> for http::HttpOptions {
    fn from(o: &OpenOptions) -> Self {
        http::HttpOptions::from(&o.remote())
    }
}

impl From<&OpenOptions> for oci::OciOptions {
    fn from(o: &OpenOptions) -> Self {
        oci::OciOptions::from(&o.remote())
    }
}

/// The [`OpenOptions::index_verifier`] of a keyring: an HTTP source then uses an index only
/// with a statement beside it that [`skillcat_sign::verify_index`] accepts now (signed by a
/// key of `keyring` that is not revoked, for the catalog read, of the bytes served, not
/// expired, not lower than the highest version seen).
pub fn index_verifier(keyring: sign::Keyring) -> IndexVerifier {
    IndexVerifier::new(move |c| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        sign::verify_index(c.index, c.statement, &keyring, c.catalog, now, c.highest)
            .map(|v| v.statement.version)
            .map_err(Into::into)
    })
}

/// Opens a source with default options (see [`open_with`]).
pub fn open(spec: &(impl ToSpec + ?Sized)) -> Result<Arc<dyn Source>> {
    open_with(spec, &OpenOptions::default())
}

/// Opens the source a spec names (a spelling is parsed first, see [`SourceSpec`]): a
/// directory (a skill or a tree of skills), an archive (`.tar`, `.tar.gz`/`.tgz`, `.zip`,
/// told apart by magic bytes first, extension second), a SQLite registry (`x.db`,
/// `x.sqlite`, `sqlite:PATH`, or any file with the SQLite magic), an `http(s)://` index, an
/// `oci://HOST/REPO[:TAG|@sha256:…]` reference, or a git repository (`git+https://…`,
/// `https://…/repo.git`, `github:owner/repo`, …; fetched on first use).
///
/// A spec's [`pin`](SourceSpec::pin) holds a git source to that commit and an OCI source to
/// that digest. Opening does no network I/O: a remote source is first read by its first
/// `list`, `files`, `read` or [`id`](Source::id).
pub fn open_with(spec: &(impl ToSpec + ?Sized), opts: &OpenOptions) -> Result<Arc<dyn Source>> {
    let spec = spec.to_spec()?;
    open_spec(&spec, opts)
}

fn open_spec(spec: &SourceSpec, opts: &OpenOptions) -> Result<Arc<dyn Source>> {
    let path = || {
        spec.path
            .as_deref()
            .ok_or_else(|| Error::UnsupportedSource(spec.typed.clone()))
    };
    let url = || {
        spec.url
            .as_deref()
            .ok_or_else(|| Error::UnsupportedSource(spec.typed.clone()))
    };
    let git_timeout = opts.git_timeout.unwrap_or(git::DEFAULT_GIT_TIMEOUT);
    Ok(match spec.kind {
        SourceKind::Local => {
            let dir = Arc::new(DirSource::open(path()?, DirOptions::default())?);
            // A Claude Code plugin marketplace: its plugins' skills, each knowing its plugin.
            if path()?.join(marketplace::MARKETPLACE_FILE).is_file() {
                Arc::new(MarketplaceSource::new(dir, git_timeout))
            } else {
                dir
            }
        }
        SourceKind::Archive => Arc::new(ArchiveSource::open(path()?, ArchiveLimits::default())?),
        SourceKind::Registry => match &spec.url {
            Some(url) => Arc::new(DatabaseRegistry::new(url)),
            None => Arc::new(RegistrySource::open(path()?)?),
        },
        SourceKind::WellKnown => Arc::new(http::HttpSource::new(
            url()?,
            http::HttpOptions::from(&opts.remote()),
        )?),
        SourceKind::Oci => {
            let mut reference = oci::Reference::parse(url()?)?;
            if let Some(digest) = &spec.pin {
                // Exactly the manifest pinned, whatever the tag says now.
                reference = reference.with_digest(digest);
            }
            Arc::new(oci::OciSource::new(
                &reference.to_string(),
                oci::OciOptions::from(&opts.remote()),
            )?)
        }
        // A repository is read as a marketplace when it has one (known once it is fetched).
        SourceKind::Git => Arc::new(MarketplaceSource::new(
            Arc::new(GitSource::new(spec, git_timeout)?),
            git_timeout,
        )),
    })
}

/// A registry in a PostgreSQL database as a source: connected on first use
/// ([`RegistrySource::connect`]), as a remote source is read on its first `list`, since
/// opening does no I/O. A build without the registry crate's `postgres` feature says so then.
struct DatabaseRegistry {
    location: skillcat_registry::store::Location,
    shown: String,
    connected: tokio::sync::OnceCell<RegistrySource>,
}

impl std::fmt::Debug for DatabaseRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DatabaseRegistry")
            .field(&self.shown)
            .finish()
    }
}

impl DatabaseRegistry {
    fn new(url: &str) -> DatabaseRegistry {
        DatabaseRegistry {
            location: skillcat_registry::store::Location::Postgres(url.to_string()),
            shown: skillcat_core::source::redact_password(url),
            connected: tokio::sync::OnceCell::new(),
        }
    }

    async fn source(&self) -> Result<&RegistrySource> {
        self.connected
            .get_or_try_init(|| async { RegistrySource::connect(&self.location).await })
            .await
    }
}

#[async_trait::async_trait]
impl Source for DatabaseRegistry {
    async fn list(&self) -> Result<Vec<String>> {
        self.source().await?.list().await
    }

    async fn files(&self, root: &str) -> Result<Vec<skillcat_core::path::FileEntry>> {
        self.source().await?.files(root).await
    }

    async fn read(&self, path: &str) -> Result<bytes::Bytes> {
        self.source().await?.read(path).await
    }

    fn location(&self, path: &str) -> String {
        match self.connected.get() {
            Some(src) => src.location(path),
            None if path.is_empty() => self.shown.clone(),
            None => format!("{}#{path}", self.shown),
        }
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        let name = root.split_once('@').map_or(root, |(name, _)| name);
        (!name.is_empty()).then(|| name.to_string())
    }

    async fn record(&self, root: &str) -> Result<skillcat_core::source::RootRecord> {
        self.source().await?.record(root).await
    }

    async fn version_root(&self, name: &str, version: &str) -> Result<Option<String>> {
        self.source().await?.version_root(name, version).await
    }

    fn warnings(&self) -> Vec<String> {
        self.connected
            .get()
            .map(|s| s.warnings())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_url_opens_as_git_without_io() {
        for typed in [
            "https://example.invalid/o/r.git",
            "git+https://example.invalid/o/r#v1",
        ] {
            let src = open(typed).unwrap();
            assert!(
                format!("{src:?}").starts_with("GitSource"),
                "{typed}: {src:?}"
            );
        }
        let src = open("http://example.invalid/skills/").unwrap();
        assert!(format!("{src:?}").starts_with("HttpSource"), "{src:?}");
    }

    #[tokio::test]
    async fn a_directory_is_named_by_its_path_and_an_archive_by_its_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("pdf");
        std::fs::create_dir(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: pdf\ndescription: d\n---\n",
        )
        .unwrap();
        let spec = SourceSpec::parse_in("pdf", dir.path()).unwrap();
        let id = open(&spec).unwrap().id().await.unwrap();
        assert_eq!(
            id,
            skillcat_core::source::SourceId::Path(std::fs::canonicalize(&skill).unwrap())
        );
        let tgz = dir.path().join("pdf.tar.gz");
        let entry = skillcat_core::pack::PackEntry {
            path: "pdf/SKILL.md".into(),
            bytes: "---\nname: pdf\ndescription: d\n---\n".into(),
            executable: false,
        };
        skillcat_core::pack::write_archive(&[entry], &tgz).unwrap();
        let bytes = std::fs::read(&tgz).unwrap();
        let id = open(tgz.to_str().unwrap()).unwrap().id().await.unwrap();
        assert_eq!(
            id.archive_sha256(),
            Some(skillcat_core::digest::sha256_digest(&bytes).as_str())
        );
    }

    #[test]
    fn a_missing_path_is_not_found_and_a_stranger_unsupported() {
        assert!(open("no/such/dir").unwrap_err().is_not_found());
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("a.txt");
        std::fs::write(&txt, "x").unwrap();
        assert!(matches!(
            open(txt.to_str().unwrap()),
            Err(Error::UnsupportedSource(_))
        ));
    }
}

#[cfg(test)]
mod git_tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[tokio::test]
    async fn a_git_spec_opens_for_reading_and_names_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("skills/pdf")).unwrap();
        std::fs::write(
            repo.join("skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: d\n---\nbody\n",
        )
        .unwrap();
        std::fs::write(repo.join("skills/pdf.minisig"), "not really a signature\n").unwrap();
        git(&repo, &["init", "--quiet", "-b", "main"]);
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "--quiet", "-m", "one"]);
        let commit = git(&repo, &["rev-parse", "HEAD"]);
        let typed = format!("git+file://{}#main:skills", repo.display());
        let src = open(typed.as_str()).unwrap();
        assert_eq!(src.list().await.unwrap(), ["pdf"]);
        assert_eq!(
            src.read("pdf/SKILL.md").await.unwrap(),
            "---\nname: pdf\ndescription: d\n---\nbody\n"
        );
        assert_eq!(src.id().await.unwrap().commit(), Some(commit.as_str()));
        assert_eq!(
            src.record("pdf").await.unwrap().signatures,
            ["not really a signature\n"]
        );
        // A later commit moves the branch; the pin holds the source to the first one.
        std::fs::write(
            repo.join("skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: two\n---\n",
        )
        .unwrap();
        git(&repo, &["commit", "--quiet", "-am", "two"]);
        let mut spec = SourceSpec::parse(&typed).unwrap();
        spec.pin = Some(commit.clone());
        let pinned = open(&spec).unwrap();
        assert_eq!(pinned.id().await.unwrap().commit(), Some(commit.as_str()));
        assert!(
            pinned
                .read("pdf/SKILL.md")
                .await
                .unwrap()
                .ends_with(b"body\n")
        );
        // A commit the repository does not have is refused, as a git error.
        spec.pin = Some("0".repeat(40));
        let err = open(&spec).unwrap().list().await.unwrap_err();
        assert!(err.kind() == skillcat_core::ErrorKind::Refused, "{err:?}");
    }
}

// The README's library example is this crate's `examples/library.rs`, which `cargo test` and
// clippy build: a README that drifts from the file (or a file that no longer builds) fails.
#[cfg(test)]
mod readme {
    #[test]
    fn the_readme_shows_the_library_example_as_it_is() {
        let readme = include_str!("../../../README.md");
        let example = include_str!("../examples/library.rs");
        let section = readme
            .split_once("\n## The library\n")
            .and_then(|(_, rest)| rest.split_once("\n## ").map(|(s, _)| s))
            .expect("the README has a section `## The library`");
        let block = section
            .split_once("```rust\n")
            .and_then(|(_, rest)| rest.split_once("```\n").map(|(b, _)| b))
            .expect("the section has a rust block");
        assert_eq!(
            block, example,
            "README.md's library example differs from examples/library.rs"
        );
    }
}
