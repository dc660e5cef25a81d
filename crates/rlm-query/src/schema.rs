//! The JSON Schemas of the replies the query asks for, sent as structured output where the
//! server can enforce them ([`rlm_llm::ChatRequest::json_schema`]). OpenAI's strict mode takes
//! a subset: every property required, `additionalProperties: false`, a nullable field as a type
//! list. The replies are validated as before (`plan.rs`, `extract.rs`): a server that ignores
//! the schema, or refuses it (then plain JSON mode is sent), still gets the re-ask.

use serde_json::{Value, json};

/// The plan reply: what `query_plan.md` asks for.
pub(crate) fn plan() -> Value {
    json!({
        "type": "object",
        "properties": {
            "queries": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["bm25", "semantic", "hybrid"]},
            "top_k": {"type": "integer"},
            "batch_size": {"type": "integer"},
            "buffers": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["queries", "mode", "top_k", "batch_size", "buffers"],
        "additionalProperties": false
    })
}

/// An extractor reply for a batch of chunks `ids`: one entry per chunk (as many entries as
/// chunks: `minItems`/`maxItems`, which OpenAI's strict mode and llama.cpp's grammars take),
/// its id one of them.
pub(crate) fn extraction(ids: &[i64]) -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "minItems": ids.len(),
                "maxItems": ids.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "chunk_id": {"type": "integer", "enum": ids},
                        "relevance": {"type": "string", "enum": ["high", "medium", "low", "none"]},
                        "findings": strings,
                        "summary": {"type": ["string", "null"]},
                        "follow_up": strings
                    },
                    "required": ["chunk_id", "relevance", "findings", "summary", "follow_up"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["results"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the prompts show as an example reply is what the schema allows, field for field.
    #[test]
    fn the_schemas_are_strict_and_name_every_field_the_prompts_ask_for() {
        fn check_strict(schema: &Value) {
            if schema["type"] == "object" {
                assert_eq!(schema["additionalProperties"], false, "{schema}");
                let properties = schema["properties"].as_object().unwrap();
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|name| name.as_str().unwrap())
                    .collect();
                for (name, inner) in properties {
                    assert!(required.contains(&name.as_str()), "{name} not required");
                    check_strict(inner);
                }
            }
            if let Some(items) = schema.get("items") {
                check_strict(items);
            }
        }
        check_strict(&plan());
        check_strict(&extraction(&[3, 5]));
        assert_eq!(
            extraction(&[3, 5])["properties"]["results"]["items"]["properties"]["chunk_id"]["enum"],
            json!([3, 5])
        );
        // One entry per chunk, enforced where the server takes array bounds.
        let results = &extraction(&[3, 5])["properties"]["results"];
        assert_eq!(
            (&results["minItems"], &results["maxItems"]),
            (&json!(2), &json!(2))
        );
        for field in ["queries", "mode", "top_k", "batch_size", "buffers"] {
            let prompt = crate::prompts::QueryPrompts::default().plan;
            assert!(prompt.contains(&format!("\"{field}\"")), "{field}");
        }
    }
}
