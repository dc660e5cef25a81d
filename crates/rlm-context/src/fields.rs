//! Field names of records: every top-level key first, then one level of dot paths, each in
//! first-seen order.
//!
//! Keys come first because they are the shape of a record: one field holding a wide map (a
//! schema's `properties`, an id-keyed dictionary) has hundreds of children, and were keys and
//! paths one list under one cap, its paths would push the later keys out.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Top-level keys and dot paths, each list capped, so a record with thousands of keys stays cheap.
#[derive(Debug, Default)]
pub(crate) struct FieldSet {
    keys: CappedNames,
    paths: CappedNames,
    limit: usize,
    path_buffer: String,
}

/// The fields as reported: keys, then as many paths as the cap leaves room for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) names: Vec<String>,
    /// Distinct names left out (a lower bound once very many were dropped).
    pub(crate) omitted: u64,
    /// Whether anything was left out.
    pub(crate) truncated: bool,
}

impl FieldSet {
    /// A set reporting at most `limit` names.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            keys: CappedNames::new(limit),
            paths: CappedNames::new(limit),
            limit,
            path_buffer: String::new(),
        }
    }

    /// A top-level key (or a CSV column).
    pub(crate) fn insert_key(&mut self, key: &str) {
        self.keys.insert(key);
    }

    /// `parent.child`, for a key `parent` holding an object with the key `child`.
    pub(crate) fn insert_path(&mut self, parent: &str, child: &str) {
        // Built in a reused buffer: most paths were seen before.
        let mut path = std::mem::take(&mut self.path_buffer);
        path.clear();
        path.push_str(parent);
        path.push('.');
        path.push_str(child);
        self.paths.insert(&path);
        self.path_buffer = path;
    }

    /// Reads one JSON record and adds its fields: its keys, and `key.child` for keys holding
    /// an object. Values are skipped, not built, so sampling many records stays cheap. A record
    /// that is not an object has no fields; text that is not JSON is an error.
    pub(crate) fn insert_json_record(&mut self, json: &[u8]) -> serde_json::Result<()> {
        // Names are kept aside until the whole record has parsed: keys read before a syntax
        // error would be fields of a bad record.
        let mut names = Vec::with_capacity(32);
        // Checked as a whole with SIMD, the text need not be checked string by string.
        match simdutf8::basic::from_utf8(json) {
            Ok(text) => {
                let mut deserializer = serde_json::Deserializer::from_str(text);
                serde::Deserializer::deserialize_any(&mut deserializer, RecordVisitor(&mut names))?;
                deserializer.end()?;
            }
            Err(_) => {
                let mut deserializer = serde_json::Deserializer::from_slice(json);
                serde::Deserializer::deserialize_any(&mut deserializer, RecordVisitor(&mut names))?;
                deserializer.end()?;
            }
        }
        for name in names {
            match name {
                Name::Key(key) => self.insert_key(&key),
                Name::Path(parent, child) => self.insert_path(&parent, &child),
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Fields {
        let Self {
            keys,
            mut paths,
            limit,
            ..
        } = self;
        let room = limit.saturating_sub(keys.order.len());
        let cut = paths.order.len().saturating_sub(room);
        paths.order.truncate(room);
        let omitted = keys.dropped + paths.dropped + cut as u64;
        let mut names = keys.order;
        names.extend(paths.order);
        Fields {
            names,
            omitted,
            truncated: omitted > 0,
        }
    }
}

/// Distinct names in first-seen order, at most `limit` of them.
#[derive(Debug, Default)]
struct CappedNames {
    order: Vec<String>,
    seen: HashSet<String>,
    limit: usize,
    /// Distinct names not kept because the cap was reached.
    dropped: u64,
}

impl CappedNames {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    fn insert(&mut self, name: &str) {
        if self.seen.contains(name) {
            return;
        }
        if self.order.len() >= self.limit {
            // Count each dropped name once; remembering them (up to a point) keeps the count
            // honest without letting a huge map grow the set without bound.
            if self.seen.len() < self.limit.saturating_mul(4) {
                self.seen.insert(name.to_owned());
                self.dropped += 1;
            }
            return;
        }
        self.seen.insert(name.to_owned());
        self.order.push(name.to_owned());
    }
}

/// A field name read from a record, borrowed from the input unless it holds escapes.
enum Name<'de> {
    Key(Cow<'de, str>),
    Path(Cow<'de, str>, Cow<'de, str>),
}

/// Visits a record: its keys, and the keys of objects one level down.
struct RecordVisitor<'a, 'de>(&'a mut Vec<Name<'de>>);

/// Visits the value of the key `parent`: if it is an object, its keys are paths.
struct ChildKeys<'a, 'de> {
    names: &'a mut Vec<Name<'de>>,
    parent: Cow<'de, str>,
}

/// A key, borrowed from the input unless it holds escapes.
struct Key<'de>(Cow<'de, str>);

/// Implements the visits of values that have no keys: scalars are ignored, arrays skipped.
macro_rules! skip_values_without_keys {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(())
        }
    };
}

impl<'de> Visitor<'de> for RecordVisitor<'_, 'de> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            self.0.push(Name::Key(key.clone()));
            map.next_value_seed(ChildKeys {
                names: self.0,
                parent: key,
            })?;
        }
        Ok(())
    }

    skip_values_without_keys!();
}

impl<'de> DeserializeSeed<'de> for ChildKeys<'_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChildKeys<'_, 'de> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(child)) = map.next_key()? {
            self.names.push(Name::Path(self.parent.clone(), child));
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    skip_values_without_keys!();
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string key")
            }

            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_first_then_one_level_of_paths_in_first_seen_order() {
        let mut fields = FieldSet::new(100);
        let records = [
            r#"{"b":1,"a":{"x":{"deep":true},"y":2},"e":{},"l":[{"in":1}]}"#,
            r#"{"a":{"z":0},"sparse":"only here","b":3,"esc\"aped":{"k\u00e9y":null}}"#,
            r#"[{"not":"a record"}]"#,
            r#""a string""#,
        ];
        for record in records {
            fields.insert_json_record(record.as_bytes()).unwrap();
        }
        let fields = fields.finish();
        assert_eq!(
            fields.names,
            [
                "b",
                "a",
                "e",
                "l",
                "sparse",
                "esc\"aped",
                "a.x",
                "a.y",
                "a.z",
                "esc\"aped.kéy"
            ]
        );
        assert!(!fields.truncated);
    }

    #[test]
    fn text_that_is_not_one_json_value_is_an_error_and_adds_nothing() {
        let mut fields = FieldSet::new(100);
        for bad in [
            &b"{\"a\": oops}"[..],
            b"{\"b\":1} trailing",
            b"{\"c\":",
            b"caf\xe9",
        ] {
            assert!(fields.insert_json_record(bad).is_err(), "{bad:?}");
        }
        assert_eq!(fields.finish().names, [""; 0]);
    }

    #[test]
    fn a_wide_map_cannot_push_later_keys_out() {
        let mut fields = FieldSet::new(5);
        fields.insert_key("$schema");
        for child in ["p1", "p2", "p3", "p4", "p5", "p6"] {
            fields.insert_path("properties", child);
        }
        for key in ["properties", "required", "type"] {
            fields.insert_key(key);
        }
        let fields = fields.finish();
        assert_eq!(
            fields.names,
            ["$schema", "properties", "required", "type", "properties.p1"]
        );
        assert_eq!((fields.omitted, fields.truncated), (5, true));
    }

    #[test]
    fn the_cap_counts_what_it_drops() {
        let mut fields = FieldSet::new(2);
        for name in ["a", "b", "c", "d", "c"] {
            fields.insert_key(name);
        }
        let fields = fields.finish();
        assert_eq!(fields.names, ["a", "b"]);
        assert_eq!((fields.omitted, fields.truncated), (2, true));
    }
}
