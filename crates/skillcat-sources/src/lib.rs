//! Every kind of skill source, opened from one string.
//!
//! The core holds the directory and archive sources; the registry, HTTP and OCI sources live in
//! the crates above it. This crate knows them all and picks one from how a source is written,
//! and validates what a list of paths and sources names ([`validate_paths`]: one report per
//! skill root, whatever holds it).

use std::sync::Arc;

pub mod validate;

pub use validate::validate_paths;

use skillcat_core::archive::{self, ArchiveLimits};
use skillcat_core::error::{Error, Result};
use skillcat_core::source::{ArchiveSource, DirOptions, DirSource, OpenOptions, Source};
use skillcat_registry::RegistrySource;
use skillcat_remote::{http, oci};

/// Opens a source from one string with default options (see [`open_with`]).
pub fn open(spec: &str) -> Result<Arc<dyn Source>> {
    open_with(spec, &OpenOptions::default())
}

/// Opens a source from one string: a directory (a skill or a tree of skills), an archive
/// (`.tar`, `.tar.gz`/`.tgz`, `.zip`, told apart by magic bytes first, extension second), a
/// SQLite registry (`x.db`, `x.sqlite`, `sqlite:PATH`, or any file with the SQLite magic), an
/// `http(s)://` URL, or an `oci://HOST/REPO[:TAG|@sha256:…]` reference.
pub fn open_with(spec: &str, opts: &OpenOptions) -> Result<Arc<dyn Source>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return Ok(Arc::new(http::HttpSource::new(
            spec,
            http::HttpOptions::from(opts),
        )?));
    }
    if spec.starts_with(oci_scheme()) {
        return Ok(Arc::new(oci::OciSource::new(
            spec,
            oci::OciOptions::from(opts),
        )?));
    }
    if let Some(db) = spec.strip_prefix("sqlite:") {
        return Ok(Arc::new(RegistrySource::open(db)?));
    }
    let path = std::path::Path::new(spec);
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(spec.to_string()),
        _ => Error::io(spec, e),
    })?;
    if meta.is_dir() {
        return Ok(Arc::new(DirSource::open(path, DirOptions::default())?));
    }
    if meta.is_file() {
        let mut head = [0u8; archive::SNIFF_LEN];
        let n = read_head(path, &mut head).map_err(|e| Error::io(spec, e))?;
        if skillcat_registry::is_registry_file(path, &head[..n]) {
            return Ok(Arc::new(RegistrySource::open(path)?));
        }
        if let Some(kind) = archive::sniff(path, &head[..n]) {
            return Ok(Arc::new(ArchiveSource::open_as(
                kind,
                path,
                ArchiveLimits::default(),
            )?));
        }
    }
    Err(Error::UnsupportedSource(spec.to_string()))
}

/// The scheme of an OCI reference (`oci://HOST/REPO[:TAG]`).
const fn oci_scheme() -> &'static str {
    "oci://"
}

fn read_head(path: &std::path::Path, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
