-- skillcat registry schema, version 2: the audit log of a central registry.
--
-- One row per write made over the network (`skillcat serve --publish`), inserted in the same
-- transaction as the write itself, so a row exists exactly when its write does. Local writes
-- (`skillcat registry publish`) are made by whoever holds the file and are not recorded.
-- Append only: triggers refuse to change or delete a row.
CREATE TABLE audit (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,                -- Unix seconds
    token   TEXT    NOT NULL,                -- the token's name, never the token
    action  TEXT    NOT NULL CHECK (action IN ('publish', 'signature', 'yank', 'unyank')),
    name    TEXT    NOT NULL,
    version TEXT    NOT NULL,
    digest  BLOB    NOT NULL CHECK (length(digest) = 32),  -- the version's skill digest
    client  TEXT    NOT NULL                 -- the client's address
) STRICT;

CREATE TRIGGER audit_never_updated BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER audit_never_deleted BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
