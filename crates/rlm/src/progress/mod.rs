//! What an operation says while it works, on stderr: the one [`rlm_app::Events`] the command
//! line gives every operation. Run and query progress (`run.rs`, `query.rs`), load, index and
//! embedding progress (`store.rs`), and the notes, warnings and errors an operation reports and
//! goes on after. A streamed answer (`rlm chat`) goes to stdout.
//!
//! Progress redrawn in place (`loading 3/10 …`) is drawn on a terminal only, and cleared
//! before any other line.

mod pace;
mod query;
mod run;
mod store;

use std::io::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use rlm_app::{Event, Events, StopHandle};

use crate::cli::GlobalArgs;
use crate::output::neutralize;

/// How the command line shows an operation's events.
pub struct Printer {
    quiet: bool,
    verbose: bool,
    json: bool,
    /// Whether progress is redrawn in place (stderr is a terminal and not `--quiet`).
    live: bool,
    state: Mutex<State>,
    run: run::StderrProgress,
    query: query::QueryProgress,
    /// Stops the operation when stdout is closed under a streamed answer.
    stop: Arc<StopHandle>,
}

/// What the printer remembers between events.
#[derive(Default)]
struct State {
    /// A progress line is on the terminal and must be cleared first.
    live_line: bool,
    load: store::LoadState,
    /// The rate and time left of the phase on the progress line.
    pace: Option<pace::Pace>,
    /// Writing a streamed answer failed (the reader went away): the rest is dropped.
    stdout_failed: bool,
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("quiet", &self.quiet)
            .finish_non_exhaustive()
    }
}

impl Printer {
    pub fn new(global: &GlobalArgs, stop: Arc<StopHandle>) -> Self {
        use std::io::IsTerminal as _;
        Self {
            quiet: global.quiet,
            verbose: global.verbose > 0 && !global.quiet,
            json: global.json,
            live: !global.quiet && std::io::stderr().is_terminal(),
            state: Mutex::new(State::default()),
            run: run::StderrProgress::new(global.verbose > 0),
            query: query::QueryProgress::new(),
            stop,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Clears a progress line left on the terminal (before other output, and at the end).
    pub fn clear(&self) {
        let mut state = self.state();
        Self::clear_line(&mut state);
    }

    fn clear_line(state: &mut State) {
        if state.live_line {
            let _ = write!(anstream::stderr(), "\r\x1b[K");
            state.live_line = false;
        }
    }

    /// Redraws the progress line (a terminal only).
    fn live(&self, text: &str) {
        if !self.live {
            return;
        }
        let mut state = self.state();
        let _ = write!(anstream::stderr(), "\r\x1b[K{}", neutralize(text));
        state.live_line = true;
    }

    /// Redraws the progress line of `done` of `total` in `phase`, with the rate and the time
    /// left once they mean something.
    fn live_paced(&self, text: &str, phase: &str, done: u64, total: u64, unit: pace::Unit) {
        if !self.live {
            return;
        }
        let suffix = pace::Pace::update(
            &mut self.state().pace,
            phase,
            done,
            total,
            unit,
            std::time::Instant::now(),
        );
        self.live(&format!("{text}{suffix}"));
    }

    /// A line on stderr, after clearing any progress line.
    fn line(&self, text: &str) {
        let mut state = self.state();
        Self::clear_line(&mut state);
        let _ = writeln!(anstream::stderr(), "{}", neutralize(text));
    }

    /// A streamed piece of an answer: data, on stdout (byte-exact into a pipe, neutralised on
    /// a terminal). A closed stdout stops the operation; the command then ends quietly.
    fn delta(&self, piece: &str) {
        let mut state = self.state();
        if state.stdout_failed {
            return;
        }
        let mut out = crate::output::raw_stdout_unlocked();
        if out
            .write_all(crate::output::for_stdout(piece).as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            state.stdout_failed = true;
            self.stop.stop();
        }
    }
}

impl Events for Printer {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::Info(text) if !self.quiet => self.line(text),
            Event::Note(text) if !self.quiet => self.line(&format!("note: {text}")),
            // Even with --quiet: a result may rest on it.
            Event::Warning(text) => self.line(&format!("warning: {text}")),
            Event::Problem(err) => {
                self.clear();
                crate::error::report(err);
            }
            Event::Run(event) if !self.quiet => {
                self.clear();
                rlm_engine::EventSink::event(&self.run, event);
            }
            Event::Query(event) if !self.quiet => {
                self.clear();
                rlm_query::QueryEvents::event(&self.query, event);
            }
            Event::Delta(piece) => self.delta(piece),
            Event::Load(event) => self.load(event),
            Event::Loaded { report, seconds } => self.loaded(report, *seconds),
            Event::Indexing(step) => self.indexing(step),
            Event::Copying { done, total } => self.live_paced(
                &format!("copied {done}/{total} buffers"),
                "copy",
                *done,
                *total,
                pace::Unit::Count("buffers"),
            ),
            Event::Embedding(step) => self.live_paced(
                &format!("embedding {}/{} chunks", step.done, step.total),
                "embed",
                step.done,
                step.total,
                pace::Unit::Count("chunks"),
            ),
            Event::Embedded {
                chunks: 0, model, ..
            } if !self.quiet => {
                self.line(&format!(
                    "nothing to embed: every chunk has a vector ({model})"
                ));
            }
            Event::Embedded {
                chunks,
                model,
                seconds,
            } if !self.quiet => self.line(&format!(
                "embedded {} with {model} ({seconds:.1}s, {:.0} chunks/s)",
                crate::output::count(*chunks, "chunk"),
                *chunks as f64 / seconds.max(1e-9)
            )),
            _ => {}
        }
    }
}
