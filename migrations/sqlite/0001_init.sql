-- skillcat registry schema, version 1.
--
-- Applied by src/registry/schema.rs inside one BEGIN IMMEDIATE transaction that also sets
-- PRAGMA application_id and PRAGMA user_version = 1. A released migration is never edited or
-- removed: schema changes are new files (0002_….sql), applied in order.
--
-- Tables are STRICT (column types are enforced). Published content is immutable: triggers
-- refuse to change or delete a version, its files or a blob; only `version.yanked` and the
-- `tag` pointers move.

-- File contents, addressed and deduplicated by sha256. An ordinary rowid table, so that
-- incremental blob I/O (sqlite3_blob_open) can stream `content`.
CREATE TABLE blob (
    id      INTEGER PRIMARY KEY,
    sha256  BLOB    NOT NULL UNIQUE CHECK (length(sha256) = 32),
    size    INTEGER NOT NULL CHECK (size >= 0),
    content BLOB    NOT NULL CHECK (length(content) = size)
) STRICT;

-- One row per skill name (the NFKC-normalised frontmatter name).
CREATE TABLE skill (
    id   INTEGER PRIMARY KEY,
    name TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64)
) STRICT;

-- One row per published name@version. `version` is canonical semver text; ordering is
-- semver precedence, computed in Rust. `skill_digest` is the raw 32-byte skill digest.
CREATE TABLE version (
    id           INTEGER PRIMARY KEY,
    skill_id     INTEGER NOT NULL REFERENCES skill (id),
    version      TEXT    NOT NULL CHECK (length(version) BETWEEN 1 AND 256),
    skill_digest BLOB    NOT NULL CHECK (length(skill_digest) = 32),
    published_at INTEGER NOT NULL,
    yanked       INTEGER NOT NULL DEFAULT 0 CHECK (yanked IN (0, 1)),
    description  TEXT    NOT NULL,
    UNIQUE (skill_id, version),
    UNIQUE (skill_id, id)
) STRICT;

-- The large text of each version, kept out of `version` so its rows stay small: resolving,
-- listing and searching never read a body. `manifest` is the canonical manifest JSON (what a
-- signed statement's manifest digest covers); `body` the document's Markdown body.
CREATE TABLE version_text (
    version_id INTEGER PRIMARY KEY REFERENCES version (id),
    manifest   TEXT    NOT NULL,
    body       TEXT    NOT NULL
) STRICT;

-- The files of a version. `path_fold` is the case- and Unicode-folded path: two paths that
-- would name one file on a case-insensitive file system cannot both belong to a version.
CREATE TABLE file (
    version_id INTEGER NOT NULL REFERENCES version (id),
    path       TEXT    NOT NULL CHECK (length(path) >= 1),
    path_fold  TEXT    NOT NULL,
    blob_id    INTEGER NOT NULL REFERENCES blob (id),
    executable INTEGER NOT NULL CHECK (executable IN (0, 1)),
    PRIMARY KEY (version_id, path),
    UNIQUE (version_id, path_fold)
) STRICT, WITHOUT ROWID;

CREATE INDEX file_blob ON file (blob_id);

-- Detached signatures (the .minisig text), one per version and signing key.
CREATE TABLE signature (
    version_id INTEGER NOT NULL REFERENCES version (id),
    key_id     TEXT    NOT NULL CHECK (length(key_id) = 16),
    format     TEXT    NOT NULL DEFAULT 'minisign',
    signature  TEXT    NOT NULL,
    PRIMARY KEY (version_id, key_id)
) STRICT, WITHOUT ROWID;

-- Mutable pointers from a skill to one of its own versions. `latest` (the highest
-- non-yanked version) is maintained by every publish, yank and unyank.
CREATE TABLE tag (
    skill_id   INTEGER NOT NULL REFERENCES skill (id),
    tag        TEXT    NOT NULL CHECK (length(tag) BETWEEN 1 AND 64),
    version_id INTEGER NOT NULL,
    PRIMARY KEY (skill_id, tag),
    FOREIGN KEY (skill_id, version_id) REFERENCES version (skill_id, id)
) STRICT, WITHOUT ROWID;

CREATE INDEX tag_version ON tag (version_id);

-- Full-text index: one row per skill (rowid = skill.id) holding its `latest` version's name,
-- description and body, rewritten in the transaction that moves `latest`. Contentless (the
-- text lives in `version`), with deletes, so a row can be replaced.
CREATE VIRTUAL TABLE skill_search USING fts5 (
    name,
    description,
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER version_content_immutable
BEFORE UPDATE OF id, skill_id, version, skill_digest, published_at, description ON version
BEGIN
    SELECT RAISE(ABORT, 'a published version is immutable (only yanked may change)');
END;

CREATE TRIGGER version_never_deleted BEFORE DELETE ON version
BEGIN
    SELECT RAISE(ABORT, 'a published version is never deleted (yank it instead)');
END;

CREATE TRIGGER version_text_immutable BEFORE UPDATE ON version_text
BEGIN
    SELECT RAISE(ABORT, 'a published version is immutable (only yanked may change)');
END;

CREATE TRIGGER version_text_never_deleted BEFORE DELETE ON version_text
BEGIN
    SELECT RAISE(ABORT, 'a published version is never deleted (yank it instead)');
END;

CREATE TRIGGER file_immutable BEFORE UPDATE ON file
BEGIN
    SELECT RAISE(ABORT, 'the files of a published version are immutable');
END;

CREATE TRIGGER file_never_deleted BEFORE DELETE ON file
BEGIN
    SELECT RAISE(ABORT, 'the files of a published version are never deleted');
END;

CREATE TRIGGER blob_immutable BEFORE UPDATE ON blob
BEGIN
    SELECT RAISE(ABORT, 'a blob is immutable (it is addressed by its sha256)');
END;
