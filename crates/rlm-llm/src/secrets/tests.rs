use super::*;

// The registry is process-wide: each test registers keys of its own, which no other test's
// text contains.

#[test]
fn key_like_words_are_masked_at_punctuation_boundaries() {
    for (text, shown) in [
        (
            "Incorrect API key provided: sk-proj-****abcd. See docs.",
            "Incorrect API key provided: sk-<redacted>. See docs.",
        ),
        ("key=sk-abc123def456;", "key=sk-<redacted>;"),
        (
            r#"{"api_key":"sk-ant-api03-abcdef0123"}"#,
            r#"{"api_key":"<redacted>"}"#,
        ),
        (
            r#"{"x-api-key": "notprefixed0123456"}"#,
            r#"{"x-api-key": "<redacted>"}"#,
        ),
        ("invalid gsk_8f7e6d5c4b3a2", "invalid gsk_<redacted>"),
        ("(xai-0123456789ab)", "(xai-<redacted>)"),
        ("hf_AbCdEf0123456789,", "hf_<redacted>,"),
        ("sk-abc…wxyz1 is wrong", "sk-<redacted> is wrong"),
        (
            "authorization: Bearer eyJhbGciOi.J9x",
            "authorization: Bearer <redacted>",
        ),
        ("api_key: sk-9", "api_key: sk-9"),
    ] {
        assert_eq!(mask_key_like_words(text), shown, "{text}");
    }
    for kept in [
        "skip this sk- word",
        "task-0123456789 is not a key",
        "call hf_hub_download first",
        "max_tokens: 4096000000 is too many",
        "api_key: required",
        "the bearer of bad news",
    ] {
        assert_eq!(mask_key_like_words(kept), kept);
    }
}

#[test]
fn provider_text_masks_registered_keys_without_any_prefix() {
    register("Q7m2Xc9Lp4Rt8Vw1Zb6N");
    assert_eq!(
        mask_provider_text("token Q7m2Xc9Lp4Rt8Vw1Zb6N rejected; also sk-live0123456789"),
        "token <redacted> rejected; also sk-<redacted>"
    );
}
