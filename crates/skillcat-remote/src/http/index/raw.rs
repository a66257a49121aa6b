//! The index as it is read off the wire: a streaming pass over the JSON that builds only the
//! fields an entry uses and skips every other value without building it. A value of the wrong
//! JSON type becomes [`Str::Wrong`] (and so on) instead of an error, so one bad entry never
//! hides the others; only a body that is not JSON at all (or nested deeper than serde_json's
//! recursion limit) fails as a whole.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{Extra, ExtraFile};
use crate::digest::parse_digest;
use crate::path::check_canonical;

/// A field expected to be a string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) enum Str {
    /// Not there.
    #[default]
    Absent,
    /// `null`.
    Null,
    /// A string.
    Got(String),
    /// Anything else (skipped unbuilt).
    Wrong,
}

impl Str {
    /// The string, if it is one.
    pub(super) fn into_option(self) -> Option<String> {
        match self {
            Str::Got(s) => Some(s),
            _ => None,
        }
    }
}

/// Consumes whatever value comes, building nothing.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the scalar and container arms of a lenient visitor: `$wrong` for any JSON type
/// the field does not take (containers are consumed unbuilt).
macro_rules! lenient_scalars {
    ($wrong:expr, $null:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($wrong)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($wrong)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($wrong)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($wrong)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($null)
        }
    };
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(Str::Wrong, Str::Null);
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Str, E> {
        Ok(Str::Got(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Str, E> {
        Ok(Str::Got(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Str, A::Error> {
        skip_seq(seq).map(|()| Str::Wrong)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Str, A::Error> {
        skip_map(map).map(|()| Str::Wrong)
    }
}

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str, D::Error> {
        d.deserialize_any(StrVisitor)
    }
}

/// A field expected to be an array of strings (a v0.1 entry's `files`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) enum StrList {
    #[default]
    Absent,
    Got(Vec<String>),
    /// An array with an item that is not a string (the rest is skipped unbuilt).
    NotAllStrings,
    /// Not an array.
    Wrong,
}

struct StrListVisitor;

impl<'de> Visitor<'de> for StrListVisitor {
    type Value = StrList;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(StrList::Wrong, StrList::Wrong);
    fn visit_str<E: de::Error>(self, _: &str) -> Result<StrList, E> {
        Ok(StrList::Wrong)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrList, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Str>()? {
            match item {
                Str::Got(s) => out.push(s),
                _ => return skip_seq(seq).map(|()| StrList::NotAllStrings),
            }
        }
        Ok(StrList::Got(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<StrList, A::Error> {
        skip_map(map).map(|()| StrList::Wrong)
    }
}

impl<'de> Deserialize<'de> for StrList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StrList, D::Error> {
        d.deserialize_any(StrListVisitor)
    }
}

/// Any JSON value, kept only as what it is for a few fields: a u64, a bool, or neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Scalar {
    #[default]
    Absent,
    U64(u64),
    Bool(bool),
    Other,
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(u64::try_from(v).map_or(Scalar::Other, Scalar::U64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::U64(v))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        skip_seq(seq).map(|()| Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar, A::Error> {
        skip_map(map).map(|()| Scalar::Other)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// One item of an index's `skills` array: `None` when it is not a JSON object.
#[derive(Debug, Default)]
pub(super) struct IndexEntry {
    pub name: Str,
    pub kind: Str,
    pub description: Str,
    pub url: Str,
    pub digest: Str,
    pub version: Str,
    pub files: StrList,
    /// skillcat's extra field, when present and well formed.
    pub extra: Option<Extra>,
    /// Why a present `skillcat` field was ignored.
    pub extra_fault: Option<String>,
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Option<IndexEntry>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(None, None);
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut e = IndexEntry::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "name" => e.name = map.next_value()?,
                "type" => e.kind = map.next_value()?,
                "description" => e.description = map.next_value()?,
                "url" => e.url = map.next_value()?,
                "digest" => e.digest = map.next_value()?,
                "version" => e.version = map.next_value()?,
                "files" => e.files = map.next_value()?,
                "skillcat" => match map.next_value::<RawExtra>()?.0 {
                    Ok(x) => {
                        e.extra = Some(x);
                        e.extra_fault = None;
                    }
                    Err(why) => {
                        e.extra = None;
                        e.extra_fault = Some(why);
                    }
                },
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(e))
    }
}

/// An entry, or `None` when the item is not an object.
struct MaybeEntry(Option<IndexEntry>);

impl<'de> Deserialize<'de> for MaybeEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeEntry, D::Error> {
        d.deserialize_any(EntryVisitor).map(MaybeEntry)
    }
}

/// A map key (escapes decoded).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        String::deserialize(d).map(Key)
    }
}

/// skillcat's extra field: the field, or why it is ignored.
struct RawExtra(Result<Extra, String>);

struct ExtraVisitor;

impl<'de> Visitor<'de> for ExtraVisitor {
    type Value = RawExtra;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(
        RawExtra(Err("not an object".into())),
        RawExtra(Err("not an object".into()))
    );
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawExtra, E> {
        Ok(RawExtra(Err("not an object".into())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawExtra, A::Error> {
        skip_seq(seq).map(|()| RawExtra(Err("not an object".into())))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawExtra, A::Error> {
        let mut skill_digest = Str::Absent;
        let mut signature = Str::Absent;
        let mut files: Result<Vec<ExtraFile>, String> = Ok(Vec::new());
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "skill_digest" => skill_digest = map.next_value()?,
                "signature" => signature = map.next_value()?,
                "files" => files = map.next_value::<RawExtraFiles>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let skill_digest = match skill_digest {
            Str::Absent | Str::Null => None,
            Str::Got(d) if parse_digest(&d).is_some() => Some(d),
            _ => {
                return Ok(RawExtra(Err(
                    "skill_digest is not sha256:<64 lowercase hex>".into(),
                )));
            }
        };
        let signature = match signature {
            Str::Absent | Str::Null => None,
            Str::Got(s) => Some(s),
            Str::Wrong => return Ok(RawExtra(Err("signature is not a string or null".into()))),
        };
        Ok(RawExtra(files.map(|files| Extra {
            skill_digest,
            files,
            signature,
        })))
    }
}

impl<'de> Deserialize<'de> for RawExtra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawExtra, D::Error> {
        d.deserialize_any(ExtraVisitor)
    }
}

/// skillcat's per-file list: the files, or why the field is ignored (the rest is skipped).
struct RawExtraFiles(Result<Vec<ExtraFile>, String>);

struct ExtraFilesVisitor;

impl<'de> Visitor<'de> for ExtraFilesVisitor {
    type Value = RawExtraFiles;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(
        RawExtraFiles(Err("files is not an array".into())),
        RawExtraFiles(Ok(Vec::new()))
    );
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawExtraFiles, E> {
        Ok(RawExtraFiles(Err("files is not an array".into())))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawExtraFiles, A::Error> {
        skip_map(map).map(|()| RawExtraFiles(Err("files is not an array".into())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawExtraFiles, A::Error> {
        let mut out = Vec::new();
        while let Some(RawExtraFile(item)) = seq.next_element()? {
            match item {
                Ok(f) => out.push(f),
                Err(why) => return skip_seq(seq).map(|()| RawExtraFiles(Err(why))),
            }
        }
        Ok(RawExtraFiles(Ok(out)))
    }
}

impl<'de> Deserialize<'de> for RawExtraFiles {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawExtraFiles, D::Error> {
        d.deserialize_any(ExtraFilesVisitor)
    }
}

struct RawExtraFile(Result<ExtraFile, String>);

struct ExtraFileVisitor;

const LACKS: &str = "a files item lacks path, digest or size";

impl<'de> Visitor<'de> for ExtraFileVisitor {
    type Value = RawExtraFile;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(
        RawExtraFile(Err(LACKS.into())),
        RawExtraFile(Err(LACKS.into()))
    );
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawExtraFile, E> {
        Ok(RawExtraFile(Err(LACKS.into())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawExtraFile, A::Error> {
        skip_seq(seq).map(|()| RawExtraFile(Err(LACKS.into())))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawExtraFile, A::Error> {
        let (mut path, mut digest) = (Str::Absent, Str::Absent);
        let (mut size, mut executable) = (Scalar::Absent, Scalar::Absent);
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "path" => path = map.next_value()?,
                "digest" => digest = map.next_value()?,
                "size" => size = map.next_value()?,
                "executable" => executable = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let sha256 = digest.into_option().as_deref().and_then(parse_digest);
        let (Str::Got(path), Some(sha256), Scalar::U64(size)) = (path, sha256, size) else {
            return Ok(RawExtraFile(Err(LACKS.into())));
        };
        if let Err(rule) = check_canonical(&path) {
            return Ok(RawExtraFile(Err(format!("file {path:?}: {rule}"))));
        }
        Ok(RawExtraFile(Ok(ExtraFile {
            path,
            sha256,
            size,
            executable: executable == Scalar::Bool(true),
        })))
    }
}

impl<'de> Deserialize<'de> for RawExtraFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawExtraFile, D::Error> {
        d.deserialize_any(ExtraFileVisitor)
    }
}

/// The `skills` array: the first `max` items kept, all counted.
#[derive(Debug, Default)]
pub(super) struct Skills {
    /// The items kept (`None`: not an object).
    pub kept: Vec<Option<IndexEntry>>,
    /// How many items the array has.
    pub total: usize,
}

struct SkillsSeed {
    max: usize,
}

impl<'de> de::DeserializeSeed<'de> for SkillsSeed {
    type Value = Option<Skills>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Skills>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SkillsSeed {
    type Value = Option<Skills>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(None, None);
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut skills = Skills::default();
        while skills.total < self.max {
            match seq.next_element::<MaybeEntry>()? {
                Some(MaybeEntry(e)) => {
                    skills.kept.push(e);
                    skills.total += 1;
                }
                None => return Ok(Some(skills)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            skills.total += 1;
        }
        Ok(Some(skills))
    }
}

/// The whole document.
#[derive(Debug, Default)]
pub(super) struct Top {
    /// Whether it is a JSON object at all.
    pub object: bool,
    pub schema: Str,
    /// `None`: absent or not an array.
    pub skills: Option<Skills>,
    /// skillcat's top-level `"skillcat": {"yanked": [...]}`: a served registry's yanked
    /// versions (`None`: absent or not an array).
    pub yanked: Option<Skills>,
}

/// The top-level `skillcat` object: its `yanked` array, the first `max` items kept.
struct TopExtraSeed {
    max: usize,
}

impl<'de> de::DeserializeSeed<'de> for TopExtraSeed {
    type Value = Option<Skills>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Skills>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopExtraSeed {
    type Value = Option<Skills>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(None, None);
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut yanked = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "yanked" => yanked = map.next_value_seed(SkillsSeed { max: self.max })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(yanked)
    }
}

struct TopVisitor {
    max: usize,
}

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    lenient_scalars!(Top::default(), Top::default());
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Top, E> {
        Ok(Top::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        skip_seq(seq).map(|()| Top::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut top = Top {
            object: true,
            ..Top::default()
        };
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "$schema" => top.schema = map.next_value()?,
                "skills" => top.skills = map.next_value_seed(SkillsSeed { max: self.max })?,
                "skillcat" => top.yanked = map.next_value_seed(TopExtraSeed { max: self.max })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(top)
    }
}

/// Reads `body` in one streaming pass, keeping at most `max` entries.
pub(super) fn parse(body: &[u8], max: usize) -> Result<Top, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let top = de.deserialize_any(TopVisitor { max })?;
    de.end()?;
    Ok(top)
}
