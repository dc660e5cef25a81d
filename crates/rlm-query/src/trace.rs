//! The query's trajectory log (`rlm-trace` record types), or nothing when not logging. A log
//! that cannot be written is warned about once per record and the query goes on.

use std::path::Path;
use std::time::Duration;

pub use rlm_llm::error_chain;
use rlm_llm::{ChatRequest, ChatResponse, ModelTotals, Role};
use rlm_trace::{QueryCall, RecordType, TrajectoryWriter};

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
        });
    }
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(LOG_PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
