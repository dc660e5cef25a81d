//! The messages the loop sends: the system prompt and first turn, the feedback after each turn,
//! and the last-chance request.

use rlm_llm::ChatRequest;
use rlm_trace::CodeBlock;

use super::blocks::BlockRun;
use crate::host::RunScope;
use crate::parse::ParsedReply;
use crate::prompt::{embed_query, fence, render, truncate};

/// The conversation a run starts with: the system prompt and the first user message (the
/// query and the context description), with the root model's stop sequences and output cap.
pub(super) fn opening(scope: &RunScope, description: &str, query: &str) -> ChatRequest {
    let settings = &scope.shared.settings;
    let max_iterations = scope.account.limits().max_iterations.to_string();
    let output_limit = settings.output_limit.to_string();
    let window = settings.subcall_window_chars.to_string();
    let chunk = settings.chunk_chars.to_string();
    let functions = match scope.host_functions() {
        Some(_) => render(
            &settings.prompts.functions,
            &[("context_role", context_role(scope.depth))],
        ),
        None => String::new(),
    };
    let toolbox = scope.toolbox();
    let tools = if toolbox.is_empty() {
        String::new()
    } else {
        render(
            &settings.prompts.tools,
            &[("tool_list", toolbox.prompt_list().as_str())],
        )
    };
    let values = [
        ("output_limit", output_limit.as_str()),
        ("subcall_window_chars", window.as_str()),
        ("chunk_chars", chunk.as_str()),
        (
            "recursion_note",
            recursion_note(scope.depth, settings.max_depth),
        ),
        ("helpers", settings.helpers_doc.as_str()),
        ("functions", functions.as_str()),
        ("tools", tools.as_str()),
        (
            "budget",
            if scope.account.is_limited() {
                crate::budget_function::PROMPT_NOTE
            } else {
                ""
            },
        ),
    ];
    let mut system = match &settings.custom_system_prompt {
        // The user's instructions, then what the sandbox offers (the loop needs it).
        Some(custom) => format!(
            "{}\n\n{}",
            custom.trim_end(),
            render(&settings.prompts.sandbox, &values)
        ),
        None => render(&settings.prompts.system, &values),
    };
    for section in &settings.system_sections {
        system.push_str("\n\n");
        system.push_str(section.trim_end());
        system.push('\n');
    }
    let query = embed_query(query);
    let first = render(
        &settings.prompts.first_turn,
        &[
            ("context_description", description),
            ("query", query.as_str()),
            ("max_iterations", max_iterations.as_str()),
        ],
    );
    let mut conversation = ChatRequest::new(scope.model.as_str())
        .system(system)
        .user(first);
    conversation.stop.clone_from(&settings.stop);
    conversation.max_tokens = settings.root_max_output_tokens;
    conversation.temperature = settings.root_temperature;
    conversation
}

/// The user message after turn `turn`: the blocks' output, the notes, the next turn's marker.
pub(super) fn after_turn(
    scope: &RunScope,
    run: &BlockRun,
    notes: &[String],
    parsed: &ParsedReply,
    turn: u32,
    query: &str,
) -> String {
    let settings = &scope.shared.settings;
    let max_iterations = scope.account.limits().max_iterations.to_string();
    let next_turn = (turn + 1).to_string();
    let query = embed_query(query);
    let next = render(
        &settings.prompts.next_turn,
        &[
            ("turn", next_turn.as_str()),
            ("max_iterations", max_iterations.as_str()),
            ("query", query.as_str()),
        ],
    );
    feedback(&run.blocks, notes, parsed, settings.output_limit, &next)
}

/// The request for a final answer once the turns ran out.
pub(super) fn final_request(scope: &RunScope, query: &str) -> String {
    let max_iterations = scope.account.limits().max_iterations.to_string();
    let query = embed_query(query);
    render(
        &scope.shared.settings.prompts.final_request,
        &[
            ("max_iterations", max_iterations.as_str()),
            ("query", query.as_str()),
        ],
    )
}

/// The user message after a turn: each block's output (fenced, truncated), notes, next turn.
fn feedback(
    blocks: &[CodeBlock],
    notes: &[String],
    parsed: &ParsedReply,
    limit: usize,
    next: &str,
) -> String {
    let mut out = String::new();
    for (index, block) in blocks.iter().enumerate() {
        let result = &block.result;
        let mut text = result.stdout.clone();
        if !result.stderr.is_empty() {
            text.push_str(&format!("\n[stderr]\n{}", result.stderr));
        }
        if let Some(error) = &result.error {
            text.push_str(&format!("\n[error]\n{error}"));
        }
        if text.trim().is_empty() {
            text = "(no output; print what you want to see)".to_owned();
        }
        let calls = result.subcalls.len();
        let header = if calls > 0 {
            format!("Output of block {} ({calls} sub-calls):\n", index + 1)
        } else {
            format!("Output of block {}:\n", index + 1)
        };
        out.push_str(&header);
        out.push_str(&fence(&truncate(text.trim_start_matches('\n'), limit)));
        out.push_str("\n\n");
    }
    if blocks.is_empty() && parsed.answer.is_none() {
        out.push_str(
            "Your reply had no ```repl block and no answer. Write code in a ```repl block, or \
             answer with FINAL(...) or FINAL_VAR(...) on its own line.\n\n",
        );
    }
    for note in notes {
        out.push_str(note);
        out.push_str("\n\n");
    }
    out.push_str(next);
    out
}

/// What `context` holds in a run over host functions (a store): nothing in the root run; in a
/// child run of `rlm_query`, the delegated request, while the store is the parent's.
fn context_role(depth: u32) -> &'static str {
    if depth == 0 {
        "The data is not in `context`."
    } else {
        "This is a child run: `context` holds only the request that another run delegated to \
         you, and the store below is that run's own store, shared with you."
    }
}

fn recursion_note(depth: u32, max_depth: u32) -> &'static str {
    if depth + 1 < max_depth {
        "each call starts a fresh REPL run of its own over the prompt (a recursive sub-run). Use it \
         for sub-tasks that themselves need code to solve; it is slower and costs more than \
         `llm_query`.\n"
    } else {
        "at this depth they are plain sub-model calls, exactly like `llm_query`.\n"
    }
}
