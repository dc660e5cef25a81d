use super::*;

/// Rows as text, in blocks of `size`: `(row, has_content)`; rows of an unclosed field are
/// marked with `!`.
fn rows(input: &str, delimiter: u8, size: usize) -> Vec<String> {
    let bytes = input.as_bytes();
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut on_row = |event: RowEvent| match event {
        RowEvent::Row { end, .. } => {
            out.push(input[start..end as usize].to_owned());
            start = end as usize;
        }
        RowEvent::Unclosed {
            row_end, lines_end, ..
        } => {
            out.push(format!("!{}", &input[start..row_end as usize]));
            for line in input[row_end as usize..lines_end as usize].split_inclusive('\n') {
                out.push(format!("!{line}"));
            }
            start = lines_end as usize;
        }
    };
    let mut splitter = RowSplitter::new(delimiter);
    for block in bytes.chunks(size) {
        splitter.feed(block, &mut on_row);
    }
    splitter.finish(&mut on_row);
    out
}

fn all_block_sizes(input: &str, delimiter: u8) -> Vec<String> {
    let whole = rows(input, delimiter, input.len().max(1));
    for size in [1, 2, 3, 5, 7, 64] {
        assert_eq!(rows(input, delimiter, size), whole, "block size {size}");
    }
    whole
}

#[test]
fn a_quote_opens_a_field_only_at_its_start() {
    let input = "item,size\nmonitor,27\" wide\ncable,\"2 m, coiled\nblack\"\nmouse,small\n";
    assert_eq!(
        all_block_sizes(input, b','),
        [
            "item,size\n",
            "monitor,27\" wide\n",
            "cable,\"2 m, coiled\nblack\"\n",
            "mouse,small\n"
        ]
    );
    // The delimiter decides what a field start is.
    assert_eq!(
        all_block_sizes("a;\"x\ny\";b\nc,\"d\n", b';'),
        ["a;\"x\ny\";b\n", "c,\"d\n"]
    );
}

#[test]
fn escaped_quotes_keep_the_field_open_across_any_blocking() {
    let input = "id,text\n1,\"say \"\"hi\"\"\nthere\"\n2,\"\"\"\"\n3,\"a\"b,\"c\n\"\r\n4,x";
    assert_eq!(
        all_block_sizes(input, b','),
        [
            "id,text\n",
            "1,\"say \"\"hi\"\"\nthere\"\n",
            "2,\"\"\"\"\n",
            "3,\"a\"b,\"c\n\"\r\n",
            "4,x"
        ]
    );
}

#[test]
fn a_field_that_never_closes_falls_back_to_lines() {
    let input = "a\tb\n1\t\"oops\tx\n2\ty\n\n3\t\"\"z\n";
    assert_eq!(
        all_block_sizes(input, b'\t'),
        ["a\tb\n", "!1\t\"oops\tx\n", "!2\ty\n", "!\n", "!3\t\"\"z\n"]
    );
    let mut unclosed = Vec::new();
    let mut splitter = RowSplitter::new(b'\t');
    splitter.feed(input.as_bytes(), |event| unclosed.push(event));
    splitter.finish(|event| unclosed.push(event));
    assert_eq!(
        unclosed.last(),
        Some(&RowEvent::Unclosed {
            row_end: 14,
            lines_end: input.len() as u64,
            content_lines: 2,
            opened_line: 2
        })
    );
}

#[test]
fn a_field_open_past_the_limit_ends_at_its_first_line() {
    // A stray quote at a field start, closed by another stray quote far below: without the
    // limit the two would join every line between them into one row.
    let filler = "row\tplain text\n".repeat(10_000);
    let input = format!("h1\th2\nx\t\"stray\n{filler}y\tquote\" here\nlast\trow\n");
    let rows = all_block_sizes_fast(&input);
    assert_eq!(rows.len(), 2 + 10_000 + 2);
    assert_eq!(rows[1], "!x\t\"stray\n");
    assert!(rows.iter().all(|row| row.matches('\n').count() == 1));
    // Lines up to the first line end 128 KiB past the quote are rows of the unclosed field;
    // reading starts afresh after it, so the closing quote far below is an ordinary one.
    let fallen_back = rows.iter().filter(|row| row.starts_with('!')).count();
    // The quote is at byte 8; filler line `i` (15 bytes) ends with the `\n` at 29 + 15 i.
    let last_fallen_back = (8 + QUOTED_FIELD_LIMIT as usize - 29).div_ceil(15);
    assert_eq!(fallen_back, 1 + last_fallen_back + 1);
    assert_eq!(rows[rows.len() - 2..], ["y\tquote\" here\n", "last\trow\n"]);
}

fn all_block_sizes_fast(input: &str) -> Vec<String> {
    let whole = rows(input, b'\t', input.len());
    for size in [4096, 65_536, 100_003] {
        assert_eq!(rows(input, b'\t', size), whole, "block size {size}");
    }
    whole
}

#[test]
fn fields_are_unquoted_like_pythons_csv() {
    assert_eq!(
        split_fields(b"a,\"b,c\",\"say \"\"hi\"\"\",27\" wide,\"x\"y,", b','),
        ["a", "b,c", "say \"hi\"", "27\" wide", "xy", ""]
    );
    assert_eq!(split_fields(b"one\ttwo", b'\t'), ["one", "two"]);
}

/// Every event, in blocks of `size`.
fn events(input: &[u8], delimiter: u8, size: usize, kernel: Kernel) -> Vec<RowEvent> {
    let mut out = Vec::new();
    let mut splitter = RowSplitter::new(delimiter);
    splitter.kernel = kernel;
    for block in input.chunks(size.max(1)) {
        splitter.feed(block, |event| out.push(event));
    }
    splitter.finish(|event| out.push(event));
    out
}

/// Blocks under 64 bytes are read byte by byte (between quotes and newlines); longer ones
/// by 64-byte bitmasks, whichever kernel computes them. All must report the same rows, and
/// counting must count them.
fn assert_chunks_match_bytes(input: &[u8], delimiter: u8) {
    assert_counting_matches_events(input, delimiter);
    let reference = events(input, delimiter, 63, Kernel::Portable);
    assert_eq!(events(input, delimiter, 1, Kernel::Portable), reference);
    for kernel in Kernel::available() {
        for size in [64, 65, 130, 4096, input.len()] {
            assert_eq!(
                events(input, delimiter, size, kernel),
                reference,
                "{kernel:?}, block {size}, input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}

#[test]
fn bitmask_chunks_match_the_byte_reader_on_tricky_tables() {
    let rows: [&[u8]; 8] = [
        b"1,\"say \"\"hi\"\" there\",x\n",
        b"2,\"multi\nline, with comma\",y\r\n",
        b"3,27\" wide,\"\"\"\"\n",
        b"\n",
        b"   \t \r\n",
        b"4,\"  \n  \n\",z\n",
        b"5,\xff\xfe invalid,\"\xc3\n\"\n",
        b"6,a\"b,\"c\"d\"\n",
    ];
    for row in rows {
        // Shift the row across every position of a chunk.
        let input: Vec<u8> = (0..70)
            .flat_map(|i| [&b"v".repeat(i)[..], row].concat())
            .collect();
        assert_chunks_match_bytes(&input, b',');
    }
    let mixed: Vec<u8> = (0..40)
        .flat_map(|i| rows[i % rows.len()].to_vec())
        .collect();
    assert_chunks_match_bytes(&mixed, b',');
    assert_chunks_match_bytes(&mixed, b'\t');
    assert_chunks_match_bytes(b"", b',');
    let unclosed = format!("h\n{}\"unclosed\n1\n", "x,".repeat(50));
    assert_chunks_match_bytes(unclosed.as_bytes(), b',');
}

/// Rows with content (a row of an unclosed field counts), from the reported events.
fn content_rows(events: &[RowEvent]) -> u64 {
    events
        .iter()
        .map(|event| match *event {
            RowEvent::Row { has_content, .. } => u64::from(has_content),
            RowEvent::Unclosed { content_lines, .. } => 1 + content_lines,
        })
        .sum()
}

/// The quoted fields that never closed, as reported.
fn unclosed(events: &[RowEvent]) -> Vec<RowEvent> {
    events
        .iter()
        .filter(|event| matches!(event, RowEvent::Unclosed { .. }))
        .copied()
        .collect()
}

/// Rows with content and the unclosed fields (where each row ends and the lines it leaves
/// behind, the line it opened on), counting in blocks of `size`.
fn counted(input: &[u8], delimiter: u8, size: usize, kernel: Kernel) -> (u64, Vec<RowEvent>) {
    let mut splitter = RowSplitter::new(delimiter);
    splitter.kernel = kernel;
    let mut reported = Vec::new();
    let mut counted = 0;
    for block in input.chunks(size.max(1)) {
        counted += splitter.feed_counting(block, |event| reported.push(event));
    }
    splitter.finish(|event| reported.push(event));
    (counted + content_rows(&reported), unclosed(&reported))
}

/// Counting chunks in bulk, from their masks, gives the rows and unclosed fields the byte
/// reader reports (blocks under 64 bytes have no whole chunk), whatever the blocking and
/// kernel.
fn assert_counting_matches_events(input: &[u8], delimiter: u8) {
    let walked = events(input, delimiter, 63, Kernel::Portable);
    let reference = (content_rows(&walked), unclosed(&walked));
    for kernel in Kernel::available() {
        for size in [1, 64, 65, 127, 130, 4096, input.len()] {
            assert_eq!(
                counted(input, delimiter, size, kernel),
                reference,
                "{kernel:?}, block {size}, input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}

#[test]
fn counting_plain_chunks_matches_the_reported_rows() {
    // Blank and whitespace-only rows at every position of a chunk, rows spanning chunks,
    // CRLF, a chunk with no newline, quoted fields before and after plain chunks.
    let rows: [&[u8]; 7] = [
        b"1,plain,row\n",
        b"\n",
        b"  \t \r\n",
        b"2,crlf\r\n",
        b"3,\"quoted\nfield\",x\n",
        &[b'w'; 70],
        b"\n\n \n",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200 {
        let mut input = Vec::new();
        while input.len() < 600 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            input.extend_from_slice(rows[(state % rows.len() as u64) as usize]);
            input.extend(std::iter::repeat_n(b' ', (state >> 8) as usize % 5));
        }
        assert_counting_matches_events(&input, b',');
    }
    assert_counting_matches_events(&b"\n".repeat(200), b',');
    assert_counting_matches_events(&b" ".repeat(200), b',');
    assert_counting_matches_events(&[&b"x".repeat(64)[..], &b"\n".repeat(64)].concat(), b',');
    let unclosed = format!("h\n{}\"unclosed\n1\n{}", "x,".repeat(50), "y\n".repeat(40));
    assert_counting_matches_events(unclosed.as_bytes(), b',');
}

#[test]
fn bitmask_chunks_match_the_byte_reader_on_random_tables() {
    let alphabet = b"\"\"\",,,\n\n\r \tab1\xc3\xa9";
    let mut state = 0xD1B5_4A32_D192_ED03u64;
    for _ in 0..300 {
        let length = (state % 700) as usize;
        let input: Vec<u8> = (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[(state % alphabet.len() as u64) as usize]
            })
            .collect();
        assert_chunks_match_bytes(&input, b',');
    }
}

/// A quoted table as spreadsheets write it: every field quoted, `""` and quoted newlines, CRLF
/// in some rows.
fn quoted_table(rows: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = b"\"id\",\"text\",\"n\"\n".to_vec();
    for row in 0..rows {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let text: &[u8] = match state % 7 {
            0 => b"say \"\"hi\"\" there",
            1 => b"two\nlines, here",
            2 => b"\"\"\"\"",
            3 => b"  \n \n\t",
            4 => b"caf\xc3\xa9 \xff\xfe",
            5 => b"",
            _ => b"plain text of some length to move the quotes around",
        };
        let end: &[u8] = if state >> 3 & 3 == 0 { b"\r\n" } else { b"\n" };
        out.extend_from_slice(format!("\"{row}\",\"").as_bytes());
        out.extend_from_slice(text);
        out.extend_from_slice(b"\",\"");
        out.extend(std::iter::repeat_n(b'x', (state >> 8) as usize % 70));
        out.extend_from_slice(b"\"");
        out.extend_from_slice(end);
    }
    out
}

#[test]
fn counting_quoted_chunks_matches_the_byte_reader() {
    for seed in 1..40u64 {
        let table = quoted_table(40, seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        assert_counting_matches_events(&table, b',');
        // The same table shifted, so each quote lands at every position of a chunk.
        for shift in [1, 7, 31, 63] {
            let shifted = [&b"v".repeat(shift)[..], &table].concat();
            assert_counting_matches_events(&shifted, b',');
        }
    }
    let tricky: [&[u8]; 14] = [
        b"",
        b"\"",
        b"\"\"",
        b"\"\"\"",
        b"a,\"b\nc",
        b"a,b\" c\nd,\"e\"f\n\"g\" \"h\"\n",
        b"\"a\"\"\n\"\"b\"\r\n",
        b"x\"\"y,\"\",\"\"\"\n",
        b"\n\n  \n\"\n\n\n\"\n",
        b"\xff\"\xfe,\"\xc3\",\"\xa9\n\"\n",
        b"\"unterminated\n1,2\n\n3,4\n",
        b"\"a\"b\"c\"\n",
        b"1;\"a;b\";\"c\nd\"\n",
        b"\t\"\t\"\t\n",
    ];
    for piece in tricky {
        for repeats in [1, 5, 70] {
            let input = piece.repeat(repeats);
            for delimiter in [b',', b';', b'\t'] {
                assert_counting_matches_events(&input, delimiter);
            }
        }
    }
    for length in [1, 63, 64, 65, 127, 128, 129, 500] {
        assert_counting_matches_events(&b"\"".repeat(length), b',');
        assert_counting_matches_events(&b"\",".repeat(length), b',');
    }
}

#[test]
fn counting_long_quoted_fields_matches_the_byte_reader() {
    // Fields open across many chunks: closed before the limit, closed after it (so the quote
    // that would close it far below is an ordinary one), and never closed.
    let lines = |count: usize| "a line, \"\" inside\n  \n".repeat(count);
    let short = format!("h1,h2\n1,\"{}\"\n2,x\n", lines(100));
    let past_limit = format!("h1,h2\n1,\"{}\"\n2,x\n\"3\",\"y\"\n", lines(8_000));
    let unclosed = format!("h1,h2\n1,\"{}2,x\n", lines(300));
    for input in [short, past_limit, unclosed] {
        assert_counting_matches_events(input.as_bytes(), b',');
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: 256,
        failure_persistence: None,
        ..Default::default()
    })]

    /// Tables made of what CSV gives meaning to, and bytes that are not text.
    #[test]
    fn counting_any_table_matches_the_byte_reader(
        pieces in proptest::collection::vec(
            proptest::sample::select(vec![
                &b"\""[..], b"\"\"", b",", b";", b"\n", b"\r\n", b" ", b"\t", b"a", b"bc",
                b"12345678", b"\xff", b"\xc3\xa9",
            ]),
            0..400,
        ),
        delimiter in proptest::sample::select(vec![b',', b';', b'\t']),
    ) {
        assert_counting_matches_events(&pieces.concat(), delimiter);
    }
}

#[test]
fn counting_carries_a_fields_content_from_the_byte_reader() {
    // A stray quote sends a chunk to the byte reader; a field opens after it and its second
    // line has content only before the chunk ends, so the counted chunk after it (one whole
    // chunk of lines follows) must carry that content (the field never closes, so its lines
    // are counted).
    for shift in 0..64 {
        for content in 1..12 {
            let input = format!(
                "h,\"{}\"x\"y,\"\n{}\n  \n{}",
                "q".repeat(shift),
                "c".repeat(content),
                "z\n".repeat(40)
            );
            assert_counting_matches_events(input.as_bytes(), b',');
        }
    }
}

#[test]
fn a_quote_after_a_plain_chunk_does_not_reopen_the_field_before_it() {
    // A field closes with the last byte of a chunk, the next chunk has no quote, and the one
    // after starts with a quote: that quote follows a `z`, so it is an ordinary character, not
    // the `""` that reopens the field.
    let input = format!(
        "a,\"{}\"{}z\"q\nr,s\n{}",
        "x".repeat(60),
        "y".repeat(63),
        "t,u\n".repeat(20)
    );
    assert_eq!(input.find('z'), Some(127));
    assert_counting_matches_events(input.as_bytes(), b',');
}
