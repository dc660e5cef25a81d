//! Numbers and sizes as the page prints them (counts are [`thousands`], the workspace's one
//! digit grouping).

use rlm_types::thousands;

/// A length in chars: `850 chars`, `12.3 K chars`, `4.1 M chars`.
pub fn chars(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} chars"),
        1_000..1_000_000 => format!("{:.1} K chars", n as f64 / 1e3),
        _ => format!("{:.1} M chars", n as f64 / 1e6),
    }
}

/// A text's size for a fold's label: chars and lines.
pub fn size_label(text: &str) -> String {
    let lines = text.lines().count();
    let lines = if lines == 1 {
        "1 line".to_owned()
    } else {
        format!("{} lines", thousands(lines as u64))
    };
    format!("{}, {lines}", chars(text.chars().count() as u64))
}

/// Seconds: `0.42 s`, `12.3 s`, `4 min 05 s`.
pub fn seconds(s: f64) -> String {
    seconds_shown(s).1
}

/// Seconds as [`seconds`] rounds them, and the text: a bar drawn from the rounded value
/// matches its label (two turns both shown as `0.00 s` get the same bar).
pub fn seconds_shown(s: f64) -> (f64, String) {
    if !s.is_finite() || s < 0.0 {
        return (0.0, "? s".to_owned());
    }
    if s < 10.0 {
        let rounded = (s * 100.0).round() / 100.0;
        (rounded, format!("{rounded:.2} s"))
    } else if s < 60.0 {
        let rounded = (s * 10.0).round() / 10.0;
        (rounded, format!("{rounded:.1} s"))
    } else {
        let whole = s.round() as u64;
        (
            whole as f64,
            format!("{} min {:02} s", whole / 60, whole % 60),
        )
    }
}

/// A cost in US dollars; `≥` when some calls had no price, "unknown" when nothing was priced
/// (a local model), never a made-up `$0.00`.
pub fn dollars(cost: f64, unpriced_calls: u64) -> String {
    if unpriced_calls > 0 && cost == 0.0 {
        return "unknown".to_owned();
    }
    let amount = if cost >= 0.01 || cost == 0.0 {
        format!("${cost:.2}")
    } else {
        format!("${cost:.4}")
    };
    if unpriced_calls > 0 {
        format!("≥ {amount}")
    } else {
        amount
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(chars(12_345), "12.3 K chars");
        assert_eq!(size_label("a\nb"), "3 chars, 2 lines");
        assert_eq!(seconds(0.4251), "0.43 s");
        assert_eq!(seconds(125.0), "2 min 05 s");
        assert_eq!(dollars(0.0012, 0), "$0.0012");
        assert_eq!(dollars(1.5, 2), "≥ $1.50");
        assert_eq!(
            dollars(0.0, 3),
            "unknown",
            "a local model has no price, not $0"
        );
        assert_eq!(dollars(0.0, 0), "$0.00");
    }
}
