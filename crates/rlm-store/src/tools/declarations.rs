//! Each store tool declared once: its name and its arguments (kind, default, what it means).
//! The REPL's Python signatures (`rlm run --store`), the JSON schemas of the report writer's
//! tools (`rlm query`) and the argument checks of [`super::StoreTools`] are all made from
//! these, so a default (`k`) or an argument name cannot differ between them.

use serde_json::{Map, Value, json};

use super::ToolLimits;

/// How many hits `search` returns when the call gives no `k`, for every caller.
pub const DEFAULT_SEARCH_K: usize = 10;

/// What an argument holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// An integer.
    Integer,
    /// A number of search hits, from 1 to the caller's `max_search_k`.
    HitCount,
    /// Chunk ids: a list of integers (the REPL also takes one), at most the caller's
    /// `max_chunk_ids`.
    ChunkIds,
    /// A search mode: `bm25`, `semantic` or `hybrid`.
    SearchMode,
    /// Where a cut answer goes on (`grep`'s and `buffers`'s `offset`): model code pages with
    /// it; the report
    /// writer's tools do not page (their results are fitted into the report's room), so their
    /// schemas leave it out.
    Offset,
}

/// What a call without the argument gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenOmitted {
    /// The argument is required.
    Required,
    /// `None`: the tool decides (`grep`'s `buffer`: every buffer).
    Nothing,
    /// This number.
    Number(usize),
    /// This text.
    Text(&'static str),
}

/// One argument of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter {
    pub name: &'static str,
    pub kind: Kind,
    pub default: WhenOmitted,
    /// What it is, for a schema's `description`.
    pub about: &'static str,
}

/// One store tool: its name and arguments, in the order a positional call gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDeclaration {
    pub name: &'static str,
    pub parameters: &'static [Parameter],
}

const fn parameter(
    name: &'static str,
    kind: Kind,
    default: WhenOmitted,
    about: &'static str,
) -> Parameter {
    Parameter {
        name,
        kind,
        default,
        about,
    }
}

/// `buffers(offset=0)`.
pub const BUFFERS: ToolDeclaration = ToolDeclaration {
    name: "buffers",
    parameters: &[parameter(
        "offset",
        Kind::Offset,
        WhenOmitted::Number(0),
        "buffers to skip: the offset a cut answer gives",
    )],
};

/// `search(query, k=10, mode="bm25")`.
pub const SEARCH: ToolDeclaration = ToolDeclaration {
    name: "search",
    parameters: &[
        parameter(
            "query",
            Kind::Text,
            WhenOmitted::Required,
            "words or identifiers to look for",
        ),
        parameter(
            "k",
            Kind::HitCount,
            WhenOmitted::Number(DEFAULT_SEARCH_K),
            "number of hits",
        ),
        parameter(
            "mode",
            Kind::SearchMode,
            WhenOmitted::Text("bm25"),
            "ranking: bm25, semantic or hybrid (the last two need stored vectors)",
        ),
    ],
};

/// `get_chunks(ids)`.
pub const GET_CHUNKS: ToolDeclaration = ToolDeclaration {
    name: "get_chunks",
    parameters: &[parameter(
        "ids",
        Kind::ChunkIds,
        WhenOmitted::Required,
        "chunk ids",
    )],
};

/// `grep(pattern, buffer=None, offset=0)`.
pub const GREP: ToolDeclaration = ToolDeclaration {
    name: "grep",
    parameters: &[
        parameter(
            "pattern",
            Kind::Text,
            WhenOmitted::Required,
            "regular expression (Rust syntax)",
        ),
        parameter(
            "buffer",
            Kind::Text,
            WhenOmitted::Nothing,
            "only this buffer (name); every buffer without it",
        ),
        parameter(
            "offset",
            Kind::Offset,
            WhenOmitted::Number(0),
            "matching lines to skip: the offset a cut answer gives",
        ),
    ],
};

/// `read(buffer, start_line, end_line)`.
pub const READ: ToolDeclaration = ToolDeclaration {
    name: "read",
    parameters: &[
        parameter("buffer", Kind::Text, WhenOmitted::Required, "buffer name"),
        parameter(
            "start_line",
            Kind::Integer,
            WhenOmitted::Required,
            "first line, from 1",
        ),
        parameter(
            "end_line",
            Kind::Integer,
            WhenOmitted::Required,
            "last line, included",
        ),
    ],
};

/// Every store tool, in the order the REPL lists them.
pub const ALL: [ToolDeclaration; 5] = [BUFFERS, SEARCH, GET_CHUNKS, GREP, READ];

impl WhenOmitted {
    /// The default as the JSON value a call without the argument binds; `None` when required.
    pub fn value(self) -> Option<Value> {
        match self {
            Self::Required => None,
            Self::Nothing => Some(Value::Null),
            Self::Number(number) => Some(json!(number)),
            Self::Text(text) => Some(json!(text)),
        }
    }
}

impl ToolDeclaration {
    /// The argument names, in order.
    pub fn argument_names(&self) -> Vec<&'static str> {
        self.parameters
            .iter()
            .map(|parameter| parameter.name)
            .collect()
    }

    /// The Python signature model code calls: `search(query, k=10, mode="bm25")`.
    pub fn signature(&self) -> String {
        let arguments: Vec<String> = self
            .parameters
            .iter()
            .map(|parameter| match parameter.default {
                WhenOmitted::Required => parameter.name.to_owned(),
                WhenOmitted::Nothing => format!("{}=None", parameter.name),
                WhenOmitted::Number(number) => format!("{}={number}", parameter.name),
                WhenOmitted::Text(text) => format!("{}={text:?}", parameter.name),
            })
            .collect();
        format!("{}({})", self.name, arguments.join(", "))
    }

    /// The JSON schema of the tool's arguments for a model's native tool calls, bounded by
    /// `limits` (the most hits, the most chunk ids); unknown arguments are refused.
    pub fn json_schema(&self, limits: &ToolLimits) -> Value {
        let mut properties = Map::new();
        for parameter in self.schema_parameters() {
            properties.insert(parameter.name.to_owned(), parameter.json_schema(limits));
        }
        let required: Vec<&str> = self
            .schema_parameters()
            .filter(|parameter| parameter.default == WhenOmitted::Required)
            .map(|parameter| parameter.name)
            .collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }
}

impl ToolDeclaration {
    /// The arguments a tool schema offers: all but [`Kind::Offset`].
    fn schema_parameters(&self) -> impl Iterator<Item = &'static Parameter> {
        self.parameters
            .iter()
            .filter(|parameter| parameter.kind != Kind::Offset)
    }
}

impl Parameter {
    fn json_schema(&self, limits: &ToolLimits) -> Value {
        let description = match self.default {
            WhenOmitted::Required | WhenOmitted::Nothing => self.about.to_owned(),
            WhenOmitted::Number(number) => format!("{} (default {number})", self.about),
            WhenOmitted::Text(text) => format!("{} (default {text})", self.about),
        };
        let mut schema = match self.kind {
            Kind::Text => json!({"type": "string"}),
            Kind::Integer => json!({"type": "integer"}),
            Kind::Offset => json!({"type": "integer", "minimum": 0}),
            Kind::HitCount => {
                json!({"type": "integer", "minimum": 1, "maximum": limits.max_search_k})
            }
            Kind::ChunkIds => json!({
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 1,
                "maxItems": limits.max_chunk_ids,
            }),
            Kind::SearchMode => json!({"type": "string", "enum": ["bm25", "semantic", "hybrid"]}),
        };
        schema["description"] = Value::String(description);
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_python_calls_with_their_defaults() {
        let signatures: Vec<String> = ALL.iter().map(ToolDeclaration::signature).collect();
        assert_eq!(
            signatures,
            [
                "buffers(offset=0)",
                "search(query, k=10, mode=\"bm25\")",
                "get_chunks(ids)",
                "grep(pattern, buffer=None, offset=0)",
                "read(buffer, start_line, end_line)",
            ]
        );
    }

    #[test]
    fn schemas_take_their_bounds_from_the_limits() {
        let limits = ToolLimits {
            max_search_k: 20,
            max_chunk_ids: 7,
            ..ToolLimits::CODE
        };
        let search = SEARCH.json_schema(&limits);
        assert_eq!(search["required"], json!(["query"]));
        assert_eq!(search["properties"]["k"]["maximum"], 20);
        assert_eq!(
            search["properties"]["k"]["description"],
            "number of hits (default 10)"
        );
        assert_eq!(search["additionalProperties"], false);
        let chunks = GET_CHUNKS.json_schema(&limits);
        assert_eq!(chunks["properties"]["ids"]["maxItems"], 7);
        let grep = GREP.json_schema(&limits);
        assert_eq!(grep["required"], json!(["pattern"]));
        assert_eq!(grep["properties"]["buffer"]["type"], "string");
        // The report writer does not page: no offset in its schema.
        assert!(grep["properties"].get("offset").is_none(), "{grep}");
        let buffers = BUFFERS.json_schema(&limits);
        assert_eq!(buffers["properties"], json!({}), "{buffers}");
    }
}
