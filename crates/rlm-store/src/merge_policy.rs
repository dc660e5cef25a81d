//! Which index segments to merge: tantivy's log policy, with every merge's input bounded.
//!
//! A merge reads its segments' files whole through the memory map, and those pages stay in the
//! process's resident set until it ends; it also holds a term dictionary builder (~8 MB). Under
//! tantivy's policy merges grow with the index (16 segments of the level below), so the peak
//! RSS of a load grew with the file: 34 MB of mapped segment files at 80 and 160 MB of
//! high-entropy text, and a merge of 16 of those merged segments, due past ~1.3 GB, would have
//! read ~400 MB. Bounding what one merge reads (and running one merge at a time) bounds that
//! part of a load's memory whatever the file's size; the cost is more segments in a large
//! store (about one per 32–64 MB of index, which is ~0.25 bytes per byte of text).

use std::collections::HashMap;
use std::path::PathBuf;

use tantivy::index::{SegmentComponent, SegmentId, SegmentMeta};
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};

/// Segments of one size class merged at once. tantivy's default (8) merges the ~12 segments a
/// 100 MB load flushes while the load runs, which cost 60% more load time; searching 16 small
/// segments instead of 1 adds well under a millisecond.
const MIN_SEGMENTS_PER_MERGE: usize = 16;

/// Most bytes of segment files one merge reads. Loading 320 MB of high-entropy text (one run
/// each, 2026-11-28): 8 MiB peaks at 81 MB RSS (17 MB of it mapped files) with 18 segments,
/// 16 MiB at 91–94 MB (25), 24 MiB at 99 MB (33), 64 MiB at 107 MB (35); tantivy's policy at
/// 140 MB (34), growing past that with larger files. A smaller cap leaves more segments for
/// every search: on a 1 GB corpus (1.28M chunks, 248 MB of index) BM25 top-10 p50 went from
/// 2.3 ms under tantivy's policy to 3.6 ms with 16 MiB, against 2.7 ms with 64 MiB.
const MAX_MERGE_BYTES: u64 = 64 * 1024 * 1024;

/// The files a merge reads (a segment's delete bitset is small and left out).
const COMPONENTS: [SegmentComponent; 6] = [
    SegmentComponent::Postings,
    SegmentComponent::Positions,
    SegmentComponent::Terms,
    SegmentComponent::FastFields,
    SegmentComponent::FieldNorms,
    SegmentComponent::Store,
];

/// tantivy's [`LogMergePolicy`] (segments of similar size, [`MIN_SEGMENTS_PER_MERGE`] at a
/// time), except that the segments of one merge hold at most `max_merge_bytes` of files and a
/// segment whose live documents fill half of that is not merged again.
#[derive(Debug)]
pub(crate) struct BoundedMergePolicy {
    /// The index directory, where the segments' files are.
    directory: PathBuf,
    levels: LogMergePolicy,
    max_merge_bytes: u64,
}

impl BoundedMergePolicy {
    /// The policy for the index in `directory`.
    pub(crate) fn new(directory: PathBuf) -> Self {
        Self::with_max_merge_bytes(directory, MAX_MERGE_BYTES)
    }

    fn with_max_merge_bytes(directory: PathBuf, max_merge_bytes: u64) -> Self {
        let mut levels = LogMergePolicy::default();
        levels.set_min_num_segments(MIN_SEGMENTS_PER_MERGE);
        Self {
            directory,
            levels,
            max_merge_bytes,
        }
    }

    /// Bytes of the segment's files on disk (a file that cannot be read counts 0).
    fn file_bytes(&self, segment: &SegmentMeta) -> u64 {
        COMPONENTS
            .iter()
            .filter_map(|component| {
                std::fs::metadata(
                    self.directory
                        .join(segment.relative_path(component.clone())),
                )
                .ok()
            })
            .map(|metadata| metadata.len())
            .sum()
    }
}

/// What the policy weighs of a segment.
#[derive(Debug, Clone, Copy)]
struct SegmentSize {
    /// Bytes of its files, which a merge reads whole.
    file_bytes: u64,
    /// The part of them its live documents are estimated to take.
    live_bytes: u64,
    has_deletes: bool,
}

impl MergePolicy for BoundedMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let sizes: HashMap<SegmentId, SegmentSize> = segments
            .iter()
            .map(|segment| {
                let file_bytes = self.file_bytes(segment);
                let live = f64::from(segment.num_docs()) / f64::from(segment.max_doc().max(1));
                let size = SegmentSize {
                    file_bytes,
                    live_bytes: (file_bytes as f64 * live) as u64,
                    has_deletes: segment.num_deleted_docs() > 0,
                };
                (segment.id(), size)
            })
            .collect();
        // A segment past half the bound could only be merged with a few small ones; it stays
        // as it is until deletions shrink it.
        let open: Vec<SegmentMeta> = segments
            .iter()
            .filter(|segment| {
                sizes
                    .get(&segment.id())
                    .is_some_and(|size| size.live_bytes <= self.max_merge_bytes / 2)
            })
            .cloned()
            .collect();
        self.levels
            .compute_merge_candidates(&open)
            .into_iter()
            .flat_map(|candidate| bounded_runs(candidate.0, &sizes, self.max_merge_bytes))
            .collect()
    }
}

/// Splits `segments` (in order) into runs of at most `max_bytes` of files. A run of one segment
/// is kept only if it has deleted documents (merging it alone drops them).
fn bounded_runs(
    segments: Vec<SegmentId>,
    sizes: &HashMap<SegmentId, SegmentSize>,
    max_bytes: u64,
) -> Vec<MergeCandidate> {
    let worth_merging = |run: &[SegmentId]| match run {
        [] => false,
        [only] => sizes.get(only).is_some_and(|size| size.has_deletes),
        _ => true,
    };
    let mut runs = Vec::new();
    let mut run: Vec<SegmentId> = Vec::new();
    let mut run_bytes = 0;
    for segment in segments {
        let bytes = sizes.get(&segment).map_or(0, |size| size.file_bytes);
        if bytes > max_bytes {
            // Written by an older rlm, whose merges were not bounded.
            continue;
        }
        if run_bytes + bytes > max_bytes {
            if worth_merging(&run) {
                runs.push(MergeCandidate(std::mem::take(&mut run)));
            }
            run.clear();
            run_bytes = 0;
        }
        run.push(segment);
        run_bytes += bytes;
    }
    if worth_merging(&run) {
        runs.push(MergeCandidate(run));
    }
    runs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tantivy::Index;
    use tantivy::schema::Schema;

    const MB: u64 = 1024 * 1024;

    /// Segments of `max_doc` documents (`deleted` of them deleted) and `bytes` of files each,
    /// the files created (sparse) in `dir`.
    fn segments(
        dir: &std::path::Path,
        count: usize,
        max_doc: u32,
        deleted: u32,
        bytes: u64,
    ) -> Vec<SegmentMeta> {
        let index = Index::create_in_ram(Schema::builder().build());
        (0..count)
            .map(|_| {
                let mut meta = index.new_segment_meta(SegmentId::generate_random(), max_doc);
                if deleted > 0 {
                    meta = meta.with_delete_meta(deleted, 1);
                }
                // Two of the files a merge reads, splitting the bytes.
                for (component, share) in [
                    (SegmentComponent::Postings, bytes - bytes / 4),
                    (SegmentComponent::Terms, bytes / 4),
                ] {
                    let file =
                        std::fs::File::create(dir.join(meta.relative_path(component))).unwrap();
                    file.set_len(share).unwrap();
                }
                meta
            })
            .collect()
    }

    fn merged(policy: &BoundedMergePolicy, segments: &[SegmentMeta]) -> Vec<Vec<SegmentId>> {
        policy
            .compute_merge_candidates(segments)
            .into_iter()
            .map(|candidate| candidate.0)
            .collect()
    }

    #[test]
    fn a_size_class_is_merged_in_runs_that_read_at_most_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        let small = segments(dir.path(), MIN_SEGMENTS_PER_MERGE, 2_000, 0, 3 * MB);
        let runs = merged(&policy, &small);
        // 8 segments of 3 MB fill 24 MB.
        assert_eq!(runs.iter().map(Vec::len).collect::<Vec<_>>(), [8, 8]);
        let mut all: Vec<SegmentId> = runs.concat();
        all.sort();
        let mut expected: Vec<SegmentId> = small.iter().map(SegmentMeta::id).collect();
        expected.sort();
        assert_eq!(all, expected);
    }

    #[test]
    fn fewer_segments_than_a_merge_takes_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        let small = segments(dir.path(), MIN_SEGMENTS_PER_MERGE - 1, 2_000, 0, MB);
        assert!(merged(&policy, &small).is_empty());
    }

    #[test]
    fn a_segment_over_half_the_bound_is_not_merged_again() {
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        let full = segments(dir.path(), MIN_SEGMENTS_PER_MERGE, 20_000, 0, 13 * MB);
        assert!(merged(&policy, &full).is_empty());
        // Under the same bound, twice as many documents in segments of half the size merge.
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        let half = segments(dir.path(), MIN_SEGMENTS_PER_MERGE, 20_000, 0, 12 * MB);
        assert_eq!(merged(&policy, &half).len(), 8);
    }

    #[test]
    fn a_full_segment_whose_documents_were_mostly_deleted_is_merged_alone() {
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        // 20 MB of files, a quarter of the documents live: 5 MB live.
        let sparse = segments(dir.path(), MIN_SEGMENTS_PER_MERGE, 20_000, 15_000, 20 * MB);
        let runs = merged(&policy, &sparse);
        assert_eq!(runs.len(), MIN_SEGMENTS_PER_MERGE);
        assert!(runs.iter().all(|run| run.len() == 1));
    }

    #[test]
    fn a_segment_larger_than_the_bound_is_never_merged() {
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        // Written by an unbounded merge; most documents deleted since.
        let huge = segments(dir.path(), MIN_SEGMENTS_PER_MERGE, 20_000, 19_000, 100 * MB);
        assert!(merged(&policy, &huge).is_empty());
    }

    #[test]
    fn missing_files_count_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let policy = BoundedMergePolicy::with_max_merge_bytes(dir.path().to_owned(), 24 * MB);
        let index = Index::create_in_ram(Schema::builder().build());
        let unseen: Vec<SegmentMeta> = (0..MIN_SEGMENTS_PER_MERGE)
            .map(|_| index.new_segment_meta(SegmentId::generate_random(), 100))
            .collect();
        assert_eq!(merged(&policy, &unseen).len(), 1);
    }
}
