//! `deps NAME`: which other parts mention this part's file or the symbols it defines.
//!
//! Definitions are found with a language-agnostic heuristic: an identifier that follows a
//! definition keyword (`fn`, `def`, `class`, `struct`, `function`, ...) or a shell-style
//! `name() {`. Mentions are whole-identifier matches, so `parse` does not match `parser`.

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

/// Symbols defined in `text`.
pub fn definitions(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = identifiers(line).collect();
        for pair in words.windows(2) {
            if DEFINITION_KEYWORDS.contains(&pair[0]) {
                found.insert(pair[1].to_owned());
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
        let defines = definitions(&loaded.body);
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

    #[test]
    fn finds_definitions_across_languages() {
        let text = "pub fn parse_flow(x: u8) {}\nclass FlowRunner:\ndeploy_all() {\n  x\n}\nstruct Cfg;\nfn new() {}\n";
        let found: Vec<String> = definitions(text).into_iter().collect();
        assert_eq!(found, ["Cfg", "FlowRunner", "deploy_all", "parse_flow"]);
    }
}
