//! The bridge from model code back to the host: `llm_query` and friends.

use async_trait::async_trait;
use futures::future::join_all;

/// Functions model code can call that are answered by the host (the RLM engine).
///
/// Errors are plain strings because they are shown to the model: a failed call returns
/// `"Error: <message>"` in place of the answer (for batched calls, in place of that item), so one
/// failing prompt never aborts the model's program.
///
/// The batched methods have default implementations that run the single-item method concurrently;
/// override them to add a concurrency limit.
#[async_trait]
pub trait Host: Send + Sync {
    /// Answers one prompt with a plain language-model call.
    async fn llm_query(&self, prompt: String, model: Option<String>) -> Result<String, String>;

    /// Answers many prompts concurrently; the output has one entry per prompt, in order.
    async fn llm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        join_all(
            prompts
                .into_iter()
                .map(|prompt| self.llm_query(prompt, model.clone())),
        )
        .await
    }

    /// Answers one prompt with a recursive RLM run (the engine decides what that means).
    async fn rlm_query(&self, prompt: String, model: Option<String>) -> Result<String, String>;

    /// Recursive runs for many prompts, concurrently; one entry per prompt, in order.
    async fn rlm_query_batched(
        &self,
        prompts: Vec<String>,
        model: Option<String>,
    ) -> Vec<Result<String, String>> {
        join_all(
            prompts
                .into_iter()
                .map(|prompt| self.rlm_query(prompt, model.clone())),
        )
        .await
    }
}

/// Which host function model code called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SubCallKind {
    /// `llm_query(prompt, model=None)`
    LlmQuery,
    /// `llm_query_batched(prompts, model=None)`
    LlmQueryBatched,
    /// `rlm_query(prompt, model=None)`
    RlmQuery,
    /// `rlm_query_batched(prompts, model=None)`
    RlmQueryBatched,
}

impl SubCallKind {
    /// The Python name of the function.
    #[must_use]
    pub fn python_name(self) -> &'static str {
        match self {
            Self::LlmQuery => "llm_query",
            Self::LlmQueryBatched => "llm_query_batched",
            Self::RlmQuery => "rlm_query",
            Self::RlmQueryBatched => "rlm_query_batched",
        }
    }

    /// Parses a Python function name.
    #[must_use]
    pub fn from_python_name(name: &str) -> Option<Self> {
        match name {
            "llm_query" => Some(Self::LlmQuery),
            "llm_query_batched" => Some(Self::LlmQueryBatched),
            "rlm_query" => Some(Self::RlmQuery),
            "rlm_query_batched" => Some(Self::RlmQueryBatched),
            _ => None,
        }
    }

    /// Whether the Python function takes a list of prompts.
    #[must_use]
    pub fn is_batched(self) -> bool {
        matches!(self, Self::LlmQueryBatched | Self::RlmQueryBatched)
    }
}

/// Runs one host request and returns one result per prompt.
pub(crate) async fn dispatch(
    host: &dyn Host,
    kind: SubCallKind,
    mut prompts: Vec<String>,
    model: Option<String>,
) -> Vec<Result<String, String>> {
    match kind {
        SubCallKind::LlmQuery | SubCallKind::RlmQuery => {
            let Some(prompt) = prompts.pop() else {
                return vec![Err("no prompt given".to_owned())];
            };
            let answer = if kind == SubCallKind::LlmQuery {
                host.llm_query(prompt, model).await
            } else {
                host.rlm_query(prompt, model).await
            };
            vec![answer]
        }
        SubCallKind::LlmQueryBatched => host.llm_query_batched(prompts, model).await,
        SubCallKind::RlmQueryBatched => host.rlm_query_batched(prompts, model).await,
    }
}
