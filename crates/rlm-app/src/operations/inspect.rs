//! `inspect`: context metadata for files, stdin or inline text.

use std::path::Path;

use rlm_context::root::{FileRoot, OpenError};
use rlm_context::{
    AnalyzeOptions, ContextMetadata, analyze_bytes, analyze_opened, analyze_path, analyze_reader,
};

use crate::error::{AppError, input_error};
use crate::requests::{InspectRequest, SAMPLE_CHARS};
use crate::{Context, ExitStatus, Outcome};

/// What `rlm inspect --json` prints: one record per file, or one for the inline text.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InspectRecord {
    /// What the text is: format, size, lines, records, fields and a sample.
    Metadata {
        /// The name the text would have in a run (`context`, `context_0`, ...).
        variable: String,
        #[serde(flatten)]
        metadata: ContextMetadata,
    },
}

/// Describes the files (or the inline text) of `request`; a path that cannot be read among
/// several is reported and the others are described, ending with an input error status.
pub fn inspect(
    request: &InspectRequest,
    context: &Context,
) -> anyhow::Result<Outcome<InspectRecord>> {
    inspect_within(request, context, None)
}

/// [`inspect`] of files that must lie below `root` (`rlm mcp --root`): each is opened from
/// the root with the kernel refusing every step out of it ([`FileRoot::open`]), so a file
/// swapped for a link after its path was checked is refused, not read.
pub fn inspect_within(
    request: &InspectRequest,
    context: &Context,
    root: Option<&FileRoot>,
) -> anyhow::Result<Outcome<InspectRecord>> {
    if !SAMPLE_CHARS.contains(&request.sample_chars) {
        return Err(input_error(format!(
            "the sample size must be from {} to {} characters, not {}",
            SAMPLE_CHARS.start(),
            SAMPLE_CHARS.end(),
            request.sample_chars
        ))
        .into());
    }
    let options = AnalyzeOptions {
        sample_chars: request.sample_chars as usize,
        ..AnalyzeOptions::default()
    };
    let record = |metadata, variable: &str| InspectRecord::Metadata {
        variable: variable.to_owned(),
        metadata,
    };
    if let Some(text) = &request.text {
        if !request.paths.is_empty() {
            return Err(input_error("give paths or a text to inspect, not both").into());
        }
        let metadata = analyze_bytes(text.as_bytes(), request.name.as_deref(), &options);
        return Ok(Outcome::success(vec![record(metadata, "context")]));
    }
    if request.paths.is_empty() {
        return Err(input_error("inspect needs a path (`-` reads stdin) or a text").into());
    }
    let several = request.paths.len() > 1;
    let mut outcome = Outcome::success(Vec::new());
    for (index, path) in request.paths.iter().enumerate() {
        let variable = if several {
            format!("context_{index}")
        } else {
            "context".to_owned()
        };
        match inspect_one(path, request.name.as_deref(), &options, context, root) {
            Ok(metadata) => outcome.records.push(record(metadata, &variable)),
            Err(err) if several => {
                // Report and go on: one bad path should not hide the others' results.
                context.problem(&err);
                outcome.status = ExitStatus::InputError;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(outcome)
}

fn inspect_one(
    path: &Path,
    name: Option<&str>,
    options: &AnalyzeOptions,
    context: &Context,
    root: Option<&FileRoot>,
) -> anyhow::Result<ContextMetadata> {
    if path == Path::new("-") {
        let stdin = context.stdin("inspect")?;
        refuse_endless_stdin(&stdin)?;
        let mut metadata = analyze_reader(stdin.lock(), name, options)
            .map_err(|err| AppError::input(anyhow::Error::new(err).context("cannot read stdin")))?;
        metadata.source = Some(name.unwrap_or("<stdin>").to_owned());
        return Ok(metadata);
    }
    let analyzed = match root {
        None => analyze_path(path, options),
        Some(root) => match root.open(path) {
            Ok(file) => analyze_opened(file, path, options),
            Err(OpenError::Outside(outside)) => return Err(AppError::input(outside).into()),
            Err(OpenError::Io(source)) => Err(rlm_context::Error::Read {
                path: path.to_path_buf(),
                source,
            }),
            Err(other) => return Err(AppError::input(other).into()),
        },
    };
    analyzed.map_err(|err| {
        let hint = match &err {
            rlm_context::Error::IsDirectory { .. } => Some(format!(
                "pass the files inside it (`rlm inspect {}/*`) or load it with `rlm load`",
                path.display()
            )),
            rlm_context::Error::Read { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Some("check the path; `-` reads stdin and `--text` takes inline text".to_owned())
            }
            rlm_context::Error::NotAFile { .. } => Some(format!(
                "its reads may never end; inspect a slice through a pipe: `head -c 100M {} | rlm inspect -`",
                path.display()
            )),
            _ => None,
        };
        let err = AppError::input(err);
        match hint {
            Some(hint) => err.with_hint(hint).into(),
            None => err.into(),
        }
    })
}

/// Standard input redirected from a device (`< /dev/zero`) would be read forever; a terminal
/// or a pipe ends.
fn refuse_endless_stdin(stdin: &std::io::Stdin) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::io::IsTerminal as _;
        use std::os::fd::AsFd as _;

        if stdin.is_terminal() {
            return Ok(());
        }
        let Ok(file) = stdin.as_fd().try_clone_to_owned().map(std::fs::File::from) else {
            return Ok(());
        };
        if let Some(kind) = file
            .metadata()
            .ok()
            .and_then(|metadata| rlm_context::endless_kind(&metadata.file_type()))
        {
            return Err(AppError::input(anyhow::anyhow!("standard input is a {kind}, not a file"))
                .with_hint("its reads may never end; pipe a slice instead: `head -c 100M … | rlm inspect -`")
                .into());
        }
    }
    Ok(())
}
