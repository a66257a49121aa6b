//! Any source written as a Claude Code plugin marketplace (`skillcat export --marketplace`):
//! one plugin per skill, each skill's files byte for byte.
//!
//! ```text
//! DIR/.claude-plugin/marketplace.json            { name, owner, metadata: { description }, plugins: [{ name, source: "./plugins/NAME", version, … }] }
//! DIR/plugins/NAME/.claude-plugin/plugin.json    { name, description, version, license, author }
//! DIR/plugins/NAME/skills/NAME/…                 the skill's files, modes kept
//! ```
//!
//! A plugin's version is the skill's (the version the source keeps it as, else
//! `metadata.version`): Claude Code updates a plugin only when that value changes, so a new
//! version of one skill moves that plugin alone. The output is sorted and has no timestamps.

use std::path::Path;

use serde_json::{Value, json};
use skillcat_core::error::{Error, Result};
use skillcat_core::path::join_path;
use skillcat_core::source::{Discovery, Source};

use super::{MARKETPLACE_FILE, PLUGIN_FILE, check_name, check_reserved};

/// What [`export`] writes besides the skills.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The marketplace's name (`PLUGIN@NAME` in Claude Code); a name Claude Code reserves is
    /// refused.
    pub name: String,
    /// `owner.name` (the marketplace's name when `None`), and each plugin's `author.name`.
    pub owner: Option<String>,
    /// `metadata.description`, what Claude Code shows of the marketplace (when `None`: the
    /// number of skills and who owns them).
    pub description: Option<String>,
    /// Write into a folder that is not empty: each exported plugin's folder is replaced and
    /// the catalog rewritten; nothing else is touched.
    pub force: bool,
}

/// What [`export`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exported {
    /// Plugins (one per skill).
    pub plugins: usize,
    /// Files written, the manifests included.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
}

struct PluginOut {
    name: String,
    entry: Value,
    manifest: Vec<u8>,
    files: Vec<(String, bytes::Bytes, bool)>,
}

/// Writes the skills `found` in `src` (a discovery with file lists) under `dir` as a
/// marketplace (see the module doc). Every skill is read before anything is written; the
/// catalog is written last, by rename, so it never names a plugin whose files are missing.
pub async fn export(
    src: &dyn Source,
    found: &Discovery,
    dir: &Path,
    opts: &ExportOptions,
) -> Result<Exported> {
    check_name(&opts.name)
        .and_then(|()| check_reserved(&opts.name))
        .map_err(|why| Error::Invalid(format!("marketplace name {:?}: {why}", opts.name)))?;
    let mut skills: Vec<_> = found.skills.iter().collect();
    skills.sort_by_key(|s| s.name());
    let mut plugins: Vec<PluginOut> = Vec::new();
    for s in skills {
        let name = s.name();
        check_name(&name)
            .map_err(|why| Error::Invalid(format!("{}: not a plugin name: {why}", s.location())))?;
        if plugins.iter().any(|p| p.name == name) {
            return Err(Error::Invalid(format!(
                "{}: a second skill named {name:?} (a marketplace has one plugin of a name)",
                s.location()
            )));
        }
        let version = src
            .record(s.root())
            .await?
            .version
            .or_else(|| s.version().map(str::to_string));
        let paths: Vec<String> = s
            .files()
            .iter()
            .map(|f| join_path(s.root(), &f.path))
            .collect();
        let bytes = src.read_many(&paths).await?;
        let files = s
            .files()
            .iter()
            .zip(bytes)
            .map(|(f, b)| (f.path.clone(), b, f.executable))
            .collect();
        let mut manifest = json!({"name": name, "description": s.description()});
        if let Some(v) = &version {
            manifest["version"] = json!(v);
        }
        if let Some(l) = s.license() {
            manifest["license"] = json!(l);
        }
        if let Some(owner) = &opts.owner {
            manifest["author"] = json!({"name": owner});
        }
        let mut entry = manifest.clone();
        entry["source"] = json!(format!("./plugins/{name}"));
        plugins.push(PluginOut {
            name,
            entry,
            manifest: pretty(&manifest),
            files,
        });
    }
    let owner = opts.owner.as_deref().unwrap_or(&opts.name);
    let description = opts.description.clone().unwrap_or_else(|| {
        let n = plugins.len();
        format!(
            "{n} Agent Skill{} of {owner}, one plugin each",
            if n == 1 { "" } else { "s" }
        )
    });
    let catalog = json!({
        "name": opts.name,
        "owner": {"name": owner},
        "metadata": {"description": description},
        "plugins": plugins.iter().map(|p| p.entry.clone()).collect::<Vec<_>>(),
    });
    let catalog = pretty(&catalog);
    let (dir, force) = (dir.to_path_buf(), opts.force);
    tokio::task::spawn_blocking(move || write(&dir, force, &plugins, &catalog))
        .await
        .map_err(|e| Error::task("writing a marketplace", e))?
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("JSON values serialise");
    out.push(b'\n');
    out
}

fn write(dir: &Path, force: bool, plugins: &[PluginOut], catalog: &[u8]) -> Result<Exported> {
    let io = |p: &Path, e: std::io::Error| Error::io(p.display().to_string(), e);
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if !force && entries.next().is_some() {
                return Err(Error::Invalid(format!(
                    "{} is not empty (use --force to write into it)",
                    dir.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        Err(e) => return Err(io(dir, e)),
    }
    let mut done = Exported::default();
    for p in plugins {
        let folder = dir.join("plugins").join(&p.name);
        // An older export's files of this plugin must not linger beside the new ones.
        match std::fs::remove_dir_all(&folder) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&folder, e)),
            _ => {}
        }
        let skill = folder.join("skills").join(&p.name);
        let manifest = std::iter::once((folder.join(PLUGIN_FILE), &p.manifest[..], false));
        let files = p
            .files
            .iter()
            .map(|(rel, b, exec)| (skill.join(rel), &b[..], *exec));
        for (path, body, exec) in manifest.chain(files) {
            let parent = path.parent().expect("a file under dir has a parent");
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
            std::fs::write(&path, body).map_err(|e| io(&path, e))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = if exec { 0o755 } else { 0o644 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| io(&path, e))?;
            }
            done.files += 1;
            done.bytes += body.len() as u64;
        }
        done.plugins += 1;
    }
    let path = dir.join(MARKETPLACE_FILE);
    let parent = path.parent().expect("the catalog has a folder");
    std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".skillcat-")
        .tempfile_in(parent)
        .map_err(|e| io(parent, e))?;
    std::io::Write::write_all(&mut tmp, catalog)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io(&path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| io(&path, e))?;
    }
    tmp.persist(&path).map_err(|e| io(&path, e.error))?;
    done.files += 1;
    done.bytes += catalog.len() as u64;
    Ok(done)
}
