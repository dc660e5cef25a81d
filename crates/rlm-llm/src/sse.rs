//! A small incremental parser for `text/event-stream` bodies.
//!
//! Bytes arrive in arbitrary pieces (a network chunk can end mid-line or mid-UTF-8 character),
//! so input is buffered until a blank line completes an event.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, empty when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Buffers bytes and hands out complete events.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    /// Adds bytes and returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut consumed = 0;
        while let Some((end, separator_len)) = find_event_end(&self.buffer[consumed..]) {
            if let Some(event) = parse_block(&self.buffer[consumed..consumed + end]) {
                events.push(event);
            }
            consumed += end + separator_len;
        }
        self.buffer.drain(..consumed);
        events
    }

    /// Whether bytes of an unfinished event are buffered (a stream cut mid-event).
    pub fn has_partial(&self) -> bool {
        self.buffer.iter().any(|b| !b.is_ascii_whitespace())
    }
}

/// Finds the first blank line (`\n\n`, `\r\n\r\n` or `\r\r`): returns where the event ends and
/// the separator length.
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    // Every separator starts with a line end: only those positions are tried.
    let mut from = 0;
    while let Some(offset) = buffer[from..]
        .iter()
        .position(|&byte| byte == b'\n' || byte == b'\r')
    {
        let at = from + offset;
        for separator in [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"] {
            if buffer[at..].starts_with(separator) {
                return Some((at, separator.len()));
            }
        }
        from = at + 1;
    }
    None
}

fn parse_block(block: &[u8]) -> Option<SseEvent> {
    let text = String::from_utf8_lossy(block);
    let mut event = SseEvent::default();
    let mut data_lines: Vec<&str> = Vec::new();
    for line in text.split(['\n', '\r']) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event.event = value.to_owned(),
            "data" => data_lines.push(value),
            _ => {}
        }
    }
    if data_lines.is_empty() && event.event.is_empty() {
        return None;
    }
    event.data = data_lines.join("\n");
    Some(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_crlf() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"event: ping\r\nda").is_empty());
        assert!(parser.has_partial());
        let events = parser.push(b"ta: {\"a\":1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\n");
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "ping".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x\ny".into()
                },
            ]
        );
        assert!(!parser.has_partial());
    }

    #[test]
    fn multibyte_character_split_between_chunks() {
        let mut parser = SseParser::default();
        let text = "data: héllo\n\n".as_bytes();
        let (first, second) = text.split_at(8);
        assert!(parser.push(first).is_empty());
        assert_eq!(parser.push(second)[0].data, "héllo");
    }
}
