//! The view a server answers from, and the live catalog that replaces it when the skills change.
//!
//! ```text
//! notify (inotify): a watched directory, or the folder of a watched file ─┐
//! a poll tick (LiveOptions::poll) ────────────────────────────────────────┤
//!                                                                         ▼
//!        debounce ─▶ Catalog::reload ─▶ View::make (snapshot, file index, tool list, prompt)
//!                ─▶ fingerprint ≠ the current one? ─▶ the view replaced, Changed broadcast:
//!                   every client session sends notifications/{resources,tools,prompts}/
//!                   list_changed for what changed
//! ```
//!
//! A view is never changed in place: a request works on the view it started with, and a tool
//! call on the tool set it started with (see [`super::Local::tools_for`]). The fingerprint is
//! what a client can see: every resource's URI, size and digest, each skill's parsed document,
//! the tool list and the prompt block. A change that alters none of them (a file touched, an
//! editor's swap file) makes no notification.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::Watcher as _;
use rmcp::model::Tool;
use serde_json::Value as Json;

use super::skills::SkillView;
use super::tools::ToolSet;
use super::{McpServer, SKILL_BYTE_LIMIT, SKILL_FILE_LIMIT, Shared};
use crate::Session;
use crate::catalog::{Entry, Snapshot};
use crate::prompt::{PromptFormat, PromptOptions, PromptSkill, render};

/// One catalog snapshot as the server offers it.
#[derive(Debug)]
pub(crate) struct View {
    /// 0 for the first view; one more for each that replaced it.
    pub(crate) version: u64,
    pub(crate) entries: Vec<Entry>,
    pub(crate) skills: Vec<SkillView>,
    /// The tools a client session's tool set offers for this view.
    pub(crate) tools: Vec<Tool>,
    tool_index: HashMap<String, usize>,
    /// What this view could not offer, and the catalog's diagnostics.
    pub(crate) warnings: Vec<String>,
}

/// What changed between two views, as a client hears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Changed {
    pub(crate) resources: bool,
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
}

impl Changed {
    /// Everything (a listener that fell behind hears it all).
    pub(crate) const ALL: Changed = Changed {
        resources: true,
        tools: true,
        prompts: true,
    };
}

/// What a client can see of a view.
#[derive(Debug, PartialEq)]
struct Fingerprint {
    /// URI, size and digest of every resource; each skill's document as parsed.
    resources: Vec<(String, u64, Option<String>)>,
    documents: Vec<Json>,
    tools: Json,
    prompt: String,
}

impl View {
    /// The view of `snapshot`: its skills, and the tools a fork of `session` gives them (the
    /// probe activates every skill and ends at once: nothing runs, no workspace is made).
    pub(crate) async fn make(session: &Session, snapshot: &Snapshot, version: u64) -> View {
        let entries: Vec<Entry> = snapshot.entries().to_vec();
        let mut warnings: Vec<String> = snapshot
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect();
        let (probe, tool_warnings) = ToolSet::load(&session.fork(), &entries, version).await;
        let tools = probe.list();
        let _ = probe.shutdown().await;
        warnings.extend(tool_warnings);
        for e in &entries {
            if let Some(why) = over_host_limit(e.skill().files().len(), listed_bytes(e)) {
                warnings.push(format!(
                    "skill `{}` is not offered through skills/list: {why} (it is still a \
                     resource and in the prompt)",
                    e.name()
                ));
            }
        }
        let tool_index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        View {
            version,
            skills: entries.iter().cloned().map(SkillView::new).collect(),
            entries,
            tools,
            tool_index,
            warnings,
        }
    }

    /// A tool by its exact name.
    pub(crate) fn tool(&self, name: &str) -> Option<&Tool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// The skill of a name as URIs write it.
    pub(crate) fn skill(&self, name: &str) -> Option<&SkillView> {
        self.skills.iter().find(|s| s.entry().name() == name)
    }

    /// The prompt block with `skill://` URIs as locations, in `format`; and the budget's
    /// report.
    pub(crate) fn prompt_text(
        &self,
        opts: &PromptOptions,
        format: PromptFormat,
    ) -> (String, String) {
        let uris: Vec<String> = self.skills.iter().map(|s| s.document_uri()).collect();
        let skills: Vec<PromptSkill<'_>> = self
            .skills
            .iter()
            .zip(&uris)
            .map(|(s, uri)| PromptSkill {
                name: s.entry().name(),
                description: s.entry().skill().description(),
                location: uri,
            })
            .collect();
        let mut opts = *opts;
        opts.format = format;
        let rendered = render(&skills, &opts);
        (rendered.text, rendered.report.to_string())
    }

    /// Reads and hashes every file (once: the index is kept).
    async fn fingerprint(&self, prompt: &PromptOptions) -> Fingerprint {
        let mut resources = Vec::new();
        let mut documents = Vec::new();
        for s in &self.skills {
            for f in s.files().await.iter() {
                resources.push((f.uri.clone(), f.size, f.digest.clone()));
            }
            let skill = s.entry().skill();
            documents.push(serde_json::json!([
                s.entry().name(),
                s.entry().source_name(),
                skill.description(),
                skill.frontmatter().to_json(),
                skill.body(),
            ]));
        }
        Fingerprint {
            resources,
            documents,
            tools: serde_json::to_value(&self.tools).unwrap_or(Json::Null),
            prompt: self.prompt_text(prompt, PromptFormat::Xml).0,
        }
    }
}

/// The bytes a skill's file list says it holds.
fn listed_bytes(e: &Entry) -> u64 {
    e.skill().files().iter().map(|f| f.size).sum()
}

/// Why a skill of `files` files and `bytes` bytes is over SEP-2640's host limits, if it is.
pub(crate) fn over_host_limit(files: usize, bytes: u64) -> Option<String> {
    if files > SKILL_FILE_LIMIT {
        Some(format!(
            "it has {files} files, over the host limit of {SKILL_FILE_LIMIT} files per skill \
             (SEP-2640)"
        ))
    } else if bytes > SKILL_BYTE_LIMIT {
        Some(format!(
            "its files hold {bytes} bytes, over the host limit of 16 MiB ({SKILL_BYTE_LIMIT} \
             bytes) per skill (SEP-2640)"
        ))
    } else {
        None
    }
}

/// Where the live catalog tells what it followed: one line at a time.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// How the live catalog notices a change.
#[derive(Clone)]
#[non_exhaustive]
pub struct LiveOptions {
    /// Local paths to watch: a directory with everything below it, a file (an archive, a
    /// registry database) by the events of its folder that name it (or its `-wal`/`-journal`).
    pub paths: Vec<PathBuf>,
    /// Re-read every source on this interval too (`None`: only when a watched path changes).
    /// What a source not on disk (HTTP, OCI, git) needs to be followed.
    pub poll: Option<Duration>,
    /// How long after the first event of a burst the catalog is read again (default 200 ms):
    /// a copy of many files is one change.
    pub debounce: Duration,
    /// Told one line for each change the server follows, and for each warning of a new view.
    pub log: Option<Log>,
}

impl std::fmt::Debug for LiveOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveOptions")
            .field("paths", &self.paths)
            .field("poll", &self.poll)
            .field("debounce", &self.debounce)
            .finish_non_exhaustive()
    }
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            paths: Vec::new(),
            poll: None,
            debounce: Duration::from_millis(200),
            log: None,
        }
    }
}

impl LiveOptions {
    /// Watches `paths`, re-reading on `poll` too when given.
    pub fn new(paths: Vec<PathBuf>, poll: Option<Duration>) -> Self {
        LiveOptions {
            paths,
            poll,
            ..LiveOptions::default()
        }
    }

    /// With a log of the changes followed.
    pub fn with_log(mut self, log: Log) -> Self {
        self.log = Some(log);
        self
    }
}

/// The live catalog of a server; dropping it stops following changes.
#[derive(Debug)]
pub struct Watching {
    task: tokio::task::JoinHandle<()>,
    _watcher: Option<notify::RecommendedWatcher>,
    problems: Vec<String>,
}

impl Watching {
    /// The paths that could not be watched, with why (they are followed only by the poll).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether an event of the watcher is a change to look at: not a read (the server's own reads
/// must not start a reload); below a watched directory, or in the folder of a watched file
/// naming it or a file beside it whose name starts with it (`x.db-wal`).
fn relevant(event: &notify::Event, dirs: &[PathBuf], files: &[PathBuf]) -> bool {
    if matches!(event.kind, notify::EventKind::Access(_)) {
        return false;
    }
    event.paths.iter().any(|p| {
        dirs.iter().any(|d| p.starts_with(d))
            || files.iter().any(|f| {
                p.parent() == f.parent()
                    && p.file_name().zip(f.file_name()).is_some_and(|(pn, fname)| {
                        pn.as_encoded_bytes().starts_with(fname.as_encoded_bytes())
                    })
            })
    })
}

impl McpServer {
    /// Follows the catalog: whenever a watched path changes (or `opts.poll` elapses) the
    /// sources are read again, and when what a client can see changed, the view is replaced
    /// and every client session is sent `notifications/resources/list_changed` (and the tools
    /// and prompts ones when those changed). Needs a Tokio runtime.
    pub fn watch(&self, opts: LiveOptions) -> Watching {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
        let mut problems = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut files: Vec<PathBuf> = Vec::new();
        for p in &opts.paths {
            let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
        let (watched_dirs, watched_files) = (dirs.clone(), files.clone());
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // An error (an overflowed queue, a watch lost): read everything again.
            let interesting = res
                .as_ref()
                .map_or(true, |event| relevant(event, &watched_dirs, &watched_files));
            if interesting {
                let _ = tx.try_send(());
            }
        });
        let watcher = match watcher {
            Ok(mut w) => {
                for d in &dirs {
                    if let Err(e) = w.watch(d, notify::RecursiveMode::Recursive) {
                        problems.push(format!("{}: {e}", d.display()));
                    }
                }
                let mut folders: Vec<&Path> = files.iter().filter_map(|f| f.parent()).collect();
                folders.sort();
                folders.dedup();
                for folder in folders {
                    if let Err(e) = w.watch(folder, notify::RecursiveMode::NonRecursive) {
                        problems.push(format!("{}: {e}", folder.display()));
                    }
                }
                Some(w)
            }
            Err(e) => {
                if !opts.paths.is_empty() {
                    problems.push(format!("cannot watch files: {e}"));
                }
                None
            }
        };
        let shared = self.shared.clone();
        let task = tokio::spawn(async move {
            follow(shared, opts, &mut rx).await;
        });
        Watching {
            task,
            _watcher: watcher,
            problems,
        }
    }
}

/// The live catalog's loop: one reload per burst of events or poll tick.
async fn follow(shared: Arc<Shared>, opts: LiveOptions, rx: &mut tokio::sync::mpsc::Receiver<()>) {
    let log = |line: &str| {
        if let Some(log) = &opts.log {
            log(line);
        }
    };
    let mut current = shared.view().fingerprint(&shared.prompt).await;
    // A change between the first snapshot and the watch is not lost: read once now.
    let mut first = true;
    // Whether a watcher still sends (none, or one gone: only the poll is left).
    let mut watched = true;
    loop {
        if !first {
            let tick = async {
                match opts.poll {
                    Some(every) => tokio::time::sleep(every).await,
                    None => std::future::pending().await,
                }
            };
            let event = async {
                if watched {
                    rx.recv().await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                got = event => {
                    if got.is_none() {
                        watched = false;
                        if opts.poll.is_none() {
                            return;
                        }
                        continue;
                    }
                }
                () = tick => {}
            }
            tokio::time::sleep(opts.debounce).await;
            while rx.try_recv().is_ok() {}
        }
        first = false;
        let catalog = shared.session.catalog();
        catalog.reload().await;
        let snapshot = catalog.snapshot().await;
        let version = shared.view().version + 1;
        let view = View::make(&shared.session, &snapshot, version).await;
        let fresh = view.fingerprint(&shared.prompt).await;
        if fresh == current {
            continue;
        }
        let changed = Changed {
            resources: fresh.resources != current.resources || fresh.documents != current.documents,
            tools: fresh.tools != current.tools,
            prompts: fresh.prompt != current.prompt,
        };
        let old = shared.view();
        for w in view.warnings.iter().filter(|w| !old.warnings.contains(w)) {
            log(&format!("warning: {w}"));
        }
        log(&format!(
            "catalog changed: {} skill(s), {} tool(s){}",
            view.skills.len(),
            view.tools.len(),
            if changed.tools {
                format!(
                    ": {}",
                    view.tools
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                String::new()
            }
        ));
        *shared
            .view
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(view);
        current = fresh;
        let _ = shared.changes.send(changed);
    }
}
