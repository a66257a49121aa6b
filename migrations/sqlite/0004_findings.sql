-- skillcat registry schema, version 4: what the audit found in each version published
-- through the central registry (`skillcat serve --publish`).
--
-- One row per audited version, written in the transaction of its publish: `findings` is the
-- JSON array of the audit's findings (`skill`, `path`, `line`, `column`, `rule`, `severity`,
-- `message`; docs/audit.md), `[]` when it found none. A version published before this
-- version, or written to a registry file directly (`skillcat registry publish`), has no row:
-- it was not audited, which the API says as such.
CREATE TABLE version_findings (
    version_id INTEGER PRIMARY KEY REFERENCES version (id),
    findings   TEXT    NOT NULL CHECK (json_valid(findings) AND json_type(findings) = 'array')
) STRICT;
