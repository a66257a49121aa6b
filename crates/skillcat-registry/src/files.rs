//! What [`RegistrySource`] reads: roots resolved to versions,
//! a version's file list, a file's bytes (hashed again on every read).

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, params};

use super::{Registry, RegistryError, Result};
use crate::digest;
use crate::path::FileEntry;

/// Blobs up to this size are read with the row; larger ones through incremental blob I/O.
const INLINE_BLOB: i64 = 64 * 1024;

/// A root resolved to one version (what a [`RegistrySource`](crate::RegistrySource)
/// pins): the version's row in its store, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The version's id in the store that resolved it (meaningless in another).
    pub version_id: i64,
    /// The skill's name.
    pub name: String,
    /// The version.
    pub version: String,
    /// Whether that version is yanked (only a `NAME@VERSION` root resolves to one).
    pub yanked: bool,
}

impl Registry {
    /// The `latest` version of every skill, by name in byte order.
    pub(crate) fn pins(&self) -> Result<Vec<Pin>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT v.id, s.name, v.version, v.yanked FROM tag t JOIN skill s ON s.id = t.skill_id \
                 JOIN version v ON v.id = t.version_id WHERE t.tag = 'latest' ORDER BY s.name",
            )
            .map_err(|e| self.sql(e))?;
        stmt.query_map([], |r| {
            Ok(Pin {
                version_id: r.get(0)?,
                name: r.get(1)?,
                version: r.get(2)?,
                yanked: r.get(3)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// `name` resolved to its `latest` version, or `name@version` to that version (yanked or not).
    pub(crate) fn resolve(&self, name: &str, version: Option<&str>) -> Result<Option<Pin>> {
        let (sql, args): (&str, Vec<&str>) = match version {
            None => (
                "SELECT v.id, s.name, v.version, v.yanked FROM skill s \
                 JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
                 JOIN version v ON v.id = t.version_id WHERE s.name = ?1",
                vec![name],
            ),
            Some(version) => (
                "SELECT v.id, s.name, v.version, v.yanked FROM skill s \
                 JOIN version v ON v.skill_id = s.id \
                 WHERE s.name = ?1 AND v.version = ?2",
                vec![name, version],
            ),
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sql(e))?;
        stmt.query_row(rusqlite::params_from_iter(args), |r| {
            Ok(Pin {
                version_id: r.get(0)?,
                name: r.get(1)?,
                version: r.get(2)?,
                yanked: r.get(3)?,
            })
        })
        .optional()
        .map_err(|e| self.sql(e))
    }

    /// The files of a version, by path in byte order.
    pub(crate) fn version_files(&self, version_id: i64) -> Result<Vec<FileEntry>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.path, b.size, f.executable FROM file f JOIN blob b ON b.id = f.blob_id \
                 WHERE f.version_id = ?1 ORDER BY f.path",
            )
            .map_err(|e| self.sql(e))?;
        stmt.query_map([version_id], |r| {
            Ok(FileEntry {
                path: r.get(0)?,
                size: r.get::<_, i64>(1)? as u64,
                executable: r.get(2)?,
                private: false,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// The bytes of one file of a version, hashed again: a blob that does not hash to its
    /// address is [`RegistryError::Corrupt`]. `None` when the version has no such file.
    pub(crate) fn read_file(&self, version_id: i64, path: &str) -> Result<Option<Bytes>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT b.id, b.sha256, CASE WHEN b.size <= ?3 THEN b.content END \
                 FROM file f JOIN blob b ON b.id = f.blob_id \
                 WHERE f.version_id = ?1 AND f.path = ?2",
            )
            .map_err(|e| self.sql(e))?;
        type Row = (i64, Vec<u8>, Option<Vec<u8>>);
        let row: Option<Row> = stmt
            .query_row(params![version_id, path, INLINE_BLOB], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((id, sha, inline)) = row else {
            return Ok(None);
        };
        let bytes = match inline {
            Some(bytes) => bytes,
            None => read_blob(&self.conn, id).map_err(|e| self.sql(e))?,
        };
        let actual = digest::sha256(&bytes);
        if actual[..] != sha[..] {
            return Err(RegistryError::Corrupt {
                path: self.shown.clone(),
                what: format!("file {path} (blob {id})"),
                expected: format!("sha256:{}", crate::digest::to_hex(&sha)),
                actual: format!("sha256:{}", crate::digest::to_hex(actual)),
            });
        }
        Ok(Some(Bytes::from(bytes)))
    }

    /// Every file of `name@version` (yanked or not) with its bytes, by path in byte order, each
    /// hashed again as each file read is: what a served registry packs an
    /// older version's archive from, on demand. `None` when there is no such version.
    pub fn version_contents(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<Vec<(FileEntry, Bytes)>>> {
        let Some(pin) = self.resolve(name, Some(version))? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for f in self.version_files(pin.version_id)? {
            let bytes = self
                .read_file(pin.version_id, &f.path)?
                .ok_or_else(|| RegistryError::NotFound(format!("{name}@{version}/{}", f.path)))?;
            out.push((f, bytes));
        }
        Ok(Some(out))
    }
}

/// Reads a whole blob through incremental blob I/O.
fn read_blob(conn: &Connection, id: i64) -> rusqlite::Result<Vec<u8>> {
    let blob = conn.blob_open(rusqlite::MAIN_DB, "blob", "content", id, true)?;
    let mut buf = vec![0u8; blob.len()];
    blob.read_at_exact(&mut buf, 0)?;
    Ok(buf)
}
