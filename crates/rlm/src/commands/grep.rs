//! `rlm grep`: regex over stored buffers with ripgrep-like output.

use std::io::Write as _;
use std::ops::ControlFlow;
use std::process::ExitCode;

use rlm_store::{GrepLine, GrepOptions};

use crate::cli::{GlobalArgs, GrepArgs};
use crate::error::store_error;
use crate::output;
use crate::settings::{Sources, StoreSettings};

/// Matches as ripgrep colours them.
const MATCH: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));
const BUFFER: anstyle::Style =
    anstyle::Style::new().fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Magenta)));
const LINE: anstyle::Style =
    anstyle::Style::new().fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Green)));

/// Greps the store as `args` say and gives `emit` each line of output as it is found: matches,
/// context lines and breaks, and each matching buffer's `end` (only the `end`s with
/// `--count` or `--files-with-matches`). Match ranges are computed only when `ranges` is set.
/// Stops early when `emit` fails; exit code 1 when nothing matched, as grep's.
pub fn execute(
    sources: &Sources,
    args: &GrepArgs,
    ranges: bool,
    emit: &mut dyn FnMut(&GrepLine<'_>) -> std::io::Result<()>,
) -> anyhow::Result<ExitCode> {
    let store = StoreSettings::resolve(&args.location, sources)?.open_existing()?;
    // Only names or counts: the lines themselves are not needed.
    let per_buffer = args.files_with_matches || args.count;
    let context = |one_side: Option<usize>| {
        if per_buffer {
            0
        } else {
            one_side.unwrap_or(args.context)
        }
    };
    let options = GrepOptions {
        buffers: args.buffers.clone(),
        path_glob: args.path_glob.clone(),
        before: context(args.before_context),
        after: context(args.after_context),
        ignore_case: args.ignore_case,
        fixed_strings: args.fixed_strings,
        word: args.word_regexp,
        max_count: if args.files_with_matches {
            Some(1)
        } else {
            args.max_count
        },
        lines_only: per_buffer || !ranges,
    };
    let mut emit_error = None;
    let summary = store
        .grep(&args.pattern, &options, &mut |line| {
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
    // Like grep and ripgrep: exit 1 when nothing matched.
    Ok(if summary.matched_lines > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::error::EXIT_FAILED)
    })
}

pub fn run(global: &GlobalArgs, sources: &Sources, args: GrepArgs) -> anyhow::Result<ExitCode> {
    let colour = output::stdout_color();
    // Without colour nothing written here is an escape: the lines go out as they are (into a
    // pipe byte for byte, as ripgrep's), not through a stream that scans every byte for
    // escapes to strip.
    let stream = if colour {
        output::stdout()
    } else {
        output::raw_stdout()
    };
    // Line by line on a terminal; in blocks into a pipe or file, as ripgrep writes.
    let mut out: Box<dyn std::io::Write> = if output::stdout_is_terminal() {
        Box::new(stream)
    } else {
        Box::new(std::io::BufWriter::with_capacity(64 * 1024, stream))
    };
    // Match ranges are only needed to colour the matches or for `--json`.
    let ranges = global.json || colour;
    let code = execute(sources, &args, ranges, &mut |line| {
        if global.json {
            output::write_json(&mut out, line)
        } else if colour {
            write_line(&mut out, line, args.files_with_matches, args.count)
        } else {
            write_plain_line(&mut out, line, args.files_with_matches, args.count)
        }
    })?;
    out.flush()?;
    Ok(code)
}

/// A line as [`write_line`] writes it, without the colours. A grep can print millions of
/// lines, so a match's line is written piece by piece rather than through `fmt`.
fn write_plain_line(
    out: &mut impl std::io::Write,
    line: &GrepLine<'_>,
    files_with_matches: bool,
    count: bool,
) -> std::io::Result<()> {
    let (buffer, line, text, mark) = match line {
        // Without colour no match ranges were asked for.
        GrepLine::Match {
            buffer, line, text, ..
        } => (buffer, line, text, b":"),
        GrepLine::Context { buffer, line, text } => (buffer, line, text, b"-"),
        GrepLine::Break => return out.write_all(b"--\n"),
        GrepLine::End { .. } if !files_with_matches && !count => return Ok(()),
        GrepLine::End {
            buffer,
            matched_lines,
        } => {
            out.write_all(output::for_stdout(buffer).as_bytes())?;
            if !files_with_matches {
                out.write_all(b":")?;
                out.write_all(itoa::Buffer::new().format(*matched_lines).as_bytes())?;
            }
            return out.write_all(b"\n");
        }
    };
    out.write_all(output::for_stdout(buffer).as_bytes())?;
    out.write_all(mark)?;
    out.write_all(itoa::Buffer::new().format(*line).as_bytes())?;
    out.write_all(mark)?;
    out.write_all(output::for_stdout(text).as_bytes())?;
    out.write_all(b"\n")
}

fn write_line(
    out: &mut impl std::io::Write,
    line: &GrepLine<'_>,
    files_with_matches: bool,
    count: bool,
) -> std::io::Result<()> {
    match line {
        GrepLine::Match {
            buffer,
            line,
            text,
            matches,
        } => {
            let buffer = output::for_stdout(buffer);
            write!(out, "{BUFFER}{buffer}{BUFFER:#}:{LINE}{line}{LINE:#}:")?;
            // Each piece is neutralised on its own: the match ranges are offsets into `text`.
            let mut at = 0;
            for range in matches {
                let (Some(before), Some(matched)) =
                    (text.get(at..range.start), text.get(range.clone()))
                else {
                    continue;
                };
                let (before, matched) = (output::for_stdout(before), output::for_stdout(matched));
                write!(out, "{before}{MATCH}{matched}{MATCH:#}")?;
                at = range.end;
            }
            let rest = text.get(at..).unwrap_or_default();
            writeln!(out, "{}", output::for_stdout(rest))
        }
        GrepLine::Context { buffer, line, text } => {
            let (buffer, text) = (output::for_stdout(buffer), output::for_stdout(text));
            writeln!(
                out,
                "{BUFFER}{buffer}{BUFFER:#}-{LINE}{line}{LINE:#}-{text}"
            )
        }
        GrepLine::Break => writeln!(out, "--"),
        GrepLine::End { buffer, .. } if files_with_matches => {
            let buffer = output::for_stdout(buffer);
            writeln!(out, "{BUFFER}{buffer}{BUFFER:#}")
        }
        GrepLine::End {
            buffer,
            matched_lines,
        } if count => {
            let buffer = output::for_stdout(buffer);
            writeln!(out, "{BUFFER}{buffer}{BUFFER:#}:{matched_lines}")
        }
        _ => Ok(()),
    }
}
