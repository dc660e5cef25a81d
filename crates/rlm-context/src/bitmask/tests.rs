use super::structure::{depth_one, escaped_bytes, prefix_xor, stays_deep};
use super::*;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Every byte value, at every position, plus runs of the interesting ones.
fn sample_bytes() -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(64 * 9).collect();
    bytes.extend(b" \t\n\x0b\x0c\r\"\\{}[],:x\xff\x80".repeat(20));
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    bytes.extend((0..64 * 40).map(|_| (xorshift(&mut state) >> 24) as u8));
    bytes
}

/// JSON-like bytes: brackets that mostly nest, strings with escapes, commas, whitespace,
/// non-ASCII, and the odd stray byte.
fn structured_bytes(seed: u64, length: usize) -> Vec<u8> {
    let pieces: [&[u8]; 14] = [
        b"{",
        b"}",
        b"[",
        b"]",
        b"[{",
        b"}]",
        b",",
        b" ",
        b"\r\n",
        br#""s""#,
        br#""a\"]{""#,
        br#""\\""#,
        b"\\",
        "é\"".as_bytes(),
    ];
    let mut state = seed;
    let mut bytes = Vec::new();
    while bytes.len() < length {
        let piece = pieces[(xorshift(&mut state) % pieces.len() as u64) as usize];
        bytes.extend_from_slice(piece);
        bytes.extend(std::iter::repeat_n(
            b'1',
            (xorshift(&mut state) % 9) as usize,
        ));
    }
    bytes
}

/// The masks of every chunk of `bytes` by the byte loop from `state`, up to the chunk where the
/// depth would fall to 0.
fn portable_masks(bytes: &[u8], mut state: JsonState) -> Vec<(JsonMasks, JsonState)> {
    let mut out = Vec::new();
    for chunk in bytes.as_chunks::<CHUNK>().0 {
        let Some((masks, after)) = portable::json_chunk(chunk, state) else {
            break;
        };
        out.push((masks, after));
        state = after;
    }
    out
}

/// The masks `kernel` folds over, and the state it ends in.
fn kernel_masks(kernel: Kernel, bytes: &[u8], start: JsonState) -> (Vec<JsonMasks>, JsonState) {
    let mut masks = Vec::new();
    let (visited, after, ()) = fold_json_chunks(kernel, bytes, (start, ()), |(), chunk| {
        masks.push(*chunk);
        Some(())
    });
    assert_eq!(visited, masks.len());
    (masks, after)
}

#[test]
fn every_kernel_gives_the_masks_of_the_byte_loop() {
    let mut inputs = vec![sample_bytes()];
    inputs.extend((0..40).map(|seed| structured_bytes(0x2545_F491_4F6C_DD1D + seed, 3000)));
    for kernel in Kernel::available() {
        for (index, bytes) in inputs.iter().enumerate() {
            for depth in [1, 2, 3, 64, 65, 66, 1000] {
                for in_string in [false, true] {
                    let start = JsonState {
                        in_string,
                        escape: false,
                        depth,
                    };
                    let reference = portable_masks(bytes, start);
                    let (masks, after) = kernel_masks(kernel, bytes, start);
                    let context = format!("{kernel:?}, input {index}, start {start:?}");
                    assert_eq!(masks.len(), reference.len(), "{context}");
                    for (chunk, (expected, _)) in reference.iter().enumerate() {
                        assert_eq!(masks[chunk], *expected, "{context}, chunk {chunk}");
                    }
                    assert_eq!(after, reference.last().map_or(start, |last| last.1));
                }
            }
        }
    }
}

#[test]
fn every_kernel_gives_the_csv_masks_of_the_byte_loop() {
    let bytes = sample_bytes();
    for (kernel, delimiter) in Kernel::available()
        .into_iter()
        .flat_map(|kernel| [b',', b'\t', b';'].map(|delimiter| (kernel, delimiter)))
    {
        let mut csv = Vec::new();
        let (visited, seen) = fold_csv_chunks(kernel, &bytes, delimiter, 0, |seen, masks| {
            csv.push(*masks);
            seen + 1
        });
        assert_eq!((visited, seen), (bytes.len() / CHUNK, bytes.len() / CHUNK));
        for (index, chunk) in bytes.as_chunks::<CHUNK>().0.iter().enumerate() {
            assert_eq!(
                csv[index],
                portable::csv_chunk(chunk, delimiter),
                "{kernel:?}, chunk {index}"
            );
        }
    }
}

#[test]
fn folding_stops_where_the_step_declines_or_the_depth_ends() {
    let bytes = sample_bytes();
    let start = JsonState {
        in_string: false,
        escape: false,
        depth: 1000,
    };
    let reference = portable_masks(&bytes, start);
    for kernel in Kernel::available() {
        // The state handed back is the one after the last accepted chunk.
        let step = |seen: u32, _: &JsonMasks| (seen < 2).then_some(seen + 1);
        let folded = fold_json_chunks(kernel, &bytes, (start, 0), step);
        assert_eq!(folded, (2, reference[1].1, 2), "{kernel:?}");
        // A partial chunk is left alone.
        let folded = fold_json_chunks(kernel, &bytes[..63], (start, 0), |_, _| Some(1));
        assert_eq!(folded, (0, start, 0));
        // The depth falls to 0 in the third chunk.
        let mut closing = [b'x'; CHUNK * 3];
        closing[CHUNK * 2 + 5] = b']';
        let start = JsonState { depth: 1, ..start };
        let folded = fold_json_chunks(kernel, &closing, (start, 0), |seen, _| Some(seen + 1));
        assert_eq!(folded, (2, start, 2), "{kernel:?}");
    }
}

/// Which bytes are escaped, walking backslashes one at a time.
fn escaped_by_walking(backslash: u64, mut escape: bool) -> (u64, bool) {
    let mut escaped = 0;
    for index in 0..64 {
        if escape {
            escaped |= 1 << index;
            escape = false;
        } else if backslash >> index & 1 == 1 {
            escape = true;
        }
    }
    (escaped, escape)
}

#[test]
fn escapes_match_a_walk_over_backslash_runs_and_chunk_edges() {
    let even_bits = 0x5555_5555_5555_5555u64;
    let mut patterns = vec![
        0,
        !0,
        1,
        1 << 63,
        0b11 << 62,
        0b111 << 61,
        even_bits,
        !even_bits,
    ];
    for start in 0..64 {
        for length in 1..=(64 - start).min(6) {
            patterns.push(((1u64 << length) - 1) << start);
            patterns.push((((1u64 << length) - 1) << start) | 0b1011 << 20);
        }
    }
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..2000 {
        let bits = xorshift(&mut state);
        patterns.push(bits & bits.rotate_left(7));
    }
    for backslash in patterns {
        for carry in [false, true] {
            assert_eq!(
                escaped_bytes(backslash, carry),
                escaped_by_walking(backslash, carry),
                "backslashes {backslash:064b}, carry {carry}"
            );
        }
    }
}

#[test]
fn prefix_xor_marks_the_bytes_between_quotes() {
    assert_eq!(prefix_xor(0b1001), 0b0111);
    assert_eq!(prefix_xor(1 << 63), 1 << 63);
    assert_eq!(prefix_xor(0b11), 0b01);
    #[cfg(target_arch = "x86_64")]
    if avx2::supported() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut values = vec![0, !0, 1, 1 << 63, 0x5555_5555_5555_5555];
        values.extend((0..1000).map(|_| xorshift(&mut state)));
        for bits in values {
            // SAFETY: the CPU has the features, checked above.
            #[expect(unsafe_code, reason = "calls SIMD code after run-time detection")]
            let by_multiplication = unsafe { avx2::prefix_xor(bits) };
            assert_eq!(by_multiplication, prefix_xor(bits), "{bits:064b}");
        }
    }
}

/// Whether each byte is inside a string, walking bytes one by one the way the masks see them: a
/// backslash escapes the next byte, inside a string or not.
fn in_string_by_walking(bytes: &[u8]) -> Vec<bool> {
    let (mut in_string, mut escape) = (false, false);
    bytes
        .iter()
        .map(|&byte| {
            if escape {
                escape = false;
            } else if byte == b'\\' {
                escape = true;
            } else if byte == b'"' {
                in_string = !in_string;
            }
            // An opening quote is inside its string, a closing quote is not.
            in_string
        })
        .collect()
}

#[test]
fn strings_follow_quotes_and_escapes_across_chunks() {
    let mut state = 0xD1B5_4A32_D192_ED03u64;
    let mut inputs = vec![sample_bytes()];
    for alphabet in [&b"\\\"ab"[..], b"\\\\\"", b"\"\"\\x"] {
        inputs.push(
            (0..64 * 50)
                .map(|_| alphabet[(xorshift(&mut state) % alphabet.len() as u64) as usize])
                .collect(),
        );
    }
    // Deep enough that no bracket ends the fold.
    let start = JsonState {
        in_string: false,
        escape: false,
        depth: 1 << 20,
    };
    for kernel in Kernel::available() {
        for bytes in &inputs {
            let walked = in_string_by_walking(bytes);
            let (masks, _) = kernel_masks(kernel, bytes, start);
            assert_eq!(masks.len(), bytes.len() / CHUNK);
            for (index, &inside) in walked.iter().take(masks.len() * CHUNK).enumerate() {
                let bit = masks[index / CHUNK].in_string >> (index % CHUNK) & 1 == 1;
                assert_eq!(bit, inside, "{kernel:?}, byte {index}");
            }
        }
    }
}

#[test]
fn depth_one_marks_bytes_outside_nested_values() {
    // `,{..},` at depth 1: the `{` is read at depth 1, its contents and `}` deeper.
    let opens = 1 << 2;
    let closes = 1 << 5;
    let (mask, depth) = depth_one(1, opens, closes).unwrap();
    assert_eq!(mask, !(0b111 << 3));
    assert_eq!(depth, 1);
    assert_eq!(depth_one(3, 1, 0), Some((0, 4)));
    assert_eq!(depth_one(1, 0, 1), None);
    assert_eq!(depth_one(2, 0, 1 << 63), Some((0, 1)));
}

#[test]
fn a_nested_value_that_opens_and_closes_in_the_chunk_stays_deep() {
    // `{..}` inside a record at depth 2: the closing bracket alone would allow depth 1.
    assert!(stays_deep(2, 1 << 2, 1 << 5));
    // `]}` closing the record: it does reach depth 1.
    assert!(!stays_deep(2, 1 << 2, 1 << 5 | 1 << 6));
    // A closing bracket before the first opening one.
    assert!(!stays_deep(2, 1 << 9, 1 << 5));
    assert!(stays_deep(3, 1 << 9, 1 << 5));
    // Whenever the bound says so, the walk never reaches depth 1.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for depth in [1, 2, 3, 4, 9] {
        for _ in 0..5_000 {
            let brackets = xorshift(&mut state) & xorshift(&mut state) & xorshift(&mut state);
            let opens = brackets & xorshift(&mut state);
            let closes = brackets & !opens;
            if stays_deep(depth, opens, closes) {
                let walked = depth_one_by_walking(depth, opens, closes);
                assert_eq!(walked.map(|(mask, _)| mask), Some(0), "depth {depth}");
            }
        }
    }
}

/// [`depth_one`] byte by byte.
fn depth_one_by_walking(mut depth: usize, opens: u64, closes: u64) -> Option<(u64, usize)> {
    let mut mask = 0;
    for index in 0..64 {
        if depth == 1 {
            mask |= 1 << index;
        }
        if opens >> index & 1 == 1 {
            depth += 1;
        } else if closes >> index & 1 == 1 {
            depth -= 1;
            if depth == 0 {
                return None;
            }
        }
    }
    Some((mask, depth))
}

#[test]
fn depth_one_matches_a_walk_over_random_brackets() {
    let mut state = 0x853C_49E6_748F_EA9Bu64;
    let mut cases = Vec::new();
    for case in 0..20_000u64 {
        // Sparse to dense brackets, adjacent ones, ones at both chunk edges; mostly closing
        // or mostly opening ones, so that deep starts come back to depth 1.
        let brackets = match case % 4 {
            0 => xorshift(&mut state) & xorshift(&mut state) & xorshift(&mut state),
            1 => xorshift(&mut state) & xorshift(&mut state),
            2 => xorshift(&mut state),
            _ => (xorshift(&mut state) & xorshift(&mut state)) | 1 | 1 << 63,
        };
        let opens = match case % 3 {
            0 => brackets & xorshift(&mut state),
            1 => brackets & xorshift(&mut state) & xorshift(&mut state),
            _ => brackets & (xorshift(&mut state) | xorshift(&mut state)),
        };
        let depth = [1, 2, 3, 5, 17, 40, 64, 65, 66, 70][(case % 10) as usize];
        cases.push((depth, opens, brackets & !opens));
    }
    cases.push((65, 0, !0));
    cases.push((64, 0, !0));
    cases.push((1, !0, 0));
    cases.push((1, EVEN, !EVEN));
    for (depth, opens, closes) in cases {
        let walked = depth_one_by_walking(depth, opens, closes);
        assert_eq!(
            depth_one(depth, opens, closes),
            walked,
            "depth {depth}, opens {opens:064b}, closes {closes:064b}"
        );
        #[cfg(target_arch = "x86_64")]
        if avx512::supported() {
            // SAFETY: the CPU has the features, checked above.
            #[expect(unsafe_code, reason = "calls SIMD code after run-time detection")]
            let summed = unsafe { avx512::depth_one(depth, opens, closes) };
            assert_eq!(summed, walked, "AVX-512: depth {depth}, opens {opens:064b}");
        }
    }
}

const EVEN: u64 = 0x5555_5555_5555_5555;

#[test]
fn the_byte_loop_marks_each_class() {
    let mut chunk = [b'a'; CHUNK];
    chunk[..11].copy_from_slice(b"\"\\{[}],: \x0c\x0b");
    chunk[63] = b'\n';
    let json = portable::classify_json(&chunk);
    assert_eq!(json.quote, 1);
    assert_eq!(json.backslash, 1 << 1);
    assert_eq!(json.open, 0b1100);
    assert_eq!(json.close, 0b11_0000);
    assert_eq!(json.comma, 1 << 6);
    assert_eq!(json.colon, 1 << 7);
    // Vertical tab (0x0b) is not ASCII whitespace to Rust.
    assert_eq!(json.whitespace, 1 << 8 | 1 << 9 | 1 << 63);
    let csv = portable::csv_chunk(&chunk, b',');
    assert_eq!((csv.quote, csv.newline), (1, 1 << 63));
    assert_eq!((csv.delimiter, csv.quote_parity), (1 << 6, !0));
}
