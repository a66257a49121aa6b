-- skillcat registry schema for PostgreSQL, version 1.
--
-- Applied by crates/skillcat-registry/src/store/postgres/migrate.rs in one transaction,
-- under pg_advisory_lock (one migrator at a time), and recorded in `schema_migrations`. A
-- released migration is never edited or removed: schema changes are new files, applied in
-- order (expand, then contract, so replicas of two releases can share a database meanwhile).
--
-- The same registry as the SQLite schema (migrations/sqlite/), in PostgreSQL's types. Published
-- content is immutable: triggers refuse to change or delete a version, its files or a blob;
-- only `version.yanked` and the `tag` pointers move. The refusals are SQLSTATE 23000, so they
-- read as constraint violations.

-- Settings every replica shares: `blobs` = the object storage URL, when blobs live there.
CREATE TABLE setting (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- File contents, addressed and deduplicated by sha256. `content` is NULL when the bytes live
-- in object storage (under the same sha256); they are written there before the row commits.
CREATE TABLE blob (
    sha256  bytea  PRIMARY KEY CHECK (length(sha256) = 32),
    size    bigint NOT NULL CHECK (size >= 0),
    content bytea  CHECK (content IS NULL OR length(content) = size)
);

-- One row per skill name; `skeleton` is its UTS #39 confusable skeleton (look-alikes refused).
CREATE TABLE skill (
    id       bigserial PRIMARY KEY,
    name     text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64),
    skeleton text NOT NULL
);

CREATE INDEX skill_skeleton ON skill (skeleton);

-- One row per published name@version; ordering is semver precedence, computed in Rust.
CREATE TABLE version (
    id           bigserial PRIMARY KEY,
    skill_id     bigint  NOT NULL REFERENCES skill (id),
    version      text    NOT NULL CHECK (length(version) BETWEEN 1 AND 256),
    skill_digest bytea   NOT NULL CHECK (length(skill_digest) = 32),
    published_at bigint  NOT NULL,
    yanked       boolean NOT NULL DEFAULT false,
    description  text    NOT NULL,
    manifest     text    NOT NULL,
    body         text    NOT NULL,
    UNIQUE (skill_id, version),
    UNIQUE (skill_id, id)
);

-- The files of a version; `path_fold` is the case- and Unicode-folded path.
CREATE TABLE file (
    version_id bigint  NOT NULL REFERENCES version (id),
    path       text    NOT NULL CHECK (length(path) >= 1),
    path_fold  text    NOT NULL,
    sha256     bytea   NOT NULL REFERENCES blob (sha256),
    executable boolean NOT NULL,
    PRIMARY KEY (version_id, path),
    UNIQUE (version_id, path_fold)
);

CREATE INDEX file_blob ON file (sha256);

-- Detached signatures (the .minisig text), one per version and signing key.
CREATE TABLE signature (
    version_id bigint NOT NULL REFERENCES version (id),
    key_id     text   NOT NULL CHECK (length(key_id) = 16),
    format     text   NOT NULL DEFAULT 'minisign',
    signature  text   NOT NULL,
    PRIMARY KEY (version_id, key_id)
);

-- Mutable pointers from a skill to one of its own versions; `latest` = highest non-yanked.
CREATE TABLE tag (
    skill_id   bigint NOT NULL REFERENCES skill (id),
    tag        text   NOT NULL CHECK (length(tag) BETWEEN 1 AND 64),
    version_id bigint NOT NULL,
    PRIMARY KEY (skill_id, tag),
    FOREIGN KEY (skill_id, version_id) REFERENCES version (skill_id, id)
);

-- Full-text search: one row per skill with a `latest`, its name (weight A), description (B)
-- and body (C), rewritten in the transaction that moves `latest`. The `simple` configuration:
-- no stemming, no stop words, whatever the language.
CREATE TABLE skill_search (
    skill_id bigint   PRIMARY KEY REFERENCES skill (id),
    document tsvector NOT NULL
);

CREATE INDEX skill_search_document ON skill_search USING gin (document);

-- What the audit found in a version published through `serve --publish` (a JSON array).
CREATE TABLE version_findings (
    version_id bigint PRIMARY KEY REFERENCES version (id),
    findings   text   NOT NULL CHECK (jsonb_typeof(findings::jsonb) = 'array')
);

-- The audit log: one row per write made over the network, in the write's transaction.
CREATE TABLE audit (
    id      bigserial PRIMARY KEY,
    at      bigint NOT NULL,
    token   text   NOT NULL,
    action  text   NOT NULL CHECK (action IN ('publish', 'signature', 'yank', 'unyank')),
    name    text   NOT NULL,
    version text   NOT NULL,
    digest  bytea  NOT NULL CHECK (length(digest) = 32),
    client  text   NOT NULL
);

-- The change feed, in commit order: `seq` is taken under pg_advisory_xact_lock held to the
-- commit, so no transaction commits a lower `seq` after a reader saw a higher one.
CREATE TABLE change (
    seq     bigint PRIMARY KEY CHECK (seq > 0),
    name    text   NOT NULL,
    version text   NOT NULL,
    action  text   NOT NULL CHECK (action IN ('publish', 'yank', 'unyank')),
    at      bigint NOT NULL
);

CREATE FUNCTION skillcat_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER version_content_immutable BEFORE UPDATE ON version FOR EACH ROW
    WHEN ((OLD.id, OLD.skill_id, OLD.version, OLD.skill_digest, OLD.published_at,
           OLD.description, OLD.manifest, OLD.body)
          IS DISTINCT FROM
          (NEW.id, NEW.skill_id, NEW.version, NEW.skill_digest, NEW.published_at,
           NEW.description, NEW.manifest, NEW.body))
    EXECUTE FUNCTION skillcat_refuse('a published version is immutable (only yanked may change)');

CREATE TRIGGER version_never_deleted BEFORE DELETE ON version FOR EACH ROW
    EXECUTE FUNCTION skillcat_refuse('a published version is never deleted (yank it instead)');

CREATE TRIGGER file_immutable BEFORE UPDATE ON file FOR EACH ROW
    EXECUTE FUNCTION skillcat_refuse('the files of a published version are immutable');

CREATE TRIGGER file_never_deleted BEFORE DELETE ON file FOR EACH ROW
    EXECUTE FUNCTION skillcat_refuse('the files of a published version are never deleted');

CREATE TRIGGER blob_immutable BEFORE UPDATE ON blob FOR EACH ROW
    EXECUTE FUNCTION skillcat_refuse('a blob is immutable (it is addressed by its sha256)');

CREATE TRIGGER audit_never_updated BEFORE UPDATE OR DELETE ON audit FOR EACH ROW
    EXECUTE FUNCTION skillcat_refuse('the audit log is append-only');

CREATE TRIGGER change_never_updated BEFORE UPDATE OR DELETE ON change FOR EACH ROW
    EXECUTE FUNCTION skillcat_refuse('the change feed is append-only');

-- TRUNCATE skips row triggers: refused by statement triggers.
CREATE TRIGGER version_never_truncated BEFORE TRUNCATE ON version
    EXECUTE FUNCTION skillcat_refuse('a published version is never deleted (yank it instead)');
CREATE TRIGGER file_never_truncated BEFORE TRUNCATE ON file
    EXECUTE FUNCTION skillcat_refuse('the files of a published version are never deleted');
CREATE TRIGGER audit_never_truncated BEFORE TRUNCATE ON audit
    EXECUTE FUNCTION skillcat_refuse('the audit log is append-only');
