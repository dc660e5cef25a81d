//! Which records give field names: the first ones, plus windows spread over the whole input.
//!
//! Fields that appear only late in a file (a key added to a log format halfway through) are
//! missed by a union over the first records alone. Parsing every record would cost far more
//! than the pass itself, so the pass also reads a few records at evenly spaced offsets.

use crate::fields::FieldSet;

/// Where the windows start, by byte offset.
///
/// With the input size known, windows are `size / (windows + 1)` apart. Without it (stdin),
/// they start [`UNKNOWN_SIZE_STRIDE`] apart and, each time twice the planned number has been
/// taken, the spacing doubles (as if every other window had been skipped): the windows cover
/// the whole stream, and their number grows with the logarithm of its length.
#[derive(Debug, Clone)]
pub(crate) struct WindowSchedule {
    planned: u64,
    stride: u64,
    next_start: u64,
    taken: u64,
}

/// Window spacing while the input size is unknown.
const UNKNOWN_SIZE_STRIDE: u64 = 16 * 1024;

impl WindowSchedule {
    pub(crate) fn new(planned: u64, size_hint: Option<u64>) -> Self {
        let stride = match size_hint {
            Some(size) => (size / (planned + 1)).max(1),
            None => UNKNOWN_SIZE_STRIDE,
        };
        Self {
            planned,
            stride,
            next_start: if planned == 0 { u64::MAX } else { stride },
            taken: 0,
        }
    }

    /// Offset where the next window starts (`u64::MAX` for none).
    pub(crate) fn next_start(&self) -> u64 {
        self.next_start
    }

    /// Whether a window starts at or before `offset`; if so, it is taken and the next one
    /// planned after `offset`.
    pub(crate) fn take_due(&mut self, offset: u64) -> bool {
        if offset < self.next_start {
            return false;
        }
        self.taken += 1;
        if self.taken >= self.planned * 2 {
            self.stride = self.stride.saturating_mul(2);
            self.taken = self.planned;
        }
        self.next_start = (offset / self.stride + 1).saturating_mul(self.stride);
        true
    }
}

/// Lines longer than this are not parsed for fields (they are still counted as records).
const MAX_SAMPLED_LINE: usize = 1 << 20;

/// Field names of NDJSON records: the first `head` records, then `window_records` records from
/// the first full line after each window start. Lines may span any number of blocks.
#[derive(Debug)]
pub(crate) struct LineSampler {
    schedule: WindowSchedule,
    window_records: u64,
    /// Offset of the next byte fed.
    offset: u64,
    /// Records still to read in the current window (the head counts as the first).
    remaining: u64,
    /// A window started: skip to the next line start before reading.
    seeking_line_start: bool,
    /// The start of a line cut by the end of a block.
    partial: Vec<u8>,
    partial_too_long: bool,
    pub(crate) fields: FieldSet,
    /// Non-blank lines read, and those that were not valid JSON.
    pub(crate) checked: u64,
    pub(crate) malformed: u64,
    /// Whether any line came from a window (not only the head).
    pub(crate) windowed: bool,
}

impl LineSampler {
    pub(crate) fn new(
        head: u64,
        schedule: WindowSchedule,
        window_records: u64,
        fields: FieldSet,
    ) -> Self {
        Self {
            schedule,
            window_records,
            offset: 0,
            remaining: head,
            seeking_line_start: false,
            partial: Vec::new(),
            partial_too_long: false,
            fields,
            checked: 0,
            malformed: 0,
            windowed: false,
        }
    }

    pub(crate) fn feed(&mut self, block: &[u8]) {
        let base = self.offset;
        let end = base + block.len() as u64;
        let mut position = 0;
        loop {
            if self.remaining > 0 {
                let Some(newline) = memchr::memchr(b'\n', &block[position..]) else {
                    self.keep_partial(&block[position..]);
                    break;
                };
                self.take_line(&block[position..position + newline]);
                position += newline + 1;
            } else if self.seeking_line_start {
                let Some(newline) = memchr::memchr(b'\n', &block[position..]) else {
                    break;
                };
                position += newline + 1;
                self.seeking_line_start = false;
                self.remaining = self.window_records;
                self.windowed |= self.window_records > 0;
            } else {
                let at = (base + position as u64).max(self.schedule.next_start());
                if at >= end || !self.schedule.take_due(at) {
                    break;
                }
                position = (at - base) as usize;
                self.seeking_line_start = true;
            }
        }
        self.offset = end;
    }

    /// The end of the input: a last line without a newline is a line too.
    pub(crate) fn finish(&mut self) {
        if self.remaining > 0 && (!self.partial.is_empty() || self.partial_too_long) {
            self.take_line(&[]);
        }
    }

    fn keep_partial(&mut self, bytes: &[u8]) {
        if self.partial_too_long {
            return;
        }
        if self.partial.len() + bytes.len() > MAX_SAMPLED_LINE {
            self.partial = Vec::new();
            self.partial_too_long = true;
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }

    fn take_line(&mut self, rest: &[u8]) {
        if self.partial_too_long {
            self.partial_too_long = false;
            self.remaining -= 1;
            return;
        }
        // The line is parsed from a copy: the block may be a mapped file's bytes, which another
        // process can change while they are read, and the parser trusts text it has checked
        // to stay as it was. The copy's buffer is kept for the next line.
        let mut line = std::mem::take(&mut self.partial);
        line.extend_from_slice(rest);
        self.take_whole_line(&line);
        line.clear();
        self.partial = line;
    }

    fn take_whole_line(&mut self, line: &[u8]) {
        if line.trim_ascii().is_empty() {
            return;
        }
        self.remaining -= 1;
        self.checked += 1;
        let parsed = self.fields.insert_json_record(line).is_ok()
            // Text in another encoding (Latin-1) is read as a lossy decoder shows it.
            || (std::str::from_utf8(line).is_err()
                && self
                    .fields
                    .insert_json_record(String::from_utf8_lossy(line).as_bytes())
                    .is_ok());
        if !parsed {
            self.malformed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_size_gets_evenly_spaced_windows() {
        let mut schedule = WindowSchedule::new(4, Some(1000));
        let starts: Vec<u64> = (0..1000).filter(|&at| schedule.take_due(at)).collect();
        assert_eq!(starts, [200, 400, 600, 800]);
    }

    #[test]
    fn an_unknown_size_doubles_the_spacing_and_still_reaches_the_end() {
        let mut schedule = WindowSchedule::new(4, None);
        let end = UNKNOWN_SIZE_STRIDE * 1000;
        let starts: Vec<u64> = (0..end)
            .step_by(1024)
            .filter(|&at| schedule.take_due(at))
            .collect();
        assert!(starts.len() < 4 * 2 + 4 * 10, "{}", starts.len());
        let last_gap = starts[starts.len() - 1] - starts[starts.len() - 2];
        assert!(end - starts[starts.len() - 1] <= last_gap);
    }

    fn sample(input: &[u8], head: u64, size: usize) -> (Vec<String>, u64, u64) {
        let schedule = WindowSchedule::new(3, Some(input.len() as u64));
        let mut sampler = LineSampler::new(head, schedule, 2, FieldSet::new(100));
        for block in input.chunks(size) {
            sampler.feed(block);
        }
        sampler.finish();
        let checked = sampler.checked;
        let malformed = sampler.malformed;
        (sampler.fields.finish().names, checked, malformed)
    }

    #[test]
    fn windows_find_fields_the_head_never_sees() {
        let mut input = String::new();
        for index in 0..400 {
            let late = if index >= 300 { ",\"late\":1" } else { "" };
            input.push_str(&format!("{{\"id\":{index}{late}}}\n"));
        }
        let mut input = input.into_bytes();
        // A bad line, a Latin-1 line (read lossily), a last line without a newline.
        input.extend_from_slice(b"not json\n{\"caf\xe9\":1}\n{\"last\":true}");
        for size in [1, 7, 64, 100_000] {
            let (fields, checked, malformed) = sample(&input, 10, size);
            assert_eq!(fields, ["id", "late"], "block size {size}");
            assert_eq!((checked, malformed), (16, 0), "block size {size}");
        }
        // The head reads every line of a short input, the last one without a newline too.
        let (fields, checked, malformed) = sample(&input, 1000, 13);
        assert_eq!(fields, ["id", "late", "caf\u{fffd}", "last"]);
        assert_eq!((checked, malformed), (403, 1));
    }
}
