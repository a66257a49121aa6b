//! What a remote source is opened with: [`RemoteOptions`], the part of the sources crate's
//! `OpenOptions` this crate reads, and the [`IndexVerifier`] a signed index is checked with.
//! Nothing here reads the environment: the caller (the command line's context) says where the
//! cache and the Docker configuration are.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the HTTP and OCI sources are opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteOptions {
    /// Where downloads are cached (`None`: nowhere on disk; `--offline` then has nothing).
    pub cache_dir: Option<PathBuf>,
    /// Serve only what is cached; never touch the network.
    pub offline: bool,
    /// The deadline of one remote request, retries included (`None`: the source's default).
    pub timeout: Option<Duration>,
    /// Say on stderr, this often, what a remote request is still waiting for (`None`: never).
    pub slow_notice: Option<Duration>,
    /// The most entries of a remote index that are read (`None`: the source's default, 10,000);
    /// the rest are counted and said in a warning.
    pub max_index_entries: Option<usize>,
    /// Speak plain HTTP to an OCI registry that is not on this machine (a loopback registry is
    /// always reached over plain HTTP).
    pub allow_insecure: bool,
    /// PEM certificates a remote source trusts as roots beside the platform's.
    pub ca_certificates: Vec<Vec<u8>>,
    /// Ask the server again for every mutable document (an index) whatever its `max-age`
    /// says (a conditional request).
    pub revalidate: bool,
    /// The longest a cached index is used without asking the server, whatever its `max-age`
    /// says (`None`: the source's default, 1 hour).
    pub max_index_age: Option<Duration>,
    /// When set, a remote index is used only with a signed statement that this checks.
    pub index_verifier: Option<IndexVerifier>,
    /// The Docker configuration (`config.json`) an OCI registry's credentials are looked up in
    /// (`None`: none is read).
    pub docker_config: Option<PathBuf>,
}

/// What an [`IndexVerifier`] is given: a catalog's index and the statement published beside it.
#[derive(Debug, Clone, Copy)]
pub struct IndexCheck<'a> {
    /// The catalog (the host, and port when there is one, of the index URL).
    pub catalog: &'a str,
    /// The index bytes, as served.
    pub index: &'a [u8],
    /// The statement's text (a minisign signature, `index.json.minisig`).
    pub statement: &'a str,
    /// The highest version this client has seen for the catalog.
    pub highest: Option<u64>,
}

/// Why an [`IndexVerifier`] refused an index: the checker's own error.
pub type IndexRefusal = Box<dyn std::error::Error + Send + Sync>;

/// Checks a remote index against its signed statement: `Ok(version)` when it holds, else why
/// not. A callback, so that the remote sources need not know the signing crate: whoever
/// opens them (`skillcat-sources`, from a keyring) builds it.
#[derive(Clone)]
pub struct IndexVerifier(Arc<IndexCheckFn>);

/// The callback an [`IndexVerifier`] holds.
type IndexCheckFn = dyn Fn(IndexCheck<'_>) -> Result<u64, IndexRefusal> + Send + Sync;

impl IndexVerifier {
    /// A verifier calling `check`.
    pub fn new(
        check: impl Fn(IndexCheck<'_>) -> Result<u64, IndexRefusal> + Send + Sync + 'static,
    ) -> IndexVerifier {
        IndexVerifier(Arc::new(check))
    }

    /// Checks one index: its statement's version, or why it is refused.
    pub fn check(&self, c: IndexCheck<'_>) -> Result<u64, IndexRefusal> {
        (self.0)(c)
    }
}

impl std::fmt::Debug for IndexVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IndexVerifier(..)")
    }
}

/// Two verifiers are equal when they are the same one (options compare by identity here).
impl PartialEq for IndexVerifier {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for IndexVerifier {}
