//! Extractors: one sub-call model call per batch of chunks, its reply held to a strict
//! contract. An invalid reply is asked again once with the reason; a batch that fails again is
//! split in halves; a single chunk that still fails is reported, never dropped.

use std::sync::Arc;
use std::time::Instant;

use rlm_llm::{ChatRequest, LlmClient, Price, Usage};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::fence;
use crate::options::Relevance;
use crate::prompts::QueryPrompts;
use crate::select::SelectedChunk;
use crate::trace::QueryLog;

/// What an extractor reported for one chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkExtraction {
    /// The chunk (always one of its batch).
    pub chunk_id: i64,
    /// How relevant it is.
    pub relevance: Relevance,
    /// Statements with evidence.
    pub findings: Vec<String>,
    /// A short summary, `None` for an irrelevant chunk.
    pub summary: Option<String>,
    /// Leads to follow elsewhere.
    pub follow_up: Vec<String>,
}

/// A batch whose reply could not be used (its chunks were split or reported one by one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchFailure {
    /// `3` for the fourth batch, `3.2` for the second half of it, and so on.
    pub batch: String,
    /// Its chunks.
    pub chunk_ids: Vec<i64>,
    /// Why.
    pub reason: String,
}

/// A chunk no extractor reply covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkFailure {
    /// The chunk.
    pub chunk_id: i64,
    /// Why.
    pub reason: String,
}

/// What one batch (with its retries and halves) produced.
#[derive(Debug, Default)]
pub(crate) struct BatchOutcome {
    /// Valid extractions with their chunks.
    pub extractions: Vec<(SelectedChunk, ChunkExtraction)>,
    /// Replies that were rejected or calls that failed.
    pub failures: Vec<BatchFailure>,
    /// Chunks left without an extraction.
    pub chunk_failures: Vec<ChunkFailure>,
}

impl BatchOutcome {
    fn merge(&mut self, other: Self) {
        self.extractions.extend(other.extractions);
        self.failures.extend(other.failures);
        self.chunk_failures.extend(other.chunk_failures);
    }

    /// Every chunk of `chunks` failed for `reason`.
    pub fn failed(batch: &str, chunks: &[SelectedChunk], reason: &str) -> Self {
        Self {
            extractions: Vec::new(),
            failures: vec![BatchFailure {
                batch: batch.to_owned(),
                chunk_ids: chunks.iter().map(|chunk| chunk.id).collect(),
                reason: reason.to_owned(),
            }],
            chunk_failures: chunks
                .iter()
                .map(|chunk| ChunkFailure {
                    chunk_id: chunk.id,
                    reason: reason.to_owned(),
                })
                .collect(),
        }
    }
}

/// Runs batches against the sub-call model.
#[derive(Debug, Clone)]
pub(crate) struct Extractor {
    pub client: LlmClient,
    pub system: String,
    pub question: String,
    pub model: String,
    pub max_tokens: u32,
    pub log: Arc<QueryLog>,
    /// The first error that only the user can fix (missing key, replay miss), kept so a
    /// query where every batch failed for it can stop with that error.
    pub input_error: Arc<std::sync::Mutex<Option<rlm_llm::Error>>>,
}

impl Extractor {
    /// Runs a batch whose texts were read ahead (`texts`, or why they could not be), asking
    /// again and splitting until every chunk has an extraction or a failure.
    pub async fn run(
        &self,
        batch: String,
        chunks: Vec<SelectedChunk>,
        texts: std::result::Result<Vec<String>, String>,
    ) -> BatchOutcome {
        match texts {
            Ok(texts) if texts.len() == chunks.len() => {
                let items = chunks.into_iter().zip(texts).collect();
                self.attempt(batch, items).await
            }
            Ok(texts) => BatchOutcome::failed(
                &batch,
                &chunks,
                &format!(
                    "cannot read the chunks: {} texts for {} chunks",
                    texts.len(),
                    chunks.len()
                ),
            ),
            Err(err) => {
                BatchOutcome::failed(&batch, &chunks, &format!("cannot read the chunks: {err}"))
            }
        }
    }

    fn attempt(
        &self,
        batch: String,
        items: Vec<(SelectedChunk, String)>,
    ) -> futures::future::BoxFuture<'_, BatchOutcome> {
        Box::pin(async move {
            let chunks: Vec<SelectedChunk> = items.iter().map(|(chunk, _)| chunk.clone()).collect();
            let ids: Vec<i64> = chunks.iter().map(|chunk| chunk.id).collect();
            let request = extract_request(
                &self.system,
                &self.model,
                self.max_tokens,
                &self.question,
                &items,
            );
            let reply = match self.call(&batch, 1, &ids, &request).await {
                Ok(text) => text,
                Err(reason) => return BatchOutcome::failed(&batch, &chunks, &reason),
            };
            let first_error = match parse_reply(&reply, &ids) {
                Ok(extractions) => return paired(chunks, extractions),
                Err(error) => error,
            };
            let again = request
                .assistant(reply)
                .user(retry_message(&first_error, &ids));
            let reply = match self.call(&batch, 2, &ids, &again).await {
                Ok(text) => text,
                Err(reason) => return BatchOutcome::failed(&batch, &chunks, &reason),
            };
            let second_error = match parse_reply(&reply, &ids) {
                Ok(extractions) => return paired(chunks, extractions),
                Err(error) => error,
            };
            let reason = format!("invalid reply twice: {second_error}");
            if items.len() == 1 {
                return BatchOutcome::failed(&batch, &chunks, &reason);
            }
            let mut outcome = BatchOutcome {
                failures: vec![BatchFailure {
                    batch: batch.clone(),
                    chunk_ids: ids,
                    reason: format!("{reason}; split in halves"),
                }],
                ..BatchOutcome::default()
            };
            let mut first = items;
            let second = first.split_off(first.len() / 2);
            // Halves run one after the other so a split never exceeds the fan-out's bound.
            outcome.merge(self.attempt(format!("{batch}.1"), first).await);
            outcome.merge(self.attempt(format!("{batch}.2"), second).await);
            outcome
        })
    }

    /// One call, logged; the reply text or why there is none.
    async fn call(
        &self,
        batch: &str,
        attempt: u32,
        ids: &[i64],
        request: &ChatRequest,
    ) -> Result<String, String> {
        let started = Instant::now();
        let result = self.client.chat(request).await;
        self.log.call(
            "extract",
            Some(batch),
            attempt,
            ids,
            request,
            &result,
            started.elapsed(),
        );
        match result {
            Ok(response) => Ok(response.text),
            Err(err) => {
                let reason = format!("model call failed: {}", crate::trace::error_chain(&err));
                if err.kind() == rlm_llm::ErrorKind::Input {
                    let mut first = self
                        .input_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    first.get_or_insert(err);
                }
                Err(reason)
            }
        }
    }
}

fn paired(chunks: Vec<SelectedChunk>, extractions: Vec<ChunkExtraction>) -> BatchOutcome {
    BatchOutcome {
        extractions: chunks.into_iter().zip(extractions).collect(),
        ..BatchOutcome::default()
    }
}

/// The request for one batch: the question, then each chunk in its own fenced block.
pub fn extract_request(
    system: &str,
    model: &str,
    max_tokens: u32,
    question: &str,
    items: &[(SelectedChunk, String)],
) -> ChatRequest {
    use std::fmt::Write as _;
    let text_bytes: usize = items.iter().map(|(_, text)| text.len() + 96).sum();
    let mut user = String::with_capacity(question.len() + text_bytes + 256);
    user.push_str("<question>\n");
    fence::push_neutralized(&mut user, question.trim());
    // Writing to a String cannot fail.
    let _ = write!(user, "\n</question>\n\n{} chunks follow (ids ", items.len());
    for (index, (chunk, _)) in items.iter().enumerate() {
        if index > 0 {
            user.push_str(", ");
        }
        let _ = write!(user, "{}", chunk.id);
    }
    user.push_str(
        "). Reply with {\"results\": [...]} holding exactly one entry for each of these ids.\n",
    );
    for (chunk, text) in items {
        user.push('\n');
        fence::push_chunk_block(&mut user, chunk.id, &chunk.source(), text);
        user.push('\n');
    }
    ChatRequest::new(model)
        .system(system)
        .user(user)
        .json(true)
        .temperature(0.0)
        .max_tokens(max_tokens)
}

fn retry_message(error: &str, ids: &[i64]) -> String {
    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!(
        "Your reply was rejected: {error}. Reply again with only the JSON object {{\"results\": [...]}}: exactly one entry for each chunk id {}, relevance one of high, medium, low, none.",
        ids.join(", ")
    )
}

/// `text` without surrounding whitespace and without a Markdown code fence around it.
pub fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Validates an extractor reply against its batch: a `{"results": [...]}` object (or a bare
/// array), one entry per chunk of the batch, each id in the batch once, relevance one of the
/// four values. Returns the entries in batch order, or the first problem found.
pub fn parse_reply(reply: &str, batch: &[i64]) -> Result<Vec<ChunkExtraction>, String> {
    let text = strip_fence(reply);
    // A well-formed reply (nearly all of them) is read typed; anything else goes through a
    // `Value`, which names the first problem.
    let mut parsed = match typed_entries(text) {
        Some(parsed) => {
            check_count(parsed.len(), batch)?;
            for (index, extraction) in parsed.iter().enumerate() {
                check_membership(&parsed[..index], extraction, batch)?;
            }
            parsed
        }
        None => value_entries(text, batch)?,
    };
    parsed.sort_by_key(|extraction| batch.iter().position(|&id| id == extraction.chunk_id));
    Ok(parsed)
}

/// [`parse_reply`]'s checks on a reply read as a `Value`: every shape, every problem named.
fn value_entries(text: &str, batch: &[i64]) -> Result<Vec<ChunkExtraction>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|err| format!("the reply is not JSON ({err})"))?;
    let entries = match value {
        Value::Array(entries) => entries,
        Value::Object(mut object) => match object.remove("results") {
            Some(Value::Array(entries)) => entries,
            _ => return Err("the reply has no `results` list".to_owned()),
        },
        _ => return Err("the reply is not a JSON object".to_owned()),
    };
    check_count(entries.len(), batch)?;
    let mut parsed = Vec::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        let Value::Object(object) = entry else {
            return Err(format!("entry {} is not an object", index + 1));
        };
        let extraction = parse_entry(&object)?;
        check_membership(&parsed, &extraction, batch)?;
        parsed.push(extraction);
    }
    Ok(parsed)
}

fn check_count(entries: usize, batch: &[i64]) -> Result<(), String> {
    if entries == batch.len() {
        return Ok(());
    }
    Err(format!(
        "`results` has {entries} entries but the batch has {} chunks",
        batch.len()
    ))
}

/// `extraction` is for a chunk of the batch that no entry before it covered.
fn check_membership(
    before: &[ChunkExtraction],
    extraction: &ChunkExtraction,
    batch: &[i64],
) -> Result<(), String> {
    let id = extraction.chunk_id;
    if !batch.contains(&id) {
        return Err(format!("chunk_id {id} is not in this batch"));
    }
    if before.iter().any(|earlier| earlier.chunk_id == id) {
        return Err(format!("chunk_id {id} appears twice"));
    }
    Ok(())
}

/// One entry as the contract has it.
#[derive(serde::Deserialize)]
struct TypedEntry {
    chunk_id: i64,
    relevance: String,
    #[serde(default)]
    findings: Option<Vec<String>>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    follow_up: Option<Vec<String>>,
}

/// A [`TypedEntry`] read only from a JSON object: serde's derive would also take an array of
/// the fields in order, which the contract does not allow.
struct ObjectEntry(TypedEntry);

impl<'de> serde::Deserialize<'de> for ObjectEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = ObjectEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an entry object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ObjectEntry, A::Error> {
                serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ObjectEntry)
            }
        }
        deserializer.deserialize_map(Entry)
    }
}

#[derive(serde::Deserialize)]
struct TypedResults {
    results: Vec<ObjectEntry>,
}

/// The entries of a reply that keeps to the contract's shapes, read without a `Value` tree;
/// `None` for any other reply (then read as a `Value`, which says what is wrong).
fn typed_entries(text: &str) -> Option<Vec<ChunkExtraction>> {
    let entries = if text.starts_with('[') {
        serde_json::from_str::<Vec<ObjectEntry>>(text).ok()?
    } else {
        serde_json::from_str::<TypedResults>(text).ok()?.results
    };
    entries
        .into_iter()
        .map(|ObjectEntry(entry)| {
            Some(ChunkExtraction {
                chunk_id: entry.chunk_id,
                relevance: Relevance::parse(&entry.relevance)?,
                findings: entry.findings.unwrap_or_default(),
                summary: entry.summary,
                follow_up: entry.follow_up.unwrap_or_default(),
            })
        })
        .collect()
}

fn parse_entry(object: &Map<String, Value>) -> Result<ChunkExtraction, String> {
    let chunk_id = object
        .get("chunk_id")
        .and_then(Value::as_i64)
        .ok_or_else(|| "an entry has no integer `chunk_id`".to_owned())?;
    let relevance = object
        .get("relevance")
        .and_then(Value::as_str)
        .and_then(Relevance::parse)
        .ok_or_else(|| {
            format!("chunk_id {chunk_id}: `relevance` is not one of high, medium, low, none")
        })?;
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("chunk_id {chunk_id}: `{key}` holds a non-string"))
                })
                .collect(),
            Some(_) => Err(format!("chunk_id {chunk_id}: `{key}` is not a list")),
        }
    };
    let summary = match object.get("summary") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => return Err(format!("chunk_id {chunk_id}: `summary` is not a string")),
    };
    Ok(ChunkExtraction {
        chunk_id,
        relevance,
        findings: strings("findings")?,
        summary,
        follow_up: strings("follow_up")?,
    })
}

/// An upper estimate of the extractor calls for `chunks` in batches of `batch_size`: calls,
/// tokens, and dollars when the price is known.
pub fn estimate(
    chunks: &[SelectedChunk],
    batch_size: usize,
    prompts: &QueryPrompts,
    question: &str,
    max_tokens: u32,
    price: Option<&Price>,
) -> (usize, u64, Option<f64>) {
    /// Bytes of tags and instructions around each chunk and each batch.
    const CHUNK_FRAME_BYTES: u64 = 64;
    const BATCH_FRAME_BYTES: u64 = 256;
    let fixed = (prompts.extract.len() + question.len()) as u64 + BATCH_FRAME_BYTES;
    let mut calls = 0;
    let mut tokens = 0u64;
    let mut cost = price.map(|_| 0.0);
    for batch in chunks.chunks(batch_size.max(1)) {
        let bytes = fixed
            + batch
                .iter()
                .map(|chunk| chunk.bytes + chunk.buffer.len() as u64 + CHUNK_FRAME_BYTES)
                .sum::<u64>();
        let usage = Usage {
            input_tokens: bytes.div_ceil(rlm_llm::ESTIMATE_BYTES_PER_TOKEN),
            output_tokens: u64::from(max_tokens),
            ..Usage::default()
        };
        calls += 1;
        tokens += usage.total();
        if let (Some(total), Some(price)) = (cost.as_mut(), price) {
            *total += price.cost(&usage);
        }
    }
    (calls, tokens, cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: i64, relevance: &str) -> String {
        format!(
            r#"{{"chunk_id": {id}, "relevance": "{relevance}", "findings": ["f{id}"], "summary": "s", "follow_up": []}}"#
        )
    }

    #[test]
    fn the_wrapper_and_a_bare_array_are_both_read_in_batch_order() {
        let wrapped = format!(
            r#"{{"results": [{}, {}]}}"#,
            entry(2, "low"),
            entry(1, "high")
        );
        let parsed = parse_reply(&wrapped, &[1, 2]).unwrap();
        assert_eq!(parsed[0].chunk_id, 1);
        assert_eq!(parsed[0].relevance, Relevance::High);
        assert_eq!(parsed[1].findings, ["f2"]);
        let bare = format!("```json\n[{}]\n```", entry(5, "none"));
        assert_eq!(
            parse_reply(&bare, &[5]).unwrap()[0].relevance,
            Relevance::None
        );
    }

    #[test]
    fn typed_and_value_readings_of_a_reply_agree() {
        let replies = [
            format!(r#"{{"results": [{}, {}], "note": "extra"}}"#, entry(2, "low"), entry(1, "medium")),
            r#"[{"chunk_id": 1, "relevance": "high", "findings": null, "summary": null, "confidence": 0.9}, {"chunk_id": 2, "relevance": "none"}]"#.to_owned(),
            r#"{"results": [{"chunk_id": 1, "relevance": "high", "summary": 3}, {"chunk_id": 2, "relevance": "none"}]}"#.to_owned(),
            format!(r#"{{"results": [{}, {}]}}"#, entry(1, "high"), entry(7, "low")),
            r#"[[1, "high", ["x"], null, []], [2, "none", [], null, []]]"#.to_owned(),
            r#"{"results": [[1, "high", ["x"], null, []], [2, "none", [], null, []]]}"#.to_owned(),
        ];
        for reply in replies {
            let both = parse_reply(&reply, &[1, 2]);
            let by_value = value_entries(&reply, &[1, 2]).map(|mut parsed| {
                parsed.sort_by_key(|extraction| extraction.chunk_id);
                parsed
            });
            assert_eq!(both, by_value, "{reply}");
        }
    }

    #[test]
    fn replies_breaking_the_contract_are_rejected_with_the_reason() {
        let cases = [
            ("not json".to_owned(), "not JSON"),
            (r#"{"answer": []}"#.to_owned(), "no `results` list"),
            (format!(r#"{{"results": [{}]}}"#, entry(1, "high")), "has 1 entries but the batch has 2"),
            (format!(r#"{{"results": [{}, {}]}}"#, entry(1, "high"), entry(999, "high")), "chunk_id 999 is not in this batch"),
            (format!(r#"{{"results": [{}, {}]}}"#, entry(1, "high"), entry(1, "low")), "appears twice"),
            (format!(r#"{{"results": [{}, {}]}}"#, entry(1, "high"), entry(2, "very")), "`relevance`"),
            (r#"{"results": [{"chunk_id": "1", "relevance": "high"}, {"chunk_id": 2, "relevance": "low"}]}"#.to_owned(), "integer `chunk_id`"),
            (r#"{"results": [{"chunk_id": 1, "relevance": "high", "findings": "x"}, {"chunk_id": 2, "relevance": "low"}]}"#.to_owned(), "`findings` is not a list"),
        ];
        for (reply, expected) in cases {
            let err = parse_reply(&reply, &[1, 2]).unwrap_err();
            assert!(err.contains(expected), "{reply}: {err}");
        }
    }

    #[test]
    fn the_estimate_grows_with_the_text_and_counts_calls() {
        let chunk = |id: i64, bytes: u64| SelectedChunk {
            id,
            buffer: "b".into(),
            start_line: 1,
            end_line: 1,
            bytes,
            position: (1, id),
        };
        let prompts = QueryPrompts::default();
        let chunks: Vec<_> = (0..25).map(|id| chunk(id, 3_000)).collect();
        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        };
        let (calls, tokens, cost) = estimate(&chunks, 10, &prompts, "q", 100, Some(&price));
        assert_eq!(calls, 3);
        assert!(tokens > 25 * 1_000 + 300, "{tokens}");
        assert!(cost.unwrap() > 0.0);
        let (_, _, unknown) = estimate(&chunks, 10, &prompts, "q", 100, None);
        assert_eq!(unknown, None);
    }
}
