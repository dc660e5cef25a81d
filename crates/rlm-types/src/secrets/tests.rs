use super::*;

// The registry is process-wide: each test registers keys of its own, which no other test's
// text contains.

#[test]
fn a_registered_key_is_masked_in_every_shape() {
    let key = "gsk_Zq81bVtR5mKpW3xYcN7dLf2HsJ0aEu";
    register(key);
    for (text, shown) in [
        (format!("key={key};"), "key=<redacted>;".to_owned()),
        (
            format!(r#"{{"api_key":"{key}"}}"#),
            r#"{"api_key":"<redacted>"}"#.to_owned(),
        ),
        (format!("Bearer {key}."), "Bearer <redacted>.".to_owned()),
        // A part of 12 characters, and one of exactly 8, inside other words.
        (
            format!("tail x{}y end", &key[10..22]),
            "tail x<redacted>y end".to_owned(),
        ),
        (format!("({})", &key[20..28]), "(<redacted>)".to_owned()),
        // Twice, and back to back with itself.
        (
            format!("{key} and {key}{key}"),
            "<redacted> and <redacted>".to_owned(),
        ),
    ] {
        assert_eq!(mask(&text), shown, "{text}");
    }
    // Seven characters of it are not a secret of their own.
    let short = &key[3..10];
    assert_eq!(mask(short), short);
}

#[test]
fn text_without_secrets_is_borrowed() {
    register("plain-token-without-prefix-5150");
    let text = "an ordinary sentence about tokens, prefixes and 5150 things";
    assert!(matches!(mask(text), Cow::Borrowed(_)));
    assert!(matches!(mask("short"), Cow::Borrowed(_)));
}

#[test]
fn short_secrets_are_not_registered() {
    register(" abc1234 ");
    assert_eq!(mask("abc1234 abc1234"), "abc1234 abc1234");
}

#[test]
fn multibyte_text_around_and_inside_a_secret_stays_valid() {
    register("clé-secrète-éèà-0042");
    let text = "« clé-secrète-éèà-0042 » and ète-éèà-00";
    let shown = mask(text);
    assert_eq!(shown, "« <redacted> » and <redacted>");
}

#[test]
fn a_secret_with_a_quote_is_masked_as_json_writes_it() {
    register(r#"we"ird\key-77123"#);
    let line = serde_json::to_string(&serde_json::json!({ "k": r#"we"ird\key-77123"# })).unwrap();
    assert_eq!(mask(&line), r#"{"k":"<redacted>"}"#);
}
