//! Format sniffing, context metadata, chunkers and token counting for rlm.

pub mod tokens;
pub mod words;
