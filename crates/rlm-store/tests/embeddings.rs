//! Embedding wiring: vectors stored per chunk, semantic and hybrid search, model mixing refused.
//! A small deterministic bag-of-words embedder stands in for a real model (the model crates
//! have their own tests against real wheels); what is tested here is the store's side.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;

use rlm_context::chunk::{ChunkOptions, Strategy};
use rlm_embed::{Embedder, ModelId, ModelKind};
use rlm_store::{Error, SearchMode, SearchRequest, Source, Store};

const DIMENSION: usize = 32;

/// Hashes each word to one of 32 buckets, then L2-normalizes.
#[derive(Debug)]
struct BagOfWords {
    id: ModelId,
}

impl BagOfWords {
    fn new(name: &str) -> Self {
        Self {
            id: ModelId::from_stored(format!("{name}@000000000000")),
        }
    }
}

impl Embedder for BagOfWords {
    fn model_id(&self) -> &ModelId {
        &self.id
    }
    fn kind(&self) -> ModelKind {
        ModelKind::Static
    }
    fn dimension(&self) -> usize {
        DIMENSION
    }
    fn max_tokens(&self) -> usize {
        512
    }
    fn embed(&self, texts: &[&str]) -> rlm_embed::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0f32; DIMENSION];
                for word in rlm_context::words::index_terms(text) {
                    let bucket = word
                        .bytes()
                        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                    vector[(bucket % DIMENSION as u64) as usize] += 1.0;
                }
                let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
                if norm > 0.0 {
                    vector.iter_mut().for_each(|v| *v /= norm);
                }
                vector
            })
            .collect())
    }
}

fn store_with(texts: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let sources: Vec<Source> = texts
        .iter()
        .map(|(name, text)| Source::Text {
            name: (*name).to_owned(),
            text: (*text).to_owned(),
        })
        .collect();
    let options = ChunkOptions {
        strategy: Strategy::Structure,
        size: 14,
        ..ChunkOptions::default()
    };
    store
        .load(sources, &options, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    (dir, store)
}

#[test]
fn embedding_covers_every_chunk_once_and_resumes() {
    let (_dir, mut store) = store_with(&[("a", "apple pie\n\nbanana bread\n\ncherry tart\n")]);
    let model = BagOfWords::new("bow");
    let first = store
        .embed(&model, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!((first.done, first.total), (3, 3));
    let second = store
        .embed(&model, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(
        second.total, 0,
        "already embedded chunks are not embedded again"
    );
    let status = store.embedding_status().unwrap();
    assert_eq!((status.embedded_chunks, status.chunks), (3, 3));
    assert_eq!(status.model.as_deref(), Some("bow@000000000000"));
}

#[test]
fn semantic_search_ranks_by_vector_and_respects_filters() {
    let (_dir, mut store) = store_with(&[
        ("fruit", "apple tree\n\nbanana split\n"),
        ("other", "apple apple\n\nrandom words\n"),
    ]);
    let model = BagOfWords::new("bow");
    store
        .embed(&model, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let mut request = SearchRequest::new("apple apple");
    request.mode = SearchMode::Semantic;
    let outcome = store.search_with(&request, Some(&model)).unwrap();
    assert_eq!(outcome.mode, SearchMode::Semantic);
    assert!(outcome.notice.is_none());
    assert_eq!(outcome.hits[0].buffer, "other");
    assert!(
        (outcome.hits[0].score - 1.0).abs() < 1e-4,
        "identical bag of words: cosine 1"
    );
    request.buffers = vec!["fruit".to_owned()];
    request.limit = 2;
    let filtered = store.search_with(&request, Some(&model)).unwrap();
    assert_eq!(filtered.hits.len(), 2);
    assert!(filtered.hits.iter().all(|hit| hit.buffer == "fruit"));
}

#[test]
fn hybrid_fuses_both_rankings() {
    let (_dir, mut store) = store_with(&[("doc", "alpha beta\n\ngamma delta\n\nalpha gamma\n")]);
    let model = BagOfWords::new("bow");
    store
        .embed(&model, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let mut request = SearchRequest::new("alpha gamma");
    request.mode = SearchMode::Hybrid;
    let outcome = store.search_with(&request, Some(&model)).unwrap();
    assert_eq!(outcome.mode, SearchMode::Hybrid);
    // The chunk holding both words is first in both lists, so first after fusion, with the
    // best possible fused score 2 / (k + 1).
    assert!(outcome.hits[0].snippet.contains("alpha gamma"));
    assert!((outcome.hits[0].score - 2.0 / 61.0).abs() < 1e-9);
    assert_eq!(outcome.hits.len(), 3);
}

#[test]
fn mixing_models_is_refused_unless_reset() {
    let (_dir, mut store) = store_with(&[("doc", "alpha beta\n")]);
    store
        .embed(&BagOfWords::new("one"), false, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let other = BagOfWords::new("two");
    let refused = store.embed(&other, false, &mut |_| ControlFlow::Continue(()));
    assert!(matches!(refused, Err(Error::ModelMismatch { .. })));
    let mut request = SearchRequest::new("alpha");
    request.mode = SearchMode::Semantic;
    assert!(
        store.search_with(&request, Some(&other)).is_err(),
        "querying with another model is refused"
    );
    let redone = store
        .embed(&other, true, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(redone.done, 1);
    assert_eq!(
        store.embedding_model().unwrap().unwrap().as_str(),
        "two@000000000000"
    );
}

#[test]
fn chunks_without_vectors_fall_back_or_warn() {
    let (_dir, mut store) = store_with(&[("doc", "alpha beta\n")]);
    let model = BagOfWords::new("bow");
    let mut request = SearchRequest::new("alpha");
    request.mode = SearchMode::Semantic;
    let before = store.search_with(&request, Some(&model)).unwrap();
    assert_eq!(before.mode, SearchMode::Bm25);
    assert!(before.notice.unwrap().contains("rlm embed"));
    store
        .embed(&model, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    let source = Source::Text {
        name: "new".to_owned(),
        text: "gamma\n".to_owned(),
    };
    store
        .load(vec![source], &ChunkOptions::default(), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let partial = store.search_with(&request, Some(&model)).unwrap();
    assert_eq!(partial.mode, SearchMode::Semantic);
    assert!(partial.notice.unwrap().contains("1 of 2 chunks"));
}

/// Many small chunks over two buffers, embedded, for the vector-file tests.
fn embedded_store(lines: usize) -> (tempfile::TempDir, Store, BagOfWords) {
    const WORDS: &[&str] = &[
        "apple", "banana", "cherry", "delta", "echo", "fig", "grape", "hotel", "india", "kilo",
        "lima", "mango", "nectar", "olive", "peach", "quince",
    ];
    let text = |seed: usize| {
        (0..lines)
            .map(|line| {
                let word = |n: usize| WORDS[(line * 7 + n * 13 + seed) % WORDS.len()];
                format!(
                    "{} {} {}\n\n",
                    word(1),
                    word(2 + line % 3),
                    word(5 + line % 5)
                )
            })
            .collect::<String>()
    };
    let (first, second) = (text(0), text(3));
    let (dir, mut store) = store_with(&[("first", &first), ("second", &second)]);
    let model = BagOfWords::new("bow");
    store
        .embed(&model, false, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    (dir, store, model)
}

/// What a semantic search must return: an in-memory `VectorIndex` over every chunk's vector,
/// restricted to `buffers` (all when empty).
fn expected_semantic(
    store: &Store,
    model: &BagOfWords,
    query: &str,
    buffers: &[&str],
    limit: usize,
) -> Vec<i64> {
    let mut index = rlm_embed::VectorIndex::new(model.model_id().clone(), DIMENSION);
    for buffer in store.list().unwrap() {
        if !buffers.is_empty() && !buffers.contains(&buffer.name.as_str()) {
            continue;
        }
        for chunk in store.chunks_of(&buffer).unwrap() {
            let text = store.chunk_text(chunk.id).unwrap();
            index
                .insert(chunk.id as u64, &model.embed_one(&text).unwrap())
                .unwrap();
        }
    }
    let query = model.embed_one(query).unwrap();
    index
        .search(&query, limit)
        .unwrap()
        .into_iter()
        .map(|hit| hit.id as i64)
        .collect()
}

fn semantic_ids(
    store: &Store,
    model: &BagOfWords,
    query: &str,
    buffers: &[&str],
    limit: usize,
) -> Vec<i64> {
    let mut request = SearchRequest::new(query);
    request.mode = SearchMode::Semantic;
    request.limit = limit;
    request.buffers = buffers.iter().map(|name| (*name).to_owned()).collect();
    store
        .search_with(&request, Some(model))
        .unwrap()
        .hits
        .into_iter()
        .map(|hit| hit.chunk_id)
        .collect()
}

#[test]
fn embedding_writes_the_vector_file_and_searches_reuse_it() {
    let (dir, store, model) = embedded_store(60);
    let file = dir.path().join("vectors.int8");
    let written = std::fs::read(&file).expect("embed writes the quantised vector file");
    // A rewrite renames a new file into place, so the inode tells a reuse from a rewrite.
    let inode = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap());
    let first_inode = inode();
    drop(store);
    // A new handle, as a new process: the search reads the file and leaves it as it was.
    let store = Store::open(dir.path()).unwrap();
    for query in ["apple banana", "olive", "quince mango peach"] {
        assert_eq!(
            semantic_ids(&store, &model, query, &[], 5),
            expected_semantic(&store, &model, query, &[], 5),
            "{query}"
        );
    }
    assert_eq!(inode(), first_inode, "the file is reused, not rebuilt");
    assert_eq!(std::fs::read(&file).unwrap(), written);
    // Removed, it is written again by the next search (which takes the lock a writer would).
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        semantic_ids(&store, &model, "olive", &[], 5),
        expected_semantic(&store, &model, "olive", &[], 5)
    );
    assert_eq!(std::fs::read(&file).unwrap(), written);
}

#[test]
fn a_stale_vector_file_is_rebuilt_not_used() {
    let (dir, mut store, model) = embedded_store(40);
    let before = std::fs::read(dir.path().join("vectors.int8")).unwrap();
    store.delete(&["first".to_owned()]).unwrap();
    // The file still lists the deleted buffer's chunks; the search must not return them.
    let ids = semantic_ids(&store, &model, "apple banana", &[], 10);
    assert_eq!(
        ids,
        expected_semantic(&store, &model, "apple banana", &[], 10)
    );
    let remaining: Vec<i64> = store
        .chunks_of(&store.buffer("second").unwrap())
        .unwrap()
        .iter()
        .map(|chunk| chunk.id)
        .collect();
    assert!(ids.iter().all(|id| remaining.contains(id)));
    let after = std::fs::read(dir.path().join("vectors.int8")).unwrap();
    assert!(
        after.len() < before.len(),
        "rebuilt without the deleted rows"
    );
}

#[test]
fn a_filtered_semantic_search_equals_the_search_of_those_buffers_alone() {
    let (_dir, store, model) = embedded_store(80);
    for query in ["apple banana", "kilo lima", "peach"] {
        for buffers in [&["first"][..], &["second"][..], &["first", "second"][..]] {
            assert_eq!(
                semantic_ids(&store, &model, query, buffers, 7),
                expected_semantic(&store, &model, query, buffers, 7),
                "{query} in {buffers:?}"
            );
        }
    }
}

#[test]
fn a_hybrid_search_fuses_the_bm25_and_semantic_lists_it_would_get_alone() {
    // The two halves run at once (BM25 beside the vector file's scan); the fused list must be
    // what the two searches give one after the other.
    let (_dir, store, model) = embedded_store(120);
    let ids = |mode: SearchMode, query: &str, buffers: &[&str], limit: usize| -> Vec<i64> {
        let mut request = SearchRequest::new(query);
        request.mode = mode;
        request.limit = limit;
        request.buffers = buffers.iter().map(|name| (*name).to_owned()).collect();
        let outcome = store.search_with(&request, Some(&model)).unwrap();
        assert_eq!(outcome.mode, mode);
        outcome.hits.into_iter().map(|hit| hit.chunk_id).collect()
    };
    for query in ["apple banana", "kilo lima olive", "peach"] {
        for buffers in [&[][..], &["second"][..]] {
            for limit in [3, 10] {
                let depth = (limit * 4).max(50);
                let lists = [
                    ids(SearchMode::Bm25, query, buffers, depth),
                    ids(SearchMode::Semantic, query, buffers, depth),
                ];
                let mut fused = rlm_store::reciprocal_rank_fusion(&lists, rlm_store::DEFAULT_RRF_K);
                fused.truncate(limit);
                let expected: Vec<i64> = fused.into_iter().map(|(id, _)| id).collect();
                assert_eq!(
                    ids(SearchMode::Hybrid, query, buffers, limit),
                    expected,
                    "{query} in {buffers:?}, limit {limit}"
                );
            }
        }
    }
}
