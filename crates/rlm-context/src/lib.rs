//! Format sniffing, context metadata, chunkers and token counting for rlm.
//!
//! The centre of this crate is [`analyze_path`] / [`analyze_bytes`]: one bounded, streaming pass
//! that says what a context is — format, size, records, fields (keys, then one level of dot
//! paths), a sample — so a model does not spend its first step finding out. [`render_hint`]
//! turns the result into the block a model reads.
//!
//! ```
//! use rlm_context::{AnalyzeOptions, Format, analyze_bytes, render_hint};
//!
//! let feed = b"{\"author\":\"a\",\"profile\":{\"name\":\"A\"}}\n{\"author\":\"b\",\"tags\":[]}\n";
//! let metadata = analyze_bytes(feed, Some("feed.ndjson"), &AnalyzeOptions::default());
//! assert_eq!(metadata.format, Format::Ndjson);
//! assert_eq!(metadata.records, Some(2));
//! assert_eq!(metadata.fields, ["author", "profile", "tags", "profile.name"]);
//! assert!(render_hint(&metadata, "context").contains("Records: 2"));
//! ```

mod bitmask;
pub mod chunk;
mod counts;
mod delimited;
pub mod fence;
mod fields;
mod format;
mod json_scan;
mod json_skim;
#[cfg(target_os = "linux")]
mod mapped;
mod metadata;
#[cfg(test)]
mod property_tests;
mod read_ahead;
mod records;
mod render;
pub mod root;
mod sample;
mod scan;
mod sniff;
pub mod tokens;
pub mod words;

use std::path::PathBuf;

pub use format::{Format, language_from_extension};
pub use metadata::{
    AnalyzeOptions, ContextMetadata, EncodingInfo, Heading, analyze_bytes, analyze_opened,
    analyze_path, analyze_reader, endless_kind,
};
pub use render::{one_line, render_hint};
/// Digits grouped as every count in a hint shows them (the workspace's one formatter).
pub use rlm_types::thousands;
pub use sniff::looks_binary;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path is a directory.
    #[error("{} is a directory", path.display())]
    IsDirectory { path: PathBuf },
    /// The path is a device or socket, which may never end (`/dev/zero`); pipes are read.
    #[error("{} is a {kind}, not a file", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
}
