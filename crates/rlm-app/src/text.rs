//! Text for people: control characters neutralised, sizes, counts, dollars. Every front end
//! shows an operation's notes, errors and records with these, so a size or a cost reads the
//! same on a terminal, in an MCP result and in Python.

use std::borrow::Cow;

/// Control characters in `text` as visible escapes, so text from a model, a REPL, a document or
/// a file name cannot move the cursor, erase lines, retitle the window or ring the bell.
///
/// `\n` and `\t` are kept. Other C0 controls and DEL are shown as `\xNN` (ESC as `\x1b`, a
/// carriage return as `\x0d`); C1 controls (U+0080–U+009F, which some terminals treat like
/// ESC-sequences) and bidi controls (U+202E would reorder the line) as `\u{NN}`. Everything
/// else, including non-ASCII text, is unchanged.
/// Borrowed when there is nothing to replace, which is the common case.
pub fn neutralize(text: &str) -> Cow<'_, str> {
    // Bidi controls too: U+202E would reorder what the terminal shows.
    let needs = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || rlm_context::fence::is_bidi_control(c)
    };
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs(c) {
            shown.push(c);
        } else if (c as u32) < 0x80 {
            shown.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            shown.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(shown)
}

/// Human-readable byte count (powers of 1000).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `1 turn`, `2 turns`: a count with its noun in the right number.
pub fn count(number: u64, noun: &str) -> String {
    if number == 1 {
        format!("1 {noun}")
    } else {
        format!("{number} {noun}s")
    }
}

/// What a call or a run read from and wrote to the providers' prompt caches, as
/// ` · cache 4,200 read, 700 written` (a part that is zero left out), or nothing when both are.
pub fn cache_note(usage: &rlm_llm::Usage) -> String {
    let parts: Vec<String> = [
        (usage.cache_read_tokens, "read"),
        (usage.cache_write_tokens, "written"),
    ]
    .into_iter()
    .filter(|(tokens, _)| *tokens > 0)
    .map(|(tokens, verb)| format!("{} {verb}", rlm_context::thousands(tokens)))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" · cache {}", parts.join(", "))
    }
}

/// US dollars with four decimals. Never `$-0.0000`: a sum of no costs can be negative zero,
/// and spend is never below zero.
pub fn usd(amount: f64) -> String {
    let amount = if amount > 0.0 { amount } else { 0.0 };
    format!("${amount:.4}")
}

/// A cost for a person: `$0.0123`; `≥ $0.0123 (some prices unknown)` when some calls had no
/// price; `cost unknown` when none had one (a local model) rather than a made-up `$0.0000`.
pub fn cost(cost_usd: f64, unpriced_calls: u64) -> String {
    match unpriced_calls {
        0 => usd(cost_usd),
        _ if cost_usd <= 0.0 => "cost unknown".to_owned(),
        _ => format!("≥ {} (some prices unknown)", usd(cost_usd)),
    }
}

/// [`cost`] of a model's totals.
pub fn totals_cost(totals: &rlm_llm::ModelTotals) -> String {
    cost(totals.cost_usd, totals.unpriced_calls)
}

/// The name in `known` nearest `name` by edit distance, when it is near enough to be a typo
/// of it (a "did you mean" for unknown keys, arguments and fields).
pub fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|candidate| (edit_distance(name, candidate), *candidate))
        .filter(|(distance, candidate)| {
            *distance > 0 && *distance <= 2.max(candidate.chars().count() / 3)
        })
        .min()
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpriced_cost_is_unknown_not_zero() {
        assert_eq!(cost(0.0123, 0), "$0.0123");
        assert_eq!(cost(0.0, 0), "$0.0000");
        assert_eq!(cost(0.0, 2), "cost unknown");
        assert_eq!(cost(0.5, 1), "≥ $0.5000 (some prices unknown)");
    }

    #[test]
    fn cache_notes_name_only_what_happened() {
        let usage = |read, write| rlm_llm::Usage {
            input_tokens: 10_000,
            output_tokens: 5,
            cache_read_tokens: read,
            cache_write_tokens: write,
        };
        assert_eq!(cache_note(&usage(0, 0)), "");
        assert_eq!(cache_note(&usage(4_200, 0)), " · cache 4,200 read");
        assert_eq!(cache_note(&usage(0, 700)), " · cache 700 written");
        assert_eq!(
            cache_note(&usage(12_345, 700)),
            " · cache 12,345 read, 700 written"
        );
    }

    #[test]
    fn a_typo_finds_its_name_and_a_stranger_finds_none() {
        let known = ["model", "subcall_model", "max_retries", "max_output_tokens"];
        assert_eq!(closest("modle", &known), Some("model"));
        assert_eq!(closest("max_retry", &known), Some("max_retries"));
        assert_eq!(closest("temperature", &known), None);
        assert_eq!(closest("model", &known), None, "an exact name is no typo");
    }

    #[test]
    fn counts_and_dollars_read_right() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(2, "model call"), "2 model calls");
        assert_eq!(usd(-0.0), "$0.0000");
        assert_eq!(usd([].iter().sum::<f64>()), "$0.0000");
        assert_eq!(usd(0.01234), "$0.0123");
    }

    #[test]
    fn neutralize_shows_controls_and_keeps_newlines_and_tabs() {
        assert!(matches!(neutralize("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            neutralize("a\x1b]0;pwned\x07b\r\x1b[Kc\u{9b}d\u{7f}"),
            "a\\x1b]0;pwned\\x07b\\x0d\\x1b[Kc\\u{9b}d\\x7f"
        );
        assert_eq!(neutralize("héllo ✓\n"), "héllo ✓\n");
        assert_eq!(neutralize("a\u{202E}b\u{2067}c"), "a\\u{202e}b\\u{2067}c");
    }
}
