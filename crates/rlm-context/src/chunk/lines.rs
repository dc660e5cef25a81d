//! Line numbers for byte offsets, computed incrementally.

/// Answers "which line is byte `pos` on" for positions that mostly move forward, counting only
/// the newlines between the previous position and the new one.
pub(crate) struct LineCounter<'a> {
    bytes: &'a [u8],
    position: usize,
    /// 1-based line of `position`.
    line: u64,
}

impl<'a> LineCounter<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            position: 0,
            line: 1,
        }
    }

    /// The 1-based line holding byte `pos` (a newline belongs to the line it ends).
    pub(crate) fn line_at(&mut self, pos: usize) -> u64 {
        let pos = pos.min(self.bytes.len());
        if pos >= self.position {
            self.line += count(&self.bytes[self.position..pos]);
        } else {
            self.line -= count(&self.bytes[pos..self.position]);
        }
        self.position = pos;
        self.line
    }
}

fn count(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// Byte offsets just past each `\n` in `range`, i.e. the starts of the following lines.
pub(crate) fn line_starts(
    text: &str,
    start: usize,
    end: usize,
) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', &text.as_bytes()[start..end]).map(move |offset| start + offset + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_forwards_and_backwards() {
        let text = "a\nbb\n\nccc";
        let mut counter = LineCounter::new(text);
        assert_eq!(counter.line_at(0), 1);
        assert_eq!(counter.line_at(1), 1, "the newline belongs to its line");
        assert_eq!(counter.line_at(2), 2);
        assert_eq!(counter.line_at(6), 4);
        assert_eq!(counter.line_at(3), 2);
        assert_eq!(counter.line_at(5), 3);
    }
}
