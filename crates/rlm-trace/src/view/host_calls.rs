//! A code block's calls of host functions that are not model calls (`rlm run --store`:
//! `buffers`, `search`, `get_chunks`, `grep`, `read`): name, arguments, result size and
//! preview, error. Every text from the log is escaped.

use std::fmt::Write as _;

use rlm_types::thousands;

use super::format::seconds;
use super::html::{plural, text_block};
use super::markdown::escape;
use crate::schema::HostCall;

/// A code block's host calls are listed open up to this many, folded past it.
const HOST_CALLS_OPEN: usize = 5;
/// Arguments up to this many chars are shown in a host call's head line; longer ones below it.
const ARGUMENTS_INLINE_CHARS: usize = 160;
/// Result previews longer than this (in chars) are folded.
const RESULT_OPEN_CHARS: usize = 300;

/// A code block's calls of host functions (a store's `search`, `grep`, …), in call order:
/// listed open when few, folded under a summary of their names when many.
pub(super) fn render(out: &mut String, calls: &[HostCall]) {
    if calls.is_empty() {
        return;
    }
    let mut names: Vec<(&str, usize)> = Vec::new();
    for call in calls {
        match names.iter_mut().find(|(name, _)| *name == call.name) {
            Some((_, n)) => *n += 1,
            None => names.push((call.name.as_str(), 1)),
        }
    }
    let names: Vec<String> = names
        .into_iter()
        .map(|(name, n)| match n {
            1 => name.to_owned(),
            _ => format!("{name} ×{n}"),
        })
        .collect();
    let failed = calls.iter().filter(|call| call.error.is_some()).count();
    let failed = if failed > 0 {
        format!(", {failed} failed")
    } else {
        String::new()
    };
    let _ = write!(
        out,
        "<details class=\"host-calls\"{}><summary>{}: {}{failed}</summary>",
        if calls.len() <= HOST_CALLS_OPEN {
            " open"
        } else {
            ""
        },
        escape(&plural(calls.len(), "host call")),
        escape(&names.join(", ")),
    );
    for call in calls {
        host_call(out, call);
    }
    out.push_str("</details>");
}

fn host_call(out: &mut String, call: &HostCall) {
    let inline = call.arguments.chars().count() <= ARGUMENTS_INLINE_CHARS;
    let outcome = if call.error.is_some() {
        "failed".to_owned()
    } else {
        let items = if call.result_items == 1 {
            String::new()
        } else {
            format!("{} items, ", thousands(call.result_items))
        };
        format!("{items}{} bytes", thousands(call.result_bytes))
    };
    let _ = write!(
        out,
        "<div class=\"host-call{}\"><div class=\"host-call-head\"><code>{}({})</code> · {} · {}\
         </div>",
        if call.error.is_some() { " failed" } else { "" },
        escape(&call.name),
        if inline {
            escape(&call.arguments)
        } else {
            "…".to_owned()
        },
        seconds(call.seconds),
        escape(&outcome),
    );
    if !inline {
        text_block(out, "arguments", &call.arguments, false);
    }
    if let Some(result) = &call.result {
        let shown = result.chars().count();
        let label = if call.result_bytes > shown as u64 {
            format!(
                "result (a preview of {} bytes)",
                thousands(call.result_bytes)
            )
        } else {
            "result".to_owned()
        };
        if shown > RESULT_OPEN_CHARS {
            let _ = write!(
                out,
                "<details class=\"text result\"><summary>{}</summary><pre>{}</pre></details>",
                escape(&label),
                escape(result)
            );
        } else {
            text_block(out, &label, result, false);
        }
    }
    if let Some(error) = &call.error {
        let _ = write!(out, "<pre class=\"error\">{}</pre>", escape(error));
    }
    out.push_str("</div>");
}
