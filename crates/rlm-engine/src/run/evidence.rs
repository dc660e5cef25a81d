//! Whether an answer rests on anything: an answer that repeats the question or our own
//! instructions is no answer, and an answer given before any code ran, when the data is larger
//! than what the conversation showed, is sent back once and, given again, ends the run as
//! [`Status::NoEvidence`](rlm_trace::Status::NoEvidence).
//!
//! Small models answer on the first turn from the question alone, or copy a line of the prompt;
//! both used to end a run as `answered` with exit 0.

/// What an answer is judged against, fixed when the run starts.
#[derive(Debug)]
pub(super) struct Judge {
    /// The data is larger than what the first message showed of it (a store always is), so
    /// an answer needs code to have looked at it.
    needs_code: bool,
    /// The question, normalised.
    question: String,
    /// Our own instructions (system prompt and turn templates), normalised: no data in them.
    instructions: String,
}

/// What the judge made of an answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Accepted as the run's answer.
    Accepted,
    /// Accepted, but no code had run: the run ends as `no_evidence`.
    WithoutEvidence,
    /// Not accepted, a copy of the question or of our instructions; the note tells the model.
    Echo(String),
    /// Not accepted: no code has run; the note tells the model to look first.
    NoCodeYet(String),
}

/// The shortest answer (in characters, normalised) that can count as copied from our
/// instructions: shorter ones ("yes", "42") appear in any long text by chance.
const SHORTEST_COPY: usize = 12;

impl Judge {
    /// `shown_chars` is the length of the data description the first message carries;
    /// `data_chars` the size of the data (`None` when it is a store, never shown whole).
    pub fn new(
        query: &str,
        instructions: &[&str],
        data_chars: Option<usize>,
        shown_chars: usize,
    ) -> Self {
        Self {
            needs_code: data_chars.is_none_or(|chars| chars > shown_chars),
            question: normalise(query),
            instructions: normalise(&instructions.join("\n")),
        }
    }

    /// Judges `answer`. `code_ran` says whether any code of this run has run (this turn's
    /// included); `refused_before` whether an answer without code was sent back already
    /// (it is sent back once).
    pub fn judge(&self, answer: &str, code_ran: bool, refused_before: bool) -> Verdict {
        if let Some(reason) = self.echo(answer) {
            return Verdict::Echo(format!(
                "Your answer was not accepted: it {reason}, which is not an answer. Find the \
                 answer in the data with code, then give it."
            ));
        }
        if !self.needs_code || code_ran {
            return Verdict::Accepted;
        }
        if refused_before {
            return Verdict::WithoutEvidence;
        }
        Verdict::NoCodeYet(
            "Your answer was not accepted: no code has run yet, and the data is larger than \
             what this conversation showed of it. Look at the data in a ```repl block first, \
             then answer from what it prints."
                .to_owned(),
        )
    }

    /// Why `answer` is a copy of the question or of our instructions, if it is one.
    fn echo(&self, answer: &str) -> Option<&'static str> {
        let answer = normalise(answer);
        if answer.is_empty() {
            return None;
        }
        // Most of the question, copied: "secret deploy code in the log" for "What is the
        // secret deploy code in the log?". A short pick from a question that offers choices
        // ("Paris or Lyon?") is an answer.
        if self.question.contains(&answer) && answer.len() * 2 >= self.question.len() {
            return Some("repeats the question");
        }
        if answer.chars().count() >= SHORTEST_COPY && self.instructions.contains(&answer) {
            return Some("repeats a piece of the instructions");
        }
        None
    }
}

/// Lower case, runs of whitespace as one space, quotes, backticks and punctuation at either
/// end removed: `"Secret deploy code."` and `secret  deploy code` are the same text.
fn normalise(text: &str) -> String {
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    words
        .join(" ")
        .trim_matches(|c: char| {
            c.is_ascii_punctuation() || c.is_whitespace() || c == '“' || c == '”'
        })
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(data_chars: Option<usize>) -> Judge {
        Judge::new(
            "What is the secret deploy code in the log?",
            &["Answer only from evidence. The word FINAL, then the answer you found."],
            data_chars,
            300,
        )
    }

    #[test]
    fn copies_of_the_question_or_the_instructions_are_refused() {
        let judge = judge(Some(100));
        for copy in [
            "Secret deploy code in the log",
            "\"secret deploy code in the log?\"",
            "What is the secret deploy code in the log?",
            "the word FINAL, then the answer you found",
        ] {
            assert!(
                matches!(judge.judge(copy, true, false), Verdict::Echo(_)),
                "{copy}"
            );
        }
        for answer in ["ORCHID-7291", "the log", "answer", "found"] {
            assert_eq!(
                judge.judge(answer, true, false),
                Verdict::Accepted,
                "{answer}"
            );
        }
    }

    #[test]
    fn an_answer_before_code_is_sent_back_once_when_the_data_was_not_shown_whole() {
        let large = judge(Some(49_000));
        assert!(matches!(
            large.judge("ORCHID-7291", false, false),
            Verdict::NoCodeYet(note) if note.contains("no code has run yet")
        ));
        assert_eq!(
            large.judge("ORCHID-7291", false, true),
            Verdict::WithoutEvidence
        );
        assert_eq!(large.judge("ORCHID-7291", true, false), Verdict::Accepted);
        // Data the first message could show whole needs no code; a store always does.
        assert_eq!(
            judge(Some(120)).judge("ORCHID-7291", false, false),
            Verdict::Accepted
        );
        assert!(matches!(
            judge(None).judge("ORCHID-7291", false, false),
            Verdict::NoCodeYet(_)
        ));
    }
}
