//! A code block's calls of host functions that are not model calls (`rlm run --store`:
//! `buffers`, `search`, `get_chunks`, `grep`, `read`): name, arguments, result size and
//! preview, error. Every text from the log is escaped (maud's `html!`).

use maud::{Markup, html};
use rlm_types::thousands;

use super::format::seconds;
use super::parts::{plural, text_block};
use crate::schema::HostCall;

/// A code block's host calls are listed open up to this many, folded past it.
const HOST_CALLS_OPEN: usize = 5;
/// Arguments up to this many chars are shown in a host call's head line; longer ones below it.
const ARGUMENTS_INLINE_CHARS: usize = 160;
/// Result previews longer than this (in chars) are folded.
const RESULT_OPEN_CHARS: usize = 300;

/// A code block's calls of host functions (a store's `search`, `grep`, …), in call order:
/// listed open when few, folded under a summary of their names when many.
pub(super) fn render(calls: &[HostCall]) -> Markup {
    if calls.is_empty() {
        return html! {};
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
    html! {
        details class="host-calls" open[calls.len() <= HOST_CALLS_OPEN] {
            summary {
                (plural(calls.len(), "host call")) ": " (names.join(", "))
                @if failed > 0 { ", " (failed) " failed" }
            }
            @for call in calls { (host_call(call)) }
        }
    }
}

fn host_call(call: &HostCall) -> Markup {
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
    let class = if call.error.is_some() {
        "host-call failed"
    } else {
        "host-call"
    };
    html! {
        div class=(class) {
            div class="host-call-head" {
                code {
                    (call.name) "("
                    @if inline { (call.arguments) } @else { "…" }
                    ")"
                }
                " · " (seconds(call.seconds)) " · " (outcome)
            }
            @if !inline { (text_block("arguments", &call.arguments, false)) }
            @if let Some(result) = &call.result { (result_block(call, result)) }
            @if let Some(error) = &call.error { pre class="error" { (error) } }
        }
    }
}

/// A call's result preview, labelled with the full size when it was cut, folded when long.
fn result_block(call: &HostCall, result: &str) -> Markup {
    let shown = result.chars().count();
    let label = if call.result_bytes > shown as u64 {
        format!(
            "result (a preview of {} bytes)",
            thousands(call.result_bytes)
        )
    } else {
        "result".to_owned()
    };
    html! {
        @if shown > RESULT_OPEN_CHARS {
            details class="text result" {
                summary { (label) }
                pre { (result) }
            }
        } @else {
            (text_block(&label, result, false))
        }
    }
}
