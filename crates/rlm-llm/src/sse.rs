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
    /// Bytes of `buffer` already searched for the end of an event, less the few a separator
    /// split between two pushes may have started with.
    searched: usize,
}

impl SseParser {
    /// Adds bytes and returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut consumed = 0;
        let mut from = self.searched;
        while let Some((end, separator_len)) = find_event_end(&self.buffer[consumed..], from) {
            if let Some(event) = parse_block(&self.buffer[consumed..consumed + end]) {
                events.push(event);
            }
            consumed += end + separator_len;
            from = 0;
        }
        self.buffer.drain(..consumed);
        // A separator is at most 4 bytes: the last 3 may start one the next push completes.
        self.searched = self.buffer.len().saturating_sub(3);
        events
    }

    /// Whether bytes of an unfinished event are buffered (a stream cut mid-event).
    pub fn has_partial(&self) -> bool {
        self.buffer.iter().any(|b| !b.is_ascii_whitespace())
    }
}

/// Finds the first blank line (`\n\n`, `\r\n\r\n` or `\r\r`) starting at or after `from`:
/// returns where the event ends and the separator length.
fn find_event_end(buffer: &[u8], from: usize) -> Option<(usize, usize)> {
    // Every separator starts with a line end: only those positions are tried.
    let mut from = from;
    while let Some(offset) = memchr::memchr2(b'\n', b'\r', buffer.get(from..)?) {
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
    let mut name = String::new();
    // Several `data:` lines are joined with `\n`; one (the usual case) is copied once.
    let mut data: Option<String> = None;
    for line in text.split(['\n', '\r']) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => value.clone_into(&mut name),
            "data" => match &mut data {
                Some(joined) => {
                    joined.push('\n');
                    joined.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    if data.is_none() && name.is_empty() {
        return None;
    }
    Some(SseEvent {
        event: name,
        data: data.unwrap_or_default(),
    })
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
    fn separators_split_between_pushes_and_events_in_one_push() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"data: a\r\n\r").is_empty());
        assert_eq!(parser.push(b"\ndata: b\n")[0].data, "a");
        assert!(parser.push(b"data: c\r").is_empty());
        let events = parser.push(b"\rdata: d\n\ndata:\n\nevent: only\n\n");
        let seen: Vec<(&str, &str)> = events
            .iter()
            .map(|event| (event.event.as_str(), event.data.as_str()))
            .collect();
        assert_eq!(seen, [("", "b\nc"), ("", "d"), ("", ""), ("only", "")]);
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
