//! Naming buffers: by exact name, id, a unique path suffix or file name, and (for deletes) a
//! glob or a directory; plus the name and path-glob filters of search and grep.

use std::path::Path;

use globset::GlobBuilder;
use rusqlite::OptionalExtension as _;

use crate::error::{Error, Result};
use crate::read::{BUFFER_COLUMNS, BufferInfo, buffer_from_row};
use crate::store::LocalStore;

/// Candidates listed in an ambiguity error.
const CANDIDATES_SHOWN: usize = 10;

impl LocalStore {
    /// A buffer by exact name; else by id when `name` is a number no buffer is named; else the
    /// one buffer whose name or path ends with `name` at a `/` (so `app.py` or `src/app.py`
    /// finds `/home/me/project/src/app.py`). Several such buffers are an
    /// [`Error::AmbiguousBuffer`] listing them.
    pub fn buffer(&self, name: &str) -> Result<BufferInfo> {
        let exact = self
            .connection
            .query_row(
                &format!("SELECT {BUFFER_COLUMNS} FROM buffers b WHERE b.name = ?1"),
                [name],
                buffer_from_row,
            )
            .optional()?;
        if let Some(buffer) = exact {
            return Ok(buffer);
        }
        if let Ok(id) = name.parse::<i64>() {
            let by_id = self
                .connection
                .query_row(
                    &format!("SELECT {BUFFER_COLUMNS} FROM buffers b WHERE b.id = ?1"),
                    [id],
                    buffer_from_row,
                )
                .optional()?;
            if let Some(buffer) = by_id {
                return Ok(buffer);
            }
        }
        by_suffix(name, self.list()?)
    }

    /// What a delete of `pattern` removes: the buffer [`Store::buffer`] finds; else, for a
    /// glob (`*`, `?`, `[`, `{`), every buffer whose name or path matches it; else every
    /// buffer loaded from under the directory `pattern` (by name prefix or path). Nothing
    /// found is an [`Error::UnknownBuffer`].
    pub fn select_buffers(&self, pattern: &str) -> Result<Vec<BufferInfo>> {
        match self.buffer(pattern) {
            Ok(buffer) => return Ok(vec![buffer]),
            Err(Error::UnknownBuffer(_) | Error::AmbiguousBuffer { .. }) => {}
            Err(error) => return Err(error),
        }
        under_pattern(pattern, self.list()?)
    }

    /// Buffer ids a search may return: `None` means every document in the index is live (no
    /// filter and no index work pending), so the index needs no filter at all.
    ///
    /// Reads only what the filters need (ids, names, paths: no chunk counts, no sorting), and
    /// borrows each row's text for the glob, so a filter over 100k buffers is one pass over the
    /// buffer table.
    pub(crate) fn candidate_buffers(
        &self,
        names: &[String],
        path_glob: Option<&str>,
    ) -> Result<Option<Vec<i64>>> {
        if names.is_empty() && path_glob.is_none() && self.pending_index_work()? == 0 {
            return Ok(None);
        }
        let matcher = path_glob.map(compile_glob).transpose()?;
        if !names.is_empty() {
            let mut ids = Vec::with_capacity(names.len());
            for name in names {
                let buffer = self.buffer(name)?;
                if matcher
                    .as_ref()
                    .is_none_or(|matcher| matches_glob(matcher, &buffer))
                {
                    ids.push(buffer.id);
                }
            }
            ids.sort_unstable();
            ids.dedup();
            return Ok(Some(ids));
        }
        // A glob's literal prefix bounds the names and paths it can match: both columns are
        // indexed, so only those entries are read, each index on its own (a buffer matches when
        // its name or its path does, and a matching name or path lies in the prefix's range),
        // without visiting the table. A glob starting with a wildcard reads every row.
        let Some(matcher) = matcher else {
            let mut statement = self.connection.prepare_cached("SELECT id FROM buffers")?;
            let ids = statement
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<i64>>>()?;
            return Ok(Some(ids));
        };
        let mut ids = Vec::new();
        let Some((low, high)) = literal_prefix(matcher.glob().glob()) else {
            let mut statement = self
                .connection
                .prepare_cached("SELECT id, name, path FROM buffers")?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                let name = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                let path = row
                    .get_ref(2)?
                    .as_str_or_null()
                    .map_err(rusqlite::Error::from)?;
                if matcher.is_match(name) || path.is_some_and(|path| matcher.is_match(path)) {
                    ids.push(row.get(0)?);
                }
            }
            return Ok(Some(ids));
        };
        for query in [
            "SELECT id, name FROM buffers WHERE name >= ?1 AND name < ?2",
            "SELECT id, path FROM buffers WHERE path >= ?1 AND path < ?2",
        ] {
            let mut statement = self.connection.prepare_cached(query)?;
            let mut rows = statement.query(rusqlite::params![
                rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(low)),
                rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(&high)),
            ])?;
            while let Some(row) = rows.next()? {
                let value = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                if matcher.is_match(value) {
                    ids.push(row.get(0)?);
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(Some(ids))
    }

    /// Buffers passing the name/id and path-glob filters (all buffers when both are empty).
    /// Names are resolved as [`Store::buffer`] resolves them.
    pub fn filter_buffers(
        &self,
        names: &[String],
        path_glob: Option<&str>,
    ) -> Result<Vec<BufferInfo>> {
        self.filter_listed(names, path_glob, Self::list)
    }

    /// What grep searches of the buffers [`Store::filter_buffers`] passes, in the same order:
    /// only their ids and names, since grep holds the list to its end (a [`BufferInfo`] is
    /// ~400 bytes with its strings: 7 MB for 18,000 buffers). Spared the pass over the chunk
    /// index that counting chunks takes.
    pub(crate) fn grep_targets(
        &self,
        names: &[String],
        path_glob: Option<&str>,
    ) -> Result<Vec<GrepTarget>> {
        if !names.is_empty() {
            let buffers = self.filter_listed(names, path_glob, |_| Ok(Vec::new()))?;
            return Ok(buffers.into_iter().map(GrepTarget::from).collect());
        }
        let matcher = path_glob.map(compile_glob).transpose()?;
        let mut statement = self
            .connection
            .prepare_cached("SELECT id, name, path FROM buffers ORDER BY name")?;
        let mut rows = statement.query([])?;
        let mut targets = Vec::new();
        while let Some(row) = rows.next()? {
            let name = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
            let wanted = matcher.as_ref().is_none_or(|matcher| {
                matcher.is_match(name)
                    || row
                        .get_ref(2)
                        .ok()
                        .and_then(|path| path.as_str_or_null().ok().flatten())
                        .is_some_and(|path| matcher.is_match(path))
            });
            if wanted {
                targets.push(GrepTarget {
                    id: row.get(0)?,
                    name: name.into(),
                });
            }
        }
        Ok(targets)
    }

    fn filter_listed(
        &self,
        names: &[String],
        path_glob: Option<&str>,
        list: fn(&Self) -> Result<Vec<BufferInfo>>,
    ) -> Result<Vec<BufferInfo>> {
        let mut buffers = if names.is_empty() {
            list(self)?
        } else {
            let mut buffers = names
                .iter()
                .map(|name| self.buffer(name))
                .collect::<Result<Vec<_>>>()?;
            buffers.sort_by(|a, b| a.name.cmp(&b.name));
            buffers.dedup_by_key(|buffer| buffer.id);
            buffers
        };
        if let Some(glob) = path_glob {
            let matcher = compile_glob(glob)?;
            buffers.retain(|buffer| matches_glob(&matcher, buffer));
        }
        Ok(buffers)
    }
}

/// A buffer grep searches: its id and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GrepTarget {
    pub(crate) id: i64,
    pub(crate) name: Box<str>,
}

impl From<BufferInfo> for GrepTarget {
    fn from(buffer: BufferInfo) -> Self {
        Self {
            id: buffer.id,
            name: buffer.name.into(),
        }
    }
}

/// The one buffer among `buffers` whose name or path ends with `name` at a `/`.
pub(crate) fn by_suffix(name: &str, buffers: Vec<BufferInfo>) -> Result<BufferInfo> {
    let trimmed = name.trim_end_matches('/');
    let mut found: Vec<BufferInfo> = if trimmed.is_empty() {
        Vec::new()
    } else {
        buffers
            .into_iter()
            .filter(|buffer| {
                Path::new(&buffer.name).ends_with(trimmed)
                    || buffer
                        .path
                        .as_deref()
                        .is_some_and(|path| Path::new(path).ends_with(trimmed))
            })
            .collect()
    };
    match found.len() {
        0 => Err(Error::UnknownBuffer(name.to_owned())),
        1 => Ok(found.remove(0)),
        _ => Err(ambiguous(name, &found)),
    }
}

/// The buffers among `buffers` a glob matches, or those loaded from under the directory
/// `pattern`; none is an [`Error::UnknownBuffer`].
pub(crate) fn under_pattern(
    pattern: &str,
    mut buffers: Vec<BufferInfo>,
) -> Result<Vec<BufferInfo>> {
    if pattern.contains(['*', '?', '[', '{']) {
        let matcher = compile_glob(pattern)?;
        buffers.retain(|buffer| matches_glob(&matcher, buffer));
    } else {
        let directory = Path::new(pattern);
        let absolute = std::path::absolute(directory).ok();
        buffers.retain(|buffer| {
            Path::new(&buffer.name).starts_with(directory)
                || buffer.path.as_deref().is_some_and(|path| {
                    absolute
                        .as_deref()
                        .is_some_and(|directory| Path::new(path).starts_with(directory))
                })
        });
    }
    if buffers.is_empty() {
        return Err(Error::UnknownBuffer(pattern.to_owned()));
    }
    Ok(buffers)
}

/// The bytes every match of `glob` starts with, and the first byte string past all strings
/// with that prefix (the prefix with its last byte raised by one; UTF-8 never has a 0xFF byte,
/// and SQLite compares text byte by byte). `None` when the glob starts with a special character.
pub(crate) fn literal_prefix(glob: &str) -> Option<(&[u8], Vec<u8>)> {
    let end = glob.find(['*', '?', '[', '{', '\\']).unwrap_or(glob.len());
    let prefix = &glob.as_bytes()[..end];
    let (&last, head) = prefix.split_last()?;
    let mut high = head.to_vec();
    high.push(last.checked_add(1)?);
    Some((prefix, high))
}

pub(crate) fn matches_glob(matcher: &globset::GlobMatcher, buffer: &BufferInfo) -> bool {
    matcher.is_match(&buffer.name)
        || buffer
            .path
            .as_deref()
            .is_some_and(|path| matcher.is_match(path))
}

fn ambiguous(name: &str, found: &[BufferInfo]) -> Error {
    let mut candidates: Vec<String> = found
        .iter()
        .take(CANDIDATES_SHOWN)
        .map(|buffer| buffer.name.clone())
        .collect();
    if found.len() > CANDIDATES_SHOWN {
        candidates.push(format!("and {} more", found.len() - CANDIDATES_SHOWN));
    }
    Error::AmbiguousBuffer {
        name: name.to_owned(),
        matches: found.len(),
        candidates,
    }
}

/// The longest path glob taken, in bytes. Real globs are tens of bytes; the regex a glob
/// becomes grows with its length.
pub const MAX_GLOB_BYTES: usize = 4_096;

/// The deepest nesting of `{…}` alternatives a path glob may have. Each level is a group of
/// the regex it becomes, and past the regex parser's nesting limit the glob library panics
/// instead of failing (300 levels did).
pub const MAX_GLOB_NESTING: usize = 32;

/// Refuses a glob past [`MAX_GLOB_BYTES`] or [`MAX_GLOB_NESTING`] before it is compiled:
/// within both, compiling it cannot fail other than with an error. A brace counts where
/// globset reads one: not escaped, not inside a `[…]` class.
pub(crate) fn check_glob(glob: &str) -> Result<()> {
    let too_complex = |reason: String| {
        Err(Error::GlobTooComplex {
            preview: glob.chars().take(40).collect(),
            reason,
        })
    };
    if glob.len() > MAX_GLOB_BYTES {
        return too_complex(format!(
            "{} bytes; at most {} are taken",
            rlm_context::thousands(glob.len() as u64),
            rlm_context::thousands(MAX_GLOB_BYTES as u64)
        ));
    }
    let (mut depth, mut deepest) = (0_usize, 0_usize);
    let mut chars = glob.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => {
                in_class = true;
                // A `]` right after the opening (or after `!`/`^`) is part of the class.
                let rest = chars.as_str();
                let skip = usize::from(rest.starts_with(['!', '^']));
                if rest[skip..].starts_with(']') {
                    chars.nth(skip);
                }
            }
            ']' if in_class => in_class = false,
            '{' if !in_class => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' if !in_class => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_GLOB_NESTING {
        return too_complex(format!(
            "braces nested {deepest} deep; at most {MAX_GLOB_NESTING} levels are taken"
        ));
    }
    Ok(())
}

/// `*` matches across `/` too, so `*.md` and `docs/*` work on names and absolute paths alike.
/// A glob past the limits of [`check_glob`] is refused.
pub(crate) fn compile_glob(glob: &str) -> Result<globset::GlobMatcher> {
    check_glob(glob)?;
    Ok(GlobBuilder::new(glob)
        .literal_separator(false)
        .build()
        .map_err(|source| Error::Glob {
            glob: glob.to_owned(),
            source,
        })?
        .compile_matcher())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}a{}", "{".repeat(levels), "}".repeat(levels))
    }

    /// 300 nested braces made globset panic ("regex compilation shouldn't fail"); now such a
    /// glob, and one too long, are refused with an input error, and the deepest nesting
    /// taken compiles.
    #[test]
    fn globs_past_the_limits_are_refused_not_compiled() {
        let err = compile_glob(&nested(300)).unwrap_err();
        assert!(matches!(err, Error::GlobTooComplex { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the path glob \"{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\" is too complex (braces nested \
             300 deep; at most 32 levels are taken); write a shorter or flatter one"
        );
        compile_glob(&nested(MAX_GLOB_NESTING)).unwrap();
        let long = "a".repeat(MAX_GLOB_BYTES + 1);
        let err = compile_glob(&long).unwrap_err().to_string();
        assert!(
            err.contains("4,097 bytes; at most 4,096 are taken"),
            "{err}"
        );
        // Braces escaped or inside a class are not nesting.
        check_glob(&"\\{".repeat(100)).unwrap();
        check_glob(&format!("[{}]", "{".repeat(100))).unwrap();
        check_glob(&format!("[]{}]", "{".repeat(100))).unwrap();
    }
}
