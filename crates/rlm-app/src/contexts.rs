//! Describes the contexts `rlm run` resolved ([`ContextSource`]) as the engine's context parts,
//! in one streamed pass each. The text itself is read only by the sandbox worker.

use std::path::Path;

use anyhow::Context as _;
use rlm_engine::ContextPart;

use crate::error::AppError;
use crate::settings::ContextSource;

/// The contexts of a run. Standard input and gzip files are copied (decompressed) to private
/// spool files as they are analysed, so the sandbox worker reads them like any file; the
/// files are removed when this is dropped.
#[derive(Debug)]
pub struct Contexts {
    pub parts: Vec<ContextPart>,
    pub spools: Vec<tempfile::NamedTempFile>,
}

/// Describes every source, in order. A binary one (`/bin/ls`: NUL bytes, mostly invalid
/// UTF-8) is refused, as `load` refuses it, unless `allow_binary`: the model would read
/// replacement characters. A gzip file is read decompressed, as `load` and `inspect` read it.
pub fn read(
    sources: &[ContextSource],
    allow_binary: bool,
    context: &crate::Context,
) -> anyhow::Result<Contexts> {
    let mut spools = Vec::new();
    let mut parts = Vec::with_capacity(sources.len());
    for source in sources {
        let part = match source {
            ContextSource::Stdin => {
                let stdin = context.stdin("the context")?;
                let (part, spool) = spool_reader(stdin.lock(), "<stdin>")
                    .context("cannot read the context from stdin")?;
                spools.push(spool);
                part
            }
            ContextSource::Inline(text) => ContextPart::analyzed(text.as_str(), None),
            ContextSource::File(path) if is_gzip(path) => {
                let (part, spool) = gzip_part(path)?;
                spools.push(spool);
                part
            }
            ContextSource::File(path) => file_part(path)?,
        };
        if !allow_binary {
            refuse_binary(&part)?;
        }
        parts.push(part);
    }
    Ok(Contexts { parts, spools })
}

/// Whether the file at `path` starts with gzip's magic bytes (one that cannot be read is
/// left to the reading, which says why).
fn is_gzip(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| head == [0x1f, 0x8b])
}

/// A gzip `--context-file`, decompressed into a spool file as it is analysed (every member,
/// as `zcat` reads it), named after the path.
fn gzip_part(path: &Path) -> anyhow::Result<(ContextPart, tempfile::NamedTempFile)> {
    let cannot_read = || format!("cannot read {}", path.display());
    let file = std::fs::File::open(path)
        .with_context(cannot_read)
        .map_err(AppError::input)?;
    let decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
    spool_reader(decoder, &path.display().to_string())
        .map_err(|err| {
            let err = match err.downcast::<std::io::Error>() {
                Ok(io) if io.kind() != std::io::ErrorKind::StorageFull => {
                    anyhow::anyhow!("gzip data that does not decompress ({io})")
                }
                Ok(io) => anyhow::Error::new(io),
                Err(other) => other,
            };
            AppError::input(err.context(cannot_read()))
        })
        .map_err(anyhow::Error::from)
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

/// `reader`'s text copied to a private spool file as it is analysed, as the part `name`.
fn spool_reader(
    reader: impl std::io::Read,
    name: &str,
) -> anyhow::Result<(ContextPart, tempfile::NamedTempFile)> {
    let file = tempfile::Builder::new()
        .prefix("rlm-context-")
        .tempfile()
        .with_context(|| format!("cannot create a temporary file for {name}"))?;
    let writer = std::io::BufWriter::new(file.as_file());
    let part = ContextPart::spooled(reader, writer, file.path(), name)?;
    warn_if_not_utf8(&part);
    Ok((part, file))
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
