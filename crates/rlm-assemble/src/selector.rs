//! Evidence selectors: `file`, `file::100,200`, `file::100`, `file::100c,500c`, `file#a,b`,
//! `file::100,200#bug`, and globs (`src/**/*.rs`).
//!
//! Lines are 1-based and inclusive (`::100,200` is lines 100 through 200). Bytes are 0-based
//! offsets, start inclusive and end exclusive (`::100c,500c` is 400 bytes), and must fall on
//! UTF-8 character boundaries.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// The path or glob pattern, as typed.
    pub path: String,
    /// Which part of the file.
    pub span: SpanSpec,
    /// Tags after `#`.
    pub tags: Vec<String>,
}

/// A span as written in a selector (the end may be open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanSpec {
    /// The whole file.
    All,
    /// 1-based inclusive lines; `end: None` runs to the end of the file.
    Lines {
        /// First line.
        start: usize,
        /// Last line, or the end of the file.
        end: Option<usize>,
    },
    /// 0-based byte offsets, end exclusive; `end: None` runs to the end of the file.
    Bytes {
        /// First byte.
        start: usize,
        /// One past the last byte, or the end of the file.
        end: Option<usize>,
    },
}

/// A concrete span inside a source file, as recorded in provenance (`all`, `lines:3-9`,
/// `bytes:0-120`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Span {
    /// The whole file.
    All,
    /// 1-based inclusive lines.
    Lines(usize, usize),
    /// 0-based byte offsets, end exclusive.
    Bytes(usize, usize),
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Lines(start, end) => write!(f, "lines:{start}-{end}"),
            Self::Bytes(start, end) => write!(f, "bytes:{start}-{end}"),
        }
    }
}

impl From<Span> for String {
    fn from(span: Span) -> Self {
        span.to_string()
    }
}

impl TryFrom<String> for Span {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let bad = || format!("bad span `{text}`");
        if text == "all" {
            return Ok(Self::All);
        }
        let (kind, range) = text.split_once(':').ok_or_else(bad)?;
        let (start, end) = range.split_once('-').ok_or_else(bad)?;
        let start: usize = start.parse().map_err(|_| bad())?;
        let end: usize = end.parse().map_err(|_| bad())?;
        match kind {
            "lines" => Ok(Self::Lines(start, end)),
            "bytes" => Ok(Self::Bytes(start, end)),
            _ => Err(bad()),
        }
    }
}

impl Span {
    /// A short suffix for part names (`l100_200`, `b0_512`), empty for the whole file.
    pub fn name_suffix(self) -> String {
        match self {
            Self::All => String::new(),
            Self::Lines(start, end) => format!("l{start}_{end}"),
            Self::Bytes(start, end) => format!("b{start}_{end}"),
        }
    }
}

impl Selector {
    /// Parses a selector. The path itself is not checked here.
    pub fn parse(raw: &str) -> Result<Self> {
        let bad = |reason: &str| Error::Selector {
            selector: raw.to_owned(),
            reason: reason.to_owned(),
        };
        let (rest, tags) = match raw.rsplit_once('#') {
            Some((rest, tags)) if !tags.contains('/') => {
                let tags: Vec<String> = tags.split(',').map(str::to_owned).collect();
                if tags.iter().any(|tag| !is_tag(tag)) {
                    return Err(bad(
                        "tags are comma-separated letters, digits, `_`, `-`, `.`",
                    ));
                }
                (rest, tags)
            }
            _ => (raw, Vec::new()),
        };
        let (path, span) = match rest.rsplit_once("::") {
            Some((path, span)) => (path, parse_span(span).map_err(|reason| bad(&reason))?),
            None => (rest, SpanSpec::All),
        };
        if path.is_empty() {
            return Err(bad("no file name"));
        }
        Ok(Self {
            path: path.to_owned(),
            span,
            tags,
        })
    }

    /// Whether the path is a glob pattern rather than one file.
    pub fn is_glob(&self) -> bool {
        self.path.contains(['*', '?', '['])
    }

    /// The files this selector names, relative to `base`: one file, or the sorted matches of a
    /// glob (hidden files only when the pattern names them). Missing files and empty globs are
    /// errors. Unless `follow` is set, a glob does not descend through symbolic links to
    /// directories (as `rlm load` does not): `**/*.conf` in a tree holding a link to `/etc`
    /// must not pull in `/etc`. Directories the pattern names literally (`link/*.conf`) are
    /// followed, since the user asked for them.
    pub fn expand(&self, base: &Path, follow: bool) -> Result<Vec<PathBuf>> {
        let literal = base.join(&self.path);
        if !self.is_glob() || literal.exists() {
            if !literal.exists() {
                return Err(Error::Missing { path: literal });
            }
            if literal.is_dir() {
                return Err(Error::Invalid(format!(
                    "{} is a directory; select files with a glob such as `{}/**/*`",
                    self.path,
                    self.path.trim_end_matches('/')
                )));
            }
            return Ok(vec![PathBuf::from(&self.path)]);
        }
        if self.span != SpanSpec::All {
            return Err(Error::Selector {
                selector: self.path.clone(),
                reason: "a line or byte range needs a single file, not a glob".into(),
            });
        }
        let pattern = base.join(&self.path);
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: true,
        };
        let bad = |reason: String| Error::Selector {
            selector: self.path.clone(),
            reason,
        };
        let matches = glob::glob_with(&pattern.to_string_lossy(), options)
            .map_err(|error| bad(error.to_string()))?;
        let mut files = Vec::new();
        for entry in matches {
            let path = entry.map_err(|error| bad(error.to_string()))?;
            if !path.is_file() {
                continue;
            }
            if !follow && through_directory_link(&pattern, &path) {
                continue;
            }
            let relative = path.strip_prefix(base).unwrap_or(&path).to_path_buf();
            files.push(relative);
        }
        files.sort();
        if files.is_empty() {
            return Err(bad("the glob matches no files".into()));
        }
        Ok(files)
    }
}

/// Whether `matched` (a match of `pattern`) is reached through a symbolic link to a directory
/// below the pattern's literal prefix, i.e. a directory only a wildcard led to.
fn through_directory_link(pattern: &Path, matched: &Path) -> bool {
    let literal: PathBuf = pattern
        .components()
        .take_while(|part| !part.as_os_str().to_string_lossy().contains(['*', '?', '[']))
        .collect();
    let Ok(below) = matched.strip_prefix(&literal) else {
        return false;
    };
    let mut directory = literal;
    let mut parts: Vec<_> = below.components().collect();
    // The last part is the file itself; a link to a file is not a directory link.
    parts.pop();
    parts.into_iter().any(|part| {
        directory.push(part);
        std::fs::symlink_metadata(&directory).is_ok_and(|meta| meta.file_type().is_symlink())
    })
}

fn is_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn parse_span(text: &str) -> Result<SpanSpec, String> {
    let number = |part: &str, unit: &str| -> Result<usize, String> {
        let digits = part.strip_suffix(unit).unwrap_or(part);
        if unit == "c" && !part.ends_with('c') {
            return Err(format!("`{part}`: byte offsets end in `c` on both sides"));
        }
        digits
            .parse::<usize>()
            .map_err(|_| format!("`{part}` is not a number"))
    };
    let unit = if text.split(',').next().is_some_and(|p| p.ends_with('c')) {
        "c"
    } else {
        ""
    };
    let (start, end) = match text.split_once(',') {
        Some((start, end)) => (number(start, unit)?, Some(number(end, unit)?)),
        None => (number(text, unit)?, None),
    };
    if unit == "c" {
        if end.is_some_and(|end| end <= start) {
            return Err("the byte range is empty (end must be greater than start)".into());
        }
        return Ok(SpanSpec::Bytes { start, end });
    }
    if start == 0 {
        return Err("lines are numbered from 1".into());
    }
    if end.is_some_and(|end| end < start) {
        return Err("the last line comes before the first".into());
    }
    Ok(SpanSpec::Lines { start, end })
}

/// Cuts `spec` out of `text`, checking it against the file's size. Returns the concrete span and
/// the selected text.
pub fn extract<'a>(text: &'a str, spec: SpanSpec, selector: &str) -> Result<(Span, &'a str)> {
    let bad = |reason: String| Error::Selector {
        selector: selector.to_owned(),
        reason,
    };
    match spec {
        SpanSpec::All => Ok((Span::All, text)),
        SpanSpec::Bytes { start, end } => {
            // An end past the file is clamped, as `rlm peek` and `read()` do.
            let end = end.unwrap_or(text.len()).min(text.len());
            if start >= end {
                return Err(bad(format!(
                    "byte {start} is at or past the end of the file ({} bytes)",
                    text.len()
                )));
            }
            let selected = text
                .get(start..end)
                .ok_or_else(|| bad("the byte range splits a UTF-8 character".into()))?;
            Ok((Span::Bytes(start, end), selected))
        }
        SpanSpec::Lines { start, end } => {
            let starts = line_starts(text);
            let lines = starts.len();
            // An end past the last line is clamped, as `rlm peek --lines` and `read()` do; a
            // start past it is refused.
            let end = end.unwrap_or(lines).min(lines);
            if start > lines || end < start {
                return Err(bad(format!(
                    "line {start} is past the end of the file ({lines} lines)"
                )));
            }
            let from = starts[start - 1];
            let to = starts.get(end).copied().unwrap_or(text.len());
            Ok((Span::Lines(start, end), &text[from..to]))
        }
    }
}

/// Byte offset where each line starts; a final line without a newline counts, an empty file has
/// no lines.
pub fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    if text.is_empty() {
        return starts;
    }
    starts.push(0);
    starts.extend(
        memchr::memchr_iter(b'\n', text.as_bytes())
            .map(|at| at + 1)
            .filter(|&at| at < text.len()),
    );
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_selector_table() {
        let lines = |start, end| SpanSpec::Lines { start, end };
        let bytes = |start, end| SpanSpec::Bytes { start, end };
        let cases: &[(&str, &str, SpanSpec, &[&str])] = &[
            ("flow.sh", "flow.sh", SpanSpec::All, &[]),
            ("flow.sh::100,200", "flow.sh", lines(100, Some(200)), &[]),
            ("flow.sh::100", "flow.sh", lines(100, None), &[]),
            ("flow.sh::100c,500c", "flow.sh", bytes(100, Some(500)), &[]),
            ("flow.sh::7c", "flow.sh", bytes(7, None), &[]),
            ("flow.sh#a,b", "flow.sh", SpanSpec::All, &["a", "b"]),
            (
                "flow.sh::100,200#bug",
                "flow.sh",
                lines(100, Some(200)),
                &["bug"],
            ),
            ("src/**/*.rs", "src/**/*.rs", SpanSpec::All, &[]),
            ("a/b::1,1", "a/b", lines(1, Some(1)), &[]),
        ];
        for (raw, path, span, tags) in cases {
            let selector = Selector::parse(raw).unwrap();
            assert_eq!(&selector.path, path, "{raw}");
            assert_eq!(&selector.span, span, "{raw}");
            assert_eq!(selector.tags, *tags, "{raw}");
        }
    }

    #[test]
    fn rejects_malformed_selectors() {
        for raw in [
            "f::0,3",
            "f::5,2",
            "f::x",
            "f::10c,5c",
            "f::10c,20",
            "f::",
            "::1,2",
            "f#",
            "f#a b",
        ] {
            assert!(Selector::parse(raw).is_err(), "{raw} should be rejected");
        }
    }

    #[test]
    fn extracts_lines_and_bytes() {
        let text = "one\ntwo\nthree\nfour";
        let (span, cut) = extract(
            text,
            SpanSpec::Lines {
                start: 2,
                end: Some(3),
            },
            "s",
        )
        .unwrap();
        assert_eq!((span, cut), (Span::Lines(2, 3), "two\nthree\n"));
        let (span, cut) = extract(
            text,
            SpanSpec::Lines {
                start: 4,
                end: None,
            },
            "s",
        )
        .unwrap();
        assert_eq!((span, cut), (Span::Lines(4, 4), "four"));
        let (span, cut) = extract(
            text,
            SpanSpec::Bytes {
                start: 4,
                end: Some(7),
            },
            "s",
        )
        .unwrap();
        assert_eq!((span, cut), (Span::Bytes(4, 7), "two"));
        assert!(
            extract(
                text,
                SpanSpec::Lines {
                    start: 5,
                    end: None
                },
                "s"
            )
            .is_err()
        );
        // Ends past the file are clamped, as `rlm peek` and `read()` do.
        let (span, cut) = extract(
            text,
            SpanSpec::Lines {
                start: 3,
                end: Some(9),
            },
            "s",
        )
        .unwrap();
        assert_eq!((span, cut), (Span::Lines(3, 4), "three\nfour"));
        let (span, _) = extract(
            text,
            SpanSpec::Bytes {
                start: 0,
                end: Some(99),
            },
            "s",
        )
        .unwrap();
        assert_eq!(span, Span::Bytes(0, text.len()));
        assert!(
            extract(
                text,
                SpanSpec::Bytes {
                    start: 99,
                    end: Some(120)
                },
                "s"
            )
            .is_err()
        );
        assert!(
            extract(
                "é",
                SpanSpec::Bytes {
                    start: 0,
                    end: Some(1)
                },
                "s"
            )
            .is_err()
        );
    }

    #[test]
    fn spans_round_trip_through_text() {
        for span in [Span::All, Span::Lines(3, 9), Span::Bytes(0, 12)] {
            assert_eq!(Span::try_from(span.to_string()), Ok(span));
        }
        assert!(Span::try_from("rows:1-2".to_owned()).is_err());
    }
}
