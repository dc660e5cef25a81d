//! `grep` over a PostgreSQL store: the same searcher, matcher and printer as the local store's
//! ([`crate::grep`]), reading each buffer's text from its segments; with pg_trgm, only the
//! buffers that can match are read.
//!
//! Narrowing: when every match of the pattern must contain one of a few literals of three
//! bytes or more (`connection refused`, `(timeout|refused)`, `\bretry\b`), a buffer is read
//! only if a segment of it holds one (`LIKE '%…%'`, which the trigram index answers), or if it
//! has a segment the index cannot speak for (one holding a NUL byte, or ending inside a line,
//! which a literal could straddle). Lines are still checked by rlm's matcher alone, so the
//! lines found are the local store's; narrowing only skips buffers that cannot have any.

use std::io::Read;
use std::ops::ControlFlow;

use regex_syntax::hir::{Hir, HirKind};

use super::PostgresStore;
use crate::error::Result;
use crate::grep::{GrepLine, GrepOptions, GrepSummary, Printer, matcher, searcher};
use crate::read::BufferInfo;

/// Segments read per statement while a buffer is searched.
const SEGMENTS_PER_READ: i64 = 128;

/// Literals shorter than this have no trigram to look up.
const SHORTEST_LITERAL: usize = 3;

/// Most literals a narrowing asks for.
const MOST_LITERALS: usize = 16;

impl PostgresStore {
    pub(crate) fn grep(
        &self,
        pattern: &str,
        options: &GrepOptions,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> Result<GrepSummary> {
        let matcher = matcher(pattern, options)?;
        let mut buffers = self.filter_buffers(&options.buffers, options.path_glob.as_deref())?;
        if self.trigrams
            && let Some(literals) = required_literals(pattern, options)
        {
            let ids = self.buffers_holding(&literals, options.ignore_case)?;
            buffers.retain(|buffer| ids.binary_search(&buffer.id).is_ok());
        }
        let mut printer = Printer::new(options, emit);
        let mut searcher = searcher(options);
        for buffer in &buffers {
            let reader = Segments::new(self, buffer);
            if printer
                .search_reader(&mut searcher, &matcher, reader, &buffer.name)?
                .is_break()
            {
                break;
            }
        }
        Ok(printer.summary())
    }

    /// Ids of the buffers with a segment holding one of `literals`, or one the trigram index
    /// cannot speak for; sorted.
    fn buffers_holding(&self, literals: &[String], ignore_case: bool) -> Result<Vec<i64>> {
        let operator = if ignore_case { "ILIKE" } else { "LIKE" };
        let conditions: Vec<String> = (1..=literals.len())
            .map(|index| format!("text {operator} ${index}"))
            .collect();
        let sql = format!(
            "SELECT DISTINCT buffer_id FROM segments WHERE {} OR raw IS NOT NULL OR cut
             ORDER BY buffer_id",
            conditions.join(" OR ")
        );
        let patterns: Vec<String> = literals
            .iter()
            .map(|literal| format!("%{}%", escape_like(literal)))
            .collect();
        let parameters: Vec<&(dyn postgres::types::ToSql + Sync)> = patterns
            .iter()
            .map(|pattern| pattern as &(dyn postgres::types::ToSql + Sync))
            .collect();
        Ok(self
            .rows("narrow a grep", &sql, &parameters)?
            .iter()
            .map(|row| row.get(0))
            .collect())
    }
}

/// A buffer's text, read from its segments a batch at a time.
struct Segments<'a> {
    store: &'a PostgresStore,
    buffer_id: i64,
    /// Where the next batch starts, and whether there is one.
    next: Option<i64>,
    pending: Vec<u8>,
    offset: usize,
}

impl<'a> Segments<'a> {
    fn new(store: &'a PostgresStore, buffer: &BufferInfo) -> Self {
        Self {
            store,
            buffer_id: buffer.id,
            next: Some(0),
            pending: Vec::new(),
            offset: 0,
        }
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let Some(from) = self.next else {
            return Ok(());
        };
        let rows = self
            .store
            .rows(
                "read a buffer's text",
                "SELECT start, text, raw FROM segments WHERE buffer_id = $1 AND start >= $2
                 ORDER BY start LIMIT $3",
                &[&self.buffer_id, &from, &SEGMENTS_PER_READ],
            )
            .map_err(std::io::Error::other)?;
        self.pending.clear();
        self.offset = 0;
        for row in &rows {
            super::read::append_segment(&mut self.pending, row, 1);
        }
        self.next =
            (rows.len() as i64 == SEGMENTS_PER_READ).then(|| from + self.pending.len() as i64);
        Ok(())
    }
}

impl Read for Segments<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.offset >= self.pending.len() {
            self.fill()?;
        }
        let available = &self.pending[self.offset.min(self.pending.len())..];
        let count = available.len().min(buffer.len());
        buffer[..count].copy_from_slice(&available[..count]);
        self.offset += count;
        Ok(count)
    }
}

/// Literals one of which every match of the pattern holds, when there are a few usable ones;
/// `None` when the pattern does not say (then every selected buffer is read).
fn required_literals(pattern: &str, options: &GrepOptions) -> Option<Vec<String>> {
    let pattern = if options.fixed_strings {
        regex::escape(pattern)
    } else {
        pattern.to_owned()
    };
    // Parsed as written: case-insensitive matching is asked of the server with ILIKE.
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .build()
        .parse(&pattern)
        .ok()?;
    let literals = required(&hir)?;
    let usable = |literal: &Vec<u8>| {
        literal.len() >= SHORTEST_LITERAL
            && std::str::from_utf8(literal).is_ok()
            && literal.iter().all(|&byte| byte != 0)
            // ILIKE folds ASCII as Rust's matcher does, but `k` and `s` also match the Kelvin
            // sign and the long s there; such literals are not asked for.
            && (!options.ignore_case
                || (literal.is_ascii()
                    && !literal.iter().any(|byte| matches!(byte.to_ascii_lowercase(), b'k' | b's'))))
    };
    if literals.is_empty() || literals.len() > MOST_LITERALS || !literals.iter().all(usable) {
        return None;
    }
    Some(
        literals
            .into_iter()
            .map(|literal| String::from_utf8_lossy(&literal).into_owned())
            .collect(),
    )
}

/// One of these byte strings is in every match of `hir`, or `None` when no such set is known.
fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Literal(literal) => Some(vec![literal.0.to_vec()]),
        HirKind::Capture(capture) => required(&capture.sub),
        HirKind::Repetition(repetition) if repetition.min >= 1 => required(&repetition.sub),
        HirKind::Concat(parts) => parts
            .iter()
            .filter_map(required)
            // The set whose shortest literal is longest narrows best.
            .max_by_key(|set| set.iter().map(Vec::len).min().unwrap_or(0)),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for branch in branches {
                all.extend(required(branch)?);
            }
            Some(all)
        }
        _ => None,
    }
}

/// `literal` with LIKE's special characters escaped.
fn escape_like(literal: &str) -> String {
    let mut escaped = String::with_capacity(literal.len());
    for c in literal.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn literals(pattern: &str, ignore_case: bool) -> Option<Vec<String>> {
        let options = GrepOptions {
            ignore_case,
            ..GrepOptions::default()
        };
        required_literals(pattern, &options)
    }

    #[test]
    fn only_literals_every_match_holds_narrow_a_grep() {
        assert_eq!(
            literals("connection refused", false).unwrap(),
            ["connection refused"]
        );
        assert_eq!(literals(r"\bretry\b", false).unwrap(), ["retry"]);
        // The part whose shortest literal is longest: the alternation (7) over " after" (6).
        let mut either = literals("(timeout|refused) after", false).unwrap();
        either.sort();
        assert_eq!(either, ["refused", "timeout"]);
        let mut branches = literals("timeout|refused", false).unwrap();
        branches.sort();
        assert_eq!(branches, ["refused", "timeout"]);
        assert_eq!(literals("ab", false), None);
        assert_eq!(literals("error.*", false).unwrap(), ["error"]);
        assert_eq!(literals("(error)?x", false), None);
        assert_eq!(literals("[a-z]+", false), None);
        assert_eq!(literals("timeout|x", false), None);
        // Case-insensitive: asked with ILIKE, but never for letters Unicode folds further.
        assert_eq!(literals("timeout", true).unwrap(), ["timeout"]);
        assert_eq!(literals("task", true), None);
        assert_eq!(literals("(?i)timeout", false), None);
        assert_eq!(escape_like("100%_a\\b"), "100\\%\\_a\\\\b");
    }
}
