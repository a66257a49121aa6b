-- skillcat registry schema, version 3: each skill name's confusable skeleton.
--
-- `skeleton` is the Unicode (UTS #39) confusable skeleton of the lower-cased name
-- (src/document/lookalike.rs): names that render alike, such as `pdf-forms` and `pdf-fоrms`
-- with a Cyrillic `о`, have the same one. A publish of a new name looks its skeleton up (one
-- lookup in `skill_skeleton`) and refuses the name when another skill has it. Not UNIQUE: a
-- registry written before this version may already hold two look-alikes, and keeps them.
--
-- SQL cannot compute a skeleton: the rows already there are filled in by the Rust step of the
-- migration, in the same transaction (src/registry/schema.rs, `fill_skeletons`).
ALTER TABLE skill ADD COLUMN skeleton TEXT;

CREATE INDEX skill_skeleton ON skill (skeleton);
