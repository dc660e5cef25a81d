//! The prompts `rlm prompt` writes itself: the system brief, one instruction per stage and the
//! summarization prompt. Compiled in; a prompts directory can replace any of them by file name.

use std::path::Path;

use super::Stage;
use crate::error::{Error, Result};

/// The texts a prompt is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTexts {
    /// The system section (`prompt-system.md`).
    pub system: String,
    /// One instruction per stage (`stage-<name>.md`), in [`Stage::ALL`] order.
    pub stages: [String; 5],
    /// The system prompt of the summarizing call (`prompt-summarize.md`).
    pub summarize: String,
}

impl Default for PromptTexts {
    fn default() -> Self {
        Self {
            system: include_str!("texts/system.md").to_owned(),
            stages: [
                include_str!("texts/stage-planning.md").to_owned(),
                include_str!("texts/stage-coding.md").to_owned(),
                include_str!("texts/stage-review.md").to_owned(),
                include_str!("texts/stage-testing.md").to_owned(),
                include_str!("texts/stage-error-fixing.md").to_owned(),
            ],
            summarize: include_str!("texts/summarize.md").to_owned(),
        }
    }
}

impl PromptTexts {
    /// The file names a prompts directory may hold, in the order they are read.
    pub fn file_names() -> Vec<String> {
        let mut names = vec!["prompt-system.md".to_owned()];
        names.extend(Stage::ALL.iter().map(|stage| stage_file(*stage)));
        names.push("prompt-summarize.md".to_owned());
        names
    }

    /// The instruction for `stage`.
    pub fn stage(&self, stage: Stage) -> &str {
        &self.stages[stage as usize]
    }

    /// The built-in texts with those present in `dir` replacing them; also returns the names of
    /// the files used. A missing directory is no override; an empty file is an error.
    pub fn with_overrides_from(dir: &Path) -> Result<(Self, Vec<String>)> {
        let mut texts = Self::default();
        let mut used = Vec::new();
        if !dir.is_dir() {
            return Ok((texts, used));
        }
        for name in Self::file_names() {
            let path = dir.join(&name);
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .map_err(|source| Error::io("read", &path, source))?;
            if text.trim().is_empty() {
                return Err(Error::Invalid(format!(
                    "prompt override {} is empty",
                    path.display()
                )));
            }
            let slot = match name.as_str() {
                "prompt-system.md" => &mut texts.system,
                "prompt-summarize.md" => &mut texts.summarize,
                other => {
                    let stage = Stage::ALL
                        .iter()
                        .copied()
                        .find(|stage| stage_file(*stage) == other)
                        .unwrap_or(Stage::Coding);
                    &mut texts.stages[stage as usize]
                }
            };
            *slot = text;
            used.push(name);
        }
        Ok((texts, used))
    }
}

fn stage_file(stage: Stage) -> String {
    format!("stage-{}.md", stage.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_system_carries_the_completion_signal_and_overrides_replace_by_name() {
        let texts = PromptTexts::default();
        assert!(texts.system.contains("<promise>COMPLETE</promise>"));
        assert!(texts.stage(Stage::ErrorFixing).contains("error-fixing"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stage-review.md"), "REVIEW HARD").unwrap();
        let (texts, used) = PromptTexts::with_overrides_from(dir.path()).unwrap();
        assert_eq!(texts.stage(Stage::Review), "REVIEW HARD");
        assert_eq!(texts.system, PromptTexts::default().system);
        assert_eq!(used, vec!["stage-review.md".to_owned()]);
        std::fs::write(dir.path().join("prompt-system.md"), " \n").unwrap();
        assert!(PromptTexts::with_overrides_from(dir.path()).is_err());
    }
}
