//! The formats a context can have, and what a file name says about them.

use serde::{Deserialize, Serialize};

/// What a context is, as far as structure goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// One JSON value per line (`.ndjson`, `.jsonl`).
    Ndjson,
    /// A single JSON document whose top level is an object (or a scalar).
    Json,
    /// A single JSON document whose top level is an array.
    JsonArray,
    /// Comma-separated values (or another non-tab delimiter, reported separately).
    Csv,
    /// Tab-separated values.
    Tsv,
    /// Markdown prose.
    Markdown,
    /// XML.
    Xml,
    /// HTML.
    Html,
    /// Source code; the language is reported separately.
    Code,
    /// Text with no structure we recognise.
    PlainText,
    /// Bytes that are not text (or text in an encoding we do not analyse).
    Binary,
    /// Nothing at all.
    Empty,
}

impl Format {
    /// The short machine name (`ndjson`, `json-array`, …), as used in `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ndjson => "ndjson",
            Self::Json => "json",
            Self::JsonArray => "json-array",
            Self::Csv => "csv",
            Self::Tsv => "tsv",
            Self::Markdown => "markdown",
            Self::Xml => "xml",
            Self::Html => "html",
            Self::Code => "code",
            Self::PlainText => "plain-text",
            Self::Binary => "binary",
            Self::Empty => "empty",
        }
    }

    /// A description a person or a model reads (`NDJSON (newline-delimited JSON)`).
    pub fn description(self) -> &'static str {
        match self {
            Self::Ndjson => "NDJSON (newline-delimited JSON)",
            Self::Json => "JSON (object)",
            Self::JsonArray => "JSON array",
            Self::Csv => "CSV (delimiter-separated values)",
            Self::Tsv => "TSV (tab-separated values)",
            Self::Markdown => "Markdown",
            Self::Xml => "XML",
            Self::Html => "HTML",
            Self::Code => "source code",
            Self::PlainText => "plain text",
            Self::Binary => "binary (not text)",
            Self::Empty => "empty",
        }
    }

    /// Whether the format is JSON-based.
    pub fn is_json(self) -> bool {
        matches!(self, Self::Ndjson | Self::Json | Self::JsonArray)
    }

    /// Whether the format is delimiter-separated.
    pub fn is_delimited(self) -> bool {
        matches!(self, Self::Csv | Self::Tsv)
    }
}

/// What the file name alone suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameHint {
    /// A structured or text format named by the extension.
    Format(Format),
    /// A source file in this language.
    Code(&'static str),
    /// The extension says nothing useful (or there is no name).
    None,
}

/// Reads the extension of `name` (case-insensitive) into a hint.
pub(crate) fn hint_from_name(name: &str) -> NameHint {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    if let Some(language) = language_from_file_name(file) {
        return NameHint::Code(language);
    }
    let Some((_, extension)) = file.rsplit_once('.') else {
        return NameHint::None;
    };
    let extension = extension.to_ascii_lowercase();
    let format = match extension.as_str() {
        "ndjson" | "jsonl" | "jsonlines" | "ldjson" => Format::Ndjson,
        "json" | "geojson" | "ipynb" => Format::Json,
        "csv" => Format::Csv,
        "tsv" | "tab" => Format::Tsv,
        "md" | "markdown" | "mdx" | "mdctx" => Format::Markdown,
        "xml" | "xsd" | "xsl" | "svg" | "rss" | "atom" | "plist" => Format::Xml,
        "html" | "htm" | "xhtml" => Format::Html,
        "txt" | "text" | "log" | "out" | "rst" | "adoc" => Format::PlainText,
        other => match language_from_extension(other) {
            Some(language) => return NameHint::Code(language),
            None => return NameHint::None,
        },
    };
    NameHint::Format(format)
}

fn language_from_file_name(file: &str) -> Option<&'static str> {
    Some(match file {
        "Makefile" | "GNUmakefile" | "makefile" => "Makefile",
        "Dockerfile" | "Containerfile" => "Dockerfile",
        "CMakeLists.txt" => "CMake",
        "Rakefile" | "Gemfile" => "Ruby",
        _ => return None,
    })
}

/// The language of a source-code extension (lower case, without the dot).
pub fn language_from_extension(extension: &str) -> Option<&'static str> {
    Some(match extension {
        "rs" => "Rust",
        "py" | "pyi" | "pyw" => "Python",
        "js" | "mjs" | "cjs" => "JavaScript",
        "jsx" => "JavaScript (JSX)",
        "ts" | "mts" | "cts" => "TypeScript",
        "tsx" => "TypeScript (TSX)",
        "go" => "Go",
        "java" => "Java",
        "kt" | "kts" => "Kotlin",
        "scala" | "sc" => "Scala",
        "c" | "h" => "C",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "C++",
        "cs" => "C#",
        "rb" => "Ruby",
        "php" => "PHP",
        "swift" => "Swift",
        "m" | "mm" => "Objective-C",
        "sh" | "bash" | "zsh" => "Shell",
        "fish" => "Fish",
        "ps1" => "PowerShell",
        "pl" | "pm" => "Perl",
        "lua" => "Lua",
        "r" => "R",
        "jl" => "Julia",
        "hs" => "Haskell",
        "ml" | "mli" => "OCaml",
        "ex" | "exs" => "Elixir",
        "erl" | "hrl" => "Erlang",
        "clj" | "cljs" | "edn" => "Clojure",
        "zig" => "Zig",
        "nim" => "Nim",
        "dart" => "Dart",
        "sql" => "SQL",
        "css" | "scss" | "sass" | "less" => "CSS",
        "vue" => "Vue",
        "svelte" => "Svelte",
        "toml" => "TOML",
        "yaml" | "yml" => "YAML",
        "ini" | "cfg" | "conf" => "INI",
        "proto" => "Protocol Buffers",
        "tf" => "Terraform",
        "gradle" => "Gradle",
        "cmake" => "CMake",
        "vim" => "Vim script",
        "el" => "Emacs Lisp",
        "lisp" | "cl" => "Common Lisp",
        "scm" | "ss" => "Scheme",
        "f90" | "f95" | "f" => "Fortran",
        "ada" | "adb" | "ads" => "Ada",
        "v" | "sv" => "Verilog",
        "vhd" | "vhdl" => "VHDL",
        "tex" => "LaTeX",
        _ => return None,
    })
}

/// The language named by a `#!` line, if any.
pub(crate) fn language_from_shebang(first_line: &str) -> Option<&'static str> {
    let rest = first_line.strip_prefix("#!")?;
    let mut words = rest.split_whitespace();
    let program = words.next()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    let program = if program == "env" {
        words.find(|word| !word.starts_with('-'))?
    } else {
        program
    };
    let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match program {
        "python" => "Python",
        "bash" | "sh" | "zsh" | "dash" | "ksh" => "Shell",
        "node" | "deno" | "bun" => "JavaScript",
        "ruby" => "Ruby",
        "perl" => "Perl",
        "php" => "PHP",
        "lua" => "Lua",
        "Rscript" => "R",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_map_to_formats_case_insensitively() {
        assert_eq!(
            hint_from_name("feed.NDJSON"),
            NameHint::Format(Format::Ndjson)
        );
        assert_eq!(
            hint_from_name("a/b/data.jsonl"),
            NameHint::Format(Format::Ndjson)
        );
        assert_eq!(hint_from_name("x.tsv"), NameHint::Format(Format::Tsv));
        assert_eq!(hint_from_name("main.rs"), NameHint::Code("Rust"));
        assert_eq!(hint_from_name("Makefile"), NameHint::Code("Makefile"));
        assert_eq!(hint_from_name("README"), NameHint::None);
        assert_eq!(hint_from_name("archive.xyz"), NameHint::None);
    }

    #[test]
    fn shebangs_name_languages() {
        assert_eq!(
            language_from_shebang("#!/usr/bin/env python3"),
            Some("Python")
        );
        assert_eq!(language_from_shebang("#!/bin/bash -e"), Some("Shell"));
        assert_eq!(
            language_from_shebang("#!/usr/bin/env -S node --flag"),
            Some("JavaScript")
        );
        assert_eq!(language_from_shebang("no shebang"), None);
    }
}
