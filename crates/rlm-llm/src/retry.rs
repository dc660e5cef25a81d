//! When to retry and how long to wait.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Retry settings. Delays grow as `base_delay * 2^attempt` with full jitter, capped at
/// `max_delay`; a server's own hint (`retry-after`, `retry-after-ms`, rate-limit reset headers)
/// replaces the computed delay, capped at `max_server_delay`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Longest wait accepted from a server hint; longer hints are cut to this.
    pub max_server_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_server_delay: Duration::from_secs(60),
        }
    }
}

/// Whether an HTTP status is worth another attempt: timeouts, conflicts, rate limits, server
/// errors and Anthropic's 529 "overloaded". 400/401/403/404 and other 4xx are final.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (0-based), preferring the server's hint.
    pub fn delay(&self, attempt: u32, headers: Option<&HeaderMap>) -> Duration {
        if let Some(hint) = headers.and_then(server_hint) {
            return hint.min(self.max_server_delay);
        }
        let exponential = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.min(16)))
            .min(self.max_delay);
        // Full jitter spreads a burst of failed fan-out calls over the whole window so they do
        // not come back in lockstep.
        exponential.mul_f64(fastrand::f64().max(0.05))
    }
}

/// The wait a response asks for, from the headers providers send.
pub fn server_hint(headers: &HeaderMap) -> Option<Duration> {
    server_hint_at(headers, SystemTime::now())
}

/// Anthropic's reset headers: RFC 3339 times at which a limit refills.
const ANTHROPIC_RESETS: [&str; 4] = [
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
];

/// [`server_hint`] with an explicit clock, for the timestamp headers.
pub fn server_hint_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    if let Some(seconds) = get("retry-after").and_then(|v| v.trim().parse::<f64>().ok())
        && seconds.is_finite()
        && seconds >= 0.0
    {
        return Some(Duration::from_secs_f64(seconds));
    }
    // OpenAI: "6m0s", "20ms", "1.5s". Take the longer of the two resets when both are given.
    let openai = ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|name| get(name).and_then(parse_go_duration))
        .max();
    if openai.is_some() {
        return openai;
    }
    ANTHROPIC_RESETS
        .iter()
        .filter_map(|name| get(name).and_then(parse_rfc3339))
        .filter_map(|at| at.duration_since(now).ok())
        .max()
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` into a system time.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let bytes = text.as_bytes();
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
    {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        let padded = format!("{:0<9}", &fraction[..digits.min(9)]);
        nanos = padded.parse().ok()?;
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') => {
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    let seconds = u64::try_from(seconds).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Parses Go-style durations (`1h2m3.5s`, `20ms`, `750us`).
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_end == 0 {
            return None;
        }
        let value: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += value * seconds_per_unit;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("1h1s"), Some(Duration::from_secs(3601)));
        assert_eq!(parse_go_duration("soon"), None);
        assert_eq!(parse_go_duration("5"), None);
    }

    #[test]
    fn server_hints_in_order_of_precision() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(server_hint(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(server_hint(&headers), Some(Duration::from_millis(150)));
        let mut reset = HeaderMap::new();
        reset.insert(
            "x-ratelimit-reset-requests",
            HeaderValue::from_static("20ms"),
        );
        reset.insert("x-ratelimit-reset-tokens", HeaderValue::from_static("1s"));
        assert_eq!(server_hint(&reset), Some(Duration::from_secs(1)));
    }

    #[test]
    fn anthropic_reset_timestamps() {
        let at = parse_rfc3339("2025-03-01T12:00:30Z").unwrap();
        let epoch = at.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(epoch, 1_740_830_430);
        let shifted = parse_rfc3339("2025-03-01T14:00:30.5+02:00").unwrap();
        assert_eq!(
            shifted.duration_since(at).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_rfc3339("2025-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("tomorrow"), None);

        let now = parse_rfc3339("2025-03-01T12:00:00Z").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            "anthropic-ratelimit-requests-reset",
            HeaderValue::from_static("2025-03-01T12:00:30Z"),
        );
        headers.insert(
            "anthropic-ratelimit-tokens-reset",
            HeaderValue::from_static("2025-03-01T11:59:00Z"),
        );
        assert_eq!(server_hint_at(&headers, now), Some(Duration::from_secs(30)));
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(server_hint_at(&headers, now), Some(Duration::from_secs(3)));
    }

    #[test]
    fn hints_are_capped_and_backoff_is_bounded() {
        let policy = RetryPolicy {
            max_server_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("3600"));
        assert_eq!(policy.delay(0, Some(&headers)), Duration::from_secs(5));
        for attempt in 0..40 {
            assert!(policy.delay(attempt, None) <= policy.max_delay);
        }
    }

    #[test]
    fn retryable_statuses() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }
}
