//! The grep matcher: ripgrep's `RegexMatcher`, with a quicker way to decide whether a line that
//! is not all ASCII matches a pattern with a Unicode word boundary (`\b`, and `-w`).
//!
//! Why: regex-automata's DFAs decide a Unicode `\b` only on ASCII text. They give up at the first
//! non-ASCII byte they read, and the line is searched again, from its start, by the bounded
//! backtracker, several times slower. A pattern without a fast literal prefix
//! (`[A-Z][a-z]+Error\b`) has its DFA read each candidate line from the start, so a non-ASCII
//! word anywhere before the match sends the line to the backtracker: two in five lines of the
//! benchmark's logs, two thirds of the time spent confirming candidate lines.
//!
//! Here such a line is first searched by the pattern with ASCII word boundaries (`(?-u:\b)`),
//! whose DFAs never give up; where that finds a match, the pattern itself is asked from the
//! match's start, and its DFA answers after reading little more than the match. The variant
//! only says where to look: a line matches when the pattern says so, and a line the variant
//! misses (or that the pattern does not confirm from there) is searched by the pattern as
//! before. So the lines found are the pattern's own, whatever the variant matches.
//!
//! A pattern with a fast literal prefix (`\bretry\b`) is left alone: its search jumps to the
//! literal, so its DFA seldom reads a non-ASCII byte before deciding, and the variant's search
//! would be a second pass over the line for nothing.

use grep_matcher::{ByteSet, LineMatchKind, LineTerminator, Match, Matcher, NoError};
use grep_regex::{RegexCaptures, RegexMatcher, RegexMatcherBuilder};
use regex_automata::MatchKind;
use regex_automata::util::prefilter::Prefilter;
use regex_syntax::ast::{self, AssertionKind, Ast};

/// A [`RegexMatcher`] that decides lines with Unicode word boundaries more quickly (see the
/// module's documentation); every other question goes to the regex unchanged.
#[derive(Clone, Debug)]
pub(crate) struct LineMatcher {
    regex: RegexMatcher,
    /// The pattern with ASCII word boundaries, when a line not all ASCII is worth asking it
    /// first.
    ascii: Option<RegexMatcher>,
}

impl LineMatcher {
    /// `pattern` built by `builder`, which must not change its syntax (flags such as
    /// case-insensitivity go in `case_insensitive` too, to read the pattern as it does).
    pub(crate) fn new(
        builder: &RegexMatcherBuilder,
        pattern: &str,
        case_insensitive: bool,
    ) -> Result<Self, grep_regex::Error> {
        let regex = builder.build(pattern)?;
        let ascii = if needs_ascii_hint(pattern, case_insensitive) {
            ascii_word_boundaries(pattern).and_then(|ascii| builder.build(&ascii).ok())
        } else {
            None
        };
        Ok(Self { regex, ascii })
    }

    /// Whether lines not all ASCII are searched by the ASCII variant first.
    #[cfg(test)]
    pub(crate) fn hints(&self) -> bool {
        self.ascii.is_some()
    }
}

/// Whether `pattern` has a Unicode word boundary and no literal prefix that regex-automata
/// would find with a fast prefilter (see the module's documentation). Only a matter of speed.
fn needs_ascii_hint(pattern: &str, case_insensitive: bool) -> bool {
    let Ok(hir) = regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .build()
        .parse(pattern)
    else {
        return false;
    };
    hir.properties().look_set().contains_word_unicode()
        && !Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, &hir)
            .is_some_and(|prefilter| prefilter.is_fast())
}

/// `pattern` with each word boundary assertion made ASCII-only (`\b` → `(?-u:\b)`), or `None`
/// when it does not parse.
fn ascii_word_boundaries(pattern: &str) -> Option<String> {
    let mut ast = ast::parse::Parser::new().parse(pattern).ok()?;
    make_word_boundaries_ascii(&mut ast);
    let mut ascii = String::new();
    ast::print::Printer::new().print(&ast, &mut ascii).ok()?;
    Some(ascii)
}

/// Wraps every word boundary assertion in `ast` in a group without the Unicode flag. The
/// parser bounds the nesting depth, and so this recursion.
fn make_word_boundaries_ascii(ast: &mut Ast) {
    match ast {
        Ast::Assertion(assertion) if is_word_boundary(&assertion.kind) => {
            let span = assertion.span;
            let inner = std::mem::replace(ast, Ast::empty(span));
            *ast = Ast::group(ast::Group {
                span,
                kind: ast::GroupKind::NonCapturing(ast::Flags {
                    span,
                    items: vec![
                        ast::FlagsItem {
                            span,
                            kind: ast::FlagsItemKind::Negation,
                        },
                        ast::FlagsItem {
                            span,
                            kind: ast::FlagsItemKind::Flag(ast::Flag::Unicode),
                        },
                    ],
                }),
                ast: Box::new(inner),
            });
        }
        Ast::Repetition(repetition) => make_word_boundaries_ascii(&mut repetition.ast),
        Ast::Group(group) => make_word_boundaries_ascii(&mut group.ast),
        Ast::Alternation(alternation) => {
            alternation
                .asts
                .iter_mut()
                .for_each(make_word_boundaries_ascii);
        }
        Ast::Concat(concat) => concat.asts.iter_mut().for_each(make_word_boundaries_ascii),
        _ => {}
    }
}

fn is_word_boundary(kind: &AssertionKind) -> bool {
    !matches!(
        kind,
        AssertionKind::StartLine
            | AssertionKind::EndLine
            | AssertionKind::StartText
            | AssertionKind::EndText
    )
}

impl Matcher for LineMatcher {
    type Captures = RegexCaptures;
    type Error = NoError;

    /// The searcher's question for each candidate line (and each line, when it goes line by
    /// line): does it match?
    fn is_match_at(&self, haystack: &[u8], at: usize) -> Result<bool, NoError> {
        if let Some(ascii) = &self.ascii
            && !haystack.is_ascii()
            && let Some(found) = ascii.find_at(haystack, at)?
            && self.regex.is_match_at(haystack, found.start())?
        {
            // A match of the pattern itself, from a place at or after `at`.
            return Ok(true);
        }
        self.regex.is_match_at(haystack, at)
    }

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        self.regex.find_at(haystack, at)
    }

    fn new_captures(&self) -> Result<RegexCaptures, NoError> {
        self.regex.new_captures()
    }

    fn capture_count(&self) -> usize {
        self.regex.capture_count()
    }

    fn capture_index(&self, name: &str) -> Option<usize> {
        self.regex.capture_index(name)
    }

    fn try_find_iter<F, E>(&self, haystack: &[u8], matched: F) -> Result<Result<(), E>, NoError>
    where
        F: FnMut(Match) -> Result<bool, E>,
    {
        self.regex.try_find_iter(haystack, matched)
    }

    fn captures_at(
        &self,
        haystack: &[u8],
        at: usize,
        captures: &mut RegexCaptures,
    ) -> Result<bool, NoError> {
        self.regex.captures_at(haystack, at, captures)
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        self.regex.shortest_match_at(haystack, at)
    }

    fn non_matching_bytes(&self) -> Option<&ByteSet> {
        self.regex.non_matching_bytes()
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        self.regex.line_terminator()
    }

    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, NoError> {
        self.regex.find_candidate_line(haystack)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn builder(case_insensitive: bool) -> RegexMatcherBuilder {
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(case_insensitive)
            .multi_line(true)
            .line_terminator(Some(b'\n'));
        builder
    }

    #[test]
    fn word_boundaries_become_ascii_and_nothing_else_changes() {
        let cases = [
            (r"[A-Z][a-z]+Error\b", r"[A-Z][a-z]+Error(?-u:\b)"),
            (r"\b(?:retry)\b", r"(?-u:\b)(?:retry)(?-u:\b)"),
            (
                r"\Bx\<y\>\b{start-half}",
                r"(?-u:\B)x(?-u:\<)y(?-u:\>)(?-u:\b{start-half})",
            ),
            (r"^a\\b$|[\w]", r"^a\\b$|[\w]"),
        ];
        for (pattern, ascii) in cases {
            assert_eq!(ascii_word_boundaries(pattern).as_deref(), Some(ascii));
        }
    }

    #[test]
    fn only_patterns_without_a_fast_literal_prefix_are_hinted() {
        let hinted = |pattern: &str| {
            LineMatcher::new(&builder(false), pattern, false)
                .unwrap()
                .hints()
        };
        assert!(hinted(r"[A-Z][a-z]+Error\b"));
        assert!(hinted(r"\w+\b"));
        assert!(!hinted(r"\b(?:retry)\b"));
        assert!(!hinted(r"[A-Z][a-z]+Error"));
        assert!(!hinted(r"(?-u:\b)[A-Z]+"));
    }

    #[test]
    fn lines_match_as_the_pattern_says_with_non_ascii_letters_next_to_the_match() {
        let patterns = [
            r"[A-Z][a-z]+Error\b",
            r"\w+\b",
            r"\b[a-zé]+é\b",
            r"\Bor\b",
            r".\bb",
            r"[^ ]+\B",
            r"\b{end}Error",
            r"x\b|\by",
        ];
        let lines = [
            "ParseError here\n",
            "ParseErroré\n",
            "éParseError\n",
            "naïve ParseError café\n",
            "naïve ParseErrorü and KeyError\n",
            "über KeyErrorß\n",
            "cafés et résumé\n",
            "é\n",
            "aé b\n",
            "ab éb\n",
            "x éy\n",
            "éx y\n",
            "\n",
            "no match at all ümlaut\n",
        ];
        for pattern in patterns {
            for case_insensitive in [false, true] {
                let builder = builder(case_insensitive);
                let plain = builder.build(pattern).unwrap();
                let matcher = LineMatcher::new(&builder, pattern, case_insensitive).unwrap();
                for line in lines {
                    assert_eq!(
                        matcher.is_match(line.as_bytes()).unwrap(),
                        plain.is_match(line.as_bytes()).unwrap(),
                        "{pattern} on {line:?}"
                    );
                }
            }
        }
    }
}
