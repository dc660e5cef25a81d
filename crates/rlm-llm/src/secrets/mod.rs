//! Secrets kept out of everything this process writes: the process-wide registry and its
//! [`mask`] are the shared vocabulary's ([`rlm_types::secrets`], re-exported here whole, so a
//! key registered through either crate is masked by both). What this crate adds is for text a
//! provider wrote: `mask_provider_text` (crate-private) also masks words that look like keys.
//!
//! ```
//! use rlm_llm::secrets;
//!
//! secrets::register("gsk_live_0123456789abcdefghij");
//! assert_eq!(
//!     secrets::mask(r#"{"api_key":"gsk_live_0123456789abcdefghij"}"#),
//!     r#"{"api_key":"<redacted>"}"#
//! );
//! ```

mod key_like;

pub use rlm_types::secrets::*;

pub(crate) use key_like::mask_key_like_words;

/// What a provider said (an error body, a stream's error event), fit to quote: registered
/// secrets masked, and words that look like keys (`sk-…`, `gsk_…`, `Bearer …`, an `api_key`
/// value) too, since a provider may echo a key this process never held.
pub(crate) fn mask_provider_text(text: &str) -> String {
    mask_key_like_words(&mask(text))
}

#[cfg(test)]
mod tests;
