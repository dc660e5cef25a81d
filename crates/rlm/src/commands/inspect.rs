//! `rlm inspect`: context metadata for files, stdin or inline text.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use rlm_context::{AnalyzeOptions, ContextMetadata, analyze_bytes, analyze_path, analyze_reader};

use super::Outcome;
use crate::cli::{GlobalArgs, InspectRequest, SAMPLE_CHARS};
use crate::error::{self, AppError, input_error};

/// What `rlm inspect --json` prints: one record per file, or one for the inline text.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
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

pub fn run(global: &GlobalArgs, args: InspectRequest) -> anyhow::Result<ExitCode> {
    let outcome = execute(args)?;
    for record in &outcome.records {
        print(global, record)?;
    }
    Ok(outcome.code)
}

/// Describes the files (or the inline text) of `args`; a path that cannot be read among
/// several is reported and the others are described, with exit code 2.
pub fn execute(args: InspectRequest) -> anyhow::Result<Outcome<InspectRecord>> {
    if !SAMPLE_CHARS.contains(&args.sample_chars) {
        return Err(input_error(format!(
            "the sample size must be from {} to {} characters, not {}",
            SAMPLE_CHARS.start(),
            SAMPLE_CHARS.end(),
            args.sample_chars
        ))
        .into());
    }
    let options = AnalyzeOptions {
        sample_chars: args.sample_chars as usize,
        ..AnalyzeOptions::default()
    };
    let record = |metadata, variable: &str| InspectRecord::Metadata {
        variable: variable.to_owned(),
        metadata,
    };
    if let Some(text) = &args.text {
        let metadata = analyze_bytes(text.as_bytes(), args.name.as_deref(), &options);
        return Ok(Outcome::success(vec![record(metadata, "context")]));
    }
    let several = args.paths.len() > 1;
    let mut outcome = Outcome::success(Vec::new());
    for (index, path) in args.paths.iter().enumerate() {
        let variable = if several {
            format!("context_{index}")
        } else {
            "context".to_owned()
        };
        match inspect_one(path, args.name.as_deref(), &options) {
            Ok(metadata) => outcome.records.push(record(metadata, &variable)),
            Err(err) if several => {
                // Report and go on: one bad path should not hide the others' results.
                error::report(&err);
                outcome.code = ExitCode::from(error::EXIT_USAGE);
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
) -> anyhow::Result<ContextMetadata> {
    if path == Path::new("-") {
        refuse_endless_stdin()?;
        let stdin = std::io::stdin().lock();
        let mut metadata = analyze_reader(stdin, name, options)
            .map_err(|err| AppError::input(anyhow::Error::new(err).context("cannot read stdin")))?;
        metadata.source = Some(name.unwrap_or("<stdin>").to_owned());
        return Ok(metadata);
    }
    analyze_path(path, options).map_err(|err| {
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
fn refuse_endless_stdin() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::io::IsTerminal as _;
        use std::os::fd::AsFd as _;

        let stdin = std::io::stdin();
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

fn print(global: &GlobalArgs, record: &InspectRecord) -> anyhow::Result<()> {
    if global.json {
        return crate::output::print_json(record);
    }
    let InspectRecord::Metadata { variable, metadata } = record;
    let mut out = crate::output::stdout();
    let hint = rlm_context::render_hint(metadata, variable);
    write!(out, "{}", crate::output::for_stdout(&hint))?;
    if metadata.source.is_none() {
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}
