//! `rlm grep`: regex over stored buffers with ripgrep-like output.

use std::io::Write as _;
use std::process::ExitCode;

use rlm_app::requests::GrepRequest;
use rlm_store::GrepLine;

use super::Run;
use crate::output;

/// Matches as ripgrep colours them.
const MATCH: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));
const BUFFER: anstyle::Style =
    anstyle::Style::new().fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Magenta)));
const LINE: anstyle::Style =
    anstyle::Style::new().fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Green)));

pub fn run(run: &Run<'_>, request: GrepRequest) -> anyhow::Result<ExitCode> {
    let global = run.global;
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
    let (files_with_matches, count) = (request.files_with_matches, request.count);
    let status =
        rlm_app::operations::grep(&run.sources, &request, &run.context, ranges, &mut |line| {
            if global.json {
                output::write_json(&mut out, line)
            } else if colour {
                write_line(&mut out, line, files_with_matches, count)
            } else {
                write_plain_line(&mut out, line, files_with_matches, count)
            }
        })?;
    out.flush()?;
    Ok(ExitCode::from(status.code()))
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
