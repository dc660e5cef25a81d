//! Words that look like API keys, for text a provider wrote: it may echo a key this process
//! never held (a wrong one, a part of one), which the registry cannot know. A heuristic on top
//! of the registry, never instead of it.

use super::MASK;

/// Prefixes of the keys providers issue (OpenAI and Anthropic `sk-…`, Groq `gsk_`, xAI, Hugging
/// Face, GitHub, GitLab, Google, Perplexity, Replicate, NVIDIA). Matched at the start of a word,
/// case-sensitively; the prefix stays, the rest is masked.
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "gsk_",
    "xai-",
    "hf_",
    "ghp_",
    "github_pat_",
    "glpat-",
    "AIza",
    "pplx-",
    "r8_",
    "nvapi-",
];

/// Field names whose value is a secret (`api_key=…`, `"x-api-key": "…"`), matched as whole
/// words whatever the case.
const SECRET_NAMES: &[&str] = &[
    "api_key",
    "api-key",
    "apikey",
    "x-api-key",
    "access_token",
    "auth_token",
];

/// `text` with the values of key-like words masked: a known key prefix followed by a
/// random-looking value (`sk-<redacted>`), `Bearer <redacted>`, and the value of a secret-named
/// field after `=` or `:` (quotes and spaces around them allowed). Word boundaries are any
/// character other than a letter, digit, `_` or `-`, so `key=sk-…;` and JSON quotes are seen.
pub(crate) fn mask_key_like_words(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut masked = String::with_capacity(text.len());
    let mut kept = 0;
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = bytes[at].is_ascii_alphabetic() && (at == 0 || !is_word(bytes[at - 1]));
        if let Some((start, end)) = starts_word.then(|| secret_at(text, at)).flatten() {
            masked.push_str(&text[kept..start]);
            masked.push_str(MASK);
            kept = end;
            at = end;
        } else {
            at += 1;
        }
    }
    masked.push_str(&text[kept..]);
    masked
}

/// The byte range of a secret value in the word starting at `at`, if it is one.
fn secret_at(text: &str, at: usize) -> Option<(usize, usize)> {
    let word = &text[at..];
    for prefix in KEY_PREFIXES {
        if word.starts_with(prefix) {
            let start = at + prefix.len();
            let end = value_end(text, start);
            if looks_like_key(&text[start..end]) {
                return Some((start, end));
            }
        }
    }
    if starts_with_ignoring_case(word, "bearer") {
        let after = at + "bearer".len();
        let start = after + spaces(&text[after..]);
        let end = value_end(text, start);
        if start > after && end - start >= super::MIN_MASKED_LEN {
            return Some((start, end));
        }
    }
    for name in SECRET_NAMES {
        if !starts_with_ignoring_case(word, name)
            || word
                .as_bytes()
                .get(name.len())
                .is_some_and(|&byte| is_word(byte))
        {
            continue;
        }
        let mut start = at + name.len();
        start += quote(&text[start..]);
        start += spaces(&text[start..]);
        if !matches!(text.as_bytes().get(start), Some(b'=' | b':')) {
            continue;
        }
        start += 1;
        start += spaces(&text[start..]);
        start += quote(&text[start..]);
        let end = value_end(text, start);
        if looks_like_key(&text[start..end]) {
            return Some((start, end));
        }
    }
    None
}

/// Letters, digits, `_` and `-`: what a word boundary is not.
fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// What a key (or a masked echo of one, `sk-…abcd`, `sk-****abcd`) is made of.
fn is_value(byte: u8) -> bool {
    is_word(byte) || matches!(byte, b'*' | b'~' | b'+' | b'/' | b'=')
}

/// The end of a value starting at `start`: value bytes, and dots or an ellipsis only between
/// them (a sentence's full stop after a key is not part of it).
fn value_end(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = start;
    loop {
        let rest = &text[end..];
        let gap = if rest.starts_with('…') {
            '…'.len_utf8()
        } else {
            rest.bytes().take_while(|&byte| byte == b'.').count()
        };
        let next = end + gap;
        match bytes.get(next) {
            Some(&byte) if is_value(byte) => end = next + 1,
            _ => return end,
        }
    }
}

/// Long enough, and random-looking: a digit, a mask of stars or dots, or long enough that a
/// word is unlikely (`hf_hub_download` stays).
fn looks_like_key(value: &str) -> bool {
    value.len() >= super::MIN_MASKED_LEN
        && (value
            .bytes()
            .any(|byte| byte.is_ascii_digit() || byte == b'*')
            || value.contains("...")
            || value.contains('…')
            || value.len() >= 24)
}

fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn spaces(text: &str) -> usize {
    text.bytes()
        .take_while(|&byte| byte == b' ' || byte == b'\t')
        .count()
}

fn quote(text: &str) -> usize {
    usize::from(text.starts_with(['"', '\'']))
}
