//! One bit per byte, in a loop: the fallback, and the reference the SIMD kernels are tested
//! against.

use super::structure::{complete, depth_one, prefix_xor};
use super::{CHUNK, CsvMasks, JsonMasks, JsonState};

pub(super) fn json_chunk(chunk: &[u8; CHUNK], state: JsonState) -> Option<(JsonMasks, JsonState)> {
    complete(classify_json(chunk), state, prefix_xor, depth_one)
}

/// The byte classes alone (`quote` is every quote; `in_string` and `depth_one` are left empty).
pub(super) fn classify_json(chunk: &[u8; CHUNK]) -> JsonMasks {
    let mut masks = JsonMasks::default();
    for (index, &byte) in chunk.iter().enumerate() {
        let bit = 1u64 << index;
        match byte {
            b'"' => masks.quote |= bit,
            b'\\' => masks.backslash |= bit,
            b'{' | b'[' => masks.open |= bit,
            b'}' | b']' => masks.close |= bit,
            b',' => masks.comma |= bit,
            b':' => masks.colon |= bit,
            _ if byte.is_ascii_whitespace() => masks.whitespace |= bit,
            _ => {}
        }
    }
    masks
}

pub(super) fn csv_chunk(chunk: &[u8; CHUNK], delimiter: u8) -> CsvMasks {
    let mut masks = CsvMasks::default();
    for (index, &byte) in chunk.iter().enumerate() {
        let bit = 1u64 << index;
        if byte == b'"' {
            masks.quote |= bit;
        }
        if byte == b'\n' {
            masks.newline |= bit;
        }
        if byte.is_ascii_whitespace() {
            masks.whitespace |= bit;
        }
        if byte == delimiter {
            masks.delimiter |= bit;
        }
    }
    masks.quote_parity = prefix_xor(masks.quote);
    masks
}
