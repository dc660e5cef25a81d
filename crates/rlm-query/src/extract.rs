//! Extractors: one sub-call model call per batch of chunks, its output capped to what its
//! chunks' entries need ([`reply_cap`]) and its reply held to a strict contract. An invalid
//! reply is asked again once, quoting the problem (never the reply); a batch whose reply was
//! cut at the cap, lacked entries or was over the model's window is split in halves; any other
//! failure is the batch's. A chunk that still fails is reported, never dropped.

use std::sync::Arc;
use std::time::Instant;

use rlm_llm::{ChatRequest, FinishReason, LlmClient, Price, Usage};
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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

    /// The chunks of batches never sent (or cancelled) because of `reason`.
    pub fn not_sent(chunks: &[SelectedChunk], reason: &str) -> Self {
        Self {
            chunk_failures: chunks
                .iter()
                .map(|chunk| ChunkFailure {
                    chunk_id: chunk.id,
                    reason: format!("{NOT_SENT}{reason}"),
                })
                .collect(),
            ..Self::default()
        }
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

/// How the reason of a chunk whose batch was never sent starts.
pub(crate) const NOT_SENT: &str = "not sent: ";

/// Runs batches against the sub-call model.
#[derive(Clone)]
pub(crate) struct Extractor {
    /// Where re-asks and splits are told.
    pub events: Option<Arc<dyn crate::events::QueryEvents>>,
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
                reply_cap(self.max_tokens, items.len()),
                &self.question,
                &items,
            );
            let first = match self.call(&batch, 1, &ids, &request).await {
                Ok(reply) => reply.check(&ids),
                Err(failure) if failure.about_size && items.len() > 1 => Err(failure),
                Err(failure) => return BatchOutcome::failed(&batch, &chunks, &failure.reason),
            };
            let first = match first {
                Ok(extractions) => return paired(chunks, extractions),
                Err(rejection) => rejection,
            };
            // A reply cut at its cap, or a request over the window, will not fit better when
            // asked again: the halves are asked instead.
            let last = if first.cut_or_overflow && items.len() > 1 {
                first
            } else {
                self.tell(&batch, false, &first.reason);
                // The re-ask quotes the first problem, never the broken reply: a runaway reply
                // appended to the prompt would push the request past a small window.
                let again = with_note(&request, &retry_message(&first, &ids));
                match self.call(&batch, 2, &ids, &again).await {
                    Ok(reply) => match reply.check(&ids) {
                        Ok(extractions) => return paired(chunks, extractions),
                        Err(second) => second.after(&first),
                    },
                    Err(failure) => return BatchOutcome::failed(&batch, &chunks, &failure.reason),
                }
            };
            // Only a failure about the batch's size (a cut reply, entries missing, a request
            // over the window) is helped by asking for fewer chunks at once.
            if items.len() == 1 || !last.about_size {
                return BatchOutcome::failed(&batch, &chunks, &last.reason);
            }
            self.tell(&batch, true, &last.reason);
            let mut outcome = BatchOutcome {
                failures: vec![BatchFailure {
                    batch: batch.clone(),
                    chunk_ids: ids,
                    reason: format!("{}; split in halves", last.reason),
                }],
                ..BatchOutcome::default()
            };
            let mut first_half = items;
            let second_half = first_half.split_off(first_half.len() / 2);
            // Halves run one after the other so a split never exceeds the fan-out's bound.
            outcome.merge(self.attempt(format!("{batch}.1"), first_half).await);
            outcome.merge(self.attempt(format!("{batch}.2"), second_half).await);
            outcome
        })
    }

    fn tell(&self, batch: &str, split: bool, reason: &str) {
        if let Some(events) = &self.events {
            events.event(&crate::events::QueryEvent::BatchRetry {
                batch,
                split,
                reason,
            });
        }
    }

    /// One call, logged; the reply, or why there is none.
    async fn call(
        &self,
        batch: &str,
        attempt: u32,
        ids: &[i64],
        request: &ChatRequest,
    ) -> Result<Reply, Rejection> {
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
            Ok(response) => Ok(Reply {
                cut: response.finish() == FinishReason::Length,
                cap: request.max_tokens,
                text: response.text,
            }),
            Err(err) => {
                let reason = format!("model call failed: {}", crate::trace::error_chain(&err));
                let overflow = is_window_overflow(&reason);
                // A request over the window is the batch's fault when it holds more than one
                // chunk (its halves are asked); otherwise only the user can fix it.
                if err.kind() == rlm_llm::ErrorKind::Input && !(overflow && ids.len() > 1) {
                    let mut first = self
                        .input_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    first.get_or_insert(err);
                }
                Err(Rejection {
                    reason,
                    about_size: overflow,
                    cut_or_overflow: overflow,
                })
            }
        }
    }
}

/// An extractor reply as it came back.
struct Reply {
    text: String,
    /// The model was stopped at its output cap.
    cut: bool,
    cap: Option<u32>,
}

impl Reply {
    /// The reply's extractions, or why it breaks the contract.
    fn check(self, ids: &[i64]) -> Result<Vec<ChunkExtraction>, Rejection> {
        parse_reply(&self.text, ids).map_err(|problem| {
            if self.cut {
                let cap = self
                    .cap
                    .map_or(String::new(), |cap| format!(" of {cap} tokens"));
                return Rejection {
                    reason: format!("the reply was cut at its cap{cap} ({problem})"),
                    about_size: true,
                    cut_or_overflow: true,
                };
            }
            Rejection {
                about_size: problem.starts_with(COUNT_PROBLEM),
                reason: problem,
                cut_or_overflow: false,
            }
        })
    }
}

/// Why a batch's call or reply could not be used.
struct Rejection {
    reason: String,
    /// Fewer chunks at once could help: the reply was cut, lacked entries, or the request
    /// was over the window.
    about_size: bool,
    /// The reply was cut or the request was over the window: asking again as it is won't help.
    cut_or_overflow: bool,
}

impl Rejection {
    /// The second rejection of a batch, its reason saying both were invalid.
    fn after(self, first: &Self) -> Self {
        Self {
            reason: format!("invalid reply twice: {}", self.reason),
            about_size: self.about_size || first.about_size,
            cut_or_overflow: self.cut_or_overflow,
        }
    }
}

/// Whether a failed call's message says the request was over the model's window (llama.cpp
/// `exceed_context_size_error`, OpenAI `context_length_exceeded`, Anthropic "prompt is too
/// long").
fn is_window_overflow(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("context_length_exceeded")
        || message.contains("exceed_context_size")
        || message.contains("exceeds the available context")
        || message.contains("maximum context length")
        || message.contains("prompt is too long")
}

/// Output tokens an extractor reply may use per chunk of its batch: an entry of the contract
/// (relevance, a few findings, a summary, leads) fits in far less.
pub const EXTRACT_TOKENS_PER_CHUNK: u32 = 384;
/// Output tokens of the reply's frame (`{"results": [...]}`) and slack.
const EXTRACT_FRAME_TOKENS: u32 = 128;

/// The output cap of an extractor call for `chunks` chunks: sized to the contract, never
/// above `ceiling` (the query's extractor cap, itself within the user's output cap).
pub fn reply_cap(ceiling: u32, chunks: usize) -> u32 {
    let chunks = u32::try_from(chunks).unwrap_or(u32::MAX);
    EXTRACT_TOKENS_PER_CHUNK
        .saturating_mul(chunks)
        .saturating_add(EXTRACT_FRAME_TOKENS)
        .min(ceiling)
}

/// `request` with `note` added to its last (user) message, so roles still alternate.
fn with_note(request: &ChatRequest, note: &str) -> ChatRequest {
    let mut again = request.clone();
    if let Some(last) = again.messages.last_mut() {
        last.content.push_str("\n\n");
        last.content.push_str(note);
    }
    again
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
    let ids: Vec<i64> = items.iter().map(|(chunk, _)| chunk.id).collect();
    ChatRequest::new(model)
        .system(system)
        .user(user)
        .json_schema("chunk_extractions", crate::schema::extraction(&ids))
        .temperature(0.0)
        .max_tokens(max_tokens)
}

/// Characters of a problem quoted back to the model.
const QUOTED_PROBLEM_CHARS: usize = 300;

fn retry_message(rejection: &Rejection, ids: &[i64]) -> String {
    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
    let error: String = rejection
        .reason
        .chars()
        .take(QUOTED_PROBLEM_CHARS)
        .collect();
    format!(
        "Your previous reply was rejected: {error}. Reply again with only the JSON object {{\"results\": [...]}}: exactly one entry for each chunk id {}, relevance one of high, medium, low, none.",
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

/// How a reply with too few or too many entries is described (a problem about the batch's
/// size).
const COUNT_PROBLEM: &str = "`results` has";

fn check_count(entries: usize, batch: &[i64]) -> Result<(), String> {
    if entries == batch.len() {
        return Ok(());
    }
    Err(format!(
        "{COUNT_PROBLEM} {entries} entries but the batch has {} chunks",
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

/// An upper estimate of the extractor calls for `chunks` in batches of `batch_size`, each
/// reply at its [`reply_cap`] under `max_tokens`: calls, tokens, and dollars when the price
/// is known.
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
            output_tokens: u64::from(reply_cap(max_tokens, batch.len())),
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
