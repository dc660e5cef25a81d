//! Summaries not worth keeping: a small model that loops writes one sentence over and over,
//! or echoes its instructions back. Such a summary may fit its budget, and once cached every
//! later build would return it; it is refused before it is cached.

use std::collections::HashMap;

/// Times one sentence may appear before the summary counts as a loop.
const MAX_REPEATS: usize = 3;
/// Share of the summary (in characters) repeated sentences may take.
const MAX_REPEATED_SHARE: f64 = 0.5;
/// Characters of the instructions that, found in the summary word for word, make it an echo.
const ECHO_CHARS: usize = 80;

/// Why `summary` is not a summary, or `None` when it may be used. `instructions` is the
/// summarizing prompt the model was given.
pub(crate) fn problem(summary: &str, instructions: &str) -> Option<String> {
    let sentences: Vec<String> = summary
        .split(['.', '!', '?', '\n'])
        .map(|sentence| sentence.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|sentence| sentence.len() >= 12)
        .collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for sentence in &sentences {
        *seen.entry(sentence.as_str()).or_default() += 1;
    }
    let repeated_chars: usize = seen
        .iter()
        .filter(|(_, times)| **times > 1)
        .map(|(sentence, times)| sentence.len() * (times - 1))
        .sum();
    let total_chars: usize = sentences.iter().map(String::len).sum();
    if let Some((sentence, times)) = seen.iter().max_by_key(|(_, times)| **times)
        && *times > MAX_REPEATS
        && repeated_chars as f64 > MAX_REPEATED_SHARE * total_chars as f64
    {
        let shown: String = sentence.chars().take(60).collect();
        return Some(format!(
            "the summary repeats itself (\"{shown}\" {times} times)"
        ));
    }
    let flat_summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat_instructions = instructions
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let echoed = flat_instructions
        .char_indices()
        .step_by(ECHO_CHARS / 2)
        .filter_map(|(start, _)| flat_instructions.get(start..start + ECHO_CHARS))
        .any(|window| flat_summary.contains(window));
    echoed.then(|| "the summary repeats the summarizing instructions".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSTRUCTIONS: &str = "You summarize the older part of a conversation between a user and a coding agent so the agent can continue the work. Keep decisions, file names, errors and open questions.";

    #[test]
    fn a_looping_summary_is_refused() {
        let looping = "The user asked to fix the login bug. ".repeat(60);
        let problem = problem(&looping, INSTRUCTIONS).unwrap();
        assert!(problem.contains("repeats itself"), "{problem}");
        assert!(problem.contains("60 times"), "{problem}");
    }

    #[test]
    fn an_echo_of_the_instructions_is_refused() {
        let echo = format!("Summary: {INSTRUCTIONS}");
        assert!(
            problem(&echo, INSTRUCTIONS)
                .unwrap()
                .contains("instructions")
        );
    }

    #[test]
    fn a_real_summary_passes_even_with_a_repeated_heading() {
        let summary = "## Decisions\nThe login bug is in auth.rs: tokens expire early.\n\
                       ## Decisions\nThe fix moves the check to refresh(); tests pass.\n\
                       The user wants the change behind a flag. Open: the migration order.";
        assert_eq!(problem(summary, INSTRUCTIONS), None);
        assert_eq!(problem("", INSTRUCTIONS), None);
    }
}
