//! Field names of records: top-level keys plus one level of dot paths, in first-seen order.

use std::collections::HashSet;

/// An ordered set of field names with a cap, so a record with thousands of keys stays cheap.
#[derive(Debug, Default)]
pub(crate) struct FieldSet {
    order: Vec<String>,
    seen: HashSet<String>,
    limit: usize,
    /// Distinct names not kept because the cap was reached.
    pub(crate) dropped: u64,
}

impl FieldSet {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    pub(crate) fn insert(&mut self, name: String) {
        if self.seen.contains(&name) {
            return;
        }
        if self.order.len() >= self.limit {
            // Count each dropped name once; remembering them keeps the count honest.
            if self.seen.len() < self.limit.saturating_mul(4) {
                self.seen.insert(name);
                self.dropped += 1;
            }
            return;
        }
        self.seen.insert(name.clone());
        self.order.push(name);
    }

    /// Adds the fields of one record: keys, and `key.child` for keys holding a non-empty object.
    pub(crate) fn insert_record(&mut self, record: &serde_json::Value) {
        let Some(object) = record.as_object() else {
            return;
        };
        for (key, value) in object {
            match value.as_object() {
                Some(children) if !children.is_empty() => {
                    for child in children.keys() {
                        self.insert(format!("{key}.{child}"));
                    }
                }
                _ => self.insert(key.clone()),
            }
        }
    }

    pub(crate) fn into_vec(self) -> Vec<String> {
        self.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_union_in_first_seen_order_and_never_deeper_than_one_level() {
        let mut fields = FieldSet::new(100);
        let first: serde_json::Value =
            serde_json::from_str(r#"{"b":1,"a":{"x":{"deep":true},"y":2},"e":{}}"#).unwrap();
        let second: serde_json::Value =
            serde_json::from_str(r#"{"a":{"z":0},"sparse":"only here","b":3}"#).unwrap();
        fields.insert_record(&first);
        fields.insert_record(&second);
        assert_eq!(fields.into_vec(), ["b", "a.x", "a.y", "e", "a.z", "sparse"]);
    }

    #[test]
    fn the_cap_counts_what_it_drops() {
        let mut fields = FieldSet::new(2);
        for name in ["a", "b", "c", "d", "c"] {
            fields.insert(name.to_owned());
        }
        assert_eq!(fields.dropped, 2);
        assert_eq!(fields.into_vec(), ["a", "b"]);
    }
}
