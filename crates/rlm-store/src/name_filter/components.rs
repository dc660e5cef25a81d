//! Path components as terms: each document's buffer name and path split at `/`, one term per
//! component in one indexed field, so the documents a glob like `*/dir007/*` can match are a
//! posting list away, instead of a pass over every name and path of a segment.
//!
//! Every value a glob matches holds, as a whole component, each run of literal characters the
//! glob holds between two literal `/` (or a `/` and the glob's start or end): `dir007` in
//! `*/dir007/*`, `logs` and `a.txt` in `logs/*/a.txt`. `**` does not change that: `/**/`
//! matches at least one `/`, and `**/` at the start a `/` or the start of the value. A run after
//! a `/` that a wildcard, `?` or class ends (`dir00` in `*/dir00*`) starts a component, so its
//! documents are those of a range of terms. A run only part of a component (`*dir00*`) says
//! nothing a term can answer cheaply (that would take n-grams): such globs match values one by
//! one, as do globs with escapes, and the runs after an alternation are not read (its
//! alternatives may hold a `/`).

use std::str::Chars;

use tantivy::postings::{SegmentPostings, TermInfo};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet as _, InvertedIndexReader, SegmentReader, TERMINATED, TantivyError};

use crate::error::Result;
use crate::select::literal_prefix;

/// The indexed (not fast) field holding the components of each document's buffer name and
/// path, one untokenized term each.
pub(crate) const COMPONENT_FIELD: &str = "buffer_path_components";

/// Components are indexed cut to this many bytes (at a character boundary), well under the
/// token length past which tantivy silently drops a token; a glob's runs are cut the same way,
/// so a cut run still finds every document holding it, and maybe a few more.
const MAX_COMPONENT_BYTES: usize = 256;

/// The terms of a buffer's name and path: their non-empty components, cut, without repeats.
pub(crate) fn component_terms<'a>(name: &'a str, path: Option<&'a str>) -> Vec<&'a str> {
    let mut terms: Vec<&str> = name
        .split('/')
        .chain(path.into_iter().flat_map(|path| path.split('/')))
        .filter(|component| !component.is_empty())
        .map(cut)
        .collect();
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// `component` cut to [`MAX_COMPONENT_BYTES`].
fn cut(component: &str) -> &str {
    &component[..component.floor_char_boundary(MAX_COMPONENT_BYTES)]
}

/// Skips a class after its `[`: a `]` first (after an optional `!` or `^`) is a member.
pub(super) fn skip_class(characters: &mut Chars<'_>) {
    let mut members = 0;
    let mut negation_allowed = true;
    for member in characters.by_ref() {
        if negation_allowed && matches!(member, '!' | '^') {
            negation_allowed = false;
            continue;
        }
        negation_allowed = false;
        if member == ']' && members > 0 {
            break;
        }
        members += 1;
    }
}

/// What a glob says about the components of every value it matches.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct GlobComponents {
    /// Components every match holds (cut as indexed).
    pub(super) whole: Vec<String>,
    /// Text that a component of every match starts with, one such component per entry.
    pub(super) starts: Vec<String>,
}

impl GlobComponents {
    /// Reads the runs of literal characters of `glob` that start at a `/` or at its start
    /// (none for a glob with escapes, kept simple; none after an alternation, whose
    /// alternatives may hold a `/`).
    pub(crate) fn new(glob: &str) -> Self {
        let mut found = Self::default();
        if glob.contains('\\') {
            return found;
        }
        // The literal text since the last `/` or the start, while nothing else came since.
        let mut run = Some(String::new());
        let mut characters = glob.chars();
        while let Some(character) = characters.next() {
            match character {
                '/' => {
                    found.push_whole(run.take());
                    run = Some(String::new());
                }
                '*' | '?' | '[' | '{' | ']' | '}' => {
                    if let Some(start) = run.take().filter(|run| !run.is_empty()) {
                        found.starts.push(cut(&start).to_owned());
                    }
                    match character {
                        '[' => skip_class(&mut characters),
                        '{' => return found,
                        _ => {}
                    }
                }
                _ => {
                    if let Some(run) = &mut run {
                        run.push(character);
                    }
                }
            }
        }
        found.push_whole(run);
        found
    }

    fn push_whole(&mut self, run: Option<String>) {
        if let Some(run) = run.filter(|run| !run.is_empty()) {
            self.whole.push(cut(&run).to_owned());
        }
    }

    /// Whether the glob names no component, so [`GlobComponents::candidates`] cannot help.
    pub(crate) fn is_empty(&self) -> bool {
        self.whole.is_empty() && self.starts.is_empty()
    }

    /// The documents of `segment` (in order) that hold every whole component and, when no
    /// whole component is rare enough to start from, a component with one of the starts: a
    /// superset of the documents whose name or path matches. `None` when that would be more
    /// than `most` documents (before intersecting).
    pub(crate) fn candidates(
        &self,
        segment: &SegmentReader,
        field: Field,
        most: u32,
    ) -> Result<Option<Vec<DocId>>> {
        let index = segment.inverted_index(field)?;
        let mut whole = Vec::with_capacity(self.whole.len());
        for component in &self.whole {
            match index
                .terms()
                .get(component.as_bytes())
                .map_err(TantivyError::from)?
            {
                Some(info) => whole.push(info),
                // No document of the segment holds it.
                None => return Ok(Some(Vec::new())),
            }
        }
        whole.sort_by_key(|info| info.doc_freq);
        let (mut candidates, intersected) = match whole.first() {
            Some(rarest) if rarest.doc_freq <= most => (documents(&index, rarest)?, 1),
            _ => match self.starting(&index, most)? {
                Some(documents) => (documents, 0),
                None => return Ok(None),
            },
        };
        for info in &whole[intersected..] {
            if candidates.is_empty() {
                break;
            }
            let mut postings = index
                .read_postings_from_terminfo(info, IndexRecordOption::Basic)
                .map_err(TantivyError::from)?;
            candidates.retain(|&document| {
                // `seek` wants a target at or past where the postings are.
                let mut current = postings.doc();
                if current < document {
                    current = postings.seek(document);
                }
                current == document
            });
        }
        Ok(Some(candidates))
    }

    /// The documents holding a component with one of the starts, the longest first that at
    /// most `most` documents hold; `None` when every one is held by more.
    fn starting(&self, index: &InvertedIndexReader, most: u32) -> Result<Option<Vec<DocId>>> {
        let mut starts: Vec<&String> = self.starts.iter().collect();
        starts.sort_by_key(|start| std::cmp::Reverse(start.len()));
        'starts: for start in starts {
            let Some((low, high)) = literal_prefix(start) else {
                continue;
            };
            let mut stream = index
                .terms()
                .range()
                .ge(low)
                .lt(&high)
                .into_stream()
                .map_err(TantivyError::from)?;
            let mut infos = Vec::new();
            let mut held: u32 = 0;
            while stream.advance() {
                held = held.saturating_add(stream.value().doc_freq);
                if held > most {
                    continue 'starts;
                }
                infos.push(stream.value().clone());
            }
            let mut candidates = Vec::with_capacity(held as usize);
            for info in &infos {
                candidates.extend(documents(index, info)?);
            }
            candidates.sort_unstable();
            candidates.dedup();
            return Ok(Some(candidates));
        }
        Ok(None)
    }
}

/// The documents (deleted ones included) of a term's postings.
fn documents(index: &InvertedIndexReader, info: &TermInfo) -> Result<Vec<DocId>> {
    let mut postings: SegmentPostings = index
        .read_postings_from_terminfo(info, IndexRecordOption::Basic)
        .map_err(TantivyError::from)?;
    let mut documents = Vec::with_capacity(info.doc_freq as usize);
    let mut document = postings.doc();
    while document != TERMINATED {
        documents.push(document);
        document = postings.advance();
    }
    Ok(documents)
}
