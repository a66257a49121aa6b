//! A marketplace read as a source: the skills of its plugins, each root recording the plugins
//! that offer it ([`RootRecord::plugins`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::OnceCell;

use super::{MARKETPLACE_FILE, Marketplace, MarketplaceError, PLUGIN_FILE, PluginSource};
use crate::git::GitSource;
use skillcat_core::error::{Error, Result};
use skillcat_core::path::{DOCUMENT_NAMES, FileEntry, join_path};
use skillcat_core::source::{
    Detail, DocumentSink, RootRecord, Source, SourceId, SourceKind, SourceSpec, Symlink,
};

/// A source that reads `.claude-plugin/marketplace.json` at its top on first use: with one, it
/// lists the skills of every plugin (a plugin's `skills` paths, else its `skills/` folder),
/// a plugin in another repository (`github`, `url`, `git-subdir`) read through the git source
/// at the `sha` the entry pins, under the root `@PLUGIN/…`; without one it is the source it
/// wraps, unchanged. A missing skill path or a broken catalog is an error naming each problem.
pub struct MarketplaceSource {
    base: Arc<dyn Source>,
    git_timeout: Duration,
    state: OnceCell<State>,
}

enum State {
    /// No catalog: the base source as it is.
    Plain,
    Market(Market),
}

struct Market {
    catalog: Marketplace,
    /// The base source first, then one per plugin held elsewhere.
    parts: Vec<(String, Arc<dyn Source>)>,
    roots: Vec<String>,
    /// The plugins that offer each root.
    by_root: HashMap<String, Vec<String>>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for MarketplaceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The wrapped source first: it is what was opened; the catalog is read on first use.
        write!(
            f,
            "{:?} (as a marketplace when it has {MARKETPLACE_FILE})",
            self.base
        )
    }
}

impl MarketplaceSource {
    /// Wraps `base`; each `git` command of a plugin held elsewhere may take `git_timeout`.
    /// Does no I/O.
    pub fn new(base: Arc<dyn Source>, git_timeout: Duration) -> MarketplaceSource {
        MarketplaceSource {
            base,
            git_timeout,
            state: OnceCell::new(),
        }
    }

    /// The catalog, once read (`None` for a source without one).
    pub async fn catalog(&self) -> Result<Option<&Marketplace>> {
        Ok(match self.state().await? {
            State::Plain => None,
            State::Market(m) => Some(&m.catalog),
        })
    }

    async fn state(&self) -> Result<&State> {
        self.state.get_or_try_init(|| self.read_catalog()).await
    }

    async fn read_catalog(&self) -> Result<State> {
        let bytes = match self.base.read(MARKETPLACE_FILE).await {
            Ok(b) => b,
            Err(e) if e.is_not_found() => return Ok(State::Plain),
            Err(e) => return Err(e),
        };
        let shown = self.base.location(MARKETPLACE_FILE);
        let catalog = super::parse(&bytes).map_err(|e| invalid(&shown, e))?;
        let mut parts: Vec<(String, Arc<dyn Source>)> = vec![(String::new(), self.base.clone())];
        let base_roots = if catalog
            .plugins
            .iter()
            .any(|p| matches!(p.source, PluginSource::Path(_)))
        {
            self.base.list().await?
        } else {
            Vec::new()
        };
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let mut roots: Vec<String> = Vec::new();
        let mut by_root: HashMap<String, Vec<String>> = HashMap::new();
        for plugin in &catalog.plugins {
            let (part, folder, listed) = match &plugin.source {
                PluginSource::Path(dir) => (0, dir.clone(), base_roots.clone()),
                PluginSource::Git {
                    url,
                    subpath,
                    git_ref,
                    sha,
                } => {
                    let mut spec = SourceSpec::new(SourceKind::Git, url);
                    spec.url = Some(url.clone());
                    spec.git_ref = git_ref.clone();
                    spec.pin = sha.clone();
                    spec.subpath = subpath.clone();
                    let src: Arc<dyn Source> = Arc::new(GitSource::new(&spec, self.git_timeout)?);
                    let listed = src.list().await.map_err(|e| {
                        Error::other(format!("{shown}: plugin {:?} ({url})", plugin.name), e)
                    })?;
                    if sha.is_none() {
                        // Said, since nothing else holds it: the lockfile pins the skill's
                        // digest, not this repository's commit.
                        warnings.push(format!(
                            "{shown}: plugin {:?} ({url}) is not pinned by a sha: read at the newest commit of {}",
                            plugin.name,
                            git_ref.as_deref().unwrap_or("its default branch")
                        ));
                    }
                    parts.push((format!("@{}", plugin.name), src));
                    (parts.len() - 1, String::new(), listed)
                }
            };
            let src = &parts[part].1;
            let mut inner_roots = Vec::new();
            // Paths a catalog or a manifest names must hold a skill: said, never skipped.
            let mut named = plugin.skills.clone().unwrap_or_default();
            if plugin.strict {
                let manifest = join_path(&folder, PLUGIN_FILE);
                match src.read(&manifest).await {
                    Ok(bytes) => match super::parse_plugin_skills(&bytes) {
                        Ok(more) => {
                            for p in more {
                                if !named.contains(&p) {
                                    named.push(p);
                                }
                            }
                        }
                        Err(e) => problems.push(format!("{}: {e}", src.location(&manifest))),
                    },
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
            for p in &named {
                let root = join_path(&folder, p);
                let mut known = listed.contains(&root);
                for doc in DOCUMENT_NAMES {
                    known = known || src.read(&join_path(&root, doc)).await.is_ok();
                }
                if known {
                    inner_roots.push(root);
                } else {
                    problems.push(format!(
                        "plugin {:?}: skill path \"./{p}\": no SKILL.md at {}",
                        plugin.name,
                        src.location(&root)
                    ));
                }
            }
            match &plugin.skills {
                Some(_) => {}
                None => {
                    let under = join_path(&folder, "skills/");
                    let default = listed
                        .iter()
                        .filter(|r| r.starts_with(&under) && !inner_roots.contains(r))
                        .cloned()
                        .collect::<Vec<_>>();
                    inner_roots.extend(default);
                    if inner_roots.is_empty() {
                        warnings.push(format!(
                            "{shown}: plugin {:?} has no skills (nothing under {})",
                            plugin.name,
                            src.location(under.trim_end_matches('/'))
                        ));
                    }
                }
            }
            for inner in inner_roots {
                if part == 0 && inner.starts_with('@') {
                    // `@PLUGIN/…` names the plugins held elsewhere; a folder of that shape
                    // here could be taken for one.
                    problems.push(format!(
                        "plugin {:?}: the folder {inner:?} starts with '@', kept for plugins in other repositories",
                        plugin.name
                    ));
                    continue;
                }
                let root = join_path(&parts[part].0, &inner);
                match by_root.get_mut(&root) {
                    Some(plugins) => plugins.push(plugin.name.clone()),
                    None => {
                        roots.push(root.clone());
                        by_root.insert(root, vec![plugin.name.clone()]);
                    }
                }
            }
        }
        if !problems.is_empty() {
            return Err(invalid(&shown, MarketplaceError { problems }));
        }
        Ok(State::Market(Market {
            catalog,
            parts,
            roots,
            by_root,
            warnings,
        }))
    }

    /// The source and the path in it that `path` (a root, or a root joined with a file) names.
    fn route<'a>(&'a self, state: &'a State, path: &'a str) -> (&'a Arc<dyn Source>, &'a str) {
        if let State::Market(m) = state
            && path.starts_with('@')
        {
            for (prefix, src) in &m.parts[1..] {
                if path == prefix {
                    return (src, "");
                }
                if let Some(rest) = path.strip_prefix(prefix.as_str())
                    && let Some(rest) = rest.strip_prefix('/')
                {
                    return (src, rest);
                }
            }
        }
        (&self.base, path)
    }
}

#[async_trait]
impl Source for MarketplaceSource {
    async fn list(&self) -> Result<Vec<String>> {
        match self.state().await? {
            State::Plain => self.base.list().await,
            State::Market(m) => Ok(m.roots.clone()),
        }
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        let state = self.state().await?;
        let (src, inner) = self.route(state, root);
        src.files(inner).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let state = self.state().await?;
        let (src, inner) = self.route(state, path);
        src.read(inner).await
    }

    fn location(&self, path: &str) -> String {
        match self.state.get() {
            Some(state) => {
                let (src, inner) = self.route(state, path);
                src.location(inner)
            }
            None => self.base.location(path),
        }
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        match self.state.get() {
            Some(state) => {
                let (src, inner) = self.route(state, root);
                src.root_dir_name(inner)
            }
            None => self.base.root_dir_name(root),
        }
    }

    async fn read_documents(
        &self,
        roots: &[String],
        detail: Detail,
        each: DocumentSink,
    ) -> Result<Vec<String>> {
        match self.state().await? {
            State::Plain => self.base.read_documents(roots, detail, each).await,
            State::Market(_) => {
                skillcat_core::source::read_each(self, roots, detail, &each).await;
                Ok(self.warnings())
            }
        }
    }

    async fn record(&self, root: &str) -> Result<RootRecord> {
        match self.state().await? {
            State::Plain => self.base.record(root).await,
            state @ State::Market(m) => {
                let (src, inner) = self.route(state, root);
                let plugins = m.by_root.get(root).cloned().unwrap_or_default();
                Ok(src.record(inner).await?.with_plugins(plugins))
            }
        }
    }

    async fn version_root(&self, name: &str, version: &str) -> Result<Option<String>> {
        match self.state().await? {
            State::Plain => self.base.version_root(name, version).await,
            State::Market(_) => Ok(None),
        }
    }

    async fn id(&self) -> Result<SourceId> {
        self.base.id().await
    }

    async fn symlinks(&self, root: &str) -> Result<Vec<Symlink>> {
        let state = self.state().await?;
        let (src, inner) = self.route(state, root);
        src.symlinks(inner).await
    }

    fn warnings(&self) -> Vec<String> {
        let mut out = self.base.warnings();
        if let Some(State::Market(m)) = self.state.get() {
            out.extend(m.warnings.iter().cloned());
            for (_, src) in &m.parts[1..] {
                out.extend(src.warnings());
            }
        }
        out
    }

    fn summary(&self) -> Option<String> {
        self.base.summary()
    }
}

/// A marketplace file with problems, where it is: an error of kind
/// [`Invalid`](skillcat_core::error::ErrorKind::Invalid), so a caller tells it from a store
/// that cannot be reached without knowing this type.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {error}")]
struct Invalid {
    at: String,
    #[source]
    error: MarketplaceError,
}

fn invalid(at: &str, error: MarketplaceError) -> Error {
    Error::layer(
        skillcat_core::error::ErrorKind::Invalid,
        Invalid {
            at: at.to_string(),
            error,
        },
    )
}
