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
        // Parts split only where upper case, lower case and digits change (or just before
        // such a change), so three one-character parts in 8+ characters take at least two
        // changes; most names have fewer, and are let go without splitting them.
        && class_changes(identifier) >= 2
        && words::part_ranges(identifier)
            .filter(|part| part.len() == 1)
            .nth(2)
            .is_some()
}

/// Changes between upper case, lower case and digits from one byte to the next.
fn class_changes(identifier: &str) -> usize {
    let class = |byte: &u8| match byte {
        b'A'..=b'Z' => 0u8,
        b'0'..=b'9' => 1,
        _ => 2,
    };
    let bytes = identifier.as_bytes();
    bytes
        .iter()
        .zip(&bytes[1..])
        .filter(|(a, b)| class(a) != class(b))
        .count()
}

/// The bucket of a unique-looking term (FNV-1a, folded). Part of the index format.
pub fn bucket(term: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in term.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    ((hash ^ (hash >> 32)) as u32) % BUCKETS
}

/// Writes the bucket term of `term` into `out` (replacing its content).
pub fn write_bucket_term(term: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.clear();
    out.push(BUCKET_PREFIX);
    let bucket = bucket(term);
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

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            let Some(term) = self.terms.next() else {
                return false;
            };
            match self.indexed(&term) {
                Indexed::No => continue,
                Indexed::AsItself => {
                    self.token.text.clear();
                    self.token.text.push_str(&term.text);
                }
                Indexed::AsBucket => write_bucket_term(&term.text, &mut self.token.text),
            }
            self.token.offset_from = term.range.start;
            self.token.offset_to = term.range.end;
            self.token.position = self.token.position.wrapping_add(1);
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
