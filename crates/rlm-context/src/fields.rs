//! Field names of records: every top-level key first, then one level of dot paths, each in
//! first-seen order.
//!
//! Keys come first because they are the shape of a record: one field holding a wide map (a
//! schema's `properties`, an id-keyed dictionary) has hundreds of children, and were keys and
//! paths one list under one cap, its paths would push the later keys out.

use std::collections::HashSet;

/// Top-level keys and dot paths, each list capped, so a record with thousands of keys stays cheap.
#[derive(Debug, Default)]
pub(crate) struct FieldSet {
    keys: CappedNames,
    paths: CappedNames,
    limit: usize,
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
        }
    }

    /// A top-level key (or a CSV column).
    pub(crate) fn insert_key(&mut self, key: &str) {
        self.keys.insert(key);
    }

    /// `parent.child`, for a key `parent` holding an object with the key `child`.
    pub(crate) fn insert_path(&mut self, parent: &str, child: &str) {
        self.paths.insert(&format!("{parent}.{child}"));
    }

    /// Adds the fields of one record: its keys, and `key.child` for keys holding an object.
    pub(crate) fn insert_record(&mut self, record: &serde_json::Value) {
        let Some(object) = record.as_object() else {
            return;
        };
        for (key, value) in object {
            self.insert_key(key);
            if let Some(children) = value.as_object() {
                for child in children.keys() {
                    self.insert_path(key, child);
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Fields {
        let Self {
            keys,
            mut paths,
            limit,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(json: &str) -> serde_json::Value {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn keys_first_then_one_level_of_paths_in_first_seen_order() {
        let mut fields = FieldSet::new(100);
        fields.insert_record(&record(r#"{"b":1,"a":{"x":{"deep":true},"y":2},"e":{}}"#));
        fields.insert_record(&record(r#"{"a":{"z":0},"sparse":"only here","b":3}"#));
        let fields = fields.finish();
        assert_eq!(fields.names, ["b", "a", "e", "sparse", "a.x", "a.y", "a.z"]);
        assert!(!fields.truncated);
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
