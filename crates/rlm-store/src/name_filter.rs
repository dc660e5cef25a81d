//! `--path` inside the BM25 index: each document carries its buffer's name and path as fast
//! (columnar) fields, and their `/`-separated components as terms, so a glob is matched against
//! the distinct names of each segment (or the few its components lead to), never against the
//! buffer table, and ranking skips the documents it rules out.
//!
//! Resolving the glob to buffer ids in SQLite first cost a pass over every buffer whose name
//! or path could match (all of them for a glob starting with a wildcard) and a term set of
//! that many ids for tantivy to union; at 100k buffers a filter to a tenth of them took 15-25x
//! the unfiltered query. Here, per segment and per column (names, paths):
//!
//! - which values match: the values are sorted, so a glob that is a literal prefix and `*`
//!   is a range of value ordinals found by two lookups. `*` and a literal suffix (`*.rs`) is
//!   such a range too, in a second pair of columns holding each value reversed. A glob naming
//!   a whole component (`dir007` in `*/dir007/*`) or the start of one (`*/dir00*`, see
//!   [`components`]) takes its candidate documents from the postings of that component (the
//!   rarest, intersected with the others), when they are few (as for listing, below): only
//!   the candidates' values are matched, each read once in dictionary order, and the
//!   documents whose value matches are listed. Any other glob with a literal prefix reads only
//!   the values in that prefix's range. Any other glob starting with a wildcard matches values
//!   one by one: all of them when a sample says few match, else only the values of documents
//!   the ranking reaches (most of those match, so few are asked), until that has cost as much
//!   as reading them all.
//! - how ranking uses it: when a sample of the segment's documents says few match, the matching
//!   documents are listed (one read of the columns) and only those are scored; otherwise (or
//!   while which values match is not known yet) the filter runs inside tantivy's
//!   top-k loop, which keeps its block-max pruning: a document is checked (one column read)
//!   only when its score could enter the top k.
//!
//! An index written before the components were indexed has no component field: its globs
//! take the other ways, as they did then.

use std::ops::{Bound, Range};

use tantivy::columnar::{Column, StrColumn};
use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::{BitSet, DocId, Searcher, SegmentReader, TantivyError};

use crate::error::Result;
use crate::select::{compile_glob, literal_prefix};
use crate::top_hits::TopHits;

mod components;

pub(crate) use components::{COMPONENT_FIELD, component_terms};
use components::{GlobComponents, skip_class};

/// The fast field holding each document's buffer name.
pub(crate) const NAME_FIELD: &str = "buffer_name";

/// The fast field holding each document's buffer path (absent for buffers read from stdin or
/// given as text).
pub(crate) const PATH_FIELD: &str = "buffer_path";

/// [`NAME_FIELD`] with its characters in reverse order, so a suffix is a prefix.
pub(crate) const REVERSED_NAME_FIELD: &str = "buffer_name_reversed";

/// [`PATH_FIELD`] with its characters in reverse order.
pub(crate) const REVERSED_PATH_FIELD: &str = "buffer_path_reversed";

/// The name and path fields, each with its reversed twin.
const COLUMNS: [(&str, &str); 2] = [
    (NAME_FIELD, REVERSED_NAME_FIELD),
    (PATH_FIELD, REVERSED_PATH_FIELD),
];

/// `value` with its characters in reverse order.
pub(crate) fn reversed(value: &str) -> String {
    value.chars().rev().collect()
}

/// Matching documents at or below this share of a segment's documents (estimated from
/// [`SAMPLED_DOCUMENTS`]) make its matching documents listed and scored alone; above it, the
/// filter runs inside the pruned top-k loop. Measured at 100k buffers
/// (`benches/search_scale.rs`): a tenth runs at 1.1x the unfiltered query in the loop, a
/// thousandth at 2.2x in the loop and below 1x listed.
const LISTED_SHARE: u64 = 16;

/// Documents checked (evenly spaced) to estimate the share of a segment's documents that
/// match: the share of names says little when buffers differ in size (a hundred 2 MB logs
/// among ten thousand small files are a fifth of the chunks).
const SAMPLED_DOCUMENTS: u32 = 256;

/// Values sampled (evenly spaced, in the largest segment; each costs a dictionary lookup) to
/// guess whether a glob without a literal prefix or suffix matches few values of a column.
const SAMPLED_VALUES: u64 = 64;

/// A glob without a literal prefix is matched value by value as ranking reaches documents
/// until this share of the column's values were looked up (each lookup decodes part of a
/// dictionary block, ~20x the cost of a value read in order); then all values are matched in
/// one pass.
const LOOKUP_SHARE: u64 = 32;

/// How many of a column's sampled values a glob matched.
#[derive(Debug, Clone, Copy)]
struct Sample {
    matched: u64,
    sampled: u64,
}

impl Sample {
    /// Few match: their documents are listed and scored alone.
    fn few(self) -> bool {
        self.matched * LISTED_SHARE <= self.sampled
    }

    /// Most match (at least [`VERIFIED_SHARE`] of the sample, which is not empty): the top
    /// hits are worth ranking unfiltered and checking afterwards.
    fn most(self) -> bool {
        self.sampled > 0 && self.matched * VERIFIED_SHARE.1 >= self.sampled * VERIFIED_SHARE.0
    }
}

/// A glob that at least this share (numerator, denominator) of a sample of values matches is
/// checked after ranking: the unfiltered top hits, asked for deeper by the inverse share and a
/// margin, are checked in order, and their first matches are the answer (one total order), so
/// only a list's worth of documents is checked instead of every document the pruned loop
/// reaches. Measured at 100k buffers (`benches/search_scale.rs`): a glob matching nine tenths
/// ran at 2.1x the unfiltered query checked in the loop.
const VERIFIED_SHARE: (u64, u64) = (1, 2);

#[cfg(test)]
thread_local! {
    /// How often this thread's searches were answered by checking after ranking, and how
    /// often that list held too few matches.
    pub(crate) static VERIFIED_OUTCOMES: std::cell::Cell<(usize, usize)> =
        const { std::cell::Cell::new((0, 0)) };
}

/// A `--path` glob, ready to be matched against a segment's names and paths.
#[derive(Debug)]
pub(crate) struct BufferGlob {
    matcher: globset::GlobMatcher,
    /// The bytes every match starts with, and the first byte string past all that do.
    prefix: Option<(Vec<u8>, Vec<u8>)>,
    /// Every string starting with the prefix matches (the glob is the prefix and `*`).
    prefix_is_enough: bool,
    /// For a glob that is `*` and a literal suffix: the suffix reversed, and the first byte
    /// string past all that start with it.
    reversed_suffix: Option<(Vec<u8>, Vec<u8>)>,
    /// Text every match contains (the glob's longest run of literal characters), looked for
    /// before the glob's regex runs: a glob starting with `*` is matched against every value,
    /// and most values of a narrow one do not contain it.
    required: Option<memchr::memmem::Finder<'static>>,
    /// The components every match holds or has one starting with, to find candidate
    /// documents by term (see [`components`]).
    components: GlobComponents,
}

impl BufferGlob {
    /// Compiles `glob` as [`compile_glob`] does (`*` crosses `/`).
    pub(crate) fn new(glob: &str) -> Result<Self> {
        let matcher = compile_glob(glob)?;
        let prefix = literal_prefix(glob).map(|(low, high)| (low.to_vec(), high));
        // `*` is `.*` and `/**` is `/.*` with `.` matching every byte, so either after the
        // literal prefix accepts whatever follows it.
        let rest = &glob[prefix.as_ref().map_or(0, |(low, _)| low.len())..];
        let prefix_is_enough = prefix.is_some() && matches!(rest, "*" | "**");
        let required = required_literal(glob)
            .map(|literal| memchr::memmem::Finder::new(literal.as_bytes()).into_owned());
        // `*` is `.*`, `.` matching every byte: `*x` matches exactly the values ending in x.
        let reversed_suffix = glob
            .strip_prefix('*')
            .filter(|suffix| !suffix.is_empty() && !suffix.contains(['*', '?', '[', '{', '\\']))
            .map(reversed)
            .and_then(|suffix| literal_prefix(&suffix).map(|(low, high)| (low.to_vec(), high)));
        Ok(Self {
            matcher,
            prefix,
            prefix_is_enough,
            reversed_suffix,
            required,
            components: GlobComponents::new(glob),
        })
    }

    /// Whether a name or path matches, as the buffer-table filter decides it.
    fn is_match(&self, value: &[u8]) -> bool {
        self.required
            .as_ref()
            .is_none_or(|required| required.find(value).is_some())
            && std::str::from_utf8(value).is_ok_and(|text| self.matcher.is_match(text))
    }

    /// Which values of `column` match, as far as can be told before ranking. `sample` is
    /// how many of a sample of this column's values matched, of how many, taken in the first
    /// (largest) segment that needed it and kept for the others.
    fn matching(&self, column: &StrColumn, sample: &mut Option<Sample>) -> Result<Matching> {
        if let Some((low, high)) = &self.prefix {
            return if self.prefix_is_enough {
                starting_with(column, low, high)
            } else {
                self.walk(column, Some((low, high)))
            };
        }
        let sample = match sample {
            Some(sample) => *sample,
            None => *sample.insert(self.sample(column)?),
        };
        if sample.few() {
            self.walk(column, None)
        } else {
            Ok(Matching::Lazy(Lookups::new(column)))
        }
    }

    /// Matches the values of `column` in order, those from `low` to before `high` or all.
    fn walk(&self, column: &StrColumn, bounds: Option<(&[u8], &[u8])>) -> Result<Matching> {
        let dictionary = column.dictionary();
        let mut range = dictionary.range();
        if let Some((low, high)) = bounds {
            range = range.ge(low).lt(high);
        }
        let mut matching = BitSet::with_max_value(dictionary.num_terms() as u32);
        let mut stream = range.into_stream().map_err(TantivyError::from)?;
        while stream.advance() {
            if self.is_match(stream.key()) {
                matching.insert(stream.term_ord() as u32);
            }
        }
        Ok(Matching::Set(matching))
    }

    /// How many of evenly spaced values of `column` match.
    fn sample(&self, column: &StrColumn) -> Result<Sample> {
        let values = column.dictionary().num_terms() as u64;
        let sampled = values.min(SAMPLED_VALUES);
        let mut value = String::new();
        let mut matched = 0;
        for step in 0..sampled {
            column
                .ord_to_str(step * values / sampled, &mut value)
                .map_err(TantivyError::from)?;
            matched += u64::from(self.is_match(value.as_bytes()));
        }
        Ok(Sample { matched, sampled })
    }

    /// How one segment's documents are filtered; `None` when none of them can match. `samples`
    /// holds, per column, what [`BufferGlob::matching`] sampled.
    fn for_segment(
        &self,
        segment: &SegmentReader,
        samples: &mut [Option<Sample>; 2],
    ) -> Result<Option<Route>> {
        if let Some(documents) = self.by_components(segment)? {
            return Ok((!documents.is_empty()).then_some(Route::Listed(documents)));
        }
        let mut columns = Vec::with_capacity(2);
        for ((field, reversed_field), sample) in COLUMNS.into_iter().zip(samples) {
            let field = if self.reversed_suffix.is_some() {
                reversed_field
            } else {
                field
            };
            // A segment none of whose buffers has a path has no path column.
            let Some(column) = segment.fast_fields().str(field)? else {
                continue;
            };
            let matching = match &self.reversed_suffix {
                Some((low, high)) => starting_with(&column, low, high)?,
                None => self.matching(&column, sample)?,
            };
            if !matching.is_empty() {
                columns.push(ColumnFilter {
                    ordinals: column.ords().clone(),
                    matching,
                });
            }
        }
        if columns.is_empty() {
            return Ok(None);
        }
        let filter = SegmentFilter { columns };
        Ok(Some(if filter.few_documents(segment.max_doc()) {
            Route::Listed(filter.documents(segment.max_doc()))
        } else {
            Route::Checked(filter)
        }))
    }

    /// For a glob that is not a range of reversed values: the matching documents of
    /// `segment`, found among the documents holding its components when few enough hold them
    /// (else `None`, as in an index written before components were indexed). A literal prefix
    /// and `*` (`src/dir007/*`) is a range of values, but listing the documents of a range
    /// reads every document's ordinal in both columns: its components' postings hold them.
    fn by_components(&self, segment: &SegmentReader) -> Result<Option<Vec<DocId>>> {
        if self.reversed_suffix.is_some() || self.components.is_empty() {
            return Ok(None);
        }
        let Ok(field) = segment.schema().get_field(COMPONENT_FIELD) else {
            return Ok(None);
        };
        // As many as would be listed and scored alone (see `LISTED_SHARE`).
        let most = (u64::from(segment.max_doc()) / LISTED_SHARE) as u32;
        let Some(candidates) = self.components.candidates(segment, field, most)? else {
            return Ok(None);
        };
        let mut accepted = vec![false; candidates.len()];
        for (field, _) in COLUMNS {
            if let Some(column) = segment.fast_fields().str(field)? {
                self.accept_matching(&column, &candidates, &mut accepted)?;
            }
        }
        Ok(Some(
            candidates
                .into_iter()
                .zip(accepted)
                .filter_map(|(document, accepted)| accepted.then_some(document))
                .collect(),
        ))
    }

    /// Marks the `candidates` (in order) whose value in `column` matches: each distinct
    /// value decoded once, in dictionary order, so a block of the dictionary is decoded at
    /// most once, not once per value as a lookup by ordinal would.
    fn accept_matching(
        &self,
        column: &StrColumn,
        candidates: &[DocId],
        accepted: &mut [bool],
    ) -> Result<()> {
        let mut ordinals = vec![None; candidates.len()];
        column.ords().first_vals(candidates, &mut ordinals);
        let mut distinct: Vec<u64> = ordinals.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut verdicts = Vec::with_capacity(distinct.len());
        column
            .dictionary()
            .sorted_ords_to_term_cb(&distinct, |value| verdicts.push(self.is_match(value)))
            .map_err(TantivyError::from)?;
        for (accepted, ordinal) in accepted.iter_mut().zip(&ordinals) {
            let matches = ordinal
                .and_then(|ordinal| distinct.binary_search(&ordinal).ok())
                .and_then(|position| verdicts.get(position).copied());
            *accepted |= matches == Some(true);
        }
        Ok(())
    }
}

/// The ordinals of the values of `column` from `low` to before `high`.
fn starting_with(column: &StrColumn, low: &[u8], high: &[u8]) -> Result<Matching> {
    let dictionary = column.dictionary();
    let values = dictionary.num_terms() as u64;
    let (start, end) = dictionary
        .term_bounds_to_ord(Bound::Included(low), Bound::Excluded(high))
        .map_err(TantivyError::from)?;
    let start = match start {
        Bound::Included(ordinal) => ordinal,
        Bound::Excluded(ordinal) => ordinal.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match end {
        Bound::Included(ordinal) => ordinal.saturating_add(1),
        Bound::Excluded(ordinal) => ordinal,
        Bound::Unbounded => values,
    };
    Ok(Matching::Range(start.min(values)..end.min(values)))
}

/// The longest run of characters `glob` matches only literally, which every match therefore
/// contains; `None` for a glob with escapes (kept simple) or without such a run.
///
/// Runs end at `*`, `?`, a class and an alternation (whose text is skipped). A `/` next to
/// `**` is left out of the run it touches: `**/` at the start may match nothing at all.
fn required_literal(glob: &str) -> Option<String> {
    if glob.contains('\\') {
        return None;
    }
    let glob = glob.replace("/**", "**").replace("**/", "**");
    let mut runs = vec![String::new()];
    let mut characters = glob.chars();
    while let Some(character) = characters.next() {
        match character {
            '*' | '?' => runs.push(String::new()),
            '[' => {
                skip_class(&mut characters);
                runs.push(String::new());
            }
            '{' => {
                for member in characters.by_ref() {
                    if member == '}' {
                        break;
                    }
                }
                runs.push(String::new());
            }
            _ => runs.last_mut()?.push(character),
        }
    }
    runs.into_iter()
        .max_by_key(String::len)
        .filter(|run| !run.is_empty())
}

/// Which values of one column of one segment match, by ordinal.
enum Matching {
    Range(Range<u64>),
    Set(BitSet),
    /// Not known yet: each value is matched when a document holding it is first checked.
    Lazy(Lookups),
}

impl Matching {
    fn is_empty(&self) -> bool {
        match self {
            Matching::Range(range) => range.is_empty(),
            Matching::Set(set) => set.len() == 0,
            Matching::Lazy(_) => false,
        }
    }

    /// Whether the value at `ordinal` matches, when known.
    fn contains(&self, ordinal: u64) -> Option<bool> {
        match self {
            Matching::Range(range) => Some(range.contains(&ordinal)),
            Matching::Set(set) => Some(
                u32::try_from(ordinal)
                    .is_ok_and(|ordinal| ordinal < set.max_value() && set.contains(ordinal)),
            ),
            Matching::Lazy(_) => None,
        }
    }
}

/// Values of a column matched one at a time, remembered by ordinal.
struct Lookups {
    column: StrColumn,
    /// Per ordinal: 0 not looked up yet, 1 matches, 2 does not.
    verdicts: Vec<u8>,
    /// Lookups left before matching every value at once is cheaper.
    left: u64,
    value: String,
}

impl Lookups {
    fn new(column: &StrColumn) -> Self {
        let values = column.dictionary().num_terms() as u64;
        Self {
            column: column.clone(),
            verdicts: vec![0; values as usize],
            left: values / LOOKUP_SHARE,
            value: String::new(),
        }
    }
}

/// One column of one segment: each document's value ordinal and which ordinals match.
struct ColumnFilter {
    ordinals: Column<u64>,
    matching: Matching,
}

impl ColumnFilter {
    fn accepts(&mut self, document: DocId, glob: &BufferGlob) -> Result<bool> {
        let Some(ordinal) = self.ordinals.first(document) else {
            return Ok(false);
        };
        if let Some(known) = self.matching.contains(ordinal) {
            return Ok(known);
        }
        let Matching::Lazy(lookups) = &mut self.matching else {
            return Ok(false);
        };
        let Some(verdict) = lookups.verdicts.get(ordinal as usize).copied() else {
            return Ok(false);
        };
        if verdict != 0 {
            return Ok(verdict == 1);
        }
        if lookups.left == 0 {
            // Enough lookups: match every value in one pass, and answer from that.
            self.matching = glob.walk(&lookups.column, None)?;
            return self.accepts(document, glob);
        }
        lookups.left -= 1;
        lookups
            .column
            .ord_to_str(ordinal, &mut lookups.value)
            .map_err(TantivyError::from)?;
        let matches = glob.is_match(lookups.value.as_bytes());
        lookups.verdicts[ordinal as usize] = if matches { 1 } else { 2 };
        Ok(matches)
    }
}

/// The name and path columns of one segment, with what matches in each.
struct SegmentFilter {
    columns: Vec<ColumnFilter>,
}

impl SegmentFilter {
    /// Whether every column's matching values are looked up as documents are reached.
    fn lazy(&self) -> bool {
        self.columns
            .iter()
            .all(|column| matches!(column.matching, Matching::Lazy(_)))
    }

    fn accepts(&mut self, document: DocId, glob: &BufferGlob) -> Result<bool> {
        for column in &mut self.columns {
            if column.accepts(document, glob)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether every column's matching values are known and a sample of the segment's
    /// documents says few of them match.
    fn few_documents(&self, max_doc: DocId) -> bool {
        let known = |document| {
            self.columns.iter().any(|column| {
                column
                    .ordinals
                    .first(document)
                    .and_then(|ordinal| column.matching.contains(ordinal))
                    == Some(true)
            })
        };
        if self
            .columns
            .iter()
            .any(|column| matches!(column.matching, Matching::Lazy(_)))
        {
            return false;
        }
        let sampled = max_doc.min(SAMPLED_DOCUMENTS);
        let accepted = (0..sampled)
            .map(|step| (u64::from(step) * u64::from(max_doc) / u64::from(sampled)) as DocId)
            .filter(|&document| known(document))
            .count() as u64;
        accepted * LISTED_SHARE <= u64::from(sampled)
    }

    /// The segment's documents whose value matches in a column whose matching values are
    /// known, in order: each column read in blocks.
    fn documents(&self, max_doc: DocId) -> Vec<DocId> {
        const BLOCK: u32 = 1024;
        let mut accepted = vec![false; max_doc as usize];
        let mut documents: Vec<DocId> = Vec::with_capacity(BLOCK as usize);
        let mut ordinals = vec![None; BLOCK as usize];
        for column in &self.columns {
            for start in (0..max_doc).step_by(BLOCK as usize) {
                documents.clear();
                documents.extend(start..start.saturating_add(BLOCK).min(max_doc));
                let ordinals = &mut ordinals[..documents.len()];
                ordinals.fill(None);
                column.ordinals.first_vals(&documents, ordinals);
                for (&document, ordinal) in documents.iter().zip(ordinals.iter()) {
                    if ordinal
                        .is_some_and(|ordinal| column.matching.contains(ordinal) == Some(true))
                    {
                        accepted[document as usize] = true;
                    }
                }
            }
        }
        (0..max_doc)
            .filter(|&document| accepted[document as usize])
            .collect()
    }
}

/// How a segment's documents are filtered while ranking.
enum Route {
    /// Few match: these documents are scored, the others never looked at.
    Listed(Vec<DocId>),
    /// Many match: each document the pruned top-k loop reaches is checked.
    Checked(SegmentFilter),
}

/// A BM25 query whose top documents may only come from buffers a glob matches: the glob is
/// matched against each segment's values once, then [`FilteredSearch::collect`] can fill
/// deeper lists without matching again.
pub(crate) struct FilteredSearch<'a> {
    glob: &'a BufferGlob,
    weight: Box<dyn Weight>,
    segments: Vec<(u32, Route)>,
    /// Of how many sampled values at least one column's share matched, when most match and
    /// every segment is checked lazily (see [`VERIFIED_SHARE`]); `None` once checking after
    /// ranking fell short, or when it does not apply.
    verified: Option<Sample>,
}

impl<'a> FilteredSearch<'a> {
    pub(crate) fn new(
        searcher: &Searcher,
        query: &dyn Query,
        glob: &'a BufferGlob,
    ) -> Result<Self> {
        let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
        // The largest segment first, so a sample is taken where it says the most.
        let mut ordinals: Vec<u32> = (0..searcher.segment_readers().len() as u32).collect();
        ordinals
            .sort_by_key(|&ordinal| std::cmp::Reverse(searcher.segment_reader(ordinal).max_doc()));
        let mut samples = [None; 2];
        let mut segments = Vec::new();
        for ordinal in ordinals {
            if let Some(route) = glob.for_segment(searcher.segment_reader(ordinal), &mut samples)? {
                segments.push((ordinal, route));
            }
        }
        // The column whose sample matched most; a document matches when either column does.
        let widest = samples
            .into_iter()
            .flatten()
            .filter(|sample| sample.sampled > 0)
            .max_by(|a, b| (a.matched * b.sampled).cmp(&(b.matched * a.sampled)));
        let all_checked_lazily = !segments.is_empty()
            && segments.iter().all(|(_, route)| match route {
                Route::Checked(filter) => filter.lazy(),
                Route::Listed(_) => false,
            });
        Ok(Self {
            glob,
            weight,
            segments,
            verified: widest.filter(|sample| all_checked_lazily && sample.most()),
        })
    }

    /// The first `limit` hits the glob accepts, found by checking the unfiltered top hits
    /// after ranking (`top(depth)` makes an empty list of that depth), or `None` when this
    /// search is not one for that or the unfiltered list held too few matches (then
    /// [`FilteredSearch::collect`] is the way, and this is not tried again).
    pub(crate) fn verified_top<'s>(
        &mut self,
        limit: usize,
        top: impl FnOnce(usize) -> Result<TopHits<'s>>,
    ) -> Result<Option<Vec<(i64, f32)>>> {
        let Some(sample) = self.verified else {
            return Ok(None);
        };
        // Deep enough that the expected matches are half again the limit, plus a few.
        let depth = (limit as u64)
            .saturating_mul(sample.sampled)
            .saturating_mul(3)
            .div_ceil(sample.matched.max(1).saturating_mul(2))
            .saturating_add(4)
            .min(
                (limit as u64)
                    .saturating_mul(VERIFIED_SHARE.1 * 2)
                    .saturating_add(4),
            );
        let depth = usize::try_from(depth).unwrap_or(usize::MAX);
        let mut unfiltered = top(depth)?;
        for (ordinal, _) in &self.segments {
            unfiltered.collect_segment(*ordinal, self.weight.as_ref(), &mut |_| Ok(true))?;
        }
        let ranked = unfiltered.into_sorted_located();
        let complete = ranked.len() < depth;
        let mut accepted = Vec::with_capacity(limit);
        for (hit, (ordinal, document)) in ranked {
            if accepted.len() == limit {
                break;
            }
            let route = self
                .segments
                .iter_mut()
                .find(|(segment, _)| *segment == ordinal)
                .map(|(_, route)| route);
            if let Some(Route::Checked(filter)) = route
                && filter.accepts(document, self.glob)?
            {
                accepted.push(hit);
            }
        }
        let answered = accepted.len() == limit || complete;
        #[cfg(test)]
        VERIFIED_OUTCOMES.with(|outcomes| {
            let (yes, no) = outcomes.get();
            outcomes.set(if answered {
                (yes + 1, no)
            } else {
                (yes, no + 1)
            });
        });
        if answered {
            return Ok(Some(accepted));
        }
        self.verified = None;
        Ok(None)
    }

    /// Offers `top` the documents the glob accepts (`top` keeps the best; it can be asked
    /// again, with a deeper list, without matching the glob again).
    pub(crate) fn collect(&mut self, top: &mut TopHits<'_>) -> Result<()> {
        for (ordinal, route) in &mut self.segments {
            match route {
                Route::Listed(documents) => {
                    top.collect_listed(*ordinal, self.weight.as_ref(), documents)?;
                }
                Route::Checked(filter) => {
                    let glob = self.glob;
                    top.collect_segment(*ordinal, self.weight.as_ref(), &mut |document| {
                        filter.accepts(document, glob)
                    })?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
