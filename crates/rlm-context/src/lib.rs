//! Format sniffing, context metadata, chunkers and token counting for rlm.

pub mod chunk;
pub mod words;
