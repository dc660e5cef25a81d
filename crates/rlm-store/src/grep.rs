//! Regex search over stored buffers with context lines, like ripgrep, by ripgrep's own
//! searcher (`grep-searcher` with a `grep-regex` matcher: literal prefilters, line handling)
//! streaming each buffer's text out of SQLite, so memory stays flat however large it is.

use std::collections::BTreeMap;
use std::ops::{ControlFlow, Range};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use rusqlite::OpenFlags;

use grep_matcher::Matcher;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkError, SinkMatch,
};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::select::GrepTarget;
use crate::store::{LocalStore, open_database};
use crate::text::{MapWindow, TextStream};

mod line_matcher;
pub(crate) use line_matcher::LineMatcher;

/// Options of [`Store::grep`].
#[derive(Debug, Clone, Default)]
pub struct GrepOptions {
    /// Only these buffers (names or ids); empty means all.
    pub buffers: Vec<String>,
    /// Only buffers whose name or path matches this glob.
    pub path_glob: Option<String>,
    /// Lines of context before each match.
    pub before: usize,
    /// Lines of context after each match.
    pub after: usize,
    /// Case-insensitive matching.
    pub ignore_case: bool,
    /// The pattern is literal text, not a regular expression.
    pub fixed_strings: bool,
    /// Matches only at word boundaries (`\b` on both sides).
    pub word: bool,
    /// Stop a buffer after this many matching lines.
    pub max_count: Option<u64>,
    /// Leave [`GrepLine::Match`]'s `matches` empty: saves a second regex pass over every
    /// matching line when nothing marks the matches.
    pub lines_only: bool,
}

/// One line of output.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum GrepLine<'a> {
    /// A line containing a match.
    Match {
        /// Buffer name.
        buffer: &'a str,
        /// 1-based line number.
        line: u64,
        /// The line without its line ending.
        text: &'a str,
        /// Byte ranges of the matches in `text`.
        matches: Vec<Range<usize>>,
    },
    /// A context line near a match.
    Context {
        /// Buffer name.
        buffer: &'a str,
        /// 1-based line number.
        line: u64,
        /// The line without its line ending.
        text: &'a str,
    },
    /// A gap between non-adjacent groups of lines (`--` in ripgrep).
    Break,
    /// The last line of a buffer that matched has been emitted.
    End {
        /// Buffer name.
        buffer: &'a str,
        /// Its matching lines.
        matched_lines: u64,
    },
}

/// Totals of a grep.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct GrepSummary {
    /// Matching lines.
    pub matched_lines: u64,
    /// Buffers with at least one match.
    pub matched_buffers: u64,
}

impl LocalStore {
    /// Calls `emit` for every matching line (and context line) of the selected buffers, in
    /// buffer-name order. Return `Break` from `emit` to stop early.
    ///
    /// Patterns match within one line, as ripgrep's do: a pattern that needs a line break
    /// (`a\nb`) is refused, and classes such as `\s` do not match one. With several buffers
    /// and cores, a second thread searches the buffers ahead of the one being printed (on a
    /// connection of its own) and keeps what it found, up to 16 MiB of line text, until their
    /// turn.
    pub fn grep(
        &self,
        pattern: &str,
        options: &GrepOptions,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> Result<GrepSummary> {
        let matcher = matcher(pattern, options)?;
        // Listed without SQLite's map: the rows of `buffers` lie between the texts loaded with
        // them, and each page read through a map brings the pages around it (the kernel maps
        // 64 KiB around a fault) into the process: 16 MB of file-backed RSS for 18,000 buffers,
        // growing with their number. Read into SQLite's page cache instead, which is bounded;
        // `Texts::new` turns the map back on.
        self.connection.pragma_update(None, "mmap_size", 0)?;
        let buffers = self.grep_targets(&options.buffers, options.path_glob.as_deref())?;
        // Read through SQLite's memory map, let go of every few MiB ([`Texts`]): a map left
        // alone would keep every page of every buffer read resident.
        let texts = Texts::new(&self.connection)?;
        let mut printer = Printer::new(options, emit);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if buffers.len() < 2 || cores < 2 {
            let mut searcher = searcher(options);
            for buffer in &buffers {
                if printer
                    .search_here(&mut searcher, &matcher, &texts, buffer)?
                    .is_break()
                {
                    break;
                }
            }
            return Ok(printer.summary());
        }
        let ahead = Ahead::new(buffers.len());
        let dir = self.dir.as_path();
        std::thread::scope(|scope| {
            scope.spawn(|| ahead.work(dir, &matcher, options, &buffers));
            let result = printer.print_in_order(&ahead, &matcher, &texts, &buffers);
            ahead.stop();
            result
        })?;
        Ok(printer.summary())
    }
}

/// What the thread searching ahead may hold at once, in bytes of line text: past it, it waits
/// for the printer, and a buffer whose own lines would pass it is left to the printer.
#[cfg(not(test))]
const HELD_BYTES: usize = 16 << 20;
/// Small in unit tests, so that both limits are reached.
#[cfg(test)]
const HELD_BYTES: usize = 2_000;

pub(crate) fn searcher(options: &GrepOptions) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(options.before)
        .after_context(options.after)
        .max_matches(options.max_count)
        // Stored text is UTF-8 that was checked at load: a NUL is text here.
        .binary_detection(BinaryDetection::none())
        .build()
}

/// Emits the buffers' lines in order, with `--` between buffers and an `End` after each.
pub(crate) struct Printer<'o, 'e> {
    options: &'o GrepOptions,
    emit: &'e mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    summary: GrepSummary,
    /// Lines found here, on their way to `emit`: one allocation for every buffer.
    batch: Batch,
}

impl<'o, 'e> Printer<'o, 'e> {
    /// A printer of the lines `options` asks for, to `emit`.
    pub(crate) fn new(
        options: &'o GrepOptions,
        emit: &'e mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> Self {
        Self {
            options,
            emit,
            summary: GrepSummary::default(),
            batch: Batch::default(),
        }
    }

    /// The totals so far.
    pub(crate) fn summary(&self) -> GrepSummary {
        self.summary
    }
}

impl Printer<'_, '_> {
    /// Searches `buffer` on this thread, emitting as lines are found.
    fn search_here(
        &mut self,
        searcher: &mut Searcher,
        matcher: &LineMatcher,
        texts: &Texts<'_>,
        buffer: &GrepTarget,
    ) -> Result<ControlFlow<()>> {
        let reader = texts.reader(buffer.id)?;
        self.search_reader(searcher, matcher, reader, &buffer.name)
    }

    /// Searches the text `reader` gives as buffer `name`'s, emitting as lines are found.
    pub(crate) fn search_reader(
        &mut self,
        searcher: &mut Searcher,
        matcher: &LineMatcher,
        reader: impl std::io::Read,
        name: &str,
    ) -> Result<ControlFlow<()>> {
        let break_first = self.separated();
        let direct = Direct {
            buffer: name,
            emit: &mut *self.emit,
            break_first,
            stopped: false,
        };
        let batch = std::mem::take(&mut self.batch);
        let mut sink = LineSink::new(matcher, self.options.lines_only, direct, batch);
        searcher
            .search_reader(matcher, reader, &mut sink)
            .map_err(|error| error.into_store_error(name))?;
        sink.hand_over();
        let (stopped, matched) = (sink.out.stopped, sink.matched);
        self.batch = sink.batch;
        if stopped {
            return Ok(ControlFlow::Break(()));
        }
        Ok(self.end(name, matched))
    }

    /// Emits what the thread ahead found in `buffer`.
    fn print_held(&mut self, buffer: &GrepTarget, held: &mut Held) -> ControlFlow<()> {
        if self.separated() && !held.batch.lines.is_empty() {
            (self.emit)(GrepLine::Break)?;
        }
        held.batch.emit(&buffer.name, &mut *self.emit)?;
        self.end(&buffer.name, held.matched)
    }

    /// As ripgrep: `--` also separates buffers when context lines are shown.
    fn separated(&self) -> bool {
        self.options.before + self.options.after > 0 && self.summary.matched_buffers > 0
    }

    fn end(&mut self, buffer: &str, matched: u64) -> ControlFlow<()> {
        if matched == 0 {
            return ControlFlow::Continue(());
        }
        self.summary.matched_lines += matched;
        self.summary.matched_buffers += 1;
        (self.emit)(GrepLine::End {
            buffer,
            matched_lines: matched,
        })
    }

    /// Prints every buffer in order: what the thread ahead holds for it, or (when it has not
    /// reached it, or left it) searched here.
    fn print_in_order(
        &mut self,
        ahead: &Ahead,
        matcher: &LineMatcher,
        texts: &Texts<'_>,
        buffers: &[GrepTarget],
    ) -> Result<()> {
        let mut searcher = searcher(self.options);
        for (index, buffer) in buffers.iter().enumerate() {
            let flow = loop {
                match ahead.take(index) {
                    Turn::Held(mut held) => {
                        let flow = self.print_held(buffer, &mut held);
                        ahead.give_back(held.batch);
                        break flow;
                    }
                    Turn::Failed(error) => return Err(error),
                    Turn::Here => {
                        break self.search_here(&mut searcher, matcher, texts, buffer)?;
                    }
                    // The thread ahead has this buffer: search a later one meanwhile.
                    Turn::Ahead(later) => {
                        let found = hold(
                            &mut searcher,
                            matcher,
                            self.options,
                            texts,
                            &buffers[later],
                            ahead,
                        );
                        ahead.finish(later, found);
                    }
                }
            };
            if flow.is_break() {
                break;
            }
        }
        Ok(())
    }
}

/// Lines found ahead of the printer, owned until their turn.
#[derive(Debug)]
struct Held {
    batch: Batch,
    matched: u64,
}

/// Lines the searcher found, their texts one after another in one allocation, so that one
/// UTF-8 check covers them all: checked one at a time, lines under 64 bytes went to the
/// standard library's byte-by-byte check, 6–10% of the CPU of a grep matching many lines.
#[derive(Debug, Default)]
struct Batch {
    /// The lines' texts, without their line endings.
    text: Vec<u8>,
    lines: Vec<HeldLine>,
    /// What the batch holds, roughly: the text, each line's record and its match ranges.
    bytes: usize,
}

#[derive(Debug)]
enum HeldLine {
    Match {
        line: u64,
        text: Range<usize>,
        matches: Vec<Range<usize>>,
    },
    Context {
        line: u64,
        text: Range<usize>,
    },
    Break,
}

impl Batch {
    fn push_match(&mut self, line: u64, bytes: &[u8], matches: Vec<Range<usize>>) {
        let text = self.keep(bytes);
        self.bytes += 16 * matches.len();
        self.lines.push(HeldLine::Match {
            line,
            text,
            matches,
        });
    }

    fn push_context(&mut self, line: u64, bytes: &[u8]) {
        let text = self.keep(bytes);
        self.lines.push(HeldLine::Context { line, text });
    }

    fn push_break(&mut self) {
        self.bytes += 48;
        self.lines.push(HeldLine::Break);
    }

    /// Appends a line's text (without its line ending), counting it and its record.
    fn keep(&mut self, bytes: &[u8]) -> Range<usize> {
        let bytes = without_line_ending(bytes);
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        self.bytes += 48 + bytes.len();
        start..self.text.len()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
        self.bytes = 0;
    }

    /// Emits the lines (moving out their match ranges) as lines of `buffer`, until `emit`
    /// asks to stop.
    fn emit(
        &mut self,
        buffer: &str,
        emit: &mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Self { text, lines, .. } = self;
        // Stored text is UTF-8 (checked at load) cut at `\n`, so this passes and each line
        // starts and ends on a character boundary; were it not, each line is checked alone.
        let checked = simdutf8::basic::from_utf8(text).ok();
        let text = |range: &Range<usize>| match checked {
            Some(checked) => checked.get(range.clone()).unwrap_or_default(),
            None => line_text(&text[range.clone()]),
        };
        for held in lines {
            emit(match held {
                HeldLine::Match {
                    line,
                    text: range,
                    matches,
                } => GrepLine::Match {
                    buffer,
                    line: *line,
                    text: text(range),
                    matches: std::mem::take(matches),
                },
                HeldLine::Context { line, text: range } => GrepLine::Context {
                    buffer,
                    line: *line,
                    text: text(range),
                },
                HeldLine::Break => GrepLine::Break,
            })?;
        }
        ControlFlow::Continue(())
    }
}

/// What the printer does next.
enum Turn {
    /// Print what was found in its buffer.
    Held(Held),
    Failed(Error),
    /// Search its buffer, printing as it goes.
    Here,
    /// Its buffer is being searched ahead: search this later one into held lines meanwhile.
    Ahead(usize),
}

/// The buffers' hand-over between the printer and the thread searching ahead.
struct Ahead {
    state: Mutex<AheadState>,
    changed: Condvar,
    /// Set with `stopped`, read without the lock by a search in progress (see [`Stoppable`]).
    stopping: AtomicBool,
    /// Batches printed, emptied for the next buffers searched ahead: allocating each anew
    /// (growing to the buffer's lines, freed once printed) cost 5–7% of the CPU of a grep
    /// matching many lines in page faults and unmapping.
    spare: Mutex<Vec<Batch>>,
}

/// Printed batches kept for reuse, at most.
const SPARE_BATCHES: usize = 2;

struct AheadState {
    /// The first buffer nobody has taken.
    next: usize,
    count: usize,
    /// The buffer the thread ahead is searching.
    searching: Option<usize>,
    /// Finished buffers not printed yet: `None` when left to the printer.
    done: BTreeMap<usize, Option<Result<Held>>>,
    held_bytes: usize,
    stopped: bool,
}

impl AheadState {
    /// Takes the next buffer nobody has taken, while what is held leaves room.
    fn claim(&mut self) -> Option<usize> {
        if self.stopped || self.next >= self.count || self.held_bytes >= HELD_BYTES {
            return None;
        }
        self.next += 1;
        Some(self.next - 1)
    }
}

impl Ahead {
    fn new(count: usize) -> Self {
        Self {
            state: Mutex::new(AheadState {
                next: 0,
                count,
                searching: None,
                done: BTreeMap::new(),
                held_bytes: 0,
                stopped: false,
            }),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
            spare: Mutex::new(Vec::new()),
        }
    }

    /// An empty batch, reused when one was given back.
    fn spare_batch(&self) -> Batch {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        spare.pop().unwrap_or_default()
    }

    /// Keeps a printed batch for a later buffer.
    fn give_back(&self, mut batch: Batch) {
        batch.clear();
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < SPARE_BATCHES {
            spare.push(batch);
        }
    }

    fn lock(&self) -> MutexGuard<'_, AheadState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, state: MutexGuard<'a, AheadState>) -> MutexGuard<'a, AheadState> {
        self.changed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the thread ahead (the printer is done, stopped or failed).
    fn stop(&self) {
        self.lock().stopped = true;
        self.stopping.store(true, Ordering::Relaxed);
        self.changed.notify_all();
    }

    /// The printer's turn at buffer `index` (buffers are taken in order).
    fn take(&self, index: usize) -> Turn {
        let mut state = self.lock();
        loop {
            if let Some(done) = state.done.remove(&index) {
                let turn = match done {
                    Some(Ok(held)) => {
                        state.held_bytes -= held.batch.bytes;
                        Turn::Held(held)
                    }
                    Some(Err(error)) => Turn::Failed(error),
                    None => Turn::Here,
                };
                drop(state);
                self.changed.notify_all();
                return turn;
            }
            if state.searching == Some(index) {
                if let Some(later) = state.claim() {
                    return Turn::Ahead(later);
                }
                state = self.wait(state);
                continue;
            }
            // Not taken: the printer takes it, and the thread ahead moves past it.
            state.next = state.next.max(index + 1);
            return Turn::Here;
        }
    }

    /// The thread ahead: takes the next buffer while the printer has room to be behind.
    fn work(
        &self,
        dir: &Path,
        matcher: &LineMatcher,
        options: &GrepOptions,
        buffers: &[GrepTarget],
    ) {
        let Ok(connection) = open_database(dir, OpenFlags::SQLITE_OPEN_READ_ONLY) else {
            return; // The printer searches everything itself.
        };
        let Ok(texts) = Texts::new(&connection) else {
            return;
        };
        // A clone has a cache pool of its own: sharing one pool, the second thread would take
        // its slow path on every search.
        let matcher = matcher.clone();
        let mut searcher = searcher(options);
        loop {
            let index = {
                let mut state = self.lock();
                loop {
                    if state.stopped || state.next >= state.count {
                        return;
                    }
                    if let Some(index) = state.claim() {
                        state.searching = Some(index);
                        break index;
                    }
                    state = self.wait(state);
                }
            };
            let found = hold(
                &mut searcher,
                &matcher,
                options,
                &texts,
                &buffers[index],
                self,
            );
            self.finish(index, found);
        }
    }

    /// Hands over what was found in buffer `index`. Under the same lock as the result is
    /// stored, the thread ahead stops being "on" it: the printer never sees the buffer as
    /// neither searched nor done, which would have it searched twice.
    fn finish(&self, index: usize, found: Option<Result<Held>>) {
        let mut state = self.lock();
        if state.searching == Some(index) {
            state.searching = None;
        }
        if let Some(Ok(held)) = &found {
            state.held_bytes += held.batch.bytes;
        }
        state.done.insert(index, found);
        drop(state);
        self.changed.notify_all();
    }
}

/// Searches `buffer` into owned lines; `None` when they would pass [`HELD_BYTES`].
fn hold(
    searcher: &mut Searcher,
    matcher: &LineMatcher,
    options: &GrepOptions,
    texts: &Texts<'_>,
    buffer: &GrepTarget,
    ahead: &Ahead,
) -> Option<Result<Held>> {
    let stopping = &ahead.stopping;
    let mut sink = LineSink::new(matcher, options.lines_only, Keep, ahead.spare_batch());
    let reader = match texts.reader(buffer.id) {
        Ok(reader) => reader,
        Err(error) => return Some(Err(error)),
    };
    let reader = Stoppable { reader, stopping };
    if let Err(error) = searcher.search_reader(matcher, reader, &mut sink) {
        return Some(Err(error.into_store_error(&buffer.name)));
    }
    if sink.batch.bytes > HELD_BYTES {
        return None;
    }
    Some(Ok(Held {
        batch: sink.batch,
        matched: sink.matched,
    }))
}

/// A buffer's text that ends early once the printer has stopped (its reader gets end of file),
/// so a search ahead through a large buffer does not hold up the end of a stopped grep.
struct Stoppable<'a, R> {
    reader: R,
    stopping: &'a AtomicBool,
}

impl<R: std::io::Read> std::io::Read for Stoppable<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.stopping.load(Ordering::Relaxed) {
            return Ok(0);
        }
        self.reader.read(buffer)
    }
}

/// Buffers' texts streamed out of a connection piece by piece ([`TextStream`]), through
/// SQLite's memory map let go of after every [`MAP_WINDOW`] bytes ([`MapWindow`]), and once
/// more when dropped: memory stays flat as the store grows, and a page costs no system call.
struct Texts<'c> {
    connection: &'c rusqlite::Connection,
    page_size: usize,
    window: MapWindow<'c>,
}

/// Bytes read through the memory map before it is let go of. Each thread's connection has a
/// map of its own, so a grep maps at most about twice this. Measured on 100 MB of 1 MB logs
/// (BENCHMARKS.md): 2 MiB windows grep in ~0.8x the time of a `pread` per page, as fast as a
/// map never let go of, at 25 MB peak RSS against 12 MB (`pread`) and 160 MB (never let go).
#[cfg(not(test))]
const MAP_WINDOW: usize = 2 << 20;
/// Small in unit tests, so that a buffer is read over several windows.
#[cfg(test)]
const MAP_WINDOW: usize = 100_000;

impl<'c> Texts<'c> {
    fn new(connection: &'c rusqlite::Connection) -> Result<Self> {
        let page_size: i64 = connection.pragma_query_value(None, "page_size", |row| row.get(0))?;
        let window = MapWindow::new(connection, MAP_WINDOW);
        // What earlier reads on this connection left mapped goes too.
        window.release()?;
        Ok(Self {
            connection,
            page_size: usize::try_from(page_size).unwrap_or(4096),
            window,
        })
    }

    fn reader(&self, buffer_id: i64) -> Result<TextStream<'_>> {
        TextStream::open(
            self.connection,
            buffer_id,
            self.page_size,
            Some(&self.window),
        )
    }
}

impl Drop for Texts<'_> {
    fn drop(&mut self) {
        // Reads only stay mapped until the next release; nothing to report if this fails.
        let _ = self.window.release();
    }
}

/// The pattern as the options shape it, matching within lines.
pub(crate) fn matcher(pattern: &str, options: &GrepOptions) -> Result<LineMatcher> {
    let mut pattern = if options.fixed_strings {
        regex::escape(pattern)
    } else {
        pattern.to_owned()
    };
    // Parsed here first, so a mistake is shown in the pattern as written, not inside the
    // group grep-regex wraps it in (`(?:(unclosed)`).
    regex_syntax::ParserBuilder::new()
        .case_insensitive(options.ignore_case)
        .multi_line(true)
        .build()
        .parse(&pattern)
        .map_err(|error| Error::Pattern(Box::new(error)))?;
    if options.word {
        pattern = format!(r"\b(?:{pattern})\b");
    }
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(options.ignore_case)
        // `^` and `$` mean a line's start and end, as in ripgrep. Without this they are anchors
        // of the whole text, and grep-regex then cannot search a block of lines at once: every
        // line is matched on its own, twice the time for `^2026-\d\d WARN`.
        .multi_line(true)
        // Matches stay within a line.
        .line_terminator(Some(b'\n'));
    LineMatcher::new(&builder, &pattern, options.ignore_case).map_err(Error::Regex)
}

/// Where a [`LineSink`] hands its lines.
trait Lines {
    /// Whether the lines gathered are to be handed over now.
    fn full(&self, batch: &Batch) -> bool;

    /// Takes the lines of a full batch: false to stop the search.
    fn take(&mut self, batch: &mut Batch) -> bool;
}

/// Straight to the caller, a batch at a time.
struct Direct<'a> {
    buffer: &'a str,
    emit: &'a mut dyn FnMut(GrepLine<'_>) -> ControlFlow<()>,
    /// Emit a `--` before this buffer's first line.
    break_first: bool,
    /// `emit` asked to stop.
    stopped: bool,
}

/// Lines a [`Direct`] gathers before emitting them: a UTF-8 check is a bigger share of a
/// small batch, and a caller waits for no more than this.
const DIRECT_BATCH_BYTES: usize = 64 << 10;

impl Lines for Direct<'_> {
    fn full(&self, batch: &Batch) -> bool {
        batch.bytes >= DIRECT_BATCH_BYTES
    }

    fn take(&mut self, batch: &mut Batch) -> bool {
        if batch.lines.is_empty() || self.stopped {
            return !self.stopped;
        }
        self.stopped = (std::mem::take(&mut self.break_first)
            && (self.emit)(GrepLine::Break).is_break())
            || batch.emit(self.buffer, &mut *self.emit).is_break();
        batch.clear();
        !self.stopped
    }
}

/// Kept whole for the printer ([`Held`]), up to [`HELD_BYTES`].
struct Keep;

impl Lines for Keep {
    fn full(&self, batch: &Batch) -> bool {
        batch.bytes > HELD_BYTES
    }

    /// Past the limit the printer searches this buffer itself.
    fn take(&mut self, _batch: &mut Batch) -> bool {
        false
    }
}

/// Gathers the searcher's lines into a [`Batch`] for its [`Lines`].
struct LineSink<'a, L> {
    matcher: &'a LineMatcher,
    lines_only: bool,
    matched: u64,
    batch: Batch,
    out: L,
}

impl<'a, L: Lines> LineSink<'a, L> {
    /// Into `batch` (emptied first: its allocation is what is reused).
    fn new(matcher: &'a LineMatcher, lines_only: bool, out: L, mut batch: Batch) -> Self {
        batch.clear();
        Self {
            matcher,
            lines_only,
            matched: 0,
            batch,
            out,
        }
    }

    /// Hands over the batch when full: false to stop the search.
    fn handed_over_when_full(&mut self) -> bool {
        !self.out.full(&self.batch) || self.out.take(&mut self.batch)
    }

    /// Hands over the lines left at the end of the buffer.
    fn hand_over(&mut self) {
        self.out.take(&mut self.batch);
    }
}

impl<L: Lines> Sink for LineSink<'_, L> {
    type Error = SearchError;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> std::result::Result<bool, SearchError> {
        let bytes = found.bytes();
        let mut matches = Vec::new();
        if !self.lines_only {
            self.matcher
                .find_iter(without_line_ending(bytes), |range| {
                    if !range.is_empty() {
                        matches.push(range.start()..range.end());
                    }
                    true
                })
                .map_err(|error| SearchError::Message(error.to_string()))?;
        }
        self.matched += 1;
        let line = found.line_number().unwrap_or_default();
        self.batch.push_match(line, bytes, matches);
        Ok(self.handed_over_when_full())
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> std::result::Result<bool, SearchError> {
        let line = context.line_number().unwrap_or_default();
        self.batch.push_context(line, context.bytes());
        Ok(self.handed_over_when_full())
    }

    fn context_break(&mut self, _searcher: &Searcher) -> std::result::Result<bool, SearchError> {
        self.batch.push_break();
        Ok(self.handed_over_when_full())
    }
}

/// A line without its line ending (`\n` or `\r\n`).
fn without_line_ending(bytes: &[u8]) -> &[u8] {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A line's text checked on its own, when its batch's check failed. Stored text is UTF-8 that
/// was checked at load and lines are cut at `\n`, so neither that nor the fallback (an empty
/// line) happens.
fn line_text(bytes: &[u8]) -> &str {
    simdutf8::basic::from_utf8(bytes).unwrap_or_default()
}

/// Why the searcher stopped with an error.
#[derive(Debug)]
enum SearchError {
    Io(std::io::Error),
    Message(String),
}

impl SinkError for SearchError {
    fn error_message<T: std::fmt::Display>(message: T) -> Self {
        Self::Message(message.to_string())
    }

    fn error_io(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl SearchError {
    fn into_store_error(self, buffer: &str) -> Error {
        match self {
            Self::Io(source) => Error::Io {
                action: "cannot read the stored text of",
                path: buffer.into(),
                source,
            },
            Self::Message(message) => Error::Io {
                action: "cannot search the stored text of",
                path: buffer.into(),
                source: std::io::Error::other(message),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::Source;
    use crate::read::BufferInfo;
    use rlm_context::chunk::ChunkOptions;

    fn lines(store: &LocalStore, pattern: &str, options: &GrepOptions) -> Vec<String> {
        let mut out = Vec::new();
        store
            .grep(pattern, options, &mut |line| {
                out.push(match line {
                    GrepLine::Match {
                        buffer, line, text, ..
                    } => format!("{buffer}:{line}:{text}"),
                    GrepLine::Context { buffer, line, text } => format!("{buffer}-{line}-{text}"),
                    GrepLine::Break => "--".to_owned(),
                    GrepLine::End {
                        buffer,
                        matched_lines,
                    } => format!("end {buffer} {matched_lines}"),
                });
                ControlFlow::Continue(())
            })
            .unwrap();
        out
    }

    #[test]
    fn line_anchors_keep_the_search_on_whole_blocks_of_lines() {
        // grep-regex hands the searcher a line terminator (its fast path over many lines at
        // once) only when `^` and `$` are line anchors, not anchors of the whole text.
        let options = GrepOptions::default();
        for pattern in [r"^2026-\d\d-\d\d \S+ WARN", "WARN$", "^WARN$", "plain"] {
            let matcher = matcher(pattern, &options).unwrap();
            assert!(matcher.line_terminator().is_some(), "{pattern}");
        }
    }

    #[test]
    fn line_anchors_match_at_each_line_of_a_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        let text = "a WARN x\nWARN y\nz WARN\nWARN\n".repeat(3);
        let sources = vec![Source::Text {
            name: "log".to_owned(),
            text,
        }];
        store
            .load(sources, &ChunkOptions::default(), &mut |_| {
                ControlFlow::Continue(())
            })
            .unwrap();
        let options = GrepOptions::default();
        let found = |pattern: &str| -> Vec<String> {
            lines(&store, pattern, &options)
                .into_iter()
                .filter(|line| !line.starts_with("end "))
                .collect()
        };
        assert_eq!(
            found("^WARN"),
            [
                "log:2:WARN y",
                "log:4:WARN",
                "log:6:WARN y",
                "log:8:WARN",
                "log:10:WARN y",
                "log:12:WARN"
            ]
        );
        assert_eq!(
            found("WARN$"),
            [
                "log:3:z WARN",
                "log:4:WARN",
                "log:7:z WARN",
                "log:8:WARN",
                "log:11:z WARN",
                "log:12:WARN"
            ]
        );
        assert_eq!(found("^WARN$"), ["log:4:WARN", "log:8:WARN", "log:12:WARN"]);
        assert_eq!(found("^a WARN x$").len(), 3);
    }

    #[test]
    fn buffers_searched_ahead_print_in_order_whatever_the_hold_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        // Small buffers the thread ahead holds, and big ones whose lines pass the (test-sized)
        // limit, so the printer searches those itself and the thread ahead waits for room.
        let sources = (0..40)
            .map(|number| {
                let lines = if number % 7 == 3 { 400 } else { 5 };
                let text: String = (0..lines)
                    .map(|line| {
                        format!(
                            "{number} line {line} {}\n",
                            if line % 3 == 0 { "hit" } else { "miss" }
                        )
                    })
                    .collect();
                Source::Text {
                    name: format!("b{number:02}"),
                    text,
                }
            })
            .collect();
        store
            .load(sources, &ChunkOptions::default(), &mut |_| {
                ControlFlow::Continue(())
            })
            .unwrap();
        for (before, after) in [(0, 0), (1, 1)] {
            let options = GrepOptions {
                before,
                after,
                ..GrepOptions::default()
            };
            let mut expected = Vec::new();
            for number in 0..40 {
                let lines = if number % 7 == 3 { 400 } else { 5 };
                let name = format!("b{number:02}");
                if number > 0 && before + after > 0 {
                    expected.push("--".to_owned());
                }
                let mut last_shown = None;
                for line in 0..lines {
                    let hit = |at: i64| (0..lines).contains(&at) && at % 3 == 0;
                    let shown = (line - before as i64..=line + after as i64).any(hit);
                    if !shown {
                        continue;
                    }
                    if before + after > 0 && last_shown.is_some_and(|last| line > last + 1) {
                        expected.push("--".to_owned());
                    }
                    let word = if hit(line) { "hit" } else { "miss" };
                    let mark = if hit(line) { ':' } else { '-' };
                    expected.push(format!(
                        "{name}{mark}{}{mark}{number} line {line} {word}",
                        line + 1
                    ));
                    last_shown = Some(line);
                }
                expected.push(format!("end {name} {}", (lines + 2) / 3));
            }
            assert_eq!(
                lines(&store, "hit", &options),
                expected,
                "context {before},{after}"
            );
        }
    }

    #[test]
    fn grep_lists_the_same_buffers_without_counting_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        let sources = ["b", "a", "c"]
            .into_iter()
            .map(|name| Source::Text {
                name: format!("{name}.txt"),
                text: "some text\n".repeat(400),
            })
            .collect();
        store
            .load(sources, &ChunkOptions::default(), &mut |_| {
                ControlFlow::Continue(())
            })
            .unwrap();
        let key = |buffers: Vec<BufferInfo>| -> Vec<GrepTarget> {
            buffers.into_iter().map(GrepTarget::from).collect()
        };
        let everything = store.grep_targets(&[], None).unwrap();
        assert_eq!(everything.len(), 3);
        assert_eq!(everything, key(store.filter_buffers(&[], None).unwrap()));
        let names = ["c.txt".to_owned(), "a.txt".to_owned()];
        assert_eq!(
            store.grep_targets(&names, None).unwrap(),
            key(store.filter_buffers(&names, None).unwrap())
        );
        for glob in ["[ab]*", "*/nowhere/*", "c.txt"] {
            assert_eq!(
                store.grep_targets(&[], Some(glob)).unwrap(),
                key(store.filter_buffers(&[], Some(glob)).unwrap()),
                "{glob}"
            );
        }
    }

    #[test]
    fn a_search_ahead_reads_no_further_once_the_printer_stops() {
        use std::io::Read as _;
        let stopping = AtomicBool::new(false);
        let mut reader = Stoppable {
            reader: &b"first part, second part"[..],
            stopping: &stopping,
        };
        let mut buffer = [0u8; 11];
        assert_eq!(reader.read(&mut buffer).unwrap(), 11);
        stopping.store(true, Ordering::Relaxed);
        assert_eq!(
            reader.read(&mut buffer).unwrap(),
            0,
            "end of file once stopped"
        );
    }

    #[test]
    fn stopping_early_ends_the_thread_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LocalStore::open(dir.path()).unwrap();
        let sources = (0..30)
            .map(|number| Source::Text {
                name: format!("b{number:02}"),
                text: "hit\n".repeat(50),
            })
            .collect();
        store
            .load(sources, &ChunkOptions::default(), &mut |_| {
                ControlFlow::Continue(())
            })
            .unwrap();
        let mut seen = 0;
        let summary = store
            .grep("hit", &GrepOptions::default(), &mut |line| {
                if matches!(line, GrepLine::Match { .. }) {
                    seen += 1;
                }
                if seen == 120 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        // Two whole buffers, then the third stopped on its 20th line.
        assert_eq!(seen, 120);
        assert_eq!((summary.matched_buffers, summary.matched_lines), (2, 100));
    }
}
