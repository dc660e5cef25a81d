//! The compact model against the tokenizers crate's Unigram on the same `tokenizer.json`.

use super::*;

/// A Unigram tokenizer with a lowercasing normalizer and a Metaspace pre-tokenizer. The
/// vocabulary has a piece listed twice (`ab`, the second score wins), pieces whose scores make
/// the shortest path lose, multi-byte pieces, and no piece for `d`, `x` or `ß` (unknown).
fn tokenizer_json() -> String {
    let vocab = [
        ("<unk>", 0.0),
        ("<pad>", 0.0),
        ("▁", -2.0),
        ("a", -3.0),
        ("b", -3.0),
        ("c", -3.5),
        ("ab", -9.0),
        ("abc", -4.0),
        ("▁a", -2.5),
        ("▁ab", -3.0),
        ("ab", -2.0),
        ("cc", -4.0),
        ("bc", -6.0),
        ("é", -3.0),
        ("日", -4.0),
        ("日本", -3.0),
        ("本", -4.0),
        ("\n", -5.0),
        ("dd", -1.0),
    ];
    let vocab: Vec<String> = vocab
        .iter()
        .map(|(piece, score)| format!("[{},{score:?}]", serde_json::json!(piece)))
        .collect();
    format!(
        r#"{{"version":"1.0","truncation":null,"padding":null,
        "added_tokens":[
          {{"id":0,"content":"<unk>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}},
          {{"id":1,"content":"<pad>","single_word":true,"lstrip":true,"rstrip":true,"normalized":true,"special":true}}],
        "normalizer":{{"type":"Lowercase"}},
        "pre_tokenizer":{{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}},
        "post_processor":null,"decoder":null,
        "model":{{"type":"Unigram","unk_id":0,"vocab":[{}],"byte_fallback":false}}}}"#,
        vocab.join(",")
    )
}

fn full(json: &str) -> tokenizers::Tokenizer {
    tokenizers::Tokenizer::from_bytes(json.as_bytes()).unwrap()
}

/// Deterministic texts over an alphabet of known, unknown and multi-byte characters.
fn texts(count: usize) -> Vec<String> {
    let alphabet = [
        "a", "b", "c", "d", "x", "é", "ß", "日", "本", " ", "  ", "\n", "A", "B", "<unk>", "<pad>",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let length = (next() % 24) as usize;
            (0..length)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn gives_the_ids_of_the_tokenizers_crate_on_every_text() {
    let json = tokenizer_json();
    let full = full(&json);
    let cache = build(json.as_bytes(), "digest", &full).expect("a Unigram tokenizer is cached");
    let compact = load(&cache, "digest").expect("the cache loads");
    let texts = texts(3_000);
    for text in &texts {
        let expected = full.encode_fast(text.as_str(), false).unwrap();
        let found = compact.encode_fast(text.as_str(), false).unwrap();
        assert_eq!(found.get_ids(), expected.get_ids(), "text {text:?}");
    }
    // The cases the random texts are meant to reach, so the comparison above covers them.
    let ids = |text: &str| compact.encode_fast(text, false).unwrap().get_ids().to_vec();
    assert_eq!(ids("ab"), [9], "`▁ab` beats `▁` + `ab`");
    assert_eq!(
        ids("dxß"),
        [2, 0],
        "unknown characters fuse into one unknown token"
    );
    assert_eq!(
        ids("dd"),
        [2, 18],
        "a piece made of characters unknown alone"
    );
    assert_eq!(
        compact.token_to_id("ab"),
        Some(10),
        "the last listing of a piece wins"
    );
}

#[test]
fn only_unigram_tokenizers_without_byte_fallback_are_cached() {
    let json = tokenizer_json();
    let with_fallback = json.replace(r#""byte_fallback":false"#, r#""byte_fallback":true"#);
    assert!(build(with_fallback.as_bytes(), "digest", &full(&with_fallback)).is_none());
    let word_level = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
        "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
        "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hi":1},"unk_token":"[UNK]"}}"#;
    assert!(build(word_level.as_bytes(), "digest", &full(word_level)).is_none());
}

#[test]
fn a_cache_of_another_tokenizer_or_damaged_is_refused_without_panicking() {
    let json = tokenizer_json();
    let cache = build(json.as_bytes(), "digest", &full(&json)).unwrap();
    assert!(load(&cache, "digest").is_some());
    assert!(load(&cache, "other digest").is_none());
    for cut in [0, 7, 20, cache.len() / 2, cache.len() - 1] {
        assert!(load(&cache[..cut], "digest").is_none(), "cut at {cut}");
    }
    let mut longer = cache.clone();
    longer.push(0);
    assert!(load(&longer, "digest").is_none());
    // Every single-byte change either is refused or still loads; none panics.
    for index in (0..cache.len()).step_by(3) {
        let mut damaged = cache.clone();
        damaged[index] ^= 0xff;
        if let Some(tokenizer) = load(&damaged, "digest") {
            let _ = tokenizer.encode_fast("abc dd 日本", false);
        }
    }
}
