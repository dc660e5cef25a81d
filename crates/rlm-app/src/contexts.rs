//! Describes the contexts `rlm run` resolved ([`ContextSource`]) as the engine's context parts,
//! in one streamed pass each. The text itself is read only by the sandbox worker.

use std::path::Path;

use anyhow::Context as _;
use rlm_engine::ContextPart;

use crate::error::AppError;
use crate::settings::ContextSource;

/// The contexts of a run. Standard input is copied to a private spool file as it is analysed
/// (so the sandbox worker reads it like any file); the file is removed when this is dropped.
#[derive(Debug)]
pub struct Contexts {
    pub parts: Vec<ContextPart>,
    pub spool: Option<tempfile::NamedTempFile>,
}

/// Describes every source, in order.
/// Describes every source, in order. A binary one (`/bin/ls`: NUL bytes, mostly invalid
/// UTF-8) is refused, as `load` refuses it, unless `allow_binary`: the model would read
/// replacement characters.
pub fn read(
    sources: &[ContextSource],
    allow_binary: bool,
    context: &crate::Context,
) -> anyhow::Result<Contexts> {
    let mut spool = None;
    let mut parts = Vec::with_capacity(sources.len());
    for source in sources {
        let part = match source {
            ContextSource::Stdin => spool_stdin(&mut spool, context.stdin("the context")?)?,
            ContextSource::Inline(text) => ContextPart::analyzed(text.as_str(), None),
            ContextSource::File(path) => file_part(path)?,
        };
        if !allow_binary {
            refuse_binary(&part)?;
        }
        parts.push(part);
    }
    Ok(Contexts { parts, spool })
}

/// An input error for a context that is binary.
pub fn refuse_binary(part: &ContextPart) -> anyhow::Result<()> {
    let Some(metadata) = part.metadata() else {
        return Ok(());
    };
    if metadata.format != rlm_context::Format::Binary {
        return Ok(());
    }
    let name = part.name().unwrap_or("a context");
    Err(AppError::input(anyhow::anyhow!(
        "{name} is binary ({}), not text a model can read",
        metadata.format_description
    ))
    .with_hint(
        "give a text file; --allow-binary runs over it anyway (its invalid bytes read as U+FFFD)",
    )
    .into())
}

/// A `--context-file` part (also the Python package's path prompts).
pub fn file_part(path: &Path) -> anyhow::Result<ContextPart> {
    if path.is_dir() {
        return Err(
            AppError::input(anyhow::anyhow!("{} is a directory", path.display()))
                .with_hint("pass the files inside it, each with --context-file")
                .into(),
        );
    }
    let part = ContextPart::from_file(path).map_err(|err| {
        let hint = (err.kind() == std::io::ErrorKind::NotFound)
            .then_some("check the path; `--context -` reads stdin");
        let err = AppError::input(
            anyhow::Error::new(err).context(format!("cannot read {}", path.display())),
        );
        match hint {
            Some(hint) => err.with_hint(hint),
            None => err,
        }
    })?;
    warn_if_not_utf8(&part);
    Ok(part)
}

fn spool_stdin(
    spool: &mut Option<tempfile::NamedTempFile>,
    stdin: std::io::Stdin,
) -> anyhow::Result<ContextPart> {
    let file = tempfile::Builder::new()
        .prefix("rlm-stdin-")
        .tempfile()
        .context("cannot create a temporary file for the context from stdin")?;
    let writer = std::io::BufWriter::new(file.as_file());
    let part = ContextPart::spooled(stdin.lock(), writer, file.path(), "<stdin>")
        .context("cannot read the context from stdin")?;
    warn_if_not_utf8(&part);
    *spool = Some(file);
    Ok(part)
}

/// Invalid UTF-8 is replaced (and said once) rather than refused.
fn warn_if_not_utf8(part: &ContextPart) {
    if let Some(metadata) = part.metadata()
        && !metadata.encoding.valid_utf8
    {
        let name = part.name().unwrap_or("a context");
        tracing::warn!("{name} is not valid UTF-8; invalid bytes are replaced with U+FFFD");
    }
}
