//! The values a frontmatter holds: text, lists and maps of text — nothing else.
//!
//! The reader is StrictYAML-like: every scalar stays the text it was written as
//! (`1.10` is `"1.10"`, `true` is `"true"`), so there are no numbers, booleans or
//! nulls to misread.

use std::fmt;

/// One frontmatter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar, exactly as written (quotes removed, escapes applied, block scalars folded).
    Text(String),
    /// A block (`- a`) or flow (`[a, b]`) sequence.
    List(Vec<Value>),
    /// A block or flow mapping, in document order.
    Map(Map),
}

impl Value {
    /// The text of a scalar, or `None` for a list or map.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The items of a list, or `None`.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// The entries of a map, or `None`.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// This value as JSON: text as a string, lists as arrays, maps as objects (document order).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Text(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Map(m) => m.to_json(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(s) => f.write_str(s),
            other => write!(f, "{}", other.to_json()),
        }
    }
}

/// A mapping with text keys, in document order. Keys are unique (the reader refuses duplicates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Map {
    entries: Vec<(String, Value)>,
}

impl Map {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Adds an entry; returns `false` (and changes nothing) when the key is already present.
    pub fn insert(&mut self, key: String, value: Value) -> bool {
        if self.contains_key(&key) {
            return false;
        }
        self.entries.push((key, value));
        true
    }

    /// Adds an entry without looking for a duplicate: for a builder that already refused them.
    pub(crate) fn push_unchecked(&mut self, key: String, value: Value) {
        self.entries.push((key, value));
    }

    /// Entries in document order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Keys in document order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// This map as a JSON object, in document order.
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        for (k, v) in &self.entries {
            obj.insert(k.clone(), v.to_json());
        }
        serde_json::Value::Object(obj)
    }
}
