//! The engine's side of the trajectory: the run's log file, or nothing when not logging.
//!
//! `rlm-trace` owns the on-disk schema; its records hold `rlm-llm`'s messages and usage as
//! they are, so nothing is converted on the way to the log.

use std::path::Path;

use rlm_trace::{CodeBlock, CodeResult, LargeValues, RecordType, TrajectoryWriter};

use crate::error::Error;

/// A run's trajectory log, or nothing when the run is not logged.
#[derive(Debug)]
pub(crate) struct RunLog(Option<(TrajectoryWriter, LargeValues)>);

impl RunLog {
    /// Creates `<dir>/<stem>.jsonl` when `log` says where.
    pub fn create(log: Option<&(std::path::PathBuf, String)>) -> Result<Self, Error> {
        match log {
            Some((dir, stem)) => Ok(Self(Some((
                TrajectoryWriter::create(dir, stem).map_err(Error::Trajectory)?,
                LargeValues::new(),
            )))),
            None => Ok(Self(None)),
        }
    }

    /// The file, when logging.
    pub fn path(&self) -> Option<&Path> {
        self.0.as_ref().map(|(writer, _)| writer.path())
    }

    /// Appends a record (nothing when not logging).
    pub fn write<R: RecordType>(&self, record: &R) -> Result<(), Error> {
        match &self.0 {
            Some((writer, _)) => writer.write(record).map_err(Error::Trajectory),
            None => Ok(()),
        }
    }

    /// `text` as this log stores it: whole when small, else a preview with its size and hash
    /// the first time and only the reference afterwards ([`LargeValues`]). Empty when the run
    /// is not logged (its records are never written).
    pub fn text(&self, text: &str) -> String {
        match &self.0 {
            Some((_, values)) => values.compact(text),
            None => String::new(),
        }
    }

    /// [`RunLog::text`] of an optional value.
    pub fn optional(&self, text: Option<&str>) -> Option<String> {
        text.map(|text| self.text(text))
    }

    /// A code block as logged: its code and output through [`RunLog::text`].
    pub fn code_block(&self, block: &CodeBlock) -> CodeBlock {
        let result = &block.result;
        CodeBlock {
            code: self.text(&block.code),
            result: CodeResult {
                stdout: self.text(&result.stdout),
                stderr: self.text(&result.stderr),
                error: self.optional(result.error.as_deref()),
                final_answer: self.optional(result.final_answer.as_deref()),
                seconds: result.seconds,
                subcalls: result.subcalls.clone(),
                host_calls: result.host_calls.clone(),
            },
        }
    }
}

/// The conversation sent for a turn, as logged: each message through [`RunLog::text`], read
/// in place (the conversation is not copied first).
pub(crate) fn transcript(log: &RunLog, request: &rlm_llm::ChatRequest) -> Vec<rlm_llm::Message> {
    let system = request
        .system
        .as_deref()
        .map(|text| rlm_llm::Message::system(log.text(text)));
    let messages = request.messages.iter().map(|message| rlm_llm::Message {
        role: message.role,
        content: log.text(&message.content),
        tool_calls: message.tool_calls.clone(),
        tool_call_id: message.tool_call_id.clone(),
        is_error: message.is_error,
    });
    system.into_iter().chain(messages).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rlm_trace::{Status, SubcallKind, Trajectory};

    use crate::testing::{FakeRepl, ScriptedModel};
    use crate::{ContextPart, Rlm};

    /// A run with a child run and a plain sub-call, its logs read back with `rlm-trace`.
    #[tokio::test]
    async fn the_loop_log_reads_back_as_typed_records() {
        let model = Arc::new(
            ScriptedModel::default()
                .replies(
                    "root",
                    &["```repl\nr = rlm_query(\"count\")\n```", "FINAL_VAR(r)"],
                )
                .responder(|model, messages| {
                    if model != "sub" {
                        return None;
                    }
                    if messages[0].role == rlm_llm::Role::System {
                        return Some(if messages.len() == 2 {
                            "```repl\nn = llm_query(\"leaf\")\n```".to_owned()
                        } else {
                            "FINAL_VAR(n)".to_owned()
                        });
                    }
                    Some("7".to_owned())
                }),
        );
        let dir = tempfile::tempdir().unwrap();
        let result = Rlm::builder()
            .client(Arc::clone(&model) as _)
            .repl(Arc::new(FakeRepl))
            .model("root")
            .subcall_model("sub")
            .max_depth(2)
            .log_dir(dir.path().to_path_buf())
            .build()
            .unwrap()
            .completion(
                "how many?",
                vec![ContextPart::new("alpha\nsecret=XYZ\n").with_name("c.txt")],
            )
            .await
            .unwrap();
        assert_eq!(result.outcome.answer.as_deref(), Some("7"));

        let root = Trajectory::read(result.trajectory.as_deref().unwrap()).unwrap();
        assert!(root.entries.iter().all(|e| e.version == rlm_trace::VERSION));
        let metadata = root.metadata().unwrap();
        assert_eq!(metadata.run_id, result.outcome.run_id);
        assert_eq!((metadata.depth, metadata.max_depth), (0, 2));
        assert_eq!(metadata.root_model, "root");
        assert_eq!(metadata.query, "how many?");
        let part = &metadata.contexts.parts[0];
        assert_eq!(part.name.as_deref(), Some("c.txt"));
        assert_eq!((part.chars, part.lines, part.ascii), (17, 2, true));
        assert_eq!(metadata.budget.max_consecutive_errors, 5);

        let turns: Vec<_> = root.iterations().collect();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].prompt[0].role, rlm_llm::Role::System);
        assert_eq!(turns[0].usage.calls, 1);
        assert!(turns[0].usage.usage.input_tokens > 0);
        let call = &turns[0].code_blocks[0].result.subcalls[0];
        assert_eq!(call.kind, SubcallKind::RlmQuery);
        assert_eq!(call.model, "sub");
        assert_eq!(call.response, "7");
        assert_eq!(
            call.usage_summary.model_usage_summaries["sub"].total_calls,
            3
        );
        assert_eq!(turns[1].final_answer.as_deref(), Some("7"));

        let outcome = root.outcome().unwrap();
        assert_eq!(outcome.status, Status::Answered);
        assert_eq!(outcome.answer.as_deref(), Some("7"));
        assert_eq!(outcome.iterations, 2);
        assert_eq!(outcome.subcalls, 2);
        assert_eq!(outcome.usage.models["root"].calls, 2);
        assert_eq!(outcome.usage.total.calls, 5);
        assert_eq!(
            outcome, &result.outcome,
            "the log's last line is the run's outcome"
        );

        let child = Trajectory::read(call.child_log.as_deref().unwrap()).unwrap();
        let child_metadata = child.metadata().unwrap();
        assert_eq!(Some(&child_metadata.run_id), call.child_run_id.as_ref());
        assert_eq!(
            child_metadata.parent_run_id.as_deref(),
            Some(result.outcome.run_id.as_str())
        );
        assert_eq!(child_metadata.depth, 1);
        let leaf = &child.iterations().next().unwrap().code_blocks[0]
            .result
            .subcalls[0];
        assert_eq!(leaf.kind, SubcallKind::LlmQuery);
        assert_eq!(leaf.prompt, "leaf");
        assert_eq!(child.outcome().unwrap().status, Status::Answered);
    }
}
