//! Errors with a kind (input, failed, interrupted: the exit code) and a hint, what a front end
//! shows of them ([`Shown`]: `error:` / `Caused by:` / `hint:`, controls neutralised, keys
//! masked), and the mapping of each library's errors to a kind and a hint.

use std::fmt;

use crate::settings::env;

/// Exit code for a task that ran but failed (e.g. no answer within budget).
pub const EXIT_FAILED: u8 = 1;
/// Exit code for a usage or input error (bad flag, missing file, malformed input).
pub const EXIT_USAGE: u8 = 2;

/// What kind of failure an error is, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The user's input or flags are wrong: exit 2.
    Input,
    /// The task failed: exit 1.
    Failed,
    /// Ctrl-C or SIGTERM stopped the command: exit 130 or 143.
    Interrupted(crate::stop::StopSignal),
}

/// An error with an exit-code kind and an optional hint, carried inside `anyhow::Error`.
#[derive(Debug)]
pub struct AppError {
    pub kind: Kind,
    pub hint: Option<String>,
    inner: anyhow::Error,
}

impl AppError {
    pub fn input(inner: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Kind::Input,
            hint: None,
            inner: inner.into(),
        }
    }

    pub fn failed(inner: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Kind::Failed,
            hint: None,
            inner: inner.into(),
        }
    }

    /// Ctrl-C stopped the command.
    pub fn interrupted() -> Self {
        Self::stopped(crate::stop::StopSignal::Interrupt)
    }

    /// `signal` stopped the command.
    pub fn stopped(signal: crate::stop::StopSignal) -> Self {
        Self {
            kind: Kind::Interrupted(signal),
            hint: None,
            inner: anyhow::anyhow!("{}", signal.describe()),
        }
    }

    /// `inner` as an input error (exit 2) when `input`, else a failure (exit 1), with `hint`
    /// when there is one.
    pub fn classified(inner: impl Into<anyhow::Error>, input: bool, hint: Option<&str>) -> Self {
        let error = if input {
            Self::input(inner)
        } else {
            Self::failed(inner)
        };
        match hint {
            Some(hint) => error.with_hint(hint),
            None => error,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl std::error::Error for AppError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

/// Shorthand: an input error (exit 2) with a message.
pub fn input_error(message: impl fmt::Display) -> AppError {
    AppError::input(anyhow::anyhow!("{message}"))
}

/// A model-layer error with the exit code and hint its kind calls for: the one place where
/// `rlm_llm` errors meet the command line, for every command that calls a model. Input errors
/// (a missing key, an unknown model or provider, a replay miss, a refused request) exit 2 and
/// say what to change; transient ones exit 1 and say that trying again may work.
pub fn llm_error(err: rlm_llm::Error) -> anyhow::Error {
    use rlm_llm::{Error, ErrorKind};
    let hint = match &err {
        Error::MissingApiKey { variable, .. } => Some(format!(
            "export {variable}=... (or use --replay FILE to answer from a recording)"
        )),
        Error::ReplayMiss { .. } => Some(
            "the recording has no answer for this exact request; record it with --record FILE"
                .to_owned(),
        ),
        Error::AmbiguousModel { .. } | Error::UnknownProvider { .. } => Some(
            "known prefixes: openai, anthropic, openrouter, ollama, vllm, llamacpp, lmstudio, or a [llm.providers.NAME] table".to_owned(),
        ),
        Error::ContextWindow { .. } => Some(CONTEXT_OVERFLOW_HINT.to_owned()),
        Error::Status {
            status: 400 | 413,
            message,
            ..
        } if says_context_overflow(message) => Some(CONTEXT_OVERFLOW_HINT.to_owned()),
        _ if err.kind() == ErrorKind::Transient => Some(
            "the provider or the network failed after retries; try again later (--max-retries raises the retries)"
                .to_owned(),
        ),
        _ => None,
    };
    let cli = if err.kind() == ErrorKind::Input {
        AppError::input(err)
    } else {
        AppError::failed(err)
    };
    match hint {
        Some(hint) => cli.with_hint(hint).into(),
        None => cli.into(),
    }
}

/// The hint under a request over the model's window, ours or the server's refusal: every
/// answer stays in the conversation, so the caps and the window are what to change.
const CONTEXT_OVERFLOW_HINT: &str = "the conversation outgrew the model's context window: lower \
     --max-output-tokens (every answer stays in the conversation), give the server a larger \
     window (llama.cpp: --ctx-size), or use a model with a larger one; [run.context_windows] \
     in rlm.toml tells rlm a window it does not know";

/// Whether a provider's refusal says the request was over the context window, in the words of
/// llama.cpp ("exceeds the available context size"), OpenAI and vLLM ("maximum context
/// length"), Anthropic ("prompt is too long") and Ollama ("context window").
fn says_context_overflow(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "context size",
        "context length",
        "context window",
        "prompt is too long",
    ]
    .iter()
    .any(|words| message.contains(words))
}

/// An engine error that stops a run before it starts: a model the run could never call keeps
/// the model layer's kind and hint (a missing key exits 2 with the export hint, whether the
/// model is the root, the sub-call or an allowed one); a bad engine setting is an input error.
pub fn engine_error(err: rlm_engine::Error) -> anyhow::Error {
    match err {
        rlm_engine::Error::Model { model, source } => {
            llm_error(source).context(format!("model `{model}` cannot be used"))
        }
        other => AppError::input(other).into(),
    }
}

/// What the CLI shows of an error: its kind, the message, the distinct causes and the hint,
/// each with control characters neutralised (they quote file names, replies and documents)
/// and configured API keys masked (`rlm_llm::secrets`), here and in `rlm mcp`'s tool errors.
#[derive(Debug)]
pub struct Shown {
    pub kind: Kind,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

/// The hint under every refusal of a path outside `rlm mcp --root`.
pub const OUTSIDE_ROOT_HINT: &str =
    "name paths below the root, or start `rlm mcp --root DIR` with a wider one";

impl Shown {
    pub fn of(err: &anyhow::Error) -> Self {
        // Keys first: what an error quotes (a provider's words, a file, a reply) may hold one.
        let neutralize =
            |text: &str| crate::text::neutralize(&rlm_llm::secrets::mask(text)).into_owned();
        // A file outside the root is refused with one message wherever it was met (a named
        // path, a part inside a ctx directory, a store's database), whatever wraps it.
        if let Some(outside) = err
            .chain()
            .find_map(|cause| cause.downcast_ref::<rlm_context::root::OutsideRoot>())
        {
            return Self {
                kind: Kind::Input,
                message: neutralize(&outside.to_string()),
                causes: Vec::new(),
                hint: Some(OUTSIDE_ROOT_HINT.to_owned()),
            };
        }
        let cli_error = err
            .chain()
            .find_map(|cause| cause.downcast_ref::<AppError>());
        let mut last = err.to_string();
        let mut causes = Vec::new();
        for cause in err.chain().skip(1) {
            let text = cause.to_string();
            // anyhow + AppError can repeat a message once; do not show it twice.
            if text == last {
                continue;
            }
            causes.push(neutralize(&text));
            last = text;
        }
        Self {
            kind: cli_error.map_or(Kind::Failed, |e| e.kind),
            message: neutralize(&err.to_string()),
            causes,
            hint: cli_error.and_then(|e| e.hint.as_deref()).map(neutralize),
        }
    }

    /// The lines `report` prints, without colour (for `rlm mcp`'s tool errors).
    pub fn plain(&self) -> String {
        let mut text = format!("error: {}", self.message);
        for cause in &self.causes {
            text.push_str(&format!("\n  Caused by: {cause}"));
        }
        if let Some(hint) = &self.hint {
            text.push_str(&format!("\nhint: {hint}"));
        }
        text
    }
}

/// The exit code an error maps to: 2 for input, 1 for a failed task, 130/143 when stopped.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    match kind_of(err) {
        Kind::Input => EXIT_USAGE,
        Kind::Failed => EXIT_FAILED,
        Kind::Interrupted(signal) => signal.exit_code(),
    }
}

/// The kind an error carries (an [`AppError`] anywhere in its chain), else `Failed`.
pub fn kind_of(err: &anyhow::Error) -> Kind {
    if err.chain().any(|cause| {
        cause
            .downcast_ref::<rlm_context::root::OutsideRoot>()
            .is_some()
    }) {
        return Kind::Input;
    }
    err.chain()
        .find_map(|cause| cause.downcast_ref::<AppError>())
        .map_or(Kind::Failed, |error| error.kind)
}

/// Maps an rlm-embed error to the exit code and hint a user needs.
pub fn embed_error(err: rlm_embed::Error) -> anyhow::Error {
    use rlm_embed::Error as E;
    let hint = match &err {
        E::NoRuntime { .. } => Some(format!(
            "import with --runtime (libonnxruntime.so or the onnxruntime wheel), or set {} or [embed] runtime",
            env::RLM_ONNXRUNTIME
        )),
        E::FeatureDisabled { feature, .. } => {
            Some(format!("rebuild rlm with `--features {feature}`"))
        }
        E::AmbiguousModel { .. } => Some(format!(
            "choose one with `model = \"NAME\"` in the [embed] configuration section or {}",
            env::RLM_EMBED_MODEL
        )),
        E::UnknownModel { .. } => Some("see `rlm models list`".to_owned()),
        E::AlreadyExists { name, .. } => Some(format!(
            "remove it first (`rlm models remove {name}`) or import under another --name"
        )),
        E::ModelMismatch { .. } => Some(
            "re-embed with the current model, or select the model that made the stored vectors"
                .to_owned(),
        ),
        _ => None,
    };
    let mut cli = if err.is_input_error() {
        AppError::input(err)
    } else {
        AppError::failed(err)
    };
    if let Some(hint) = hint {
        cli = cli.with_hint(hint);
    }
    cli.into()
}

/// Maps a store error to an exit code: bad names, ranges and patterns are input errors.
pub fn store_error(err: rlm_store::Error) -> anyhow::Error {
    use rlm_store::Error as E;
    match err {
        E::UnknownBuffer(_) => AppError::input(err)
            .with_hint("`rlm list` shows the stored buffers")
            .into(),
        E::AmbiguousBuffer { .. } => AppError::input(err)
            .with_hint("give more of the path, up to the whole name `rlm list` shows")
            .into(),
        E::Regex(_) | E::Pattern(_) => AppError::input(err)
            .with_hint("patterns use Rust regex syntax and match within one line, as ripgrep's do")
            .into(),
        E::UnknownChunk(_)
        | E::Range(_)
        | E::Glob { .. }
        | E::GlobTooComplex { .. }
        | E::Chunk(_) => {
            AppError::input(err).into()
        }
        E::Interrupted => AppError::interrupted().into(),
        E::Embed(inner) => embed_error(inner),
        E::Damaged { .. } => AppError::failed(err)
            .with_hint("`rlm doctor` shows what is wrong; nothing was changed or overwritten")
            .into(),
        E::IndexTooNew { .. } => AppError::failed(err)
            .with_hint(
                "use the rlm that wrote it (or a newer one), or `rlm reindex` to rebuild it from \
                 the database in this rlm's format",
            )
            .into(),
        E::IndexDamaged { .. } | E::IndexOutOfStep { .. } => AppError::failed(err)
            .with_hint("rebuild the index from the stored text with `rlm reindex` (`rlm doctor` checks the whole store)")
            .into(),
        E::NoStore { .. } => AppError::input(err)
            .with_hint("load something first with `rlm load PATH`, or pass --store DIR|URL")
            .into(),
        E::InvalidLocation { .. } | E::BackendMissing { .. } => AppError::input(err).into(),
        #[cfg(feature = "postgres")]
        E::Postgres { ref source, .. } => {
            let hint = if source.is_connection_lost() {
                "nothing of the interrupted write was stored; run the same command again once the \
                 server is back"
            } else {
                "`rlm doctor --store URL` checks the connection, the schema and the extensions"
            };
            AppError::failed(err).with_hint(hint).into()
        }
        E::ModelMismatch { .. } => AppError::input(err)
            .with_hint("re-embed everything with `rlm embed --reset`, or pass the stored model with --model")
            .into(),
        other => anyhow::Error::new(other),
    }
}
