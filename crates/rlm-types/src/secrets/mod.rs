//! Secrets kept out of everything this process writes: a process-wide registry of the values
//! to mask (every [`crate::ApiKey`] registers its own when it is made) and [`mask`], which each
//! exit applies — errors, logs, trajectories, recordings, pages.
//!
//! [`mask`] replaces every run of text made of 8-byte windows of a registered secret with
//! [`MASK`], so the whole key, a part of it of [`MIN_MASKED_LEN`] or more bytes, and a key
//! quoted inside JSON or after `key=` are all masked, whatever surrounds them. Secrets shorter
//! than [`MIN_MASKED_LEN`] are not registered: masking every occurrence of a few letters
//! would maul ordinary text, and no hosted provider issues keys that short.
//!
//! The scan costs one multiply and one bit test per byte while nothing matches (a 16 Kbit
//! filter of the windows' hashes, confirmed against the sorted windows on a hit), and nothing
//! at all while no secret is registered or the text is shorter than a window.
//!
//! ```
//! use rlm_types::secrets;
//!
//! secrets::register("gsk_live_0123456789abcdefghij");
//! assert_eq!(
//!     secrets::mask(r#"{"api_key":"gsk_live_0123456789abcdefghij"} or 0123456789ab"#),
//!     r#"{"api_key":"<redacted>"} or <redacted>"#
//! );
//! assert_eq!(secrets::mask("nothing here"), "nothing here");
//! ```

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, PoisonError, RwLock};

/// What a masked run of text becomes.
pub const MASK: &str = "<redacted>";

/// The shortest secret registered, and the shortest part of one that is masked.
pub const MIN_MASKED_LEN: usize = WINDOW;

/// Bytes per window: a `u64` read at each position of the text.
const WINDOW: usize = 8;

/// Bits of the filter (a power of two): 2 KiB, a few percent full with a handful of keys of
/// a few hundred bytes.
const FILTER_BITS: usize = 1 << 14;

/// Whether anything is registered: the fast path of [`mask`] reads only this.
static ANY: AtomicBool = AtomicBool::new(false);

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(|| RwLock::new(Registry::new()));

/// The windows of every registered secret.
struct Registry {
    /// The secrets themselves, to register each once.
    secrets: Vec<Box<str>>,
    /// Every 8-byte window of every secret, sorted.
    windows: Vec<u64>,
    /// Bit `hash(window)` is set for every window.
    filter: Box<[u64]>,
}

impl Registry {
    fn new() -> Self {
        Self {
            secrets: Vec::new(),
            windows: Vec::new(),
            filter: vec![0; FILTER_BITS / 64].into_boxed_slice(),
        }
    }

    fn add(&mut self, secret: &str) {
        if self.secrets.iter().any(|known| **known == *secret) {
            return;
        }
        self.secrets.push(secret.into());
        for window in secret.as_bytes().windows(WINDOW) {
            let window = read_window(window);
            let bit = filter_bit(window);
            self.filter[bit / 64] |= 1 << (bit % 64);
            self.windows.push(window);
        }
        self.windows.sort_unstable();
        self.windows.dedup();
    }

    fn contains(&self, window: u64) -> bool {
        let bit = filter_bit(window);
        self.filter[bit / 64] & (1 << (bit % 64)) != 0
            && self.windows.binary_search(&window).is_ok()
    }
}

fn read_window(bytes: &[u8]) -> u64 {
    let mut window = [0; WINDOW];
    window.copy_from_slice(&bytes[..WINDOW]);
    u64::from_le_bytes(window)
}

fn filter_bit(window: u64) -> usize {
    // Fibonacci hashing: the top bits of the product mix every byte of the window.
    (window.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_BITS.trailing_zeros())) as usize
}

/// Adds `secret` (surrounding white space trimmed) to the values [`mask`] removes, for the
/// rest of the process. A secret shorter than [`MIN_MASKED_LEN`] is ignored. The form JSON
/// gives it, when that differs (a quote or backslash inside), is registered too, since logs
/// and recordings are JSON.
pub fn register(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_MASKED_LEN {
        return;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    registry.add(secret);
    if let Ok(quoted) = serde_json::to_string(secret) {
        let escaped = &quoted[1..quoted.len() - 1];
        if escaped != secret {
            registry.add(escaped);
        }
    }
    ANY.store(true, Ordering::Release);
}

/// `text` with every run of 8 or more bytes taken from a registered secret replaced by
/// [`MASK`]; borrowed when nothing is masked.
pub fn mask(text: &str) -> Cow<'_, str> {
    mask_with(text, MASK)
}

/// [`mask`] with another `replacement`: an HTML page, whose text is escaped before this
/// runs, takes `&lt;redacted&gt;`.
pub fn mask_with<'a>(text: &'a str, replacement: &str) -> Cow<'a, str> {
    if text.len() < WINDOW || !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(text);
    }
    let registry = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    let bytes = text.as_bytes();
    // Runs to mask, as byte ranges; overlapping or touching windows join one run.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for start in 0..=bytes.len() - WINDOW {
        if !registry.contains(read_window(&bytes[start..])) {
            continue;
        }
        let end = start + WINDOW;
        match runs.last_mut() {
            Some(run) if start <= run.1 => run.1 = end,
            _ => runs.push((start, end)),
        }
    }
    drop(registry);
    if runs.is_empty() {
        return Cow::Borrowed(text);
    }
    // A secret with non-ASCII characters can match from inside one: mask the whole character.
    let mut whole: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
    for (mut start, mut end) in runs {
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        match whole.last_mut() {
            Some(run) if start <= run.1 => run.1 = run.1.max(end),
            _ => whole.push((start, end)),
        }
    }
    let mut masked = String::with_capacity(text.len());
    let mut kept = 0;
    for (start, end) in whole {
        masked.push_str(&text[kept..start]);
        masked.push_str(replacement);
        kept = end;
    }
    masked.push_str(&text[kept..]);
    Cow::Owned(masked)
}

#[cfg(test)]
mod tests;
