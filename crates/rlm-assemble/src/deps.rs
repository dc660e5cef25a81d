//! `deps NAME`: which other parts mention this part's file or the symbols it defines.
//!
//! Definitions are found with a language-agnostic heuristic: an identifier that follows a
//! definition keyword (`fn`, `def`, `class`, `struct`, `function`, ...) with only spaces between,
//! or a shell-style `name() {`, in code: comments and string literals are blanked first (by the
//! part's file extension), and in prose only fenced code blocks count, so "a type of file" in a
//! comment defines nothing. Mentions are whole-identifier matches, so `parse` does not match
//! `parser`.

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Result;

const DEFINITION_KEYWORDS: &[&str] = &[
    "fn",
    "def",
    "class",
    "struct",
    "enum",
    "trait",
    "type",
    "interface",
    "function",
    "func",
    "mod",
    "module",
    "const",
    "static",
    "macro_rules",
    "union",
    "record",
    "object",
];

/// Names too common to say anything about a dependency.
const TOO_COMMON: &[&str] = &[
    "main", "new", "init", "test", "tests", "run", "default", "from", "into", "fmt", "self",
    "this", "get", "set", "error", "result",
];

/// One part that mentions the target.
#[derive(Debug, Clone, Serialize)]
pub struct Mention {
    /// The mentioning part.
    pub part: String,
    /// What it mentions (file name and/or symbols), sorted.
    pub mentions: Vec<String>,
}

/// Output of [`Ctx::deps`].
#[derive(Debug, Clone, Serialize)]
pub struct DepsReport {
    /// Always `"ctx"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The part asked about.
    pub part: String,
    /// Its source file name.
    pub file: String,
    /// Symbols it defines, sorted.
    pub defines: Vec<String>,
    /// Parts that mention the file name or a symbol, in prompt order.
    pub mentioned_by: Vec<Mention>,
}

impl std::fmt::Display for DepsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} ({}) defines: {}",
            self.part,
            self.file,
            list(&self.defines)
        )?;
        if self.mentioned_by.is_empty() {
            return writeln!(f, "no other part mentions it");
        }
        for mention in &self.mentioned_by {
            writeln!(
                f,
                "  {}  mentions {}",
                mention.part,
                mention.mentions.join(", ")
            )?;
        }
        Ok(())
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(nothing found)".into()
    } else {
        items.join(", ")
    }
}

/// Identifiers of `text`, in order (ASCII letters, digits and `_`, not starting with a digit).
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
}

/// Identifiers of `line`, each with the text between it and the previous one.
fn spaced_identifiers(line: &str) -> Vec<(&str, &str)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut gap_start = 0;
    let mut word_start = None;
    for (at, c) in line.char_indices().chain([(line.len(), ' ')]) {
        match (word_start, is_word(c)) {
            (None, true) => word_start = Some(at),
            (Some(start), false) => {
                found.push((&line[start..at], &line[gap_start..start]));
                gap_start = at;
                word_start = None;
            }
            _ => {}
        }
    }
    found.retain(|(word, _)| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
    found
}

/// Symbols defined in `text`, a part from the file `path`: an identifier right after a
/// definition keyword (only spaces between), or a shell-style `name() {`. Comments and string
/// literals are not code, and in prose (Markdown, plain text) only fenced code blocks are.
pub fn definitions(text: &str, path: &str) -> BTreeSet<String> {
    let code = code_only(text, path);
    let mut found = BTreeSet::new();
    for line in code.lines() {
        let words = spaced_identifiers(line);
        for pair in words.windows(2) {
            let (keyword, (name, gap)) = (pair[0].0, pair[1]);
            let adjacent = gap.chars().all(char::is_whitespace)
                || (keyword == "macro_rules" && gap.trim() == "!");
            if adjacent && !gap.is_empty() && DEFINITION_KEYWORDS.contains(&keyword) {
                found.insert(name.to_owned());
            }
        }
        // Shell functions: `name() {`.
        let trimmed = line.trim_start();
        if let Some((name, rest)) = trimmed.split_once("()")
            && rest.trim_start().starts_with('{')
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            found.insert(name.to_owned());
        }
    }
    found.retain(|name| name.len() >= 3 && !TOO_COMMON.contains(&name.as_str()));
    found
}

/// Extensions of prose, where only fenced code blocks are code.
const PROSE: &[&str] = &["md", "markdown", "mdx", "txt", "text", "rst", "adoc"];

/// Languages whose single quotes delimit strings (elsewhere they are lifetimes, characters or
/// part of names).
const SINGLE_QUOTE_STRINGS: &[&str] = &[
    "py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "tsx", "sh", "bash", "zsh", "rb", "php", "lua",
    "sql", "pl", "pm",
];

/// Languages where `-- ` starts a comment.
const DASH_COMMENTS: &[&str] = &["sql", "lua", "hs", "elm", "ada", "adb", "ads"];

/// `text` with comments and string literals replaced by spaces (line breaks kept), so the words
/// in them are not read as code; for prose, the fenced code blocks alone.
fn code_only(text: &str, path: &str) -> String {
    let extension = path
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_ascii_lowercase())
        .unwrap_or_default();
    if PROSE.contains(&extension.as_str()) {
        let mut code = String::new();
        let mut fenced = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                code.push('\n');
                continue;
            }
            if fenced {
                code.push_str(&strip_comments(line, ""));
            }
            code.push('\n');
        }
        return code;
    }
    strip_comments(text, &extension)
}

/// Blanks comments and string literals of source in the language of `extension`.
fn strip_comments(text: &str, extension: &str) -> String {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        LineComment,
        BlockComment,
        Quoted(char),
        TripleQuoted(char),
    }
    let single_quotes = SINGLE_QUOTE_STRINGS.contains(&extension);
    let dash_comments = DASH_COMMENTS.contains(&extension);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut index = 0;
    while index < chars.len() {
        let at = |offset: usize| chars.get(index + offset).copied();
        let c = chars[index];
        let quote = c == '"' || (c == '\'' && single_quotes);
        let tripled = at(1) == Some(c) && at(2) == Some(c);
        // The next state, the characters consumed, and whether they are blanked.
        let (next, width, blank) = match state {
            State::Code if quote && tripled => (State::TripleQuoted(c), 3, true),
            State::Code if quote => (State::Quoted(c), 1, true),
            State::Code if c == '/' && at(1) == Some('/') => (State::LineComment, 1, true),
            State::Code if c == '/' && at(1) == Some('*') => (State::BlockComment, 2, true),
            State::Code if c == '#' && is_hash_comment(at(1), at(2)) => {
                (State::LineComment, 1, true)
            }
            State::Code if dash_comments && c == '-' && at(1) == Some('-') => {
                (State::LineComment, 1, true)
            }
            State::Code => (State::Code, 1, false),
            State::LineComment if c == '\n' => (State::Code, 1, false),
            State::BlockComment if c == '*' && at(1) == Some('/') => (State::Code, 2, true),
            State::Quoted(_) if c == '\\' => (state, 2, true),
            State::Quoted(open) if c == open => (State::Code, 1, true),
            // An unterminated string ends with its line.
            State::Quoted(_) if c == '\n' => (State::Code, 1, false),
            State::TripleQuoted(open) if c == open && tripled => (State::Code, 3, true),
            _ => (state, 1, true),
        };
        for &consumed in chars.iter().skip(index).take(width) {
            out.push(if blank && consumed != '\n' {
                ' '
            } else {
                consumed
            });
        }
        state = next;
        index += width;
    }
    out
}

/// `#` starts a comment when followed by a space, a line end or `!` (a shebang), but not `#!`
/// followed by `[` (a Rust inner attribute) nor `#[`, `#include` and the like.
fn is_hash_comment(next: Option<char>, after: Option<char>) -> bool {
    match next {
        None | Some(' ' | '\t' | '\n' | '\r') => true,
        Some('!') => after != Some('['),
        _ => false,
    }
}

impl Ctx {
    /// Which other parts mention part `name`'s file or the symbols it defines.
    pub fn deps(&self, name: &str) -> Result<DepsReport> {
        let scan = self.dir.scan()?;
        let target = self.resolve(&scan, name)?;
        let loaded = self.dir.load(&target)?;
        let file = loaded
            .provenance
            .path
            .rsplit('/')
            .next()
            .unwrap_or(&loaded.provenance.path)
            .to_owned();
        let defines = definitions(&loaded.body, &loaded.provenance.path);
        let mut mentioned_by = Vec::new();
        for other in &scan.parts {
            if other.path == target.path {
                continue;
            }
            let part = self.dir.load(other)?;
            let words: HashSet<&str> = identifiers(&part.body).collect();
            let mut mentions: Vec<String> = defines
                .iter()
                .filter(|d| words.contains(d.as_str()))
                .cloned()
                .collect();
            if file.len() >= 3
                && part.provenance.path != loaded.provenance.path
                && part.body.contains(&file)
            {
                mentions.insert(0, file.clone());
            }
            if !mentions.is_empty() {
                mentioned_by.push(Mention {
                    part: other.name.id(),
                    mentions,
                });
            }
        }
        Ok(DepsReport {
            kind: "ctx",
            part: target.name.id(),
            file,
            defines: defines.into_iter().collect(),
            mentioned_by,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::definitions;

    fn found(text: &str, path: &str) -> Vec<String> {
        definitions(text, path).into_iter().collect()
    }

    #[test]
    fn finds_definitions_across_languages() {
        let text = "pub fn parse_flow(x: u8) {}\nclass FlowRunner:\ndeploy_all() {\n  x\n}\nstruct Cfg;\nfn new() {}\nmacro_rules! make_it {}\n";
        assert_eq!(
            found(text, "src/x.rs"),
            ["Cfg", "FlowRunner", "deploy_all", "make_it", "parse_flow"]
        );
    }

    #[test]
    fn words_in_comments_strings_and_prose_are_not_symbols() {
        let rust = "// the type checker runs first; an enum variant holds data\n/* a struct holding\n   every function called */\n#[derive(Debug)]\nstruct Real; // fn fake\nlet s = \"class Quoted\";\nfn lifetimes<'a>(x: &'a str) {}\n";
        assert_eq!(found(rust, "lib.rs"), ["Real", "lifetimes"]);
        let python = "#!/usr/bin/env python3\n# the class hierarchy\ndef run_all():\n    \"\"\"Each function\n    type is checked.\"\"\"\n    x = 'def quoted'\n";
        assert_eq!(found(python, "tool.py"), ["run_all"]);
        let sql = "-- the function below\ncreate function total_due() returns int;\n";
        assert_eq!(found(sql, "q.sql"), ["total_due"]);
        let markdown =
            "The module loader reads a type of file.\n\n```rust\nfn documented() {}\n```\n";
        assert_eq!(found(markdown, "README.md"), ["documented"]);
    }
}
