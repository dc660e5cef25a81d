//! The plan: how to search the store for a question, chosen by the primary model from a
//! description of the store, validated, and overridden by whatever the caller fixed.

use rlm_store::{BufferInfo, SearchMode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::options::{
    DEFAULT_BATCH_SIZE, DEFAULT_TOP_K, MAX_PLAN_BATCH_SIZE, MAX_PLAN_TOP_K, QueryOptions,
};

/// Queries a plan may hold; more are dropped with a note.
pub const MAX_PLAN_QUERIES: usize = 8;
/// Buffers listed one by one in the store description; the rest are counted.
const BUFFERS_DESCRIBED: usize = 60;

/// How the store is searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Plan {
    /// Ranking method.
    pub mode: SearchMode,
    /// Search queries, each run on its own; hits are merged.
    pub queries: Vec<String>,
    /// Chunks analysed at most.
    pub top_k: usize,
    /// Chunks per extractor call.
    pub batch_size: usize,
    /// Buffers searched (names); empty means all.
    pub buffers: Vec<String>,
}

/// Where the plan came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum PlanSource {
    /// The model's plan, valid (`notes` lists what was dropped from it).
    Model {
        /// Parts of the reply that were dropped, e.g. unknown buffers.
        notes: Vec<String>,
    },
    /// The model's plan could not be used; the default plan ran instead.
    Fallback {
        /// Why.
        reason: String,
    },
    /// No plan was asked for (`skip_plan`).
    Skipped,
}

impl PlanSource {
    /// A one-line description for progress output.
    pub fn describe(&self) -> String {
        match self {
            Self::Model { notes } if notes.is_empty() => "planned by the model".to_owned(),
            Self::Model { notes } => format!("planned by the model ({})", notes.join("; ")),
            Self::Fallback { reason } => {
                format!("default plan: the model's plan was unusable ({reason})")
            }
            Self::Skipped => "default plan (planning skipped)".to_owned(),
        }
    }
}

impl Plan {
    /// The plan used without the model: the question as the one query.
    pub fn default_for(question: &str, semantic_available: bool) -> Self {
        Self {
            mode: if semantic_available {
                SearchMode::Hybrid
            } else {
                SearchMode::Bm25
            },
            queries: vec![question.trim().to_owned()],
            top_k: DEFAULT_TOP_K,
            batch_size: DEFAULT_BATCH_SIZE,
            buffers: Vec::new(),
        }
    }

    /// Replaces every choice the caller fixed; returns the names of the fields replaced.
    pub fn apply_options(&mut self, options: &QueryOptions) -> Vec<&'static str> {
        let mut fixed = Vec::new();
        if let Some(mode) = options.mode {
            self.mode = mode;
            fixed.push("mode");
        }
        if let Some(top_k) = options.top_k {
            self.top_k = top_k;
            fixed.push("top_k");
        }
        if let Some(batch_size) = options.batch_size {
            self.batch_size = batch_size;
            fixed.push("batch_size");
        }
        if !options.buffers.is_empty() {
            self.buffers.clone_from(&options.buffers);
            fixed.push("buffers");
        }
        fixed
    }
}

/// The store as the planner sees it: buffers with sizes and chunk counts.
pub fn describe_store(buffers: &[BufferInfo], semantic_available: bool) -> String {
    let chunks: u64 = buffers.iter().map(|buffer| buffer.chunks).sum();
    let bytes: u64 = buffers.iter().map(|buffer| buffer.bytes).sum();
    let mut out = format!(
        "{} buffers, {chunks} chunks, {bytes} bytes. Semantic search: {}.\n",
        buffers.len(),
        if semantic_available {
            "available"
        } else {
            "not available (bm25 only)"
        }
    );
    for buffer in buffers.iter().take(BUFFERS_DESCRIBED) {
        out.push_str(&format!(
            "- {} ({} bytes, {} lines, {} chunks, chunked by {})\n",
            crate::fence::name(&buffer.name),
            buffer.bytes,
            buffer.lines,
            buffer.chunks,
            buffer.strategy
        ));
    }
    if buffers.len() > BUFFERS_DESCRIBED {
        out.push_str(&format!(
            "- … and {} more buffers\n",
            buffers.len() - BUFFERS_DESCRIBED
        ));
    }
    out
}

/// Reads the planner's reply into a plan, or says why it cannot be used. Out-of-range numbers
/// are an error, not clamped; unknown buffers and surplus queries are dropped with a note.
pub fn parse_plan(
    reply: &str,
    known_buffers: &[BufferInfo],
    fallback: &Plan,
) -> Result<(Plan, Vec<String>), String> {
    let value: Value = serde_json::from_str(crate::extract::strip_fence(reply))
        .map_err(|err| format!("not JSON: {err}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".to_owned());
    };
    let mut notes = Vec::new();
    let mut queries: Vec<String> = match object.get("queries") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(|text| text.trim().to_owned())
                    .ok_or_else(|| "`queries` holds a value that is not a string".to_owned())
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|query| !query.is_empty())
            .collect(),
        Some(_) => return Err("`queries` is not a list".to_owned()),
        None => return Err("`queries` is missing".to_owned()),
    };
    if queries.is_empty() {
        return Err("`queries` is empty".to_owned());
    }
    queries.dedup();
    if queries.len() > MAX_PLAN_QUERIES {
        notes.push(format!(
            "{} queries dropped (at most {MAX_PLAN_QUERIES})",
            queries.len() - MAX_PLAN_QUERIES
        ));
        queries.truncate(MAX_PLAN_QUERIES);
    }
    let mode = match object.get("mode") {
        None | Some(Value::Null) => fallback.mode,
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| format!("`mode` {value} is not bm25, semantic or hybrid"))?,
    };
    let number = |key: &str, default: usize, max: usize| -> Result<usize, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(value) => value
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| format!("`{key}` {value} is not a whole number from 1 to {max}")),
        }
    };
    let top_k = number("top_k", fallback.top_k, MAX_PLAN_TOP_K)?;
    let batch_size = number("batch_size", fallback.batch_size, MAX_PLAN_BATCH_SIZE)?;
    let mut buffers = Vec::new();
    match object.get("buffers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let name = item
                    .as_str()
                    .ok_or_else(|| "`buffers` holds a value that is not a string".to_owned())?;
                // The description shows names escaped (`crate::fence::name`): either form
                // names the buffer.
                let known = known_buffers
                    .iter()
                    .find(|buffer| buffer.name == name || crate::fence::name(&buffer.name) == name);
                if let Some(buffer) = known {
                    buffers.push(buffer.name.clone());
                } else {
                    notes.push(format!("unknown buffer {name:?} dropped"));
                }
            }
        }
        Some(_) => return Err("`buffers` is not a list".to_owned()),
    }
    Ok((
        Plan {
            mode,
            queries,
            top_k,
            batch_size,
            buffers,
        },
        notes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(name: &str) -> BufferInfo {
        BufferInfo {
            id: 1,
            name: name.to_owned(),
            path: None,
            bytes: 10,
            lines: 1,
            chunks: 1,
            strategy: "lines".to_owned(),
            sha256: String::new(),
            loaded_at: 0,
        }
    }

    #[test]
    fn a_valid_plan_is_read_and_unknown_buffers_dropped() {
        let fallback = Plan::default_for("q", false);
        let reply = r#"{"queries": ["token refresh", " ", "AuthError"], "mode": "hybrid",
            "top_k": 20, "batch_size": 5, "buffers": ["auth.rs", "nope.rs"]}"#;
        let (plan, notes) = parse_plan(reply, &[buffer("auth.rs")], &fallback).unwrap();
        assert_eq!(plan.queries, ["token refresh", "AuthError"]);
        assert_eq!(plan.mode, SearchMode::Hybrid);
        assert_eq!((plan.top_k, plan.batch_size), (20, 5));
        assert_eq!(plan.buffers, ["auth.rs"]);
        assert_eq!(notes, ["unknown buffer \"nope.rs\" dropped"]);
    }

    #[test]
    fn unusable_plans_say_why() {
        let fallback = Plan::default_for("q", false);
        let cases = [
            ("sure, here is a plan", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"mode": "bm25"}"#, "`queries` is missing"),
            (r#"{"queries": []}"#, "`queries` is empty"),
            (r#"{"queries": ["a"], "mode": "fuzzy"}"#, "`mode`"),
            (r#"{"queries": ["a"], "top_k": 0}"#, "`top_k` 0"),
            (
                r#"{"queries": ["a"], "batch_size": 1000}"#,
                "`batch_size` 1000",
            ),
        ];
        for (reply, expected) in cases {
            let err = parse_plan(reply, &[], &fallback).unwrap_err();
            assert!(err.contains(expected), "{reply}: {err}");
        }
    }

    #[test]
    fn options_win_over_the_plan() {
        let mut plan = Plan::default_for("q", true);
        let mut options = QueryOptions::new("m", "s");
        options.batch_size = Some(3);
        options.buffers = vec!["x".into()];
        let fixed = plan.apply_options(&options);
        assert_eq!(fixed, ["batch_size", "buffers"]);
        assert_eq!(plan.batch_size, 3);
        assert_eq!(plan.buffers, ["x"]);
        assert_eq!(plan.mode, SearchMode::Hybrid);
    }
}
