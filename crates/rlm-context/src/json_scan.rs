//! A streaming structural scan of one JSON document: element count of a top-level array, field
//! names (one level of dot paths) of the first elements and of windows spread over the array,
//! and whether brackets balance. It never builds values, so a multi-gigabyte document costs one
//! pass and constant memory.
//!
//! Bytes are walked one by one while field names are collected; between those records the scan
//! skims whole 64-byte chunks ([`crate::json_skim`]), which gives the same counts.

use crate::bitmask::{CHUNK, JsonState, Kernel, fold_json_chunks};
use crate::fields::FieldSet;
use crate::json_skim::{SkimState, skim_chunk};
use crate::sample::WindowSchedule;

/// Depths whose container kind we remember; deeper levels only move the depth counter.
const TRACKED_DEPTHS: usize = 4;

#[derive(Debug)]
pub(crate) struct JsonScanner {
    /// Depth of record-level keys: 1 for an object document, 2 for the elements of an array.
    base: usize,
    record_limit: u64,
    windows: WindowSchedule,
    window_records: u64,
    /// Elements before this one are in the current window.
    window_end: u64,
    /// Offset of the block being scanned.
    block_start: u64,
    depth: usize,
    containers: [u8; TRACKED_DEPTHS],
    expect_key: [bool; TRACKED_DEPTHS],
    in_string: bool,
    escape: bool,
    string_is_key: bool,
    key: Vec<u8>,
    pending_key: Option<String>,
    parent_key: Option<String>,
    top: Option<u8>,
    elements: u64,
    awaiting_value: bool,
    top_values: u64,
    unbalanced: bool,
    /// Skim chunks where fields are not collected (off only to test the walk against it).
    skimming: bool,
    /// What computes the chunk masks while skimming.
    kernel: Kernel,
    pub(crate) fields: FieldSet,
}

/// What the scan found.
#[derive(Debug)]
pub(crate) struct JsonScan {
    /// `b'{'`, `b'['`, or `None` for a scalar (or nothing).
    pub top: Option<u8>,
    /// Values inside a top-level array.
    pub elements: u64,
    /// Values at the top level (1 for a well-formed document).
    pub top_values: u64,
    /// Brackets did not balance or a string was left open.
    pub malformed: bool,
    pub fields: FieldSet,
}

impl JsonScanner {
    /// A scanner collecting the fields of the first `record_limit` elements of an array
    /// document, and of `window_records` elements from each window of `windows`.
    pub(crate) fn new(
        array_document: bool,
        record_limit: u64,
        (windows, window_records): (WindowSchedule, u64),
        field_limit: usize,
    ) -> Self {
        Self {
            base: if array_document { 2 } else { 1 },
            record_limit,
            windows,
            window_records,
            window_end: 0,
            block_start: 0,
            depth: 0,
            containers: [0; TRACKED_DEPTHS],
            expect_key: [false; TRACKED_DEPTHS],
            in_string: false,
            escape: false,
            string_is_key: false,
            key: Vec::new(),
            pending_key: None,
            parent_key: None,
            top: None,
            elements: 0,
            awaiting_value: true,
            top_values: 0,
            unbalanced: false,
            skimming: true,
            kernel: Kernel::best(),
            fields: FieldSet::new(field_limit),
        }
    }

    pub(crate) fn feed(&mut self, block: &[u8]) {
        let mut index = 0;
        while index < block.len() {
            if self.skimming && self.can_skim() {
                index = self.skim(block, index);
            }
            index = self.walk(block, index);
        }
        self.block_start += block.len() as u64;
    }

    /// Whether the state is one [`skim_chunk`] reproduces: inside the top-level array, no field
    /// collection under way, nothing pending that a value would complete.
    fn can_skim(&self) -> bool {
        self.top == Some(b'[')
            && self.base == 2
            && self.depth >= 1
            && self.containers[1] == b'['
            && (self.depth == 1 || !self.awaiting_value)
            && self.pending_key.is_none()
            && self.parent_key.is_none()
            && !self.collecting()
    }

    /// Skims whole chunks from `index` until one needs the walk, the next window is near, or
    /// fewer than 64 bytes are left; returns where the walk takes over.
    fn skim(&mut self, block: &[u8], index: usize) -> usize {
        let offset = self.block_start + index as u64;
        // Elements starting at or after the next window's start are for the walk to see.
        let before_window = self.windows.next_start().saturating_sub(offset);
        let room = usize::try_from(before_window).map_or(block.len(), |room| room.min(block.len()));
        let bytes = &block[index..room.max(index)];
        let json = JsonState {
            in_string: self.in_string,
            escape: self.escape,
            depth: self.depth,
        };
        let state = SkimState {
            awaiting_value: self.awaiting_value,
            elements: self.elements,
        };
        let (chunks, json, state) = fold_json_chunks(self.kernel, bytes, (json, state), skim_chunk);
        self.elements = state.elements;
        self.awaiting_value = state.awaiting_value;
        self.in_string = json.in_string;
        self.escape = json.escape;
        self.depth = json.depth;
        // Not collecting, so a string's role no longer matters.
        self.string_is_key = false;
        index + chunks * CHUNK
    }

    /// Walks bytes from `start` to the end of the block, or until skimming can resume at least
    /// a chunk further on; returns where it stopped.
    fn walk(&mut self, block: &[u8], start: usize) -> usize {
        let resume_at = start + CHUNK;
        let mut index = start;
        while index < block.len() {
            if self.in_string {
                index = self.scan_string(block, index);
                continue;
            }
            let byte = block[index];
            if self.awaiting_value {
                // Only here do scalars matter: an element of the top array, a record field's
                // value, or a value after the top-level document.
                if byte.is_ascii_whitespace() {
                    index += 1;
                    continue;
                }
                self.awaiting_value = false;
                if !is_structural(byte) {
                    self.value_starts(None, self.block_start + index as u64);
                    index += 1;
                    continue;
                }
            } else if !is_structural(byte) {
                match block[index..].iter().position(|&b| is_structural(b)) {
                    Some(offset) => index += offset,
                    None => return block.len(),
                }
                continue;
            }
            index += 1;
            match byte {
                b'"' => {
                    self.in_string = true;
                    self.string_is_key = self
                        .tracked(self.depth)
                        .is_some_and(|d| self.containers[d] == b'{' && self.expect_key[d]);
                    if self.string_is_key {
                        self.key.clear();
                    } else {
                        self.value_starts(None, self.block_start + index as u64 - 1);
                    }
                }
                b'{' | b'[' => {
                    self.value_starts(Some(byte), self.block_start + index as u64 - 1);
                    self.depth += 1;
                    if let Some(d) = self.tracked(self.depth) {
                        self.containers[d] = byte;
                        self.expect_key[d] = byte == b'{';
                    }
                    self.awaiting_value = self.depth == 1 && byte == b'[';
                }
                b'}' | b']' => self.close(),
                b':' => {
                    if let Some(d) = self.tracked(self.depth) {
                        self.expect_key[d] = false;
                    }
                    self.awaiting_value = self.depth == self.base && self.pending_key.is_some();
                }
                _ => {
                    // A comma.
                    if let Some(d) = self.tracked(self.depth) {
                        self.expect_key[d] = self.containers[d] == b'{';
                    }
                    self.awaiting_value = self.depth == 1 && self.top == Some(b'[');
                    if self.depth == 1 && index >= resume_at && self.skimming && self.can_skim() {
                        return index;
                    }
                }
            }
        }
        index
    }

    /// Consumes string bytes from `index`; returns where scanning continues.
    fn scan_string(&mut self, block: &[u8], index: usize) -> usize {
        if self.escape {
            self.escape = false;
            self.push_key_bytes(&block[index..=index]);
            return index + 1;
        }
        let Some(found) = memchr::memchr2(b'"', b'\\', &block[index..]) else {
            self.push_key_bytes(&block[index..]);
            return block.len();
        };
        let position = index + found;
        self.push_key_bytes(&block[index..position]);
        if block[position] == b'\\' {
            self.escape = true;
            self.push_key_bytes(b"\\");
        } else {
            self.in_string = false;
            if self.string_is_key {
                self.key_read();
            }
        }
        position + 1
    }

    fn push_key_bytes(&mut self, bytes: &[u8]) {
        // Keys longer than this are not useful as field names; keep the scan bounded.
        if self.string_is_key && self.key.len() < 256 {
            let room = 256 - self.key.len();
            self.key.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
    }

    fn tracked(&self, depth: usize) -> Option<usize> {
        (depth < TRACKED_DEPTHS).then_some(depth)
    }

    fn collecting(&self) -> bool {
        self.base == 1 || self.elements <= self.record_limit || self.elements < self.window_end
    }

    fn key_read(&mut self) {
        if !self.collecting() {
            return;
        }
        let key = decode_key(&self.key);
        if self.depth == self.base {
            self.pending_key = Some(key);
        } else if self.depth == self.base + 1
            && let Some(parent) = &self.parent_key
        {
            self.fields.insert_path(parent, &key);
        }
    }

    /// A value begins at the current depth, at offset `at`.
    #[inline]
    fn value_starts(&mut self, container: Option<u8>, at: u64) {
        let is_object = container == Some(b'{');
        if self.depth == 0 {
            self.top_values += 1;
            if self.top_values == 1 {
                self.top = container;
            }
        }
        if self.depth == 1 && self.top == Some(b'[') {
            self.elements += 1;
            if self.elements > self.record_limit && at >= self.windows.next_start() {
                self.window_starts(at);
            }
        }
        if self.depth == self.base
            && let Some(key) = self.pending_key.take()
        {
            self.fields.insert_key(&key);
            if is_object {
                self.parent_key = Some(key);
            }
        }
    }

    #[cold]
    fn window_starts(&mut self, at: u64) {
        if self.windows.take_due(at) {
            self.window_end = self.elements + self.window_records;
        }
    }

    fn close(&mut self) {
        if self.depth == 0 {
            self.unbalanced = true;
            return;
        }
        if self.depth == self.base + 1 {
            self.parent_key = None;
        }
        self.depth -= 1;
        // Anything after the top-level document is worth noticing.
        self.awaiting_value = self.depth == 0;
    }

    pub(crate) fn finish(self) -> JsonScan {
        JsonScan {
            top: self.top,
            elements: self.elements,
            top_values: self.top_values,
            malformed: self.unbalanced || self.depth != 0 || self.in_string,
            fields: self.fields,
        }
    }
}

fn is_structural(byte: u8) -> bool {
    matches!(byte, b'"' | b'{' | b'[' | b'}' | b']' | b':' | b',')
}

fn decode_key(raw: &[u8]) -> String {
    // Keys are almost always plain; decode escapes properly when there are any.
    if !raw.contains(&b'\\') {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted)
        .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(input: &str, array: bool, block: usize) -> JsonScan {
        let mut scanner = JsonScanner::new(array, 100, (WindowSchedule::new(0, None), 0), 100);
        for chunk in input.as_bytes().chunks(block) {
            scanner.feed(chunk);
        }
        scanner.finish()
    }

    #[test]
    fn array_elements_and_fields_with_one_level_of_dot_paths() {
        let input = r#"[ {"a": 1, "p": {"x": {"deep": 1}, "y": "s"}, "e": {}},
                        {"b": "has \"quotes\" and ] brackets", "a": 2},
                        [1, 2], "str", 3.5, null ]"#;
        for block in [1, 2, 7, 1000] {
            let result = scan(input, true, block);
            assert_eq!(result.elements, 6, "block {block}");
            assert!(!result.malformed);
            assert_eq!(
                result.fields.finish().names,
                ["a", "p", "e", "b", "p.x", "p.y"],
                "block {block}"
            );
        }
    }

    #[test]
    fn windows_collect_fields_of_elements_past_the_first_ones() {
        let elements: Vec<String> = (0..3000)
            .map(|i| match i {
                1500.. => format!(r#"{{"id": {i}, "late": {{"since": 1500}}}}"#),
                _ => format!(r#"{{"id": {i}}}"#),
            })
            .collect();
        let input = format!("[{}]", elements.join(", "));
        for block in [7, 4096] {
            let windows = WindowSchedule::new(8, Some(input.len() as u64));
            let mut scanner = JsonScanner::new(true, 100, (windows, 4), 100);
            for chunk in input.as_bytes().chunks(block) {
                scanner.feed(chunk);
            }
            let result = scanner.finish();
            assert_eq!(result.elements, 3000);
            assert_eq!(
                result.fields.finish().names,
                ["id", "late", "late.since"],
                "block {block}"
            );
        }
        let mut head_only = JsonScanner::new(true, 100, (WindowSchedule::new(0, None), 0), 100);
        head_only.feed(input.as_bytes());
        assert_eq!(head_only.finish().fields.finish().names, ["id"]);
    }

    #[test]
    fn object_document_keys_in_first_seen_order() {
        let input = r#"{"zeta": 1, "alpha": {"k": [1, {"inner": 2}]}, "esc\"aped": true}"#;
        let result = scan(input, false, 3);
        assert_eq!(result.top, Some(b'{'));
        assert_eq!(
            result.fields.finish().names,
            ["zeta", "alpha", "esc\"aped", "alpha.k"]
        );
    }

    /// Everything a scan reports, from a scanner that reads fields of the first `head` elements
    /// and of `window_records` elements in each of `windows` windows, skimming with `kernel` (or
    /// walking every byte).
    fn outcome(
        input: &[u8],
        kernel: Option<Kernel>,
        block: usize,
        (head, windows, window_records): (u64, u64, u64),
    ) -> (Option<u8>, u64, u64, bool, crate::fields::Fields) {
        let schedule = WindowSchedule::new(windows, Some(input.len() as u64));
        let mut scanner = JsonScanner::new(true, head, (schedule, window_records), 100);
        scanner.skimming = kernel.is_some();
        scanner.kernel = kernel.unwrap_or(Kernel::Portable);
        for chunk in input.chunks(block.max(1)) {
            scanner.feed(chunk);
        }
        let scan = scanner.finish();
        let fields = scan.fields.finish();
        (
            scan.top,
            scan.elements,
            scan.top_values,
            scan.malformed,
            fields,
        )
    }

    /// Skimming with every kernel gives what the byte walk gives, for several blockings and
    /// sampling plans.
    fn assert_skim_matches_walk(input: &[u8]) {
        for plan in [(0, 0, 0), (1, 0, 0), (2, 3, 1), (1, 40, 2)] {
            let walked = outcome(input, None, input.len(), plan);
            for kernel in Kernel::available() {
                for block in [input.len(), 1, 63, 64, 65, 200, 4096] {
                    assert_eq!(
                        outcome(input, Some(kernel), block, plan),
                        walked,
                        "{kernel:?}, plan {plan:?}, block {block}, input {:?}",
                        String::from_utf8_lossy(input)
                    );
                }
            }
        }
    }

    /// `element` repeated `count` times as an array, each padded so the tricky bytes fall on
    /// every position of a 64-byte chunk.
    fn padded_array(element: &str, count: usize) -> Vec<u8> {
        let elements: Vec<String> = (0..count)
            .map(|i| format!("{}{element}", " ".repeat(i % 67)))
            .collect();
        format!("[{}]", elements.join(",")).into_bytes()
    }

    #[test]
    fn skimming_matches_the_walk_on_tricky_arrays() {
        let long_escape_runs = format!(r#""{0}" "{0}\"x" "{0}\\""#, r"\\".repeat(40));
        let elements = [
            r#"{"a": "escaped \" quote", "b": "\\", "c": "\\\\\"", "d": 1}"#,
            long_escape_runs.as_str(),
            r#"[[1, [2, [3, [4, [5]]]]], {"x": {"y": {"z": []}}}]"#,
            r#"{"text": "brackets ] } [ { and, commas: and\nnewlines", "raw": "line
break"}"#,
            "{\"crlf\": 1}\r\n",
            "  17 ",
            "true , null,\t-1.5e3",
            r#""adjacent" "strings" 3 4 {}"#,
            ",, ,",
            r#"{"k":"\u00e9", "\"key\"": ["\\"]}"#,
        ];
        for element in elements {
            assert_skim_matches_walk(&padded_array(element, 150));
        }
        let mixed = elements.join(" ,\n ");
        assert_skim_matches_walk(&padded_array(&mixed, 60));
    }

    #[test]
    fn skimming_matches_the_walk_on_malformed_input() {
        let base = padded_array(r#"{"a": [1, "x\\"], "b": {"c": "]"}}"#, 120);
        let inputs = [
            Vec::new(),
            b"[".to_vec(),
            // Truncated in a string, after a backslash, inside nested values.
            base[..base.len() / 2].to_vec(),
            base[..base.len() - 7].to_vec(),
            // Backslashes and invalid UTF-8 outside strings.
            [
                &base[..3000],
                br#" \"oops" "#,
                b"\xff\xfe ,\\ 5 ",
                &base[3000..],
            ]
            .concat(),
            // Too many closing brackets, then more top-level values.
            [&base[..], br#"]]} {"after": 1} [2]"#].concat(),
            // A quote never closed.
            [&base[..base.len() - 1], br#", "open"#].concat(),
        ];
        for input in inputs {
            assert_skim_matches_walk(&input);
        }
    }

    #[test]
    fn skimming_matches_the_walk_on_random_input() {
        let alphabet = b"\\\\\\\"\"\"{}[],,::   \n\r\tab1\xc3\xa9";
        let mut state = 0x853C_49E6_748F_EA9Bu64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..300 {
            let length = 200 + (next() % 1500) as usize;
            // Mostly well-formed elements with random bytes spliced in, so that the scan
            // stays inside the array long enough to skim.
            let mut input = b"[".to_vec();
            while input.len() < length {
                match next() % 8 {
                    0 => input.push(alphabet[(next() % alphabet.len() as u64) as usize]),
                    1 => input.extend_from_slice(br#"{"k": "v\\"}, "#),
                    2 => input.extend_from_slice(b"[1, [2]], "),
                    3 => input.extend_from_slice(br#""s\"]", "#),
                    _ => input.extend_from_slice(br#"{"a": {"b": [true]}, "c": 2}, "#),
                }
            }
            if case % 3 != 0 {
                input.push(b']');
            }
            assert_skim_matches_walk(&input);
        }
    }

    #[test]
    fn truncated_and_unbalanced_documents_are_malformed() {
        assert!(scan(r#"[{"a": 1}, {"b": "#, true, 4).malformed);
        assert!(scan(r#"{"a": 1}}"#, false, 4).malformed);
        assert!(!scan(r#"[]"#, true, 4).malformed);
        assert_eq!(scan(r#"[]"#, true, 4).elements, 0);
    }
}
