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
}

#[test]
fn importing_twice_under_one_name_is_refused() {
    let Some(wheel) = common::wheel("tokenlearn_static_model-0.1.1") else {
        return;
    };
    let models = tempfile::tempdir().unwrap();
    rlm_embed::import(&wheel, models.path(), &ImportOptions::default()).unwrap();
    let err = rlm_embed::import(&wheel, models.path(), &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    // A second name gets its own directory and the same vectors, but a different id.
    let other = rlm_embed::import(
        &wheel,
        models.path(),
        &ImportOptions::default().with_name(Some("second".to_owned())),
    )
    .unwrap();
    assert!(other.id.as_str().starts_with("second@"));
    assert_eq!(ModelsDir::new(models.path()).list().unwrap().len(), 2);
}
