//! `grep`: regex over stored buffers, ripgrep-style, line by line as they are found.

use std::ops::ControlFlow;

use rlm_store::{GrepLine, GrepOptions};

use crate::error::store_error;
use crate::requests::GrepRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, ExitStatus};

/// The records of `rlm grep --json`: each line as it is found (a match, a context line, a
/// break, and each matching buffer's `end`).
pub type GrepRecord = GrepLine<'static>;

/// Greps the store as `request` says and gives `emit` each line as it is found: matches,
/// context lines and breaks, and each matching buffer's `end` (only the `end`s with `count` or
/// `files_with_matches`). Match ranges are computed only when `ranges` is set. Stops early when
/// `emit` fails or a stop is asked for; failed (as grep's exit 1) when nothing matched.
pub fn grep(
    sources: &Sources,
    request: &GrepRequest,
    context: &Context,
    ranges: bool,
    emit: &mut dyn FnMut(&GrepLine<'_>) -> std::io::Result<()>,
) -> anyhow::Result<ExitStatus> {
    if request.files_with_matches && request.count {
        return Err(crate::error::input_error(
            "`files_with_matches` and `count` cannot be used together",
        )
        .into());
    }
    let store = StoreSettings::resolve(sources)?.open_existing()?;
    // Only names or counts: the lines themselves are not needed.
    let per_buffer = request.files_with_matches || request.count;
    let around = |one_side: Option<usize>| {
        if per_buffer {
            0
        } else {
            one_side.unwrap_or(request.context)
        }
    };
    let options = GrepOptions {
        buffers: request.buffers.clone(),
        path_glob: request.path_glob.clone(),
        before: around(request.before_context),
        after: around(request.after_context),
        ignore_case: request.ignore_case,
        fixed_strings: request.fixed_strings,
        word: request.word_regexp,
        max_count: if request.files_with_matches {
            Some(1)
        } else {
            request.max_count
        },
        lines_only: per_buffer || !ranges,
    };
    let mut emit_error = None;
    let summary = store
        .grep(&request.pattern, &options, &mut |line| {
            if context.stop.is_stopped() {
                return ControlFlow::Break(());
            }
            if per_buffer && !matches!(line, GrepLine::End { .. }) {
                return ControlFlow::Continue(());
            }
            match emit(&line) {
                Ok(()) => ControlFlow::Continue(()),
                Err(err) => {
                    emit_error = Some(err);
                    ControlFlow::Break(())
                }
            }
        })
        .map_err(store_error)?;
    if let Some(err) = emit_error {
        return Err(err.into());
    }
    if context.stop.is_stopped() {
        return Err(crate::error::AppError::interrupted().into());
    }
    // Like grep and ripgrep: exit 1 when nothing matched.
    Ok(if summary.matched_lines > 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failed
    })
}
