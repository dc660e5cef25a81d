//! The contexts a run works over, and how they are described to the root model.
//!
//! The root model never sees a context's text; it sees this description (format hint, sizes,
//! per-part lengths) and explores the text in the REPL.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rlm_context::{
    AnalyzeOptions, ContextMetadata, Format, analyze_bytes, analyze_reader, one_line, render_hint,
    thousands,
};

/// Where a context's text is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContextSource {
    /// Text held in memory: inline text, a delegated prompt. Shared, never copied per turn.
    Inline(Arc<str>),
    /// A file that only the REPL session reads; the host keeps its path and what one streamed
    /// pass measured. Invalid UTF-8 reads as U+FFFD.
    File(PathBuf),
}

/// One context: a name for people, where its text is, and what is known about its shape.
///
/// Sizes are measured once, when the part is made: in memory for inline text, in one streamed
/// pass (together with the `rlm-context` metadata) for a file, whose text the host never holds.
#[derive(Debug, Clone)]
pub struct ContextPart {
    name: Option<String>,
    source: ContextSource,
    metadata: Option<ContextMetadata>,
    hint: Option<String>,
    size: PartSize,
}

impl ContextPart {
    /// A context from text, with no name or hint.
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        let text: Arc<str> = text.into();
        Self {
            name: None,
            size: PartSize::measure(&text),
            source: ContextSource::Inline(text),
            metadata: None,
            hint: None,
        }
    }

    /// A context from text, analysed with `rlm-context` (format, records, fields, sample) in
    /// one bounded pass. `name` (a file name) also serves as a format hint.
    pub fn analyzed(text: impl Into<Arc<str>>, name: Option<&str>) -> Self {
        let text: Arc<str> = text.into();
        let metadata = analyze_bytes(text.as_bytes(), name, &AnalyzeOptions::default());
        Self {
            name: name.map(str::to_owned),
            size: PartSize::measure(&text),
            source: ContextSource::Inline(text),
            metadata: Some(metadata),
            hint: None,
        }
    }

    /// A context file, analysed and measured in one streamed pass; the text stays on disk for
    /// the REPL session to read. Named after the path, which is also the format hint.
    pub fn from_file(path: impl Into<PathBuf>) -> io::Result<Self> {
        let path = path.into();
        let name = path.display().to_string();
        let file = File::open(&path)?;
        let (metadata, size) = analyze_stream(file, &name)?;
        Ok(Self::file_part(path, name, metadata, size))
    }

    /// A context read from `reader` (standard input, say) and copied into `spool`, the file at
    /// `spool_path`, while it is analysed: one pass, and only the REPL session reads the text
    /// back. The caller keeps the spool file until the run ends.
    pub fn spooled(
        reader: impl Read,
        spool: impl Write,
        spool_path: impl Into<PathBuf>,
        name: &str,
    ) -> io::Result<Self> {
        let mut tee = Tee {
            reader,
            copy: spool,
        };
        let (metadata, size) = analyze_stream(&mut tee, name)?;
        tee.copy.flush()?;
        Ok(Self::file_part(
            spool_path.into(),
            name.to_owned(),
            metadata,
            size,
        ))
    }

    fn file_part(path: PathBuf, name: String, metadata: ContextMetadata, size: PartSize) -> Self {
        Self {
            name: Some(name),
            source: ContextSource::File(path),
            metadata: Some(metadata),
            hint: None,
            size,
        }
    }

    /// Sets the name shown to the model.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the metadata hint shown to the model.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Where it came from (file name, `<stdin>`, ...), if known.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Where the text is.
    pub fn source(&self) -> &ContextSource {
        &self.source
    }

    /// The text, when it is held in memory (never for a file).
    pub fn inline_text(&self) -> Option<&Arc<str>> {
        match &self.source {
            ContextSource::Inline(text) => Some(text),
            ContextSource::File(_) => None,
        }
    }

    /// The text, read from its file if it has one (invalid UTF-8 as U+FFFD), for REPLs that
    /// hold contexts in this process. A sandbox worker reads the file itself instead.
    pub fn read_text(&self) -> io::Result<Arc<str>> {
        match &self.source {
            ContextSource::Inline(text) => Ok(Arc::clone(text)),
            ContextSource::File(path) => Ok(lossy_text(std::fs::read(path)?).into()),
        }
    }

    /// Format metadata (`rlm inspect`'s analysis), rendered as the model's hint. Always present
    /// for a file.
    pub fn metadata(&self) -> Option<&ContextMetadata> {
        self.metadata.as_ref()
    }

    /// Free-form extra description, shown after the metadata.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// Sizes in the units Python code sees.
    pub fn size(&self) -> PartSize {
        self.size
    }
}

impl ContextSource {
    /// The file, if the text is in one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Inline(_) => None,
        }
    }
}

/// One pass over a stream: `rlm-context` metadata and the sizes Python will see.
fn analyze_stream(reader: impl Read, name: &str) -> io::Result<(ContextMetadata, PartSize)> {
    let mut counted = Counted {
        reader,
        counter: SizeCounter::default(),
    };
    let metadata = analyze_reader(&mut counted, Some(name), &AnalyzeOptions::default())?;
    // The analysis reads to the end; this only guards the sizes if that ever changes.
    io::copy(&mut counted, &mut io::sink())?;
    let mut size = counted.counter.finish();
    // The counter treats every byte that is not a continuation byte as a char, which is exact
    // for UTF-8. With invalid sequences the worker sees U+FFFD for each, as the metadata counts
    // them (it leaves the byte-order mark out, which the worker keeps); binary input has no char
    // count there, so the raw count stands.
    if !metadata.encoding.valid_utf8 && metadata.format != Format::Binary {
        size.chars = (metadata.chars + u64::from(metadata.encoding.bom)) as usize;
    }
    Ok((metadata, size))
}

/// Bytes as text, invalid UTF-8 replaced with U+FFFD (as the sandbox worker reads files).
fn lossy_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    }
}

/// A reader that counts sizes as the bytes pass.
struct Counted<R> {
    reader: R,
    counter: SizeCounter,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.reader.read(buf)?;
        self.counter.feed(&buf[..read]);
        Ok(read)
    }
}

/// A reader that copies what it reads into a writer.
struct Tee<R, W> {
    reader: R,
    copy: W,
}

impl<R: Read, W: Write> Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.reader.read(buf)?;
        self.copy.write_all(&buf[..read])?;
        Ok(read)
    }
}

/// Sizes measured once per part, in the units Python code sees (`len(context)` counts chars).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSize {
    /// Unicode scalar values, as `len()` in Python.
    pub chars: usize,
    /// Lines (a final line without a newline counts).
    pub lines: usize,
    /// Whether the text is pure ASCII (slicing is cheap then).
    pub ascii: bool,
}

impl PartSize {
    /// Measures `text` in one pass.
    pub fn measure(text: &str) -> Self {
        let mut counter = SizeCounter::default();
        counter.feed(text.as_bytes());
        counter.finish()
    }
}

/// [`PartSize`] gathered a block at a time.
#[derive(Debug)]
struct SizeCounter {
    chars: usize,
    newlines: usize,
    last: Option<u8>,
    ascii: bool,
}

impl Default for SizeCounter {
    fn default() -> Self {
        Self {
            chars: 0,
            newlines: 0,
            last: None,
            ascii: true,
        }
    }
}

impl SizeCounter {
    fn feed(&mut self, block: &[u8]) {
        let Some(&last) = block.last() else {
            return;
        };
        // Continuation bytes (10xxxxxx) are the only ones that do not start a char.
        self.chars += bytecount::num_chars(block);
        self.newlines += bytecount::count(block, b'\n');
        self.ascii &= block.is_ascii();
        self.last = Some(last);
    }

    fn finish(&self) -> PartSize {
        let trailing = usize::from(self.last.is_some_and(|b| b != b'\n'));
        PartSize {
            chars: self.chars,
            lines: self.newlines + trailing,
            ascii: self.ascii,
        }
    }
}

/// The variable name a part has in the REPL.
pub fn variable_name(index: usize) -> String {
    format!("context_{index}")
}

/// Renders the context description placed in the first user message.
pub fn describe(parts: &[ContextPart]) -> String {
    let mut out = String::new();
    if parts.is_empty() {
        out.push_str("No context was given: `context` is an empty string.\n");
        return out;
    }
    let total: usize = parts.iter().map(|p| p.size.chars).sum();
    if parts.len() == 1 {
        out.push_str(&format!(
            "The REPL variable `context` (also `context_0`) is a str of {} chars.\n",
            thousands(total as u64)
        ));
    } else {
        out.push_str(&format!(
            "There are {} contexts, {} chars in total: `context_0` … `context_{}` (str each); \
             `context` is `context_0`.\n",
            parts.len(),
            thousands(total as u64),
            parts.len() - 1
        ));
    }
    for (index, part) in parts.iter().enumerate() {
        let size = part.size;
        out.push('\n');
        if let Some(metadata) = &part.metadata {
            out.push_str(render_hint(metadata, &variable_name(index)).trim_end());
            out.push('\n');
            if !size.ascii {
                out.push_str("  Contains non-ASCII text: index-based slicing is slow.\n");
            }
        } else {
            let name = one_line(part.name.as_deref().unwrap_or("inline text"));
            let ascii = if size.ascii {
                ""
            } else {
                ", contains non-ASCII text"
            };
            out.push_str(&format!(
                "[{}] {name}: {} chars, {} lines{ascii}\n",
                variable_name(index),
                thousands(size.chars as u64),
                thousands(size.lines as u64),
            ));
        }
        if let Some(hint) = part.hint.as_deref().filter(|h| !h.trim().is_empty()) {
            for line in hint.trim_end().lines() {
                out.push_str("    ");
                out.push_str(&one_line(line));
                out.push('\n');
            }
        }
    }
    out
}

/// What the trajectory records about the parts (the `contexts` of its metadata line).
pub fn contexts_info(parts: &[ContextPart]) -> rlm_trace::Contexts {
    let parts: Vec<rlm_trace::ContextInfo> = parts
        .iter()
        .enumerate()
        .map(|(index, part)| rlm_trace::ContextInfo {
            variable: variable_name(index),
            name: part.name.clone(),
            chars: part.size.chars as u64,
            lines: part.size.lines as u64,
            ascii: part.size.ascii,
            hint: part.hint.clone(),
            // Plain data with string keys: serializing it cannot fail.
            metadata: part
                .metadata
                .as_ref()
                .and_then(|metadata| serde_json::to_value(metadata).ok()),
        })
        .collect();
    rlm_trace::Contexts {
        count: parts.len(),
        parts,
    }
}

/// The `contextMeta` REPL variable: the same as the trajectory's `contexts`.
pub fn meta_value(parts: &[ContextPart]) -> serde_json::Value {
    // Plain data with string keys: serializing it cannot fail.
    serde_json::to_value(contexts_info(parts)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_chars_lines_and_ascii() {
        assert_eq!(
            PartSize::measure("ab\ncé"),
            PartSize {
                chars: 5,
                lines: 2,
                ascii: false
            }
        );
        assert_eq!(
            PartSize::measure("x\n"),
            PartSize {
                chars: 2,
                lines: 1,
                ascii: true
            }
        );
        assert_eq!(PartSize::measure("").lines, 0);
    }

    #[test]
    fn analyzed_parts_describe_their_format() {
        let part = ContextPart::analyzed(
            "{\"user\":\"a\",\"msg\":\"x\"}\n{\"user\":\"b\",\"msg\":\"y\"}\n",
            Some("log.ndjson"),
        );
        let parts = [part];
        let text = describe(&parts);
        assert!(text.contains("[Context available in context_0]"), "{text}");
        assert!(text.contains("Records: 2"), "{text}");
        assert!(text.contains("user"), "{text}");
        assert_eq!(meta_value(&parts)["parts"][0]["metadata"]["records"], 2);
    }

    #[test]
    fn a_file_part_holds_its_path_and_sizes_but_no_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.ndjson");
        std::fs::write(&path, "{\"user\":\"a\"}\n{\"user\":\"bé\"}\n").unwrap();
        let part = ContextPart::from_file(&path).unwrap();
        assert!(part.inline_text().is_none());
        assert_eq!(part.source(), &ContextSource::File(path.clone()));
        assert_eq!(part.name(), Some(path.display().to_string().as_str()));
        assert_eq!(part.metadata().unwrap().records, Some(2));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(part.size(), PartSize::measure(&text));
        assert_eq!(&*part.read_text().unwrap(), text);
    }

    #[test]
    fn file_sizes_count_chars_as_the_worker_decodes_them() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&[u8], &str); 4] = [
            (b"caf\xe9\nbar", "caf\u{fffd}\nbar"),
            (b"\xef\xbb\xbfhi\n", "\u{feff}hi\n"),
            (b"\xef\xbb\xbf\xff\n", "\u{feff}\u{fffd}\n"),
            (b"a\0b\n\0", "a\0b\n\0"),
        ];
        for (bytes, decoded) in cases {
            let path = dir.path().join("part");
            std::fs::write(&path, bytes).unwrap();
            let part = ContextPart::from_file(&path).unwrap();
            assert_eq!(part.size(), PartSize::measure(decoded), "{decoded:?}");
            assert_eq!(&*part.read_text().unwrap(), decoded);
        }
    }

    #[test]
    fn a_spooled_part_is_copied_while_it_is_measured() {
        let dir = tempfile::tempdir().unwrap();
        let spool_path = dir.path().join("stdin");
        let spool = std::fs::File::create(&spool_path).unwrap();
        let input = "a,b\n1,2\n3,4\n".repeat(100_000);
        let part = ContextPart::spooled(input.as_bytes(), spool, &spool_path, "<stdin>").unwrap();
        assert_eq!(std::fs::read_to_string(&spool_path).unwrap(), input);
        assert_eq!(part.size(), PartSize::measure(&input));
        assert_eq!(part.name(), Some("<stdin>"));
        assert_eq!(part.source().path(), Some(spool_path.as_path()));
    }

    #[test]
    fn describes_multiple_parts_with_lengths_and_hints() {
        let parts = vec![
            ContextPart::new("a\nb\n")
                .with_name("a.txt")
                .with_hint("Format: plain text"),
            ContextPart::new("日本"),
        ];
        let text = describe(&parts);
        assert!(
            text.contains("There are 2 contexts, 6 chars in total"),
            "{text}"
        );
        assert!(text.contains("[context_0] a.txt: 4 chars, 2 lines\n    Format: plain text"));
        assert!(text.contains("[context_1] inline text: 2 chars, 1 lines, contains non-ASCII"));
        let meta = meta_value(&parts);
        assert!(meta["parts"][0]["metadata"].is_null());
        assert_eq!(meta["parts"][1]["chars"], 2);
        assert_eq!(meta["parts"][0]["name"], "a.txt");
    }
}
