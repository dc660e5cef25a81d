//! Reads the contexts `rlm run` resolved ([`ContextSource`]) into the engine's context parts.

use std::io::Read as _;
use std::path::Path;

use anyhow::Context as _;
use rlm_engine::ContextPart;

use crate::error::CliError;
use crate::settings::ContextSource;

/// Reads every source, in order.
pub fn read(sources: &[ContextSource]) -> anyhow::Result<Vec<ContextPart>> {
    sources.iter().map(read_one).collect()
}

fn read_one(source: &ContextSource) -> anyhow::Result<ContextPart> {
    Ok(match source {
        ContextSource::Stdin => ContextPart::analyzed(read_stdin()?, Some("<stdin>")),
        ContextSource::Inline(text) => ContextPart::analyzed(text.as_str(), None),
        ContextSource::File(path) => {
            let text = read_file(path)?;
            let name = path.display().to_string();
            let part = ContextPart::analyzed(text, Some(&name));
            // Only a file that was valid UTF-8 holds exactly `text`; the worker may read it
            // directly.
            let exact = part.metadata.as_ref().is_none_or(|m| m.encoding.valid_utf8);
            if exact { part.with_path(path) } else { part }
        }
    })
}

fn read_file(path: &Path) -> anyhow::Result<String> {
    if path.is_dir() {
        return Err(
            CliError::input(anyhow::anyhow!("{} is a directory", path.display()))
                .with_hint("pass the files inside it, each with --context-file")
                .into(),
        );
    }
    let bytes = std::fs::read(path).map_err(|err| {
        let hint = (err.kind() == std::io::ErrorKind::NotFound)
            .then_some("check the path; `--context -` reads stdin");
        let err = CliError::input(
            anyhow::Error::new(err).context(format!("cannot read {}", path.display())),
        );
        match hint {
            Some(hint) => err.with_hint(hint),
            None => err,
        }
    })?;
    Ok(into_text(bytes, &path.display().to_string()))
}

fn read_stdin() -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the context from stdin")?;
    Ok(into_text(bytes, "stdin"))
}

/// The text of a context; invalid UTF-8 is replaced (and said once) rather than refused.
fn into_text(bytes: Vec<u8>, name: &str) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            tracing::warn!("{name} is not valid UTF-8; invalid bytes are replaced with U+FFFD");
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    }
}
