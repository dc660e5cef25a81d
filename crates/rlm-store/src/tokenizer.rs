//! The code-aware word splitter from `rlm_context::words` as a tantivy tokenizer.

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

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(term) = self.terms.next() else {
            return false;
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
}
