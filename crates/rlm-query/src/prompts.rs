//! The three prompts, compiled in and overridable from a directory.

use std::path::{Path, PathBuf};

/// File names looked for in a prompt directory, in the order of [`QueryPrompts`]' fields.
pub const PROMPT_FILES: [&str; 3] = ["query_plan.md", "query_extract.md", "query_synthesize.md"];

/// System prompts of the planner, the extractors and the synthesizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryPrompts {
    /// Planner (primary model, JSON).
    pub plan: String,
    /// Extractors (sub-call model, JSON).
    pub extract: String,
    /// Synthesizer and group reductions (primary model, Markdown).
    pub synthesize: String,
}

impl Default for QueryPrompts {
    fn default() -> Self {
        Self {
            plan: include_str!("../prompts/query_plan.md").to_owned(),
            extract: include_str!("../prompts/query_extract.md").to_owned(),
            synthesize: include_str!("../prompts/query_synthesize.md").to_owned(),
        }
    }
}

/// A prompt file that could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// It could not be read.
    #[error("cannot read prompt file {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// It is empty.
    #[error("prompt file {path} is empty")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

impl QueryPrompts {
    /// The built-in prompts with each file of [`PROMPT_FILES`] found in `dir` in place of its
    /// default, and the names of the files used. A missing directory changes nothing.
    pub fn with_overrides_from(dir: &Path) -> Result<(Self, Vec<String>), PromptError> {
        let mut prompts = Self::default();
        let mut used = Vec::new();
        for (name, slot) in PROMPT_FILES.into_iter().zip([
            &mut prompts.plan,
            &mut prompts.extract,
            &mut prompts.synthesize,
        ]) {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|source| PromptError::Read {
                path: path.clone(),
                source,
            })?;
            if text.trim().is_empty() {
                return Err(PromptError::Empty { path });
            }
            *slot = text;
            used.push(name.to_owned());
        }
        Ok((prompts, used))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_the_files_present() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("query_extract.md"), "custom extractor").unwrap();
        let (prompts, used) = QueryPrompts::with_overrides_from(dir.path()).unwrap();
        assert_eq!(prompts.extract, "custom extractor");
        assert_eq!(prompts.plan, QueryPrompts::default().plan);
        assert_eq!(used, ["query_extract.md"]);
        std::fs::write(dir.path().join("query_plan.md"), " \n").unwrap();
        assert!(matches!(
            QueryPrompts::with_overrides_from(dir.path()),
            Err(PromptError::Empty { .. })
        ));
        let missing = dir.path().join("nope");
        assert!(
            QueryPrompts::with_overrides_from(&missing)
                .unwrap()
                .1
                .is_empty()
        );
    }
}
