use super::*;

/// Deterministic pseudo-random unit vectors (xorshift), so tests need no extra crate.
pub(crate) fn unit_vectors(count: usize, dimension: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed.max(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..count)
        .map(|_| {
            let mut v: Vec<f32> = (0..dimension).map(|_| next()).collect();
            crate::pooling::normalize(&mut v);
            v
        })
        .collect()
}

fn model() -> ModelId {
    ModelId::from_stored("test@000000000000")
}

fn exact_top(
    vectors: &[Vec<f32>],
    query: &[f32],
    k: usize,
    allow: impl Fn(u64) -> bool,
) -> Vec<u64> {
    let mut scored: Vec<(u64, f32)> = vectors
        .iter()
        .enumerate()
        .filter(|(i, _)| allow(*i as u64))
        .map(|(i, v)| (i as u64, v.iter().zip(query).map(|(a, b)| a * b).sum()))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().take(k).map(|(id, _)| id).collect()
}

fn index_of(vectors: &[Vec<f32>]) -> VectorIndex {
    let mut index = VectorIndex::new(model(), vectors[0].len());
    for (id, v) in vectors.iter().enumerate() {
        index.insert(id as u64, v).unwrap();
    }
    index
}

#[test]
fn matches_exact_f32_ranking() {
    let vectors = unit_vectors(3000, 64, 7);
    let index = index_of(&vectors);
    for query in unit_vectors(20, 64, 99) {
        let hits = index.search(&query, 10).unwrap();
        let ids: Vec<u64> = hits.iter().map(|h| h.id).collect();
        assert_eq!(ids, exact_top(&vectors, &query, 10, |_| true));
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let expected: f32 = vectors[ids[0] as usize]
            .iter()
            .zip(&query)
            .map(|(a, b)| a * b)
            .sum();
        assert!((hits[0].score - expected).abs() < 1e-5);
    }
}

#[test]
fn filter_applies_before_ranking() {
    let vectors = unit_vectors(2000, 32, 3);
    let index = index_of(&vectors);
    let query = &vectors[5];
    let allow = |id: u64| id % 10 == 3;
    let hits = index.search_filtered(query, 10, allow).unwrap();
    assert_eq!(
        hits.len(),
        10,
        "k results although most ids are filtered out"
    );
    assert!(hits.iter().all(|h| allow(h.id)));
    let ids: Vec<u64> = hits.iter().map(|h| h.id).collect();
    assert_eq!(ids, exact_top(&vectors, query, 10, allow));
}

#[test]
fn fewer_allowed_than_k_returns_those() {
    let vectors = unit_vectors(100, 8, 5);
    let index = index_of(&vectors);
    let hits = index.search_filtered(&vectors[0], 10, |id| id < 3).unwrap();
    let mut ids: Vec<u64> = hits.iter().map(|h| h.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![0, 1, 2]);
}

#[test]
fn dimension_mismatch_is_an_error() {
    let mut index = VectorIndex::new(model(), 4);
    let err = index.insert(1, &[1.0, 0.0]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DimensionMismatch {
                expected: 4,
                found: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(index.search(&[1.0; 5], 1).is_err());
    assert!(index.insert(1, &[f32::NAN, 0.0, 0.0, 0.0]).is_err());
}

#[test]
fn remove_drops_every_copy_and_keeps_others_searchable() {
    let vectors = unit_vectors(50, 16, 11);
    let mut index = index_of(&vectors);
    index.insert(7, &vectors[7]).unwrap();
    assert_eq!(index.remove(7), 2);
    assert_eq!(index.len(), 49);
    let hits = index.search(&vectors[7], 49).unwrap();
    assert!(hits.iter().all(|h| h.id != 7));
    // The vector moved into a removed slot must still score as itself.
    let top = index.search(&vectors[49], 1).unwrap();
    assert_eq!(top[0].id, 49);
    assert!((top[0].score - 1.0).abs() < 1e-5);
}

#[test]
fn bytes_round_trip_and_reject_damage() {
    let vectors = unit_vectors(30, 12, 13);
    let index = index_of(&vectors);
    let bytes = index.to_bytes();
    let restored = VectorIndex::from_bytes(&bytes).unwrap();
    assert_eq!(restored, index);
    assert_eq!(restored.model(), &model());
    assert!(VectorIndex::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(VectorIndex::from_bytes(&bad).is_err());
    assert!(VectorIndex::from_bytes(&[]).is_err());
}

#[test]
fn single_vector_blob_round_trip() {
    let v = vec![0.25f32, -1.5, 3.0];
    let bytes = crate::vector_to_bytes(&v);
    assert_eq!(bytes.len(), 12);
    assert_eq!(crate::vector_from_bytes(&bytes, 3).unwrap(), v);
    assert!(crate::vector_from_bytes(&bytes, 4).is_err());
}

#[test]
fn empty_index_and_zero_k() {
    let index = VectorIndex::new(model(), 3);
    assert!(index.search(&[1.0, 0.0, 0.0], 5).unwrap().is_empty());
    let index = index_of(&unit_vectors(5, 3, 1));
    assert!(index.search(&[1.0, 0.0, 0.0], 0).unwrap().is_empty());
}

#[test]
fn integer_dot_product_matches_naive_at_every_length() {
    for length in [0usize, 1, 15, 16, 17, 64, 100, 384] {
        let a: Vec<i8> = (0..length).map(|i| ((i * 37) % 255) as i64 as i8).collect();
        let b: Vec<i8> = (0..length)
            .map(|i| (127 - ((i * 11) % 255) as i64) as i8)
            .collect();
        let naive: i32 = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        assert_eq!(dot_i8(&a, &b), naive, "length {length}");
        let bytes: Vec<u8> = b.iter().map(|&y| y as u8).collect();
        assert_eq!(
            crate::record_dots::dot(&a, &bytes),
            naive,
            "bytes, length {length}"
        );
        let extreme = vec![-127i8; length];
        assert_eq!(dot_i8(&extreme, &extreme), 127 * 127 * length as i32);
    }
}

#[test]
fn scores_of_records_are_the_scores_of_their_rows() {
    for dimension in [3usize, 64, 100] {
        let query = QuantizedQuery::new(&unit_vectors(1, dimension, 5)[0]);
        let mut records = Vec::new();
        let mut expected = Vec::new();
        for vector in unit_vectors(11, dimension, dimension as u64) {
            let mut row = Vec::new();
            let scale = quantize(&vector, &mut row);
            let bytes: Vec<u8> = row.iter().map(|&value| value as u8).collect();
            expected.push(query.score_bytes(&bytes, scale));
            records.extend(scale.to_le_bytes());
            records.extend(bytes);
        }
        let mut scores = vec![9.0];
        query.score_records(&records, &mut scores);
        assert_eq!(scores[0], 9.0, "appends");
        assert_eq!(scores[1..], expected[..], "dimension {dimension}");
    }
}

#[test]
fn candidates_do_not_depend_on_scan_order_or_splits() {
    // Scores repeat (every 7th position ties), so an order-dependent heap would keep different
    // positions for different orders.
    let scores: Vec<f32> = (0..500).map(|i| ((i * 37) % 71) as f32 / 7.0).collect();
    let mut forward = Candidates::for_top(10);
    for (position, &score) in scores.iter().enumerate() {
        forward.offer(score, position);
    }
    let mut backward = Candidates::for_top(10);
    for (position, &score) in scores.iter().enumerate().rev() {
        backward.offer(score, position);
    }
    let mut halves = Candidates::for_top(10);
    let mut second = Candidates::for_top(10);
    for (position, &score) in scores.iter().enumerate() {
        if position < 250 {
            halves.offer(score, position);
        } else {
            second.offer(score, position);
        }
    }
    halves.merge(second);
    // In runs, as a scan offers its blocks; last run first, so that ties with the worst kept
    // come with lower positions, which win them.
    let mut runs = Candidates::for_top(10);
    for (run, part) in scores.chunks(37).enumerate().rev() {
        runs.offer_scores(part, run * 37);
    }
    let sorted = |candidates: Candidates| {
        let mut positions = candidates.into_positions();
        positions.sort_unstable();
        positions
    };
    let expected = sorted(forward);
    assert_eq!(expected.len(), 40);
    assert_eq!(sorted(backward), expected);
    assert_eq!(sorted(halves), expected);
    assert_eq!(sorted(runs), expected);
    // All tied: the lowest positions are kept, however late they come.
    let mut tied = Candidates::for_top(10);
    for run in (0..10).rev() {
        tied.offer_scores(&[1.0; 10], run * 10);
    }
    assert_eq!(sorted(tied), (0..40).collect::<Vec<_>>());
}
