//! Writing a [`Site`] as static files, for any static host, object store or CDN.

use std::fs;
use std::path::Path;

use skillcat_core::fs::{AtomicWrite, Durability};

use super::site::{AGENT_SKILLS_INDEX, SKILLS_INDEX, Site};
use crate::error::{Error, Result};

/// Where `export` writes each skill's API answer (`GET /api/v1/skills/NAME` of `serve`).
const SKILL_API: &str = "api/v1/skills/";

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exported {
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes every path of `site` under `dir`, every version's archive and each skill's answer of
/// `GET /api/v1/skills/NAME` (as the file `api/v1/skills/NAME`, the bytes `serve` answers, so
/// that `NAME@VERSION` of an older version reads from a static host): content first, the
/// indexes last, so a host that
/// serves the folder while it is written never lists a skill whose files are missing. Each file
/// is written to a temporary file beside it and renamed into place; the content is flushed to
/// disk once, with the file system's `syncfs`, before the indexes are written (each of them
/// synced), so that after a crash an index never names a file that was lost (a sync per file
/// cost ~3 ms each: most of an export of thousands of pages). A `dir` that exists and is
/// not empty is refused unless `force` (then files are replaced; nothing is deleted).
/// Blocking: call it from `spawn_blocking` in async code.
pub fn export(site: &Site, dir: &Path, force: bool) -> Result<Exported> {
    let shown = dir.display().to_string();
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if !force && entries.next().is_some() {
                return Err(Error::Exists {
                    path: shown,
                    why: "is not empty (use --force to write into it)".into(),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(|e| Error::io(&shown, e))?;
        }
        Err(e) => return Err(Error::io(&shown, e)),
    }
    let is_index = |p: &str| p == AGENT_SKILLS_INDEX || p == SKILLS_INDEX;
    let mut done = Exported::default();
    for (path, res) in site.resources().filter(|(p, _)| !is_index(p)) {
        write_one(dir, path, &res.body, false, &mut done)?;
    }
    // Every version's archive, as `serve` answers it: an older one is packed again from the
    // registry, one at a time (never all held at once).
    for (path, lookup, name, version) in site.older_blobs() {
        let hex = path.trim_start_matches("blobs/sha256/");
        let body = lookup
            .archive(&name, &version)?
            .filter(|b| crate::digest::to_hex(crate::digest::sha256(b)) == hex);
        let Some(body) = body else {
            return Err(Error::NotFound(format!(
                "{name}@{version}: its archive {path} could not be packed again"
            )));
        };
        write_one(dir, &path, &body, false, &mut done)?;
    }
    // What `serve` answers for `GET /api/v1/skills/NAME`, as a file at that path: the HTTP
    // source reads a version its index does not list (an older one) from it, on any host.
    let mut names: Vec<&str> = (site.skills().iter())
        .chain(site.yanked())
        .chain(site.older())
        .map(|s| s.name.as_str())
        .filter(|n| !n.is_empty() && !n.contains('/') && *n != "." && *n != "..")
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        if let Some(answer) = crate::web::api::skill_answer(site, name) {
            let path = format!("{SKILL_API}{name}");
            write_one(dir, &path, answer.to_string().as_bytes(), false, &mut done)?;
        }
    }
    sync_all_content(dir).map_err(|e| Error::io(&shown, e))?;
    for (path, res) in site.resources().filter(|(p, _)| is_index(p)) {
        write_one(dir, path, &res.body, true, &mut done)?;
    }
    Ok(done)
}

/// Writes one file of the site under `dir` (an index synced).
fn write_one(dir: &Path, path: &str, body: &[u8], index: bool, done: &mut Exported) -> Result<()> {
    {
        let dest = dir.join(path);
        let dest_shown = dest.display().to_string();
        let parent = dest.parent().expect("a path under dir has a parent");
        fs::create_dir_all(parent).map_err(|e| Error::io(parent.display().to_string(), e))?;
        // 0644 whatever the umask: a site is meant to be served. Only the indexes are synced
        // (after every other file, above): an index never names a file a crash lost.
        let durability = if index {
            Durability::File
        } else {
            Durability::Unsynced
        };
        AtomicWrite::new(0o644)
            .durability(durability)
            .write(&dest, body)
            .map_err(|e| Error::io(&dest_shown, e))?;
        done.files += 1;
        done.bytes += body.len() as u64;
    }
    Ok(())
}

/// Flushes everything written so far under `dir` to disk: `syncfs` of its file system on
/// Linux, `sync` elsewhere.
fn sync_all_content(dir: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let folder = fs::File::open(dir)?;
        rustix::fs::syncfs(&folder).map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        rustix::fs::sync();
        Ok(())
    }
}

/// [`export`], then, with `signing`, the signed index statement beside the index
/// ([`write_for_export`](crate::write_for_export)), made now: what `skillcat export
/// --sign-index` writes. Blocking.
pub fn export_signed(
    site: &Site,
    dir: &Path,
    force: bool,
    signing: Option<&crate::IndexSigning>,
) -> Result<Exported> {
    let done = export(site, dir, force)?;
    if let Some(signing) = signing {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        crate::write_for_export(dir, signing, now)?;
    }
    Ok(done)
}
