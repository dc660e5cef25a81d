//! Compaction (the reference's `compaction=True`): when the root run's conversation reaches a
//! share of the root model's window, the model summarizes its progress and the conversation
//! restarts from the first message and that summary. The turns it replaces are appended to the
//! REPL's `history` (with the summary), so model code can still read them.

use rlm_llm::{ChatRequest, Message, estimate_input_tokens};
use serde_json::{Value, json};

use super::turn::Turns;
use crate::literal::python_literal;
use crate::prompt::render;
use crate::repl::ReplSession;

/// The code every compacting run starts with.
pub(super) const EMPTY_HISTORY: &str = "history = []";

impl Turns<'_> {
    /// Compacts the conversation before turn `turn` when it has grown past the threshold.
    /// Returns the notes for the turn's log. A summary that cannot be had leaves the
    /// conversation as it was (the window check refuses a request that cannot fit).
    pub async fn compact_if_needed(&mut self, turn: u32, compactions: &mut u32) -> Vec<String> {
        let settings = &self.scope.shared.settings;
        let (Some(share), 0) = (settings.compaction, self.scope.depth) else {
            return Vec::new();
        };
        let Some(window) = settings.context_windows.get(&self.conversation.model) else {
            return Vec::new();
        };
        let tokens = estimate_input_tokens(self.conversation);
        // The first message and one reply at least: there is nothing to summarize before.
        if (tokens as f64) < share * window as f64 || self.conversation.messages.len() < 3 {
            return Vec::new();
        }
        let mut request: ChatRequest = self.conversation.clone();
        request.stop.clear();
        request
            .messages
            .push(Message::user(settings.prompts.compaction_request.clone()));
        let summary = match super::turn::ask(self.scope, &request).await {
            Ok(reply) if !reply.text.trim().is_empty() => reply.text,
            Ok(_) => return vec!["compaction skipped: the summary was empty".to_owned()],
            Err((status, _)) => return vec![format!("compaction skipped: {status}")],
        };
        *compactions += 1;
        let replaced: Vec<Message> = self.conversation.messages.drain(1..).collect();
        if let Err(error) = append_history(self.session, &replaced, &summary).await {
            return vec![format!(
                "compaction: `history` could not be updated: {error}"
            )];
        }
        let max_iterations = self.scope.account.limits().max_iterations.to_string();
        let count = compactions.to_string();
        let turn = turn.to_string();
        let note = render(
            &settings.prompts.compaction_note,
            &[
                ("count", count.as_str()),
                ("turn", turn.as_str()),
                ("max_iterations", max_iterations.as_str()),
            ],
        );
        self.conversation.messages.push(Message::assistant(summary));
        self.conversation.messages.push(Message::user(note));
        vec![format!(
            "the conversation was compacted at about {tokens} tokens of a {window}-token window"
        )]
    }
}

/// Appends the replaced turns and the summary to `history` in the REPL.
async fn append_history(
    session: &mut dyn ReplSession,
    replaced: &[Message],
    summary: &str,
) -> Result<(), String> {
    let mut entries: Vec<Value> = replaced
        .iter()
        .map(|message| json!({"role": message.role, "content": message.content}))
        .collect();
    entries.push(json!({"role": "summary", "content": summary}));
    let code = format!(
        "history = history + {}",
        python_literal(&Value::Array(entries))
    );
    match session.execute(&code).await {
        Ok(outcome) => outcome.error.map_or(Ok(()), Err),
        Err(error) => Err(error.to_string()),
    }
}
