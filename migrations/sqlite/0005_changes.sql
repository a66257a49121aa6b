-- skillcat registry schema, version 5: the change feed (`GET /api/v1/changes`, `registry copy`).
--
-- One row per change that readers of the registry must learn of: a version published (or a
-- signature added to one), yanked, unyanked; inserted in the transaction of the write itself,
-- so a row exists exactly when its write does. `seq` is in commit order: SQLite has one
-- writer at a time, and a rowid is one more than the largest; rows are never deleted, so a
-- number is never reused. Append only.
CREATE TABLE change (
    seq     INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,                -- Unix seconds
    name    TEXT    NOT NULL,
    version TEXT    NOT NULL,
    action  TEXT    NOT NULL CHECK (action IN ('publish', 'yank', 'unyank'))
) STRICT;

CREATE TRIGGER change_never_updated BEFORE UPDATE ON change
BEGIN
    SELECT RAISE(ABORT, 'the change feed is append-only');
END;

CREATE TRIGGER change_never_deleted BEFORE DELETE ON change
BEGIN
    SELECT RAISE(ABORT, 'the change feed is append-only');
END;

-- A registry written before this version: every version it holds, as published in the order
-- it was (then by id), and each yanked one yanked after; a reader of the feed from 0 learns the
-- registry as it is.
INSERT INTO change (at, name, version, action)
SELECT v.published_at, s.name, v.version, 'publish'
FROM version v JOIN skill s ON s.id = v.skill_id
ORDER BY v.published_at, v.id;

INSERT INTO change (at, name, version, action)
SELECT v.published_at, s.name, v.version, 'yank'
FROM version v JOIN skill s ON s.id = v.skill_id
WHERE v.yanked = 1
ORDER BY v.published_at, v.id;
