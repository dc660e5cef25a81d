//! `grep`: regex over stored buffers, ripgrep-style, line by line as they are found.

use std::ops::ControlFlow;

use rlm_store::{GrepLine, GrepOptions};

use crate::error::store_error;
use crate::reply::{self, Page};
use crate::requests::GrepRequest;
use crate::settings::{Sources, StoreSettings};
use crate::{Context, ExitStatus, Outcome};

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
    let mut emit_error = None;
    let status = grep_lines(
        sources,
        request,
        context,
        ranges,
        &mut |line| match emit(line) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                emit_error = Some(err);
                ControlFlow::Break(())
            }
        },
    )?;
    match emit_error {
        Some(err) => Err(err.into()),
        None => Ok(status),
    }
}

/// One page of a grep's lines as JSON records, within the context's reply ceiling and from
/// the request's `cursor` on: the search stops at the first line that does not fit (its
/// position is the next cursor), so neither the answer nor the memory holding it grows with
/// what matched. A line too long for a page alone comes cut, with `cut_bytes`; context asked
/// for past what a page holds is cut to that many lines a side.
pub fn page(
    sources: &Sources,
    request: &GrepRequest,
    context: &Context,
) -> anyhow::Result<Outcome<serde_json::Value>> {
    let limit = context.reply;
    let mut page = Page::new(limit, request.cursor.as_deref(), request)?;
    let mut bounded = request.clone();
    let most = limit.records;
    let wide = bounded.context > most
        || bounded.before_context.is_some_and(|lines| lines > most)
        || bounded.after_context.is_some_and(|lines| lines > most);
    bounded.context = bounded.context.min(most);
    bounded.before_context = bounded.before_context.map(|lines| lines.min(most));
    bounded.after_context = bounded.after_context.map(|lines| lines.min(most));
    let mut failure = None;
    let status = grep_lines(sources, &bounded, context, true, &mut |line| {
        if page.skips_next() {
            // Before the cursor: counted, not made.
            return match page.offer(&(), None) {
                Ok(flow) => flow,
                Err(err) => {
                    failure = Some(err);
                    ControlFlow::Break(())
                }
            };
        }
        match page.offer(line, Some(&|room| cut_line(line, room))) {
            Ok(flow) => flow,
            Err(err) => {
                failure = Some(err);
                ControlFlow::Break(())
            }
        }
    })?;
    if let Some(err) = failure {
        return Err(err);
    }
    let mut outcome = page.finish(status);
    if wide {
        outcome.notes.insert(
            0,
            format!(
                "note: context cut to {} lines a side: one answer holds at most {}",
                rlm_context::thousands(most as u64),
                crate::text::count(most as u64, "record")
            ),
        );
    }
    Ok(outcome)
}

/// `line` as a JSON record whose text takes at most about `room` bytes, and the bytes of
/// text left out.
fn cut_line(line: &GrepLine<'_>, room: usize) -> (serde_json::Value, usize) {
    // Room for the record's frame too: its type, buffer name, line number and keys (escapes
    // in the text are cut after, as JSON).
    let keep = |buffer: &str, text: &str| {
        reply::floor_char_boundary(text, room.saturating_sub(200 + buffer.len()))
    };
    let (line, left_out) = match line {
        GrepLine::Match {
            buffer,
            line,
            text,
            matches,
        } => {
            let kept = &text[..keep(buffer, text)];
            let matches = matches
                .iter()
                .filter(|range| range.end <= kept.len())
                .cloned()
                .collect();
            (
                GrepLine::Match {
                    buffer,
                    line: *line,
                    text: kept,
                    matches,
                },
                text.len() - kept.len(),
            )
        }
        GrepLine::Context { buffer, line, text } => {
            let kept = &text[..keep(buffer, text)];
            (
                GrepLine::Context {
                    buffer,
                    line: *line,
                    text: kept,
                },
                text.len() - kept.len(),
            )
        }
        other => (other.clone(), 0),
    };
    (
        serde_json::to_value(&line).unwrap_or(serde_json::Value::Null),
        left_out,
    )
}

/// Greps the store as `request` says, giving `emit` each line; `Break` from it stops.
fn grep_lines(
    sources: &Sources,
    request: &GrepRequest,
    context: &Context,
    ranges: bool,
    emit: &mut dyn FnMut(&GrepLine<'_>) -> ControlFlow<()>,
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
    let options = options(request, per_buffer, ranges);
    // A grep stopped inside its first matching buffer has no totals yet.
    let mut matched = false;
    let summary = store
        .grep(&request.pattern, &options, &mut |line| {
            if context.stop.is_stopped() {
                return ControlFlow::Break(());
            }
            matched |= matches!(line, GrepLine::Match { .. } | GrepLine::End { .. });
            if per_buffer && !matches!(line, GrepLine::End { .. }) {
                return ControlFlow::Continue(());
            }
            emit(&line)
        })
        .map_err(store_error)?;
    if context.stop.is_stopped() {
        return Err(crate::error::AppError::interrupted().into());
    }
    // Like grep and ripgrep: exit 1 when nothing matched.
    Ok(if summary.matched_lines > 0 || matched {
        ExitStatus::Success
    } else {
        ExitStatus::Failed
    })
}

/// The store's options for `request`.
fn options(request: &GrepRequest, per_buffer: bool, ranges: bool) -> GrepOptions {
    let around = |one_side: Option<usize>| {
        if per_buffer {
            0
        } else {
            one_side.unwrap_or(request.context)
        }
    };
    GrepOptions {
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
    }
}
