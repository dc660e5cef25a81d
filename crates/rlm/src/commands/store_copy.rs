//! `rlm store copy SRC DST`: a store moved between a directory and PostgreSQL, either way.

use std::io::{IsTerminal as _, Write as _};
use std::ops::ControlFlow;
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::{GlobalArgs, StoreAction, StoreArgs, StoreLocation};
use crate::error::store_error;
use crate::output;
use crate::settings::{Sources, StoreSettings};

pub fn run(global: &GlobalArgs, sources: &Sources, args: StoreArgs) -> anyhow::Result<ExitCode> {
    let StoreAction::Copy(copy) = args.action;
    let settings = |place: std::path::PathBuf| {
        StoreSettings::resolve(&StoreLocation { store: Some(place) }, sources)
    };
    let from = settings(copy.source)?;
    let into = settings(copy.destination)?;
    if from.location == into.location {
        return Err(
            crate::error::input_error("the source and the destination are the same store").into(),
        );
    }
    let source = from.open_existing()?;
    let mut destination = into.open()?;
    let live = !global.quiet && std::io::stderr().is_terminal();
    let mut stderr = anstream::stderr();
    let report = source
        .copy_into(&mut destination, &mut |done, total| {
            if live {
                let _ = write!(stderr, "\r\x1b[Kcopied {done}/{total} buffers");
            }
            // Ctrl-C ends the process: the batch in hand is rolled back, earlier ones stay.
            ControlFlow::Continue(())
        })
        .map_err(|err| {
            store_error(err).context(format!(
                "cannot copy {} into {} (what was copied stays; run the copy again to finish)",
                from.location, into.location
            ))
        })?;
    if live {
        let _ = write!(stderr, "\r\x1b[K");
    }
    if global.json {
        output::print_json(&CopyRecord::Copied {
            source: from.location.to_string(),
            destination: into.location.to_string(),
            report,
        })?;
    } else if !global.quiet {
        writeln!(
            output::stdout(),
            "copied {} buffers ({} chunks, {} vectors) from {} into {}; {} already there",
            report.copied,
            report.chunks,
            report.vectors,
            from.location,
            into.location,
            report.unchanged
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `rlm store copy --json` prints.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CopyRecord {
    Copied {
        source: String,
        destination: String,
        #[serde(flatten)]
        report: rlm_store::CopyReport,
    },
}
