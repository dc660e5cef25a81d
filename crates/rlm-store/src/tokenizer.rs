//! The code-aware word splitter from `rlm_context::words` as a tantivy tokenizer.
//!
//! Tokens that look random (hex digests, base64, keys: see [`is_random_looking`]) are not
//! indexed: nearly each is unique, so they filled the term dictionary, which every segment merge
//! rewrites, and a load of such text ran ~15x slower per byte than ordinary text. `rlm grep`
//! still finds them in the stored text; BM25 search does not.

use rlm_context::words::{self, Terms};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Name the tokenizer is registered under in the index.
pub const CODE_TOKENIZER: &str = "rlm_code";

/// Emits each identifier whole and as its parts (`getLogger` → `getlogger get logger`).
#[derive(Debug, Clone, Default)]
pub struct CodeTokenizer {
    token: Token,
}

/// Token stream of [`CodeTokenizer`]; reuses one `Token` so indexing does not allocate per term.
#[derive(Debug)]
pub struct CodeTokenStream<'a> {
    terms: Terms<'a>,
    token: &'a mut Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.token.reset();
        CodeTokenStream {
            terms: words::terms(text),
            token: &mut self.token,
        }
    }
}

/// Terms at least this long are checked by [`is_random_looking`].
pub const RANDOM_CHECK_BYTES: usize = 16;

/// Whether a term is not indexed: at least [`RANDOM_CHECK_BYTES`] long with at least 3 digits
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

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let term = loop {
            match self.terms.next() {
                None => return false,
                Some(term) if is_random_looking(&term.text) => continue,
                Some(term) => break term,
            }
        };
        self.token.text.clear();
        self.token.text.push_str(&term.text);
        self.token.offset_from = term.range.start;
        self.token.offset_to = term.range.end;
        self.token.position = self.token.position.wrapping_add(1);
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
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

    #[test]
    fn random_looking_tokens_are_left_out_and_their_parts_kept() {
        let mut tokenizer = CodeTokenizer::default();
        let text = "sha 3f9c0d2e1b4a77c2aa01 dGhpcyBpc3RyaW5nMTIzNDU2 test_2024_11_27_regression \
                    implementation_details sha256sum";
        let mut stream = tokenizer.token_stream(text);
        let mut seen = Vec::new();
        while stream.advance() {
            seen.push(stream.token().text.clone());
        }
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
