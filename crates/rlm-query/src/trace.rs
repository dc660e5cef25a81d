//! The query's trajectory log (`rlm-trace` record types), or nothing when not logging. A log
//! that cannot be written is warned about once per record and the query goes on.

use std::path::Path;
use std::time::Duration;

pub use rlm_llm::error_chain;
use rlm_llm::{ChatRequest, ChatResponse, ModelTotals, Role, ToolCall, ToolOutput, ToolRun};
use rlm_trace::{QueryCall, QueryTool, RecordType, TrajectoryWriter};

/// Characters of prompts and replies kept in a `query_call` record.
const LOG_PREVIEW_CHARS: usize = 4_000;

/// Where a query's records go.
#[derive(Debug)]
pub struct QueryLog {
    run_id: String,
    writer: Option<TrajectoryWriter>,
}

impl QueryLog {
    /// A log at `<dir>/query_<time>_<run id>.jsonl`, or none.
    pub fn create(dir: Option<&Path>, run_id: &str) -> crate::Result<Self> {
        let writer = match dir {
            Some(dir) => {
                let stem = rlm_trace::root_stem(run_id).replacen("rlm_", "query_", 1);
                Some(TrajectoryWriter::create(dir, &stem)?)
            }
            None => None,
        };
        Ok(Self {
            run_id: run_id.to_owned(),
            writer,
        })
    }

    /// The query's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The file, when logging.
    pub fn path(&self) -> Option<&Path> {
        self.writer.as_ref().map(TrajectoryWriter::path)
    }

    /// Appends a record.
    pub fn write<R: RecordType>(&self, record: &R) {
        if let Some(writer) = &self.writer
            && let Err(err) = writer.write(record)
        {
            tracing::warn!("cannot write the query log: {err}");
        }
    }

    /// Appends a `query_call` record for one model call.
    #[expect(
        clippy::too_many_arguments,
        reason = "one record's fields, all distinct"
    )]
    pub fn call(
        &self,
        stage: &str,
        batch: Option<&str>,
        attempt: u32,
        chunk_ids: &[i64],
        request: &ChatRequest,
        result: &Result<ChatResponse, rlm_llm::Error>,
        elapsed: Duration,
    ) {
        if self.writer.is_none() {
            return;
        }
        let prompt = request
            .messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map_or("", |message| message.content.as_str());
        let (response, usage, error) = match result {
            Ok(response) => {
                let mut totals = ModelTotals::default();
                totals.add(response);
                (response.text.as_str(), totals, None)
            }
            Err(err) => (
                "",
                ModelTotals {
                    failures: 1,
                    ..ModelTotals::default()
                },
                Some(error_chain(err)),
            ),
        };
        self.write(&QueryCall {
            run_id: self.run_id.clone(),
            stage: stage.to_owned(),
            batch: batch.map(str::to_owned),
            attempt,
            chunk_ids: chunk_ids.to_vec(),
            model: request.model.clone(),
            prompt: preview(prompt),
            prompt_chars: prompt.chars().count() as u64,
            response: preview(response),
            response_chars: response.chars().count() as u64,
            usage,
            seconds: elapsed.as_secs_f64(),
            error,
            tool_rounds: 0,
        });
    }

    /// Appends one `query_call` record for a report written with tool rounds: the usage of
    /// every model call of the rounds, the last answer, and the number of rounds.
    pub fn tool_run(
        &self,
        stage: &str,
        request: &ChatRequest,
        result: &Result<ToolRun, rlm_llm::Error>,
        elapsed: Duration,
    ) {
        if self.writer.is_none() {
            return;
        }
        let prompt = request
            .messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map_or("", |message| message.content.as_str());
        let (response, usage, rounds, error) = match result {
            Ok(run) => {
                let usage = ModelTotals {
                    calls: u64::from(run.model_calls),
                    usage: run.usage,
                    cost_usd: run.cost_usd.unwrap_or(0.0),
                    unpriced_calls: if run.cost_usd.is_some() {
                        0
                    } else {
                        u64::from(run.model_calls)
                    },
                    ..ModelTotals::default()
                };
                (run.response.text.as_str(), usage, run.rounds, None)
            }
            Err(err) => (
                "",
                ModelTotals {
                    failures: 1,
                    ..ModelTotals::default()
                },
                0,
                Some(error_chain(err)),
            ),
        };
        self.write(&QueryCall {
            run_id: self.run_id.clone(),
            stage: stage.to_owned(),
            batch: None,
            attempt: 1,
            chunk_ids: Vec::new(),
            model: request.model.clone(),
            prompt: preview(prompt),
            prompt_chars: prompt.chars().count() as u64,
            response: preview(response),
            response_chars: response.chars().count() as u64,
            usage,
            seconds: elapsed.as_secs_f64(),
            error,
            tool_rounds: rounds,
        });
    }

    /// Appends a `query_tool` record for one tool call of the synthesizer.
    pub fn tool(
        &self,
        index: usize,
        call: &ToolCall,
        output: &ToolOutput,
        chunk_ids: &[i64],
        elapsed: Duration,
    ) {
        if self.writer.is_none() {
            return;
        }
        self.write(&QueryTool {
            run_id: self.run_id.clone(),
            stage: "synthesize".to_owned(),
            index: u32::try_from(index).unwrap_or(u32::MAX),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: preview(&call.arguments),
            output: preview(&output.content),
            output_chars: output.content.chars().count() as u64,
            is_error: output.is_error,
            chunk_ids: chunk_ids.to_vec(),
            seconds: elapsed.as_secs_f64(),
        });
    }
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(LOG_PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
