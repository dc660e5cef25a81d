//! `rlm inspect`: context metadata for files, stdin or inline text.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use rlm_context::{AnalyzeOptions, ContextMetadata, analyze_bytes, analyze_path, analyze_reader};

use crate::cli::{GlobalArgs, InspectArgs};
use crate::error::{self, CliError};

pub fn run(global: &GlobalArgs, args: InspectArgs) -> anyhow::Result<ExitCode> {
    let options = AnalyzeOptions {
        sample_chars: args.sample_chars as usize,
        ..AnalyzeOptions::default()
    };
    if let Some(text) = &args.text {
        let metadata = analyze_bytes(text.as_bytes(), args.name.as_deref(), &options);
        print(global, &metadata, "context")?;
        return Ok(ExitCode::SUCCESS);
    }
    let several = args.paths.len() > 1;
    let mut failures = 0usize;
    for (index, path) in args.paths.iter().enumerate() {
        let variable = if several {
            format!("context_{index}")
        } else {
            "context".to_owned()
        };
        match inspect_one(path, args.name.as_deref(), &options) {
            Ok(metadata) => print(global, &metadata, &variable)?,
            Err(err) if several => {
                // Report and go on: one bad path should not hide the others' results.
                error::report(&err);
                failures += 1;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(if failures > 0 {
        ExitCode::from(error::EXIT_USAGE)
    } else {
        ExitCode::SUCCESS
    })
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
            .map_err(|err| CliError::input(anyhow::Error::new(err).context("cannot read stdin")))?;
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
        let err = CliError::input(err);
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
            return Err(CliError::input(anyhow::anyhow!("standard input is a {kind}, not a file"))
                .with_hint("its reads may never end; pipe a slice instead: `head -c 100M … | rlm inspect -`")
                .into());
        }
    }
    Ok(())
}

fn print(global: &GlobalArgs, metadata: &ContextMetadata, variable: &str) -> anyhow::Result<()> {
    if global.json {
        let mut line = serde_json::Map::new();
        line.insert("type".to_owned(), "metadata".into());
        line.insert("variable".to_owned(), variable.into());
        if let serde_json::Value::Object(fields) = serde_json::to_value(metadata)? {
            line.extend(fields);
        }
        return crate::output::print_json(&line);
    }
    let mut out = crate::output::stdout();
    let hint = rlm_context::render_hint(metadata, variable);
    write!(out, "{}", crate::output::for_stdout(&hint))?;
    if metadata.source.is_none() {
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}
