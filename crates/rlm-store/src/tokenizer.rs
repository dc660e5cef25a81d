//! The code-aware word splitter from `rlm_context::words` as a tantivy tokenizer, and the terms
//! a query asks the index for.
//!
//! # Unique-looking tokens
//! Logs are full of tokens that occur once: hex digests, UUIDs, base64, keys. Indexed as
//! themselves, each is a term of its own, so the term dictionary (which every segment merge
//! rewrites) grows with the file and a load of such text ran many times slower per byte than
//! ordinary text. They are indexed instead as one of [`BUCKETS`] bucket terms (`#` and the
//! bucket's number in hex, a term no text can produce), so the dictionary stays bounded however
//! many distinct tokens there are. A query asks for such a token's bucket, and the store keeps
//! only the hits whose text holds the token itself ([`QueryPlan::literal`]), so two tokens that
//! share a bucket never answer for each other. Which tokens:
//!
//! - terms that look random ([`is_random_looking`]) and hex ids of 8+ characters
//!   ([`words::is_hex_id`]: UUID groups, short hashes), whole or as a part;
//! - blobs: identifiers of 8+ ASCII characters without `_` split into three or more one-character
//!   parts (`dGhpcyBpc3Ry`: base64, keys), which are hashed whole and whose parts (random
//!   fragments nobody types) are not indexed at all.
//!
//! # Runs of base64
//! A line of base64 is split by its `+` and `/` into identifiers, some of them short (`aB3x`),
//! which are not blobs by the rule above: indexed with their parts, they filled the term
//! dictionary with random fragments, and every character of the run was split into parts
//! before the blob was recognised. So a cheap scan comes first ([`blob_run`]): a run of at
//! least [`BLOB_RUN_BYTES`] base64 characters (`A-Z a-z 0-9 + / =`), at least three quarters
//! of it in blobs, is read as a whole, its identifiers without their parts: those of 8+
//! characters as the rules above have them (a bucket for a blob or a unique-looking one, else
//! the identifier itself), shorter ones not at all. Every identifier a query would ask for by
//! itself (8+ characters) is indexed as before; a 1–7 character piece of base64 is found by
//! `rlm grep`, not by search.
//!
//! Indexes written before this ([`IndexFormat::RandomLeftOut`]) left random-looking terms out
//! and kept every part; they are still read and written that way until `rlm reindex` rebuilds
//! them.

use rlm_context::words::{self, Terms};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Name the tokenizer is registered under in the index.
pub const CODE_TOKENIZER: &str = "rlm_code";

/// What an index holds for unique-looking tokens; recorded with each commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexFormat {
    /// Random-looking terms left out, every part kept (indexes written before buckets).
    RandomLeftOut,
    /// Unique-looking terms as bucket terms, parts of blobs left out.
    UniqueHashed,
}

/// Number of bucket terms unique-looking tokens are spread over. Part of the index format:
/// changing it (or [`bucket`]) makes every existing index answer wrongly.
pub const BUCKETS: u32 = 1 << 16;

/// First character of a bucket term; never part of a term the word splitter emits.
const BUCKET_PREFIX: char = '#';

/// Emits each identifier whole and as its parts (`getLogger` → `getlogger get logger`).
#[derive(Debug, Clone)]
pub struct CodeTokenizer {
    token: Token,
    format: IndexFormat,
}

impl CodeTokenizer {
    /// A tokenizer writing terms as `format` has them.
    pub fn new(format: IndexFormat) -> Self {
        Self {
            token: Token::default(),
            format,
        }
    }
}

impl Default for CodeTokenizer {
    fn default() -> Self {
        Self::new(IndexFormat::UniqueHashed)
    }
}

/// Token stream of [`CodeTokenizer`]; reuses one `Token` so indexing does not allocate per term.
#[derive(Debug)]
pub struct CodeTokenStream<'a> {
    text: &'a str,
    terms: Terms<'a>,
    token: &'a mut Token,
    format: IndexFormat,
    /// Whether the identifier whose parts come next is a blob (its parts are left out).
    in_blob: bool,
    /// The rest of a run of base64 being read whole ([`blob_run`]).
    run: std::ops::Range<usize>,
    /// Which identifiers of the run from here on are blobs (bit 0 the next one).
    run_blobs: u64,
    /// Identifiers of the run read so far.
    run_index: u32,
    /// Where [`blob_run`] last looked up to: identifiers before this are not checked again,
    /// so a long run that is no blob costs one scan.
    run_checked: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.token.reset();
        CodeTokenStream {
            text,
            terms: words::terms(text),
            token: &mut self.token,
            format: self.format,
            in_blob: false,
            run: 0..0,
            run_blobs: 0,
            run_index: 0,
            run_checked: 0,
        }
    }
}

/// Terms at least this long are checked by [`is_random_looking`].
pub const RANDOM_CHECK_BYTES: usize = 16;

/// Identifiers at least this long are checked by [`is_blob`].
pub const BLOB_CHECK_BYTES: usize = 8;

/// Whether a term looks random: at least [`RANDOM_CHECK_BYTES`] long with at least 3 digits
/// and 3 letters among its characters (`3f9c0d2e1b4a77c2…`, `dGhpcyBpcyBhIHRl…`), which words
/// and identifiers people search for rarely have.
pub fn is_random_looking(term: &str) -> bool {
    if term.len() < RANDOM_CHECK_BYTES {
        return false;
    }
    let digits = term.bytes().filter(u8::is_ascii_digit).count();
    let letters = term.bytes().filter(u8::is_ascii_alphabetic).count();
    digits >= 3 && letters >= 3
}

/// Whether a (lower-cased) term is indexed as its bucket: random-looking or a hex id.
pub fn is_unique_looking(term: &str) -> bool {
    is_random_looking(term) || words::is_hex_id(term)
}

/// Whether an identifier, as written, is a blob: at least [`BLOB_CHECK_BYTES`] ASCII characters
/// without `_`, splitting into three or more one-character parts (`aB3xYzQp` → `a B 3 x Yz Qp`),
/// as base64 and keys do and names (`getUTF8String`, `sha256WithRSAEncryption`) do not.
pub fn is_blob(identifier: &str) -> bool {
    identifier.len() >= BLOB_CHECK_BYTES
        && identifier.is_ascii()
        && !identifier.contains('_')
        && three_one_character_parts(identifier.as_bytes())
}

/// Whether an ASCII identifier without `_` splits into three or more one-character parts, with
/// the part boundaries of [`words::part_ranges`] found in one pass over its bytes (the
/// tokenizer asks this of every identifier of 8+ characters).
fn three_one_character_parts(bytes: &[u8]) -> bool {
    // Classes as 2-bit codes: upper case 0, lower case (and anything else) 1, digit 2. Random
    // text changes class at nearly every byte, so the boundary rule is a table lookup rather
    // than branches the processor would mispredict.
    const CLASSES: [u8; 256] = {
        let mut table = [1; 256];
        let mut byte = 0;
        while byte < 256 {
            table[byte] = match byte as u8 {
                b'A'..=b'Z' => 0,
                b'0'..=b'9' => 2,
                _ => 1,
            };
            byte += 1;
        }
        table
    };
    let class = |byte: u8| usize::from(CLASSES[usize::from(byte)]);
    /// Whether a part ends between `previous` and `current`, given the byte after `current`
    /// (upper case for none, so that it never splits): index `previous << 4 | current << 2 | next`.
    const BOUNDARY: [bool; 64] = {
        let mut table = [false; 64];
        let mut index = 0;
        while index < 64 {
            let (previous, current, next) = (index >> 4, (index >> 2) & 3, index & 3);
            table[index] = match (previous, current) {
                (1, 0) => true,
                // Before the last capital of a run of them followed by a lower-case letter.
                (0, 0) => next == 1,
                (2, 2) => false,
                (2, _) | (_, 2) => true,
                _ => false,
            };
            index += 1;
        }
        table
    };
    let mut part_start = 0;
    let mut found = 0;
    for at in 1..bytes.len() {
        let next = bytes.get(at + 1).map_or(0, |&byte| class(byte));
        let index = class(bytes[at - 1]) << 4 | class(bytes[at]) << 2 | next;
        let boundary = BOUNDARY[index];
        found += usize::from(boundary && at - part_start == 1);
        if found == 3 {
            return true;
        }
        part_start = if boundary { at } else { part_start };
    }
    found == 2 && bytes.len() - part_start == 1
}

/// Runs of base64 characters at least this long are checked by [`blob_run`].
pub const BLOB_RUN_BYTES: usize = 32;

/// What [`blob_run`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRun {
    /// Where the run of base64 characters ends.
    pub end: usize,
    /// Whether it is read whole as a blob.
    pub blob: bool,
    /// Which of its first 64 identifiers are blobs (bit `i` for the `i`-th).
    blobs: u64,
}

/// The run of base64 characters (`A-Z a-z 0-9 + / =`) starting at byte `start` of `text`: where
/// it ends, and whether it is read whole as a blob: at least [`BLOB_RUN_BYTES`] long, at least
/// three quarters of its bytes in identifiers that are blobs ([`is_blob`]). One pass.
pub fn blob_run(text: &str, start: usize) -> BlobRun {
    let bytes = text.as_bytes().get(start..).unwrap_or_default();
    let (mut end, mut identifier_start, mut in_blobs, mut blobs, mut index) = (0, 0, 0, 0u64, 0);
    loop {
        while bytes.get(end).is_some_and(u8::is_ascii_alphanumeric) {
            end += 1;
        }
        let identifier = &bytes[identifier_start..end];
        if identifier.len() >= BLOB_CHECK_BYTES && three_one_character_parts(identifier) {
            in_blobs += identifier.len();
            blobs |= 1u64.checked_shl(index).unwrap_or(0);
        }
        index += 1;
        if !matches!(bytes.get(end), Some(b'+' | b'/' | b'=')) {
            break;
        }
        end += 1;
        identifier_start = end;
    }
    BlobRun {
        end: start + end,
        blob: end >= BLOB_RUN_BYTES && in_blobs * 4 >= end * 3,
        blobs,
    }
}

/// The bucket of a unique-looking term (FNV-1a, folded). Part of the index format.
pub fn bucket(term: &str) -> u32 {
    bucket_of_bytes(term.bytes())
}

fn bucket_of_bytes(bytes: impl Iterator<Item = u8>) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    ((hash ^ (hash >> 32)) as u32) % BUCKETS
}

/// Writes the bucket term of `term` into `out` (replacing its content).
pub fn write_bucket_term(term: &str, out: &mut String) {
    write_bucket(bucket(term), out);
}

fn write_bucket(bucket: u32, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.clear();
    out.push(BUCKET_PREFIX);
    for shift in [12, 8, 4, 0] {
        out.push(char::from(HEX[((bucket >> shift) & 0xF) as usize]));
    }
}

/// The bucket term of `term`.
pub fn bucket_term(term: &str) -> String {
    let mut out = String::with_capacity(5);
    write_bucket_term(term, &mut out);
    out
}

/// How a term is indexed.
enum Indexed {
    AsItself,
    AsBucket,
    No,
}

impl CodeTokenStream<'_> {
    fn indexed(&mut self, term: &words::Term<'_>) -> Indexed {
        match self.format {
            IndexFormat::RandomLeftOut if is_random_looking(&term.text) => Indexed::No,
            IndexFormat::RandomLeftOut => Indexed::AsItself,
            IndexFormat::UniqueHashed => {
                if !term.is_part {
                    self.in_blob = is_blob(&self.text[term.range.clone()]);
                    if self.in_blob {
                        return Indexed::AsBucket;
                    }
                } else if self.in_blob {
                    return Indexed::No;
                }
                if is_unique_looking(&term.text) {
                    Indexed::AsBucket
                } else {
                    Indexed::AsItself
                }
            }
        }
    }
}

impl CodeTokenStream<'_> {
    /// Whether the whole identifier at `range` starts a run of base64 read whole; if so the
    /// run is taken from the word splitter.
    fn starts_blob_run(&mut self, range: &std::ops::Range<usize>) -> bool {
        if self.format != IndexFormat::UniqueHashed || range.start < self.run_checked {
            return false;
        }
        let run = blob_run(self.text, range.start);
        self.run_checked = run.end;
        if run.blob {
            self.run = range.start..run.end;
            self.run_blobs = run.blobs;
            self.run_index = 0;
            self.terms.skip_to(run.end);
        }
        run.blob
    }

    /// The next identifier of 8+ characters of the run being read whole, as its token.
    fn next_in_run(&mut self) -> bool {
        while self.run.start < self.run.end {
            let rest = &self.text.as_bytes()[self.run.clone()];
            let length = rest
                .iter()
                .position(|byte| matches!(byte, b'+' | b'/' | b'='))
                .unwrap_or(rest.len());
            let range = self.run.start..self.run.start + length;
            self.run.start = (range.end + 1).min(self.run.end);
            // What `blob_run` found for the first 64 identifiers; asked again past them.
            let known_blob = match self.run_index {
                index @ 0..64 => Some(self.run_blobs >> index & 1 == 1),
                _ => None,
            };
            self.run_index = self.run_index.saturating_add(1);
            if !(BLOB_CHECK_BYTES..=words::MAX_IDENTIFIER_BYTES).contains(&length) {
                continue;
            }
            // ASCII (the run holds base64 characters only), so lower-casing is per byte.
            let identifier = &self.text[range.clone()];
            if known_blob.unwrap_or_else(|| is_blob(identifier)) || is_unique_looking(identifier) {
                let lowered = identifier.bytes().map(|byte| byte.to_ascii_lowercase());
                write_bucket(bucket_of_bytes(lowered), &mut self.token.text);
            } else {
                self.token.text.clear();
                self.token.text.push_str(identifier);
                self.token.text.make_ascii_lowercase();
            }
            self.emit(range);
            return true;
        }
        false
    }

    fn emit(&mut self, range: std::ops::Range<usize>) {
        self.token.offset_from = range.start;
        self.token.offset_to = range.end;
        self.token.position = self.token.position.wrapping_add(1);
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if self.next_in_run() {
                return true;
            }
            let Some(term) = self.terms.next() else {
                return false;
            };
            if !term.is_part && self.starts_blob_run(&term.range) {
                continue;
            }
            match self.indexed(&term) {
                Indexed::No => continue,
                Indexed::AsItself => {
                    self.token.text.clear();
                    self.token.text.push_str(&term.text);
                }
                Indexed::AsBucket => write_bucket_term(&term.text, &mut self.token.text),
            }
            self.emit(term.range);
            return true;
        }
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// What a query asks the index for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryPlan {
    /// Index terms, each once: whole identifiers (documents carry both wholes and parts, so
    /// `logger` still finds `getLogger`, while `getLogger` asks for exactly that identifier),
    /// bucket terms for unique-looking ones.
    pub terms: Vec<String>,
    /// When a bucket term is asked for: the query's terms as the word splitter emits them, one
    /// of which a hit's text must hold (a bucket also holds every other token hashed to it).
    pub literal: Option<Vec<String>>,
}

/// The index terms `query` asks for in an index of `format`.
pub fn query_plan(query: &str, format: IndexFormat) -> QueryPlan {
    let mut plan = QueryPlan::default();
    let mut wholes: Vec<String> = Vec::new();
    // Indexes that left random-looking terms out are asked for such a term by its parts.
    let mut left_out: Option<std::ops::Range<usize>> = None;
    let push = |terms: &mut Vec<String>, term: String| {
        if !terms.contains(&term) {
            terms.push(term);
        }
    };
    for term in words::terms(query) {
        match format {
            IndexFormat::RandomLeftOut => {
                let wanted = if term.is_part {
                    left_out.as_ref().is_some_and(|whole| {
                        whole.start <= term.range.start && term.range.end <= whole.end
                    })
                } else if is_random_looking(&term.text) {
                    left_out = Some(term.range.clone());
                    false
                } else {
                    true
                };
                if wanted {
                    push(&mut plan.terms, term.text.into_owned());
                }
            }
            IndexFormat::UniqueHashed if term.is_part => {}
            IndexFormat::UniqueHashed => {
                let hashed = is_blob(&query[term.range.clone()]) || is_unique_looking(&term.text);
                if hashed {
                    push(&mut plan.terms, bucket_term(&term.text));
                    plan.literal.get_or_insert_with(Vec::new);
                } else {
                    push(&mut plan.terms, term.text.to_string());
                }
                push(&mut wholes, term.text.into_owned());
            }
        }
    }
    if let Some(literal) = &mut plan.literal {
        *literal = wholes;
    }
    plan
}

/// Whether `text` holds one of `terms` (lower-cased) as a whole identifier or a part.
pub fn holds_any(text: &str, terms: &[String]) -> bool {
    // Most texts a bucket brings up hold none of the terms even as a substring; finding that
    // out on ASCII-lower-cased bytes costs a fraction of splitting the text into words. (Only
    // for ASCII text: a few other characters lower-case to ASCII letters, as `K` does.)
    if text.is_ascii() {
        let lowered = text.to_ascii_lowercase();
        let somewhere = terms
            .iter()
            .any(|term| memchr::memmem::find(lowered.as_bytes(), term.as_bytes()).is_some());
        if !somewhere {
            return false;
        }
    }
    words::terms(text).any(|term| terms.iter().any(|wanted| *wanted == term.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_whole_identifiers_and_parts_with_positions() {
        let mut tokenizer = CodeTokenizer::default();
        let mut stream = tokenizer.token_stream("x getLogger");
        let mut seen = Vec::new();
        while stream.advance() {
            let token = stream.token();
            seen.push((token.text.clone(), token.position, token.offset_from));
        }
        assert_eq!(
            seen,
            [
                ("x".to_owned(), 0, 0),
                ("getlogger".to_owned(), 1, 2),
                ("get".to_owned(), 2, 2),
                ("logger".to_owned(), 3, 5),
            ]
        );
    }

    fn stream(format: IndexFormat, text: &str) -> Vec<String> {
        let mut tokenizer = CodeTokenizer::new(format);
        let mut stream = tokenizer.token_stream(text);
        let mut seen = Vec::new();
        while stream.advance() {
            seen.push(stream.token().text.clone());
        }
        seen
    }

    #[test]
    fn unique_looking_tokens_are_hashed_and_blob_parts_left_out() {
        let text = "sha 3f9c0d2e1b4a77c2aa01 id 550e8400-e29b-41d4-a716-44665544a000 \
                    key dGhpcyBpc3RyaW5nMTIzNDU2 test_2024_11_27_regression getUTF8String \
                    implementation_details sha256sum";
        let seen = stream(IndexFormat::UniqueHashed, text);
        for hashed in [
            "3f9c0d2e1b4a77c2aa01",
            "550e8400",
            "44665544a000",
            "dghpcybpc3ryaw5nmtizndu2",
            "test_2024_11_27_regression",
        ] {
            assert!(
                !seen.iter().any(|term| term == hashed),
                "{hashed}: {seen:?}"
            );
            assert!(seen.contains(&bucket_term(hashed)), "{hashed}: {seen:?}");
        }
        // The base64 token's parts are random fragments: left out.
        for left_out in ["ghpcy", "bpc", "rya"] {
            assert!(
                !seen.iter().any(|term| term == left_out),
                "{left_out}: {seen:?}"
            );
        }
        for kept in [
            "sha",
            "e29b",
            "a716",
            "test",
            "2024",
            "regression",
            "getutf8string",
            "utf",
            "string",
            "implementation_details",
            "sha256sum",
        ] {
            assert!(seen.iter().any(|term| term == kept), "{kept}: {seen:?}");
        }
        assert!(
            seen.iter()
                .all(|term| !term.starts_with('#') || term.len() == 5)
        );
    }

    /// The terms a tokenized `key: {run}` line should hold: each identifier of the run of 8+
    /// characters as a query for it alone asks for it, nothing for shorter ones or parts.
    fn indexed_as_queried(run: &str) -> (Vec<String>, Vec<String>) {
        let seen = stream(IndexFormat::UniqueHashed, &format!("key: {run}\nnext line"));
        let mut wanted = vec!["key".to_owned()];
        for identifier in run.split(['+', '/', '=']) {
            if (BLOB_CHECK_BYTES..=words::MAX_IDENTIFIER_BYTES).contains(&identifier.len()) {
                wanted.extend(query_plan(identifier, IndexFormat::UniqueHashed).terms);
            }
        }
        wanted.extend(["next".to_owned(), "line".to_owned()]);
        (seen, wanted)
    }

    /// A line of base64: the identifiers a query asks for by themselves (8+ characters) are
    /// indexed as the query asks for them, short ones and parts not at all.
    #[test]
    fn a_run_of_base64_is_read_whole() {
        let line = "pPagsNBybu7XNRsj6smhkdPDxEYXMnisb5DeweARDzWObEhfaE+rs+FX9OuZ3o+Hf61m+\
                    xJUQT7c5D1FsZjqvi1xFkK3JrBEAWJ8qfusMvXIUw+xkDzE2wIlhxeSGkiB==";
        assert!(blob_run(line, 0).blob);
        let (seen, wanted) = indexed_as_queried(line);
        assert_eq!(seen, wanted);
        // Short identifiers and parts, which the word splitter has, are left out.
        for left_out in ["rs", "hf61m", "hf", "61", "fx", "ou"] {
            assert!(!seen.iter().any(|term| term == left_out), "{left_out}");
        }
        // A query for the whole line asks for buckets it finds.
        let plan = query_plan(line, IndexFormat::UniqueHashed);
        assert!(
            plan.terms
                .iter()
                .filter(|term| term.starts_with('#'))
                .all(|term| seen.contains(term))
        );
        // Past the 64 identifiers whose kind the scan remembers, and with names among them.
        let long: String = (0..80)
            .map(|i| match i % 8 {
                0 => format!("parseArgs{i}+"),
                _ => format!("aB{i}xYzQp{}/", i * 7),
            })
            .collect();
        assert!(blob_run(&long, 0).blob);
        let (seen, wanted) = indexed_as_queried(&long);
        assert_eq!(seen, wanted);
        // Lines of base64 one after another, a name between them, a line that is no run after
        // them: each gives what it gives alone.
        let second =
            "xJUQT7c5D1FsZjqvi1xFkK3JrBEAWJ8qfusMvXIUw+xkDzE2wIlhxeSGkiB+pPagsNBybu7XNRsj6s";
        let text = format!("{line}\n{second}\r\n  parse_args\n{second}\n{line}\nshort aB3x/yZ9q");
        let seen = stream(IndexFormat::UniqueHashed, &text);
        let mut wanted = Vec::new();
        for piece in [line, second, "parse_args", second, line, "short aB3x/yZ9q"] {
            wanted.extend(stream(IndexFormat::UniqueHashed, piece));
        }
        assert_eq!(seen, wanted);
    }

    #[test]
    fn runs_of_names_and_paths_are_no_blob() {
        for text in [
            "/api/v1/users/aB3xYzQp/files/report/2026/summary",
            "src/main/java/com/example/parser/JsonReaderFactory/Test",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "aB3xYzQp+short",
        ] {
            assert!(!blob_run(text, 1).blob, "{text}");
        }
        let seen = stream(
            IndexFormat::UniqueHashed,
            "/api/v1/users/aB3xYzQp/files/report/2026/summary",
        );
        for kept in ["api", "users", "files", "report", "summary"] {
            assert!(seen.iter().any(|term| term == kept), "{kept}: {seen:?}");
        }
        // An older index keeps indexing such runs as it did.
        let line = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t";
        assert!(
            stream(IndexFormat::RandomLeftOut, line)
                .iter()
                .any(|term| term == "mo")
        );
    }

    /// The one-pass check against the part splitter it stands for, on random identifiers.
    #[test]
    fn one_character_parts_are_counted_as_the_splitter_splits() {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let length = 1 + (state % 24) as usize;
            let identifier: String = (0..length)
                .map(|i| {
                    let pick = (state.rotate_left(i as u32 * 5) ^ (i as u64 * 0x9e37)) % 62;
                    ALPHABET[pick as usize] as char
                })
                .collect();
            let by_splitter = words::part_ranges(&identifier)
                .filter(|part| part.len() == 1)
                .nth(2)
                .is_some();
            assert_eq!(
                three_one_character_parts(identifier.as_bytes()),
                by_splitter,
                "{identifier}"
            );
        }
    }

    #[test]
    fn blobs_are_told_from_names() {
        for blob in ["dGhpcyBpc3RyaW5n", "aB3xYzQp", "3xYzAb9Q", "QUO3YReyl04k4"] {
            assert!(is_blob(blob), "{blob}");
        }
        for name in [
            "getUTF8String",
            "sha256WithRSAEncryption",
            "XMLHttpRequest",
            "parse_args",
            "a_b_c_d_e_f",
            "v2Api",
            "Größe_über",
        ] {
            assert!(!is_blob(name), "{name}");
        }
    }

    #[test]
    fn a_query_asks_for_buckets_and_keeps_its_terms_to_check() {
        let plan = query_plan("error 550e8400 getLogger", IndexFormat::UniqueHashed);
        assert_eq!(
            plan.terms,
            [
                "error".to_owned(),
                bucket_term("550e8400"),
                "getlogger".to_owned()
            ]
        );
        assert_eq!(
            plan.literal.as_deref(),
            Some(&["error", "550e8400", "getlogger"].map(str::to_owned)[..])
        );
        let plain = query_plan("getLogger", IndexFormat::UniqueHashed);
        assert_eq!(
            (plain.terms, plain.literal),
            (vec!["getlogger".to_owned()], None)
        );
        // An older index is asked for a random-looking term by its parts.
        let old = query_plan("test_2024_11_27_regression", IndexFormat::RandomLeftOut);
        assert_eq!(old.terms, ["test", "2024", "11", "27", "regression"]);
        assert_eq!(old.literal, None);
        assert!(holds_any("x = GetLogger();", &["getlogger".to_owned()]));
        assert!(!holds_any("x = GetLoggers();", &["getlogger".to_owned()]));
    }

    #[test]
    fn buckets_are_stable_and_spread() {
        // Part of the index format: these must never change.
        assert_eq!(bucket_term("550e8400"), bucket_term("550e8400"));
        let buckets: std::collections::HashSet<u32> = (0..10_000u32)
            .map(|n| bucket(&format!("{n:08x}")))
            .collect();
        assert!(buckets.len() > 9_000, "{}", buckets.len());
        assert!(buckets.iter().all(|&bucket| bucket < BUCKETS));
    }

    #[test]
    fn random_looking_tokens_are_left_out_of_older_indexes_and_their_parts_kept() {
        let text = "sha 3f9c0d2e1b4a77c2aa01 dGhpcyBpc3RyaW5nMTIzNDU2 test_2024_11_27_regression \
                    implementation_details sha256sum";
        let seen = stream(IndexFormat::RandomLeftOut, text);
        for left_out in [
            "3f9c0d2e1b4a77c2aa01",
            "dghpcybpc3ryaw5nmtizndu2",
            "test_2024_11_27_regression",
        ] {
            assert!(
                !seen.iter().any(|term| term == left_out),
                "{left_out}: {seen:?}"
            );
        }
        for kept in [
            "sha",
            "test",
            "2024",
            "regression",
            "implementation_details",
            "sha256sum",
        ] {
            assert!(seen.iter().any(|term| term == kept), "{kept}: {seen:?}");
        }
    }
}
