//! The best BM25 hits of a query in one pass, in one total order: score, highest first, then
//! chunk id, lowest first, so the same store answers the same way whatever its segment layout.
//!
//! A hit's score is summed here from its terms' scores in query order. tantivy's own sum
//! depends on how a document was reached (the pruned top-k loop orders term scorers by
//! position, an intersection by clause), so two documents with equal scores could differ in
//! the last bit; summed here they are equal, and their order is their chunk ids'.
//!
//! Ties used to be settled after ranking, by asking tantivy for deeper and deeper lists until
//! the one past the cut scored lower. A log whose chunks all hold a word the same number of
//! times ties on nearly every chunk, and each deeper list was a new search: `ERROR` over
//! 150,000 chunks of a 288 MB log took 2.4 s. Here the pruned loop is told to let through
//! anything that could tie the kept hits' worst, a tie is decided by chunk id as it comes,
//! and the heap never holds more than the hits asked for.

use std::collections::BinaryHeap;

use tantivy::columnar::Column;
use tantivy::fastfield::AliveBitSet;
use tantivy::query::{EnableScoring, Query as _, Scorer, TermQuery, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet as _, Score, Searcher, SegmentReader, TERMINATED, Term};

use crate::error::Result;

/// How far below the kept hits' worst score a document tantivy scored may still tie it once
/// summed in query order (relative). Two orders of summing the same positive terms differ by
/// at most (terms − 1) × 2^-24 relative; this covers a thousand terms.
const SUM_SLACK: f32 = 1e-4;

/// A hit: its score summed in query order, and its chunk.
#[derive(Debug, Clone, Copy)]
struct Hit {
    score: Score,
    chunk: i64,
    /// Where it is (segment ordinal, document): not part of the order.
    segment: u32,
    document: DocId,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Hit {}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Hit {
    /// Worse is greater, so a max-heap's top is the worst kept: lower score, then higher id.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.chunk.cmp(&other.chunk))
    }
}

/// The best `limit` hits offered, segment by segment.
pub(crate) struct TopHits<'s> {
    searcher: &'s Searcher,
    /// One weight per query term, to sum a hit's score in query order.
    terms: Vec<Box<dyn Weight>>,
    limit: usize,
    heap: BinaryHeap<Hit>,
}

impl<'s> TopHits<'s> {
    /// Keeps the best `limit` hits of a query whose scoring terms are `terms` of `field`.
    pub(crate) fn new(
        searcher: &'s Searcher,
        field: Field,
        terms: &[String],
        limit: usize,
    ) -> Result<Self> {
        let scoring = EnableScoring::enabled_from_searcher(searcher);
        let terms = terms
            .iter()
            .map(|term| {
                TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                )
                .weight(scoring)
            })
            .collect::<tantivy::Result<_>>()?;
        Ok(Self {
            searcher,
            terms,
            limit,
            heap: BinaryHeap::with_capacity(limit.saturating_add(1)),
        })
    }

    /// Offers the live documents of segment `ordinal` that `weight` matches and `accepts`
    /// lets through, through tantivy's pruned loop: `accepts` is asked only of a document that
    /// could enter.
    pub(crate) fn collect_segment(
        &mut self,
        ordinal: u32,
        weight: &dyn Weight,
        accepts: &mut dyn FnMut(DocId) -> Result<bool>,
    ) -> Result<()> {
        if self.limit == 0 {
            return Ok(());
        }
        let reader = self.searcher.segment_reader(ordinal);
        let mut segment = SegmentScoring::new(reader, ordinal, &self.terms)?;
        let mut threshold = self.threshold();
        let mut failed = None;
        // tantivy calls back only for documents it scores above the threshold it was last
        // given, so a document turned away leaves the threshold where it was.
        weight.for_each_pruning(threshold, reader, &mut |document, _| {
            if failed.is_some() || segment.deleted(document) {
                return threshold;
            }
            match accepts(document) {
                Ok(true) => {
                    if let Some(hit) = segment.hit(document) {
                        self.offer(hit);
                        threshold = self.threshold();
                    }
                }
                Ok(false) => {}
                Err(error) => failed = Some(error),
            }
            threshold
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// Offers those of `documents` (ascending) of segment `ordinal` that `weight` matches.
    pub(crate) fn collect_listed(
        &mut self,
        ordinal: u32,
        weight: &dyn Weight,
        documents: &[DocId],
    ) -> Result<()> {
        if self.limit == 0 {
            return Ok(());
        }
        let reader = self.searcher.segment_reader(ordinal);
        let mut segment = SegmentScoring::new(reader, ordinal, &self.terms)?;
        let mut matches = weight.scorer(reader, 1.0)?;
        for &document in documents {
            let mut current = matches.doc();
            if current < document {
                current = matches.seek(document);
            }
            if current == TERMINATED {
                break;
            }
            if current == document
                && !segment.deleted(document)
                && let Some(hit) = segment.hit(document)
            {
                self.offer(hit);
            }
        }
        Ok(())
    }

    /// The kept hits, best first, as (chunk id, score).
    pub(crate) fn into_sorted(self) -> Vec<(i64, Score)> {
        // Ascending by `Ord`, which is best first.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|hit| (hit.chunk, hit.score))
            .collect()
    }

    /// [`TopHits::into_sorted`], each hit with where it is: its segment's ordinal and its
    /// document there.
    pub(crate) fn into_sorted_located(self) -> Vec<((i64, Score), (u32, DocId))> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|hit| ((hit.chunk, hit.score), (hit.segment, hit.document)))
            .collect()
    }

    fn offer(&mut self, hit: Hit) {
        if self.heap.len() < self.limit {
            self.heap.push(hit);
        } else if self.heap.peek().is_some_and(|worst| hit < *worst) {
            self.heap.pop();
            self.heap.push(hit);
        }
    }

    /// The score tantivy must see a document beat for it to be offered: anything, until
    /// `limit` hits are kept; then anything that could tie the worst kept, once summed here.
    fn threshold(&self) -> Score {
        match self.heap.peek() {
            Some(worst) if self.heap.len() >= self.limit => {
                (worst.score - worst.score.abs() * SUM_SLACK).next_down()
            }
            _ => Score::MIN,
        }
    }
}

/// What scoring a hit needs in one segment.
struct SegmentScoring {
    chunk_ids: Column<u64>,
    alive: Option<AliveBitSet>,
    /// One scorer per query term, each moved forwards only (hits come in document order).
    scorers: Vec<Box<dyn Scorer>>,
    /// The segment's ordinal in the searcher.
    ordinal: u32,
}

impl SegmentScoring {
    fn new(reader: &SegmentReader, ordinal: u32, terms: &[Box<dyn Weight>]) -> Result<Self> {
        Ok(Self {
            ordinal,
            chunk_ids: reader.fast_fields().u64("chunk_id")?,
            alive: reader.alive_bitset().cloned(),
            scorers: terms
                .iter()
                .map(|weight| weight.scorer(reader, 1.0))
                .collect::<tantivy::Result<_>>()?,
        })
    }

    fn deleted(&self, document: DocId) -> bool {
        self.alive
            .as_ref()
            .is_some_and(|alive| alive.is_deleted(document))
    }

    /// `document`'s hit: its chunk, and its terms' scores summed in query order (none for a
    /// document without a chunk id, which no load writes).
    fn hit(&mut self, document: DocId) -> Option<Hit> {
        let mut score: Score = 0.0;
        for scorer in &mut self.scorers {
            let mut current = scorer.doc();
            if current < document {
                current = scorer.seek(document);
            }
            if current == document {
                score += scorer.score();
            }
        }
        let chunk = self.chunk_ids.first(document)?;
        Some(Hit {
            score,
            chunk: chunk as i64,
            segment: self.ordinal,
            document,
        })
    }
}
