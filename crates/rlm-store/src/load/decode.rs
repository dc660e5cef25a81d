//! Bytes to stored text: binary sources are refused, invalid UTF-8 (a Latin-1 log, say) is
//! stored with replacement characters and a note, as `rlm inspect` shows it.

use std::borrow::Cow;

/// Bytes sniffed at the start of a source to call it binary.
pub(super) const BINARY_SNIFF_BYTES: usize = 8192;

/// Why the first bytes of a source are not text, if they are not.
pub(super) fn binary_reason(head: &[u8]) -> Option<String> {
    let head = &head[..head.len().min(BINARY_SNIFF_BYTES)];
    if memchr::memchr(0, head).is_some() {
        Some("binary file (NUL bytes)".to_owned())
    } else if rlm_context::looks_binary(head) {
        Some("binary file (mostly control characters or invalid UTF-8)".to_owned())
    } else {
        None
    }
}

/// Invalid UTF-8 sequences met while decoding, each stored as U+FFFD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Replacements {
    /// Sequences replaced.
    pub count: u64,
    /// Byte offset (in the source) of the first one.
    pub first: Option<u64>,
}

impl Replacements {
    fn record(&mut self, offset: u64) {
        self.count += 1;
        self.first.get_or_insert(offset);
    }

    /// The note a user sees, when anything was replaced.
    pub fn note(&self) -> Option<String> {
        let first = self.first?;
        Some(format!(
            "invalid UTF-8: {} sequence(s), first at byte {first}; stored with replacement characters",
            self.count
        ))
    }
}

/// Decodes `bytes`, which start at byte `offset` of the source, replacing each invalid
/// sequence with U+FFFD exactly as [`String::from_utf8_lossy`] does. Unless `last`, a character
/// cut off at the end is left undecoded. Returns the text and the number of bytes it covers.
pub(super) fn decode_lossy<'a>(
    bytes: &'a [u8],
    offset: u64,
    last: bool,
    replacements: &mut Replacements,
) -> (Cow<'a, str>, usize) {
    let mut decoded = String::new();
    let mut at = 0;
    while at < bytes.len() {
        let error = match std::str::from_utf8(&bytes[at..]) {
            Ok(text) if at == 0 => return (Cow::Borrowed(text), bytes.len()),
            Ok(text) => {
                decoded.push_str(text);
                at = bytes.len();
                break;
            }
            Err(error) => error,
        };
        let valid = at + error.valid_up_to();
        if at == 0 && error.error_len().is_none() && !last {
            // Only a cut-off character at the end: no copy needed.
            let text = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
            return (Cow::Borrowed(text), valid);
        }
        decoded.push_str(std::str::from_utf8(&bytes[at..valid]).unwrap_or_default());
        match error.error_len() {
            Some(length) => {
                decoded.push(char::REPLACEMENT_CHARACTER);
                replacements.record(offset + valid as u64);
                at = valid + length;
            }
            None if last => {
                decoded.push(char::REPLACEMENT_CHARACTER);
                replacements.record(offset + valid as u64);
                at = bytes.len();
            }
            None => {
                at = valid;
                break;
            }
        }
    }
    (Cow::Owned(decoded), at)
}

/// Decodes a whole source.
pub(super) fn decode_whole(bytes: Vec<u8>) -> (String, Replacements) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, Replacements::default()),
        Err(error) => {
            let mut replacements = Replacements::default();
            let (text, _) = decode_lossy(error.as_bytes(), 0, true, &mut replacements);
            (text.into_owned(), replacements)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: &[&[u8]] = &[
        b"caf\xe9 cr\xe8me\n",
        b"ok\xc3",
        b"\xe2\x82a\xf0\x9f\x98",
        b"\xff\xfe\xfd plain \xc3\xa9 \xed\xa0\x80 end",
        "ünïcode 東京 ok".as_bytes(),
    ];

    #[test]
    fn decoding_matches_the_standard_lossy_decoder() {
        for sample in SAMPLES {
            let (text, replacements) = decode_whole(sample.to_vec());
            assert_eq!(text, String::from_utf8_lossy(sample), "{sample:?}");
            assert_eq!(
                replacements.count as usize,
                text.matches('\u{FFFD}').count()
            );
        }
        let (_, latin1) = decode_whole(b"caf\xe9 cr\xe8me\n".to_vec());
        assert_eq!(
            latin1,
            Replacements {
                count: 2,
                first: Some(3)
            }
        );
    }

    #[test]
    fn decoding_in_pieces_matches_decoding_whole() {
        for sample in SAMPLES {
            for piece in 1..sample.len().max(2) {
                let mut text = String::new();
                let mut replacements = Replacements::default();
                let mut pending = Vec::new();
                let mut offset = 0u64;
                let mut chunks = sample.chunks(piece).peekable();
                while let Some(chunk) = chunks.next() {
                    pending.extend_from_slice(chunk);
                    let last = chunks.peek().is_none();
                    let (decoded, used) = decode_lossy(&pending, offset, last, &mut replacements);
                    text.push_str(&decoded);
                    offset += used as u64;
                    pending.drain(..used);
                }
                assert!(pending.is_empty());
                let (whole, whole_replacements) = decode_whole(sample.to_vec());
                assert_eq!(text, whole, "{sample:?} in pieces of {piece}");
                assert_eq!(replacements, whole_replacements);
            }
        }
    }

    #[test]
    fn binary_means_nul_bytes_or_mostly_non_text() {
        assert!(binary_reason(b"text\0more").unwrap().contains("NUL"));
        assert!(binary_reason(&[0x80, 0x81, 0x82, 0x90, b'a']).is_some());
        assert_eq!(binary_reason(b"caf\xe9 cr\xe8me au lait\n"), None);
    }
}
