//! [`ReplFactory`] over `rlm-sandbox`: Monty sessions (in a worker process by default) whose
//! host functions are answered by the engine's run, the session's [`rlm_sandbox::Host`].

use futures::FutureExt as _;
use futures::future::BoxFuture;
use rlm_llm::error_chain;
use rlm_sandbox::{ContextInput, ExecutionResult, Sandbox, Session};
use serde_json::Value;

use crate::context::ContextSource;
use crate::repl::{ExecOutcome, ReplError, ReplFactory, ReplSession, SessionSpec};

/// What the system prompt says about the sandbox's native helpers (`{{helpers}}`).
///
/// A summary worded for the model; the reference is [`rlm_sandbox::HELPERS`]. The text is kept
/// as written rather than generated from that table, so that the prompt (and its cache key)
/// stays the same; a test checks that it names every helper with its table signature.
pub const SANDBOX_HELPERS_DOC: &str = "\
- Native helpers, implemented in Rust and fast on big strings. `text` defaults to `context`; pass
  a context number (`1` for `context_1`) or any string instead. Positions are Python char indexes,
  line numbers start at 0, patterns use Rust regex syntax (no look-around, no backreferences):
  - `grep(pattern, context_lines=0, text=None, max_matches=500)` → str of `\"12: line\"` rows
  - `find_all(pattern, text=None, max_matches=10000)` → list of `(start, end, match)`
  - `line_count(text=None)`, `line_range(start, end=None, text=None)` → list of lines
  - `chunk_text(size, overlap=0, text=None)` → list of str chunks of `size` chars
  - `slice_text(start, end, text=None)` → str
  Prefer these to loops of `context.find(x, start)` or `context[i:j]` over the whole context.
";

/// Opens Monty sessions from one configured [`Sandbox`].
#[derive(Debug, Clone)]
pub struct SandboxRepl {
    sandbox: Sandbox,
}

impl SandboxRepl {
    /// A factory for sessions of `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self { sandbox }
    }
}

impl ReplFactory for SandboxRepl {
    fn open(&self, spec: SessionSpec) -> BoxFuture<'_, Result<Box<dyn ReplSession>, ReplError>> {
        async move {
            let contexts = spec
                .contexts
                .iter()
                .map(|part| match part.source() {
                    // The worker reads the file itself: the host never holds its text.
                    ContextSource::File(path) => ContextInput::TextFile(path.clone()),
                    ContextSource::Inline(text) => ContextInput::Text(text.to_string()),
                })
                .collect();
            let session =
                Session::start(&self.sandbox, contexts, Some(spec.context_meta), spec.host)
                    .await
                    .map_err(|err| ReplError::new(error_chain(&err)))?;
            let session: Box<dyn ReplSession> = Box::new(SandboxSession { session });
            Ok(session)
        }
        .boxed()
    }
}

/// One Monty session.
#[derive(Debug)]
struct SandboxSession {
    session: Session,
}

impl ReplSession for SandboxSession {
    fn execute<'a>(&'a mut self, code: &'a str) -> BoxFuture<'a, Result<ExecOutcome, ReplError>> {
        async move {
            let result = self
                .session
                .execute(code)
                .await
                .map_err(|err| ReplError::new(error_chain(&err)))?;
            Ok(outcome(result))
        }
        .boxed()
    }

    fn variable<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, ReplError>> {
        async move {
            let wrap = |err: rlm_sandbox::Error| match err {
                rlm_sandbox::Error::TooLarge(message) => ReplError::too_large(message),
                other => ReplError::new(error_chain(&other)),
            };
            // The type, not the value's `repr()`, decides: a 300 MB answer crosses once.
            let container = self
                .session
                .variables()
                .await
                .map_err(wrap)?
                .iter()
                .any(|variable| {
                    variable.name == name && matches!(variable.type_name.as_str(), "dict" | "list")
                });
            if container {
                // Containers come back as JSON so the engine can read `answer["ready"]`.
                let probe = format!("import json\nprint(json.dumps({name}))");
                let result = self.session.execute(&probe).await.map_err(wrap)?;
                if result.exception.is_none()
                    && let Ok(value) = serde_json::from_str::<Value>(result.stdout.trim())
                {
                    return Ok(Some(value));
                }
            }
            let text = self.session.variable_str(name).await.map_err(wrap)?;
            Ok(text.map(Value::String))
        }
        .boxed()
    }

    fn variables(&mut self) -> BoxFuture<'_, Result<Vec<(String, String)>, ReplError>> {
        async move {
            let variables = self.session.variables().await.map_err(variable_error)?;
            Ok(variables
                .into_iter()
                .map(|variable| (variable.name, variable.type_name))
                .collect())
        }
        .boxed()
    }

    fn variable_repr<'a>(
        &'a mut self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ReplError>> {
        async move {
            self.session
                .variable_repr(name)
                .await
                .map_err(variable_error)
        }
        .boxed()
    }
}

fn variable_error(err: rlm_sandbox::Error) -> ReplError {
    match err {
        rlm_sandbox::Error::TooLarge(message) => ReplError::too_large(message),
        other => ReplError::new(error_chain(&other)),
    }
}

/// The engine's view of one execution: output with the truncation note, diagnostics, the
/// exception as `Kind: message (line N)`.
fn outcome(result: ExecutionResult) -> ExecOutcome {
    let mut stdout = result.stdout.clone();
    if result.stdout_truncated_chars > 0 {
        if !stdout.ends_with('\n') {
            stdout.push('\n');
        }
        stdout.push_str(&format!(
            "… {} more chars not shown: keep big values in variables and print summaries",
            result.stdout_truncated_chars
        ));
    }
    // A restarted worker is already told in `stderr`, in one sentence.
    let stderr = result.stderr.clone();
    let error = result.exception.as_ref().map(|exception| {
        let mut text = exception.kind.clone();
        if !exception.message.is_empty() {
            text.push_str(": ");
            text.push_str(&exception.message);
        }
        if let Some(line) = exception.line {
            text.push_str(&format!(" (line {line})"));
        }
        text
    });
    ExecOutcome {
        stdout,
        stderr: stderr.trim().to_owned(),
        error,
        final_answer: result.final_answer.map(|answer| answer.value),
        seconds: result.duration.as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::SANDBOX_HELPERS_DOC;

    #[test]
    fn the_prompt_names_every_sandbox_helper_with_its_signature() {
        for helper in rlm_sandbox::HELPERS {
            assert!(
                SANDBOX_HELPERS_DOC.contains(&format!("`{}`", helper.signature)),
                "the prompt text does not show `{}`",
                helper.signature
            );
        }
    }
}
