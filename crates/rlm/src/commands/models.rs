//! `rlm models import|list|remove`: manage the embedding models on disk.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::operations::models::ModelRecord;
use rlm_app::requests::{ModelsAction, ModelsRequest};

use super::Run;

pub fn run(run: &Run<'_>, request: ModelsRequest) -> anyhow::Result<ExitCode> {
    let outcome = rlm_app::operations::models(&run.sources, &request, &run.context)?;
    let global = run.global;
    if matches!(request.action, ModelsAction::List) && outcome.records.is_empty() {
        // An empty result is an empty stream: the note goes to stderr (for `--json` only when
        // a person is at the terminal).
        for note in &outcome.notes {
            if global.json {
                crate::output::terminal_note(global.quiet, note);
            } else if !global.quiet {
                eprintln!("note: {}", crate::output::neutralize(note));
            }
        }
    }
    if global.json {
        run.print_json(&outcome)?;
        return run.exit(outcome);
    }
    let mut out = crate::output::stdout();
    match request.action {
        ModelsAction::List if !outcome.records.is_empty() => {
            writeln!(out, "{:<28} {:<7} {:>5}  ID", "NAME", "KIND", "DIM")?;
        }
        _ => {}
    }
    for record in &outcome.records {
        match record {
            ModelRecord::Model {
                manifest,
                dir: Some(dir),
                ..
            } => {
                writeln!(
                    out,
                    "imported {} ({}, {} dimensions, id {}) into {}",
                    manifest.name,
                    manifest.kind,
                    manifest.dimension,
                    manifest.id,
                    dir.display()
                )?;
            }
            ModelRecord::Model {
                manifest, default, ..
            } => {
                let marker = if *default == Some(true) {
                    " (default)"
                } else {
                    ""
                };
                writeln!(
                    out,
                    "{:<28} {:<7} {:>5}  {}{marker}",
                    manifest.name, manifest.kind, manifest.dimension, manifest.id
                )?;
            }
            ModelRecord::Unreadable { name, problem, .. } => {
                writeln!(out, "{name:<28} unusable: {problem}")?;
            }
            ModelRecord::Removed { name, dir } => {
                writeln!(out, "removed {name} ({})", dir.display())?;
            }
        }
    }
    // The import's note about a missing runtime is part of what it printed.
    if matches!(request.action, ModelsAction::Import(_)) {
        for note in &outcome.notes {
            writeln!(out, "{note}")?;
        }
    }
    run.exit(outcome)
}
