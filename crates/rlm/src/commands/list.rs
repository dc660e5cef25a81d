//! `rlm list`: the stored buffers.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_store::BufferInfo;

use super::Outcome;
use crate::cli::{GlobalArgs, ListArgs};
use crate::error::store_error;
use crate::output::{self, human_bytes};
use crate::settings::{Sources, StoreSettings};

/// What `rlm list --json` prints: one record per stored buffer.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BufferRecord {
    /// A stored buffer.
    Buffer(BufferInfo),
}

/// The stored buffers, in id order.
pub fn execute(sources: &Sources, args: &ListArgs) -> anyhow::Result<Outcome<BufferRecord>> {
    let store = StoreSettings::resolve(&args.location, sources)?.open_existing()?;
    let buffers = store.list().map_err(store_error)?;
    Ok(Outcome::success(
        buffers.into_iter().map(BufferRecord::Buffer).collect(),
    ))
}

pub fn run(global: &GlobalArgs, sources: &Sources, args: ListArgs) -> anyhow::Result<ExitCode> {
    let outcome = execute(sources, &args)?;
    if global.json {
        for record in &outcome.records {
            output::print_json(record)?;
        }
    }
    let buffers: Vec<&BufferInfo> = outcome
        .records
        .iter()
        .map(|BufferRecord::Buffer(buffer)| buffer)
        .collect();
    if buffers.is_empty() {
        output::terminal_note(
            global.quiet,
            "the store has no buffers (add some with `rlm load`)",
        );
    }
    if global.json {
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = output::stdout();
    // The name, the one column of any width, comes last: the others stay aligned.
    for buffer in &buffers {
        writeln!(
            out,
            "{:>6}  {:>10} {:>8} {:<5} {:>6} {:<6}  {:<9}  {}",
            buffer.id,
            human_bytes(buffer.bytes),
            buffer.lines,
            if buffer.lines == 1 { "line" } else { "lines" },
            buffer.chunks,
            if buffer.chunks == 1 {
                "chunk"
            } else {
                "chunks"
            },
            buffer.strategy,
            output::for_stdout(&buffer.name),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_says_its_type_first_then_the_fields_of_what_it_holds() {
        let buffer = BufferInfo {
            id: 7,
            name: "a.txt".to_owned(),
            path: None,
            bytes: 3,
            lines: 1,
            chunks: 1,
            strategy: "text".to_owned(),
            sha256: "ab".to_owned(),
            loaded_at: 0,
        };
        let line = serde_json::to_string(&BufferRecord::Buffer(buffer)).unwrap();
        assert!(
            line.starts_with(r#"{"type":"buffer","id":7,"name":"a.txt","#),
            "{line}"
        );
    }
}
