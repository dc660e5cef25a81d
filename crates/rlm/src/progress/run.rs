//! Progress of `rlm run` on stderr: turns, code, output summaries, sub-calls, tokens and cost.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rlm_context::thousands;
use rlm_engine::{Event, EventSink, Progress};

use crate::output::neutralize;

/// Lines of a code block shown before "… N more lines".
const CODE_LINES_SHOWN: usize = 12;
/// Sub-call progress is printed at most this often while a fan-out runs.
const SUBCALL_PRINT_INTERVAL: Duration = Duration::from_millis(750);

/// Prints engine events to stderr as they happen.
#[derive(Debug)]
pub struct StderrProgress {
    verbose: bool,
    state: Mutex<SubcallState>,
}

#[derive(Debug)]
struct SubcallState {
    done: u64,
    failed: u64,
    last_print: Instant,
}

impl StderrProgress {
    pub fn new(verbose: bool) -> Self {
        Self {
            verbose,
            state: Mutex::new(SubcallState {
                done: 0,
                failed: 0,
                last_print: Instant::now(),
            }),
        }
    }

    fn line(&self, depth: u32, text: &str) {
        let indent = "  ".repeat(depth as usize);
        // A sub-call's error or a reply may quote a key.
        let text = rlm_llm::secrets::mask(text);
        let mut err = anstream::stderr().lock();
        for line in text.lines() {
            let _ = writeln!(err, "{indent}{line}");
        }
    }
}

fn totals(progress: &Progress) -> String {
    format!(
        "{} tokens · {}",
        thousands(progress.tokens),
        crate::output::cost(progress.cost_usd, progress.unpriced_calls)
    )
}

impl StderrProgress {
    /// The code a turn runs: its first lines (all with `-v`), neutralised as all text rlm did
    /// not write.
    fn code(&self, code: &str) -> String {
        let dim = anstyle::Style::new().dimmed();
        let lines: Vec<&str> = code.lines().collect();
        let shown = if self.verbose {
            lines.len()
        } else {
            CODE_LINES_SHOWN
        };
        let mut text = String::new();
        for line in lines.iter().take(shown) {
            text.push_str(&format!("{dim}│{dim:#} {}\n", neutralize(line)));
        }
        if lines.len() > shown {
            text.push_str(&format!(
                "{dim}│ … {} more lines{dim:#}\n",
                lines.len() - shown
            ));
        }
        text
    }

    /// A sub-call ended: the counts, at most every [`SUBCALL_PRINT_INTERVAL`] and when none
    /// is left in flight.
    fn subcall_finished(&self, depth: u32, kind: &str, failed: bool, progress: &Progress) {
        let dim = anstyle::Style::new().dimmed();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.done += 1;
        state.failed += u64::from(failed);
        let idle = progress.subcalls_in_flight == 0;
        if idle || state.last_print.elapsed() >= SUBCALL_PRINT_INTERVAL {
            state.last_print = Instant::now();
            let failed = if state.failed > 0 {
                format!(", {} failed", state.failed)
            } else {
                String::new()
            };
            self.line(
                depth,
                &format!(
                    "{dim}{kind}: {} done{failed}, {} in flight · total {}{dim:#}",
                    state.done,
                    progress.subcalls_in_flight,
                    totals(progress)
                ),
            );
        }
    }
}

/// What a block's run gave: output size and first line, the error's last line, an answer set.
fn code_outcome(outcome: &rlm_engine::ExecOutcome) -> String {
    let dim = anstyle::Style::new().dimmed();
    let output = outcome.stdout.trim_end();
    let line_count = output.lines().count();
    let mut text = format!(
        "{dim}→ {} chars, {} line{} of output in {:.2}s{dim:#}",
        thousands(output.chars().count() as u64),
        line_count,
        if line_count == 1 { "" } else { "s" },
        outcome.seconds
    );
    if let Some(first) = output.lines().next() {
        let preview: String = first.chars().take(100).collect();
        text.push_str(&format!("\n{dim}  {}{dim:#}", neutralize(&preview)));
    }
    if let Some(error) = &outcome.error {
        let red = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Red.into()));
        let last = error.lines().last().unwrap_or(error);
        text.push_str(&format!("\n{red}✗ {}{red:#}", neutralize(last)));
    }
    if let Some(answer) = &outcome.final_answer {
        text.push_str(&format!(
            "\n→ final answer set ({} chars)",
            answer.chars().count()
        ));
    }
    text
}

impl EventSink for StderrProgress {
    fn event(&self, event: &Event<'_>) {
        let dim = anstyle::Style::new().dimmed();
        let bold = anstyle::Style::new().bold();
        match event {
            Event::RunStarted {
                run_id,
                depth,
                model,
                log,
            } => {
                let log = log.map_or(String::new(), |p| {
                    format!(" · log {}", neutralize(&p.display().to_string()))
                });
                let model = neutralize(model);
                let label = if *depth == 0 { "run" } else { "child run" };
                self.line(
                    *depth,
                    &format!("{bold}{label} {run_id}{bold:#} · {model}{log}"),
                );
            }
            Event::IterationStarted {
                depth,
                iteration,
                max_iterations,
            } => self.line(
                *depth,
                &format!("{bold}── turn {iteration}/{max_iterations}{bold:#}"),
            ),
            Event::ModelReplied {
                depth,
                usage,
                progress,
            } => self.line(
                *depth,
                &format!(
                    "{dim}model: {} in / {} out{} · total {}{dim:#}",
                    thousands(usage.input_tokens),
                    thousands(usage.output_tokens),
                    crate::output::cache_note(usage),
                    totals(progress)
                ),
            ),
            Event::CodeStarted { depth, code } => self.line(*depth, &self.code(code)),
            Event::CodeFinished { depth, outcome } => self.line(*depth, &code_outcome(outcome)),
            Event::SubcallStarted { .. } => {}
            Event::SubcallFinished {
                depth,
                kind,
                failed,
                progress,
            } => self.subcall_finished(*depth, kind.name(), *failed, progress),
            Event::RunFinished {
                depth,
                status,
                iterations,
                ..
            } => self.line(
                *depth,
                &format!(
                    "{bold}{status}{bold:#} after {}",
                    crate::output::count(u64::from(*iterations), "turn")
                ),
            ),
            _ => {}
        }
    }
}
