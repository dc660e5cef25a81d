//! Captured `print()` output with a visible cap.

use std::borrow::Cow;

use monty_types::{MontyException, PrintWriterCallback};

/// Print sink that keeps the first `cap` chars and counts the rest.
#[derive(Debug)]
pub(super) struct CappedOutput {
    pub(super) text: String,
    kept_chars: usize,
    cap: usize,
    pub(super) dropped_chars: u64,
}

impl CappedOutput {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            text: String::new(),
            kept_chars: 0,
            cap,
            dropped_chars: 0,
        }
    }

    fn push(&mut self, piece: &str) {
        let room = self.cap - self.kept_chars;
        if room == 0 {
            self.dropped_chars += piece.chars().count() as u64;
            return;
        }
        match piece.char_indices().nth(room) {
            None => {
                self.kept_chars += piece.chars().count();
                self.text.push_str(piece);
            }
            Some((cut, _)) => {
                self.text.push_str(&piece[..cut]);
                self.kept_chars = self.cap;
                self.dropped_chars += piece[cut..].chars().count() as u64;
            }
        }
    }
}

impl PrintWriterCallback for CappedOutput {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(&output);
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        let mut buffer = [0; 4];
        self.push(end.encode_utf8(&mut buffer));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_output_counts_what_it_drops() {
        let mut output = CappedOutput::new(5);
        output.push("héllo");
        output.push(" wörld");
        assert_eq!(output.text, "héllo");
        assert_eq!(output.dropped_chars, 6);
    }
}
